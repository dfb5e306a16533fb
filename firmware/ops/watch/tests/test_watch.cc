// SPDX-License-Identifier: BSD-2-Clause
// Watches (RHN_OP_WATCH, ops/watch): an endpoint arms a one-shot watch on
// one of its process's areas; the next PUSH or word-changing atomic by
// area that lands there writes one RHN_CQE_OP_WATCH CQE on the endpoint's
// receive CQ and raises its completion event (queues.md, "Watches").
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kArea = RHN_AREA_KEY(0, 7);
constexpr uint32_t kOther = RHN_AREA_KEY(0, 8);
constexpr size_t kAreaBytes = 64 * 1024;

class Watch : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    cfg.memory_bytes = 64u << 20;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    // The watcher on node 0 (two areas side by side in one region), the
    // writer on node 1.
    w = make_context_ep(*c, 0);
    x = make_context_ep(*c, 1);
    ASSERT_TRUE(w.qp && x.qp);
    mem = make_region(*w.ctx, 2 * kAreaBytes, kAllAccess, 0, 0);
    ASSERT_TRUE(w.ctx->register_area(kArea, mem.mr, mem.va(), kAreaBytes).ok());
    ASSERT_TRUE(
        w.ctx->register_area(kOther, mem.mr, mem.va(kAreaBytes), kAreaBytes)
            .ok());
    src = make_region(*x.ctx, kAreaBytes, kAllAccess, 33);
    result = make_region(*x.ctx, 64, kAllAccess, 0, 0);
  }

  // A WATCH of `area` posted on `e`, and its send completion.
  Completion arm(ContextEp& e, uint32_t area) {
    SendWr wr;
    wr.wr_id = next_id++;
    wr.opcode = RHN_OP_WATCH;
    wr.flags = RHN_WQE_F_SIGNALED;
    wr.remote_key = area;
    if (!e.qp->post_send(wr)) return Completion{};
    return wait_one(*c, *e.cq, 20'000'000);
  }
  // x PUSHes `len` bytes of its source by area to w's `area` at `off`, and
  // waits for its own completion.
  void push(uint32_t area, size_t off, size_t len) {
    SendWr wr = rdma_wr(next_id++, RHN_OP_WRITE, {src.sge(0, len)}, off, area,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = w.node;
    wr.dst_qpn = w.qpn();
    ASSERT_TRUE(x.qp->post_send(wr));
    const Completion done = wait_one(*c, *x.cq, 50'000'000);
    ASSERT_TRUE(done.ok()) << describe(done);
  }
  // x's atomic `aop` (RHN_OP_ATOMIC_EXT) on the 8-byte word at `off` of
  // w's area, waited for.
  void atomic(uint32_t aop, size_t off, uint64_t operand, uint64_t swap = 0) {
    SendWr wr;
    wr.wr_id = next_id++;
    wr.opcode = RHN_OP_ATOMIC_EXT;
    wr.flags = RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA;
    wr.imm_data = aop;
    wr.remote_addr = off;
    wr.remote_key = kArea;
    wr.compare_add = operand;
    wr.swap = swap;
    wr.sges.push_back(result.sge(0, 8));
    wr.dst_node = w.node;
    wr.dst_qpn = w.qpn();
    ASSERT_TRUE(x.qp->post_send(wr));
    const Completion done = wait_one(*c, *x.cq, 50'000'000);
    ASSERT_TRUE(done.ok()) << describe(done);
  }
  // A second endpoint of w's process, with a CQ of its own.
  void second_endpoint(ContextEp& e) {
    auto cq = w.ctx->create_cq(8);
    QpInit qi;
    qi.type = RHN_QP_ENDPOINT;
    qi.send_cq = cq.get();
    auto ep = w.ctx->create_qp(qi);
    ASSERT_TRUE(ep && activate_datagram(*ep, 0));
    e.node = 0;
    e.cq = std::move(cq);
    e.qp = std::move(ep);
  }
  // Everything on `cq` after the fabric has been quiet a while.
  std::vector<Completion> settle(SimCq& cq) {
    c->run_for(2'000'000);
    return cq.poll();
  }
  static bool is_watch(const Completion& k) {
    return k.opcode == RHN_CQE_OP_WATCH && !k.is_send();
  }
  uint64_t count(unsigned idx) { return c->node(0).counter(idx); }

  std::unique_ptr<SimCluster> c;
  ContextEp w, x;
  Region mem, src, result;
  uint64_t next_id = 1;
};

