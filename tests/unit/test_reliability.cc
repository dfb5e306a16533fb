// SPDX-License-Identifier: BSD-2-Clause
// The per-node-pair reliable channel under seeded fabric faults: loss,
// duplication, reordering, corruption, a link that goes down for a while,
// and a peer that never comes back.
#include <map>
#include <string>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

struct FaultCase {
  const char* name;
  FaultConfig faults;
  uint64_t seed;
};

void PrintTo(const FaultCase& f, std::ostream* os) {
  *os << f.name << " seed " << f.seed;
}

std::string case_name(const ::testing::TestParamInfo<FaultCase>& info) {
  return std::string(info.param.name) + "_seed" +
         std::to_string(info.param.seed);
}

FaultConfig make_faults(double loss, double dup, double reorder,
                        double corrupt) {
  FaultConfig f;
  f.loss = loss;
  f.duplicate = dup;
  f.reorder = reorder;
  f.corrupt = corrupt;
  f.reorder_delay_ns = 3'000;
  return f;
}

class Faults : public ::testing::TestWithParam<FaultCase> {};

// A mixed workload over one RC pair: SENDs of varying size (FIFO order
// checked), WRITEs into distinct slots, READs back, and fetch-adds.
TEST_P(Faults, MixedWorkloadSurvives) {
  const FaultCase& fc = GetParam();
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.seed = fc.seed;
  cfg.memory_bytes = 16u << 20;
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  RcPair p = make_rc_pair(c, 0, 1);
  ASSERT_TRUE(p.ok);
  c.fabric().set_seed(fc.seed);
  c.fabric().set_faults(fc.faults);

  constexpr int kSends = 30, kWrites = 10, kReads = 10, kAtomics = 10;
  constexpr size_t kSlot = 9000;  // > 2 MTU: multi-packet messages
  Region src =
      make_region(*p.ctx_a, kSends * kSlot, kAllAccess, fc.seed * 7 + 1);
  Region inbox = make_region(*p.ctx_b, kSends * kSlot);
  Region wsrc =
      make_region(*p.ctx_a, kWrites * kSlot, kAllAccess, fc.seed * 7 + 2);
  Region wdst = make_region(*p.ctx_b, kWrites * kSlot);
  Region rsrc =
      make_region(*p.ctx_b, kReads * kSlot, kAllAccess, fc.seed * 7 + 3);
  Region rdst = make_region(*p.ctx_a, kReads * kSlot);
  Region counter = make_region(*p.ctx_b, 8);
  Region fetched = make_region(*p.ctx_a, kAtomics * 8);

  for (int i = 0; i < kSends; ++i)
    ASSERT_TRUE(
        p.qp_b->post_recv(uint64_t(i), {inbox.sge(size_t(i) * kSlot, kSlot)}));
  uint64_t id = 0;
  for (int i = 0; i < kSends; ++i) {
    const size_t len = 1 + (size_t(i) * 2777) % kSlot;
    ASSERT_TRUE(
        p.qp_a->post_send(send_wr(id++, {src.sge(size_t(i) * kSlot, len)})));
    if (i < kWrites) {
      ASSERT_TRUE(p.qp_a->post_send(
          rdma_wr(id++, RHN_OP_WRITE, {wsrc.sge(size_t(i) * kSlot, kSlot)},
                  wdst.va(size_t(i) * kSlot), wdst.key())));
    }
    if (i < kReads) {
      ASSERT_TRUE(p.qp_a->post_send(
          rdma_wr(id++, RHN_OP_READ, {rdst.sge(size_t(i) * kSlot, kSlot)},
                  rsrc.va(size_t(i) * kSlot), rsrc.key())));
    }
    if (i < kAtomics) {
      SendWr fa =
          rdma_wr(id++, RHN_OP_FETCH_ADD, {fetched.sge(size_t(i) * 8, 8)},
                  counter.va(), counter.key());
      fa.compare_add = 1;
      ASSERT_TRUE(p.qp_a->post_send(fa));
    }
  }
  auto sc = c.wait_cqes(*p.cq_a, id, 5'000'000'000);
  ASSERT_EQ(sc.size(), id) << "requester completions missing under " << fc.name;
  for (size_t k = 0; k < sc.size(); ++k) {
    EXPECT_TRUE(sc[k].ok()) << describe(sc[k]);
    EXPECT_EQ(sc[k].wr_id, k) << "send queue completions out of order";
  }
  auto rc = c.wait_cqes(*p.cq_b, kSends, 5'000'000'000);
  ASSERT_EQ(rc.size(), size_t(kSends));
  for (int i = 0; i < kSends; ++i) {
    const Completion& r = rc[size_t(i)];
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, uint64_t(i)) << "SENDs delivered out of FIFO order";
    const size_t len = 1 + (size_t(i) * 2777) % kSlot;
    EXPECT_EQ(r.byte_len, len);
    EXPECT_TRUE(inbox.buf.bytes(size_t(i) * kSlot, len) ==
                src.buf.bytes(size_t(i) * kSlot, len))
        << "SEND " << i << " data corrupted";
  }
  EXPECT_TRUE(wdst.buf.bytes() == wsrc.buf.bytes()) << "WRITE data corrupted";
  EXPECT_TRUE(rdst.buf.bytes() == rsrc.buf.bytes()) << "READ data corrupted";
  // Each fetch-add executed exactly once, despite duplicates and retries.
  EXPECT_EQ(counter.buf.load64(0), uint64_t(kAtomics));
  std::vector<bool> seen(kAtomics, false);
  for (int i = 0; i < kAtomics; ++i) {
    const uint64_t v = fetched.buf.load64(size_t(i) * 8);
    ASSERT_LT(v, uint64_t(kAtomics));
    EXPECT_FALSE(seen[v]) << "fetch-add result " << v << " seen twice";
    seen[v] = true;
  }

  // The transport noticed and repaired what the fabric did.
  auto sum = [&](unsigned idx) {
    return c.node(0).counter(idx) + c.node(1).counter(idx);
  };
  const SwitchCounters& sw = c.fabric().counters();
  // The faults really happened (otherwise this test proves nothing).
  if (fc.faults.loss > 0) {
    EXPECT_GT(sw.lost, 0u);
  }
  if (fc.faults.duplicate > 0) {
    EXPECT_GT(sw.duplicated, 0u);
  }
  if (fc.faults.reorder > 0) {
    EXPECT_GT(sw.reordered, 0u);
  }
  if (fc.faults.corrupt > 0) {
    EXPECT_GT(sw.corrupted, 0u);
  }
  if (sw.lost > 0) {
    EXPECT_GT(sum(RHN_CNT_RETRANSMITS), 0u);
  }
  if (sw.duplicated > 0) {
    EXPECT_GT(sum(RHN_CNT_DUPLICATES), 0u);
  }
  if (sw.corrupted > 0) {
    EXPECT_GT(sum(RHN_CNT_CRC_ERRORS) + sum(RHN_CNT_MALFORMED_PACKETS), 0u);
  }
  if (sw.reordered > 0) {
    EXPECT_GT(sum(RHN_CNT_OUT_OF_ORDER) + sum(RHN_CNT_DUPLICATES), 0u);
  }
  EXPECT_EQ(sum(RHN_CNT_PEER_DEAD), 0u);
}

// Datagrams through a faulty fabric, as the VM smoke test runs them: node 0
// sends hello r (resent when no reply comes), node 1 answers every hello
// with a reply of the same round; every datagram's length and bytes are
// checked against its round.
uint32_t dgram_len(uint32_t r) { return 100 + (r * 997) % 3000; }
void dgram_fill(Region& reg, size_t off, uint32_t r, uint8_t kind) {
  std::vector<uint8_t> m(dgram_len(r));
  for (uint32_t k = 0; k < m.size(); k++)
    m[k] = static_cast<uint8_t>(r * 31 + k * 7 + kind);
  m[0] = static_cast<uint8_t>(r);
  m[1] = static_cast<uint8_t>(r >> 8);
  reg.buf.write(off, m.data(), m.size());
}
// The round a received datagram claims, or -1 if its bytes do not match.
int dgram_check(Region& reg, size_t off, uint32_t byte_len, uint8_t kind) {
  const std::vector<uint8_t> m = reg.buf.bytes(off, 2);
  const uint32_t r = m[0] | (uint32_t{m[1]} << 8);
  if (byte_len != dgram_len(r)) return -1;
  const std::vector<uint8_t> all = reg.buf.bytes(off, byte_len);
  for (uint32_t k = 2; k < byte_len; k++)
    if (all[k] != static_cast<uint8_t>(r * 31 + k * 7 + kind)) return -1;
  return static_cast<int>(r);
}

class UdFaults : public ::testing::TestWithParam<uint64_t> {};

TEST_P(UdFaults, DatagramsArriveIntact) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.seed = GetParam();
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_UD, 0x1111);
  DatagramNode b = make_datagram_node(c, 1, RHN_QP_UD, 0x2222);
  ASSERT_TRUE(a.qp && b.qp);
  FaultConfig f;
  f.loss = 0.2;
  f.duplicate = 0.1;
  f.reorder = 0.1;
  f.corrupt = 0.05;
  c.fabric().set_seed(GetParam());
  c.fabric().set_faults(f);
  constexpr uint32_t kBufs = 8, kSlot = 4096 + RHN_UD_GRH_LEN;
  for (uint32_t i = 0; i < kBufs; i++) {
    ASSERT_TRUE(a.qp->post_recv(i, {a.buf.sge(i * kSlot, kSlot)}));
    ASSERT_TRUE(b.qp->post_recv(i, {b.buf.sge(i * kSlot, kSlot)}));
  }
  const size_t kOut = kBufs * kSlot;
  std::vector<Completion> pending[2];
  auto send = [&](DatagramNode& from, uint16_t to, uint32_t qpn, uint32_t qkey,
                  uint32_t r, uint8_t kind) {
    dgram_fill(from.buf, kOut, r, kind);
    SendWr wr = send_wr(1000 + r, {from.buf.sge(kOut, dgram_len(r))});
    wr.dst_node = to;
    wr.dst_qpn = qpn;
    wr.qkey = qkey;
    ASSERT_TRUE(from.qp->post_send(wr));
    // The buffer is rewritten for the next one once this one has left.
    for (bool sent = false; !sent;) {
      auto v = c.wait_cqes(*from.cq, 1, 1'000'000'000);
      ASSERT_FALSE(v.empty());
      for (const auto& e : v) {
        if (e.is_send()) {
          ASSERT_TRUE(e.ok()) << describe(e);
          sent = true;
        } else {
          pending[&from == &a ? 0 : 1].push_back(e);
        }
      }
    }
  };
  uint32_t round = 0;
  while (round < 300) {
    ASSERT_NO_FATAL_FAILURE(send(a, 1, b.qp->qpn(), 0x2222, round, 1));
    bool replied = false;
    for (uint64_t t0 = c.clock().now();
         !replied && c.clock().now() - t0 < 50'000'000;) {
      // Node 1 answers what it has.
      std::vector<Completion> bv = std::move(pending[1]);
      pending[1].clear();
      for (const auto& e : b.cq->poll(SIZE_MAX)) bv.push_back(e);
      for (const auto& e : bv) {
        if (e.is_send()) continue;
        ASSERT_TRUE(e.ok()) << describe(e);
        const int r = dgram_check(b.buf, e.wr_id * kSlot + RHN_UD_GRH_LEN,
                                  e.byte_len - RHN_UD_GRH_LEN, 1);
        ASSERT_GE(r, 0) << "hello corrupted, " << describe(e);
        ASSERT_TRUE(
            b.qp->post_recv(e.wr_id, {b.buf.sge(e.wr_id * kSlot, kSlot)}));
        ASSERT_NO_FATAL_FAILURE(
            send(b, 0, a.qp->qpn(), 0x1111, static_cast<uint32_t>(r), 2));
      }
      std::vector<Completion> av = std::move(pending[0]);
      pending[0].clear();
      for (const auto& e : a.cq->poll(SIZE_MAX)) av.push_back(e);
      for (const auto& e : av) {
        if (e.is_send()) continue;
        ASSERT_TRUE(e.ok()) << describe(e);
        const int r = dgram_check(a.buf, e.wr_id * kSlot + RHN_UD_GRH_LEN,
                                  e.byte_len - RHN_UD_GRH_LEN, 2);
        ASSERT_GE(r, 0) << "reply corrupted in round " << round << ", "
                        << describe(e);
        ASSERT_TRUE(
            a.qp->post_recv(e.wr_id, {a.buf.sge(e.wr_id * kSlot, kSlot)}));
        if (r == static_cast<int>(round)) replied = true;
      }
      if (!replied) c.run_for(100'000);
    }
    if (replied) round++;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, UdFaults, ::testing::Range<uint64_t>(1, 65));

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> v;
  for (uint64_t seed : {1, 2, 3}) {
    v.push_back({"loss20", make_faults(0.2, 0, 0, 0), seed});
    v.push_back({"dup20", make_faults(0, 0.2, 0, 0), seed});
    v.push_back({"reorder20", make_faults(0, 0, 0.2, 0), seed});
    v.push_back({"corrupt20", make_faults(0, 0, 0, 0.2), seed});
    v.push_back({"all10", make_faults(0.1, 0.1, 0.1, 0.1), seed});
  }
  v.push_back({"all5", make_faults(0.05, 0.05, 0.05, 0.05), 4});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Faults, ::testing::ValuesIn(fault_cases()),
                         case_name);

// Two nodes (or cfg.nodes) and an RC pair between nodes 0 and 1.
class LinkFaults : public ::testing::Test {
 protected:
  void start(const ClusterConfig& cfg = {}) {
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
  }
  std::unique_ptr<SimCluster> c;  // destroyed after the pair's queues
  RcPair p;
};

TEST_F(LinkFaults, LinkDownForAWhileThenUp) {
  ASSERT_NO_FATAL_FAILURE(start());
  Region src = make_region(*p.ctx_a, 40000, kAllAccess, 301);
  Region dst = make_region(*p.ctx_b, 40000);
  Region inbox = make_region(*p.ctx_b, 4096);
  ASSERT_TRUE(p.qp_b->post_recv(1, {inbox.sge(0, 4096)}));

  c->fabric().set_link(1, false);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 40000)}, dst.va(), dst.key())));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(2, {src.sge(0, 4096)})));
  // Shorter than the retry budget (8 retries of >= 2 ms).
  c->run_for(3'000'000);
  EXPECT_TRUE(p.cq_a->poll().empty());
  EXPECT_GT(c->node(0).counter(RHN_CNT_TIMEOUTS), 0u);
  c->fabric().set_link(1, true);
  auto v = c->wait_cqes(*p.cq_a, 2, 1'000'000'000);
  ASSERT_EQ(v.size(), 2u);
  for (const auto& x : v) EXPECT_TRUE(x.ok()) << describe(x);
  EXPECT_TRUE(dst.buf.bytes() == src.buf.bytes());
  Completion r = wait_one(*c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(inbox.buf.bytes(), src.buf.bytes(0, 4096));
  EXPECT_GT(c->node(0).counter(RHN_CNT_RETRANSMITS), 0u);
  EXPECT_EQ(c->node(0).counter(RHN_CNT_PEER_DEAD), 0u);
}

// A peer farther away than the configured timeout (a NIC on a busy host
// answers late): the timeout follows the measured round trip, so after
// the first samples nothing is sent twice. Before, every message went
// out at least twice (UCX over our NIC in two TCG guests resent 15% of
// its packets).
TEST_F(LinkFaults, RetransmitTimeoutFollowsTheRoundTrip) {
  ClusterConfig cfg;
  cfg.hop_delay_ns = 1'500'000;  // 3 ms each way through the switch
  ASSERT_NO_FATAL_FAILURE(start(cfg));
  Region src = make_region(*p.ctx_a, 4096, kAllAccess, 331);
  Region dst = make_region(*p.ctx_b, 4096);
  CounterSnap a(c->node(0));
  for (uint32_t i = 0; i < 50; i++) {
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(
        i, RHN_OP_WRITE, {src.sge(i * 64, 64)}, dst.va(i * 64), dst.key())));
    Completion w = wait_one(*c, *p.cq_a, 1'000'000'000);
    ASSERT_TRUE(w.ok()) << describe(w);
  }
  EXPECT_EQ(dst.buf.bytes(0, 3200), src.buf.bytes(0, 3200));
  // The first packet or two before a sample may go twice; not the rest.
  EXPECT_LE(a.delta(RHN_CNT_RETRANSMITS), 3u);
  EXPECT_EQ(a.delta(RHN_CNT_PEER_DEAD), 0u);
}

