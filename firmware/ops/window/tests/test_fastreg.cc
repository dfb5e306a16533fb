// SPDX-License-Identifier: BSD-2-Clause
// Fast-registration MRs at the engine (what nvme-rdma, NFS/RDMA and the
// kernel's other RDMA consumers register I/O buffers with): a kernel MR
// created with room for a page list and no translation, REG_MR executed in
// send-queue order over the page list the kernel wrote, remote WRITE and
// READ through the key landing in the right scattered pages, LOCAL_INV and
// a peer's SEND_INV ending the registration, a new key variant per
// registration, and the refusals.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kRights =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ;

class FastReg : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    // Node 0: a user process; node 1: the kernel (an NVMe-oF host, say).
    user = c->node(0).open_context();
    kern = c->node(1).kernel_context();
    ASSERT_TRUE(user->ok() && kern->ok());
    ucq = user->create_cq();
    kcq = kern->create_cq();
    QpInit ui, ki;
    ui.send_cq = ucq.get();
    ki.send_cq = kcq.get();
    uqp = user->create_qp(ui);
    kqp = kern->create_qp(ki);
    ASSERT_TRUE(uqp && kqp);
    ASSERT_TRUE(connect_rc(*uqp, 1, kqp->qpn()));
    ASSERT_TRUE(connect_rc(*kqp, 0, uqp->qpn()));
    // Four scattered pages of kernel memory, and their page list.
    data = kern->alloc(4 * 4096);
    list = kern->address_space().alloc_physical(4096);
    ASSERT_TRUE(data.valid() && list.valid());
    for (size_t i = 0; i < 4; i++)
      list.store64(i * 8, data.pages()[i] | RHN_VPTE_VALID);
    src = make_region(*user, 4 * 4096, kAllAccess, 61);
    back = make_region(*user, 4 * 4096, kAllAccess, 0, 0);
  }

  AdminResult create(uint32_t context, uint32_t pdn, uint32_t max_pages,
                     uint8_t variant = 0x20) {
    rhn_admin_cmd cmd{};
    cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
    cmd.hdr.context = context;
    cmd.u.create_mr.pdn = pdn;
    cmd.u.create_mr.levels = 1;
    cmd.u.create_mr.num_pages = max_pages;
    cmd.u.create_mr.table_addr = list.va();
    cmd.u.create_mr.key_variant = variant;
    cmd.u.create_mr.flags = RHN_CREATE_MR_F_FAST_REG;
    return c->node(context ? 0 : 1).driver->exec(cmd);
  }
  // REG_MR through the kernel QP: `pages` pages from iova.
  Completion reg(uint32_t key, uint64_t iova, uint64_t len, uint32_t pages,
                 uint32_t rights = kRights) {
    SendWr wr = send_wr(90, {}, RHN_OP_REG_MR);
    wr.remote_key = key;
    wr.remote_addr = iova;
    wr.reg_length = len;
    wr.reg_pages = pages;
    wr.imm_data = rights;
    EXPECT_TRUE(kqp->post_send(wr));
    return wait_one(*c, *kcq);
  }
  Completion local_invalidate(uint32_t key) {
    SendWr wr = send_wr(91, {}, RHN_OP_LOCAL_INV);
    wr.remote_key = key;
    EXPECT_TRUE(kqp->post_send(wr));
    return wait_one(*c, *kcq);
  }
  Completion remote(uint8_t op, uint32_t key, uint64_t va, size_t off,
                    uint32_t len) {
    Region& local = op == RHN_OP_READ ? back : src;
    EXPECT_TRUE(uqp->post_send(rdma_wr(5, op, {local.sge(off, len)}, va, key)));
    return wait_one(*c, *ucq);
  }

  // The kernel's bus-address MR (rhinet.ko's local_dma_lkey), in its own
  // PD as the driver makes it: it serves every kernel PD.
  uint32_t dma_lkey() {
    if (dma_key_) return dma_key_;
    uint32_t pd = 0;
    EXPECT_TRUE(kern->alloc_pd(&pd).ok());
    rhn_admin_cmd cmd{};
    cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
    cmd.u.create_mr.pdn = pd;
    cmd.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE;
    cmd.u.create_mr.length = 1ull << 36;
    cmd.u.create_mr.key_variant = 0x4b;
    AdminResult r = c->node(1).driver->exec(cmd);
    EXPECT_TRUE(r.ok());
    return dma_key_ = r.result;
  }
  uint32_t dma_key_ = 0;

  std::unique_ptr<SimCluster> c;
  std::unique_ptr<SimContext> user, kern;
  std::unique_ptr<SimCq> ucq, kcq;
  std::unique_ptr<SimQp> uqp, kqp;
  SimBuffer data, list;
  Region src, back;
};

