// SPDX-License-Identifier: BSD-2-Clause
// Sends posted with no SQ doorbell (issue 39): the NIC asks for a kick in
// a plain SQ's record only when it has gone idle on the SQ (or the QP is
// in ERR); while it works on the SQ it reads the record again before it
// goes idle, so posts made meanwhile need no kick
// (Documentation/hardware/queues.md, "Sends without doorbells").
#include <random>

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
    ASSERT_NO_FATAL_FAILURE(before_race());
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
    EXPECT_TRUE(idle_after_race());
  }
  // The word before the race: the bit taken back by a kick while busy.
  virtual void before_race() {
    p.qp_a->kick_sq();
    c->run_for(1'000);
    ASSERT_FALSE(wanted(*p.qp_a));
  }
  // The word once the NIC is idle again after the race's two SENDs.
  virtual bool idle_after_race() { return wanted(*p.qp_a); }
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
// Returns the SQ word once the NIC is idle again.
uint32_t dropped_doorbell_is_recovered(uint8_t qp_flags, uint32_t word_before) {
  constexpr uint32_t kFifo = 16;
  SimCluster c(two_nodes(kFifo));
  EXPECT_TRUE(c.all_up());
  RcOptions opt;
  opt.qp_flags = qp_flags;
  RcPair p = make_rc_pair(c, 0, 1, opt);
  EXPECT_TRUE(p.ok);
  if (!p.ok) return 0;
  p.qp_a->sq_kick_on_request = true;
  c.run_for(100'000);
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 68);
  Region dst = make_region(*p.ctx_b, kLen);
  EXPECT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kLen)}));
  EXPECT_EQ(p.qp_a->sq_nic_word(), word_before);
  CounterSnap a(c.node(0));
  auto foreign = c.node(0).open_context();
  EXPECT_TRUE(foreign->ok());
  auto fcq = foreign->create_cq(6);
  QpInit qi;
  qi.send_cq = fcq.get();
  auto fqp = foreign->create_qp(qi);
  EXPECT_TRUE(fqp);
  if (!fqp) return 0;
  for (uint32_t i = 0; i < 2 * kFifo; i++) fqp->kick_sq();  // fills it
  EXPECT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  Completion r = wait_one(c, *p.cq_a);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_GE(a.delta(RHN_CNT_KICK_OVERFLOWS), 1u);  // the post's was lost
  EXPECT_TRUE(wait_one(c, *p.cq_b).ok());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  c.run_for(100'000);
  return p.qp_a->sq_nic_word();
}

TEST(SqNoKickLost, DroppedDoorbellIsRecovered) {
  EXPECT_EQ(dropped_doorbell_is_recovered(0, RHN_SQ_RECORD_DOORBELL_WANTED),
            RHN_SQ_RECORD_DOORBELL_WANTED);
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

// ---- The event index (RHN_CREATE_QP_F_SQ_EVENT_INDEX) ------------------

// The word the NIC stores when it goes idle with producer index `idx`.
uint32_t event_at(uint32_t idx) {
  return RHN_SQ_RECORD_EVENT | (idx & RHN_SQ_RECORD_EVENT_INDEX);
}

// The provider's rule on its own, at the 16-bit wrap: a post kicks iff it
// writes slot E (modulo 2^16); the request bit kicks every post; 0 none.
TEST(SqEventIndexRule, KicksOnlyThePostThatWritesTheEventSlot) {
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(5), 5, 6));
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(5), 3, 9));
  EXPECT_FALSE(rhn_sq_post_must_kick(event_at(5), 6, 7));
  EXPECT_FALSE(rhn_sq_post_must_kick(event_at(5), 2, 5));  // ends before it
  EXPECT_FALSE(rhn_sq_post_must_kick(0, 0, 1));
  EXPECT_TRUE(rhn_sq_post_must_kick(RHN_SQ_RECORD_DOORBELL_WANTED, 7, 8));
  // Wrap of the 16-bit index inside a post, and of the 32-bit count.
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(0xffff), 0xfffe, 0x10001));
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(0), 0xfffe, 0x10001));
  EXPECT_FALSE(rhn_sq_post_must_kick(event_at(2), 0xfffe, 0x10001));
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(0xfffffffe), 0xfffffffe, 1));
  EXPECT_FALSE(rhn_sq_post_must_kick(event_at(0xfffffffe), 0xffffffff, 1));
  // A whole ring (2^15 slots) posted at once still sees its event slot.
  EXPECT_TRUE(rhn_sq_post_must_kick(event_at(0x8000), 0x1, 0x8001));
  EXPECT_FALSE(rhn_sq_post_must_kick(event_at(0x8001), 0x1, 0x8001));
}

