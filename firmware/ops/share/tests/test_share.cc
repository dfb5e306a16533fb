// SPDX-License-Identifier: BSD-2-Clause
// Shared regions: SUBSCRIBE to a home, updates multicast by each
// member's NIC to its directory, the join race (an update that reaches a
// newcomer before its data is refused and sent again after it, and one the
// home already folded into the data is not applied again), UNSUBSCRIBE,
// dead members and homes, bounded tables, bad input.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kQkey = 0x7200;
constexpr uint32_t kAreaId = 11;
constexpr size_t kAreaBytes = 64 * 1024;
constexpr size_t kRegionOff = 4096;  // the region inside the area
constexpr size_t kRegionLen = 16 * 1024;
constexpr size_t kSlice = 2048;  // each writer's own bytes of the region

// The wire bytes the tests look at in a frame.
uint8_t frame_type(std::span<const uint8_t> f) {
  return f.size() > 3 ? f[3] : 0;
}
uint16_t frame_dst(std::span<const uint8_t> f) {
  return uint16_t(f[4] | (f[5] << 8));
}
uint8_t wire_op(std::span<const uint8_t> f) {
  return f.size() > RHN_PKT_HDR_LEN ? f[RHN_PKT_HDR_LEN] : 0;
}
uint32_t fw_kind(std::span<const uint8_t> f) {
  uint32_t k = 0;
  if (f.size() >= RHN_PKT_HDR_LEN + 20)
    std::memcpy(&k, f.data() + RHN_PKT_HDR_LEN + 16, 4);
  return k;
}

class Share : public ::testing::Test {
 protected:
  void start(size_t nodes,
             std::function<void(uint16_t, fw::EngineConfig&)> tweak = {}) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 64u << 20;
    cfg.tweak = std::move(tweak);
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    for (size_t i = 0; i < nodes; i++) add_endpoint(uint16_t(i));
  }
  void add_endpoint(uint16_t node) {
    eps.push_back(make_datagram_node(
        *c, node, RHN_QP_ENDPOINT, kQkey,
        {.cq_log_depth = 12, .sq_log_depth = 8, .buf_bytes = kAreaBytes}));
    ASSERT_TRUE(eps.back().qp);
    ASSERT_TRUE(eps.back()
                    .ctx
                    ->register_area(kAreaId, eps.back().buf.mr,
                                    eps.back().buf.va(), kAreaBytes)
                    .ok());
    AdminResult t =
        c->node(node).driver->alloc_twin(eps.back().ctx->index(), kRegionLen);
    ASSERT_TRUE(t.ok());
    twins.push_back(t.result);
  }
  SendWr subscribe(size_t n, uint64_t wr_id, size_t home = 0) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_SUBSCRIBE,
                        {eps[n].buf.sge(kRegionOff, kRegionLen)}, kRegionOff,
                        kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = uint16_t(home);
    wr.dst_qpn = eps[home].qp->qpn();
    // TWIN: the data also becomes the member's twin, which its DIFF
    // updates compare with.
    wr.xfer_mode = RHN_XFER_TWIN;
    wr.xfer.twin = twins[n];
    return wr;
  }
  SendWr unsubscribe(uint64_t wr_id, size_t home = 0) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_UNSUBSCRIBE, {}, kRegionOff, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = uint16_t(home);
    wr.dst_qpn = eps[home].qp->qpn();
    return wr;
  }
  // Writer n changes its slice (version v: a header and log entry v),
  // then pushes the bytes that differ from its twin to every member.
  SendWr update(size_t n, uint64_t wr_id, uint32_t v, size_t slice) {
    const size_t at = kRegionOff + slice * kSlice;
    const uint32_t header = v * 0x01010101u + uint32_t(n);
    eps[n].buf.buf.write(at, &header, 4);
    const uint8_t entry = uint8_t(v * 7 + n + 1);
    eps[n].buf.buf.write(at + 4 + (v % (kSlice - 4)), &entry, 1);
    SendWr wr =
        rdma_wr(wr_id, RHN_OP_SHARE_UPDATE, {eps[n].buf.sge(at, kSlice)}, at,
                kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.xfer_mode = RHN_XFER_DIFF;
    wr.xfer.twin = twins[n];
    wr.xfer.twin_offset = slice * kSlice;
    return wr;
  }
  std::vector<uint8_t> region(size_t n) {
    return eps[n].buf.buf.bytes(kRegionOff, kRegionLen);
  }
  Completion done(size_t n, uint64_t timeout = 2'000'000'000) {
    return wait_one(*c, *eps[n].cq, timeout);
  }
  void join(size_t n) {
    ASSERT_TRUE(eps[n].qp->post_send(subscribe(n, 100 + n)));
    Completion w = done(n);
    ASSERT_TRUE(w.ok()) << describe(w);
    EXPECT_EQ(w.opcode, RHN_CQE_OP_SUBSCRIBE);
    EXPECT_EQ(w.byte_len, kRegionLen);
  }
  uint64_t counter(size_t n, unsigned idx) { return c->node(n).counter(idx); }

  std::unique_ptr<SimCluster> c;
  std::vector<DatagramNode> eps;
  std::vector<uint32_t> twins;
};

