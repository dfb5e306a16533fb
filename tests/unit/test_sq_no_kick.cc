// SPDX-License-Identifier: BSD-2-Clause
// Sends posted with no SQ doorbell (issue 39): the NIC asks for a kick in
// a plain SQ's record only when it has gone idle on the SQ (or the QP is
// in ERR); while it works on the SQ it reads the record again before it
// goes idle, so posts made meanwhile need no kick
// (Documentation/hardware/queues.md, "Sends without doorbells").
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr int kMessages = 16;
constexpr size_t kLen = 64;

ClusterConfig two_nodes(uint32_t kick_fifo = 0) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  if (kick_fifo) cfg.engine.kick_fifo_entries = kick_fifo;
  return cfg;
}

bool wanted(const SimQp& qp) {
  return (qp.sq_nic_word() & RHN_SQ_RECORD_DOORBELL_WANTED) != 0;
}

// Calls `then` once, right after the first NIC access that `match`
// accepts: a deterministic point inside the NIC's store-then-read of the
// idle transition, where software's post is made.
class OnNicAccess : public MemoryObserver {
 public:
  using Match = std::function<bool(uint64_t bus_addr, size_t len)>;
  OnNicAccess(SimMemory& mem, Match match, std::function<void()> then)
      : mem_(mem), match_(std::move(match)), then_(std::move(then)) {
    mem_.observer = this;
  }
  ~OnNicAccess() { mem_.observer = nullptr; }
  void access(uint64_t bus_addr, size_t len, bool nic) override {
    if (!nic || fired || !match_(bus_addr, len)) return;
    fired = true;
    then_();
  }
  bool fired = false;

 private:
  SimMemory& mem_;
  Match match_;
  std::function<void()> then_;
};

class SqNoKick : public ::testing::Test {
 protected:
  void SetUp() override { open(two_nodes()); }
  void open(const ClusterConfig& cfg) {
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    p.qp_a->sq_kick_on_request = true;
    c->run_for(100'000);
  }
  SimNode& node_a() { return c->node(0); }
  uint64_t sq_record_bus() {
    QueueMemory& m = p.qp_a->sq_memory();
    return m.buf.bus(m.record_offset);
  }
  // A SEND that finds no receive at B: RNR-NAKed and retried, so the
  // NIC keeps it uncompleted (busy on the SQ) until a receive comes.
  void make_a_busy(Region& src) {
    CounterSnap b(c->node(1));
    ASSERT_TRUE(p.qp_a->post_send(send_wr(0, {src.sge(0, kLen)})));
    for (int i = 0; i < 2000 && b.delta(RHN_CNT_RNR_NAKS_SENT) == 0; ++i)
      c->run_for(1'000);
    ASSERT_GE(b.delta(RHN_CNT_RNR_NAKS_SENT), 1u);
  }
  // The NIC busy on a SEND waiting for a receive, the request taken back
  // by a second kick; then a post made inside the NIC access that `match`
  // picks (one of the idle transition's), the receives that let both
  // SENDs complete, and the kicks the post made counted.
  void race_at(const OnNicAccess::Match& match, uint64_t want_kicks) {
    Region src = make_region(*p.ctx_a, kLen * 2, kAllAccess, 63);
    Region dst = make_region(*p.ctx_b, kLen * 2);
    make_a_busy(src);
    p.qp_a->kick_sq();  // a kick while busy: the request is taken back
    c->run_for(1'000);
    ASSERT_FALSE(wanted(*p.qp_a));
    CounterSnap a(node_a());
    published_before = node_a().bus.published();
    bool post_ok = false;
    OnNicAccess hook(node_a().memory, match, [&] {
      post_ok = p.qp_a->post_send(send_wr(1, {src.sge(kLen, kLen)}));
    });
    for (int i = 0; i < 2; ++i)
      ASSERT_TRUE(
          p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * kLen, kLen)}));
    auto sends = c->wait_cqes(*p.cq_a, 2);
    ASSERT_TRUE(hook.fired);
    ASSERT_TRUE(post_ok);
    ASSERT_EQ(sends.size(), 2u) << describe(sends);
    EXPECT_EQ(sends[1].wr_id, 1u);
    EXPECT_TRUE(sends[1].ok()) << describe(sends[1]);
    EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), want_kicks);
    ASSERT_EQ(c->wait_cqes(*p.cq_b, 2).size(), 2u);
    c->run_for(100'000);
    EXPECT_TRUE(p.cq_a->poll().empty());  // not sent twice
    EXPECT_TRUE(p.cq_b->poll().empty());
    EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
    EXPECT_TRUE(wanted(*p.qp_a));  // idle again
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
  uint64_t published_before = 0;  // entries the NIC had published
};

TEST_F(SqNoKick, CapabilityAndIdleRequestAfterRts) {
  EXPECT_TRUE(node_a().driver->reg32(RHN_REG_CAPS) &
              RHN_CAP_SQ_DOORBELL_ON_REQUEST);
  // Nothing posted: the NIC is idle on the SQ and says so.
  EXPECT_TRUE(wanted(*p.qp_a));
  EXPECT_TRUE(wanted(*p.qp_b));
}

