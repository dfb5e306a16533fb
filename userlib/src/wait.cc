// SPDX-License-Identifier: BSD-2-Clause
#include "wait.hpp"

#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "rhinet/bootstrap.hpp"

namespace rhinet::detail {

namespace {

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

void Backoff::pause() {
  if (n_ < 256) {
    cpu_pause();
  } else if (n_ < 2048) {
    sched_yield();
  } else {
    const timespec ts{0, 50 * 1000};
    nanosleep(&ts, nullptr);
  }
  if (n_ < 4096) n_++;
}

int poll_until(const std::function<bool()>& done,
               net::Clock::time_point deadline) {
  Backoff b;
  while (!done()) {
    if (net::poll_ms(deadline) == 0) return ETIMEDOUT;
    b.pause();
  }
  return 0;
}

int wait_until(const std::function<bool()>& done, EventSource& events,
               std::chrono::microseconds spin, net::Clock::time_point deadline,
               WaitStats& stats, const char** failed) {
  if (done()) return 0;
  stats.waits++;
  const auto start = net::Clock::now();
  if (spin.count() < 0) return poll_until(done, deadline);
  // Spinning: a few pauses between looks, a yield now and then so that a
  // rank sharing the CPU runs.
  for (unsigned n = 1;; n++) {
    if (net::Clock::now() - start >= spin) break;
    if (n % 64 == 0)
      sched_yield();
    else
      cpu_pause();
    if (done()) return 0;
  }
  for (;;) {
    if (done()) return 0;
    const int left = net::poll_ms(deadline);
    if (left == 0) return ETIMEDOUT;
    if (const int e = events.arm()) {
      *failed = events.arm_name();
      return e;
    }
    // A completion between the look above and the arming raised no
    // wake-up: look again before sleeping.
    if (done()) {
      stats.rechecks++;
      return 0;
    }
    stats.sleeps++;
    const int e = events.sleep(left);
    if (e == 0)
      stats.wakeups++;
    else if (e != ETIMEDOUT && e != EINTR) {
      *failed = events.sleep_name();
      return e;
    }
  }
}

namespace {

// Spins (a few pauses between looks, a yield now and then so that a rank
// sharing the CPU runs) while less than `spin` passed since `start`; true
// as soon as done().
bool spin_for(const std::function<bool()>& done, std::chrono::microseconds spin,
              net::Clock::time_point start) {
  for (unsigned n = 1;; n++) {
    if (net::Clock::now() - start >= spin) return false;
    if (n % 64 == 0)
      sched_yield();
    else
      cpu_pause();
    if (done()) return true;
  }
}

// A sleep of at most `slice` before `deadline`: 0 (the wait ends), or ms.
int slice_ms(net::Clock::time_point deadline, std::chrono::milliseconds slice) {
  const int left = net::poll_ms(deadline);
  const auto cap = static_cast<int>(slice.count());
  return left < 0 || left > cap ? cap : left;
}

}  // namespace

int wait_for_watch(const std::function<bool()>& done, WatchSource& source,
                   std::chrono::microseconds spin,
                   net::Clock::time_point deadline,
                   std::chrono::milliseconds slice, AreaWaitStats& stats,
                   const char** failed) {
  if (done()) return 0;
  stats.waits++;
  const auto start = net::Clock::now();
  if (spin.count() < 0) {
    stats.polled++;
    return poll_until(done, deadline);
  }
  if (spin_for(done, spin, start)) return 0;
  // One sleep on the source's events: 0, or the errno that ends the wait.
  const auto sleep = [&](int ms) {
    stats.sleeps++;
    const int e = source.sleep(ms);
    if (e == 0) stats.wakeups++;
    if (e == ETIMEDOUT) stats.timeouts++;
    if (e == 0 || e == ETIMEDOUT || e == EINTR) return 0;
    *failed = source.sleep_name();
    return e;
  };
  for (;;) {
    // A firing of an earlier arming still to come is harmless: the loop
    // below then looks again and arms again.
    const std::uint64_t seen = source.fired();
    if (const int e = source.watch()) {
      *failed = source.watch_name();
      return e;
    }
    stats.arms++;
    // Until armed (its completion raises an event too).
    for (;;) {
      const int a = source.armed();
      if (a > 0) break;
      if (a < 0) {
        *failed = source.watch_name();
        return -a;
      }
      if (done()) return 0;
      const int ms = slice_ms(deadline, slice);
      if (ms == 0) return ETIMEDOUT;
      if (const int e = source.arm()) {
        *failed = source.arm_name();
        return e;
      }
      if (source.armed() != 0) continue;
      if (const int e = sleep(ms)) return e;
    }
    // A write that landed before the arming fired nothing: look again.
    if (done()) {
      stats.rechecks++;
      return 0;
    }
    // Until it fires.
    for (;;) {
      if (source.fired() != seen) break;
      const int ms = slice_ms(deadline, slice);
      if (ms == 0) return ETIMEDOUT;
      if (const int e = source.arm()) {
        *failed = source.arm_name();
        return e;
      }
      // A firing between the look above and the arming raised no event.
      if (source.fired() != seen) break;
      if (done()) return 0;  // a store that did not come through the NIC
      if (const int e = sleep(ms)) return e;
    }
    stats.fired += source.fired() - seen;
    if (done()) return 0;
  }
}

Result<std::chrono::microseconds> spin_from_env(
    std::chrono::microseconds fallback) {
  const char* v = std::getenv("RHINET_SPIN_US");
  if (!v || !*v) return fallback;
  auto spin = parse_spin(v);
  if (!spin) return Error(EINVAL, "RHINET_SPIN_US: " + spin.error().message());
  return *spin;
}

}  // namespace rhinet::detail

namespace rhinet {

Result<std::chrono::microseconds> parse_spin(const char* text) {
  const auto bad = [&](const char* why) {
    char msg[160];
    std::snprintf(
        msg, sizeof msg, "'%.40s' %s (0 to %lld microseconds, or never)",
        text ? text : "", why, static_cast<long long>(max_spin.count()));
    return Error(EINVAL, msg);
  };
  if (!text || !*text) return bad("is empty");
  if (std::strcmp(text, "never") == 0) return never_sleep;
  std::int64_t n = 0;
  for (const char* p = text; *p; p++) {
    if (*p < '0' || *p > '9') return bad("is not a number of microseconds");
    n = n * 10 + (*p - '0');
    if (n > max_spin.count()) return bad("is too long");
  }
  return std::chrono::microseconds{n};
}

}  // namespace rhinet
