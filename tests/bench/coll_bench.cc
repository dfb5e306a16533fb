// SPDX-License-Identifier: BSD-2-Clause
// Allreduce executed by the NICs (RHN_OP_COLLECTIVE, ops/coll) against a
// host ring over the same NICs' verbs, on the simulator's engines: 4 nodes
// with one rank each (and the NICs with two ranks per node), int64 sums
// from 8 B to 1 MiB, every result checked.
//
// The fabric: 5 us per hop, links of 10 Gb/s (800 ps per byte, each link one
// frame at a time), so bandwidth is finite and shared.
//   NIC       each rank posts one COLLECTIVE WQE and waits for its CQE; the
//             NICs read the operands, combine and write the results (radix
//             0: the NIC's choice, a tree of fan-out 4 below 64 KiB and a
//             chain whose root turns with every segment from 64 KiB on).
//   switch    the same WQEs with RHN_COLL_F_IN_SWITCH: each NIC sends its
//             partial of every segment to the simulator's switch, which
//             combines them (fabric/coll_reducer.h, halfway through the
//             hop) and sends the result back: one hop in all.
//   host ring the textbook ring (reduce-scatter, then allgather; 2(n-1)
//             steps of n-th chunks) with SEND/RECV between endpoints; the
//             host adds each chunk it receives. Its host time is measured
//             (the add loops, posting, polling) and charged to the fabric
//             clock: a rank posts its next chunk only after its host would
//             have finished the add.
// Figures per size: fabric time per allreduce (mean of the iterations), the
// speed-up of the NIC over the ring, the NIC's bandwidth as a share of the
// ring's, and host time per rank per allreduce (what each rank's CPU spent:
// for the NIC one post and one poll of a completion). The NIC's own work is
// charged by the simulator as 50 ns per step in which any engine worked;
// the switch's combining costs it nothing (a switch's ALUs work at line
// rate), only the hop.
//
//   coll_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_nodes.h"
#include "cluster_ep.h"

using namespace rhinet;
using bench::Clock;

namespace {

constexpr uint64_t kHopNs = 5000;
constexpr uint64_t kLinkPsPerByte = 800;  // 10 Gb/s
constexpr uint32_t kComm = RHN_AREA_KEY(0, 1);

using Ep = bench::ClusterEp;

int64_t value(uint32_t rank, size_t i) {
  return static_cast<int64_t>((uint64_t{rank} + 1) * 1'000'003 + i * 7919);
}

double host_ns_since(Clock::time_point t) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t).count();
}

// What the host ring's own work costs in real memory: the add of a
// received chunk into the result, and the first copy (the fastest of
// three warm runs: an honest host, not a pessimistic one).
double native_add_ns(const std::vector<int64_t>& in,
                     std::vector<int64_t>& acc) {
  double best = 1e18;
  std::vector<int64_t> work(acc.size());
  for (int k = 0; k < 3; k++) {
    work = acc;
    const auto t = Clock::now();
    for (size_t i = 0; i < work.size(); i++) work[i] += in[i];
    asm volatile("" ::"r"(work.data()) : "memory");
    best = std::min(best, host_ns_since(t));
  }
  acc = work;
  return best;
}

double native_copy_ns(const std::vector<uint8_t>& src) {
  double best = 1e18;
  std::vector<uint8_t> dst(src.size());
  for (int k = 0; k < 3; k++) {
    const auto t = Clock::now();
    if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
    asm volatile("" ::"r"(dst.data()) : "memory");
    best = std::min(best, host_ns_since(t));
  }
  return best;
}

struct Figures {
  bool ok = false;
  double fabric_us = 0;  // per allreduce
  double host_us = 0;    // per rank per allreduce
};