TEST_F(Share, AFourthJoinsDuringAStreamOfDiffUpdatesEveryoneEndsIdentical) {
  start(5);
  // The home's initial data: every member starts from it.
  auto initial = pattern(3, kRegionLen);
  eps[0].buf.buf.write(kRegionOff, initial.data(), initial.size());
  // ... and the home's twin matches it (its own DIFFs compare with it).
  for (size_t n = 1; n <= 3; n++) {
    join(n);
    EXPECT_EQ(region(n), initial) << "node " << n;
  }
  EXPECT_EQ(counter(1, RHN_CNT_SHARE_JOINS), 1u);
  std::vector<CounterSnap> snaps;
  for (size_t n = 0; n < 5; n++) snaps.emplace_back(c->node(n));
  // Writers 1..3 each own a slice; 30 rounds of one DIFF each, the newcomer
  // (node 4) joins at round 10 and writes its own slice from round 20.
  constexpr uint32_t kRounds = 30;
  uint64_t sent[5] = {};
  bool joined = false;
  for (uint32_t v = 0; v < kRounds; v++) {
    if (v == 10) {
      ASSERT_TRUE(eps[4].qp->post_send(subscribe(4, 999)));
    }
    std::vector<size_t> writers = {1, 2, 3};
    if (v >= 20) writers.push_back(4);
    for (size_t n : writers) {
      ASSERT_TRUE(eps[n].qp->post_send(update(n, v, v + 1, n)));
      sent[n]++;
    }
    for (size_t n : writers) {
      Completion w = done(n, 5'000'000'000);
      ASSERT_TRUE(w.ok()) << "node " << n << " round " << v << describe(w);
      EXPECT_EQ(w.opcode, RHN_CQE_OP_SHARE_UPDATE);
    }
    if (v >= 10 && !joined) {
      auto got = eps[4].cq->poll();
      if (!got.empty()) {
        ASSERT_TRUE(got[0].ok()) << describe(got[0]);
        EXPECT_EQ(got[0].opcode, RHN_CQE_OP_SUBSCRIBE);
        joined = true;
      }
    }
  }
  if (!joined) {
    ASSERT_TRUE(done(4).ok());
  }
  c->run_for(2'000'000);
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(region(n), region(0)) << "node " << n << " differs from home";
  // Every update was applied exactly once by every member that was in the
  // region when it was sent: nodes 0..3 take all of the others'.
  const uint64_t all = sent[1] + sent[2] + sent[3] + sent[4];
  EXPECT_EQ(snaps[0].delta(RHN_CNT_SHARE_UPDATES), all);
  for (size_t n = 1; n <= 3; n++)
    EXPECT_EQ(snaps[n].delta(RHN_CNT_SHARE_UPDATES), all - sent[n])
        << "node " << n;
  // The newcomer: what was not in its data, once (its own excluded).
  EXPECT_LE(snaps[4].delta(RHN_CNT_SHARE_UPDATES), all - sent[4]);
  EXPECT_EQ(snaps[4].delta(RHN_CNT_SHARE_JOINS), 1u);
  for (size_t n = 0; n < 5; n++)
    EXPECT_EQ(snaps[n].delta(RHN_CNT_SHARE_ERRORS), 0u) << "node " << n;
}

// The home's data to the newcomer is held back (the switch drops it, the
// home's channel sends it again): a member's update reaches the newcomer
// first, is refused, and is applied once after the data.
TEST_F(Share, AnUpdateBeforeTheDataIsRefusedThenResentAndAppliedOnce) {
  start(4);
  join(1);
  join(2);
  bool hold = true;
  size_t held = 0;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    if (hold && src == 0 && frame_type(f) == RHN_PKT_DATA &&
        frame_dst(f) == 3 && wire_op(f) == RHN_WOP_SHARE_DATA) {
      held++;
      return true;
    }
    return false;
  };
  CounterSnap n3(c->node(3));
  ASSERT_TRUE(eps[3].qp->post_send(subscribe(3, 7)));
  ASSERT_TRUE(c->run_until([&] { return held > 0; }, 100'000'000));
  // Node 1 already counts node 3 as a member: its update goes to it too.
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 8, 1, 1)));
  ASSERT_TRUE(c->run_until([&] { return n3.delta(RHN_CNT_SHARE_REFUSALS) > 0; },
                           100'000'000));
  EXPECT_TRUE(eps[3].cq->poll().empty()) << "no data yet";
  hold = false;
  Completion s = done(3);
  ASSERT_TRUE(s.ok()) << describe(s);
  Completion u = done(1);
  ASSERT_TRUE(u.ok()) << describe(u);
  c->run_for(1'000'000);
  EXPECT_EQ(n3.delta(RHN_CNT_SHARE_UPDATES), 1u) << "applied once";
  EXPECT_EQ(n3.delta(RHN_CNT_SHARE_SKIPPED), 0u);
  for (size_t n = 1; n < 4; n++) {
    auto a = region(n), b = region(0);
    size_t first = 0;
    while (first < a.size() && a[first] == b[first]) first++;
    EXPECT_EQ(first, a.size())
        << "node " << n << " differs first at " << first << ": "
        << int(a[first]) << " vs " << int(b[first]);
  }
}

