// SPDX-License-Identifier: BSD-2-Clause
// NIC matching: isend / irecv / iprobe / cancel on endpoints,
// checked against a reference model of MPI-style matching (a receive takes
// the oldest queued message it matches; a message takes the oldest posted
// receive that matches it), with list capacities from 1 (everything goes
// through the overflow paths) to 10 000, over a lossy fabric; and eight
// nodes all-to-all, where order between each pair of endpoints must hold.
#include "tag_fixture.h"

namespace rhinet::test {
namespace {

TEST_F(Tag, EagerAndRendezvousToAPostedReceiveEveryByteArrives) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap rx(c->node(1));
  const size_t sizes[] = {
      0, 1, 100, RHN_TAG_EAGER_MAX, RHN_TAG_EAGER_MAX + 1, 200'000};
  size_t off = 0;
  for (size_t i = 0; i < std::size(sizes); i++) {
    TagRecv t;
    t.tag = 0x1000 + i;
    t.src_node = 0;
    t.src_qpn = a.qp->qpn();
    t.sge = b.mem.sge(off, 256 * 1024);
    ASSERT_TRUE(b.qp->post_tag_recv(100 + i, t));
    off += 256 * 1024;
  }
  off = 0;
  for (size_t i = 0; i < std::size(sizes); i++) {
    put(a.mem.buf, off, payload(0, uint32_t(i), sizes[i]));
    ASSERT_TRUE(
        a.qp->post_send(isend(i, b, 0x1000 + i, a.mem.sge(off, sizes[i]))));
    off += 256 * 1024;
  }
  auto sends = c->wait_cqes(*a.cq, std::size(sizes));
  auto recvs = c->wait_cqes(*b.cq, std::size(sizes));
  ASSERT_EQ(sends.size(), std::size(sizes)) << describe(sends);
  ASSERT_EQ(recvs.size(), std::size(sizes)) << describe(recvs);
  for (const auto& s : sends) EXPECT_TRUE(s.ok()) << describe(s);
  for (const auto& r : recvs) {
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.opcode, RHN_CQE_OP_TAG_RECV);
    const size_t i = r.wr_id - 100;
    ASSERT_LT(i, std::size(sizes));
    EXPECT_EQ(r.byte_len, sizes[i]);
    EXPECT_EQ(r.tag(), 0x1000 + i);
    EXPECT_EQ(r.src_node, 0);
    EXPECT_EQ(r.src_qpn, a.qp->qpn());
    EXPECT_EQ(b.mem.buf.bytes(i * 256 * 1024, sizes[i]),
              payload(0, uint32_t(i), sizes[i]));
  }
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_MATCHED_POSTED), std::size(sizes));
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 0u);
}

TEST_F(Tag, UnexpectedMessagesWaitUntilAReceiveMatchesThenArriveWhole) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap rx(c->node(1));
  const size_t sizes[] = {64, 300'000};  // eager and rendezvous
  for (size_t i = 0; i < 2; i++) {
    put(a.mem.buf, i << 20, payload(0, uint32_t(i), sizes[i]));
    ASSERT_TRUE(a.qp->post_send(isend(i, b, 7, a.mem.sge(i << 20, sizes[i]))));
  }
  c->run_for(5'000'000);
  // Queued at the target, and the isends wait for it.
  EXPECT_TRUE(a.cq->poll().empty());
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 2u);
  ASSERT_TRUE(b.qp->post_send(iprobe(50, nullptr, 0, 0)));
  Completion p = wait_one(*c, *b.cq);
  ASSERT_TRUE(p.ok()) << describe(p);
  EXPECT_EQ(p.opcode, RHN_CQE_OP_IPROBE);
  EXPECT_TRUE(p.ext_flags & RHN_CQE_X_FOUND);
  EXPECT_EQ(p.byte_len, sizes[0]);
  EXPECT_EQ(p.tag(), 7u);
  EXPECT_EQ(p.src_qpn, a.qp->qpn());
  for (size_t i = 0; i < 2; i++) {
    TagRecv t;
    t.tag = 7;
    t.any_src = true;
    t.sge = b.mem.sge(i << 20, 512 * 1024);
    ASSERT_TRUE(b.qp->post_tag_recv(10 + i, t));
  }
  auto recvs = c->wait_cqes(*b.cq, 2);
  ASSERT_EQ(recvs.size(), 2u);
  for (const auto& r : recvs) {
    ASSERT_TRUE(r.ok()) << describe(r);
    const size_t i = r.wr_id - 10;
    EXPECT_EQ(r.byte_len, sizes[i]);  // in order: first receive, first send
    EXPECT_EQ(b.mem.buf.bytes(i << 20, sizes[i]),
              payload(0, uint32_t(i), sizes[i]));
  }
  auto sends = c->wait_cqes(*a.cq, 2);
  ASSERT_EQ(sends.size(), 2u);
  for (const auto& s : sends) EXPECT_TRUE(s.ok()) << describe(s);
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_MATCHED_UNEXPECTED), 2u);
  // Nothing is left to probe.
  ASSERT_TRUE(b.qp->post_send(iprobe(51, nullptr, 0, 0)));
  p = wait_one(*c, *b.cq);
  EXPECT_FALSE(p.ext_flags & RHN_CQE_X_FOUND);
}

