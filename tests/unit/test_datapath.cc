// SPDX-License-Identifier: BSD-2-Clause
// Data movement between 2..8 engines: SEND/RECV, RDMA WRITE/READ, atomics,
// area addressing, completions, status words, inline data and the inline
// doorbell, large transfers through a small TLB, SRQ, UD and endpoints.
// All data is checked byte for byte.
#include <algorithm>
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

ClusterConfig cluster_config(size_t nodes, uint32_t tlb_entries = 256) {
  ClusterConfig cfg;
  cfg.nodes = nodes;
  cfg.engine.tlb_entries = tlb_entries;
  return cfg;
}

class TwoNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(cluster_config(2));
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok) << "last admin status a=" << int(p.ctx_a->last.status);
  }
  SimContext& A() { return *p.ctx_a; }
  SimContext& B() { return *p.ctx_b; }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

TEST_F(TwoNodes, SendRecvSinglePacket) {
  Region src = make_region(A(), 1000, kAllAccess, 11);
  Region dst = make_region(B(), 2000, kAllAccess, 0, 0xee);
  ASSERT_TRUE(p.qp_b->post_recv(7, {dst.sge(0, 2000)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(11, {src.sge(0, 1000)})));
  Completion s = wait_one(*c, *p.cq_a);
  EXPECT_TRUE(s.ok()) << describe(s);
  EXPECT_TRUE(s.is_send());
  EXPECT_EQ(s.wr_id, 11u);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_SEND);
  EXPECT_EQ(s.qpn, p.qp_a->qpn());
  Completion r = wait_one(*c, *p.cq_b);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_FALSE(r.is_send());
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(r.opcode, RHN_CQE_OP_RECV);
  EXPECT_EQ(r.byte_len, 1000u);
  EXPECT_EQ(r.qpn, p.qp_b->qpn());
  EXPECT_FALSE(r.flags & RHN_CQE_F_IMM);
  EXPECT_EQ(dst.buf.bytes(0, 1000), pattern(11, 1000));
  EXPECT_EQ(dst.buf.bytes(1000, 1000), std::vector<uint8_t>(1000, 0xee));
}

TEST_F(TwoNodes, ZeroByteSendWithImmediate) {
  Region dst = make_region(B(), 64, kAllAccess, 0, 0xee);
  ASSERT_TRUE(p.qp_b->post_recv(3, {dst.sge(0, 64)}));
  SendWr wr = send_wr(4, {}, RHN_OP_SEND_IMM);
  wr.imm_data = 77;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.byte_len, 0u);
  EXPECT_EQ(r.imm_data, 77u);
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(64, 0xee));
}

TEST_F(TwoNodes, SendWithImmediateMultiPacket) {
  const size_t len = 3 * RHN_WIRE_MTU + 123;  // four packets
  Region src = make_region(A(), len, kAllAccess, 21, -1, 0x321);
  Region dst = make_region(B(), len + 64, kAllAccess, 0, 0, 0x10);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, len + 64)}));
  SendWr wr = send_wr(2, {src.sge(0, len)}, RHN_OP_SEND_IMM);
  wr.imm_data = 0xcafef00d;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  Completion s = wait_one(*c, *p.cq_a);
  EXPECT_TRUE(s.ok()) << describe(s);
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.byte_len, len);
  EXPECT_TRUE(r.flags & RHN_CQE_F_IMM);
  EXPECT_EQ(r.imm_data, 0xcafef00du);
  EXPECT_EQ(dst.buf.bytes(0, len), pattern(21, len));
  EXPECT_EQ(dst.buf.bytes(len, 64), std::vector<uint8_t>(64, 0));
}

TEST_F(TwoNodes, SendGathersAndRecvScattersManySges) {
  // Nine gather pieces of odd sizes from three regions (two extension slots).
  Region r1 = make_region(A(), 10000, kAllAccess, 31);
  Region r2 = make_region(A(), 5000, kAllAccess, 32, -1, 0x7f0);
  Region r3 = make_region(A(), 300, kAllAccess, 33);
  std::vector<Sge> sges = {
      r1.sge(0, 1),    r2.sge(17, 4100),   r3.sge(0, 300),
      r1.sge(4095, 2), r1.sge(5000, 5000), r2.sge(0, 16),
      r3.sge(299, 1),  r2.sge(4200, 800),  r1.sge(100, 64)};
  std::vector<uint8_t> expect;
  const Region* owners[] = {&r1, &r2, &r3, &r1, &r1, &r2, &r3, &r2, &r1};
  for (size_t i = 0; i < sges.size(); ++i) {
    auto b =
        owners[i]->buf.bytes(sges[i].addr - owners[i]->va(), sges[i].length);
    expect.insert(expect.end(), b.begin(), b.end());
  }
  const size_t total = expect.size();
  Region d1 = make_region(B(), 3000, kAllAccess, 0, 0xee);
  Region d2 = make_region(B(), 20000, kAllAccess, 0, 0xee);
  ASSERT_TRUE(p.qp_b->post_recv(
      5, {d1.sge(10, 2990), d2.sge(0, 100), d2.sge(5000, 15000)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(6, sges)));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  ASSERT_EQ(r.byte_len, total);
  std::vector<uint8_t> got = d1.buf.bytes(10, 2990);
  auto g2 = d2.buf.bytes(0, 100);
  got.insert(got.end(), g2.begin(), g2.end());
  auto g3 = d2.buf.bytes(5000, total - 3090);
  got.insert(got.end(), g3.begin(), g3.end());
  EXPECT_EQ(got, expect);
  EXPECT_EQ(d1.buf.bytes(0, 10), std::vector<uint8_t>(10, 0xee));
  EXPECT_EQ(d2.buf.bytes(100, 4900), std::vector<uint8_t>(4900, 0xee));
}

TEST_F(TwoNodes, SendWithMaximumSges) {
  Region src = make_region(A(), RHN_WQE_MAX_SGES * 100, kAllAccess, 41);
  std::vector<Sge> sges;
  // Reverse order, so a gather that ignores the SGE list would be caught.
  for (int i = RHN_WQE_MAX_SGES - 1; i >= 0; --i)
    sges.push_back(src.sge(size_t(i) * 100, 100));
  Region dst = make_region(B(), RHN_WQE_MAX_SGES * 100);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, RHN_WQE_MAX_SGES * 100)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, sges)));
  Completion s = wait_one(*c, *p.cq_a);
  EXPECT_TRUE(s.ok()) << describe(s);
  ASSERT_TRUE(wait_one(*c, *p.cq_b).ok());
  auto pat = pattern(41, RHN_WQE_MAX_SGES * 100);
  for (int i = 0; i < RHN_WQE_MAX_SGES; ++i) {
    const size_t from = size_t(RHN_WQE_MAX_SGES - 1 - i) * 100;
    EXPECT_EQ(dst.buf.bytes(size_t(i) * 100, 100),
              std::vector<uint8_t>(pat.begin() + ptrdiff_t(from),
                                   pat.begin() + ptrdiff_t(from) + 100))
        << "piece " << i;
  }
}

