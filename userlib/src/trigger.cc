// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Trigger (trigger.hpp) over rhinetdv's trigger counters, and the
// arming of the endpoint for a triggered PUSH or PULL (group_xfer.cc).
#include "rhinet/trigger.hpp"

#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <string>
#include <type_traits>
#include <utility>

#include "device.hpp"
#include "group_detail.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

using detail::errno_error;

static_assert(std::is_trivially_copyable_v<RemoteTrigger> &&
                  sizeof(RemoteTrigger) == 8,
              "a RemoteTrigger travels as plain bytes");

Trigger::Trigger(std::shared_ptr<detail::Device> dev, rhinetdv_trigger* t)
    : dev_(std::move(dev)), t_(t) {}

Trigger::Trigger(Trigger&& o) noexcept
    : dev_(std::move(o.dev_)), t_(std::exchange(o.t_, nullptr)) {}

Trigger& Trigger::operator=(Trigger&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::move(o.dev_);
    t_ = std::exchange(o.t_, nullptr);
  }
  return *this;
}

Trigger::~Trigger() { reset(); }

void Trigger::reset() {
  if (t_) {
    rhinetdv_destroy_trigger(t_);
    t_ = nullptr;
  }
  dev_.reset();
}

Result<void> Trigger::add(std::uint32_t n) {
  if (!t_) return Error(EINVAL, "add to a moved-from Trigger");
  if (const int e = rhinetdv_trigger_add(t_, n))
    return errno_error(e, "trigger add: rhinetdv_trigger_add");
  return ok();
}

Result<std::uint64_t> Trigger::read() const {
  if (!t_) return Error(EINVAL, "read of a moved-from Trigger");
  std::uint64_t v = 0;
  if (const int e = rhinetdv_trigger_read(t_, &v))
    return errno_error(e, "trigger read: rhinetdv_trigger_read");
  return v;
}

std::uint32_t Trigger::handle() const { return t_ ? t_->handle : 0; }
std::uint32_t Trigger::key() const { return t_ ? t_->key : 0; }

Result<Trigger> Group::trigger(std::uint64_t value) {
  rhinetdv_trigger_init_attr attr{};
  attr.value = value;
  rhinetdv_trigger* t = rhinetdv_create_trigger(dev_->ctx, &attr, sizeof(attr));
  if (!t) return errno_error(errno, "trigger counter: rhinetdv_create_trigger");
  return Trigger(dev_, t);
}

Request Group::trigger_add(std::uint32_t rank, RemoteTrigger counter,
                           std::uint64_t amount, const TriggerOn& on) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = Op::trigger_add;
  d.rank = rank;
  d.area_or_rkey = counter.handle;
  d.offset_or_addr = amount;
  d.length = 8;
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!(dev.attr.caps & RHINETDV_CAP_TRIGGER))
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no triggered operations "
                "(RHINETDV_CAP_TRIGGER)");
  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  rhinetdv_trigger_add_attr a{};
  a.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  a.dest_endpoint = table_[rank].endpoint_id;
  a.handle = counter.handle;
  a.key = counter.key;
  a.addend = amount;
  return detail::post_triggered(
      dev, on, d, fail, "rhinetdv_trigger_add_remote", [&](std::uint32_t s) {
        a.wr_id = s;
        a.result = &dev.results[s];
        a.result_lkey = dev.words_mr->lkey;
        return rhinetdv_trigger_add_remote(dev.ep, &a, sizeof(a));
      });
}

namespace detail {

// rhinetdv_set_trigger for the next operation posted on `ep`, or 0 when
// `on` names no counter.
int arm_trigger(rhinetdv_endpoint* ep, const TriggerOn& on) {
  if (!on.counter && !on.chain) return 0;
  rhinetdv_wr_trigger t{};
  if (on.counter) {
    if (!on.counter->get()) return EINVAL;
    t.comp_mask |= RHINETDV_WR_TRIGGER_COUNTER;
    t.counter = on.counter->get();
    t.threshold = on.threshold;
  }
  if (on.chain) {
    if (!on.chain->get()) return EINVAL;
    t.comp_mask |= RHINETDV_WR_TRIGGER_CHAIN;
    t.chain = on.chain->get();
  }
  return rhinetdv_set_trigger(ep, &t, sizeof(t));
}

// The operation was refused: the next one must not be triggered.
void disarm_trigger(rhinetdv_endpoint* ep) {
  rhinetdv_set_trigger(ep, nullptr, 0);
}

}  // namespace detail

}  // namespace rhinet
