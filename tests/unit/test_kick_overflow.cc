// SPDX-License-Identifier: BSD-2-Clause
// A full kick FIFO loses no doorbell of any kind: one context that rings
// its SQ doorbell faster than the NIC drains kicks must not take the
// kernel's admin commands, EQ and CONTROL writes or another context's CQ
// arms and SRQ operations with it (Documentation/hardware/queues.md,
// "Lost kicks").
#include <algorithm>
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kFifo = 16;  // kick FIFO entries of the engines here

class KickOverflow : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    cfg.engine.kick_fifo_entries = kFifo;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    // The flooder: another process on B's node, with a QP of its own.
    flooder = c->node(1).open_context();
    ASSERT_TRUE(flooder->ok());
    flood_cq = flooder->create_cq(6);
    ASSERT_TRUE(flood_cq);
    QpInit qi;
    qi.send_cq = flood_cq.get();
    flood_qp = flooder->create_qp(qi);
    ASSERT_TRUE(flood_qp);
  }
  SimNode& nb() { return c->node(1); }
  // More SQ doorbells than the FIFO holds, with no engine poll between:
  // whatever is rung next finds the FIFO full.
  void flood() {
    for (uint32_t i = 0; i < 2 * kFifo; i++) flood_qp->kick_sq();
  }
  void settle() { c->run_for(1'000'000); }
  void arm_eq(uint32_t ci) {
    nb().driver->write64(
        RHN_REG_EQ_DOORBELL,
        (uint64_t(nb().driver->kernel_eqn()) << RHN_EQ_DB_EQN_SHIFT) | ci |
            RHN_EQ_DB_ARM);
  }
  uint32_t eqes_for(uint32_t cqn) {
    return nb().driver->completion_events(cqn);
  }
  // A SEND from A that B receives on its QP.
  void send_to_b(uint64_t id) { send_a_to_b(*c, p, src, dst, id); }

  std::unique_ptr<SimCluster> c;
  RcPair p;
  std::unique_ptr<SimContext> flooder;
  std::unique_ptr<SimCq> flood_cq;
  std::unique_ptr<SimQp> flood_qp;
  Region src, dst;
};