class SqEventIndex : public SqNoKick {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(two_nodes());
    ASSERT_TRUE(c->all_up());
    RcOptions opt;
    opt.qp_flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX;
    p = make_rc_pair(*c, 0, 1, opt);
    ASSERT_TRUE(p.ok);
    p.qp_a->sq_kick_on_request = true;
    c->run_for(100'000);
  }
  // make_a_busy's SEND kicked (the NIC was idle at 0); nothing takes
  // the event back. After the race the NIC is idle at 2.
  void before_race() override { ASSERT_EQ(p.qp_a->sq_nic_word(), event_at(0)); }
  bool idle_after_race() override {
    return p.qp_a->sq_nic_word() == event_at(2);
  }
};

TEST_F(SqEventIndex, CapabilityAndEventAtRts) {
  EXPECT_TRUE(node_a().driver->reg32(RHN_REG_CAPS) & RHN_CAP_SQ_EVENT_INDEX);
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(0));
}

// The poster that outruns an idle NIC: the post that wakes it kicks, and
// no later one does, however long the NIC stays busy (the bit protocol
// needs a second kick to take its request back). The NIC then asks at
// the index where it went idle.
TEST_F(SqEventIndex, OneKickPerIdlePeriod) {
  Region src = make_region(*p.ctx_a, kLen * kMessages, kAllAccess, 71);
  Region dst = make_region(*p.ctx_b, kLen * kMessages);
  CounterSnap a(node_a());
  make_a_busy(src);
  for (int i = 1; i < kMessages; ++i) {
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
    c->run_for(1'000);  // each post is handled while the NIC is busy
  }
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(0));
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
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(kMessages));
  // The next idle period: one kick again.
  ASSERT_TRUE(p.qp_b->post_recv(200, {dst.sge(0, kLen)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(99, {src.sge(0, kLen)})));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 2u);
}

// NIC first: the post loads right after the NIC stored E=1: it writes
// slot 1 and kicks, and the NIC's read after its store also finds it.
TEST_F(SqEventIndex, RaceNicStoresBeforeThePostLoads) {
  race_at([&](uint64_t at,
              size_t len) { return at == sq_record_bus() + 4 && len == 4; },
          1);
}

// Post first: the post loads the stale E=0 between the NIC's record read
// that found nothing and its store of E=1; it rings nothing, and the
// NIC's read after the store finds the WQE.
TEST_F(SqEventIndex, RacePostLoadsBeforeTheNicStores) {
  race_at(
      [&](uint64_t at, size_t len) {
        return at == sq_record_bus() && len == 8 &&
               node_a().bus.published() > published_before &&
               p.qp_a->sq_nic_word() == event_at(0);
      },
      0);
}

// The kick is needed: a post at the event slot that leaves it out waits
// (shorter than the record scan's first interval).
TEST_F(SqEventIndex, IdleNicWaitsForTheKickItAskedFor) {
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 74);
  Region dst = make_region(*p.ctx_b, kLen);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kLen)}));
  p.qp_a->auto_kick = false;
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  c->run_for(fw::EngineConfig{}.sq_scan_ns / 2);
  EXPECT_TRUE(p.cq_a->poll().empty());
  p.qp_a->kick_sq();
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
}

