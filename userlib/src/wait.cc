// SPDX-License-Identifier: BSD-2-Clause
#include "wait.hpp"

#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

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

int wait_until(const std::function<bool()>& done, EventSource& events,
               std::chrono::microseconds spin, net::Clock::time_point deadline,
               WaitStats& stats, const char** failed) {
  if (done()) return 0;
  stats.waits++;
  const auto start = net::Clock::now();
  if (spin.count() < 0) {
    Backoff b;
    while (!done()) {
      if (net::poll_ms(deadline) == 0) return ETIMEDOUT;
      b.pause();
    }
    return 0;
  }
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

Result<std::chrono::microseconds> spin_from_env(
    std::chrono::microseconds fallback) {
  const char* v = std::getenv("RHINET_SPIN_US");
  if (!v || !*v) return fallback;
  if (std::strcmp(v, "never") == 0) return never_sleep;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end || errno || n > 1000000)
    return Error(EINVAL, std::string("RHINET_SPIN_US=\"") + v +
                             "\" is neither microseconds in 0..1000000 nor "
                             "\"never\"");
  return std::chrono::microseconds(static_cast<std::int64_t>(n));
}

}  // namespace rhinet::detail
