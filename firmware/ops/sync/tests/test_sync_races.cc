// SPDX-License-Identifier: BSD-2-Clause
// Locks and barriers: races of the hand-over forced by holding back one
// node, one process against another (placement, shares, incarnations),
// and the VM's conditions pushed further (chaos). The fixture is
// sync_fixture.h, the other cases test_sync.cc.
#include "sync_fixture.h"

namespace rhinet::test {
namespace {

// ---- (5) Races of the hand-over, forced by holding back one node.

// Holds back every frame to node `held` (its own frames still leave).
void hold_back(SimCluster& c, size_t held, std::initializer_list<size_t> free) {
  FaultConfig all_lost;
  all_lost.loss = 1.0;
  c.fabric().set_port_faults(held, all_lost);
  for (size_t p : free) c.fabric().set_port_faults(p, FaultConfig{});
}

void let_go(SimCluster& c) {
  for (size_t p = 0; p < c.size(); p++) c.fabric().clear_port_faults(p);
}

// The holder UNLOCKs while the LINK naming its successor is still on the
// way to its NIC: the manager answers QUEUED, and the holder's NIC passes
// the lock when the LINK comes, completing the UNLOCK then.
TEST_F(Sync, AHolderUnlockingBeforeItsSuccessorsLinkArrivesPassesItThen) {
  start(3);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w = make_ep(*c, 2);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 11)).ok());
  hold_back(*c, 1, {0, 2});  // nothing reaches node 1
  const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
  ASSERT_TRUE(w.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 11)));
  until_waits(0, before, 1);
  CounterSnap n1(c->node(1));
  ASSERT_TRUE(h.qp().post_send(sync_wr(2, RHN_OP_UNLOCK, mgr, 11)));
  c->run_for(1'000'000);  // the UNLOCK reached the manager, not passed
  quiet(h, 1000);
  quiet(w, 1000);
  let_go(*c);
  Completion u = wait_one(*c, h.cq(), 100'000'000);
  EXPECT_TRUE(u.ok()) << describe(u);
  Completion g = wait_one(*c, w.cq(), 100'000'000);
  EXPECT_TRUE(g.ok()) << describe(g);
  EXPECT_EQ(n1.delta(RHN_CNT_LOCK_GRANTS), 1u) << "node 1 passed it on";
  ASSERT_TRUE(run(w, sync_wr(2, RHN_OP_UNLOCK, mgr, 11)).ok());
  Completion again = run(h, sync_wr(3, RHN_OP_LOCK, mgr, 11));
  EXPECT_TRUE(again.ok()) << describe(again);
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
}

// The holder's UNLOCK (PASSED) is held back while the lock goes on twice
// and comes back free: the successors' UNLOCKs reach the manager first,
// a new LOCK is granted before the first UNLOCK arrives, and that UNLOCK
// still completes.
TEST_F(Sync, UnlocksReachingTheManagerOutOfOrderKeepTheQueue) {
  start(4);
  Ep mgr = make_ep(*c, 0), h = make_ep(*c, 1), w1 = make_ep(*c, 2),
     w2 = make_ep(*c, 3);
  ASSERT_TRUE(run(h, sync_wr(1, RHN_OP_LOCK, mgr, 12)).ok());
  const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
  ASSERT_TRUE(w1.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 12)));
  until_waits(0, before, 1);
  ASSERT_TRUE(w2.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, 12)));
  until_waits(0, before, 2);
  c->run_for(2'000'000);  // both LINKs are in
  // Node 1's frames reach nodes 2 and 3, not the manager.
  FaultConfig all_lost;
  all_lost.loss = 1.0;
  c->fabric().set_port_faults(1, all_lost);
  c->fabric().set_port_faults(2, FaultConfig{});
  c->fabric().set_port_faults(3, FaultConfig{});
  ASSERT_TRUE(h.qp().post_send(sync_wr(2, RHN_OP_UNLOCK, mgr, 12)));
  Completion g = wait_one(*c, w1.cq(), 50'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  Completion u = run(w1, sync_wr(2, RHN_OP_UNLOCK, mgr, 12));
  ASSERT_TRUE(u.ok()) << describe(u);
  g = wait_one(*c, w2.cq(), 50'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  u = run(w2, sync_wr(2, RHN_OP_UNLOCK, mgr, 12));
  ASSERT_TRUE(u.ok()) << describe(u);
  // Free, though the first holder's UNLOCK has not arrived.
  g = run(w1, sync_wr(3, RHN_OP_LOCK, mgr, 12));
  ASSERT_TRUE(g.ok()) << describe(g);
  quiet(h, 1000);
  let_go(*c);
  u = wait_one(*c, h.cq(), 100'000'000);
  EXPECT_TRUE(u.ok()) << describe(u);
  EXPECT_TRUE(run(w1, sync_wr(4, RHN_OP_UNLOCK, mgr, 12)).ok());
  EXPECT_TRUE(run(h, sync_wr(5, RHN_OP_LOCK, mgr, 12)).ok());
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SYNC_ERRORS), 0u);
}

