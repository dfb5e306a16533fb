// SPDX-License-Identifier: BSD-2-Clause
// Keys outlive lives: every NIC table keyed by a value the user chooses
// (a shared region's area, a tag, a pin-down range of an area, a lock or
// barrier ID, a communicator key) meets the same key again in the next
// job. Per family, life 1 runs real traffic while every frame on the wire
// is recorded; its endpoints go; life 2 starts on new endpoints with the
// same keys, and life 1's messages of the family are put back on the live
// channels (replay.h: only the transport header is the channel's) while
// life 2's tables hold state. Nothing may follow from them: no completion
// or error at a live endpoint, no counter of the family moves while they
// arrive, life 2's results are exactly right, and the stale messages are
// counted (stale packets or the responder's refusals).
#include <algorithm>
#include <cstring>

#include "replay.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

using replay::Frame;
using replay::Injector;
using replay::Recorder;

using Ep = DatagramEp;

// Counters that refusing or dropping a stale message moves.
constexpr unsigned kStaleCounters[] = {
    RHN_CNT_STALE_PACKETS,        RHN_CNT_REMOTE_INVALID_REQUESTS,
    RHN_CNT_REMOTE_ACCESS_ERRORS, RHN_CNT_NO_QP_REQUESTS,
    RHN_CNT_SHARE_ERRORS,         RHN_CNT_SYNC_ERRORS,
    RHN_CNT_COLL_ERRORS,          RHN_CNT_TM_OP_ERRORS,
    RHN_CNT_PIN_FAILED,
};

// Counters of what the families did: none may move because of a replay.
constexpr unsigned kWorkCounters[] = {
    RHN_CNT_COMPLETIONS,    RHN_CNT_ERROR_CQES,
    RHN_CNT_SIGNALS,        RHN_CNT_TAG_MATCHED_POSTED,
    RHN_CNT_TAG_UNEXPECTED, RHN_CNT_TAG_MATCHED_UNEXPECTED,
    RHN_CNT_TAG_RECV_WAITS, RHN_CNT_TAG_REFUSED,
    RHN_CNT_PIN_EVENTS,     RHN_CNT_PIN_HELD,
    RHN_CNT_LOCK_GRANTS,    RHN_CNT_LOCK_WAITS,
    RHN_CNT_BARRIER_ROUNDS, RHN_CNT_SHARE_JOINS,
    RHN_CNT_SHARE_UPDATES,  RHN_CNT_SHARE_REFUSALS,
    RHN_CNT_SHARE_SKIPPED,  RHN_CNT_COLL_DONE,
    RHN_CNT_COLL_SEGMENTS,
};

const char* counter_name(unsigned i) {
  switch (i) {
#define N(x) \
  case x:    \
    return #x;
    N(RHN_CNT_COMPLETIONS)
    N(RHN_CNT_ERROR_CQES)
    N(RHN_CNT_SIGNALS)
    N(RHN_CNT_TAG_MATCHED_POSTED)
    N(RHN_CNT_TAG_UNEXPECTED)
    N(RHN_CNT_TAG_MATCHED_UNEXPECTED)
    N(RHN_CNT_TAG_RECV_WAITS)
    N(RHN_CNT_TAG_REFUSED)
    N(RHN_CNT_PIN_EVENTS)
    N(RHN_CNT_PIN_HELD)
    N(RHN_CNT_LOCK_GRANTS)
    N(RHN_CNT_LOCK_WAITS)
    N(RHN_CNT_BARRIER_ROUNDS)
    N(RHN_CNT_SHARE_JOINS)
    N(RHN_CNT_SHARE_UPDATES)
    N(RHN_CNT_SHARE_REFUSALS)
    N(RHN_CNT_SHARE_SKIPPED)
    N(RHN_CNT_COLL_DONE)
    N(RHN_CNT_COLL_SEGMENTS)
#undef N
    default:
      return "counter";
  }
}

