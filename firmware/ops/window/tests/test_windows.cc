// SPDX-License-Identifier: BSD-2-Clause
// Memory windows at the engine: BIND_MW and LOCAL_INV executed in send
// queue order, remote WRITE and READ through a window's key and only
// within it, type 2 windows answering only the QP they were bound through,
// SEND_INV unbinding one at the responder, and the refusals: regions not
// open to windows, windows as lkeys, type 1 invalidated, a bound region
// deregistered.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kWindowRegion = kAllAccess | RHN_ACCESS_MW_BIND;

class Windows : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    src = make_region(*p.ctx_a, 4096, kAllAccess, 41);
    back = make_region(*p.ctx_a, 4096, kAllAccess, 0, 0);
    dst = make_region(*p.ctx_b, 4096, kWindowRegion, 42);
  }
  // A window of `type` in node 1's context; its key.
  uint32_t window(uint8_t type, uint8_t variant) {
    AdminResult r = c->node(1).driver->create_mw(p.ctx_b->index(),
                                                 p.ctx_b->pdn(), type, variant);
    EXPECT_TRUE(r.ok()) << "status " << int(r.status);
    return r.result;
  }
  // Binds through node 1's QP; the BIND_MW completion.
  Completion bind(uint32_t mw_key, uint8_t new_variant, uint32_t mr_lkey,
                  uint64_t addr, uint64_t len, uint32_t rights,
                  SimQp* qp = nullptr, SimCq* cq = nullptr) {
    SendWr wr = send_wr(77, {}, RHN_OP_BIND_MW);
    wr.bind_mw_key = mw_key;
    wr.remote_key = (mw_key & ~RHN_KEY_VARIANT_MASK) | new_variant;
    wr.bind_mr_lkey = mr_lkey;
    wr.remote_addr = addr;
    wr.bind_length = len;
    wr.imm_data = rights;
    EXPECT_TRUE((qp ? qp : p.qp_b.get())->post_send(wr));
    return wait_one(*c, cq ? *cq : *p.cq_b);
  }
  Completion local_invalidate(uint32_t key) {
    SendWr wr = send_wr(78, {}, RHN_OP_LOCAL_INV);
    wr.remote_key = key;
    EXPECT_TRUE(p.qp_b->post_send(wr));
    return wait_one(*c, *p.cq_b);
  }
  Completion write(uint32_t rkey, uint64_t va, uint32_t len) {
    EXPECT_TRUE(p.qp_a->post_send(
        rdma_wr(5, RHN_OP_WRITE, {src.sge(0, len)}, va, rkey)));
    return wait_one(*c, *p.cq_a);
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
  Region src, back, dst;
};

TEST_F(Windows, Type2BindWriteReadInvalidate) {
  const uint32_t k0 = window(2, 0x10);
  Completion b = bind(k0, 0x11, dst.key(), dst.va(1024), 512,
                      RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ);
  ASSERT_TRUE(b.ok()) << describe(b);
  EXPECT_EQ(b.opcode, RHN_CQE_OP_BIND_MW);
  EXPECT_EQ(b.wr_id, 77u);
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x11;

  // In the window: PUSH and PULL through its key.
  Completion w = write(k1, dst.va(1100), 200);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(1100, 200), src.buf.bytes(0, 200));
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(6, RHN_OP_READ, {back.sge(0, 300)}, dst.va(1024), k1)));
  Completion r = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(back.buf.bytes(0, 300), dst.buf.bytes(1024, 300));

  // The region cannot go while a window is bound to it.
  EXPECT_EQ(c->node(1).driver->destroy_mr(dst.mr).status, RHN_ADMIN_BUSY);
  // Invalidate, bind again under a new variant.
  Completion inv = local_invalidate(k1);
  ASSERT_TRUE(inv.ok()) << describe(inv);
  EXPECT_EQ(inv.opcode, RHN_CQE_OP_LOCAL_INV);
  b = bind(k1, 0x22, dst.key(), dst.va(2048), 256, RHN_ACCESS_REMOTE_WRITE);
  ASSERT_TRUE(b.ok()) << describe(b);
  const uint32_t k2 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x22;

  // SEND_INV: the responder's receive reports the key it unbound.
  Region rx = make_region(*p.ctx_b, 256, kAllAccess, 0, 0);
  ASSERT_TRUE(p.qp_b->post_recv(9, {rx.sge(0, 256)}));
  SendWr si = send_wr(7, {src.sge(0, 64)}, RHN_OP_SEND_INV);
  si.imm_data = k2;
  ASSERT_TRUE(p.qp_a->post_send(si));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  Completion rv = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(rv.ok()) << describe(rv);
  EXPECT_TRUE(rv.flags & RHN_CQE_F_INV);
  EXPECT_FALSE(rv.flags & RHN_CQE_F_IMM);
  EXPECT_EQ(rv.imm_data, k2);
  EXPECT_EQ(rx.buf.bytes(0, 64), src.buf.bytes(0, 64));
  // Unbound now: the region can go, and a write through the key fails
  // (last: it moves the requester to error), leaving the bytes alone.
  const std::vector<uint8_t> before = dst.buf.bytes(2048, 100);
  w = write(k2, dst.va(2048), 100);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(dst.buf.bytes(2048, 100), before);
}

TEST_F(Windows, OutsideTheWindowOrBeyondItsRightsIsRefused) {
  const uint32_t k0 = window(2, 0x30);
  ASSERT_TRUE(
      bind(k0, 0x31, dst.key(), dst.va(1024), 512, RHN_ACCESS_REMOTE_READ)
          .ok());
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x31;
  const std::vector<uint8_t> before = dst.buf.bytes();
  // The window is read-only: a PUSH through it is refused, though the
  // region itself allows remote writes.
  Completion w = write(k1, dst.va(1024), 16);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(dst.buf.bytes(), before);
}

