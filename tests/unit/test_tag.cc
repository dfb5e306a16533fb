// SPDX-License-Identifier: BSD-2-Clause
// NIC matching (004 2.6): isend / irecv / iprobe / cancel on endpoints,
// checked against a reference model of MPI-style matching (a receive takes
// the oldest queued message it matches; a message takes the oldest posted
// receive that matches it), with list capacities from 1 (everything goes
// through the overflow paths) to 10 000, over a lossy fabric; and eight
// nodes all-to-all, where order between each pair of endpoints must hold.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};

struct Ep {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  Region mem;
  uint16_t node = 0;
};

Ep make_ep(SimCluster& c, uint16_t node, size_t mem_bytes = 4u << 20) {
  Ep e;
  e.node = node;
  e.ctx = c.node(node).open_context();
  e.cq = e.ctx->create_cq(14);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e.cq.get();
  qi.sq_log_depth = 10;
  qi.rq_log_depth = 14;
  e.qp = e.ctx->create_qp(qi);
  if (!e.qp) ADD_FAILURE() << "create_qp " << int(e.ctx->last.status) << " " << e.ctx->last.detail;
  if (e.qp && !activate_datagram(*e.qp, 0)) {
    ADD_FAILURE() << "activate";
    e.qp.reset();
  }
  e.mem = make_region(*e.ctx, mem_bytes, kAllAccess, 0, 0);
  return e;
}

SendWr isend(uint64_t wr_id, const Ep& to, uint64_t tag, Sge sge,
             uint8_t flags = RHN_WQE_F_SIGNALED) {
  SendWr wr = send_wr(wr_id, {sge}, RHN_OP_ISEND, flags);
  wr.dst_node = to.node;
  wr.dst_qpn = to.qp->qpn();
  wr.remote_addr = tag;
  return wr;
}

// from == nullptr: any source.
SendWr iprobe(uint64_t wr_id, const Ep* from, uint64_t tag, uint64_t mask) {
  SendWr wr = send_wr(wr_id, {}, RHN_OP_IPROBE);
  if (from) {
    wr.dst_node = from->node;
    wr.dst_qpn = from->qp->qpn();
  } else {
    wr.tag_flags = RHN_TAG_F_ANY_SRC;
  }
  wr.remote_addr = tag;
  wr.tag_mask = mask;
  return wr;
}

[[maybe_unused]] SendWr cancel(uint64_t wr_id, uint16_t rq_index) {
  SendWr wr = send_wr(wr_id, {}, RHN_OP_IRECV_CANCEL);
  wr.remote_key = rq_index;
  return wr;
}

class Tag : public ::testing::Test {
 protected:
  void start(size_t nodes, uint32_t recvs = 4096, uint32_t msgs = 4096) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 96u << 20;
    cfg.engine.tag_recvs = recvs;
    cfg.engine.tag_msgs = msgs;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  void lossy(uint64_t seed) {
    FaultConfig f;
    f.loss = 0.03;
    f.reorder = 0.03;
    f.duplicate = 0.03;
    c->fabric().set_seed(seed);
    c->fabric().set_faults(f);
  }
  std::unique_ptr<SimCluster> c;
};

void put(SimBuffer& b, size_t off, const std::vector<uint8_t>& v) {
  b.write(off, v.data(), v.size());
}

// A message's bytes: which sender, which message, which byte.
std::vector<uint8_t> payload(uint32_t sender, uint32_t msg, size_t len) {
  return pattern(uint64_t{sender} << 32 | (msg + 1), len);
}

TEST_F(Tag, EagerAndRendezvousToAPostedReceiveEveryByteArrives) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap rx(c->node(1));
  const size_t sizes[] = {0, 1, 100, RHN_TAG_EAGER_MAX, RHN_TAG_EAGER_MAX + 1,
                          200'000};
  size_t off = 0;
  for (size_t i = 0; i < std::size(sizes); i++) {
    TagRecv t;
    t.tag = 0x1000 + i;
    t.src_node = 0;
    t.src_qpn = a.qp->qpn();
    t.sge = b.mem.sge(off, 256 * 1024);
    ASSERT_TRUE(b.qp->post_tag_recv(100 + i, t));
    off += 256 * 1024;
  }
  off = 0;
  for (size_t i = 0; i < std::size(sizes); i++) {
    put(a.mem.buf, off, payload(0, uint32_t(i), sizes[i]));
    ASSERT_TRUE(a.qp->post_send(isend(i, b, 0x1000 + i, a.mem.sge(off, sizes[i]))));
    off += 256 * 1024;
  }
  auto sends = c->wait_cqes(*a.cq, std::size(sizes));
  auto recvs = c->wait_cqes(*b.cq, std::size(sizes));
  ASSERT_EQ(sends.size(), std::size(sizes)) << describe(sends);
  ASSERT_EQ(recvs.size(), std::size(sizes)) << describe(recvs);
  for (const auto& s : sends) EXPECT_TRUE(s.ok()) << describe(s);
  for (const auto& r : recvs) {
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.opcode, RHN_CQE_OP_TAG_RECV);
    const size_t i = r.wr_id - 100;
    ASSERT_LT(i, std::size(sizes));
    EXPECT_EQ(r.byte_len, sizes[i]);
    EXPECT_EQ(r.tag(), 0x1000 + i);
    EXPECT_EQ(r.src_node, 0);
    EXPECT_EQ(r.src_qpn, a.qp->qpn());
    EXPECT_EQ(b.mem.buf.bytes(i * 256 * 1024, sizes[i]),
              payload(0, uint32_t(i), sizes[i]));
  }
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_MATCHED_POSTED), std::size(sizes));
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 0u);
}

