// SPDX-License-Identifier: BSD-2-Clause
// ibverbs tag matching on TM SRQs (IBV_SRQT_TM, ops/tm): RC QPs whose SRQ
// keeps a tag list that software edits with list operations; SENDs that
// start with ibverbs' tag-matching header land in a matching entry's
// buffer (eager), are read by the receiving NIC from the sender's memory
// (rendezvous, then a FIN to the sender), or take a receive WQE of the SRQ
// (unexpected, counted for phase synchronisation; NO_TAG).
#include <algorithm>
#include <cstring>
#include <map>

#include "rhinet/sim/pinhost.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};
constexpr size_t kTmh = 16;

void put_be(std::vector<uint8_t>& v, size_t at, uint64_t x, int n) {
  for (int i = n - 1; i >= 0; i--, x >>= 8) v[at + i] = uint8_t(x);
}

uint64_t get_be(const std::vector<uint8_t>& v, size_t at, int n) {
  uint64_t x = 0;
  for (int i = 0; i < n; i++) x = x << 8 | v[at + i];
  return x;
}

// ibverbs' struct ibv_tmh (big-endian), then `data`.
std::vector<uint8_t> tm_message(uint8_t op, uint32_t app_ctx, uint64_t tag,
                                const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> m(kTmh, 0);
  m[0] = op;
  put_be(m, 4, app_ctx, 4);
  put_be(m, 8, tag, 8);
  m.insert(m.end(), data.begin(), data.end());
  return m;
}

// A rendezvous request: tmh, then struct ibv_rvh, then `extra` bytes.
std::vector<uint8_t> rndv_message(uint32_t app_ctx, uint64_t tag, uint64_t va,
                                  uint32_t rkey, uint32_t len,
                                  size_t extra = 0) {
  std::vector<uint8_t> m = tm_message(RHN_TMH_RNDV, app_ctx, tag);
  m.resize(kTmh + 16 + extra, 0xee);
  put_be(m, 16, va, 8);
  put_be(m, 24, rkey, 4);
  put_be(m, 28, len, 4);
  return m;
}

TmOp add_op(uint64_t wr_id, uint16_t handle, uint64_t tag, Sge sge,
            uint64_t recv_wr_id, uint64_t mask = kAll,
            uint8_t flags = RHN_TM_OP_F_SIGNALED) {
  TmOp op;
  op.wr_id = wr_id;
  op.opcode = RHN_TM_OP_ADD;
  op.flags = flags;
  op.handle = handle;
  op.tag = tag;
  op.mask = mask;
  op.sge = sge;
  op.recv_wr_id = recv_wr_id;
  return op;
}

TmOp del_op(uint64_t wr_id, uint16_t handle,
            uint8_t flags = RHN_TM_OP_F_SIGNALED) {
  TmOp op;
  op.wr_id = wr_id;
  op.opcode = RHN_TM_OP_DEL;
  op.flags = flags;
  op.handle = handle;
  return op;
}

TmOp sync_op(uint64_t wr_id, uint32_t unexpected_cnt) {
  TmOp op;
  op.wr_id = wr_id;
  op.opcode = RHN_TM_OP_SYNC;
  op.flags = RHN_TM_OP_F_SIGNALED | RHN_TM_OP_F_SYNC;
  op.unexpected_cnt = unexpected_cnt;
  return op;
}

// The receiving side: one context, one CQ for everything, a TM SRQ, and
// the RC QPs that use it.
struct Receiver {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimSrq> srq;
  std::vector<std::unique_ptr<SimQp>> qps;
  Region mem;
  uint16_t node = 0;
};

// A sending side: its own context, CQ, RC QP (with an RQ, for the FIN).
struct Sender {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  Region mem;
  uint16_t node = 0;
};

class Tm : public ::testing::Test {
 protected:
  void start(size_t nodes, uint32_t recvs = 4096) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 128u << 20;
    cfg.engine.tag.recvs = recvs;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  void lossy(uint64_t seed) { make_lossy(*c, seed); }

  Receiver receiver(uint16_t node, uint32_t max_tags = 64) {
    Receiver r;
    r.node = node;
    r.ctx = c->node(node).open_context();
    r.cq = r.ctx->create_cq(12);
    r.srq = r.ctx->create_tm_srq(*r.cq, max_tags, 8, 7);
    if (!r.srq)
      ADD_FAILURE() << "create_tm_srq " << int(r.ctx->last.status) << " "
                    << r.ctx->last.detail;
    r.mem = make_region(*r.ctx, 8u << 20, kAllAccess, 0, 0);
    return r;
  }

