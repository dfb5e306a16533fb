// SPDX-License-Identifier: BSD-2-Clause
// Partial transfers done by the NIC (the transfer modes of the operation table,
// include/hw/rhinet/hw_ops.h): the strided PUSH, one WQE whose blocks the NIC
// gathers from the local memory and places at the target, by key or by area ID,
// through a lossy fabric too; and the descriptors it refuses. Every other mode:
// test_model.cc.
#include <cstring>

#include "ops/partial/partial.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

class Stride : public ::testing::Test {
 protected:
  void SetUp() override { start(ClusterConfig{}); }
  void start(ClusterConfig cfg) {
    cfg.nodes = 2;
    // The old pair's queues live in the old cluster's memory: they go
    // first.
    p = RcPair{};
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
  }
  SendWr strided(uint64_t wr_id, Sge sge, uint64_t raddr, uint32_t rkey,
                 uint32_t block, uint32_t count, uint64_t ls, uint64_t rs) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_WRITE, {sge}, raddr, rkey);
    wr.xfer_mode = RHN_XFER_STRIDE;
    wr.xfer.block = block;
    wr.xfer.count = count;
    wr.xfer.local_stride = ls;
    wr.xfer.remote_stride = rs;
    return wr;
  }
  // What the target should hold: `before` with block i of the source
  // (at i * ls) copied to i * rs.
  static std::vector<uint8_t> expect(std::vector<uint8_t> before,
                                     const std::vector<uint8_t>& src,
                                     uint32_t block, uint32_t count,
                                     uint64_t ls, uint64_t rs) {
    for (uint64_t i = 0; i < count; i++)
      std::memcpy(before.data() + i * rs, src.data() + i * ls, block);
    return before;
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

TEST_F(Stride, AColumnOfAMatrixLandsInItsColumn) {
  // 64 x 64 doubles, row-major, on both sides: column 5.
  constexpr uint32_t kRow = 64 * 8;
  Region a = make_region(*p.ctx_a, 64 * kRow, kAllAccess, 71);
  Region b = make_region(*p.ctx_b, 64 * kRow, kAllAccess, 0, 0x5a);
  const auto before = b.buf.bytes();
  CounterSnap sent(c->node(0));
  ASSERT_TRUE(
      p.qp_a->post_send(strided(1, a.sge(5 * 8, 63 * kRow + 8), b.va(5 * 8),
                                b.key(), 8, 64, kRow, kRow)));
  Completion w = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(w.ok()) << describe(w);
  // The 64 elements travel packed in one packet, not one packet each.
  EXPECT_EQ(sent.delta(RHN_CNT_TX_PACKETS), 1u);
  EXPECT_EQ(w.byte_len, 64u * 8);
  std::vector<uint8_t> want(before.begin() + 40, before.end());
  want = expect(want, a.buf.bytes(40, 63 * kRow + 8), 8, 64, kRow, kRow);
  EXPECT_EQ(b.buf.bytes(40, 63 * kRow + 8),
            std::vector<uint8_t>(want.begin(), want.begin() + 63 * kRow + 8));
  EXPECT_EQ(b.buf.bytes(0, 40), std::vector<uint8_t>(40, 0x5a));
}

TEST_F(Stride, GatheredFromStridesIntoOneContiguousRange) {
  Region a = make_region(*p.ctx_a, 50 * 300, kAllAccess, 72);
  Region b = make_region(*p.ctx_b, 8192, kAllAccess, 0, 0x11);
  ASSERT_TRUE(p.qp_a->post_send(strided(2, a.sge(0, 49 * 300 + 100), b.va(7),
                                        b.key(), 100, 50, 300, 100)));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  auto want = expect(b.buf.bytes(7, 5000), a.buf.bytes(), 100, 50, 300, 100);
  EXPECT_EQ(b.buf.bytes(7, 5000), want);
  EXPECT_EQ(b.buf.bytes(5007, 100), std::vector<uint8_t>(100, 0x11));
}

TEST_F(Stride, BlocksLargerThanAPacketAndAcrossPages) {
  // 10000-byte blocks (three packets each) at uneven strides on both
  // sides, starting mid-page.
  Region a = make_region(*p.ctx_a, 5 * 12001 + 100, kAllAccess, 73);
  Region b = make_region(*p.ctx_b, 5 * 20003 + 100, kAllAccess, 0, 0x22);
  const auto before = b.buf.bytes(33, 4 * 20003 + 10000);
  ASSERT_TRUE(
      p.qp_a->post_send(strided(3, a.sge(17, 4 * 12001 + 10000), b.va(33),
                                b.key(), 10000, 5, 12001, 20003)));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  EXPECT_EQ(b.buf.bytes(33, 4 * 20003 + 10000),
            expect(before, a.buf.bytes(17, 4 * 12001 + 10000), 10000, 5, 12001,
                   20003));
}

TEST_F(Stride, ByAreaIdAndOffset) {
  Region a = make_region(*p.ctx_a, 4096, kAllAccess, 74);
  Region b = make_region(*p.ctx_b, 3 * 4096, kAllAccess, 0, 0x33);
  ASSERT_TRUE(p.ctx_b->register_area(9, b.mr, b.va(4096), 8192).ok());
  const auto before = b.buf.bytes(4096 + 100, 31 * 200 + 16);
  SendWr wr = strided(4, a.sge(0, 31 * 128 + 16), 100, 9, 16, 32, 128, 200);
  wr.flags |= RHN_WQE_F_AREA;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  Completion w = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(b.buf.bytes(4096 + 100, 31 * 200 + 16),
            expect(before, a.buf.bytes(), 16, 32, 128, 200));
  // Beyond the area's end: refused at the target.
  SendWr far = strided(5, a.sge(0, 31 * 128 + 16), 100, 9, 16, 32, 128, 300);
  far.flags |= RHN_WQE_F_AREA;
  ASSERT_TRUE(p.qp_a->post_send(far));
  Completion f = wait_one(*c, *p.cq_a);
  EXPECT_EQ(f.status, RHN_CQE_REM_ACCESS_ERR) << describe(f);
  EXPECT_EQ(f.vendor_err, uint32_t(RHN_SYN_BOUNDS));
}

TEST_F(Stride, ThroughALossyFabric) {
  FaultConfig faults;
  faults.loss = 0.1;
  faults.reorder = 0.05;
  faults.duplicate = 0.05;
  c->fabric().set_seed(5);
  c->fabric().set_faults(faults);
  Region a = make_region(*p.ctx_a, 200 * 1024, kAllAccess, 75);
  Region b = make_region(*p.ctx_b, 200 * 1024, kAllAccess, 0, 0x44);
  const auto before = b.buf.bytes();
  for (uint32_t k = 0; k < 4; k++) {
    ASSERT_TRUE(
        p.qp_a->post_send(strided(10 + k, a.sge(k, 99 * 2048 + 1500), b.va(k),
                                  b.key(), 1500, 100, 2048, 2048)));
  }
  auto v = c->wait_cqes(*p.cq_a, 4, 2'000'000'000);
  ASSERT_EQ(v.size(), 4u);
  for (const auto& e : v) EXPECT_TRUE(e.ok()) << describe(e);
  auto want = before;
  for (uint32_t k = 0; k < 4; k++)
    for (uint32_t i = 0; i < 100; i++)
      std::memcpy(want.data() + k + i * 2048,
                  a.buf.bytes(k + i * 2048, 1500).data(), 1500);
  EXPECT_EQ(b.buf.bytes(), want);
}

// Every refusal is a local error with RHN_SYN_BAD_XFER, found before
// anything is sent (the target stays untouched).
TEST_F(Stride, DescriptorsTheNicRefuses) {
  struct Case {
    const char* what;
    uint32_t block, count;
    uint64_t ls, rs;
    uint32_t sge_len;
    uint8_t syndrome;
  };
  const Case cases[] = {
      {"zero block", 0, 4, 16, 16, 64, RHN_SYN_BAD_XFER},
      {"zero count", 8, 0, 16, 16, 64, RHN_SYN_BAD_XFER},
      {"overlapping local blocks", 16, 4, 8, 16, 64, RHN_SYN_BAD_XFER},
      {"overlapping remote blocks", 16, 4, 16, 8, 64, RHN_SYN_BAD_XFER},
      {"zero strides", 16, 4, 0, 0, 64, RHN_SYN_BAD_XFER},
      {"SGE shorter than the blocks", 16, 4, 32, 16, 100, RHN_SYN_BAD_XFER},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    start(ClusterConfig{});
    Region a = make_region(*p.ctx_a, 4096, kAllAccess, 76);
    Region b = make_region(*p.ctx_b, 4096, kAllAccess, 0, 0x66);
    CounterSnap sent(c->node(0));
    ASSERT_TRUE(
        p.qp_a->post_send(strided(1, a.sge(0, k.sge_len), b.va(), b.key(),
                                  k.block, k.count, k.ls, k.rs)));
    Completion e = wait_one(*c, *p.cq_a);
    EXPECT_EQ(e.status, RHN_CQE_LOC_QP_OP_ERR) << describe(e);
    EXPECT_EQ(e.vendor_err, uint32_t(k.syndrome)) << describe(e);
    EXPECT_EQ(sent.delta(RHN_CNT_TX_PACKETS), 0u);
    EXPECT_EQ(b.buf.bytes(), std::vector<uint8_t>(4096, 0x66));
  }
  // Opcodes that take no stride (the operation table, hw_ops.h): refused the
  // same way.
  for (uint8_t op : {uint8_t(RHN_OP_SEND), uint8_t(RHN_OP_FETCH_ADD)}) {
    start(ClusterConfig{});
    Region a = make_region(*p.ctx_a, 4096, kAllAccess, 77);
    Region b = make_region(*p.ctx_b, 4096, kAllAccess, 0, 0x66);
    SendWr wr = strided(1, a.sge(0, 64), b.va(), b.key(), 16, 4, 16, 16);
    wr.opcode = op;
    ASSERT_TRUE(p.qp_a->post_send(wr));
    Completion e = wait_one(*c, *p.cq_a);
    EXPECT_EQ(e.status, RHN_CQE_LOC_QP_OP_ERR) << describe(e);
    EXPECT_EQ(e.vendor_err, uint32_t(RHN_SYN_BAD_XFER)) << describe(e);
  }
}

}  // namespace
}  // namespace rhinet::test

