// SPDX-License-Identifier: BSD-2-Clause
// Remote increments of trigger counters (RHN_OP_TRIGGER_ADD): two engines
// on the simulated fabric, node 0's RC QP adding to counters of node 1
// (Documentation/hardware/triggered.md, "Remote increments").
#include <cstring>
#include <optional>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kKey = 0x5eed1234;

ClusterConfig two_nodes() {
  ClusterConfig cfg;
  cfg.nodes = 2;
  return cfg;
}

// A remote add of `addend` to (handle, key); the value before the add
// goes to `result` if given.
SendWr add_wr(uint64_t wr_id, uint32_t handle, uint32_t key, uint64_t addend,
              std::optional<Sge> result = std::nullopt) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = RHN_OP_TRIGGER_ADD;
  wr.compare_add = addend;
  wr.swap = handle | uint64_t{key} << 32;
  if (result) wr.sges.push_back(*result);
  return wr;
}

class RemoteTrigger : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(two_nodes());
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1, options());
    ASSERT_TRUE(p.ok);
  }
  virtual RcOptions options() const { return {}; }
  SimContext& A() { return *p.ctx_a; }
  SimContext& B() { return *p.ctx_b; }
  // A counter of B's context (or of `ctx`) holding `value`.
  uint32_t counter(uint64_t value, uint32_t key = kKey,
                   SimContext* ctx = nullptr) {
    SimContext& x = ctx ? *ctx : B();
    const AdminResult r = x.driver().create_trigger(x.index(), value, key);
    EXPECT_TRUE(r.ok()) << int(r.status);
    return r.result;
  }
  uint64_t value_of(uint32_t handle, SimContext* ctx = nullptr) {
    SimContext& x = ctx ? *ctx : B();
    uint64_t v = ~uint64_t{0};
    EXPECT_TRUE(x.driver().query_trigger(x.index(), handle, &v).ok());
    return v;
  }
  // A WRITE on B's QP of `len` bytes from `src` to A's `dst`, parked on
  // `handle` until it holds `threshold`.
  void park_write(uint64_t wr_id, uint32_t handle, uint64_t threshold,
                  const Region& src, const Region& dst, uint32_t len) {
    SendWr wr =
        rdma_wr(wr_id, RHN_OP_WRITE, {src.sge(0, len)}, dst.va(), dst.key());
    wr.xflags = RHN_WQE_X_TRIGGERED;
    wr.trigger.counter = handle;
    wr.trigger.threshold = threshold;
    ASSERT_TRUE(p.qp_b->post_send(wr));
  }
  // Refused at the target: REM_ACCESS_ERR naming the remote trigger.
  void expect_refused(const Completion& s) {
    EXPECT_EQ(s.status, RHN_CQE_REM_ACCESS_ERR) << describe(s);
    EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_REMOTE_TRIGGER))
        << describe(s);
    EXPECT_EQ(s.opcode, RHN_CQE_OP_TRIGGER_ADD) << describe(s);
  }
  std::unique_ptr<SimCluster> c;  // destroyed after the pair's queues
  RcPair p;
};

TEST_F(RemoteTrigger, AnAddFiresAWriteParkedOnThePeer) {
  const uint32_t h = counter(0);
  Region src = make_region(B(), 512, kAllAccess, 21);
  Region dst = make_region(A(), 512, kAllAccess, 0, 0);
  Region result = make_region(A(), 64, kAllAccess, 0, 0xee);
  park_write(7, h, 5, src, dst, 512);
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_b->poll().empty());  // parked
  CounterSnap target(c->node(1));
  // Two adds: the first leaves it short, the second reaches 5.
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 3, result.sge(0, 8))));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(2, h, kKey, 2, result.sge(8, 8))));
  const auto v = c->wait_cqes(*p.cq_a, 2);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  for (const Completion& s : v) {
    EXPECT_TRUE(s.ok()) << describe(s);
    EXPECT_EQ(s.opcode, RHN_CQE_OP_TRIGGER_ADD);
  }
  EXPECT_EQ(v[0].wr_id, 1u);
  EXPECT_EQ(v[1].wr_id, 2u);
  // Each SGE holds the value before its add; nothing past them.
  uint64_t before[2];
  std::memcpy(before, result.buf.bytes(0, 16).data(), sizeof(before));
  EXPECT_EQ(before[0], 0u);
  EXPECT_EQ(before[1], 3u);
  EXPECT_EQ(result.buf.bytes(16, 8), std::vector<uint8_t>(8, 0xee));
  const Completion w = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(w.wr_id, 7u);
  EXPECT_EQ(w.opcode, RHN_CQE_OP_WRITE);
  EXPECT_EQ(dst.buf.bytes(), pattern(21, 512));
  EXPECT_EQ(value_of(h), 5u);
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_FIRED), 1u);
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 0u);
}

