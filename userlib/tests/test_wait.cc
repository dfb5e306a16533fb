// SPDX-License-Identifier: BSD-2-Clause
// The wait of userlib (wait.hpp): spin for a budget, then arm, look again,
// sleep; and the Inbox's receive on it. The event source here is an eventfd,
// armed as the NIC's CQ is: a completion raises a wake-up only if it comes
// after the arming.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rhinet/bootstrap.hpp"
#include "rhinet/inbox_protocol.hpp"
#include "wait.hpp"

namespace {

using namespace std::chrono_literals;
using rhinet::AreaWaitStats;
using rhinet::WaitStats;
using rhinet::detail::EventSource;
using rhinet::detail::wait_for_watch;
using rhinet::detail::wait_until;
using rhinet::detail::WatchSource;

// An eventfd written only while armed, and disarmed by that write, the
// way a CQ raises an event for the next CQE after ibv_req_notify_cq and
// for none before it.
class ArmedEvent {
 public:
  ArmedEvent() : fd_(eventfd(0, EFD_CLOEXEC)) {}
  ~ArmedEvent() { close(fd_); }
  ArmedEvent(const ArmedEvent&) = delete;
  ArmedEvent& operator=(const ArmedEvent&) = delete;

  void arm() { armed_.store(true); }
  void raise() {
    if (armed_.exchange(false)) {
      const std::uint64_t one = 1;
      EXPECT_EQ(write(fd_, &one, sizeof(one)), 8);
    }
  }
  // 0 once raised, ETIMEDOUT, or errno of poll.
  int sleep(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0) return errno;
    if (r == 0) return ETIMEDOUT;
    std::uint64_t v;
    EXPECT_EQ(read(fd_, &v, sizeof(v)), 8);
    return 0;
  }

 private:
  int fd_;
  std::atomic<bool> armed_{false};
};

// A completion flag whose completions raise an ArmedEvent.
class ArmedFlag final : public EventSource {
 public:
  void complete() {
    done_.store(true);
    event_.raise();
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
    event_.arm();
    return 0;
  }
  int sleep(int timeout_ms) override { return event_.sleep(timeout_ms); }
  const char* arm_name() const override { return "arm"; }
  const char* sleep_name() const override { return "sleep"; }

  std::atomic<int> arms{0};
  bool complete_before_arming = false;
  int arm_error = 0;

