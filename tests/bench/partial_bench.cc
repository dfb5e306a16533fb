// SPDX-License-Identifier: BSD-2-Clause
// Partial-transfer benchmark (a program, not a test): what the NIC's
// partial transfers (DIFF, BITMAP, STRIDE) save on the wire and cost in the
// engine. Two engines on the simulated switch (no faults), one thread pumping
// both, so the time is the engines' own work per transfer, measured with
// the real clock; the wire figures are what node 0 handed to the switch
// (frames and bytes, its ACKs for the returning direction excluded).
// The reference, measured first with nothing else running: memcpy of the
// same bytes.
//
//   partial_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rhinet/sim/cluster.h"
#include "rhinet/sim/verbs.h"

using namespace rhinet;
using namespace rhinet::sim;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kAll =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double memcpy_us(size_t size) {
  std::vector<uint8_t> a(size, 1), b(size, 2);
  double best = 1e30;
  for (int run = 0; run < 20; run++) {
    const auto t = Clock::now();
    std::memcpy(b.data(), a.data(), size);
    asm volatile("" : : "r"(b.data()) : "memory");
    best = std::min(best, seconds_since(t) * 1e6);
  }
  return best;
}

struct Wire {
  uint64_t frames = 0, bytes = 0;
};

struct Bench {
  explicit Bench(size_t bytes_per_side) {
    ClusterConfig cfg;
    cfg.nodes = 2;
    cfg.memory_bytes = 4 * bytes_per_side + (64u << 20);
    c = std::make_unique<SimCluster>(cfg);
    RcOptions o;
    o.sq_log_depth = 12;
    o.cq_log_depth = 12;
    p = make_rc_pair(*c, 0, 1, o);
    c->fabric().tap = [this](size_t port, std::span<const uint8_t> f) {
      // Data frames only: node 0's ACKs to node 1 are not this transfer.
      if (port == 0 && f.size() > RHN_PKT_HDR_LEN && f[3] == RHN_PKT_DATA) {
        wire.frames++;
        wire.bytes += f.size();
      }
    };
  }
  // Posts `wrs`, runs the engines until `signaled` completions arrived.
  // Returns the wall time in microseconds.
  double run(const std::vector<SendWr>& wrs, size_t signaled) {
    wire = Wire{};
    const auto t = Clock::now();
    size_t next = 0, done = 0;
    while (done < signaled) {
      while (next < wrs.size() && p.qp_a->post_send(wrs[next])) next++;
      c->tick();
      Completion e;
      while (p.cq_a->poll_one(&e)) {
        if (!e.ok()) {
          std::fprintf(stderr, "error completion status %u syndrome %u\n",
                       e.status, e.vendor_err);
          std::exit(1);
        }
        done++;
      }
    }
    return seconds_since(t) * 1e6;
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
  Wire wire;
};

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int reps = quick ? 2 : 5;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // ---- DIFF PUSH of a 1 MiB area ------------------------------------------
  constexpr size_t kArea = 1u << 20;
  const double ref_area = memcpy_us(kArea);
  Bench b(kArea);
  SimBuffer src = b.p.ctx_a->alloc(kArea);
  SimBuffer dst = b.p.ctx_b->alloc(kArea);
  src.fill_pattern(1);
  SimMr src_mr = b.p.ctx_a->reg_mr(src, kAll);
  SimMr dst_mr = b.p.ctx_b->reg_mr(dst, kAll);
  AdminResult twin = b.c->node(0).driver->alloc_twin(b.p.ctx_a->index(), kArea);
  if (!src_mr.ok() || !dst_mr.ok() || !twin.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  SendWr basic;
  basic.opcode = RHN_OP_WRITE;
  basic.sges = {{src.va(), uint32_t(kArea), src_mr.key}};
  basic.remote_addr = dst.va();
  basic.remote_key = dst_mr.key;
  SendWr diff = basic;
  diff.xfer_mode = RHN_XFER_DIFF;
  diff.xfer.twin = twin.result;
  SendWr pull = basic;
  pull.opcode = RHN_OP_READ;
  pull.xfer_mode = RHN_XFER_TWIN;
  pull.xfer.twin = twin.result;

  std::printf(
      "RHiNET-NG partial transfers: two engines on the simulated switch, "
      "one thread pumping both;\nwire = DATA frames and bytes node 0 sent "
      "(headers included); time = engines' work, wall clock, best of %d\n\n",
      reps);
  std::printf(
      "DIFF PUSH of a 1 MiB area (changed bytes at random places) "
      "against a basic PUSH\n");
  std::printf("%-14s %8s %12s %9s %11s %9s\n", "changed", "frames",
              "wire bytes", "vs basic", "time [us]", "vs basic");
  Wire basic_wire;
  double basic_us = 1e30;
  for (int r = 0; r < reps; r++) {
    basic_us = std::min(basic_us, b.run({basic}, 1));
    basic_wire = b.wire;
  }
  std::mt19937_64 rng(7);
  for (const double pct : {0.1, 1.0, 10.0, 100.0}) {
    double best = 1e30;
    Wire w;
    for (int r = 0; r < reps; r++) {
      // The twin and the target both hold what a TWIN PULL brought.
      b.run({pull}, 1);
      const auto n = static_cast<size_t>(kArea * pct / 100.0);
      std::vector<uint8_t> bytes = src.bytes();
      if (pct >= 100.0) {
        for (auto& v : bytes) v ^= 0x5a;
      } else {
        for (size_t i = 0; i < n; i++) bytes[rng() % kArea] ^= 0x5a;
      }
      src.write(0, bytes.data(), kArea);
      best = std::min(best, b.run({diff}, 1));
      w = b.wire;
      if (dst.bytes() != bytes) {
        std::fprintf(stderr, "DIFF PUSH left the target wrong\n");
        return 1;
      }
    }
    char label[32];
    std::snprintf(label, sizeof label, "%.1f %%", pct);
    std::printf("%-14s %8lu %12lu %8.3fx %11.1f %8.2fx\n", label,
                (unsigned long)w.frames, (unsigned long)w.bytes,
                double(w.bytes) / double(basic_wire.bytes), best,
                best / basic_us);
  }
  std::printf("%-14s %8lu %12lu %8.3fx %11.1f %8.2fx\n", "basic PUSH",
              (unsigned long)basic_wire.frames, (unsigned long)basic_wire.bytes,
              1.0, basic_us, 1.0);
  std::printf("%-14s %8s %12s %9s %11.1f\n\n", "memcpy 1 MiB", "", "", "",
              ref_area);

  // ---- A matrix column ------------------------------------------------------
  constexpr size_t kN = 1024;  // 1024 x 1024 doubles, row-major
  constexpr size_t kRow = kN * 8;
  Bench m(kN * kRow);
  SimBuffer ma = m.p.ctx_a->alloc(kN * kRow);
  SimBuffer mb = m.p.ctx_b->alloc(kN * kRow);
  ma.fill_pattern(3);
  SimMr ma_mr = m.p.ctx_a->reg_mr(ma, kAll);
  SimMr mb_mr = m.p.ctx_b->reg_mr(mb, kAll);
  if (!ma_mr.ok() || !mb_mr.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  constexpr size_t kCol = 17;
  SendWr col;
  col.opcode = RHN_OP_WRITE;
  col.sges = {{ma.va(kCol * 8), uint32_t((kN - 1) * kRow + 8), ma_mr.key}};
  col.remote_addr = mb.va(kCol * 8);
  col.remote_key = mb_mr.key;
  col.xfer_mode = RHN_XFER_STRIDE;
  col.xfer.block = 8;
  col.xfer.count = kN;
  col.xfer.local_stride = kRow;
  col.xfer.remote_stride = kRow;
  std::vector<SendWr> each(kN);
  for (size_t i = 0; i < kN; i++) {
    SendWr& e = each[i];
    e.opcode = RHN_OP_WRITE;
    e.flags = i + 1 == kN ? RHN_WQE_F_SIGNALED : 0;
    e.sges = {{ma.va(i * kRow + kCol * 8), 8, ma_mr.key}};
    e.remote_addr = mb.va(i * kRow + kCol * 8);
    e.remote_key = mb_mr.key;
  }
  double one_us = 1e30, each_us = 1e30;
  Wire one_wire, each_wire;
  for (int r = 0; r < reps; r++) {
    one_us = std::min(one_us, m.run({col}, 1));
    one_wire = m.wire;
    each_us = std::min(each_us, m.run(each, 1));
    each_wire = m.wire;
  }
  for (size_t i = 0; i < kN; i++)
    if (mb.bytes(i * kRow + kCol * 8, 8) != ma.bytes(i * kRow + kCol * 8, 8)) {
      std::fprintf(stderr, "column element %zu wrong\n", i);
      return 1;
    }
  std::printf("A column of a 1024 x 1024 matrix of doubles (8 KiB of data)\n");
  std::printf("%-26s %6s %8s %12s %11s\n", "", "WQEs", "frames", "wire bytes",
              "time [us]");
  std::printf("%-26s %6d %8lu %12lu %11.1f\n", "one strided PUSH", 1,
              (unsigned long)one_wire.frames, (unsigned long)one_wire.bytes,
              one_us);
  std::printf("%-26s %6zu %8lu %12lu %11.1f\n", "one PUSH per element", kN,
              (unsigned long)each_wire.frames, (unsigned long)each_wire.bytes,
              each_us);
  std::printf("%-26s %6s %8s %12s %11.2f\n", "memcpy of 8 KiB", "", "", "",
              memcpy_us(kN * 8));
  return 0;
}
