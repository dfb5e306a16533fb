// SPDX-License-Identifier: BSD-2-Clause
// The extended atomics (RHN_OP_ATOMIC_EXT): each operation on 8- and
// 4-byte words, fetching or not, and what the target refuses, between
// engines on the simulated fabric (queues.md, "Atomics").
#include <cstring>
#include <optional>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

ClusterConfig nodes(uint16_t n) {
  ClusterConfig cfg;
  cfg.nodes = n;
  return cfg;
}

// An extended atomic `aop` on the word at `va` (key `key`), its original
// value into `result` if given.
SendWr aop_wr(uint64_t wr_id, uint32_t aop, uint64_t va, uint32_t key,
              uint64_t operand, uint64_t swap = 0,
              std::optional<Sge> result = std::nullopt) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = RHN_OP_ATOMIC_EXT;
  wr.imm_data = aop;
  wr.remote_addr = va;
  wr.remote_key = key;
  wr.compare_add = operand;
  wr.swap = swap;
  if (result) wr.sges.push_back(*result);
  return wr;
}

uint32_t load32(const Region& r, size_t off) {
  uint32_t v;
  const auto b = r.buf.bytes(off, 4);
  std::memcpy(&v, b.data(), 4);
  return v;
}

void store32(Region& r, size_t off, uint32_t v) {
  uint64_t w = r.buf.load64(off & ~size_t{7});
  std::memcpy(reinterpret_cast<uint8_t*>(&w) + (off & 7), &v, 4);
  r.buf.store64(off & ~size_t{7}, w);
}

class AtomicExt : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(nodes(2));
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
  }
  SimContext& A() { return *p.ctx_a; }
  SimContext& B() { return *p.ctx_b; }
  // Posts `wr` and returns its completion.
  Completion run(const SendWr& wr) {
    EXPECT_TRUE(p.qp_a->post_send(wr));
    return wait_one(*c, *p.cq_a);
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
};

struct Case {
  const char* name;
  uint32_t op;
  uint64_t before, operand, swap, after;
};

// Each operation on a 64-bit word: the word after it, the value fetched.
TEST_F(AtomicExt, EachOperationOn64BitWords) {
  const Case cases[] = {
      {"add", RHN_AOP_ADD, 100, 5, 0, 105},
      {"add wraps", RHN_AOP_ADD, ~0ull, 2, 0, 1},
      {"cswap hit", RHN_AOP_CMP_SWAP, 7, 7, 0x1122334455667788ull,
       0x1122334455667788ull},
      {"cswap miss", RHN_AOP_CMP_SWAP, 7, 8, 9, 7},
      {"swap", RHN_AOP_SWAP, 0xabcdull << 40, 42, 0, 42},
      {"fetch", RHN_AOP_FETCH, 0x0123456789abcdefull, 55, 66,
       0x0123456789abcdefull},
      {"and", RHN_AOP_AND, 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull, 0,
       0x0f000f000f000f00ull},
      {"or", RHN_AOP_OR, 0xf0ull, (0x0full << 60) | 0x3c, 0,
       0xf0000000000000fcull},
      {"xor", RHN_AOP_XOR, 0xff0f00000000ff0full, 0x0ff000000000fff0ull, 0,
       0xf0ff0000000000ffull},
  };
  Region word = make_region(B(), 64, kAllAccess, 0, 0);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xee);
  uint64_t id = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    word.buf.store64(8, k.before);
    word.buf.store64(16, 0x5a5a5a5a5a5a5a5aull);
    const Completion s = run(aop_wr(++id, k.op, word.va(8), word.key(),
                                    k.operand, k.swap, result.sge(8, 8)));
    ASSERT_TRUE(s.ok()) << describe(s);
    EXPECT_EQ(s.opcode, RHN_CQE_OP_ATOMIC_EXT);
    EXPECT_EQ(s.byte_len, 8u);
    EXPECT_EQ(result.buf.load64(8), k.before);
    EXPECT_EQ(word.buf.load64(8), k.after);
    EXPECT_EQ(word.buf.load64(16), 0x5a5a5a5a5a5a5a5aull);  // neighbour
    EXPECT_EQ(result.buf.load64(16), 0xeeeeeeeeeeeeeeeeull);
  }
}

