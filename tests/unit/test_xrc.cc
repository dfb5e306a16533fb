// SPDX-License-Identifier: BSD-2-Clause
// XRC (queues.md, "XRC"): an XRC_SEND QP's SENDs name an XRC SRQ at the
// target; the target's XRC_RECV QP delivers into it only if the SRQ is a
// live one of the QP's XRC domain, completing on the SRQ's CQ. Wrong
// domains, destroyed SRQs and numbers of an earlier life are refused.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kDomain = 5;
constexpr uint32_t kOtherDomain = 6;

// An initiator on node `from` and a target XRC_RECV QP of `xrcd` in
// context `target` on node 1, connected to each other.
struct XrcLink {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> ini;
  std::unique_ptr<SimCq> tgt_cq;
  std::unique_ptr<SimQp> tgt;
};

XrcLink make_link(SimCluster& c, uint16_t from, SimContext& target,
                  uint32_t xrcd) {
  XrcLink l;
  l.ctx = c.node(from).open_context();
  l.cq = l.ctx->create_cq(8);
  QpInit qi;
  qi.type = RHN_QP_XRC_SEND;
  qi.send_cq = l.cq.get();
  l.ini = l.ctx->create_qp(qi);
  l.tgt_cq = target.create_cq(4);
  QpInit ti;
  ti.type = RHN_QP_XRC_RECV;
  ti.send_cq = l.tgt_cq.get();
  ti.sq_log_depth = 1;
  ti.xrcd = xrcd;
  l.tgt = target.create_qp(ti);
  if (l.ini && l.tgt) {
    EXPECT_TRUE(connect_rc(*l.ini, 1, l.tgt->qpn()));
    EXPECT_TRUE(connect_rc(*l.tgt, from, l.ini->qpn()));
  }
  return l;
}

SendWr xrc_send(uint64_t wr_id, const Sge& sge, uint32_t srq_number) {
  SendWr w = send_wr(wr_id, {sge});
  w.dst_qpn = srq_number;
  return w;
}

class Xrc : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 3;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    // The SRQs' owner and the target QPs' owner are different processes
    // of one domain, as ibv_open_xrcd lets them be.
    srq_owner = c->node(1).open_context();
    qp_owner = c->node(1).open_context();
    ASSERT_TRUE(srq_owner->ok() && qp_owner->ok());
    srq_cq = srq_owner->create_cq(8);
    ASSERT_TRUE(srq_cq);
    inbox = make_region(*srq_owner, 32 * 1024, kAllAccess, 0, 0xee);
  }
  std::unique_ptr<SimCluster> c;
  std::unique_ptr<SimContext> srq_owner, qp_owner;
  std::unique_ptr<SimCq> srq_cq;
  Region inbox;
};

TEST_F(Xrc, SendLandsInTheNamedSrqAndCompletesOnItsCq) {
  auto srq1 = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  auto srq2 = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(srq1 && srq2);
  EXPECT_NE(srq1->xrc_number(), srq2->xrc_number());
  EXPECT_EQ(srq1->xrc_number() & RHN_XRC_SRQN_INDEX_MASK, srq1->srqn());
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  ASSERT_TRUE(srq1->post_recv(100, {inbox.sge(0, 4096)}));
  ASSERT_TRUE(srq2->post_recv(200, {inbox.sge(8192, 16384)}));
  // Multi-packet into the second SRQ, then one packet into the first.
  const size_t big = 2 * RHN_WIRE_MTU + 77;
  Region src = make_region(*l.ctx, big, kAllAccess, 41);
  ASSERT_TRUE(
      l.ini->post_send(xrc_send(1, src.sge(0, big), srq2->xrc_number())));
  ASSERT_TRUE(
      l.ini->post_send(xrc_send(2, src.sge(0, 100), srq1->xrc_number())));
  auto s = c->wait_cqes(*l.cq, 2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].ok() && s[1].ok()) << describe(s);
  auto r = c->wait_cqes(*srq_cq, 2);
  ASSERT_EQ(r.size(), 2u) << describe(r);
  EXPECT_EQ(r[0].wr_id, 200u) << describe(r[0]);
  EXPECT_EQ(r[0].byte_len, big);
  EXPECT_EQ(r[0].xrc_srqn, srq2->srqn());
  EXPECT_EQ(r[1].wr_id, 100u) << describe(r[1]);
  EXPECT_EQ(r[1].byte_len, 100u);
  EXPECT_EQ(r[1].xrc_srqn, srq1->srqn());
  for (const auto& x : r) {
    EXPECT_TRUE(x.ok()) << describe(x);
    EXPECT_TRUE(x.ext_flags & RHN_CQE_X_XRC);
    EXPECT_EQ(x.qpn, l.tgt->qpn());
    EXPECT_EQ(x.src_qpn, l.ini->qpn());
  }
  EXPECT_EQ(inbox.buf.bytes(8192, big), pattern(41, big));
  EXPECT_EQ(inbox.buf.bytes(0, 100), pattern(41, 100));
  EXPECT_EQ(inbox.buf.bytes(100, 100), std::vector<uint8_t>(100, 0xee));
  // The target QP's own CQ saw nothing.
  EXPECT_TRUE(l.tgt_cq->poll().empty());
}

