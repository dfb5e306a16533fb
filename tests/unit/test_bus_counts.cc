// SPDX-License-Identifier: BSD-2-Clause
// The bus-transaction counters (issue 39): MMIO writes and doorbells by
// kind, DMA reads and writes with their bytes, WQE and doorbell-record
// fetches, MSI-X messages. Known sequences of posts must move them by
// exactly what they cause; the DMA and MSI-X totals must equal what the
// simulated host bus saw on its own side.
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr int kMessages = 8;

class BusCounts : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
  }
  SimContext& A() { return *p.ctx_a; }
  SimContext& B() { return *p.ctx_b; }
  SimNode& node_a() { return c->node(0); }
  SimNode& node_b() { return c->node(1); }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

// What the host bus of a node saw, beside the engine's own counters.
struct BusSnap {
  explicit BusSnap(SimNode& n)
      : node(n),
        read_bytes(n.bus.dma_read_bytes()),
        write_bytes(n.bus.dma_write_bytes()),
        msix(n.bus.msix_total()) {}
  uint64_t read_delta() const { return node.bus.dma_read_bytes() - read_bytes; }
  uint64_t write_delta() const {
    return node.bus.dma_write_bytes() - write_bytes;
  }
  uint64_t msix_delta() const { return node.bus.msix_total() - msix; }
  SimNode& node;
  uint64_t read_bytes, write_bytes, msix;
};

// The engine's totals equal the bus's own (bytes, messages).
void expect_bus_agrees(const CounterSnap& s, const BusSnap& b) {
  EXPECT_EQ(s.delta(RHN_CNT_DMA_READ_BYTES), b.read_delta());
  EXPECT_EQ(s.delta(RHN_CNT_DMA_WRITE_BYTES), b.write_delta());
  EXPECT_EQ(s.delta(RHN_CNT_MSIX_INTERRUPTS), b.msix_delta());
}

// N RDMA WRITEs from SGEs: one SQ doorbell, one MMIO write and one WQE read
// of one slot each, one CQE each; the payload read at least once.
TEST_F(BusCounts, WritesFetchEachWqeOnce) {
  constexpr size_t kLen = 256;
  Region src = make_region(A(), kLen * kMessages, kAllAccess, 41);
  Region dst = make_region(B(), kLen * kMessages);
  CounterSnap a(node_a());
  BusSnap bus_a(node_a());
  for (int i = 0; i < kMessages; ++i) {
    const size_t off = size_t(i) * kLen;
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(uint64_t(i), RHN_OP_WRITE,
                                          {src.sge(off, kLen)}, dst.va(off),
                                          dst.key())));
    ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  }
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_MMIO_WRITES), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_SQ_INLINE_DOORBELLS), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_RQ_DOORBELLS), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCH_BYTES),
            uint64_t(kMessages) * RHN_SQ_SLOT_SIZE);
  EXPECT_EQ(a.delta(RHN_CNT_COMPLETIONS), uint64_t(kMessages));
  // Each WQE read, each record read and the payload are DMA reads.
  EXPECT_GE(a.delta(RHN_CNT_DMA_READS),
            a.delta(RHN_CNT_SQ_WQE_FETCHES) +
                a.delta(RHN_CNT_QUEUE_RECORD_READS) + kMessages);
  EXPECT_GE(a.delta(RHN_CNT_DMA_READ_BYTES),
            uint64_t(kMessages) * (RHN_SQ_SLOT_SIZE + kLen));
  // A record read per doorbell finds the new WQE; more may find none.
  EXPECT_GE(a.delta(RHN_CNT_QUEUE_RECORD_READS), uint64_t(kMessages));
  // A CQE each (no event queue is armed: no interrupt).
  EXPECT_GE(a.delta(RHN_CNT_DMA_WRITES), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_MSIX_INTERRUPTS), 0u);
  expect_bus_agrees(a, bus_a);
}

