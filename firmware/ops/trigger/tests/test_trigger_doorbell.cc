// SPDX-License-Identifier: BSD-2-Clause
// The TRIGGER doorbell when the kick FIFO overflows: adds go to the
// doorbell block's pending sums, not through the FIFO, so none is lost
// (Documentation/hardware/triggered.md, "Adding to a counter").
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kFifo = 16;  // kick FIFO entries of the engines here

ClusterConfig small_fifo() {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.engine.kick_fifo_entries = kFifo;
  return cfg;
}

class TriggerDoorbell : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(small_fifo());
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1, {});
    ASSERT_TRUE(p.ok);
  }
  SimContext& B() { return *p.ctx_b; }
  fw::Engine& nic() { return *c->node(1).engine; }
  uint32_t counter(SimContext& x, uint64_t value) {
    const AdminResult r = x.driver().create_trigger(x.index(), value, 0);
    EXPECT_TRUE(r.ok()) << int(r.status);
    return r.result;
  }
  uint64_t value_of(SimContext& x, uint32_t handle) {
    uint64_t v = ~uint64_t{0};
    EXPECT_TRUE(x.driver().query_trigger(x.index(), handle, &v).ok());
    return v;
  }
  // The store a CPU makes to page `page`; no engine poll in between.
  void add(uint32_t page, uint32_t handle, uint32_t addend) {
    nic().doorbell_write(page, RHN_DB_TRIGGER,
                         rhn_db_trigger_value(handle, addend), 8);
  }
  // The engines run until the FIFO is drained. Admin commands wait for
  // this: a lost admin kick is not recovered by the rescan.
  void settle() { c->run_for(1'000'000); }
  // A kick that takes a FIFO entry and changes nothing (B's RQ is empty).
  void idle_kick() {
    nic().doorbell_write(B().index(), RHN_DB_RQ, p.qp_b->qpn(), 4);
  }
  void park_write(uint64_t wr_id, uint32_t handle, uint64_t threshold,
                  const Region& src, const Region& dst) {
    SendWr wr =
        rdma_wr(wr_id, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key());
    wr.xflags = RHN_WQE_X_TRIGGERED;
    wr.trigger.counter = handle;
    wr.trigger.threshold = threshold;
    ASSERT_TRUE(p.qp_b->post_send(wr));
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

TEST_F(TriggerDoorbell, AddsBeyondAFullKickFifoAllCount) {
  const uint32_t h = counter(B(), 0);
  Region src = make_region(B(), 64, kAllAccess, 5);
  Region dst = make_region(*p.ctx_a, 64, kAllAccess, 0, 0);
  Region late = make_region(*p.ctx_a, 64, kAllAccess, 0, 0x77);
  constexpr uint32_t kAdds = 200;
  constexpr uint64_t kSum = uint64_t{kAdds} * (kAdds + 1) / 2;
  park_write(1, h, kSum, src, dst);
  park_write(2, h, kSum + 1, src, late);  // one short: must stay parked
  c->run_for(1'000'000);
  ASSERT_TRUE(p.cq_b->poll().empty());
  CounterSnap nic_counts(c->node(1));
  // The FIFO full of other kicks before the first add, and between adds.
  for (uint32_t i = 0; i < kFifo; i++) idle_kick();
  for (uint32_t i = 1; i <= kAdds; i++) {
    add(B().index(), h, i);
    idle_kick();
  }
  const Completion w = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(w.wr_id, 1u);
  EXPECT_EQ(dst.buf.bytes(), pattern(5, 64));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_b->poll().empty());  // fired once; the other waits
  EXPECT_EQ(late.buf.bytes(), std::vector<uint8_t>(64, 0x77));
  EXPECT_GT(nic_counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  EXPECT_EQ(value_of(B(), h), kSum);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_FIRED), 1u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 0u);
  // One more reaches the second WRITE's threshold.
  add(B().index(), h, 1);
  const Completion w2 = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(w2.ok()) << describe(w2);
  EXPECT_EQ(w2.wr_id, 2u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_FIRED), 2u);
}

