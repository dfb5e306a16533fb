// SPDX-License-Identifier: BSD-2-Clause
// How userlib waits for the NIC (internal): spin on memory for a budget,
// then sleep until the NIC interrupts. Device-free (the event source is
// an interface), so the core library and its unit tests have it.
#ifndef RHINET_USERLIB_WAIT_HPP
#define RHINET_USERLIB_WAIT_HPP

#include <chrono>
#include <functional>

#include "net.hpp"
#include "rhinet/result.hpp"
#include "rhinet/types.hpp"

namespace rhinet::detail {

// Spins a little, then yields, then naps 50 us: the waits that never sleep
// (spin budget never_sleep) and the short waits of a full send queue.
class Backoff {
 public:
  void pause();

 private:
  unsigned n_ = 0;
};

// Looks at done() until it returns true or `deadline` passes, pausing
// with a Backoff between looks: how a wait that never sleeps waits.
// 0 (done) or ETIMEDOUT.
int poll_until(const std::function<bool()>& done,
               net::Clock::time_point deadline);

// What a sleeping waiter needs from the thing that wakes it.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Asks for one wake-up at the next completion that comes from now on.
  // 0, or an errno.
  virtual int arm() = 0;
  // Sleeps until the armed wake-up or `timeout_ms` (-1: none) and takes
  // it. 0, ETIMEDOUT, EINTR, or an errno.
  virtual int sleep(int timeout_ms) = 0;
  // The name of what failed, for messages ("rhinetdv_wait_event").
  virtual const char* arm_name() const = 0;
  virtual const char* sleep_name() const = 0;
};

// Waits until done() returns true or `deadline` passes. Spins (a CPU
// pause, then sched_yield) while less than `spin` has passed since the
// call; then arms `events`, calls done() once more (what completed before
// the arming raises no wake-up) and sleeps until woken or the deadline.
// A negative `spin` never sleeps: it spins, yields, then naps 50 us.
// Returns 0 (done), ETIMEDOUT, or the errno of the event source with
// *failed naming the call.
int wait_until(const std::function<bool()>& done, EventSource& events,
               std::chrono::microseconds spin, net::Clock::time_point deadline,
               WaitStats& stats, const char** failed);

// What a wait on memory needs from the NIC's watch of an area (ops/watch:
// a one-shot watch that writes a completion, and so raises the endpoint's
// event, when the next write lands in the area), besides the events.
class WatchSource : public EventSource {
 public:
  // Posts the arming of the watch. 0, or an errno.
  virtual int watch() = 0;
  // The last arming: 0 while in flight, 1 once armed, or -errno when the
  // NIC refused it.
  virtual int armed() = 0;
  // How many times the watch fired so far (a count that only grows).
  virtual std::uint64_t fired() = 0;
  virtual const char* watch_name() const = 0;
};

// Waits until done() returns true or `deadline` passes, for a condition
// on memory that writes through the NIC make true. Spins for `spin` as
// wait_until does; then arms the watch, waits until it is armed, calls
// done() once more (a write that landed before the arming fired nothing)
// and sleeps until the watch fires; looks again, arms again, and so on.
// Each sleep lasts at most `slice` (stores that do not come through the
// NIC fire nothing). A negative `spin` never sleeps: it spins, yields,
// then naps 50 us (as without a watch). Returns 0 (done), ETIMEDOUT, or
// the errno of the source with *failed naming the call.
int wait_for_watch(const std::function<bool()>& done, WatchSource& source,
                   std::chrono::microseconds spin,
                   net::Clock::time_point deadline,
                   std::chrono::milliseconds slice, AreaWaitStats& stats,
                   const char** failed);

// The spin budget of RHINET_SPIN_US when set (a number of microseconds
// 0..1000000, or "never": never sleep), else `fallback`. EINVAL naming
// the variable when it is malformed.
Result<std::chrono::microseconds> spin_from_env(
    std::chrono::microseconds fallback);

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_WAIT_HPP