// N RECVs taken by N SENDs: N RQ doorbells, N receive WQE reads and N
// CQEs on the receiver; N SQ doorbells and WQE reads on the sender.
TEST_F(BusCounts, RecvsFetchEachReceiveWqeOnce) {
  constexpr size_t kLen = 64;
  Region src = make_region(A(), kLen * kMessages, kAllAccess, 42);
  Region dst = make_region(B(), kLen * kMessages);
  CounterSnap a(node_a());
  CounterSnap b(node_b());
  BusSnap bus_b(node_b());
  for (int i = 0; i < kMessages; ++i)
    ASSERT_TRUE(
        p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * kLen, kLen)}));
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), uint64_t(kMessages));
  EXPECT_EQ(b.delta(RHN_CNT_MMIO_WRITES), uint64_t(kMessages));
  for (int i = 0; i < kMessages; ++i)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(i), {src.sge(size_t(i) * kLen, kLen)})));
  auto recvs = c->wait_cqes(*p.cq_b, kMessages);
  ASSERT_EQ(recvs.size(), size_t(kMessages));
  for (const auto& r : recvs) EXPECT_TRUE(r.ok()) << describe(r);
  ASSERT_EQ(c->wait_cqes(*p.cq_a, kMessages).size(), size_t(kMessages));
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_EQ(b.delta(RHN_CNT_RECV_WQE_FETCHES), uint64_t(kMessages));
  EXPECT_EQ(b.delta(RHN_CNT_COMPLETIONS), uint64_t(kMessages));
  EXPECT_EQ(b.delta(RHN_CNT_SQ_WQE_FETCHES), 0u);
  EXPECT_EQ(b.delta(RHN_CNT_HOST_DOORBELLS), 0u);
  // The receiver writes the payload and a CQE per message at least.
  EXPECT_GE(b.delta(RHN_CNT_DMA_WRITES), 2u * kMessages);
  EXPECT_GE(b.delta(RHN_CNT_DMA_WRITE_BYTES),
            uint64_t(kMessages) * (kLen + sizeof(rhn_cqe)));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), uint64_t(kMessages));
  expect_bus_agrees(b, bus_b);
}

// A one-slot WQE written into the doorbell page with its kick is not read
// from the ring: no WQE fetch, and MMIO writes of its 8-byte stores plus
// the kick.
TEST_F(BusCounts, InlineDoorbellWqesAreNotFetched) {
  Region dst = make_region(B(), 8 * kMessages);
  CounterSnap a(node_a());
  for (int i = 0; i < kMessages; ++i) {
    SendWr w = rdma_wr(uint64_t(i), RHN_OP_WRITE, {}, dst.va(size_t(i) * 8),
                       dst.key(), RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
    w.inline_data = pattern(300 + uint64_t(i), 8);
    w.inline_doorbell = true;
    ASSERT_TRUE(p.qp_a->post_send(w));
    ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
    EXPECT_EQ(dst.buf.bytes(size_t(i) * 8, 8), pattern(300 + uint64_t(i), 8));
  }
  EXPECT_EQ(a.delta(RHN_CNT_SQ_INLINE_DOORBELLS), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_HOST_DOORBELLS), uint64_t(kMessages));
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCH_BYTES), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_MMIO_WRITES),
            uint64_t(kMessages) * (RHN_SQ_SLOT_SIZE / 8 + 1));
}