class Replay : public ::testing::Test {
 protected:
  void start(size_t nodes) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 64u << 20;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  Ep make_ep(uint16_t node, size_t buf_bytes = 256 * 1024,
             uint8_t rq_log = QpInit{}.rq_log_depth) {
    return make_datagram_ep(*c, node,
                            {.cq_log_depth = 10,
                             .sq_log_depth = 8,
                             .rq_log_depth = rq_log,
                             .buf_bytes = buf_bytes});
  }
  // The process exits: its endpoint is destroyed in the NIC, then the
  // rest of its objects.
  void destroy(Ep& e) {
    ASSERT_TRUE(e.d.ctx->driver()
                    .destroy(RHN_ADMIN_DESTROY_QP, e.d.ctx->index(), e.qpn())
                    .ok());
    e.d.qp.reset();
    e.d.buf = Region{};
    e.d.cq.reset();
    e.d.ctx.reset();
  }
  Completion run(Ep& e, const SendWr& wr, uint64_t timeout = 200'000'000) {
    EXPECT_TRUE(e.qp().post_send(wr));
    return wait_one(*c, e.cq(), timeout);
  }
  // No completion comes at `e` for `ns`.
  void quiet(Ep& e, uint64_t ns = 1'000'000) {
    auto v = c->wait_cqes(e.cq(), 1, ns);
    EXPECT_TRUE(v.empty()) << "node " << e.node << ": " << describe(v);
  }

  std::vector<std::vector<uint64_t>> snap() {
    std::vector<std::vector<uint64_t>> s(c->size());
    for (size_t n = 0; n < c->size(); n++)
      for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
        s[n].push_back(c->node(n).counter(i));
    return s;
  }
  uint64_t delta(const std::vector<std::vector<uint64_t>>& s, unsigned i) {
    uint64_t d = 0;
    for (size_t n = 0; n < c->size(); n++) d += c->node(n).counter(i) - s[n][i];
    return d;
  }
  // Puts `frames` back on the wire while life 2's tables hold state, and
  // checks that nothing the families count moved and that they were
  // counted as stale or refused. Returns how many were counted.
  // `may_move`: counters a record of the earlier life's own endpoint may
  // move (sync: a grant given back for an endpoint that is gone).
  uint64_t replay_quietly(const std::vector<Frame>& frames,
                          const std::vector<unsigned>& may_move = {}) {
    EXPECT_FALSE(frames.empty());
    const auto before = snap();
    Injector inj(*c);
    inj.add(frames);
    EXPECT_TRUE(inj.run());
    c->run_for(5'000'000);
    EXPECT_EQ(inj.injected, frames.size());
    for (unsigned i : kWorkCounters) {
      if (std::find(may_move.begin(), may_move.end(), i) != may_move.end())
        continue;
      EXPECT_EQ(delta(before, i), 0u) << counter_name(i) << " moved";
    }
    uint64_t counted = 0;
    for (unsigned i : kStaleCounters) counted += delta(before, i);
    EXPECT_GT(counted, 0u) << "the stale messages were not counted";
    replayed += inj.injected;
    return counted;
  }

  std::unique_ptr<SimCluster> c;
  size_t replayed = 0;
};

// ---------------------------------------------------------------------
// Shared regions.

constexpr uint32_t kArea = 11;
constexpr size_t kAreaBytes = 64 * 1024;
constexpr size_t kRegionOff = 4096;
constexpr size_t kRegionLen = 16 * 1024;
constexpr size_t kSlice = 2048;