TEST_F(TriggerDoorbell, AQueryAfterLostKicksSeesEveryAdd) {
  const uint32_t h = counter(B(), 7);
  CounterSnap nic_counts(c->node(1));
  for (uint32_t i = 0; i < kFifo; i++) idle_kick();
  for (uint32_t i = 0; i < 1000; i++) add(B().index(), h, 3);
  settle();
  EXPECT_EQ(value_of(B(), h), 7u + 3000u);
  EXPECT_GT(nic_counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 0u);
}

TEST_F(TriggerDoorbell, SumsBeyond48BitsStillCount) {
  // 2^16 adds of 2^32 - 1 fill the pending sum to just short of 2^48;
  // the ones after it take the FIFO (it has room), none is dropped.
  const uint32_t h = counter(B(), 11);
  constexpr uint64_t kAdds = (uint64_t{1} << 16) + 4;
  CounterSnap nic_counts(c->node(1));
  for (uint64_t i = 0; i < kAdds; i++) add(B().index(), h, 0xffffffffu);
  settle();
  EXPECT_EQ(value_of(B(), h), 11u + kAdds * 0xffffffffull);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 0u);
}

TEST_F(TriggerDoorbell, AddsToADestroyedCounterDoNotReachItsSuccessor) {
  const uint32_t old = counter(B(), 0);
  for (uint32_t i = 0; i < 10; i++) add(B().index(), old, 1);
  ASSERT_TRUE(
      B().driver().destroy(RHN_ADMIN_DESTROY_TRIGGER, B().index(), old).ok());
  const uint32_t now = counter(B(), 0);
  ASSERT_EQ(now & RHN_TRIGGER_INDEX_MASK, old & RHN_TRIGGER_INDEX_MASK);
  ASSERT_NE(now, old);
  CounterSnap nic_counts(c->node(1));
  for (uint32_t i = 0; i < kFifo; i++) idle_kick();
  for (uint32_t i = 0; i < 5; i++) add(B().index(), old, 100);
  for (uint32_t i = 0; i < 3; i++) add(B().index(), now, 1);
  settle();
  EXPECT_EQ(value_of(B(), now), 3u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 5u);
}

TEST_F(TriggerDoorbell, AnotherContextsHandleIsDroppedAndCounted) {
  auto other = c->node(1).open_context();
  ASSERT_TRUE(other->ok());
  const uint32_t theirs = counter(*other, 50);
  CounterSnap nic_counts(c->node(1));
  for (uint32_t i = 0; i < 4; i++) add(B().index(), theirs, 1);
  add(other->index(), theirs, 2);  // its own page reaches it
  EXPECT_EQ(value_of(*other, theirs), 52u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 4u);
}

TEST_F(TriggerDoorbell, AContextDestroyedRightAfterItsAdds) {
  auto other = c->node(1).open_context();
  ASSERT_TRUE(other->ok());
  const uint32_t page = other->index();
  const uint32_t h = counter(*other, 0);
  for (uint32_t i = 0; i < 20; i++) add(page, h, 1);
  // DESTROY_CONTEXT (its PD first), its kick behind the adds' kick.
  ASSERT_TRUE(
      B().driver().destroy(RHN_ADMIN_DESTROY_PD, page, other->pdn()).ok());
  ASSERT_TRUE(B().driver().destroy_context(page).ok());
  EXPECT_EQ(B().driver().query_trigger(page, h, nullptr).status,
            RHN_ADMIN_BAD_HANDLE);
  CounterSnap nic_counts(c->node(1));
  // A counter in the freed entry, of B: the old handle reaches nothing.
  const uint32_t mine = counter(B(), 9);
  for (uint32_t i = 0; i < 6; i++) add(page, h, 1);
  for (uint32_t i = 0; i < 6; i++) add(B().index(), h, 1);
  settle();
  EXPECT_EQ(value_of(B(), mine), 9u);
  EXPECT_EQ(nic_counts.delta(RHN_CNT_TRIGGER_DROPPED_ADDS), 12u);
}

}  // namespace
}  // namespace rhinet::test