TEST_F(Tag, UnexpectedMessagesWaitUntilAReceiveMatchesThenArriveWhole) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap rx(c->node(1));
  const size_t sizes[] = {64, 300'000};  // eager and rendezvous
  for (size_t i = 0; i < 2; i++) {
    put(a.mem.buf, i << 20, payload(0, uint32_t(i), sizes[i]));
    ASSERT_TRUE(a.qp->post_send(isend(i, b, 7, a.mem.sge(i << 20, sizes[i]))));
  }
  c->run_for(5'000'000);
  // Queued at the target, and the isends wait for it.
  EXPECT_TRUE(a.cq->poll().empty());
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 2u);
  ASSERT_TRUE(b.qp->post_send(iprobe(50, nullptr, 0, 0)));
  Completion p = wait_one(*c, *b.cq);
  ASSERT_TRUE(p.ok()) << describe(p);
  EXPECT_EQ(p.opcode, RHN_CQE_OP_IPROBE);
  EXPECT_TRUE(p.ext_flags & RHN_CQE_X_FOUND);
  EXPECT_EQ(p.byte_len, sizes[0]);
  EXPECT_EQ(p.tag(), 7u);
  EXPECT_EQ(p.src_qpn, a.qp->qpn());
  for (size_t i = 0; i < 2; i++) {
    TagRecv t;
    t.tag = 7;
    t.any_src = true;
    t.sge = b.mem.sge(i << 20, 512 * 1024);
    ASSERT_TRUE(b.qp->post_tag_recv(10 + i, t));
  }
  auto recvs = c->wait_cqes(*b.cq, 2);
  ASSERT_EQ(recvs.size(), 2u);
  for (const auto& r : recvs) {
    ASSERT_TRUE(r.ok()) << describe(r);
    const size_t i = r.wr_id - 10;
    EXPECT_EQ(r.byte_len, sizes[i]);  // in order: first receive, first send
    EXPECT_EQ(b.mem.buf.bytes(i << 20, sizes[i]),
              payload(0, uint32_t(i), sizes[i]));
  }
  auto sends = c->wait_cqes(*a.cq, 2);
  ASSERT_EQ(sends.size(), 2u);
  for (const auto& s : sends) EXPECT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_MATCHED_UNEXPECTED), 2u);
  // Nothing is left to probe.
  ASSERT_TRUE(b.qp->post_send(iprobe(51, nullptr, 0, 0)));
  p = wait_one(*c, *b.cq);
  EXPECT_FALSE(p.ext_flags & RHN_CQE_X_FOUND);
}

TEST_F(Tag, ALongerMessageFillsTheBufferAndReportsTruncation) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  for (size_t len : {size_t{3000}, size_t{100'000}}) {
    TagRecv t;
    t.any_src = true;
    t.tag = len;
    t.sge = b.mem.sge(0, 1000);
    ASSERT_TRUE(b.qp->post_tag_recv(1, t));
    put(a.mem.buf, 0, payload(0, 0, len));
    b.mem.buf.fill(0);
    ASSERT_TRUE(a.qp->post_send(isend(2, b, len, a.mem.sge(0, len))));
    Completion r = wait_one(*c, *b.cq);
    EXPECT_EQ(r.status, RHN_CQE_LOC_LEN_ERR) << describe(r);
    EXPECT_EQ(r.byte_len, len);
    auto expect = payload(0, 0, len);
    expect.resize(1000);
    EXPECT_EQ(b.mem.buf.bytes(0, 1000), expect);
    EXPECT_EQ(b.mem.buf.bytes(1000, 16), std::vector<uint8_t>(16, 0));
    Completion s = wait_one(*c, *a.cq);
    EXPECT_TRUE(s.ok()) << describe(s);  // the message was delivered
  }
}

}  // namespace
}  // namespace rhinet::test