// ---- (6) One process against another: placement, shares, incarnations.

// Where the NIC used to place a lock or barrier (ops/sync before keyed
// placement): a public hash of (manager QPN, the QP's generation, ID),
// probed over kOldProbes consecutive slots. The generation is the NIC's
// count of QP creations and resets, so a process can guess it: on a fresh
// NIC the n-th QP created has generation n.
constexpr uint32_t kOldProbes = 16;
uint32_t public_slot(size_t size, uint32_t qpn, uint32_t gen, uint64_t id,
                     uint32_t probe) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t{qpn} << 32 | gen);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return static_cast<uint32_t>((h + probe) % size);
}

// IDs that the public hash puts, each on its first probe, on a different
// slot of the victim's probe window for `victim_id`.
std::vector<uint64_t> ids_covering(size_t size, uint32_t victim_qpn,
                                   uint32_t victim_gen, uint64_t victim_id,
                                   uint32_t qpn, uint32_t gen) {
  std::vector<uint32_t> window;
  for (uint32_t p = 0; p < kOldProbes; p++)
    window.push_back(public_slot(size, victim_qpn, victim_gen, victim_id, p));
  std::vector<uint64_t> ids;
  std::vector<bool> taken(size, false);
  for (uint64_t id = 1; ids.size() < window.size() && id < 1'000'000; id++) {
    const uint32_t s = public_slot(size, qpn, gen, id, 0);
    if (taken[s] || std::find(window.begin(), window.end(), s) == window.end())
      continue;
    taken[s] = true;
    ids.push_back(id);
  }
  return ids;
}

// Defect 4: another process's manager endpoint on the same NIC takes 16
// locks whose slots cover the probe window of the victim's free lock;
// the victim's LOCK must still be granted (the table has 1008 slots free
// and neither process is near its share).
TEST_F(Sync, SixteenLocksOfOneProcessDoNotLockOutAnothersLock) {
  start(2);
  // On node 0, the first QPs created: generations 1 and 2.
  Ep victim_mgr = make_ep(*c, 0), attacker_mgr = make_ep(*c, 0);
  Ep victim = make_ep(*c, 1), attacker = make_ep(*c, 1);
  constexpr uint64_t kVictimLock = 0x5eed;
  const auto ids = ids_covering(1024, victim_mgr.qpn(), 1, kVictimLock,
                                attacker_mgr.qpn(), 2);
  ASSERT_EQ(ids.size(), kOldProbes);
  for (uint64_t id : ids) {
    Completion x = run(attacker, sync_wr(id, RHN_OP_LOCK, attacker_mgr, id));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
  }
  Completion g =
      run(victim, sync_wr(1, RHN_OP_LOCK, victim_mgr, kVictimLock), 50'000'000);
  EXPECT_TRUE(g.ok()) << "the victim's LOCK of a free lock: " << describe(g);
  if (!g.ok()) return;
  ASSERT_TRUE(
      run(victim, sync_wr(2, RHN_OP_UNLOCK, victim_mgr, kVictimLock)).ok());
  for (uint64_t id : ids)
    ASSERT_TRUE(
        run(attacker, sync_wr(id, RHN_OP_UNLOCK, attacker_mgr, id)).ok());
}