TEST_F(Windows, ReadBeyondTheWindowIsRefused) {
  const uint32_t k0 = window(1, 0x40);
  ASSERT_TRUE(
      bind(k0, 0x41, dst.key(), dst.va(1024), 512, RHN_ACCESS_REMOTE_READ)
          .ok());
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x41;
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(6, RHN_OP_READ, {back.sge(0, 600)}, dst.va(1024), k1)));
  Completion r = wait_one(*c, *p.cq_a);
  EXPECT_EQ(r.status, RHN_CQE_REM_ACCESS_ERR) << describe(r);
  EXPECT_EQ(back.buf.bytes(), std::vector<uint8_t>(4096, 0));
}

TEST_F(Windows, Type1RebindsFreelyAndCannotBeInvalidated) {
  const uint32_t k0 = window(1, 0x50);
  ASSERT_TRUE(
      bind(k0, 0x51, dst.key(), dst.va(0), 128, RHN_ACCESS_REMOTE_WRITE).ok());
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x51;
  // Rebinding moves it (the old key stops working).
  ASSERT_TRUE(
      bind(k1, 0x52, dst.key(), dst.va(3000), 64, RHN_ACCESS_REMOTE_WRITE)
          .ok());
  const uint32_t k2 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x52;
  Completion w = write(k2, dst.va(3000), 64);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(3000, 64), src.buf.bytes(0, 64));
  w = write(k1, dst.va(0), 8);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  // Only type 2 windows are invalidated (a failed local operation moves
  // the QP to error, as any other: last).
  Completion inv = local_invalidate(k2);
  EXPECT_EQ(inv.status, RHN_CQE_MW_BIND_ERR) << describe(inv);
}

TEST_F(Windows, Type2IsBoundOnceUntilInvalidated) {
  const uint32_t k0 = window(2, 0x90);
  ASSERT_TRUE(
      bind(k0, 0x91, dst.key(), dst.va(0), 64, RHN_ACCESS_REMOTE_WRITE).ok());
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x91;
  Completion b =
      bind(k1, 0x92, dst.key(), dst.va(0), 64, RHN_ACCESS_REMOTE_WRITE);
  EXPECT_EQ(b.status, RHN_CQE_MW_BIND_ERR) << describe(b);
  EXPECT_EQ(b.vendor_err, uint32_t{RHN_SYN_BAD_WINDOW});
  // The failed bind moved the binding QP to error, so its peer's requests
  // go unanswered as to any QP in error (IB: until the requester's timer
  // runs out; none is set here).
  Completion w = write(k1, dst.va(0), 64);
  EXPECT_EQ(w.status, 0xff) << describe(w);
}

TEST_F(Windows, RegionsNotOpenToWindowsAndWindowsAsLkeysAreRefused) {
  Region closed = make_region(*p.ctx_b, 4096, kAllAccess, 0, 0);
  const uint32_t k0 = window(1, 0x60);
  Completion b =
      bind(k0, 0x61, closed.key(), closed.va(0), 64, RHN_ACCESS_REMOTE_READ);
  EXPECT_EQ(b.status, RHN_CQE_MW_BIND_ERR) << describe(b);
  EXPECT_EQ(b.vendor_err, uint32_t{RHN_SYN_ACCESS_RIGHTS});
}

TEST_F(Windows, AWindowIsNoLkey) {
  const uint32_t k0 = window(1, 0x70);
  ASSERT_TRUE(
      bind(k0, 0x71, dst.key(), dst.va(0), 256, RHN_ACCESS_REMOTE_READ).ok());
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x71;
  // Node 1 names its own window in an SGE: refused locally.
  ASSERT_TRUE(p.qp_b->post_send(send_wr(8, {Sge{dst.va(0), 64, k1}})));
  Completion s = wait_one(*c, *p.cq_b);
  EXPECT_EQ(s.status, RHN_CQE_LOC_PROT_ERR) << describe(s);
}

TEST_F(Windows, Type2AnswersOnlyTheQpItWasBoundThrough) {
  // A second connection between the same two contexts.
  QpInit init;
  init.send_cq = p.cq_a.get();
  std::unique_ptr<SimQp> qa2 = p.ctx_a->create_qp(init);
  init.send_cq = p.cq_b.get();
  std::unique_ptr<SimQp> qb2 = p.ctx_b->create_qp(init);
  ASSERT_TRUE(qa2 && qb2);
  ASSERT_TRUE(connect_rc(*qa2, 1, qb2->qpn()) &&
              connect_rc(*qb2, 0, qa2->qpn()));
  const uint32_t k0 = window(2, 0x80);
  ASSERT_TRUE(bind(k0, 0x81, dst.key(), dst.va(0), 1024,
                   RHN_ACCESS_REMOTE_WRITE)
                  .ok());  // through p.qp_b
  const uint32_t k1 = (k0 & ~RHN_KEY_VARIANT_MASK) | 0x81;
  const std::vector<uint8_t> before = dst.buf.bytes();
  ASSERT_TRUE(qa2->post_send(
      rdma_wr(9, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(0), k1)));
  Completion w = wait_one(*c, *p.cq_a);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(dst.buf.bytes(), before);
  // Through the binding connection it works.
  w = write(k1, dst.va(0), 64);
  EXPECT_TRUE(w.ok()) << describe(w);
}

}  // namespace
}  // namespace rhinet::test