TEST_F(TwoNodes, SendsArriveInOrder) {
  constexpr int kCount = 50;
  Region src = make_region(A(), kCount * 256, kAllAccess, 51);
  Region dst = make_region(B(), kCount * 256);
  for (int i = 0; i < kCount; ++i)
    ASSERT_TRUE(
        p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * 256, 256)}));
  for (int i = 0; i < kCount; ++i)
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(1000 + uint64_t(i), {src.sge(size_t(i) * 256, 256)})));
  auto rc = c->wait_cqes(*p.cq_b, kCount);
  ASSERT_EQ(rc.size(), size_t(kCount));
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(rc[size_t(i)].wr_id, uint64_t(i));
  auto sc = c->wait_cqes(*p.cq_a, kCount);
  ASSERT_EQ(sc.size(), size_t(kCount));
  for (int i = 0; i < kCount; ++i)
    EXPECT_EQ(sc[size_t(i)].wr_id, 1000u + uint64_t(i));
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

TEST_F(TwoNodes, RdmaWriteLeavesNeighboursUntouched) {
  const size_t len = 20000;
  Region src = make_region(A(), len + 100, kAllAccess, 61);
  Region dst = make_region(B(), 32768, kAllAccess, 0, 0x5a, 0x44);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(3, RHN_OP_WRITE, {src.sge(100, len)}, dst.va(333), dst.key())));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_WRITE);
  EXPECT_EQ(s.wr_id, 3u);
  EXPECT_EQ(dst.buf.bytes(333, len), src.buf.bytes(100, len));
  EXPECT_EQ(dst.buf.bytes(0, 333), std::vector<uint8_t>(333, 0x5a));
  EXPECT_EQ(dst.buf.bytes(333 + len, 32768 - 333 - len),
            std::vector<uint8_t>(32768 - 333 - len, 0x5a));
  // A WRITE consumes no receive and makes no CQE on the target.
  c->run_for(200'000);
  EXPECT_TRUE(p.cq_b->poll().empty());
}

TEST_F(TwoNodes, RdmaWriteWithImmediateConsumesReceive) {
  const size_t len = 9000;
  Region src = make_region(A(), len, kAllAccess, 71);
  Region dst = make_region(B(), len);
  ASSERT_TRUE(p.qp_b->post_recv(77, {}));
  SendWr wr =
      rdma_wr(4, RHN_OP_WRITE_IMM, {src.sge(0, len)}, dst.va(), dst.key());
  wr.imm_data = 0x12345678;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 77u);
  EXPECT_EQ(r.opcode, RHN_CQE_OP_RECV_WRITE_IMM);
  EXPECT_TRUE(r.flags & RHN_CQE_F_IMM);
  EXPECT_EQ(r.imm_data, 0x12345678u);
  EXPECT_EQ(r.byte_len, len);
  EXPECT_EQ(dst.buf.bytes(), pattern(71, len));
}

TEST_F(TwoNodes, RdmaReadIntoScatteredLocalBuffers) {
  const size_t len = 3 * 4096 + 777;
  Region remote = make_region(B(), len + 1000, kAllAccess, 81);
  Region l1 = make_region(A(), 5000, kAllAccess, 0, 0xcc);
  Region l2 = make_region(A(), len, kAllAccess, 0, 0xcc, 0x999);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(5, RHN_OP_READ, {l1.sge(1, 4000), l2.sge(0, len - 4000)},
              remote.va(1000), remote.key())));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_READ);
  EXPECT_EQ(s.byte_len, len);
  auto want = remote.buf.bytes(1000, len);
  auto got = l1.buf.bytes(1, 4000);
  auto g2 = l2.buf.bytes(0, len - 4000);
  got.insert(got.end(), g2.begin(), g2.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(l1.buf.bytes(0, 1), std::vector<uint8_t>(1, 0xcc));
  EXPECT_EQ(l1.buf.bytes(4001, 999), std::vector<uint8_t>(999, 0xcc));
}

TEST_F(TwoNodes, FetchAddAndCompareSwap) {
  Region remote = make_region(B(), 64);
  remote.buf.store64(8, 100);
  remote.buf.store64(16, 0xdeadbeef);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xff);

  SendWr fa = rdma_wr(1, RHN_OP_FETCH_ADD, {result.sge(0, 8)}, remote.va(8),
                      remote.key());
  fa.compare_add = 5;
  ASSERT_TRUE(p.qp_a->post_send(fa));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_FETCH_ADD);
  EXPECT_EQ(result.buf.load64(0), 100u);
  EXPECT_EQ(remote.buf.load64(8), 105u);

  SendWr cs = rdma_wr(2, RHN_OP_CMP_SWAP, {result.sge(8, 8)}, remote.va(8),
                      remote.key());
  cs.compare_add = 105;
  cs.swap = 0x1122334455667788ull;
  ASSERT_TRUE(p.qp_a->post_send(cs));
  s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_CMP_SWAP);
  EXPECT_EQ(result.buf.load64(8), 105u);
  EXPECT_EQ(remote.buf.load64(8), 0x1122334455667788ull);

  // A failed compare returns the current value and leaves it alone.
  cs.wr_id = 3;
  cs.sges = {result.sge(16, 8)};
  cs.compare_add = 1;
  cs.swap = 2;
  ASSERT_TRUE(p.qp_a->post_send(cs));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(result.buf.load64(16), 0x1122334455667788ull);
  EXPECT_EQ(remote.buf.load64(8), 0x1122334455667788ull);
  EXPECT_EQ(remote.buf.load64(16), 0xdeadbeefu);  // neighbour untouched
  EXPECT_EQ(result.buf.load64(24), ~0ull);

  // Fetch-add wraps modulo 2^64.
  remote.buf.store64(24, ~0ull);
  fa.wr_id = 4;
  fa.sges = {result.sge(32, 8)};
  fa.remote_addr = remote.va(24);
  fa.compare_add = 2;
  ASSERT_TRUE(p.qp_a->post_send(fa));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(result.buf.load64(32), ~0ull);
  EXPECT_EQ(remote.buf.load64(24), 1u);
}

TEST_F(TwoNodes, UnalignedAtomicFails) {
  Region remote = make_region(B(), 64, kAllAccess, 91);
  Region result = make_region(A(), 64);
  SendWr fa = rdma_wr(1, RHN_OP_FETCH_ADD, {result.sge(0, 8)}, remote.va(4),
                      remote.key());
  fa.compare_add = 1;
  ASSERT_TRUE(p.qp_a->post_send(fa));
  Completion s = wait_one(*c, *p.cq_a);
  // Refused by the responder (REM_INV_REQ_ERR per wire.md) or already by the
  // requester; either way the syndrome says why.
  EXPECT_TRUE(s.status == RHN_CQE_REM_INV_REQ_ERR ||
              s.status == RHN_CQE_LOC_QP_OP_ERR)
      << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_ALIGNMENT)) << describe(s);
  EXPECT_EQ(remote.buf.bytes(), pattern(91, 64));
}

TEST_F(TwoNodes, WriteAndReadByAreaId) {
  Region area_mem = make_region(B(), 4 * 4096, kAllAccess, 0, 0x11);
  // Area 42 covers the second and third page only.
  ASSERT_TRUE(B().register_area(42, area_mem.mr, area_mem.va(4096), 8192).ok());
  Region src = make_region(A(), 5000, kAllAccess, 101);
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 5000)}, 100, 42,
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  ASSERT_TRUE(p.qp_a->post_send(w));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(area_mem.buf.bytes(4096 + 100, 5000), pattern(101, 5000));
  EXPECT_EQ(area_mem.buf.bytes(0, 4196), std::vector<uint8_t>(4196, 0x11));
  EXPECT_EQ(area_mem.buf.bytes(9196, 16384 - 9196),
            std::vector<uint8_t>(16384 - 9196, 0x11));

  Region back = make_region(A(), 6000);
  SendWr r = rdma_wr(2, RHN_OP_READ, {back.sge(0, 6000)}, 50, 42,
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  ASSERT_TRUE(p.qp_a->post_send(r));
  s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(back.buf.bytes(), area_mem.buf.bytes(4096 + 50, 6000));

  // After UNREGISTER_AREA the ID is gone.
  ASSERT_TRUE(B().driver().unregister_area(B().index(), 42).ok());
  ASSERT_TRUE(p.qp_a->post_send(w));
  s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_REM_ACCESS_ERR) << describe(s);
}

