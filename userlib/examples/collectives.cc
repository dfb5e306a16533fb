// SPDX-License-Identifier: BSD-2-Clause
// collectives: allreduce, reduce, broadcast and barrier executed by the
// NICs (rhinet::Communicator), every result checked against what this rank
// computes itself.
//
//  (a) allreduce, sum of int64, from 1 element to 1 MiB (tree and chain);
//  (b) every reduce op of every element type, 100 elements;
//  (c) reduce to the last rank, broadcast from rank 1 (the others' data
//      poisoned first), in-place allreduce, 50 barriers;
//  (d) a nonblocking allreduce of 256 KiB overlapped with this rank's own
//      work, and how much of the wait was left after it;
//  (e) ranks that disagree (rank 0 passes one element more): EPROTO at
//      every rank, and the next collective works;
//  (f) a communicator of the even ranks only (the odd ones stay out);
//  (g) 8-byte allreduce latency, printed beside two references measured in
//      the same run: the NIC's counting barrier (Group::barrier)
//      and a collective barrier; and the same two with the switch reducing;
//  (i) small operands in plain, unregistered memory (up to
//      Communicator::max_unregistered bytes: allreduce, in place, reduce,
//      broadcast, a nonblocking one), and EFAULT naming the limit one
//      element beyond it;
//  (h) allreduce and barrier reduced in the fabric switch
//      (CommunicatorOptions::in_switch): int64 sums from 1 element to
//      1 MiB, every op of int32 and double, and a reduce and a broadcast
//      on the same communicator (those stay in the NICs).
//
//   rhinet-run -n 8 --per-node 2 --hosts node0,node1,node2,node3
//   rhinet_collectives
//
// Exit status 0 when every check passed on this rank.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <rhinet/rhinet.hpp>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Reduce;
constexpr auto kWait = 120s;

int checks = 0, failures = 0;

bool expect(bool ok, const char* fmt, auto... args) {
  checks++;
  if (ok) return true;
  failures++;
  std::fprintf(stderr, "collectives: ");
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
  return false;
}

bool ok(const rhinet::Result<void>& r, const char* what) {
  return expect(r.has_value(), "%s: %s", what,
                r ? "" : r.error().message().c_str());
}

// Rank r's element i: integers spread over many bits, floats small
// integers (their sums are exact in any order).
template <typename T>
T value(std::uint32_t r, std::size_t i) {
  const std::uint64_t x =
      (std::uint64_t{r} * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(static_cast<int>((x >> 7) % 2001) - 1000);
  else
    return static_cast<T>(x >> 3);
}

template <typename T>
T fold(Reduce op, T a, T b) {
  switch (op) {
    case Reduce::sum:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(std::make_unsigned_t<T>(a) +
                              std::make_unsigned_t<T>(b));
      else
        return a + b;
    case Reduce::min:
      return b < a ? b : a;
    case Reduce::max:
      return a < b ? b : a;
    default:
      if constexpr (std::is_integral_v<T>) {
        if (op == Reduce::band) return a & b;
        if (op == Reduce::bor) return a | b;
        return a ^ b;
      }
      return a;
  }
}

template <typename T>
T expected(Reduce op, std::uint32_t nranks, std::size_t i,
           const rhinet::Communicator& comm) {
  T acc = value<T>(comm.group_rank(0), i);
  for (std::uint32_t r = 1; r < nranks; r++)
    acc = fold(op, acc, value<T>(comm.group_rank(r), i));
  return acc;
}

template <typename T>
bool allreduce_checked(rhinet::Group& g, rhinet::Communicator& comm,
                       std::span<std::byte> mem, std::size_t n, Reduce op,
                       const char* what) {
  auto* send = reinterpret_cast<T*>(mem.data());
  auto* recv = send + n;
  for (std::size_t i = 0; i < n; i++) {
    send[i] = value<T>(g.rank(), i);
    recv[i] = T(-7);
  }
  auto r = comm.allreduce<T>({send, n}, {recv, n}, op, kWait);
  if (!ok(r, what)) return false;
  std::size_t bad = 0, first = n;
  for (std::size_t i = 0; i < n; i++)
    if (recv[i] != expected<T>(op, comm.size(), i, comm)) {
      bad++;
      if (first == n) first = i;
    }
  return expect(bad == 0, "%s: %zu of %zu elements wrong, first %zu", what, bad,
                n, first);
}

template <typename T>
void every_op(rhinet::Group& g, rhinet::Communicator& comm,
              std::span<std::byte> mem, const char* type) {
  for (Reduce op : {Reduce::sum, Reduce::min, Reduce::max, Reduce::band,
                    Reduce::bor, Reduce::bxor}) {
    if (std::is_floating_point_v<T> && op > Reduce::max) continue;
    const std::string what = std::string("allreduce ") + type + " op " +
                             std::to_string(static_cast<int>(op));
    allreduce_checked<T>(g, comm, mem, 100, op, what.c_str());
  }
}

}  // namespace

