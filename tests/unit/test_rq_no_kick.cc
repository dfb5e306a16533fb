// SPDX-License-Identifier: BSD-2-Clause
// Receives posted with no RQ doorbell (issue 39): the NIC reads a plain
// RQ's record itself when a message needs a receive WQE, and asks for
// kicks through the record only while the QP is in ERR, where posts must
// be flushed (Documentation/hardware/queues.md, "Receives without
// doorbells").
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr int kMessages = 8;
constexpr size_t kLen = 64;

ClusterConfig two_nodes() {
  ClusterConfig cfg;
  cfg.nodes = 2;
  return cfg;
}

// Posts as a provider does that leaves kicks out: record store, then a
// look at the NIC's word, and a kick only when it asks.
bool post_recv_quiet(SimQp& qp, uint64_t wr_id, const Sge& sge) {
  qp.auto_kick = false;
  const bool ok = qp.post_recv(wr_id, {sge});
  if (ok && (qp.rq_nic_word() & RHN_RQ_RECORD_DOORBELL_WANTED)) qp.kick_rq();
  return ok;
}

class RqNoKick : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(two_nodes());
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
  }
  SimNode& node_b() { return c->node(1); }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

TEST_F(RqNoKick, CapabilityIsAdvertised) {
  EXPECT_TRUE(node_b().driver->reg32(RHN_REG_CAPS) & RHN_CAP_RQ_RECORD_READ);
  EXPECT_EQ(p.qp_b->rq_nic_word(), 0u);  // no kick wanted in RTS
}

// Receives stored only in the record are taken by arriving SENDs: one
// record read for the batch (the NIC learns of all eight at once), one
// WQE read per message, no RQ doorbell.
TEST_F(RqNoKick, RcSendsLandInReceivesPostedWithoutKick) {
  Region src = make_region(*p.ctx_a, kLen * kMessages, kAllAccess, 51);
  Region dst = make_region(*p.ctx_b, kLen * kMessages);
  CounterSnap b(node_b());
  for (int i = 0; i < kMessages; ++i)
    ASSERT_TRUE(post_recv_quiet(*p.qp_b, uint64_t(100 + i),
                                dst.sge(size_t(i) * kLen, kLen)));
  c->run_for(100'000);
  EXPECT_EQ(b.delta(RHN_CNT_MMIO_WRITES), 0u);
  EXPECT_EQ(b.delta(RHN_CNT_QUEUE_RECORD_READS), 0u);  // nothing needed one
  for (int i = 0; i < kMessages; ++i)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
  auto recvs = c->wait_cqes(*p.cq_b, kMessages);
  ASSERT_EQ(recvs.size(), size_t(kMessages)) << describe(recvs);
  for (int i = 0; i < kMessages; ++i) {
    EXPECT_TRUE(recvs[size_t(i)].ok()) << describe(recvs[size_t(i)]);
    EXPECT_EQ(recvs[size_t(i)].wr_id, uint64_t(100 + i));
  }
  ASSERT_EQ(c->wait_cqes(*p.cq_a, kMessages).size(), size_t(kMessages));
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 0u);
  EXPECT_EQ(b.delta(RHN_CNT_MMIO_WRITES), 0u);
  EXPECT_EQ(b.delta(RHN_CNT_RECV_WQE_FETCHES), uint64_t(kMessages));
  EXPECT_EQ(b.delta(RHN_CNT_QUEUE_RECORD_READS), 1u);
  EXPECT_EQ(b.delta(RHN_CNT_RNR_NAKS_SENT), 0u);
}