// Posts behind an isend that waits for its receiver (unexpected there: it
// completes only when the peer's software posts the receive) must still
// reach the wire when the provider kicks only on the NIC's request. Each
// isend is posted after the NIC has taken the one before, so a post
// depends on the word the NIC left in the SQ record.
void isends_behind_an_unmatched_one(SimCluster& c, uint8_t qp_flags,
                                    size_t count) {
  Ep a, b = make_ep(c, 1);
  a.node = 0;
  a.ctx = c.node(0).open_context();
  a.cq = a.ctx->create_cq(14);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = a.cq.get();
  qi.sq_log_depth = 10;
  qi.rq_log_depth = 14;
  qi.flags = qp_flags;
  a.qp = a.ctx->create_qp(qi);
  ASSERT_TRUE(a.qp && b.qp);
  ASSERT_TRUE(activate_datagram(*a.qp, 0));
  a.mem = make_region(*a.ctx, 4u << 20, kAllAccess, 0, 0);
  a.qp->sq_kick_on_request = true;
  c.run_for(1'000'000);  // the NIC goes idle on the new SQ
  CounterSnap rx(c.node(1));
  for (size_t i = 0; i < count; i++) {
    const size_t len = i % 2 ? 300'000 : 64;  // rendezvous, eager
    put(a.mem.buf, i << 20, payload(0, uint32_t(i), len));
    ASSERT_TRUE(a.qp->post_send(isend(i, b, 7, a.mem.sge(i << 20, len))));
    c.run_for(2'000'000);
  }
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), count)
      << "isends queued at the target";
}

TEST_F(Tag, IsendsBehindAnUnmatchedOneGoOutWithTheRequestBit) {
  start(2);
  isends_behind_an_unmatched_one(*c, 0, 4);
}

TEST_F(Tag, IsendsBehindAnUnmatchedOneGoOutWithTheEventIndex) {
  start(2);
  isends_behind_an_unmatched_one(*c, RHN_CREATE_QP_F_SQ_EVENT_INDEX, 4);
}

