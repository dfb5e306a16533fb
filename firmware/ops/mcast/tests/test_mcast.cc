// SPDX-License-Identifier: BSD-2-Clause
// Sequential multicast (a multicast list): one MCAST_LIST WQE pushes its data
// by area to every endpoint of a destination list; every member gets every
// byte exactly once, through a lossy fabric too, in any PUSH mode; the WQE
// completes once, after the last member, with the first failure if any; a
// bad list is refused before anything is sent.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kQkey = 0x7100;
constexpr uint32_t kAreaId = 9;
constexpr size_t kAreaBytes = 256 * 1024;

class McastList : public ::testing::Test {
 protected:
  void start(size_t nodes, FaultConfig faults = {}) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 64u << 20;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    c->fabric().set_faults(faults);
    for (size_t i = 0; i < nodes; i++) {
      eps.push_back(make_datagram_node(
          *c, uint16_t(i), RHN_QP_ENDPOINT, kQkey,
          {.cq_log_depth = 12, .buf_bytes = kAreaBytes + (64 << 10)}));
      ASSERT_TRUE(eps.back().qp);
      // Every node's area kAreaId: the first kAreaBytes of its buffer.
      ASSERT_TRUE(eps.back()
                      .ctx
                      ->register_area(kAreaId, eps.back().buf.mr,
                                      eps.back().buf.va(), kAreaBytes)
                      .ok());
    }
  }
  // The destination list of `members`, written at `at` of node 0's buffer
  // (past its area).
  void write_list(const std::vector<size_t>& members, size_t at) {
    std::vector<rhn_mcast_dest> list;
    for (size_t n : members) list.push_back({uint16_t(n), 0, eps[n].qp->qpn()});
    eps[0].buf.buf.write(at, list.data(), list.size() * sizeof(list[0]));
  }
  SendWr mcast(uint64_t wr_id, Sge data, uint64_t offset, size_t count,
               size_t list_at) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_MCAST_LIST, {data}, offset, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.mcast.list_addr = eps[0].buf.va(list_at);
    wr.mcast.list_lkey = eps[0].buf.key();
    wr.mcast.count = uint32_t(count);
    return wr;
  }
  std::vector<size_t> everyone_but_0() const {
    std::vector<size_t> v;
    for (size_t i = 1; i < eps.size(); i++) v.push_back(i);
    return v;
  }
  std::unique_ptr<SimCluster> c;
  std::vector<DatagramNode> eps;
};

// The source data: 64 KiB past node 0's area; the list after it.
constexpr size_t kSrc = kAreaBytes;
constexpr size_t kList = kAreaBytes + 32 * 1024;

