// SPDX-License-Identifier: BSD-2-Clause
// Ring wrap-around, completion events, and the engine's bounded resources
// (kick FIFO, receive FIFO, channel window, send-packet memory) under load:
// work may wait, but none is lost and the data stays right.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

TEST(Rings, CompletionQueueWrapsManyLaps) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.memory_bytes = 16u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcOptions opt;
  opt.cq_log_depth = 3;  // 8 CQEs: the owner bit flips every 8
  opt.sq_log_depth = 4;
  opt.rq_log_depth = 3;
  RcPair p = make_rc_pair(c, 0, 1, opt);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 100 * 64, kAllAccess, 701);
  Region dst = make_region(*p.ctx_b, 100 * 64);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * 64, 64)}));
    ASSERT_TRUE(
        p.qp_a->post_send(send_wr(uint64_t(i), {src.sge(size_t(i) * 64, 64)})));
    Completion s = wait_one(c, *p.cq_a);
    ASSERT_TRUE(s.ok()) << "send " << i << " " << describe(s);
    EXPECT_EQ(s.wr_id, uint64_t(i));
    Completion r = wait_one(c, *p.cq_b);
    ASSERT_TRUE(r.ok()) << "recv " << i << " " << describe(r);
    EXPECT_EQ(r.wr_id, uint64_t(i));
    EXPECT_EQ(r.wqe_index, uint16_t(i));
  }
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_EQ(c.node(0).counter(RHN_CNT_CQ_OVERFLOWS), 0u);
}

// Open point 4 of the contract: may a multi-slot WQE wrap from the last SQ
// slot to slot 0? The provider here lets it wrap (slot = index & mask).
TEST(Rings, MultiSlotWqeWrapsRingEnd) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.memory_bytes = 16u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcOptions opt;
  opt.sq_log_depth = 4;  // 16 slots; 3-slot WQEs cross the end regularly
  RcPair p = make_rc_pair(c, 0, 1, opt);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 9 * 40 * 16, kAllAccess, 711);
  Region dst = make_region(*p.ctx_b, 9 * 40 * 16);
  for (int i = 0; i < 40; ++i) {
    std::vector<Sge> sges;
    for (int k = 0; k < 9; ++k)
      sges.push_back(src.sge(size_t(i * 9 + k) * 16, 16));
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(uint64_t(i), RHN_OP_WRITE, sges,
                                          dst.va(size_t(i) * 144), dst.key())));
    Completion s = wait_one(c, *p.cq_a);
    ASSERT_TRUE(s.ok()) << "WQE " << i << " at slot " << (i * 3) % 16 << " "
                        << describe(s);
  }
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

TEST(Events, ArmedCqRaisesEqeAndInterrupt) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.memory_bytes = 16u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  SimNode& nb = c.node(1);
  const uint32_t eqn = nb.driver->kernel_eqn();
  // Arm the EQ (consumer index 0) and the CQ.
  nb.driver->write64(RHN_REG_EQ_DOORBELL,
                     (uint64_t(eqn) << RHN_EQ_DB_EQN_SHIFT) | RHN_EQ_DB_ARM);
  p.cq_b->arm();
  const uint64_t irq_before = nb.bus.msix_count(1);
  Region src = make_region(*p.ctx_a, 64, kAllAccess, 721);
  Region dst = make_region(*p.ctx_b, 64);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, 64)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, 64)})));
  ASSERT_TRUE(wait_one(c, *p.cq_b).ok());
  c.run_for(100'000);
  rhn_eqe e;
  std::memcpy(&e, nb.memory.ptr(nb.driver->eq_ring_bus(), sizeof e), sizeof e);
  EXPECT_EQ(e.owner & 1, 1) << "no EQE written";
  EXPECT_EQ(e.type, RHN_EQE_COMPLETION);
  EXPECT_EQ(e.object, p.cq_b->cqn());
  EXPECT_GT(nb.bus.msix_count(1), irq_before);
  // Not re-armed: the next completion posts no new event.
  rhn_eqe next;
  ASSERT_TRUE(p.qp_b->post_recv(2, {dst.sge(0, 64)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, 64)})));
  ASSERT_TRUE(wait_one(c, *p.cq_b).ok());
  c.run_for(100'000);
  std::memcpy(
      &next,
      nb.memory.ptr(nb.driver->eq_ring_bus() + RHN_EQE_SIZE, sizeof next),
      sizeof next);
  EXPECT_EQ(next.owner & 1, 0) << "event without an arm";
}

