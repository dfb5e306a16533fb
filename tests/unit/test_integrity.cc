// SPDX-License-Identifier: BSD-2-Clause
// Integrity and isolation of the engine's data path: messages of different
// QPs interleaving on one node channel, work queued at a responder that
// outlives its memory region or its QP, a peer table that one process could
// fill, UD behind a dead node, QP incarnations, ordered session epochs,
// and the engine's own rules (counters written from several threads, no
// allocation on the data path). Each case is a defect a review reproduced.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <thread>

#include "core/crc32c.h"
#include "test_helpers.h"
#include "transport/packet.h"

// ---- Allocation counting (for the no-allocation rule) ---------------------
// Only allocations made while g_count_allocs is set are counted; the tests
// set it around Engine::poll() alone.
namespace {
std::atomic<bool> g_count_allocs{false};
std::atomic<uint64_t> g_allocs{0};

void* counted_alloc(size_t n, size_t align) {
  if (g_count_allocs.load(std::memory_order_relaxed)) g_allocs++;
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (n + align - 1) / align * align)
                : std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return counted_alloc(n, 0); }
void* operator new[](size_t n) { return counted_alloc(n, 0); }
void* operator new(size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace rhinet::test {
namespace {

ClusterConfig small_cluster(size_t nodes) {
  ClusterConfig cfg;
  cfg.nodes = nodes;
  cfg.memory_bytes = 32u << 20;
  return cfg;
}

// Deeper queues than the default: these tests keep many datagrams queued.
constexpr DatagramShape kDeepDatagram{
    .cq_log_depth = 12, .sq_log_depth = 10, .rq_log_depth = 9};

SendWr datagram_wr(uint64_t id, const Sge& sge, uint16_t node, uint32_t qpn,
                   uint32_t qkey) {
  SendWr wr = send_wr(id, {sge});
  wr.dst_node = node;
  wr.dst_qpn = qpn;
  wr.qkey = qkey;
  return wr;
}

// Defect 1: a large SEND of one QP and a small SEND of another QP between
// the same two nodes. The small one used to abandon the large one's receive
// half-way, after the sender had been told everything arrived.
TEST(ReceiveContexts, LargeSendInterleavedWithAnotherQpsSend) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p1 = make_rc_pair(c, 0, 1);
  RcPair p2 = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p1.ok && p2.ok);
  constexpr size_t kBig = 256 * 1024;
  Region src1 = make_region(*p1.ctx_a, kBig, kAllAccess, 101);
  Region dst1 = make_region(*p1.ctx_b, kBig);
  Region src2 = make_region(*p2.ctx_a, 64, kAllAccess, 102);
  Region dst2 = make_region(*p2.ctx_b, 64);
  ASSERT_TRUE(p1.qp_b->post_recv(1, {dst1.sge(0, kBig)}));
  ASSERT_TRUE(p2.qp_b->post_recv(2, {dst2.sge(0, 64)}));
  ASSERT_TRUE(p1.qp_a->post_send(send_wr(11, {src1.sge(0, kBig)})));
  ASSERT_TRUE(p2.qp_a->post_send(send_wr(12, {src2.sge(0, 64)})));

  Completion s1 = wait_one(c, *p1.cq_a), s2 = wait_one(c, *p2.cq_a);
  Completion r1 = wait_one(c, *p1.cq_b), r2 = wait_one(c, *p2.cq_b);
  EXPECT_TRUE(s1.ok()) << describe(s1);
  EXPECT_TRUE(s2.ok()) << describe(s2);
  ASSERT_TRUE(r1.ok()) << "the large SEND's receive: " << describe(r1);
  ASSERT_TRUE(r2.ok()) << describe(r2);
  EXPECT_EQ(r1.byte_len, kBig);
  EXPECT_EQ(r2.byte_len, 64u);
  EXPECT_TRUE(dst1.buf.bytes() == src1.buf.bytes());
  EXPECT_TRUE(dst2.buf.bytes() == src2.buf.bytes());
}

// Defect 1, UD flavour: datagrams (as rdma_cm's management traffic) between
// the same nodes while a large RC SEND is on its way.
TEST(ReceiveContexts, DatagramsInterleavedWithALargeSend) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  DatagramNode ua = make_datagram_node(c, 0, RHN_QP_UD, 0x11, kDeepDatagram);
  DatagramNode ub = make_datagram_node(c, 1, RHN_QP_UD, 0x22, kDeepDatagram);
  ASSERT_TRUE(ua.qp && ub.qp);
  constexpr size_t kBig = 256 * 1024;
  Region src = make_region(*p.ctx_a, kBig, kAllAccess, 103);
  Region dst = make_region(*p.ctx_b, kBig);
  ua.buf.buf.fill_pattern(104);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, kBig)}));
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(
        ub.qp->post_recv(uint64_t(i), {ub.buf.sge(size_t(i) * 4096, 4096)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, kBig)})));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(ua.qp->post_send(datagram_wr(
        uint64_t(i), ua.buf.sge(size_t(i) * 100, 100), 1, ub.qp->qpn(), 0x22)));
    c.step();  // spread them over the large SEND's packets
  }
  Completion s = wait_one(c, *p.cq_a);
  Completion r = wait_one(c, *p.cq_b);
  EXPECT_TRUE(s.ok()) << describe(s);
  ASSERT_TRUE(r.ok()) << "the large SEND's receive: " << describe(r);
  EXPECT_TRUE(dst.buf.bytes() == src.buf.bytes());
  auto ud = c.wait_cqes(*ub.cq, 8);
  ASSERT_EQ(ud.size(), 8u);
  for (const auto& x : ud) {
    ASSERT_TRUE(x.ok()) << describe(x);
    EXPECT_EQ(ub.buf.buf.bytes(size_t(x.wr_id) * 4096 + RHN_UD_GRH_LEN, 100),
              ua.buf.buf.bytes(size_t(x.wr_id) * 100, 100));
  }
}