// The same on 32-bit words: the upper operand bits are ignored, the word
// beside it is not touched, 4 bytes come back.
TEST_F(AtomicExt, EachOperationOn32BitWords) {
  const Case cases[] = {
      {"add", RHN_AOP_ADD, 100, 0xffffffff00000005ull, 0, 105},
      {"add wraps", RHN_AOP_ADD, 0xffffffffu, 2, 0, 1},
      {"cswap hit", RHN_AOP_CMP_SWAP, 7, 0xaaaa000000000007ull, 0x11223344,
       0x11223344},
      {"cswap miss", RHN_AOP_CMP_SWAP, 7, 8, 9, 7},
      {"swap", RHN_AOP_SWAP, 0xabcd0000u, 42, 0, 42},
      {"fetch", RHN_AOP_FETCH, 0x89abcdefu, 55, 66, 0x89abcdefu},
      {"and", RHN_AOP_AND, 0xff00ff00u, 0x0ff00ff0u, 0, 0x0f000f00u},
      {"or", RHN_AOP_OR, 0xf0u, 0xf000003cu, 0, 0xf00000fcu},
      {"xor", RHN_AOP_XOR, 0xff0fff0fu, 0x0ff0fff0u, 0, 0xf0ff00ffu},
  };
  Region word = make_region(B(), 64, kAllAccess, 0, 0);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xee);
  uint64_t id = 0;
  for (const Case& k : cases) {
    for (size_t at : {size_t{8}, size_t{12}}) {  // both halves of a u64
      SCOPED_TRACE(std::string(k.name) + " at " + std::to_string(at));
      word.buf.store64(8, 0x5a5a5a5a5a5a5a5aull);
      store32(word, at, static_cast<uint32_t>(k.before));
      result.buf.store64(0, 0xeeeeeeeeeeeeeeeeull);
      const Completion s =
          run(aop_wr(++id, k.op | RHN_AOP_F_32, word.va(at), word.key(),
                     k.operand, k.swap, result.sge(0, 4)));
      ASSERT_TRUE(s.ok()) << describe(s);
      EXPECT_EQ(s.opcode, RHN_CQE_OP_ATOMIC_EXT);
      EXPECT_EQ(s.byte_len, 4u);
      EXPECT_EQ(load32(result, 0), static_cast<uint32_t>(k.before));
      EXPECT_EQ(load32(result, 4), 0xeeeeeeeeu);
      EXPECT_EQ(load32(word, at), static_cast<uint32_t>(k.after));
      EXPECT_EQ(load32(word, at ^ 4), 0x5a5a5a5au);
    }
  }
}

// Non-fetching: the word changes, nothing is written back, the CQE says
// 0 bytes; a set is a non-fetching swap.
TEST_F(AtomicExt, NonFetchingOperationsWriteNothingBack) {
  Region word = make_region(B(), 64, kAllAccess, 0, 0);
  Region scratch = make_region(A(), 64, kAllAccess, 0, 0x77);
  word.buf.store64(0, 10);
  Completion s = run(
      aop_wr(1, RHN_AOP_ADD | RHN_AOP_F_NO_FETCH, word.va(0), word.key(), 5));
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.byte_len, 0u);
  EXPECT_EQ(word.buf.load64(0), 15u);
  s = run(aop_wr(2, RHN_AOP_SWAP | RHN_AOP_F_NO_FETCH | RHN_AOP_F_32,
                 word.va(4), word.key(), 0xcafef00d));
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(load32(word, 4), 0xcafef00du);
  EXPECT_EQ(load32(word, 0), 15u);
  s = run(aop_wr(3, RHN_AOP_XOR | RHN_AOP_F_NO_FETCH, word.va(8), word.key(),
                 0xff));
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(word.buf.load64(8), 0xffu);
  EXPECT_EQ(scratch.buf.bytes(), std::vector<uint8_t>(64, 0x77));
}

// What the requester's decoder refuses: no target packet leaves.
TEST_F(AtomicExt, MalformedWqesAreRefusedLocally) {
  Region word = make_region(B(), 64, kAllAccess, 0, 0);
  Region result = make_region(A(), 64, kAllAccess, 0, 0);
  word.buf.store64(0, 3);
  CounterSnap target(c->node(1));
  struct Bad {
    const char* name;
    uint32_t aop;
    uint32_t sge_len;  // 0: no SGE
    uint8_t status;
    uint8_t syndrome;
  };
  const Bad bad[] = {
      {"unknown op", 7, 8, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"unknown flag", RHN_AOP_ADD | (1u << 12), 8, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"fetch without fetch", RHN_AOP_FETCH | RHN_AOP_F_NO_FETCH, 0,
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"32-bit into 8 bytes", RHN_AOP_ADD | RHN_AOP_F_32, 8,
       RHN_CQE_LOC_LEN_ERR, RHN_SYN_LENGTH},
      {"64-bit into 4 bytes", RHN_AOP_ADD, 4, RHN_CQE_LOC_LEN_ERR,
       RHN_SYN_LENGTH},
      {"fetching without SGE", RHN_AOP_SWAP, 0, RHN_CQE_LOC_LEN_ERR,
       RHN_SYN_LENGTH},
      {"non-fetching with SGE", RHN_AOP_OR | RHN_AOP_F_NO_FETCH, 8,
       RHN_CQE_LOC_LEN_ERR, RHN_SYN_LENGTH},
  };
  uint64_t id = 0;
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.name);
    std::optional<Sge> sge;
    if (b.sge_len) sge = result.sge(0, b.sge_len);
    // Each refusal moves the QP to the error state: a fresh pair each.
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    Region w2 = make_region(B(), 64, kAllAccess, 0, 0);
    Region r2 = make_region(A(), 64, kAllAccess, 0, 0);
    if (b.sge_len) sge = r2.sge(0, b.sge_len);
    const Completion s =
        run(aop_wr(++id, b.aop, w2.va(0), w2.key(), 1, 0, sge));
    EXPECT_EQ(s.status, b.status) << describe(s);
    EXPECT_EQ(s.vendor_err, uint32_t(b.syndrome)) << describe(s);
    EXPECT_EQ(w2.buf.load64(0), 0u);
  }
  EXPECT_EQ(target.delta(RHN_CNT_REMOTE_INVALID_REQUESTS), 0u);
}