class Cluster {
 public:
  Cluster(uint32_t nodes, uint32_t per_node, size_t max_bytes)
      : nranks_(nodes * per_node), max_(max_bytes) {
    sim::ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = size_t{per_node} * (4 * max_bytes + (8u << 20));
    cfg.hop_delay_ns = kHopNs;
    cfg.link_ps_per_byte = kLinkPsPerByte;
    c = std::make_unique<sim::SimCluster>(cfg);
    if (!c->all_up()) return;
    eps.resize(nranks_);
    // Buffer: operand, result, the ring's receive chunks, the member list.
    for (uint32_t r = 0; r < nranks_; r++)
      if (!bench::make_cluster_ep(*c, uint16_t(r / per_node),
                                  {.bytes = 3 * max_bytes + 4096,
                                   .cq_log = 10,
                                   .sq_log = 8,
                                   .rq_log = 8},
                                  &eps[r]))
        return;
    for (uint32_t r = 0; r < nranks_; r++)
      for (uint32_t m = 0; m < nranks_; m++) {
        rhn_mcast_dest d{};
        d.node = eps[m].node;
        d.qpn = eps[m].qp->qpn();
        eps[r].buf.write(members_at() + 8 * m, &d, 8);
      }
    ok = true;
  }
  size_t send_at() const { return 0; }
  size_t recv_at() const { return max_; }
  size_t tmp_at() const { return 2 * max_; }
  size_t members_at() const { return 3 * max_; }

  void fill(size_t bytes) {
    std::vector<int64_t> v(bytes / 8);
    const std::vector<uint8_t> poison(bytes, 0xee);
    for (uint32_t r = 0; r < nranks_; r++) {
      for (size_t i = 0; i < v.size(); i++) v[i] = value(r, i);
      eps[r].buf.write(send_at(), v.data(), bytes);
      eps[r].buf.write(recv_at(), poison.data(), bytes);
    }
  }
  bool check(size_t bytes, size_t at) {
    std::vector<int64_t> got(bytes / 8);
    for (uint32_t r = 0; r < nranks_; r++) {
      eps[r].buf.read(at, got.data(), bytes);
      for (size_t i = 0; i < got.size(); i++) {
        int64_t want = 0;
        for (uint32_t k = 0; k < nranks_; k++) want += value(k, i);
        if (got[i] != want) {
          std::fprintf(stderr,
                       "rank %u element %zu: %" PRId64 " != %" PRId64 "\n", r,
                       i, got[i], want);
          return false;
        }
      }
    }
    return true;
  }