// Several multi-packet SENDs from different QPs at once, under loss,
// duplication and reordering: every one arrives whole.
TEST(ReceiveContexts, ConcurrentLargeSendsUnderFaults) {
  ClusterConfig cfg = small_cluster(2);
  cfg.memory_bytes = 64u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  constexpr int kPairs = 4;
  constexpr size_t kLen = 100 * 1000;
  std::vector<RcPair> pairs;
  std::vector<Region> src, dst;
  for (int i = 0; i < kPairs; ++i) {
    pairs.push_back(make_rc_pair(c, 0, 1));
    ASSERT_TRUE(pairs.back().ok);
    src.push_back(make_region(*pairs.back().ctx_a, 2 * kLen, kAllAccess,
                              200 + uint64_t(i)));
    dst.push_back(make_region(*pairs.back().ctx_b, 2 * kLen));
  }
  FaultConfig f;
  f.loss = 0.02;
  f.duplicate = 0.02;
  f.reorder = 0.05;
  f.reorder_delay_ns = 3'000;
  c.fabric().set_seed(7);
  c.fabric().set_faults(f);
  for (int i = 0; i < kPairs; ++i)
    for (int m = 0; m < 2; ++m) {
      ASSERT_TRUE(pairs[size_t(i)].qp_b->post_recv(
          uint64_t(m), {dst[size_t(i)].sge(size_t(m) * kLen, kLen)}));
      ASSERT_TRUE(pairs[size_t(i)].qp_a->post_send(
          send_wr(uint64_t(m),
                  {src[size_t(i)].sge(size_t(m) * kLen, kLen - size_t(m))})));
    }
  for (int i = 0; i < kPairs; ++i) {
    auto s = c.wait_cqes(*pairs[size_t(i)].cq_a, 2, 3'000'000'000);
    auto r = c.wait_cqes(*pairs[size_t(i)].cq_b, 2, 3'000'000'000);
    ASSERT_EQ(s.size(), 2u);
    ASSERT_EQ(r.size(), 2u);
    for (int m = 0; m < 2; ++m) {
      EXPECT_TRUE(s[size_t(m)].ok()) << describe(s[size_t(m)]);
      ASSERT_TRUE(r[size_t(m)].ok()) << describe(r[size_t(m)]);
      EXPECT_EQ(r[size_t(m)].wr_id, uint64_t(m));
      EXPECT_EQ(r[size_t(m)].byte_len, kLen - size_t(m));
      EXPECT_TRUE(
          dst[size_t(i)].buf.bytes(size_t(m) * kLen, kLen - size_t(m)) ==
          src[size_t(i)].buf.bytes(size_t(m) * kLen, kLen - size_t(m)))
          << "pair " << i << " message " << m;
    }
  }
}

// Node 0 READs 1 MiB of node 1's memory; once data flows the link to
// node 0 is cut, so the responder fills its window and holds the rest of
// the stream queued: work the responder owns while it waits.
class OwnedWork : public ::testing::Test {
 protected:
  static constexpr size_t kLen = 1u << 20;
  SimCluster c{small_cluster(2)};
  RcPair p;
  Region src, dst;

  void hold_read_at_responder(uint64_t src_pattern) {
    ASSERT_TRUE(c.all_up());
    p = make_rc_pair(c, 0, 1);
    ASSERT_TRUE(p.ok);
    src = make_region(*p.ctx_b, kLen, kAllAccess, src_pattern);
    dst = make_region(*p.ctx_a, kLen, kAllAccess, 0, 0);
    const uint64_t tx0 = c.node(1).counter(RHN_CNT_TX_PACKETS);
    ASSERT_TRUE(p.qp_a->post_send(
        rdma_wr(1, RHN_OP_READ, {dst.sge(0, kLen)}, src.va(), src.key())));
    ASSERT_TRUE(
        c.run_until([&] { return c.node(1).counter(RHN_CNT_TX_PACKETS) > tx0; },
                    10'000'000));
    c.fabric().set_link(0, false);
    c.run_for(1'000'000);
  }
};

// Defect 2: a READ stream queued at the responder must not outlive the
// rights it was granted. The region is deregistered while the stream is
// held back; another process registers its own pages at the same address
// (and gets the same MR slot). Not one byte of them may leave the node.
TEST_F(OwnedWork, ReadStreamStopsWhenItsRegionIsDeregistered) {
  ASSERT_NO_FATAL_FAILURE(hold_read_at_responder(301));

  const uint32_t old_index = src.mr.key >> RHN_KEY_INDEX_SHIFT;
  ASSERT_TRUE(p.ctx_b->dereg_mr(src.mr).ok());
  auto other = c.node(1).open_context();
  ASSERT_TRUE(other->ok());
  SimBuffer secret = other->alloc(kLen);
  secret.fill_pattern(302);
  SimMr m2 = c.node(1).driver->register_mr(other->index(), other->pdn(),
                                           src.va(), kLen, secret.pages(),
                                           RHN_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(m2.ok());
  ASSERT_EQ(m2.key >> RHN_KEY_INDEX_SHIFT, old_index)
      << "the test needs the freed MR slot to be reused";

  c.fabric().set_link(0, true);
  Completion r = wait_one(c, *p.cq_a, 2'000'000'000);
  ASSERT_NE(r.status, 0xff) << "the READ never completed";
  EXPECT_FALSE(r.ok()) << "READ succeeded over a deregistered region";
  for (size_t off = 0; off < kLen; off += 4096)
    ASSERT_FALSE(dst.buf.bytes(off, 4096) == secret.bytes(off, 4096))
        << "another process's page at offset " << off << " reached node 0";
}

// Owned work is cancelled with its QP: a READ stream held at a responder
// whose QP goes to ERR stops, and the requester is told.
TEST_F(OwnedWork, ReadStreamCancelledWhenResponderQpFails) {
  ASSERT_NO_FATAL_FAILURE(hold_read_at_responder(311));
  ASSERT_TRUE(p.qp_b->to_err().ok());
  CounterSnap b(c.node(1));
  c.fabric().set_link(0, true);
  Completion r = wait_one(c, *p.cq_a, 2'000'000'000);
  ASSERT_NE(r.status, 0xff) << "the READ never completed";
  EXPECT_FALSE(r.ok()) << describe(r);
  // What left afterwards is retransmission of what was already in the
  // send-packet memory and a few ACKs and the NAK, not the rest of the
  // stream (128 more packets).
  EXPECT_LT(b.delta(RHN_CNT_TX_PACKETS) - b.delta(RHN_CNT_RETRANSMITS), 16u);
  EXPECT_GT(b.delta(RHN_CNT_RETRANSMITS), 0u);
}

// Defect 3: a process addressing many absent nodes must not use up the
// NIC's per-node state for everybody else.
TEST(PeerLifecycle, AbsentNodesDoNotFillThePeerTable) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  DatagramNode u = make_datagram_node(c, 0, RHN_QP_UD, 0x11, kDeepDatagram);
  ASSERT_TRUE(u.qp);
  for (uint16_t n = 0; n < 64; ++n)
    ASSERT_TRUE(u.qp->post_send(
        datagram_wr(n, u.buf.sge(0, 32), uint16_t(100 + n), 5, 0x11)));
  auto done = c.wait_cqes(*u.cq, 64, 2'000'000'000);
  ASSERT_EQ(done.size(), 64u);

  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 401);
  Region dst = make_region(*p.ctx_b, 4096);
  ASSERT_TRUE(p.qp_b->post_recv(1, {dst.sge(0, 4096)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, 4096)})));
  Completion s = wait_one(c, *p.cq_a);
  Completion r = wait_one(c, *p.cq_b);
  EXPECT_TRUE(s.ok()) << describe(s);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_TRUE(dst.buf.bytes() == src.buf.bytes());
}

// Peer churn: one process keeps addressing new absent nodes while another
// process's RC traffic to a live node goes on. The churner gets its own
// completions; the other process loses nothing.
TEST(PeerLifecycle, ChurnThroughAbsentNodesCannotHurtOthers) {
  ClusterConfig cfg = small_cluster(3);
  cfg.engine.retransmit_timeout_ns = 200'000;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  DatagramNode u = make_datagram_node(c, 0, RHN_QP_UD, 0x11, kDeepDatagram);
  ASSERT_TRUE(u.qp);
  constexpr int kRounds = 40, kPerRound = 50, kMsg = 6000;
  uint16_t next_absent = 3;
  size_t churn_done = 0, rc_done = 0;
  auto churn = [&] {
    for (int k = 0; k < kPerRound; ++k) {
      while (!u.qp->post_send(
          datagram_wr(next_absent, u.buf.sge(0, 64), next_absent, 9, 0x11))) {
        c.run_for(10'000);
        churn_done += u.cq->poll(256).size();
      }
      next_absent = uint16_t(next_absent % 3000 + 3);
    }
    c.run_for(20'000);
    churn_done += u.cq->poll(256).size();
  };
  // The churn is under way before the other process first talks to node 2.
  for (int k = 0; k < 10; ++k) churn();
  RcPair p = make_rc_pair(c, 0, 2);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, kRounds * kMsg, kAllAccess, 402);
  Region dst = make_region(*p.ctx_b, kRounds * kMsg);
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(p.qp_b->post_recv(uint64_t(round),
                                  {dst.sge(size_t(round) * kMsg, kMsg)}));
    ASSERT_TRUE(p.qp_a->post_send(
        send_wr(uint64_t(round), {src.sge(size_t(round) * kMsg, kMsg)})));
    churn();
    for (const auto& s : p.cq_a->poll()) {
      EXPECT_TRUE(s.ok()) << describe(s);
      rc_done++;
    }
  }
  // The other process's traffic was not held up behind the churn.
  auto rest = c.wait_cqes(*p.cq_a, kRounds - rc_done, 20'000'000);
  ASSERT_EQ(rc_done + rest.size(), size_t(kRounds));
  for (const auto& s : rest) EXPECT_TRUE(s.ok()) << describe(s);
  auto r = c.wait_cqes(*p.cq_b, kRounds, 2'000'000'000);
  ASSERT_EQ(r.size(), size_t(kRounds));
  for (const auto& x : r) ASSERT_TRUE(x.ok()) << describe(x);
  EXPECT_TRUE(dst.buf.bytes() == src.buf.bytes());
  churn_done +=
      c.wait_cqes(*u.cq, (kRounds + 10) * kPerRound - churn_done, 4'000'000'000)
          .size();
  EXPECT_EQ(churn_done, size_t((kRounds + 10) * kPerRound));
  // The churner ran into its share of the send memory, not everybody's.
  EXPECT_GT(c.node(0).counter(RHN_CNT_SEND_QUOTA_WAITS), 0u);
}

// Defect 4: UD completes when the datagram has left, so one datagram to a
// dead node does not hold up the next ones to live nodes.
TEST(PeerLifecycle, UdDoesNotWaitBehindADeadNode) {
  SimCluster c(small_cluster(3));
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x11, kDeepDatagram);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x22, kDeepDatagram);
  ASSERT_TRUE(a.qp && b.qp);
  c.fabric().set_link(2, false);  // node 2 is dead
  ASSERT_TRUE(b.qp->post_recv(1, {b.buf.sge(0, 4096)}));
  ASSERT_TRUE(a.qp->post_send(datagram_wr(1, a.buf.sge(0, 64), 2, 7, 0x33)));
  ASSERT_TRUE(a.qp->post_send(datagram_wr(2, a.buf.sge(0, 64), 9, 7, 0x33)));
  ASSERT_TRUE(
      a.qp->post_send(datagram_wr(3, a.buf.sge(0, 64), 1, b.qp->qpn(), 0x22)));
  auto s = c.wait_cqes(*a.cq, 3, 5'000'000);
  ASSERT_EQ(s.size(), 3u) << "UD send completions waited for a dead node";
  for (const auto& x : s) EXPECT_TRUE(x.ok()) << describe(x);
  Completion r = wait_one(c, *b.cq, 5'000'000);
  EXPECT_TRUE(r.ok()) << describe(r);
}

// Defect 5: a QP that goes through RESET is a new incarnation. A READ
// response of its previous life, still on the way, must not complete the
// new life's READ that happens to have the same message number.
TEST(QpIncarnation, LateResponseOfAPreviousLifeIsIgnored) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  constexpr size_t kLen = 64 * 1024;
  Region x = make_region(*p.ctx_b, kLen, kAllAccess, 501);
  Region y = make_region(*p.ctx_b, kLen, kAllAccess, 502);
  Region dst = make_region(*p.ctx_a, kLen, kAllAccess, 0, 0);
  const uint64_t rx0 = c.node(1).counter(RHN_CNT_RX_PACKETS);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_READ, {dst.sge(0, kLen)}, x.va(), x.key())));
  ASSERT_TRUE(c.run_until(
      [&] { return c.node(1).counter(RHN_CNT_RX_PACKETS) > rx0; }, 10'000'000));
  c.fabric().set_link(0, false);  // the responses are held back
  ASSERT_TRUE(p.qp_a->to_err().ok());
  Completion flushed = wait_one(c, *p.cq_a);
  EXPECT_EQ(flushed.status, RHN_CQE_WR_FLUSH_ERR) << describe(flushed);
  ASSERT_TRUE(p.qp_a->to_reset().ok());
  ASSERT_TRUE(p.qp_a->to_init().ok());
  ASSERT_TRUE(p.qp_a->to_rtr(1, p.qp_b->qpn()).ok());
  ASSERT_TRUE(p.qp_a->to_rts().ok());
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_READ, {dst.sge(0, kLen)}, y.va(), y.key())));
  c.fabric().set_link(0, true);
  Completion r = wait_one(c, *p.cq_a, 2'000'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 2u);
  EXPECT_TRUE(dst.buf.bytes() == y.buf.bytes())
      << "the new READ got the previous incarnation's data";
}

