// SPDX-License-Identifier: BSD-2-Clause
// The one-sided RHiNET model on the NIC (Documentation/userlib/design.md):
// every partial-transfer mode an operation takes (the operation table,
// hw_ops.h) by area and by VA + key, through a lossy
// fabric, every byte checked against a model computed here; process groups
// checked at both ends; twin memory allocation, exhaustion and isolation;
// signals counted exactly.
#include <cstring>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

using Ep = ContextEp;

// Bytes with sparse changes: `changes` random bytes of `v` flipped.
void scribble(std::vector<uint8_t>& v, size_t changes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < changes && !v.empty(); i++)
    v[rng() % v.size()] ^= uint8_t(1 + rng() % 255);
}

std::vector<uint8_t> random_bits(size_t blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bits((blocks + 7) / 8);
  for (auto& b : bits) b = uint8_t(rng());
  return bits;
}

bool bit(const std::vector<uint8_t>& bits, size_t i) {
  return bits[i / 8] >> (i % 8) & 1;
}

enum class Addr { kArea, kKey };

class Model : public ::testing::Test {
 protected:
  void SetUp() override { start(ClusterConfig{}); }
  void start(ClusterConfig cfg, size_t nodes = 2) {
    cfg.nodes = nodes;
    cfg.memory_bytes = 128u << 20;
    eps.clear();
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    for (uint16_t n = 0; n < nodes; n++) {
      eps.push_back(make_context_ep(*c, n));
      ASSERT_TRUE(eps.back().qp);
    }
  }
  void lossy(uint64_t seed) { make_lossy(*c, seed); }
  // A transfer from eps[from] to eps[to]'s region (by area `area` at
  // `off`, or by its VA + key).
  SendWr wr_to(uint8_t opcode, Sge local, const Region& remote, size_t off,
               Addr addr, uint32_t area, int to) {
    SendWr wr = rdma_wr(next_id++, opcode, {local},
                        addr == Addr::kArea ? off : remote.va(off),
                        addr == Addr::kArea ? area : remote.key());
    if (addr == Addr::kArea) wr.flags |= RHN_WQE_F_AREA;
    wr.dst_node = eps[to].node;
    wr.dst_qpn = eps[to].qp->qpn();
    return wr;
  }
  Completion run(Ep& e, const SendWr& wr) {
    if (!e.qp->post_send(wr)) return Completion{};
    return wait_one(*c, *e.cq, 20'000'000'000);
  }
  uint32_t alloc_twin(Ep& e, uint64_t len) {
    AdminResult r = c->node(e.node).driver->alloc_twin(e.ctx->index(), len);
    EXPECT_TRUE(r.ok()) << int(r.status);
    return r.result;
  }
  std::unique_ptr<SimCluster> c;
  std::vector<Ep> eps;
  uint64_t next_id = 1;
};

// ---- Every mode x {area, key} x sizes, lossy -------------------------------

struct Shape {
  size_t size;
  size_t page_offset;  // where the buffers start in their first page
};

const Shape kShapes[] = {{1, 0},       {7, 4093},   {4095, 1},
                         {4097, 4000}, {65549, 17}, {(1u << 20) + 5, 3},
                         {4u << 20, 0}};

class Matrix : public Model,
               public ::testing::WithParamInterface<std::tuple<Addr, Shape>> {};

TEST_P(Matrix, EveryModeMovesExactlyTheSelectedBytes) {
  const auto [addr, shape] = GetParam();
  const size_t n = shape.size;
  lossy(n + 1);
  Ep& a = eps[0];
  Ep& b = eps[1];
  // Remote area: n bytes plus room for strides; local the same.
  const size_t block = std::max<size_t>(1, n / 16);
  const size_t count = n / block;
  const size_t ls = block + 3, rs = block + 5;
  const size_t span = std::max(n, (count - 1) * std::max(ls, rs) + block) + 64;
  Region local =
      make_region(*a.ctx, span, kAllAccess, 11, -1, shape.page_offset);
  Region remote =
      make_region(*b.ctx, span, kAllAccess, 22, -1, shape.page_offset);
  ASSERT_TRUE(local.mr.res.ok() && remote.mr.res.ok());
  ASSERT_TRUE(b.ctx->register_area(5, remote.mr, remote.va(), span).ok());
  const size_t g = n < 64 ? 1 : 61;  // bitmap granularity (uneven)
  const auto bits = random_bits((n + g - 1) / g, n);
  Region bitmap = make_region(*a.ctx, bits.size() + 8, kAllAccess);
  bitmap.buf.write(3, bits.data(), bits.size());
  const uint32_t twin = alloc_twin(a, n + 100);

  auto check = [&](const char* what, const Completion& w) {
    ASSERT_TRUE(w.ok()) << what << ": " << describe(w);
  };
  // PUSH basic.
  {
    auto want = remote.buf.bytes();
    std::memcpy(want.data() + 1, local.buf.bytes(0, n).data(), n);
    check("push basic",
          run(a, wr_to(RHN_OP_WRITE, local.sge(0, n), remote, 1, addr, 5, 1)));
    ASSERT_EQ(remote.buf.bytes(), want) << "push basic";
  }
  // PUSH stride.
  {
    local.buf.fill_pattern(n + 3);
    auto want = remote.buf.bytes();
    for (size_t i = 0; i < count; i++)
      std::memcpy(want.data() + 2 + i * rs,
                  local.buf.bytes(i * ls, block).data(), block);
    SendWr wr = wr_to(RHN_OP_WRITE, local.sge(0, (count - 1) * ls + block),
                      remote, 2, addr, 5, 1);
    wr.xfer_mode = RHN_XFER_STRIDE;
    wr.xfer.block = uint32_t(block);
    wr.xfer.count = uint32_t(count);
    wr.xfer.local_stride = ls;
    wr.xfer.remote_stride = rs;
    check("push stride", run(a, wr));
    ASSERT_EQ(remote.buf.bytes(), want) << "push stride";
  }
  // PUSH bitmap.
  {
    local.buf.fill_pattern(n + 4);
    auto want = remote.buf.bytes();
    for (size_t i = 0; i < n; i++)
      if (bit(bits, i / g)) want[i] = local.buf.bytes(i, 1)[0];
    SendWr wr = wr_to(RHN_OP_WRITE, local.sge(0, n), remote, 0, addr, 5, 1);
    wr.xfer_mode = RHN_XFER_BITMAP;
    wr.xfer.block = uint32_t(g);
    wr.xfer.bitmap_addr = bitmap.va(3);
    wr.xfer.bitmap_lkey = bitmap.key();
    check("push bitmap", run(a, wr));
    ASSERT_EQ(remote.buf.bytes(), want) << "push bitmap";
  }
  // PULL basic.
  {
    remote.buf.fill_pattern(n + 5);
    auto want = local.buf.bytes();
    std::memcpy(want.data() + 9, remote.buf.bytes(4, n).data(), n);
    check("pull basic",
          run(a, wr_to(RHN_OP_READ, local.sge(9, n), remote, 4, addr, 5, 1)));
    ASSERT_EQ(local.buf.bytes(), want) << "pull basic";
  }
  // PULL stride.
  {
    remote.buf.fill_pattern(n + 6);
    auto want = local.buf.bytes();
    for (size_t i = 0; i < count; i++)
      std::memcpy(want.data() + i * ls,
                  remote.buf.bytes(1 + i * rs, block).data(), block);
    SendWr wr = wr_to(RHN_OP_READ, local.sge(0, (count - 1) * ls + block),
                      remote, 1, addr, 5, 1);
    wr.xfer_mode = RHN_XFER_STRIDE;
    wr.xfer.block = uint32_t(block);
    wr.xfer.count = uint32_t(count);
    wr.xfer.local_stride = ls;
    wr.xfer.remote_stride = rs;
    check("pull stride", run(a, wr));
    ASSERT_EQ(local.buf.bytes(), want) << "pull stride";
  }
  // PULL bitmap.
  {
    remote.buf.fill_pattern(n + 7);
    auto want = local.buf.bytes();
    for (size_t i = 0; i < n; i++)
      if (bit(bits, i / g)) want[i] = remote.buf.bytes(i, 1)[0];
    SendWr wr = wr_to(RHN_OP_READ, local.sge(0, n), remote, 0, addr, 5, 1);
    wr.xfer_mode = RHN_XFER_BITMAP;
    wr.xfer.block = uint32_t(g);
    wr.xfer.bitmap_addr = bitmap.va(3);
    wr.xfer.bitmap_lkey = bitmap.key();
    check("pull bitmap", run(a, wr));
    ASSERT_EQ(local.buf.bytes(), want) << "pull bitmap";
  }
  // PULL twin, then PUSH diff of a few changed bytes: the remote ends
  // equal to the local copy, and a second DIFF sends no byte.
  {
    remote.buf.fill_pattern(n + 8);
    SendWr pull = wr_to(RHN_OP_READ, local.sge(0, n), remote, 0, addr, 5, 1);
    pull.xfer_mode = RHN_XFER_TWIN;
    pull.xfer.twin = twin;
    pull.xfer.twin_offset = 100;
    check("pull twin", run(a, pull));
    ASSERT_EQ(local.buf.bytes(0, n), remote.buf.bytes(0, n)) << "pull twin";
    auto mine = local.buf.bytes(0, n);
    const size_t changed = 1 + n / 1000;
    scribble(mine, changed, n);
    local.buf.write(0, mine.data(), n);
    SendWr diff = wr_to(RHN_OP_WRITE, local.sge(0, n), remote, 0, addr, 5, 1);
    diff.xfer_mode = RHN_XFER_DIFF;
    diff.xfer.twin = twin;
    diff.xfer.twin_offset = 100;
    check("push diff", run(a, diff));
    ASSERT_EQ(remote.buf.bytes(0, n), mine) << "push diff";
    // On a clean fabric (no packet sent twice), plus the ACKs.
    c->fabric().set_faults(FaultConfig{});
    scribble(mine, changed, n + 1);
    local.buf.write(0, mine.data(), n);
    CounterSnap sent(c->node(0));
    check("push diff, clean fabric", run(a, diff));
    ASSERT_EQ(remote.buf.bytes(0, n), mine) << "push diff";
    // A changed byte costs its run entry (4 bytes) and itself; a packet
    // carries up to 256 runs.
    EXPECT_LE(sent.delta(RHN_CNT_TX_BYTES), changed * 8 + 8192)
        << "DIFF bytes on the wire grow with the changed bytes";
    CounterSnap again(c->node(0));
    check("push diff again", run(a, diff));
    EXPECT_EQ(again.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), n)
        << "the twin holds what was pushed";
    ASSERT_EQ(remote.buf.bytes(0, n), mine);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AreaAndKey, Matrix,
    ::testing::Combine(::testing::Values(Addr::kArea, Addr::kKey),
                       ::testing::ValuesIn(kShapes)),
    [](const auto& param_info) {
      return std::string(std::get<0>(param_info.param) == Addr::kArea ? "Area"
                                                                      : "Key") +
             "_" + std::to_string(std::get<1>(param_info.param).size);
    });

// ---- The multiple-writer protocol (twins and DIFF) --------------------------

// Three writers PULL the home's page with TWIN, each changes its own 8-byte
// chunks (dealt round-robin, so every writer's changes sit 16 bytes apart),
// each PUSHes back with DIFF: the home ends with every writer's bytes. A
// DIFF that carried an unchanged byte between two of its runs would put
// the original back over another writer's change.
TEST_F(Model, MultipleWritersEachPushOnlyTheirOwnBytes) {
  start(ClusterConfig{}, 4);
  lossy(31);
  constexpr size_t kPage = 4096, kChunk = 8;
  Region home = make_region(*eps[0].ctx, kPage, kAllAccess, 91);
  ASSERT_TRUE(eps[0].ctx->register_area(2, home.mr, home.va(), kPage).ok());
  auto want = home.buf.bytes();
  std::vector<Region> copies;
  std::vector<uint32_t> twins;
  for (int w = 1; w <= 3; w++) {
    copies.push_back(make_region(*eps[w].ctx, kPage, kAllAccess, 0, 0));
    twins.push_back(alloc_twin(eps[w], kPage));
    SendWr pull = wr_to(RHN_OP_READ, copies.back().sge(0, kPage), home, 0,
                        Addr::kArea, 2, 0);
    pull.xfer_mode = RHN_XFER_TWIN;
    pull.xfer.twin = twins.back();
    ASSERT_TRUE(run(eps[w], pull).ok());
  }
  for (int w = 1; w <= 3; w++) {
    auto mine = copies[w - 1].buf.bytes();
    for (size_t i = 0; i < kPage; i++)
      if (int((i / kChunk) % 3) + 1 == w) {
        mine[i] ^= uint8_t(0x80 | w);
        want[i] = mine[i];
      }
    copies[w - 1].buf.write(0, mine.data(), kPage);
  }
  // All three DIFF PUSHes in flight at once.
  for (int w = 1; w <= 3; w++) {
    SendWr diff = wr_to(RHN_OP_WRITE, copies[w - 1].sge(0, kPage), home, 0,
                        Addr::kArea, 2, 0);
    diff.xfer_mode = RHN_XFER_DIFF;
    diff.xfer.twin = twins[w - 1];
    ASSERT_TRUE(eps[w].qp->post_send(diff));
  }
  for (int w = 1; w <= 3; w++) ASSERT_TRUE(wait_one(*c, *eps[w].cq).ok());
  EXPECT_EQ(home.buf.bytes(), want);
}

// ---- Bitmaps at their extremes ----------------------------------------------

TEST_F(Model, BitmapAllZeroMovesNothingAllOneMovesEverything) {
  Ep& a = eps[0];
  Ep& b = eps[1];
  constexpr size_t kN = 100000, kG = 512;
  Region local = make_region(*a.ctx, kN, kAllAccess, 31);
  Region remote = make_region(*b.ctx, kN, kAllAccess, 0, 0x77);
  Region bitmap = make_region(*a.ctx, 64, kAllAccess, 0, 0);
  for (uint8_t opcode : {uint8_t(RHN_OP_WRITE), uint8_t(RHN_OP_READ)}) {
    SCOPED_TRACE(int(opcode));
    const auto before_local = local.buf.bytes();
    const auto before_remote = remote.buf.bytes();
    SendWr wr = wr_to(opcode, local.sge(0, kN), remote, 0, Addr::kKey, 0, 1);
    wr.xfer_mode = RHN_XFER_BITMAP;
    wr.xfer.block = kG;
    wr.xfer.bitmap_addr = bitmap.va();
    wr.xfer.bitmap_lkey = bitmap.key();
    bitmap.buf.fill(0);
    // Counted by the NIC that would have sent the bytes.
    CounterSnap none(c->node(opcode == RHN_OP_WRITE ? 0 : 1));
    Completion w = run(a, wr);
    ASSERT_TRUE(w.ok()) << describe(w);
    EXPECT_EQ(local.buf.bytes(), before_local);
    EXPECT_EQ(remote.buf.bytes(), before_remote);
    EXPECT_EQ(none.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), kN);
    bitmap.buf.fill(0xff);
    w = run(a, wr);
    ASSERT_TRUE(w.ok()) << describe(w);
    EXPECT_EQ(local.buf.bytes(), remote.buf.bytes());
    remote.buf.fill(0x55);
  }
}

