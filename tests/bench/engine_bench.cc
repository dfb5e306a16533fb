// SPDX-License-Identifier: BSD-2-Clause
// Engine-to-engine benchmark (a program, not a test): two NIC engines, each
// on its own thread, joined by a direct wire (no switch, no faults). The
// requester's thread also plays the host: it posts RDMA WRITEs (PUSH)
// through the real SQ/doorbell path of the simulated provider and polls
// the CQ. memcpy between two buffers of the same size, measured in the same
// run before any engine thread starts (best of five), is the reference.
//
//   engine_bench [--quick] [--only push|rate|rtt|pumped] [--size BYTES]
//
// --only runs one section, --size one PUSH size (for profiling one path
// with perf).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_nodes.h"

using namespace rhinet;
using bench::Clock;
using bench::Node;
using bench::seconds_since;

namespace {

// The reference: memcpy of `size` bytes, best of several runs. It must be
// measured while no engine thread spins, or it reads the share of a core
// the engines left over instead of the copy rate.
double memcpy_gbps(size_t size, bool quick) {
  std::vector<uint8_t> a(size, 1), b(size, 2);
  const size_t reps =
      std::max<size_t>(64, ((quick ? 64ull : 256ull) << 20) / size);
  double best = 0;
  for (int run = 0; run < 5; run++) {
    const auto t = Clock::now();
    for (size_t i = 0; i < reps; i++) {
      std::memcpy(b.data(), a.data(), size);
      a[i % size] = static_cast<uint8_t>(i);  // keep the copies alive
      asm volatile("" : : "r"(b.data()) : "memory");
    }
    best = std::max(best, double(size) * reps / seconds_since(t) / 1e9);
  }
  return best;
}

// The second reference: what two threads can move between their cores at
// all, frames copied into a ring by one and out by the other (the least a
// PUSH between two engine threads does, before CRCs, DMA and the
// protocol). MTU frames bound the bandwidth, small ones the message rate.
// Measured, like memcpy, before the engine threads start. Frames per
// second, best of three.
double cross_core_frames(size_t frame, size_t frames) {
  constexpr size_t kRing = 256;
  std::vector<uint8_t> ring(frame * kRing), src(frame, 1), dst(frame);
  std::atomic<size_t> taken{0}, given{0};
  double best = 0;
  for (int run = 0; run < 3; run++) {
    taken = 0;
    given = 0;
    const auto t = Clock::now();
    std::thread reader([&] {
      for (size_t i = 0; i < frames; i++) {
        while (given.load(std::memory_order_acquire) == i) {
        }
        std::memcpy(dst.data(), &ring[(i % kRing) * frame], frame);
        taken.store(i + 1, std::memory_order_release);
      }
    });
    for (size_t i = 0; i < frames; i++) {
      while (i - taken.load(std::memory_order_acquire) >= kRing) {
      }
      src[i % frame] = static_cast<uint8_t>(i);
      std::memcpy(&ring[(i % kRing) * frame], src.data(), frame);
      given.store(i + 1, std::memory_order_release);
    }
    reader.join();
    best = std::max(best, double(frames) / seconds_since(t));
  }
  return best;
}

struct Result {
  double seconds = 0;
  uint64_t ops = 0;
  // With one thread pumping both engines: the time spent inside each
  // engine's poll(), so each engine's own cost per operation shows apart
  // from the host's (posting, CQ polling) and from the other engine's.
  double requester_seconds = 0;
  double responder_seconds = 0;
  // With the responder on its own thread: the share of the requester
  // thread's polls that found nothing to do (it waited on the responder).
  double requester_idle = 0;
};

// Keeps up to `window` WRITEs of `size` bytes in flight until `ops` are
// done; every 16th (or more often for small windows) is signalled.
Result push_run(Node& a, sim::SimQp& qp, sim::SimCq& cq,
                const sim::SimBuffer& src, const sim::SimMr& src_mr,
                uint64_t dst_va, uint32_t rkey, size_t size, uint64_t ops,
                uint32_t window, bool inline_data, Node* pump_also = nullptr) {
  sim::SendWr wr;
  wr.opcode = RHN_OP_WRITE;
  wr.remote_addr = dst_va;
  wr.remote_key = rkey;
  if (inline_data) {
    wr.flags = RHN_WQE_F_INLINE;
    wr.inline_data.assign(size, 0x5a);
  } else {
    wr.sges = {{src.va(), static_cast<uint32_t>(size), src_mr.key}};
  }
  // Signal often enough that the window always holds a signalled WQE.
  const uint64_t every = std::clamp<uint64_t>(window / 2, 1, 16);
  uint64_t posted = 0, done = 0;
  const auto t = Clock::now();
  auto last_progress = t;
  uint64_t last_done = 0;
  Clock::duration in_requester{}, in_responder{};
  uint64_t idle_polls = 0, polls = 0, turns = 0;
  while (done < ops) {
    // The watchdog reads the clock every 4096th turn: reading it every
    // turn took a tenth of the posting thread's time.
    if ((++turns & 4095) == 0) {
      if (done != last_done) {
        last_done = done;
        last_progress = Clock::now();
      } else if (seconds_since(last_progress) > 5) {
        std::fprintf(stderr, "no progress for 5 s (posted %lu, done %lu):\n",
                     static_cast<unsigned long>(posted),
                     static_cast<unsigned long>(done));
        for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
          std::fprintf(stderr, "  counter %2u: %lu\n", i,
                       static_cast<unsigned long>(a.engine->counter(i)));
        std::exit(1);
      }
    }
    while (posted < ops && posted - done < window) {
      wr.wr_id = posted;
      const bool signal = (posted % every) == every - 1 || posted == ops - 1;
      wr.flags = static_cast<uint8_t>((inline_data ? RHN_WQE_F_INLINE : 0) |
                                      (signal ? RHN_WQE_F_SIGNALED : 0));
      if (!qp.post_send(wr)) break;
      posted++;
    }
    if (pump_also) {
      const auto t0 = Clock::now();
      a.engine->poll();
      const auto t1 = Clock::now();
      pump_also->engine->poll();
      const auto t2 = Clock::now();
      in_requester += t1 - t0;
      in_responder += t2 - t1;
    } else {
      if (!a.engine->poll()) idle_polls++;
      polls++;
    }
    sim::Completion c;
    while (cq.poll_one(&c)) {
      if (!c.ok()) {
        std::fprintf(stderr, "error completion status %u\n", c.status);
        std::exit(1);
      }
      done = c.wr_id + 1;
    }
  }
  return {seconds_since(t), ops,
          std::chrono::duration<double>(in_requester).count(),
          std::chrono::duration<double>(in_responder).count(),
          polls ? double(idle_polls) / double(polls) : 0};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string only;
  size_t only_size = 0;
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--size" && i + 1 < argc) {
      only_size = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr,
                   "usage: engine_bench [--quick] [--only "
                   "push|rate|rtt|pumped] [--size BYTES]\n");
      return 2;
    }
  }
  auto wanted = [&](const char* section) {
    return only.empty() || only == section;
  };
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bench::Pair pair;
  if (!pair.up) {
    std::fprintf(stderr, "bring-up failed\n");
    return 1;
  }
  Node& a = pair.a;
  Node& b = pair.b;
  const size_t max_size = 1u << 20;
  sim::SimBuffer src = a.ctx->alloc(max_size);
  sim::SimBuffer dst = b.ctx->alloc(max_size);
  src.fill(0x11);
  sim::SimMr src_mr = a.ctx->reg_mr(src, RHN_ACCESS_LOCAL_WRITE);
  sim::SimMr dst_mr =
      b.ctx->reg_mr(dst, RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE);
  auto cq_a = a.ctx->create_cq(12);
  auto cq_b = b.ctx->create_cq(12);
  sim::QpInit init;
  init.send_cq = cq_a.get();
  init.sq_log_depth = 12;
  auto qp_a = a.ctx->create_qp(init);
  init.send_cq = cq_b.get();
  auto qp_b = b.ctx->create_qp(init);
  if (!src_mr.ok() || !dst_mr.ok() || !qp_a || !qp_b || !qp_a->to_init().ok() ||
      !qp_b->to_init().ok() || !qp_a->to_rtr(2, qp_b->qpn()).ok() ||
      !qp_b->to_rtr(1, qp_a->qpn()).ok() || !qp_a->to_rts().ok() ||
      !qp_b->to_rts().ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }

  const size_t sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1048576};
  double memcpy_ref[std::size(sizes)];
  auto size_wanted = [&](size_t sz) {
    return wanted("push") && (only_size == 0 || only_size == sz);
  };
  for (size_t i = 0; i < std::size(sizes); i++)
    memcpy_ref[i] =
        size_wanted(sizes[i]) ? memcpy_gbps(sizes[i], quick) * 1e3 : 0;

  // A DATA frame of an 8-byte WRITE: headers and payload.
  constexpr size_t kSmallFrame = RHN_DATA_HDR_LEN + 8;
  const double cross_core =
      wanted("push") ? cross_core_frames(RHN_WIRE_MTU, quick ? 50000 : 400000) *
                           RHN_WIRE_MTU / 1e6
                     : 0;
  const double cross_core_small =
      wanted("rate")
          ? cross_core_frames(kSmallFrame, quick ? 1000000 : 10000000)
          : 0;

  // Node B's engine runs on its own thread from here on.
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    while (!stop.load(std::memory_order_relaxed)) b.engine->poll();
  });

  std::printf(
      "RHiNET-NG engine bench: PUSH (RDMA WRITE) node 1 -> node 2,\n"
      "one engine thread per node (node 1's thread also posts and "
      "polls), 4 KiB pages, MTU %u\n\n",
      RHN_WIRE_MTU);
  // req idle: the share of the requester thread's polls with nothing to
  // do (waiting on the responder's thread); rx full: frames that found the
  // responder's receive FIFO full.
  std::printf("%10s %12s %12s %10s %12s %10s %10s\n", "size", "engine MB/s",
              "memcpy MB/s", "ratio", "ops/s", "req idle", "rx full");
  double ratio_64k = 0, mbps_64k = 0, rate_sge = 0;
  for (size_t si = 0; si < std::size(sizes); si++) {
    const size_t sz = sizes[si];
    if (!size_wanted(sz)) continue;
    const uint64_t budget = quick ? (16ull << 20) : (256ull << 20);
    // One size alone runs 16 times as long: long enough to profile.
    const uint64_t ops =
        std::clamp<uint64_t>(budget / sz, 256, quick ? 20000 : 400000) *
        (only_size ? 16 : 1);
    const uint32_t window =
        static_cast<uint32_t>(std::clamp<size_t>((1u << 20) / sz, 4, 1024));
    push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(), dst_mr.key, sz,
             std::min<uint64_t>(ops, 256), window, false);  // warm up
    const uint64_t full_before = a.wire.full_waits;
    const Result r = push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(),
                              dst_mr.key, sz, ops, window, false);
    const double mbps = double(sz) * r.ops / r.seconds / 1e6;
    const double ref = memcpy_ref[si];
    if (sz == 65536) {
      ratio_64k = mbps / ref;
      mbps_64k = mbps;
    }
    std::printf("%10zu %12.1f %12.1f %10.3f %12.0f %9.0f%% %10lu\n", sz, mbps,
                ref, mbps / ref, r.ops / r.seconds, r.requester_idle * 100,
                static_cast<unsigned long>(a.wire.full_waits - full_before));
  }

  if (wanted("rate")) {
    std::printf("\nsmall-message rate (8-byte PUSH, 1 in 16 signalled):\n");
    for (const bool inl : {false, true}) {
      const uint64_t ops = quick ? 50000 : 1000000;
      const Result r = push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(),
                                dst_mr.key, 8, ops, 1024, inl);
      std::printf("  %-22s %10.2f M ops/s\n", inl ? "inline WQE" : "SGE",
                  r.ops / r.seconds / 1e6);
      if (!inl) rate_sge = r.ops / r.seconds;
    }
  }

  // One WRITE at a time, each signalled: from the post to its CQE is one
  // engine round trip (WRITE out, ACK back), no QEMU and no switch. With
  // both engine threads spinning it shows the hand-off between threads
  // (at the mercy of the host scheduler on a busy machine); with one thread
  // pumping both engines, the engines' own processing cost.
  if (wanted("rtt")) {
    std::printf(
        "\nround trip, one 8-byte inline PUSH at a time (WRITE out, ACK "
        "back, CQE):\n");
    const uint64_t ops = quick ? 20000 : 200000;
    const Result r = push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(),
                              dst_mr.key, 8, ops, 1, true);
    std::printf("  %-36s %8.2f us\n", "two engine threads, spinning",
                r.seconds / double(r.ops) * 1e6);
  }
  stop.store(true);
  responder.join();
  // The same small-message stream with one thread pumping both engines:
  // no thread hand-offs, so the figure is the engines' own cost per
  // message and hardly moves with the host's scheduling.
  if (wanted("pumped")) {
    std::printf("\nsmall-message rate, one thread pumping both engines:\n");
    for (const bool inl : {false, true}) {
      const uint64_t ops = quick ? 50000 : 1000000;
      const Result r = push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(),
                                dst_mr.key, 8, ops, 1024, inl, &b);
      std::printf(
          "  %-22s %10.2f M ops/s   inside the requester's poll %5.1f ns/op "
          "(%5.2f M ops/s), the responder's %5.1f ns/op (%5.2f M ops/s)\n",
          inl ? "inline WQE" : "SGE", r.ops / r.seconds / 1e6,
          r.requester_seconds / r.ops * 1e9, r.ops / r.requester_seconds / 1e6,
          r.responder_seconds / r.ops * 1e9, r.ops / r.responder_seconds / 1e6);
    }
    // 64 KiB PUSHes the same way: each engine's own cost per byte.
    const size_t sz = 65536;
    const uint64_t ops = quick ? 2000 : 20000;
    const Result r = push_run(a, *qp_a, *cq_a, src, src_mr, dst.va(),
                              dst_mr.key, sz, ops, 16, false, &b);
    std::printf(
        "  %-22s %10.1f MB/s   inside the requester's poll %7.1f ns/op "
        "(%6.1f MB/s), the responder's %7.1f ns/op (%6.1f MB/s)\n",
        "PUSH 64 KiB", sz * r.ops / r.seconds / 1e6,
        r.requester_seconds / r.ops * 1e9,
        sz * r.ops / r.requester_seconds / 1e6,
        r.responder_seconds / r.ops * 1e9,
        sz * r.ops / r.responder_seconds / 1e6);
  }
  if (wanted("pumped")) {
    const uint64_t ops = quick ? 20000 : 200000;
    sim::SendWr wr;
    wr.opcode = RHN_OP_WRITE;
    wr.remote_addr = dst.va();
    wr.remote_key = dst_mr.key;
    wr.flags = RHN_WQE_F_INLINE | RHN_WQE_F_SIGNALED;
    wr.inline_data.assign(8, 0x5a);
    const auto t = Clock::now();
    for (uint64_t i = 0; i < ops; i++) {
      wr.wr_id = i;
      if (!qp_a->post_send(wr)) {
        std::fprintf(stderr, "post_send failed\n");
        return 1;
      }
      sim::Completion c;
      uint64_t spins = 0;
      while (!cq_a->poll_one(&c)) {
        pair.pump();
        if (++spins > 10'000'000) {
          std::fprintf(stderr, "no completion\n");
          return 1;
        }
      }
      if (!c.ok()) {
        std::fprintf(stderr, "error completion status %u\n", c.status);
        return 1;
      }
    }
    std::printf("  %-36s %8.2f us\n", "one thread pumping both engines",
                seconds_since(t) / double(ops) * 1e6);
  }
  if (wanted("push"))
    std::printf(
        "\ntwo threads copying %u-byte frames through a ring, no engine: "
        "%.1f MB/s\n(the most a PUSH between two engine threads can move "
        "here; PUSH 64 KiB reached %.2f of it)\n",
        RHN_WIRE_MTU, cross_core, cross_core ? mbps_64k / cross_core : 0);
  if (wanted("rate"))
    std::printf(
        "two threads copying %zu-byte frames through a ring, no engine: "
        "%.2f M frames/s\n(the most 8-byte PUSHes two engine threads can "
        "pass here; the SGE rate reached %.2f of it)\n",
        kSmallFrame, cross_core_small / 1e6,
        cross_core_small ? rate_sge / cross_core_small : 0);
  std::printf(
      "\ngoal: >= 0.5x memcpy at 64 KiB (reached %.3fx); "
      ">= 10 M small ops/s per engine thread\n",
      ratio_64k);
  return 0;
}
