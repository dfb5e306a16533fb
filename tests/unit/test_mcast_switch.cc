// SPDX-License-Identifier: BSD-2-Clause
// Simultaneous multicast (Documentation/hardware/queues.md): one
// MCAST_SWITCH WQE pushes its data by area to every endpoint of a switch
// group. The sender's NIC sends
// each packet once, to the group, and the switch copies it; every member
// acknowledges, losses are repaired by unicast resends, members deliver in
// the sender's order exactly once. A member that dies or refuses fails the
// WQE (the others still get the data); bad input is refused at post with a
// syndrome and a counter; the NIC's multicast memory is shared fairly.
#include <algorithm>
#include <cstring>
#include <map>

#include "fabric_frames.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kQkey = 0x7200;
constexpr uint32_t kAreaId = 11;
constexpr size_t kAreaBytes = 256 * 1024;
constexpr uint16_t kGroup = RHN_NODE_MCAST_FIRST + 0x10;
// Source data past node 0's area.
constexpr size_t kSrc = kAreaBytes;

uint16_t dst_of(std::span<const uint8_t> frame) {
  return uint16_t(frame[4] | frame[5] << 8);
}

class McastSwitch : public ::testing::Test {
 protected:
  void start(size_t nodes,
             std::function<void(uint16_t, fw::EngineConfig&)> tweak = nullptr) {
    // The previous cluster's endpoints go before the cluster they live in.
    eps.clear();
    c.reset();
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 24u << 20;  // 65 nodes: keep the set-up cheap
    cfg.tweak = std::move(tweak);
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    for (size_t i = 0; i < nodes; i++) {
      eps.push_back(make_datagram_node(
          *c, uint16_t(i), RHN_QP_ENDPOINT, kQkey,
          {.cq_log_depth = 12, .buf_bytes = kAreaBytes + (64 << 10)}));
      ASSERT_TRUE(eps.back().qp);
      ASSERT_TRUE(eps.back()
                      .ctx
                      ->register_area(kAreaId, eps.back().buf.mr,
                                      eps.back().buf.va(), kAreaBytes)
                      .ok());
    }
    register_group(kGroup, all_nodes());
    group_frames = repair_frames = 0;
    // Frames node 0 sends to the group (the switch copies them) and to
    // single members (repairs).
    c->fabric().tap = [this](size_t src, std::span<const uint8_t> f) {
      if (src != 0 || f.size() < RHN_DATA_HDR_LEN) return;
      if (dst_of(f) == kGroup)
        group_frames++;
      else if (f[RHN_PKT_HDR_LEN] == RHN_WOP_MCAST_DATA)
        repair_frames++;
    };
  }
  std::vector<size_t> all_nodes() const {
    std::vector<size_t> v;
    for (size_t i = 0; i < eps.size(); i++) v.push_back(i);
    return v;
  }
  // What the administrator does: the pattern in the switch, the member
  // list through every member's kernel.
  void register_group(uint16_t group, const std::vector<size_t>& members,
                      uint16_t endpoint_group = 0) {
    std::vector<unsigned> ports;
    std::vector<rhn_mcast_dest> list;
    for (size_t n : members) {
      ports.push_back(unsigned(n));
      list.push_back({uint16_t(n), 0, eps[n].qp->qpn()});
    }
    ASSERT_TRUE(c->fabric().set_group(group, ports));
    for (size_t n : members) {
      AdminResult r =
          c->node(n).driver->set_mcast_group(group, endpoint_group, list);
      ASSERT_TRUE(r.ok()) << "node " << n << " status " << int(r.status)
                          << " detail " << r.detail;
    }
  }
  SendWr mcast(uint64_t wr_id, Sge data, uint64_t offset,
               uint8_t extra_flags = 0, uint16_t group = kGroup) {
    SendWr wr = rdma_wr(wr_id, RHN_OP_MCAST_SWITCH, {data}, offset, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | extra_flags);
    wr.dst_node = group;
    return wr;
  }
  uint64_t sum_counter(unsigned idx) {
    uint64_t s = 0;
    for (size_t i = 0; i < c->size(); i++) s += c->node(i).counter(idx);
    return s;
  }
  std::unique_ptr<SimCluster> c;
  std::vector<DatagramNode> eps;
  uint64_t group_frames = 0, repair_frames = 0;
};

