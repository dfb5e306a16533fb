// SPDX-License-Identifier: BSD-2-Clause
// Bring-up through BAR0, device attributes, and admin commands that must be
// refused with the right status and counted.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

ClusterConfig small_cluster(size_t nodes) {
  ClusterConfig cfg;
  cfg.nodes = nodes;
  cfg.memory_bytes = 16u << 20;
  return cfg;
}

rhn_admin_cmd blank(uint8_t opcode, uint32_t context) {
  rhn_admin_cmd cmd;
  std::memset(&cmd, 0, sizeof cmd);
  cmd.hdr.opcode = opcode;
  cmd.hdr.context = context;
  return cmd;
}

TEST(BringUp, RegistersDescribeTheDevice) {
  ClusterConfig cfg = small_cluster(3);
  cfg.engine.db_pages = 64;
  cfg.engine.msix_vectors = 16;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  SimNode& n = c.node(2);
  SimDriver& d = *n.driver;
  EXPECT_EQ(d.reg32(RHN_REG_VERSION), uint32_t(RHN_VERSION));
  EXPECT_EQ(d.reg32(RHN_REG_NODE_ID) & 0xffff, 2u);
  const uint32_t caps = d.reg32(RHN_REG_CAPS);
  for (uint32_t cap :
       {RHN_CAP_RC, RHN_CAP_UD, RHN_CAP_ENDPOINT, RHN_CAP_SRQ, RHN_CAP_ATOMIC,
        RHN_CAP_AREA, RHN_CAP_INLINE_DB, RHN_CAP_STATUS_WORD,
        RHN_CAP_RQ_RECORD_READ, RHN_CAP_SQ_DOORBELL_ON_REQUEST, RHN_CAP_XRC,
        RHN_CAP_SQ_EVENT_INDEX, RHN_CAP_CQE_RUNS})
    EXPECT_TRUE(caps & cap) << "missing capability bit " << cap;
  // The families' bits come from the operation table and the module list:
  // every feature this engine has, and nothing beyond the last bit.
  for (uint32_t cap :
       {RHN_CAP_RAW_ETH, RHN_CAP_TAG, RHN_CAP_PIN_ON_DEMAND, RHN_CAP_TM,
        RHN_CAP_SYNC, RHN_CAP_MCAST_LIST, RHN_CAP_MCAST_SWITCH, RHN_CAP_SHARE,
        RHN_CAP_UD_MCAST, RHN_CAP_COLLECTIVE, RHN_CAP_COLL_SWITCH,
        RHN_CAP_TRIGGER, RHN_CAP_ATOMIC_EXT, RHN_CAP_WATCH})
    EXPECT_TRUE(caps & cap) << "missing family capability bit " << cap;
  // Runs (26) are the last.
  EXPECT_EQ(caps & ~((RHN_CAP_CQE_RUNS << 1) - 1), 0u);
  const uint32_t status = d.reg32(RHN_REG_STATUS);
  EXPECT_TRUE(status & RHN_STATUS_READY);
  EXPECT_TRUE(status & RHN_STATUS_ADMIN_ON);
  EXPECT_TRUE(status & RHN_STATUS_LINK_UP);
  EXPECT_FALSE(status & RHN_STATUS_FATAL);
  EXPECT_EQ(d.reg32(RHN_REG_DB_PAGES), 64u);
  EXPECT_EQ(d.reg32(RHN_REG_MSIX_VECTORS), 16u);
  EXPECT_EQ(d.reg32(RHN_REG_MTU), uint32_t(RHN_WIRE_MTU));
  // MAC bytes in memory order, byte 0 in the low bits of MAC_LO.
  const uint8_t* mac = n.config.mac;
  EXPECT_EQ(d.reg32(RHN_REG_MAC_LO), uint32_t(mac[0]) | uint32_t(mac[1]) << 8 |
                                         uint32_t(mac[2]) << 16 |
                                         uint32_t(mac[3]) << 24);
  EXPECT_EQ(d.reg32(RHN_REG_MAC_HI) & 0xffff,
            uint32_t(mac[4]) | uint32_t(mac[5]) << 8);
  EXPECT_EQ(mac[5], 2);  // the MAC encodes the node ID
}

