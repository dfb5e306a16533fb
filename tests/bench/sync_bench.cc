// SPDX-License-Identifier: BSD-2-Clause
// Locks, barriers and sequential multicast in the engine (a program, not a
// test), on the simulator's fabric: N engines behind a switch that holds
// every frame `--hop` microseconds (5 by default), all pumped by this one
// thread. Each figure comes twice: in fabric time (the simulator's clock,
// which only the hops and the engines' steps move: what the protocol's
// shape costs) and in wall-clock time of this thread (the engines' and the
// simulated switch's own work). References, measured in the same run:
//   - PUSH round trip: one 8-byte WRITE from node 1 to node 0, posted to
//     completion (the WRITE out, the ACK back);
//   - a counting barrier built from SEND/RECV on the same endpoints (the
//     members SEND to the manager, which SENDs the release to each);
//   - N back-to-back unicast PUSHes of the same data to the same members.
// Figures:
//   - barrier on 4 nodes (the NIC's, manager on node 0), and the verbs one;
//   - lock hand-over: nodes 1 and 2 take a lock of node 0 in turns, each
//     asking while the other holds it: time from the holder's UNLOCK post
//     to the waiter's grant;
//   - mcast_list to 3 members against 3 PUSHes: throughput with 16 WQEs in
//     flight (64 KiB), latency to the last member's completion (8 B), and
//     the frames the sender sent per operation;
//   - mcast_switch through a switch group to 4 members (5 nodes: the sender is
//     listed too, as it must be) against 4 PUSHes: the frames the sender
//     sends per packet, and the latency to the last member's
//     acknowledgement (8 B, one at a time) against one PUSH round trip on
//     the same fabric (goal <= 1.5x).
//
//   sync_bench [--quick] [--hop US]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_nodes.h"
#include "cluster_ep.h"
#include "rhinet/sim/cluster.h"

using namespace rhinet;
using bench::Clock;
using bench::seconds_since;

namespace {

constexpr uint32_t kAreaId = 9;
constexpr size_t kAreaBytes = 2u << 20;
constexpr size_t kBufBytes = kAreaBytes + (2u << 20);
constexpr size_t kSrc = kAreaBytes;  // source data past the area
constexpr size_t kList = kAreaBytes + (1u << 20);
constexpr uint32_t kAccess =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ;

using Ep = bench::ClusterEp;

bool make_ep(sim::SimCluster& c, uint16_t node, Ep* e) {
  const bench::EpShape shape{.bytes = kBufBytes,
                             .access = kAccess,
                             .cq_log = 14,
                             .sq_log = 12,
                             .rq_log = 10};
  return bench::make_cluster_ep(c, node, shape, e) &&
         e->ctx->register_area(kAreaId, e->mr, e->buf.va(), kAreaBytes).ok();
}

class Bench {
 public:
  Bench(size_t nodes, uint64_t hop_ns) {
    sim::ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 64u << 20;
    cfg.hop_delay_ns = hop_ns;
    c = std::make_unique<sim::SimCluster>(cfg);
    eps.resize(nodes);
    ok = c->all_up();
    for (size_t n = 0; ok && n < nodes; n++)
      ok = make_ep(*c, uint16_t(n), &eps[n]);
  }

