// SPDX-License-Identifier: BSD-2-Clause
// Completion event moderation (RHN_ADMIN_MODIFY_CQ, what ibv_modify_cq
// sets): an armed CQ raises one event for `count` completions, or
// `period_us` after the first of them, and no event is lost, however the
// setting, the arm and the CQ's life interleave
// (Documentation/hardware/admin.md, "MODIFY_CQ").
#include "test_helpers.h"

namespace rhinet::test {
namespace {

class CqModeration : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    src = make_region(*p.ctx_a, 64, kAllAccess, 3);
    dst = make_region(*p.ctx_b, 64);
    arm_eq();
  }
  SimNode& nb() { return c->node(1); }
  void arm_eq() {
    nb().driver->write64(
        RHN_REG_EQ_DOORBELL,
        (uint64_t(nb().driver->kernel_eqn()) << RHN_EQ_DB_EQN_SHIFT) |
            RHN_EQ_DB_ARM);
  }
  AdminResult moderate(uint16_t count, uint16_t period_us) {
    return nb().driver->modify_cq(p.ctx_b->index(), p.cq_b->cqn(), count,
                                  period_us);
  }
  uint32_t events() { return nb().driver->completion_events(p.cq_b->cqn()); }
  // A SEND from A that B receives (one completion on B's CQ).
  void send_to_b(uint64_t id) { send_a_to_b(*c, p, src, dst, id); }

  std::unique_ptr<SimCluster> c;
  RcPair p;
  Region src, dst;
};

TEST_F(CqModeration, WithoutItTheFirstCompletionRaisesTheEvent) {
  p.cq_b->arm();
  send_to_b(1);
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

TEST_F(CqModeration, CountCompletionsRaiseOneEvent) {
  ASSERT_TRUE(moderate(4, 4000).ok());
  p.cq_b->arm();
  for (uint64_t i = 1; i <= 3; i++) {
    send_to_b(i);
    EXPECT_EQ(events(), 0u) << "event after " << i << " of 4 completions";
  }
  send_to_b(4);
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
  // One-shot, as ever: more completions raise nothing until re-armed.
  send_to_b(5);
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

TEST_F(CqModeration, ThePeriodRaisesTheEventAfterTheFirstCompletion) {
  ASSERT_TRUE(moderate(16, 200).ok());
  p.cq_b->arm();
  send_to_b(1);
  EXPECT_EQ(events(), 0u) << "raised before the period ended";
  c->run_for(300'000);
  EXPECT_EQ(events(), 1u) << "the period ended without an event";
}

TEST_F(CqModeration, CompletionsBeforeTheArmKickCount) {
  // Completions added between the arm request and its kick are after the
  // request: with moderation they count towards the event like later ones.
  ASSERT_TRUE(moderate(2, 4000).ok());
  p.cq_b->arm();
  send_to_b(1);
  send_to_b(2);
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

TEST_F(CqModeration, TurningItOffRaisesTheOwedEventAtOnce) {
  ASSERT_TRUE(moderate(16, 4000).ok());
  p.cq_b->arm();
  send_to_b(1);
  ASSERT_EQ(events(), 0u);
  ASSERT_TRUE(moderate(0, 0).ok());
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

TEST_F(CqModeration, LoweringTheCountToWhatCameRaisesIt) {
  ASSERT_TRUE(moderate(16, 4000).ok());
  p.cq_b->arm();
  send_to_b(1);
  send_to_b(2);
  ASSERT_EQ(events(), 0u);
  ASSERT_TRUE(moderate(2, 4000).ok());
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

TEST_F(CqModeration, ACqDestroyedWithAnEventOwedLeavesNothingToItsSuccessor) {
  ASSERT_TRUE(moderate(16, 200).ok());
  p.cq_b->arm();
  send_to_b(1);
  ASSERT_EQ(events(), 0u);
  const uint32_t cqn = p.cq_b->cqn(), ctx = p.ctx_b->index();
  ASSERT_TRUE(
      nb().driver->destroy(RHN_ADMIN_DESTROY_QP, ctx, p.qp_b->qpn()).ok());
  ASSERT_TRUE(nb().driver->destroy(RHN_ADMIN_DESTROY_CQ, ctx, cqn).ok());
  p.qp_b.reset();
  p.cq_b.reset();
  // The next CQ of the context takes the same number: it must not inherit
  // the old life's deadline, count or arm.
  p.cq_b = p.ctx_b->create_cq(6);
  ASSERT_TRUE(p.cq_b);
  ASSERT_EQ(p.cq_b->cqn(), cqn);
  c->run_for(300'000);
  EXPECT_EQ(events(), 0u) << "the destroyed CQ's event reached its successor";
  EXPECT_TRUE(c->all_up());
}

TEST_F(CqModeration, ForeignCqsAreRefused) {
  rhn_device_attr a{};
  ASSERT_TRUE(nb().driver->query_device(&a).ok());
  EXPECT_EQ(a.max_cq_mod_count, 0xffffu);
  EXPECT_EQ(a.max_cq_mod_period_us, 0xffffu);
  // Another context's CQ, or none: as if it did not exist.
  const AdminResult f =
      nb().driver->modify_cq(p.ctx_b->index() + 1, p.cq_b->cqn(), 4, 100);
  EXPECT_EQ(f.status, RHN_ADMIN_BAD_HANDLE);
  EXPECT_EQ(nb().driver->modify_cq(p.ctx_b->index(), 999, 4, 100).status,
            RHN_ADMIN_BAD_HANDLE);
  // The CQ kept its (absent) moderation: one completion, one event.
  p.cq_b->arm();
  send_to_b(1);
  c->run_for(10'000);
  EXPECT_EQ(events(), 1u);
}

}  // namespace
}  // namespace rhinet::test