TEST(Limits, KickFifoOverflowLosesNoWork) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.memory_bytes = 16u << 20;
  cfg.engine.kick_fifo_entries = 4;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 64 * 128, kAllAccess, 731);
  Region dst = make_region(*p.ctx_b, 64 * 128);
  // 64 WQEs, 64 kicks, no engine poll in between.
  for (int i = 0; i < 64; ++i)
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(uint64_t(i), RHN_OP_WRITE,
                                          {src.sge(size_t(i) * 128, 128)},
                                          dst.va(size_t(i) * 128), dst.key())));
  auto v = c.wait_cqes(*p.cq_a, 64);
  ASSERT_EQ(v.size(), 64u);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i].wr_id, i);
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_GT(c.node(0).counter(RHN_CNT_KICK_OVERFLOWS), 0u);
}

TEST(Limits, TinyFifosWindowsAndPacketMemory) {
  ClusterConfig cfg;
  cfg.nodes = 3;
  cfg.memory_bytes = 16u << 20;
  cfg.engine.rx_fifo_frames = 4;
  cfg.engine.channel_window = 4;
  cfg.engine.send_packet_slots = 8;
  cfg.engine.max_inflight_per_qp = 2;
  cfg.engine.responder_reads = 2;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  // Two senders into node 1 at once, large messages, READs and WRITEs.
  RcPair p = make_rc_pair(c, 0, 1);
  RcPair q = make_rc_pair(c, 2, 1);
  ASSERT_TRUE(p.ok && q.ok);
  const size_t len = 256 * 1024;
  Region s0 = make_region(*p.ctx_a, len, kAllAccess, 741);
  Region s2 = make_region(*q.ctx_a, len, kAllAccess, 742);
  Region d0 = make_region(*p.ctx_b, len);
  Region d2 = make_region(*q.ctx_b, len);
  Region back0 = make_region(*p.ctx_a, len);
  for (int i = 0; i < 4; ++i) {
    const size_t off = size_t(i) * len / 4;
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(uint64_t(i), RHN_OP_WRITE,
                                          {s0.sge(off, len / 4)}, d0.va(off),
                                          d0.key())));
    ASSERT_TRUE(q.qp_a->post_send(rdma_wr(uint64_t(i), RHN_OP_WRITE,
                                          {s2.sge(off, len / 4)}, d2.va(off),
                                          d2.key())));
  }
  auto v0 = c.wait_cqes(*p.cq_a, 4, 2'000'000'000);
  auto v2 = c.wait_cqes(*q.cq_a, 4, 2'000'000'000);
  ASSERT_EQ(v0.size(), 4u);
  ASSERT_EQ(v2.size(), 4u);
  for (const auto& x : v0) EXPECT_TRUE(x.ok()) << describe(x);
  for (const auto& x : v2) EXPECT_TRUE(x.ok()) << describe(x);
  EXPECT_TRUE(d0.buf.bytes() == s0.buf.bytes());
  EXPECT_TRUE(d2.buf.bytes() == s2.buf.bytes());
  for (int i = 0; i < 4; ++i) {
    const size_t off = size_t(i) * len / 4;
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(10 + uint64_t(i), RHN_OP_READ,
                                          {back0.sge(off, len / 4)}, d0.va(off),
                                          d0.key())));
  }
  auto r0 = c.wait_cqes(*p.cq_a, 4, 2'000'000'000);
  ASSERT_EQ(r0.size(), 4u);
  for (const auto& x : r0) EXPECT_TRUE(x.ok()) << describe(x);
  EXPECT_TRUE(back0.buf.bytes() == s0.buf.bytes());
  EXPECT_GT(c.node(1).counter(RHN_CNT_RX_DROPS), 0u)
      << "the tiny receive FIFO never filled";
  EXPECT_EQ(c.node(0).counter(RHN_CNT_PEER_DEAD) +
                c.node(2).counter(RHN_CNT_PEER_DEAD),
            0u);
}