TEST_F(TwoNodes, UnsignalledWorkCompletesSilently) {
  Region src = make_region(A(), 10 * 1000, kAllAccess, 111);
  Region dst = make_region(B(), 10 * 1000);
  for (int i = 0; i < 10; ++i) {
    const uint8_t flags = i == 9 ? RHN_WQE_F_SIGNALED : 0;
    ASSERT_TRUE(p.qp_a->post_send(
        rdma_wr(uint64_t(i), RHN_OP_WRITE, {src.sge(size_t(i) * 1000, 1000)},
                dst.va(size_t(i) * 1000), dst.key(), flags)));
  }
  auto v = c->wait_cqes(*p.cq_a, 1);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].wr_id, 9u);
  EXPECT_TRUE(v[0].ok());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  c->run_for(500'000);
  EXPECT_TRUE(p.cq_a->poll().empty());
  // The NIC's SQ consumer moved past all ten WQEs.
  rhn_qp_attr attr;
  ASSERT_TRUE(p.qp_a->query(&attr).ok());
  EXPECT_EQ(attr.sq_consumer, p.qp_a->sq_posted_slots());
}

TEST_F(TwoNodes, StatusWordReportsCompletion) {
  Region src = make_region(A(), 3000, kAllAccess, 121);
  Region dst = make_region(B(), 3000);
  Region words = make_region(A(), 64);
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 3000)}, dst.va(), dst.key(),
                     RHN_WQE_F_STATUS_WORD);
  w.status_addr = words.va(8);
  w.status_lkey = words.key();
  ASSERT_TRUE(p.qp_a->post_send(w));
  ASSERT_TRUE(c->run_until(
      [&] { return status_word_done(words.buf.load64(8)); }, 10'000'000));
  const uint64_t sw = words.buf.load64(8);
  EXPECT_EQ(status_word_status(sw), RHN_CQE_SUCCESS);
  EXPECT_EQ(status_word_syndrome(sw), RHN_SYN_NONE);
  EXPECT_EQ(status_word_length(sw), 3000u);
  EXPECT_EQ(dst.buf.bytes(), pattern(121, 3000));
  EXPECT_EQ(words.buf.load64(0), 0u);
  EXPECT_EQ(words.buf.load64(16), 0u);
  // Unsignalled: the status word is the only report.
  c->run_for(200'000);
  EXPECT_TRUE(p.cq_a->poll().empty());

  // A SEND with status word and CQE.
  Region rbuf = make_region(B(), 100);
  ASSERT_TRUE(p.qp_b->post_recv(1, {rbuf.sge(0, 100)}));
  SendWr s = send_wr(2, {src.sge(0, 100)}, RHN_OP_SEND,
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD);
  s.status_addr = words.va(24);
  s.status_lkey = words.key();
  ASSERT_TRUE(p.qp_a->post_send(s));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_TRUE(status_word_done(words.buf.load64(24)));
  EXPECT_EQ(status_word_length(words.buf.load64(24)), 100u);
}

// Software that sees a WQE's CQE may look at its status word (or clear it
// for its next operation): a WQE with both has its word written before the
// CQE is published, so the CQE never announces a word that is not there,
// and a word cleared after the CQE is never overwritten by this WQE.
TEST_F(TwoNodes, TheStatusWordIsWrittenBeforeTheCqe) {
  Region src = make_region(A(), 64, kAllAccess, 5);
  Region dst = make_region(B(), 64);
  Region words = make_region(A(), 64);
  int cqes = 0;
  bool word_done_at_cqe = false;
  c->node(0).bus.after_publish = [&](uint64_t, size_t) {
    if (cqes++ == 0) word_done_at_cqe = status_word_done(words.buf.load64(8));
  };
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key(),
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD);
  w.status_addr = words.va(8);
  w.status_lkey = words.key();
  ASSERT_TRUE(p.qp_a->post_send(w));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  c->node(0).bus.after_publish = nullptr;
  EXPECT_EQ(cqes, 1);
  EXPECT_TRUE(word_done_at_cqe)
      << "the CQE was visible before the WQE's status word";
  EXPECT_EQ(status_word_length(words.buf.load64(8)), 64u);
}

