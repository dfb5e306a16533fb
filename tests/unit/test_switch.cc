// SPDX-License-Identifier: BSD-2-Clause
// The fabric switch core alone: routing, broadcast, multicast groups,
// the wiring of nodes to ports, malformed frames, and each seeded fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "fabric_frames.h"
#include "rhinet/hw_wire.h"
#include "switch_core.h"

namespace {

using rhinet::fabric::FaultSpec;
using rhinet::fabric::SwitchCore;

std::vector<uint8_t> frame(uint16_t src, uint16_t dst, uint8_t type,
                           size_t payload, uint8_t fill = 0xab) {
  return rhinet::test::fabric_frame(src, dst, type, payload, fill);
}

struct Rig {
  explicit Rig(unsigned ports, uint64_t seed = 1)
      : sw(ports, seed, [this](unsigned port, std::span<const uint8_t> f) {
          out[port].emplace_back(f.begin(), f.end());
        }) {}
  size_t got(unsigned port) const {
    auto it = out.find(port);
    return it == out.end() ? 0 : it->second.size();
  }
  std::map<unsigned, std::vector<std::vector<uint8_t>>> out;
  SwitchCore sw;
};

TEST(Switch, RoutesByDestinationNode) {
  Rig r(4);
  r.sw.ingress(0, frame(0, 2, RHN_PKT_DATA, 100), 0);
  r.sw.ingress(3, frame(3, 1, RHN_PKT_ACK, 0), 0);
  EXPECT_EQ(r.got(2), 1u);
  EXPECT_EQ(r.got(1), 1u);
  EXPECT_EQ(r.got(0) + r.got(3), 0u);
  EXPECT_EQ(r.out[2][0], frame(0, 2, RHN_PKT_DATA, 100));
  EXPECT_EQ(r.sw.counters(2).tx_frames, 1u);
  EXPECT_EQ(r.sw.counters(0).rx_bytes, RHN_DATA_HDR_LEN + 100u);
}

// A per-port counter from the switch's stats (0 when it has none by that
// name).
uint64_t port_stat(const Rig& r, unsigned port, const std::string& name) {
  const std::string text = r.sw.stats_text();
  const std::string line = "port " + std::to_string(port) + " ";
  const size_t at = text.find(line);
  if (at == std::string::npos) return 0;
  const size_t end = text.find('\n', at);
  const size_t f = text.find(" " + name + "=", at);
  if (f == std::string::npos || f > end) return 0;
  return std::stoull(text.substr(f + name.size() + 2));
}

// Node i is wired to port i; the administrator's `map NODE PORT` wires
// another. A frame is from the node wired to its port, whatever its
// src_node says: one that claims another is dropped and counted.
TEST(Switch, NodesAreWhereTheyAreWired) {
  Rig r(3);
  r.sw.ingress(2, frame(7, 0, RHN_PKT_ACK, 0), 0);  // port 2 is node 2's
  EXPECT_EQ(r.got(0), 0u);
  EXPECT_EQ(port_stat(r, 2, "spoofed"), 1u);
  ASSERT_TRUE(r.sw.map_node(7, 2));  // now node 7's, and node 2 nowhere
  r.sw.ingress(2, frame(7, 0, RHN_PKT_ACK, 0), 0);
  EXPECT_EQ(r.got(0), 1u);
  r.sw.ingress(0, frame(0, 7, RHN_PKT_ACK, 0), 0);
  EXPECT_EQ(r.got(2), 1u);
  r.sw.ingress(0, frame(0, 2, RHN_PKT_ACK, 0), 0);  // unwired
  r.sw.ingress(0, frame(0, 9, RHN_PKT_ACK, 0), 0);  // nobody
  EXPECT_EQ(r.sw.counters(0).unroutable, 2u);
  r.sw.ingress(2, frame(2, 0, RHN_PKT_ACK, 0), 0);  // not node 2's now
  EXPECT_EQ(r.got(0), 1u);
  EXPECT_EQ(port_stat(r, 2, "spoofed"), 2u);
}

// A node cannot take another's traffic by claiming its ID: the switch
// learns nothing from src_node, so node 1's frames still reach port 1.
TEST(Switch, APortCannotClaimAnotherNodesAddress) {
  Rig r(3);
  r.sw.ingress(2, frame(1, 0, RHN_PKT_DATA, 8), 0);  // port 2 says "node 1"
  EXPECT_EQ(r.got(0), 0u);
  EXPECT_EQ(port_stat(r, 2, "spoofed"), 1u);
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 8), 0);
  EXPECT_EQ(r.got(1), 1u);
  EXPECT_EQ(r.got(2), 0u) << "node 1's frame went to port 2";
  // Broadcast is refused just the same.
  r.sw.ingress(2, frame(1, RHN_NODE_BROADCAST, RHN_PKT_RAW, 8), 0);
  EXPECT_EQ(r.got(0) + r.got(2), 0u);
  EXPECT_EQ(r.got(1), 1u);
  EXPECT_EQ(port_stat(r, 2, "spoofed"), 2u);
}

TEST(Switch, BroadcastReachesEveryOtherPort) {
  Rig r(4);
  r.sw.ingress(1, frame(1, RHN_NODE_BROADCAST, RHN_PKT_RAW, 60), 0);
  EXPECT_EQ(r.got(0), 1u);
  EXPECT_EQ(r.got(1), 0u);
  EXPECT_EQ(r.got(2), 1u);
  EXPECT_EQ(r.got(3), 1u);
}

