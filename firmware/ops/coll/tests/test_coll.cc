// SPDX-License-Identifier: BSD-2-Clause
// Collectives executed by the NICs: allreduce, reduce,
// broadcast and barrier between endpoints of 1 to 64 nodes with 1 to 4
// ranks per node, every op and type, segments from one to a thousand,
// results checked against a reference computed here (integers exactly;
// floating-point data are small integers, so every order of summing gives
// the same, exact result). Then the unhappy paths: a lossy fabric, ranks
// that post late, a member whose node dies or whose endpoint goes
// mid-collective (an error everywhere, never a hang), ranks that disagree,
// WQEs the NIC refuses, and a process that tries to fill the NIC's
// communicator table. Last, keys that outlive jobs: an earlier job's
// messages never act on the next job's communicator of the key, and a
// process cannot choose the other ranks of somebody else's.
#include "coll_fixture.h"

namespace rhinet::test {
namespace {

// ---- (1) Results.

// 4 nodes x 2 ranks: every reduce of every type (bitwise ones on integers),
// allreduce and reduce, one segment and several (with a last partial one).
TEST_F(Coll, EveryOpAndTypeOnFourNodesOfTwoRanks) {
  start(4);
  make_ranks(4, 2, 3 * 4096 + 40);
  uint64_t salt = 10;
  for (uint8_t type : kTypes)
    for (uint8_t reduce = RHN_COLL_SUM; reduce <= RHN_COLL_BXOR; reduce++) {
      const bool fl = type == RHN_COLL_FLOAT || type == RHN_COLL_DOUBLE;
      if (fl && reduce > RHN_COLL_MAX) continue;
      for (uint8_t op : {RHN_COLL_ALLREDUCE, RHN_COLL_REDUCE})
        for (uint32_t len : {type_size(type), 3u * 4096 + 40}) {
          CollSpec s;
          s.op = op;
          s.reduce = reduce;
          s.type = type;
          s.len = len;
          s.root = op == RHN_COLL_REDUCE ? 5 : 0;
          s.salt = salt++;
          SCOPED_TRACE("type " + std::to_string(type) + " reduce " +
                       std::to_string(reduce) + " op " + std::to_string(op) +
                       " len " + std::to_string(len));
          run_and_check(s);
          if (HasFatalFailure() || HasFailure()) return;
        }
    }
  // Every rank's WQE counted once per collective.
  EXPECT_EQ(total(RHN_CNT_COLL_DONE), 8u * (4 * 6 * 2 * 2 + 2 * 3 * 2 * 2));
  EXPECT_EQ(total(RHN_CNT_COLL_ERRORS), 0u);
}

// Broadcast from every root, barrier, and an allreduce in place.
TEST_F(Coll, BroadcastFromEveryRootBarrierAndInPlace) {
  start(3);
  make_ranks(3, 2, 10000, true);  // ranks interleaved over the nodes
  for (uint16_t root = 0; root < 6; root++) {
    CollSpec s;
    s.op = RHN_COLL_BCAST;
    s.type = RHN_COLL_UINT32;
    s.len = 10000;
    s.root = root;
    s.salt = 100 + root;
    SCOPED_TRACE("root " + std::to_string(root));
    run_and_check(s);
  }
  CollSpec b;
  b.op = RHN_COLL_BARRIER;
  b.len = 0;
  run_and_check(b);
  CollSpec p;
  p.in_place = true;
  p.type = RHN_COLL_DOUBLE;
  p.len = 9000;
  run_and_check(p);
}

// The shapes: 2 to 64 nodes, 1 to 4 ranks per node, tree and chain.
TEST_F(Coll, TwoToSixtyFourNodesOfOneToFourRanks) {
  for (size_t nodes : {2, 3, 5, 8, 17, 64}) {
    for (size_t per : {1, 2, 4}) {
      if (nodes * per > RHN_COLL_MAX_RANKS) continue;
      SCOPED_TRACE(std::to_string(nodes) + " nodes x " + std::to_string(per));
      start(nodes, 4u << 20);
      make_ranks(nodes, per, 2 * 4096 + 8);
      for (uint8_t radix : {0, 1, 2}) {
        CollSpec s;
        s.radix = radix;
        s.len = 2 * 4096 + 8;
        s.type = RHN_COLL_INT32;
        s.salt = nodes * 10 + per + radix;
        SCOPED_TRACE("radix " + std::to_string(radix));
        run_and_check(s);
        if (HasFailure()) return;
      }
      CollSpec b;
      b.op = RHN_COLL_BARRIER;
      b.len = 0;
      run_and_check(b);
      if (HasFailure()) return;
    }
  }
}

// 4 B to 4 MiB, the chain (the NIC's choice from 64 KiB) and a tree.
TEST_F(Coll, FourBytesToFourMebibytes) {
  start(4, 48u << 20);
  make_ranks(4, 1, 4u << 20);
  for (uint32_t len : {4u, 4096u, 65536u, 1u << 20, 4u << 20}) {
    for (uint8_t radix : {0, 2}) {
      CollSpec s;
      s.len = len;
      s.radix = radix;
      s.type = RHN_COLL_FLOAT;
      s.salt = len + radix;
      SCOPED_TRACE("len " + std::to_string(len) + " radix " +
                   std::to_string(radix));
      run_and_check(s);
      if (HasFailure()) return;
    }
  }
}

// Small segments: a thousand of them, through the NIC's window many times.
TEST_F(Coll, AThousandSmallSegments) {
  start(5);
  make_ranks(5, 1, 64000);
  CollSpec s;
  s.len = 64000;
  s.seg = 64;
  s.radix = 1;
  run_and_check(s);
  EXPECT_GE(total(RHN_CNT_COLL_SEGMENTS), 1000u);
}

// Collectives posted back to back, without waiting, on two communicators
// of the same endpoints at once.
TEST_F(Coll, BackToBackOnTwoCommunicators) {
  start(4);
  make_ranks(4, 1, 8192);
  constexpr int kRounds = 6;
  // Each round's result goes into its own place: use the send buffer for
  // the first communicator and in-place operands kept apart by salt.
  for (Rank& k : ranks) {
    const auto v = operand(RHN_COLL_INT64, k.rank, 4096, 77);
    k.d.buf.buf.write(0, v.data(), v.size());
  }
  for (int i = 0; i < kRounds; i++)
    for (Rank& k : ranks) {
      CollSpec a;
      a.len = 2048;
      a.comm = RHN_AREA_KEY(0, 1);
      SendWr w = wr_for(k, a, 100 + i);
      w.coll.send_addr = k.d.buf.va(0);
      w.coll.recv_addr = k.d.buf.va(4096 + 256 * i);
      w.coll.length = 256;
      ASSERT_TRUE(k.qp().post_send(w));
      CollSpec b = a;
      b.comm = RHN_AREA_KEY(0, 2);
      b.op = RHN_COLL_BCAST;
      b.root = static_cast<uint16_t>(i % 4);
      SendWr x = wr_for(k, b, 200 + i);
      x.coll.send_addr = k.d.buf.va(0);
      x.coll.recv_addr = k.d.buf.va(6144 + 256 * i);
      x.coll.length = 256;
      ASSERT_TRUE(k.qp().post_send(x));
    }
  for (Rank& k : ranks) {
    auto v = c->wait_cqes(k.cq(), 2 * kRounds, 2'000'000'000);
    ASSERT_EQ(v.size(), size_t{2 * kRounds}) << describe(v);
    for (const Completion& x : v) EXPECT_TRUE(x.ok()) << describe(x);
  }
  const auto sum = reference(RHN_COLL_INT64, RHN_COLL_SUM, 4, 256, 77);
  for (Rank& k : ranks)
    for (int i = 0; i < kRounds; i++) {
      EXPECT_EQ(k.d.buf.buf.bytes(4096 + 256 * i, 256), sum) << "round " << i;
      if (k.rank != i % 4) {
        EXPECT_EQ(k.d.buf.buf.bytes(6144 + 256 * i, 256),
                  operand(RHN_COLL_INT64, i % 4, 256, 77))
            << "bcast round " << i;
      }
    }
}

// ---- (2) Unhappy paths.

// Loss, reordering and duplication: the channels' retransmission carries
// the segments; results are exact.
TEST_F(Coll, ALossyFabric) {
  start(6);
  make_lossy(*c, 42);
  make_ranks(6, 2, 40000);
  for (uint8_t radix : {1, 3}) {
    CollSpec s;
    s.len = 40000;
    s.radix = radix;
    s.type = RHN_COLL_UINT64;
    s.reduce = RHN_COLL_BXOR;
    s.salt = radix;
    run_and_check(s);
  }
}

// Ranks that post late: the others' segments are refused (NOT_READY), and
// the late node tells them READY when it starts, so they come again at once
// rather than at their back-off timer (which has grown to 1 ms by then):
// the collective completes within a few hops of the last post, for one
// rank late and for a whole node late, for allreduce and broadcast.
TEST_F(Coll, RanksThatPostLate) {
  start(4);
  make_ranks(4, 2, 20000);
  CollSpec s;
  s.len = 20000;
  // 500 ns hops: 50 us is a hundred of them, and far below the 1 ms the
  // refused senders' timers wait by then.
  constexpr uint64_t few_hops = 50'000;
  run_and_check(s, {5}, 3'000'000);
  EXPECT_LT(last_run_ns, few_hops);
  s.salt = 2;
  run_and_check(s, {0, 1}, 3'000'000);  // rank 0's node
  EXPECT_LT(last_run_ns, few_hops);
  s.salt = 3;
  s.op = RHN_COLL_BCAST;
  s.root = 2;
  run_and_check(s, {6, 7}, 3'000'000);
  EXPECT_LT(last_run_ns, few_hops);
  EXPECT_GT(total(RHN_CNT_COLL_RETRIES), 0u);
}

// A member's node dies mid-collective: every other rank's collective fails
// with MEMBER_LOST; none hangs.
TEST_F(Coll, AMemberNodeThatDiesFailsItEverywhere) {
  start(5);
  make_ranks(5, 1, 200000);
  CollSpec s;
  s.len = 200000;
  s.radix = 1;
  node_3_dies_mid_collective(s);
}

// A member that never posts while its node stays silent (unplugged before
// it does): the others fail instead of waiting forever.
TEST_F(Coll, ANodeThatGoesBeforePostingFailsIt) {
  start(4);
  make_ranks(4, 1, 1024);
  c->fabric().set_link(2, false);
  CollSpec s;
  prepare(s);
  post_each(s, [](const Rank& k) { return k.node == 2; });
  expect_each_fails(RHN_SYN_MEMBER_LOST,
                    [](const Rank& k) { return k.node == 2; });
}

// A rank's endpoint is destroyed while its collective is queued in the
// NIC: every other rank fails (MEMBER_LOST), and later collectives on the
// communicator fail at once rather than hang.
TEST_F(Coll, AnEndpointDestroyedWhileItsCollectiveRuns) {
  start(3);
  make_ranks(3, 2, 4096);
  CollSpec s;
  s.len = 4096;
  prepare(s);
  const auto rank_3 = [](const Rank& k) { return k.rank == 3; };
  post_each(s, rank_3);
  c->run_for(500'000);
  // Rank 3 (node 1) never posts: its process exits.
  destroy_endpoint(ranks[3]);
  expect_each_fails(RHN_SYN_MEMBER_LOST, rank_3);
  // The next one fails too, everywhere, promptly.
  post_each(s, rank_3, 2);
  for (Rank& k : ranks) {
    if (k.rank == 3) continue;
    Completion x = wait_one(*c, k.cq(), 5'000'000'000ull);
    EXPECT_EQ(x.status, RHN_CQE_REM_OP_ERR)
        << "rank " << k.rank << ": " << describe(x);
  }
  EXPECT_GT(total(RHN_CNT_COLL_ERRORS), 0u);
}

// Ranks that disagree (one posts another length): the collective fails
// with COLL_MISMATCH everywhere, and the next, agreeing one succeeds.
TEST_F(Coll, RanksThatDisagreeFailItAndTheNextOneWorks) {
  start(4);
  make_ranks(4, 1, 4096);
  CollSpec s;
  s.len = 2048;
  prepare(s);
  for (Rank& k : ranks) {
    SendWr w = wr_for(k, s);
    if (k.rank == 2) w.coll.length = 1024;
    ASSERT_TRUE(k.qp().post_send(w));
  }
  expect_each_fails(RHN_SYN_COLL_MISMATCH);
  s.salt = 9;
  run_and_check(s);
}

// A disagreement the segments alone do not show: rank 0's one element
// more makes one more, short, segment, the others' segments having the
// same sizes. Every rank must still fail (not the others succeed and rank
// 0 wait forever for a segment nobody sends).
TEST_F(Coll, ALengthThatDiffersOnlyInTheLastSegment) {
  start(4);
  make_ranks(4, 1, 4096);
  CollSpec s;
  s.len = 256;
  prepare(s);
  for (Rank& k : ranks) {
    SendWr w = wr_for(k, s, 5);
    if (k.rank == 0) w.coll.length = 264;
    ASSERT_TRUE(k.qp().post_send(w));
  }
  expect_each_fails(RHN_SYN_COLL_MISMATCH);
  s.salt = 40;
  run_and_check(s);
}

// The same with two ranks per node, the rank that disagrees sharing its
// NIC with one that agrees (the NIC sees the disagreement itself), posted
// in either order.
TEST_F(Coll, RanksOfOneNicThatDisagree) {
  start(4);
  make_ranks(4, 2, 4096);
  // Order 2: the others first, then rank 0, and rank 1 only after the
  // others' segments have reached node 0 and failed it there.
  for (int order = 0; order < 3; order++) {
    SCOPED_TRACE("order " + std::to_string(order));
    CollSpec s;
    s.len = 256;
    s.salt = 20 + order;
    prepare(s);
    std::vector<size_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
    if (order == 1) std::swap(idx[0], idx[1]);
    if (order == 2) idx = {2, 3, 4, 5, 6, 7, 0, 1};
    for (size_t i : idx) {
      SendWr w = wr_for(ranks[i], s, 5);
      if (ranks[i].rank == 0) w.coll.length = 264;
      if (order == 2 && (i == 0 || i == 1)) c->run_for(2'000'000);
      ASSERT_TRUE(ranks[i].qp().post_send(w));
    }
    expect_each_fails(RHN_SYN_COLL_MISMATCH);
    s.salt = 30 + order;
    run_and_check(s);
    if (HasFailure()) return;
  }
}

// WQEs the NIC refuses at post, each with the reason (a bad WQE puts the
// endpoint in error, as any bad WQE does: each case gets a new one).
TEST_F(Coll, WqesTheNicRefuses) {
  start(2);
  make_ranks(2, 1, 1024);
  CollSpec s;
  auto fresh_rank0 = [&] {
    Rank k;
    k.node = 0;
    k.rank = 0;
    k.d = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, 0,
                             {.cq_log_depth = 8, .buf_bytes = 4096});
    ASSERT_TRUE(k.d.qp);
    ranks[0] = std::move(k);
    write_members();
  };
  struct Case {
    const char* what;
    std::function<void(SendWr&)> edit;
    uint8_t status, syndrome;
  };
  const Case cases[] = {
      {"op 0", [](SendWr& w) { w.coll.op = 0; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"op 5", [](SendWr& w) { w.coll.op = 5; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"bitwise on float",
       [](SendWr& w) {
         w.coll.type = RHN_COLL_FLOAT;
         w.coll.reduce = RHN_COLL_BXOR;
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"type 9", [](SendWr& w) { w.coll.type = 9; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"length not whole elements", [](SendWr& w) { w.coll.length = 1021; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"rank beyond nranks", [](SendWr& w) { w.coll.rank = 2; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"nranks 0", [](SendWr& w) { w.coll.nranks = 0; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"radix 17", [](SendWr& w) { w.coll.radix = 17; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"segment beyond MTU", [](SendWr& w) { w.coll.seg_size = 8192; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"reserved byte", [](SendWr& w) { w.coll.reserved[3] = 1; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"barrier with data", [](SendWr& w) { w.coll.op = RHN_COLL_BARRIER; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"send beyond its key", [](SendWr& w) { w.coll.send_addr += 1u << 20; },
       RHN_CQE_LOC_PROT_ERR, RHN_SYN_BOUNDS},
      {"recv through a bad key", [](SendWr& w) { w.coll.recv_lkey ^= 0x55; },
       RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_KEY},
      {"members beyond their key",
       [](SendWr& w) { w.coll.members_addr += 1u << 20; }, RHN_CQE_LOC_PROT_ERR,
       RHN_SYN_BOUNDS},
      {"a group the process is not in",
       [](SendWr& w) { w.remote_key = RHN_AREA_KEY(9, 7); },
       RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP},
      {"a member list that does not name this endpoint",
       [](SendWr& w) { w.coll.rank = 1; }, RHN_CQE_LOC_QP_OP_ERR,
       RHN_SYN_BAD_WQE},
      {"a broadcast in the switch",
       [](SendWr& w) {
         w.coll.op = RHN_COLL_BCAST;
         w.coll.flags = RHN_COLL_F_IN_SWITCH;
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"in the switch with a radix",
       [](SendWr& w) {
         w.coll.radix = 2;
         w.coll.flags = RHN_COLL_F_IN_SWITCH;
       },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
      {"an unknown flag", [](SendWr& w) { w.coll.flags = 0x80; },
       RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
  };
  uint64_t id = 10;
  for (const Case& t : cases) {
    fresh_rank0();
    Rank& k = ranks[0];
    SendWr w = wr_for(k, s, id++);
    t.edit(w);
    ASSERT_TRUE(k.qp().post_send(w));
    Completion x = wait_one(*c, k.cq());
    EXPECT_TRUE(failed_with(x, t.status, t.syndrome))
        << t.what << ": " << describe(x);
  }
  EXPECT_GE(c->node(0).counter(RHN_CNT_COLL_ERRORS), 16u);
  // Not on an RC QP: collectives are the endpoints'.
  {
    auto ctx = c->node(0).open_context();
    auto cq = ctx->create_cq(6);
    QpInit qi;
    qi.type = RHN_QP_RC;
    qi.send_cq = cq.get();
    auto rc = ctx->create_qp(qi);
    ASSERT_TRUE(rc);
    Region r = make_region(*ctx, 4096);
    ASSERT_TRUE(connect_rc(*rc, 1, ranks[1].qp().qpn()));
    SendWr w = wr_for(ranks[0], s, 99);
    w.coll.members_lkey = w.coll.send_lkey = w.coll.recv_lkey = r.key();
    w.coll.members_addr = w.coll.send_addr = w.coll.recv_addr = r.va(0);
    ASSERT_TRUE(rc->post_send(w));
    Completion x = wait_one(*c, *cq);
    EXPECT_TRUE(failed_with(x, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_QP))
        << describe(x);
  }
  // A disagreement or a full table leaves the endpoint usable; and a real
  // collective works.
  fresh_rank0();
  run_and_check(s);
}

// One process tries to fill the NIC's communicator table: it gets its
// share, then refusals; another process still creates communicators and
// runs collectives.
TEST_F(Coll, AProcessCannotFillTheCommunicatorTable) {
  start(2, 16u << 20, [](uint16_t, fw::EngineConfig& e) {
    e.coll.comms = 4;  // a share of 2 each
  });
  make_ranks(2, 1, 256);
  // Single-rank communicators of rank 0's own endpoint (nranks 1).
  Rank& hog = ranks[0];
  uint32_t refused = 0, done = 0;
  for (uint16_t id = 100; id < 106; id++) {
    CollSpec s;
    s.comm = RHN_AREA_KEY(0, id);
    s.len = 8;
    SendWr w = wr_for(hog, s, id);
    w.coll.nranks = 1;
    w.coll.rank = 0;
    w.coll.members_addr = hog.d.buf.va(lay.members());  // rank 0 first
    ASSERT_TRUE(hog.qp().post_send(w));
    Completion x = wait_one(*c, hog.cq());
    if (x.ok())
      done++;
    else if (failed_with(x, RHN_CQE_GENERAL_ERR, RHN_SYN_COLL_NO_ROOM))
      refused++;
    else
      ADD_FAILURE() << describe(x);
  }
  EXPECT_EQ(done, 2u);
  EXPECT_EQ(refused, 4u);
  // Another process on node 0 (and rank 1 on node 1) can still make a
  // communicator of its own.
  Rank other;
  other.node = 0;
  other.rank = 0;
  other.d = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, 0,
                               {.cq_log_depth = 8, .buf_bytes = 1024});
  ASSERT_TRUE(other.d.qp);
  ranks[0] = std::move(other);
  write_members();
  CollSpec s;
  s.comm = RHN_AREA_KEY(0, 200);
  s.len = 64;
  run_and_check(s);
}

// The execution state while it runs (the status word): a rank's status word
// reads RUNNING with the bytes finished at its NIC, growing, never DONE before
// the end; then DONE with the length, as for any WQE.
TEST_F(Coll, TheStatusWordSaysHowFarItIs) {
  start(4);
  make_ranks(4, 1, 256 * 1024 + 64);
  CollSpec s;
  s.len = 256 * 1024;
  s.radix = 1;
  prepare(s);
  const size_t word_at = 2 * lay.len + 8 * 4 + 8;  // after the member list
  for (Rank& k : ranks) {
    const uint64_t zero = 0;
    k.d.buf.buf.write(word_at, &zero, 8);
    SendWr w = wr_for(k, s);
    w.flags |= RHN_WQE_F_STATUS_WORD;
    w.status_addr = k.d.buf.va(word_at);
    w.status_lkey = k.d.buf.key();
    ASSERT_TRUE(k.qp().post_send(w));
  }
  Rank& watched = ranks[2];
  auto word = [&] {
    uint64_t v = 0;
    watched.d.buf.buf.read(word_at, &v, 8);
    return v;
  };
  std::vector<uint64_t> seen;
  ASSERT_TRUE(c->run_until(
      [&] {
        const uint64_t v = word();
        if (seen.empty() || seen.back() != v) seen.push_back(v);
        return (v & RHN_STATUS_WORD_DONE) != 0;
      },
      2'000'000'000));
  ASSERT_GE(seen.size(), 3u) << "no RUNNING state seen";
  uint64_t last = 0;
  for (size_t i = 0; i + 1 < seen.size(); i++) {
    const uint64_t v = seen[i];
    if (v == 0) continue;  // posted, nothing finished yet
    EXPECT_EQ(v & ~(RHN_STATUS_WORD_RUNNING | RHN_STATUS_WORD_LEN_MASK), 0u)
        << std::hex << v;
    EXPECT_TRUE(v & RHN_STATUS_WORD_RUNNING) << std::hex << v;
    const uint64_t bytes = v & RHN_STATUS_WORD_LEN_MASK;
    EXPECT_GT(bytes, last);
    EXPECT_LT(bytes, s.len);
    last = bytes;
  }
  EXPECT_EQ(seen.back(), RHN_STATUS_WORD_DONE | s.len);
  for (Rank& k : ranks) {
    Completion x = wait_one(*c, k.cq());
    EXPECT_TRUE(x.ok()) << describe(x);
  }
  check(s);
}

// ---- (4) Earlier jobs and other processes on the same key.

// Job 1 runs one allreduce on nodes 0 and 1 and its processes exit a
// little apart (their endpoints destroyed, the communicator idle). Job 2
// starts with new endpoints on the same key: every collective of it works.
// (The teardown's ABORT for "the next collective" of job 1 must not be
// taken for job 2's.)
TEST_F(Coll, AnEarlierJobsTeardownDoesNotTouchTheNextJobOnItsKey) {
  start(2);
  make_ranks(2, 1, 1024);
  CollSpec s;
  s.len = 1024;
  run_and_check(s);
  destroy_endpoint(ranks[0]);
  c->run_for(200'000);
  destroy_endpoint(ranks[1]);
  c->run_for(1'000'000);

  make_ranks(2, 1, 1024);  // job 2: new endpoints, the same key
  for (uint64_t i = 0; i < 4; i++) {
    SCOPED_TRACE("job 2, collective " + std::to_string(i));
    s.salt = 10 + i;
    const auto v = run(s);  // status 255: no completion in 2 s
    for (size_t r = 0; r < v.size(); r++)
      EXPECT_TRUE(v[r].ok()) << "rank " << r << ": " << describe(v[r]);
    if (HasFailure()) return;
    check(s);
  }
  EXPECT_EQ(total(RHN_CNT_COLL_ERRORS), 0u);
}

// Another process of the group on the victim's node posts first on the
// victim's key, naming [victim, itself]; the victim names [victim, its peer
// on node 1]. The victim's post is refused (COLL_MISMATCH, counted): no
// operand of one is folded into or written to the other, and nobody's
// collective succeeds on a list its ranks do not share.
TEST_F(Coll, ALaterRankWithAnotherMemberListIsRefused) {
  start(2);
  make_ranks(2, 1, 1024);  // rank 0 the victim (node 0), rank 1 its peer
  Rank intruder;
  intruder.node = 0;
  intruder.rank = 1;  // in its own list
  intruder.d = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, 0,
                                  {.cq_log_depth = 8, .buf_bytes = 4096});
  ASSERT_TRUE(intruder.d.qp);
  for (const Rank* m : {&ranks[0], &intruder}) {
    rhn_mcast_dest d{};
    d.node = m->node;
    d.qpn = m->d.qp->qpn();
    intruder.d.buf.buf.write(lay.members() + 8u * m->rank, &d, 8);
  }
  CollSpec s;
  s.len = 1024;
  prepare(s);
  const auto mine = operand(s.type, 7, s.len, 99);
  intruder.d.buf.buf.write(lay.send(), mine.data(), mine.size());
  const std::vector<uint8_t> poison(s.len, kPoison);
  intruder.d.buf.buf.write(lay.recv(), poison.data(), poison.size());
  const uint64_t errors_before = c->node(0).counter(RHN_CNT_COLL_ERRORS);

  // The intruder first, then the victim and its peer.
  ASSERT_TRUE(intruder.qp().post_send(wr_for(intruder, s)));
  c->run_for(100'000);
  post_each(s);

  Completion v = wait_one(*c, ranks[0].cq(), 100'000'000);
  EXPECT_TRUE(failed_with(v, RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH))
      << "victim: " << describe(v);
  EXPECT_TRUE(result(ranks[0], s) == poison)
      << "the victim's result was written";
  EXPECT_TRUE(intruder.d.buf.buf.bytes(lay.recv(), s.len) == poison)
      << "the intruder got a result made from the victim's operand";
  Completion i = wait_one(*c, intruder.cq(), 100'000'000);
  EXPECT_TRUE(failed_with(i, RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH))
      << "intruder: " << describe(i);
  Completion p = wait_one(*c, ranks[1].cq(), 5'000'000'000ull);
  EXPECT_TRUE(failed_with(p, RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH))
      << "peer: " << describe(p);
  EXPECT_GT(c->node(0).counter(RHN_CNT_COLL_ERRORS), errors_before);
}

using replay::fw_kind;
using replay::in_place_of;

// An earlier job's READY and ABORT (node 1 to node 0, captured as sent)
// arrive while the next job's communicator of the key is live and at the
// collective that ABORT named, with that collective under way at node 0:
// they are counted as stale and change nothing; the collective completes
// at every rank with the right result, and so does the next.
TEST_F(Coll, AnEarlierLifesAbortAndReadyReplayedIntoALiveOneDoNothing) {
  start(2);
  std::vector<uint8_t> old_ready, old_abort;
  c->fabric().tap = [&](size_t port, std::span<const uint8_t> f) {
    const uint32_t kind = port == 1 ? fw_kind(f) : 0;
    if (kind == RHN_FW_COLL_READY && old_ready.empty())
      old_ready.assign(f.begin(), f.end());
    if (kind == RHN_FW_COLL_ABORT && old_abort.empty())
      old_abort.assign(f.begin(), f.end());
  };
  // Job 1: two allreduces of two segments; in the second rank 1 posts
  // late, so node 1 refuses node 0's partial of segment 1 (node 1 is its
  // root) and tells node 0 READY when it starts.
  make_ranks(2, 1, 2048);
  CollSpec s;
  s.len = 2048;
  s.seg = 1024;
  run_and_check(s);
  s.salt = 2;
  run_and_check(s, {1}, 3'000'000);
  // Node 1's process exits first: its ABORT names collective 2.
  destroy_endpoint(ranks[1]);
  c->run_for(200'000);
  destroy_endpoint(ranks[0]);
  c->run_for(1'000'000);
  c->fabric().tap = nullptr;
  ASSERT_FALSE(old_ready.empty());
  ASSERT_FALSE(old_abort.empty());
  rhn_op_hdr op;
  std::memcpy(&op, old_abort.data() + RHN_PKT_HDR_LEN, sizeof op);
  ASSERT_EQ(op.remote_addr >> 32, 2u);

  // Job 2: ranks 0 and 1 on node 0, 2 and 3 on node 1; two collectives.
  make_ranks(2, 2, 2048);
  s.salt = 3;
  run_and_check(s);
  s.salt = 4;
  run_and_check(s);
  // Collective 2 with rank 1 late: node 0 has it under way, node 1 has
  // sent its partials and waits, pinging node 0 every sync_probe_ns. The
  // old messages take the place of its first two pings.
  std::vector<const std::vector<uint8_t>*> replays = {&old_abort, &old_ready};
  c->fabric().drop = [&](size_t port, std::span<const uint8_t> f) {
    if (port != 1 || replays.empty() || fw_kind(f) != RHN_FW_PING) return false;
    c->node(0).engine->frame_arrived(in_place_of(f, *replays.front()));
    replays.erase(replays.begin());
    return true;
  };
  CounterSnap node0(c->node(0));
  s.salt = 5;
  prepare(s);
  post_each(s, [](const Rank& k) { return k.rank == 1; });
  ASSERT_TRUE(c->run_until([&] { return replays.empty(); }, 200'000'000));
  c->run_for(1'000'000);
  c->fabric().drop = nullptr;
  EXPECT_EQ(node0.delta(RHN_CNT_STALE_PACKETS), 2u);
  EXPECT_EQ(node0.delta(RHN_CNT_COLL_ERRORS), 0u);
  ASSERT_TRUE(ranks[1].qp().post_send(wr_for(ranks[1], s)));
  for (Rank& k : ranks) {
    Completion x = wait_one(*c, k.cq(), 2'000'000'000);
    EXPECT_TRUE(x.ok()) << "rank " << k.rank << ": " << describe(x);
  }
  check(s);
  s.salt = 6;
  run_and_check(s);
  EXPECT_EQ(total(RHN_CNT_COLL_ERRORS), 0u);
}

// An ABORT for a node none of whose ranks has posted yet is kept for that
// communicator life only: a later job on the key (new endpoints) runs as
// if it never came, while the earlier life's rank that posts afterwards
// still fails at once (MEMBER_LOST, not a wait for a member that is
// gone). After kCollRememberNs (2 s) it is forgotten.
TEST_F(Coll, ARememberedAbortIsForItsOwnLifeAndForgottenInTime) {
  start(2);
  make_ranks(2, 1, 1024);
  CollSpec s;
  s.len = 1024;
  prepare(s);
  // Rank 0 posts (node 1 has not met the communicator); its process exits.
  ASSERT_TRUE(ranks[0].qp().post_send(wr_for(ranks[0], s)));
  c->run_for(500'000);
  destroy_endpoint(ranks[0]);
  c->run_for(1'000'000);
  Rank late = std::move(ranks[1]);  // job 1's rank 1, not posted yet

  make_ranks(2, 1, 1024);  // job 2 on the key
  for (uint64_t i = 0; i < 2; i++) {
    s.salt = 20 + i;
    run_and_check(s);
    if (HasFailure()) return;
  }
  destroy_endpoint(ranks[0]);
  destroy_endpoint(ranks[1]);
  c->run_for(1'000'000);

  // Job 1's rank 1 posts now: its communicator life fails at once.
  for (uint64_t id = 1; id <= 2; id++) {
    ASSERT_TRUE(late.qp().post_send(wr_for(late, s, id)));
    Completion x = wait_one(*c, late.cq(), 10'000'000);
    EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
        << "post " << id << ": " << describe(x);
  }

  // The same once more, but the rank on node 1 posts after the bound.
  make_ranks(2, 1, 1024);
  s.comm = RHN_AREA_KEY(0, 8);
  prepare(s);
  ASSERT_TRUE(ranks[0].qp().post_send(wr_for(ranks[0], s)));
  c->run_for(500'000);
  destroy_endpoint(ranks[0]);
  c->run_for(2'100'000'000);
  ASSERT_TRUE(ranks[1].qp().post_send(wr_for(ranks[1], s)));
  Completion x = wait_one(*c, ranks[1].cq(), 100'000'000);
  EXPECT_EQ(x.status, 0xff) << "forgotten, it fails nothing: " << describe(x);
}
}  // namespace
}  // namespace rhinet::test