// ---- Refusals ---------------------------------------------------------------

TEST_F(Model, DescriptorsTheNicRefusesForTheNewModes) {
  Ep& a = eps[0];
  Ep& b = eps[1];
  Region local = make_region(*a.ctx, 8192, kAllAccess, 41);
  Region remote = make_region(*b.ctx, 8192, kAllAccess, 0, 0x66);
  Region bitmap = make_region(*a.ctx, 8, kAllAccess, 0, 0xff);
  const uint32_t twin = alloc_twin(a, 4096);
  // Another process's twin on the same NIC.
  Ep other = make_context_ep(*c, 0);
  const uint32_t foreign = alloc_twin(other, 4096);
  struct Case {
    const char* what;
    uint8_t opcode, mode;
    std::function<void(SendWr&)> edit;
    uint8_t status, syndrome;
  };
  const Case cases[] = {
      {"TWIN is for PULL", RHN_OP_WRITE, RHN_XFER_TWIN,
       [&](SendWr& w) { w.xfer.twin = twin; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_XFER},
      {"DIFF is for PUSH", RHN_OP_READ, RHN_XFER_DIFF,
       [&](SendWr& w) { w.xfer.twin = twin; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_XFER},
      {"no such twin", RHN_OP_WRITE, RHN_XFER_DIFF,
       [&](SendWr& w) { w.xfer.twin = 0x3fff; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_XFER},
      {"another process's twin", RHN_OP_READ, RHN_XFER_TWIN,
       [&](SendWr& w) { w.xfer.twin = foreign; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_XFER},
      {"twin shorter than the area", RHN_OP_WRITE, RHN_XFER_DIFF,
       [&](SendWr& w) {
         w.xfer.twin = twin;
         w.xfer.twin_offset = 1;
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER},
      {"bitmap granularity 0", RHN_OP_WRITE, RHN_XFER_BITMAP,
       [&](SendWr& w) {
         w.xfer.bitmap_addr = bitmap.va();
         w.xfer.bitmap_lkey = bitmap.key();
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER},
      {"bitmap outside its key", RHN_OP_READ, RHN_XFER_BITMAP,
       [&](SendWr& w) {
         w.xfer.block = 8;  // 4096 / 8 bits = 64 bytes > 8
         w.xfer.bitmap_addr = bitmap.va();
         w.xfer.bitmap_lkey = bitmap.key();
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER},
      {"reserved bytes set", RHN_OP_WRITE, RHN_XFER_STRIDE,
       [&](SendWr& w) {
         w.xfer.block = 16;
         w.xfer.count = 4;
         w.xfer.local_stride = w.xfer.remote_stride = 16;
         w.xfer.reserved[3] = 1;
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    SendWr wr =
        wr_to(k.opcode, local.sge(0, 4096), remote, 0, Addr::kKey, 0, 1);
    wr.xfer_mode = k.mode;
    k.edit(wr);
    CounterSnap sent(c->node(0));
    Completion e = run(a, wr);
    EXPECT_EQ(e.status, k.status) << describe(e);
    EXPECT_EQ(e.vendor_err, uint32_t(k.syndrome)) << describe(e);
    EXPECT_EQ(sent.delta(RHN_CNT_TX_PACKETS), 0u);
    EXPECT_EQ(remote.buf.bytes(), std::vector<uint8_t>(8192, 0x66));
    // The endpoint went to error: a new one for the next case.
    a = make_context_ep(*c, 0);
    ASSERT_TRUE(a.qp);
  }
}

// ---- Twin memory
// --------------------------------------------------------------

TEST_F(Model, TwinMemoryRunsOutCleanlyAndIsZeroedAndFreedWithItsOwner) {
  ClusterConfig cfg;
  cfg.engine.twin_bytes = 64 * 1024;
  cfg.engine.max_twins = 4;
  start(cfg);
  auto& drv = *c->node(0).driver;
  Ep& a = eps[0];
  const uint32_t ctx = a.ctx->index();
  AdminResult big = drv.alloc_twin(ctx, 64 * 1024 + 1);
  EXPECT_EQ(big.status, RHN_ADMIN_BAD_PARAM);
  AdminResult zero = drv.alloc_twin(ctx, 0);
  EXPECT_EQ(zero.status, RHN_ADMIN_BAD_PARAM);
  std::vector<uint32_t> h;
  for (int i = 0; i < 4; i++) {
    AdminResult r = drv.alloc_twin(ctx, 16 * 1024);
    ASSERT_TRUE(r.ok()) << i;
    h.push_back(r.result);
  }
  EXPECT_EQ(drv.alloc_twin(ctx, 1).status, RHN_ADMIN_NO_RESOURCES);
  // The context cannot go while it holds twin memory; freeing one leaves
  // a 16 KiB hole that a 16 KiB request fits and a larger one does not.
  EXPECT_EQ(drv.free_twin(ctx, h[1]).status, RHN_ADMIN_OK);
  EXPECT_EQ(drv.free_twin(ctx, h[1]).status, RHN_ADMIN_BAD_HANDLE);
  EXPECT_EQ(drv.alloc_twin(ctx, 16 * 1024 + 1).status, RHN_ADMIN_NO_RESOURCES);
  Ep other = make_context_ep(*c, 0);
  EXPECT_EQ(drv.free_twin(other.ctx->index(), h[0]).status,
            RHN_ADMIN_BAD_HANDLE)
      << "another process's twin";
  AdminResult again = drv.alloc_twin(other.ctx->index(), 16 * 1024);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again.result, h[1]) << "a freed handle is never issued again";
  // What the first owner left in those pages does not show: a TWIN pull
  // fills the twin, a DIFF push against a new twin sends every nonzero
  // byte (zeroed twin).
  Region local = make_region(*other.ctx, 16 * 1024, kAllAccess, 0, 0);
  Region remote = make_region(*eps[1].ctx, 16 * 1024, kAllAccess, 0, 0x11);
  std::vector<uint8_t> data(16 * 1024, 0);
  data[100] = 9;
  local.buf.write(0, data.data(), data.size());
  SendWr diff = rdma_wr(1, RHN_OP_WRITE, {local.sge(0, 16 * 1024)}, remote.va(),
                        remote.key());
  diff.dst_node = 1;
  diff.dst_qpn = eps[1].qp->qpn();
  diff.xfer_mode = RHN_XFER_DIFF;
  diff.xfer.twin = again.result;
  ASSERT_TRUE(other.qp->post_send(diff));
  ASSERT_TRUE(wait_one(*c, *other.cq).ok());
  auto want = std::vector<uint8_t>(16 * 1024, 0x11);
  want[100] = 9;
  EXPECT_EQ(remote.buf.bytes(), want) << "only the byte that differs from a "
                                         "zeroed twin travelled";
  for (uint32_t k : {h[0], h[2], h[3]}) EXPECT_TRUE(drv.free_twin(ctx, k).ok());
}

TEST_F(Model, TwinFreedWhileAPullIsOutIsNeverWrittenAfterwards) {
  Ep& a = eps[0];
  Ep& b = eps[1];
  auto& drv = *c->node(0).driver;
  constexpr size_t kN = 256 * 1024;
  Region local = make_region(*a.ctx, kN, kAllAccess, 0, 0);
  Region remote = make_region(*b.ctx, kN, kAllAccess, 51);
  const uint32_t twin = alloc_twin(a, kN);
  SendWr pull =
      rdma_wr(1, RHN_OP_READ, {local.sge(0, kN)}, remote.va(), remote.key());
  pull.dst_node = 1;
  pull.dst_qpn = b.qp->qpn();
  pull.xfer_mode = RHN_XFER_TWIN;
  pull.xfer.twin = twin;
  ASSERT_TRUE(a.qp->post_send(pull));
  // Let the READ start, then free the twin and give its pages to another
  // process at once.
  for (int i = 0; i < 20; i++) c->step();
  ASSERT_TRUE(drv.free_twin(a.ctx->index(), twin).ok());
  Ep other = make_context_ep(*c, 0);
  AdminResult taken = drv.alloc_twin(other.ctx->index(), kN);
  ASSERT_TRUE(taken.ok());
  Completion w = wait_one(*c, *a.cq);
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  // The new owner's twin is still all zero: a DIFF of zeros sends nothing.
  Region zeros = make_region(*other.ctx, kN, kAllAccess, 0, 0);
  SendWr diff =
      rdma_wr(2, RHN_OP_WRITE, {zeros.sge(0, kN)}, remote.va(), remote.key());
  diff.dst_node = 1;
  diff.dst_qpn = b.qp->qpn();
  diff.xfer_mode = RHN_XFER_DIFF;
  diff.xfer.twin = taken.result;
  CounterSnap skipped(c->node(0));
  ASSERT_TRUE(other.qp->post_send(diff));
  ASSERT_TRUE(wait_one(*c, *other.cq).ok());
  EXPECT_EQ(skipped.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), kN);
}

// Twin memory as the host's device memory: the driver copies into and out
// of it through the NIC (TWIN_WRITE / TWIN_READ), and an MR over part of
// it (RHN_CREATE_MR_F_TWIN) is a key like any other: a local SGE, a peer's
// WRITE, READ and atomics. The twin stays while the MR exists.
TEST_F(Model, DeviceMemoryIsCopiedByTheNicAndReachableByKey) {
  Ep& a = eps[0];
  Ep& b = eps[1];
  auto& drv = *c->node(0).driver;
  const uint32_t ctx = a.ctx->index();
  constexpr uint32_t kLen = 3 * 4096;
  const uint32_t twin = alloc_twin(a, kLen);
  // A host page the copies go through (what rhinet.ko's bounce buffer is).
  auto& mem = drv.memory();
  const uint64_t host = mem.alloc_contiguous(4);
  ASSERT_NE(host, 0u);
  auto copy = [&](uint8_t op, uint32_t handle, uint64_t offset, uint32_t len,
                  uint32_t context) {
    rhn_admin_cmd cmd{};
    cmd.hdr.opcode = op;
    cmd.hdr.context = context;
    cmd.u.twin_copy.handle = handle;
    cmd.u.twin_copy.length = len;
    cmd.u.twin_copy.offset = offset;
    cmd.u.twin_copy.addr = host;
    return drv.exec(cmd).status;
  };
  const std::vector<uint8_t> src = pattern(7, 300);
  std::memcpy(mem.ptr(host, 300), src.data(), 300);
  ASSERT_EQ(copy(RHN_ADMIN_TWIN_WRITE, twin, 4093, 300, ctx), RHN_ADMIN_OK);
  std::memset(mem.ptr(host, 306), 0xee, 306);
  ASSERT_EQ(copy(RHN_ADMIN_TWIN_READ, twin, 4090, 306, ctx), RHN_ADMIN_OK);
  std::vector<uint8_t> want(306, 0);  // a new twin is zeroed
  std::copy(src.begin(), src.end(), want.begin() + 3);
  EXPECT_EQ(std::vector<uint8_t>(mem.ptr(host, 306), mem.ptr(host) + 306),
            want);
  // Outside the twin, empty, too long, someone else's: refused.
  EXPECT_EQ(copy(RHN_ADMIN_TWIN_READ, twin, kLen - 1, 2, ctx),
            RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(copy(RHN_ADMIN_TWIN_WRITE, twin, 0, 0, ctx), RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(copy(RHN_ADMIN_TWIN_WRITE, twin, 0, RHN_TWIN_COPY_MAX + 1, ctx),
            RHN_ADMIN_BAD_PARAM);

  // An MR over [4096, 12288) of it, addressed from 0.
  rhn_admin_cmd cmd{};
  cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
  cmd.hdr.context = ctx;
  auto& m = cmd.u.create_mr;
  m.pdn = a.ctx->pdn();
  m.access = kAllAccess;
  m.iova = 0;
  m.length = 8192;
  m.twin = twin;
  m.twin_offset = 4096;
  m.key_variant = 0x5a;
  m.flags = RHN_CREATE_MR_F_TWIN;
  rhn_admin_cmd beyond = cmd;
  beyond.u.create_mr.length = 8193;
  EXPECT_EQ(drv.exec(beyond).status, RHN_ADMIN_BAD_PARAM);
  // Another process of the node names this twin: not its own.
  Ep other = make_context_ep(*c, 0);
  rhn_admin_cmd foreign = cmd;
  foreign.hdr.context = other.ctx->index();
  foreign.u.create_mr.pdn = other.ctx->pdn();
  EXPECT_EQ(drv.exec(foreign).status, RHN_ADMIN_BAD_HANDLE);
  AdminResult mr = drv.exec(cmd);
  ASSERT_TRUE(mr.ok()) << int(mr.status);
  const uint32_t key = mr.result;
  EXPECT_EQ(drv.free_twin(ctx, twin).status, RHN_ADMIN_BUSY);
  EXPECT_EQ(copy(RHN_ADMIN_TWIN_READ, twin, 0, 8, other.ctx->index()),
            RHN_ADMIN_BAD_HANDLE);

  // The peer WRITEs into it and READs it back, by key.
  Region far = make_region(*b.ctx, 8192, kAllAccess, 33);
  SendWr w = rdma_wr(1, RHN_OP_WRITE, {far.sge(0, 3000)}, 100, key);
  w.dst_node = 0;
  w.dst_qpn = a.qp->qpn();
  ASSERT_TRUE(run(b, w).ok());
  SendWr r = rdma_wr(2, RHN_OP_READ, {far.sge(4096, 3000)}, 100, key);
  r.dst_node = 0;
  r.dst_qpn = a.qp->qpn();
  ASSERT_TRUE(run(b, r).ok());
  EXPECT_EQ(far.buf.bytes(4096, 3000), pattern(33, 3000));
  // Atomics on a word of it.
  SendWr fa = rdma_wr(3, RHN_OP_FETCH_ADD, {far.sge(8000, 8)}, 4096, key);
  fa.dst_node = 0;
  fa.dst_qpn = a.qp->qpn();
  fa.compare_add = 5;
  ASSERT_TRUE(run(b, fa).ok());
  EXPECT_EQ(far.buf.load64(8000), 0u);
  SendWr cs = rdma_wr(4, RHN_OP_CMP_SWAP, {far.sge(8000, 8)}, 4096, key);
  cs.dst_node = 0;
  cs.dst_qpn = a.qp->qpn();
  cs.compare_add = 5;
  cs.swap = 0xfeedfacecafebeefull;
  ASSERT_TRUE(run(b, cs).ok());
  EXPECT_EQ(far.buf.load64(8000), 5u);
  // Beyond the MR: refused at the target.
  SendWr past = rdma_wr(5, RHN_OP_WRITE, {far.sge(0, 16)}, 8190, key);
  past.dst_node = 0;
  past.dst_qpn = a.qp->qpn();
  EXPECT_EQ(run(b, past).status, RHN_CQE_REM_ACCESS_ERR);

  // The owner sees all of it through TWIN_READ (MR offset + 4096).
  ASSERT_EQ(copy(RHN_ADMIN_TWIN_READ, twin, 4096 + 100, 3000, ctx),
            RHN_ADMIN_OK);
  EXPECT_EQ(std::vector<uint8_t>(mem.ptr(host, 3000), mem.ptr(host) + 3000),
            pattern(33, 3000));
  ASSERT_EQ(copy(RHN_ADMIN_TWIN_READ, twin, 4096 + 4096, 8, ctx), RHN_ADMIN_OK);
  uint64_t word;
  std::memcpy(&word, mem.ptr(host, 8), 8);
  EXPECT_EQ(word, 0xfeedfacecafebeefull);

  // Its key as a local SGE: the owner WRITEs from device memory.
  Region dst = make_region(*b.ctx, 4096, kAllAccess, 0, 0);
  SendWr from =
      rdma_wr(6, RHN_OP_WRITE, {Sge{100, 3000, key}}, dst.va(), dst.key());
  from.dst_node = 1;
  from.dst_qpn = b.qp->qpn();
  ASSERT_TRUE(run(a, from).ok());
  EXPECT_EQ(dst.buf.bytes(0, 3000), pattern(33, 3000));

  // Gone with its MR: then the twin can be freed.
  EXPECT_TRUE(drv.exec_handle(RHN_ADMIN_DESTROY_MR, ctx, key).ok());
  EXPECT_TRUE(drv.free_twin(ctx, twin).ok());
  mem.free_contiguous(host, 4);
}

// ---- Groups -----------------------------------------------------------------

TEST_F(Model, AreasAreReachableOnlyWithinTheirGroup) {
  start(ClusterConfig{}, 3);
  auto set = [&](Ep& e, std::vector<uint16_t> g) {
    return c->node(e.node).driver->set_groups(e.ctx->index(), g);
  };
  // Node 0 and 1 are in group 7 (node 1 also in 9); node 2 only in 9.
  ASSERT_TRUE(set(eps[0], {7}).ok());
  ASSERT_TRUE(set(eps[1], {7, 9}).ok());
  ASSERT_TRUE(set(eps[2], {9}).ok());
  Region target = make_region(*eps[1].ctx, 4096, kAllAccess, 0, 0x10);
  ASSERT_TRUE(
      eps[1]
          .ctx->register_area(RHN_AREA_KEY(7, 3), target.mr, target.va(), 4096)
          .ok());
  // An area in a group its process is not in is refused.
  Region other = make_region(*eps[2].ctx, 4096, kAllAccess);
  AdminResult r =
      eps[2].ctx->register_area(RHN_AREA_KEY(7, 3), other.mr, other.va(), 4096);
  EXPECT_EQ(r.status, RHN_ADMIN_NOT_PERMITTED);
  // A member writes.
  Region src0 = make_region(*eps[0].ctx, 64, kAllAccess, 61);
  SendWr ok = wr_to(RHN_OP_WRITE, src0.sge(0, 64), target, 0, Addr::kArea,
                    RHN_AREA_KEY(7, 3), 1);
  Completion w = run(eps[0], ok);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(target.buf.bytes(0, 64), src0.buf.bytes());
  // A non-member naming group 7 is stopped by its own NIC.
  Region src2 = make_region(*eps[2].ctx, 64, kAllAccess, 62);
  CounterSnap n2(c->node(2));
  w = run(eps[2], wr_to(RHN_OP_WRITE, src2.sge(0, 64), target, 0, Addr::kArea,
                        RHN_AREA_KEY(7, 3), 1));
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_BAD_GROUP));
  EXPECT_EQ(n2.delta(RHN_CNT_GROUP_VIOLATIONS), 1u);
  EXPECT_EQ(n2.delta(RHN_CNT_TX_PACKETS), 0u);
  // Naming the area in group 9 (it is in 7) finds no area; naming group 9
  // at a target that is not in group 9 is a group violation there.
  eps[2] = make_context_ep(*c, 2);
  ASSERT_TRUE(set(eps[2], {9}).ok());
  src2 = make_region(*eps[2].ctx, 64, kAllAccess, 62);
  w = run(eps[2], wr_to(RHN_OP_WRITE, src2.sge(0, 64), target, 0, Addr::kArea,
                        RHN_AREA_KEY(9, 3), 1));
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_BAD_AREA));
  eps[2] = make_context_ep(*c, 2);
  ASSERT_TRUE(set(eps[2], {9}).ok());
  src2 = make_region(*eps[2].ctx, 64, kAllAccess, 62);
  CounterSnap n0(c->node(0));
  Region t0 = make_region(*eps[0].ctx, 64, kAllAccess, 0, 0);
  w = run(eps[2], wr_to(RHN_OP_READ, src2.sge(0, 64), t0, 0, Addr::kArea,
                        RHN_AREA_KEY(9, 3), 0));
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_BAD_GROUP));
  EXPECT_EQ(n0.delta(RHN_CNT_GROUP_VIOLATIONS), 1u);
  EXPECT_EQ(target.buf.bytes(0, 64), src0.buf.bytes()) << "untouched";
  // Leaving group 7 is refused while an area is registered in it.
  EXPECT_EQ(set(eps[1], {9}).status, RHN_ADMIN_BUSY);
  // Bad lists.
  EXPECT_EQ(set(eps[1], {0}).status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(eps[1], {7, 7}).status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(eps[1], {1, 2, 3, 4, 5, 6, 7, 8, 9}).status,
            RHN_ADMIN_BAD_PARAM);
}

// ---- Signals and put-with-signal --------------------------------------------

TEST_F(Model, SignalsAreCountedExactlyThroughALossyFabric) {
  start(ClusterConfig{}, 4);
  lossy(77);
  Region target = make_region(*eps[0].ctx, 3 * 8192, kAllAccess, 0, 0);
  ASSERT_TRUE(eps[0].ctx->register_area(21, target.mr, target.va(), 8192).ok());
  ASSERT_TRUE(
      eps[0].ctx->register_area(22, target.mr, target.va(8192), 8192).ok());
  constexpr int kEach = 40;
  std::vector<Region> src;
  for (int n = 1; n < 4; n++)
    src.push_back(make_region(*eps[n].ctx, 8192, kAllAccess, 70 + n));
  uint64_t want[2] = {0, 0};
  int posted[4] = {};
  for (int k = 0; k < kEach; k++)
    for (int n = 1; n < 4; n++) {
      const uint32_t area = (k + n) % 2 ? 21 : 22;
      SendWr wr = wr_to(RHN_OP_WRITE, src[n - 1].sge(0, 100 * n), target,
                        size_t(n) * 1000, Addr::kArea, area, 0);
      wr.flags = RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE |
                 (k == kEach - 1 ? RHN_WQE_F_SIGNALED : 0);
      wr.imm_data = uint32_t(k + 1);
      want[area - 21] += uint32_t(k + 1);
      ASSERT_TRUE(eps[n].qp->post_send(wr));
      posted[n]++;
    }
  for (int n = 1; n < 4; n++) {
    auto v = c->wait_cqes(*eps[n].cq, 1, 20'000'000'000);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(v[0].ok()) << describe(v[0]);
  }
  // Each signal is one CQE on the target endpoint's CQ: area key, value,
  // sender, and the data is there when it is seen.
  auto sigs = c->wait_cqes(*eps[0].cq, 3 * kEach, 20'000'000'000);
  ASSERT_EQ(sigs.size(), size_t(3 * kEach));
  uint64_t got[2] = {0, 0};
  for (const auto& s : sigs) {
    ASSERT_EQ(s.opcode, RHN_CQE_OP_SIGNAL) << describe(s);
    ASSERT_TRUE(s.vendor_err == 21 || s.vendor_err == 22);
    got[s.vendor_err - 21] += s.imm_data;
    EXPECT_EQ(s.byte_len, 100u * (s.src_node));
  }
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
  EXPECT_TRUE(c->wait_cqes(*eps[0].cq, 1, 50'000'000).empty())
      << "no signal twice";
}

TEST_F(Model, SignalsOnlyOnAPushByAreaBetweenEndpoints) {
  Region target = make_region(*eps[1].ctx, 4096, kAllAccess, 0, 0);
  Region src = make_region(*eps[0].ctx, 4096, kAllAccess, 81);
  SendWr by_key =
      wr_to(RHN_OP_WRITE, src.sge(0, 64), target, 0, Addr::kKey, 0, 1);
  by_key.flags |= RHN_WQE_F_SIGNAL_REMOTE;
  Completion w = run(eps[0], by_key);
  EXPECT_EQ(w.status, RHN_CQE_LOC_QP_OP_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_BAD_WQE));
}

}  // namespace
}  // namespace rhinet::test