 private:
  ArmedEvent event_;
  std::atomic<bool> done_{false};
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

TEST(Wait, ParseSpinTakesMicrosecondsOrNever) {
  EXPECT_EQ(*rhinet::parse_spin("0"), 0us);
  EXPECT_EQ(*rhinet::parse_spin("1000000"), 1000000us);
  EXPECT_EQ(*rhinet::parse_spin("never"), rhinet::never_sleep);
  for (const char* bad : {"", "-1", "1000001", "12us", " 5", "Never", "0x10",
                          "99999999999999999999999"}) {
    auto r = rhinet::parse_spin(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().errno_value(), EINVAL);
    EXPECT_NE(r.error().message().find("(0 to 1000000 microseconds, or never)"),
              std::string::npos)
        << r.error().message();
  }
  EXPECT_EQ(rhinet::parse_spin("x").error().message(),
            "'x' is not a number of microseconds (0 to 1000000 microseconds, "
            "or never)");
  EXPECT_FALSE(rhinet::parse_spin(nullptr));
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

// ---- waits on memory with the NIC's watch (wait_for_watch) -----------------

// An area's word, written "by the NIC" (land), and the watch of the area
// as the NIC keeps it: armed by watch() (at once, or when the test says),
// fired by the next landing, once; firing or arming raises the endpoint's
// event only while that is armed.
class FakeWatch final : public WatchSource {
 public:
  // A write through the NIC: the word, then the watch fires if armed.
  void land(std::uint64_t v) {
    word.store(v);
    fire();
  }
  // After any write the NIC made in the area: the watch fires if armed.
  void fire() {
    if (nic_armed_.exchange(false)) {
      fires_++;
      event_.raise();
    }
  }
  // The NIC executes the arming posted last (arm_later).
  void execute_arming() {
    nic_armed_.store(true);
    state_.store(1);
    event_.raise();
  }

  int watch() override {
    watches++;
    if (refuse) {
      state_.store(-ENOENT);
      event_.raise();
      return 0;
    }
    state_.store(0);
    // The write comes just before the NIC arms: it fires nothing, and only
    // the look after the arming finds it.
    if (land_before_arming) {
      land_before_arming = false;
      land(landed_value);
    }
    if (!arm_later) execute_arming();
    return 0;
  }
  int armed() override { return state_.load(); }
  std::uint64_t fired() override { return fires_.load(); }
  int arm() override {
    event_.arm();
    return 0;
  }
  int sleep(int timeout_ms) override { return event_.sleep(timeout_ms); }
  const char* arm_name() const override { return "arm"; }
  const char* sleep_name() const override { return "sleep"; }
  const char* watch_name() const override { return "watch"; }

  std::atomic<std::uint64_t> word{0};
  std::atomic<int> watches{0};
  bool refuse = false;
  bool arm_later = false;
  bool land_before_arming = false;
  std::uint64_t landed_value = 0;

 private:
  ArmedEvent event_;
  std::atomic<bool> nic_armed_{false};
  std::atomic<int> state_{0};
  std::atomic<std::uint64_t> fires_{0};
};

TEST(WatchWait, MetAtOnceArmsNothing) {
  FakeWatch w;
  w.word = 1;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(wait_for_watch([&] { return w.word == 1; }, w, 0us, deadline(1s),
                           200ms, st, &failed),
            0);
  EXPECT_EQ(st.waits, 0u);
  EXPECT_EQ(w.watches.load(), 0);
}

TEST(WatchWait, SleepsUntilTheWatchFires) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    w.land(7);
  });
  // The slice is longer than the test's deadline: only the firing wakes.
  EXPECT_EQ(wait_for_watch([&] { return w.word == 7; }, w, 0us, deadline(20s),
                           std::chrono::hours(1), st, &failed),
            0);
  t.join();
  EXPECT_EQ(st.waits, 1u);
  EXPECT_EQ(st.arms, 1u);
  EXPECT_EQ(st.sleeps, 1u);
  EXPECT_EQ(st.wakeups, 1u);
  EXPECT_EQ(st.fired, 1u);
  EXPECT_EQ(st.rechecks, 0u);
  EXPECT_EQ(st.timeouts, 0u);
}

// Writes that do not meet the condition fire the watch too: the wait looks,
// arms again, and sleeps again, once per firing.
TEST(WatchWait, ArmsAgainAfterEachFiringUntilMet) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    for (std::uint64_t v = 1; v <= 3; v++) {
      // Each landing after the wait armed again (else it fires nothing).
      while (w.watches.load() < static_cast<int>(v))
        std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(20ms);
      w.land(v);
    }
  });
  EXPECT_EQ(wait_for_watch([&] { return w.word == 3; }, w, 0us, deadline(20s),
                           std::chrono::hours(1), st, &failed),
            0);
  t.join();
  EXPECT_EQ(st.arms, 3u);
  EXPECT_EQ(st.fired, 3u);
  EXPECT_EQ(st.wakeups, 3u);
}

// The race the look after arming closes: the write lands after the last
// look but before the NIC armed the watch, which then never fires. Without
// that look the wait sleeps to its deadline (5 s, slices of an hour) and
// fails; with it, it returns at once.
TEST(WatchWait, AWriteJustBeforeTheArmingIsNotMissed) {
  FakeWatch w;
  w.land_before_arming = true;
  w.landed_value = 9;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(wait_for_watch([&] { return w.word == 9; }, w, 0us, deadline(5s),
                           std::chrono::hours(1), st, &failed),
            0);
  EXPECT_EQ(st.rechecks, 1u);
  EXPECT_EQ(st.sleeps, 0u);
  EXPECT_EQ(st.fired, 0u);
}