TEST_F(Watch, ArmingCompletesOnTheSendCq) {
  const Completion a = arm(w, kArea);
  ASSERT_TRUE(a.ok()) << describe(a);
  EXPECT_TRUE(a.is_send());
  EXPECT_EQ(a.opcode, RHN_CQE_OP_WATCH);
  EXPECT_EQ(a.wr_id, next_id - 1);
  EXPECT_TRUE(settle(*w.cq).empty()) << "nothing landed: nothing fires";
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 0u);
}

TEST_F(Watch, FiresOnceOnAPushWithTheDataInPlace) {
  ASSERT_TRUE(arm(w, kArea).ok());
  // Armed for an event, as a sleeping process is.
  w.cq->arm();
  const uint32_t events = c->node(0).driver->completion_events(w.cq->cqn());
  // Several packets: the CQE comes with the last, after all of them.
  constexpr size_t kLen = 5 * RHN_WIRE_MTU + 123;
  push(kArea, 40, kLen);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  const Completion& k = got[0];
  EXPECT_TRUE(is_watch(k)) << describe(k);
  EXPECT_TRUE(k.ok());
  EXPECT_EQ(k.qpn, w.qpn());
  EXPECT_EQ(k.vendor_err, kArea);
  EXPECT_EQ(k.byte_len, kLen);
  EXPECT_EQ(k.src_node, x.node);
  EXPECT_EQ(k.src_qpn, x.qpn());
  EXPECT_EQ(mem.buf.bytes(40, kLen), src.buf.bytes(0, kLen));
  EXPECT_EQ(c->node(0).driver->completion_events(w.cq->cqn()), events + 1)
      << "the CQE raised the armed CQ's event";
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 1u);
  EXPECT_EQ(count(RHN_CNT_WATCH_STALE), 0u);
}

TEST_F(Watch, FiresOnAnAtomicThatChangesTheWord) {
  mem.buf.store64(64, 5);
  ASSERT_TRUE(arm(w, kArea).ok());
  // A word that stays as it was wakes nobody: a fetch, a failed compare.
  atomic(RHN_AOP_FETCH, 64, 0);
  atomic(RHN_AOP_CMP_SWAP, 64, 6, 9);
  EXPECT_TRUE(settle(*w.cq).empty());
  atomic(RHN_AOP_ADD, 64, 3);
  EXPECT_EQ(mem.buf.load64(64), 8u);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0])) << describe(got[0]);
  EXPECT_EQ(got[0].byte_len, 8u) << "an atomic reports its word's width";
  EXPECT_EQ(got[0].vendor_err, kArea);
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 1u);
}

TEST_F(Watch, AWriteToAnotherAreaDoesNotFire) {
  ASSERT_TRUE(arm(w, kArea).ok());
  push(kOther, 0, 256);
  EXPECT_TRUE(settle(*w.cq).empty());
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 0u);
  // Still armed for its own area.
  push(kArea, 0, 256);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0]));
}

// Removing the disarm in watch_fire fails this test: the second PUSH would
// write a second CQE.
TEST_F(Watch, IsOneShot) {
  ASSERT_TRUE(arm(w, kArea).ok());
  push(kArea, 0, 64);
  push(kArea, 64, 64);
  atomic(RHN_AOP_ADD, 128, 1);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0]));
  EXPECT_EQ(got[0].byte_len, 64u);
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 1u);
}

TEST_F(Watch, ArmingAgainAfterItFiredWorks) {
  for (int round = 0; round < 3; round++) {
    ASSERT_TRUE(arm(w, kArea).ok()) << round;
    push(kArea, size_t(round) * 8, 8);
    const auto got = settle(*w.cq);
    ASSERT_EQ(got.size(), 1u) << round << ": " << describe(got);
    EXPECT_TRUE(is_watch(got[0]));
  }
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 3u);
}

TEST_F(Watch, ArmingAgainReplacesTheWatch) {
  ContextEp w2;
  ASSERT_NO_FATAL_FAILURE(second_endpoint(w2));
  ASSERT_TRUE(arm(w, kArea).ok());
  ASSERT_TRUE(arm(w2, kArea).ok());
  push(kArea, 0, 32);
  EXPECT_TRUE(settle(*w.cq).empty()) << "the first watch was replaced";
  const auto got = settle(*w2.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0]));
  EXPECT_EQ(got[0].qpn, w2.qpn());
  // (The QP goes before its CQ.)
  w2.qp.reset();
}

