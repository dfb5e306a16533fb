// SPDX-License-Identifier: BSD-2-Clause
// The wait of userlib (wait.hpp): spin for a budget, then arm, look again,
// sleep. The event source here is an eventfd, armed as the NIC's CQ is:
// a completion raises a wake-up only if it comes after the arming.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "wait.hpp"

namespace {

using namespace std::chrono_literals;
using rhinet::WaitStats;
using rhinet::detail::EventSource;
using rhinet::detail::wait_until;

// A completion flag and an eventfd that is written for a completion only
// while armed, the way a CQ raises an event for the next CQE after
// ibv_req_notify_cq and for none before it.
class ArmedFlag final : public EventSource {
 public:
  ArmedFlag() : fd_(eventfd(0, EFD_CLOEXEC)) {}
  ~ArmedFlag() override { close(fd_); }

  void complete() {
    done_.store(true);
    if (armed_.exchange(false)) {
      const std::uint64_t one = 1;
      EXPECT_EQ(write(fd_, &one, sizeof(one)), 8);
    }
  }
  bool done() const { return done_.load(); }

  int arm() override {
    arms++;
    if (complete_before_arming) {
      // The completion lands just before the arming takes effect: it
      // raises nothing, and only a second look finds it.
      complete_before_arming = false;
      complete();
    }
    if (arm_error) return arm_error;
    armed_.store(true);
    return 0;
  }
  int sleep(int timeout_ms) override {
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0) return errno;
    if (r == 0) return ETIMEDOUT;
    std::uint64_t v;
    EXPECT_EQ(read(fd_, &v, sizeof(v)), 8);
    return 0;
  }
  const char* arm_name() const override { return "arm"; }
  const char* sleep_name() const override { return "sleep"; }

  std::atomic<int> arms{0};
  bool complete_before_arming = false;
  int arm_error = 0;

 private:
  int fd_;
  std::atomic<bool> done_{false}, armed_{false};
};

auto deadline(std::chrono::milliseconds d) {
  return rhinet::net::deadline_after(d);
}

TEST(Wait, DoneAtOnceNeitherCountsNorArms) {
  ArmedFlag f;
  f.complete();
  WaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(
      wait_until([&] { return f.done(); }, f, 0us, deadline(1s), st, &failed),
      0);
  EXPECT_EQ(st.waits, 0u);
  EXPECT_EQ(f.arms.load(), 0);
}

// The classic race: the completion comes between the last look and the
// arming. Without the look after arming the wait sleeps to its deadline
// (5 s) before it sees it; with it, it returns without sleeping.
TEST(Wait, CompletionJustBeforeArmingIsNotMissed) {
  ArmedFlag f;
  f.complete_before_arming = true;
  WaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(
      wait_until([&] { return f.done(); }, f, 0us, deadline(5s), st, &failed),
      0);
  EXPECT_EQ(f.arms.load(), 1);
  EXPECT_EQ(st.rechecks, 1u);
  EXPECT_EQ(st.sleeps, 0u);
}

TEST(Wait, SleepsUntilAnotherThreadCompletes) {
  ArmedFlag f;
  WaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    // Completes once the waiter has armed (it sleeps, or is about to).
    while (f.arms.load() == 0) std::this_thread::yield();
    std::this_thread::sleep_for(10ms);
    f.complete();
  });
  const int e =
      wait_until([&] { return f.done(); }, f, 10us, deadline(20s), st, &failed);
  t.join();
  EXPECT_EQ(e, 0);
  EXPECT_EQ(st.waits, 1u);
  // Either it slept and the completion woke it, or the completion came
  // between arming and the second look.
  EXPECT_EQ(st.sleeps + st.rechecks, 1u);
  EXPECT_EQ(st.wakeups, st.sleeps);
}

TEST(Wait, TimesOutWhenNothingCompletes) {
  ArmedFlag f;
  WaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(
      wait_until([&] { return f.done(); }, f, 0us, deadline(30ms), st, &failed),
      ETIMEDOUT);
  EXPECT_GE(st.sleeps, 1u);
  EXPECT_EQ(st.wakeups, 0u);
}

TEST(Wait, ArmingFailureIsReportedByName) {
  ArmedFlag f;
  f.arm_error = EIO;
  WaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(
      wait_until([&] { return f.done(); }, f, 0us, deadline(1s), st, &failed),
      EIO);
  ASSERT_NE(failed, nullptr);
  EXPECT_STREQ(failed, "arm");
}

TEST(Wait, NeverSleepSpinsWithoutArming) {
  ArmedFlag f;
  WaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    f.complete();
  });
  EXPECT_EQ(wait_until([&] { return f.done(); }, f, rhinet::never_sleep,
                       deadline(20s), st, &failed),
            0);
  t.join();
  EXPECT_EQ(f.arms.load(), 0);
  EXPECT_EQ(st.sleeps, 0u);
}

TEST(Wait, SpinBudgetFromEnvironment) {
  using rhinet::detail::spin_from_env;
  unsetenv("RHINET_SPIN_US");
  EXPECT_EQ(*spin_from_env(7us), 7us);
  setenv("RHINET_SPIN_US", "250", 1);
  EXPECT_EQ(*spin_from_env(7us), 250us);
  setenv("RHINET_SPIN_US", "never", 1);
  EXPECT_EQ(*spin_from_env(7us), rhinet::never_sleep);
  for (const char* bad : {"-1", "1000001", "12us", " 5", "x"}) {
    setenv("RHINET_SPIN_US", bad, 1);
    auto r = spin_from_env(7us);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().errno_value(), EINVAL);
    EXPECT_NE(r.error().message().find("RHINET_SPIN_US"), std::string::npos);
  }
  unsetenv("RHINET_SPIN_US");
}

}  // namespace