TEST_F(McastList, EveryMemberGetsEveryByteOnceAndTheWqeCompletesOnce) {
  for (size_t members : {size_t{2}, size_t{8}, size_t{64}}) {
    SCOPED_TRACE(members);
    eps.clear();
    start(members + 1);
    const auto data = pattern(members, 10'000);
    eps[0].buf.buf.write(kSrc, data.data(), data.size());
    write_list(everyone_but_0(), kList);
    CounterSnap tx(c->node(0));
    ASSERT_TRUE(eps[0].qp->post_send(
        mcast(7, eps[0].buf.sge(kSrc, data.size()), 100, members, kList)));
    Completion w = wait_one(*c, *eps[0].cq, 2'000'000'000);
    ASSERT_TRUE(w.ok()) << describe(w);
    EXPECT_EQ(w.opcode, RHN_CQE_OP_MCAST_LIST);
    EXPECT_EQ(w.wr_id, 7u);
    EXPECT_EQ(w.byte_len, data.size());
    c->run_for(1'000'000);
    EXPECT_TRUE(eps[0].cq->poll().empty());  // one CQE for the WQE
    for (size_t n = 1; n <= members; n++)
      EXPECT_EQ(eps[n].buf.buf.bytes(100, data.size()), data) << "node " << n;
    // Three packets per member (10 000 B over a 4 KiB MTU).
    EXPECT_EQ(tx.delta(RHN_CNT_TX_PACKETS) >= 3 * members, true);
  }
}

TEST_F(McastList, ThroughALossyFabricInOrderAfterEarlierPushes) {
  FaultConfig f;
  f.loss = 0.05;
  f.duplicate = 0.05;
  f.reorder = 0.05;
  start(9, f);
  write_list(everyone_but_0(), kList);
  // Ten mcasts of growing versions into the same place: every member ends
  // with the last version (FIFO per member), each WQE completes in order.
  std::vector<uint8_t> last;
  for (uint64_t v = 0; v < 10; v++) {
    last = pattern(100 + v, 6000);
    eps[0].buf.buf.write(kSrc + (v % 2) * 8192, last.data(), last.size());
    ASSERT_TRUE(eps[0].qp->post_send(mcast(
        v, eps[0].buf.sge(kSrc + (v % 2) * 8192, last.size()), 0, 8, kList)));
    if (v % 2) {
      // The other source buffer is reused two WQEs later: wait for this one.
      Completion a = wait_one(*c, *eps[0].cq, 5'000'000'000);
      Completion b = wait_one(*c, *eps[0].cq, 5'000'000'000);
      ASSERT_TRUE(a.ok() && b.ok()) << describe(a) << describe(b);
      EXPECT_EQ(a.wr_id + 1, b.wr_id);
    }
  }
  for (size_t n = 1; n < 9; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(0, last.size()), last) << "node " << n;
}

TEST_F(McastList, PartialModesReachEveryMemberAlikeAndDiffUpdatesTheTwinOnce) {
  start(5);
  write_list(everyone_but_0(), kList);
  // STRIDE: a column of 8-byte values 64 bytes apart, packed at the members.
  SendWr s = mcast(1, eps[0].buf.sge(kSrc, kColumnExtent), 0, 4, kList);
  stride_column(eps[0].buf, kSrc, 0x1000, s);
  ASSERT_TRUE(eps[0].qp->post_send(s));
  Completion w = wait_one(*c, *eps[0].cq);
  ASSERT_TRUE(w.ok()) << describe(w);
  for (size_t n = 1; n < 5; n++) expect_packed_column(eps[n].buf, 0x1000, n);
  // DIFF: against a zero twin, then three bytes changed: every member gets
  // the same three bytes, and only they travel to each.
  AdminResult t = c->node(0).driver->alloc_twin(eps[0].ctx->index(), 8192);
  ASSERT_TRUE(t.ok());
  auto data = pattern(5, 8192);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  auto diff = [&](uint64_t id) {
    SendWr d = mcast(id, eps[0].buf.sge(kSrc, 8192), 16384, 4, kList);
    d.xfer_mode = RHN_XFER_DIFF;
    d.xfer.twin = t.result;
    return d;
  };
  ASSERT_TRUE(eps[0].qp->post_send(diff(2)));
  ASSERT_TRUE(wait_one(*c, *eps[0].cq).ok());
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(16384, 8192), data) << "node " << n;
  for (size_t n = 1; n < 5; n++)
    eps[n].buf.buf.write(16384, std::vector<uint8_t>(8192, 0xee).data(), 8192);
  for (size_t o : {size_t{1}, size_t{4000}, size_t{8191}}) data[o] ^= 0x55;
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  CounterSnap tx(c->node(0));
  ASSERT_TRUE(eps[0].qp->post_send(diff(3)));
  ASSERT_TRUE(wait_one(*c, *eps[0].cq).ok());
  std::vector<uint8_t> want(8192, 0xee);
  for (size_t o : {size_t{1}, size_t{4000}, size_t{8191}}) want[o] = data[o];
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(16384, 8192), want) << "node " << n;
  EXPECT_EQ(tx.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), 4u * (8192 - 3));
  // The twin took the bytes once: the same DIFF again sends nothing.
  for (size_t n = 1; n < 5; n++)
    eps[n].buf.buf.write(16384, std::vector<uint8_t>(8192, 0xee).data(), 8192);
  ASSERT_TRUE(eps[0].qp->post_send(diff(4)));
  ASSERT_TRUE(wait_one(*c, *eps[0].cq).ok());
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(16384, 8192),
              std::vector<uint8_t>(8192, 0xee))
        << "node " << n;
}