// One receive posted per message, each before its SEND: one record read
// per message (each finds the RQ exhausted), still no doorbell.
TEST_F(RqNoKick, OneRecordReadPerExhaustion) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 52);
  Region dst = make_region(*p.ctx_b, kLen);
  CounterSnap b(node_b());
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(post_recv_quiet(*p.qp_b, uint64_t(i), dst.sge(0, kLen)));
    ASSERT_TRUE(p.qp_a->post_send(send_wr(uint64_t(i), {src.sge(0, kLen)})));
    Completion r = wait_one(*c, *p.cq_b);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, uint64_t(i));
    ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  }
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 0u);
  EXPECT_EQ(b.delta(RHN_CNT_QUEUE_RECORD_READS), uint64_t(kMessages));
  EXPECT_EQ(b.delta(RHN_CNT_RECV_WQE_FETCHES), uint64_t(kMessages));
}

// A SEND meeting an empty RQ is RNR-NAKed; the receive posted afterwards
// without a kick is found by the retry.
TEST_F(RqNoKick, RnrRetryFindsReceivePostedWithoutKick) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 53);
  Region dst = make_region(*p.ctx_b, kLen);
  CounterSnap a(c->node(0));
  CounterSnap b(node_b());
  ASSERT_TRUE(p.qp_a->post_send(send_wr(7, {src.sge(0, kLen)})));
  for (int i = 0; i < 2000 && b.delta(RHN_CNT_RNR_NAKS_SENT) == 0; ++i)
    c->run_for(1'000);
  ASSERT_GE(b.delta(RHN_CNT_RNR_NAKS_SENT), 1u);
  EXPECT_TRUE(p.cq_b->poll().empty());
  ASSERT_TRUE(post_recv_quiet(*p.qp_b, 70, dst.sge(0, kLen)));
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 70u);
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_GE(a.delta(RHN_CNT_RNR_RETRIES), 1u);
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 0u);
}

// ERR: the NIC asks for kicks in the record. A receive stored before the
// transition is flushed by it (the NIC reads the record after asking);
// one stored after sees the request, kicks, and is flushed too.
TEST_F(RqNoKick, ErrQpFlushesReceivesThroughTheRecord) {
  Region dst = make_region(*p.ctx_b, kLen * 2);
  ASSERT_TRUE(post_recv_quiet(*p.qp_b, 1, dst.sge(0, kLen)));
  CounterSnap b(node_b());
  ASSERT_TRUE(p.qp_b->to_err().ok());
  EXPECT_TRUE(p.qp_b->rq_nic_word() & RHN_RQ_RECORD_DOORBELL_WANTED);
  Completion r1 = wait_one(*c, *p.cq_b);
  EXPECT_EQ(r1.wr_id, 1u);
  EXPECT_EQ(r1.status, RHN_CQE_WR_FLUSH_ERR) << describe(r1);
  ASSERT_TRUE(post_recv_quiet(*p.qp_b, 2, dst.sge(kLen, kLen)));
  Completion r2 = wait_one(*c, *p.cq_b);
  EXPECT_EQ(r2.wr_id, 2u);
  EXPECT_EQ(r2.status, RHN_CQE_WR_FLUSH_ERR) << describe(r2);
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 1u);  // only the post in ERR
}

// A receive posted in ERR with no look at the record is not flushed: the
// kick is what the NIC waits for (the signal is needed, not decoration).
TEST_F(RqNoKick, ErrQpWaitsForTheKickItAskedFor) {
  Region dst = make_region(*p.ctx_b, kLen);
  ASSERT_TRUE(p.qp_b->to_err().ok());
  c->run_for(100'000);
  p.qp_b->auto_kick = false;
  ASSERT_TRUE(p.qp_b->post_recv(9, {dst.sge(0, kLen)}));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_b->poll().empty());
  p.qp_b->kick_rq();
  Completion r = wait_one(*c, *p.cq_b);
  EXPECT_EQ(r.wr_id, 9u);
  EXPECT_EQ(r.status, RHN_CQE_WR_FLUSH_ERR) << describe(r);
}