TEST(Switch, MulticastGroupsReachTheirMembers) {
  Rig r(4);
  const uint16_t g = RHN_NODE_MCAST_FIRST + 5;
  ASSERT_TRUE(r.sw.set_group(g, {0, 2, 3}));
  r.sw.ingress(0, frame(0, g, RHN_PKT_DATA, 8), 0);
  EXPECT_EQ(r.got(0), 0u);  // not back to the sender
  EXPECT_EQ(r.got(1), 0u);
  EXPECT_EQ(r.got(2), 1u);
  EXPECT_EQ(r.got(3), 1u);
  ASSERT_TRUE(r.sw.set_group(g, {}));
  r.sw.ingress(0, frame(0, g, RHN_PKT_DATA, 8), 0);
  EXPECT_EQ(r.sw.counters(0).unroutable, 1u);
  EXPECT_FALSE(r.sw.set_group(5, {0}));                     // not a group ID
  EXPECT_FALSE(r.sw.set_group(RHN_NODE_MCAST_FIRST, {4}));  // no port 4
}

TEST(Switch, APortListedTwiceInAGroupGetsOneCopy) {
  Rig r(4);
  const uint16_t g = RHN_NODE_MCAST_FIRST + 7;
  ASSERT_TRUE(r.sw.set_group(g, {2, 3, 2, 0, 3}));
  r.sw.ingress(0, frame(0, g, RHN_PKT_DATA, 8), 0);
  EXPECT_EQ(r.got(2), 1u);
  EXPECT_EQ(r.got(3), 1u);
  EXPECT_EQ(r.got(0), 0u);
}

TEST(Switch, DropsAndCountsMalformedFrames) {
  Rig r(2);
  auto good = frame(0, 1, RHN_PKT_DATA, 16);
  auto bad_magic = good;
  bad_magic[0] ^= 1;
  auto bad_version = good;
  bad_version[2] = 9;
  auto bad_type = good;
  bad_type[3] = 0x77;
  auto short_len = good;
  short_len.pop_back();
  std::vector<uint8_t> tiny(5, 0);
  std::vector<uint8_t> huge(RHN_MAX_FRAME + 1, 0);
  for (auto* f :
       {&bad_magic, &bad_version, &bad_type, &short_len, &tiny, &huge})
    r.sw.ingress(0, *f, 0);
  r.sw.ingress(0, std::span<const uint8_t>(), 0);
  EXPECT_EQ(r.sw.counters(0).malformed, 7u);
  EXPECT_EQ(r.got(1), 0u);
  r.sw.ingress(0, good, 0);
  EXPECT_EQ(r.got(1), 1u);
}

TEST(Switch, LossIsSeededAndCounted) {
  auto run = [](uint64_t seed) {
    Rig r(2, seed);
    r.sw.set_fault(1, FaultSpec{.loss = 0.3});
    for (int i = 0; i < 1000; i++)
      r.sw.ingress(0, frame(0, 1, RHN_PKT_ACK, 0), 0);
    EXPECT_EQ(r.got(1) + r.sw.counters(1).loss_drops, 1000u);
    return r.got(1);
  };
  const size_t a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a, b);  // same seed, same losses
  EXPECT_NE(a, c);
  EXPECT_GT(a, 600u);
  EXPECT_LT(a, 800u);
}

TEST(Switch, DuplicatesCorruptsAndReorders) {
  Rig r(2, 7);
  r.sw.set_fault(-1, FaultSpec{.duplicate = 1.0});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_ACK, 0), 0);
  EXPECT_EQ(r.got(1), 2u);
  EXPECT_EQ(r.sw.counters(1).duplicated, 1u);

  r.out.clear();
  r.sw.set_fault(-1, FaultSpec{.corrupt = 1.0});
  const auto sent = frame(0, 1, RHN_PKT_DATA, 64, 0);
  r.sw.ingress(0, sent, 0);
  ASSERT_EQ(r.got(1), 1u);
  int bits = 0;
  for (size_t i = 0; i < sent.size(); i++)
    bits += __builtin_popcount(sent[i] ^ r.out[1][0][i]);
  EXPECT_EQ(bits, 1);

  // Reorder: the first frame is held and leaves after the second.
  r.out.clear();
  r.sw.set_fault(-1, FaultSpec{.reorder = 1.0});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 1, 1), 0);
  EXPECT_EQ(r.got(1), 0u);
  r.sw.set_fault(-1, FaultSpec{});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 1, 2), 0);
  ASSERT_EQ(r.got(1), 2u);
  EXPECT_EQ(r.out[1][0].back(), 2);
  EXPECT_EQ(r.out[1][1].back(), 1);

  // A held frame with no successor leaves when its hold time runs out.
  r.out.clear();
  r.sw.set_fault(-1, FaultSpec{.reorder = 1.0});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 1, 3), 100);
  EXPECT_EQ(r.sw.next_deadline_ns(), 100 + SwitchCore::kReorderHoldNs);
  r.sw.tick(100 + SwitchCore::kReorderHoldNs);
  EXPECT_EQ(r.got(1), 1u);
  EXPECT_EQ(r.sw.next_deadline_ns(), UINT64_MAX);
}