// Posts while the NIC works on the SQ: the first kicks (the NIC was
// idle), the second kicks too and its kick finds the NIC busy, which
// takes the request back; the other fourteen ring nothing. All complete
// in order, and the NIC asks again once it is idle.
TEST_F(SqNoKick, PostsWhileBusyRingNoDoorbell) {
  Region src = make_region(*p.ctx_a, kLen * kMessages, kAllAccess, 61);
  Region dst = make_region(*p.ctx_b, kLen * kMessages);
  CounterSnap a(node_a());
  make_a_busy(src);
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);
  EXPECT_TRUE(wanted(*p.qp_a));  // one kick at a time is a latency test
  for (int i = 1; i < kMessages; ++i) {
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
    if (i == 1) {
      c->run_for(1'000);
      EXPECT_FALSE(wanted(*p.qp_a)) << "a kick while busy keeps the request";
    }
  }
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 2u);
  for (int i = 0; i < kMessages; ++i)
    ASSERT_TRUE(p.qp_b->post_recv(uint64_t(100 + i),
                                  {dst.sge(size_t(i) * kLen, kLen)}));
  auto sends = c->wait_cqes(*p.cq_a, kMessages);
  ASSERT_EQ(sends.size(), size_t(kMessages)) << describe(sends);
  for (int i = 0; i < kMessages; ++i) {
    EXPECT_TRUE(sends[size_t(i)].ok()) << describe(sends[size_t(i)]);
    EXPECT_EQ(sends[size_t(i)].wr_id, uint64_t(i));
  }
  ASSERT_EQ(c->wait_cqes(*p.cq_b, kMessages).size(), size_t(kMessages));
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  c->run_for(100'000);
  EXPECT_TRUE(wanted(*p.qp_a));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 2u);
}

// Ping-pong: every post finds the NIC idle and kicks; the request stays
// stored (no DMA write per message to set it again) and each WQE of one
// slot comes with its doorbell: no WQE fetch at all.
TEST_F(SqNoKick, IdleNicGetsOneKickPerPostAndTheWqeWithIt) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 62);
  Region dst = make_region(*p.ctx_b, kLen);
  CounterSnap a(node_a());
  for (int i = 0; i < 8; ++i) {
    SendWr wr = rdma_wr(uint64_t(i), RHN_OP_WRITE, {}, dst.va(), dst.key(),
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
    wr.inline_data = src.buf.bytes(0, 8);
    wr.inline_doorbell = true;
    ASSERT_TRUE(wanted(*p.qp_a));
    ASSERT_TRUE(p.qp_a->post_send(wr));
    Completion r = wait_one(*c, *p.cq_a);
    ASSERT_TRUE(r.ok()) << describe(r);
    c->run_for(10'000);
  }
  EXPECT_EQ(dst.buf.bytes(0, 8), src.buf.bytes(0, 8));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 8u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_INLINE_DOORBELLS), 8u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), 0u);
  EXPECT_TRUE(wanted(*p.qp_a));
}

// The race, NIC first: the post's load comes right after the NIC stored
// the request (and before its read after it). The post sees it and
// kicks; the NIC's read finds the WQE too; it is sent once.
TEST_F(SqNoKick, RaceNicStoresBeforeThePostLoads) {
  race_at([&](uint64_t at,
              size_t len) { return at == sq_record_bus() + 4 && len == 4; },
          1);
}

// The race, post first: the post stores its index and loads the word
// between the NIC's record read that found nothing (after the last
// completion) and its store of the request. It sees no request and rings
// nothing; the NIC's read after its store finds the WQE.
TEST_F(SqNoKick, RacePostLoadsBeforeTheNicStores) {
  race_at(
      [&](uint64_t at, size_t len) {
        return at == sq_record_bus() && len == 8 &&
               node_a().bus.published() > published_before && !wanted(*p.qp_a);
      },
      0);
}

// A post that leaves its kick out while the NIC is idle and asked for
// one is not sent: the request is needed, not decoration.
TEST_F(SqNoKick, IdleNicWaitsForTheKickItAskedFor) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 65);
  Region dst = make_region(*p.ctx_b, kLen);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kLen)}));
  ASSERT_TRUE(wanted(*p.qp_a));
  p.qp_a->auto_kick = false;
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_a->poll().empty());
  p.qp_a->kick_sq();
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
}

