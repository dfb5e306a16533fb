// SPDX-License-Identifier: BSD-2-Clause
// wait_bench: what waiting costs. Two ranks (ideally on one node, where
// they share CPUs) run a ping-pong of 8-byte isend/irecv, a loop of NIC
// group barriers and, on a device with collectives, of communicator
// barriers; then rank 1 waits 1.1 s for a message rank 0 sends late. Each
// phase prints wall time per round and the CPU time this rank used
// (getrusage), and what its waits did (Group::wait_stats); during the
// 1.1 s wait a second thread of rank 1 calls Group::sync and must be told
// EBUSY (one thread at a time). Run it once
// with a spin budget (waits that sleep) and once with RHINET_SPIN_US=never
// (the default busy wait of spin, yield and 50 us naps) to compare:
//
//   rhinet-run -n 2 --per-node 2 --hosts node0 -x RHINET_SPIN_US=50
//       rhinet_wait_bench [ROUNDS]        (one command)
//   rhinet-run -n 2 --per-node 2 --hosts node0 -x RHINET_SPIN_US=never
//       rhinet_wait_bench [ROUNDS]        (one command)
//
// Exit status 0 when every operation succeeded, every message came back
// as sent, and the 1.1 s wait slept and was woken by the NIC (did not sleep
// at all without a budget).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

