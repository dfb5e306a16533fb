// SPDX-License-Identifier: BSD-2-Clause
// Verbs UD multicast (ibv_attach_mcast): the attach table, joins of the
// switch's UD groups by management frames (robust under loss), datagrams
// to a group delivered to every attached QP whose Q_Key matches, filtered
// by the full MGID where two MGIDs share a group, and the trust model (the
// switch refuses joins of the administrator's groups).
#include <cstring>

#include "core/crc32c.h"
#include "test_helpers.h"
#include "transport/packet.h"

namespace rhinet::test {
namespace {

using Gid = std::array<uint8_t, 16>;

// ff0e::<id>: an IPv6 / IB multicast GID.
Gid mgid(uint32_t id) {
  Gid g{};
  g[0] = 0xff;
  g[1] = 0x0e;
  g[12] = uint8_t(id >> 24);
  g[13] = uint8_t(id >> 16);
  g[14] = uint8_t(id >> 8);
  g[15] = uint8_t(id);
  return g;
}

uint16_t group_of(const Gid& g) { return rhn_mgid_group(g.data()); }

const uint8_t (&raw(const Gid& g))[16] {
  return *reinterpret_cast<const uint8_t(*)[16]>(g.data());
}

constexpr uint32_t kQkey = 0x1234;

struct McastRig {
  explicit McastRig(size_t nodes, ClusterConfig cfg = {}) {
    cfg.nodes = nodes;
    c = std::make_unique<SimCluster>(cfg);
    ok = c->all_up();
    // Source GIDs for the GRHs every multicast send carries.
    for (size_t n = 0; n < nodes; n++) {
      uint8_t gid[16] = {0xfe, 0x80};
      gid[15] = uint8_t(n + 1);
      ok = ok && c->node(n).driver->set_gid(0, gid).ok();
    }
  }
  DatagramNode qp(uint16_t node, uint32_t qkey = kQkey) {
    DatagramNode d = make_datagram_node(*c, node, RHN_QP_UD, qkey);
    if (d.qp)
      for (uint64_t i = 0; i < 4; i++)
        d.qp->post_recv(100 + i, {d.buf.sge(i * 8192, 8192)});
    return d;
  }
  AdminResult attach(uint16_t node, DatagramNode& d, const Gid& g,
                     bool on = true) {
    return c->node(node).driver->attach_mcast(d.ctx->index(), d.qp->qpn(),
                                              raw(g), on);
  }
  SendWr wr(DatagramNode& from, const Gid& g, uint32_t len,
            uint32_t qkey = kQkey) {
    SendWr w = send_wr(1, {from.buf.sge(0, len)});
    w.flags |= RHN_WQE_F_GRH;
    w.dst_node = group_of(g);
    w.dst_qpn = RHN_WIRE_QPN_MASK;
    w.qkey = qkey;
    std::memcpy(w.grh.dgid, g.data(), 16);
    w.grh.sgid_index = 0;
    w.grh.hop_limit = 1;
    return w;
  }
  // Sends and waits for the sender's CQE.
  Completion send(DatagramNode& from, const Gid& g, uint32_t len,
                  uint32_t qkey = kQkey) {
    EXPECT_TRUE(from.qp->post_send(wr(from, g, len, qkey)));
    return wait_one(*c, *from.cq);
  }
  std::vector<unsigned> members(const Gid& g) {
    return c->fabric().group_members(group_of(g));
  }
  // Joins and leaves answered everywhere (each node's unanswered count).
  bool settled() {
    c->run_for(200'000);
    return true;
  }
  std::unique_ptr<SimCluster> c;
  bool ok = false;
};

// Two MGIDs whose hashes land on one switch group, and one that does not.
std::pair<Gid, Gid> colliding_pair() {
  std::vector<Gid> seen(RHN_MCAST_UD_GROUPS, Gid{});
  std::vector<bool> used(RHN_MCAST_UD_GROUPS, false);
  for (uint32_t id = 1;; id++) {
    const Gid g = mgid(id);
    const uint16_t i = group_of(g) - RHN_NODE_MCAST_UD_FIRST;
    if (used[i]) return {seen[i], g};
    used[i] = true;
    seen[i] = g;
  }
}

TEST(UdMcast, GroupIdsAreHashesInTheUdSubRange) {
  for (uint32_t id = 0; id < 5000; id++) {
    const uint16_t g = group_of(mgid(id));
    EXPECT_GE(g, RHN_NODE_MCAST_UD_FIRST);
    EXPECT_LT(g, RHN_NODE_BROADCAST);
  }
  EXPECT_EQ(group_of(mgid(7)), group_of(mgid(7)));
  EXPECT_NE(group_of(mgid(7)), group_of(mgid(8)));
  // rdma_cm's RoCE MGIDs are IPv4-mapped multicast addresses.
  const uint8_t v4[16] = {0, 0, 0,    0,    0,   0, 0, 0,
                          0, 0, 0xff, 0xff, 239, 1, 2, 3};
  const uint8_t v4_unicast[16] = {0, 0, 0,    0,    0,  0, 0, 0,
                                  0, 0, 0xff, 0xff, 10, 0, 0, 1};
  EXPECT_TRUE(rhn_gid_is_mcast(v4));
  EXPECT_FALSE(rhn_gid_is_mcast(v4_unicast));
  EXPECT_TRUE(rhn_gid_is_mcast(mgid(1).data()));
}

// Two QPs on node 1 and one on node 2 attached to M receive a datagram
// sent to M by node 0; a QP attached to an MGID of another group and one
// with another Q_Key do not. The switch's group holds ports 1 and 2.
TEST(UdMcast, DatagramReachesEveryAttachedQp) {
  McastRig r(3);
  ASSERT_TRUE(r.ok);
  const Gid m = mgid(1);
  Gid other = mgid(2);
  for (uint32_t id = 3; group_of(other) == group_of(m); id++) other = mgid(id);
  DatagramNode s = r.qp(0);
  DatagramNode a1 = r.qp(1), a2 = r.qp(1), b = r.qp(2);
  DatagramNode elsewhere = r.qp(2);
  DatagramNode wrong_qkey = r.qp(1, kQkey + 1);
  ASSERT_TRUE(s.qp && a1.qp && a2.qp && b.qp && elsewhere.qp && wrong_qkey.qp);
  CounterSnap n1(r.c->node(1)), n2(r.c->node(2));
  ASSERT_TRUE(r.attach(1, a1, m).ok());
  ASSERT_TRUE(r.attach(1, a2, m).ok());
  ASSERT_TRUE(r.attach(1, a2, m).ok());  // twice: still one entry
  ASSERT_TRUE(r.attach(2, b, m).ok());
  ASSERT_TRUE(r.attach(2, elsewhere, other).ok());
  ASSERT_TRUE(r.attach(1, wrong_qkey, m).ok());
  r.settled();
  EXPECT_EQ(r.members(m), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(r.members(other), (std::vector<unsigned>{2}));
  EXPECT_EQ(n1.delta(RHN_CNT_MCAST_ATTACHES), 3u);
  EXPECT_EQ(n1.delta(RHN_CNT_MCAST_MGMT_ANSWERS), 1u);  // one join per group
  EXPECT_EQ(n2.delta(RHN_CNT_MCAST_MGMT_ANSWERS), 2u);

  s.buf.buf.fill_pattern(9);
  ASSERT_TRUE(r.send(s, m, 300).ok());
  for (DatagramNode* d : {&a1, &a2, &b}) {
    Completion rc = wait_one(*r.c, *d->cq);
    ASSERT_TRUE(rc.ok()) << describe(rc);
    EXPECT_EQ(rc.byte_len, 300u + RHN_UD_GRH_LEN);
    EXPECT_TRUE(rc.flags & RHN_CQE_F_GRH);
    EXPECT_EQ(rc.src_node, 0u);
    EXPECT_EQ(rc.src_qpn, s.qp->qpn());
    EXPECT_EQ(d->buf.buf.bytes(RHN_UD_GRH_LEN, 300), s.buf.buf.bytes(0, 300));
    // The GRH names the group's GID.
    const auto grh = d->buf.buf.bytes(24, 16);
    EXPECT_EQ(std::vector<uint8_t>(grh.begin(), grh.end()),
              std::vector<uint8_t>(m.begin(), m.end()));
  }
  r.c->run_for(1'000'000);
  EXPECT_TRUE(elsewhere.cq->poll().empty());
  EXPECT_TRUE(wrong_qkey.cq->poll().empty());
  EXPECT_EQ(n1.delta(RHN_CNT_UD_MCAST_DELIVERED), 3u);  // a1, a2, wrong_qkey
  EXPECT_EQ(n1.delta(RHN_CNT_UD_DROPS), 1u);            // the Q_Key
  EXPECT_EQ(n2.delta(RHN_CNT_UD_MCAST_DELIVERED), 1u);
  // The sender's node is no member: nothing looped back.
  EXPECT_TRUE(s.cq->poll().empty());
}

// A sender attached itself gets its copy (IB multicast loopback), as does
// every other QP of its node attached to the MGID.
TEST(UdMcast, AttachedQpsOfTheSendingNodeGetACopy) {
  McastRig r(2);
  ASSERT_TRUE(r.ok);
  const Gid m = mgid(11);
  DatagramNode s = r.qp(0), local = r.qp(0), remote = r.qp(1);
  ASSERT_TRUE(r.attach(0, s, m).ok());
  ASSERT_TRUE(r.attach(0, local, m).ok());
  ASSERT_TRUE(r.attach(1, remote, m).ok());
  r.settled();
  ASSERT_TRUE(r.send(s, m, 64).ok());
  EXPECT_TRUE(wait_one(*r.c, *local.cq).ok());
  EXPECT_TRUE(wait_one(*r.c, *remote.cq).ok());
  Completion own = wait_one(*r.c, *s.cq);  // its receive CQ is its send CQ
  EXPECT_TRUE(own.ok());
  EXPECT_FALSE(own.is_send());
}

// Two MGIDs on one switch group: a node attached to one of them gets the
// other's datagrams from the switch and filters them by the GRH's GID.
TEST(UdMcast, MgidsSharingAGroupAreFilteredByMgid) {
  McastRig r(3);
  ASSERT_TRUE(r.ok);
  const auto [m1, m2] = colliding_pair();
  ASSERT_EQ(group_of(m1), group_of(m2));
  ASSERT_NE(m1, m2);
  DatagramNode s = r.qp(0), x = r.qp(1), y = r.qp(1), z = r.qp(2);
  ASSERT_TRUE(r.attach(1, x, m1).ok());
  ASSERT_TRUE(r.attach(1, y, m2).ok());
  ASSERT_TRUE(r.attach(2, z, m2).ok());
  r.settled();
  EXPECT_EQ(r.members(m1), (std::vector<unsigned>{1, 2}));
  CounterSnap n2(r.c->node(2));
  ASSERT_TRUE(r.send(s, m1, 32).ok());
  EXPECT_TRUE(wait_one(*r.c, *x.cq).ok());
  r.c->run_for(1'000'000);
  EXPECT_TRUE(y.cq->poll().empty());
  EXPECT_TRUE(z.cq->poll().empty());
  EXPECT_EQ(n2.delta(RHN_CNT_UD_MCAST_FILTERED), 1u);
  ASSERT_TRUE(r.send(s, m2, 32).ok());
  EXPECT_TRUE(wait_one(*r.c, *y.cq).ok());
  EXPECT_TRUE(wait_one(*r.c, *z.cq).ok());
  EXPECT_TRUE(x.cq->poll().empty());
}

// Detaching stops delivery; the node's last detach of a group takes its
// port out of the switch's group, earlier ones do not.
TEST(UdMcast, DetachStopsDeliveryAndTheLastOneLeavesTheGroup) {
  McastRig r(3);
  ASSERT_TRUE(r.ok);
  const Gid m = mgid(21);
  DatagramNode s = r.qp(0), a1 = r.qp(1), a2 = r.qp(1), b = r.qp(2);
  ASSERT_TRUE(r.attach(1, a1, m).ok());
  ASSERT_TRUE(r.attach(1, a2, m).ok());
  ASSERT_TRUE(r.attach(2, b, m).ok());
  r.settled();
  EXPECT_EQ(r.members(m), (std::vector<unsigned>{1, 2}));
  // Not attached: refused.
  EXPECT_EQ(r.attach(2, b, mgid(22), false).status, RHN_ADMIN_BAD_HANDLE);
  ASSERT_TRUE(r.attach(1, a1, m, false).ok());
  ASSERT_TRUE(r.attach(2, b, m, false).ok());
  EXPECT_EQ(r.attach(2, b, m, false).status, RHN_ADMIN_BAD_HANDLE);
  r.settled();
  EXPECT_EQ(r.members(m), (std::vector<unsigned>{1}));  // a2 still there
  CounterSnap n2(r.c->node(2));
  ASSERT_TRUE(r.send(s, m, 16).ok());
  EXPECT_TRUE(wait_one(*r.c, *a2.cq).ok());
  r.c->run_for(1'000'000);
  EXPECT_TRUE(a1.cq->poll().empty());
  EXPECT_TRUE(b.cq->poll().empty());
  // The switch no longer sends node 2 the group's frames.
  EXPECT_EQ(n2.delta(RHN_CNT_UD_MCAST_FILTERED) +
                n2.delta(RHN_CNT_UD_MCAST_DELIVERED) +
                n2.delta(RHN_CNT_RX_PACKETS),
            0u);
  ASSERT_TRUE(r.attach(1, a2, m, false).ok());
  r.settled();
  EXPECT_TRUE(r.members(m).empty());
}

// A QP destroyed while attached leaves the table (its context's share
// comes back) and, the node's last one, the switch's group.
TEST(UdMcast, DestroyedQpIsDetached) {
  ClusterConfig cfg;
  cfg.engine.ud_mcast.attach = 8;
  cfg.engine.ud_mcast.context_share = 64;  // 2 entries a context
  McastRig r(2, cfg);
  ASSERT_TRUE(r.ok);
  DatagramNode s = r.qp(0), a = r.qp(1);
  ASSERT_TRUE(r.attach(1, a, mgid(31)).ok());
  ASSERT_TRUE(r.attach(1, a, mgid(32)).ok());
  EXPECT_EQ(r.attach(1, a, mgid(33)).status, RHN_ADMIN_NO_RESOURCES);
  r.settled();
  EXPECT_EQ(r.members(mgid(31)), (std::vector<unsigned>{1}));
  const uint32_t ctx = a.ctx->index();
  ASSERT_TRUE(r.c->node(1)
                  .driver->destroy(RHN_ADMIN_DESTROY_QP, ctx, a.qp->qpn())
                  .ok());
  a.qp.reset();
  r.settled();
  EXPECT_TRUE(r.members(mgid(31)).empty());
  EXPECT_TRUE(r.members(mgid(32)).empty());
  CounterSnap n1(r.c->node(1));
  ASSERT_TRUE(r.send(s, mgid(31), 8).ok());
  r.c->run_for(1'000'000);
  EXPECT_EQ(n1.delta(RHN_CNT_RX_PACKETS), 0u);
  // The context's share is free again.
  QpInit qi;
  qi.type = RHN_QP_UD;
  qi.send_cq = a.cq.get();
  auto q2 = a.ctx->create_qp(qi);
  ASSERT_TRUE(q2);
  for (uint32_t id : {34u, 35u})
    EXPECT_TRUE(
        r.c->node(1).driver->attach_mcast(ctx, q2->qpn(), raw(mgid(id))).ok());
}

// The attach table is bounded and shared by share: a context that used
// its share is refused (NO_RESOURCES) while others still attach, until the
// table itself is full. Bad requests get clear errors.
TEST(UdMcast, AttachTableIsBoundedPerContext) {
  ClusterConfig cfg;
  cfg.engine.ud_mcast.attach = 8;
  cfg.engine.ud_mcast.context_share = 64;  // 2 entries a context
  McastRig r(2, cfg);
  ASSERT_TRUE(r.ok);
  rhn_device_attr attr{};
  ASSERT_TRUE(r.c->node(1).driver->query_device(&attr).ok());
  EXPECT_EQ(attr.max_mcast_attach, 8u);
  EXPECT_EQ(attr.mcast_attach_per_context, 2u);
  EXPECT_TRUE(r.c->node(1).driver->reg32(RHN_REG_CAPS) & RHN_CAP_UD_MCAST);
  std::vector<DatagramNode> users;
  for (int i = 0; i < 5; i++) users.push_back(r.qp(1));
  CounterSnap n1(r.c->node(1));
  uint32_t id = 100;
  // The greedy one.
  EXPECT_TRUE(r.attach(1, users[0], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[0], mgid(id++)).ok());
  EXPECT_EQ(r.attach(1, users[0], mgid(id++)).status, RHN_ADMIN_NO_RESOURCES);
  // Another process is not starved.
  EXPECT_TRUE(r.attach(1, users[1], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[2], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[2], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[3], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[3], mgid(id++)).ok());
  EXPECT_TRUE(r.attach(1, users[1], mgid(id++)).ok());  // 8 of 8
  EXPECT_EQ(r.attach(1, users[4], mgid(id++)).status, RHN_ADMIN_NO_RESOURCES);
  EXPECT_EQ(n1.delta(RHN_CNT_MCAST_ATTACHES), 8u);
  ASSERT_TRUE(r.attach(1, users[1], mgid(103), false).ok());
  EXPECT_TRUE(r.attach(1, users[4], mgid(id++)).ok());

  // Not a multicast GID; not a UD QP; another context's QP.
  Gid unicast{};
  unicast[0] = 0xfe;
  unicast[1] = 0x80;
  EXPECT_EQ(r.attach(1, users[4], unicast).status, RHN_ADMIN_BAD_PARAM);
  RcPair rc = make_rc_pair(*r.c, 0, 1);
  EXPECT_EQ(
      r.c->node(1)
          .driver->attach_mcast(rc.ctx_b->index(), rc.qp_b->qpn(), raw(mgid(1)))
          .status,
      RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(r.c->node(1)
                .driver
                ->attach_mcast(users[0].ctx->index(), users[1].qp->qpn(),
                               raw(mgid(1)))
                .status,
            RHN_ADMIN_BAD_HANDLE);
}

// UD SENDs to groups: only the UD sub-range, and only with a GRH (the
// receivers filter by its GID).
TEST(UdMcast, SendsNeedAUdGroupAndAGrh) {
  McastRig r(2);
  ASSERT_TRUE(r.ok);
  DatagramNode s = r.qp(0);
  SendWr w = r.wr(s, mgid(5), 8);
  w.flags &= uint8_t(~RHN_WQE_F_GRH);
  ASSERT_TRUE(s.qp->post_send(w));
  Completion c = wait_one(*r.c, *s.cq);
  EXPECT_EQ(c.status, RHN_CQE_LOC_QP_OP_ERR) << describe(c);
  DatagramNode s2 = r.qp(0);
  w = r.wr(s2, mgid(5), 8);
  w.dst_node = RHN_NODE_MCAST_FIRST + 3;  // the administrator's
  ASSERT_TRUE(s2.qp->post_send(w));
  c = wait_one(*r.c, *s2.cq);
  EXPECT_EQ(c.status, RHN_CQE_LOC_QP_OP_ERR) << describe(c);
}

std::vector<uint8_t> mgmt_frame(uint16_t src, uint8_t op, uint16_t group) {
  std::vector<uint8_t> f(RHN_PKT_HDR_LEN + sizeof(rhn_mgmt_msg));
  rhn_mgmt_msg m{};
  m.op = op;
  m.group = group;
  m.cookie = 77;
  std::memcpy(f.data() + RHN_PKT_HDR_LEN, &m, sizeof m);
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_MGMT;
  h.dst_node = RHN_NODE_BROADCAST;
  h.src_node = src;
  h.payload_len = sizeof m;
  fw::seal_packet(f.data(), h, nullptr, fw::crc32c(0, &m, sizeof m));
  return f;
}

// Trust model: a management frame cannot touch the administrator's
// groups (refused, counted, the pattern unchanged), and only the node
// wired to a port may send one there (another's is dropped as spoofed).
TEST(UdMcast, SwitchRefusesJoinsOfAdministratorGroups) {
  McastRig r(3);
  ASSERT_TRUE(r.ok);
  const uint16_t admin = RHN_NODE_MCAST_FIRST + 0x10;
  ASSERT_TRUE(r.c->fabric().set_group(admin, {0, 2}));
  EXPECT_FALSE(r.c->fabric().set_group(RHN_NODE_MCAST_UD_FIRST, {0}));
  CounterSnap n1(r.c->node(1));
  r.c->fabric().wire(1).transmit(mgmt_frame(1, RHN_MGMT_JOIN, admin));
  r.c->fabric().wire(1).transmit(mgmt_frame(1, RHN_MGMT_LEAVE, admin));
  r.c->run_for(100'000);
  EXPECT_EQ(r.c->fabric().counters().mgmt_refused, 2u);
  EXPECT_EQ(r.c->fabric().group_members(admin), (std::vector<unsigned>{0, 2}));
  // Claiming to be node 2 from port 1: dropped as spoofed, no port joins.
  const uint16_t ud = RHN_NODE_MCAST_UD_FIRST + 5;
  r.c->fabric().wire(1).transmit(mgmt_frame(2, RHN_MGMT_JOIN, ud));
  r.c->run_for(100'000);
  EXPECT_EQ(r.c->fabric().counters().spoofed, 1u);
  EXPECT_TRUE(r.c->fabric().group_members(ud).empty());
  // The NIC behind port 1 asked for none of it: the answers change nothing.
  EXPECT_EQ(n1.delta(RHN_CNT_MCAST_MGMT_ANSWERS), 0u);
}

// Joins and leaves converge on a fabric that loses, duplicates and
// reorders frames: the NIC sends again until the switch's answer says
// what it wants.
TEST(UdMcast, JoinsAndLeavesSurviveLoss) {
  McastRig r(3);
  ASSERT_TRUE(r.ok);
  FaultConfig f;
  f.loss = 0.5;
  f.duplicate = 0.2;
  f.reorder = 0.2;
  r.c->fabric().set_seed(7);
  r.c->fabric().set_faults(f);
  const Gid m = mgid(41);
  DatagramNode s = r.qp(0), a = r.qp(1), b = r.qp(2);
  CounterSnap n1(r.c->node(1)), n2(r.c->node(2));
  ASSERT_TRUE(r.attach(1, a, m).ok());
  ASSERT_TRUE(r.attach(2, b, m).ok());
  ASSERT_TRUE(r.c->run_until(
      [&] {
        return r.members(m) == std::vector<unsigned>{1, 2};
      },
      200'000'000));
  r.c->run_for(300'000'000);  // resends stop once answered
  EXPECT_EQ(n1.delta(RHN_CNT_MCAST_MGMT_ANSWERS), 1u);
  EXPECT_EQ(n2.delta(RHN_CNT_MCAST_MGMT_ANSWERS), 1u);
  const uint64_t sent =
      n1.delta(RHN_CNT_MCAST_MGMT_SENT) + n2.delta(RHN_CNT_MCAST_MGMT_SENT);
  EXPECT_GT(sent, 2u);  // some were lost and sent again
  CounterSnap later(r.c->node(1));
  r.c->run_for(300'000'000);
  EXPECT_EQ(later.delta(RHN_CNT_MCAST_MGMT_SENT), 0u);  // quiet once settled
  ASSERT_TRUE(r.attach(2, b, m, false).ok());
  ASSERT_TRUE(r.c->run_until(
      [&] { return r.members(m) == std::vector<unsigned>{1}; }, 200'000'000));
  r.c->run_for(300'000'000);
  EXPECT_EQ(r.members(m), (std::vector<unsigned>{1}));
  r.c->fabric().clear_faults();
  ASSERT_TRUE(r.send(s, m, 8).ok());
  EXPECT_TRUE(wait_one(*r.c, *a.cq).ok());
}

}  // namespace
}  // namespace rhinet::test
