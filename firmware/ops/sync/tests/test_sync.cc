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
#include <algorithm>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

using Ep = DatagramEp;

Ep make_ep(SimCluster& c, uint16_t node) {
  return make_datagram_ep(c, node,
                          {.cq_log_depth = 10, .buf_bytes = 128 * 1024});
}

// Destroys the endpoint in the NIC, as the driver does when a process
// exits.
void destroy(Ep& e) {
  ASSERT_TRUE(e.d.ctx->driver()
                  .destroy(RHN_ADMIN_DESTROY_QP, e.d.ctx->index(), e.qpn())
                  .ok());
}

bool failed_with(const Completion& x, uint8_t status, uint8_t syndrome) {
  return x.status == status && x.vendor_err == syndrome;
}

class Sync : public ::testing::Test {
 protected:
  void start(size_t nodes,
             std::function<void(uint16_t, fw::EngineConfig&)> tweak = {},
             size_t memory = 16u << 20) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = memory;
    cfg.tweak = std::move(tweak);
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  void lossy(uint64_t seed) { make_lossy(*c, seed); }
  // LOCK, READ, WRITE + 1, UNLOCK by every node, kIters times.
  void count_under_lock(
      uint16_t kNodes, uint32_t kIters,
      const std::function<void()>& make_faults,
      const std::function<void()>& each_poll = {}, int runs = 1,
      bool manager_is_member = false, bool status_words = false,
      std::function<void(uint16_t, fw::EngineConfig&)> tweak = {});
  Completion run(Ep& e, const SendWr& wr, uint64_t timeout = 100'000'000) {
    EXPECT_TRUE(e.qp().post_send(wr));
    return wait_one(*c, e.cq(), timeout);
  }
  // Nothing completes on `e` for a while.
  void quiet(Ep& e, uint64_t ns = 2'000'000) {
    auto v = c->wait_cqes(e.cq(), 1, ns);
    EXPECT_TRUE(v.empty()) << describe(v);
  }
  // Until the manager's node has queued `n` more waiters than `before`.
  void until_waits(uint16_t mgr_node, uint64_t before, uint64_t n) {
    ASSERT_TRUE(c->run_until(
        [&] {
          return c->node(mgr_node).counter(RHN_CNT_LOCK_WAITS) >= before + n;
        },
        100'000'000));
  }
  std::unique_ptr<SimCluster> c;
};

// ---- (1) A counter under the lock.