// An update that reached the home before the data was read is in the data:
// sent again to the newcomer after its refusal, it is skipped, so it does
// not undo a later update of the same bytes that is in the data too.
TEST_F(Share, AnUpdateTheHomeFoldedIntoTheDataIsNotAppliedAgain) {
  start(4);
  join(1);
  join(2);
  // Node 2 does not hear of the newcomer until released.
  bool hold = true;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    return hold && src == 0 && frame_type(f) == RHN_PKT_DATA &&
           frame_dst(f) == 2 && wire_op(f) == RHN_WOP_FW &&
           fw_kind(f) == RHN_FW_SHARE_ADD;
  };
  CounterSnap n3(c->node(3));
  ASSERT_TRUE(eps[3].qp->post_send(subscribe(3, 7)));
  ASSERT_TRUE(c->run_until([&] { return c->fabric().counters().lost > 0; },
                           100'000'000));
  c->run_for(200'000);  // node 1 has added node 3
  // Node 1 writes byte X = 'a' (to 0, 2 and the joining 3, which refuses);
  // then node 2, not knowing node 3 yet, writes X = 'b' (to 0 and 1).
  const size_t x = kRegionOff + 5000;
  const uint8_t a = 'a', b = 'b';
  eps[1].buf.buf.write(x, &a, 1);
  SendWr ua = rdma_wr(1, RHN_OP_SHARE_UPDATE, {eps[1].buf.sge(x, 1)}, x,
                      kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  ASSERT_TRUE(eps[1].qp->post_send(ua));
  ASSERT_TRUE(c->run_until(
      [&] {
        return eps[0].buf.buf.bytes(x, 1)[0] == a &&
               eps[2].buf.buf.bytes(x, 1)[0] == a;
      },
      100'000'000));
  EXPECT_GT(n3.delta(RHN_CNT_SHARE_REFUSALS), 0u);
  eps[2].buf.buf.write(x, &b, 1);
  SendWr ub = rdma_wr(2, RHN_OP_SHARE_UPDATE, {eps[2].buf.sge(x, 1)}, x,
                      kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  ASSERT_TRUE(eps[2].qp->post_send(ub));
  ASSERT_TRUE(c->run_until([&] { return eps[0].buf.buf.bytes(x, 1)[0] == b; },
                           100'000'000));
  hold = false;  // node 2 adds node 3; the home sends the data with 'b'
  Completion wb = done(2);
  ASSERT_TRUE(wb.ok()) << describe(wb);
  Completion s = done(3);
  ASSERT_TRUE(s.ok()) << describe(s);
  Completion wa = done(1);
  ASSERT_TRUE(wa.ok()) << describe(wa);
  c->run_for(1'000'000);
  EXPECT_EQ(eps[3].buf.buf.bytes(x, 1)[0], b) << "node 1's 'a' came again";
  EXPECT_EQ(n3.delta(RHN_CNT_SHARE_SKIPPED), 1u);
  EXPECT_EQ(n3.delta(RHN_CNT_SHARE_UPDATES), 0u);
  for (size_t n = 1; n < 4; n++) EXPECT_EQ(region(n), region(0)) << n;
}

TEST_F(Share, ThroughALossyFabricWithAJoinAndALeaveDuringUpdates) {
  start(5);
  make_lossy(*c, 16);
  join(1);
  join(2);
  join(3);
  uint64_t v = 0;
  auto round = [&](std::vector<size_t> writers) {
    v++;
    for (size_t n : writers)
      ASSERT_TRUE(eps[n].qp->post_send(update(n, v, uint32_t(v), n)));
    for (size_t n : writers) {
      Completion w = done(n, 20'000'000'000);
      ASSERT_TRUE(w.ok()) << "node " << n << describe(w);
    }
  };
  for (int i = 0; i < 5; i++) round({1, 2, 3});
  // Node 3 leaves while node 1 and 2 update; node 4 joins.
  ASSERT_TRUE(eps[3].qp->post_send(unsubscribe(50)));
  ASSERT_TRUE(eps[4].qp->post_send(subscribe(4, 51)));
  for (int i = 0; i < 5; i++) round({1, 2});
  Completion l = done(3, 20'000'000'000);
  ASSERT_TRUE(l.ok()) << describe(l);
  EXPECT_EQ(l.opcode, RHN_CQE_OP_UNSUBSCRIBE);
  Completion j = done(4, 20'000'000'000);
  ASSERT_TRUE(j.ok()) << describe(j);
  const auto left = region(3);
  for (int i = 0; i < 5; i++) round({1, 2, 4});
  c->run_for(5'000'000);
  for (size_t n : {1, 2, 4}) EXPECT_EQ(region(n), region(0)) << "node " << n;
  EXPECT_EQ(region(3), left) << "nothing reaches a member that left";
  EXPECT_NE(region(3), region(0));
}

TEST_F(Share, AnEndpointDestroyedWhileSubscribedLeavesTheDirectories) {
  start(4);
  join(1);
  join(2);
  join(3);
  eps[2].qp.reset();  // destroyed without an UNSUBSCRIBE
  c->run_for(2'000'000);
  CounterSnap n2(c->node(2));
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 1, 1, 1)));
  Completion w = done(1);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(region(3), region(0));
  // Nothing was sent to node 2: the home told node 1 it left.
  EXPECT_EQ(n2.delta(RHN_CNT_SHARE_SKIPPED), 0u);
  EXPECT_EQ(n2.delta(RHN_CNT_NO_QP_REQUESTS), 0u);
}

TEST_F(Share, ASharerThatDiesMidJoinGivesErrorsNotAHang) {
  start(4);
  join(1);
  join(2);
  c->fabric().set_link(2, false);  // node 2 dies
  ASSERT_TRUE(eps[3].qp->post_send(subscribe(3, 7)));
  // The home finds it dead, drops it, and the join goes on without it.
  Completion s = done(3, 60'000'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(region(3), region(0));
  // Node 1 still counted node 2 until the home told it: an update either
  // skips it or fails for it; nothing hangs, and the next one works.
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 1, 1, 1)));
  Completion u = done(1, 60'000'000'000);
  EXPECT_TRUE(u.ok() || u.status == RHN_CQE_RETRY_EXC_ERR) << describe(u);
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 2, 2, 1)));
  Completion u2 = done(1, 60'000'000'000);
  EXPECT_TRUE(u2.ok()) << describe(u2);
  c->run_for(1'000'000);
  EXPECT_EQ(region(3), region(0));
  EXPECT_EQ(region(1), region(0));
}

