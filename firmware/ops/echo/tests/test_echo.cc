// SPDX-License-Identifier: BSD-2-Clause
// The echo family (test builds only): two engines on the simulated fabric,
// an ECHO from node 0's RC QP answered by node 1's NIC with the same bytes.
// Built by ../CMakeLists.txt against a copy of the engine that has it.
#include <cstring>
#include <map>
#include <optional>

#include "ops/family.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

ClusterConfig two_nodes() {
  ClusterConfig cfg;
  cfg.nodes = 2;
  return cfg;
}

class Echo : public ::testing::Test {
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
  std::unique_ptr<SimCluster> c;  // destroyed after the pair's queues
  RcPair p;
};

SendWr echo_wr(uint64_t wr_id, std::vector<Sge> sges) {
  return send_wr(wr_id, std::move(sges), RHN_OP_ECHO);
}

TEST_F(Echo, TheAnswerCarriesTheExactBytesIntoTheSges) {
  Region a = make_region(A(), 4096, kAllAccess, 31);
  Region b = make_region(A(), 4096, kAllAccess, 32);
  const auto want_a = a.buf.bytes(100, 300), want_b = b.buf.bytes(0, 700);
  std::vector<OpFrame> requests, answers;
  // On its way back, the answer finds the SGEs wiped: what they hold at
  // the end came with it.
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (o && src == 0 && o->op.opcode == RHN_WOP_ECHO) requests.push_back(*o);
    if (o && src == 1 && o->op.opcode == RHN_WOP_ECHO_RESP) {
      answers.push_back(*o);
      a.buf.fill(0);
      b.buf.fill(0);
    }
    return false;
  };
  CounterSnap target(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {a.sge(100, 300), b.sge(0, 700)})));
  const Completion s = wait_one(*c, *p.cq_a);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(s.opcode, RHN_CQE_OP_ECHO);
  EXPECT_EQ(s.byte_len, 1000u);
  EXPECT_EQ(s.wr_id, 1u);
  auto want = want_a;
  want.insert(want.end(), want_b.begin(), want_b.end());
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(requests[0].payload, want);
  EXPECT_EQ(answers[0].payload, want);
  EXPECT_EQ(a.buf.bytes(100, 300), want_a);
  EXPECT_EQ(b.buf.bytes(0, 700), want_b);
  EXPECT_EQ(a.buf.bytes(0, 100), std::vector<uint8_t>(100, 0));  // only SGEs
  // The target's NIC answered alone: nothing for its host.
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_b->poll().empty());
  EXPECT_EQ(target.delta(RHN_CNT_REMOTE_INVALID_REQUESTS), 0u);
}

TEST_F(Echo, MoreThanOnePacketIsRefusedAtThePost) {
  Region a = make_region(A(), 2 * RHN_WIRE_MTU, kAllAccess, 5);
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {a.sge(0, RHN_WIRE_MTU + 1)})));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_LEN_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_LENGTH)) << describe(s);
}

// Counts the ECHO requests that leave.
void count_requests(SimCluster& c, uint64_t& sent) {
  c.fabric().drop = [&sent](size_t, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (o && o->op.opcode == RHN_WOP_ECHO) sent++;
    return false;
  };
}

TEST_F(Echo, ABadLkeyCompletesInError) {
  Region a = make_region(A(), 256, kAllAccess, 7);
  uint64_t sent = 0;
  count_requests(*c, sent);
  Sge bad = a.sge(0, 64);
  bad.lkey ^= 0x5a00;
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {bad})));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_PROT_ERR) << describe(s);
  EXPECT_EQ(s.wr_id, 1u);
  EXPECT_EQ(sent, 0u);  // refused before anything left
  EXPECT_EQ(a.buf.bytes(), pattern(7, 256));
}

TEST_F(Echo, ASgeTheAnswerCannotBeWrittenToCompletesInError) {
  // The answer lands in the SGEs: they need local write access.
  Region ro = make_region(A(), 256, RHN_ACCESS_REMOTE_READ, 8);
  uint64_t sent = 0;
  count_requests(*c, sent);
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {ro.sge(0, 64)})));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_PROT_ERR) << describe(s);
  EXPECT_EQ(sent, 0u);
}