// A NIC powered on again in an earlier epoch than the session its peer
// still holds from it (epochs come from a clock or a random source) is
// told the session to beat and heard at once, not refused until the old
// stream has been quiet for session_quiet_ns (found by vm_dead_device:
// the first connection after a driver recovered the NIC failed).
TEST(SessionEpochs, NodeBackInAnEarlierEpochIsHeardAtOnce) {
  ClusterConfig cfg = small_cluster(2);
  cfg.tweak = [](uint16_t node, fw::EngineConfig& e) {
    e.boot_session = node == 0 ? 1000 : 2000;
  };
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  {
    RcPair p = make_rc_pair(c, 0, 1);
    ASSERT_TRUE(p.ok);
    Region src = make_region(*p.ctx_a, 4096, kAllAccess, 611);
    Region dst = make_region(*p.ctx_b, 4096, kAllAccess, 0, 0);
    ASSERT_TRUE(p.qp_a->post_send(
        rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 100)}, dst.va(), dst.key())));
    ASSERT_TRUE(wait_one(c, *p.cq_a).ok());
    // Node 1's stream towards node 0 is acknowledged too.
    ASSERT_TRUE(p.qp_b->post_send(
        rdma_wr(1, RHN_OP_WRITE, {dst.sge(0, 100)}, src.va(), src.key())));
    ASSERT_TRUE(wait_one(c, *p.cq_b).ok());
  }
  // Node 1 holds session 1001 from node 0; node 0 comes back in 500.
  fw::EngineConfig again = c.node(0).config;
  again.boot_session = 500;
  ASSERT_TRUE(c.power_cycle(0, again));
  const uint64_t start = c.clock().now();
  RcPair q = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(q.ok);
  Region src = make_region(*q.ctx_a, 4096, kAllAccess, 612);
  Region dst = make_region(*q.ctx_b, 4096, kAllAccess, 0, 0);
  ASSERT_TRUE(q.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {src.sge(0, 300)}, dst.va(), dst.key())));
  Completion w = wait_one(c, *q.cq_a, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(0, 300), src.buf.bytes(0, 300));
  EXPECT_LT(c.clock().now() - start, 50'000'000u)
      << "the restarted node waited for the old session to go quiet";
  // And the new session goes on.
  ASSERT_TRUE(q.qp_a->post_send(
      rdma_wr(3, RHN_OP_WRITE, {src.sge(0, 100)}, dst.va(1000), dst.key())));
  EXPECT_TRUE(wait_one(c, *q.cq_a).ok());
  // Node 1 answers on its old stream's channel: the restarted node, which
  // knows nothing of that stream, takes it (node 1 started afresh when it
  // heard the new incarnation) rather than failing it with a RESYNC.
  ASSERT_TRUE(q.qp_b->post_send(
      rdma_wr(4, RHN_OP_WRITE, {dst.sge(0, 64)}, src.va(2048), src.key())));
  Completion back = wait_one(c, *q.cq_b, 100'000'000);
  EXPECT_TRUE(back.ok()) << describe(back);
  EXPECT_EQ(src.buf.bytes(2048, 64), dst.buf.bytes(0, 64));
}

