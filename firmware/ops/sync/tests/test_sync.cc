// SPDX-License-Identifier: BSD-2-Clause
// Locks and counting barriers between endpoints: a counter that
// eight nodes increment under one lock over a lossy fabric, grants in the
// order the manager queued the LOCKs, a 64-node barrier, members, holders
// and managers that die or go away mid-wait (errors, never hangs), bad
// requests and full tables, and the races of the hand-over (a LINK that
// reaches a holder already unlocking; UNLOCKs reaching the manager out of
// order), forced by holding back one node's traffic; and one process
// against another (IDs aimed at another's slots, shares, state of a
// manager endpoint's earlier incarnation).
#include "sync_fixture.h"

namespace rhinet::test {
namespace {

TEST_F(Sync, EightNodesCountUnderOneLockOverALossyFabric) {
  count_under_lock(8, 1000, [&] { lossy(17); });
  EXPECT_GT(c->fabric().counters().lost, 0u);
}

// The timing of the emulated nodes: a hop of 40 us, frames held back
// longer than the retransmission timeout, so retransmissions are spurious
// and old copies arrive long after their answers.
TEST_F(Sync, FourNodesCountUnderOneLockWithLateCopiesOfEveryKind) {
  count_under_lock(4, 400, [&] {
    FaultConfig f;
    f.loss = 0.02;
    f.reorder = 0.1;
    f.duplicate = 0.05;
    f.reorder_delay_ns = 3'000'000;
    c->fabric().set_seed(23);
    c->fabric().set_faults(f);
    c->fabric().set_hop_delay(40'000);
  });
  EXPECT_GT(c->fabric().counters().reordered, 0u);
}

// Processes come and go: every run opens new endpoints (in new contexts)
// on every node and closes them at the end, as the VM's example does when
// it runs again; the NICs' records of the earlier runs must not disturb
// the later ones.
TEST_F(Sync, FourNodesCountUnderALockOfAMemberInRunAfterRun) {
  count_under_lock(
      4, 150,
      [&] {
        lossy(31);
        c->fabric().set_hop_delay(40'000);
      },
      {}, 8, true);
}

// As userlib's ranks do it: unsignaled operations reporting through a
// status word that each post reuses, the manager a member, stalls.
TEST_F(Sync, FourNodesCountThroughStatusWordsLikeUserlib) {
  std::mt19937_64 rng(11);
  count_under_lock(
      4, 300,
      [&] {
        lossy(37);
        c->fabric().set_hop_delay(40'000);
      },
      [&] {
        if (rng() % 500 == 0)
          c->stall(rng() % 4, 1'000'000 + rng() % 30'000'000);
      },
      3, true, true);
}

TEST_F(Sync, FourNodesCountUnderOneLockInRunAfterRun) {
  count_under_lock(
      4, 150,
      [&] {
        lossy(29);
        c->fabric().set_hop_delay(40'000);
      },
      {}, 8);
}

// The emulated nodes' other habit: a NIC thread the host does not run for
// milliseconds, while frames pile up in its receive FIFO and its timers
// all fire when it runs again.
TEST_F(Sync, FourNodesCountUnderOneLockWhileNicsStall) {
  std::mt19937_64 rng(5);
  int stalls = 0;
  count_under_lock(
      4, 400, [&] { c->fabric().set_hop_delay(40'000); },
      [&] {
        if (rng() % 300 == 0)
          c->stall(rng() % 4, 1'000'000 + rng() % 80'000'000), stalls++;
      },
      2, true);
  EXPECT_GT(stalls, 50);
}

// The lock goes in the order the manager queued the LOCKs: each LOCK is
// posted once the manager has queued the one before, so that order is
// known; the holder hands over and every waiter unlocks as soon as it is
// granted. Three rounds, three orders, lossy.
TEST_F(Sync, GrantsFollowTheOrderTheManagerQueuedTheLocks) {
  constexpr uint16_t kNodes = 7;
  // Two firmware messages: LINKs and hand-overs wait for them, in order.
  start(kNodes, [](uint16_t, fw::EngineConfig& e) { e.fw_messages = 2; });
  Ep mgr = make_ep(*c, 0);
  std::vector<Ep> eps;
  for (uint16_t n = 0; n < kNodes; n++) eps.push_back(make_ep(*c, n));
  lossy(5);
  std::mt19937 rng(3);
  for (int round = 0; round < 3; round++) {
    const uint64_t id = 100 + round;
    std::vector<uint16_t> order;
    for (uint16_t n = 1; n < kNodes; n++) order.push_back(n);
    std::shuffle(order.begin(), order.end(), rng);
    Ep& first = eps[0];
    Completion g = run(first, sync_wr(1, RHN_OP_LOCK, mgr, id));
    ASSERT_TRUE(g.ok()) << describe(g);
    for (uint16_t n : order) {
      const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
      ASSERT_TRUE(eps[n].qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, id)));
      until_waits(0, before, 1);
    }
    c->run_for(3'000'000);
    for (uint16_t n : order) quiet(eps[n], 1000);
    ASSERT_TRUE(first.qp().post_send(sync_wr(2, RHN_OP_UNLOCK, mgr, id)));
    std::vector<uint16_t> granted;
    std::vector<bool> unlocked(kNodes, false);
    ASSERT_TRUE(c->run_until(
        [&] {
          for (uint16_t n = 0; n < kNodes; n++) {
            for (const Completion& x : eps[n].cq().poll()) {
              EXPECT_TRUE(x.ok()) << describe(x);
              if (x.wr_id == 1) {
                granted.push_back(n);
                EXPECT_TRUE(
                    eps[n].qp().post_send(sync_wr(2, RHN_OP_UNLOCK, mgr, id)));
              } else {
                unlocked[n] = true;
              }
            }
          }
          return std::count(unlocked.begin(), unlocked.end(), true) == kNodes;
        },
        2'000'000'000));
    EXPECT_EQ(granted, order) << "round " << round;
  }
}

// ---- (2) Barriers.

// 64 nodes, five rounds of one barrier ID over a lossy fabric: each node
// enters the next round when it leaves the last, in a shuffled order and
// at different times; nobody leaves a round before the last one entered.
TEST_F(Sync, SixtyFourNodesPassFiveRoundsOfOneBarrierTogether) {
  constexpr uint16_t kNodes = 64;
  constexpr int kRounds = 5;
  constexpr uint64_t kBarrier = 0xba;
  // Smaller NICs: 64 of them in one process.
  start(
      kNodes,
      [](uint16_t, fw::EngineConfig& e) {
        e.fw_messages = 16;  // a round's SYNC_DONEs wait for them
        e.max_qps = 64;
        e.max_nodes = 64;
        e.send_packet_slots = 512;
        e.tag.recvs = e.tag.msgs = 64;
      },
      4u << 20);
  Ep mgr = make_ep(*c, 0);
  std::vector<Ep> eps;
  for (uint16_t n = 0; n < kNodes; n++) eps.push_back(make_ep(*c, n));
  lossy(11);
  CounterSnap m0(c->node(0));
  std::vector<std::vector<uint64_t>> entered(kRounds), left(kRounds);
  std::vector<int> round(kNodes, 0);
  std::mt19937 rng(9);
  std::vector<uint16_t> order(kNodes);
  for (uint16_t n = 0; n < kNodes; n++) order[n] = n;
  std::shuffle(order.begin(), order.end(), rng);
  auto enter = [&](uint16_t n) {
    entered[round[n]].push_back(c->clock().now());
    EXPECT_TRUE(eps[n].qp().post_send(
        sync_wr(round[n], RHN_OP_BARRIER, mgr, kBarrier, kNodes)));
  };
  // The first round's arrivals are spread out.
  for (uint16_t n : order) {
    enter(n);
    c->run_for(20'000);
  }
  int finished = 0;
  ASSERT_TRUE(c->run_until(
      [&] {
        for (uint16_t n = 0; n < kNodes; n++) {
          for (const Completion& x : eps[n].cq().poll()) {
            EXPECT_TRUE(x.ok()) << "node " << n << " " << describe(x);
            EXPECT_EQ(x.opcode, RHN_CQE_OP_BARRIER);
            EXPECT_EQ(x.wr_id, uint64_t(round[n]));
            left[round[n]].push_back(c->clock().now());
            if (++round[n] == kRounds)
              finished++;
            else
              enter(n);
          }
        }
        return finished == kNodes;
      },
      20'000'000'000ull));
  for (int r = 0; r < kRounds; r++) {
    ASSERT_EQ(entered[r].size(), kNodes);
    ASSERT_EQ(left[r].size(), kNodes);
    EXPECT_LE(*std::max_element(entered[r].begin(), entered[r].end()),
              *std::min_element(left[r].begin(), left[r].end()))
        << "round " << r << ": a node left before the last entered";
  }
  EXPECT_EQ(m0.delta(RHN_CNT_BARRIER_ROUNDS), uint64_t(kRounds));
}

// ---- (3) Members, holders and managers that die or go away.

// The holder's node dies (its link goes down for good): the manager finds
// it dead while others wait, and every waiter fails with MEMBER_LOST; the
// lock is free again.
TEST_F(Sync, AHoldersNodeThatDiesFailsTheWaitersAndFreesTheLock) {
  start(4);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w1 = make_ep(*c, 2),
     w2 = make_ep(*c, 3);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 7)).ok());
  const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
  ASSERT_TRUE(w1.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 7)));
  ASSERT_TRUE(w2.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 7)));
  until_waits(0, before, 2);
  c->run_for(2'000'000);
  c->fabric().set_link(1, false);
  for (Ep* w : {&w1, &w2}) {
    Completion x = wait_one(*c, w->cq(), 5'000'000'000ull);
    EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
        << describe(x);
  }
  EXPECT_GT(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
  // Free again: granted at once.
  Completion g = run(w1, sync_wr(2, RHN_OP_LOCK, mgr, 7));
  EXPECT_TRUE(g.ok()) << describe(g);
}

// The holder's node restarts (its NIC loses its state): the manager's
// probe meets the new NIC, the channel fails, the waiters fail.
TEST_F(Sync, AHoldersNodeThatRestartsFailsTheWaiters) {
  start(3);
  Ep mgr = make_ep(*c, 0), w = make_ep(*c, 2);
  {
    Ep h = make_ep(*c, 1);
    ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 8)).ok());
    const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
    ASSERT_TRUE(w.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 8)));
    until_waits(0, before, 1);
    c->run_for(2'000'000);
  }  // the process's objects go with its node
  ASSERT_TRUE(c->power_cycle(1, c->node(1).config));
  Completion x = wait_one(*c, w.cq(), 5'000'000'000ull);
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
      << describe(x);
  // The node comes back as a member.
  Ep h2 = make_ep(*c, 1);
  Completion g = run(h2, sync_wr(2, RHN_OP_LOCK, mgr, 8));
  EXPECT_TRUE(g.ok()) << describe(g);
}

// A process that exits while holding or waiting: its NIC releases the
// lock for it (passes it on, now or when it gets it); nobody waits
// forever and nobody else fails.
TEST_F(Sync, AnEndpointDestroyedWhileHoldingOrWaitingPassesTheLockOn) {
  start(5);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w1 = make_ep(*c, 2),
     w2 = make_ep(*c, 3), w3 = make_ep(*c, 4);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 9)).ok());
  const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
  for (Ep* w : {&w1, &w2, &w3}) {
    ASSERT_TRUE(w->qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 9)));
    until_waits(0, before, uint64_t(w->node - 1));
  }
  c->run_for(2'000'000);
  destroy(w2);  // waiting: skipped when its turn comes
  destroy(h);   // holding: released at once
  Completion g = wait_one(*c, w1.cq(), 50'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  quiet(w3);
  ASSERT_TRUE(run(w1, sync_wr(2, RHN_OP_UNLOCK, mgr, 9)).ok());
  g = wait_one(*c, w3.cq(), 50'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  ASSERT_TRUE(run(w3, sync_wr(2, RHN_OP_UNLOCK, mgr, 9)).ok());
  // Nothing is left held: granted at once.
  g = run(w1, sync_wr(3, RHN_OP_LOCK, mgr, 9));
  EXPECT_TRUE(g.ok()) << describe(g);
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
}

// The grant of a LOCK reaches a NIC whose endpoint went away meanwhile:
// the NIC gives the lock back for it, and the next LOCK is granted.
TEST_F(Sync, AGrantForAnEndpointThatWentAwayIsGivenBack) {
  start(3);
  Ep mgr = make_ep(*c, 0), a = make_ep(*c, 1), b = make_ep(*c, 2);
  FaultConfig all_lost;
  all_lost.loss = 1.0;
  c->fabric().set_port_faults(1, all_lost);
  c->fabric().set_port_faults(0, FaultConfig{});
  ASSERT_TRUE(a.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 13)));
  c->run_for(1'000'000);  // granted; the answer is held back
  destroy(a);
  c->fabric().clear_port_faults(1);
  c->fabric().clear_port_faults(0);
  Completion g = run(b, sync_wr(1, RHN_OP_LOCK, mgr, 13));
  EXPECT_TRUE(g.ok()) << describe(g);
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
}