// ---- What the responder accepts of a partial WRITE's payload ---------------
// (white box: ops/partial's checks, which run before any byte is placed)

namespace rhinet::test {
namespace {

std::vector<uint8_t> run_list(std::vector<std::pair<uint16_t, uint16_t>> runs,
                              size_t data, uint16_t count_override = 0xffff) {
  std::vector<uint8_t> p(4 + 4 * runs.size() + data, 0xab);
  const uint16_t count =
      count_override == 0xffff ? uint16_t(runs.size()) : count_override;
  std::memcpy(p.data(), &count, 2);
  p[2] = p[3] = 0;
  for (size_t i = 0; i < runs.size(); i++) {
    std::memcpy(p.data() + 4 + 4 * i, &runs[i].first, 2);
    std::memcpy(p.data() + 6 + 4 * i, &runs[i].second, 2);
  }
  return p;
}

TEST(PartialWire, RunListsAreCheckedWholeBeforeAnyByteLands) {
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_WRITE;
  op.flags = RHN_WOP_F_RUNS;
  uint64_t extent = 0;
  // Two runs: 3 bytes at +0, 2 bytes 10 after: spans 15 bytes.
  auto good = run_list({{0, 3}, {10, 2}}, 5);
  EXPECT_EQ(fw::partial::write_extent(op, good, &extent), RHN_SYN_NONE);
  EXPECT_EQ(extent, 15u);
  const struct {
    const char* what;
    std::vector<uint8_t> payload;
  } bad[] = {
      {"no runs", run_list({}, 0)},
      {"a run of 0 bytes", run_list({{0, 3}, {4, 0}}, 3)},
      {"more bytes than the runs say", run_list({{0, 3}}, 4)},
      {"fewer bytes than the runs say", run_list({{0, 3}, {1, 5}}, 7)},
      {"a table beyond the payload", run_list({{0, 1}}, 1, 400)},
      {"shorter than the header", std::vector<uint8_t>{1}},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    EXPECT_EQ(fw::partial::write_extent(op, b.payload, &extent),
              RHN_SYN_BAD_XFER);
  }
  auto reserved = good;
  reserved[2] = 1;
  EXPECT_EQ(fw::partial::write_extent(op, reserved, &extent), RHN_SYN_BAD_XFER);
  op.flags |= RHN_WOP_F_STRIDED;  // two layouts at once
  EXPECT_EQ(fw::partial::write_extent(op, good, &extent), RHN_SYN_BAD_XFER);
}

TEST(PartialWire, StridedWritesAndPartialReadsAreCheckedToo) {
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_WRITE;
  op.flags = RHN_WOP_F_STRIDED;
  uint64_t extent = 0;
  rhn_write_stride d{};
  d.block = 8;
  d.remote_stride = 100;
  std::vector<uint8_t> p(sizeof(d) + 24);
  std::memcpy(p.data(), &d, sizeof(d));
  EXPECT_EQ(fw::partial::write_extent(op, p, &extent), RHN_SYN_NONE);
  EXPECT_EQ(extent, 2u * 100 + 8);
  p.push_back(0);  // not whole blocks
  EXPECT_EQ(fw::partial::write_extent(op, p, &extent), RHN_SYN_BAD_XFER);
  d.remote_stride = 4;  // overlapping
  std::memcpy(p.data(), &d, sizeof(d));
  p.pop_back();
  EXPECT_EQ(fw::partial::write_extent(op, p, &extent), RHN_SYN_BAD_XFER);
  // A bitmap READ whose bits do not match its length, and an unknown mode.
  rhn_op_hdr rd{};
  rd.opcode = RHN_WOP_READ_REQ;
  rd.imm_data = RHN_XFER_BITMAP;
  rd.msg_len = 64 * 10;
  rhn_read_xfer x{};
  x.block = 64;
  std::vector<uint8_t> q(sizeof(x) + 2);
  std::memcpy(q.data(), &x, sizeof(x));
  EXPECT_EQ(fw::partial::read_extent(rd, q, &extent), RHN_SYN_NONE);
  q.push_back(0);
  EXPECT_EQ(fw::partial::read_extent(rd, q, &extent), RHN_SYN_BAD_XFER);
  rd.imm_data = 9;
  EXPECT_EQ(fw::partial::read_extent(rd, q, &extent), RHN_SYN_BAD_XFER);
}

}  // namespace
}  // namespace rhinet::test