// A duplicate's copies are corrupted and held back each on its own, as on
// the simulator's links (the same FaultInjector decides both).
TEST(Switch, DuplicateCopiesTakeTheirOwnFaults) {
  Rig r(2, 7);
  r.sw.set_fault(-1, FaultSpec{.duplicate = 1.0, .corrupt = 1.0});
  const auto sent = frame(0, 1, RHN_PKT_DATA, 64, 0);
  r.sw.ingress(0, sent, 0);
  ASSERT_EQ(r.got(1), 2u);
  EXPECT_EQ(r.sw.counters(1).duplicated, 1u);
  EXPECT_EQ(r.sw.counters(1).corrupted, 2u);
  for (const auto& copy : r.out[1]) {
    int bits = 0;
    for (size_t i = 0; i < sent.size(); i++)
      bits += __builtin_popcount(sent[i] ^ copy[i]);
    EXPECT_EQ(bits, 1);
  }

  // Both copies drawn to be held: one frame is held at a time, so the
  // first copy waits and the second goes out.
  r.out.clear();
  r.sw.set_fault(-1, FaultSpec{.duplicate = 1.0, .reorder = 1.0});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 1, 1), 0);
  EXPECT_EQ(r.got(1), 1u);
  EXPECT_EQ(r.sw.counters(1).reordered, 1u);
  r.sw.set_fault(-1, FaultSpec{});
  r.sw.ingress(0, frame(0, 1, RHN_PKT_DATA, 1, 2), 0);
  ASSERT_EQ(r.got(1), 3u);
  EXPECT_EQ(r.out[1][1].back(), 2);
  EXPECT_EQ(r.out[1][2].back(), 1);
}

TEST(Switch, LinkDownForAPeriod) {
  Rig r(2);
  r.sw.set_link(1, false, 1000, 0);
  r.sw.ingress(0, frame(0, 1, RHN_PKT_ACK, 0), 10);  // to a down port
  r.sw.ingress(1, frame(1, 0, RHN_PKT_ACK, 0), 10);  // from a down port
  EXPECT_EQ(r.got(0) + r.got(1), 0u);
  EXPECT_EQ(r.sw.counters(1).link_down_drops, 2u);
  EXPECT_EQ(r.sw.next_deadline_ns(), 1000u);
  r.sw.tick(1000);
  EXPECT_TRUE(r.sw.link_up(1));
  r.sw.ingress(0, frame(0, 1, RHN_PKT_ACK, 0), 1001);
  EXPECT_EQ(r.got(1), 1u);
}

}  // namespace

namespace {

std::vector<uint8_t> mgmt(uint16_t src, uint8_t op, uint16_t group) {
  std::vector<uint8_t> f(rhinet::fabric::kMgmtFrameLen);
  rhn_mgmt_msg m{};
  m.op = op;
  m.group = group;
  m.cookie = 0x1234;
  std::memcpy(f.data() + RHN_PKT_HDR_LEN, &m, sizeof m);
  rhn_pkt_hdr h{};
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = RHN_PKT_MGMT;
  h.dst_node = RHN_NODE_BROADCAST;
  h.src_node = src;
  h.payload_len = sizeof m;
  h.payload_crc = rhinet::fabric::GroupTable::crc32c(0, &m, sizeof m);
  std::memcpy(f.data(), &h, sizeof h);
  h.hdr_crc = rhinet::fabric::GroupTable::header_crc(f.data());
  std::memcpy(f.data(), &h, sizeof h);
  return f;
}

rhn_mgmt_msg answer_of(const std::vector<uint8_t>& f) {
  rhn_mgmt_msg a{};
  EXPECT_EQ(f.size(), rhinet::fabric::kMgmtFrameLen);
  if (f.size() == rhinet::fabric::kMgmtFrameLen)
    std::memcpy(&a, f.data() + RHN_PKT_HDR_LEN, sizeof a);
  return a;
}

}  // namespace

// Verbs UD multicast: a management frame joins or leaves the port it came
// in on, in the UD sub-range only, and is answered on that port; frames to
// the group then reach the joined ports.
TEST(Switch, ManagementFramesJoinAndLeaveTheirOwnPort) {
  Rig r(4);
  const uint16_t g = RHN_NODE_MCAST_UD_FIRST + 9;
  r.sw.ingress(2, mgmt(2, RHN_MGMT_JOIN, g), 0);
  r.sw.ingress(3, mgmt(1, RHN_MGMT_JOIN, g), 0);  // claims node 1: dropped
  EXPECT_TRUE(r.sw.group_members(g) == std::vector<unsigned>{2});
  EXPECT_EQ(port_stat(r, 3, "spoofed"), 1u);
  r.sw.ingress(3, mgmt(3, RHN_MGMT_JOIN, g), 0);
  r.sw.ingress(3, mgmt(3, RHN_MGMT_JOIN, g), 0);  // again: once
  EXPECT_EQ(r.sw.group_members(g), (std::vector<unsigned>{2, 3}));
  ASSERT_EQ(r.got(2), 1u);
  ASSERT_EQ(r.got(3), 2u);
  const rhn_mgmt_msg a = answer_of(r.out[2][0]);
  EXPECT_EQ(a.op, RHN_MGMT_ANSWER);
  EXPECT_EQ(a.status, RHN_MGMT_OK);
  EXPECT_EQ(a.member, 1);
  EXPECT_EQ(a.group, g);
  EXPECT_EQ(a.cookie, 0x1234u);
  rhn_pkt_hdr h;
  std::memcpy(&h, r.out[2][0].data(), sizeof h);
  EXPECT_EQ(h.dst_node, 2u);
  EXPECT_EQ(h.src_node, RHN_NODE_BROADCAST);
  EXPECT_EQ(h.hdr_crc,
            rhinet::fabric::GroupTable::header_crc(r.out[2][0].data()));
  EXPECT_EQ(r.sw.counters(2).mgmt_applied, 1u);
  EXPECT_EQ(r.got(0) + r.got(1), 0u);  // never forwarded

  r.sw.ingress(0, frame(0, g, RHN_PKT_DATA, 8), 0);
  EXPECT_EQ(r.got(2), 2u);
  EXPECT_EQ(r.got(3), 3u);
  r.sw.ingress(2, mgmt(2, RHN_MGMT_LEAVE, g), 0);
  EXPECT_EQ(r.sw.group_members(g), (std::vector<unsigned>{3}));
  EXPECT_EQ(answer_of(r.out[2].back()).member, 0);
  // A node reconnecting on port 3 starts with no UD group.
  r.sw.port_reconnected(3);
  EXPECT_TRUE(r.sw.group_members(g).empty());
}