// The look counts only once the watch is armed: the wait sleeps (on the
// arming's completion) until then, and a write after the arming fires.
TEST(WatchWait, WaitsUntilTheWatchIsArmedBeforeLookingAgain) {
  FakeWatch w;
  w.arm_later = true;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    while (w.watches.load() < 1) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(30ms);
    w.execute_arming();
    std::this_thread::sleep_for(30ms);
    w.land(5);
  });
  EXPECT_EQ(wait_for_watch([&] { return w.word == 5; }, w, 0us, deadline(20s),
                           std::chrono::hours(1), st, &failed),
            0);
  t.join();
  EXPECT_EQ(st.arms, 1u);
  EXPECT_EQ(st.sleeps, 2u);  // for the arming, then for the firing
  EXPECT_EQ(st.wakeups, 2u);
  EXPECT_EQ(st.fired, 1u);
}

// A store that does not come through the NIC fires nothing: the slices
// bound how long it goes unseen.
TEST(WatchWait, SlicesSeeStoresThatFireNothing) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    std::this_thread::sleep_for(30ms);
    w.word.store(4);  // not land(): no firing
  });
  EXPECT_EQ(wait_for_watch([&] { return w.word == 4; }, w, 0us, deadline(20s),
                           10ms, st, &failed),
            0);
  t.join();
  EXPECT_GE(st.sleeps, 2u);
  EXPECT_EQ(st.wakeups, 0u);
  EXPECT_EQ(st.fired, 0u);
  // Every one of those sleeps ended at its slice, not by the NIC.
  EXPECT_EQ(st.timeouts, st.sleeps);
}

// A wait woken by the NIC once, after slices that ran out: the stats tell
// the two apart (sleeps = wakeups + timeouts).
TEST(WatchWait, SlicesThatRanOutAreCountedApartFromWakeups) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    std::this_thread::sleep_for(60ms);
    w.land(6);
  });
  EXPECT_EQ(wait_for_watch([&] { return w.word == 6; }, w, 0us, deadline(20s),
                           10ms, st, &failed),
            0);
  t.join();
  EXPECT_EQ(st.wakeups, 1u);
  EXPECT_GE(st.timeouts, 2u);
  EXPECT_EQ(st.sleeps, st.wakeups + st.timeouts);
}

TEST(WatchWait, ARefusedWatchIsReportedByName) {
  FakeWatch w;
  w.refuse = true;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(wait_for_watch([&] { return w.word == 1; }, w, 0us, deadline(1s),
                           200ms, st, &failed),
            ENOENT);
  ASSERT_NE(failed, nullptr);
  EXPECT_STREQ(failed, "watch");
}

TEST(WatchWait, TimesOut) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(wait_for_watch([&] { return w.word == 1; }, w, 0us, deadline(30ms),
                           200ms, st, &failed),
            ETIMEDOUT);
  EXPECT_EQ(st.arms, 1u);
  EXPECT_GE(st.sleeps, 1u);
  EXPECT_EQ(st.wakeups, 0u);
  EXPECT_EQ(st.timeouts, st.sleeps);
}

TEST(WatchWait, NeverSleepPollsWithoutAWatch) {
  FakeWatch w;
  AreaWaitStats st;
  const char* failed = nullptr;
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    w.land(1);
  });
  EXPECT_EQ(wait_for_watch([&] { return w.word == 1; }, w, rhinet::never_sleep,
                           deadline(20s), 200ms, st, &failed),
            0);
  t.join();
  EXPECT_EQ(w.watches.load(), 0);
  EXPECT_EQ(st.polled, 1u);
  EXPECT_EQ(st.sleeps, 0u);
}

// ---- the Inbox's receive (Inbox::receive) ---------------------------------