// Defect 6: session epochs are ordered. A SYN of an older session, delayed
// in the fabric, must neither roll the receiver back nor replay requests.
TEST(SessionEpochs, DelayedSynOfAnOlderSessionIsIgnored) {
  ClusterConfig cfg = small_cluster(2);
  cfg.engine.retransmit_timeout_ns = 100'000;
  cfg.engine.max_retries = 3;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  RcPair q = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok && q.ok);
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 601);
  Region dst = make_region(*p.ctx_b, 4096, kAllAccess, 0, 0);
  Region qsrc = make_region(*q.ctx_a, 64, kAllAccess, 602);
  Region qdst = make_region(*q.ctx_b, 64);

  std::vector<uint8_t> first_syn;
  c.fabric().tap = [&](size_t src_port, std::span<const uint8_t> f) {
    if (src_port != 0 || !first_syn.empty() || f.size() < RHN_DATA_HDR_LEN)
      return;
    rhn_pkt_hdr h;
    std::memcpy(&h, f.data(), sizeof h);
    if (h.type == RHN_PKT_DATA && (h.flags & RHN_PKT_F_SYN))
      first_syn.assign(f.begin(), f.end());
  };
  // Session 1: a WRITE of pattern 1.
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 100)}, dst.va(), dst.key())));
  ASSERT_TRUE(wait_one(c, *p.cq_a).ok());
  ASSERT_FALSE(first_syn.empty());
  c.fabric().tap = nullptr;

  // Node 0 declares node 1 dead (another QP's traffic times out), so its
  // next packet opens a new session.
  c.fabric().set_link(1, false);
  ASSERT_TRUE(q.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {qsrc.sge(0, 64)}, qdst.va(), qdst.key())));
  Completion dead = wait_one(c, *q.cq_a, 1'000'000'000);
  ASSERT_EQ(dead.status, RHN_CQE_RETRY_EXC_ERR) << describe(dead);
  c.fabric().set_link(1, true);
  // Session 2: a WRITE of other bytes over the same place.
  Region src2 = make_region(*p.ctx_a, 4096, kAllAccess, 603);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {src2.sge(0, 100)}, dst.va(), dst.key())));
  ASSERT_TRUE(wait_one(c, *p.cq_a).ok());
  ASSERT_EQ(dst.buf.bytes(0, 100), src2.buf.bytes(0, 100));

  // The old session's SYN shows up late.
  const uint64_t dead0 = c.node(0).counter(RHN_CNT_PEER_DEAD);
  c.node(1).engine->frame_arrived(first_syn);
  c.run_for(1'000'000);
  EXPECT_EQ(dst.buf.bytes(0, 100), src2.buf.bytes(0, 100))
      << "a request of an older session was replayed";
  // The current session goes on undisturbed.
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(3, RHN_OP_WRITE, {src.sge(0, 100)}, dst.va(200), dst.key())));
  Completion w = wait_one(c, *p.cq_a, 1'000'000'000);
  EXPECT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(c.node(0).counter(RHN_CNT_PEER_DEAD), dead0)
      << "the receiver was rolled back to the old session";
}

