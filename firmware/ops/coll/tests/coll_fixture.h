// SPDX-License-Identifier: BSD-2-Clause
// The collectives tests' fixture and reference (test_coll.cc,
// test_coll_switch.cc): a communicator's ranks on simulated nodes and the
// results a collective must give.
#pragma once
#include <cmath>
#include <random>

#include "core/crc32c.h"
#include "replay.h"
#include "test_helpers.h"
#include "transport/packet.h"

namespace rhinet::test {
namespace {

struct Rank {
  DatagramNode d;
  uint16_t node = 0;
  uint16_t rank = 0;
  SimQp& qp() { return *d.qp; }
  SimCq& cq() { return *d.cq; }
};

// Where a rank's buffer holds what: its operand, its result, the member
// list.
struct Layout {
  size_t len = 0;
  size_t send() const { return 0; }
  size_t recv() const { return len; }
  size_t members() const { return 2 * len; }
};

constexpr uint8_t kPoison = 0xee;

[[maybe_unused]] uint32_t type_size(uint8_t type) {
  return type == RHN_COLL_INT64 || type == RHN_COLL_UINT64 ||
                 type == RHN_COLL_DOUBLE
             ? 8
             : 4;
}

// Element i of rank r's operand, as the type's bytes. Integers are spread
// over all their bits (the bitwise ops see every bit); floats are small
// integers of either sign.
[[maybe_unused]] uint64_t element(uint8_t type, uint32_t r, uint32_t i,
                                  uint64_t salt) {
  uint64_t x = (uint64_t{r} << 32 | i) * 0x9e3779b97f4a7c15ull + salt;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  const int32_t small = static_cast<int32_t>(x % 2001) - 1000;
  switch (type) {
    case RHN_COLL_FLOAT: {
      const float f = static_cast<float>(small);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case RHN_COLL_DOUBLE: {
      const double f = small;
      uint64_t b;
      std::memcpy(&b, &f, 8);
      return b;
    }
    case RHN_COLL_INT32:
    case RHN_COLL_UINT32:
      return static_cast<uint32_t>(x);
    default:
      return x;
  }
}

template <typename T>
T fold(uint8_t reduce, T a, T b) {
  switch (reduce) {
    case RHN_COLL_SUM:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(std::make_unsigned_t<T>(a) +
                              std::make_unsigned_t<T>(b));
      else
        return a + b;
    case RHN_COLL_MIN:
      return std::min(a, b);
    case RHN_COLL_MAX:
      return std::max(a, b);
    default:
      if constexpr (std::is_integral_v<T>) {
        if (reduce == RHN_COLL_BAND) return a & b;
        if (reduce == RHN_COLL_BOR) return a | b;
        return a ^ b;
      }
      return a;
  }
}

template <typename T>
uint64_t fold_bits(uint8_t reduce, uint64_t a, uint64_t b) {
  T x, y;
  std::memcpy(&x, &a, sizeof(T));
  std::memcpy(&y, &b, sizeof(T));
  const T r = fold<T>(reduce, x, y);
  uint64_t out = 0;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

[[maybe_unused]] uint64_t fold_any(uint8_t type, uint8_t reduce, uint64_t a,
                                   uint64_t b) {
  switch (type) {
    case RHN_COLL_INT32:
      return fold_bits<int32_t>(reduce, a, b);
    case RHN_COLL_UINT32:
      return fold_bits<uint32_t>(reduce, a, b);
    case RHN_COLL_INT64:
      return fold_bits<int64_t>(reduce, a, b);
    case RHN_COLL_UINT64:
      return fold_bits<uint64_t>(reduce, a, b);
    case RHN_COLL_FLOAT:
      return fold_bits<float>(reduce, a, b);
    default:
      return fold_bits<double>(reduce, a, b);
  }
}

[[maybe_unused]] std::vector<uint8_t> operand(uint8_t type, uint32_t r,
                                              size_t len, uint64_t salt) {
  std::vector<uint8_t> v(len);
  const uint32_t sz = type_size(type);
  for (uint32_t i = 0; i * sz < len; i++) {
    const uint64_t e = element(type, r, i, salt);
    std::memcpy(v.data() + size_t{i} * sz, &e, sz);
  }
  return v;
}

[[maybe_unused]] std::vector<uint8_t> reference(uint8_t type, uint8_t reduce,
                                                uint32_t nranks, size_t len,
                                                uint64_t salt) {
  std::vector<uint8_t> acc = operand(type, 0, len, salt);
  const uint32_t sz = type_size(type);
  for (uint32_t r = 1; r < nranks; r++) {
    for (uint32_t i = 0; i * sz < len; i++) {
      uint64_t a = 0;
      std::memcpy(&a, acc.data() + size_t{i} * sz, sz);
      const uint64_t b = element(type, r, i, salt);
      const uint64_t f = fold_any(type, reduce, a, b);
      std::memcpy(acc.data() + size_t{i} * sz, &f, sz);
    }
  }
  return acc;
}

[[maybe_unused]] bool failed_with(const Completion& x, uint8_t status,
                                  uint8_t syndrome) {
  return x.status == status && x.vendor_err == syndrome;
}

constexpr uint32_t kComm = RHN_AREA_KEY(0, 7);

struct CollSpec {
  uint8_t op = RHN_COLL_ALLREDUCE;
  uint8_t reduce = RHN_COLL_SUM;
  uint8_t type = RHN_COLL_INT64;
  uint32_t len = 1024;
  uint16_t root = 0;
  uint8_t radix = 0;
  uint16_t seg = 0;
  bool in_place = false;
  bool in_switch = false;  // RHN_COLL_F_IN_SWITCH
  uint32_t comm = kComm;
  uint64_t salt = 1;
};

class Coll : public ::testing::Test {
 protected:
  void start(size_t nodes, size_t memory = 16u << 20,
             std::function<void(uint16_t, fw::EngineConfig&)> tweak = {}) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = memory;
    cfg.tweak = std::move(tweak);
    ranks.clear();  // they belong to the old cluster
    c.reset();
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  // per_node ranks on each of `nodes` nodes; rank r on node r / per_node,
  // or with interleave on node r % nodes (node order then differs from
  // rank order).
  void make_ranks(size_t nodes, size_t per_node, size_t max_len,
                  bool interleave = false) {
    ranks.clear();
    const size_t n = nodes * per_node;
    lay.len = max_len;
    for (size_t r = 0; r < n; r++) {
      Rank k;
      k.rank = static_cast<uint16_t>(r);
      k.node = static_cast<uint16_t>(interleave ? r % nodes : r / per_node);
      k.d = make_datagram_node(
          *c, k.node, RHN_QP_ENDPOINT, 0,
          {.cq_log_depth = 8, .buf_bytes = 2 * max_len + 8 * n + 64});
      ASSERT_TRUE(k.d.qp) << "rank " << r;
      ranks.push_back(std::move(k));
    }
    write_members();
  }
  // Every rank's copy of the member list.
  void write_members() {
    for (Rank& k : ranks)
      for (const Rank& m : ranks) {
        rhn_mcast_dest d{};
        d.node = m.node;
        d.qpn = m.d.qp->qpn();
        k.d.buf.buf.write(lay.members() + 8u * m.rank, &d, 8);
      }
  }
  SendWr wr_for(const Rank& k, const CollSpec& s, uint64_t wr_id = 1) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = RHN_OP_COLLECTIVE;
    wr.flags = RHN_WQE_F_SIGNALED;
    wr.remote_key = s.comm;
    rhn_wqe_coll& x = wr.coll;
    x.op = s.op;
    x.reduce = s.reduce;
    x.type = s.type;
    x.radix = s.radix;
    x.rank = k.rank;
    x.root = s.root;
    x.nranks = static_cast<uint16_t>(ranks.size());
    x.seg_size = s.seg;
    x.length = s.len;
    x.send_addr = k.d.buf.va(lay.send());
    x.send_lkey = k.d.buf.key();
    x.recv_addr = k.d.buf.va(s.in_place ? lay.send() : lay.recv());
    x.recv_lkey = k.d.buf.key();
    x.members_addr = k.d.buf.va(lay.members());
    x.members_lkey = k.d.buf.key();
    x.flags = s.in_switch ? RHN_COLL_F_IN_SWITCH : 0;
    return wr;
  }
  // Writes the operands and poisons the results.
  void prepare(const CollSpec& s) {
    for (Rank& k : ranks) {
      const auto v = operand(s.type, k.rank, s.len, s.salt);
      if (!v.empty()) k.d.buf.buf.write(lay.send(), v.data(), v.size());
      if (!s.in_place) {
        std::vector<uint8_t> poison(s.len, kPoison);
        if (!poison.empty())
          k.d.buf.buf.write(lay.recv(), poison.data(), poison.size());
      }
    }
  }
  std::vector<uint8_t> result(const Rank& k, const CollSpec& s) {
    return k.d.buf.buf.bytes(s.in_place ? lay.send() : lay.recv(), s.len);
  }
  // Every rank posts `s`, but those `skip` names.
  void post_each(const CollSpec& s,
                 const std::function<bool(const Rank&)>& skip = {},
                 uint64_t wr_id = 1) {
    for (Rank& k : ranks)
      if (!skip || !skip(k)) {
        ASSERT_TRUE(k.qp().post_send(wr_for(k, s, wr_id)));
      }
  }
  // Its process exits: the kernel destroys its endpoint.
  void destroy_endpoint(Rank& k) {
    ASSERT_TRUE(
        k.d.ctx->driver()
            .destroy(RHN_ADMIN_DESTROY_QP, k.d.ctx->index(), k.qp().qpn())
            .ok());
  }
  // Node 3 dies while `s` is under way (some segments through, not all):
  // every rank elsewhere fails with MEMBER_LOST; none hangs.
  void node_3_dies_mid_collective(const CollSpec& s) {
    prepare(s);
    post_each(s);
    ASSERT_TRUE(c->run_until(
        [&] { return c->node(0).counter(RHN_CNT_COLL_SEGMENTS) >= 4; },
        100'000'000));
    ASSERT_LT(c->node(0).counter(RHN_CNT_COLL_SEGMENTS), 40u);
    c->fabric().set_link(3, false);
    expect_each_fails(RHN_SYN_MEMBER_LOST,
                      [](const Rank& k) { return k.node == 3; });
  }
  // Every rank posts `s` (those in `late` only after `delay_ns`) and
  // waits; returns each rank's completion.
  std::vector<Completion> run(const CollSpec& s,
                              const std::vector<uint16_t>& late = {},
                              uint64_t delay_ns = 0,
                              uint64_t timeout = 2'000'000'000) {
    prepare(s);
    auto is_late = [&](uint16_t r) {
      return std::find(late.begin(), late.end(), r) != late.end();
    };
    for (Rank& k : ranks)
      if (!is_late(k.rank)) {
        EXPECT_TRUE(k.qp().post_send(wr_for(k, s)));
      }
    if (!late.empty()) {
      c->run_for(delay_ns);
      for (Rank& k : ranks)
        if (is_late(k.rank)) {
          EXPECT_TRUE(k.qp().post_send(wr_for(k, s)));
        }
    }
    const uint64_t t0 = c->clock().now();
    std::vector<Completion> out;
    for (Rank& k : ranks) out.push_back(wait_one(*c, k.cq(), timeout));
    last_run_ns = c->clock().now() - t0;
    return out;
  }
  // Checks what every rank's result buffer holds after a successful `s`.
  void check(const CollSpec& s) {
    const uint32_t n = static_cast<uint32_t>(ranks.size());
    std::vector<uint8_t> want;
    if (s.op == RHN_COLL_BCAST)
      want = operand(s.type, s.root, s.len, s.salt);
    else if (s.op != RHN_COLL_BARRIER)
      want = reference(s.type, s.reduce, n, s.len, s.salt);
    const std::vector<uint8_t> poison(s.len, kPoison);
    for (const Rank& k : ranks) {
      SCOPED_TRACE("rank " + std::to_string(k.rank));
      const auto got = result(k, s);
      const bool gets = s.op == RHN_COLL_ALLREDUCE ||
                        (s.op == RHN_COLL_REDUCE && k.rank == s.root) ||
                        (s.op == RHN_COLL_BCAST && k.rank != s.root);
      if (s.op == RHN_COLL_BARRIER) continue;
      if (gets) {
        if (got != want) {
          size_t at = 0;
          while (at < got.size() && got[at] == want[at]) at++;
          ADD_FAILURE() << "result differs from byte " << at << " of " << s.len;
          return;
        }
      } else if (!s.in_place) {
        EXPECT_EQ(got, poison) << "a rank without a result was written";
      }
    }
  }
  void run_and_check(const CollSpec& s, const std::vector<uint16_t>& late = {},
                     uint64_t delay_ns = 0) {
    const auto v = run(s, late, delay_ns);
    for (size_t i = 0; i < v.size(); i++) {
      ASSERT_TRUE(v[i].ok()) << "rank " << i << ": " << describe(v[i]);
      EXPECT_EQ(v[i].opcode, RHN_CQE_OP_COLLECTIVE);
    }
    check(s);
  }
  // Every rank (but those `skip` names) completes its collective with
  // REM_OP_ERR and `syndrome`, within 5 s of fabric time.
  void expect_each_fails(uint8_t syndrome,
                         const std::function<bool(const Rank&)>& skip = {}) {
    for (Rank& k : ranks) {
      if (skip && skip(k)) continue;
      Completion x = wait_one(*c, k.cq(), 5'000'000'000ull);
      EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, syndrome))
          << "rank " << k.rank << ": " << describe(x);
    }
  }
  uint64_t total(unsigned counter) {
    uint64_t t = 0;
    for (size_t i = 0; i < c->size(); i++) t += c->node(i).counter(counter);
    return t;
  }

  std::unique_ptr<SimCluster> c;
  std::vector<Rank> ranks;
  Layout lay;
  uint64_t last_run_ns = 0;  // fabric time from the last post to the end
};

const uint8_t kTypes[] = {RHN_COLL_INT32,  RHN_COLL_UINT32, RHN_COLL_INT64,
                          RHN_COLL_UINT64, RHN_COLL_FLOAT,  RHN_COLL_DOUBLE};

}  // namespace
}  // namespace rhinet::test