// A host's memcpy stores 8..15 bytes in two overlapping passes. Software
// that sees a status word done takes it and clears the word for its next
// operation (userlib reuses one word): were the NIC to write the word with
// such a copy and stall between the passes, the second pass would bring the
// old word back and the next operation would look complete before it ran.
// The bus here runs "software" between the passes of every multi-pass
// write; the NIC must store status words and atomic results in one go.
TEST_F(TwoNodes, WordsSoftwareClearsAreStoredOnce) {
  Region src = make_region(A(), 64, kAllAccess, 7);
  Region dst = make_region(B(), 64);
  Region words = make_region(A(), 64);
  bool cleared = false;
  c->node(0).bus.between_passes = [&](uint64_t, size_t) {
    if (!cleared && status_word_done(words.buf.load64(8))) {
      words.buf.store64(8, 0);  // taken, and the slot reused
      cleared = true;
    }
  };
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 16)}, dst.va(), dst.key(),
                     RHN_WQE_F_STATUS_WORD);
  w.status_addr = words.va(8);
  w.status_lkey = words.key();
  ASSERT_TRUE(p.qp_a->post_send(w));
  ASSERT_TRUE(c->run_until(
      [&] { return cleared || status_word_done(words.buf.load64(8)); },
      10'000'000));
  if (!cleared) {  // software's turn, after the store
    words.buf.store64(8, 0);
    cleared = true;
  }
  c->run_for(200'000);
  EXPECT_EQ(words.buf.load64(8), 0u)
      << "a status word software had taken and cleared came back";
  c->node(0).bus.between_passes = nullptr;

  // A remote FETCH_ADD's result and the host CPU writing the same counter
  // after it saw the add (as the Inbox's RecvCNT counters are used): the
  // CPU's value stays.
  Region counter = make_region(B(), 64);
  counter.buf.store64(8, 100);
  Region result = make_region(A(), 64);
  bool reset = false;
  c->node(1).bus.between_passes = [&](uint64_t, size_t) {
    if (!reset && counter.buf.load64(8) == 105) {
      counter.buf.store64(8, 7);
      reset = true;
    }
  };
  SendWr fa = rdma_wr(2, RHN_OP_FETCH_ADD, {result.sge(0, 8)}, counter.va(8),
                      counter.key(), RHN_WQE_F_SIGNALED);
  fa.compare_add = 5;
  ASSERT_TRUE(p.qp_a->post_send(fa));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(result.buf.load64(0), 100u);
  if (!reset) {
    EXPECT_EQ(counter.buf.load64(8), 105u);
    counter.buf.store64(8, 7);
  }
  c->run_for(200'000);
  EXPECT_EQ(counter.buf.load64(8), 7u)
      << "the NIC's second copy pass undid the host's write";
  c->node(1).bus.between_passes = nullptr;
}

TEST_F(TwoNodes, InlineSendsAndWrites) {
  Region dst = make_region(B(), 4096);
  const size_t sizes[] = {1, 16, 17, 100, RHN_WQE_MAX_INLINE};
  size_t off = 0;
  uint64_t id = 0;
  for (size_t n : sizes) {
    ASSERT_TRUE(p.qp_b->post_recv(id, {dst.sge(off, n)}));
    SendWr wr =
        send_wr(id, {}, RHN_OP_SEND, RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
    wr.inline_data = pattern(200 + n, n);
    ASSERT_TRUE(p.qp_a->post_send(wr));
    Completion r = wait_one(*c, *p.cq_b);
    ASSERT_TRUE(r.ok()) << "inline size " << n << " " << describe(r);
    EXPECT_EQ(r.byte_len, n);
    EXPECT_EQ(dst.buf.bytes(off, n), pattern(200 + n, n))
        << "inline size " << n;
    EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
    off += n;
    ++id;
  }
  // Inline RDMA WRITE: the source buffer is free as soon as post returns.
  SendWr w = rdma_wr(9, RHN_OP_WRITE, {}, dst.va(3000), dst.key(),
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_INLINE);
  w.inline_data = pattern(299, 300);
  ASSERT_TRUE(p.qp_a->post_send(w));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(dst.buf.bytes(3000, 300), pattern(299, 300));
}

TEST_F(TwoNodes, InlineDoorbellPath) {
  Region src = make_region(A(), 8192, kAllAccess, 131);
  Region dst = make_region(B(), 8192);
  // Alternate inline-doorbell WQEs (inline data, SGEs) with ordinary ones.
  for (int i = 0; i < 16; ++i) {
    SendWr w =
        rdma_wr(uint64_t(i), RHN_OP_WRITE, {src.sge(size_t(i) * 512, 512)},
                dst.va(size_t(i) * 512), dst.key());
    if (i % 3 == 0) {
      w.flags |= RHN_WQE_F_INLINE;
      w.inline_data = src.buf.bytes(size_t(i) * 512, 400);
      w.sges.clear();
      // The rest of this chunk by a second, ordinary WRITE.
      SendWr tail = rdma_wr(100 + uint64_t(i), RHN_OP_WRITE,
                            {src.sge(size_t(i) * 512 + 400, 112)},
                            dst.va(size_t(i) * 512 + 400), dst.key());
      ASSERT_TRUE(p.qp_a->post_send(tail));
    }
    w.inline_doorbell = (i % 2 == 0);
    ASSERT_TRUE(p.qp_a->post_send(w));
  }
  auto v = c->wait_cqes(*p.cq_a, 16 + 6);
  ASSERT_EQ(v.size(), 22u);
  for (const auto& comp : v) EXPECT_TRUE(comp.ok()) << describe(comp);
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

TEST_F(TwoNodes, ThreeLevelTranslationTable) {
  // Force the deepest table shape for a small region on both sides.
  SimBuffer sbuf = A().alloc(3 * 4096 + 5, 0x80);
  sbuf.fill_pattern(141);
  MrOptions three;
  three.levels = 3;
  SimMr smr = A().reg_mr(sbuf, kAllAccess, {}, three);
  ASSERT_TRUE(smr.ok());
  SimBuffer dbuf = B().alloc(3 * 4096 + 5, 0xf00);
  SimMr dmr = B().reg_mr(dbuf, kAllAccess, {}, three);
  ASSERT_TRUE(dmr.ok());
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {Sge{sbuf.va(), uint32_t(sbuf.size()), smr.key}},
              dbuf.va(), dmr.key)));
  Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(dbuf.bytes(), sbuf.bytes());
}

TEST(LargeTransfers, FourMiBWriteAndReadThroughSmallTlb) {
  ClusterConfig cfg = cluster_config(2, 16);
  cfg.memory_bytes = 48u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  const size_t len = 4u << 20;  // 1024 pages: two-level VP tables
  Region src = make_region(*p.ctx_a, len, kAllAccess, 151, -1, 0x10);
  Region dst = make_region(*p.ctx_b, len + 4096, kAllAccess, 0, 0x77);
  ASSERT_TRUE(src.mr.ok());
  ASSERT_TRUE(dst.mr.ok());
  EXPECT_EQ(dst.mr.levels, 2);
  CounterSnap a0(c.node(0)), b0(c.node(1));
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, len)}, dst.va(2048), dst.key())));
  Completion s = wait_one(c, *p.cq_a, 2'000'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_TRUE(dst.buf.bytes(2048, len) == src.buf.bytes())
      << "4 MiB WRITE data mismatch";
  EXPECT_EQ(dst.buf.bytes(0, 2048), std::vector<uint8_t>(2048, 0x77));
  EXPECT_EQ(dst.buf.bytes(2048 + len, 2048), std::vector<uint8_t>(2048, 0x77));
  // Every page had to be translated at least once on both sides.
  EXPECT_GE(a0.delta(RHN_CNT_TLB_MISSES), 1024u);
  EXPECT_GE(b0.delta(RHN_CNT_TLB_MISSES), 1024u);
  EXPECT_GE(a0.delta(RHN_CNT_TX_PACKETS), 1024u);

  // READ 1 MiB back into a fresh buffer.
  const size_t rlen = 1u << 20;
  Region back = make_region(*p.ctx_a, rlen);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_READ, {back.sge(0, rlen)}, dst.va(4096), dst.key())));
  s = wait_one(c, *p.cq_a, 2'000'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_TRUE(back.buf.bytes() == src.buf.bytes(2048, rlen))
      << "1 MiB READ data mismatch";

  // Small operations on one page hit the TLB.
  CounterSnap b1(c.node(1));
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(
        p.qp_a->post_send(rdma_wr(10 + uint64_t(i), RHN_OP_WRITE,
                                  {src.sge(0, 64)}, dst.va(8192), dst.key())));
  auto v = c.wait_cqes(*p.cq_a, 20);
  ASSERT_EQ(v.size(), 20u);
  EXPECT_GE(b1.delta(RHN_CNT_TLB_HITS), 10u);
}

TEST(LargeTransfers, DestroyMrInvalidatesTlb) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 8192, kAllAccess, 161);
  Region dst = make_region(*p.ctx_b, 8192);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 8192)}, dst.va(), dst.key())));
  ASSERT_TRUE(wait_one(c, *p.cq_a).ok());
  CounterSnap b(c.node(1));
  ASSERT_TRUE(p.ctx_b->dereg_mr(dst.mr).ok());
  EXPECT_GE(b.delta(RHN_CNT_TLB_INVALIDATIONS), 1u);
}