// Defect 7: counters are written by the engine thread and by ingress
// threads (frames refused at the door). No update may be lost.
TEST(EngineRules, CountersFromSeveralThreadsLoseNothing) {
  SimCluster c(small_cluster(1));
  ASSERT_TRUE(c.all_up());
  fw::Engine& e = *c.node(0).engine;
  const uint64_t before = e.counter(RHN_CNT_MALFORMED_PACKETS);
  constexpr int kPerThread = 400'000;
  auto hammer = [&] {
    for (int i = 0; i < kPerThread; ++i) e.frame_arrived({});
  };
  std::thread t1(hammer), t2(hammer);
  t1.join();
  t2.join();
  EXPECT_EQ(e.counter(RHN_CNT_MALFORMED_PACKETS) - before,
            uint64_t(2 * kPerThread));
}

// CQEs, EQEs and admin completions are written with the ordered publish
// (body, barrier, owner word), never as plain writes.
TEST(EngineRules, EntriesArePublishedBodyFirst) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 701);
  Region dst = make_region(*p.ctx_b, 4096);
  const uint64_t a0 = c.node(0).bus.published();
  const uint64_t b0 = c.node(1).bus.published();
  constexpr int kMsgs = 20;
  for (int i = 0; i < kMsgs; ++i) {
    ASSERT_TRUE(p.qp_b->post_recv(uint64_t(i), {dst.sge(0, 4096)}));
    ASSERT_TRUE(p.qp_a->post_send(send_wr(uint64_t(i), {src.sge(0, 100)})));
  }
  ASSERT_EQ(c.wait_cqes(*p.cq_a, kMsgs).size(), size_t(kMsgs));
  ASSERT_EQ(c.wait_cqes(*p.cq_b, kMsgs).size(), size_t(kMsgs));
  EXPECT_EQ(c.node(0).bus.published() - a0, uint64_t(kMsgs));
  EXPECT_EQ(c.node(1).bus.published() - b0, uint64_t(kMsgs));
}

// A wire that only counts: the engine alone, with no simulated switch
// allocating frames inside Engine::poll().
class CountingWire : public fw::Wire {
 public:
  void transmit(rhinet::fw::Span<const uint8_t>) override { frames++; }
  uint64_t frames = 0;
};