TEST_F(Xrc, AnSrqOfAnotherDomainIsRefused) {
  auto foreign = srq_owner->create_xrc_srq(*srq_cq, kOtherDomain, 4);
  ASSERT_TRUE(foreign);
  ASSERT_TRUE(foreign->post_recv(300, {inbox.sge(0, 4096)}));
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  Region src = make_region(*l.ctx, 64, kAllAccess, 5);
  CounterSnap target(c->node(1));
  ASSERT_TRUE(
      l.ini->post_send(xrc_send(1, src.sge(0, 64), foreign->xrc_number())));
  const Completion s = wait_one(*c, *l.cq);
  EXPECT_EQ(s.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, RHN_SYN_XRC_SRQ);
  EXPECT_EQ(target.delta(RHN_CNT_XRC_REFUSED), 1u);
  c->run_for(1'000'000);
  EXPECT_TRUE(srq_cq->poll().empty());
  EXPECT_EQ(inbox.buf.bytes(0, 64), std::vector<uint8_t>(64, 0xee));
  // A plain SRQ's index is no XRC SRQ of any domain either.
  auto plain = srq_owner->create_srq(4);
  ASSERT_TRUE(plain);
  XrcLink l2 = make_link(*c, 2, *qp_owner, kDomain);
  ASSERT_TRUE(l2.ini && l2.tgt);
  Region src2 = make_region(*l2.ctx, 64, kAllAccess, 6);
  ASSERT_TRUE(l2.ini->post_send(xrc_send(2, src2.sge(0, 64), plain->srqn())));
  const Completion s2 = wait_one(*c, *l2.cq);
  EXPECT_EQ(s2.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s2);
  EXPECT_EQ(target.delta(RHN_CNT_XRC_REFUSED), 2u);
}

TEST_F(Xrc, ADestroyedSrqsNumberIsRefusedAfterItsSlotIsReused) {
  auto old_srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(old_srq);
  const uint32_t old_number = old_srq->xrc_number();
  const uint32_t index = old_srq->srqn();
  ASSERT_TRUE(srq_owner->destroy_srq(*old_srq).ok());
  old_srq.reset();
  auto srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(srq);
  ASSERT_EQ(srq->srqn(), index) << "the test needs the slot reused";
  EXPECT_NE(srq->xrc_number(), old_number);
  ASSERT_TRUE(srq->post_recv(400, {inbox.sge(0, 4096)}));
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  Region src = make_region(*l.ctx, 64, kAllAccess, 9);
  CounterSnap target(c->node(1));
  ASSERT_TRUE(l.ini->post_send(xrc_send(1, src.sge(0, 64), old_number)));
  const Completion s = wait_one(*c, *l.cq);
  EXPECT_EQ(s.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s);
  EXPECT_EQ(target.delta(RHN_CNT_XRC_REFUSED), 1u);
  EXPECT_TRUE(srq_cq->poll().empty());
  // An error moves the initiator to ERR, as RC: a new one uses the
  // current number and gets through.
  XrcLink l2 = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l2.ini && l2.tgt);
  Region src2 = make_region(*l2.ctx, 64, kAllAccess, 10);
  ASSERT_TRUE(
      l2.ini->post_send(xrc_send(2, src2.sge(0, 64), srq->xrc_number())));
  EXPECT_TRUE(wait_one(*c, *l2.cq).ok());
  const Completion r = wait_one(*c, *srq_cq);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 400u);
  EXPECT_EQ(inbox.buf.bytes(0, 64), pattern(10, 64));
}

