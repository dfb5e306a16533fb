// SPDX-License-Identifier: BSD-2-Clause
// Runs: one CQE standing for several successful completions of one queue
// of one QP, on a CQ created with RHN_CREATE_CQ_F_RUNS
// (Documentation/hardware/queues.md, "Runs: several completions in one
// CQE"). What forms a run, what ends one (another QP, an error, an
// immediate, a status word, an event, the end of the engine's pass, the
// most a run holds), and that SimCq, like a provider, hands a run out as
// the completions it stands for.
//
// A run forms from completions of one pass of the engine's poll loop. To
// have many in one pass, the tests stall the node whose CQ it is while
// the frames that complete them (ACKs, SENDs) queue in its receive FIFO;
// its first poll afterwards takes them all.
#include "test_helpers.h"

namespace rhinet::test {
namespace {

// One CQE as the NIC wrote it and the completions SimCq made of it.
struct Entry {
  rhn_cqe cqe{};
  std::vector<Completion> completions;
  uint32_t count() const {
    return (cqe.ext_flags & RHN_CQE_X_RUN) ? uint32_t{cqe.run_extra} + 1 : 1;
  }
  bool run() const { return (cqe.ext_flags & RHN_CQE_X_RUN) != 0; }
};

// Takes every entry on `cq`, each whole, one completion per poll.
std::vector<Entry> take_entries(SimCq& cq) {
  std::vector<Entry> out;
  rhn_cqe e;
  while (cq.peek_entry(&e)) {
    Entry en;
    en.cqe = e;
    const uint32_t before = cq.consumer_index();
    for (uint32_t i = 0; i < en.count(); i++) {
      Completion c;
      if (!cq.poll_one(&c)) {
        ADD_FAILURE() << "entry " << out.size() << " ran out at " << i;
        return out;
      }
      // The entry is consumed with its last completion, not before.
      EXPECT_EQ(cq.consumer_index(), before + (i + 1 == en.count() ? 1 : 0));
      en.completions.push_back(c);
    }
    out.push_back(en);
  }
  return out;
}

std::string shape(const std::vector<Entry>& v) {
  std::string s;
  for (const Entry& e : v)
    s += (e.run() ? "run" : "one") + std::to_string(e.count()) + " ";
  return s;
}

class CqeRuns : public ::testing::Test {
 public:
  SendWr write(uint64_t id, uint8_t opcode = RHN_OP_WRITE,
               uint8_t flags = RHN_WQE_F_SIGNALED) {
    return rdma_wr(id, opcode, {src.sge(8 * id % 4000, 8)},
                   dst.va(8 * id % 4000), dst.key(), flags);
  }