// An I/O VA with a page offset, as ib_map_mr_sg makes for a buffer that
// does not start on a page.
constexpr uint64_t kIova = 0x7000'0000'0100ull;

TEST_F(FastReg, RegisterWriteReadInvalidate) {
  AdminResult mr = create(0, kern->pdn(), 8);
  ASSERT_TRUE(mr.ok()) << int(mr.status);
  const uint32_t key = mr.result;
  // Not registered yet: the key is refused.
  Completion early = remote(RHN_OP_WRITE, key, kIova, 0, 64);
  EXPECT_EQ(early.status, RHN_CQE_REM_ACCESS_ERR) << describe(early);
}

TEST_F(FastReg, RegisteredKeyReachesTheListedPages) {
  AdminResult mr = create(0, kern->pdn(), 8);
  ASSERT_TRUE(mr.ok());
  const uint32_t key = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x21;
  // 4 pages from kIova (offset 0x100): 4 * 4096 - 0x100 bytes.
  const uint64_t len = 4 * 4096 - 0x100;
  Completion r = reg(key, kIova, len, 4);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.opcode, RHN_CQE_OP_REG_MR);
  // A WRITE across the pages lands where the page list says.
  Completion w = remote(RHN_OP_WRITE, key, kIova + 4000, 0, 9000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(data.bytes(0x100 + 4000, 9000), src.buf.bytes(0, 9000));
  Completion rd = remote(RHN_OP_READ, key, kIova + 4000, 0, 9000);
  ASSERT_TRUE(rd.ok()) << describe(rd);
  EXPECT_EQ(back.buf.bytes(0, 9000), src.buf.bytes(0, 9000));
  // Past the registered length: refused, and nothing written.
  Completion past = remote(RHN_OP_WRITE, key, kIova + len - 8, 0, 16);
  EXPECT_EQ(past.status, RHN_CQE_REM_ACCESS_ERR) << describe(past);
}

TEST_F(FastReg, LocalInvalidateEndsItAndANewVariantStartsAgain) {
  AdminResult mr = create(0, kern->pdn(), 8, 0x30);
  ASSERT_TRUE(mr.ok());
  const uint32_t k1 = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x31;
  ASSERT_TRUE(reg(k1, kIova, 4096 - 0x100, 1).ok());
  ASSERT_TRUE(remote(RHN_OP_WRITE, k1, kIova, 0, 64).ok());
  Completion inv = local_invalidate(k1);
  ASSERT_TRUE(inv.ok()) << describe(inv);
  EXPECT_EQ(inv.opcode, RHN_CQE_OP_LOCAL_INV);
  const uint32_t k2 = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x32;
  ASSERT_TRUE(reg(k2, kIova + 4096, 4096 - 0x100, 1).ok());
  // The new key works at the new iova; the old variant is refused (and
  // the refusal moves the user's QP to error: last).
  ASSERT_TRUE(remote(RHN_OP_WRITE, k2, kIova + 4096 + 64, 64, 64).ok());
  EXPECT_EQ(data.bytes(0x100 + 64, 64), src.buf.bytes(64, 64));
  Completion old = remote(RHN_OP_WRITE, k1, kIova, 0, 64);
  EXPECT_EQ(old.status, RHN_CQE_REM_ACCESS_ERR) << describe(old);
}

TEST_F(FastReg, NewKeyMapsItsOwnPages) {
  AdminResult mr = create(0, kern->pdn(), 8, 0x30);
  ASSERT_TRUE(mr.ok());
  const uint32_t k1 = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x31;
  ASSERT_TRUE(reg(k1, kIova, 2 * 4096 - 0x100, 2).ok());
  ASSERT_TRUE(remote(RHN_OP_WRITE, k1, kIova + 4096, 0, 64).ok());
  EXPECT_EQ(data.bytes(0x1000 + 0x100, 64), src.buf.bytes(0, 64));
  ASSERT_TRUE(local_invalidate(k1).ok());
  // The list now starts at the third page; a TLB entry of the old
  // registration must not survive.
  list.store64(0, data.pages()[2] | RHN_VPTE_VALID);
  list.store64(8, data.pages()[3] | RHN_VPTE_VALID);
  const uint32_t k2 = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x32;
  ASSERT_TRUE(reg(k2, kIova, 2 * 4096 - 0x100, 2).ok());
  ASSERT_TRUE(remote(RHN_OP_WRITE, k2, kIova + 4096, 100, 64).ok());
  EXPECT_EQ(data.bytes(0x3000 + 0x100, 64), src.buf.bytes(100, 64));
  EXPECT_EQ(data.bytes(0x1000 + 0x100, 64), src.buf.bytes(0, 64));
}