int fail(const char* what, const rhinet::Error& e) {
  std::fprintf(stderr, "wait_bench: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

// Wall and CPU time of one phase, and what the waits did meanwhile.
class Phase {
 public:
  Phase(rhinet::Group& g, const char* name)
      : g_(g),
        name_(name),
        wall_(Clock::now()),
        cpu_(cpu_ms()),
        stats_(g.wait_stats()) {}
  // Prints the phase; returns what its waits did.
  rhinet::WaitStats report(unsigned rounds) const {
    const double wall =
        std::chrono::duration<double, std::milli>(Clock::now() - wall_).count();
    const double cpu = cpu_ms() - cpu_;
    const rhinet::WaitStats s = g_.wait_stats();
    std::printf(
        "wait_bench: rank %u spin %s: %s: %u rounds, %.1f us per round, "
        "cpu %.0f ms of %.0f ms wall (%.0f%%), sleeps %llu wakeups %llu\n",
        g_.rank(), spin_name().c_str(), name_, rounds, wall * 1e3 / rounds, cpu,
        wall, wall > 0 ? 100 * cpu / wall : 0.0,
        static_cast<unsigned long long>(s.sleeps - stats_.sleeps),
        static_cast<unsigned long long>(s.wakeups - stats_.wakeups));
    return {.waits = s.waits - stats_.waits,
            .sleeps = s.sleeps - stats_.sleeps,
            .wakeups = s.wakeups - stats_.wakeups,
            .rechecks = s.rechecks - stats_.rechecks};
  }

 private:
  std::string spin_name() const {
    return g_.spin() < 0us ? "never"
                           : std::to_string(g_.spin().count()) + " us";
  }
  rhinet::Group& g_;
  const char* name_;
  Clock::time_point wall_;
  double cpu_;
  rhinet::WaitStats stats_;
};

}  // namespace

int main(int argc, char** argv) {
  const unsigned rounds =
      argc > 1 ? static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10))
               : 1000;
  auto joined = rhinet::Group::join_from_env();
  if (!joined) return fail("join", joined.error());
  rhinet::Group& g = **joined;
  if (g.size() != 2 || rounds == 0) {
    std::fprintf(stderr, "wait_bench: run 2 ranks and ROUNDS > 0\n");
    return 2;
  }
  const std::uint32_t me = g.rank(), peer = 1 - me;
  std::vector<std::byte> out(8), in(8);
  auto out_buf = g.buffer(out);
  if (!out_buf) return fail("buffer", out_buf.error());
  auto in_buf = g.buffer(in);
  if (!in_buf) return fail("buffer", in_buf.error());
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());

  if (g.tag_matching()) {
    Phase p(g, "ping-pong (isend/irecv, 8 B)");
    for (unsigned i = 0; i < rounds; i++) {
      std::memcpy(out.data(), &i, sizeof(i));
      if (me == 0) {
        auto s = g.isend(peer, 1, out);
        auto r = g.irecv(peer, 2, in);
        if (auto w = s.wait(30s); !w) return fail("isend", w.error());
        if (auto w = r.wait(30s); !w) return fail("irecv", w.error());
      } else {
        auto r = g.irecv(peer, 1, in);
        if (auto w = r.wait(30s); !w) return fail("irecv", w.error());
        if (auto w = g.isend(peer, 2, out).wait(30s); !w)
          return fail("isend", w.error());
      }
      unsigned got = 0;
      std::memcpy(&got, in.data(), sizeof(got));
      if (got != i) {
        std::fprintf(stderr, "wait_bench: round %u came back as %u\n", i, got);
        return 1;
      }
    }
    p.report(rounds);
  }

  if (g.locks_and_barriers()) {
    Phase p(g, "NIC group barrier");
    for (unsigned i = 0; i < rounds; i++)
      if (auto b = g.barrier({.id = 7}, 30s); !b)
        return fail("group barrier", b.error());
    p.report(rounds);
  }

  if (rhinet::Communicator::collectives(g)) {
    auto comm = rhinet::Communicator::create(g);
    if (!comm) return fail("communicator", comm.error());
    Phase p(g, "communicator barrier");
    for (unsigned i = 0; i < rounds; i++)
      if (auto b = comm->barrier(30s); !b)
        return fail("communicator barrier", b.error());
    p.report(rounds);
  }

  if (g.tag_matching()) {
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail("barrier", b.error());
    // Rank 1 waits while rank 0 does nothing for 1.1 s: a sleep lasts
    // 200 ms at most, so the message lands in the middle of the sixth,
    // not at the end of the fifth, where the look after a timed-out
    // sleep could find it before the NIC's interrupt (seen once on a
    // loaded host: slept 5 times, woken 0).
    Phase p(g, "one wait of 1.1 s");
    if (me == 0) {
      std::this_thread::sleep_for(1100ms);
      if (auto w = g.isend(peer, 3, out).wait(30s); !w)
        return fail("isend", w.error());
    } else {
      // Meanwhile another thread uses the Group: misuse, told as EBUSY
      // (a Group is used by one thread at a time).
      std::atomic<bool> waiting{false};
      std::optional<rhinet::Error> other;
      std::thread t([&] {
        while (!waiting.load()) std::this_thread::yield();
        std::this_thread::sleep_for(100ms);  // well inside the wait
        if (auto r = g.sync(0ms); !r) other = r.error();
      });
      auto recv = g.irecv(peer, 3, in);
      waiting.store(true);
      auto w = recv.wait(30s);
      t.join();
      if (!w) return fail("irecv", w.error());
      if (!other || other->errno_value() != EBUSY) {
        std::fprintf(stderr,
                     "wait_bench: sync from a second thread during a wait: "
                     "%s, not EBUSY\n",
                     other ? other->to_string().c_str() : "succeeded");
        return 1;
      }
      std::printf("wait_bench: rank 1: a second thread was told: %s\n",
                  other->message().c_str());
    }
    const rhinet::WaitStats s = p.report(1);
    // The waiting rank slept and the NIC's interrupt woke it (a sleep
    // lasts 200 ms at most, so up to five end without one); one that
    // never sleeps did not.
    if (me == 1 && g.spin() >= 0us && (s.sleeps == 0 || s.wakeups == 0)) {
      std::fprintf(stderr,
                   "wait_bench: the 1.1 s wait slept %llu times, woken %llu\n",
                   static_cast<unsigned long long>(s.sleeps),
                   static_cast<unsigned long long>(s.wakeups));
      return 1;
    }
    if (me == 1 && g.spin() < 0us && s.sleeps != 0) {
      std::fprintf(stderr, "wait_bench: slept with RHINET_SPIN_US=never\n");
      return 1;
    }
  }
  if (auto s = g.sync(30s); !s) return fail("sync", s.error());
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());
  return 0;
}
