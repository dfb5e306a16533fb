// SPDX-License-Identifier: BSD-2-Clause
// Remote pin-down: memory a process has only mapped, pinned by its
// host when a peer first needs it. PD_REQ on unpinned and on pinned pages,
// PD_RELEASE and unpinning, a PUSH, PULL or atomic that reaches an unpinned
// page held while the host pins (one event per run), the order of one
// source's later messages kept, concurrent requests from several nodes, the
// host's limit, and the target MR or endpoint going away mid-wait.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kQkey = 0x7000;
constexpr uint32_t kAreaId = 5;
constexpr size_t kMiB = 1u << 20;

// A node's endpoint with an on-demand area of `bytes` its host serves.
struct Target {
  DatagramNode ep;
  std::unique_ptr<SimPinHost> host;
  SimBuffer mem;
  SimMr mr;
};

class PinDown : public ::testing::Test {
 protected:
  void start(size_t nodes, FaultConfig faults = {}) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    c->fabric().set_faults(faults);
    for (size_t i = 0; i < nodes; i++) {
      eps.push_back(
          make_datagram_node(*c, uint16_t(i), RHN_QP_ENDPOINT, kQkey,
                             {.cq_log_depth = 10, .buf_bytes = 2 * kMiB}));
      ASSERT_TRUE(eps.back().qp);
    }
  }
  // Node 0's endpoint gets an on-demand area over `bytes` of fresh memory
  // (filled with `fill`: the process wrote it, nothing is pinned).
  void declare(size_t bytes, uint8_t fill = 0x5a) {
    t.host = std::make_unique<SimPinHost>(c->node(0));
    t.mem = eps[0].ctx->alloc(bytes);
    ASSERT_TRUE(t.mem.valid());
    t.mem.fill(fill);
    MrOptions opt;
    opt.on_demand = true;
    t.mr = eps[0].ctx->reg_mr(t.mem, kAllAccess, {}, opt);
    ASSERT_TRUE(t.mr.ok());
    t.host->add(t.mr);
    ASSERT_TRUE(
        eps[0].ctx->register_area(kAreaId, t.mr, t.mem.va(), bytes).ok());
  }
  SendWr to_area(uint64_t wr_id, uint8_t opcode, std::vector<Sge> sges,
                 uint64_t offset, uint16_t node = 0) {
    SendWr wr = rdma_wr(wr_id, opcode, std::move(sges), offset, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = node;
    wr.dst_qpn = eps[node].qp->qpn();
    return wr;
  }
  SendWr pin_wr(uint64_t wr_id, uint8_t opcode, uint64_t offset,
                uint32_t length) {
    SendWr wr = to_area(wr_id, opcode, {}, offset);
    wr.imm_data = length;
    return wr;
  }
  Completion run(size_t from, const SendWr& wr) {
    EXPECT_TRUE(eps[from].qp->post_send(wr));
    return wait_one(*c, *eps[from].cq, 200'000'000);
  }
  std::unique_ptr<SimCluster> c;
  std::vector<DatagramNode> eps;
  Target t;
};

TEST_F(PinDown, FirstTouchPushOfOneMiBIsOneHostEvent) {
  start(2);
  declare(kMiB);
  EXPECT_EQ(t.host->pinned(), 0u);
  std::vector<uint8_t> data = pattern(7, kMiB);
  eps[1].buf.buf.write(0, data.data(), data.size());
  CounterSnap target(c->node(0));
  Completion w = run(1, to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, kMiB)}, 0));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(t.mem.bytes(), data);
  // The whole message's range in one run: one interrupt, 256 pages.
  EXPECT_EQ(t.host->pin_events(), 1u);
  EXPECT_EQ(target.delta(RHN_CNT_PIN_EVENTS), 1u);
  EXPECT_GT(target.delta(RHN_CNT_PIN_HELD), 0u);
  EXPECT_EQ(t.host->pinned(t.mr), kMiB / 4096);
  // Pinned now: the same PUSH again asks the host for nothing.
  w = run(1, to_area(2, RHN_OP_WRITE, {eps[1].buf.sge(0, kMiB)}, 0));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(t.host->pin_events(), 1u);
}

// rhinetdv_pindown's steps (a)-(b): a pd_req of the first 256 KiB, then a
// PUSH of the whole MiB. The 768 KiB never pinned are one host event and
// all 256 pages end pinned: a reading of pin_events and pinned_pages
// unchanged after (b) is a stale one (ib_core's hw_counters cache).
TEST_F(PinDown, PdReqThenPushOfTheWholeAreaPinsTheRestInOneEvent) {
  start(2);
  declare(kMiB);
  Completion q = run(1, pin_wr(1, RHN_OP_PD_REQUEST, 0, 256 << 10));
  ASSERT_TRUE(q.ok()) << describe(q);
  EXPECT_EQ(t.host->pinned(t.mr), 64u);
  CounterSnap target(c->node(0));
  std::vector<uint8_t> data = pattern(3, kMiB);
  eps[1].buf.buf.write(0, data.data(), data.size());
  Completion w = run(1, to_area(2, RHN_OP_WRITE, {eps[1].buf.sge(0, kMiB)}, 0));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(target.delta(RHN_CNT_PIN_EVENTS), 1u);
  EXPECT_EQ(t.host->pin_events(), 2u);
  EXPECT_EQ(t.host->pinned(t.mr), kMiB / 4096);
  EXPECT_EQ(t.mem.bytes(), data);
}

// A DIFF PUSH refused for pinning is sent again: it must carry the same
// runs. (The twin used to take the bytes with the first transmission, so
// the resend compared with a twin already equal to the data and sent
// nothing: the target never got the changed bytes.)
TEST_F(PinDown, ADiffPushSentAgainAfterPinningCarriesItsBytes) {
  start(2);
  declare(8192, 0);
  AdminResult twin = c->node(1).driver->alloc_twin(eps[1].ctx->index(), 8192);
  ASSERT_TRUE(twin.ok());
  // The twin is zero; three bytes of the source differ from it.
  std::vector<uint8_t> data(8192, 0);
  for (size_t o : {size_t{10}, size_t{5000}, size_t{8191}}) data[o] = 0x77;
  eps[1].buf.buf.write(0, data.data(), data.size());
  SendWr wr = to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, 8192)}, 0);
  wr.xfer_mode = RHN_XFER_DIFF;
  wr.xfer.twin = twin.result;
  CounterSnap target(c->node(0));
  Completion w = run(1, wr);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_GT(target.delta(RHN_CNT_PIN_HELD), 0u) << "refused, sent again";
  EXPECT_EQ(t.mem.bytes(), data);
  // The twin moved with the completion: the same DIFF sends nothing now.
  t.mem.fill(0x11);
  w = run(1, wr);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(t.mem.bytes(), std::vector<uint8_t>(8192, 0x11));
}