// The barrier table, the same way: 16 pending rounds of another process
// on the slots of the victim's barrier ID.
TEST_F(Sync, SixteenRoundsOfOneProcessDoNotLockOutAnothersBarrier) {
  start(2);
  Ep victim_mgr = make_ep(*c, 0), attacker_mgr = make_ep(*c, 0);
  Ep v1 = make_ep(*c, 1), v2 = make_ep(*c, 1), attacker = make_ep(*c, 1);
  constexpr uint64_t kVictimBarrier = 0xba5e;
  const auto ids = ids_covering(256, victim_mgr.qpn(), 1, kVictimBarrier,
                                attacker_mgr.qpn(), 2);
  ASSERT_EQ(ids.size(), kOldProbes);
  const uint64_t before = c->node(0).counter(RHN_CNT_SYNC_ERRORS);
  // Rounds of two that one member entered: pending, never given up.
  for (uint64_t id : ids)
    ASSERT_TRUE(attacker.qp().post_send(
        sync_wr(id, RHN_OP_BARRIER, attacker_mgr, id, 2)));
  c->run_for(2'000'000);
  quiet(attacker, 1000);
  EXPECT_EQ(c->node(0).counter(RHN_CNT_SYNC_ERRORS), before);
  ASSERT_TRUE(v1.qp().post_send(
      sync_wr(1, RHN_OP_BARRIER, victim_mgr, kVictimBarrier, 2)));
  Completion x =
      run(v2, sync_wr(1, RHN_OP_BARRIER, victim_mgr, kVictimBarrier, 2),
          50'000'000);
  EXPECT_TRUE(x.ok()) << "the victim's round: " << describe(x);
  x = wait_one(*c, v1.cq(), 50'000'000);
  EXPECT_TRUE(x.ok()) << "the victim's round: " << describe(x);
}

// With small tables, every process at its full share: one process's
// locks (placed to crowd the others' windows as well as the public hash
// allows) never make another's LOCK wait while the table has room; only a
// full table does, and a lock given back makes room again.
TEST_F(Sync, AProcessAtItsShareLeavesTheRestOfTheLockTableToOthers) {
  start(2, [](uint16_t, fw::EngineConfig& e) {
    e.sync.locks = 64;  // 32 per context
    e.sync.context_share = 128;
  });
  Ep victim_mgr = make_ep(*c, 0), attacker_mgr = make_ep(*c, 0),
     third_mgr = make_ep(*c, 0);
  Ep victim = make_ep(*c, 1), attacker = make_ep(*c, 1), third = make_ep(*c, 1);
  // The attacker's share: first IDs that cover the window of the
  // victim's first lock, then any.
  std::vector<uint64_t> ids =
      ids_covering(64, victim_mgr.qpn(), 1, 0, attacker_mgr.qpn(), 2);
  for (uint64_t id = 1000; ids.size() < 32; id++) ids.push_back(id);
  for (uint64_t id : ids) {
    Completion x = run(attacker, sync_wr(id, RHN_OP_LOCK, attacker_mgr, id));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
  }
  // Its 33rd is beyond its share.
  ASSERT_TRUE(
      attacker.qp().post_send(sync_wr(1, RHN_OP_LOCK, attacker_mgr, 5000)));
  quiet(attacker, 3'000'000);
  // The victim gets the other 32 slots.
  for (uint64_t id = 0; id < 32; id++) {
    Completion x = run(victim, sync_wr(id, RHN_OP_LOCK, victim_mgr, id));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
  }
  // Now the table is full: a third process waits (BUSY, sent again) ...
  CounterSnap m0(c->node(0));
  ASSERT_TRUE(third.qp().post_send(sync_wr(1, RHN_OP_LOCK, third_mgr, 1)));
  quiet(third, 3'000'000);
  EXPECT_GT(m0.delta(RHN_CNT_RNR_NAKS_SENT), 0u);
  // ... until one lock goes.
  ASSERT_TRUE(run(victim, sync_wr(99, RHN_OP_UNLOCK, victim_mgr, 0)).ok());
  Completion x = wait_one(*c, third.cq(), 100'000'000);
  EXPECT_TRUE(x.ok()) << describe(x);
}