class ReplayShare : public Replay {
 protected:
  Ep member(uint16_t node) {
    Ep e = make_ep(node, kAreaBytes);
    EXPECT_TRUE(
        e.d.ctx->register_area(kArea, e.d.buf.mr, e.d.buf.va(), kAreaBytes)
            .ok());
    return e;
  }
  SendWr subscribe(Ep& e, Ep& home, uint64_t wr_id) {
    SendWr wr =
        rdma_wr(wr_id, RHN_OP_SUBSCRIBE, {e.d.buf.sge(kRegionOff, kRegionLen)},
                kRegionOff, kArea, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = home.node;
    wr.dst_qpn = home.qpn();
    return wr;
  }
  SendWr unsubscribe(Ep& home, uint64_t wr_id) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_UNSUBSCRIBE, {}, kRegionOff, kArea,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = home.node;
    wr.dst_qpn = home.qpn();
    return wr;
  }
  // `e` writes `seed`'s bytes into slice `slice` of its copy and pushes
  // them to the region's members.
  SendWr update(Ep& e, uint64_t wr_id, size_t slice, uint64_t seed) {
    const size_t at = kRegionOff + slice * kSlice;
    auto bytes = pattern(seed, kSlice);
    e.d.buf.buf.write(at, bytes.data(), bytes.size());
    if (at >= kRegionOff && at + kSlice <= kRegionOff + kRegionLen)
      std::memcpy(expected.data() + slice * kSlice, bytes.data(), kSlice);
    return rdma_wr(wr_id, RHN_OP_SHARE_UPDATE, {e.d.buf.sge(at, kSlice)}, at,
                   kArea, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  }
  std::vector<uint8_t> region(Ep& e) {
    return e.d.buf.buf.bytes(kRegionOff, kRegionLen);
  }
  void life(Ep& home, Ep& a, Ep& b, uint64_t salt) {
    expected = pattern(salt, kRegionLen);
    home.d.buf.buf.write(kRegionOff, expected.data(), kRegionLen);
    Completion x = run(a, subscribe(a, home, 1));
    ASSERT_TRUE(x.ok()) << describe(x);
    x = run(b, subscribe(b, home, 1));
    ASSERT_TRUE(x.ok()) << describe(x);
    for (uint64_t v = 0; v < 3; v++) {
      x = run(a, update(a, 10 + v, 1, salt * 100 + v));
      ASSERT_TRUE(x.ok()) << describe(x);
      x = run(b, update(b, 20 + v, 2, salt * 100 + 50 + v));
      ASSERT_TRUE(x.ok()) << describe(x);
      x = run(home, update(home, 30 + v, 3, salt * 100 + 80 + v));
      ASSERT_TRUE(x.ok()) << describe(x);
    }
    c->run_for(2'000'000);
    EXPECT_EQ(region(home), expected);
    EXPECT_EQ(region(a), expected);
    EXPECT_EQ(region(b), expected);
  }
  std::vector<uint8_t> expected;
};

// Life 1: a home on node 0 and members on nodes 1 and 2 of area 11 join,
// update, one leaves; every endpoint goes (the home last, so the members
// are told). Life 2 on the same area and range: its SUBSCRIBEs, updates,
// directory messages (ADD, ADDED, JOINED, RESEND, REMOVE) and data of
// life 1 arrive while a member is in, while a newcomer joins, and after a
// member left; the region stays exactly what life 2 wrote, at every
// member, and no join or update is counted for them.
TEST_F(ReplayShare, AnEarlierLifesRegionMessagesChangeNoLiveRegion) {
  start(3);
  auto rec = std::make_unique<Recorder>(*c);
  {
    Ep home = member(0), a = member(1), b = member(2);
    life(home, a, b, 1);
    if (HasFailure()) return;
    Completion x = run(b, unsubscribe(home, 40));
    ASSERT_TRUE(x.ok()) << describe(x);
    x = run(a, update(a, 41, 1, 77));
    ASSERT_TRUE(x.ok()) << describe(x);
    c->run_for(1'000'000);
    destroy(a);
    c->run_for(1'000'000);
    destroy(b);
    destroy(home);
    c->run_for(5'000'000);
  }
  rec->stop();
  const std::vector<Frame> old =
      rec->select({RHN_WOP_SHARE_REQ, RHN_WOP_SHARE_UPDATE, RHN_WOP_SHARE_DATA},
                  {RHN_FW_SHARE_ADD, RHN_FW_SHARE_ADDED, RHN_FW_SHARE_RESEND,
                   RHN_FW_SHARE_JOINED, RHN_FW_SHARE_REMOVE});
  ASSERT_GE(old.size(), 20u);
  for (uint32_t k : {RHN_FW_SHARE_ADD, RHN_FW_SHARE_ADDED, RHN_FW_SHARE_JOINED,
                     RHN_FW_SHARE_REMOVE})
    EXPECT_TRUE(std::any_of(
        old.begin(), old.end(),
        [&](const Frame& f) { return replay::fw_kind(f.bytes) == k; }))
        << "life 1 sent no firmware message " << k;

  // Life 2: the home and member a; replays while a is in.
  Ep home = member(0), a = member(1), b = member(2);
  expected = pattern(2, kRegionLen);
  home.d.buf.buf.write(kRegionOff, expected.data(), kRegionLen);
  Completion x = run(a, subscribe(a, home, 1));
  ASSERT_TRUE(x.ok()) << describe(x);
  ASSERT_EQ(region(a), expected);
  replay_quietly(old);
  quiet(home);
  quiet(a);
  EXPECT_EQ(region(home), expected);
  EXPECT_EQ(region(a), expected);
  EXPECT_EQ(region(b), std::vector<uint8_t>(kRegionLen, 0))
      << "b is in no region of life 2";

  // b joins with the old messages arriving during its join.
  const uint64_t joins = replay::total(*c, RHN_CNT_SHARE_JOINS);
  ASSERT_TRUE(b.qp().post_send(subscribe(b, home, 2)));
  {
    Injector inj(*c);
    inj.add(old);
    EXPECT_TRUE(inj.run());
    replayed += inj.injected;
  }
  x = wait_one(*c, b.cq(), 2'000'000'000);
  ASSERT_TRUE(x.ok()) << describe(x);
  EXPECT_EQ(replay::total(*c, RHN_CNT_SHARE_JOINS), joins + 1);
  EXPECT_EQ(region(b), expected);
  quiet(a);
  quiet(home);

  // Updates of life 2 by all three; replays between them.
  for (uint64_t v = 0; v < 2; v++) {
    x = run(a, update(a, 10 + v, 1, 200 + v));
    ASSERT_TRUE(x.ok()) << describe(x);
    x = run(b, update(b, 20 + v, 2, 250 + v));
    ASSERT_TRUE(x.ok()) << describe(x);
    x = run(home, update(home, 30 + v, 3, 280 + v));
    ASSERT_TRUE(x.ok()) << describe(x);
    c->run_for(1'000'000);
    replay_quietly(old);
  }
  EXPECT_EQ(region(home), expected);
  EXPECT_EQ(region(a), expected);
  EXPECT_EQ(region(b), expected);

  // b leaves; the old messages (life 1's b left too) change nothing.
  x = run(b, unsubscribe(home, 50));
  ASSERT_TRUE(x.ok()) << describe(x);
  const auto b_left = region(b);
  replay_quietly(old);
  x = run(a, update(a, 51, 1, 300));
  ASSERT_TRUE(x.ok()) << describe(x);
  c->run_for(1'000'000);
  EXPECT_EQ(region(home), expected);
  EXPECT_EQ(region(a), expected);
  EXPECT_EQ(region(b), b_left) << "b left: no update reaches it";
  RecordProperty("replayed", int(replayed));
}

// ---------------------------------------------------------------------
// Tag matching.

constexpr size_t kEager = 256;
constexpr size_t kRndv = 3 * RHN_TAG_EAGER_MAX + 100;

class ReplayTag : public Replay {
 protected:
  SendWr isend(uint64_t wr_id, Ep& to, uint64_t tag, Sge sge) {
    SendWr wr = send_wr(wr_id, {sge}, RHN_OP_ISEND);
    wr.dst_node = to.node;
    wr.dst_qpn = to.qpn();
    wr.remote_addr = tag;
    return wr;
  }
  TagRecv irecv(uint64_t tag, Sge sge, const Ep* from) {
    TagRecv t;
    t.tag = tag;
    t.sge = sge;
    if (from) {
      t.src_node = from->node;
      t.src_qpn = from->qpn();
    } else {
      t.any_src = true;
    }
    return t;
  }
  static size_t len_of(uint64_t tag) { return tag % 2 ? kEager : kRndv; }
  static size_t at(uint64_t tag) { return tag * 16384; }
};

// Life 1: isends eager and rendezvous, matched by posted irecvs and from
// the unexpected list, an irecv cancelled. Life 2's receiver posts
// irecvs of the same tags from any source, then the old isends, data,
// answers and NAKs arrive: no irecv takes anything until life 2's sender
// sends, then each takes exactly its message; an unexpected message of
// life 2 waiting in the list is not displaced either.
TEST_F(ReplayTag, AnEarlierLifesIsendsAndAnswersMatchNoLiveIrecv) {
  start(2);
  auto rec = std::make_unique<Recorder>(*c);
  {
    Ep rx = make_ep(0, 256 * 1024), tx = make_ep(1, 256 * 1024);
    for (uint64_t tag = 1; tag <= 4; tag++) {
      tx.d.buf.buf.write(at(tag), pattern(tag, len_of(tag)).data(),
                         len_of(tag));
      ASSERT_TRUE(rx.qp().post_tag_recv(
          tag, irecv(tag, rx.d.buf.sge(at(tag), len_of(tag)), &tx)));
    }
    for (uint64_t tag = 1; tag <= 6; tag++) {
      if (tag >= 5)
        tx.d.buf.buf.write(at(tag), pattern(tag, len_of(tag)).data(),
                           len_of(tag));
      ASSERT_TRUE(tx.qp().post_send(
          isend(tag, rx, tag, tx.d.buf.sge(at(tag), len_of(tag)))));
    }
    c->run_for(5'000'000);
    // Tags 5 and 6 wait unexpected; their irecvs come now.
    for (uint64_t tag = 5; tag <= 6; tag++)
      ASSERT_TRUE(rx.qp().post_tag_recv(
          tag, irecv(tag, rx.d.buf.sge(at(tag), len_of(tag)), nullptr)));
    // An irecv nobody sends to, cancelled (RQ index 6).
    ASSERT_TRUE(
        rx.qp().post_tag_recv(99, irecv(99, rx.d.buf.sge(at(7), 64), nullptr)));
    SendWr cancel = send_wr(98, {}, RHN_OP_IRECV_CANCEL);
    cancel.remote_key = 6;
    ASSERT_TRUE(rx.qp().post_send(cancel));
    auto s = c->wait_cqes(tx.cq(), 6, 200'000'000);
    ASSERT_EQ(s.size(), 6u) << describe(s);
    for (auto& x : s) EXPECT_TRUE(x.ok()) << describe(x);
    auto r = c->wait_cqes(rx.cq(), 8, 200'000'000);
    ASSERT_EQ(r.size(), 8u) << describe(r);
    for (uint64_t tag = 1; tag <= 6; tag++)
      EXPECT_EQ(rx.d.buf.buf.bytes(at(tag), len_of(tag)),
                pattern(tag, len_of(tag)));
    destroy(tx);
    destroy(rx);
    c->run_for(5'000'000);
  }
  rec->stop();
  const std::vector<Frame> old = rec->select(
      {RHN_WOP_TAG, RHN_WOP_TAG_DATA, RHN_WOP_TAG_RESP, RHN_WOP_NAK});
  ASSERT_GE(old.size(), 12u);

  // Life 2: irecvs of tags 1..6 from any source, nothing sent yet.
  Ep rx = make_ep(0, 256 * 1024), tx = make_ep(1, 256 * 1024);
  for (uint64_t tag = 1; tag <= 6; tag++)
    ASSERT_TRUE(rx.qp().post_tag_recv(
        tag, irecv(tag, rx.d.buf.sge(at(tag), len_of(tag)), nullptr)));
  c->run_for(1'000'000);
  replay_quietly(old);
  quiet(rx);
  quiet(tx);
  for (uint64_t tag = 1; tag <= 6; tag++)
    EXPECT_EQ(rx.d.buf.buf.bytes(at(tag), len_of(tag)),
              std::vector<uint8_t>(len_of(tag), 0))
        << "tag " << tag << " took a message of life 1";

  // Life 2's sender: tags 1..6 into the irecvs, tags 7 and 8 unexpected.
  for (uint64_t tag = 1; tag <= 8; tag++) {
    tx.d.buf.buf.write(at(tag), pattern(100 + tag, len_of(tag)).data(),
                       len_of(tag));
    ASSERT_TRUE(tx.qp().post_send(
        isend(tag, rx, tag, tx.d.buf.sge(at(tag), len_of(tag)))));
  }
  auto r = c->wait_cqes(rx.cq(), 6, 200'000'000);
  ASSERT_EQ(r.size(), 6u) << describe(r);
  for (auto& x : r) EXPECT_TRUE(x.ok()) << describe(x);
  c->run_for(5'000'000);
  // Tags 7 and 8 wait in the unexpected list (their isends too, for the
  // rendezvous one) while the old messages come again.
  replay_quietly(old);
  for (uint64_t tag = 7; tag <= 8; tag++)
    ASSERT_TRUE(rx.qp().post_tag_recv(
        tag, irecv(tag, rx.d.buf.sge(at(tag), len_of(tag)), &tx)));
  r = c->wait_cqes(rx.cq(), 2, 200'000'000);
  ASSERT_EQ(r.size(), 2u) << describe(r);
  for (auto& x : r) EXPECT_TRUE(x.ok()) << describe(x);
  auto s = c->wait_cqes(tx.cq(), 8, 200'000'000);
  ASSERT_EQ(s.size(), 8u) << describe(s);
  for (auto& x : s) EXPECT_TRUE(x.ok()) << describe(x);
  for (uint64_t tag = 1; tag <= 8; tag++)
    EXPECT_EQ(rx.d.buf.buf.bytes(at(tag), len_of(tag)),
              pattern(100 + tag, len_of(tag)))
        << "tag " << tag;
  quiet(rx);
  RecordProperty("replayed", int(replayed));
}

// ---------------------------------------------------------------------
// Remote pin-down.

constexpr uint32_t kPinArea = 5;
constexpr size_t kPinBytes = 64 * 1024;

class ReplayPin : public Replay {
 protected:
  struct Target {
    Ep ep;
    SimBuffer mem;
    SimMr mr;
  };
  Target target() {
    Target t;
    t.ep = make_ep(0, 64 * 1024);
    t.mem = t.ep.d.ctx->alloc(kPinBytes);
    t.mem.fill(0x5a);
    MrOptions opt;
    opt.on_demand = true;
    t.mr = t.ep.d.ctx->reg_mr(t.mem, kAllAccess, {}, opt);
    EXPECT_TRUE(t.mr.ok());
    host->add(t.mr);
    EXPECT_TRUE(
        t.ep.d.ctx->register_area(kPinArea, t.mr, t.mem.va(), kPinBytes).ok());
    return t;
  }
  SendWr pin_wr(uint64_t wr_id, uint8_t opcode, Ep& to, uint64_t offset,
                uint32_t length) {
    SendWr wr = rdma_wr(wr_id, opcode, {}, offset, kPinArea,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = to.node;
    wr.dst_qpn = to.qpn();
    wr.imm_data = length;
    return wr;
  }
  std::vector<uint32_t> holders(const SimMr& mr) {
    std::vector<uint32_t> h;
    for (uint32_t p = 0; p < kPinBytes / 4096; p++)
      h.push_back(host->holders(mr, p));
    return h;
  }
  std::unique_ptr<SimPinHost> host;
};

// Life 1 asks node 0 to pin and hold ranges of area 5 and releases them.
// Life 2's target declares area 5 again over other memory, its requester
// holds one range: life 1's PD_REQs, PD_REPLYs and PD_RELEASEs change no
// holder count and pin nothing, and life 2's own release frees exactly
// its pages.
TEST_F(ReplayPin, AnEarlierLifesPinRequestsAndReleasesMoveNoLivePage) {
  start(2);
  host = std::make_unique<SimPinHost>(c->node(0));
  auto rec = std::make_unique<Recorder>(*c);
  {
    Target t = target();
    Ep req = make_ep(1);
    for (auto [off, len] : {std::pair<uint64_t, uint32_t>{8192, 16384},
                            {0, 4096},
                            {32768, 8192}}) {
      Completion q = run(req, pin_wr(1, RHN_OP_PD_REQUEST, t.ep, off, len));
      ASSERT_TRUE(q.ok()) << describe(q);
    }
    for (auto [off, len] :
         {std::pair<uint64_t, uint32_t>{8192, 16384}, {0, 4096}}) {
      Completion q = run(req, pin_wr(2, RHN_OP_PD_RELEASE, t.ep, off, len));
      ASSERT_TRUE(q.ok()) << describe(q);
    }
    c->run_for(2'000'000);
    EXPECT_EQ(host->holders(t.mr, 8), 1u);
    destroy(req);
    destroy(t.ep);
    host->remove(t.mr);
    c->run_for(5'000'000);
  }
  rec->stop();
  const std::vector<Frame> old = rec->select(
      {RHN_WOP_PD_REQ, RHN_WOP_PD_REPLY, RHN_WOP_PD_RELEASE, RHN_WOP_NAK});
  ASSERT_GE(old.size(), 8u);

  // Life 2: the requester holds [16 KiB, 32 KiB) of the new area 5.
  Target t = target();
  Ep req = make_ep(1);
  Completion q = run(req, pin_wr(1, RHN_OP_PD_REQUEST, t.ep, 16384, 16384));
  ASSERT_TRUE(q.ok()) << describe(q);
  c->run_for(1'000'000);
  const auto held = holders(t.mr);
  const uint64_t pinned = host->pinned(t.mr);
  const uint64_t events = host->events.size();
  EXPECT_EQ(pinned, 4u);
  replay_quietly(old);
  quiet(req);
  quiet(t.ep);
  EXPECT_EQ(holders(t.mr), held);
  EXPECT_EQ(host->pinned(t.mr), pinned);
  EXPECT_EQ(host->events.size(), events) << "the host was asked for work";

  // Its own release frees exactly its pages.
  q = run(req, pin_wr(2, RHN_OP_PD_RELEASE, t.ep, 16384, 16384));
  ASSERT_TRUE(q.ok()) << describe(q);
  c->run_for(2'000'000);
  EXPECT_EQ(host->pinned(t.mr), 0u);
  EXPECT_EQ(holders(t.mr), std::vector<uint32_t>(kPinBytes / 4096, 0));
  replay_quietly(old);
  EXPECT_EQ(host->pinned(t.mr), 0u);
  q = run(req, pin_wr(3, RHN_OP_PD_REQUEST, t.ep, 0, 8192));
  ASSERT_TRUE(q.ok()) << describe(q);
  EXPECT_EQ(host->pinned(t.mr), 2u);
  RecordProperty("replayed", int(replayed));
}

// ---------------------------------------------------------------------
// Locks and barriers.

class ReplaySync : public Replay {};

constexpr uint64_t kLock = 7, kBarrier = 9;
// A replayed answer (SYNC_RESP DONE) for a LOCK of life 1's member, whose
// endpoint is gone, makes that member's NIC a record that gives the grant
// back (queues.md, "Locks and barriers"), and a replayed LINK passes the
// lock of that record on to life 1's successor: those grants concern the
// earlier life's endpoints only and are the one counter allowed to move.
const std::vector<unsigned> kGhostGrants = {RHN_CNT_LOCK_GRANTS};

// Life 1 on a manager at node 0: members at nodes 1 and 2 take lock 7 in
// turn (a queue, a LINK, a grant passed between the members' NICs) and
// meet at barrier 9. Life 2 on a new manager, same IDs: while member 1
// holds lock 7 and member 2 waits for it, and while member 1 waits at
// barrier 9, life 1's LOCKs, UNLOCKs, BARRIERs, answers, LINKs and
// SYNC_DONEs arrive: nobody is granted, released or let through; then
// life 2 goes on exactly as it would have.
TEST_F(ReplaySync, AnEarlierLifesLockAndBarrierMessagesMoveNoLiveOne) {
  start(3);
  auto rec = std::make_unique<Recorder>(*c);
  {
    Ep mgr = make_ep(0), m1 = make_ep(1), m2 = make_ep(2);
    for (int round = 0; round < 2; round++) {
      ASSERT_TRUE(run(m1, sync_wr(1, RHN_OP_LOCK, mgr, kLock)).ok());
      ASSERT_TRUE(m2.qp().post_send(sync_wr(2, RHN_OP_LOCK, mgr, kLock)));
      c->run_for(2'000'000);
      ASSERT_TRUE(run(m1, sync_wr(3, RHN_OP_UNLOCK, mgr, kLock)).ok());
      Completion g = wait_one(*c, m2.cq(), 100'000'000);
      ASSERT_TRUE(g.ok()) << describe(g);
      ASSERT_TRUE(run(m2, sync_wr(4, RHN_OP_UNLOCK, mgr, kLock)).ok());
      ASSERT_TRUE(
          m1.qp().post_send(sync_wr(5, RHN_OP_BARRIER, mgr, kBarrier, 2)));
      ASSERT_TRUE(run(m2, sync_wr(5, RHN_OP_BARRIER, mgr, kBarrier, 2)).ok());
      ASSERT_TRUE(wait_one(*c, m1.cq(), 100'000'000).ok());
    }
    // Member 1 holds the lock when its process exits.
    ASSERT_TRUE(run(m1, sync_wr(6, RHN_OP_LOCK, mgr, kLock)).ok());
    destroy(m1);
    c->run_for(5'000'000);
    destroy(m2);
    destroy(mgr);
    c->run_for(5'000'000);
  }
  rec->stop();
  const std::vector<Frame> old =
      rec->select({RHN_WOP_LOCK, RHN_WOP_UNLOCK, RHN_WOP_BARRIER,
                   RHN_WOP_SYNC_RESP, RHN_WOP_NAK},
                  {RHN_FW_LOCK_LINK, RHN_FW_SYNC_DONE});
  ASSERT_GE(old.size(), 12u);
  EXPECT_TRUE(std::any_of(old.begin(), old.end(), [](const Frame& f) {
    return replay::fw_kind(f.bytes) == RHN_FW_LOCK_LINK;
  }));

  Ep mgr = make_ep(0), m1 = make_ep(1), m2 = make_ep(2);
  ASSERT_TRUE(run(m1, sync_wr(1, RHN_OP_LOCK, mgr, kLock)).ok());
  ASSERT_TRUE(m2.qp().post_send(sync_wr(2, RHN_OP_LOCK, mgr, kLock)));
  c->run_for(2'000'000);
  replay_quietly(old, kGhostGrants);
  quiet(m1);
  quiet(m2);
  quiet(mgr);
  // The holder's UNLOCK passes the lock on, once.
  Completion u = run(m1, sync_wr(3, RHN_OP_UNLOCK, mgr, kLock));
  ASSERT_TRUE(u.ok()) << describe(u);
  Completion g = wait_one(*c, m2.cq(), 100'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  EXPECT_EQ(g.wr_id, 2u);
  // Member 1 asks again and waits behind member 2.
  ASSERT_TRUE(m1.qp().post_send(sync_wr(4, RHN_OP_LOCK, mgr, kLock)));
  c->run_for(2'000'000);
  replay_quietly(old, kGhostGrants);
  quiet(m1);
  ASSERT_TRUE(run(m2, sync_wr(5, RHN_OP_UNLOCK, mgr, kLock)).ok());
  g = wait_one(*c, m1.cq(), 100'000'000);
  ASSERT_TRUE(g.ok()) << describe(g);
  ASSERT_TRUE(run(m1, sync_wr(6, RHN_OP_UNLOCK, mgr, kLock)).ok());

  // Barrier 9 of two: member 1 waits; the old arrivals do not complete it.
  ASSERT_TRUE(m1.qp().post_send(sync_wr(7, RHN_OP_BARRIER, mgr, kBarrier, 2)));
  c->run_for(2'000'000);
  replay_quietly(old, kGhostGrants);
  quiet(m1);
  Completion b = run(m2, sync_wr(7, RHN_OP_BARRIER, mgr, kBarrier, 2));
  EXPECT_TRUE(b.ok()) << describe(b);
  b = wait_one(*c, m1.cq(), 100'000'000);
  EXPECT_TRUE(b.ok()) << describe(b);
  quiet(m1);
  quiet(m2);
  RecordProperty("replayed", int(replayed));
}

}  // namespace
}  // namespace rhinet::test