TEST(Srq, TwoSendersShareOneReceiveQueue) {
  SimCluster c(cluster_config(3));
  ASSERT_TRUE(c.all_up());
  auto ctx_b = c.node(1).open_context();
  ASSERT_TRUE(ctx_b->ok());
  auto cq_b = ctx_b->create_cq(8);
  auto srq = ctx_b->create_srq(6);
  ASSERT_TRUE(cq_b && srq);
  Region inbox = make_region(*ctx_b, 16 * 1024);
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(
        srq->post_recv(500 + uint64_t(i), {inbox.sge(size_t(i) * 1024, 1024)}));

  struct Sender {
    std::unique_ptr<SimContext> ctx;
    std::unique_ptr<SimCq> cq;
    std::unique_ptr<SimQp> qp, peer;
    Region src;
  };
  std::vector<Sender> senders(2);
  for (int s = 0; s < 2; ++s) {
    const uint16_t node = s == 0 ? 0 : 2;
    Sender& x = senders[size_t(s)];
    x.ctx = c.node(node).open_context();
    x.cq = x.ctx->create_cq(8);
    QpInit qi;
    qi.send_cq = x.cq.get();
    x.qp = x.ctx->create_qp(qi);
    QpInit bi;
    bi.send_cq = cq_b.get();
    bi.srq = srq.get();
    x.peer = ctx_b->create_qp(bi);
    ASSERT_TRUE(x.qp && x.peer);
    ASSERT_TRUE(connect_rc(*x.qp, 1, x.peer->qpn()));
    ASSERT_TRUE(connect_rc(*x.peer, node, x.qp->qpn()));
    x.src = make_region(*x.ctx, 8 * 1000, kAllAccess, 170 + uint64_t(s));
  }
  for (int i = 0; i < 8; ++i)
    for (int s = 0; s < 2; ++s)
      ASSERT_TRUE(senders[size_t(s)].qp->post_send(send_wr(
          uint64_t(i), {senders[size_t(s)].src.sge(size_t(i) * 1000, 1000)})));
  auto v = c.wait_cqes(*cq_b, 16);
  ASSERT_EQ(v.size(), 16u);
  std::vector<bool> used(16, false);
  int next_from[2] = {0, 0};
  for (const auto& r : v) {
    ASSERT_TRUE(r.ok()) << describe(r);
    ASSERT_GE(r.wr_id, 500u);
    ASSERT_LT(r.wr_id, 516u);
    const size_t slot = size_t(r.wr_id - 500);
    EXPECT_FALSE(used[slot]);
    used[slot] = true;
    const int s = r.qpn == senders[0].peer->qpn() ? 0 : 1;
    EXPECT_EQ(r.qpn, senders[size_t(s)].peer->qpn());
    const int i = next_from[s]++;  // per-sender FIFO
    EXPECT_EQ(inbox.buf.bytes(slot * 1024, 1000),
              senders[size_t(s)].src.buf.bytes(size_t(i) * 1000, 1000))
        << "sender " << s << " message " << i;
  }
}

// A WQE the NIC refuses as it reads it (here an ISEND, which only an
// endpoint takes) still reports through its status word: software that
// waits only on the word is not left waiting; the CQE reports it too.
TEST_F(TwoNodes, AWqeRefusedAtFetchReportsThroughItsStatusWord) {
  Region src = make_region(A(), 64, kAllAccess, 7);
  Region words = make_region(A(), 64);
  SendWr w = send_wr(1, {src.sge(0, 64)}, RHN_OP_ISEND,
                     RHN_WQE_F_STATUS_WORD | RHN_WQE_F_SIGNALED);
  w.status_addr = words.va(8);
  w.status_lkey = words.key();
  ASSERT_TRUE(p.qp_a->post_send(w));
  ASSERT_TRUE(c->run_until(
      [&] { return status_word_done(words.buf.load64(8)); }, 10'000'000));
  const uint64_t sw = words.buf.load64(8);
  EXPECT_EQ(status_word_status(sw), RHN_CQE_LOC_QP_OP_ERR);
  EXPECT_EQ(status_word_syndrome(sw), RHN_SYN_BAD_OPCODE);
  Completion c1 = wait_one(*c, *p.cq_a);
  EXPECT_EQ(c1.status, RHN_CQE_LOC_QP_OP_ERR) << describe(c1);
}

TEST(Ud, SendRecvWithQkey) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x2222);
  ASSERT_TRUE(a.qp && b.qp);
  a.buf.buf.fill_pattern(181);
  ASSERT_TRUE(b.qp->post_recv(1, {b.buf.sge(0, 4096)}));
  ASSERT_TRUE(b.qp->post_recv(2, {b.buf.sge(8192, 4096)}));
  // Plain SEND: on the wire a UD SEND's imm_data field carries the Q_Key.
  SendWr wr = send_wr(9, {a.buf.sge(0, 2000)});
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x2222;
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  Completion r = wait_one(c, *b.cq);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 1u);
  // The buffer starts with the GRH room: no GRH was sent, none written.
  EXPECT_EQ(r.byte_len, 2000u + RHN_UD_GRH_LEN);
  EXPECT_FALSE(r.flags & RHN_CQE_F_GRH);
  EXPECT_EQ(r.src_node, 0u);
  EXPECT_EQ(r.src_qpn, a.qp->qpn());
  EXPECT_EQ(b.buf.buf.bytes(RHN_UD_GRH_LEN, 2000), a.buf.buf.bytes(0, 2000));

  // Wrong qkey: dropped and counted, no receive consumed.
  CounterSnap bs(c.node(1));
  wr.qkey = 0x3333;
  wr.wr_id = 10;
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());  // UD sends complete locally
  c.run_for(1'000'000);
  EXPECT_TRUE(b.cq->poll().empty());
  EXPECT_EQ(bs.delta(RHN_CNT_UD_DROPS), 1u);
  // The dropped message consumed no receive: the next good one takes WQE 2.
  wr.qkey = 0x2222;
  wr.wr_id = 11;
  ASSERT_TRUE(a.qp->post_send(wr));
  r = wait_one(c, *b.cq);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 2u);
  EXPECT_EQ(b.buf.buf.bytes(8192 + RHN_UD_GRH_LEN, 2000),
            a.buf.buf.bytes(0, 2000));
}