TEST_F(RemoteTrigger, WithoutAnSgeTheAddCompletesAndWritesNothing) {
  const uint32_t h = counter(40);
  Region scratch = make_region(A(), 64, kAllAccess, 0, 0x5a);
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 2)));
  const Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.byte_len, 0u);
  EXPECT_EQ(value_of(h), 42u);
  EXPECT_EQ(scratch.buf.bytes(), std::vector<uint8_t>(64, 0x5a));
}

TEST_F(RemoteTrigger, AWrongKeyIsRefusedCountedAndAddsNothing) {
  const uint32_t h = counter(0);
  Region src = make_region(B(), 64, kAllAccess, 22);
  Region dst = make_region(A(), 64, kAllAccess, 0, 0);
  Region result = make_region(A(), 8, kAllAccess, 0, 0xee);
  park_write(7, h, 1, src, dst, 64);
  CounterSnap target(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey ^ 1, 1, result.sge(0, 8))));
  expect_refused(wait_one(*c, *p.cq_a));
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 1u);
  EXPECT_EQ(value_of(h), 0u);
  EXPECT_EQ(result.buf.bytes(), std::vector<uint8_t>(8, 0xee));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_b->poll().empty());  // still parked
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_FIRED), 0u);
}

TEST_F(RemoteTrigger, ADestroyedCountersHandleNamesNothing) {
  const uint32_t old = counter(0);
  ASSERT_TRUE(
      B().driver().destroy(RHN_ADMIN_DESTROY_TRIGGER, B().index(), old).ok());
  // The same entry given again: a new generation, the same key.
  const uint32_t now = counter(0);
  ASSERT_EQ(now & RHN_TRIGGER_INDEX_MASK, old & RHN_TRIGGER_INDEX_MASK);
  ASSERT_NE(now, old);
  CounterSnap target(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, old, kKey, 1)));
  expect_refused(wait_one(*c, *p.cq_a));
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 1u);
  EXPECT_EQ(value_of(now), 0u);
}

TEST_F(RemoteTrigger, AnotherContextsCounterIsOutOfReach) {
  // A counter of another process on the target node, whose handle and
  // key the requester knows: the request reaches B's context only.
  auto other = c->node(1).open_context();
  ASSERT_TRUE(other->ok());
  const uint32_t h = counter(0, kKey, other.get());
  CounterSnap target(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 1)));
  expect_refused(wait_one(*c, *p.cq_a));
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 1u);
  EXPECT_EQ(value_of(h, other.get()), 0u);
}

TEST_F(RemoteTrigger, TheCounterDestroyedWhileTheAddIsInFlight) {
  const uint32_t h = counter(0);
  Region src = make_region(B(), 64, kAllAccess, 23);
  Region dst = make_region(A(), 64, kAllAccess, 0, 0);
  park_write(7, h, 1, src, dst, 64);
  // The first request is lost; the counter goes before it is sent again.
  int lost = 0;
  c->fabric().drop = [&](size_t src_node, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (src_node == 0 && o && o->op.opcode == RHN_WOP_TRIGGER_ADD && !lost)
      return ++lost, true;
    return false;
  };
  CounterSnap target(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 1)));
  ASSERT_TRUE(c->run_until([&] { return lost == 1; }, 10'000'000));
  ASSERT_TRUE(
      B().driver().destroy(RHN_ADMIN_DESTROY_TRIGGER, B().index(), h).ok());
  // The parked WRITE ends with its counter.
  const Completion w = wait_one(*c, *p.cq_b);
  EXPECT_EQ(w.status, RHN_CQE_WR_FLUSH_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_TRIGGER_GONE)) << describe(w);
  expect_refused(wait_one(*c, *p.cq_a, 1'000'000'000));
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 1u);
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(64, 0));
}