  // Runs until `n` completions came on ep's CQ; false on an error or
  // after 10 s of fabric time.
  bool wait(Ep& e, size_t n = 1) {
    size_t got = 0;
    bool bad = false;
    c->run_until(
        [&] {
          sim::Completion x;
          while (got < n && e.cq->poll_one(&x)) {
            got++;
            if (!x.ok()) {
              std::fprintf(stderr,
                           "node %u: error completion op %u status %u "
                           "syndrome %u\n",
                           e.node, x.opcode, x.status, x.vendor_err);
              bad = true;
            }
          }
          return got == n || bad;
        },
        10'000'000'000ull);
    if (got < n && !bad)
      std::fprintf(stderr, "node %u: %zu of %zu completions\n", e.node, got, n);
    return got == n && !bad;
  }

  sim::SendWr push(Ep& from, Ep& to, size_t off, size_t len) {
    sim::SendWr w;
    w.opcode = RHN_OP_WRITE;
    w.flags = RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA;
    w.sges = {from.sge(kSrc + off, len)};
    w.remote_addr = off;
    w.remote_key = kAreaId;
    w.dst_node = to.node;
    w.dst_qpn = to.qp->qpn();
    return w;
  }
  sim::SendWr sync(uint8_t opcode, const Ep& mgr, uint64_t id,
                   uint32_t count = 0) {
    sim::SendWr w;
    w.opcode = opcode;
    w.flags = RHN_WQE_F_SIGNALED;
    w.dst_node = mgr.node;
    w.dst_qpn = mgr.qp->qpn();
    w.remote_addr = id;
    w.imm_data = count;
    return w;
  }
  sim::SendWr send(Ep& from, const Ep& to) {
    sim::SendWr w;
    w.opcode = RHN_OP_SEND;
    w.flags = RHN_WQE_F_SIGNALED;
    w.sges = {from.sge(kSrc, 8)};
    w.dst_node = to.node;
    w.dst_qpn = to.qp->qpn();
    return w;
  }
  // Simultaneous multicast: one WQE to the group's node ID.
  sim::SendWr mcast_switch(Ep& from, size_t len, uint16_t group) {
    sim::SendWr w = push(from, from, 0, len);
    w.opcode = RHN_OP_MCAST_SWITCH;
    w.dst_node = group;
    w.dst_qpn = 0;
    return w;
  }
  // What the administrator does: the switch's pattern, and every member's
  // list through its kernel (the sender is a member).
  bool set_switch_group(uint16_t group, size_t members) {
    std::vector<unsigned> ports;
    std::vector<rhn_mcast_dest> list;
    for (size_t n = 0; n <= members; n++) {
      ports.push_back(unsigned(n));
      list.push_back({uint16_t(n), 0, eps[n].qp->qpn()});
    }
    if (!c->fabric().set_group(group, ports)) return false;
    for (size_t n = 0; n <= members; n++)
      if (!c->node(n).driver->set_mcast_group(group, 0, list).ok())
        return false;
    return true;
  }
  sim::SendWr mcast(Ep& from, size_t len, size_t members) {
    sim::SendWr w = push(from, from, 0, len);
    w.opcode = RHN_OP_MCAST_LIST;
    w.dst_node = 0;  // the list names the destinations
    w.dst_qpn = 0;
    w.mcast.list_addr = from.buf.va() + kList;
    w.mcast.list_lkey = from.mr.key;
    w.mcast.count = uint32_t(members);
    return w;
  }

  std::unique_ptr<sim::SimCluster> c;
  std::vector<Ep> eps;
  bool ok = false;
};

// A figure in fabric time and in wall-clock time, per operation.
struct Figure {
  double fabric_us = -1, wall_us = -1;
};

template <typename Op>
Figure measure(Bench& b, int iters, Op op) {
  const uint64_t f0 = b.c->clock().now();
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; i++)
    if (!op(i)) return {};
  return {double(b.c->clock().now() - f0) / 1e3 / iters,
          seconds_since(t0) * 1e6 / iters};
}

Figure push_rtt(Bench& b, int iters) {
  return measure(b, iters, [&](int) {
    return b.eps[1].qp->post_send(b.push(b.eps[1], b.eps[0], 0, 8)) &&
           b.wait(b.eps[1]);
  });
}

Figure nic_barrier(Bench& b, int iters) {
  const size_t n = b.eps.size();
  return measure(b, iters, [&](int) {
    for (size_t k = 0; k < n; k++)
      if (!b.eps[k].qp->post_send(
              b.sync(RHN_OP_BARRIER, b.eps[0], 0xba, uint32_t(n))))
        return false;
    for (size_t k = 0; k < n; k++)
      if (!b.wait(b.eps[k])) return false;
    return true;
  });
}

// Members SEND to the manager (node 0); once it has every member's SEND
// it SENDs the release to each. The manager's own arrival is free.
Figure verbs_barrier(Bench& b, int iters) {
  const size_t n = b.eps.size();
  auto post_recvs = [&](Ep& e, int count) {
    for (int i = 0; i < count; i++)
      if (!e.qp->post_recv(0, {e.sge(kList + 4096, 64)})) return false;
    return true;
  };
  return measure(b, iters, [&](int) {
    if (!post_recvs(b.eps[0], int(n - 1))) return false;
    for (size_t k = 1; k < n; k++)
      if (!post_recvs(b.eps[k], 1) ||
          !b.eps[k].qp->post_send(b.send(b.eps[k], b.eps[0])))
        return false;
    if (!b.wait(b.eps[0], n - 1)) return false;  // the members' SENDs
    for (size_t k = 1; k < n; k++)
      if (!b.eps[0].qp->post_send(b.send(b.eps[0], b.eps[k]))) return false;
    if (!b.wait(b.eps[0], n - 1)) return false;  // its releases
    for (size_t k = 1; k < n; k++)
      if (!b.wait(b.eps[k], 2)) return false;  // its SEND, its release
    return true;
  });
}

// Nodes 1 and 2 in turns: the holder's UNLOCK is posted while the other's
// LOCK waits at the NIC; timed from that post to the waiter's grant.
Figure lock_handover(Bench& b, int iters) {
  Ep& mgr = b.eps[0];
  Ep* holder = &b.eps[1];
  Ep* waiter = &b.eps[2];
  constexpr uint64_t kLock = 0x10c;
  if (!holder->qp->post_send(b.sync(RHN_OP_LOCK, mgr, kLock)) ||
      !b.wait(*holder))
    return {};
  Figure sum{0, 0};
  for (int i = 0; i < iters; i++) {
    if (!waiter->qp->post_send(b.sync(RHN_OP_LOCK, mgr, kLock))) return {};
    // The LOCK reaches the manager and the LINK the holder's NIC.
    b.c->run_for(20 * 1000 * 1000);
    const uint64_t f0 = b.c->clock().now();
    const auto t0 = Clock::now();
    if (!holder->qp->post_send(b.sync(RHN_OP_UNLOCK, mgr, kLock)) ||
        !b.wait(*waiter))
      return {};
    sum.fabric_us += double(b.c->clock().now() - f0) / 1e3;
    sum.wall_us += seconds_since(t0) * 1e6;
    if (!b.wait(*holder)) return {};  // its UNLOCK
    std::swap(holder, waiter);
  }
  if (!holder->qp->post_send(b.sync(RHN_OP_UNLOCK, mgr, kLock)) ||
      !b.wait(*holder))
    return {};
  return {sum.fabric_us / iters, sum.wall_us / iters};
}

struct McastFigures {
  Figure op;  // per operation (all members served)
  double frames = 0;
  double packets = 0;  // switch multicast packets per operation
};

constexpr uint16_t kSwitchGroup = 0xf001;

// How node 0 reaches nodes 1..members with one operation.
enum class Fanout { list, switch_group, pushes };

// Node 0 sends `len` bytes to nodes 1..members, `window` operations in
// flight: one MCAST_LIST WQE each, or `members` PUSH WQEs each.
McastFigures mcast_run(Bench& b, size_t members, size_t len, int iters,
                       int window, Fanout how) {
  Ep& s = b.eps[0];
  std::vector<rhn_mcast_dest> list;
  for (size_t k = 1; k <= members; k++)
    list.push_back({uint16_t(k), 0, b.eps[k].qp->qpn()});
  s.buf.write(kList, list.data(), list.size() * sizeof(list[0]));
  const size_t per_op = how == Fanout::pushes ? members : 1;
  const uint64_t tx0 = b.c->node(0).counter(RHN_CNT_TX_PACKETS);
  const uint64_t sp0 = b.c->node(0).counter(RHN_CNT_MCAST_SWITCH_PACKETS);
  int posted = 0, done = 0;
  McastFigures r;
  r.op = measure(b, 1, [&](int) {  // one pass of `iters` operations
    while (done < iters) {
      while (posted < iters && posted - done < window) {
        if (how == Fanout::list) {
          if (!s.qp->post_send(b.mcast(s, len, members))) return false;
        } else if (how == Fanout::switch_group) {
          if (!s.qp->post_send(b.mcast_switch(s, len, kSwitchGroup)))
            return false;
        } else {
          for (size_t k = 1; k <= members; k++)
            if (!s.qp->post_send(b.push(s, b.eps[k], 0, len))) return false;
        }
        posted++;
      }
      if (!b.wait(s, per_op)) return false;
      done++;
    }
    return true;
  });
  if (r.op.fabric_us < 0) return r;
  r.op.fabric_us /= iters;
  r.op.wall_us /= iters;
  // The sender's frames, ACKs included, per operation.
  r.frames = double(b.c->node(0).counter(RHN_CNT_TX_PACKETS) - tx0) / iters;
  r.packets =
      double(b.c->node(0).counter(RHN_CNT_MCAST_SWITCH_PACKETS) - sp0) / iters;
  return r;
}

bool failed = false;

bool bad(const Figure& f) {
  if (f.fabric_us >= 0 && f.wall_us >= 0) return false;
  failed = true;
  return true;
}

void row(const char* what, const Figure& f, const Figure& ref) {
  if (bad(f) || bad(ref)) {
    std::printf("%-44s failed\n", what);
    return;
  }
  std::printf("%-44s %10.2f %8.2fx %10.2f %8.2fx\n", what, f.fabric_us,
              f.fabric_us / ref.fabric_us, f.wall_us, f.wall_us / ref.wall_us);
}

// mcast_switch to 4 members on a 5-node fabric of its own, against 4 PUSHes
// and one PUSH's round trip measured there.
void mcast_switch_figures(bool quick, int iters, uint64_t hop_ns) {
  constexpr size_t kMembers = 4;
  Bench b(kMembers + 1, hop_ns);
  if (!b.ok || !b.set_switch_group(kSwitchGroup, kMembers)) {
    std::printf(
        "mcast_switch: the 5 nodes or the switch group did not come up\n");
    failed = true;
    return;
  }
  push_rtt(b, 10);  // untimed: first touches
  const Figure rtt = push_rtt(b, iters);
  std::printf("\n%-44s %10s %9s %10s %9s %8s %8s\n", "mcast_switch, 4 members",
              "fabric us", "/ref", "wall us", "/ref", "frames", "/packet");
  row("PUSH 8 B round trip, 5 nodes (reference)", rtt, rtt);
  for (const size_t len : {size_t{8}, size_t{65536}}) {
    const int window = len == 8 ? 1 : 16;
    const int n = len == 8 ? iters : (quick ? 20 : 200);
    mcast_run(b, kMembers, len, window, window, Fanout::switch_group);
    mcast_run(b, kMembers, len, window, window, Fanout::pushes);
    const McastFigures one =
        mcast_run(b, kMembers, len, n, window, Fanout::switch_group);
    const McastFigures four =
        mcast_run(b, kMembers, len, n, window, Fanout::pushes);
    if (bad(one.op) || bad(four.op) || one.packets <= 0) {
      std::printf("mcast_switch %zu B: failed\n", len);
      failed = true;
      continue;
    }
    const std::string what =
        std::to_string(len) + " B, " + std::to_string(window) + " in flight";
    // The reference of the 8 B row is one PUSH's round trip (latency to
    // the last member), of the 64 KiB row the 4 PUSHes (throughput).
    const Figure& ref = len == 8 ? rtt : four.op;
    std::printf("%-44s %10.2f %8.2fx %10.2f %8.2fx %8.1f %8.2f\n",
                (what + ", one MCAST_SWITCH").c_str(), one.op.fabric_us,
                one.op.fabric_us / ref.fabric_us, one.op.wall_us,
                one.op.wall_us / ref.wall_us, one.frames,
                one.frames / one.packets);
    std::printf("%-44s %10.2f %8.2fx %10.2f %8.2fx %8.1f %8.2f\n",
                (what + ", 4 PUSHes").c_str(), four.op.fabric_us,
                four.op.fabric_us / ref.fabric_us, four.op.wall_us,
                four.op.wall_us / ref.wall_us, four.frames,
                four.frames / one.packets);
    if (len == 8)
      std::printf(
          "mcast_switch 8 B latency to the last of 4 members: %.2fx one PUSH's "
          "round trip in fabric time, %.2fx in wall time (goal <= 1.5x)\n",
          one.op.fabric_us / rtt.fabric_us, one.op.wall_us / rtt.wall_us);
    else
      std::printf(
          "mcast_switch 64 KiB: the sender sent %.2f frames per packet (4 "
          "PUSHes: "
          "%.2f); throughput %.0f%% of 4 PUSHes' in fabric time, %.0f%% in "
          "wall time\n",
          one.frames / one.packets, four.frames / one.packets,
          100 * four.op.fabric_us / one.op.fabric_us,
          100 * four.op.wall_us / one.op.wall_us);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  double hop_us = 5;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--hop") && i + 1 < argc) {
      hop_us = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: sync_bench [--quick] [--hop US]\n");
      return 2;
    }
  }
  if (hop_us <= 0) {
    std::fprintf(stderr, "sync_bench: --hop must be positive\n");
    return 2;
  }
  const int iters = quick ? 50 : 500;
  Bench b(4, uint64_t(hop_us * 1000));
  if (!b.ok) {
    std::fprintf(stderr, "sync_bench: the 4 nodes did not come up\n");
    return 1;
  }
  std::printf(
      "sync_bench: 4 engines behind the simulated switch, %.1f us per hop, "
      "one thread\n",
      hop_us);
  std::printf("%-44s %10s %9s %10s %9s\n", "", "fabric us", "/ref", "wall us",
              "/ref");
  push_rtt(b, 10);  // untimed: first touches
  const Figure rtt = push_rtt(b, iters);
  row("PUSH 8 B round trip (reference)", rtt, rtt);
  const Figure nb = nic_barrier(b, iters);
  row("barrier, 4 nodes, NIC (goal <= 2x)", nb, rtt);
  const Figure vb = verbs_barrier(b, iters);
  row("barrier, 4 nodes, SEND/RECV", vb, rtt);
  const Figure lh = lock_handover(b, quick ? 20 : 100);
  row("lock hand-over (goal <= 1x)", lh, rtt);