// The manager endpoint goes: waiting LOCKs and BARRIERs fail, and the
// holder's UNLOCK says the lock was lost.
TEST_F(Sync, AManagerEndpointDestroyedFailsEveryWait) {
  start(4);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w = make_ep(*c, 2),
     b = make_ep(*c, 3);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 1)).ok());
  ASSERT_TRUE(w.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 1)));
  ASSERT_TRUE(b.qp().post_send(sync_wr(1, RHN_OP_BARRIER, mgr, 1, 3)));
  c->run_for(2'000'000);
  quiet(w);
  quiet(b);
  destroy(mgr);
  for (Ep* e : {&w, &b}) {
    Completion x = wait_one(*c, e->cq(), 50'000'000);
    EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
        << describe(x);
  }
  c->run_for(1'000'000);
  Completion u = run(h, sync_wr(2, RHN_OP_UNLOCK, mgr, 1));
  EXPECT_TRUE(failed_with(u, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
      << describe(u);
  // The endpoints go on: a LOCK at a new manager works.
  Ep mgr2 = make_ep(*c, 0);
  Completion g = run(w, sync_wr(3, RHN_OP_LOCK, mgr2, 1));
  EXPECT_TRUE(g.ok()) << describe(g);
}

// The manager's node dies: what waits on it fails with MEMBER_LOST (its
// NIC probes the manager while it waits); the holder's UNLOCK fails too.
TEST_F(Sync, AManagersNodeThatDiesFailsTheWaitsOnIt) {
  start(4);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w = make_ep(*c, 2),
     b = make_ep(*c, 3);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 2)).ok());
  ASSERT_TRUE(w.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 2)));
  ASSERT_TRUE(b.qp().post_send(sync_wr(1, RHN_OP_BARRIER, mgr, 2, 2)));
  c->run_for(2'000'000);
  c->fabric().set_link(0, false);
  for (Ep* e : {&w, &b}) {
    Completion x = wait_one(*c, e->cq(), 5'000'000'000ull);
    EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
        << describe(x);
  }
  // The holder learns it when its own NIC gives up on the manager, or at
  // the latest when its UNLOCK does.
  Completion u = run(h, sync_wr(2, RHN_OP_UNLOCK, mgr, 2), 5'000'000'000ull);
  EXPECT_FALSE(u.ok()) << describe(u);
  EXPECT_NE(u.status, 0xff) << "the UNLOCK hung";
}

// A barrier member's node dies before it arrives in the second round: the
// manager knows it from the first, finds it dead, and fails the round;
// the next round (without it) completes. A member that dies after it
// arrived fails its round too.
TEST_F(Sync, ABarrierMemberThatDiesFailsTheRound) {
  start(5);
  Ep mgr = make_ep(*c, 0), a = make_ep(*c, 1), b = make_ep(*c, 2),
     d = make_ep(*c, 3), e = make_ep(*c, 4);
  for (Ep* x : {&a, &b, &d})
    ASSERT_TRUE(x->qp().post_send(sync_wr(1, RHN_OP_BARRIER, mgr, 5, 3)));
  for (Ep* x : {&a, &b, &d}) {
    Completion r = wait_one(*c, x->cq());
    ASSERT_TRUE(r.ok()) << describe(r);
  }
  // Round two: d never comes.
  ASSERT_TRUE(a.qp().post_send(sync_wr(2, RHN_OP_BARRIER, mgr, 5, 3)));
  ASSERT_TRUE(b.qp().post_send(sync_wr(2, RHN_OP_BARRIER, mgr, 5, 3)));
  c->run_for(1'000'000);
  c->fabric().set_link(3, false);
  for (Ep* x : {&a, &b}) {
    Completion r = wait_one(*c, x->cq(), 5'000'000'000ull);
    EXPECT_TRUE(failed_with(r, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
        << describe(r);
  }
  // Without it.
  ASSERT_TRUE(a.qp().post_send(sync_wr(3, RHN_OP_BARRIER, mgr, 5, 2)));
  Completion r = run(b, sync_wr(3, RHN_OP_BARRIER, mgr, 5, 2));
  EXPECT_TRUE(r.ok()) << describe(r);
  r = wait_one(*c, a.cq());
  EXPECT_TRUE(r.ok()) << describe(r);
  // Another ID: e arrives and dies; a, who arrived too, fails.
  ASSERT_TRUE(a.qp().post_send(sync_wr(4, RHN_OP_BARRIER, mgr, 6, 3)));
  ASSERT_TRUE(e.qp().post_send(sync_wr(4, RHN_OP_BARRIER, mgr, 6, 3)));
  c->run_for(1'000'000);
  c->fabric().set_link(4, false);
  r = wait_one(*c, a.cq(), 5'000'000'000ull);
  EXPECT_TRUE(failed_with(r, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
      << describe(r);
}

// ---- (4) Bad requests and full tables.

TEST_F(Sync, RequestsTheNicRefuse) {
  start(3);
  Ep mgr = make_ep(*c, 0), a = make_ep(*c, 1), b = make_ep(*c, 2);
  // UNLOCK of a lock not held: an error, and the endpoint goes on.
  Completion x = run(a, sync_wr(1, RHN_OP_UNLOCK, mgr, 3));
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_INV_REQ_ERR, RHN_SYN_NOT_HELD))
      << describe(x);
  EXPECT_EQ(x.opcode, RHN_CQE_OP_UNLOCK);
  x = run(a, sync_wr(2, RHN_OP_LOCK, mgr, 3));
  ASSERT_TRUE(x.ok()) << describe(x);
  EXPECT_EQ(x.opcode, RHN_CQE_OP_LOCK);
  // Held by a, unlocked by b: not b's.
  x = run(b, sync_wr(1, RHN_OP_UNLOCK, mgr, 3));
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_INV_REQ_ERR, RHN_SYN_NOT_HELD))
      << describe(x);
  // A second LOCK of what it holds would wait for itself.
  x = run(a, sync_wr(3, RHN_OP_LOCK, mgr, 3));
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_INV_REQ_ERR, RHN_SYN_BAD_WQE))
      << describe(x);
  x = run(a, sync_wr(4, RHN_OP_UNLOCK, mgr, 3));
  EXPECT_TRUE(x.ok()) << describe(x);
  // A barrier count that differs from the round's: refused, the round
  // goes on.
  ASSERT_TRUE(a.qp().post_send(sync_wr(5, RHN_OP_BARRIER, mgr, 4, 2)));
  c->run_for(1'000'000);
  x = run(b, sync_wr(2, RHN_OP_BARRIER, mgr, 4, 3));
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_INV_REQ_ERR, RHN_SYN_NOT_HELD))
      << describe(x);
  x = run(b, sync_wr(3, RHN_OP_BARRIER, mgr, 4, 2));
  EXPECT_TRUE(x.ok()) << describe(x);
  x = wait_one(*c, a.cq());
  EXPECT_TRUE(x.ok()) << describe(x);
  // Malformed WQEs: a count of 0 or beyond the maximum, data. The
  // endpoint is in error afterwards, as for any malformed WQE.
  for (uint32_t count : {0u, uint32_t{RHN_BARRIER_MAX_MEMBERS + 1}}) {
    Ep e = make_ep(*c, 1);
    x = run(e, sync_wr(1, RHN_OP_BARRIER, mgr, 4, count));
    EXPECT_TRUE(failed_with(x, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE))
        << count << " " << describe(x);
  }
  {
    Ep e = make_ep(*c, 1);
    SendWr wr = sync_wr(1, RHN_OP_LOCK, mgr, 4);
    wr.sges = {e.d.buf.sge(0, 8)};
    x = run(e, wr);
    EXPECT_TRUE(failed_with(x, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE))
        << describe(x);
  }
  // Not an endpoint: RC and UD QPs take no locks.
  RcPair rc = make_rc_pair(*c, 1, 2);
  ASSERT_TRUE(rc.ok);
  ASSERT_TRUE(rc.qp_a->post_send(sync_wr(1, RHN_OP_LOCK, mgr, 4)));
  x = wait_one(*c, *rc.cq_a);
  EXPECT_TRUE(failed_with(x, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE))
      << describe(x);
  DatagramNode ud = make_datagram_node(*c, 1, RHN_QP_UD, 0x11);
  ASSERT_TRUE(ud.qp);
  ASSERT_TRUE(ud.qp->post_send(sync_wr(1, RHN_OP_BARRIER, mgr, 4, 2)));
  x = wait_one(*c, *ud.cq);
  EXPECT_TRUE(failed_with(x, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE))
      << describe(x);
  EXPECT_GT(c->node(1).counter(RHN_CNT_SYNC_ERRORS), 0u);
  EXPECT_GT(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
}