TEST_F(RemoteTrigger, LostRequestsAndAnswersAddOnce) {
  const uint32_t h = counter(100);
  Region result = make_region(A(), 8, kAllAccess, 0, 0);
  int lost_requests = 0, lost_answers = 0, requests = 0;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (!o) return false;
    if (src == 0 && o->op.opcode == RHN_WOP_TRIGGER_ADD) {
      requests++;
      if (lost_requests < 1) return ++lost_requests, true;
    }
    if (src == 1 && o->op.opcode == RHN_WOP_TRIGGER_RESP && lost_answers < 2)
      return ++lost_answers, true;
    return false;
  };
  CounterSnap na(c->node(0)), nb(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 7, result.sge(0, 8))));
  const Completion s = wait_one(*c, *p.cq_a, 1'000'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(lost_requests, 1);
  EXPECT_EQ(lost_answers, 2);
  EXPECT_GE(requests, 2);                        // the request did go again
  EXPECT_GE(nb.delta(RHN_CNT_RETRANSMITS), 2u);  // and so did the answer
  EXPECT_EQ(value_of(h), 107u);
  uint64_t before;
  std::memcpy(&before, result.buf.bytes(0, 8).data(), 8);
  EXPECT_EQ(before, 100u);
}

TEST_F(RemoteTrigger, ManyAddsOnALossyFabricAddExactlyOnceEach) {
  make_lossy(*c, 37);
  const uint32_t h = counter(0);
  constexpr uint32_t kAdds = 64;
  Region result = make_region(A(), 8 * kAdds, kAllAccess, 0, 0);
  Region src = make_region(B(), 256, kAllAccess, 24);
  Region dst = make_region(A(), 256, kAllAccess, 0, 0);
  uint64_t want = 0;
  for (uint32_t i = 0; i < kAdds; i++) want += i + 1;
  park_write(99, h, want, src, dst, 256);  // fires with the last add only
  for (uint32_t i = 0; i < kAdds; i++)
    ASSERT_TRUE(
        p.qp_a->post_send(add_wr(i, h, kKey, i + 1, result.sge(8 * i, 8))));
  const auto v = c->wait_cqes(*p.cq_a, kAdds, 4'000'000'000);
  ASSERT_EQ(v.size(), kAdds) << describe(v);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < kAdds; i++) {
    EXPECT_TRUE(v[i].ok()) << describe(v[i]);
    EXPECT_EQ(v[i].wr_id, i);
    uint64_t before;
    std::memcpy(&before, result.buf.bytes(8 * i, 8).data(), 8);
    EXPECT_EQ(before, sum) << i;  // in order, each once
    sum += i + 1;
  }
  EXPECT_EQ(value_of(h), want);
  const Completion w = wait_one(*c, *p.cq_b, 1'000'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(w.wr_id, 99u);
  EXPECT_EQ(dst.buf.bytes(), pattern(24, 256));
}

TEST_F(RemoteTrigger, AResultSgeOtherThanEightBytesIsRefusedAtThePost) {
  const uint32_t h = counter(0);
  Region r = make_region(A(), 64, kAllAccess, 0, 0);
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 1, r.sge(0, 4))));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_LEN_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_LENGTH)) << describe(s);
  EXPECT_EQ(value_of(h), 0u);
}

// The decoder lets TRIGGER_ADD go without an SGE; FETCH_ADD still needs
// its one.
TEST_F(RemoteTrigger, AFetchAddStillNeedsItsResultSge) {
  Region target = make_region(B(), 64, kAllAccess, 0, 0);
  SendWr wr = rdma_wr(1, RHN_OP_FETCH_ADD, {}, target.va(), target.key());
  wr.compare_add = 1;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_LEN_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_LENGTH)) << describe(s);
  EXPECT_EQ(target.buf.bytes(), std::vector<uint8_t>(64, 0));
}

class RemoteTriggerOnUc : public RemoteTrigger {
  RcOptions options() const override {
    RcOptions uc;
    uc.type = RHN_QP_UC;
    return uc;
  }
};

TEST_F(RemoteTriggerOnUc, AnUnreliableQpCannotAdd) {
  const uint32_t h = counter(0);
  ASSERT_TRUE(p.qp_a->post_send(add_wr(1, h, kKey, 1)));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_QP_OP_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_OPCODE)) << describe(s);
  c->run_for(1'000'000);
  EXPECT_EQ(value_of(h), 0u);
}