// Trust model: the administrator's groups are out of reach of management
// frames (refused, counted, answered REFUSED), and the administrator's
// commands cannot touch the UD sub-range. A frame with a bad CRC changes
// nothing and is counted malformed.
TEST(Switch, ManagementFramesCannotTouchAdministratorGroups) {
  Rig r(3);
  const uint16_t admin = RHN_NODE_MCAST_FIRST + 1;
  ASSERT_TRUE(r.sw.set_group(admin, {0}));
  EXPECT_FALSE(r.sw.set_group(RHN_NODE_MCAST_UD_FIRST, {0}));
  r.sw.ingress(1, mgmt(1, RHN_MGMT_JOIN, admin), 0);
  r.sw.ingress(0, mgmt(0, RHN_MGMT_LEAVE, admin), 0);
  EXPECT_EQ(r.sw.group_members(admin), (std::vector<unsigned>{0}));
  EXPECT_EQ(r.sw.counters(1).mgmt_refused, 1u);
  EXPECT_EQ(r.sw.counters(0).mgmt_refused, 1u);
  ASSERT_EQ(r.got(1), 1u);
  EXPECT_EQ(answer_of(r.out[1][0]).status, RHN_MGMT_REFUSED);

  auto bad = mgmt(1, RHN_MGMT_JOIN, RHN_NODE_MCAST_UD_FIRST);
  bad[RHN_PKT_HDR_LEN + 2] ^= 1;  // the group, under the payload CRC
  r.sw.ingress(1, bad, 0);
  auto bad_op = mgmt(1, 9, RHN_NODE_MCAST_UD_FIRST);
  r.sw.ingress(1, bad_op, 0);
  EXPECT_EQ(r.sw.counters(1).malformed, 2u);
  EXPECT_TRUE(r.sw.group_members(RHN_NODE_MCAST_UD_FIRST).empty());
  EXPECT_TRUE(r.sw.group_members(RHN_NODE_MCAST_UD_FIRST + 1).empty());
  EXPECT_EQ(r.got(1), 1u);  // no answers to those
}

// ---- In-switch reduction (RHN_PKT_COLL, fabric/coll_reducer.h).