TEST_F(KickOverflow, AdminCommandRungIntoAFullFifoCompletes) {
  CounterSnap counts(nb());
  flood();
  // The driver's tail write finds the FIFO full; exec pumps the engines.
  const AdminResult r = nb().driver->create_pd(p.ctx_b->index());
  EXPECT_TRUE(r.completed) << "admin command never completed";
  EXPECT_TRUE(r.ok()) << int(r.status);
  EXPECT_GT(counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  // And the ring goes on: the next command is answered in order.
  EXPECT_TRUE(nb().driver->create_pd(p.ctx_b->index()).ok());
}

TEST_F(KickOverflow, AnotherContextsCqArmStillRaisesItsEvent) {
  src = make_region(*p.ctx_a, 64, kAllAccess, 3);
  dst = make_region(*p.ctx_b, 64);
  arm_eq(0);
  settle();
  CounterSnap counts(nb());
  const uint64_t irqs = nb().bus.msix_count(1);
  flood();
  p.cq_b->arm();  // lost to the FIFO
  // A foreign page naming B's CQ, also into the full FIFO: it must not
  // take the place of B's own arm, nor arm anything.
  flooder->doorbell(RHN_DB_CQ_ARM, p.cq_b->cqn() | RHN_DB_CQ_SOLICITED);
  settle();
  EXPECT_GT(counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  send_to_b(1);
  c->run_for(100'000);
  EXPECT_EQ(eqes_for(p.cq_b->cqn()), 1u) << "B's arm was lost";
  EXPECT_GT(nb().bus.msix_count(1), irqs);
}

TEST_F(KickOverflow, AForeignArmLostToTheFifoArmsNothing) {
  src = make_region(*p.ctx_a, 64, kAllAccess, 3);
  dst = make_region(*p.ctx_b, 64);
  arm_eq(0);
  settle();
  flood();
  flooder->doorbell(RHN_DB_CQ_ARM, p.cq_b->cqn());
  settle();
  send_to_b(1);
  c->run_for(100'000);
  EXPECT_EQ(eqes_for(p.cq_b->cqn()), 0u) << "a foreign page armed B's CQ";
}

TEST_F(KickOverflow, EqArmRungIntoAFullFifoInterrupts) {
  src = make_region(*p.ctx_a, 64, kAllAccess, 3);
  dst = make_region(*p.ctx_b, 64);
  arm_eq(0);
  p.cq_b->arm();
  settle();
  send_to_b(1);
  c->run_for(100'000);
  ASSERT_EQ(eqes_for(p.cq_b->cqn()), 1u);
  // The EQ fired and is disarmed; the driver consumed the entry and
  // re-arms it, into a full FIFO.
  p.cq_b->arm();
  settle();
  const uint64_t irqs = nb().bus.msix_count(1);
  flood();
  arm_eq(1);
  settle();
  send_to_b(2);
  c->run_for(100'000);
  EXPECT_EQ(eqes_for(p.cq_b->cqn()), 2u);
  EXPECT_GT(nb().bus.msix_count(1), irqs) << "the EQ arm was lost";
}

TEST_F(KickOverflow, ControlWriteIntoAFullFifoTakesEffect) {
  auto control = [&] { return nb().engine->reg_read(RHN_REG_CONTROL, 4); };
  ASSERT_EQ(control(), uint64_t{RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE});
  flood();
  nb().driver->write32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
  settle();
  EXPECT_EQ(control(), uint64_t{RHN_CONTROL_ENABLE});
  flood();
  nb().driver->write32(RHN_REG_CONTROL,
                       RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE);
  settle();
  EXPECT_EQ(control(), uint64_t{RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE});
  // Admin still on: a command completes.
  EXPECT_TRUE(nb().driver->create_pd(p.ctx_b->index()).ok());
}

TEST_F(KickOverflow, EnableLostAfterAResetReplaysNoOldCommand) {
  // The ring still holds the commands of the setup; after a reset the
  // driver starts it again at 0, and its ENABLE finds the FIFO full.
  SimDriver& d = *nb().driver;
  const uint64_t sq = d.reg64(RHN_REG_ADMIN_SQ_BASE);
  const uint64_t cq = d.reg64(RHN_REG_ADMIN_CQ_BASE);
  const uint32_t log = d.reg32(RHN_REG_ADMIN_LOG_DEPTH);
  d.write32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  settle();
  ASSERT_EQ(d.reg32(RHN_REG_CONTROL) & RHN_CONTROL_RESET, 0u);
  CounterSnap counts(nb());
  // A fresh completion ring, as a driver starting again would have.
  std::memset(nb().memory.ptr(cq, 4096), 0, 4096);
  d.write64(RHN_REG_ADMIN_SQ_BASE, sq);
  d.write64(RHN_REG_ADMIN_CQ_BASE, cq);
  d.write32(RHN_REG_ADMIN_LOG_DEPTH, log);
  for (uint32_t i = 0; i < 2 * kFifo; i++)
    d.write64(RHN_REG_EQ_DOORBELL, uint64_t{0xffff} << RHN_EQ_DB_EQN_SHIFT);
  d.write32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
  settle();
  EXPECT_GT(counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  EXPECT_NE(d.reg32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON, 0u)
      << "the lost ENABLE was not applied";
  // Nothing of the ring before the reset ran again: no completion, no
  // refused command.
  const auto* ring = nb().memory.ptr(cq, 4096);
  EXPECT_EQ(std::count(ring, ring + 4096, 0), 4096)
      << "commands rung before the reset ran again";
  EXPECT_EQ(counts.delta(RHN_CNT_BAD_ADMIN_CMDS), 0u);
  EXPECT_TRUE(d.bring_up());
}

TEST_F(KickOverflow, SrqPostsAndTagOpsRungIntoAFullFifoAreUsed) {
  // B's receives come from an SRQ; its post's kick is lost.
  auto srq = p.ctx_b->create_srq(6);
  ASSERT_TRUE(srq);
  QpInit qi;
  qi.send_cq = p.cq_b.get();
  qi.srq = srq.get();
  auto qp = p.ctx_b->create_qp(qi);
  ASSERT_TRUE(qp);
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  ASSERT_TRUE(connect_rc(*p.qp_a, 1, qp->qpn()));
  ASSERT_TRUE(connect_rc(*qp, 0, p.qp_a->qpn()));
  src = make_region(*p.ctx_a, 64, kAllAccess, 9);
  dst = make_region(*p.ctx_b, 64);
  CounterSnap counts(nb());
  flood();
  ASSERT_TRUE(srq->post_recv(7, {dst.sge(0, 64)}));
  settle();
  EXPECT_GT(counts.delta(RHN_CNT_KICK_OVERFLOWS), 0u);
  // The rescan kicks nothing that is not there to kick.
  EXPECT_EQ(counts.delta(RHN_CNT_BAD_DOORBELLS), 0u);
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, 64)})));
  const Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(dst.buf.bytes(), pattern(9, 64));
  // A tag-matching SRQ's list operation, kicked into a full FIFO, runs.
  auto tm_cq = p.ctx_b->create_cq(6);
  ASSERT_TRUE(tm_cq);
  auto tm = p.ctx_b->create_tm_srq(*tm_cq, 16);
  ASSERT_TRUE(tm) << int(p.ctx_b->last.status);
  flood();
  TmOp op;
  op.wr_id = 5;
  op.tag = 0x42;
  op.sge = dst.sge(0, 64);
  ASSERT_TRUE(tm->post_tm_op(op));
  const Completion done = wait_one(*c, *tm_cq);
  EXPECT_TRUE(done.ok()) << describe(done);
  EXPECT_EQ(done.wr_id, 5u);
  EXPECT_EQ(tm->tm_ops_executed(), 1u);
}

}  // namespace
}  // namespace rhinet::test