// A process whose manager endpoint holds its share of the lock table gets
// BUSY (its LOCK is sent again until a lock is free); another process's
// manager on the same NIC still has its share.
TEST_F(Sync, OneProcessCannotTakeEveryLockOfTheManager) {
  start(2, [](uint16_t, fw::EngineConfig& e) {
    e.sync.locks = 16;  // 8 per context
    e.sync.context_share = 128;
  });
  Ep hog_mgr = make_ep(*c, 0), other_mgr = make_ep(*c, 0);
  Ep a = make_ep(*c, 1), b = make_ep(*c, 1);
  for (uint64_t id = 0; id < 8; id++) {
    Completion x = run(a, sync_wr(id, RHN_OP_LOCK, hog_mgr, id));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
  }
  CounterSnap m0(c->node(0));
  ASSERT_TRUE(a.qp().post_send(sync_wr(8, RHN_OP_LOCK, hog_mgr, 8)));
  quiet(a, 5'000'000);  // refused BUSY, sent again, still no room
  EXPECT_GT(m0.delta(RHN_CNT_RNR_NAKS_SENT), 0u);
  EXPECT_GT(m0.delta(RHN_CNT_SYNC_ERRORS), 0u);
  Completion x = run(b, sync_wr(1, RHN_OP_LOCK, other_mgr, 1));
  EXPECT_TRUE(x.ok()) << describe(x);
  // One lock goes: the refused LOCK gets its place.
  ASSERT_TRUE(a.qp().post_send(sync_wr(9, RHN_OP_UNLOCK, hog_mgr, 0)));
  auto v = c->wait_cqes(a.cq(), 2, 100'000'000);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  for (const auto& y : v) EXPECT_TRUE(y.ok()) << describe(y);
}

