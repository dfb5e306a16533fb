// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Trigger (trigger.hpp) over rhinetdv's trigger counters, and the
// arming of the endpoint for a triggered PUSH or PULL (group_xfer.cc).
#include "rhinet/trigger.hpp"

#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <string>
#include <utility>

#include "device.hpp"
#include "group_detail.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

using detail::errno_error;

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