// Eight nodes, 1000 increments each, of an 8-byte word in node 0's memory:
// LOCK, READ, WRITE + 1, UNLOCK, over a fabric that loses, reorders and
// duplicates frames. The value each READ returns is the grant's sequence
// number: every one from 0 to 7999 comes exactly once.
void Sync::count_under_lock(
    uint16_t kNodes, uint32_t kIters, const std::function<void()>& make_faults,
    const std::function<void()>& each_poll, int runs, bool manager_is_member,
    bool status_words, std::function<void(uint16_t, fw::EngineConfig&)> tweak) {
  constexpr uint64_t kLock = 0x10c4;
  start(kNodes, tweak);
  make_faults();
  for (int run = 0; run < runs; run++) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<Ep> eps;
    for (uint16_t n = 0; n < kNodes; n++) eps.push_back(make_ep(*c, n));
    // The manager and the counter's endpoint: node 0's member itself, as
    // with userlib's ranks, or an endpoint of its own.
    Ep own_mgr;
    if (!manager_is_member) own_mgr = make_ep(*c, 0);
    Ep& mgr = manager_is_member ? eps[0] : own_mgr;
    constexpr size_t kAt = 64;  // the counter, past the members' buffers
    mgr.d.buf.buf.store64(kAt, 0);
    enum Step { kLocking, kReading, kWriting, kUnlocking, kFinished };
    std::vector<Step> step(kNodes, kLocking);
    std::vector<uint32_t> iter(kNodes, 0);
    std::vector<int> holder_of(kNodes * kIters, -1);
    int holding = -1;  // who the test saw holding the lock
    bool failed = false;
    // With status_words, as userlib posts: unsignaled WQEs that report
    // through one status word per node (cleared before each post), a
    // signaled one now and then only to free the send queue.
    std::vector<uint32_t> posted(kNodes, 0);
    constexpr size_t kWord = 32;
    auto post = [&](uint16_t n, SendWr wr) {
      if (status_words) {
        eps[n].d.buf.buf.store64(kWord, 0);
        wr.flags = RHN_WQE_F_STATUS_WORD;
        if (++posted[n] % 32 == 0) wr.flags |= RHN_WQE_F_SIGNALED;
        wr.status_addr = eps[n].d.buf.va(kWord);
        wr.status_lkey = eps[n].d.buf.key();
      }
      return eps[n].qp().post_send(wr);
    };
    for (uint16_t n = 0; n < kNodes; n++)
      ASSERT_TRUE(post(n, sync_wr(0, RHN_OP_LOCK, mgr, kLock)));
    auto advance = [&](uint16_t n, const Completion& x) {
      Ep& e = eps[n];
      if (!x.ok()) {
        ADD_FAILURE() << "node " << n << " step " << step[n] << " "
                      << describe(x);
        failed = true;
        return;
      }
      switch (step[n]) {
        case kLocking:
          if (holding != -1) {
            ADD_FAILURE() << "node " << n << " granted while " << holding
                          << " holds";
            failed = true;
          }
          holding = n;
          step[n] = kReading;
          EXPECT_TRUE(post(n, [&] {
            SendWr r = rdma_wr(1, RHN_OP_READ, {e.d.buf.sge(0, 8)},
                               mgr.d.buf.va(kAt), mgr.d.buf.key());
            r.dst_node = 0;
            r.dst_qpn = mgr.qpn();
            return r;
          }()));
          return;
        case kReading: {
          const uint64_t v = e.d.buf.buf.load64(0);
          if (v >= holder_of.size() || holder_of[v] != -1) {
            ADD_FAILURE() << "node " << n << " read " << v << " twice or wild";
            failed = true;
            return;
          }
          holder_of[v] = n;
          e.d.buf.buf.store64(8, v + 1);
          step[n] = kWriting;
          SendWr w = rdma_wr(2, RHN_OP_WRITE, {e.d.buf.sge(8, 8)},
                             mgr.d.buf.va(kAt), mgr.d.buf.key());
          w.dst_node = 0;
          w.dst_qpn = mgr.qpn();
          EXPECT_TRUE(post(n, w));
          return;
        }
        case kWriting:
          step[n] = kUnlocking;
          holding = -1;  // from here on the next holder may be granted
          EXPECT_TRUE(post(n, sync_wr(3, RHN_OP_UNLOCK, mgr, kLock)));
          return;
        case kUnlocking:
          if (++iter[n] == kIters) {
            step[n] = kFinished;
            return;
          }
          step[n] = kLocking;
          EXPECT_TRUE(post(n, sync_wr(0, RHN_OP_LOCK, mgr, kLock)));
          return;
        case kFinished:
          ADD_FAILURE() << "node " << n << " completion after the end";
          failed = true;
          return;
      }
    };
    CounterSnap m0(c->node(0));
    const bool done = c->run_until(
        [&] {
          if (each_poll) each_poll();
          for (uint16_t n = 0; n < kNodes && !failed; n++) {
            for (const Completion& x : eps[n].cq().poll())
              if (!status_words || !x.ok()) advance(n, x);
            if (!status_words || failed) continue;
            const uint64_t word = eps[n].d.buf.buf.load64(kWord);
            if (!(word & RHN_STATUS_WORD_DONE)) continue;
            Completion x;
            x.status = uint8_t(word >> RHN_STATUS_WORD_STATUS_SHIFT);
            x.vendor_err = uint8_t(word >> RHN_STATUS_WORD_SYNDROME_SHIFT);
            eps[n].d.buf.buf.store64(kWord, 0);
            advance(n, x);
          }
          if (failed) return true;
          for (uint16_t n = 0; n < kNodes; n++)
            if (step[n] != kFinished) return false;
          return true;
        },
        200'000'000'000ull);
    ASSERT_FALSE(failed);
    ASSERT_TRUE(done) << "iterations: " << iter[0] << " " << iter[1] << " ...";
    EXPECT_EQ(mgr.d.buf.buf.load64(kAt), uint64_t{kNodes} * kIters);
    for (size_t v = 0; v < holder_of.size(); v++)
      ASSERT_NE(holder_of[v], -1) << "no grant saw " << v;
    // Some LOCKs waited in the queue and were handed over NIC to NIC.
    EXPECT_GT(m0.delta(RHN_CNT_LOCK_WAITS), 0u);
    uint64_t passed = 0;
    for (uint16_t n = 0; n < kNodes; n++)
      passed += c->node(n).counter(RHN_CNT_LOCK_GRANTS);
    EXPECT_EQ(passed, uint64_t{kNodes} * kIters * (run + 1));
  }
}

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
        e.tag_recvs = e.tag_msgs = 64;
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
    e.sync_locks = 16;  // 8 per context
    e.context_sync_share = 128;
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
    e.sync_holds = 8;  // 4 per context
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
    e.sync_locks = 64;  // 32 per context
    e.context_sync_share = 128;
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
    e.sync_barriers = 8;  // 4 per context
    e.context_sync_share = 128;
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
