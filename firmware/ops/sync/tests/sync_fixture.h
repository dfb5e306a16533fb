// SPDX-License-Identifier: BSD-2-Clause
// The lock and barrier tests' fixture (test_sync.cc, test_sync_races.cc):
// endpoints on simulated nodes, a counter under a lock, status words.
#pragma once
#include <algorithm>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

using Ep = DatagramEp;

[[maybe_unused]] Ep make_ep(SimCluster& c, uint16_t node) {
  return make_datagram_ep(c, node,
                          {.cq_log_depth = 10, .buf_bytes = 128 * 1024});
}

// Destroys the endpoint in the NIC, as the driver does when a process
// exits.
[[maybe_unused]] void destroy(Ep& e) {
  ASSERT_TRUE(e.d.ctx->driver()
                  .destroy(RHN_ADMIN_DESTROY_QP, e.d.ctx->index(), e.qpn())
                  .ok());
}

[[maybe_unused]] bool failed_with(const Completion& x, uint8_t status,
                                  uint8_t syndrome) {
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

}  // namespace
}  // namespace rhinet::test