// A kick lost on its way (not by a full FIFO, which the NIC knows of):
// later posts lie past the index and ring nothing, so only the record
// scan finds them. It takes them within two scans of its longest
// interval, counts the slots, and the NIC asks at the new index.
TEST_F(SqEventIndex, LostKickIsFoundByTheRecordScan) {
  const fw::EngineConfig engine;
  Region src = make_region(*p.ctx_a, kLen * 4, kAllAccess, 77);
  Region dst = make_region(*p.ctx_b, kLen * 4);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(
        p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * kLen, kLen)}));
  c->run_for(3 * engine.sq_scan_max_ns);  // the scan at its longest
  CounterSnap a(node_a());
  p.qp_a->auto_kick = false;  // the event post's kick is lost
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
  c->run_for(2 * engine.sq_scan_max_ns + engine.sq_scan_ns);
  auto sends = c->wait_cqes(*p.cq_a, 4);
  ASSERT_EQ(sends.size(), 4u) << describe(sends);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(sends[size_t(i)].ok()) << describe(sends[size_t(i)]);
    EXPECT_EQ(sends[size_t(i)].wr_id, uint64_t(i));
  }
  ASSERT_EQ(c->wait_cqes(*p.cq_b, 4).size(), 4u);
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_RECOVERED), 4u);
  c->run_for(100'000);
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(4));
  // Found work brings the scan back to its shortest interval; the next
  // idle period's kick is not lost, and nothing more is recovered.
  p.qp_a->auto_kick = true;
  ASSERT_TRUE(p.qp_b->post_recv(9, {dst.sge(0, kLen)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(9, {src.sge(0, kLen)})));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_RECOVERED), 4u);
}

// A QP destroyed while the scan lists it, and one reset and used again:
// the scan reads neither's old record, and the reset one is found again.
TEST_F(SqEventIndex, ScanForgetsDestroyedAndResetQps) {
  const fw::EngineConfig engine;
  RcOptions opt;
  opt.qp_flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX;
  {
    RcPair gone = make_rc_pair(*c, 0, 1, opt);
    ASSERT_TRUE(gone.ok);
    c->run_for(100'000);
  }  // destroyed here, listed or not
  Region src = make_region(*p.ctx_a, kLen, kAllAccess, 78);
  Region dst = make_region(*p.ctx_b, kLen);
  ASSERT_TRUE(p.qp_a->to_err().ok());
  c->run_for(100'000);
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  ASSERT_TRUE(p.qp_b->to_reset().ok());
  ASSERT_TRUE(connect_rc(*p.qp_b, 0, p.qp_a->qpn()));
  ASSERT_TRUE(p.qp_a->to_init().ok());
  ASSERT_TRUE(p.qp_a->to_rtr(1, p.qp_b->qpn()).ok());
  ASSERT_TRUE(p.qp_a->to_rts().ok());
  c->run_for(100'000);
  ASSERT_EQ(p.qp_a->sq_nic_word(), event_at(0));
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kLen)}));
  CounterSnap a(node_a());
  p.qp_a->auto_kick = false;
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kLen)})));
  c->run_for(2 * engine.sq_scan_max_ns + engine.sq_scan_ns);
  Completion r = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_RECOVERED), 1u);
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