TEST(RemoteTriggerUd, ADatagramQpCannotAdd) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x11);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x11);
  ASSERT_TRUE(a.qp && b.qp);
  const AdminResult r = b.ctx->driver().create_trigger(b.ctx->index(), 0, 1);
  ASSERT_TRUE(r.ok());
  SendWr wr = add_wr(1, r.result, 1, 1);
  wr.dst_node = 1;
  wr.dst_qpn = b.qp->qpn();
  wr.qkey = 0x11;
  uint64_t sent = 0;
  c.fabric().drop = [&](size_t, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (o && o->op.opcode == RHN_WOP_TRIGGER_ADD) sent++;
    return false;
  };
  ASSERT_TRUE(a.qp->post_send(wr));
  const Completion s = wait_one(c, *a.cq);
  EXPECT_EQ(s.status, RHN_CQE_LOC_QP_OP_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_OPCODE)) << describe(s);
  c.run_for(1'000'000);
  EXPECT_EQ(sent, 0u);
  uint64_t v = 1;
  ASSERT_TRUE(b.ctx->driver().query_trigger(b.ctx->index(), r.result, &v).ok());
  EXPECT_EQ(v, 0u);
}

// Endpoints: the request reaches the addressed endpoint's process, and
// only its counters.
TEST(RemoteTriggerEndpoint, TheAddressedEndpointsCountersOnly) {
  SimCluster c(two_nodes());
  ASSERT_TRUE(c.all_up());
  ContextEp a = make_context_ep(c, 0), b = make_context_ep(c, 1),
            other = make_context_ep(c, 1);
  ASSERT_TRUE(a.qp && b.qp && other.qp);
  const AdminResult mine =
      b.ctx->driver().create_trigger(b.ctx->index(), 1, kKey);
  const AdminResult theirs =
      other.ctx->driver().create_trigger(other.ctx->index(), 1, kKey);
  ASSERT_TRUE(mine.ok() && theirs.ok());
  Region result = make_region(*a.ctx, 8, kAllAccess, 0, 0);
  SendWr wr = add_wr(1, mine.result, kKey, 9, result.sge(0, 8));
  wr.dst_node = 1;
  wr.dst_qpn = b.qpn();
  ASSERT_TRUE(a.qp->post_send(wr));
  const Completion s = wait_one(c, *a.cq);
  ASSERT_TRUE(s.ok()) << describe(s);
  uint64_t v = 0;
  std::memcpy(&v, result.buf.bytes(0, 8).data(), 8);
  EXPECT_EQ(v, 1u);
  ASSERT_TRUE(
      b.ctx->driver().query_trigger(b.ctx->index(), mine.result, &v).ok());
  EXPECT_EQ(v, 10u);
  // The other process's counter through b's endpoint: refused; the
  // endpoint goes on (an endpoint is not moved to error by a remote
  // refusal).
  CounterSnap target(c.node(1));
  wr = add_wr(2, theirs.result, kKey, 9);
  wr.dst_node = 1;
  wr.dst_qpn = b.qpn();
  ASSERT_TRUE(a.qp->post_send(wr));
  const Completion r = wait_one(c, *a.cq);
  EXPECT_EQ(r.status, RHN_CQE_REM_ACCESS_ERR) << describe(r);
  EXPECT_EQ(r.vendor_err, uint32_t(RHN_SYN_BAD_REMOTE_TRIGGER)) << describe(r);
  EXPECT_EQ(target.delta(RHN_CNT_TRIGGER_REMOTE_REFUSED), 1u);
  ASSERT_TRUE(other.ctx->driver()
                  .query_trigger(other.ctx->index(), theirs.result, &v)
                  .ok());
  EXPECT_EQ(v, 1u);
  // Addressed to its own endpoint, the same counter takes the add.
  wr.wr_id = 3;
  wr.dst_qpn = other.qpn();
  ASSERT_TRUE(a.qp->post_send(wr));
  const Completion ok = wait_one(c, *a.cq);
  ASSERT_TRUE(ok.ok()) << describe(ok);
  ASSERT_TRUE(other.ctx->driver()
                  .query_trigger(other.ctx->index(), theirs.result, &v)
                  .ok());
  EXPECT_EQ(v, 10u);
}

}  // namespace
}  // namespace rhinet::test