  // One NIC allreduce of every rank.
  bool nic_once(size_t bytes, uint8_t radix, uint8_t flags, double* host_ns) {
    for (uint32_t r = 0; r < nranks_; r++) {
      sim::SendWr w;
      w.wr_id = 1;
      w.opcode = RHN_OP_COLLECTIVE;
      w.flags = RHN_WQE_F_SIGNALED;
      w.remote_key = kComm;
      rhn_wqe_coll& x = w.coll;
      x.op = RHN_COLL_ALLREDUCE;
      x.reduce = RHN_COLL_SUM;
      x.type = RHN_COLL_INT64;
      x.radix = radix;
      x.flags = flags;
      x.rank = uint16_t(r);
      x.nranks = uint16_t(nranks_);
      x.length = uint32_t(bytes);
      x.send_addr = eps[r].buf.va(send_at());
      x.recv_addr = eps[r].buf.va(recv_at());
      x.send_lkey = x.recv_lkey = eps[r].mr.key;
      x.members_addr = eps[r].buf.va(members_at());
      x.members_lkey = eps[r].mr.key;
      const auto t = Clock::now();
      if (!eps[r].qp->post_send(w)) return false;
      *host_ns += host_ns_since(t);
    }
    uint32_t done = 0;
    bool bad = false;
    c->run_until(
        [&] {
          for (uint32_t r = 0; r < nranks_; r++) {
            sim::Completion x;
            const auto t = Clock::now();
            const bool got = eps[r].cq->poll_one(&x);
            if (!got) continue;
            *host_ns += host_ns_since(t);
            done++;
            bad |= !x.ok();
          }
          return done == nranks_ || bad;
        },
        20'000'000'000ull);
    return done == nranks_ && !bad;
  }

  // One host ring allreduce: reduce-scatter, then allgather.
  bool ring_once(size_t bytes, double* host_ns) {
    const uint32_t n = nranks_;
    const size_t elems = bytes / 8;
    auto chunk_begin = [&](uint32_t k) { return (elems * k / n) * 8; };
    auto chunk_len = [&](uint32_t k) {
      return chunk_begin(k + 1) - chunk_begin(k);
    };
    const uint32_t steps = 2 * (n - 1);
    struct Rank {
      uint32_t step = 0;        // the step whose send is next
      uint32_t sends_done = 0;  // SENDs completed
      uint64_t ready_at = 0;    // its host has finished the previous step
      uint32_t recvs = 0;       // receives completed
    };
    std::vector<Rank> st(n);
    // The result is built in place in the receive buffer: copy the
    // operand there first (host work, charged at a native copy's cost).
    for (uint32_t r = 0; r < n; r++) {
      std::vector<uint8_t> tmp(bytes);
      eps[r].buf.read(send_at(), tmp.data(), bytes);
      const double ns = native_copy_ns(tmp);
      eps[r].buf.write(recv_at(), tmp.data(), bytes);
      *host_ns += ns;
      st[r].ready_at = c->clock().now() + uint64_t(ns);
    }
    // Receives: reduce-scatter steps land in tmp chunks, allgather steps
    // straight in the result.
    for (uint32_t r = 0; r < n; r++) {
      for (uint32_t s = 0; s < steps; s++) {
        const uint32_t k = s < n - 1 ? (r + 2 * n - s - 1) % n
                                     : (r + 2 * n - (s - (n - 1))) % n;
        const size_t at =
            s < n - 1 ? tmp_at() + chunk_begin(k) : recv_at() + chunk_begin(k);
        if (!eps[r].qp->post_recv(s, {eps[r].sge(at, chunk_len(k))}))
          return false;
      }
    }
    std::vector<int64_t> a, b;
    double sim_add_ns = 0;  // the add's time through simulated memory
    uint32_t finished = 0;
    bool bad = false;
    // Each rank's host acts when its previous add is over: the clock never
    // jumps past a rank that is ready.
    const uint64_t deadline = c->clock().now() + 20'000'000'000ull;
    auto hosts = [&] {
      {
        for (uint32_t r = 0; r < n; r++) {
          Rank& x = st[r];
          if (x.sends_done == steps && x.recvs == steps) continue;
          // Step s's chunk is ready once step s-1's receive is added.
          if (x.step < steps && x.recvs >= x.step &&
              c->clock().now() >= x.ready_at) {
            // Step s sends chunk (r - s) (reduce-scatter) or (r + 1 - s')
            // (allgather) to the next rank, from the result buffer.
            const uint32_t s = x.step;
            const uint32_t k = s < n - 1 ? (r + n - s) % n
                                         : (r + 1 + 2 * n - (s - (n - 1))) % n;
            sim::SendWr w;
            w.wr_id = 100 + s;
            w.opcode = RHN_OP_SEND;
            w.flags = RHN_WQE_F_SIGNALED;
            w.dst_node = eps[(r + 1) % n].node;
            w.dst_qpn = eps[(r + 1) % n].qp->qpn();
            if (chunk_len(k))
              w.sges = {eps[r].sge(recv_at() + chunk_begin(k), chunk_len(k))};
            const auto t = Clock::now();
            if (!eps[r].qp->post_send(w)) bad = true;
            *host_ns += host_ns_since(t);
            x.step++;
          }
          sim::Completion cq;
          const auto t = Clock::now();
          double adds_ns = 0;  // charged natively, not as measured here
          while (eps[r].cq->poll_one(&cq)) {
            if (!cq.ok()) {
              std::fprintf(stderr,
                           "ring: rank %u: status %u syndrome %u "
                           "opcode %u\n",
                           r, cq.status, cq.vendor_err, cq.opcode);
              bad = true;
            }
            if (cq.opcode != RHN_CQE_OP_RECV) {
              x.sends_done++;
              continue;
            }
            // A receive of step s: reduce-scatter adds its chunk. The
            // simulator's memory is slow to reach from here, so the host
            // is charged what the same add costs in real memory.
            const uint32_t s = x.recvs++;
            double ns = 0;
            if (s < n - 1) {
              const uint32_t k = (r + 2 * n - s - 1) % n;
              const size_t len = chunk_len(k);
              const auto t2 = Clock::now();
              a.resize(len / 8);
              b.resize(len / 8);
              eps[r].buf.read(tmp_at() + chunk_begin(k), a.data(), len);
              eps[r].buf.read(recv_at() + chunk_begin(k), b.data(), len);
              ns = native_add_ns(a, b);
              eps[r].buf.write(recv_at() + chunk_begin(k), b.data(), len);
              sim_add_ns += host_ns_since(t2);
              adds_ns += ns;
            }
            x.ready_at = std::max(x.ready_at, c->clock().now() + uint64_t(ns));
          }
          {
            const double spent = host_ns_since(t);
            *host_ns += spent - sim_add_ns + adds_ns;
            sim_add_ns = 0;
          }
          if (x.sends_done == steps && x.recvs == steps) finished++;
        }
      }
    };
    for (;;) {
      hosts();
      if (finished == n || bad || c->clock().now() >= deadline) break;
      uint64_t next = UINT64_MAX;
      for (const Rank& x : st)
        if (x.step < steps && x.recvs >= x.step)
          next = std::min(next, x.ready_at);
      const uint64_t now = c->clock().now();
      c->tick(next == UINT64_MAX ? 1'000'000 : next > now ? next - now : 1);
    }
    return finished == n && !bad;
  }

  std::unique_ptr<sim::SimCluster> c;
  std::vector<Ep> eps;
  bool ok = false;

 private:
  uint32_t nranks_;
  size_t max_;
};

// Mean fabric and host time of `iters` allreduces of `bytes`.
Figures measure(Cluster& cl, uint32_t nranks, size_t bytes, int iters,
                bool ring, uint8_t radix = 0, uint8_t flags = 0) {
  Figures f;
  cl.fill(bytes);
  for (Ep& e : cl.eps) {
    sim::Completion x;
    while (e.cq->poll_one(&x)) {
    }
  }
  double host_ns = 0;
  const uint64_t t0 = cl.c->clock().now();
  for (int i = 0; i < iters; i++) {
    const bool done = ring ? cl.ring_once(bytes, &host_ns)
                           : cl.nic_once(bytes, radix, flags, &host_ns);
    if (!done) {
      std::fprintf(stderr, "%s allreduce of %zu bytes failed\n",
                   ring ? "ring" : "NIC", bytes);
      return f;
    }
  }
  f.fabric_us = double(cl.c->clock().now() - t0) / 1000.0 / iters;
  f.host_us = host_ns / 1000.0 / iters / nranks;
  f.ok = cl.check(bytes, cl.recv_at());
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::vector<size_t> sizes =
      quick ? std::vector<size_t>{8, 4096, 65536}
            : std::vector<size_t>{8, 64, 512, 4096, 32768, 262144, 1u << 20};
  const size_t max_bytes = sizes.back();
  std::printf("coll_bench: int64 sum allreduce, 4 nodes, %" PRIu64
              " us per hop, 10 Gb/s links; fabric time per allreduce (mean)\n",
              kHopNs / 1000);
  bool all_ok = true;
  for (uint32_t per_node : {1u, 2u}) {
    const uint32_t nranks = 4 * per_node;
    Cluster cl(4, per_node, max_bytes);
    if (!cl.ok) {
      std::fprintf(stderr, "coll_bench: cluster setup failed\n");
      return 1;
    }
    std::printf("\n%u ranks (%u per node)\n", nranks, per_node);
    std::printf("%9s %11s %11s %8s %8s %12s %12s %12s %11s %9s\n", "bytes",
                "NIC us", "ring us", "speedup", "NIC bw", "NIC host us",
                "ring host us", "NIC chain us", "switch us", "sw speedup");
    for (size_t bytes : sizes) {
      const int iters = quick ? 2 : bytes >= 262144 ? 3 : 20;
      const Figures nic = measure(cl, nranks, bytes, iters, false);
      const Figures ring = measure(cl, nranks, bytes, iters, true);
      const Figures chain = measure(cl, nranks, bytes, iters, false, 1);
      const Figures sw =
          measure(cl, nranks, bytes, iters, false, 0, RHN_COLL_F_IN_SWITCH);
      const bool right = nic.ok && ring.ok && chain.ok && sw.ok;
      all_ok &= right;
      std::printf(
          "%9zu %11.1f %11.1f %7.2fx %7.0f%% %12.2f %12.2f %12.1f %11.1f "
          "%8.2fx%s\n",
          bytes, nic.fabric_us, ring.fabric_us, ring.fabric_us / nic.fabric_us,
          100.0 * ring.fabric_us / nic.fabric_us, nic.host_us, ring.host_us,
          chain.fabric_us, sw.fabric_us, ring.fabric_us / sw.fabric_us,
          right ? "" : "  WRONG RESULT");
    }
  }
  std::printf(
      "\nNIC bw: the ring's time over the NIC's (the NIC's bandwidth as a "
      "share of the ring's). Host us: CPU time each rank spent per "
      "allreduce. sw speedup: the ring's time over the in-switch "
      "reduction's.\n");
  return all_ok ? 0 : 1;
}