  std::printf("\n%-44s %10s %9s %10s %9s %8s\n", "mcast_list, 3 members",
              "fabric us", "/3 PUSH", "wall us", "/3 PUSH", "frames");
  for (const size_t len : {size_t{8}, size_t{65536}}) {
    const int window = len == 8 ? 1 : 16;
    const int n = len == 8 ? iters : (quick ? 20 : 200);
    // Untimed first: the first touch of simulated memory is not the NIC's.
    mcast_run(b, 3, len, window, window, Fanout::list);
    mcast_run(b, 3, len, window, window, Fanout::pushes);
    const McastFigures one = mcast_run(b, 3, len, n, window, Fanout::list);
    const McastFigures three = mcast_run(b, 3, len, n, window, Fanout::pushes);
    if (bad(one.op) || bad(three.op)) {
      std::printf("mcast_list %zu B: failed\n", len);
      continue;
    }
    const std::string what =
        std::to_string(len) + " B, " + std::to_string(window) + " in flight";
    std::printf("%-44s %10.2f %8.2fx %10.2f %8.2fx %8.1f\n",
                (what + ", one MCAST_LIST").c_str(), one.op.fabric_us,
                one.op.fabric_us / three.op.fabric_us, one.op.wall_us,
                one.op.wall_us / three.op.wall_us, one.frames);
    std::printf("%-44s %10.2f %9s %10.2f %9s %8.1f\n",
                (what + ", 3 PUSHes").c_str(), three.op.fabric_us, "",
                three.op.wall_us, "", three.frames);
    if (len == 65536)
      std::printf(
          "mcast_list 64 KiB throughput: %.0f%% of 3 PUSHes' in wall time, "
          "%.0f%% in fabric time (goal >= 80%%)\n",
          100 * three.op.wall_us / one.op.wall_us,
          100 * three.op.fabric_us / one.op.fabric_us);
  }
  mcast_switch_figures(quick, iters, uint64_t(hop_us * 1000));
  return failed ? 1 : 0;
}