// ERR with posts that crossed no event: entering ERR stores the request
// bit (every post kicks) and flushes what the record shows.
TEST_F(SqEventIndex, ErrFlushesPostsThatRangNothing) {
  Region src = make_region(*p.ctx_a, kLen * kMessages, kAllAccess, 75);
  make_a_busy(src);
  CounterSnap a(node_a());
  for (int i = 1; i < 5; ++i)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
  c->run_for(1'000);
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 0u);
  ASSERT_TRUE(p.qp_a->to_err().ok());
  EXPECT_EQ(p.qp_a->sq_nic_word(), RHN_SQ_RECORD_DOORBELL_WANTED);
  auto flushed = c->wait_cqes(*p.cq_a, 5);
  ASSERT_EQ(flushed.size(), 5u) << describe(flushed);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(flushed[size_t(i)].wr_id, uint64_t(i));
    EXPECT_EQ(flushed[size_t(i)].status, RHN_CQE_WR_FLUSH_ERR)
        << describe(flushed[size_t(i)]);
  }
  for (uint64_t i = 5; i < 7; ++i) {
    ASSERT_TRUE(p.qp_a->post_send(send_wr(i, {src.sge(i * kLen, kLen)})));
    Completion r = wait_one(*c, *p.cq_a);
    EXPECT_EQ(r.wr_id, i);
    EXPECT_EQ(r.status, RHN_CQE_WR_FLUSH_ERR) << describe(r);
  }
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 2u);  // each post in ERR
}

// RESET stores 0 (posts before RTS ring nothing); RTS asks at 0 again,
// nothing of the old life is sent, and the old life's event is gone.
TEST_F(SqEventIndex, ResetThenNewLife) {
  Region src = make_region(*p.ctx_a, kLen * 4, kAllAccess, 76);
  Region dst = make_region(*p.ctx_b, kLen * 4);
  make_a_busy(src);
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(kLen, kLen)})));
  ASSERT_TRUE(p.qp_a->to_err().ok());
  ASSERT_EQ(c->wait_cqes(*p.cq_a, 2).size(), 2u);
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  ASSERT_TRUE(p.qp_b->to_reset().ok());
  EXPECT_EQ(p.qp_a->sq_nic_word(), 0u);
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
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(1));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(11, {src.sge(3 * kLen, kLen)})));
  r = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 11u);
  auto recvs = c->wait_cqes(*p.cq_b, 2);
  ASSERT_EQ(recvs.size(), 2u);
  EXPECT_EQ(dst.buf.bytes(0, 2 * kLen), src.buf.bytes(2 * kLen, 2 * kLen));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), 1u);  // the post after RTS
}

// The event post's kick dropped by a full kick FIFO: the rescan reads
// the record and sends; the NIC asks again at the new index.
TEST(SqEventIndexLost, DroppedDoorbellIsRecovered) {
  EXPECT_EQ(dropped_doorbell_is_recovered(RHN_CREATE_QP_F_SQ_EVENT_INDEX,
                                          event_at(0)),
            event_at(1));
}

// An RC pair whose A side has the SQ event index and kicks only where
// the NIC's word asks, its queues 2^sq_log and 2^cq_log deep.
RcPair event_index_pair(SimCluster& c, uint8_t sq_log, uint8_t cq_log) {
  RcOptions opt;
  opt.qp_flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX;
  opt.sq_log_depth = sq_log;
  opt.cq_log_depth = cq_log;
  RcPair p = make_rc_pair(c, 0, 1, opt);
  if (p.ok) {
    p.qp_a->sq_kick_on_request = true;
    c.run_for(100'000);
  }
  return p;
}

// Past the 16-bit wrap of the event index on a real SQ: batches that
// each find the NIC idle kick exactly once, the one whose post crosses
// slot 65536 included, and every WRITE lands.
TEST(SqEventIndexWrap, OneKickPerBatchAcrossTheWrap) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  RcPair p = event_index_pair(c, 12, 13);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 8, kAllAccess, 78);
  Region dst = make_region(*p.ctx_b, 8);
  CounterSnap a(c.node(0));
  constexpr uint32_t kDepth = 1u << 12;
  // A short first batch puts the wrap inside a batch, not at its edge.
  std::vector<uint32_t> batches{100};
  for (uint32_t total = 100; total <= 0x10000 + kDepth; total += kDepth)
    batches.push_back(kDepth);
  uint32_t posted = 0;
  for (uint32_t n : batches) {
    ASSERT_EQ(p.qp_a->sq_nic_word(), event_at(posted));
    for (uint32_t i = 0; i < n; ++i) {
      SendWr wr = rdma_wr(posted + i, RHN_OP_WRITE, {}, dst.va(), dst.key(),
                          RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
      wr.inline_data = src.buf.bytes(0, 8);
      ASSERT_TRUE(p.qp_a->post_send(wr));
    }
    auto done = c.wait_cqes(*p.cq_a, n);
    ASSERT_EQ(done.size(), size_t(n));
    for (const Completion& d : done) ASSERT_TRUE(d.ok()) << describe(d);
    posted += n;
    c.run_for(10'000);
  }
  ASSERT_GT(posted, 0x10000u);
  EXPECT_EQ(p.qp_a->sq_nic_word(), event_at(posted));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), batches.size());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