// The same inline WQE kicked out of turn (not the next one the NIC
// expects) is fetched from the ring after all.
TEST_F(BusCounts, StaleInlineWqeIsFetched) {
  Region dst = make_region(B(), 64);
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {}, dst.va(), dst.key(),
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
  w.inline_data = pattern(77, 8);
  p.qp_a->auto_kick = false;
  ASSERT_TRUE(p.qp_a->post_send(w));  // in the ring, no kick
  CounterSnap a(node_a());
  // The window holds a WQE whose index (bytes 4..5) is not the next one.
  node_a().engine->doorbell_write(A().index(), RHN_DB_INLINE_WQE,
                                  uint64_t{0xffff} << 32, 8, 0);
  node_a().engine->doorbell_write(A().index(), RHN_DB_SQ,
                                  p.qp_a->qpn() | RHN_DB_SQ_INLINE, 4, 0);
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(dst.buf.bytes(0, 8), pattern(77, 8));
  EXPECT_EQ(a.delta(RHN_CNT_SQ_INLINE_DOORBELLS), 1u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), 1u);
  EXPECT_EQ(a.delta(RHN_CNT_MMIO_WRITES), 2u);
}

// An armed CQ and EQ: one MSI-X for the first completion, none for the
// next (not re-armed). The arm kick is counted by kind.
TEST_F(BusCounts, InterruptsAndArmsAreCounted) {
  SimNode& nb = node_b();
  const uint32_t eqn = nb.driver->kernel_eqn();
  // Registered first: REG_MR is an admin command, whose completion raises
  // the admin vector.
  Region src = make_region(A(), 64, kAllAccess, 43);
  Region dst = make_region(B(), 64);
  CounterSnap b(nb);
  BusSnap bus_b(nb);
  nb.driver->write64(RHN_REG_EQ_DOORBELL,
                     (uint64_t(eqn) << RHN_EQ_DB_EQN_SHIFT) | RHN_EQ_DB_ARM);
  p.cq_b->arm();
  EXPECT_EQ(b.delta(RHN_CNT_CQ_ARM_DOORBELLS), 1u);
  EXPECT_EQ(b.delta(RHN_CNT_MMIO_WRITES), 2u);  // EQ doorbell + CQ arm
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(p.qp_b->post_recv(i, {dst.sge(0, 64)}));
    ASSERT_TRUE(p.qp_a->post_send(send_wr(i, {src.sge(0, 64)})));
    ASSERT_TRUE(wait_one(*c, *p.cq_b).ok());
    c->run_for(100'000);
  }
  EXPECT_EQ(b.delta(RHN_CNT_MSIX_INTERRUPTS), 1u);
  EXPECT_EQ(b.delta(RHN_CNT_RQ_DOORBELLS), 2u);
  expect_bus_agrees(b, bus_b);
}

// Kicks that name a foreign queue or write no register are still bus
// writes (VM exits), counted as such; they fetch nothing.
TEST_F(BusCounts, BadKicksCountAsWritesOnly) {
  auto intruder = node_a().open_context();
  ASSERT_TRUE(intruder->ok());
  CounterSnap a(node_a());
  node_a().engine->doorbell_write(intruder->index(), RHN_DB_SQ, p.qp_a->qpn(),
                                  4, 0);
  node_a().engine->doorbell_write(intruder->index(), RHN_DB_RQ, p.qp_a->qpn(),
                                  4, 0);
  node_a().engine->doorbell_write(intruder->index(), 0x040, 0, 4, 0);
  c->run_for(100'000);
  EXPECT_EQ(a.delta(RHN_CNT_MMIO_WRITES), 3u);
  EXPECT_EQ(a.delta(RHN_CNT_RQ_DOORBELLS), 1u);
  EXPECT_EQ(a.delta(RHN_CNT_BAD_DOORBELLS), 2u);
  EXPECT_EQ(a.delta(RHN_CNT_SQ_WQE_FETCHES), 0u);
  EXPECT_EQ(a.delta(RHN_CNT_RECV_WQE_FETCHES), 0u);
  // A page beyond the BAR is no write the NIC takes.
  node_a().engine->doorbell_write(1u << 20, RHN_DB_SQ, p.qp_a->qpn(), 4, 0);
  EXPECT_EQ(a.delta(RHN_CNT_MMIO_WRITES), 3u);
}

}  // namespace
}  // namespace rhinet::test