// Numbered updates through a lossy, duplicating, reordering fabric: every
// member sees every update once, in the sender's order (its signal CQEs
// record the arrival order), with the right bytes; the sender emitted one
// frame per packet to the group, whatever the group size.
TEST_F(McastSwitch, EveryMemberGetsEveryUpdateOnceInOrderThroughALossyFabric) {
  for (size_t members : {size_t{2}, size_t{4}, size_t{16}, size_t{64}}) {
    SCOPED_TRACE(members);
    start(members + 1);
    make_lossy(*c, 40 + members);
    const size_t updates = members >= 64 ? 24 : 48;
    // Update u: 200 bytes at u * 256; every 8th is a 9000-byte one (three
    // packets) at 64 KiB.
    size_t packets = 0;
    std::vector<std::vector<uint8_t>> sent(updates);
    for (size_t u = 0; u < updates; u++) {
      const bool big = u % 8 == 7;
      sent[u] = pattern(1000 + u, big ? 9000 : 200);
      packets += big ? 3 : 1;
      const size_t at = kSrc + (u % 4) * 12'000;
      eps[0].buf.buf.write(at, sent[u].data(), sent[u].size());
      SendWr wr = mcast(u, eps[0].buf.sge(at, sent[u].size()),
                        big ? 65536 : u * 256, RHN_WQE_F_SIGNAL_REMOTE);
      wr.imm_data = uint32_t(u);
      ASSERT_TRUE(eps[0].qp->post_send(wr));
      if (u % 4 == 3) {  // the source buffers are reused four WQEs later
        auto done = c->wait_cqes(*eps[0].cq, 4, 20'000'000'000);
        ASSERT_EQ(done.size(), 4u);
        for (size_t k = 0; k < 4; k++) {
          EXPECT_TRUE(done[k].ok()) << describe(done[k]);
          EXPECT_EQ(done[k].wr_id, u - 3 + k);
          EXPECT_EQ(done[k].opcode, RHN_CQE_OP_MCAST_SWITCH);
        }
        // The big update is checked before the next one overwrites it.
        if (big) {
          for (size_t n = 1; n <= members; n++)
            EXPECT_EQ(eps[n].buf.buf.bytes(65536, 9000), sent[u])
                << "node " << n;
        }
      }
    }
    for (size_t n = 1; n <= members; n++) {
      auto sig = c->wait_cqes(*eps[n].cq, updates, 5'000'000'000);
      ASSERT_EQ(sig.size(), updates) << "node " << n;
      for (size_t u = 0; u < updates; u++) {
        EXPECT_EQ(sig[u].opcode, RHN_CQE_OP_SIGNAL);
        EXPECT_EQ(sig[u].imm_data, u) << "node " << n << " arrival " << u;
        EXPECT_EQ(sig[u].src_node, 0u);
      }
      for (size_t u = 0; u < updates; u++) {
        if (u % 8 == 7) continue;  // the big ones were checked above
        EXPECT_EQ(eps[n].buf.buf.bytes(u * 256, 200), sent[u])
            << "node " << n << " update " << u;
      }
    }
    c->run_for(50'000'000);
    for (size_t n = 1; n <= members; n++)
      EXPECT_TRUE(eps[n].cq->poll().empty()) << "node " << n;  // no extra
    EXPECT_EQ(group_frames, packets);
    EXPECT_EQ(c->node(0).counter(RHN_CNT_MCAST_SWITCH_PACKETS), packets);
    EXPECT_GT(repair_frames, 0u);  // losses were repaired, member by member
    EXPECT_EQ(c->node(0).counter(RHN_CNT_MCAST_REPAIRS), repair_frames);
  }
}

// Without faults: one frame per packet leaves the sender for 2 or 64
// members, where a sequential multicast sends one per packet and member.
TEST_F(McastSwitch, TheSenderEmitsOneFramePerPacketWhateverTheGroupSize) {
  for (size_t members : {size_t{2}, size_t{64}}) {
    SCOPED_TRACE(members);
    start(members + 1);
    const auto data = pattern(3, 10'000);  // three packets
    eps[0].buf.buf.write(kSrc, data.data(), data.size());
    CounterSnap tx(c->node(0));
    ASSERT_TRUE(
        eps[0].qp->post_send(mcast(1, eps[0].buf.sge(kSrc, data.size()), 0)));
    Completion w = wait_one(*c, *eps[0].cq, 1'000'000'000);
    ASSERT_TRUE(w.ok()) << describe(w);
    EXPECT_EQ(w.byte_len, data.size());
    EXPECT_EQ(group_frames, 3u);
    EXPECT_EQ(repair_frames, 0u);
    // The data frames and nothing else on node 0's side but the channel's
    // own traffic: no per-member packets.
    EXPECT_EQ(tx.delta(RHN_CNT_MCAST_SWITCH_PACKETS), 3u);
    EXPECT_LT(tx.delta(RHN_CNT_TX_PACKETS), 3u + members);
    for (size_t n = 1; n <= members; n++)
      EXPECT_EQ(eps[n].buf.buf.bytes(0, data.size()), data) << "node " << n;
  }
}

TEST_F(McastSwitch, PartialModesReachEveryMemberAlike) {
  start(5);
  // STRIDE: a column of 8-byte values 64 bytes apart, packed at the members.
  SendWr s = mcast(1, eps[0].buf.sge(kSrc, kColumnExtent), 0);
  stride_column(eps[0].buf, kSrc, 0x2000, s);
  ASSERT_TRUE(eps[0].qp->post_send(s));
  Completion w = wait_one(*c, *eps[0].cq);
  ASSERT_TRUE(w.ok()) << describe(w);
  for (size_t n = 1; n < 5; n++) expect_packed_column(eps[n].buf, 0x2000, n);
  // BITMAP: blocks 1 and 3 of four 1 KiB blocks; the others stay as they
  // were at the members.
  auto data = pattern(8, 4096);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  const uint8_t bits = 0b1010;
  eps[0].buf.buf.write(kSrc + 8192, &bits, 1);
  for (size_t n = 1; n < 5; n++)
    eps[n].buf.buf.write(32768, std::vector<uint8_t>(4096, 0x77).data(), 4096);
  SendWr b = mcast(2, eps[0].buf.sge(kSrc, 4096), 32768);
  b.xfer_mode = RHN_XFER_BITMAP;
  b.xfer.block = 1024;
  b.xfer.bitmap_addr = eps[0].buf.va(kSrc + 8192);
  b.xfer.bitmap_lkey = eps[0].buf.key();
  ASSERT_TRUE(eps[0].qp->post_send(b));
  w = wait_one(*c, *eps[0].cq);
  ASSERT_TRUE(w.ok()) << describe(w);
  std::vector<uint8_t> want(4096, 0x77);
  std::copy(data.begin() + 1024, data.begin() + 2048, want.begin() + 1024);
  std::copy(data.begin() + 3072, data.end(), want.begin() + 3072);
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(32768, 4096), want) << "node " << n;
  // DIFF against a zero twin, then three bytes changed: every member gets
  // the same three bytes, sent once (one frame for all members).
  AdminResult t = c->node(0).driver->alloc_twin(eps[0].ctx->index(), 8192);
  ASSERT_TRUE(t.ok());
  data = pattern(5, 8192);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  auto diff = [&](uint64_t id) {
    SendWr d = mcast(id, eps[0].buf.sge(kSrc, 8192), 16384);
    d.xfer_mode = RHN_XFER_DIFF;
    d.xfer.twin = t.result;
    return d;
  };
  ASSERT_TRUE(eps[0].qp->post_send(diff(3)));
  ASSERT_TRUE(wait_one(*c, *eps[0].cq).ok());
  for (size_t n = 1; n < 5; n++) {
    EXPECT_EQ(eps[n].buf.buf.bytes(16384, 8192), data) << "node " << n;
    eps[n].buf.buf.write(16384, std::vector<uint8_t>(8192, 0xee).data(), 8192);
  }
  for (size_t o : {size_t{1}, size_t{4000}, size_t{8191}}) data[o] ^= 0x55;
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  CounterSnap tx(c->node(0));
  ASSERT_TRUE(eps[0].qp->post_send(diff(4)));
  ASSERT_TRUE(wait_one(*c, *eps[0].cq).ok());
  want.assign(8192, 0xee);
  for (size_t o : {size_t{1}, size_t{4000}, size_t{8191}}) want[o] = data[o];
  for (size_t n = 1; n < 5; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(16384, 8192), want) << "node " << n;
  EXPECT_EQ(tx.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), 8192u - 3);
  EXPECT_EQ(tx.delta(RHN_CNT_MCAST_SWITCH_PACKETS), 1u);
}

// A member cut off in the middle of a stream: the WQEs it misses fail with
// MEMBER_LOST after the retries, the other members still get every update,
// nothing hangs; later WQEs fail too (the group is broken for this sender
// until the kernel sets it again), and then work again.
TEST_F(McastSwitch, AMemberThatDiesFailsItsWqesTheOthersStillComplete) {
  start(5);
  const auto data = pattern(9, 3000);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  for (uint64_t u = 0; u < 4; u++)
    ASSERT_TRUE(eps[0].qp->post_send(
        mcast(u, eps[0].buf.sge(kSrc, data.size()), u * 4096)));
  auto first = c->wait_cqes(*eps[0].cq, 4, 1'000'000'000);
  ASSERT_EQ(first.size(), 4u);
  for (auto& w : first) EXPECT_TRUE(w.ok()) << describe(w);
  c->fabric().set_link(3, false);
  for (uint64_t u = 4; u < 8; u++)
    ASSERT_TRUE(eps[0].qp->post_send(
        mcast(u, eps[0].buf.sge(kSrc, data.size()), u * 4096)));
  auto later = c->wait_cqes(*eps[0].cq, 4, 60'000'000'000);
  ASSERT_EQ(later.size(), 4u);
  for (auto& w : later) {
    EXPECT_EQ(w.status, RHN_CQE_RETRY_EXC_ERR) << describe(w);
    EXPECT_EQ(w.vendor_err, RHN_SYN_MEMBER_LOST);
    EXPECT_EQ(w.opcode, RHN_CQE_OP_MCAST_SWITCH);
  }
  EXPECT_EQ(c->node(0).counter(RHN_CNT_MCAST_MEMBERS_LOST), 1u);
  for (size_t n : {1, 2, 4})
    for (uint64_t u = 0; u < 8; u++)
      EXPECT_EQ(eps[n].buf.buf.bytes(u * 4096, data.size()), data)
          << "node " << n << " update " << u;
  // The endpoint itself is fine: another WQE fails the same way, at once
  // (nobody is waited for) ...
  ASSERT_TRUE(
      eps[0].qp->post_send(mcast(8, eps[0].buf.sge(kSrc, data.size()), 0)));
  Completion w = wait_one(*c, *eps[0].cq, 10'000'000);
  EXPECT_EQ(w.status, RHN_CQE_RETRY_EXC_ERR) << describe(w);
  // ... until the administrator sets the group again (member back).
  c->fabric().set_link(3, true);
  register_group(kGroup, all_nodes());
  ASSERT_TRUE(
      eps[0].qp->post_send(mcast(9, eps[0].buf.sge(kSrc, data.size()), 0)));
  w = wait_one(*c, *eps[0].cq, 1'000'000'000);
  EXPECT_TRUE(w.ok()) << describe(w);
}

// A member whose area does not exist refuses the packets; the sender's
// WQE reports it (REM_ACCESS_ERR, BAD_AREA) while the others get the data.
// Two refused WQEs in a row both report; afterwards the stream goes on.
TEST_F(McastSwitch, AMemberWithoutTheAreaFailsTheWqeTheOthersGetTheData) {
  start(4);
  make_lossy(*c, 77);
  ASSERT_TRUE(
      eps[2].ctx->driver().unregister_area(eps[2].ctx->index(), kAreaId).ok());
  const auto data = pattern(4, 5000);
  eps[0].buf.buf.write(kSrc, data.data(), data.size());
  for (uint64_t u = 0; u < 3; u++)
    ASSERT_TRUE(eps[0].qp->post_send(
        mcast(u, eps[0].buf.sge(kSrc, data.size()), u * 8192)));
  auto v = c->wait_cqes(*eps[0].cq, 3, 20'000'000'000);
  ASSERT_EQ(v.size(), 3u);
  for (auto& w : v) {
    EXPECT_EQ(w.status, RHN_CQE_REM_ACCESS_ERR) << describe(w);
    EXPECT_EQ(w.vendor_err, RHN_SYN_BAD_AREA);
  }
  EXPECT_GT(c->node(2).counter(RHN_CNT_MCAST_ERRORS), 0u);
  for (size_t n : {1, 3})
    for (uint64_t u = 0; u < 3; u++)
      EXPECT_EQ(eps[n].buf.buf.bytes(u * 8192, data.size()), data)
          << "node " << n;
  // The area back: the same stream delivers to everyone again.
  ASSERT_TRUE(
      eps[2]
          .ctx
          ->register_area(kAreaId, eps[2].buf.mr, eps[2].buf.va(), kAreaBytes)
          .ok());
  ASSERT_TRUE(eps[0].qp->post_send(
      mcast(3, eps[0].buf.sge(kSrc, data.size()), 100'000)));
  Completion w = wait_one(*c, *eps[0].cq, 20'000'000'000);
  EXPECT_TRUE(w.ok()) << describe(w);
  for (size_t n = 1; n < 4; n++)
    EXPECT_EQ(eps[n].buf.buf.bytes(100'000, data.size()), data) << n;
}

TEST_F(McastSwitch, BadInputIsRefusedAtPostWithASyndromeAndACounter) {
  start(3);
  int case_no = 0;
  // From a fresh endpoint of node 0 (a local error puts its QP in error).
  auto expect_refused = [&](auto adjust, uint8_t status, uint8_t syndrome,
                            unsigned counter) {
    SCOPED_TRACE(++case_no);
    DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
    ASSERT_TRUE(e.qp);
    SendWr wr = mcast(1, e.buf.sge(0, 100), 0);
    adjust(e, wr);
    CounterSnap tx(c->node(0));
    const uint64_t frames = group_frames;
    ASSERT_TRUE(e.qp->post_send(wr));
    Completion w = wait_one(*c, *e.cq);
    EXPECT_EQ(w.status, status) << describe(w);
    EXPECT_EQ(w.vendor_err, syndrome) << describe(w);
    EXPECT_EQ(w.opcode, RHN_CQE_OP_MCAST_SWITCH);
    EXPECT_GT(tx.delta(counter), 0u);
    EXPECT_EQ(tx.delta(RHN_CNT_TX_PACKETS), 0u);
    EXPECT_EQ(group_frames, frames);
  };
  // The good WQE works from such an endpoint.
  {
    DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
    ASSERT_TRUE(e.qp->post_send(mcast(1, e.buf.sge(0, 100), 0)));
    EXPECT_TRUE(wait_one(*c, *e.cq).ok());
  }
  // A group this NIC was given no list for.
  expect_refused([](DatagramNode&, SendWr& w) { w.dst_node = kGroup + 1; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_NO_MCAST_GROUP,
                 RHN_CNT_MCAST_ERRORS);
  // A unicast node ID is no group either.
  expect_refused([](DatagramNode&, SendWr& w) { w.dst_node = 1; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_NO_MCAST_GROUP,
                 RHN_CNT_MCAST_ERRORS);
  // Not by area, or naming a QP.
  expect_refused([](DatagramNode&, SendWr& w) { w.flags = RHN_WQE_F_SIGNALED; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE, RHN_CNT_ERROR_CQES);
  expect_refused([](DatagramNode&, SendWr& w) { w.dst_qpn = 5; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE, RHN_CNT_ERROR_CQES);
  // A bad transfer descriptor: a zero-byte stride block.
  expect_refused(
      [](DatagramNode&, SendWr& w) {
        w.xfer_mode = RHN_XFER_STRIDE;
        w.xfer.count = 4;
        w.xfer.local_stride = w.xfer.remote_stride = 16;
      },
      RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER, RHN_CNT_BAD_WQES);
  // A mode a PUSH does not take.
  expect_refused([](DatagramNode&, SendWr& w) { w.xfer_mode = RHN_XFER_TWIN; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_XFER, RHN_CNT_BAD_WQES);
  // A group of process group 7, which this process is not a member of.
  const uint16_t closed = kGroup + 2;
  register_group(closed, all_nodes(), 7);
  expect_refused([&](DatagramNode&, SendWr& w) { w.dst_node = closed; },
                 RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP,
                 RHN_CNT_GROUP_VIOLATIONS);
  // ... which works once the kernel put the process in group 7.
  {
    DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
    const uint16_t g7[] = {7};
    ASSERT_TRUE(c->node(0).driver->set_groups(e.ctx->index(), g7).ok());
    SendWr wr = mcast(1, e.buf.sge(0, 100), 0);
    wr.dst_node = closed;
    ASSERT_TRUE(e.qp->post_send(wr));
    Completion w = wait_one(*c, *e.cq);
    EXPECT_TRUE(w.ok()) << describe(w);
  }
  // A group whose list does not name this node: its members would not
  // take our stream.
  const uint16_t others = kGroup + 3;
  register_group(others, {1, 2});
  std::vector<rhn_mcast_dest> list = {{1, 0, eps[1].qp->qpn()},
                                      {2, 0, eps[2].qp->qpn()}};
  ASSERT_TRUE(c->node(0).driver->set_mcast_group(others, 0, list).ok());
  expect_refused([&](DatagramNode&, SendWr& w) { w.dst_node = others; },
                 RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_NO_MCAST_GROUP,
                 RHN_CNT_MCAST_ERRORS);
  // Not an endpoint: an RC QP refuses the opcode.
  RcPair p = make_rc_pair(*c, 0, 1);
  ASSERT_TRUE(p.ok);
  Region r = make_region(*p.ctx_a, 4096);
  SendWr rc = mcast(1, r.sge(0, 8), 0);
  ASSERT_TRUE(p.qp_a->post_send(rc));
  Completion w = wait_one(*c, *p.cq_a);
  EXPECT_EQ(w.status, RHN_CQE_LOC_QP_OP_ERR) << describe(w);
}

// Only the kernel gives the NIC member lists, and bad lists are refused.
TEST_F(McastSwitch, MemberListsComeFromTheKernelAndAreChecked) {
  start(3);
  SimDriver& d = *c->node(0).driver;
  const uint64_t page = d.memory().alloc_contiguous(1);  // the kernel's
  ASSERT_NE(page, 0u);
  auto set = [&](uint32_t context, uint16_t group,
                 std::vector<rhn_mcast_dest> list) {
    rhn_admin_cmd cmd{};
    cmd.hdr.opcode = RHN_ADMIN_SET_MCAST_GROUP;
    cmd.hdr.context = context;
    cmd.u.mcast_group.group = group;
    cmd.u.mcast_group.count = uint16_t(list.size());
    cmd.u.mcast_group.list_addr = page;
    const size_t bytes = std::min<size_t>(list.size() * sizeof(list[0]), 4096);
    std::memcpy(d.memory().ptr(page, bytes), list.data(), bytes);
    return d.exec(cmd).status;
  };
  const rhn_mcast_dest a{0, 0, 5}, b{1, 0, 6};
  EXPECT_EQ(set(eps[0].ctx->index(), kGroup + 5, {a, b}),
            RHN_ADMIN_NOT_PERMITTED);                 // a user context
  EXPECT_EQ(set(0, 7, {a, b}), RHN_ADMIN_BAD_PARAM);  // not a group ID
  EXPECT_EQ(set(0, RHN_NODE_BROADCAST, {a, b}), RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(0, kGroup + 5, {a, a}), RHN_ADMIN_BAD_PARAM);  // twice
  EXPECT_EQ(set(0, kGroup + 5, {a, {1, 1, 6}}), RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(0, kGroup + 5, {a, {4096, 0, 6}}), RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(0, kGroup + 5, std::vector<rhn_mcast_dest>(129, a)),
            RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(set(0, kGroup + 6, {}), RHN_ADMIN_BAD_HANDLE);  // none to remove
  // The table is bounded (16 groups by default, one in use).
  for (uint16_t g = 0; g < 15; g++)
    EXPECT_EQ(set(0, kGroup + 0x100 + g, {a, b}), RHN_ADMIN_OK) << g;
  EXPECT_EQ(set(0, kGroup + 0x200, {a, b}), RHN_ADMIN_NO_RESOURCES);
  EXPECT_EQ(set(0, kGroup + 0x100, {}), RHN_ADMIN_OK);  // removed
  EXPECT_EQ(set(0, kGroup + 0x200, {a, b}), RHN_ADMIN_OK);
}

// One process keeps multicasting to a group whose member is gone: it holds
// no more than its share of the NIC's multicast packet memory (it waits,
// counted), another process's multicasts to another group complete
// meanwhile, and once the member is declared dead every one of the first
// process's WQEs completes with an error: nothing hangs, nothing leaks.
TEST_F(McastSwitch, OneProcessCannotTakeAllOfTheMulticastMemory) {
  start(4);
  const uint16_t other = kGroup + 1;
  register_group(other, {0, 1, 2});
  // A second process on node 0, endpoints registered in the other group.
  DatagramNode b = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey);
  ASSERT_TRUE(b.qp);
  c->fabric().set_link(3, false);  // kGroup's member 3 is gone
  const size_t flood = 40;
  for (uint64_t u = 0; u < flood; u++)
    ASSERT_TRUE(eps[0].qp->post_send(
        mcast(u, eps[0].buf.sge(kSrc, 6000), (u % 16) * 8192)));
  c->run_for(1'000'000);
  EXPECT_GT(c->node(0).counter(RHN_CNT_MCAST_WAITS), 0u);
  // The other process is not held up.
  for (uint64_t u = 0; u < 8; u++) {
    SendWr wr = mcast(100 + u, b.buf.sge(0, 5000), u * 8192, 0, other);
    ASSERT_TRUE(b.qp->post_send(wr));
  }
  auto done = c->wait_cqes(*b.cq, 8, 100'000'000);
  ASSERT_EQ(done.size(), 8u);
  for (auto& w : done) EXPECT_TRUE(w.ok()) << describe(w);
  EXPECT_TRUE(eps[0].cq->poll().empty());  // still waiting for node 3
  // Node 3 declared dead: all of the first process's WQEs complete.
  auto failed = c->wait_cqes(*eps[0].cq, flood, 60'000'000'000);
  ASSERT_EQ(failed.size(), flood);
  for (size_t i = 0; i < flood; i++) {
    EXPECT_EQ(failed[i].wr_id, i);
    EXPECT_EQ(failed[i].status, RHN_CQE_RETRY_EXC_ERR) << describe(failed[i]);
  }
  // Everything was given back: the other group still takes a burst of
  // full windows.
  for (uint64_t u = 0; u < 24; u++)
    ASSERT_TRUE(b.qp->post_send(
        mcast(200 + u, b.buf.sge(0, 12'000), (u % 4) * 16384, 0, other)));
  done = c->wait_cqes(*b.cq, 24, 1'000'000'000);
  ASSERT_EQ(done.size(), 24u);
  for (auto& w : done) EXPECT_TRUE(w.ok()) << describe(w);
}

// An endpoint put in error half-way through a long multicast: its WQE is
// flushed once, the packets already out are retired (no memory kept), and
// the group keeps working for the next endpoint.
TEST_F(McastSwitch, AnEndpointInErrorMidMessageLeavesNothingBehind) {
  start(5);
  FaultConfig f;
  f.loss = 0.3;  // slow: the WQE is still going when the error comes
  c->fabric().set_faults(f);
  ASSERT_TRUE(eps[0].qp->post_send(mcast(1, eps[0].buf.sge(kSrc, 60'000), 0)));
  c->run_for(300'000);
  rhn_admin_modify_qp m{};
  m.qpn = eps[0].qp->qpn();
  m.attr_mask = RHN_QP_ATTR_STATE;
  m.state = RHN_QPS_ERR;
  ASSERT_TRUE(eps[0].qp->modify(m).ok());
  auto v = c->wait_cqes(*eps[0].cq, 1, 5'000'000'000);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].status, RHN_CQE_WR_FLUSH_ERR) << describe(v);
  c->fabric().clear_faults();
  c->run_for(500'000'000);
  EXPECT_TRUE(eps[0].cq->poll().empty());
  DatagramNode e = make_datagram_node(*c, 0, RHN_QP_ENDPOINT, kQkey,
                                      {.buf_bytes = 128 * 1024});
  ASSERT_TRUE(e.qp);
  // Several full windows of packets from the new endpoint.
  for (uint64_t u = 0; u < 6; u++)
    ASSERT_TRUE(
        e.qp->post_send(mcast(10 + u, e.buf.sge(0, 100'000), u * 1024)));
  auto done = c->wait_cqes(*e.cq, 6, 2'000'000'000);
  ASSERT_EQ(done.size(), 6u);
  for (auto& w : done) EXPECT_TRUE(w.ok()) << describe(w);
}

// The simulator's switch routes groups with the fabric switch's table: a
// frame to a group reaches its member ports once each, never the sender.
TEST(SimSwitchGroups, AFrameToAGroupReachesEachMemberPortOnce) {
  SimClock clock;
  SimSwitch sw(clock, 4, 1);
  std::map<size_t, int> got;
  ASSERT_TRUE(sw.set_group(kGroup, {0, 2, 3, 2}));
  EXPECT_FALSE(sw.set_group(kGroup, {4}));  // no such port
  EXPECT_FALSE(sw.set_group(17, {1}));      // not a group ID
  sw.tap = nullptr;
  const std::vector<uint8_t> f = fabric_frame(0, kGroup, RHN_PKT_RAW, 32, 0x5a);
  sw.wire(0).transmit(f);
  // Count what is queued per port (no engines attached: delivery is
  // counted as unroutable per copy).
  EXPECT_EQ(sw.queued(), 2u);
  clock.advance(1'000'000);
  sw.deliver();
  EXPECT_EQ(sw.counters().unroutable, 2u);
  ASSERT_TRUE(sw.set_group(kGroup, {}));
  sw.wire(0).transmit(f);
  EXPECT_EQ(sw.queued(), 0u);
  EXPECT_EQ(sw.counters().unroutable, 3u);
}

}  // namespace
}  // namespace rhinet::test