// RoCE v2 GID entries: the NIC builds an IPv4 header (IPv4-mapped GIDs,
// checksum right, in the last 20 of the 40 bytes) or an IPv6 header with
// next header UDP, and the receiver's CQE names the header; a v1 entry
// still gives an IB GRH (no network flag). Unknown types are refused.
TEST(Ud, RoceV2EntriesGiveIpHeaders) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x2222);
  ASSERT_TRUE(a.qp && b.qp);
  const uint8_t v4[16] = {0, 0, 0,    0,    0,  0,  0, 0,
                          0, 0, 0xff, 0xff, 10, 77, 0, 1};
  const uint8_t v4_dst[16] = {0, 0, 0,    0,    0,  0,  0, 0,
                              0, 0, 0xff, 0xff, 10, 77, 0, 2};
  const uint8_t v6[16] = {0xfe, 0x80, 0,    0,    0,    0, 0, 0,
                          0,    0x52, 0x4e, 0xff, 0xfe, 0, 0, 0};
  ASSERT_TRUE(c.node(0).driver->set_gid(1, v4, RHN_GID_ROCE_V2).ok());
  ASSERT_TRUE(c.node(0).driver->set_gid(2, v6, RHN_GID_ROCE_V2).ok());
  ASSERT_TRUE(c.node(0).driver->set_gid(3, v4, RHN_GID_ROCE_V1).ok());
  EXPECT_FALSE(c.node(0).driver->set_gid(4, v4, 2).ok());
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(b.qp->post_recv(i, {b.buf.sge(i * 4096, 4096)}));
  SendWr wr = send_wr(1, {a.buf.sge(0, 100)});
  wr.flags |= RHN_WQE_F_GRH;
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x2222;
  std::memcpy(wr.grh.dgid, v4_dst, 16);
  wr.grh.hop_limit = 64;
  wr.grh.traffic_class = 0x28;
  const uint8_t sgids[3] = {1, 2, 3};
  const uint8_t nets[3] = {RHN_CQE_F_NET_IPV4, RHN_CQE_F_NET_IPV6, 0};
  for (int i = 0; i < 3; ++i) {
    wr.wr_id = 10 + i;
    wr.grh.sgid_index = sgids[i];
    ASSERT_TRUE(a.qp->post_send(wr));
    EXPECT_TRUE(wait_one(c, *a.cq).ok());
    Completion r = wait_one(c, *b.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_TRUE(r.flags & RHN_CQE_F_GRH);
    EXPECT_EQ(r.flags & (RHN_CQE_F_NET_IPV4 | RHN_CQE_F_NET_IPV6), nets[i])
        << "entry " << int(sgids[i]);
    const std::vector<uint8_t> h = b.buf.buf.bytes(i * 4096, RHN_UD_GRH_LEN);
    if (i == 0) {
      EXPECT_EQ(std::vector<uint8_t>(h.begin(), h.begin() + 20),
                std::vector<uint8_t>(20, 0));
      EXPECT_EQ(h[20], 0x45);
      EXPECT_EQ(h[21], 0x28);  // TOS = traffic class
      EXPECT_EQ(h[28], 64);    // TTL = hop limit
      EXPECT_EQ(h[29], 17);    // UDP
      uint32_t sum = 0;
      for (int k = 20; k < 40; k += 2) sum += uint32_t{h[k]} << 8 | h[k + 1];
      while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
      EXPECT_EQ(sum, 0xffffu) << "IPv4 header checksum";
      EXPECT_EQ(std::vector<uint8_t>(h.begin() + 32, h.begin() + 36),
                std::vector<uint8_t>(v4 + 12, v4 + 16));
      EXPECT_EQ(std::vector<uint8_t>(h.begin() + 36, h.end()),
                std::vector<uint8_t>(v4_dst + 12, v4_dst + 16));
    } else {
      EXPECT_EQ(h[0] >> 4, 6);
      EXPECT_EQ(h[6], i == 1 ? 17 : 0x1b) << "next header";
      EXPECT_EQ(std::vector<uint8_t>(h.begin() + 8, h.begin() + 24),
                i == 1 ? std::vector<uint8_t>(v6, v6 + 16)
                       : std::vector<uint8_t>(v4, v4 + 16));
    }
    EXPECT_EQ(b.buf.buf.bytes(i * 4096 + RHN_UD_GRH_LEN, 100),
              a.buf.buf.bytes(0, 100));
  }
}

// The GRH of a UD SEND: the source GID from the sender NIC's table (set by
// the kernel only), the rest from the WQE; written ahead of the payload.
TEST(Ud, GrhCarriesTheSourceGidFromTheNicTable) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x2222);
  ASSERT_TRUE(a.qp && b.qp);
  const uint8_t sgid[16] = {0, 0, 0,    0,    0,  0,  0, 0,
                            0, 0, 0xff, 0xff, 10, 77, 0, 1};
  const uint8_t dgid[16] = {0, 0, 0,    0,    0,  0,  0, 0,
                            0, 0, 0xff, 0xff, 10, 77, 0, 2};
  ASSERT_TRUE(c.node(0).driver->set_gid(3, sgid).ok());
  // Only the kernel sets GIDs, and only inside the table.
  EXPECT_FALSE(c.node(0).driver->set_gid(RHN_GID_TABLE_LEN, sgid).ok());
  a.buf.buf.fill_pattern(77);
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(b.qp->post_recv(i, {b.buf.sge(i * 8192, 8192)}));

  SendWr wr = send_wr(1, {a.buf.sge(0, RHN_WIRE_MTU)});  // a full MTU
  wr.flags |= RHN_WQE_F_GRH;
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x2222;
  std::memcpy(wr.grh.dgid, dgid, 16);
  wr.grh.flow_label = 0x12345;
  wr.grh.sgid_index = 3;
  wr.grh.hop_limit = 64;
  wr.grh.traffic_class = 0xa0;
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  Completion r = wait_one(c, *b.cq);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.byte_len, RHN_WIRE_MTU + RHN_UD_GRH_LEN);
  EXPECT_TRUE(r.flags & RHN_CQE_F_GRH);
  const std::vector<uint8_t> grh = b.buf.buf.bytes(0, RHN_UD_GRH_LEN);
  const uint8_t head[8] = {0x6a, 0x01, 0x23, 0x45, 0x10, 0x00, 0x1b, 64};
  EXPECT_EQ(std::vector<uint8_t>(grh.begin(), grh.begin() + 8),
            std::vector<uint8_t>(head, head + 8));
  EXPECT_EQ(std::vector<uint8_t>(grh.begin() + 8, grh.begin() + 24),
            std::vector<uint8_t>(sgid, sgid + 16));
  EXPECT_EQ(std::vector<uint8_t>(grh.begin() + 24, grh.end()),
            std::vector<uint8_t>(dgid, dgid + 16));
  EXPECT_EQ(b.buf.buf.bytes(RHN_UD_GRH_LEN, RHN_WIRE_MTU),
            a.buf.buf.bytes(0, RHN_WIRE_MTU));

  // An index the kernel never set: refused locally, the QP goes to error.
  CounterSnap bs(c.node(1));
  wr.wr_id = 2;
  wr.grh.sgid_index = 4;
  ASSERT_TRUE(a.qp->post_send(wr));
  r = wait_one(c, *a.cq);
  EXPECT_EQ(r.status, RHN_CQE_LOC_QP_OP_ERR) << describe(r);
  EXPECT_EQ(r.vendor_err, uint32_t(RHN_SYN_BAD_WQE));
  c.run_for(1'000'000);
  EXPECT_TRUE(b.cq->poll().empty());
  EXPECT_EQ(bs.delta(RHN_CNT_RX_PACKETS), 0u);
}

// A Q_Key with the high bit set names the sending QP's own key, so a process
// cannot reach a QP holding such a "controlled" key (the management QP).
TEST(Ud, ControlledQkeyInAWqeMeansTheQpsOwn) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x80010000u);
  DatagramNode d = make_datagram_node(c, 1, RHN_QP_UD, 0x1111);
  ASSERT_TRUE(a.qp && b.qp && d.qp);
  ASSERT_TRUE(b.qp->post_recv(1, {b.buf.sge(0, 4096)}));
  ASSERT_TRUE(d.qp->post_recv(1, {d.buf.sge(0, 4096)}));
  CounterSnap bs(c.node(1));
  SendWr wr = send_wr(1, {a.buf.sge(0, 64)});
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x80010000u;
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  c.run_for(1'000'000);
  EXPECT_TRUE(b.cq->poll().empty());
  EXPECT_EQ(bs.delta(RHN_CNT_UD_DROPS), 1u);
  // The same WQE reaches a QP whose key is the sender QP's own.
  wr.dst_qpn = d.qp->qpn();
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  EXPECT_TRUE(wait_one(c, *d.cq).ok());
}