TEST_F(Share, AHomeThatDiesFailsTheJoinAndLaterUpdates) {
  start(3);
  join(1);
  bool hold = true;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    return hold && src == 0 && frame_dst(f) == 2 &&
           frame_type(f) == RHN_PKT_DATA && wire_op(f) == RHN_WOP_FW &&
           fw_kind(f) == RHN_FW_SHARE_JOINED;
  };
  ASSERT_TRUE(eps[2].qp->post_send(subscribe(2, 7)));
  c->run_for(1'000'000);
  c->fabric().set_link(0, false);  // the home dies mid-join
  Completion s = done(2, 60'000'000'000);
  EXPECT_FALSE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_SUBSCRIBE);
  EXPECT_TRUE(s.vendor_err == RHN_SYN_MEMBER_LOST ||
              s.vendor_err == RHN_SYN_RETRY_EXCEEDED)
      << describe(s);
  // The member finds the home dead when it next updates, then the region
  // is lost: an error, at once.
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 1, 1, 1)));
  Completion u = done(1, 60'000'000'000);
  EXPECT_EQ(u.status, RHN_CQE_RETRY_EXC_ERR) << describe(u);
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 2, 2, 1)));
  Completion u2 = done(1);
  EXPECT_EQ(u2.status, RHN_CQE_REM_OP_ERR) << describe(u2);
  EXPECT_EQ(u2.vendor_err, RHN_SYN_MEMBER_LOST);
  EXPECT_GT(counter(1, RHN_CNT_SHARE_ERRORS), 0u);
}