TEST_F(Xrc, AnSrqDestroyedWhileTheTargetQpLivesRefusesLaterSends) {
  auto srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(srq);
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  const uint32_t number = srq->xrc_number();
  ASSERT_TRUE(srq->post_recv(1, {inbox.sge(0, 4096)}));
  // No QP holds an XRC SRQ: it goes while the target QP stays.
  ASSERT_TRUE(srq_owner->destroy_srq(*srq).ok());
  Region src = make_region(*l.ctx, 64, kAllAccess, 3);
  ASSERT_TRUE(l.ini->post_send(xrc_send(1, src.sge(0, 64), number)));
  const Completion s = wait_one(*c, *l.cq);
  EXPECT_EQ(s.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s);
  EXPECT_EQ(inbox.buf.bytes(0, 64), std::vector<uint8_t>(64, 0xee));
}

TEST_F(Xrc, TwoInitiatorsOnTwoNodesShareOneSrq) {
  auto srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 5);
  ASSERT_TRUE(srq);
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(
        srq->post_recv(500 + uint64_t(i), {inbox.sge(size_t(i) * 1024, 1024)}));
  // Each initiator has its own target QP, each in another process.
  auto other_owner = c->node(1).open_context();
  ASSERT_TRUE(other_owner->ok());
  XrcLink a = make_link(*c, 0, *qp_owner, kDomain);
  XrcLink b = make_link(*c, 2, *other_owner, kDomain);
  ASSERT_TRUE(a.ini && a.tgt && b.ini && b.tgt);
  XrcLink* links[] = {&a, &b};
  Region src[2] = {make_region(*a.ctx, 8000, kAllAccess, 71),
                   make_region(*b.ctx, 8000, kAllAccess, 72)};
  for (int i = 0; i < 8; ++i)
    for (int s = 0; s < 2; ++s)
      ASSERT_TRUE(links[s]->ini->post_send(xrc_send(
          uint64_t(i), src[s].sge(size_t(i) * 1000, 1000), srq->xrc_number())));
  for (int s = 0; s < 2; ++s) {
    auto done = c->wait_cqes(*links[s]->cq, 8);
    ASSERT_EQ(done.size(), 8u);
    for (const auto& d : done) EXPECT_TRUE(d.ok()) << describe(d);
  }
  auto v = c->wait_cqes(*srq_cq, 16);
  ASSERT_EQ(v.size(), 16u);
  std::vector<bool> used(16, false);
  int next_from[2] = {0, 0};
  for (const auto& r : v) {
    ASSERT_TRUE(r.ok()) << describe(r);
    ASSERT_GE(r.wr_id, 500u);
    ASSERT_LT(r.wr_id, 516u);
    const size_t slot = size_t(r.wr_id - 500);
    EXPECT_FALSE(used[slot]);
    used[slot] = true;
    const int s = r.qpn == a.tgt->qpn() ? 0 : 1;
    EXPECT_EQ(r.qpn, links[s]->tgt->qpn());
    const int i = next_from[s]++;  // each initiator's messages in order
    EXPECT_EQ(inbox.buf.bytes(slot * 1024, 1000),
              src[s].buf.bytes(size_t(i) * 1000, 1000))
        << "initiator " << s << " message " << i;
  }
}