TEST_F(Watch, AWatchOfADestroyedEndpointIsDroppedAndCounted) {
  ContextEp w2;
  ASSERT_NO_FATAL_FAILURE(second_endpoint(w2));
  ASSERT_TRUE(arm(w2, kArea).ok());
  const uint32_t qpn = w2.qpn();
  ASSERT_TRUE(c->node(0)
                  .driver->destroy(RHN_ADMIN_DESTROY_QP, w.ctx->index(), qpn)
                  .ok());
  push(kArea, 0, 32);
  EXPECT_TRUE(settle(*w2.cq).empty());
  EXPECT_EQ(count(RHN_CNT_WATCH_STALE), 1u);
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 0u);
  // Dropped, not waiting: a later landing counts nothing more.
  push(kArea, 0, 32);
  c->run_for(1'000'000);
  EXPECT_EQ(count(RHN_CNT_WATCH_STALE), 1u);
  w2.qp.reset();
}

// Removing the generation check in watch_fire fails this test: the reset
// endpoint is valid again and would get the CQE of its earlier life's
// watch.
TEST_F(Watch, AWatchOfAnEndpointResetSinceIsDroppedAndCounted) {
  ASSERT_TRUE(arm(w, kArea).ok());
  ASSERT_TRUE(w.qp->to_reset().ok());
  ASSERT_TRUE(activate_datagram(*w.qp, 0));
  push(kArea, 0, 32);
  EXPECT_TRUE(settle(*w.cq).empty());
  EXPECT_EQ(count(RHN_CNT_WATCH_STALE), 1u);
  EXPECT_EQ(count(RHN_CNT_WATCHES_FIRED), 0u);
  // The endpoint's new life arms its own.
  ASSERT_TRUE(arm(w, kArea).ok());
  push(kArea, 0, 32);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0]));
}

TEST_F(Watch, AnotherProcessesAreaIsRefusedAndCounted) {
  // Another process on the watcher's node with an area of its own key.
  ContextEp other = make_context_ep(*c, 0);
  ASSERT_TRUE(other.qp);
  Region om = make_region(*other.ctx, 4096, kAllAccess, 0, 0);
  constexpr uint32_t kTheirs = RHN_AREA_KEY(0, 9);
  ASSERT_TRUE(other.ctx->register_area(kTheirs, om.mr, om.va(), 4096).ok());
  for (const uint32_t key :
       {kTheirs, RHN_AREA_KEY(0, 10), RHN_AREA_KEY(3, 7)}) {
    const Completion r = arm(w, key);
    EXPECT_EQ(r.status, RHN_CQE_GENERAL_ERR) << describe(r);
    EXPECT_EQ(r.vendor_err, uint32_t(RHN_SYN_NO_WATCH_AREA)) << describe(r);
  }
  EXPECT_EQ(count(RHN_CNT_WATCH_REFUSED), 3u);
  // Nothing armed on their area, and the refusals left the endpoint going.
  ASSERT_TRUE(arm(w, kArea).ok());
  push(kArea, 0, 8);
  const auto got = settle(*w.cq);
  ASSERT_EQ(got.size(), 1u) << describe(got);
  EXPECT_TRUE(is_watch(got[0]));
  EXPECT_TRUE(settle(*other.cq).empty());
}

TEST_F(Watch, MalformedWatchesAreRefused) {
  // Data, or the area flag: a malformed WQE (the endpoint goes to error,
  // as for any).
  SendWr wr;
  wr.wr_id = 99;
  wr.opcode = RHN_OP_WATCH;
  wr.remote_key = kArea;
  wr.flags = RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA;
  ASSERT_TRUE(w.qp->post_send(wr));
  const Completion r = wait_one(*c, *w.cq, 20'000'000);
  EXPECT_EQ(r.status, RHN_CQE_LOC_QP_OP_ERR) << describe(r);
  EXPECT_EQ(r.vendor_err, uint32_t(RHN_SYN_BAD_WQE));
  // Not an endpoint: refused.
  RcPair p = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region pm = make_region(*p.ctx_a, 4096, kAllAccess, 0, 0);
  ASSERT_TRUE(p.ctx_a->register_area(kArea, pm.mr, pm.va(), 4096).ok());
  wr.flags = RHN_WQE_F_SIGNALED;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  const Completion q = wait_one(*c, *p.cq_a, 20'000'000);
  EXPECT_EQ(q.status, RHN_CQE_LOC_QP_OP_ERR) << describe(q);
  EXPECT_EQ(q.vendor_err, uint32_t(RHN_SYN_BAD_OPCODE));
  EXPECT_EQ(count(RHN_CNT_WATCH_REFUSED), 0u);
}

TEST_F(Watch, TheNicAnnouncesIt) {
  EXPECT_TRUE(c->node(0).driver->reg32(RHN_REG_CAPS) & RHN_CAP_WATCH);
}

}  // namespace
}  // namespace rhinet::test