TEST_F(Share, AUserThatFillsItsShareOfTheTableGetsACleanErrorOthersStillJoin) {
  start(3, [](uint16_t, fw::EngineConfig& cfg) {
    cfg.share.regions = 8;
    cfg.share.context_share = 128;  // 4 records per process
  });
  // Node 1's process subscribes to 4 regions (areas 20..23 of node 0): its
  // fifth is refused at once.
  std::vector<uint32_t> areas;
  for (uint32_t id = 20; id < 25; id++) {
    areas.push_back(id);
    for (size_t n : {0, 1, 2})
      ASSERT_TRUE(
          eps[n]
              .ctx
              ->register_area(id, eps[n].buf.mr, eps[n].buf.va(), kAreaBytes)
              .ok());
  }
  CounterSnap n1(c->node(1));
  for (size_t i = 0; i < 5; i++) {
    SendWr wr = subscribe(1, i);
    wr.remote_key = areas[i];
    ASSERT_TRUE(eps[1].qp->post_send(wr));
    Completion w = done(1);
    if (i < 4) {
      EXPECT_TRUE(w.ok()) << i << describe(w);
    } else {
      EXPECT_EQ(w.status, RHN_CQE_GENERAL_ERR) << describe(w);
      EXPECT_EQ(w.vendor_err, RHN_SYN_BUSY);
    }
  }
  EXPECT_EQ(n1.delta(RHN_CNT_SHARE_ERRORS), 1u);
  // Another process still joins (and the endpoint that was refused works).
  SendWr other = subscribe(2, 77);
  other.remote_key = areas[0];
  ASSERT_TRUE(eps[2].qp->post_send(other));
  Completion j = done(2);
  ASSERT_TRUE(j.ok()) << describe(j);
  SendWr u = update(1, 9, 1, 1);
  u.remote_key = areas[0];
  ASSERT_TRUE(eps[1].qp->post_send(u));
  Completion w = done(1);
  ASSERT_TRUE(w.ok()) << describe(w);
  c->run_for(1'000'000);
  EXPECT_EQ(region(2), region(0));
}