namespace {

struct CollUp {
  uint16_t node = 0;
  uint8_t kind = RHN_COLL_FRAME_UP;
  uint32_t key = RHN_AREA_KEY(0, 7);
  uint32_t seq = 0;
  uint32_t seg = 0;
  uint16_t nnodes = 3;
  uint32_t signature = 0x51;
  uint8_t reduce = RHN_COLL_SUM;
  uint8_t type = RHN_COLL_INT32;
  std::vector<int32_t> data;
};

// A NIC's frame, both CRCs right (the switch checks them on these).
std::vector<uint8_t> coll_frame(const CollUp& u) {
  rhn_coll_frame f{};
  f.key = u.key;
  f.seq = u.seq;
  f.seg = u.seg;
  f.signature = u.signature;
  f.members = 0xabc;
  f.nnodes = u.nnodes;
  f.kind = u.kind;
  f.reduce = u.reduce;
  f.type = u.type;
  const size_t bytes = u.data.size() * 4;
  std::vector<uint8_t> out(RHN_PKT_HDR_LEN, 0);
  const auto* fp = reinterpret_cast<const uint8_t*>(&f);
  out.insert(out.end(), fp, fp + sizeof f);
  const auto* dp = reinterpret_cast<const uint8_t*>(u.data.data());
  out.insert(out.end(), dp, dp + bytes);
  rhn_pkt_hdr h{};
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = RHN_PKT_COLL;
  h.dst_node = RHN_NODE_BROADCAST;
  h.src_node = u.node;
  h.payload_len = uint16_t(sizeof f + bytes);
  h.payload_crc =
      rhinet::fw::crc32c(0, out.data() + RHN_PKT_HDR_LEN, h.payload_len);
  std::memcpy(out.data(), &h, sizeof h);
  h.hdr_crc = rhinet::fw::crc32c(0, out.data(), RHN_PKT_HDR_LEN);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

struct CollAnswer {
  rhn_pkt_hdr hdr;
  rhn_coll_frame f;
  std::vector<int32_t> data;
};

// The switch's frame as the NIC sees it: CRCs checked.
CollAnswer coll_answer_of(const std::vector<uint8_t>& frame) {
  CollAnswer a{};
  EXPECT_GE(frame.size(), RHN_PKT_HDR_LEN + sizeof(rhn_coll_frame));
  std::memcpy(&a.hdr, frame.data(), sizeof a.hdr);
  std::memcpy(&a.f, frame.data() + RHN_PKT_HDR_LEN, sizeof a.f);
  std::vector<uint8_t> h(frame.begin(), frame.begin() + RHN_PKT_HDR_LEN);
  std::memset(h.data() + offsetof(rhn_pkt_hdr, hdr_crc), 0, 4);
  EXPECT_EQ(rhinet::fw::crc32c(0, h.data(), h.size()), a.hdr.hdr_crc);
  EXPECT_EQ(
      rhinet::fw::crc32c(0, frame.data() + RHN_PKT_HDR_LEN, a.hdr.payload_len),
      a.hdr.payload_crc);
  EXPECT_EQ(a.hdr.type, RHN_PKT_COLL);
  EXPECT_EQ(a.hdr.src_node, RHN_NODE_BROADCAST);
  const size_t bytes = frame.size() - RHN_PKT_HDR_LEN - sizeof a.f;
  a.data.resize(bytes / 4);
  std::memcpy(a.data.data(), frame.data() + RHN_PKT_HDR_LEN + sizeof a.f,
              bytes);
  return a;
}

CollAnswer last_answer(Rig& r, unsigned port) {
  EXPECT_GT(r.got(port), 0u) << "port " << port;
  if (r.got(port) == 0) return {};
  return coll_answer_of(r.out[port].back());
}

}  // namespace

// Three nodes' partials: HELD to the first two, then the sum DOWN to all
// three. A repeated UP gets its DOWN again; the slot goes when every
// contributor acknowledged.
TEST(Switch, CombinesPartialsAndSendsTheResultDown) {
  Rig r(4);
  CollUp u;
  u.data = {1, -2, 3};
  for (uint16_t n = 0; n < 2; n++) {
    u.node = n;
    r.sw.ingress(n, coll_frame(u), 0);
    const CollAnswer a = last_answer(r, n);
    EXPECT_EQ(a.f.kind, RHN_COLL_FRAME_HELD);
    EXPECT_EQ(a.hdr.dst_node, n);
    u.data = {10, -20, 30};
  }
  u.node = 2;
  u.data = {100, 200, -300};
  r.sw.ingress(2, coll_frame(u), 0);
  for (unsigned p = 0; p < 3; p++) {
    const CollAnswer a = last_answer(r, p);
    EXPECT_EQ(a.f.kind, RHN_COLL_FRAME_DOWN) << p;
    EXPECT_EQ(a.f.status, 0u);
    EXPECT_EQ(a.hdr.dst_node, p);
    EXPECT_EQ(a.data, (std::vector<int32_t>{111, 178, -267})) << p;
  }
  EXPECT_EQ(r.got(3), 0u);  // not a member: nothing
  EXPECT_EQ(r.sw.coll().counters().results, 1u);
  // Node 1 lost its DOWN: its UP again brings it again.
  u.node = 1;
  u.data = {10, -20, 30};
  r.sw.ingress(1, coll_frame(u), 0);
  EXPECT_EQ(r.got(1), 3u);
  EXPECT_EQ(last_answer(r, 1).data, (std::vector<int32_t>{111, 178, -267}));
  CollUp ack = u;
  ack.kind = RHN_COLL_FRAME_ACK;
  ack.data.clear();
  for (uint16_t n = 0; n < 3; n++) {
    EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
    ack.node = n;
    r.sw.ingress(n, coll_frame(ack), 0);
  }
  EXPECT_EQ(r.sw.coll().slots_in_use(), 0u);
}

// Partials that disagree (signature, length, one node more than nnodes)
// complete the segment with MISMATCH for everyone in it.
TEST(Switch, PartialsThatDisagreeFailTheSegment) {
  Rig r(4);
  CollUp u;
  u.nnodes = 2;
  u.data = {1};
  u.node = 0;
  r.sw.ingress(0, coll_frame(u), 0);
  u.node = 1;
  u.signature = 0x52;  // another length or root, say
  r.sw.ingress(1, coll_frame(u), 0);
  for (unsigned p = 0; p < 2; p++) {
    const CollAnswer a = last_answer(r, p);
    EXPECT_EQ(a.f.kind, RHN_COLL_FRAME_DOWN);
    EXPECT_EQ(a.f.status, RHN_SYN_COLL_MISMATCH);
    EXPECT_TRUE(a.data.empty());
  }
  // A complete segment and a third node: it alone hears MISMATCH.
  CollUp v;
  v.nnodes = 2;
  v.seg = 1;
  v.data = {5};
  for (uint16_t n = 0; n < 2; n++) {
    v.node = n;
    r.sw.ingress(n, coll_frame(v), 0);
  }
  EXPECT_EQ(last_answer(r, 1).f.status, 0u);
  v.node = 2;
  r.sw.ingress(2, coll_frame(v), 0);
  EXPECT_EQ(last_answer(r, 2).f.status, RHN_SYN_COLL_MISMATCH);
  EXPECT_EQ(r.got(0), 4u);  // HELD, DOWN; HELD, DOWN: no word of node 2
  EXPECT_EQ(r.sw.coll().counters().mismatches, 2u);
}

// A full table: a higher segment hears BUSY; a lower one takes the buffer
// of the highest incomplete segment, whose contributors hear BUSY. Complete
// segments are never taken for a lower one (only when stalled, below).
TEST(Switch, AFullCollectiveTableGivesWayToTheLowestSegment) {
  Rig r(4);
  r.sw.configure_coll(2, 1'000'000'000);  // each port opens one buffer
  CollUp a;                               // key 7 seg 0: complete (1 node)
  a.nnodes = 1;
  a.data = {1};
  r.sw.ingress(0, coll_frame(a), 0);
  EXPECT_EQ(last_answer(r, 0).f.kind, RHN_COLL_FRAME_DOWN);
  CollUp b;  // key 7 seg 5: incomplete
  b.nnodes = 2;
  b.seg = 5;
  b.data = {2};
  b.node = 2;
  r.sw.ingress(2, coll_frame(b), 0);
  EXPECT_EQ(last_answer(r, 2).f.kind, RHN_COLL_FRAME_HELD);
  CollUp hi = b;  // key 9: higher, no room
  hi.key = RHN_AREA_KEY(0, 9);
  hi.node = 1;
  r.sw.ingress(1, coll_frame(hi), 0);
  EXPECT_EQ(last_answer(r, 1).f.kind, RHN_COLL_FRAME_BUSY);
  CollUp lo = b;  // key 7 seg 3: lower than seg 5, which gives way
  lo.seg = 3;
  lo.node = 1;
  r.sw.ingress(1, coll_frame(lo), 0);
  EXPECT_EQ(last_answer(r, 1).f.kind, RHN_COLL_FRAME_HELD);
  const CollAnswer evicted = last_answer(r, 2);
  EXPECT_EQ(evicted.f.kind, RHN_COLL_FRAME_BUSY);
  EXPECT_EQ(evicted.f.seg, 5u);
  EXPECT_EQ(r.sw.coll().counters().evicted, 1u);
  EXPECT_EQ(last_answer(r, 0).f.kind, RHN_COLL_FRAME_DOWN);  // kept
  lo.node = 3;
  r.sw.ingress(3, coll_frame(lo), 0);
  EXPECT_EQ(last_answer(r, 3).f.kind, RHN_COLL_FRAME_DOWN);
  EXPECT_EQ(last_answer(r, 3).data, (std::vector<int32_t>{4}));
}

// Frames the switch cannot trust are dropped and counted, never answered:
// a bad CRC, a kind a NIC does not send, a float bitwise reduce; a segment
// nobody speaks of goes after the stale time; an UP of a later collective
// stands for the node's acknowledgement of earlier ones.
TEST(Switch, CollectiveFramesItCannotTrustAndSegmentsLeftBehind) {
  Rig r(3);
  r.sw.configure_coll(8, 1'000'000);
  CollUp u;
  u.nnodes = 2;
  u.data = {1, 2};
  auto bad_crc = coll_frame(u);
  bad_crc.back() ^= 1;
  r.sw.ingress(0, bad_crc, 0);
  CollUp down = u;
  down.kind = RHN_COLL_FRAME_DOWN;
  r.sw.ingress(0, coll_frame(down), 0);
  CollUp fl = u;
  fl.type = RHN_COLL_FLOAT;
  fl.reduce = RHN_COLL_BXOR;
  r.sw.ingress(0, coll_frame(fl), 0);
  EXPECT_EQ(r.sw.coll().counters().malformed, 3u);
  EXPECT_EQ(r.got(0), 0u);
  // One node's partial and silence: dropped at the stale time.
  r.sw.ingress(0, coll_frame(u), 0);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
  EXPECT_EQ(r.sw.next_deadline_ns(), 1'000'000u);
  r.sw.tick(999'999);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
  r.sw.tick(1'000'000);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 0u);
  EXPECT_EQ(r.sw.coll().counters().stale, 1u);
  // Complete, node 1's ACK lost; its UP of the next collective frees it.
  for (uint16_t n = 0; n < 2; n++) {
    u.node = n;
    r.sw.ingress(n, coll_frame(u), 2'000'000);
  }
  CollUp ack = u;
  ack.kind = RHN_COLL_FRAME_ACK;
  ack.data.clear();
  ack.node = 0;
  r.sw.ingress(0, coll_frame(ack), 2'000'000);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
  CollUp next = u;
  next.seq = 1;
  next.node = 1;
  r.sw.ingress(1, coll_frame(next), 2'000'000);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);  // only the new one
  EXPECT_NE(r.sw.stats_text().find("coll slots=8 in_use=1"), std::string::npos);
}

// The table is every job's: a port opens at most its share of it (64/256:
// one of four buffers here) even while buffers are free, and a buffer that
// has waited the stall time for its next partial goes to a segment that
// needs one, whatever the keys (a job holding low-key buffers on purpose,
// reminding the switch of them, cannot keep them against others).
TEST(Switch, NoPortKeepsTheCollectiveTableFromOthers) {
  Rig r(5);
  r.sw.configure_coll(4, 10'000'000'000, 1'000'000);
  CollUp junk;  // nnodes 2, the other node never comes
  junk.nnodes = 2;
  junk.key = RHN_AREA_KEY(0, 0);  // the lowest keys there are
  junk.data = {1};
  for (uint16_t n = 0; n < 3; n++) {
    junk.node = n;
    junk.seg = n;
    r.sw.ingress(n, coll_frame(junk), 0);
    EXPECT_EQ(last_answer(r, n).f.kind, RHN_COLL_FRAME_HELD) << n;
  }
  // Port 0 holds its share: its next segment waits though a buffer is
  // free.
  junk.node = 0;
  junk.seg = 10;
  r.sw.ingress(0, coll_frame(junk), 0);
  EXPECT_EQ(last_answer(r, 0).f.kind, RHN_COLL_FRAME_BUSY);
  EXPECT_EQ(r.sw.coll().counters().over_share, 1u);
  // Another job's collective takes the last buffer and completes.
  CollUp a;
  a.key = RHN_AREA_KEY(5, 1);
  a.nnodes = 2;
  a.data = {7};
  a.node = 3;
  r.sw.ingress(3, coll_frame(a), 100);
  a.node = 2;  // port 2 is at its share, but joins an open buffer
  r.sw.ingress(2, coll_frame(a), 100);
  EXPECT_EQ(last_answer(r, 3).f.kind, RHN_COLL_FRAME_DOWN);
  EXPECT_EQ(last_answer(r, 3).data, (std::vector<int32_t>{14}));
  // Its result is not acknowledged yet: port 3 is at its share (complete
  // buffers count).
  CollUp b = a;
  b.seg = 1;
  b.node = 3;
  r.sw.ingress(3, coll_frame(b), 500'000);
  EXPECT_EQ(last_answer(r, 3).f.kind, RHN_COLL_FRAME_BUSY);
  EXPECT_EQ(r.sw.coll().counters().over_share, 2u);
  // A segment from port 4, which opened nothing: the table is full of the
  // low-key buffers and that result. Before the stall time: BUSY.
  b.node = 4;
  r.sw.ingress(4, coll_frame(b), 500'000);
  EXPECT_EQ(last_answer(r, 4).f.kind, RHN_COLL_FRAME_BUSY);
  EXPECT_EQ(r.sw.coll().counters().over_share, 2u);
  // Reminders of the low-key buffers are no progress; after the stall
  // time the oldest of them gives way.
  junk.node = 1;
  junk.seg = 1;
  r.sw.ingress(1, coll_frame(junk), 900'000);
  r.sw.ingress(4, coll_frame(b), 1'000'000);
  EXPECT_EQ(last_answer(r, 4).f.kind, RHN_COLL_FRAME_HELD);
  const CollAnswer evicted = last_answer(r, 0);
  EXPECT_EQ(evicted.f.kind, RHN_COLL_FRAME_BUSY);
  EXPECT_EQ(evicted.f.seg, 0u);
  EXPECT_EQ(r.sw.coll().counters().stalled, 1u);
}

// A port's share counts every buffer it opened, complete or not: a node
// that sends one-node partials and never acknowledges their results holds
// at most 64 of the 256 buffers, however often it repeats them (here every
// 500 ms), and another job's collectives go through all along. The
// results it holds go 2 s after they were complete, repeats or not.
TEST(Switch, OnePortCannotHoldTheTableWithResultsItNeverAcknowledges) {
  Rig r(3);  // the default table: 256 buffers, 2 s, 1 s
  CollUp hog;
  hog.key = RHN_AREA_KEY(0, 0);
  hog.nnodes = 1;
  hog.data = {1};
  CollUp job;
  job.key = RHN_AREA_KEY(0, 9);
  job.nnodes = 2;
  job.data = {2};
  uint32_t busy = 0, rounds = 0, most = 0;
  for (uint64_t t = 0; t <= 10'000'000'000; t += 500'000'000, rounds++) {
    r.sw.tick(t);
    for (uint32_t seg = 0; seg < 256; seg++) {
      hog.seg = seg;
      r.sw.ingress(0, coll_frame(hog), t);  // never acknowledged
    }
    most = std::max(most, r.sw.coll().slots_in_use());
    job.seq = rounds;
    job.node = 1;
    r.sw.ingress(1, coll_frame(job), t);
    if (last_answer(r, 1).f.kind != RHN_COLL_FRAME_HELD) {
      busy++;
      continue;
    }
    job.node = 2;
    r.sw.ingress(2, coll_frame(job), t);
    for (uint16_t n = 1; n <= 2; n++) {
      const CollAnswer a = last_answer(r, n);
      EXPECT_EQ(a.f.kind, RHN_COLL_FRAME_DOWN);
      EXPECT_EQ(a.data, (std::vector<int32_t>{4}));
      CollUp ack = job;
      ack.kind = RHN_COLL_FRAME_ACK;
      ack.data.clear();
      ack.node = n;
      r.sw.ingress(n, coll_frame(ack), t);
    }
  }
  EXPECT_EQ(busy, 0u) << "the other job heard BUSY in " << busy << " of "
                      << rounds << " rounds";
  EXPECT_LE(most, rhinet::fabric::CollReducer::kPortShare)
      << "port 0 held " << most << " buffers";
  EXPECT_GT(r.sw.coll().counters().over_share, 0u);
}

// A complete buffer whose result is never acknowledged lives a bounded
// time from its completion: repeats of an UP get the DOWN again but do
// not keep it.
TEST(Switch, AResultLivesABoundedTimeHoweverOftenItIsAskedFor) {
  Rig r(2);
  CollUp u;
  u.nnodes = 1;
  u.data = {3};
  for (uint64_t t = 0; t < 2'000'000'000; t += 500'000'000) {
    r.sw.ingress(0, coll_frame(u), t);
    EXPECT_EQ(last_answer(r, 0).f.kind, RHN_COLL_FRAME_DOWN) << t;
  }
  EXPECT_EQ(r.got(0), 4u);
  EXPECT_EQ(r.sw.coll().counters().repeats, 3u);
  EXPECT_EQ(r.sw.next_deadline_ns(), 2'000'000'000u);
  r.sw.tick(1'999'999'999);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
  r.sw.tick(2'000'000'000);
  EXPECT_EQ(r.sw.coll().slots_in_use(), 0u);
  EXPECT_EQ(r.sw.coll().counters().stale, 1u);
}

// The stall reclaim takes complete buffers too: results nobody
// acknowledged for the stall time give way to a segment that needs a
// buffer (their contributors hear nothing: they have their DOWN or
// failed).
TEST(Switch, UnacknowledgedResultsGiveWayAfterTheStallTime) {
  Rig r(5);
  r.sw.configure_coll(4, 10'000'000'000, 1'000'000'000);
  CollUp one;
  one.nnodes = 1;
  one.data = {1};
  CollUp job;
  job.key = RHN_AREA_KEY(3, 3);
  job.nnodes = 2;
  job.data = {5};
  job.node = 4;
  for (uint64_t t = 0; t <= 1'000'000'000; t += 500'000'000) {
    for (uint16_t n = 0; n < 4; n++) {  // each its one buffer, at its share
      one.node = n;
      one.seg = n;
      r.sw.ingress(n, coll_frame(one), t);
      EXPECT_EQ(last_answer(r, n).f.kind, RHN_COLL_FRAME_DOWN);
    }
    r.sw.ingress(4, coll_frame(job), t);
    EXPECT_EQ(last_answer(r, 4).f.kind,
              t < 1'000'000'000 ? RHN_COLL_FRAME_BUSY : RHN_COLL_FRAME_HELD)
        << t;
  }
  EXPECT_EQ(r.sw.coll().counters().stalled, 1u);
  EXPECT_EQ(last_answer(r, 0).f.kind, RHN_COLL_FRAME_DOWN);
}

// A port speaks for its own node only: a partial claiming another
// node's ID is dropped (counted as spoofed), neither contributing in that
// node's name nor bringing its sender the result; nor can it acknowledge
// for another node.
TEST(Switch, ACollectiveFrameClaimingAnotherNodeIsDropped) {
  Rig r(3);
  CollUp u;
  u.nnodes = 2;  // nodes 1 and 2
  u.node = 1;
  u.data = {10};
  r.sw.ingress(1, coll_frame(u), 0);
  EXPECT_EQ(last_answer(r, 1).f.kind, RHN_COLL_FRAME_HELD);
  CollUp fake = u;  // port 0 claims to be node 2
  fake.node = 2;
  fake.data = {1000};
  r.sw.ingress(0, coll_frame(fake), 0);
  EXPECT_EQ(r.got(0), 0u) << "port 0 got an answer in node 2's name";
  EXPECT_EQ(r.got(1), 1u) << "node 1 heard of port 0's partial";
  EXPECT_EQ(port_stat(r, 0, "spoofed"), 1u);
  u.node = 2;  // the real node 2
  u.data = {20};
  r.sw.ingress(2, coll_frame(u), 0);
  for (uint16_t n = 1; n <= 2; n++) {
    const CollAnswer a = last_answer(r, n);
    EXPECT_EQ(a.f.kind, RHN_COLL_FRAME_DOWN) << n;
    EXPECT_EQ(a.data, (std::vector<int32_t>{30})) << n;
  }
  EXPECT_EQ(r.got(0), 0u);
  // Nor can port 0 acknowledge in their names.
  CollUp ack = u;
  ack.kind = RHN_COLL_FRAME_ACK;
  ack.data.clear();
  for (uint16_t n = 1; n <= 2; n++) {
    ack.node = n;
    r.sw.ingress(0, coll_frame(ack), 0);
  }
  EXPECT_EQ(r.sw.coll().slots_in_use(), 1u);
  EXPECT_EQ(port_stat(r, 0, "spoofed"), 3u);
}

// The reducer alone (the simulator's switch uses it so): node i is on
// port i, and a frame claiming another node is dropped as untrusted.
TEST(Switch, TheReducerTakesTheContributorFromThePort) {
  rhinet::fabric::CollReducer red;
  std::map<unsigned, std::vector<std::vector<uint8_t>>> out;
  auto sink = [&](unsigned port, std::span<const uint8_t> f) {
    out[port].emplace_back(f.begin(), f.end());
  };
  CollUp u;
  u.nnodes = 2;
  u.node = 1;
  u.data = {1};
  red.ingress(1, coll_frame(u), 0, sink);
  u.node = 2;  // on port 0
  red.ingress(0, coll_frame(u), 0, sink);
  EXPECT_EQ(out[0].size(), 0u);
  EXPECT_EQ(red.counters().malformed, 1u);
  EXPECT_EQ(red.counters().ups, 1u);
}