// A receiver's Inbox queue over memory, and senders that write into it as
// the NIC does for an InboxSender (the fetch-add on SendCNT, the bytes,
// then the header: each a NIC write into the inbox's area, which fires the
// area's watch). Inbox::receive waits for Queue::ready with
// Group::wait_for_area, that is wait_for_watch over the area's watch.
struct InboxArea {
  explicit InboxArea(rhinet::InboxLayout l)
      : layout(l), mem(rhinet::inbox::area_bytes(l)), queue(mem, l) {
    queue.init();
  }
  // One message of `bytes`, landing write by write through `w`.
  void send(FakeWatch& w, std::span<const std::byte> bytes) {
    using namespace rhinet::inbox;
    auto* send_count = reinterpret_cast<std::uint64_t*>(
        mem.data() + counter_offset(0) + kSendCount);
    const std::uint64_t ticket =
        __atomic_fetch_add(send_count, 1, __ATOMIC_ACQ_REL);
    w.fire();
    std::memcpy(mem.data() + data_offset(layout, 0, ticket), bytes.data(),
                bytes.size());
    w.fire();
    const SlotHeader h{ticket, static_cast<std::uint32_t>(bytes.size()), kFull};
    std::byte* at = mem.data() + header_offset(layout, 0, ticket);
    std::memcpy(at, &h, offsetof(SlotHeader, full));
    __atomic_store_n(
        reinterpret_cast<std::uint32_t*>(at + offsetof(SlotHeader, full)),
        kFull, __ATOMIC_RELEASE);
    w.fire();
  }
  rhinet::InboxLayout layout;
  std::vector<std::byte> mem;
  rhinet::inbox::Queue queue;
};

// The receiver finds the inbox empty, spins its budget, arms the watch of
// the area and sleeps; the sender's writes wake it (the ticket's
// fetch-add and the bytes for nothing: it looks, arms again, sleeps
// again), and it takes the whole message. The slices (an hour) are
// longer than the test: only the NIC's firings can end its sleeps.
TEST(InboxWait, AReceiveSleepsUntilTheMessageLands) {
  FakeWatch w;
  InboxArea in({.slots = 4, .slot_bytes = 64});
  const std::string text = "woken by the watch";
  std::thread t([&] {
    while (w.watches.load() == 0) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);
    in.send(w, std::as_bytes(std::span(text)));
  });
  std::span<const std::byte> got;
  AreaWaitStats st;
  const char* failed = nullptr;
  const int e =
      wait_for_watch([&] { return in.queue.ready(&got); }, w, 100us,
                     deadline(20s), std::chrono::hours(1), st, &failed);
  t.join();
  ASSERT_EQ(e, 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.data()), got.size()),
            text);
  EXPECT_EQ(st.waits, 1u);
  EXPECT_GE(st.sleeps, 1u);
  EXPECT_GE(st.wakeups, 1u);
  EXPECT_GE(st.fired, 1u);
  EXPECT_EQ(st.timeouts, 0u);
  EXPECT_EQ(st.polled, 0u);
  in.queue.pop();
  EXPECT_FALSE(in.queue.ready(&got));
}

// A message that is there already: no wait, no watch.
TEST(InboxWait, AWaitingMessageIsTakenWithoutAWatch) {
  FakeWatch w;
  InboxArea in({.slots = 4, .slot_bytes = 64});
  const std::string text = "here already";
  in.send(w, std::as_bytes(std::span(text)));
  std::span<const std::byte> got;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(wait_for_watch([&] { return in.queue.ready(&got); }, w, 100us,
                           deadline(1s), 200ms, st, &failed),
            0);
  EXPECT_EQ(st.waits, 0u);
  EXPECT_EQ(w.watches.load(), 0);
}

// Without watches (no RHN_CAP_WATCH: wait_for_area then passes
// never_sleep) the receive polls as it did before: no watch, no sleep.
TEST(InboxWait, WithoutWatchesTheReceivePolls) {
  FakeWatch w;
  InboxArea in({.slots = 4, .slot_bytes = 64});
  const std::string text = "polled";
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    in.send(w, std::as_bytes(std::span(text)));
  });
  std::span<const std::byte> got;
  AreaWaitStats st;
  const char* failed = nullptr;
  EXPECT_EQ(
      wait_for_watch([&] { return in.queue.ready(&got); }, w,
                     rhinet::never_sleep, deadline(20s), 200ms, st, &failed),
      0);
  t.join();
  EXPECT_EQ(got.size(), text.size());
  EXPECT_EQ(w.watches.load(), 0);
  EXPECT_EQ(st.polled, 1u);
  EXPECT_EQ(st.sleeps, 0u);
}

}  // namespace