// ERR with posts that rang nothing: the NIC asks for kicks on entering
// ERR and flushes what the record shows; a post in ERR sees the request,
// kicks and is flushed.
TEST_F(SqNoKick, ErrFlushesSuppressedPosts) {
  Region src = make_region(*p.ctx_a, kLen * kMessages, kAllAccess, 66);
  make_a_busy(src);
  for (int i = 1; i < 4; ++i)  // the second's kick takes the request back
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
  c->run_for(1'000);
  ASSERT_FALSE(wanted(*p.qp_a));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(4, {src.sge(4 * kLen, kLen)})));
  CounterSnap a(node_a());
  ASSERT_TRUE(p.qp_a->to_err().ok());
  EXPECT_TRUE(wanted(*p.qp_a));
  auto flushed = c->wait_cqes(*p.cq_a, 5);
  ASSERT_EQ(flushed.size(), 5u) << describe(flushed);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(flushed[size_t(i)].wr_id, uint64_t(i));
    EXPECT_EQ(flushed[size_t(i)].status, RHN_CQE_WR_FLUSH_ERR)
        << describe(flushed[size_t(i)]);
  }
  ASSERT_TRUE(p.qp_a->post_send(send_wr(5, {src.sge(5 * kLen, kLen)})));
  Completion r = wait_one(*c, *p.cq_a);
  EXPECT_EQ(r.wr_id, 5u);
  EXPECT_EQ(r.status, RHN_CQE_WR_FLUSH_ERR) << describe(r);
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);  // only the post in ERR
}

// RESET clears the request; the new life asks again when it reaches RTS
// (idle), and nothing of the old life is sent.
TEST_F(SqNoKick, ResetThenNewLifePostsWithoutStaleState) {
  Region src = make_region(*p.ctx_a, kLen * 4, kAllAccess, 67);
  Region dst = make_region(*p.ctx_b, kLen * 4);
  make_a_busy(src);
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(kLen, kLen)})));
  c->run_for(1'000);
  ASSERT_FALSE(wanted(*p.qp_a));
  ASSERT_TRUE(p.qp_a->to_err().ok());
  ASSERT_EQ(c->wait_cqes(*p.cq_a, 2).size(), 2u);
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  ASSERT_TRUE(p.qp_b->to_reset().ok());
  EXPECT_EQ(p.qp_a->sq_nic_word(), 0u);
  // Posted before RTS, with no kick (the word says none): RTS takes it.
  ASSERT_TRUE(connect_rc(*p.qp_b, 0, p.qp_a->qpn()));
  ASSERT_TRUE(p.qp_b->post_recv(20, {dst.sge(0, kLen)}));
  ASSERT_TRUE(p.qp_b->post_recv(21, {dst.sge(kLen, kLen)}));
  CounterSnap a(node_a());
  ASSERT_TRUE(p.qp_a->to_init().ok());
  ASSERT_TRUE(p.qp_a->post_send(send_wr(10, {src.sge(2 * kLen, kLen)})));
  ASSERT_TRUE(p.qp_a->to_rtr(1, p.qp_b->qpn()).ok());
  ASSERT_TRUE(p.qp_a->to_rts().ok());
  Completion r = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 10u);
  c->run_for(100'000);
  EXPECT_TRUE(wanted(*p.qp_a));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(11, {src.sge(3 * kLen, kLen)})));
  r = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 11u);
  auto recvs = c->wait_cqes(*p.cq_b, 2);
  ASSERT_EQ(recvs.size(), 2u);
  EXPECT_EQ(dst.buf.bytes(0, 2 * kLen), src.buf.bytes(2 * kLen, 2 * kLen));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);  // the post after RTS
}

// A kick the full FIFO dropped: the rescan reads the record and sends.
TEST(SqNoKickLost, DroppedDoorbellIsRecovered) {
  constexpr uint32_t kFifo = 16;
  SimCluster c(two_nodes(kFifo));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  p.qp_a->sq_kick_on_request = true;
  c.run_for(100'000);
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 68);
  Region dst = make_region(*p.ctx_b, kLen);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kLen)}));
  ASSERT_TRUE(wanted(*p.qp_a));
  CounterSnap a(c.node(0));
  auto foreign = c.node(0).open_context();
  ASSERT_TRUE(foreign->ok());
  auto fcq = foreign->create_cq(6);
  QpInit qi;
  qi.send_cq = fcq.get();
  auto fqp = foreign->create_qp(qi);
  ASSERT_TRUE(fqp);
  for (uint32_t i = 0; i < 2 * kFifo; i++) fqp->kick_sq();  // fills it
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  Completion r = wait_one(c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_GE(a.delta(RHN_CNT_KICK_OVERFLOWS), 1u);  // the post's was lost
  ASSERT_TRUE(wait_one(c, *p.cq_b).ok());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

// UD completes each datagram as it leaves: idle after each, asking.
TEST(SqNoKickUd, IdleUdSqAsks) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  DatagramNode e = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  ASSERT_TRUE(e.qp);
  EXPECT_TRUE(wanted(*e.qp));
  e.buf.buf.fill_pattern(69);
  SendWr wr = send_wr(1, {e.buf.sge(0, 64)});
  wr.dst_node = 1;
  wr.dst_qpn = 0x123;  // nobody: dropped there, completed here
  wr.qkey = 0x1111;
  e.qp->sq_kick_on_request = true;
  for (uint64_t i = 0; i < 3; ++i) {
    wr.wr_id = i;
    ASSERT_TRUE(e.qp->post_send(wr));
    Completion r = wait_one(c, *e.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    c.run_for(10'000);
    EXPECT_TRUE(wanted(*e.qp));
  }
}

}  // namespace
}  // namespace rhinet::test