TEST_F(Xrc, AnEmptySrqMakesTheInitiatorRetryUntilAReceiveIsPosted) {
  auto srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(srq);
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  Region src = make_region(*l.ctx, 64, kAllAccess, 12);
  CounterSnap target(c->node(1));
  ASSERT_TRUE(l.ini->post_send(xrc_send(1, src.sge(0, 64), srq->xrc_number())));
  c->run_for(200'000);
  EXPECT_GE(target.delta(RHN_CNT_RNR_NAKS_SENT), 1u);
  EXPECT_TRUE(l.cq->poll().empty());
  ASSERT_TRUE(srq->post_recv(9, {inbox.sge(0, 4096)}));
  EXPECT_TRUE(wait_one(*c, *l.cq).ok());
  const Completion r = wait_one(*c, *srq_cq);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 9u);
  EXPECT_EQ(inbox.buf.bytes(0, 64), pattern(12, 64));
}

TEST_F(Xrc, AnInitiatorSendsOnlyAndATargetNothing) {
  auto srq = srq_owner->create_xrc_srq(*srq_cq, kDomain, 4);
  ASSERT_TRUE(srq);
  XrcLink l = make_link(*c, 0, *qp_owner, kDomain);
  ASSERT_TRUE(l.ini && l.tgt);
  Region src = make_region(*l.ctx, 64, kAllAccess, 1);
  SendWr w =
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 64)}, inbox.va(), inbox.key());
  w.dst_qpn = srq->xrc_number();
  ASSERT_TRUE(l.ini->post_send(w));
  const Completion s = wait_one(*c, *l.cq);
  EXPECT_EQ(s.status, RHN_CQE_LOC_QP_OP_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, RHN_SYN_BAD_OPCODE);
  EXPECT_EQ(inbox.buf.bytes(0, 64), std::vector<uint8_t>(64, 0xee));
  Region own = make_region(*qp_owner, 64, kAllAccess, 2);
  ASSERT_TRUE(l.tgt->post_send(send_wr(2, {own.sge(0, 64)})));
  const Completion t = wait_one(*c, *l.tgt_cq);
  EXPECT_EQ(t.status, RHN_CQE_LOC_QP_OP_ERR) << describe(t);
}

TEST_F(Xrc, BadCreateCommandsAreRefused) {
  // An XRC SRQ needs a domain, and is not also a TM SRQ.
  EXPECT_FALSE(srq_owner->create_xrc_srq(*srq_cq, 0, 4));
  EXPECT_EQ(srq_owner->last.status, RHN_ADMIN_BAD_PARAM);
  // An XRC_RECV QP needs its domain; nothing else takes one.
  QpInit t;
  t.type = RHN_QP_XRC_RECV;
  t.send_cq = srq_cq.get();
  EXPECT_FALSE(qp_owner->create_qp(t));
  auto qcq = qp_owner->create_cq(4);
  ASSERT_TRUE(qcq);
  t.send_cq = qcq.get();
  EXPECT_FALSE(qp_owner->create_qp(t));
  EXPECT_EQ(qp_owner->last.status, RHN_ADMIN_BAD_PARAM);
  QpInit rc;
  rc.send_cq = qcq.get();
  rc.xrcd = kDomain;
  EXPECT_FALSE(qp_owner->create_qp(rc));
  EXPECT_EQ(qp_owner->last.status, RHN_ADMIN_BAD_PARAM);
  QpInit ini;
  ini.type = RHN_QP_XRC_SEND;
  ini.send_cq = qcq.get();
  ini.xrcd = kDomain;
  EXPECT_FALSE(qp_owner->create_qp(ini));
  EXPECT_EQ(qp_owner->last.status, RHN_ADMIN_BAD_PARAM);
  // Nor does an XRC QP use an SRQ of its own.
  auto srq = qp_owner->create_srq(4);
  ASSERT_TRUE(srq);
  ini.xrcd = 0;
  ini.srq = srq.get();
  EXPECT_FALSE(qp_owner->create_qp(ini));
  EXPECT_EQ(qp_owner->last.status, RHN_ADMIN_BAD_PARAM);
  // The NIC says it does XRC.
  EXPECT_TRUE(c->node(1).driver->reg32(RHN_REG_CAPS) & RHN_CAP_XRC);
}

}  // namespace
}  // namespace rhinet::test