TEST_F(PinDown, PullAndAtomicOnUnpinnedPagesAreHeldThenServed) {
  start(2);
  declare(64 * 1024, 0x33);
  Completion r =
      run(1, to_area(1, RHN_OP_READ, {eps[1].buf.sge(0, 20000)}, 3000));
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(eps[1].buf.buf.bytes(0, 20000), std::vector<uint8_t>(20000, 0x33));
  t.mem.store64(40960, 41);
  SendWr fa = to_area(2, RHN_OP_FETCH_ADD, {eps[1].buf.sge(0, 8)}, 40960);
  fa.compare_add = 1;
  Completion a = run(1, fa);
  ASSERT_TRUE(a.ok()) << describe(a);
  EXPECT_EQ(eps[1].buf.buf.load64(0), 41u);
  EXPECT_EQ(t.mem.load64(40960), 42u);
  EXPECT_EQ(t.host->pin_events(), 2u);
}

TEST_F(PinDown, PdReqPinsAndHoldsReleaseUnpins) {
  start(2);
  declare(kMiB);
  // Unpinned: the host pins, then the request completes, holding them.
  Completion q = run(1, pin_wr(1, RHN_OP_PD_REQUEST, 8192, 65536));
  ASSERT_TRUE(q.ok()) << describe(q);
  EXPECT_EQ(q.opcode, RHN_CQE_OP_PD_REQUEST);
  EXPECT_EQ(t.host->pin_events(), 1u);
  EXPECT_EQ(t.host->pinned(t.mr), 16u);
  EXPECT_EQ(t.host->holders(t.mr, 2), 1u);
  EXPECT_EQ(t.host->holders(t.mr, 17), 1u);
  EXPECT_EQ(t.host->holders(t.mr, 18), 0u);
  // Pinned already: answered at once, one more holder, no pinning.
  q = run(1, pin_wr(2, RHN_OP_PD_REQUEST, 8192, 4096));
  ASSERT_TRUE(q.ok()) << describe(q);
  EXPECT_EQ(t.host->pin_events(), 1u);
  EXPECT_EQ(t.host->holders(t.mr, 2), 2u);
  // One release of the whole range: page 2 still held, the rest go.
  Completion rel = run(1, pin_wr(3, RHN_OP_PD_RELEASE, 8192, 65536));
  ASSERT_TRUE(rel.ok()) << describe(rel);
  EXPECT_EQ(rel.opcode, RHN_CQE_OP_PD_RELEASE);
  ASSERT_TRUE(
      c->run_until([&] { return t.host->pinned(t.mr) == 1; }, 10'000'000));
  rel = run(1, pin_wr(4, RHN_OP_PD_RELEASE, 8192, 4096));
  ASSERT_TRUE(rel.ok()) << describe(rel);
  ASSERT_TRUE(c->run_until([&] { return t.host->pinned() == 0; }, 10'000'000));
  // Unpinned pages were dropped from the NIC's TLB too: a PUSH there now
  // asks the host again instead of writing through a stale translation.
  std::vector<uint8_t> data = pattern(9, 4096);
  eps[1].buf.buf.write(0, data.data(), data.size());
  Completion w =
      run(1, to_area(5, RHN_OP_WRITE, {eps[1].buf.sge(0, 4096)}, 8192));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(t.host->pin_events(), 2u);
  EXPECT_EQ(t.mem.bytes(8192, 4096), data);
}

TEST_F(PinDown, RequestsAreCheckedLikeAnyAccess) {
  start(2);
  declare(64 * 1024);
  Completion q = run(1, pin_wr(1, RHN_OP_PD_REQUEST, 60 * 1024, 8192));
  EXPECT_EQ(q.status, RHN_CQE_REM_ACCESS_ERR) << describe(q);
  EXPECT_EQ(q.vendor_err, uint32_t(RHN_SYN_BOUNDS));
  SendWr bad_area = pin_wr(2, RHN_OP_PD_REQUEST, 0, 4096);
  bad_area.remote_key = kAreaId + 1;
  q = run(1, bad_area);
  EXPECT_EQ(q.status, RHN_CQE_REM_ACCESS_ERR) << describe(q);
  // No length: refused by the requester's NIC.
  q = run(1, pin_wr(3, RHN_OP_PD_REQUEST, 0, 0));
  EXPECT_EQ(q.status, RHN_CQE_LOC_QP_OP_ERR) << describe(q);
  EXPECT_EQ(t.host->pin_events(), 0u);
  EXPECT_EQ(t.host->pinned(), 0u);
}

TEST_F(PinDown, HeldWhileTheHostIsSlowThenResumedByItsAnswer) {
  start(2);
  declare(256 * 1024);
  t.host->answer = false;
  std::vector<uint8_t> data = pattern(11, 200000);
  eps[1].buf.buf.write(0, data.data(), data.size());
  ASSERT_TRUE(eps[1].qp->post_send(
      to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, 200000)}, 1000)));
  // Several retry periods pass: nothing fails, nothing lands.
  c->run_for(4 * RHN_PIN_RETRY_US * 1000ull);
  EXPECT_TRUE(eps[1].cq->poll(4).empty());
  EXPECT_EQ(t.host->pin_events(), 1u);  // asked once, not once per resend
  const uint64_t before = c->clock().now();
  t.host->answer_deferred();
  Completion w = wait_one(*c, *eps[1].cq, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  // Sent again on the target's word, not on the requester's timer.
  EXPECT_LT(c->clock().now() - before, RHN_PIN_RETRY_US * 1000ull / 2);
  EXPECT_EQ(t.mem.bytes(1000, 200000), data);
}