TEST(BringUp, QueryDeviceReportsConfiguredLimits) {
  ClusterConfig cfg = small_cluster(2);
  cfg.engine.max_qps = 100;
  cfg.engine.max_pds = 50;
  cfg.engine.max_mrs = 300;
  cfg.engine.max_cqs = 70;
  cfg.engine.max_srqs = 9;
  cfg.engine.max_eqs = 5;
  cfg.engine.max_areas = 33;
  cfg.engine.tlb_entries = 64;
  cfg.engine.max_nodes = 12;
  cfg.engine.max_rd_atomic = 8;
  cfg.engine.db_pages = 32;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  rhn_device_attr a;
  std::memset(&a, 0xa5, sizeof a);
  ASSERT_TRUE(c.node(1).driver->query_device(&a).ok());
  // A table may keep handle 0 unused (key 0 means "physical"), so each
  // limit is the configured table size or one less.
  auto near = [](uint32_t got, uint32_t configured) {
    return got == configured || got + 1 == configured;
  };
  EXPECT_TRUE(near(a.max_contexts, 32)) << a.max_contexts;
  EXPECT_TRUE(near(a.max_pds, 50)) << a.max_pds;
  EXPECT_TRUE(near(a.max_mrs, 300)) << a.max_mrs;
  EXPECT_TRUE(near(a.max_cqs, 70)) << a.max_cqs;
  // QPN 0 is never issued and QPN 1 only to the kernel's management QP.
  EXPECT_EQ(a.max_qps, 98u);
  EXPECT_TRUE(near(a.max_srqs, 9)) << a.max_srqs;
  EXPECT_TRUE(near(a.max_eqs, 5)) << a.max_eqs;
  EXPECT_TRUE(near(a.max_areas, 33)) << a.max_areas;
  EXPECT_EQ(a.max_send_sges, uint32_t(RHN_WQE_MAX_SGES));
  EXPECT_EQ(a.max_recv_sges, uint32_t(RHN_RQ_MAX_SGES));
  EXPECT_EQ(a.max_inline, uint32_t(RHN_WQE_MAX_INLINE));
  EXPECT_EQ(a.max_rd_atomic, 8u);
  EXPECT_EQ(a.mtu, uint32_t(RHN_WIRE_MTU));
  EXPECT_EQ(a.tlb_entries, 64u);
  EXPECT_TRUE(a.page_size_cap & (1u << 12));
  EXPECT_EQ(a.max_peers, 12u);
  EXPECT_EQ(a.node_id, 1u);
  EXPECT_GE(a.max_msg_size, 1u << 22);  // the large-transfer tests use 4 MiB
  EXPECT_GE(a.max_cq_log_depth, 10u);
  EXPECT_GE(a.max_wq_log_depth, 8u);
  EXPECT_GT(a.max_mr_size, 0u);
}

TEST(BringUp, CountersAgreeAcrossBar0EngineAndAdmin) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  SimNode& n = c.node(0);
  // Make at least one counter non-zero.
  rhn_admin_cmd bad = blank(0x7e, 0);
  EXPECT_EQ(n.driver->exec(bad).status, RHN_ADMIN_BAD_OPCODE);
  std::vector<uint64_t> via_admin;
  ASSERT_TRUE(n.driver->query_counters(&via_admin).ok());
  ASSERT_EQ(via_admin.size(), size_t(RHN_CNT_COUNT));
  // The query's snapshot is taken before the NIC writes it and the
  // command's completion, and raises the admin vector: two DMA writes and
  // one MSI-X after it.
  std::vector<uint64_t> after_snapshot(RHN_CNT_COUNT, 0);
  after_snapshot[RHN_CNT_DMA_WRITES] = 2;
  after_snapshot[RHN_CNT_DMA_WRITE_BYTES] =
      8 * RHN_CNT_COUNT + RHN_ADMIN_CPL_SIZE;
  after_snapshot[RHN_CNT_MSIX_INTERRUPTS] = 1;
  for (unsigned i = 0; i < RHN_CNT_COUNT; ++i) {
    EXPECT_EQ(n.driver->counter(i), n.engine->counter(i)) << "counter " << i;
    EXPECT_EQ(via_admin[i] + after_snapshot[i], n.engine->counter(i))
        << "counter " << i;
  }
  EXPECT_EQ(n.engine->counter(RHN_CNT_BAD_ADMIN_CMDS), 1u);
}

TEST(BringUp, ResetDropsAllObjects) {
  SimCluster c(small_cluster(1));
  ASSERT_TRUE(c.all_up());
  SimDriver& d = *c.node(0).driver;
  AdminResult pd = d.create_pd(0);
  ASSERT_TRUE(pd.ok());
  ASSERT_TRUE(d.bring_up());
  EXPECT_EQ(d.destroy_pd(0, pd.result).status, RHN_ADMIN_BAD_HANDLE);
}

TEST(BringUp, AdminRaisesVectorZeroWhenEnabled) {
  SimCluster c(small_cluster(1));
  ASSERT_TRUE(c.all_up());
  SimNode& n = c.node(0);
  const uint64_t before = n.bus.msix_count(RHN_MSIX_ADMIN);
  ASSERT_TRUE(n.driver->create_pd(0).ok());
  EXPECT_GT(n.bus.msix_count(RHN_MSIX_ADMIN), before);
}

class AdminErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg = small_cluster(1);
    cfg.engine.max_pds = 4;
    cfg.engine.max_cqs = 8;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    d = c->node(0).driver.get();
  }
  // Runs cmd, expects `status`, and expects exactly one more bad command.
  void expect_refused(const rhn_admin_cmd& cmd, uint8_t status,
                      const char* what) {
    const uint64_t before = d->counter(RHN_CNT_BAD_ADMIN_CMDS);
    AdminResult r = d->exec(cmd);
    ASSERT_TRUE(r.completed) << what;
    EXPECT_EQ(r.status, status) << what;
    EXPECT_EQ(d->counter(RHN_CNT_BAD_ADMIN_CMDS), before + 1) << what;
  }
  std::unique_ptr<SimCluster> c;
  SimDriver* d = nullptr;
};

TEST_F(AdminErrors, UnknownOpcode) {
  expect_refused(blank(0x7e, 0), RHN_ADMIN_BAD_OPCODE, "opcode 0x7e");
  expect_refused(blank(0x00, 0), RHN_ADMIN_BAD_OPCODE, "opcode 0");
  // The queue keeps working afterwards.
  EXPECT_TRUE(d->create_pd(0).ok());
}

TEST_F(AdminErrors, BadHandles) {
  rhn_admin_cmd cmd = blank(RHN_ADMIN_DESTROY_PD, 0);
  cmd.u.handle.handle = 999;
  expect_refused(cmd, RHN_ADMIN_BAD_HANDLE, "destroy unknown PD");
  cmd = blank(RHN_ADMIN_DESTROY_CQ, 0);
  cmd.u.handle.handle = 12345;
  expect_refused(cmd, RHN_ADMIN_BAD_HANDLE, "destroy unknown CQ");
  cmd = blank(RHN_ADMIN_DESTROY_MR, 0);
  cmd.u.handle.handle = (77u << RHN_KEY_INDEX_SHIFT) | 3;
  expect_refused(cmd, RHN_ADMIN_BAD_HANDLE, "destroy unknown MR");
  cmd = blank(RHN_ADMIN_MODIFY_QP, 0);
  cmd.u.modify_qp.qpn = 4242;
  cmd.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
  cmd.u.modify_qp.state = RHN_QPS_INIT;
  expect_refused(cmd, RHN_ADMIN_BAD_HANDLE, "modify unknown QP");

  // A handle of another context is no handle in this one.
  ASSERT_TRUE(d->create_context(1).ok());
  ASSERT_TRUE(d->create_context(2).ok());
  AdminResult pd = d->create_pd(1);
  ASSERT_TRUE(pd.ok());
  cmd = blank(RHN_ADMIN_DESTROY_PD, 2);
  cmd.u.handle.handle = pd.result;
  expect_refused(cmd, RHN_ADMIN_BAD_HANDLE,
                 "destroy a PD of context 1 from context 2");
  EXPECT_TRUE(d->destroy_pd(1, pd.result).ok());
}

TEST_F(AdminErrors, PhysicalLkeyFromUserContextIsNotPermitted) {
  ASSERT_TRUE(d->create_context(1).ok());
  SimMemory& mem = d->memory();
  const uint64_t ring = mem.alloc_contiguous(1);
  rhn_host_ref ring_ref{}, rec_ref{};
  ring_ref.addr = ring;
  ring_ref.lkey = RHN_LKEY_PHYSICAL;
  rec_ref.addr = ring + 2048;
  rec_ref.lkey = RHN_LKEY_PHYSICAL;
  rhn_admin_cmd cmd = blank(RHN_ADMIN_CREATE_CQ, 1);
  cmd.u.create_cq.ring = ring_ref;
  cmd.u.create_cq.record = rec_ref;
  cmd.u.create_cq.eqn = d->kernel_eqn();
  cmd.u.create_cq.log_depth = 4;
  expect_refused(cmd, RHN_ADMIN_NOT_PERMITTED, "user CQ on a physical ring");

  // A user MR that claims iova == bus address (levels 0) is kernel-only too.
  AdminResult pd = d->create_pd(1);
  ASSERT_TRUE(pd.ok());
  cmd = blank(RHN_ADMIN_CREATE_MR, 1);
  cmd.u.create_mr.pdn = pd.result;
  cmd.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE;
  cmd.u.create_mr.iova = ring;
  cmd.u.create_mr.length = kPageSize;
  cmd.u.create_mr.page_shift = 12;
  cmd.u.create_mr.levels = 0;
  cmd.u.create_mr.key_variant = 1;
  expect_refused(cmd, RHN_ADMIN_NOT_PERMITTED, "user physical MR");

  // The same CQ from the kernel context is fine.
  EXPECT_TRUE(d->create_cq(0, ring_ref, rec_ref, d->kernel_eqn(), 4).ok());
}

