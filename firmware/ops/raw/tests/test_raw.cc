// SPDX-License-Identifier: BSD-2-Clause
// Raw frames: the path under the net_device. A kernel-only RAW_ETH QP sends
// unsequenced RAW packets to a node, to all (broadcast) or to a switch
// group, and receives them into its receive queue; nothing is resent.
#include "test_helpers.h"

namespace rhinet::test {
namespace {

struct RawNode {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  Region buf;
};

RawNode make_raw_node(SimCluster& c, uint16_t node) {
  RawNode r;
  r.ctx = c.node(node).kernel_context();
  if (!r.ctx->ok()) return r;
  r.cq = r.ctx->create_cq(8);
  if (!r.cq) return r;
  QpInit qi;
  qi.type = RHN_QP_RAW_ETH;
  qi.send_cq = r.cq.get();
  r.qp = r.ctx->create_qp(qi);
  if (!r.qp || !activate_datagram(*r.qp, 0)) r.qp.reset();
  r.buf = make_region(*r.ctx, 64 * 1024, kAllAccess, 0, 0);
  return r;
}

SendWr raw_wr(uint64_t wr_id, uint16_t dst, std::vector<Sge> sges) {
  SendWr wr = send_wr(wr_id, std::move(sges), RHN_OP_RAW_ETH);
  wr.dst_node = dst;
  return wr;
}

ClusterConfig three_nodes() {
  ClusterConfig cfg;
  cfg.nodes = 3;
  return cfg;
}

TEST(RawFrames, UnicastAndBroadcastReachTheirReceivers) {
  SimCluster c(three_nodes());
  ASSERT_TRUE(c.all_up());
  RawNode n0 = make_raw_node(c, 0), n1 = make_raw_node(c, 1),
          n2 = make_raw_node(c, 2);
  ASSERT_TRUE(n0.qp && n1.qp && n2.qp);
  n0.buf.buf.fill_pattern(77);
  for (uint64_t i = 0; i < 2; i++) {
    ASSERT_TRUE(n1.qp->post_recv(10 + i, {n1.buf.sge(i * 2048, 2048)}));
    ASSERT_TRUE(n2.qp->post_recv(20 + i, {n2.buf.sge(i * 2048, 2048)}));
  }

  // A 1514-byte frame to node 1 only.
  ASSERT_TRUE(n0.qp->post_send(raw_wr(1, 1, {n0.buf.sge(0, 1514)})));
  Completion s = wait_one(c, *n0.cq);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_RAW_ETH);
  Completion r = wait_one(c, *n1.cq);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.opcode, RHN_CQE_OP_RECV_RAW_ETH);
  EXPECT_EQ(r.wr_id, 10u);
  EXPECT_EQ(r.byte_len, 1514u);
  EXPECT_EQ(r.src_node, 0u);
  EXPECT_EQ(n1.buf.buf.bytes(0, 1514), n0.buf.buf.bytes(0, 1514));
  c.run_for(1'000'000);
  EXPECT_TRUE(n2.cq->poll().empty());

  // A broadcast (an ARP request, say) reaches both others, inline.
  SendWr b = raw_wr(2, RHN_NODE_BROADCAST, {});
  b.flags |= RHN_WQE_F_INLINE;
  b.inline_data = pattern(5, 60);
  ASSERT_TRUE(n0.qp->post_send(b));
  EXPECT_TRUE(wait_one(c, *n0.cq).ok());
  // Node 1 used its first buffer above; node 2 still has both.
  for (auto [n, at] : {std::pair{&n1, 2048}, std::pair{&n2, 0}}) {
    r = wait_one(c, *n->cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.byte_len, 60u);
    EXPECT_EQ(r.src_node, 0u);
    EXPECT_EQ(n->buf.buf.bytes(at, 60), pattern(5, 60));
  }
}