TEST_F(PinDown, ALaterMessageOfTheSameSourceDoesNotOvertake) {
  start(2);
  declare(256 * 1024);
  // A registered area with a flag word on the same endpoint.
  Region flag = make_region(*eps[0].ctx, 4096, kAllAccess, 0, 0);
  ASSERT_TRUE(eps[0].ctx->register_area(9, flag.mr, flag.va(), 4096).ok());
  t.host->answer = false;
  std::vector<uint8_t> data = pattern(12, 100000);
  eps[1].buf.buf.write(0, data.data(), data.size());
  eps[1].buf.buf.store64(kMiB, 1);
  ASSERT_TRUE(eps[1].qp->post_send(
      to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, 100000)}, 0)));
  SendWr flag_wr = to_area(2, RHN_OP_WRITE, {eps[1].buf.sge(kMiB, 8)}, 0);
  flag_wr.remote_key = 9;
  ASSERT_TRUE(eps[1].qp->post_send(flag_wr));
  c->run_for(2 * RHN_PIN_RETRY_US * 1000ull);
  // The flag (pinned memory) waits behind the data (being pinned).
  EXPECT_EQ(flag.buf.load64(0), 0u);
  t.host->answer_deferred();
  auto done = c->wait_cqes(*eps[1].cq, 2, 100'000'000);
  ASSERT_EQ(done.size(), 2u) << describe(done);
  EXPECT_TRUE(done[0].ok() && done[1].ok()) << describe(done);
  EXPECT_EQ(flag.buf.load64(0), 1u);
  EXPECT_EQ(t.mem.bytes(0, 100000), data);
}

TEST_F(PinDown, SeveralNodesAtOnceThroughALossyFabric) {
  FaultConfig faults;
  faults.loss = 0.05;
  faults.reorder = 0.05;
  start(5, faults);
  declare(kMiB, 0);
  // Four peers, each a quarter plus an overlap into the next quarter.
  constexpr size_t kQuarter = kMiB / 4;
  for (size_t n = 1; n <= 4; n++) {
    std::vector<uint8_t> d = pattern(20 + n, kQuarter);
    eps[n].buf.buf.write(0, d.data(), d.size());
    ASSERT_TRUE(eps[n].qp->post_send(to_area(
        n, RHN_OP_WRITE, {eps[n].buf.sge(0, kQuarter)}, (n - 1) * kQuarter)));
    // And a PD_REQ over its neighbour's first page.
    ASSERT_TRUE(eps[n].qp->post_send(
        pin_wr(10 + n, RHN_OP_PD_REQUEST, (n % 4) * kQuarter, 4096)));
  }
  for (size_t n = 1; n <= 4; n++) {
    auto done = c->wait_cqes(*eps[n].cq, 2, 500'000'000);
    ASSERT_EQ(done.size(), 2u) << n << ": " << describe(done);
    EXPECT_TRUE(done[0].ok() && done[1].ok()) << describe(done);
  }
  for (size_t n = 1; n <= 4; n++)
    EXPECT_EQ(t.mem.bytes((n - 1) * kQuarter, kQuarter),
              pattern(20 + n, kQuarter));
  EXPECT_EQ(t.host->pinned(t.mr), kMiB / 4096);
  // At most one run per quarter (a PD_REQ may come first).
  EXPECT_LE(t.host->pin_events(), 8u);
}

TEST_F(PinDown, BeyondTheHostsLimitTheRequestFailsClearly) {
  start(2);
  declare(kMiB);
  t.host->limit = 16;
  CounterSnap target(c->node(0));
  Completion w = run(1, to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, kMiB)}, 0));
  EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_NOT_PINNED));
  EXPECT_GE(target.delta(RHN_CNT_PIN_FAILED), 1u);
  Completion q = run(1, pin_wr(2, RHN_OP_PD_REQUEST, 512 * 1024, 128 * 1024));
  EXPECT_EQ(q.status, RHN_CQE_REM_ACCESS_ERR) << describe(q);
  EXPECT_EQ(q.vendor_err, uint32_t(RHN_SYN_NOT_PINNED));
  // Within the limit still works.
  EXPECT_EQ(t.host->pinned(), 16u);
  Completion ok = run(1, pin_wr(3, RHN_OP_PD_REQUEST, 0, 4096));
  EXPECT_TRUE(ok.ok()) << describe(ok);
}

TEST_F(PinDown, TargetMemoryGoneWhileHeld) {
  start(2);
  declare(256 * 1024);
  t.host->answer = false;
  ASSERT_TRUE(eps[1].qp->post_send(
      to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, 100000)}, 0)));
  ASSERT_TRUE(eps[1].qp->post_send(pin_wr(2, RHN_OP_PD_REQUEST, 0, 4096)));
  c->run_for(1'000'000);
  // The process deregisters (the area first, as the driver does).
  ASSERT_TRUE(
      eps[0].ctx->driver().unregister_area(eps[0].ctx->index(), kAreaId).ok());
  t.host->remove(t.mr);
  ASSERT_TRUE(eps[0].ctx->dereg_mr(t.mr).ok());
  t.host->answer_deferred();  // too late: the MR is gone
  auto done = c->wait_cqes(*eps[1].cq, 2, 100'000'000);
  ASSERT_EQ(done.size(), 2u) << describe(done);
  for (const auto& d : done)
    EXPECT_EQ(d.status, RHN_CQE_REM_ACCESS_ERR) << describe(d);
}

TEST_F(PinDown, TargetEndpointGoneWhileHeld) {
  start(2);
  declare(256 * 1024);
  t.host->answer = false;
  ASSERT_TRUE(eps[1].qp->post_send(
      to_area(1, RHN_OP_WRITE, {eps[1].buf.sge(0, 100000)}, 0)));
  ASSERT_TRUE(eps[1].qp->post_send(pin_wr(2, RHN_OP_PD_REQUEST, 0, 4096)));
  c->run_for(1'000'000);
  ASSERT_TRUE(
      eps[0]
          .ctx->driver()
          .destroy(RHN_ADMIN_DESTROY_QP, eps[0].ctx->index(), eps[0].qp->qpn())
          .ok());
  auto done = c->wait_cqes(*eps[1].cq, 2, 200'000'000);
  ASSERT_EQ(done.size(), 2u) << describe(done);
  for (const auto& d : done) EXPECT_FALSE(d.ok()) << describe(d);
  t.host->answer_deferred();  // the host's late answer harms nothing
  c->run_for(1'000'000);
}

}  // namespace
}  // namespace rhinet::test