  // A sender on `node` connected to a new QP of `r` (on r's TM SRQ).
  Sender connect(Receiver& r, uint16_t node) {
    Sender s;
    s.node = node;
    s.ctx = c->node(node).open_context();
    s.cq = s.ctx->create_cq(12);
    s.mem = make_region(*s.ctx, 8u << 20, kAllAccess, 0, 0);
    QpInit qi;
    qi.send_cq = s.cq.get();
    s.qp = s.ctx->create_qp(qi);
    qi.send_cq = r.cq.get();
    qi.srq = r.srq.get();
    auto rq = r.ctx->create_qp(qi);
    if (!s.qp || !rq) {
      ADD_FAILURE() << "create_qp";
      return s;
    }
    RcOptions o;
    EXPECT_TRUE(connect_rc(*s.qp, r.node, rq->qpn(), o));
    EXPECT_TRUE(connect_rc(*rq, node, s.qp->qpn(), o));
    r.qps.push_back(std::move(rq));
    return s;
  }

  // Sends `msg` (written at `off` of the sender's memory).
  void send(Sender& s, uint64_t wr_id, const std::vector<uint8_t>& msg,
            size_t off = 0) {
    s.mem.buf.write(off, msg.data(), msg.size());
    ASSERT_TRUE(s.qp->post_send(send_wr(wr_id, {s.mem.sge(off, msg.size())})));
  }

  // Posts a list operation and waits for its CQE.
  Completion op(SimSrq& srq, SimCq& cq, const TmOp& o) {
    EXPECT_TRUE(srq.post_tm_op(o));
    return wait_one(*c, cq);
  }
  Completion op(Receiver& r, const TmOp& o) { return op(*r.srq, *r.cq, o); }

  std::unique_ptr<SimCluster> c;
};

TEST_F(Tm, ExpectedEagerLandsPastTheHeaderEveryByte) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  CounterSnap rx(c->node(1));
  const size_t sizes[] = {0, 1, 4000, 4080, 4081, 100'000};
  for (size_t i = 0; i < std::size(sizes); i++) {
    Completion a = op(r, add_op(50 + i, uint16_t(i), 0x7000 + i,
                                r.mem.sge(i * 131072, 131072), 100 + i));
    ASSERT_TRUE(a.ok()) << describe(a);
    EXPECT_EQ(a.opcode, RHN_CQE_OP_TM_ADD);
    EXPECT_EQ(a.wr_id, 50 + i);
    EXPECT_EQ(a.qpn, r.srq->srqn());
    EXPECT_EQ(a.ext_flags, 0);
  }
  for (size_t i = 0; i < std::size(sizes); i++)
    send(s, i,
         tm_message(RHN_TMH_EAGER, 0xa0 + uint32_t(i), 0x7000 + i,
                    pattern(i + 1, sizes[i])),
         i * 131072);
  auto sends = c->wait_cqes(*s.cq, std::size(sizes));
  ASSERT_EQ(sends.size(), std::size(sizes));
  for (const auto& e : sends) EXPECT_TRUE(e.ok()) << describe(e);
  auto got = c->wait_cqes(*r.cq, std::size(sizes));
  ASSERT_EQ(got.size(), std::size(sizes)) << describe(got);
  for (const auto& e : got) {
    ASSERT_TRUE(e.ok()) << describe(e);
    EXPECT_EQ(e.opcode, RHN_CQE_OP_TM_RECV);
    EXPECT_EQ(e.ext_flags, RHN_CQE_X_TM_MATCH | RHN_CQE_X_TM_DATA_VALID);
    const size_t i = e.wr_id - 100;
    ASSERT_LT(i, std::size(sizes));
    EXPECT_EQ(e.wqe_index, i);  // the handle
    EXPECT_EQ(e.qpn, r.qps[0]->qpn());
    EXPECT_EQ(e.tag(), 0x7000 + i);
    EXPECT_EQ(e.src_qpn, 0xa0 + i);  // app_ctx
    EXPECT_EQ(e.byte_len, sizes[i]);
    EXPECT_EQ(r.mem.buf.bytes(i * 131072, sizes[i]), pattern(i + 1, sizes[i]))
        << "message " << i;
  }
  EXPECT_EQ(rx.delta(RHN_CNT_TM_EXPECTED), std::size(sizes));
  EXPECT_EQ(rx.delta(RHN_CNT_TM_UNEXPECTED), 0u);
}

TEST_F(Tm, TheOldestMatchingEntryTakesAMessageMasksIncluded) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  // Handle 0: any tag with low byte 0x34; 1: exactly 0x1234; 2: 0x1234.
  ASSERT_TRUE(op(r, add_op(1, 0, 0x34, r.mem.sge(0, 64), 10, 0xff)).ok());
  ASSERT_TRUE(op(r, add_op(2, 1, 0x1234, r.mem.sge(64, 64), 11)).ok());
  ASSERT_TRUE(op(r, add_op(3, 2, 0x1234, r.mem.sge(128, 64), 12)).ok());
  for (uint32_t i = 0; i < 3; i++)
    send(s, i, tm_message(RHN_TMH_EAGER, i, 0x1234, {uint8_t(i)}), i * 64);
  auto got = c->wait_cqes(*r.cq, 3);
  ASSERT_EQ(got.size(), 3u);
  for (uint32_t i = 0; i < 3; i++) {
    EXPECT_EQ(got[i].wr_id, 10u + i) << describe(got[i]);
    EXPECT_EQ(got[i].src_qpn, i);
    EXPECT_EQ(r.mem.buf.bytes(i * 64, 1), std::vector<uint8_t>{uint8_t(i)});
  }
}