// The flag with a multi-producer SQ (whose word is a count) or on a NIC
// path that does not know it is refused, not silently ignored.
TEST(SqEventIndexCreate, MultiProducerWithEventIndexIsRefused) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  auto ctx = c.node(0).open_context();
  ASSERT_TRUE(ctx->ok());
  auto cq = ctx->create_cq(6);
  QpInit qi;
  qi.send_cq = cq.get();
  qi.sq_log_depth = 8;
  qi.flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX | RHN_CREATE_QP_F_MULTI_PRODUCER;
  EXPECT_FALSE(ctx->create_qp(qi));
  qi.flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX << 1;  // no such flag
  EXPECT_FALSE(ctx->create_qp(qi));
  qi.flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX;
  EXPECT_TRUE(ctx->create_qp(qi));
}

// ---- The event index on UD (RDM over UD: libfabric's ofi_rxd) ---------
// A UD datagram completes when it has left, so the NIC goes idle on the
// SQ right behind each one and stores a new index each time: the busiest
// path for the store-then-read of the idle transition. These cases post
// at every point of it, unsignalled as ofi_rxd posts, through full rings
// and past the 16-bit wrap, and check that the NIC took every slot.

constexpr uint32_t kUdQkey = 0x5151;

class SqEventIndexUd : public ::testing::Test {
 public:  // ud_race drives it
  void SetUp() override { open(4); }
  void open(uint8_t sq_log) {
    c = std::make_unique<SimCluster>(two_nodes());
    ASSERT_TRUE(c->all_up());
    DatagramShape shape;
    shape.sq_log_depth = sq_log;
    shape.cq_log_depth = 12;
    shape.qp_flags = RHN_CREATE_QP_F_SQ_EVENT_INDEX;
    a = make_datagram_node(*c, 0, RHN_QP_UD, kUdQkey, shape);
    ASSERT_TRUE(a.qp);
    DatagramShape rshape;
    rshape.rq_log_depth = 8;
    b = make_datagram_node(*c, 1, RHN_QP_UD, kUdQkey, rshape);
    ASSERT_TRUE(b.qp);
    a.qp->sq_kick_on_request = true;
    a.buf.buf.fill_pattern(81);
    c->run_for(100'000);
    ASSERT_EQ(a.qp->sq_nic_word(), event_at(0));
  }
  // A UD SEND of `len` inline bytes (1 to 4 slots) to `b`'s QP, or to a
  // QPN nobody has (dropped there, completed here).
  bool post(uint64_t wr_id, size_t len, bool signalled, bool to_b = false) {
    SendWr wr = send_wr(
        wr_id, {}, RHN_OP_SEND,
        uint8_t(RHN_WQE_F_INLINE | (signalled ? RHN_WQE_F_SIGNALED : 0)));
    wr.inline_data = a.buf.buf.bytes(wr_id % 64, len);
    wr.dst_node = 1;
    wr.dst_qpn = to_b ? b.qp->qpn() : 0x7abc;
    wr.qkey = kUdQkey;
    return a.qp->post_send(wr);
  }
  // The next SQ slot the NIC will complete (QUERY_QP).
  uint32_t nic_sq_consumer() {
    rhn_qp_attr attr{};
    EXPECT_TRUE(a.qp->query(&attr).ok());
    return attr.sq_consumer;
  }
  // Once the NIC has had time: it took every posted slot and went idle
  // at the producer index, which its word names.
  void expect_all_taken(const char* where) {
    c->run_for(200'000);
    const uint32_t posted = a.qp->sq_posted_slots();
    EXPECT_EQ(nic_sq_consumer(), posted) << where;
    EXPECT_EQ(a.qp->sq_nic_word(), event_at(posted)) << where;
  }
  uint64_t record_bus() {
    QueueMemory& m = a.qp->sq_memory();
    return m.buf.bus(m.record_offset);
  }
  std::unique_ptr<SimCluster> c;
  DatagramNode a, b;
};

// Each datagram leaves the NIC idle at the next index, which it stores;
// only the post that writes that slot kicks.
TEST_F(SqEventIndexUd, EachDatagramLeavesTheIndexBehindIt) {
  CounterSnap k(c->node(0));
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(post(i, 8 + 40 * (i % 4), true));
    Completion r = wait_one(*c, *a.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, i);
    expect_all_taken("after each datagram");
  }
  EXPECT_EQ(k.delta(RHN_CNT_HOST_DOORBELLS), 8u);
}

// The post made inside the NIC's idle transition behind a datagram, at
// its store of the new index (the post sees it and kicks) and at the
// record read before that store (the post sees the old index, which it
// does not cross, and rings nothing: the NIC's read after its store
// finds it). Both datagrams arrive once.
void ud_race(SqEventIndexUd& t, bool at_store, uint64_t want_kicks) {
  Region dst = make_region(*t.b.ctx, 2 * kLen);
  for (uint64_t i = 0; i < 2; ++i)
    ASSERT_TRUE(t.b.qp->post_recv(
        i, {dst.sge(size_t(i) * kLen, RHN_UD_GRH_LEN + 8 + 8 * i)}));
  CounterSnap k(t.c->node(0));
  const uint64_t published_before = t.c->node(0).bus.published();
  bool post_ok = false;
  OnNicAccess hook(
      t.c->node(0).memory,
      [&](uint64_t at, size_t len) {
        if (at_store) return at == t.record_bus() + 4 && len == 4;
        // The read that found nothing new, once the first CQE is out.
        return at == t.record_bus() && len == 8 &&
               t.c->node(0).bus.published() > published_before &&
               t.a.qp->sq_nic_word() == event_at(0);
      },
      [&] { post_ok = t.post(1, 16, true, true); });
  ASSERT_TRUE(t.post(0, 8, true, true));
  auto sends = t.c->wait_cqes(*t.a.cq, 2);
  ASSERT_TRUE(hook.fired);
  ASSERT_TRUE(post_ok);
  ASSERT_EQ(sends.size(), 2u) << describe(sends);
  EXPECT_TRUE(sends[0].ok() && sends[1].ok()) << describe(sends);
  EXPECT_EQ(sends[1].wr_id, 1u);
  EXPECT_EQ(k.delta(RHN_CNT_HOST_DOORBELLS), want_kicks);
  auto recvs = t.c->wait_cqes(*t.b.cq, 2);
  ASSERT_EQ(recvs.size(), 2u) << describe(recvs);
  for (uint64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(recvs[i].ok()) << describe(recvs[i]);
    EXPECT_EQ(recvs[i].byte_len, RHN_UD_GRH_LEN + 8 + 8 * i);
    EXPECT_EQ(dst.buf.bytes(i * kLen + RHN_UD_GRH_LEN, 8 + 8 * i),
              t.a.buf.buf.bytes(i, 8 + 8 * i));
  }
  t.expect_all_taken("after the race");
  EXPECT_TRUE(t.b.cq->poll().empty());  // none sent twice
}

TEST_F(SqEventIndexUd, RaceNicStoresBeforeThePostLoads) {
  ud_race(*this, true, 2);
}

TEST_F(SqEventIndexUd, RacePostLoadsBeforeTheNicStores) {
  ud_race(*this, false, 1);
}

// ofi_rxd's pattern: the ring filled with unsignalled datagrams while
// the NIC does not run, the last one signalled (its CQE retires them
// all); the first post of each fill crosses the index and kicks, no
// other does, the NIC drains the ring and goes idle at its end. WQEs of
// 1 to 4 slots in a 16-slot ring, past slot 2^16, so fills end at every
// offset and cross the wrap of the index.
TEST_F(SqEventIndexUd, FullRingsOfUnsignalledSendsAcrossTheWrap) {
  constexpr uint32_t kDepth = 16;
  const std::vector<size_t> sizes{8, 56, 104, 152};
  std::vector<uint32_t> slots_of;  // measured: slots each size takes
  uint64_t id = 0;
  for (size_t len : sizes) {
    const uint32_t before = a.qp->sq_posted_slots();
    ASSERT_TRUE(post(id++, len, true));
    slots_of.push_back(a.qp->sq_posted_slots() - before);
    ASSERT_TRUE(wait_one(*c, *a.cq).ok());
  }
  ASSERT_EQ(slots_of.front(), 1u);
  ASSERT_GT(slots_of.back(), 2u);
  uint64_t fills = 0;
  while (a.qp->sq_posted_slots() < 0x10000 + 4 * kDepth) {
    CounterSnap k(c->node(0));
    const uint32_t start = a.qp->sq_posted_slots();
    uint32_t used = 0;
    for (;;) {
      const size_t i = (id * 7 + fills) % sizes.size();
      if (used + slots_of[i] + slots_of[0] > kDepth) break;
      ASSERT_TRUE(post(id++, sizes[i], false));
      used += slots_of[i];
    }
    ASSERT_TRUE(post(id++, sizes[0], true));
    ASSERT_EQ(a.qp->sq_posted_slots() - start, used + slots_of[0]);
    ASSERT_EQ(k.delta(RHN_CNT_HOST_DOORBELLS), 1u) << "fill " << fills;
    Completion r = wait_one(*c, *a.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    ASSERT_EQ(r.wr_id, id - 1);
    c->run_for(2'000);
    ASSERT_EQ(a.qp->sq_nic_word(), event_at(a.qp->sq_posted_slots()))
        << "fill " << fills;
    if (++fills % 512 == 0) expect_all_taken("fill");
  }
  expect_all_taken("the last fill");
  EXPECT_GT(fills, 0x10000u / kDepth);
  EXPECT_TRUE(a.cq->poll().empty());
}

// Calls `then` after every NIC access that `match` accepts (OnNicAccess
// fires once), never from inside its own call.
class EveryNicAccess : public MemoryObserver {
 public:
  EveryNicAccess(SimMemory& mem, OnNicAccess::Match match,
                 std::function<void()> then)
      : mem_(mem), match_(std::move(match)), then_(std::move(then)) {
    mem_.observer = this;
  }
  ~EveryNicAccess() { mem_.observer = nullptr; }
  void access(uint64_t bus_addr, size_t len, bool nic) override {
    if (!nic || inside_ || !match_(bus_addr, len)) return;
    inside_ = true;
    ++calls;
    then_();
    inside_ = false;
  }
  uint64_t calls = 0;

 private:
  SimMemory& mem_;
  OnNicAccess::Match match_;
  std::function<void()> then_;
  bool inside_ = false;
};

// Posts at random points: inside the NIC's accesses to the SQ record
// (its record reads, its store of the index and the read after it) and
// between the NIC's steps; signalled one time in three or at random
// (ofi_rxd signals few), 1 to 4 slots each. Whenever the NIC has had
// time, it has taken every posted slot: no post waits for a kick it
// was never given.
TEST_F(SqEventIndexUd, PostsAtEveryPointOfTheIdleTransition) {
  std::mt19937_64 rng(39);
  const std::vector<size_t> sizes{8, 56, 104, 152};
  uint64_t id = 0, signalled = 0, completed = 0;
  bool posting = true;
  auto post_some = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      const bool sig = id % 3 == 2 || rng() % 4 == 0;
      if (!post(id, sizes[rng() % sizes.size()], sig)) return;  // full
      ++id;
      signalled += sig;
    }
  };
  auto drain = [&] {
    for (const Completion& r : a.cq->poll()) {
      ASSERT_TRUE(r.ok()) << describe(r);
      ++completed;
    }
  };
  EveryNicAccess hook(
      c->node(0).memory,
      [&](uint64_t at, size_t) { return at - record_bus() < 8; },
      [&] {
        if (posting && rng() % 2) post_some(1 + uint32_t(rng() % 2));
      });
  for (int round = 0; round < 400; ++round) {
    for (int step = 0; step < 16; ++step) {
      switch (rng() % 3) {
        case 0:
          post_some(1 + uint32_t(rng() % 4));
          break;
        case 1:
          c->run_for(rng() % 20'000);
          break;
        default:
          ASSERT_NO_FATAL_FAILURE(drain());
      }
    }
    // Quiet: the NIC must have taken everything without another kick.
    // Nothing posts now, not even at the record scan's reads.
    posting = false;
    c->run_for(200'000);
    ASSERT_NO_FATAL_FAILURE(drain());
    const uint32_t posted = a.qp->sq_posted_slots();
    ASSERT_EQ(nic_sq_consumer(), posted) << "round " << round;
    ASSERT_EQ(a.qp->sq_nic_word(), event_at(posted)) << "round " << round;
    posting = true;
  }
  // The scan found nothing: every post the NIC had to see was kicked or
  // read at the idle transition.
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SQ_RECOVERED), 0u);
  EXPECT_EQ(completed, signalled);
  EXPECT_GT(hook.calls, 1000u);
  EXPECT_GT(a.qp->sq_posted_slots(), 4000u);
}

// ib_write_bw's message rate with the event index: 8-byte WRITEs kept 128
// deep, one in 100 signalled, each post made after a random share of the
// NIC's time, so that posts meet the NIC going idle, taking ACKs and
// retiring runs at every point. Every WRITE must complete (the CQEs of
// the signalled ones); a stall fails the test.
TEST(SqEventIndexStream, UnsignalledWritesKeptDeepAllComplete) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  RcPair p = event_index_pair(c, 8, 9);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 8, kAllAccess, 79);
  Region dst = make_region(*p.ctx_b, 8);
  constexpr uint32_t kTotal = 6000, kDepth = 128, kEvery = 100;
  std::mt19937 rng(5);
  uint32_t posted = 0, done = 0;
  int idle_rounds = 0;
  while (done < kTotal) {
    bool progressed = false;
    while (posted < kTotal && posted - done < kDepth) {
      const bool signalled = (posted + 1) % kEvery == 0 || posted + 1 == kTotal;
      SendWr wr = rdma_wr(
          posted, RHN_OP_WRITE, {}, dst.va(), dst.key(),
          RHN_WQE_F_INLINE | (signalled ? uint32_t(RHN_WQE_F_SIGNALED) : 0u));
      wr.inline_data = src.buf.bytes(0, 8);
      ASSERT_TRUE(p.qp_a->post_send(wr));
      posted++;
      progressed = true;
      c.run_for(rng() % 3000);
    }
    for (const Completion& d : p.cq_a->poll()) {
      ASSERT_TRUE(d.ok()) << describe(d);
      done = uint32_t(d.wr_id) + 1;
      progressed = true;
    }
    c.run_for(2'000);
    idle_rounds = progressed ? 0 : idle_rounds + 1;
    ASSERT_LT(idle_rounds, 5000)
        << "stalled: " << done << " of " << posted << " WRITEs completed, "
        << "NIC word " << std::hex << p.qp_a->sq_nic_word();
  }
}

}  // namespace
}  // namespace rhinet::test