TEST_F(AdminErrors, DestroyPdStillUsedByMrIsBusy) {
  auto ctx = c->node(0).open_context();
  ASSERT_TRUE(ctx->ok());
  Region r = make_region(*ctx, 8192);
  ASSERT_TRUE(r.mr.ok());
  rhn_admin_cmd cmd = blank(RHN_ADMIN_DESTROY_PD, ctx->index());
  cmd.u.handle.handle = ctx->pdn();
  expect_refused(cmd, RHN_ADMIN_BUSY, "PD with a live MR");
  ASSERT_TRUE(ctx->dereg_mr(r.mr).ok());
  EXPECT_TRUE(d->destroy_pd(ctx->index(), ctx->pdn()).ok());
}

TEST_F(AdminErrors, OutOfResources) {
  // max_pds = 4: some PDs succeed, then the table is full.
  int created = 0;
  AdminResult r;
  for (int i = 0; i < 8; ++i) {
    const uint64_t before = d->counter(RHN_CNT_BAD_ADMIN_CMDS);
    r = d->create_pd(0);
    if (!r.ok()) {
      EXPECT_EQ(d->counter(RHN_CNT_BAD_ADMIN_CMDS), before + 1);
      break;
    }
    ++created;
  }
  EXPECT_EQ(r.status, RHN_ADMIN_NO_RESOURCES);
  EXPECT_GE(created, 3);  // handle 0 may be reserved
  EXPECT_LE(created, 4);
}

TEST_F(AdminErrors, BadParameters) {
  auto ctx = c->node(0).open_context();
  ASSERT_TRUE(ctx->ok());
  // CQ deeper than the device allows.
  SimBuffer ring = ctx->alloc(kPageSize);
  SimMr mr = ctx->reg_mr(ring, RHN_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(mr.ok());
  rhn_admin_cmd cmd = blank(RHN_ADMIN_CREATE_CQ, ctx->index());
  cmd.u.create_cq.ring.addr = ring.va();
  cmd.u.create_cq.ring.lkey = mr.key;
  cmd.u.create_cq.record.addr = ring.va() + 2048;
  cmd.u.create_cq.record.lkey = mr.key;
  cmd.u.create_cq.eqn = d->kernel_eqn();
  cmd.u.create_cq.log_depth = 31;
  expect_refused(cmd, RHN_ADMIN_BAD_PARAM, "CQ log_depth 31");
  // MR with an unsupported page shift.
  cmd = blank(RHN_ADMIN_CREATE_MR, ctx->index());
  cmd.u.create_mr.pdn = ctx->pdn();
  cmd.u.create_mr.iova = ring.va();
  cmd.u.create_mr.length = kPageSize;
  cmd.u.create_mr.num_pages = 1;
  cmd.u.create_mr.table_addr = ring.bus(0);
  cmd.u.create_mr.page_shift = 40;
  cmd.u.create_mr.levels = 1;
  expect_refused(cmd, RHN_ADMIN_BAD_PARAM, "MR page_shift 40");
  // A QP of an unknown type.
  auto cq = ctx->create_cq(4);
  ASSERT_TRUE(cq);
  QpInit init;
  init.send_cq = cq.get();
  init.type = 99;
  const uint64_t before = d->counter(RHN_CNT_BAD_ADMIN_CMDS);
  EXPECT_EQ(ctx->create_qp(init), nullptr);
  EXPECT_EQ(ctx->last.status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(d->counter(RHN_CNT_BAD_ADMIN_CMDS), before + 1);
}

TEST_F(AdminErrors, IllegalQpTransitionIsBadState) {
  auto ctx = c->node(0).open_context();
  ASSERT_TRUE(ctx->ok());
  auto cq = ctx->create_cq(4);
  ASSERT_TRUE(cq);
  QpInit init;
  init.send_cq = cq.get();
  auto qp = ctx->create_qp(init);
  ASSERT_TRUE(qp);
  const uint64_t before = d->counter(RHN_CNT_BAD_ADMIN_CMDS);
  EXPECT_EQ(qp->to_rts().status, RHN_ADMIN_BAD_STATE);  // RESET -> RTS
  EXPECT_EQ(d->counter(RHN_CNT_BAD_ADMIN_CMDS), before + 1);
  EXPECT_TRUE(qp->to_init().ok());
  rhn_qp_attr attr;
  ASSERT_TRUE(qp->query(&attr).ok());
  EXPECT_EQ(attr.qpn, qp->qpn());
  EXPECT_EQ(attr.state, RHN_QPS_INIT);
  EXPECT_EQ(attr.type, RHN_QP_RC);
}

}  // namespace
}  // namespace rhinet::test