TEST_F(Tm, UnexpectedMessagesTakeSrqWqesUntilSoftwareSyncs) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  CounterSnap rx(c->node(1));
  for (uint64_t i = 0; i < 8; i++)
    ASSERT_TRUE(r.srq->post_recv(900 + i, {r.mem.sge((1 + i) << 16, 65536)}));
  // No entry: the whole message, header included, takes an SRQ WQE.
  const auto m1 = tm_message(RHN_TMH_EAGER, 7, 5, pattern(1, 9000));
  send(s, 1, m1);
  Completion u = wait_one(*c, *r.cq);
  ASSERT_TRUE(u.ok()) << describe(u);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_UNEXPECTED);
  EXPECT_EQ(u.wr_id, 900u);
  EXPECT_EQ(u.byte_len, m1.size());
  EXPECT_EQ(r.mem.buf.bytes(1 << 16, m1.size()), m1);
  // Software has not seen it yet (count 0): an entry it adds now matches
  // nothing, and the ADD says so.
  Completion a = op(r, add_op(20, 0, 5, r.mem.sge(0, 65536), 30));
  ASSERT_TRUE(a.ok()) << describe(a);
  EXPECT_TRUE(a.ext_flags & RHN_CQE_X_TM_SYNC_REQ);
  const auto m2 = tm_message(RHN_TMH_EAGER, 8, 5, pattern(2, 100));
  send(s, 2, m2, 65536);
  u = wait_one(*c, *r.cq);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_UNEXPECTED) << describe(u);
  EXPECT_EQ(u.wr_id, 901u);
  EXPECT_EQ(r.mem.buf.bytes(2 << 16, m2.size()), m2);
  // A NO_TAG message goes to software too, uncounted.
  const auto m3 = tm_message(RHN_TMH_NO_TAG, 9, 5, pattern(3, 50));
  send(s, 3, m3, 2 * 65536);
  u = wait_one(*c, *r.cq);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_NO_TAG) << describe(u);
  EXPECT_EQ(r.mem.buf.bytes(3 << 16, m3.size()), m3);
  // So does a message too short for a header.
  send(s, 4, {1, 2, 3}, 3 * 65536);
  u = wait_one(*c, *r.cq);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_NO_TAG) << describe(u);
  EXPECT_EQ(u.byte_len, 3u);
  // Software reports one of the two: still out of step.
  Completion y = op(r, sync_op(40, 1));
  EXPECT_EQ(y.opcode, RHN_CQE_OP_TM_SYNC);
  EXPECT_TRUE(y.ext_flags & RHN_CQE_X_TM_SYNC_REQ);
  send(s, 5, tm_message(RHN_TMH_EAGER, 10, 5, pattern(4, 10)), 4 * 65536);
  u = wait_one(*c, *r.cq);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_UNEXPECTED) << describe(u);
  // Both now (three unexpected so far): in step, and the entry matches.
  y = op(r, sync_op(41, 3));
  ASSERT_TRUE(y.ok()) << describe(y);
  EXPECT_EQ(y.wr_id, 41u);
  EXPECT_EQ(y.ext_flags, 0);
  send(s, 6, tm_message(RHN_TMH_EAGER, 11, 5, pattern(5, 77)), 5 * 65536);
  Completion e = wait_one(*c, *r.cq);
  ASSERT_TRUE(e.ok()) << describe(e);
  EXPECT_EQ(e.opcode, RHN_CQE_OP_TM_RECV);
  EXPECT_EQ(e.wr_id, 30u);
  EXPECT_EQ(e.src_qpn, 11u);
  EXPECT_EQ(r.mem.buf.bytes(0, 77), pattern(5, 77));
  EXPECT_EQ(rx.delta(RHN_CNT_TM_UNEXPECTED), 3u);
  EXPECT_EQ(rx.delta(RHN_CNT_TM_EXPECTED), 1u);
}