TEST_F(Tag, ALongerMessageFillsTheBufferAndReportsTruncation) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  for (size_t len : {size_t{3000}, size_t{100'000}}) {
    TagRecv t;
    t.any_src = true;
    t.tag = len;
    t.sge = b.mem.sge(0, 1000);
    ASSERT_TRUE(b.qp->post_tag_recv(1, t));
    put(a.mem.buf, 0, payload(0, 0, len));
    b.mem.buf.fill(0);
    ASSERT_TRUE(a.qp->post_send(isend(2, b, len, a.mem.sge(0, len))));
    Completion r = wait_one(*c, *b.cq);
    EXPECT_EQ(r.status, RHN_CQE_LOC_LEN_ERR) << describe(r);
    EXPECT_EQ(r.byte_len, len);
    auto expect = payload(0, 0, len);
    expect.resize(1000);
    EXPECT_EQ(b.mem.buf.bytes(0, 1000), expect);
    EXPECT_EQ(b.mem.buf.bytes(1000, 16), std::vector<uint8_t>(16, 0));
    Completion s = wait_one(*c, *a.cq);
    EXPECT_TRUE(s.ok()) << describe(s);  // the message was delivered
  }
}

TEST_F(Tag, CancelTakesOnlyAStillPostedReceiveOut) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  TagRecv t;
  t.tag = 5;
  t.any_src = true;
  t.sge = b.mem.sge(0, 100);
  ASSERT_TRUE(b.qp->post_tag_recv(1, t));  // RQ index 0
  ASSERT_TRUE(b.qp->post_tag_recv(2, t));  // RQ index 1
  c->run_for(1'000'000);
  ASSERT_TRUE(b.qp->post_send(cancel(9, 0)));
  auto v = c->wait_cqes(*b.cq, 2);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  std::sort(v.begin(), v.end(), [](const Completion& x, const Completion& y) {
    return x.wr_id < y.wr_id;
  });
  EXPECT_EQ(v[0].wr_id, 1u);
  EXPECT_EQ(v[0].status, RHN_CQE_WR_FLUSH_ERR) << describe(v[0]);
  EXPECT_EQ(v[1].wr_id, 9u);
  EXPECT_EQ(v[1].opcode, RHN_CQE_OP_IRECV_CANCEL) << describe(v[1]);
  EXPECT_TRUE(v[1].ext_flags & RHN_CQE_X_FOUND);
  // The other one still takes a message; cancelling it afterwards finds
  // nothing.
  put(a.mem.buf, 0, payload(0, 0, 10));
  ASSERT_TRUE(a.qp->post_send(isend(3, b, 5, a.mem.sge(0, 10))));
  Completion r = wait_one(*c, *b.cq);
  EXPECT_EQ(r.wr_id, 2u);
  EXPECT_TRUE(r.ok()) << describe(r);
  ASSERT_TRUE(b.qp->post_send(cancel(10, 1)));
  Completion k = wait_one(*c, *b.cq);
  EXPECT_EQ(k.opcode, RHN_CQE_OP_IRECV_CANCEL) << describe(k);
  EXPECT_FALSE(k.ext_flags & RHN_CQE_X_FOUND);
}

// A process that never receives cannot fill the NIC's unexpected list
// for everyone: each context holds at most its share (half of 8 here);
// another process's messages on the same node are still queued and
// delivered, while the hog's surplus isends wait, refused and resent.
TEST_F(Tag, AProcessThatNeverReceivesCannotStarveAnotherOfTheUnexpectedList) {
  start(3, 4096, 8);
  Ep sender = make_ep(*c, 0), other = make_ep(*c, 2);
  Ep hog = make_ep(*c, 1), victim = make_ep(*c, 1);  // two contexts
  ASSERT_TRUE(sender.qp && other.qp && hog.qp && victim.qp);
  CounterSnap rx(c->node(1));
  constexpr size_t kLen = 100;
  for (uint32_t i = 0; i < 10; i++) {
    put(sender.mem.buf, i * 4096, payload(0, i, kLen));
    ASSERT_TRUE(
        sender.qp->post_send(isend(i, hog, 1, sender.mem.sge(i * 4096, kLen))));
  }
  c->run_for(20'000'000);
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 4u)
      << "the hog holds its share only";
  EXPECT_GT(rx.delta(RHN_CNT_TAG_REFUSED), 0u);
  for (uint32_t i = 0; i < 3; i++) {
    put(other.mem.buf, i * 4096, payload(2, i, kLen));
    ASSERT_TRUE(other.qp->post_send(
        isend(i, victim, 2, other.mem.sge(i * 4096, kLen))));
  }
  c->run_for(20'000'000);
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), 7u)
      << "the victim's messages were queued";
  for (uint32_t i = 0; i < 3; i++) {
    TagRecv t;
    t.tag = 2;
    t.any_src = true;
    t.sge = victim.mem.sge(i * 4096, 4096);
    ASSERT_TRUE(victim.qp->post_tag_recv(i, t));
  }
  auto got = c->wait_cqes(*victim.cq, 3);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& r : got) {
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(victim.mem.buf.bytes(r.wr_id * 4096, kLen),
              payload(2, uint32_t(r.wr_id), kLen));
  }
  // The hog's isends are still pending (none failed), and all ten arrive
  // in order once it receives.
  EXPECT_TRUE(sender.cq->poll().empty());
  for (uint32_t i = 0; i < 10; i++) {
    TagRecv t;
    t.tag = 1;
    t.any_src = true;
    t.sge = hog.mem.sge(i * 4096, 4096);
    ASSERT_TRUE(hog.qp->post_tag_recv(i, t));
  }
  auto hogged = c->wait_cqes(*hog.cq, 10, 200'000'000);
  ASSERT_EQ(hogged.size(), 10u);
  for (const auto& r : hogged) {
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(hog.mem.buf.bytes(r.wr_id * 4096, kLen),
              payload(0, uint32_t(r.wr_id), kLen));
  }
  auto sends = c->wait_cqes(*sender.cq, 10);
  ASSERT_EQ(sends.size(), 10u);
  for (const auto& x : sends) EXPECT_TRUE(x.ok()) << describe(x);
}