// A barrier ID with no round pending is recycled only for a new ID of its
// own process: another process that churns through IDs (beyond its
// share, by recycling its own) never makes the victim's ID forget the
// nodes it has seen, so a member that dies before it arrives still fails
// the victim's round instead of hanging it.
TEST_F(Sync, BarrierIdsOfOneProcessAreNeverForgottenForAnothers) {
  start(4, [](uint16_t, fw::EngineConfig& e) {
    e.sync.barriers = 8;  // 4 per context
    e.sync.context_share = 128;
  });
  Ep victim_mgr = make_ep(*c, 0), churn_mgr = make_ep(*c, 0),
     filler_mgr = make_ep(*c, 0);
  Ep v1 = make_ep(*c, 1), v2 = make_ep(*c, 2), churn = make_ep(*c, 3);
  constexpr uint64_t kVictimBarrier = 77;
  ASSERT_TRUE(v1.qp().post_send(
      sync_wr(1, RHN_OP_BARRIER, victim_mgr, kVictimBarrier, 2)));
  ASSERT_TRUE(
      run(v2, sync_wr(1, RHN_OP_BARRIER, victim_mgr, kVictimBarrier, 2)).ok());
  ASSERT_TRUE(wait_one(*c, v1.cq()).ok());
  // The table fills: three IDs of a third process, four of the churner.
  for (uint64_t id = 0; id < 3; id++)
    ASSERT_TRUE(
        run(churn, sync_wr(id, RHN_OP_BARRIER, filler_mgr, id, 1)).ok());
  // Twenty IDs of one round each: beyond its share it recycles its own.
  for (uint64_t id = 100; id < 120; id++) {
    Completion x = run(churn, sync_wr(id, RHN_OP_BARRIER, churn_mgr, id, 1));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
  }
  // The victim's ID still knows node 2: it dies before it arrives, and
  // v1's round fails.
  ASSERT_TRUE(v1.qp().post_send(
      sync_wr(2, RHN_OP_BARRIER, victim_mgr, kVictimBarrier, 2)));
  c->run_for(1'000'000);
  c->fabric().set_link(2, false);
  Completion x = wait_one(*c, v1.cq(), 5'000'000'000ull);
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
      << describe(x);
}

// A holder of a lock at a manager endpoint that was reset (the same QPN,
// a new incarnation) has not heard yet that its lock broke; its UNLOCK
// reaches the new incarnation, where another process holds a lock of the
// same ID and a third waits for it. The stale UNLOCK releases nothing:
// the waiter is granted only when the live holder unlocks.
TEST_F(Sync, AStaleHolderOfAResetManagerReleasesNothingOfTheNewOne) {
  start(4);
  Ep mgr = make_ep(*c, 0), stale = make_ep(*c, 1), h = make_ep(*c, 2),
     w = make_ep(*c, 3);
  constexpr uint64_t kLock = 7;
  ASSERT_TRUE(run(stale, sync_wr(1, RHN_OP_LOCK, mgr, kLock)).ok());
  hold_back(*c, 1, {0, 2, 3});  // node 1 does not hear that it broke
  const uint32_t qpn = mgr.qpn();
  ASSERT_TRUE(mgr.qp().to_reset().ok());
  ASSERT_TRUE(activate_datagram(mgr.qp(), 0));
  ASSERT_EQ(mgr.qpn(), qpn);
  Completion g = run(h, sync_wr(1, RHN_OP_LOCK, mgr, kLock));
  ASSERT_TRUE(g.ok()) << describe(g);
  const uint64_t before = c->node(0).counter(RHN_CNT_LOCK_WAITS);
  ASSERT_TRUE(w.qp().post_send(sync_wr(1, RHN_OP_LOCK, mgr, kLock)));
  until_waits(0, before, 1);
  // The stale holder's UNLOCK (its record still says held) leaves.
  ASSERT_TRUE(stale.qp().post_send(sync_wr(2, RHN_OP_UNLOCK, mgr, kLock)));
  c->run_for(3'000'000);
  quiet(w, 1000);
  let_go(*c);
  Completion u = wait_one(*c, stale.cq(), 100'000'000);
  EXPECT_FALSE(u.ok()) << describe(u);
  EXPECT_NE(u.status, 0xff) << "the stale UNLOCK hung";
  quiet(w, 2'000'000);
  // The live holder's UNLOCK passes it on.
  ASSERT_TRUE(run(h, sync_wr(2, RHN_OP_UNLOCK, mgr, kLock)).ok());
  g = wait_one(*c, w.cq(), 100'000'000);
  EXPECT_TRUE(g.ok()) << describe(g);
  EXPECT_TRUE(run(w, sync_wr(2, RHN_OP_UNLOCK, mgr, kLock)).ok());
  // The stale endpoint goes on at the new incarnation.
  EXPECT_TRUE(run(stale, sync_wr(3, RHN_OP_LOCK, mgr, kLock)).ok());
}

// An arrival in a round of a manager endpoint's earlier incarnation does
// not count in the new incarnation's round of the same ID.
TEST_F(Sync, ABarrierArrivalOfAResetManagerDoesNotCountInTheNewRound) {
  start(3);
  Ep mgr = make_ep(*c, 0), a = make_ep(*c, 1), b = make_ep(*c, 2);
  constexpr uint64_t kBarrier = 9;
  ASSERT_TRUE(a.qp().post_send(sync_wr(1, RHN_OP_BARRIER, mgr, kBarrier, 2)));
  c->run_for(2'000'000);
  quiet(a, 1000);
  ASSERT_TRUE(mgr.qp().to_reset().ok());
  ASSERT_TRUE(activate_datagram(mgr.qp(), 0));
  Completion x = wait_one(*c, a.cq(), 50'000'000);
  EXPECT_TRUE(failed_with(x, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST))
      << describe(x);
  // b alone does not complete the new round of two.
  ASSERT_TRUE(b.qp().post_send(sync_wr(1, RHN_OP_BARRIER, mgr, kBarrier, 2)));
  c->run_for(3'000'000);
  quiet(b, 1000);
  ASSERT_TRUE(a.qp().post_send(sync_wr(2, RHN_OP_BARRIER, mgr, kBarrier, 2)));
  x = wait_one(*c, a.cq(), 50'000'000);
  EXPECT_TRUE(x.ok()) << describe(x);
  x = wait_one(*c, b.cq(), 50'000'000);
  EXPECT_TRUE(x.ok()) << describe(x);
}

// The VM's conditions pushed further, one seed per case: frames held back
// past the retransmission timeout, duplicated and lost, NIC threads that
// stall, as few as two firmware messages (LINKs and grants wait in the
// owed FIFOs, behind answers sent at once) and a probe that runs every
// 1..7 ms (records dropped as stale while operations are in flight).
class SyncUnderChaos : public Sync,
                       public ::testing::WithParamInterface<int> {};

TEST_P(SyncUnderChaos, FourNodesCountExactlyThroughStatusWords) {
  const int seed = GetParam();
  std::mt19937_64 rng(seed);
  count_under_lock(
      4, 200,
      [&] {
        FaultConfig f;
        f.loss = 0.01 * (seed % 4);
        f.reorder = 0.05 + 0.05 * (seed % 3);
        f.duplicate = 0.05;
        f.reorder_delay_ns = 1'000'000 + 1'000'000 * (seed % 5);
        c->fabric().set_seed(seed);
        c->fabric().set_faults(f);
        c->fabric().set_hop_delay(20'000 + 20'000 * (seed % 3));
      },
      [&] {
        if (rng() % 200 == 0) c->stall(rng() % 4, 100'000 + rng() % 10'000'000);
      },
      2, true, true,
      [&](uint16_t, fw::EngineConfig& e) {
        if (seed % 2) e.fw_messages = 2 + seed % 4;
        e.sync_probe_ns = 1'000'000 + 1'000'000 * (seed % 7);
      });
}

INSTANTIATE_TEST_SUITE_P(Seeds, SyncUnderChaos, ::testing::Range(0, 12));
}  // namespace
}  // namespace rhinet::test