// Each QP may keep 64 READs in flight (the engine's default); eight QPs
// from two nodes into one responder ask for twice its READ contexts (256,
// shared). The requests it has no context for are refused BUSY and come
// again; every READ completes with the right bytes and no peer is declared
// dead. (Refused at the channel, as if lost, they stalled both peers'
// streams until the requesters declared node 1 dead: 432 of the 512 READs
// failed.)
TEST(Limits, SixtyFourReadsPerQpFromEightQpsOutrunTheRespondersReadPool) {
  ClusterConfig cfg;
  cfg.nodes = 3;
  cfg.memory_bytes = 64u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  ASSERT_EQ(cfg.engine.max_rd_atomic, 64u);
  ASSERT_EQ(cfg.engine.responder_reads, 256u);
  RcOptions opt;
  opt.max_rd_atomic = 64;
  constexpr int kQps = 8, kReads = 64;
  constexpr size_t kLen = 16 * 1024;  // four packets: a stream takes a while
  std::vector<RcPair> pairs;
  std::vector<Region> sources, sinks;
  for (int q = 0; q < kQps; ++q) {
    pairs.push_back(make_rc_pair(c, q % 2 ? 2 : 0, 1, opt));
    ASSERT_TRUE(pairs.back().ok);
    sources.push_back(make_region(*pairs.back().ctx_b, kLen * kReads,
                                  kAllAccess, 900 + uint64_t(q)));
    sinks.push_back(make_region(*pairs.back().ctx_a, kLen * kReads));
  }
  for (int q = 0; q < kQps; ++q)
    for (int i = 0; i < kReads; ++i) {
      const size_t off = size_t(i) * kLen;
      ASSERT_TRUE(pairs[q].qp_a->post_send(
          rdma_wr(uint64_t(i), RHN_OP_READ, {sinks[q].sge(off, kLen)},
                  sources[q].va(off), sources[q].key())));
    }
  for (int q = 0; q < kQps; ++q) {
    auto v = c.wait_cqes(*pairs[q].cq_a, kReads, 5'000'000'000);
    ASSERT_EQ(v.size(), size_t(kReads)) << "QP " << q;
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_TRUE(v[i].ok()) << describe(v[i]);
      EXPECT_EQ(v[i].wr_id, i);
    }
    EXPECT_TRUE(sinks[q].buf.bytes() == sources[q].buf.bytes()) << "QP " << q;
  }
  EXPECT_GT(c.node(1).counter(RHN_CNT_RNR_NAKS_SENT), 0u)
      << "the READ contexts never ran out";
  EXPECT_EQ(c.node(0).counter(RHN_CNT_PEER_DEAD) +
                c.node(2).counter(RHN_CNT_PEER_DEAD),
            0u);
}

TEST(Limits, FaultyFourNodeAllToAll) {
  constexpr uint16_t kNodes = 4;
  ClusterConfig cfg;
  cfg.nodes = kNodes;
  cfg.memory_bytes = 8u << 20;
  cfg.seed = 77;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  FaultConfig f;
  f.loss = 0.1;
  f.duplicate = 0.1;
  f.reorder = 0.1;
  f.corrupt = 0.1;
  struct Ep {
    std::unique_ptr<SimContext> ctx;
    std::unique_ptr<SimCq> cq;
    std::unique_ptr<SimQp> qp;
    Region buf;
  };
  std::vector<Ep> n(kNodes);
  for (uint16_t i = 0; i < kNodes; ++i) {
    n[i].ctx = c.node(i).open_context();
    ASSERT_TRUE(n[i].ctx->ok());
    n[i].cq = n[i].ctx->create_cq(9);
    QpInit qi;
    qi.type = RHN_QP_ENDPOINT;
    qi.send_cq = n[i].cq.get();
    n[i].qp = n[i].ctx->create_qp(qi);
    ASSERT_TRUE(n[i].qp && activate_datagram(*n[i].qp, 0));
    n[i].buf = make_region(*n[i].ctx, 256 * 1024);
  }
  c.fabric().set_faults(f);
  constexpr int kPerPeer = 8;
  constexpr size_t kMsg = 6000;
  for (uint16_t i = 0; i < kNodes; ++i) {
    n[i].buf.buf.write(0, pattern(900 + i, kMsg * kPerPeer).data(),
                       kMsg * kPerPeer);
    for (int k = 0; k < kPerPeer * (kNodes - 1); ++k)
      ASSERT_TRUE(n[i].qp->post_recv(
          uint64_t(k), {n[i].buf.sge(65536 + size_t(k) * 8192, 8192)}));
  }
  for (int m = 0; m < kPerPeer; ++m)
    for (uint16_t i = 0; i < kNodes; ++i)
      for (uint16_t j = 0; j < kNodes; ++j) {
        if (i == j) continue;
        SendWr wr =
            send_wr(uint64_t(m), {n[i].buf.sge(size_t(m) * kMsg, kMsg)});
        wr.dst_node = j;
        wr.dst_qpn = n[j].qp->qpn();
        ASSERT_TRUE(n[i].qp->post_send(wr));
      }
  for (uint16_t i = 0; i < kNodes; ++i) {
    auto v = c.wait_cqes(*n[i].cq, 2 * kPerPeer * (kNodes - 1), 5'000'000'000);
    ASSERT_EQ(v.size(), size_t(2 * kPerPeer * (kNodes - 1))) << "node " << i;
    std::vector<int> next(kNodes, 0);  // FIFO per sender
    for (const auto& x : v) {
      ASSERT_TRUE(x.ok()) << describe(x);
      if (x.is_send()) continue;
      const int m = next[x.src_node]++;
      const auto all = pattern(900 + x.src_node, kMsg * kPerPeer);
      const std::vector<uint8_t> want(
          all.begin() + ptrdiff_t(size_t(m) * kMsg),
          all.begin() + ptrdiff_t(size_t(m + 1) * kMsg));
      EXPECT_TRUE(n[i].buf.buf.bytes(65536 + size_t(x.wr_id) * 8192, kMsg) ==
                  want)
          << "node " << i << " message " << m << " from " << x.src_node;
    }
  }
}

}  // namespace
}  // namespace rhinet::test