TEST_F(Tag, AReceiverThatGoesAwayFailsTheIsendsQueuedForIt) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  ASSERT_TRUE(a.qp->post_send(isend(1, b, 3, a.mem.sge(0, 100))));
  ASSERT_TRUE(a.qp->post_send(isend(2, b, 3, a.mem.sge(0, 100'000))));
  c->run_for(2'000'000);
  EXPECT_TRUE(a.cq->poll().empty());
  destroy(b);  // destroyed with both queued
  auto v = c->wait_cqes(*a.cq, 2);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  for (const auto& x : v) EXPECT_FALSE(x.ok()) << describe(x);
}

TEST_F(Tag, ASenderThatGoesAwayFailsTheReceiveThatMatchesItsQueuedIsend) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  const uint32_t a_qpn = a.qp->qpn();
  ASSERT_TRUE(a.qp->post_send(isend(1, b, 3, a.mem.sge(0, 50'000))));
  c->run_for(2'000'000);
  destroy(a);
  TagRecv t;
  t.tag = 3;
  t.src_node = 0;
  t.src_qpn = a_qpn;
  t.sge = b.mem.sge(0, 64 * 1024);
  ASSERT_TRUE(b.qp->post_tag_recv(7, t));
  Completion r = wait_one(*c, *b.cq);
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(r.status, RHN_CQE_REM_OP_ERR) << describe(r);
  // The endpoint goes on: the next message is received whole.
  Ep a2 = make_ep(*c, 0);
  ASSERT_TRUE(a2.qp);
  t.src_qpn = a2.qp->qpn();
  ASSERT_TRUE(b.qp->post_tag_recv(8, t));
  put(a2.mem.buf, 0, payload(9, 9, 30'000));
  ASSERT_TRUE(a2.qp->post_send(isend(1, b, 3, a2.mem.sge(0, 30'000))));
  r = wait_one(*c, *b.cq);
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(b.mem.buf.bytes(0, 30'000), payload(9, 9, 30'000));
}

TEST_F(Tag, ASenderDestroyedDuringTheRendezvousEndsTheReceiveWithAnError) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  TagRecv t;
  t.any_src = true;
  t.mask = 0;
  t.sge = b.mem.sge(0, 4u << 20);
  ASSERT_TRUE(b.qp->post_tag_recv(7, t));
  c->run_for(1'000'000);
  ASSERT_TRUE(a.qp->post_send(isend(1, b, 3, a.mem.sge(0, 4u << 20))));
  // Let the stream start, then kill the sender.
  ASSERT_TRUE(c->run_until(
      [&] { return c->node(1).counter(RHN_CNT_RX_PACKETS) > 40; }, 50'000'000));
  destroy(a);
  Completion r = wait_one(*c, *b.cq, 500'000'000);
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(r.status, RHN_CQE_REM_OP_ERR) << describe(r);
}

// Irecvs complete out of RQ order, so software may reuse a ring slot only
// once the NIC has read past it: a receive that waits in the ring (the
// posted list is full) keeps its slot however many later ones complete.
// The NIC publishes how far it has read in the RQ's record.
TEST_F(Tag, AReceiveWaitingInTheRingKeepsItsSlotWhileLaterOnesComplete) {
  start(2, 1, 64);  // a posted list of one
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1, 4u << 20, 3);  // RQ of 8
  ASSERT_TRUE(a.qp && b.qp);
  CounterSnap rx(c->node(1));
  constexpr size_t kLen = 200, kSlot = 4096;
  auto recv = [&](uint64_t tag, uint64_t wr) {
    TagRecv t;
    t.tag = tag;
    t.any_src = true;
    t.sge = b.mem.sge(wr * kSlot, kSlot);
    return b.qp->post_tag_recv(wr, t);
  };
  ASSERT_TRUE(recv(100, 0));  // never sent: takes the posted list
  ASSERT_TRUE(recv(200, 1));  // waits in the ring, at slot 1
  c->run_for(1'000'000);
  constexpr uint32_t kMany = 20;
  for (uint32_t i = 0; i < kMany; i++) {
    put(a.mem.buf, i * kSlot, payload(0, i, kLen));
    ASSERT_TRUE(a.qp->post_send(isend(i, b, 5, a.mem.sge(i * kSlot, kLen))));
  }
  c->run_for(20'000'000);
  EXPECT_EQ(rx.delta(RHN_CNT_TAG_UNEXPECTED), kMany);
  // Each tag-5 irecv takes a queued message at once; the ring has room
  // for seven of them beside the one that waits in it (the first one's
  // slot is free: the NIC holds it in its list).
  uint32_t posted = 0;
  std::vector<Completion> got;
  while (posted < kMany && recv(5, 10 + posted)) {
    posted++;
    auto one = c->wait_cqes(*b.cq, 1);
    ASSERT_EQ(one.size(), 1u)
        << "receive " << posted
        << " lost; bad WQEs seen by the NIC: " << rx.delta(RHN_CNT_BAD_WQES);
    got.push_back(one[0]);
  }
  EXPECT_EQ(posted, 7u) << "a slot still read by the NIC was handed out again";
  // The message for the receive in the ring frees it and the slots after.
  put(a.mem.buf, 100 * kSlot, payload(0, 100, kLen));
  ASSERT_TRUE(
      a.qp->post_send(isend(100, b, 200, a.mem.sge(100 * kSlot, kLen), 0)));
  auto waiting = c->wait_cqes(*b.cq, 1);
  ASSERT_EQ(waiting.size(), 1u);
  ASSERT_TRUE(waiting[0].ok()) << describe(waiting[0]);
  EXPECT_EQ(waiting[0].wr_id, 1u);
  EXPECT_EQ(b.mem.buf.bytes(kSlot, kLen), payload(0, 100, kLen));
  while (posted < kMany) {
    ASSERT_TRUE(c->run_until([&] { return recv(5, 10 + posted); }, 100'000'000))
        << "no room after " << posted;
    posted++;
    auto more = c->wait_cqes(*b.cq, 1);
    got.insert(got.end(), more.begin(), more.end());
  }
  ASSERT_EQ(got.size(), size_t{kMany});
  for (const auto& r : got) {
    ASSERT_TRUE(r.ok()) << describe(r);
    const uint32_t i = uint32_t(r.wr_id - 10);  // matched in send order
    EXPECT_EQ(b.mem.buf.bytes(r.wr_id * kSlot, kLen), payload(0, i, kLen));
  }
  EXPECT_EQ(rx.delta(RHN_CNT_BAD_WQES), 0u);
}

// Eight nodes, every endpoint sends to every other while receiving with
// any-source receives and with exact ones, through tiny lists and a lossy
// fabric: every message arrives once and whole, and between each pair the
// any-source receives see messages in the order they were sent.
// An isend whose target node dies fails; it held no READ slot, so the
// endpoint's READs afterwards still go (the failure once released a READ
// slot it never took, and the count wrapped).
TEST_F(Tag, AnIsendToADeadNodeLeavesTheEndpointsReadsWorking) {
  start(3);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1), d = make_ep(*c, 2);
  ASSERT_TRUE(a.qp && b.qp && d.qp);
  c->fabric().set_link(2, false);
  ASSERT_TRUE(a.qp->post_send(isend(1, d, 5, a.mem.sge(0, 64))));
  Completion s = wait_one(*c, *a.cq, 60'000'000'000);
  EXPECT_EQ(s.status, RHN_CQE_RETRY_EXC_ERR) << describe(s);
  put(b.mem.buf, 0, payload(1, 0, 100));
  SendWr rd =
      rdma_wr(2, RHN_OP_READ, {a.mem.sge(4096, 100)}, b.mem.va(0), b.mem.key());
  rd.dst_node = 1;
  rd.dst_qpn = b.qp->qpn();
  ASSERT_TRUE(a.qp->post_send(rd));
  Completion r = wait_one(*c, *a.cq, 1'000'000'000);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(a.mem.buf.bytes(4096, 100), payload(1, 0, 100));
}

// Any-source receives with masked tags are kept per distinct mask (four
// mask classes an endpoint, hash chains keyed by the masked tag), the rest
// in a list; whichever holds them, the oldest matching receive wins.
TEST_F(Tag, MaskedWildcardsInClassesAndInTheListMatchOldestFirst) {
  start(2);
  Ep a = make_ep(*c, 0), b = make_ep(*c, 1);
  ASSERT_TRUE(a.qp && b.qp);
  // Receive k ignores tag bits 4k..4k+3 only: R0..R3 take the classes,
  // R4 and R5 go to the list.
  for (uint64_t k = 0; k < 6; k++) {
    TagRecv t;
    t.any_src = true;
    t.tag = 0;
    t.mask = ~(uint64_t{0xf} << (4 * k));
    t.sge = b.mem.sge(k * 64, 64);
    ASSERT_TRUE(b.qp->post_tag_recv(k, t));
  }
  c->run_for(1'000'000);
  // Tag 0x50 is taken only by R1 (the one that ignores bits 4..7); then
  // tag 0 by the oldest, R0; 0x500000 by R5 (in the list); 0 by R2, R3,
  // R4 in order.
  const uint64_t tags[] = {0x50, 0, 0x500000, 0, 0, 0};
  const uint64_t want[] = {1, 0, 5, 2, 3, 4};
  for (size_t i = 0; i < std::size(tags); i++) {
    ASSERT_TRUE(a.qp->post_send(isend(i, b, tags[i], a.mem.sge(0, 8))));
    Completion r = wait_one(*c, *b.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, want[i]) << "message " << i;
    EXPECT_EQ(r.tag(), tags[i]);
    ASSERT_TRUE(wait_one(*c, *a.cq).ok());
  }
  // The classes are free again: six new masks, the same rule.
  for (uint64_t k = 0; k < 6; k++) {
    TagRecv t;
    t.any_src = true;
    t.tag = 0x3;
    t.mask = 0xf0 | (uint64_t{1} << k);
    t.sge = b.mem.sge(k * 64, 64);
    ASSERT_TRUE(b.qp->post_tag_recv(10 + k, t));
  }
  c->run_for(1'000'000);
  // R1k takes a message when (0x3 ^ tag) has no bit of 0xf0 | 1 << k:
  // 0x1 (differs in bit 1) -> all but R11, the oldest is R10; 0x2
  // (bit 0) -> all but R10: R11; 0x0 (bits 0, 1) -> R12.
  const uint64_t tags2[] = {0x1, 0x2, 0x0};
  const uint64_t want2[] = {10, 11, 12};
  for (size_t i = 0; i < std::size(tags2); i++) {
    ASSERT_TRUE(a.qp->post_send(isend(20 + i, b, tags2[i], a.mem.sge(0, 8))));
    Completion r = wait_one(*c, *b.cq);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.wr_id, want2[i]) << "second round, message " << i;
    ASSERT_TRUE(wait_one(*c, *a.cq).ok());
  }
}

class TagAllToAll : public Tag,
                    public ::testing::WithParamInterface<uint64_t> {};

TEST_P(TagAllToAll, EightNodesKeepEveryPairsOrder) {
  constexpr int kNodes = 8, kPerPeer = 12;
  start(kNodes, 4, 4);
  lossy(GetParam());
  std::vector<Ep> ep;
  for (int n = 0; n < kNodes; n++) {
    ep.push_back(make_ep(*c, uint16_t(n), 8u << 20));
    ASSERT_TRUE(ep.back().qp);
  }
  constexpr size_t kSlot = 16 * 1024;
  std::mt19937_64 rng(GetParam());
  // Tag 1: for any-source receives (order checked); tag 2: exact ones.
  struct Sent {
    int to;
    uint32_t id;
    uint64_t tag;
    size_t len;
  };
  std::vector<std::vector<Sent>> sent(kNodes);
  for (int from = 0; from < kNodes; from++)
    for (int to = 0; to < kNodes; to++)
      for (int k = 0; to != from && k < kPerPeer; k++) {
        const uint32_t id = uint32_t(sent[size_t(from)].size());
        sent[size_t(from)].push_back(
            {to, id, uint64_t(1 + k % 2),
             size_t(rng() % 3 == 0 ? 9000 : 4 + rng() % 2000)});
      }
  // Receivers post per peer: kPerPeer/2 exact (tag 2, that source) and
  // (kNodes-1)*kPerPeer/2 any-source tag 1.
  std::vector<uint64_t> posted_wr(kNodes, 0);
  for (int n = 0; n < kNodes; n++) {
    uint64_t wr = 0;
    for (int from = 0; from < kNodes; from++)
      for (int k = 0; from != n && k < kPerPeer / 2; k++) {
        TagRecv exact;
        exact.tag = 2;
        exact.src_node = uint16_t(from);
        exact.src_qpn = ep[size_t(from)].qp->qpn();
        exact.sge = ep[size_t(n)].mem.sge(wr * kSlot, kSlot);
        ASSERT_TRUE(ep[size_t(n)].qp->post_tag_recv(wr++, exact));
        TagRecv any;
        any.tag = 1;
        any.any_src = true;
        any.sge = ep[size_t(n)].mem.sge(wr * kSlot, kSlot);
        ASSERT_TRUE(ep[size_t(n)].qp->post_tag_recv(wr++, any));
      }
    posted_wr[size_t(n)] = wr;
  }
  for (int from = 0; from < kNodes; from++)
    for (const Sent& m : sent[size_t(from)]) {
      Ep& e = ep[size_t(from)];
      std::vector<uint8_t> bytes = payload(uint32_t(from), m.id, m.len);
      // First 4 bytes: the message's id, so the receiver can tell order.
      std::memcpy(bytes.data(), &m.id, std::min<size_t>(4, bytes.size()));
      const size_t at = (4u << 20) + size_t(m.id) * 10'000 % (4u << 20);
      put(e.mem.buf, at, bytes);
      ASSERT_TRUE(e.qp->post_send(
          isend(m.id, ep[size_t(m.to)], m.tag, e.mem.sge(at, m.len))));
    }
  // Collect.
  std::vector<std::vector<Completion>> recvs(kNodes);
  size_t sends_ok = 0, sends_total = 0;
  for (int n = 0; n < kNodes; n++) sends_total += sent[size_t(n)].size();
  ASSERT_TRUE(c->run_until(
      [&] {
        for (int n = 0; n < kNodes; n++)
          for (const auto& x : ep[size_t(n)].cq->poll(256)) {
            if (x.is_send()) {
              EXPECT_TRUE(x.ok()) << describe(x);
              sends_ok++;
            } else {
              recvs[size_t(n)].push_back(x);
            }
          }
        size_t got = 0;
        for (auto& r : recvs) got += r.size();
        return got == sends_total && sends_ok == sends_total;
      },
      5'000'000'000))
      << sends_ok << " of " << sends_total << " isends completed";
  // The tiny lists overflowed both ways, and it showed in the counters.
  uint64_t refused = 0, waits = 0;
  for (int n = 0; n < kNodes; n++) {
    refused += c->node(size_t(n)).counter(RHN_CNT_TAG_REFUSED);
    waits += c->node(size_t(n)).counter(RHN_CNT_TAG_RECV_WAITS);
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(waits, 0u);
  for (int n = 0; n < kNodes; n++) {
    // Receives posted in order: the any-source ones, sorted by wr_id,
    // must see each sender's tag-1 messages in increasing id.
    auto& v = recvs[size_t(n)];
    std::sort(v.begin(), v.end(), [](const Completion& x, const Completion& y) {
      return x.wr_id < y.wr_id;
    });
    std::map<uint16_t, int64_t> last_id;
    std::map<std::pair<uint16_t, uint32_t>, int> seen;
    for (const auto& r : v) {
      ASSERT_TRUE(r.ok()) << describe(r);
      uint32_t id = 0;
      const auto head =
          ep[size_t(n)].mem.buf.bytes(r.wr_id * kSlot, r.byte_len);
      if (r.byte_len >= 4) std::memcpy(&id, head.data(), 4);
      const Sent& m = sent[r.src_node][id];
      ASSERT_EQ(m.to, n);
      ASSERT_EQ(r.byte_len, m.len);
      auto bytes = payload(r.src_node, id, m.len);
      std::memcpy(bytes.data(), &id, std::min<size_t>(4, bytes.size()));
      ASSERT_EQ(head, bytes) << "message " << r.src_node << "/" << id;
      EXPECT_EQ(r.tag(), m.tag);
      const std::pair<uint16_t, uint32_t> key{r.src_node, id};
      EXPECT_EQ(++seen[key], 1) << "twice";
      if (r.tag() == 1 && r.byte_len >= 4) {
        EXPECT_GT(int64_t(id),
                  last_id.count(r.src_node) ? last_id[r.src_node] : -1)
            << "sender " << r.src_node << " overtaken at node " << n;
        last_id[r.src_node] = id;
      }
    }
  }
}

// Several fabric seeds: a stale NAK overtaking a resend showed on one.
INSTANTIATE_TEST_SUITE_P(Seeds, TagAllToAll,
                         ::testing::Values(5, 77, 1234, 9001));

// ---- The reference model (rhinet/sim/tag_scenario.h): scripts of irecvs,
// isends, probes and cancels, each allowed to settle before the next;
// every receive must get the message the model gives it.

struct Script {
  const char* name;
  uint32_t recvs, msgs;  // the NIC's list capacities
  int senders;
  bool lossy;
  uint64_t seed;
};

class TagModel : public ::testing::TestWithParam<Script> {};

TEST_P(TagModel, EveryReceiveGetsTheMessageTheModelGivesIt) {
  const Script p = GetParam();
  TagScript s;
  s.recvs = p.recvs;
  s.msgs = p.msgs;
  s.senders = p.senders;
  s.lossy = p.lossy;
  s.fabric_seed = p.seed;
  std::mt19937_64 rng(p.seed);
  TagScenarioStats st;
  const std::string err = run_tag_scenario(
      s, [&] { return rng(); }, &st);
  ASSERT_EQ(err, "");
  // The script exercised what it should.
  EXPECT_GT(st.receives, 30u);
  EXPECT_GT(st.probes, 10u);
  if (p.recvs >= 64 && p.msgs >= 64) {
    EXPECT_GT(st.probes_found, 0u);
  }
  RecordProperty("cancels_found", int(st.cancels_found));
}

// Only isends (every fourth draw picks "isend"): nothing is posted, every
// message waits unexpected at the NIC, and the drain's catch-all irecvs
// take all twenty in send order.
TEST(TagModelSelfCheck, AScriptOfOnlyIsendsLeavesNothingUnmatched) {
  TagScript s;
  s.steps = 20;
  uint64_t k = 0;
  TagScenarioStats st;
  const std::string err = run_tag_scenario(
      s, [&] { return (k++ % 4 == 0) ? 50 : k; }, &st);
  EXPECT_EQ(err, "");
  EXPECT_EQ(st.receives, 20u);
}

INSTANTIATE_TEST_SUITE_P(
    Lists, TagModel,
    ::testing::Values(Script{"Large", 4096, 4096, 2, false, 11},
                      Script{"TenThousand", 10'000, 10'000, 3, false, 12},
                      Script{"LargeLossy", 4096, 4096, 2, true, 13},
                      Script{"CapacityOne", 1, 1, 1, false, 14},
                      Script{"CapacityOneLossy", 1, 1, 1, true, 15},
                      Script{"TwoAndOne", 2, 1, 1, false, 16}),
    [](const auto& p) { return std::string(p.param.name); });
}  // namespace
}  // namespace rhinet::test