int main() {
  auto joined = rhinet::Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "collectives: %s\n", joined.error().message().c_str());
    return 1;
  }
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank(), n = g.size();
  if (!rhinet::Communicator::collectives(g)) {
    std::fprintf(stderr, "collectives: the device has no collectives\n");
    return 1;
  }
  auto made = rhinet::Communicator::create(g);
  if (!made) {
    std::fprintf(stderr, "collectives: %s\n", made.error().message().c_str());
    return 1;
  }
  rhinet::Communicator& comm = *made;
  // 2 MiB operands and results, plus room.
  std::vector<std::byte> mem(5u << 20);
  auto buf = g.buffer(mem);
  if (!buf) {
    std::fprintf(stderr, "collectives: %s\n", buf.error().message().c_str());
    return 1;
  }
  std::span<std::byte> m(mem);

  // (a)
  for (std::size_t count : {std::size_t{1}, std::size_t{512}, std::size_t{8192},
                            std::size_t{131072}}) {
    const std::string what =
        "allreduce int64 sum of " + std::to_string(count * 8) + " bytes";
    allreduce_checked<std::int64_t>(g, comm, m, count, Reduce::sum,
                                    what.c_str());
  }
  // (b)
  every_op<std::int32_t>(g, comm, m, "int32");
  every_op<std::uint32_t>(g, comm, m, "uint32");
  every_op<std::int64_t>(g, comm, m, "int64");
  every_op<std::uint64_t>(g, comm, m, "uint64");
  every_op<float>(g, comm, m, "float");
  every_op<double>(g, comm, m, "double");

  // (c) reduce to the last rank: the others' results untouched.
  {
    constexpr std::size_t k = 3000;
    auto* send = reinterpret_cast<double*>(m.data());
    auto* recv = send + k;
    for (std::size_t i = 0; i < k; i++) {
      send[i] = value<double>(me, i);
      recv[i] = -1;
    }
    const std::uint32_t root = n - 1;
    if (ok(comm.reduce<double>({send, k}, {recv, k}, Reduce::max, root, kWait),
           "reduce")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < k; i++)
        bad += me == root ? recv[i] != expected<double>(Reduce::max, n, i, comm)
                          : recv[i] != -1;
      expect(bad == 0, "reduce to %u: %zu elements wrong here", root, bad);
    }
    // Broadcast from rank 1 (rank 0 with a single rank).
    const std::uint32_t from = n > 1 ? 1 : 0;
    auto* data = reinterpret_cast<std::uint32_t*>(m.data());
    constexpr std::size_t b = 5000;
    for (std::size_t i = 0; i < b; i++)
      data[i] = me == from ? value<std::uint32_t>(from, i) : 0xdeadbeef;
    if (ok(comm.bcast<std::uint32_t>({data, b}, from, kWait), "bcast")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < b; i++)
        bad += data[i] != value<std::uint32_t>(from, i);
      expect(bad == 0, "bcast from %u: %zu elements wrong", from, bad);
    }
    // In place.
    auto* x = reinterpret_cast<std::int32_t*>(m.data());
    for (std::size_t i = 0; i < 700; i++) x[i] = value<std::int32_t>(me, i);
    if (ok(comm.allreduce<std::int32_t>({x, 700}, {x, 700}, Reduce::bxor,
                                        kWait),
           "in-place allreduce")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < 700; i++)
        bad += x[i] != expected<std::int32_t>(Reduce::bxor, n, i, comm);
      expect(bad == 0, "in-place allreduce: %zu elements wrong", bad);
    }
    for (int i = 0; i < 50; i++)
      if (!ok(comm.barrier(kWait), "barrier")) break;
  }

  // (d) nonblocking: this rank works while the NICs reduce.
  {
    constexpr std::size_t k = 32768;
    auto* send = reinterpret_cast<std::uint64_t*>(m.data());
    auto* recv = send + k;
    for (std::size_t i = 0; i < k; i++) send[i] = value<std::uint64_t>(me, i);
    const auto t0 = std::chrono::steady_clock::now();
    auto req =
        comm.iallreduce<std::uint64_t>({send, k}, {recv, k}, Reduce::sum);
    // Its execution state while this rank works: the bytes finished at
    // this rank's NIC, never going back.
    volatile std::uint64_t work = 0;
    std::uint32_t seen = 0, states = 0;
    bool backwards = false;
    for (int chunk = 0; chunk < 200; chunk++) {
      for (std::uint64_t i = 0; i < 100'000; i++) work = work + i;
      const std::uint32_t p = req.progress();
      backwards |= p < seen;
      states += p != seen;
      seen = p;
    }
    const auto t1 = std::chrono::steady_clock::now();
    const bool done_during = req.test();
    auto r = req.wait(kWait);
    const auto t2 = std::chrono::steady_clock::now();
    if (ok(r, "iallreduce")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < k; i++)
        bad += recv[i] != expected<std::uint64_t>(Reduce::sum, n, i, comm);
      expect(bad == 0, "iallreduce: %zu elements wrong", bad);
      expect(!backwards && req.progress() == k * 8,
             "iallreduce progress: went back %d, %u at the end", backwards,
             req.progress());
    }
    if (me == 0)
      std::printf(
          "collectives: iallreduce 256 KiB: own work %.1f ms, done during "
          "it: %s (its progress read %u different values meanwhile), wait "
          "after it %.1f ms\n",
          std::chrono::duration<double, std::milli>(t1 - t0).count(),
          done_during ? "yes" : "no", states,
          std::chrono::duration<double, std::milli>(t2 - t1).count());
  }

  // (e) disagreement, then agreement again.
  {
    auto* send = reinterpret_cast<std::int64_t*>(m.data());
    auto* recv = send + 64;
    for (int i = 0; i < 64; i++) send[i] = value<std::int64_t>(me, i);
    const std::size_t count = me == 0 && n > 1 ? 33 : 32;
    auto r = comm.allreduce<std::int64_t>({send, count}, {recv, count},
                                          Reduce::sum, kWait);
    if (n > 1)
      expect(!r && r.error().errno_value() == EPROTO,
             "a disagreeing allreduce: %s",
             r ? "succeeded" : r.error().message().c_str());
    allreduce_checked<std::int64_t>(g, comm, m, 32, Reduce::sum,
                                    "allreduce after the disagreement");
  }

  // (i) unregistered memory: copied through the library's own.
  {
    constexpr std::size_t k = rhinet::Communicator::max_unregistered / 8;
    std::vector<double> send(k), recv(k, -7);
    for (std::size_t i = 0; i < k; i++) send[i] = value<double>(me, i);
    if (ok(comm.allreduce<double>(send, recv, Reduce::sum, kWait),
           "allreduce of unregistered memory")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < k; i++)
        bad += recv[i] != expected<double>(Reduce::sum, n, i, comm);
      expect(bad == 0, "unregistered allreduce: %zu of %zu elements wrong", bad,
             k);
    }
    std::int32_t x[5];
    for (std::size_t i = 0; i < 5; i++) x[i] = value<std::int32_t>(me, i);
    if (ok(comm.allreduce<std::int32_t>(x, x, Reduce::max, kWait),
           "unregistered in-place allreduce")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < 5; i++)
        bad += x[i] != expected<std::int32_t>(Reduce::max, n, i, comm);
      expect(bad == 0, "unregistered in-place allreduce: %zu wrong", bad);
    }
    std::uint64_t r8[3] = {1, 1, 1}, s8[3];
    for (std::size_t i = 0; i < 3; i++) s8[i] = value<std::uint64_t>(me, i);
    if (ok(comm.reduce<std::uint64_t>(s8, r8, Reduce::bor, 0, kWait),
           "unregistered reduce")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < 3; i++)
        bad += me == 0
                   ? r8[i] != expected<std::uint64_t>(Reduce::bor, n, i, comm)
                   : r8[i] != 1;
      expect(bad == 0, "unregistered reduce to 0: %zu wrong here", bad);
    }
    std::uint32_t b[100];
    for (std::size_t i = 0; i < 100; i++)
      b[i] = me == 0 ? value<std::uint32_t>(0, i) : 0xdeadbeef;
    if (ok(comm.bcast<std::uint32_t>(b, 0, kWait), "unregistered bcast")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < 100; i++)
        bad += b[i] != value<std::uint32_t>(0, i);
      expect(bad == 0, "unregistered bcast from 0: %zu wrong", bad);
    }
    std::int64_t a[2] = {me, 1}, sum[2] = {0, 0};
    auto req = comm.iallreduce<std::int64_t>(a, sum, Reduce::sum);
    if (ok(req.wait(kWait), "unregistered iallreduce"))
      expect(sum[0] == std::int64_t{n} * (n - 1) / 2 && sum[1] == n,
             "unregistered iallreduce: %" PRId64 " %" PRId64, sum[0], sum[1]);
    // One element beyond the limit: refused before anything is posted,
    // at every rank alike.
    std::vector<double> big(k + 1, 1.0), big_out(k + 1);
    auto r = comm.allreduce<double>(big, big_out, Reduce::sum, kWait);
    expect(
        !r && r.error().errno_value() == EFAULT &&
            r.error().message().find("max_unregistered") != std::string::npos,
        "unregistered allreduce of %zu bytes: %s", (k + 1) * 8,
        r ? "succeeded" : r.error().message().c_str());
    allreduce_checked<std::int64_t>(g, comm, m, 16, Reduce::sum,
                                    "allreduce after the refusal");
  }

  // (f) the even ranks.
  if (me % 2 == 0) {
    std::vector<std::uint32_t> even;
    for (std::uint32_t r = 0; r < n; r += 2) even.push_back(r);
    auto sub = rhinet::Communicator::create(g, even, {.id = 2});
    if (expect(sub.has_value(), "even communicator: %s",
               sub ? "" : sub.error().message().c_str())) {
      expect(sub->size() == even.size() && sub->rank() == me / 2,
             "even communicator: rank %u of %u", sub->rank(), sub->size());
      allreduce_checked<std::int64_t>(g, *sub, m, 1000, Reduce::sum,
                                      "allreduce of the even ranks");
    }
  }

  // (h) the switch reduces.
  const bool switch_reduces = rhinet::Communicator::in_switch(g);
  auto in_switch =
      rhinet::Communicator::create(g, {.id = 3, .in_switch = switch_reduces});
  expect(switch_reduces, "the device cannot have the switch reduce");
  if (switch_reduces &&
      expect(in_switch.has_value(), "in-switch communicator: %s",
             in_switch ? "" : in_switch.error().message().c_str())) {
    rhinet::Communicator& sw = *in_switch;
    for (std::size_t count :
         {std::size_t{1}, std::size_t{8192}, std::size_t{131072}}) {
      const std::string what = "in-switch allreduce int64 sum of " +
                               std::to_string(count * 8) + " bytes";
      allreduce_checked<std::int64_t>(g, sw, m, count, Reduce::sum,
                                      what.c_str());
    }
    every_op<std::int32_t>(g, sw, m, "int32 in the switch");
    every_op<double>(g, sw, m, "double in the switch");
    for (int i = 0; i < 20; i++)
      if (!ok(sw.barrier(kWait), "in-switch barrier")) break;
    auto* data = reinterpret_cast<std::int64_t*>(m.data());
    for (std::size_t i = 0; i < 100; i++)
      data[i] = me == 0 ? value<std::int64_t>(0, i) : -1;
    if (ok(sw.bcast<std::int64_t>({data, 100}, 0, kWait),
           "bcast on the in-switch communicator")) {
      std::size_t bad = 0;
      for (std::size_t i = 0; i < 100; i++)
        bad += data[i] != value<std::int64_t>(0, i);
      expect(bad == 0, "bcast on the in-switch communicator: %zu wrong", bad);
    }
  }

  // (g)
  {
    auto* x = reinterpret_cast<std::int64_t*>(m.data());
    constexpr int kIters = 200;
    ok(comm.barrier(kWait), "barrier before timing");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; i++) {
      x[0] = me + i;
      if (!ok(comm.allreduce<std::int64_t>({x, 1}, {x + 1, 1}, Reduce::sum,
                                           kWait),
              "timed allreduce"))
        break;
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; i++)
      if (!ok(comm.barrier(kWait), "timed collective barrier")) break;
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; i++)
      if (!ok(g.barrier({}, kWait), "timed NIC barrier")) break;
    const auto t3 = std::chrono::steady_clock::now();
    auto t4 = t3, t5 = t3;
    if (in_switch) {
      for (int i = 0; i < kIters; i++) {
        x[0] = me + i;
        if (!ok(in_switch->allreduce<std::int64_t>({x, 1}, {x + 1, 1},
                                                   Reduce::sum, kWait),
                "timed in-switch allreduce"))
          break;
      }
      t4 = std::chrono::steady_clock::now();
      for (int i = 0; i < kIters; i++)
        if (!ok(in_switch->barrier(kWait), "timed in-switch barrier")) break;
      t5 = std::chrono::steady_clock::now();
    }
    const auto us = [&](auto a, auto b) {
      return std::chrono::duration<double, std::micro>(b - a).count() / kIters;
    };
    if (me == 0)
      std::printf(
          "collectives: over %u ranks: 8-byte allreduce %.1f us, collective "
          "barrier %.1f us, NIC counting barrier (Group::barrier) %.1f us; "
          "in the switch: 8-byte allreduce %.1f us, barrier %.1f us\n",
          n, us(t0, t1), us(t1, t2), us(t2, t3), us(t3, t4), us(t4, t5));
  }

  ok(g.barrier_bootstrap(), "final bootstrap barrier");
  std::printf("collectives: rank %u: %d checks, %d failed: %s\n", me, checks,
              failures, failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