TEST_F(McastList, AMemberThatIsGoneFailsTheWqeTheOthersStillGetTheData) {
  start(5);
  write_list(everyone_but_0(), kList);
  c->fabric().set_link(3, false);  // node 3 unreachable
  const auto data = pattern(9, 3000);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  ASSERT_TRUE(eps[0].qp->post_send(
      mcast(1, eps[0].buf.sge(kSrc, data.size()), 0, 4, kList)));
  Completion w = wait_one(*c, *eps[0].cq, 60'000'000'000);
  EXPECT_EQ(w.status, RHN_CQE_RETRY_EXC_ERR) << describe(w);
  EXPECT_EQ(w.opcode, RHN_CQE_OP_MCAST_LIST);
  for (size_t n : {1, 2, 4})
    EXPECT_EQ(eps[n].buf.buf.bytes(0, data.size()), data) << "node " << n;
  // A member whose area key does not exist: REM_ACCESS_ERR for the WQE.
  c->fabric().set_link(3, true);
  ASSERT_TRUE(
      eps[2].ctx->driver().unregister_area(eps[2].ctx->index(), kAreaId).ok());
  ASSERT_TRUE(eps[0].qp->post_send(
      mcast(2, eps[0].buf.sge(kSrc, data.size()), 0, 4, kList)));
  w = wait_one(*c, *eps[0].cq, 60'000'000'000);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(w.wr_id, 2u);
}

TEST_F(McastList, BadListsAreRefusedBeforeAnythingIsSent) {
  start(3);
  const std::vector<rhn_mcast_dest> good = {{1, 0, eps[1].qp->qpn()},
                                            {2, 0, eps[2].qp->qpn()}};
  // Posts `wr` from a fresh endpoint of node 0 (a local error puts its QP
  // in error) whose own buffer holds `list` at 4096, unless `adjust`
  // points the WQE elsewhere.
  int case_no = 0;
  auto expect_refused = [&](std::vector<rhn_mcast_dest> list, auto adjust,
                            uint8_t status) {
    SCOPED_TRACE(++case_no);
    DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
    ASSERT_TRUE(e.qp);
    e.buf.buf.write(4096, list.data(), list.size() * sizeof(list[0]));
    SendWr wr = rdma_wr(1, RHN_OP_MCAST_LIST, {e.buf.sge(0, 100)}, 0, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.mcast.list_addr = e.buf.va(4096);
    wr.mcast.list_lkey = e.buf.key();
    wr.mcast.count = uint32_t(list.size());
    adjust(wr);
    CounterSnap tx(c->node(0));
    ASSERT_TRUE(e.qp->post_send(wr));
    Completion w = wait_one(*c, *e.cq);
    EXPECT_EQ(w.status, status) << describe(w);
    EXPECT_EQ(tx.delta(RHN_CNT_TX_PACKETS), 0u);
  };
  auto none = [](SendWr&) {};
  // The good list works from such an endpoint.
  {
    DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
    e.buf.buf.write(4096, good.data(), good.size() * sizeof(good[0]));
    SendWr wr = rdma_wr(1, RHN_OP_MCAST_LIST, {e.buf.sge(0, 100)}, 0, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.mcast = {e.buf.va(4096), e.buf.key(), 2, {}};
    ASSERT_TRUE(e.qp->post_send(wr));
    Completion w = wait_one(*c, *e.cq);
    EXPECT_TRUE(w.ok()) << describe(w);
  }
  expect_refused(
      good, [](SendWr& w) { w.flags = RHN_WQE_F_SIGNALED; },
      RHN_CQE_LOC_QP_OP_ERR);  // not by area
  expect_refused(
      good, [](SendWr& w) { w.mcast.count = 0; }, RHN_CQE_LOC_QP_OP_ERR);
  expect_refused(
      good, [](SendWr& w) { w.mcast.count = RHN_MCAST_MAX_DESTS + 1; },
      RHN_CQE_LOC_QP_OP_ERR);
  expect_refused(
      good, [](SendWr& w) { w.mcast.list_lkey ^= 0x100; },
      RHN_CQE_LOC_PROT_ERR);
  // Another process's list (its key; this QP's PD differs).
  expect_refused(
      good,
      [&](SendWr& w) {
        w.mcast.list_addr = eps[1].buf.va(0);
        w.mcast.list_lkey = eps[1].buf.key();
      },
      RHN_CQE_LOC_PROT_ERR);
  // A destination that is a multicast ID, past max_nodes (4096), reserved
  // bits set: the whole WQE is refused, not one packet leaves.
  expect_refused({good[0], {uint16_t(RHN_NODE_MCAST_FIRST), 0, 1}}, none,
                 RHN_CQE_LOC_QP_OP_ERR);
  expect_refused({good[0], {4096, 0, 1}}, none, RHN_CQE_LOC_QP_OP_ERR);
  expect_refused({{1, 1, eps[1].qp->qpn()}}, none, RHN_CQE_LOC_QP_OP_ERR);
  // Not an endpoint: an RC QP refuses the opcode.
  RcPair p = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region r = make_region(*p.ctx_a, 8192);
  r.buf.write(4096, good.data(), good.size() * sizeof(good[0]));
  SendWr rc = rdma_wr(1, RHN_OP_MCAST_LIST, {r.sge(0, 8)}, 0, kAreaId,
                      RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  rc.mcast = {r.va(4096), r.key(), 2, {}};
  ASSERT_TRUE(p.qp_a->post_send(rc));
  Completion w = wait_one(*c, *p.cq_a);
  EXPECT_EQ(w.status, RHN_CQE_LOC_QP_OP_ERR) << describe(w);
}

// The endpoint destroyed while its multicast list is half way through the list:
// nothing is left behind (the next endpoint's mcast works), no CQE lost.
TEST_F(McastList, AnEndpointResetMidListFlushesTheWqeOnce) {
  FaultConfig f;
  f.loss = 0.3;  // slow: the WQE is still going when the reset comes
  start(9, f);
  write_list(everyone_but_0(), kList);
  ASSERT_TRUE(eps[0].qp->post_send(
      mcast(1, eps[0].buf.sge(kSrc, 20'000), 0, 8, kList)));
  c->run_for(200'000);
  rhn_admin_modify_qp m{};
  m.qpn = eps[0].qp->qpn();
  m.attr_mask = RHN_QP_ATTR_STATE;
  m.state = RHN_QPS_ERR;
  ASSERT_TRUE(eps[0].qp->modify(m).ok());
  auto v = c->wait_cqes(*eps[0].cq, 1, 5'000'000'000);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].wr_id, 1u);
  EXPECT_EQ(v[0].status, RHN_CQE_WR_FLUSH_ERR) << describe(v);
  c->run_for(100'000'000);
  EXPECT_TRUE(eps[0].cq->poll().empty());
}

}  // namespace
}  // namespace rhinet::test