TEST_F(Tm, AnUnexpectedMessageWithoutAnSrqWqeWaitsForOne) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  const auto m = tm_message(RHN_TMH_EAGER, 1, 77, pattern(9, 5000));
  send(s, 1, m);
  c->run_for(2'000'000);
  EXPECT_TRUE(r.cq->poll().empty());  // RNR: nowhere to put it yet
  EXPECT_TRUE(s.cq->poll().empty());
  ASSERT_TRUE(r.srq->post_recv(5, {r.mem.sge(0, 8192)}));
  Completion u = wait_one(*c, *r.cq, 200'000'000);
  ASSERT_TRUE(u.ok()) << describe(u);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_UNEXPECTED);
  EXPECT_EQ(r.mem.buf.bytes(0, m.size()), m);
  EXPECT_TRUE(wait_one(*c, *s.cq).ok());
}

TEST_F(Tm, RendezvousIsReadFromTheSenderEveryByteThenTheSenderGetsAFin) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  CounterSnap rx(c->node(1));
  constexpr size_t kLen = 300'000;
  const auto data = pattern(42, kLen);
  s.mem.buf.write(1 << 20, data.data(), kLen);
  ASSERT_TRUE(op(r, add_op(1, 9, 0xbeef, r.mem.sge(0, 1 << 20), 77)).ok());
  send(s, 2,
       rndv_message(0x5151, 0xbeef, s.mem.va(1 << 20), s.mem.key(), kLen, 8));
  // The sender's QP has no receive for the FIN yet.
  Completion m = wait_one(*c, *r.cq);
  ASSERT_TRUE(m.ok()) << describe(m);
  EXPECT_EQ(m.opcode, RHN_CQE_OP_TM_RECV);
  EXPECT_EQ(m.ext_flags, RHN_CQE_X_TM_MATCH);
  EXPECT_EQ(m.wr_id, 77u);
  EXPECT_EQ(m.byte_len, kLen);
  EXPECT_EQ(m.tag(), 0xbeefu);
  Completion d = wait_one(*c, *r.cq, 200'000'000);
  ASSERT_TRUE(d.ok()) << describe(d);
  EXPECT_EQ(d.opcode, RHN_CQE_OP_TM_RECV);
  EXPECT_EQ(d.ext_flags, RHN_CQE_X_TM_DATA_VALID);
  EXPECT_EQ(d.wr_id, 77u);
  EXPECT_EQ(d.byte_len, kLen);
  EXPECT_EQ(d.src_qpn, 0x5151u);
  EXPECT_EQ(r.mem.buf.bytes(0, kLen), data);
  EXPECT_EQ(rx.delta(RHN_CNT_TM_RNDV_READS), 1u);
  Completion sent = wait_one(*c, *s.cq);
  EXPECT_TRUE(sent.ok() && sent.is_send()) << describe(sent);
  // The FIN waits for a receive (RNR, sent again), then arrives.
  c->run_for(3'000'000);
  EXPECT_TRUE(s.cq->poll().empty());
  ASSERT_TRUE(s.qp->post_recv(500, {s.mem.sge(0, 64)}));
  Completion fin = wait_one(*c, *s.cq, 100'000'000);
  ASSERT_TRUE(fin.ok()) << describe(fin);
  EXPECT_EQ(fin.opcode, RHN_CQE_OP_RECV);
  EXPECT_EQ(fin.wr_id, 500u);
  EXPECT_EQ(fin.byte_len, kTmh);
  EXPECT_EQ(fin.src_qpn, r.qps[0]->qpn());
  const auto hdr = s.mem.buf.bytes(0, kTmh);
  EXPECT_EQ(hdr[0], RHN_TMH_FIN);
  EXPECT_EQ(get_be(hdr, 4, 4), 0x5151u);
  EXPECT_EQ(get_be(hdr, 8, 8), 0xbeefu);
}

// The sender's buffer is on-demand memory (mapped, not pinned): the
// rendezvous read reaches unpinned pages, its host pins them (one event
// for the whole range) while the receiving NIC asks again, and every byte
// arrives.
TEST_F(Tm, ARendezvousFromOnDemandMemoryIsPinnedThenRead) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  SimPinHost host(c->node(0));
  constexpr size_t kLen = 700'000;
  SimBuffer mem = s.ctx->alloc(kLen);
  ASSERT_TRUE(mem.valid());
  const auto data = pattern(43, kLen);
  mem.write(0, data.data(), kLen);
  MrOptions opt;
  opt.on_demand = true;
  SimMr mr = s.ctx->reg_mr(mem, kAllAccess, {}, opt);
  ASSERT_TRUE(mr.ok());
  host.add(mr);
  CounterSnap tx(c->node(0));
  ASSERT_TRUE(op(r, add_op(1, 9, 0xcafe, r.mem.sge(0, 1 << 20), 78)).ok());
  send(s, 2, rndv_message(0x6161, 0xcafe, mem.va(), mr.key, kLen, 8));
  Completion m = wait_one(*c, *r.cq);
  ASSERT_TRUE(m.ok()) << describe(m);
  Completion d = wait_one(*c, *r.cq, 500'000'000);
  ASSERT_TRUE(d.ok()) << describe(d);
  EXPECT_EQ(d.ext_flags, RHN_CQE_X_TM_DATA_VALID);
  EXPECT_EQ(d.byte_len, kLen);
  EXPECT_EQ(r.mem.buf.bytes(0, kLen), data);
  EXPECT_EQ(tx.delta(RHN_CNT_PIN_EVENTS), 1u);
  EXPECT_EQ(host.pinned(mr), (kLen + 4095) / 4096);
  host.remove(mr);
}

