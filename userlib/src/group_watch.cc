// SPDX-License-Identifier: BSD-2-Clause
// Group::wait_for_area: waits on memory that sleep on the NIC's watch of
// an area (ops/watch, rhinetdv_watch_area). The waiting itself is
// device-free (wait.cc, wait_for_watch); here is its watch: a WATCH
// posted in a status-word slot, its firings counted by the provider.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <string>

#include "device.hpp"
#include "group_detail.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

namespace {

// The longest sleep of a wait: what a store that fires no watch (one
// this process made itself) may go unseen.
constexpr std::chrono::milliseconds kSlice{200};

class AreaWatch final : public detail::WatchSource {
 public:
  AreaWatch(detail::Device& dev, std::uint32_t group, std::uint32_t area)
      : dev_(dev), group_(group), area_(area) {}

  int watch() override {
    detail::Device::Slot d;
    d.op = Op::watch;
    d.area_or_rkey = area_;
    rhinetdv_watch_attr a{};
    a.group_id = group_;
    a.area_id = area_;
    // Signaled: the arming's completion wakes a wait for it.
    a.flags = RHINETDV_WATCH_SIGNALED | RHINETDV_WATCH_STATUS_WORD;
    const auto fail = [&](int e, const std::string& why) {
      return detail::Device::failed(
          Error(e, "watch of area " + std::to_string(area_) + ": " + why));
    };
    arming_ =
        dev_.post_in_slot(d, fail, "rhinetdv_watch_area", [&](std::uint32_t s) {
          dev_.use_word(a, s);
          return rhinetdv_watch_area(dev_.ep, &a, sizeof(a));
        });
    if (arming_.done() && !arming_.result()) {
      error_ = arming_.result().error();
      return error_->errno_value();
    }
    return 0;
  }
  int armed() override {
    if (!arming_.test()) return 0;
    if (auto r = arming_.result(); !r) {
      error_ = r.error();
      return -error_->errno_value();
    }
    return 1;
  }
  std::uint64_t fired() override {
    // Completions the count takes off the CQ wait in the provider for
    // rhinetdv_poll: hand them on (receives complete, failures reach
    // their status words) so that its queue never fills.
    std::uint64_t n = 0;
    if (rhinetdv_watch_count(dev_.ep, group_, area_, &n) == 0) count_ = n;
    dev_.poll_cq();
    return count_;
  }
  int arm() override { return rhinetdv_arm_event(dev_.ep); }
  int sleep(int timeout_ms) override {
    return rhinetdv_wait_event(dev_.ep, timeout_ms);
  }
  const char* arm_name() const override { return "rhinetdv_arm_event"; }
  const char* sleep_name() const override { return "rhinetdv_wait_event"; }
  const char* watch_name() const override { return "rhinetdv_watch_area"; }
  // The arming's error, when it failed.
  const std::optional<Error>& error() const { return error_; }

 private:
  detail::Device& dev_;
  std::uint32_t group_, area_;
  Request arming_;
  std::uint64_t count_ = 0;
  std::optional<Error> error_;
};

}  // namespace

bool Group::area_watches() const {
  return dev_->attr.caps & RHINETDV_CAP_WATCH;
}

AreaWaitStats Group::area_wait_stats() const { return dev_->area_stats; }

Result<void> Group::wait_for_area(std::uint32_t area_id,
                                  const std::function<bool()>& done,
                                  const AreaWaitOptions& options) {
  detail::Device& dev = *dev_;
  const std::string what = "wait_for_area: area " + std::to_string(area_id);
  detail::Device::InUse in(dev);
  if (!in.ok()) return detail::Device::busy(what);
  if (!done) return Error(EINVAL, what + ": no condition to wait for");
  if (area_id > 0xffff) return Error(EINVAL, what + ": area IDs are 16 bits");
  AreaWatch watch(dev, group_, area_id);
  const auto spin = area_watches() ? options.spin : never_sleep;
  const char* failed = "";
  const int e = detail::wait_for_watch(done, watch, spin,
                                       net::deadline_after(options.timeout),
                                       kSlice, dev.area_stats, &failed);
  if (e == 0) return ok();
  if (e == ETIMEDOUT)
    return Error(ETIMEDOUT, what + ": not met within " +
                                net::format_duration(options.timeout));
  if (watch.error()) return *watch.error();  // its syndrome with it
  return detail::errno_error(e, what + ": " + failed);
}

}  // namespace rhinet