TEST_F(Echo, LostRequestAndLostAnswerAreSentAgain) {
  Region a = make_region(A(), 2048, kAllAccess, 41);
  const auto want = a.buf.bytes(0, 2048);
  int lost_requests = 0, lost_answers = 0;
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (!o) return false;
    if (src == 0 && o->op.opcode == RHN_WOP_ECHO && lost_requests < 2)
      return ++lost_requests, true;
    if (src == 1 && o->op.opcode == RHN_WOP_ECHO_RESP && lost_answers < 2) {
      a.buf.fill(0);
      return ++lost_answers, true;
    }
    return false;
  };
  CounterSnap na(c->node(0)), nb(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {a.sge(0, 2048)})));
  const Completion s = wait_one(*c, *p.cq_a, 1'000'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(lost_requests, 2);
  EXPECT_EQ(lost_answers, 2);
  EXPECT_EQ(a.buf.bytes(0, 2048), want);
  EXPECT_GE(na.delta(RHN_CNT_RETRANSMITS), 2u);
  EXPECT_GE(nb.delta(RHN_CNT_RETRANSMITS), 2u);
}

TEST_F(Echo, ManyEchoesOnALossyFabric) {
  make_lossy(*c, 34);
  Region a = make_region(A(), 64 * 1024, kAllAccess, 0, 0);
  std::vector<std::vector<uint8_t>> want;
  std::map<size_t, uint32_t> by_length;  // every echo has its own
  for (uint32_t i = 0; i < 32; i++) {
    const uint32_t len = 1 + (i * 397) % 2048;
    want.push_back(pattern(100 + i, len));
    by_length[len] = i;
    a.buf.write(i * 2048, want.back().data(), len);
  }
  // Each answer on its way finds its SGE wiped, as above.
  c->fabric().drop = [&](size_t src, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (o && src == 1 && o->op.opcode == RHN_WOP_ECHO_RESP) {
      const auto it = by_length.find(o->payload.size());
      if (it != by_length.end())
        a.buf.write(it->second * 2048, std::vector<uint8_t>(it->first).data(),
                    it->first);
    }
    return false;
  };
  for (uint32_t i = 0; i < 32; i++)
    ASSERT_TRUE(
        p.qp_a->post_send(echo_wr(i, {a.sge(i * 2048, want[i].size())})));
  const auto v = c->wait_cqes(*p.cq_a, want.size(), 2'000'000'000);
  ASSERT_EQ(v.size(), want.size()) << describe(v);
  for (uint32_t i = 0; i < want.size(); i++) {
    EXPECT_TRUE(v[i].ok()) << describe(v[i]);
    EXPECT_EQ(v[i].wr_id, i);
    EXPECT_EQ(a.buf.bytes(i * 2048, want[i].size()), want[i]) << i;
  }
}

// As for any request no QP at the target takes (a WRITE, a READ): nothing
// is sent again, and the WQE fails once an IB requester's retries would
// have run out.
TEST_F(Echo, APeerQpDestroyedFailsWhenTheTimerRunsOut) {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_TIMEOUT;
  m.timeout = 14;  // 4.096 us << 14 = 67 ms, twice (retry_cnt 1)
  m.retry_cnt = 1;
  ASSERT_TRUE(p.qp_a->modify(m).ok());
  Region a = make_region(A(), 64, kAllAccess, 9);
  ASSERT_TRUE(B().driver()
                  .destroy(RHN_ADMIN_DESTROY_QP, B().index(), p.qp_b->qpn())
                  .ok());
  CounterSnap nb(c->node(1));
  CounterSnap na(c->node(0));
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {a.sge(0, 64)})));
  EXPECT_TRUE(c->wait_cqes(*p.cq_a, 1, 120'000'000).empty());
  const Completion s = wait_one(*c, *p.cq_a, 40'000'000);
  EXPECT_EQ(s.status, RHN_CQE_RETRY_EXC_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_QP)) << describe(s);
  EXPECT_EQ(nb.delta(RHN_CNT_NO_QP_REQUESTS), 1u);
  EXPECT_EQ(na.delta(RHN_CNT_RETRANSMITS), 0u);
  EXPECT_EQ(a.buf.bytes(), pattern(9, 64));
}

class EchoOnUc : public Echo {
  RcOptions options() const override {
    RcOptions uc;
    uc.type = RHN_QP_UC;
    return uc;
  }
};

TEST_F(EchoOnUc, AnUnreliableQpCannotAskForAnAnswer) {
  Region a = make_region(A(), 64, kAllAccess, 3);
  ASSERT_TRUE(p.qp_a->post_send(echo_wr(1, {a.sge(0, 64)})));
  const Completion s = wait_one(*c, *p.cq_a);
  EXPECT_EQ(s.status, RHN_CQE_LOC_QP_OP_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_BAD_OPCODE)) << describe(s);
}