TEST(RawFrames, NoReceiveWqeDropsAndCounts) {
  SimCluster c(three_nodes());
  ASSERT_TRUE(c.all_up());
  RawNode n0 = make_raw_node(c, 0), n1 = make_raw_node(c, 1);
  ASSERT_TRUE(n0.qp && n1.qp);
  CounterSnap before(c.node(1));
  ASSERT_TRUE(n0.qp->post_send(raw_wr(1, 1, {n0.buf.sge(0, 100)})));
  EXPECT_TRUE(wait_one(c, *n0.cq).ok());  // sent is done: no ACK exists
  c.run_for(1'000'000);
  EXPECT_TRUE(n1.cq->poll().empty());
  EXPECT_EQ(before.delta(RHN_CNT_UD_DROPS), 1u);
  // Too small a receive buffer: an error completion, not an overrun.
  ASSERT_TRUE(n1.qp->post_recv(7, {n1.buf.sge(0, 64)}));
  ASSERT_TRUE(n0.qp->post_send(raw_wr(2, 1, {n0.buf.sge(0, 100)})));
  Completion r = wait_one(c, *n1.cq);
  EXPECT_EQ(r.status, RHN_CQE_LOC_LEN_ERR) << describe(r);
}

TEST(RawFrames, OnlyTheKernelOwnsOneRawQp) {
  SimCluster c(three_nodes());
  ASSERT_TRUE(c.all_up());
  RawNode k = make_raw_node(c, 0);
  ASSERT_TRUE(k.qp);
  // A second raw QP: refused.
  QpInit qi;
  qi.type = RHN_QP_RAW_ETH;
  qi.send_cq = k.cq.get();
  EXPECT_EQ(k.ctx->create_qp(qi), nullptr);
  EXPECT_EQ(k.ctx->last.status, RHN_ADMIN_EXISTS);
  // A user context may not have one at all.
  auto user = c.node(0).open_context();
  ASSERT_TRUE(user->ok());
  auto ucq = user->create_cq(6);
  qi.send_cq = ucq.get();
  EXPECT_EQ(user->create_qp(qi), nullptr);
  EXPECT_EQ(user->last.status, RHN_ADMIN_NOT_PERMITTED);
  // Destroying the raw QP frees the role.
  ASSERT_TRUE(
      k.ctx->driver().destroy(RHN_ADMIN_DESTROY_QP, 0, k.qp->qpn()).ok());
  qi.send_cq = k.cq.get();
  EXPECT_NE(k.ctx->create_qp(qi), nullptr);
}

TEST(RawFrames, RawOpcodeOnlyOnTheRawQp) {
  SimCluster c(three_nodes());
  ASSERT_TRUE(c.all_up());
  RawNode k = make_raw_node(c, 0);
  ASSERT_TRUE(k.qp);
  // An ordinary SEND on the raw QP is refused with an error completion.
  ASSERT_TRUE(k.qp->post_send(send_wr(1, {k.buf.sge(0, 8)})));
  Completion e = wait_one(c, *k.cq);
  EXPECT_EQ(e.status, RHN_CQE_LOC_QP_OP_ERR) << describe(e);
  EXPECT_EQ(e.vendor_err, RHN_SYN_BAD_OPCODE);
}

TEST(RawFrames, RawOpcodeRefusedOnUd) {
  SimCluster c(three_nodes());
  ASSERT_TRUE(c.all_up());
  auto ctx = c.node(0).open_context();
  auto cq = ctx->create_cq(6);
  QpInit qi;
  qi.type = RHN_QP_UD;
  qi.send_cq = cq.get();
  auto qp = ctx->create_qp(qi);
  ASSERT_TRUE(qp && activate_datagram(*qp, 1));
  Region buf = make_region(*ctx, 4096);
  ASSERT_TRUE(qp->post_send(raw_wr(1, 1, {buf.sge(0, 64)})));
  Completion e = wait_one(c, *cq);
  EXPECT_EQ(e.status, RHN_CQE_LOC_QP_OP_ERR) << describe(e);
}

}  // namespace
}  // namespace rhinet::test