// QPN 1 is the kernel's management QP: one, UD, context 0 only.
TEST(Ud, ManagementQpIsQpnOneAndKernelOnly) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  auto user = c.node(0).open_context();
  auto kernel = c.node(0).kernel_context();
  ASSERT_TRUE(user->ok() && kernel->ok());
  auto ucq = user->create_cq(6);
  auto kcq = kernel->create_cq(6);
  ASSERT_TRUE(ucq && kcq);
  QpInit qi;
  qi.type = RHN_QP_UD;
  qi.flags = RHN_CREATE_QP_F_GSI;
  qi.send_cq = ucq.get();
  EXPECT_FALSE(user->create_qp(qi));
  qi.send_cq = kcq.get();
  qi.type = RHN_QP_RC;
  EXPECT_FALSE(kernel->create_qp(qi));
  qi.type = RHN_QP_UD;
  auto gsi = kernel->create_qp(qi);
  ASSERT_TRUE(gsi);
  EXPECT_EQ(gsi->qpn(), RHN_QPN_GSI);
  EXPECT_FALSE(kernel->create_qp(qi));  // only one
  // Other QPs never get QPN 1, even while it is free.
  gsi.reset();
  qi.flags = 0;
  auto plain = kernel->create_qp(qi);
  ASSERT_TRUE(plain);
  EXPECT_GT(plain->qpn(), RHN_QPN_GSI);
}

TEST(Ud, NoReceivePostedIsDroppedAndCounted) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 5);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 5);
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap bs(c.node(1));
  SendWr wr = send_wr(1, {a.buf.sge(0, 100)});
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 5;
  ASSERT_TRUE(a.qp->post_send(wr));
  EXPECT_TRUE(wait_one(c, *a.cq).ok());
  c.run_for(1'000'000);
  EXPECT_EQ(bs.delta(RHN_CNT_UD_DROPS), 1u);
  EXPECT_EQ(bs.delta(RHN_CNT_RNR_NAKS_SENT), 0u);
}

TEST(Endpoint, OneEndpointReachesSeveralNodes) {
  SimCluster c(cluster_config(4));
  ASSERT_TRUE(c.all_up());
  std::vector<DatagramNode> n;
  for (uint16_t i = 0; i < 4; ++i)
    n.push_back(make_datagram_node(c, i, RHN_QP_ENDPOINT, 0));
  for (auto& d : n) ASSERT_TRUE(d.qp);
  n[0].buf.buf.fill_pattern(191);
  for (uint16_t i = 1; i < 4; ++i) {
    ASSERT_TRUE(n[i].qp->post_recv(i, {n[i].buf.sge(0, 8192)}));
    SendWr wr = send_wr(i, {n[0].buf.sge(size_t(i) * 1000, 5000 + i)});
    wr.dst_node = i;
    wr.dst_qpn = n[i].qp->qpn();
    ASSERT_TRUE(n[0].qp->post_send(wr));
  }
  auto sc = c.wait_cqes(*n[0].cq, 3);
  ASSERT_EQ(sc.size(), 3u);
  for (const auto& s : sc) EXPECT_TRUE(s.ok()) << describe(s);
  for (uint16_t i = 1; i < 4; ++i) {
    Completion r = wait_one(c, *n[i].cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.src_node, 0u);
    EXPECT_EQ(r.src_qpn, n[0].qp->qpn());
    EXPECT_EQ(r.byte_len, 5000u + i);
    EXPECT_EQ(n[i].buf.buf.bytes(0, 5000 + i),
              n[0].buf.buf.bytes(size_t(i) * 1000, 5000 + i));
  }
  // Replies back into the one endpoint; the CQE names who sent each.
  for (uint16_t i = 1; i < 4; ++i)
    ASSERT_TRUE(n[0].qp->post_recv(
        100 + i, {n[0].buf.sge(32768 + size_t(i) * 1024, 1024)}));
  for (uint16_t i = 1; i < 4; ++i) {
    SendWr wr = send_wr(i, {n[i].buf.sge(0, 10 * i)});
    wr.dst_node = 0;
    wr.dst_qpn = n[0].qp->qpn();
    ASSERT_TRUE(n[i].qp->post_send(wr));
  }
  auto rc = c.wait_cqes(*n[0].cq, 3);
  ASSERT_EQ(rc.size(), 3u);
  for (const auto& r : rc) {
    ASSERT_TRUE(r.ok()) << describe(r);
    ASSERT_GE(r.src_node, 1u);
    ASSERT_LE(r.src_node, 3u);
    EXPECT_EQ(r.byte_len, 10u * r.src_node);
    EXPECT_EQ(r.src_qpn, n[r.src_node].qp->qpn());
  }
}

TEST(Endpoint, EightNodesAllToAll) {
  constexpr uint16_t kNodes = 8;
  ClusterConfig cfg = cluster_config(kNodes);
  cfg.memory_bytes = 8u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  std::vector<DatagramNode> n;
  for (uint16_t i = 0; i < kNodes; ++i)
    n.push_back(make_datagram_node(c, i, RHN_QP_ENDPOINT, 0));
  for (auto& d : n) ASSERT_TRUE(d.qp);
  constexpr size_t kMsg = 700;
  for (uint16_t i = 0; i < kNodes; ++i) {
    n[i].buf.buf.write(0, pattern(i + 1, kMsg).data(), kMsg);
    for (uint16_t j = 0; j < kNodes - 1; ++j)
      ASSERT_TRUE(
          n[i].qp->post_recv(j, {n[i].buf.sge(8192 + size_t(j) * 1024, 1024)}));
  }
  for (uint16_t i = 0; i < kNodes; ++i)
    for (uint16_t j = 0; j < kNodes; ++j) {
      if (i == j) continue;
      SendWr wr = send_wr(j, {n[i].buf.sge(0, kMsg)});
      wr.dst_node = j;
      wr.dst_qpn = n[j].qp->qpn();
      ASSERT_TRUE(n[i].qp->post_send(wr));
    }
  for (uint16_t i = 0; i < kNodes; ++i) {
    // Each CQ gets 7 send and 7 receive completions.
    auto v = c.wait_cqes(*n[i].cq, 2 * (kNodes - 1));
    ASSERT_EQ(v.size(), size_t(2 * (kNodes - 1))) << "node " << i;
    std::vector<bool> seen(kNodes, false);
    for (const auto& x : v) {
      ASSERT_TRUE(x.ok()) << describe(x);
      if (x.is_send()) continue;
      ASSERT_LT(x.src_node, kNodes);
      EXPECT_FALSE(seen[x.src_node]);
      seen[x.src_node] = true;
      EXPECT_EQ(n[i].buf.buf.bytes(8192 + size_t(x.wr_id) * 1024, kMsg),
                pattern(x.src_node + 1, kMsg))
          << "node " << i << " from " << x.src_node;
    }
  }
}