// A word not aligned to its width: the target refuses it and counts an
// invalid request; 4-byte alignment is enough for 32 bits.
TEST_F(AtomicExt, MisalignedWordsAreRefusedByTheTarget) {
  Region word = make_region(B(), 64, kAllAccess, 91);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xee);
  CounterSnap target(c->node(1));
  Completion s = run(aop_wr(1, RHN_AOP_ADD | RHN_AOP_F_32, word.va(2),
                            word.key(), 1, 0, result.sge(0, 4)));
  EXPECT_EQ(s.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_ALIGNMENT)) << describe(s);
  EXPECT_EQ(word.buf.bytes(), pattern(91, 64));
  EXPECT_EQ(target.delta(RHN_CNT_REMOTE_INVALID_REQUESTS), 1u);
  EXPECT_EQ(result.buf.bytes(), std::vector<uint8_t>(64, 0xee));

  p = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region w2 = make_region(B(), 64, kAllAccess, 92);
  Region r2 = make_region(A(), 64, kAllAccess, 0, 0xee);
  s = run(aop_wr(2, RHN_AOP_OR, w2.va(4), w2.key(), 1, 0, r2.sge(0, 8)));
  EXPECT_EQ(s.status, RHN_CQE_REM_INV_REQ_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_ALIGNMENT)) << describe(s);
  EXPECT_EQ(w2.buf.bytes(), pattern(92, 64));
}

// No remote atomic right on the target MR, or a key that names nothing:
// refused as access errors, the word untouched.
TEST_F(AtomicExt, NoAtomicRightOrABadKeyIsAnAccessError) {
  Region word = make_region(
      B(), 64,
      RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ,
      93);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xee);
  CounterSnap target(c->node(1));
  Completion s = run(aop_wr(1, RHN_AOP_SWAP | RHN_AOP_F_32, word.va(0),
                            word.key(), 1, 0, result.sge(0, 4)));
  EXPECT_EQ(s.status, RHN_CQE_REM_ACCESS_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_ACCESS_RIGHTS)) << describe(s);
  EXPECT_EQ(word.buf.bytes(), pattern(93, 64));
  EXPECT_EQ(target.delta(RHN_CNT_REMOTE_ACCESS_ERRORS), 1u);

  p = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region w2 = make_region(B(), 64, kAllAccess, 94);
  Region r2 = make_region(A(), 64, kAllAccess, 0, 0xee);
  s = run(aop_wr(2, RHN_AOP_AND | RHN_AOP_F_NO_FETCH, w2.va(0),
                 w2.key() ^ 0x100, 0));
  EXPECT_EQ(s.status, RHN_CQE_REM_ACCESS_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_KEY)) << describe(s);
  EXPECT_EQ(w2.buf.bytes(), pattern(94, 64));
  EXPECT_EQ(r2.buf.bytes(), std::vector<uint8_t>(64, 0xee));
}