namespace rhinet::test {
namespace {

// One process whose memory many peers touch at once holds only its share
// of the NIC's records of held requests: another process's request on the
// same node still gets one and resumes on the host's answer, not on the
// requesters' fallback timer.
TEST(PinDownShare, OneProcessCannotTakeEveryRecord) {
  ClusterConfig cfg;
  cfg.nodes = 2;
  cfg.engine.pin.waiters = 8;
  cfg.engine.pin.context_share = 128;  // 4 records per target process
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  SimPinHost host(c.node(0));
  DatagramShape shape;
  shape.buf_bytes = 64 * 1024;
  struct Proc {
    DatagramNode ep;
    SimBuffer mem;
    SimMr mr;
  };
  auto declare = [&](Proc& p) {
    p.ep = make_datagram_node(c, 0, RHN_QP_ENDPOINT, kQkey, shape);
    ASSERT_TRUE(p.ep.qp);
    p.mem = p.ep.ctx->alloc(256 * 1024);
    MrOptions opt;
    opt.on_demand = true;
    p.mr = p.ep.ctx->reg_mr(p.mem, kAllAccess, {}, opt);
    ASSERT_TRUE(p.mr.ok());
    host.add(p.mr);
    ASSERT_TRUE(
        p.ep.ctx->register_area(kAreaId, p.mr, p.mem.va(), 256 * 1024).ok());
  };
  Proc hog, other;
  declare(hog);
  declare(other);
  host.answer = false;
  std::vector<DatagramNode> peers;
  for (int i = 0; i < 9; i++) {
    peers.push_back(make_datagram_node(c, 1, RHN_QP_ENDPOINT, kQkey, shape));
    ASSERT_TRUE(peers.back().qp);
  }
  auto push = [&](size_t i, const Proc& to) {
    SendWr wr = rdma_wr(i, RHN_OP_WRITE, {peers[i].buf.sge(0, 4096)}, i * 4096,
                        kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = 0;
    wr.dst_qpn = to.ep.qp->qpn();
    ASSERT_TRUE(peers[i].qp->post_send(wr));
  };
  for (size_t i = 0; i < 8; i++) push(i, hog);
  c.run_for(1'000'000);
  push(8, other);
  c.run_for(1'000'000);
  const uint64_t answered = c.clock().now();
  host.answer_deferred();
  Completion w = wait_one(c, *peers[8].cq, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_LT(c.clock().now() - answered, RHN_PIN_RETRY_US * 1000ull / 2);
  // The hog's peers all finish too (those without a record on the timer).
  for (size_t i = 0; i < 8; i++) {
    Completion h = wait_one(c, *peers[i].cq, 100'000'000);
    EXPECT_TRUE(h.ok()) << i << " " << describe(h);
  }
}

}  // namespace
}  // namespace rhinet::test

// ---- A local source on demand: the sender's own MR not pinned yet.

namespace rhinet::test {
namespace {

constexpr uint32_t kFlagArea = 9;

class LocalPin : public PinDown {
 protected:
  // Node 1's source on demand over `bytes` it wrote (nothing pinned),
  // node 0 a registered area kFlagArea of 1 MiB as the target.
  void local_source(size_t bytes, uint64_t seed) {
    start(2);
    src_host = std::make_unique<SimPinHost>(c->node(1));
    src = eps[1].ctx->alloc(bytes);
    ASSERT_TRUE(src.valid());
    data = pattern(seed, bytes);
    src.write(0, data.data(), data.size());
    MrOptions opt;
    opt.on_demand = true;
    src_mr = eps[1].ctx->reg_mr(src, kAllAccess, {}, opt);
    ASSERT_TRUE(src_mr.ok());
    src_host->add(src_mr);
    dst = make_region(*eps[0].ctx, kMiB, kAllAccess, 0, 0);
    ASSERT_TRUE(
        eps[0].ctx->register_area(kFlagArea, dst.mr, dst.va(), kMiB).ok());
  }
  SendWr write_from(uint64_t wr_id, Sge sge, uint64_t offset) {
    SendWr wr = to_area(wr_id, RHN_OP_WRITE, {sge}, offset);
    wr.remote_key = kFlagArea;
    return wr;
  }
  Sge src_sge(size_t off, size_t len) const {
    return Sge{src.va() + off, uint32_t(len), src_mr.key};
  }
  std::unique_ptr<SimPinHost> src_host;
  SimBuffer src;
  SimMr src_mr;
  Region dst;
  std::vector<uint8_t> data;
};

TEST_F(LocalPin, ASendFromUnpinnedPagesWaitsForItsHostThenGoes) {
  local_source(256 * 1024, 31);
  CounterSnap sender(c->node(1));
  Completion w = run(1, write_from(1, src_sge(0, 256 * 1024), 0));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.buf.bytes(0, 256 * 1024), data);
  // The rest of the SGE in one host event.
  EXPECT_EQ(src_host->pin_events(), 1u);
  EXPECT_EQ(sender.delta(RHN_CNT_PIN_EVENTS), 1u);
  EXPECT_EQ(src_host->pinned(src_mr), 64u);
  EXPECT_EQ(sender.delta(RHN_CNT_LOCAL_PROT_ERRORS), 0u);
  // Pinned now: the same WRITE asks nothing.
  w = run(1, write_from(2, src_sge(0, 256 * 1024), 0));
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(src_host->pin_events(), 1u);
}

TEST_F(LocalPin, LaterWorkOfTheQpWaitsBehindIt) {
  local_source(128 * 1024, 32);
  src_host->answer = false;
  eps[1].buf.buf.store64(0, 77);
  ASSERT_TRUE(eps[1].qp->post_send(write_from(1, src_sge(0, 128 * 1024), 0)));
  ASSERT_TRUE(
      eps[1].qp->post_send(write_from(2, eps[1].buf.sge(0, 8), kMiB - 8)));
  c->run_for(4 * RHN_PIN_RETRY_US * 1000ull);
  EXPECT_TRUE(eps[1].cq->poll(4).empty());
  EXPECT_EQ(dst.buf.load64(kMiB - 8), 0u) << "overtook the stalled send";
  EXPECT_EQ(src_host->pin_events(), 1u);  // asked once while it waits
  src_host->answer_deferred();
  auto done = c->wait_cqes(*eps[1].cq, 2, 100'000'000);
  ASSERT_EQ(done.size(), 2u) << describe(done);
  EXPECT_TRUE(done[0].ok() && done[1].ok()) << describe(done);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(dst.buf.bytes(0, 128 * 1024), data);
  EXPECT_EQ(dst.buf.load64(kMiB - 8), 77u);
}

TEST_F(LocalPin, RefusedByItsHostTheSendFailsLocally) {
  local_source(256 * 1024, 33);
  src_host->limit = 4;
  CounterSnap sender(c->node(1));
  Completion w = run(1, write_from(1, src_sge(0, 256 * 1024), 0));
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_NOT_PINNED));
  EXPECT_GE(sender.delta(RHN_CNT_PIN_FAILED), 1u);
  EXPECT_EQ(src_host->pin_events(), 1u);
}

TEST_F(LocalPin, SourceDeregisteredWhileItWaits) {
  local_source(64 * 1024, 34);
  src_host->answer = false;
  ASSERT_TRUE(eps[1].qp->post_send(write_from(1, src_sge(0, 64 * 1024), 0)));
  c->run_for(1'000'000);
  src_host->remove(src_mr);
  ASSERT_TRUE(eps[1].ctx->dereg_mr(src_mr).ok());
  src_host->answer_deferred();  // too late
  Completion w = wait_one(*c, *eps[1].cq, 100'000'000);
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  EXPECT_EQ(dst.buf.load64(0), 0u);
}

// An endpoint's SEND into a receive buffer of pages not pinned: refused
// PINNING while its host pins, then it lands, and the endpoint's later
// SEND from the same source lands behind it, in order.
TEST_F(LocalPin, EndpointSendIntoAnUnpinnedReceiveBuffer) {
  start(2);
  SimPinHost host(c->node(0));
  SimBuffer mem = eps[0].ctx->alloc(4 * 4096);
  ASSERT_TRUE(mem.valid());
  mem.fill(0);
  MrOptions opt;
  opt.on_demand = true;
  SimMr mr = eps[0].ctx->reg_mr(mem, kAllAccess, {}, opt);
  ASSERT_TRUE(mr.ok());
  host.add(mr);
  ASSERT_TRUE(eps[0].qp->post_recv(21, {Sge{mem.va(), 3 * 4096, mr.key}}));
  ASSERT_TRUE(eps[0].qp->post_recv(22, {eps[0].buf.sge(0, 64)}));
  const std::vector<uint8_t> d = pattern(61, 3 * 4096);
  eps[1].buf.buf.write(0, d.data(), d.size());
  SendWr a = send_wr(1, {eps[1].buf.sge(0, 3 * 4096)});
  a.dst_node = 0;
  a.dst_qpn = eps[0].qp->qpn();
  SendWr b = send_wr(2, {eps[1].buf.sge(0, 64)});
  b.dst_node = 0;
  b.dst_qpn = eps[0].qp->qpn();
  ASSERT_TRUE(eps[1].qp->post_send(a));
  ASSERT_TRUE(eps[1].qp->post_send(b));
  const auto sent = c->wait_cqes(*eps[1].cq, 2, 100'000'000);
  ASSERT_EQ(sent.size(), 2u) << describe(sent);
  EXPECT_TRUE(sent[0].ok() && sent[1].ok()) << describe(sent);
  const auto got = c->wait_cqes(*eps[0].cq, 2, 100'000'000);
  ASSERT_EQ(got.size(), 2u) << describe(got);
  EXPECT_EQ(got[0].wr_id, 21u) << describe(got);
  EXPECT_EQ(got[1].wr_id, 22u) << describe(got);
  EXPECT_TRUE(got[0].ok() && got[1].ok()) << describe(got);
  EXPECT_EQ(mem.bytes(0, 3 * 4096), d);
  EXPECT_EQ(host.pin_events(), 1u);
  EXPECT_EQ(host.pinned(mr), 3u);
  host.remove(mr);
}

// Two UD QPs (rx on node 0, tx on node 1) and an on-demand MR of 2 pages
// on one of them (the process wrote `seed`'s pattern, or zeros; nothing
// pinned), served by that node's host.
class LocalPinUd : public ::testing::Test {
 protected:
  void SetUp() override {
    c = std::make_unique<SimCluster>(ClusterConfig{});
    ASSERT_TRUE(c->all_up());
    rx = make_datagram_node(*c, 0, RHN_QP_UD, kQkey);
    tx = make_datagram_node(*c, 1, RHN_QP_UD, kQkey);
    ASSERT_TRUE(rx.qp && tx.qp);
  }
  void on_demand(DatagramNode& d, uint16_t node, uint64_t seed) {
    host = std::make_unique<SimPinHost>(c->node(node));
    mem = d.ctx->alloc(2 * 4096);
    ASSERT_TRUE(mem.valid());
    data = seed ? pattern(seed, 2 * 4096) : std::vector<uint8_t>(2 * 4096);
    mem.write(0, data.data(), data.size());
    MrOptions opt;
    opt.on_demand = true;
    mr = d.ctx->reg_mr(mem, kAllAccess, {}, opt);
    ASSERT_TRUE(mr.ok());
    host->add(mr);
  }
  void TearDown() override {
    if (host && mr.ok()) host->remove(mr);
  }
  SendWr to_rx(uint64_t wr_id, Sge sge) const {
    SendWr wr = send_wr(wr_id, {sge});
    wr.dst_node = 0;
    wr.dst_qpn = rx.qp->qpn();
    wr.qkey = kQkey;
    return wr;
  }
  std::unique_ptr<SimCluster> c;
  DatagramNode rx, tx;
  std::unique_ptr<SimPinHost> host;
  SimBuffer mem;
  SimMr mr;
  std::vector<uint8_t> data;
};

// UD: a datagram that meets a receive buffer not pinned is dropped (no
// byte lands, the receive stays posted) and its pages are pinned: the
// next datagram lands in that receive.
TEST_F(LocalPinUd, DatagramIntoAnUnpinnedReceiveBufferIsDroppedThenLands) {
  on_demand(rx, 0, 0);
  const uint32_t room = RHN_UD_GRH_LEN + 1000;
  ASSERT_TRUE(rx.qp->post_recv(31, {Sge{mem.va() + 4000, room, mr.key}}));
  const std::vector<uint8_t> d = pattern(62, 1000);
  tx.buf.buf.write(0, d.data(), d.size());
  SendWr wr = to_rx(1, tx.buf.sge(0, 1000));
  CounterSnap target(c->node(0));
  ASSERT_TRUE(tx.qp->post_send(wr));
  ASSERT_TRUE(wait_one(*c, *tx.cq).ok());
  c->run_for(2'000'000);
  EXPECT_TRUE(rx.cq->poll(4).empty());
  EXPECT_EQ(target.delta(RHN_CNT_UD_DROPS), 1u);
  EXPECT_EQ(mem.bytes(), std::vector<uint8_t>(2 * 4096, 0));
  EXPECT_EQ(host->pin_events(), 1u);
  EXPECT_EQ(host->pinned(mr), 2u);
  // Pinned now: the next datagram lands in the same receive.
  wr.wr_id = 2;
  ASSERT_TRUE(tx.qp->post_send(wr));
  const Completion r = wait_one(*c, *rx.cq, 100'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 31u);
  EXPECT_EQ(mem.bytes(4000 + RHN_UD_GRH_LEN, 1000), d);
}

// UD: a datagram from a source page not pinned waits for its host, then
// goes (the core path's wait serves UD sends too).
TEST_F(LocalPinUd, DatagramFromAnUnpinnedSourceWaitsForItsHost) {
  on_demand(tx, 1, 63);
  ASSERT_TRUE(rx.qp->post_recv(41, {rx.buf.sge(0, RHN_UD_GRH_LEN + 1000)}));
  ASSERT_TRUE(tx.qp->post_send(to_rx(1, Sge{mem.va() + 3500, 1000, mr.key})));
  const Completion s = wait_one(*c, *tx.cq, 100'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  const Completion r = wait_one(*c, *rx.cq, 100'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(rx.buf.buf.bytes(RHN_UD_GRH_LEN, 1000),
            std::vector<uint8_t>(data.begin() + 3500, data.begin() + 4500));
  EXPECT_EQ(host->pin_events(), 1u);
  EXPECT_EQ(host->pinned(mr), 2u);
}

TEST_F(LocalPin, DestroyingTheWaitingQpLeavesNothingBehind) {
  local_source(64 * 1024, 35);
  src_host->answer = false;
  ASSERT_TRUE(eps[1].qp->post_send(write_from(1, src_sge(0, 64 * 1024), 0)));
  c->run_for(1'000'000);
  eps[1].qp.reset();  // destroyed while it waits
  src_host->answer_deferred();
  c->run_for(2'000'000);
  // The node goes on: a new QP sends from the (now pinned) source.
  EXPECT_EQ(src_host->pinned(src_mr), 16u);
}

}  // namespace
}  // namespace rhinet::test

// ---- Verbs ODP on RC: a one-packet WRITE or SEND from, and a receive
// into, an on-demand MR's pages not pinned yet (the fast post path, the
// TX write block, the receive scatter of an RQ and of an SRQ).

namespace rhinet::test {
namespace {

constexpr size_t kOdpBytes = 4 * 4096;

// Which blocks the engines have: the core alone, or the TX write block
// (it takes the one-packet WRITEs fast_post would take).
struct OdpBlocks {
  bool fast_paths = true;
  bool tx_write = false;
};

class LocalPinRc : public ::testing::TestWithParam<OdpBlocks> {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 2;
    cfg.engine.fast_paths = GetParam().fast_paths;
    if (GetParam().tx_write) {
      cfg.engine.dma_region = true;
      cfg.engine.mac_crc = true;
      cfg.engine.tx_assembler = true;
      cfg.engine.tx_write = true;
    }
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    plain_a = make_region(*p.ctx_a, kOdpBytes, kAllAccess, 41);
    plain_b = make_region(*p.ctx_b, kOdpBytes, kAllAccess, 0, 0);
  }
  // An on-demand MR over fresh memory of ctx (written by the process:
  // nothing pinned), served by node's host.
  struct OdpMr {
    std::unique_ptr<SimPinHost> host;
    SimBuffer mem;
    SimMr mr;
    Sge sge(size_t off, size_t len) const {
      return Sge{mem.va() + off, uint32_t(len), mr.key};
    }
  };
  OdpMr on_demand(SimContext& ctx, size_t node, uint64_t seed) {
    OdpMr o;
    o.host = std::make_unique<SimPinHost>(c->node(node));
    o.mem = ctx.alloc(kOdpBytes);
    EXPECT_TRUE(o.mem.valid());
    if (seed) {
      std::vector<uint8_t> d = pattern(seed, kOdpBytes);
      o.mem.write(0, d.data(), d.size());
    } else {
      o.mem.fill(0);
    }
    MrOptions opt;
    opt.on_demand = true;
    o.mr = ctx.reg_mr(o.mem, kAllAccess, {}, opt);
    EXPECT_TRUE(o.mr.ok());
    o.host->add(o.mr);
    return o;
  }
  std::unique_ptr<SimCluster> c;
  RcPair p;
  Region plain_a, plain_b;
};

// A one-packet WRITE (what fast_post and the TX write block take) from
// a page not pinned: the QP waits for its host, then the data goes.
TEST_P(LocalPinRc, OnePacketWriteFromAnUnpinnedPageWaitsForItsHost) {
  OdpMr src = on_demand(*p.ctx_a, 0, 51);
  // A plain WRITE first: the QP's key cache holds a plain MR (and arms
  // the block with it) when the on-demand source comes.
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(1, RHN_OP_WRITE, {plain_a.sge(0, 512)},
                                        plain_b.va(), plain_b.key())));
  ASSERT_TRUE(wait_one(*c, *p.cq_a).ok());
  SimTxBlock* block = c->node(0).tx_block.get();
  ASSERT_EQ(block != nullptr, GetParam().tx_write);
  const uint64_t block_sent = block ? block->sent_frames : 0;
  CounterSnap sender(c->node(0));
  // Another plain one (the block's), then the on-demand one behind it.
  ASSERT_TRUE(
      p.qp_a->post_send(rdma_wr(2, RHN_OP_WRITE, {plain_a.sge(512, 512)},
                                plain_b.va(512), plain_b.key())));
  ASSERT_TRUE(
      p.qp_a->post_send(rdma_wr(3, RHN_OP_WRITE, {src.sge(4096 + 100, 1000)},
                                plain_b.va(8192), plain_b.key())));
  const auto done = c->wait_cqes(*p.cq_a, 2, 100'000'000);
  ASSERT_EQ(done.size(), 2u) << describe(done);
  ASSERT_TRUE(done[0].ok() && done[1].ok()) << describe(done);
  EXPECT_EQ(plain_b.buf.bytes(8192, 1000), src.mem.bytes(4096 + 100, 1000));
  EXPECT_EQ(plain_b.buf.bytes(0, 1024), plain_a.buf.bytes(0, 1024));
  EXPECT_EQ(sender.delta(RHN_CNT_LOCAL_PROT_ERRORS), 0u);
  EXPECT_EQ(src.host->pin_events(), 1u);
  // The rest of the SGE: its one page.
  EXPECT_EQ(src.host->pinned(src.mr), 1u);
  EXPECT_TRUE(src.host->is_pinned(src.mr, 1));
  // The block sent the plain WRITE and left the on-demand one to the
  // core, which waited.
  if (block) {
    EXPECT_EQ(block->sent_frames - block_sent, 1u);
  }
}