// A member's NIC keeps a record of each lock its endpoints hold or wait
// for: beyond a process's share the LOCK fails at once (GENERAL_ERR,
// BUSY), the endpoint goes on.
TEST_F(Sync, OneProcessCannotTakeEveryLockRecordOfItsNic) {
  start(2, [](uint16_t, fw::EngineConfig& e) {
    e.sync.holds = 8;  // 4 per context
  });
  Ep mgr = make_ep(*c, 0), a = make_ep(*c, 1), b = make_ep(*c, 1);
  for (uint64_t id = 0; id < 4; id++)
    ASSERT_TRUE(run(a, sync_wr(id, RHN_OP_LOCK, mgr, id)).ok());
  Completion x = run(a, sync_wr(4, RHN_OP_LOCK, mgr, 4));
  EXPECT_TRUE(failed_with(x, RHN_CQE_GENERAL_ERR, RHN_SYN_BUSY)) << describe(x);
  EXPECT_TRUE(run(b, sync_wr(1, RHN_OP_LOCK, mgr, 4)).ok());
  ASSERT_TRUE(run(a, sync_wr(5, RHN_OP_UNLOCK, mgr, 0)).ok());
  x = run(a, sync_wr(6, RHN_OP_LOCK, mgr, 5));
  EXPECT_TRUE(x.ok()) << describe(x);
}

}  // namespace
}  // namespace rhinet::test