// UC: connected like RC, but nothing comes back. SEND and WRITE arrive
// byte for byte; a message the responder cannot take (bad rkey, no
// receive posted) is dropped and counted there, the requester still
// completes it with success, and both QPs stay in RTS; READ is refused
// at the requester.
TEST(UcQp, UnacknowledgedSemantics) {
  SimCluster c(cluster_config(2));
  ASSERT_TRUE(c.all_up());
  RcOptions uc;
  uc.type = RHN_QP_UC;
  RcPair p = make_rc_pair(c, 0, 1, uc);
  ASSERT_TRUE(p.ok);
  const size_t len = 2 * RHN_WIRE_MTU + 77;  // three packets
  Region src = make_region(*p.ctx_a, len, kAllAccess, 31);
  Region dst = make_region(*p.ctx_b, len, kAllAccess, 0, 0xee);
  Region rx = make_region(*p.ctx_b, len, kAllAccess, 0, 0xee);

  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, len)}, dst.va(), dst.key())));
  Completion w = wait_one(c, *p.cq_a);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(0, len), src.buf.bytes(0, len));

  // A WRITE with a bad rkey: dropped at the responder, success here.
  const uint64_t drops = c.node(1).counter(RHN_CNT_UC_DROPS);
  Region other = make_region(*p.ctx_b, 64, kAllAccess, 0, 0x55);
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(2, RHN_OP_WRITE, {src.sge(0, len)},
                                        other.va(), other.key() ^ 0x100)));
  w = wait_one(c, *p.cq_a);
  EXPECT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(other.buf.bytes(), std::vector<uint8_t>(64, 0x55));
  EXPECT_EQ(c.node(1).counter(RHN_CNT_UC_DROPS), drops + 1)
      << "a refused message counts once, not once per packet";

  // A SEND with no receive posted is lost; the next one, with a receive
  // there, arrives whole.
  ASSERT_TRUE(p.qp_a->post_send(send_wr(3, {src.sge(0, len)})));
  EXPECT_TRUE(wait_one(c, *p.cq_a).ok());
  ASSERT_TRUE(p.qp_b->post_recv(9, {rx.sge(0, len)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(4, {src.sge(7, 500)})));
  EXPECT_TRUE(wait_one(c, *p.cq_a).ok());
  Completion r = wait_one(c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 9u);
  EXPECT_EQ(r.byte_len, 500u);
  EXPECT_EQ(rx.buf.bytes(0, 500), src.buf.bytes(7, 500));
  EXPECT_EQ(c.node(1).counter(RHN_CNT_UC_DROPS), drops + 2);

  // WRITE with immediate takes a receive and reports the immediate.
  ASSERT_TRUE(p.qp_b->post_recv(10, {rx.sge(0, 64)}));
  SendWr wi =
      rdma_wr(5, RHN_OP_WRITE_IMM, {src.sge(0, 100)}, dst.va(200), dst.key());
  wi.imm_data = 4242;
  ASSERT_TRUE(p.qp_a->post_send(wi));
  EXPECT_TRUE(wait_one(c, *p.cq_a).ok());
  r = wait_one(c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.imm_data, 4242u);
  EXPECT_EQ(dst.buf.bytes(200, 100), src.buf.bytes(0, 100));

  // READ: refused locally; the QP goes to error as for any local error.
  Region back = make_region(*p.ctx_a, 64, kAllAccess, 0, 0);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(6, RHN_OP_READ, {back.sge(0, 64)}, dst.va(), dst.key())));
  w = wait_one(c, *p.cq_a);
  EXPECT_EQ(w.status, RHN_CQE_LOC_QP_OP_ERR) << describe(w);
  EXPECT_EQ(back.buf.bytes(), std::vector<uint8_t>(64, 0));
}

// InfiniBand C9-88: a zero-length RDMA WRITE or READ carries no valid
// address or key and the responder must not check them. UCX flushes an RC
// endpoint with a zero-length WRITE to address 0, rkey 0 (issue 13: we
// NAKed it BAD_KEY and the QP failed). WRITE with immediate of zero bytes
// likewise, and the QP keeps working afterwards.
TEST_F(TwoNodes, ZeroLengthRdmaNeedsNoKey) {
  Region src = make_region(A(), 64, kAllAccess, 51);
  Region dst = make_region(B(), 64, kAllAccess, 0, 0xee);
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(1, RHN_OP_WRITE, {}, 0, 0)));
  Completion w = wait_one(*c, *p.cq_a);
  EXPECT_TRUE(w.ok()) << describe(w);
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(2, RHN_OP_READ, {}, 0, 0)));
  Completion r = wait_one(*c, *p.cq_a);
  EXPECT_TRUE(r.ok()) << describe(r);
  ASSERT_TRUE(p.qp_b->post_recv(3, {dst.sge(0, 64)}));
  SendWr wi = rdma_wr(4, RHN_OP_WRITE_IMM, {}, 0, 0x1234500);
  wi.imm_data = 99;
  ASSERT_TRUE(p.qp_a->post_send(wi));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  Completion ri = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(ri.ok()) << describe(ri);
  EXPECT_EQ(ri.imm_data, 99u);
  EXPECT_EQ(ri.byte_len, 0u);
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(64, 0xee));
  // Still connected: a real WRITE lands.
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(5, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  EXPECT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
}

// IB drops a request no QP at the target can take, and its requester
// learns of it only when its retries run out (UCX and MPI rely on it: the
// last message of a connection may cross the peer's teardown). Before,
// the requester failed at once with REM_INV_REQ.
AdminResult set_timeout(SimQp& qp, uint8_t timeout, uint8_t retry_cnt) {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_TIMEOUT;
  m.timeout = timeout;
  m.retry_cnt = retry_cnt;
  return qp.modify(m);
}

TEST_F(TwoNodes, RequestToAVanishedQpFailsWhenItsTimerRunsOut) {
  // 4.096 us << 14 = 67 ms, twice (retry_cnt 1): 134 ms.
  ASSERT_TRUE(set_timeout(*p.qp_a, 14, 1).ok());
  Region src = make_region(A(), 64, kAllAccess, 7);
  Region dst = make_region(B(), 64, kAllAccess, 0, 0xee);
  const uint32_t rkey = dst.key();
  const uint64_t raddr = dst.va();
  ASSERT_TRUE(B().driver()
                  .destroy(RHN_ADMIN_DESTROY_QP, B().index(), p.qp_b->qpn())
                  .ok());
  CounterSnap b(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 64)}, raddr, rkey)));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, 8)})));
  // Nothing while an IB requester would still be retrying.
  auto early = c->wait_cqes(*p.cq_a, 1, 120'000'000);
  EXPECT_TRUE(early.empty()) << describe(early);
  auto v = c->wait_cqes(*p.cq_a, 2, 40'000'000);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].wr_id, 1u);
  EXPECT_EQ(v[0].status, RHN_CQE_RETRY_EXC_ERR) << describe(v[0]);
  EXPECT_EQ(v[0].vendor_err, uint32_t(RHN_SYN_BAD_QP)) << describe(v[0]);
  EXPECT_EQ(v[1].wr_id, 2u);
  EXPECT_EQ(v[1].status, RHN_CQE_WR_FLUSH_ERR) << describe(v[1]);
  EXPECT_EQ(b.delta(RHN_CNT_NO_QP_REQUESTS), 2u);
  EXPECT_EQ(b.delta(RHN_CNT_REMOTE_INVALID_REQUESTS), 0u);
  // Nothing was sent again: one NAK each, no retransmission.
  EXPECT_EQ(b.delta(RHN_CNT_RETRANSMITS), 0u);
}

TEST_F(TwoNodes, PeerClosingFirstLeavesNoErrorOnTheOtherSide) {
  // No timeout set (0 = infinite, as IB): the request waits until its own
  // QP goes, as when both ends of a connection are being closed.
  Region src = make_region(A(), 64, kAllAccess, 7);
  Region dst = make_region(B(), 64, kAllAccess, 0, 0xee);
  ASSERT_TRUE(p.qp_b->to_err().ok());
  EXPECT_TRUE(c->wait_cqes(*p.cq_b, 1, 1'000'000).size() <= 1);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_READ, {src.sge(0, 64)}, dst.va(), dst.key())));
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  EXPECT_TRUE(c->wait_cqes(*p.cq_a, 1, 2'000'000'000).empty());
  ASSERT_TRUE(p.qp_a->to_err().ok());
  auto v = c->wait_cqes(*p.cq_a, 2);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  for (const auto& e : v)
    EXPECT_EQ(e.status, RHN_CQE_WR_FLUSH_ERR) << describe(e);
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(64, 0xee));
}

}  // namespace
}  // namespace rhinet::test