// Every packet duplicated by the fabric (and some lost): each XOR runs
// once (twice would undo it) and each fetch-add's value is the one the
// counter had, so the fetched values are exactly 0..n-1.
TEST(AtomicExtFaults, DuplicatedRequestsApplyOnce) {
  ClusterConfig cfg = nodes(2);
  cfg.seed = 7;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  FaultConfig f;
  f.duplicate = 1.0;
  f.loss = 0.1;
  f.reorder = 0.2;
  f.reorder_delay_ns = 3'000;
  c.fabric().set_seed(7);
  c.fabric().set_faults(f);
  Region word = make_region(*p.ctx_b, 64, kAllAccess, 0, 0);
  Region result = make_region(*p.ctx_a, 8 * 64, kAllAccess, 0, 0xee);
  CounterSnap target(c.node(1));
  constexpr int kOps = 24;
  for (int i = 0; i < kOps; ++i) {
    ASSERT_TRUE(p.qp_a->post_send(
        aop_wr(uint64_t(2 * i), RHN_AOP_XOR | RHN_AOP_F_32 | RHN_AOP_F_NO_FETCH,
               word.va(0), word.key(), 1u << i)));
    ASSERT_TRUE(p.qp_a->post_send(aop_wr(uint64_t(2 * i + 1), RHN_AOP_ADD,
                                         word.va(8), word.key(), 1, 0,
                                         result.sge(size_t(i) * 8, 8))));
  }
  const auto v = c.wait_cqes(*p.cq_a, 2 * kOps, 5'000'000'000);
  ASSERT_EQ(v.size(), size_t(2 * kOps));
  for (const Completion& s : v) EXPECT_TRUE(s.ok()) << describe(s);
  // The fabric did repeat requests to the target, which dropped them.
  EXPECT_GT(target.delta(RHN_CNT_DUPLICATES), 0u);
  EXPECT_EQ(load32(word, 0), (1u << kOps) - 1);
  EXPECT_EQ(word.buf.load64(8), uint64_t(kOps));
  for (int i = 0; i < kOps; ++i)
    EXPECT_EQ(result.buf.load64(size_t(i) * 8), uint64_t(i));
}

// Two QPs on two nodes hammering one 32-bit and one 64-bit word: the
// target serializes them, the sums are exact and every fetched value is
// different.
TEST(AtomicExtShared, TwoQpsHammeringOneWordSumExactly) {
  SimCluster c(nodes(3));
  ASSERT_TRUE(c.all_up());
  auto ctx_b = c.node(1).open_context();
  ASSERT_TRUE(ctx_b->ok());
  auto cq_b = ctx_b->create_cq(8);
  ASSERT_TRUE(cq_b);
  Region word = make_region(*ctx_b, 64, kAllAccess, 0, 0);
  struct Side {
    std::unique_ptr<SimContext> ctx;
    std::unique_ptr<SimCq> cq;
    std::unique_ptr<SimQp> qp, peer;
    Region result;
  };
  constexpr int kEach = 100;
  std::vector<Side> sides(2);
  for (int s = 0; s < 2; ++s) {
    const uint16_t node = s == 0 ? 0 : 2;
    Side& x = sides[size_t(s)];
    x.ctx = c.node(node).open_context();
    x.cq = x.ctx->create_cq(9);
    QpInit qi;
    qi.send_cq = x.cq.get();
    x.qp = x.ctx->create_qp(qi);
    QpInit bi;
    bi.send_cq = cq_b.get();
    x.peer = ctx_b->create_qp(bi);
    ASSERT_TRUE(x.qp && x.peer);
    ASSERT_TRUE(connect_rc(*x.qp, 1, x.peer->qpn()));
    ASSERT_TRUE(connect_rc(*x.peer, node, x.qp->qpn()));
    x.result = make_region(*x.ctx, 4 * kEach, kAllAccess, 0, 0);
  }
  for (int i = 0; i < kEach; ++i)
    for (int s = 0; s < 2; ++s) {
      Side& x = sides[size_t(s)];
      ASSERT_TRUE(x.qp->post_send(
          aop_wr(uint64_t(i), RHN_AOP_ADD | RHN_AOP_F_32, word.va(0),
                 word.key(), 3, 0, x.result.sge(size_t(i) * 4, 4))));
      ASSERT_TRUE(x.qp->post_send(aop_wr(uint64_t(1000 + i),
                                         RHN_AOP_ADD | RHN_AOP_F_NO_FETCH,
                                         word.va(8), word.key(), 1ull << 33)));
    }
  std::vector<bool> seen(2 * kEach, false);
  for (int s = 0; s < 2; ++s) {
    Side& x = sides[size_t(s)];
    const auto v = c.wait_cqes(*x.cq, 2 * kEach, 5'000'000'000);
    ASSERT_EQ(v.size(), size_t(2 * kEach));
    for (const Completion& k : v) ASSERT_TRUE(k.ok()) << describe(k);
    for (int i = 0; i < kEach; ++i) {
      const uint32_t got = load32(x.result, size_t(i) * 4);
      ASSERT_EQ(got % 3, 0u);
      ASSERT_LT(got / 3, uint32_t(2 * kEach));
      EXPECT_FALSE(seen[got / 3]) << "value " << got << " fetched twice";
      seen[got / 3] = true;
    }
  }
  EXPECT_EQ(load32(word, 0), uint32_t(3 * 2 * kEach));
  EXPECT_EQ(load32(word, 4), 0u);
  EXPECT_EQ(word.buf.load64(8), uint64_t(2 * kEach) << 33);
}

}  // namespace
}  // namespace rhinet::test