// The path suddenly gets slower than the timeout (the peer's host stalls)
// with a window of packets out: the timeout sends the oldest packet again,
// then twice as many per ACK, and the ACKs of the first sending cover the
// rest. Before, every timeout sent the whole window again (go-back-N).
TEST_F(LinkFaults, SpuriousTimeoutCostsAFewPackets) {
  ASSERT_NO_FATAL_FAILURE(start());
  Region src = make_region(*p.ctx_a, 64 * 1024, kAllAccess, 341);
  Region dst = make_region(*p.ctx_b, 64 * 1024);
  // A first message: the round trip measured is microseconds, so the
  // timeout is its floor (2 ms).
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(100, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  c->fabric().set_hop_delay(1'500'000);  // now 6 ms there and back
  CounterSnap a(c->node(0));
  for (uint32_t i = 0; i < 48; i++)
    ASSERT_TRUE(p.qp_a->post_send(
        rdma_wr(i, RHN_OP_WRITE, {src.sge(i * 1024, 1024)}, dst.va(i * 1024),
                dst.key(), i == 47 ? RHN_WQE_F_SIGNALED : 0)));
  Completion w = wait_one(*c, *p.cq_a, 1'000'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(w.wr_id, 47u);
  EXPECT_EQ(dst.buf.bytes(0, 48 * 1024), src.buf.bytes(0, 48 * 1024));
  EXPECT_GE(a.delta(RHN_CNT_TIMEOUTS), 1u);
  // One, then 2 and 4 more as the ACKs of the first sending come in
  // (every 16 packets): not the 48 of the window.
  EXPECT_LE(a.delta(RHN_CNT_RETRANSMITS), 8u);
  EXPECT_EQ(a.delta(RHN_CNT_PEER_DEAD), 0u);
}

rhn_pkt_hdr header_of(std::span<const uint8_t> f) {
  rhn_pkt_hdr h{};
  if (f.size() >= sizeof(h)) std::memcpy(&h, f.data(), sizeof(h));
  return h;
}

// Waiting on the peer is not a loss. B acknowledges A's WRITE in a pure
// ACK sent after a B->A packet that the fabric loses five times: A may
// free its WRITE only once it has that packet too (the ACK's gate), and
// its timer runs out again and again meanwhile with nothing to resend.
// That must not back A's timeout off: A's next real loss is repaired after
// one ordinary timeout. (Every such expiry doubled it, up to 128 times; in
// two TCG guests a round or two of that made a lost packet wait 25 s.)
TEST_F(LinkFaults, WaitingOnThePeersStreamDoesNotBackTheTimeoutOff) {
  ASSERT_NO_FATAL_FAILURE(start());
  Region a_src = make_region(*p.ctx_a, 4096, kAllAccess, 351);
  Region a_dst = make_region(*p.ctx_a, 4096);
  Region b_src = make_region(*p.ctx_b, 4096, kAllAccess, 352);
  Region b_dst = make_region(*p.ctx_b, 4096);
  uint32_t b_lost = 0, a_lost = 0;
  bool lose_a = false;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    if (header_of(f).type != RHN_PKT_DATA) return false;
    if (src == 1 && b_lost < 5) return ++b_lost, true;
    if (src == 0 && lose_a) return lose_a = false, ++a_lost, true;
    return false;
  };
  ASSERT_TRUE(p.qp_b->post_send(
      rdma_wr(1, RHN_OP_WRITE, {b_src.sge(0, 256)}, a_dst.va(), a_dst.key())));
  c->run_for(100'000);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {a_src.sge(0, 256)}, b_dst.va(), b_dst.key())));
  Completion w = wait_one(*c, *p.cq_a, 1'000'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  Completion wb = wait_one(*c, *p.cq_b, 1'000'000'000);
  ASSERT_TRUE(wb.ok()) << describe(wb);
  EXPECT_EQ(b_lost, 5u);
  EXPECT_EQ(a_dst.buf.bytes(0, 256), b_src.buf.bytes(0, 256));
  EXPECT_EQ(b_dst.buf.bytes(0, 256), a_src.buf.bytes(0, 256));

  CounterSnap a(c->node(0));
  lose_a = true;
  const uint64_t t0 = c->clock().now();
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(3, RHN_OP_WRITE, {a_src.sge(256, 256)},
                                        b_dst.va(256), b_dst.key())));
  Completion w3 = wait_one(*c, *p.cq_a, 1'000'000'000);
  ASSERT_TRUE(w3.ok()) << describe(w3);
  EXPECT_EQ(a_lost, 1u);
  EXPECT_EQ(a.delta(RHN_CNT_TIMEOUTS), 1u);
  // The timeout's floor is 2 ms; backed off five times it was 64 ms.
  EXPECT_LT(c->clock().now() - t0, 6'000'000u)
      << "a loss took " << (c->clock().now() - t0) / 1000 << " us to repair";
}

// A gap whose resend is lost too, while the stream goes on: the receiver
// NAKs it again once a timeout has passed with packets still arriving
// past it, so the repair does not wait for the sender's timeout, which
// doubles with every loss (here 6.5 ms against 30.5 ms).
TEST_F(LinkFaults, AGapWhoseResendIsLostIsAskedForAgain) {
  ASSERT_NO_FATAL_FAILURE(start());
  constexpr uint32_t kWrites = 120, kLost = 10;
  Region src = make_region(*p.ctx_a, kWrites * 64, kAllAccess, 361);
  Region dst = make_region(*p.ctx_b, kWrites * 64);
  // The first WRITE gives the round trip; the channel's serial of WRITE i
  // is then first + i.
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1000, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  uint32_t lost = 0, first = 0;
  bool armed = false;
  c->fabric().tap = [&](size_t src_port, std::span<const uint8_t> f) {
    const rhn_pkt_hdr h = header_of(f);
    if (src_port == 0 && h.type == RHN_PKT_DATA && !armed) {
      first = h.seq;
      armed = true;
    }
  };
  c->fabric().drop = [&](size_t src_port, std::span<const uint8_t> f) {
    const rhn_pkt_hdr h = header_of(f);
    if (armed && src_port == 0 && h.type == RHN_PKT_DATA &&
        h.seq == first + kLost && lost < 5)
      return ++lost, true;
    return false;
  };
  CounterSnap b(c->node(1));
  uint64_t posted_at = 0, done_at = 0;
  std::vector<Completion> done;
  for (uint32_t i = 0; i < kWrites; i++) {
    if (i == kLost) posted_at = c->clock().now();
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(
        i, RHN_OP_WRITE, {src.sge(i * 64, 64)}, dst.va(i * 64), dst.key())));
    c->run_for(500'000);  // one every 0.5 ms
    for (const auto& e : p.cq_a->poll(SIZE_MAX)) {
      done.push_back(e);
      if (e.wr_id == kLost) done_at = c->clock().now();
    }
  }
  auto rest = c->wait_cqes(*p.cq_a, kWrites - done.size(), 1'000'000'000);
  for (const auto& e : rest) {
    done.push_back(e);
    if (e.wr_id == kLost && !done_at) done_at = c->clock().now();
  }
  ASSERT_EQ(done.size(), size_t(kWrites));
  for (const auto& e : done) ASSERT_TRUE(e.ok()) << describe(e);
  EXPECT_EQ(lost, 5u);
  EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  EXPECT_GE(b.delta(RHN_CNT_NAKS_SENT), 3u);
  ASSERT_NE(done_at, 0u);
  EXPECT_LT(done_at - posted_at, 15'000'000u)
      << "the gap took " << (done_at - posted_at) / 1000 << " us to repair";
}

// The fabric reorders ACKs. An ACK is applied only once the peer's own
// stream has caught up to where the peer sent it (a gate), and a channel
// holds four gates; more are merged. A stale ACK merged after a newer one
// must not take back what the newer one acknowledged. (It replaced it: the
// WRITE only the newer ACK covered was never freed, nor sent again, since
// it counted as acknowledged, and never completed.)
TEST_F(LinkFaults, AStaleAckAmongTooManyGatedOnesTakesNothingBack) {
  ASSERT_NO_FATAL_FAILURE(start());
  constexpr uint32_t kWrites = 6;
  Region a_src = make_region(*p.ctx_a, 4096, kAllAccess, 371);
  Region a_dst = make_region(*p.ctx_a, 4096);
  Region b_src = make_region(*p.ctx_b, 4096, kAllAccess, 372);
  Region b_dst = make_region(*p.ctx_b, 4096);
  bool hold = true, injecting = false;
  std::vector<uint8_t> b_first;                     // B's first DATA frame
  std::map<uint32_t, std::vector<uint8_t>> b_acks;  // by ack_seq
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    if (injecting || src != 1 || !hold) return false;
    const rhn_pkt_hdr h = header_of(f);
    if (h.type == RHN_PKT_DATA && b_first.empty())
      b_first.assign(f.begin(), f.end());
    if (h.type == RHN_PKT_ACK && !b_acks.count(h.ack_seq))
      b_acks[h.ack_seq].assign(f.begin(), f.end());
    return h.type == RHN_PKT_DATA || h.type == RHN_PKT_ACK;
  };
  auto inject = [&](const std::vector<uint8_t>& frame) {
    injecting = true;
    c->fabric().wire(1).transmit(frame);
    injecting = false;
    c->run_for(50'000);
  };
  // B's WRITE to A is held back: no ACK B sends after it can be applied
  // at A until A has it.
  ASSERT_TRUE(p.qp_b->post_send(
      rdma_wr(100, RHN_OP_WRITE, {b_src.sge(0, 64)}, a_dst.va(), a_dst.key())));
  c->run_for(50'000);
  ASSERT_FALSE(b_first.empty());
  // A's WRITEs, each acknowledged on its own (the ACKs are held too).
  for (uint32_t i = 0; i < kWrites; i++) {
    ASSERT_TRUE(
        p.qp_a->post_send(rdma_wr(i, RHN_OP_WRITE, {a_src.sge(i * 64, 64)},
                                  b_dst.va(i * 64), b_dst.key())));
    c->run_for(100'000);
  }
  ASSERT_GE(b_acks.size(), size_t(kWrites));
  // The ACKs reach A in order, but the newest before the one just older.
  std::vector<const std::vector<uint8_t>*> order;
  for (const auto& [seq, frame] : b_acks) order.push_back(&frame);
  std::swap(order[order.size() - 1], order[order.size() - 2]);
  for (const auto* frame : order) inject(*frame);
  // Then B's WRITE, as first sent: A's stream of gates can open.
  inject(b_first);
  hold = false;
  auto v = c->wait_cqes(*p.cq_a, kWrites, 1'000'000'000);
  ASSERT_EQ(v.size(), size_t(kWrites)) << "a WRITE never completed";
  for (const auto& e : v) EXPECT_TRUE(e.ok()) << describe(e);
  EXPECT_EQ(b_dst.buf.bytes(0, kWrites * 64), a_src.buf.bytes(0, kWrites * 64));
  Completion wb = wait_one(*c, *p.cq_b, 1'000'000'000);
  EXPECT_TRUE(wb.ok()) << describe(wb);
  EXPECT_EQ(a_dst.buf.bytes(0, 64), b_src.buf.bytes(0, 64));
}

// A slow path (a 300 ms timeout) and a peer gone: each retry doubles the
// timeout, but never past a second, so the peer is declared dead after
// 0.3 + 0.6 + 7 x 1 s, not after 0.3 s x (2 + 4 + ... + 128 + ...).
TEST_F(LinkFaults, TheBackedOffTimeoutStopsAtASecond) {
  ClusterConfig cfg;
  cfg.engine.retransmit_timeout_ns = 300'000'000;
  ASSERT_NO_FATAL_FAILURE(start(cfg));
  Region src = make_region(*p.ctx_a, 64, kAllAccess, 381);
  Region dst = make_region(*p.ctx_b, 64);
  c->fabric().set_link(1, false);
  const uint64_t t0 = c->clock().now();
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 64)}, dst.va(), dst.key())));
  Completion w = wait_one(*c, *p.cq_a, 60'000'000'000);
  EXPECT_EQ(w.status, RHN_CQE_RETRY_EXC_ERR) << describe(w);
  const uint64_t took = c->clock().now() - t0;
  EXPECT_GT(took, 7'000'000'000u);
  EXPECT_LT(took, 9'000'000'000u) << took / 1'000'000 << " ms";
}

TEST_F(LinkFaults, DeadPeerGivesRetryExceededInBoundedTime) {
  ClusterConfig cfg;
  cfg.nodes = 3;
  cfg.engine.retransmit_timeout_ns = 100'000;
  cfg.engine.max_retries = 4;
  ASSERT_NO_FATAL_FAILURE(start(cfg));
  Region src = make_region(*p.ctx_a, 8192, kAllAccess, 311);
  Region dst = make_region(*p.ctx_b, 8192, kAllAccess, 0, 0x3c);

  c->fabric().set_link(1, false);  // forever
  const uint64_t t0 = c->clock().now();
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(1, RHN_OP_WRITE, {src.sge(0, 8192)}, dst.va(), dst.key())));
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(2, RHN_OP_READ, {src.sge(0, 100)}, dst.va(), dst.key())));
  auto v = c->wait_cqes(*p.cq_a, 2, 2'000'000'000);
  ASSERT_GE(v.size(), 1u) << "no error completion for a dead peer";
  EXPECT_EQ(v[0].status, RHN_CQE_RETRY_EXC_ERR) << describe(v[0]);
  EXPECT_EQ(v[0].wr_id, 1u);
  if (v.size() > 1) {
    // The second one is reported as retry-exceeded or flushed.
    EXPECT_TRUE(v[1].status == RHN_CQE_RETRY_EXC_ERR ||
                v[1].status == RHN_CQE_WR_FLUSH_ERR)
        << describe(v[1]);
  }
  EXPECT_LT(c->clock().now() - t0, 1'000'000'000u)
      << "took too long to give up";
  EXPECT_GE(c->node(0).counter(RHN_CNT_PEER_DEAD), 1u);
  EXPECT_EQ(dst.buf.bytes(), std::vector<uint8_t>(8192, 0x3c));

  // Other peers are unaffected.
  RcPair q = make_rc_pair(*c, 0, 2);
  ASSERT_TRUE(q.ok);
  Region d2 = make_region(*q.ctx_b, 8192);
  Region s2 = make_region(*q.ctx_a, 8192, kAllAccess, 312);
  ASSERT_TRUE(q.qp_a->post_send(
      rdma_wr(2, RHN_OP_WRITE, {s2.sge(0, 8192)}, d2.va(), d2.key())));
  Completion w = wait_one(*c, *q.cq_a);
  EXPECT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(d2.buf.bytes(), s2.buf.bytes());

  // The dead peer comes back: a new session carries new traffic.
  c->fabric().set_link(1, true);
  RcPair r = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(r.ok);
  Region s3 = make_region(*r.ctx_a, 8192, kAllAccess, 313);
  Region d3 = make_region(*r.ctx_b, 8192);
  ASSERT_TRUE(r.qp_a->post_send(
      rdma_wr(3, RHN_OP_WRITE, {s3.sge(0, 8192)}, d3.va(), d3.key())));
  Completion z = wait_one(*c, *r.cq_a, 1'000'000'000);
  EXPECT_TRUE(z.ok()) << describe(z);
  EXPECT_EQ(d3.buf.bytes(), s3.buf.bytes());
}

}  // namespace
}  // namespace rhinet::test
