// SPDX-License-Identifier: BSD-2-Clause
// Collectives in the switch (RHN_COLL_F_IN_SWITCH): the fabric switch
// combines the nodes' partials; results, losses, deaths, disagreements,
// late posts and a switch that forgets or does not reduce. The fixture is
// coll_fixture.h, the other cases test_coll.cc.
#include "coll_fixture.h"

namespace rhinet::test {
namespace {

// ---- (3) In the switch (RHN_COLL_F_IN_SWITCH): the fabric switch combines
// the nodes' partials (fabric/coll_reducer.h, the simulator's switch).

// Segments between NICs (firmware COLL_UP / COLL_DOWN messages) seen by the
// fabric since the tap went on.
struct NicSegments {
  explicit NicSegments(SimCluster& c) {
    c.fabric().tap = [this](size_t, std::span<const uint8_t> f) {
      if (f.size() < RHN_DATA_HDR_LEN ||
          f[offsetof(rhn_pkt_hdr, type)] != RHN_PKT_DATA)
        return;
      rhn_op_hdr op;
      std::memcpy(&op, f.data() + RHN_PKT_HDR_LEN, sizeof op);
      if (op.opcode == RHN_WOP_FW &&
          (op.rkey == RHN_FW_COLL_UP || op.rkey == RHN_FW_COLL_DOWN))
        count++;
    };
  }
  uint64_t count = 0;
};

// Every reduce of every type, one element and several segments; a barrier;
// 2 to 17 nodes of 1 to 4 ranks. Exact results, combined by the switch: no
// segment travels between NICs.
TEST_F(Coll, InTheSwitchEveryOpTypeAndShape) {
  start(4);
  NicSegments between(*c);
  make_ranks(4, 2, 3 * 4096 + 40);
  uint64_t salt = 500;
  uint32_t runs = 0;
  for (uint8_t type : kTypes)
    for (uint8_t reduce = RHN_COLL_SUM; reduce <= RHN_COLL_BXOR; reduce++) {
      const bool fl = type == RHN_COLL_FLOAT || type == RHN_COLL_DOUBLE;
      if (fl && reduce > RHN_COLL_MAX) continue;
      for (uint32_t len : {type_size(type), 3u * 4096 + 40}) {
        CollSpec s;
        s.in_switch = true;
        s.reduce = reduce;
        s.type = type;
        s.len = len;
        s.salt = salt++;
        SCOPED_TRACE("type " + std::to_string(type) + " reduce " +
                     std::to_string(reduce) + " len " + std::to_string(len));
        run_and_check(s);
        if (HasFailure()) return;
        runs++;
      }
    }
  CollSpec b;
  b.op = RHN_COLL_BARRIER;
  b.len = 0;
  b.in_switch = true;
  run_and_check(b);
  const auto& sw = c->fabric().coll().counters();
  EXPECT_GT(sw.results, uint64_t{runs});
  EXPECT_EQ(sw.mismatches + sw.malformed + sw.busy, 0u);
  EXPECT_EQ(between.count, 0u);
  EXPECT_GT(total(RHN_CNT_COLL_SWITCH_FRAMES), 0u);
  EXPECT_EQ(total(RHN_CNT_COLL_ERRORS), 0u);
  // Every segment acknowledged: the switch holds nothing.
  c->run_for(1'000'000);
  EXPECT_EQ(c->fabric().coll().slots_in_use(), 0u);

  for (size_t nodes : {2, 3, 17}) {
    for (size_t per : {1, 4}) {
      SCOPED_TRACE(std::to_string(nodes) + " nodes x " + std::to_string(per));
      start(nodes, 4u << 20);
      make_ranks(nodes, per, 2 * 4096 + 8, per == 4);
      CollSpec s;
      s.in_switch = true;
      s.len = 2 * 4096 + 8;
      s.type = RHN_COLL_INT32;
      s.salt = nodes * 10 + per;
      run_and_check(s);
      b.salt = s.salt;
      run_and_check(b);
      if (HasFailure()) return;
    }
  }
}

// 4 B to 4 MiB through the switch (a thousand segments, the window moving
// many times).
TEST_F(Coll, InTheSwitchFourBytesToFourMebibytes) {
  start(4, 48u << 20);
  make_ranks(4, 1, 4u << 20);
  for (uint32_t len : {4u, 65536u, 4u << 20}) {
    CollSpec s;
    s.in_switch = true;
    s.len = len;
    s.type = RHN_COLL_FLOAT;
    s.salt = len;
    SCOPED_TRACE("len " + std::to_string(len));
    run_and_check(s);
    if (HasFailure()) return;
  }
}

// Loss, duplication and reordering on every link, the switch's included:
// UPs go again on their timeout, repeated DOWNs are acknowledged again.
TEST_F(Coll, InTheSwitchOnALossyFabric) {
  start(6);
  make_lossy(*c, 43);
  make_ranks(6, 2, 40000);
  for (uint64_t salt : {1, 2, 3}) {
    CollSpec s;
    s.in_switch = true;
    s.len = 40000;
    s.type = RHN_COLL_UINT64;
    s.reduce = RHN_COLL_BXOR;
    s.salt = salt;
    run_and_check(s);
    if (HasFailure()) return;
  }
  EXPECT_GT(total(RHN_CNT_COLL_RETRIES), 0u);
  EXPECT_GT(c->fabric().coll().counters().repeats, 0u);
}

// A switch table of two buffers for two communicators of many segments
// each, posted at once: segments wait (BUSY), lower ones take buffers from
// higher ones, and both complete exactly; no deadlock.
TEST_F(Coll, InTheSwitchATableOfTwoBuffersForTwoCommunicators) {
  start(4);
  c->fabric().configure_coll(2, 2'000'000'000);
  make_ranks(4, 1, 8 * 4096);
  CollSpec a;
  a.in_switch = true;
  a.len = 4 * 4096;
  a.seg = 4096;
  a.comm = RHN_AREA_KEY(0, 1);
  CollSpec b = a;
  b.comm = RHN_AREA_KEY(0, 2);
  b.type = RHN_COLL_INT32;
  for (Rank& k : ranks) {
    const auto v = operand(RHN_COLL_INT64, k.rank, a.len, 5);
    k.d.buf.buf.write(0, v.data(), v.size());
  }
  for (Rank& k : ranks) {
    // Node order differs per communicator, so their UPs interleave.
    SendWr wa = wr_for(k, a, 1);
    wa.coll.recv_addr = k.d.buf.va(4 * 4096);
    SendWr wb = wr_for(k, b, 2);
    wb.coll.recv_addr = k.d.buf.va(12 * 4096);
    wb.coll.length = 4 * 4096;
    if (k.rank % 2) std::swap(wa, wb);
    ASSERT_TRUE(k.qp().post_send(wa));
    ASSERT_TRUE(k.qp().post_send(wb));
  }
  for (Rank& k : ranks) {
    auto v = c->wait_cqes(k.cq(), 2, 2'000'000'000);
    ASSERT_EQ(v.size(), 2u) << describe(v);
    for (const Completion& x : v) EXPECT_TRUE(x.ok()) << describe(x);
  }
  const auto sum64 = reference(RHN_COLL_INT64, RHN_COLL_SUM, 4, a.len, 5);
  // The same bytes summed as int32 elements.
  std::vector<uint8_t> sum32(a.len, 0);
  for (const Rank& k : ranks) {
    const auto v = operand(RHN_COLL_INT64, k.rank, a.len, 5);
    for (size_t i = 0; i < a.len; i += 4) {
      uint32_t x, y;
      std::memcpy(&x, sum32.data() + i, 4);
      std::memcpy(&y, v.data() + i, 4);
      x += y;
      std::memcpy(sum32.data() + i, &x, 4);
    }
  }
  for (Rank& k : ranks) {
    EXPECT_EQ(k.d.buf.buf.bytes(4 * 4096, a.len), sum64) << k.rank;
    EXPECT_EQ(k.d.buf.buf.bytes(12 * 4096, a.len), sum32) << k.rank;
  }
  EXPECT_GT(c->fabric().coll().counters().busy, 0u);
  EXPECT_GT(total(RHN_CNT_COLL_RETRIES), 0u);
}

// A member's node dies while the switch holds the others' partials: every
// other rank fails with MEMBER_LOST (liveness pings, then ABORTs on the
// node channels); the switch drops the orphaned segments later by itself.
TEST_F(Coll, InTheSwitchAMemberNodeThatDiesFailsItEverywhere) {
  start(5);
  make_ranks(5, 1, 200000);
  CollSpec s;
  s.in_switch = true;
  s.len = 200000;
  node_3_dies_mid_collective(s);
}

// Ranks that disagree: one in the switch's mode and the others in the
// NICs' (the node channels find it), or all in the switch with one other
// length (the switch finds it). Both fail everywhere; the next works.
TEST_F(Coll, InTheSwitchRanksThatDisagree) {
  start(4);
  make_ranks(4, 1, 4096);
  for (int how = 0; how < 2; how++) {
    SCOPED_TRACE(how ? "another length" : "another mode");
    CollSpec s;
    s.in_switch = true;
    s.len = 2048;
    s.salt = 60 + how;
    prepare(s);
    for (Rank& k : ranks) {
      SendWr w = wr_for(k, s, 3);
      if (k.rank == 2) {
        if (how)
          w.coll.length = 1024;
        else
          w.coll.flags = 0;
      }
      ASSERT_TRUE(k.qp().post_send(w));
    }
    expect_each_fails(RHN_SYN_COLL_MISMATCH);
    s.salt = 70 + how;
    run_and_check(s);
    if (HasFailure()) return;
  }
  EXPECT_GT(c->fabric().coll().counters().mismatches, 0u);
}

// Ranks that post 100 ms late: the switch holds the others' partials (HELD;
// they only remind it every 20 ms), and the late rank's partial completes
// each segment at once: the collective ends within a few hops of the last
// post. Then the switch loses its whole table mid-collective (a restart):
// the reminders fill it again and the collective completes.
TEST_F(Coll, InTheSwitchLatePostsAndASwitchThatForgets) {
  start(4);
  make_ranks(4, 2, 20000);
  CollSpec s;
  s.in_switch = true;
  s.len = 20000;
  run_and_check(s, {5}, 100'000'000);
  EXPECT_LT(last_run_ns, 50'000u);
  s.salt = 2;
  run_and_check(s, {0, 1}, 100'000'000);
  EXPECT_LT(last_run_ns, 50'000u);

  s.salt = 3;
  prepare(s);
  post_each(s, [](const Rank& k) { return k.node == 2; });
  ASSERT_TRUE(c->run_until(
      [&] { return c->fabric().coll().slots_in_use() > 0; }, 10'000'000));
  c->run_for(1'000'000);
  c->fabric().configure_coll(fabric::CollReducer::kDefaultSlots,
                             2'000'000'000);  // forgets
  post_each(s, [](const Rank& k) { return k.node != 2; });
  for (Rank& k : ranks) {
    Completion x = wait_one(*c, k.cq(), 2'000'000'000);
    ASSERT_TRUE(x.ok()) << "rank " << k.rank << ": " << describe(x);
  }
  check(s);
}

// A rank's endpoint destroyed while the switch holds the others' partials:
// every other rank fails (MEMBER_LOST), none hangs, and the switch drops
// the orphaned buffers after its stale time (2 s).
TEST_F(Coll, InTheSwitchAnEndpointDestroyedWhileItsCollectiveRuns) {
  start(3);
  make_ranks(3, 2, 4096);
  CollSpec s;
  s.in_switch = true;
  s.len = 4096;
  prepare(s);
  const auto rank_3 = [](const Rank& k) { return k.rank == 3; };
  post_each(s, rank_3);
  c->run_for(500'000);
  EXPECT_GT(c->fabric().coll().slots_in_use(), 0u);
  destroy_endpoint(ranks[3]);
  expect_each_fails(RHN_SYN_MEMBER_LOST, rank_3);
  EXPECT_GT(c->fabric().coll().slots_in_use(), 0u);
  c->run_for(2'100'000'000);
  c->fabric().deliver();
  EXPECT_EQ(c->fabric().coll().slots_in_use(), 0u);
  EXPECT_GT(c->fabric().coll().counters().stale, 0u);
}

// A result the switch sends again after the node finished that collective
// (its ACK was lost, the DOWN came twice): the node ACKs it as the
// collective it belongs to, so the switch can free that buffer. An ACK
// naming the node's current collective instead could free a buffer whose
// result the node never got.
TEST_F(Coll, InTheSwitchAResultThatComesAgainIsAcknowledgedAsItsOwn) {
  start(2);
  make_ranks(2, 1, 64);
  std::vector<uint8_t> up;  // node 0's first partial, as sent
  std::vector<rhn_coll_frame> acks;
  c->fabric().tap = [&](size_t port, std::span<const uint8_t> f) {
    if (port != 0 || f.size() < RHN_PKT_HDR_LEN + sizeof(rhn_coll_frame) ||
        f[offsetof(rhn_pkt_hdr, type)] != RHN_PKT_COLL)
      return;
    rhn_coll_frame x;
    std::memcpy(&x, f.data() + RHN_PKT_HDR_LEN, sizeof x);
    if (x.kind == RHN_COLL_FRAME_UP && up.empty())
      up.assign(f.begin(), f.end());
    if (x.kind == RHN_COLL_FRAME_ACK) acks.push_back(x);
  };
  CollSpec s;
  s.in_switch = true;
  s.len = 64;
  run_and_check(s);  // collective 0
  s.salt = 2;
  run_and_check(s);  // collective 1: node 0 is at 2 now
  ASSERT_FALSE(up.empty());
  // The switch's DOWN of collective 0, segment 0, once more.
  rhn_coll_frame d;
  std::memcpy(&d, up.data() + RHN_PKT_HDR_LEN, sizeof d);
  ASSERT_EQ(d.seq, 0u);
  d.kind = RHN_COLL_FRAME_DOWN;
  std::vector<uint8_t> frame(RHN_PKT_HDR_LEN + sizeof d + 64, 0);
  std::memcpy(frame.data() + RHN_PKT_HDR_LEN, &d, sizeof d);
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_COLL;
  h.dst_node = 0;
  h.src_node = RHN_NODE_BROADCAST;
  h.payload_len = uint16_t(sizeof d + 64);
  fw::seal_packet(frame.data(), h, nullptr,
                  fw::crc32c(0, frame.data() + RHN_PKT_HDR_LEN, h.payload_len));
  acks.clear();
  ASSERT_TRUE(c->node(0).engine->frame_arrived(frame));
  c->run_for(100'000);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 0u) << "the ACK names collective " << acks[0].seq;
  EXPECT_EQ(acks[0].seg, 0u);
}

// A switch that does not reduce (drops RHN_PKT_COLL frames, as one without
// the feature would): every rank fails with COLL_NO_SWITCH after the UP's
// retries, not a hang; the NICs' own mode still works on it.
TEST_F(Coll, ASwitchThatDoesNotReduce) {
  start(3);
  c->fabric().configure_coll(0, 0);
  make_ranks(3, 1, 1024);
  CollSpec s;
  s.in_switch = true;
  prepare(s);
  post_each(s);
  for (Rank& k : ranks) {
    Completion x = wait_one(*c, k.cq(), 20'000'000'000ull);
    EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_NO_SWITCH))
        << "rank " << k.rank << ": " << describe(x);
  }
  EXPECT_GT(total(RHN_CNT_COLL_RETRIES), 0u);
  s.in_switch = false;
  s.salt = 80;
  run_and_check(s);
}

}  // namespace
}  // namespace rhinet::test