TEST_P(LocalPinRc, OnePacketSendFromAnUnpinnedPageWaitsForItsHost) {
  OdpMr src = on_demand(*p.ctx_a, 0, 52);
  ASSERT_TRUE(p.qp_b->post_recv(7, {plain_b.sge(0, 2048)}));
  CounterSnap sender(c->node(0));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(3, {src.sge(0, 2048)})));
  const Completion s = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  const Completion r = wait_one(*c, *p.cq_b, 100'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.byte_len, 2048u);
  EXPECT_EQ(plain_b.buf.bytes(0, 2048), src.mem.bytes(0, 2048));
  EXPECT_EQ(sender.delta(RHN_CNT_LOCAL_PROT_ERRORS), 0u);
  EXPECT_EQ(src.host->pin_events(), 1u);
}

// A SEND of three packets into a receive buffer of pages not pinned
// (its RQ): the responder refuses it PINNING, its host pins the range
// the message lands in, the requester sends again and it lands whole.
TEST_P(LocalPinRc, SendIntoAnUnpinnedReceiveBufferWaitsForItsHost) {
  OdpMr dst = on_demand(*p.ctx_b, 1, 0);
  const size_t len = 2 * RHN_WIRE_MTU + 100;
  ASSERT_LE(len + 512, kOdpBytes);
  ASSERT_TRUE(p.qp_b->post_recv(9, {dst.sge(512, len)}));
  CounterSnap receiver(c->node(1));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(4, {plain_a.sge(0, len)})));
  const Completion s = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  const Completion r = wait_one(*c, *p.cq_b, 100'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 9u);
  EXPECT_EQ(r.byte_len, len);
  EXPECT_EQ(dst.mem.bytes(512, len), plain_a.buf.bytes(0, len));
  // Nothing outside the receive buffer.
  EXPECT_EQ(dst.mem.bytes(0, 512), std::vector<uint8_t>(512, 0));
  EXPECT_EQ(dst.mem.bytes(512 + len, kOdpBytes - 512 - len),
            std::vector<uint8_t>(kOdpBytes - 512 - len, 0));
  EXPECT_EQ(receiver.delta(RHN_CNT_LOCAL_PROT_ERRORS), 0u);
  EXPECT_EQ(dst.host->pin_events(), 1u);
  EXPECT_EQ(receiver.delta(RHN_CNT_PIN_EVENTS), 1u);
  EXPECT_EQ(dst.host->pinned(dst.mr), (512 + len + 4095) / 4096);
  // Pinned now: the next SEND into it asks nothing.
  ASSERT_TRUE(p.qp_b->post_recv(10, {dst.sge(512, len)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(5, {plain_a.sge(0, len)})));
  ASSERT_TRUE(wait_one(*c, *p.cq_b, 100'000'000).ok());
  EXPECT_EQ(dst.host->pin_events(), 1u);
}

TEST_P(LocalPinRc, SendIntoAnUnpinnedSrqBufferWaitsForItsHost) {
  auto srq = p.ctx_b->create_srq(6);
  auto cq = p.ctx_b->create_cq(8);
  ASSERT_TRUE(srq && cq);
  QpInit qi;
  qi.send_cq = cq.get();
  qi.srq = srq.get();
  auto qp_b = p.ctx_b->create_qp(qi);
  ASSERT_TRUE(qp_b);
  // A new QP on node 0 towards it.
  QpInit ai;
  ai.send_cq = p.cq_a.get();
  auto qp_a = p.ctx_a->create_qp(ai);
  ASSERT_TRUE(qp_a);
  ASSERT_TRUE(connect_rc(*qp_a, 1, qp_b->qpn()));
  ASSERT_TRUE(connect_rc(*qp_b, 0, qp_a->qpn()));
  OdpMr dst = on_demand(*p.ctx_b, 1, 0);
  ASSERT_TRUE(srq->post_recv(11, {dst.sge(0, kOdpBytes)}));
  ASSERT_TRUE(qp_a->post_send(send_wr(6, {plain_a.sge(0, 6000)})));
  const Completion s = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(s.ok()) << describe(s);
  const Completion r = wait_one(*c, *cq, 100'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.wr_id, 11u);
  EXPECT_EQ(dst.mem.bytes(0, 6000), plain_a.buf.bytes(0, 6000));
  EXPECT_EQ(dst.host->pin_events(), 1u);
  EXPECT_EQ(dst.host->pinned(dst.mr), 2u);
}

// The host cannot pin the receive buffer: the SEND fails at its sender
// (REM_ACCESS_ERR / NOT_PINNED) and nothing lands.
TEST_P(LocalPinRc, ReceiveBufferTheHostCannotPin) {
  OdpMr dst = on_demand(*p.ctx_b, 1, 0);
  dst.host->limit = 0;
  ASSERT_TRUE(p.qp_b->post_recv(12, {dst.sge(0, 4096)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(7, {plain_a.sge(0, 1000)})));
  const Completion s = wait_one(*c, *p.cq_a, 100'000'000);
  EXPECT_EQ(s.status, RHN_CQE_REM_ACCESS_ERR) << describe(s);
  EXPECT_EQ(s.vendor_err, uint32_t(RHN_SYN_NOT_PINNED));
  EXPECT_EQ(dst.mem.bytes(0, 4096), std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(dst.host->pinned(), 0u);
}

// A READ and an atomic whose local target is not pinned: the QP waits
// for its host before the request goes, then the answer lands.
TEST_P(LocalPinRc, ReadIntoAnUnpinnedLocalBufferWaitsForItsHost) {
  OdpMr dst = on_demand(*p.ctx_a, 0, 0);
  const std::vector<uint8_t> d = pattern(78, kOdpBytes);
  plain_b.buf.write(0, d.data(), d.size());
  CounterSnap requester(c->node(0));
  ASSERT_TRUE(p.qp_a->post_send(rdma_wr(
      8, RHN_OP_READ, {dst.sge(100, 3 * 4096)}, plain_b.va(0), plain_b.key())));
  const Completion w = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.mem.bytes(100, 3 * 4096), plain_b.buf.bytes(0, 3 * 4096));
  EXPECT_EQ(requester.delta(RHN_CNT_LOCAL_PROT_ERRORS), 0u);
  EXPECT_EQ(dst.host->pin_events(), 1u);
  EXPECT_EQ(dst.host->pinned(dst.mr), 4u);
}

TEST_P(LocalPinRc, ReadOfDataIntoAnUnpinnedLocalBuffer) {
  OdpMr dst = on_demand(*p.ctx_a, 0, 0);
  Region src = make_region(*p.ctx_b, 8192, kAllAccess, 77);
  ASSERT_TRUE(p.qp_a->post_send(
      rdma_wr(9, RHN_OP_READ, {dst.sge(4000, 6000)}, src.va(0), src.key())));
  const Completion w = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.mem.bytes(4000, 6000), src.buf.bytes(0, 6000));
  EXPECT_EQ(dst.mem.bytes(0, 4000), std::vector<uint8_t>(4000, 0));
}

TEST_P(LocalPinRc, AtomicIntoAnUnpinnedLocalWordWaitsForItsHost) {
  OdpMr dst = on_demand(*p.ctx_a, 0, 0);
  plain_b.buf.store64(64, 1000);
  SendWr wr = rdma_wr(10, RHN_OP_FETCH_ADD, {dst.sge(8192 + 8, 8)},
                      plain_b.va(64), plain_b.key());
  wr.compare_add = 5;
  ASSERT_TRUE(p.qp_a->post_send(wr));
  const Completion w = wait_one(*c, *p.cq_a, 100'000'000);
  ASSERT_TRUE(w.ok()) << describe(w);
  EXPECT_EQ(dst.mem.load64(8192 + 8), 1000u);
  EXPECT_EQ(plain_b.buf.load64(64), 1005u);
  EXPECT_EQ(dst.host->pin_events(), 1u);
}

// Unhappy: the source MR deregistered while the one-packet SEND waits for
// its pin: an error completion, nothing left pinned.
TEST_P(LocalPinRc, SourceDeregisteredWhileTheSendWaits) {
  OdpMr src = on_demand(*p.ctx_a, 0, 53);
  src.host->answer = false;
  ASSERT_TRUE(p.qp_b->post_recv(13, {plain_b.sge(0, 1024)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(11, {src.sge(0, 1024)})));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_a->poll(1).empty());
  src.host->remove(src.mr);
  ASSERT_TRUE(p.ctx_a->dereg_mr(src.mr).ok());
  src.host->answer_deferred();  // too late
  const Completion w = wait_one(*c, *p.cq_a, 100'000'000);
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  EXPECT_EQ(src.host->pinned(), 0u);
  EXPECT_EQ(plain_b.buf.bytes(0, 1024), std::vector<uint8_t>(1024, 0));
}

// Unhappy: the receive buffer's MR deregistered while the SEND waits for
// its pin: the message comes again and finds the key gone, the receive
// completes in error, nothing lands or stays pinned.
TEST_P(LocalPinRc, ReceiveBufferDeregisteredWhileTheSendWaits) {
  OdpMr dst = on_demand(*p.ctx_b, 1, 0);
  dst.host->answer = false;
  ASSERT_TRUE(p.qp_b->post_recv(15, {dst.sge(0, 4096)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(13, {plain_a.sge(0, 1000)})));
  c->run_for(1'000'000);
  EXPECT_TRUE(p.cq_a->poll(1).empty());
  EXPECT_TRUE(p.cq_b->poll(1).empty());
  dst.host->remove(dst.mr);
  ASSERT_TRUE(p.ctx_b->dereg_mr(dst.mr).ok());
  dst.host->answer_deferred();  // too late
  const Completion r = wait_one(*c, *p.cq_b, 100'000'000);
  EXPECT_EQ(r.wr_id, 15u) << describe(r);
  EXPECT_EQ(r.status, RHN_CQE_LOC_PROT_ERR) << describe(r);
  const Completion s = wait_one(*c, *p.cq_a, 100'000'000);
  EXPECT_FALSE(s.ok()) << describe(s);
  EXPECT_NE(s.status, 0xff) << "the SEND never completed";
  EXPECT_EQ(dst.mem.bytes(0, 4096), std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(dst.host->pinned(), 0u);
}

// Unhappy: memory the host cannot pin (a PROT_NONE mapping, beyond the
// limit): the SEND completes LOC_PROT_ERR / NOT_PINNED.
TEST_P(LocalPinRc, SourceTheHostCannotPin) {
  OdpMr src = on_demand(*p.ctx_a, 0, 54);
  src.host->limit = 0;
  ASSERT_TRUE(p.qp_b->post_recv(14, {plain_b.sge(0, 1024)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(12, {src.sge(0, 1024)})));
  const Completion w = wait_one(*c, *p.cq_a, 100'000'000);
  EXPECT_EQ(w.status, RHN_CQE_LOC_PROT_ERR) << describe(w);
  EXPECT_EQ(w.vendor_err, uint32_t(RHN_SYN_NOT_PINNED));
  EXPECT_EQ(src.host->pinned(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Blocks, LocalPinRc,
                         ::testing::Values(OdpBlocks{true, false},
                                           OdpBlocks{false, false},
                                           OdpBlocks{true, true}),
                         [](const auto& i) {
                           return std::string(i.param.tx_write     ? "TxWrite"
                                              : i.param.fast_paths ? "FastPost"
                                                                   : "Core");
                         });

}  // namespace
}  // namespace rhinet::test