 protected:
  void SetUp() override { start(RHN_CREATE_CQ_F_RUNS); }
  void start(uint8_t cq_flags, uint8_t cq_log_depth = 10) {
    // A second start: what lives in the old cluster's memory goes first.
    src = Region{};
    dst = Region{};
    p = RcPair{};
    c.reset();
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    RcOptions o;
    o.cq_flags = cq_flags;
    o.cq_log_depth = cq_log_depth;
    p = make_rc_pair(*c, 0, 1, o);
    ASSERT_TRUE(p.ok);
    src = make_region(*p.ctx_a, 4096, kAllAccess, 3);
    dst = make_region(*p.ctx_b, 4096);
  }
  SimNode& na() { return c->node(0); }
  SimNode& nb() { return c->node(1); }
  // Posts `wrs` on A, lets A send them all, then holds A's engine while
  // B answers: A takes every answer in its first pass after the stall.
  void post_and_complete_at_once(const std::vector<SendWr>& wrs,
                                 uint32_t packets) {
    const uint64_t tx0 = na().counter(RHN_CNT_TX_PACKETS);
    for (const SendWr& w : wrs) ASSERT_TRUE(p.qp_a->post_send(w));
    ASSERT_TRUE(c->run_until(
        [&] { return na().counter(RHN_CNT_TX_PACKETS) >= tx0 + packets; },
        1'000'000));
    c->stall(0, 200'000);
    c->run_for(200'000);
    const uint64_t done = na().counter(RHN_CNT_COMPLETIONS);
    ASSERT_TRUE(c->run_until(
        [&] { return na().counter(RHN_CNT_COMPLETIONS) > done; }, 1'000'000));
    c->run_for(100'000);
  }
  // B posts `n` receives of 64 bytes each and holds its engine while A
  // sends `n` SENDs of `len` bytes: B takes them in one pass.
  void sends_to_b_at_once(uint32_t n, uint32_t len = 32,
                          uint8_t flags = RHN_WQE_F_SIGNALED) {
    for (uint32_t i = 0; i < n; i++)
      ASSERT_TRUE(p.qp_b->post_recv(100 + i, {dst.sge(64 * i, 64)}));
    c->run_for(10'000);
    c->stall(1, 200'000);
    for (uint32_t i = 0; i < n; i++)
      ASSERT_TRUE(p.qp_a->post_send(send_wr(i, {src.sge(0, len)}, RHN_OP_SEND,
                                            RHN_WQE_F_SIGNALED | flags)));
    c->run_for(400'000);
  }

  std::unique_ptr<SimCluster> c;
  RcPair p;
  Region src, dst;
};

std::vector<SendWr> writes(CqeRuns& t, uint64_t first, uint64_t n) {
  std::vector<SendWr> v;
  for (uint64_t i = 0; i < n; i++) v.push_back(t.write(first + i));
  return v;
}

TEST_F(CqeRuns, SendCompletionsOfOnePassAreOneEntry) {
  CounterSnap snap(na());
  post_and_complete_at_once(writes(*this, 1, 8), 8);
  const auto v = take_entries(*p.cq_a);
  ASSERT_EQ(v.size(), 1u) << shape(v);
  EXPECT_TRUE(v[0].run());
  EXPECT_EQ(v[0].cqe.run_extra, 7u);
  EXPECT_EQ(v[0].cqe.opcode, RHN_CQE_OP_WRITE);
  EXPECT_EQ(v[0].cqe.status, RHN_CQE_SUCCESS);
  EXPECT_TRUE(v[0].cqe.flags & RHN_CQE_F_SQ);
  // The entry is the last completion's.
  EXPECT_EQ(v[0].cqe.wqe_index, 7u);
  for (uint64_t i = 0; i < 8; i++) {
    EXPECT_EQ(v[0].completions[i].wr_id, i + 1);
    EXPECT_EQ(v[0].completions[i].wqe_index, i);
  }
  EXPECT_EQ(snap.delta(RHN_CNT_CQE_WRITES), 1u);
  EXPECT_EQ(snap.delta(RHN_CNT_CQES_SAVED), 7u);
  EXPECT_EQ(snap.delta(RHN_CNT_COMPLETIONS), 8u);
}

TEST_F(CqeRuns, WithoutTheFlagEachCompletionHasItsEntry) {
  start(0);
  CounterSnap snap(na());
  post_and_complete_at_once(writes(*this, 1, 8), 8);
  const auto v = take_entries(*p.cq_a);
  ASSERT_EQ(v.size(), 8u) << shape(v);
  for (const Entry& e : v) EXPECT_FALSE(e.run());
  EXPECT_EQ(snap.delta(RHN_CNT_CQE_WRITES), 8u);
  EXPECT_EQ(snap.delta(RHN_CNT_CQES_SAVED), 0u);
}

TEST_F(CqeRuns, UnsignalledWqesInsideARunAreSkippedByItsExpansion) {
  std::vector<SendWr> v;
  for (uint64_t i = 1; i <= 9; i++)
    v.push_back(write(i, RHN_OP_WRITE, i % 3 ? RHN_WQE_F_SIGNALED : 0));
  post_and_complete_at_once(v, 9);
  const auto e = take_entries(*p.cq_a);
  ASSERT_EQ(e.size(), 1u) << shape(e);
  ASSERT_EQ(e[0].count(), 6u);
  const uint64_t want[] = {1, 2, 4, 5, 7, 8};
  for (size_t i = 0; i < 6; i++) EXPECT_EQ(e[0].completions[i].wr_id, want[i]);
  EXPECT_EQ(p.qp_a->sq_outstanding(), 1u) << "the last, unsignalled, stays";
}

TEST_F(CqeRuns, ReceivesOfOnePassAreOneEntry) {
  CounterSnap snap(nb());
  sends_to_b_at_once(8);
  const auto v = take_entries(*p.cq_b);
  ASSERT_EQ(v.size(), 1u) << shape(v);
  EXPECT_TRUE(v[0].run());
  EXPECT_EQ(v[0].cqe.opcode, RHN_CQE_OP_RECV);
  EXPECT_EQ(v[0].cqe.byte_len, 32u);
  EXPECT_EQ(v[0].cqe.wqe_index, 7u);
  for (uint32_t i = 0; i < 8; i++) {
    EXPECT_EQ(v[0].completions[i].wr_id, 100u + i);
    EXPECT_EQ(v[0].completions[i].byte_len, 32u);
    EXPECT_EQ(v[0].completions[i].wqe_index, i);
  }
  EXPECT_EQ(snap.delta(RHN_CNT_CQE_WRITES), 1u);
  EXPECT_EQ(snap.delta(RHN_CNT_CQES_SAVED), 7u);
}

TEST_F(CqeRuns, ASolicitedReceiveIsAnEntryOfItsOwn) {
  for (uint32_t i = 0; i < 5; i++)
    ASSERT_TRUE(p.qp_b->post_recv(100 + i, {dst.sge(64 * i, 64)}));
  c->run_for(10'000);
  c->stall(1, 200'000);
  for (uint32_t i = 0; i < 5; i++)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(i, {src.sge(0, 32)}, RHN_OP_SEND,
                RHN_WQE_F_SIGNALED | (i == 2 ? RHN_WQE_F_SOLICITED : 0))));
  c->run_for(400'000);
  const auto v = take_entries(*p.cq_b);
  EXPECT_EQ(shape(v), "run2 one1 run2 ");
}

TEST_F(CqeRuns, AnotherLengthEndsAReceiveRun) {
  for (uint32_t i = 0; i < 6; i++)
    ASSERT_TRUE(p.qp_b->post_recv(100 + i, {dst.sge(64 * i, 64)}));
  c->run_for(10'000);
  c->stall(1, 200'000);
  for (uint32_t i = 0; i < 6; i++)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(i, {src.sge(0, i < 3 ? 32 : 16)}, RHN_OP_SEND)));
  c->run_for(400'000);
  const auto v = take_entries(*p.cq_b);
  ASSERT_EQ(shape(v), "run3 run3 ");
  EXPECT_EQ(v[0].completions[2].byte_len, 32u);
  EXPECT_EQ(v[1].completions[0].byte_len, 16u);
  EXPECT_EQ(v[1].completions[2].wr_id, 105u);
}

TEST_F(CqeRuns, AnotherQpEndsTheRun) {
  // A second QP of A on the same CQ, to its own peer QP on B.
  QpInit init;
  init.send_cq = p.cq_a.get();
  auto qp2 = p.ctx_a->create_qp(init);
  init.send_cq = p.cq_b.get();
  auto peer2 = p.ctx_b->create_qp(init);
  ASSERT_TRUE(qp2 && peer2);
  ASSERT_TRUE(connect_rc(*qp2, 1, peer2->qpn()));
  ASSERT_TRUE(connect_rc(*peer2, 0, qp2->qpn()));
  // 3 on the first QP, 3 on the second, 3 on the first, each batch sent
  // before the next is posted, while B holds them all: B's answers come
  // in that order, and A takes them in one pass.
  const uint64_t tx0 = na().counter(RHN_CNT_TX_PACKETS);
  c->stall(1, 200'000);
  for (uint64_t i = 1; i <= 9; i++) {
    ASSERT_TRUE((i > 3 && i <= 6 ? *qp2 : *p.qp_a).post_send(write(i)));
    if (i % 3) continue;
    ASSERT_TRUE(c->run_until(
        [&] { return na().counter(RHN_CNT_TX_PACKETS) >= tx0 + i; },
        1'000'000));
  }
  c->run_for(400'000);
  const auto v = take_entries(*p.cq_a);
  ASSERT_EQ(shape(v), "run3 run3 run3 ");
  const uint32_t qpns[] = {p.qp_a->qpn(), qp2->qpn(), p.qp_a->qpn()};
  uint64_t id = 1;
  for (size_t k = 0; k < 3; k++) {
    EXPECT_EQ(v[k].cqe.qpn, qpns[k]);
    for (const Completion& x : v[k].completions) {
      EXPECT_EQ(x.qpn, qpns[k]);
      EXPECT_EQ(x.wr_id, id++);
    }
  }
}

TEST_F(CqeRuns, AnImmediateIsAnEntryOfItsOwn) {
  std::vector<SendWr> v = writes(*this, 1, 5);
  v[2].opcode = RHN_OP_WRITE_IMM;
  v[2].imm_data = 7;
  for (uint32_t i = 0; i < 5; i++)
    ASSERT_TRUE(p.qp_b->post_recv(100 + i, {dst.sge(64 * i, 64)}));
  post_and_complete_at_once(v, 5);
  const auto e = take_entries(*p.cq_a);
  ASSERT_EQ(shape(e), "run2 one1 run2 ");
  EXPECT_EQ(e[1].completions[0].wr_id, 3u);
  EXPECT_EQ(e[2].completions[1].wr_id, 5u);
}

TEST_F(CqeRuns, AnErrorEndsTheRunAndIsNeverInOne) {
  std::vector<SendWr> v = writes(*this, 1, 5);
  v[2].sges[0].lkey ^= 0x100;  // a key the NIC does not know
  post_and_complete_at_once(v, 2);
  const auto e = take_entries(*p.cq_a);
  ASSERT_GE(e.size(), 3u) << shape(e);
  EXPECT_EQ(e[0].count(), 2u) << shape(e);
  EXPECT_EQ(e[0].completions[1].wr_id, 2u);
  EXPECT_FALSE(e[1].run());
  EXPECT_EQ(e[1].cqe.status, RHN_CQE_LOC_PROT_ERR);
  // The QP went to the error state: what followed is flushed, one each.
  for (size_t i = 2; i < e.size(); i++) {
    EXPECT_FALSE(e[i].run());
    EXPECT_EQ(e[i].cqe.status, RHN_CQE_WR_FLUSH_ERR);
  }
}

TEST_F(CqeRuns, AStatusWordIsStoredAfterTheRunBeforeIt) {
  // W3 is unsignalled with a status word. Software that sees the word
  // must find the CQEs of W1 and W2: the run holding them is written
  // before the word is stored, and W4 starts another run.
  Region word = make_region(*p.ctx_a, 64, kAllAccess, 0, 0);
  std::vector<SendWr> v = writes(*this, 1, 4);
  v[2].flags = RHN_WQE_F_STATUS_WORD;
  v[2].status_addr = word.va();
  v[2].status_lkey = word.key();
  const uint64_t first_entry = p.cq_a->memory().buf.bus(0);
  uint64_t word_at_first_entry = ~uint64_t{0};
  na().bus.after_publish = [&](uint64_t bus, size_t) {
    if (bus == first_entry) word_at_first_entry = word.buf.load64(0);
  };
  post_and_complete_at_once(v, 4);
  na().bus.after_publish = nullptr;
  EXPECT_EQ(word_at_first_entry, 0u) << "the word came before W1's CQE";
  EXPECT_TRUE(word.buf.load64(0) & RHN_STATUS_WORD_DONE);
  const auto e = take_entries(*p.cq_a);
  ASSERT_EQ(shape(e), "run2 one1 ");
  EXPECT_EQ(e[1].completions[0].wr_id, 4u);
}

TEST_F(CqeRuns, AnEventWritesTheRunFirstAndCountsCompletions) {
  // Armed: the first completion raises the event, which writes what it
  // joined; the rest form a run of their own.
  p.cq_a->arm();
  c->run_for(10'000);
  post_and_complete_at_once(writes(*this, 1, 6), 6);
  EXPECT_EQ(na().driver->completion_events(p.cq_a->cqn()), 1u);
  EXPECT_EQ(shape(take_entries(*p.cq_a)), "one1 run5 ");
}

TEST_F(CqeRuns, AModeratedEventCountsEachCompletionOfARun) {
  ASSERT_TRUE(
      na().driver->modify_cq(p.ctx_a->index(), p.cq_a->cqn(), 4, 4000).ok());
  p.cq_a->arm();
  c->run_for(10'000);
  post_and_complete_at_once(writes(*this, 1, 6), 6);
  // The fourth completion raised the event: the run of four before it.
  EXPECT_EQ(na().driver->completion_events(p.cq_a->cqn()), 1u);
  EXPECT_EQ(shape(take_entries(*p.cq_a)), "run4 run2 ");
}

TEST_F(CqeRuns, ARunIsWrittenAtTheEndOfThePassThatFormedIt) {
  const uint64_t tx0 = na().counter(RHN_CNT_TX_PACKETS);
  for (const SendWr& w : writes(*this, 1, 4)) ASSERT_TRUE(p.qp_a->post_send(w));
  ASSERT_TRUE(c->run_until(
      [&] { return na().counter(RHN_CNT_TX_PACKETS) >= tx0 + 4; }, 1'000'000));
  c->stall(0, 200'000);
  c->run_for(200'000);
  // Step by step: the poll that completes them leaves the entry written,
  // with no later completion, arm or timer to push it out.
  const uint64_t done = na().counter(RHN_CNT_COMPLETIONS);
  for (int i = 0; i < 10000 && na().counter(RHN_CNT_COMPLETIONS) == done; i++)
    c->step();
  ASSERT_EQ(na().counter(RHN_CNT_COMPLETIONS), done + 4);
  rhn_cqe e;
  ASSERT_TRUE(p.cq_a->peek_entry(&e)) << "the run waits for something";
  EXPECT_EQ(e.run_extra, 3u);
  // Completions of later passes are entries of their own.
  ASSERT_EQ(take_entries(*p.cq_a).size(), 1u);
  for (uint64_t i = 5; i <= 6; i++) {
    ASSERT_TRUE(p.qp_a->post_send(write(i)));
    ASSERT_TRUE(
        c->run_until([&] { return p.cq_a->peek_entry(&e); }, 1'000'000));
    const auto v = take_entries(*p.cq_a);
    ASSERT_EQ(shape(v), "one1 ");
    EXPECT_EQ(v[0].completions[0].wr_id, i);
  }
}

TEST_F(CqeRuns, ARunHoldsAtMostTheCqsDepth) {
  start(RHN_CREATE_CQ_F_RUNS, 3);  // 8 entries
  post_and_complete_at_once(writes(*this, 1, 20), 20);
  const auto v = take_entries(*p.cq_a);
  EXPECT_EQ(shape(v), "run8 run8 run4 ");
  EXPECT_EQ(na().counter(RHN_CNT_CQ_OVERFLOWS), 0u);
  uint64_t id = 1;
  for (const Entry& e : v)
    for (const Completion& k : e.completions) EXPECT_EQ(k.wr_id, id++);
}

TEST_F(CqeRuns, ACqSizedForItsCompletionsNeverOverflowsBecauseOfRuns) {
  // 8 entries and 8 completions outstanding at a time, in runs or not:
  // the software polls between bursts, as an application sized so does.
  start(RHN_CREATE_CQ_F_RUNS, 3);
  for (int round = 0; round < 4; round++) {
    post_and_complete_at_once(writes(*this, 1 + 8 * round, 8), 8);
    uint32_t n = 0;
    for (const Entry& e : take_entries(*p.cq_a)) n += e.count();
    EXPECT_EQ(n, 8u) << "round " << round;
  }
  EXPECT_EQ(na().counter(RHN_CNT_CQ_OVERFLOWS), 0u);
}

TEST_F(CqeRuns, UnknownCreateFlagsAreRefused) {
  const auto r = p.ctx_a->create_cq(4, 0x80);
  EXPECT_FALSE(r);
  EXPECT_EQ(p.ctx_a->last.status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(p.ctx_a->last.detail, 5u);
  EXPECT_TRUE(na().driver->reg32(RHN_REG_CAPS) & RHN_CAP_CQE_RUNS);
}

TEST_F(CqeRuns, SrqReceivesAreNeverInARun) {
  auto srq = p.ctx_b->create_srq(6);
  ASSERT_TRUE(srq);
  QpInit init;
  init.send_cq = p.cq_b.get();
  init.srq = srq.get();
  init.rq_log_depth = 0;
  auto qb = p.ctx_b->create_qp(init);
  init.srq = nullptr;
  init.rq_log_depth = 7;
  init.send_cq = p.cq_a.get();
  auto qa = p.ctx_a->create_qp(init);
  ASSERT_TRUE(qa && qb);
  ASSERT_TRUE(connect_rc(*qa, 1, qb->qpn()));
  ASSERT_TRUE(connect_rc(*qb, 0, qa->qpn()));
  for (uint32_t i = 0; i < 4; i++)
    ASSERT_TRUE(srq->post_recv(100 + i, {dst.sge(64 * i, 64)}));
  c->run_for(10'000);
  c->stall(1, 200'000);
  for (uint32_t i = 0; i < 4; i++)
    ASSERT_TRUE(qa->post_send(send_wr(i, {src.sge(0, 32)})));
  c->run_for(400'000);
  EXPECT_EQ(shape(take_entries(*p.cq_b)), "one1 one1 one1 one1 ");
}

}  // namespace
}  // namespace rhinet::test