// Defect 7: no allocation on the data path, including first contact with
// many new peers and a device reset.
TEST(EngineRules, NoAllocationOnTheDataPath) {
  SimClock clock;
  SimMemory mem(16u << 20);
  SimHostBus bus(mem, clock);
  CountingWire wire;
  fw::EngineConfig cfg;
  cfg.node_id = 0;
  cfg.max_qps = 64;
  cfg.max_cqs = 64;
  fw::Engine engine(cfg, bus, wire);
  SimAddressSpace as(mem, 0x7f00'0005'3000ull);
  auto poll_counted = [&] {
    g_count_allocs = true;
    const bool did = engine.poll();
    g_count_allocs = false;
    return did;
  };
  SimDriver drv(engine, mem, [&] {
    poll_counted();
    clock.advance(50);
  });
  ASSERT_TRUE(drv.bring_up());
  SimContext ctx(drv, as, 1, 0);
  ASSERT_TRUE(ctx.ok());
  auto cq = ctx.create_cq(10);
  QpInit qi;
  qi.type = RHN_QP_UD;
  qi.send_cq = cq.get();
  auto qp = ctx.create_qp(qi);
  ASSERT_TRUE(qp && activate_datagram(*qp, 0x11));
  Region buf = make_region(ctx, 8192, kAllAccess, 0, 0);
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(qp->post_recv(uint64_t(i), {buf.sge(4096, 512)}));
  g_allocs = 0;
  auto run = [&](uint64_t ns) {
    const uint64_t end = clock.now() + ns;
    while (clock.now() < end) clock.advance(poll_counted() ? 50 : 2'000);
  };
  // Loopback datagrams to ourselves and first contact with 150 new nodes.
  for (uint16_t n = 0; n < 150; ++n) {
    const uint16_t node = n < 8 ? 0 : uint16_t(n + 2);
    ASSERT_TRUE(
        qp->post_send(datagram_wr(n, buf.sge(0, 64), node, qp->qpn(), 0x11)));
  }
  run(20'000'000);
  EXPECT_GT(wire.frames, 100u);
  EXPECT_EQ(g_allocs.load(), 0u) << "allocations on the data path";
  // A device reset goes back to power-on state without allocating.
  drv.write32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  run(1'000'000);
  EXPECT_EQ(g_allocs.load(), 0u) << "allocations in the device reset";
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// 256 nodes, one endpoint each, every node sends one message to every
// other node at once: 65,280 messages over 65,280 node pairs' channels.
TEST(Scale, TwoHundredFiftySixNodesAllToAll) {
  constexpr uint16_t kNodes = 256;
  constexpr size_t kMsg = 200, kSlot = 256;
  ClusterConfig cfg;
  cfg.nodes = kNodes;
  cfg.memory_bytes = 2u << 20;
  cfg.engine.max_qps = 8;
  cfg.engine.max_cqs = 8;
  cfg.engine.max_srqs = 2;
  cfg.engine.max_mrs = 32;
  cfg.engine.max_pds = 8;
  cfg.engine.max_areas = 16;
  cfg.engine.db_pages = 4;
  cfg.engine.send_packet_slots = 256;
  cfg.engine.rx_fifo_frames = 512;
  cfg.engine.max_nodes = 512;
  // 256 engines share one step: let a step stand for more time.
  cfg.busy_step_ns = 1'000;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  DatagramShape inbox = kDeepDatagram;
  inbox.buf_bytes = kNodes * kSlot;  // its own message, then one per peer
  std::vector<DatagramNode> n;
  for (uint16_t i = 0; i < kNodes; ++i) {
    n.push_back(make_datagram_node(c, i, RHN_QP_ENDPOINT, 0, inbox));
    ASSERT_TRUE(n.back().qp) << "node " << i;
  }
  for (uint16_t i = 0; i < kNodes; ++i) {
    n[i].buf.buf.write(0, pattern(i + 1, kMsg).data(), kMsg);
    for (uint16_t j = 0; j + 1 < kNodes; ++j)
      ASSERT_TRUE(n[i].qp->post_recv(
          j, {n[i].buf.sge(kSlot + size_t(j) * kSlot, kSlot)}));
  }
  for (uint16_t i = 0; i < kNodes; ++i)
    for (uint16_t k = 1; k < kNodes; ++k) {
      const uint16_t j = uint16_t((i + k) % kNodes);
      SendWr wr = send_wr(j, {n[i].buf.sge(0, kMsg)});
      wr.dst_node = j;
      wr.dst_qpn = n[j].qp->qpn();
      ASSERT_TRUE(n[i].qp->post_send(wr));
    }
  for (uint16_t i = 0; i < kNodes; ++i) {
    auto v = c.wait_cqes(*n[i].cq, 2 * (kNodes - 1), 2'000'000'000);
    size_t sends = 0;
    for (const auto& x : v) sends += x.is_send();
    ASSERT_EQ(v.size(), size_t(2 * (kNodes - 1)))
        << "node " << i << ": " << sends << " send completions; "
        << describe(v.back()) << " at " << c.clock().now() << " ns" << [&] {
             std::string t;
             for (unsigned k = 0; k < RHN_CNT_COUNT; ++k)
               t += " " + std::to_string(k) + "=" +
                    std::to_string(c.node(i).counter(k));
             return t;
           }();
    std::vector<bool> seen(kNodes, false);
    for (const auto& x : v) {
      ASSERT_TRUE(x.ok()) << describe(x);
      if (x.is_send()) continue;
      ASSERT_LT(x.src_node, kNodes);
      ASSERT_FALSE(seen[x.src_node]);
      seen[x.src_node] = true;
      ASSERT_EQ(n[i].buf.buf.bytes(kSlot + size_t(x.wr_id) * kSlot, kMsg),
                pattern(x.src_node + 1, kMsg))
          << "node " << i << " from " << x.src_node;
    }
  }
  uint64_t dead = 0;
  for (uint16_t i = 0; i < kNodes; ++i)
    dead += c.node(i).counter(RHN_CNT_PEER_DEAD);
  EXPECT_EQ(dead, 0u);
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// The events on a node's kernel EQ so far (the sim's driver consumes
// none, so they sit in the ring in order, first lap).
std::vector<rhn_eqe> kernel_events(SimNode& n) {
  std::vector<rhn_eqe> out;
  for (uint32_t i = 0; i < 64; ++i) {
    rhn_eqe e;
    std::memcpy(
        &e, n.memory.ptr(n.driver->eq_ring_bus() + i * RHN_EQE_SIZE, sizeof e),
        sizeof e);
    if ((e.owner & 1) != 1) break;
    out.push_back(e);
  }
  return out;
}

std::vector<rhn_eqe> probe_results(SimNode& n) {
  std::vector<rhn_eqe> out;
  for (const auto& e : kernel_events(n))
    if (e.type == RHN_EQE_PROBE_DONE) out.push_back(e);
  return out;
}

AdminResult probe(SimNode& n, uint32_t node, uint32_t context = 0) {
  return n.driver->exec_handle(RHN_ADMIN_PROBE_NODE, context, node);
}

// Firmware-originated messages: the NIC probes another NIC with a message
// of its own (no QP); the outcome arrives as an event.
TEST(FirmwareMessages, ProbeReportsLiveDeadAndOwnNode) {
  ClusterConfig cfg = small_cluster(3);
  cfg.engine.retransmit_timeout_ns = 100'000;
  cfg.engine.max_retries = 3;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  c.fabric().set_link(2, false);
  SimNode& n0 = c.node(0);
  ASSERT_TRUE(probe(n0, 1).ok());
  ASSERT_TRUE(probe(n0, 0).ok());  // ourselves, through the loopback
  ASSERT_TRUE(probe(n0, 2).ok());
  ASSERT_TRUE(c.run_until([&] { return probe_results(n0).size() == 3; },
                          1'000'000'000));
  std::map<uint32_t, uint64_t> got;
  for (const auto& e : probe_results(n0)) got[e.object] = e.data;
  EXPECT_EQ(got[1], uint64_t{RHN_SYN_NONE});
  EXPECT_EQ(got[0], uint64_t{RHN_SYN_NONE});
  EXPECT_EQ(got[2], uint64_t{RHN_SYN_RETRY_EXCEEDED});
  // Refused: not the kernel, or no such node.
  auto user = n0.open_context();
  ASSERT_TRUE(user->ok());
  EXPECT_EQ(probe(n0, 1, user->index()).status, RHN_ADMIN_NOT_PERMITTED);
  EXPECT_EQ(probe(n0, cfg.engine.max_nodes).status, RHN_ADMIN_BAD_PARAM);
}

// The firmware table is bounded: when the probes' share of it (one family
// holds at most half, fw_family_share) is full the driver is told, user
// traffic goes on meanwhile, and the table drains when the messages end.
TEST(FirmwareMessages, FullTableRefusesThenDrains) {
  ClusterConfig cfg = small_cluster(3);
  cfg.engine.retransmit_timeout_ns = 100'000;
  cfg.engine.max_retries = 3;
  cfg.engine.fw_messages = 16;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  SimNode& n0 = c.node(0);
  // Eight probes of absent nodes hold their share until they time out.
  for (uint32_t k = 0; k < 8; ++k) ASSERT_TRUE(probe(n0, 100 + k).ok());
  EXPECT_EQ(probe(n0, 1).status, RHN_ADMIN_NO_RESOURCES);
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 801);
  Region dst = make_region(*p.ctx_b, 4096);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 4096)}, dst.va(), dst.key())));
  EXPECT_TRUE(wait_one(c, *p.cq_a).ok());
  ASSERT_TRUE(c.run_until([&] { return probe_results(n0).size() == 8; },
                          1'000'000'000));
  for (const auto& e : probe_results(n0))
    EXPECT_EQ(e.data, uint64_t{RHN_SYN_RETRY_EXCEEDED}) << e.object;
  ASSERT_TRUE(probe(n0, 1).ok());
  ASSERT_TRUE(c.run_until([&] { return probe_results(n0).size() == 9; },
                          1'000'000'000));
  EXPECT_EQ(probe_results(n0).back().object, 1u);
  EXPECT_EQ(probe_results(n0).back().data, uint64_t{RHN_SYN_NONE});
}

// A firmware message of a kind the receiving NIC does not know is refused
// with a NAK and counted; nothing else happens.
TEST(FirmwareMessages, UnknownKindIsRefused) {
  SimCluster c(small_cluster(3));
  ASSERT_TRUE(c.all_up());
  std::vector<uint8_t> frame(RHN_DATA_HDR_LEN + 8, 0);
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = 1;
  h.src_node = 2;
  h.seq = 0;
  h.session = 0x4242;
  h.flags = RHN_PKT_F_SYN;
  h.payload_len = 8;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_FW;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.dst_qpn = op.src_qpn = RHN_WIRE_QPN_FIRMWARE;
  op.msn = 5;
  op.rkey = 99;  // no such kind
  op.msg_len = 8;
  const uint32_t pcrc = fw::crc32c(0, frame.data() + RHN_DATA_HDR_LEN, 8);
  frame.resize(fw::seal_packet(frame.data(), h, &op, pcrc));
  CounterSnap b(c.node(1)), s(c.node(2));
  ASSERT_TRUE(c.node(1).engine->frame_arrived(frame));
  c.run_for(1'000'000);
  EXPECT_EQ(b.delta(RHN_CNT_REMOTE_INVALID_REQUESTS), 1u);
  EXPECT_EQ(b.delta(RHN_CNT_NAKS_SENT), 0u);   // a NAK operation, not a gap
  EXPECT_GE(s.delta(RHN_CNT_RX_PACKETS), 1u);  // the answer reached node 2
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// Receive contexts are shared: a process that has many large SENDs coming
// in at once uses up only its share. Its extra messages are answered BUSY
// and come again; another process's large SENDs go through meanwhile.
TEST(ReceiveContexts, OneProcessCannotTakeThemAll) {
  ClusterConfig cfg = small_cluster(2);
  cfg.memory_bytes = 64u << 20;
  cfg.engine.rx_contexts = 4;
  cfg.engine.context_rx_share = 128;  // two per process
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  constexpr size_t kLen = 200 * 1000;
  // Process X on node 1 receives on four QPs, process Y on one.
  auto x = c.node(1).open_context();
  auto y = c.node(1).open_context();
  ASSERT_TRUE(x->ok() && y->ok());
  struct Stream {
    std::unique_ptr<SimContext> sender;
    std::unique_ptr<SimCq> scq, rcq;
    std::unique_ptr<SimQp> sqp, rqp;
    Region src, dst;
  };
  std::vector<Stream> s(5);
  for (size_t i = 0; i < s.size(); ++i) {
    SimContext& rx = i < 4 ? *x : *y;
    Stream& t = s[i];
    t.sender = c.node(0).open_context();
    ASSERT_TRUE(t.sender->ok());
    t.scq = t.sender->create_cq(8);
    t.rcq = rx.create_cq(8);
    QpInit qa, qb;
    qa.send_cq = t.scq.get();
    qb.send_cq = t.rcq.get();
    t.sqp = t.sender->create_qp(qa);
    t.rqp = rx.create_qp(qb);
    ASSERT_TRUE(t.sqp && t.rqp);
    ASSERT_TRUE(connect_rc(*t.sqp, 1, t.rqp->qpn()));
    ASSERT_TRUE(connect_rc(*t.rqp, 0, t.sqp->qpn()));
    t.src = make_region(*t.sender, kLen, kAllAccess, 900 + i);
    t.dst = make_region(rx, kLen);
    ASSERT_TRUE(t.rqp->post_recv(1, {t.dst.sge(0, kLen)}));
  }
  CounterSnap b(c.node(1)), a(c.node(0));
  for (auto& t : s)
    ASSERT_TRUE(t.sqp->post_send(send_wr(1, {t.src.sge(0, kLen)})));
  for (size_t i = 0; i < s.size(); ++i) {
    Completion sc = wait_one(c, *s[i].scq, 1'000'000'000);
    Completion rc = wait_one(c, *s[i].rcq, 1'000'000'000);
    EXPECT_TRUE(sc.ok()) << i << " " << describe(sc);
    ASSERT_TRUE(rc.ok()) << i << " " << describe(rc);
    EXPECT_TRUE(s[i].dst.buf.bytes() == s[i].src.buf.bytes()) << i;
  }
  EXPECT_GT(b.delta(RHN_CNT_RX_CONTEXT_BUSY), 0u)
      << "the share was never reached";
  EXPECT_GT(a.delta(RHN_CNT_RNR_RETRIES), 0u);
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

size_t completion_events(SimNode& n, uint32_t cqn) {
  size_t k = 0;
  for (const auto& e : kernel_events(n))
    if (e.type == RHN_EQE_COMPLETION && e.object == cqn) k++;
  return k;
}

// ibv_req_notify_cq semantics: an arm asks for an event at the next
// completion added after it; completions already in the CQ (which the
// software polls right after arming) raise none. perftest's event loops
// (ib_send_lat -e) count on it.
TEST(CqArm, EventOnlyForCompletionsAddedAfterTheArm) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 64, kAllAccess, 1001);
  Region dst = make_region(*p.ctx_b, 4096);
  SimNode& b = c.node(1);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(p.qp_b->post_recv(uint64_t(i), {dst.sge(size_t(i) * 64, 64)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(1, {src.sge(0, 64)})));
  ASSERT_TRUE(c.run_until([&] { return b.counter(RHN_CNT_COMPLETIONS) > 0; },
                          10'000'000));
  c.run_for(100'000);
  // A completion is waiting, unpolled; now the CQ is armed.
  p.cq_b->arm();
  c.run_for(100'000);
  EXPECT_EQ(completion_events(b, p.cq_b->cqn()), 0u)
      << "an event for a completion that was there before the arm";
  ASSERT_EQ(p.cq_b->poll().size(), 1u);
  // The next completion raises the event, once.
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, 64)})));
  c.run_for(1'000'000);
  EXPECT_EQ(completion_events(b, p.cq_b->cqn()), 1u);
  ASSERT_TRUE(p.qp_a->post_send(send_wr(3, {src.sge(0, 64)})));
  c.run_for(1'000'000);
  EXPECT_EQ(completion_events(b, p.cq_b->cqn()), 1u) << "fired without an arm";
  EXPECT_EQ(p.cq_b->poll().size(), 2u);
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// The kernel's event queue, consumed as the driver does: entries from
// `ci` on, then the new consumer index goes back through the EQ doorbell.
struct EqReader {
  SimNode& n;
  uint32_t ci = 0;
  static constexpr uint32_t kDepth = 256;  // the sim driver's EQ
  std::vector<rhn_eqe> take() {
    std::vector<rhn_eqe> out;
    for (;;) {
      rhn_eqe e;
      std::memcpy(
          &e,
          n.memory.ptr(n.driver->eq_ring_bus() + (ci % kDepth) * RHN_EQE_SIZE,
                       sizeof e),
          sizeof e);
      if ((e.owner & 1) != (((ci / kDepth) & 1) ^ 1)) break;
      out.push_back(e);
      ci++;
    }
    n.driver->write64(RHN_REG_EQ_DOORBELL,
                      uint64_t(ci) | (uint64_t(n.driver->kernel_eqn())
                                      << RHN_EQ_DB_EQN_SHIFT));
    return out;
  }
};

// One user arms 300 CQs and completes on all of them at once, more than
// the kernel's event queue holds; another user's CQ is armed too. No
// completion event is lost: those that find the queue full are owed and
// posted as the driver makes room.
TEST(EventQueue, ManyArmedCqsLoseNoEvent) {
  ClusterConfig cfg = small_cluster(1);
  cfg.memory_bytes = 64u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  SimNode& n = c.node(0);
  auto x = n.open_context();
  auto y = n.open_context();
  ASSERT_TRUE(x->ok() && y->ok());
  constexpr int kCqs = 300;
  struct One {
    std::unique_ptr<SimCq> cq;
    std::unique_ptr<SimQp> qp;
  };
  std::vector<One> all(kCqs + 1);
  Region xb = make_region(*x, 4096), yb = make_region(*y, 4096);
  for (int i = 0; i <= kCqs; ++i) {
    SimContext& ctx = i < kCqs ? *x : *y;
    Region& b = i < kCqs ? xb : yb;
    One& o = all[size_t(i)];
    o.cq = ctx.create_cq(2);
    ASSERT_TRUE(o.cq) << i;
    QpInit qi;
    qi.send_cq = o.cq.get();
    qi.sq_log_depth = 2;
    qi.rq_log_depth = 2;
    o.qp = ctx.create_qp(qi);
    ASSERT_TRUE(o.qp) << i;
    ASSERT_TRUE(o.qp->to_init().ok());
    ASSERT_TRUE(o.qp->post_recv(uint64_t(i), {b.sge(0, 64)}));
    o.cq->arm();
  }
  c.run_for(100'000);
  EqReader eq{n};
  eq.take();  // whatever came before
  const uint64_t overflows = n.counter(RHN_CNT_CQ_OVERFLOWS);
  // Every QP to ERR: each receive completes as flushed.
  for (auto& o : all) ASSERT_TRUE(o.qp->to_err().ok());
  std::map<uint32_t, int> events;
  for (int round = 0; round < 20; ++round) {
    c.run_for(100'000);
    for (const auto& e : eq.take())
      if (e.type == RHN_EQE_COMPLETION) events[e.object]++;
  }
  EXPECT_EQ(events.size(), size_t(kCqs + 1)) << "completion events lost";
  for (const auto& o : all)
    EXPECT_EQ(events[o.cq->cqn()], 1) << "CQ " << o.cq->cqn();
  EXPECT_GT(n.counter(RHN_CNT_EVENTS_DEFERRED), 0u)
      << "the queue never filled: the test proves nothing";
  EXPECT_EQ(n.counter(RHN_CNT_CQ_OVERFLOWS), overflows);
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// A region's rights change in place (ibv_rereg_mr without a new
// translation): the keys stay, and the next access sees the new rights.
TEST(ModifyMr, RightsChangeInPlaceKeysStay) {
  SimCluster c(small_cluster(2));
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 1101);
  Region dst = make_region(*p.ctx_b, 4096, RHN_ACCESS_LOCAL_WRITE);
  SimDriver& drv = *c.node(1).driver;
  // Granted in place: the key the peer already has now writes.
  ASSERT_TRUE(drv.modify_mr(p.ctx_b->index(), dst.key(), RHN_MODIFY_MR_ACCESS,
                            RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE)
                  .ok());
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  Completion w = wait_one(c, *p.cq_a);
  EXPECT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(0, 64), src.buf.bytes(0, 64));
  // Taken back in place: the same key is refused at once.
  ASSERT_TRUE(drv.modify_mr(p.ctx_b->index(), dst.key(), RHN_MODIFY_MR_ACCESS,
                            RHN_ACCESS_LOCAL_WRITE)
                  .ok());
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {src.sge(64, 64)}, dst.va(64), dst.key())));
  EXPECT_EQ(wait_one(c, *p.cq_a).status, RHN_CQE_REM_ACCESS_ERR);
  EXPECT_NE(dst.buf.bytes(64, 64), src.buf.bytes(64, 64));
  // Refused: another context's region, an unknown mask bit, a PD of
  // another context.
  auto other = c.node(1).open_context();
  ASSERT_TRUE(other->ok());
  EXPECT_EQ(
      drv.modify_mr(other->index(), dst.key(), RHN_MODIFY_MR_ACCESS, 0).status,
      RHN_ADMIN_BAD_HANDLE);
  EXPECT_EQ(drv.modify_mr(p.ctx_b->index(), dst.key(), 1u << 7, 0).status,
            RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(drv.modify_mr(p.ctx_b->index(), dst.key(), RHN_MODIFY_MR_PD, 0,
                          other->pdn())
                .status,
            RHN_ADMIN_BAD_HANDLE);
}

}  // namespace
}  // namespace rhinet::test