TEST_F(Tm, ARendezvousLongerThanTheBufferFillsItAndReportsTruncation) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  const auto data = pattern(8, 50'000);
  s.mem.buf.write(65536, data.data(), data.size());
  ASSERT_TRUE(op(r, add_op(1, 0, 3, r.mem.sge(0, 20'000), 70)).ok());
  send(s, 1, rndv_message(4, 3, s.mem.va(65536), s.mem.key(), 50'000));
  Completion m = wait_one(*c, *r.cq);
  EXPECT_EQ(m.byte_len, 20'000u) << describe(m);
  Completion d = wait_one(*c, *r.cq, 100'000'000);
  EXPECT_EQ(d.status, RHN_CQE_LOC_LEN_ERR) << describe(d);
  EXPECT_EQ(d.ext_flags, RHN_CQE_X_TM_DATA_VALID);
  EXPECT_EQ(d.byte_len, 20'000u);
  EXPECT_EQ(r.mem.buf.bytes(0, 20'000),
            std::vector<uint8_t>(data.begin(), data.begin() + 20'000));
  EXPECT_EQ(r.mem.buf.bytes(20'000, 64), std::vector<uint8_t>(64, 0));
}

TEST_F(Tm, ARendezvousTheNicDoesNotExecuteIsSoftwares) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  ASSERT_TRUE(op(r, add_op(1, 0, 3, r.mem.sge(0, 4096), 70)).ok());
  // Longer than RHN_TM_MAX_RNDV_HDR: what follows the tmh lands.
  const auto big = rndv_message(4, 3, 0x1000, 0x77, 99, 100);
  send(s, 1, big);
  Completion e = wait_one(*c, *r.cq);
  EXPECT_EQ(e.status, RHN_CQE_TM_RNDV_INCOMPLETE) << describe(e);
  EXPECT_EQ(e.ext_flags, RHN_CQE_X_TM_MATCH | RHN_CQE_X_TM_DATA_VALID);
  EXPECT_EQ(e.wr_id, 70u);
  EXPECT_EQ(e.byte_len, big.size() - kTmh);
  EXPECT_EQ(r.mem.buf.bytes(0, big.size() - kTmh),
            std::vector<uint8_t>(big.begin() + kTmh, big.end()));
}

TEST_F(Tm, AFailedRendezvousReadCompletesTheEntryInError) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  ASSERT_TRUE(op(r, add_op(1, 0, 3, r.mem.sge(0, 65536), 70)).ok());
  send(s, 1, rndv_message(4, 3, s.mem.va(0), s.mem.key() + 0x100, 1000));
  Completion m = wait_one(*c, *r.cq);
  EXPECT_EQ(m.ext_flags, RHN_CQE_X_TM_MATCH) << describe(m);
  Completion d = wait_one(*c, *r.cq, 100'000'000);
  EXPECT_EQ(d.opcode, RHN_CQE_OP_TM_RECV) << describe(d);
  EXPECT_EQ(d.status, RHN_CQE_REM_ACCESS_ERR) << describe(d);
  EXPECT_EQ(d.wr_id, 70u);
}

TEST_F(Tm, RemoveTakesAnEntryOutAndFailsOnceItMatched) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  ASSERT_TRUE(r.srq->post_recv(900, {r.mem.sge(1 << 20, 65536)}));
  ASSERT_TRUE(op(r, add_op(1, 3, 0x33, r.mem.sge(0, 4096), 30)).ok());
  ASSERT_TRUE(op(r, add_op(2, 4, 0x44, r.mem.sge(4096, 4096), 40)).ok());
  Completion d = op(r, del_op(3, 3));
  ASSERT_TRUE(d.ok()) << describe(d);
  EXPECT_EQ(d.opcode, RHN_CQE_OP_TM_DEL);
  EXPECT_EQ(d.wr_id, 3u);
  // Removed: its tag goes to software.
  send(s, 1, tm_message(RHN_TMH_EAGER, 0, 0x33, {1}));
  Completion u = wait_one(*c, *r.cq);
  EXPECT_EQ(u.opcode, RHN_CQE_OP_TM_UNEXPECTED) << describe(u);
  // The other one matches, then cannot be removed any more.
  send(s, 2, tm_message(RHN_TMH_EAGER, 0, 0x44, {2}), 64);
  Completion e = wait_one(*c, *r.cq);
  EXPECT_EQ(e.wr_id, 40u) << describe(e);
  d = op(r, del_op(4, 4, 0));  // unsignaled: a DEL completes all the same
  EXPECT_EQ(d.opcode, RHN_CQE_OP_TM_DEL);
  EXPECT_EQ(d.status, RHN_CQE_TM_ERR) << describe(d);
  EXPECT_EQ(d.wr_id, 4u);
  // The handle is free to add again; an unsignaled DEL that succeeds
  // completes too (software releases the entry on it).
  ASSERT_TRUE(op(r, add_op(5, 3, 0x55, r.mem.sge(0, 4096), 50)).ok());
  d = op(r, del_op(6, 3, 0));
  EXPECT_TRUE(d.ok()) << describe(d);
  EXPECT_EQ(d.wr_id, 6u);
  EXPECT_EQ(r.srq->tm_ops_executed(), r.srq->tm_ops_posted());
}

TEST_F(Tm, MaxNumTagsBoundsHandlesAndAHandleIsAddedOnce) {
  start(2);
  Receiver r = receiver(1, 4);
  CounterSnap rx(c->node(1));
  for (uint16_t h = 0; h < 4; h++)
    ASSERT_TRUE(op(r, add_op(h, h, h, r.mem.sge(h * 64, 64), h)).ok());
  Completion e = op(r, add_op(9, 4, 4, r.mem.sge(0, 64), 9));
  EXPECT_EQ(e.status, RHN_CQE_TM_ERR) << "handle beyond max_tags";
  EXPECT_EQ(e.vendor_err, RHN_SYN_BAD_WQE);
  // With room in the list, a handle in it is still refused (unsignaled,
  // a failing ADD completes all the same).
  ASSERT_TRUE(op(r, del_op(8, 3)).ok());
  e = op(r, add_op(10, 2, 2, r.mem.sge(0, 64), 10, kAll, 0));
  EXPECT_EQ(e.status, RHN_CQE_TM_ERR) << "handle 2 is in the list";
  EXPECT_EQ(e.vendor_err, RHN_SYN_BAD_WQE);
  EXPECT_EQ(e.wr_id, 10u);
  EXPECT_EQ(rx.delta(RHN_CNT_TM_OP_ERRORS), 2u);
  ASSERT_TRUE(op(r, del_op(11, 2)).ok());
  EXPECT_TRUE(op(r, add_op(12, 2, 2, r.mem.sge(0, 64), 12)).ok());
  // A buffer the SRQ's PD cannot write is refused.
  auto other = r.ctx->reg_mr(r.mem.buf, RHN_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(r.ctx->dereg_mr(other).ok());
  ASSERT_TRUE(op(r, del_op(13, 1)).ok());
  e = op(r, add_op(14, 1, 1, Sge{r.mem.va(0), 64, other.key}, 14));
  EXPECT_EQ(e.status, RHN_CQE_LOC_PROT_ERR) << describe(e);
  // max_tags beyond what the NIC gives one list: refused at create.
  auto cq = r.ctx->create_cq(6);
  EXPECT_FALSE(r.ctx->create_tm_srq(*cq, 0));
  EXPECT_FALSE(r.ctx->create_tm_srq(*cq, 0x10000));
}

// The list lives in the matching engine's posted list: a context holds
// its share (4 of 8 here) across all its SRQs, and another context still
// gets its own.
TEST_F(Tm, AFullTagListRefusesAddsAndAContextHoldsOnlyItsShare) {
  start(2, 8);
  Receiver a = receiver(1, 4), b = receiver(1, 4);
  auto cq2 = a.ctx->create_cq(8);
  auto srq2 = a.ctx->create_tm_srq(*cq2, 4);  // a's context, too
  ASSERT_TRUE(srq2);
  for (uint16_t h = 0; h < 2; h++) {
    ASSERT_TRUE(op(a, add_op(h, h, h, a.mem.sge(0, 64), h)).ok());
    ASSERT_TRUE(op(*srq2, *cq2, add_op(h, h, h, a.mem.sge(0, 64), h)).ok());
  }
  Completion e = op(*srq2, *cq2, add_op(4, 2, 4, a.mem.sge(0, 64), 4));
  EXPECT_EQ(e.status, RHN_CQE_TM_ERR);
  EXPECT_EQ(e.vendor_err, RHN_SYN_BUSY);
  e = op(a, add_op(5, 3, 5, a.mem.sge(0, 64), 5));
  EXPECT_EQ(e.status, RHN_CQE_TM_ERR);
  for (uint16_t h = 0; h < 4; h++)
    EXPECT_TRUE(op(b, add_op(h, h, h, b.mem.sge(0, 64), h)).ok()) << h;
  ASSERT_TRUE(op(a, del_op(9, 0)).ok());
  EXPECT_TRUE(op(*srq2, *cq2, add_op(10, 2, 4, a.mem.sge(0, 64), 4)).ok());
}

TEST_F(Tm, TwoQpsShareOneTmSrq) {
  start(3);
  Receiver r = receiver(1);
  Sender s0 = connect(r, 0), s2 = connect(r, 2);
  ASSERT_EQ(r.qps.size(), 2u);
  // Two entries for tag 1, one for tag 2; the older of tag 1 first.
  ASSERT_TRUE(op(r, add_op(1, 0, 1, r.mem.sge(0, 8192), 10)).ok());
  ASSERT_TRUE(op(r, add_op(2, 1, 1, r.mem.sge(8192, 8192), 11)).ok());
  ASSERT_TRUE(op(r, add_op(3, 2, 2, r.mem.sge(16384, 8192), 12)).ok());
  send(s2, 1, tm_message(RHN_TMH_EAGER, 2, 1, pattern(21, 6000)));
  Completion e = wait_one(*c, *r.cq);
  ASSERT_TRUE(e.ok()) << describe(e);
  EXPECT_EQ(e.wr_id, 10u);
  EXPECT_EQ(e.qpn, r.qps[1]->qpn());
  send(s0, 1, tm_message(RHN_TMH_EAGER, 0, 1, pattern(20, 6000)));
  send(s0, 2, tm_message(RHN_TMH_EAGER, 0, 2, pattern(22, 100)), 16384);
  auto v = c->wait_cqes(*r.cq, 2);
  ASSERT_EQ(v.size(), 2u);
  std::sort(v.begin(), v.end(),
            [](auto& x, auto& y) { return x.wr_id < y.wr_id; });
  EXPECT_EQ(v[0].wr_id, 11u);
  EXPECT_EQ(v[1].wr_id, 12u);
  for (const auto& x : v) EXPECT_EQ(x.qpn, r.qps[0]->qpn()) << describe(x);
  EXPECT_EQ(r.mem.buf.bytes(0, 6000), pattern(21, 6000));
  EXPECT_EQ(r.mem.buf.bytes(8192, 6000), pattern(20, 6000));
  EXPECT_EQ(r.mem.buf.bytes(16384, 100), pattern(22, 100));
}

// Eager (one and several packets) and rendezvous messages over a fabric
// that loses, duplicates and reorders frames: each arrives once, whole,
// in its own entry, and the entries of one tag are taken in order.
TEST_F(Tm, OverALossyFabricEveryMessageArrivesOnceAndWhole) {
  for (uint64_t seed : {3u, 11u}) {
    start(2);
    lossy(seed);
    Receiver r = receiver(1, 256);
    Sender s = connect(r, 0);
    for (uint64_t i = 0; i < 16; i++)
      ASSERT_TRUE(
          s.qp->post_recv(1000 + i, {s.mem.sge((7u << 20) + i * 64, 64)}));
    constexpr uint32_t kMsgs = 48;
    auto size_of = [](uint32_t i) -> size_t {
      return i % 3 == 0 ? 50 : i % 3 == 1 ? 20'000 : 70'000;
    };
    for (uint32_t i = 0; i < kMsgs; i++) {
      TmOp a = add_op(i, uint16_t(i), i % 4, r.mem.sge(i * 131072, 131072),
                      100 + i, kAll, 0);
      ASSERT_TRUE(r.srq->write_tm_op(a));
    }
    r.srq->kick_tm_ops();
    for (uint32_t i = 0; i < kMsgs; i++) {
      const size_t len = size_of(i);
      const auto data = pattern(seed * 1000 + i, len);
      const size_t at = i * 131072ull;  // the message, or its header
      if (i % 3 == 2) {  // rendezvous: the data follows the header
        s.mem.buf.write(at + 4096, data.data(), len);
        send(s, i,
             rndv_message(i, i % 4, s.mem.va(at + 4096), s.mem.key(),
                          uint32_t(len)),
             at);
      } else {
        send(s, i, tm_message(RHN_TMH_EAGER, i, i % 4, data), at);
      }
    }
    // 48 data CQEs plus a MATCH CQE per rendezvous.
    auto got = c->wait_cqes(*r.cq, kMsgs + kMsgs / 3, 2'000'000'000);
    ASSERT_EQ(got.size(), kMsgs + kMsgs / 3) << "seed " << seed;
    std::map<uint64_t, int> done;
    for (const auto& e : got) {
      ASSERT_TRUE(e.ok()) << describe(e);
      if (!(e.ext_flags & RHN_CQE_X_TM_DATA_VALID)) continue;
      const uint32_t entry = uint32_t(e.wr_id - 100);
      done[entry]++;
      // Entries of one tag are taken in posting order, messages of one
      // tag in sending order: message `app_ctx` lands in entry app_ctx.
      EXPECT_EQ(e.src_qpn, entry) << describe(e);
      EXPECT_EQ(r.mem.buf.bytes(entry * 131072ull, size_of(entry)),
                pattern(seed * 1000 + entry, size_of(entry)))
          << "seed " << seed << " entry " << entry;
    }
    EXPECT_EQ(done.size(), kMsgs);
    for (auto& [k, n] : done) EXPECT_EQ(n, 1) << k;
    auto fins = c->wait_cqes(*s.cq, kMsgs + kMsgs / 3, 2'000'000'000);
    size_t nfin = 0;
    for (const auto& e : fins) {
      EXPECT_TRUE(e.ok()) << describe(e);
      if (!e.is_send()) nfin++;
    }
    EXPECT_EQ(nfin, kMsgs / 3);
  }
}

// Work in flight when a QP goes: an entry whose data is being read
// completes flushed, late data is dropped, posted entries stay on the
// SRQ (which cannot go while QPs use it) and go with it.
TEST_F(Tm, QpAndSrqDestroyedWithWorkQueued) {
  start(2);
  Receiver r = receiver(1, 8);
  Sender s = connect(r, 0);
  CounterSnap rx(c->node(1));
  constexpr size_t kLen = 2u << 20;
  ASSERT_TRUE(op(r, add_op(1, 0, 1, r.mem.sge(0, kLen), 10)).ok());
  ASSERT_TRUE(op(r, add_op(2, 1, 2, r.mem.sge(0, 64), 11)).ok());
  send(s, 1, rndv_message(1, 1, s.mem.va(0), s.mem.key(), kLen));
  Completion m = wait_one(*c, *r.cq);
  ASSERT_EQ(m.ext_flags, RHN_CQE_X_TM_MATCH) << describe(m);
  // At once: the data is on its way (virtual time moves fast).
  ASSERT_TRUE(r.qps[0]->to_err().ok());
  Completion f = wait_one(*c, *r.cq);
  EXPECT_EQ(f.opcode, RHN_CQE_OP_TM_RECV) << describe(f);
  EXPECT_EQ(f.status, RHN_CQE_WR_FLUSH_ERR);
  EXPECT_EQ(f.wr_id, 10u);
  EXPECT_EQ(r.ctx->driver()
                .destroy(RHN_ADMIN_DESTROY_SRQ, r.ctx->index(), r.srq->srqn())
                .status,
            RHN_ADMIN_BUSY);
  ASSERT_TRUE(
      r.ctx->driver()
          .destroy(RHN_ADMIN_DESTROY_QP, r.ctx->index(), r.qps[0]->qpn())
          .ok());
  r.qps.clear();
  c->run_for(20'000'000);
  EXPECT_GT(rx.delta(RHN_CNT_STALE_PACKETS), 0u) << "late data dropped";
  EXPECT_TRUE(r.cq->poll().empty());
  ASSERT_TRUE(r.ctx->driver()
                  .destroy(RHN_ADMIN_DESTROY_SRQ, r.ctx->index(), r.srq->srqn())
                  .ok());
  // Its entry (handle 1) went with it: a new SRQ of the same context has
  // the context's whole share again.
  auto cq2 = r.ctx->create_cq(8);
  auto srq2 = r.ctx->create_tm_srq(*cq2, 2048, 7, 12);
  ASSERT_TRUE(srq2);
  for (uint16_t h = 0; h < 2048; h++)
    ASSERT_TRUE(srq2->write_tm_op(
        add_op(h, h, h, Sge{}, h, kAll, h == 2047 ? RHN_TM_OP_F_SIGNALED : 0)))
        << h;
  srq2->kick_tm_ops();
  Completion last = wait_one(*c, *cq2);
  EXPECT_TRUE(last.ok()) << describe(last);
  EXPECT_EQ(last.wr_id, 2047u);
}

// The sender's QP goes before its NIC streams the data: the pull is
// refused and the entry completes in error.
TEST_F(Tm, ARendezvousWhoseSenderIsGoneFails) {
  start(2);
  Receiver r = receiver(1);
  Sender s = connect(r, 0);
  ASSERT_TRUE(op(r, add_op(1, 0, 1, r.mem.sge(0, 2 << 20), 10)).ok());
  send(s, 1, rndv_message(1, 1, s.mem.va(0), s.mem.key(), 2 << 20));
  // Let the header go, then take the sender's QP away at once.
  ASSERT_TRUE(c->run_until([&] { return !s.cq->poll().empty(); }, 5'000'000));
  ASSERT_TRUE(s.qp->to_err().ok());
  auto v = c->wait_cqes(*r.cq, 2, 100'000'000);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].ext_flags, RHN_CQE_X_TM_MATCH);
  EXPECT_EQ(v[1].wr_id, 10u);
  EXPECT_NE(v[1].status, RHN_CQE_SUCCESS) << describe(v[1]);
}

}  // namespace
}  // namespace rhinet::test