// RESET clears the request, and the new incarnation starts from the
// record software zeroed: receives of the old life are not taken.
TEST_F(RqNoKick, ResetQpDoesNotTakeStaleReceives) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 54);
  Region dst = make_region(*p.ctx_b, kLen * 4);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(post_recv_quiet(*p.qp_b, uint64_t(10 + i),
                                dst.sge(size_t(i) * kLen, kLen)));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  ASSERT_EQ(wait_one(*c, *p.cq_b).wr_id, 10u);  // the NIC knows of 3
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  ASSERT_TRUE(p.qp_b->to_err().ok());
  ASSERT_EQ(c->wait_cqes(*p.cq_b, 2).size(), 2u);  // 11, 12 flushed
  ASSERT_TRUE(p.qp_b->to_reset().ok());
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  EXPECT_EQ(p.qp_b->rq_nic_word(), 0u);
  ASSERT_TRUE(connect_rc(*p.qp_a, 1, p.qp_b->qpn()));
  ASSERT_TRUE(connect_rc(*p.qp_b, 0, p.qp_a->qpn()));
  CounterSnap b(node_b());
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, kLen)})));
  for (int i = 0; i < 2000 && b.delta(RHN_CNT_RNR_NAKS_SENT) == 0; ++i)
    c->run_for(1'000);
  EXPECT_GE(b.delta(RHN_CNT_RNR_NAKS_SENT), 1u);  // nothing posted yet
  EXPECT_TRUE(p.cq_b->poll().empty());
  ASSERT_TRUE(post_recv_quiet(*p.qp_b, 20, dst.sge(3 * kLen, kLen)));
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 20u);
  EXPECT_EQ(r.wqe_index, 0u);
  EXPECT_EQ(dst.buf.bytes(3 * kLen, kLen), src.buf.bytes());
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 0u);
}

// UD: a datagram takes a receive stored only in the record; one that
// finds the RQ empty is dropped after one record read.
TEST(RqNoKickUd, DatagramsLandInReceivesPostedWithoutKick) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x2222);
  ASSERT_TRUE(a.qp && b.qp);
  a.buf.buf.fill_pattern(55);
  CounterSnap bs(c.node(1));
  SendWr wr = send_wr(1, {a.buf.sge(0, 500)});
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x2222;
  ASSERT_TRUE(a.qp->post_send(wr));  // nothing posted: dropped
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  c.run_for(1'000'000);
  EXPECT_EQ(bs.delta(RHN_CNT_UD_DROPS), 1u);
  EXPECT_EQ(bs.delta(RHN_CNT_QUEUE_RECORD_READS), 1u);
  for (uint64_t i = 0; i < 2; ++i)
    ASSERT_TRUE(post_recv_quiet(*b.qp, 30 + i, b.buf.sge(i * 4096, 4096)));
  for (uint64_t i = 0; i < 2; ++i) {
    wr.wr_id = 2 + i;
    ASSERT_TRUE(a.qp->post_send(wr));
    EXPECT_TRUE(wait_one(c, *a.cq).ok());
    Completion r = wait_one(c, *b.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, 30 + i);
    EXPECT_EQ(b.buf.buf.bytes(i * 4096 + RHN_UD_GRH_LEN, 500),
              a.buf.buf.bytes(0, 500));
  }
  EXPECT_EQ(bs.delta(RHN_CNT_UD_DROPS), 1u);
  EXPECT_EQ(bs.delta(RHN_CNT_RQ_DOORBELLS), 0u);
  EXPECT_EQ(bs.delta(RHN_CNT_QUEUE_RECORD_READS), 2u);  // drop + batch
}

// An endpoint's nic_consumer is its tag index, never the ERR request.
TEST(RqNoKickEndpoint, ErrLeavesTheEndpointWordAlone) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  DatagramNode e = make_datagram_node(c, 0, RHN_QP_ENDPOINT, 0);
  ASSERT_TRUE(e.qp);
  ASSERT_TRUE(e.qp->to_err().ok());
  c.run_for(100'000);
  EXPECT_FALSE(e.qp->rq_nic_word() & RHN_RQ_RECORD_DOORBELL_WANTED);
}

}  // namespace
}  // namespace rhinet::test