TEST_F(Share, BadInputIsRefusedWithASyndromeAndCounted) {
  start(2);
  struct Case {
    const char* what;
    std::function<void(SendWr&)> change;
    uint8_t status, syndrome;
  };
  const std::vector<Case> cases = {
      {"area in a group the process is not in",
       [](SendWr& w) { w.remote_key = RHN_AREA_KEY(9, kAreaId); },
       RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP},
      {"longer than RHN_SHARE_MAX_BYTES",
       [&](SendWr& w) {
         w.sges = {eps[1].buf.sge(kRegionOff, RHN_SHARE_MAX_BYTES + 1)};
         w.xfer_mode = RHN_XFER_BASIC;
       },
       RHN_CQE_LOC_LEN_ERR, RHN_SYN_LENGTH},
      {"SGE not the area's bytes",
       [&](SendWr& w) {
         w.sges = {eps[1].buf.sge(kRegionOff + 8, kRegionLen)};
       },
       RHN_CQE_LOC_PROT_ERR, RHN_SYN_BOUNDS},
      {"a signal flag", [](SendWr& w) { w.flags |= RHN_WQE_F_SIGNAL_REMOTE; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    // A malformed WQE moves the endpoint to error: a fresh one each time.
    eps.pop_back();
    twins.pop_back();
    add_endpoint(1);
    CounterSnap n1(c->node(1));
    SendWr wr = subscribe(1, 1);
    k.change(wr);
    ASSERT_TRUE(eps[1].qp->post_send(wr));
    Completion w = done(1);
    EXPECT_EQ(w.status, k.status) << describe(w);
    EXPECT_EQ(w.vendor_err, k.syndrome) << describe(w);
    EXPECT_GT(
        n1.delta(RHN_CNT_SHARE_ERRORS) + n1.delta(RHN_CNT_GROUP_VIOLATIONS),
        0u);
  }
  // An update and an UNSUBSCRIBE of a region the endpoint is not in.
  eps.pop_back();
  twins.pop_back();
  add_endpoint(1);
  ASSERT_TRUE(eps[1].qp->post_send(update(1, 2, 1, 1)));
  Completion u = done(1);
  EXPECT_EQ(u.status, RHN_CQE_REM_INV_REQ_ERR) << describe(u);
  EXPECT_EQ(u.vendor_err, RHN_SYN_NOT_SUBSCRIBED);
  ASSERT_TRUE(eps[1].qp->post_send(unsubscribe(3)));
  Completion l = done(1);
  EXPECT_EQ(l.vendor_err, RHN_SYN_NOT_SUBSCRIBED) << describe(l);
  // An area the home does not have: the home refuses the SUBSCRIBE.
  ASSERT_TRUE(
      eps[1]
          .ctx->register_area(30, eps[1].buf.mr, eps[1].buf.va(), kAreaBytes)
          .ok());
  SendWr far = subscribe(1, 4);
  far.remote_key = 30;
  ASSERT_TRUE(eps[1].qp->post_send(far));
  Completion f = done(1);
  EXPECT_EQ(f.status, RHN_CQE_REM_ACCESS_ERR) << describe(f);
  EXPECT_EQ(f.vendor_err, RHN_SYN_BAD_AREA);
  // Joining twice: the second is refused, the first stays.
  join(1);
  ASSERT_TRUE(eps[1].qp->post_send(subscribe(1, 5)));
  Completion again = done(1);
  EXPECT_EQ(again.vendor_err, RHN_SYN_NOT_SUBSCRIBED) << describe(again);
  EXPECT_GT(counter(1, RHN_CNT_SHARE_ERRORS), 0u);
}

}  // namespace
}  // namespace rhinet::test