TEST_F(FastReg, SendWithInvalidateFromThePeerEndsIt) {
  AdminResult mr = create(0, kern->pdn(), 8);
  ASSERT_TRUE(mr.ok());
  const uint32_t key = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x22;
  ASSERT_TRUE(reg(key, kIova, 4096 - 0x100, 1).ok());
  SimBuffer inbox = kern->address_space().alloc_physical(4096);
  ASSERT_TRUE(kqp->post_recv(7, {Sge{inbox.va(), 4096, dma_lkey()}}));
  SendWr si = send_wr(8, {src.sge(0, 32)}, RHN_OP_SEND_INV);
  si.imm_data = key;
  ASSERT_TRUE(uqp->post_send(si));
  Completion sc = wait_one(*c, *ucq);
  ASSERT_TRUE(sc.ok()) << describe(sc);
  Completion rc = wait_one(*c, *kcq);
  ASSERT_TRUE(rc.ok()) << describe(rc);
  EXPECT_TRUE(rc.flags & RHN_CQE_F_INV);
  EXPECT_EQ(rc.imm_data, key);
  Completion w = remote(RHN_OP_WRITE, key, kIova, 0, 64);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
}

TEST_F(FastReg, Refusals) {
  // Only the kernel makes fast-registration MRs (the list is bus
  // addresses), with a one-level list of at most 512 pages.
  EXPECT_EQ(create(user->index(), user->pdn(), 8).status,
            RHN_ADMIN_NOT_PERMITTED);
  EXPECT_EQ(create(0, kern->pdn(), 0).status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(create(0, kern->pdn(), 513).status, RHN_ADMIN_BAD_PARAM);
  AdminResult mr = create(0, kern->pdn(), 2);
  ASSERT_TRUE(mr.ok());
  // More pages than the MR has room for: a local protection error.
  Completion big = reg(mr.result, kIova, 3 * 4096, 4);
  EXPECT_EQ(big.status, RHN_CQE_LOC_PROT_ERR) << describe(big);
  EXPECT_EQ(big.vendor_err, uint32_t(RHN_SYN_BOUNDS));
}

TEST_F(FastReg, PageCountMustMatchTheRange) {
  AdminResult mr = create(0, kern->pdn(), 8);
  ASSERT_TRUE(mr.ok());
  Completion r = reg(mr.result, kIova, 100, 2);  // one page covers it
  EXPECT_EQ(r.status, RHN_CQE_LOC_PROT_ERR) << describe(r);
}

TEST_F(FastReg, ARegisteredMrIsNotRegisteredTwice) {
  AdminResult mr = create(0, kern->pdn(), 8);
  ASSERT_TRUE(mr.ok());
  ASSERT_TRUE(reg(mr.result, kIova, 100, 1).ok());
  Completion again = reg(mr.result, kIova, 100, 1);
  EXPECT_EQ(again.status, RHN_CQE_LOC_PROT_ERR) << describe(again);
}

TEST_F(FastReg, AnotherPdsQpCannotRegisterIt) {
  uint32_t other_pd = 0;
  ASSERT_TRUE(kern->alloc_pd(&other_pd).ok());
  AdminResult mr = create(0, other_pd, 8);
  ASSERT_TRUE(mr.ok());
  Completion r = reg(mr.result, kIova, 100, 1);
  EXPECT_EQ(r.status, RHN_CQE_LOC_PROT_ERR) << describe(r);
  EXPECT_EQ(r.vendor_err, uint32_t(RHN_SYN_PD_MISMATCH));
}

// The kernel's bus-address key serves every kernel PD, never a process:
// a user SGE naming it is a local protection error, nothing is read.
TEST_F(FastReg, AProcessCannotUseTheKernelsBusAddressKey) {
  const uint32_t k = dma_lkey();
  SendWr w = rdma_wr(3, RHN_OP_WRITE, {Sge{data.pages()[0], 64, k}}, src.va(),
                     src.key());
  ASSERT_TRUE(uqp->post_send(w));
  Completion e = wait_one(*c, *ucq);
  EXPECT_EQ(e.status, RHN_CQE_LOC_PROT_ERR) << describe(e);
}

// The driver destroys the MR by the key it was created with, whatever
// variant the registrations since gave it; the PD is free afterwards.
TEST_F(FastReg, DestroyedByItsFirstKeyAfterRegistrations) {
  AdminResult mr = create(0, kern->pdn(), 8, 0x40);
  ASSERT_TRUE(mr.ok());
  const uint32_t k1 = (mr.result & ~RHN_KEY_VARIANT_MASK) | 0x41;
  ASSERT_TRUE(reg(k1, kIova, 100, 1).ok());
  EXPECT_TRUE(kern->driver().destroy(RHN_ADMIN_DESTROY_MR, 0, mr.result).ok());
  Completion w = remote(RHN_OP_WRITE, k1, kIova, 0, 64);
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
}

}  // namespace
}  // namespace rhinet::test