// The registry of this build: the echo opcodes are echo's, every other
// opcode keeps the family it had when the registry listed them itself.
TEST(EchoRegistry, EachOpcodeHasItsFamily) {
  using fw::family_of_wire;
  using fw::op_info;
  using fw::wire_is_request;
  const std::map<uint8_t, std::string> ops = {
      {RHN_OP_SEND, "send"},
      {RHN_OP_SEND_IMM, "send"},
      {RHN_OP_SEND_INV, "send"},
      {RHN_OP_WRITE, "rdma"},
      {RHN_OP_WRITE_IMM, "rdma"},
      {RHN_OP_READ, "rdma"},
      {RHN_OP_FETCH_ADD, "atomic"},
      {RHN_OP_CMP_SWAP, "atomic"},
      {RHN_OP_ATOMIC_EXT, "atomic"},
      {RHN_OP_WATCH, "watch"},
      {RHN_OP_BIND_MW, "window"},
      {RHN_OP_LOCAL_INV, "window"},
      {RHN_OP_REG_MR, "window"},
      {RHN_OP_RAW_ETH, "raw"},
      {RHN_OP_ISEND, "tag"},
      {RHN_OP_IPROBE, "tag-local"},
      {RHN_OP_IRECV_CANCEL, "tag-local"},
      {RHN_OP_PD_REQUEST, "pindown"},
      {RHN_OP_PD_RELEASE, "pindown"},
      {RHN_OP_LOCK, "sync"},
      {RHN_OP_UNLOCK, "sync"},
      {RHN_OP_BARRIER, "sync"},
      {RHN_OP_MCAST_LIST, "mcast"},
      {RHN_OP_MCAST_SWITCH, "mcast_switch"},
      {RHN_OP_SUBSCRIBE, "share"},
      {RHN_OP_UNSUBSCRIBE, "share"},
      {RHN_OP_SHARE_UPDATE, "share"},
      {RHN_OP_COLLECTIVE, "coll"},
      {RHN_OP_TRIGGER_ADD, "trigger"},
      {RHN_OP_ECHO, "echo"}};
  const std::map<uint8_t, std::string> wires = {
      {RHN_WOP_SEND, "send"},
      {RHN_WOP_WRITE, "rdma"},
      {RHN_WOP_READ_REQ, "rdma"},
      {RHN_WOP_READ_RESP, "rdma"},
      {RHN_WOP_FETCH_ADD, "atomic"},
      {RHN_WOP_CMP_SWAP, "atomic"},
      {RHN_WOP_ATOMIC_RESP, "atomic"},
      {RHN_WOP_TAG, "tag"},
      {RHN_WOP_TAG_DATA, "tag"},
      {RHN_WOP_TAG_RESP, "tag"},
      {RHN_WOP_PD_REQ, "pindown"},
      {RHN_WOP_PD_RELEASE, "pindown"},
      {RHN_WOP_PD_REPLY, "pindown"},
      {RHN_WOP_TM_DATA, "tm"},
      {RHN_WOP_LOCK, "sync"},
      {RHN_WOP_UNLOCK, "sync"},
      {RHN_WOP_BARRIER, "sync"},
      {RHN_WOP_SYNC_RESP, "sync"},
      {RHN_WOP_SHARE_REQ, "share"},
      {RHN_WOP_SHARE_UPDATE, "share"},
      {RHN_WOP_SHARE_DATA, "share"},
      {RHN_WOP_ECHO, "echo"},
      {RHN_WOP_ECHO_RESP, "echo"},
      {RHN_WOP_TRIGGER_ADD, "trigger"},
      {RHN_WOP_TRIGGER_RESP, "trigger"},
      {RHN_WOP_ATOMIC_EXT, "atomic"}};
  for (uint32_t op = 0; op < 256; op++) {
    const fw::OpFamily* f = op_info(uint8_t(op)).family;
    const auto it = ops.find(uint8_t(op));
    EXPECT_EQ(f ? std::string(f->name) : "", it == ops.end() ? "" : it->second)
        << "WQE opcode " << op;
  }
  for (uint32_t w = 0; w < 256; w++) {
    const fw::OpFamily* f = family_of_wire(uint8_t(w));
    const auto it = wires.find(uint8_t(w));
    EXPECT_EQ(f ? std::string(f->name) : "",
              it == wires.end() ? "" : it->second)
        << "wire opcode " << w;
    // Requests are numbered below the first answer, but for echo's, the
    // remote trigger add's and the extended atomic's; a number no family
    // claims is refused as a request, but for the NAK.
    EXPECT_EQ(wire_is_request(uint8_t(w)),
              w == RHN_WOP_ECHO || w == RHN_WOP_TRIGGER_ADD ||
                  w == RHN_WOP_ATOMIC_EXT || w < RHN_WOP_READ_RESP ||
                  (!f && w != RHN_WOP_NAK))
        << "wire opcode " << w;
  }
}

}  // namespace
}  // namespace rhinet::test
