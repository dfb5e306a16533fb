// SPDX-License-Identifier: BSD-2-Clause
// Per-user shares (accounts): every NIC table that users fill with values
// of their choosing limits one user's contexts together, not only each
// context, and the firmware-message table limits each family and each
// user: two processes of one user cannot take what another user needs,
// and one family's messages stuck behind a silent peer leave room for the
// others'.
#include "engine/shares.h"
#include "ops/tag/tag_state.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

using Ep = ContextEp;

Completion run(SimCluster& c, Ep& e, const SendWr& wr) {
  if (!e.qp->post_send(wr)) {
    Completion none;
    none.status = 0xff;
    return none;
  }
  return wait_one(c, *e.cq, 200'000'000);
}

// CREATE_CONTEXT names an account below RHN_MAX_ACCOUNTS, reserved 0.
TEST(Shares, CreateContextChecksTheAccount) {
  SimCluster c;
  ASSERT_TRUE(c.all_up());
  SimDriver& d = *c.node(0).driver;
  EXPECT_EQ(d.create_context(5, RHN_MAX_ACCOUNTS).status, RHN_ADMIN_BAD_PARAM);
  rhn_admin_cmd cmd{};
  cmd.hdr.opcode = RHN_ADMIN_CREATE_CONTEXT;
  cmd.hdr.context = 6;
  cmd.u.create_context.account = 1;
  cmd.u.create_context.reserved = 1;
  EXPECT_EQ(d.exec(cmd).status, RHN_ADMIN_BAD_PARAM);
  EXPECT_TRUE(d.create_context(7, RHN_MAX_ACCOUNTS - 1).ok());
  EXPECT_TRUE(d.create_context(8, 0).ok());  // the kernel's account
}

// Two processes (contexts) of one user on a member's NIC: the lock records
// (sync_holds = 16, 8 per context, 8 per user) they take together stop at
// the user's share; another user's process still gets its record.
TEST(Shares, TwoProcessesOfOneUserShareTheLockRecords) {
  ClusterConfig cfg;
  cfg.tweak = [](uint16_t, fw::EngineConfig& e) {
    e.sync.holds = 16;
    e.sync.context_share = 128;
  };
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  constexpr uint32_t kUser = 40, kOther = 41;
  Ep mgr = make_context_ep(c, 0);
  Ep a1 = make_context_ep(c, 1, kUser), a2 = make_context_ep(c, 1, kUser);
  Ep b = make_context_ep(c, 1, kOther);
  ASSERT_TRUE(mgr.qp && a1.qp && a2.qp && b.qp);
  uint32_t granted = 0;
  for (uint64_t id = 0; id < 8; id++) {
    const Completion x = run(c, a1, sync_wr(id, RHN_OP_LOCK, mgr, id));
    ASSERT_TRUE(x.ok()) << id << " " << describe(x);
    granted++;
  }
  // The user's second process: its context share is untouched, the
  // user's is not.
  for (uint64_t id = 8; id < 16; id++) {
    const Completion x = run(c, a2, sync_wr(id, RHN_OP_LOCK, mgr, id));
    if (x.ok()) {
      granted++;
    } else {
      EXPECT_EQ(x.status, RHN_CQE_GENERAL_ERR) << describe(x);
      EXPECT_EQ(x.vendor_err, RHN_SYN_BUSY) << describe(x);
    }
  }
  EXPECT_LE(granted, 8u) << "one user's two processes took " << granted
                         << " of 16 records";
  const Completion y = run(c, b, sync_wr(1, RHN_OP_LOCK, mgr, 100));
  EXPECT_TRUE(y.ok()) << "another user: " << describe(y);
  // A record the user gives back is the user's again.
  ASSERT_TRUE(run(c, a1, sync_wr(20, RHN_OP_UNLOCK, mgr, 0)).ok());
  const Completion z = run(c, a2, sync_wr(21, RHN_OP_LOCK, mgr, 200));
  EXPECT_TRUE(z.ok()) << describe(z);
}

// The same on the manager's side: two manager endpoints of one user hold
// together at most the user's share of the lock table (sync_locks = 16);
// another user's manager still gets its locks.
TEST(Shares, TwoManagersOfOneUserShareTheLockTable) {
  ClusterConfig cfg;
  cfg.tweak = [](uint16_t, fw::EngineConfig& e) {
    e.sync.locks = 16;
    e.sync.context_share = 128;
  };
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  constexpr uint32_t kUser = 50, kOther = 51;
  Ep m1 = make_context_ep(c, 0, kUser), m2 = make_context_ep(c, 0, kUser);
  Ep other = make_context_ep(c, 0, kOther);
  Ep a = make_context_ep(c, 1), b = make_context_ep(c, 1);
  ASSERT_TRUE(m1.qp && m2.qp && other.qp && a.qp && b.qp);
  for (uint64_t id = 0; id < 8; id++)
    ASSERT_TRUE(run(c, a, sync_wr(id, RHN_OP_LOCK, m1, id)).ok()) << id;
  // m2's LOCK is refused BUSY and sent again while the user holds its
  // share: no grant within 5 ms.
  ASSERT_TRUE(a.qp->post_send(sync_wr(8, RHN_OP_LOCK, m2, 8)));
  const auto early = c.wait_cqes(*a.cq, 1, 5'000'000);
  EXPECT_TRUE(early.empty()) << "the user's second manager took a lock "
                                "beyond the user's share: "
                             << describe(early);
  const Completion y = run(c, b, sync_wr(1, RHN_OP_LOCK, other, 1));
  EXPECT_TRUE(y.ok()) << "another user's manager: " << describe(y);
}

constexpr uint32_t kComm = RHN_AREA_KEY(0, 9);

// An allreduce of one int64 by two ranks, one on each of nodes 0 and 1.
struct TwoRanks {
  DatagramNode r[2];
  bool make(SimCluster& c) {
    for (uint16_t n = 0; n < 2; n++) {
      r[n] = make_datagram_node(c, n, RHN_QP_ENDPOINT, 0,
                                {.cq_log_depth = 8, .buf_bytes = 4096});
      if (!r[n].qp) return false;
    }
    for (auto& k : r)
      for (uint16_t m = 0; m < 2; m++) {
        rhn_mcast_dest d{};
        d.node = m;
        d.qpn = r[m].qp->qpn();
        k.buf.buf.write(256 + 8u * m, &d, 8);
      }
    return true;
  }
  bool post(uint64_t value_base) {
    for (uint16_t n = 0; n < 2; n++) {
      const uint64_t v = value_base + n;
      r[n].buf.buf.write(0, &v, 8);
      SendWr wr;
      wr.wr_id = n;
      wr.opcode = RHN_OP_COLLECTIVE;
      wr.flags = RHN_WQE_F_SIGNALED;
      wr.remote_key = kComm;
      rhn_wqe_coll& x = wr.coll;
      x.op = RHN_COLL_ALLREDUCE;
      x.reduce = RHN_COLL_SUM;
      x.type = RHN_COLL_INT64;
      x.rank = n;
      x.nranks = 2;
      x.length = 8;
      x.send_addr = r[n].buf.va(0);
      x.send_lkey = r[n].buf.key();
      x.recv_addr = r[n].buf.va(64);
      x.recv_lkey = r[n].buf.key();
      x.members_addr = r[n].buf.va(256);
      x.members_lkey = r[n].buf.key();
      if (!r[n].qp->post_send(wr)) return false;
    }
    return true;
  }
};

// Node 2 stops answering. The kernel's probes of it (one family) hold
// their firmware messages until node 2 is declared dead (half a second
// and more of retries); they cannot take the whole table
// (fw_messages = 16): a collective between nodes 0 and 1 (another
// family) still gets its messages out meanwhile.
TEST(Shares, OneFamilyStuckOnASilentPeerLeavesRoomForOthers) {
  ClusterConfig cfg;
  cfg.nodes = 3;
  cfg.tweak = [](uint16_t, fw::EngineConfig& e) { e.fw_messages = 16; };
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  TwoRanks t;
  ASSERT_TRUE(t.make(c));
  FaultConfig silent;
  silent.loss = 1.0;
  c.fabric().set_port_faults(2, silent);
  SimDriver& d = *c.node(0).driver;
  uint32_t accepted = 0;
  for (int i = 0; i < 32; i++)
    if (d.exec_handle(RHN_ADMIN_PROBE_NODE, 0, 2).ok()) accepted++;
  EXPECT_LT(accepted, 16u) << "the probes took every firmware message";
  ASSERT_TRUE(t.post(1000));
  for (uint16_t n = 0; n < 2; n++) {
    const Completion x = wait_one(c, *t.r[n].cq, 50'000'000);
    EXPECT_TRUE(x.ok()) << "rank " << n << ": " << describe(x);
    uint64_t sum = 0;
    std::memcpy(&sum, t.r[n].buf.buf.bytes(64, 8).data(), 8);
    EXPECT_EQ(sum, 2001u) << "rank " << n;
  }
  c.fabric().clear_port_faults(2);
}

// Shares of 8 contexts placed in a card memory of their own.
struct PlacedShares {
  PlacedShares() {
    shares.place(8, mem);
    EXPECT_FALSE(mem.exhausted());
  }
  std::vector<uint64_t> on_card = std::vector<uint64_t>(1 << 16);
  fw::CardMemory mem{on_card.data(), on_card.size() * sizeof(uint64_t)};
  fw::Shares shares;
};

// The accounting every table uses (engine/shares.h): a context stops at
// its share, its account's contexts together at the account's.
TEST(Shares, AccountingChecksContextAndAccount) {
  PlacedShares placed;
  fw::Shares& s = placed.shares;
  s.set_limit(fw::kResTagRecvs, 16, 6, 128);  // 6 a context, 8 a user
  s.bind(1, 3);
  s.bind(2, 3);
  s.bind(3, 4);
  uint32_t one = 0, two = 0;
  while (s.take(1, fw::kResTagRecvs)) one++;
  while (s.take(2, fw::kResTagRecvs)) two++;
  EXPECT_EQ(one, 6u);
  EXPECT_EQ(two, 2u);
  EXPECT_EQ(s.account_held(3, fw::kResTagRecvs), 8u);
  EXPECT_TRUE(s.take(3, fw::kResTagRecvs));
  s.give(1, fw::kResTagRecvs);
  EXPECT_TRUE(s.take(2, fw::kResTagRecvs));
  EXPECT_FALSE(s.take(2, fw::kResTagRecvs));
  // A context that comes back in another account takes what it still
  // holds along.
  s.bind(2, 5);
  EXPECT_EQ(s.account_held(3, fw::kResTagRecvs), 5u);
  EXPECT_EQ(s.account_held(5, fw::kResTagRecvs), 3u);
  EXPECT_TRUE(s.room(0xffffffffu, fw::kResTagRecvs));
}

// Giving back n entries at once (release_gated, for a run of quiet
// messages' send slots) is n single gives: context and account both,
// never below 0, nothing for a context beyond the table.
TEST(Shares, GivingSeveralAtOnceIsGivingEachOne) {
  PlacedShares placed;
  fw::Shares& s = placed.shares;
  s.set_limit(fw::kResTagRecvs, 32, 8, 256);
  s.bind(1, 3);
  s.bind(2, 3);
  for (int i = 0; i < 6; i++) ASSERT_TRUE(s.take(1, fw::kResTagRecvs));
  for (int i = 0; i < 2; i++) ASSERT_TRUE(s.take(2, fw::kResTagRecvs));
  s.give(1, fw::kResTagRecvs, 4);
  EXPECT_EQ(s.held(1, fw::kResTagRecvs), 2u);
  EXPECT_EQ(s.held(2, fw::kResTagRecvs), 2u);
  EXPECT_EQ(s.account_held(3, fw::kResTagRecvs), 4u);
  // More than the context holds: it and the account stop at 0 for it,
  // as that many single gives would leave them.
  s.give(1, fw::kResTagRecvs, 5);
  EXPECT_EQ(s.held(1, fw::kResTagRecvs), 0u);
  EXPECT_EQ(s.account_held(3, fw::kResTagRecvs), 0u);
  s.give(2, fw::kResTagRecvs, 0);
  EXPECT_EQ(s.held(2, fw::kResTagRecvs), 2u);
  s.give(0xffffffffu, fw::kResTagRecvs, 3);
  EXPECT_EQ(s.held(2, fw::kResTagRecvs), 2u);
  for (int i = 0; i < 8; i++) EXPECT_TRUE(s.take(1, fw::kResTagRecvs)) << i;
  EXPECT_FALSE(s.take(1, fw::kResTagRecvs));
}

}  // namespace
// Areas: two processes of one user register areas (IDs of their choice)
// until refused; together they hold no more than the user's share of the
// area table, and a process of another user still registers its own.
TEST(Shares, TwoProcessesOfOneUserShareTheAreaTable) {
  ClusterConfig cfg;
  cfg.nodes = 1;
  cfg.tweak = [](uint16_t, fw::EngineConfig& e) { e.max_areas = 64; };
  SimCluster c(cfg);
  ASSERT_TRUE(c.all_up());
  constexpr uint32_t kUser = 9, kOther = 10;
  auto a = c.node(0).open_context(kUser);
  auto b = c.node(0).open_context(kUser);
  auto o = c.node(0).open_context(kOther);
  ASSERT_TRUE(a->ok() && b->ok() && o->ok());
  Region ma = make_region(*a, 4096), mb = make_region(*b, 4096),
         mo = make_region(*o, 4096);
  uint32_t granted = 0;
  for (uint32_t id = 1; id <= 64; id++) {
    SimContext& ctx = id % 2 ? *a : *b;
    const Region& m = id % 2 ? ma : mb;
    if (ctx.register_area(RHN_AREA_KEY(0, id), m.mr, m.va(), 4096).ok())
      granted++;
  }
  EXPECT_LE(granted, 32u) << "one user's processes took " << granted
                          << " of 64 areas";
  EXPECT_GT(granted, 0u);
  for (uint32_t id = 1; id <= 8; id++)
    EXPECT_TRUE(
        o->register_area(RHN_AREA_KEY(0, id), mo.mr, mo.va(), 4096).ok())
        << "another user's area " << id;
  // Unregistering gives the share back.
  ASSERT_TRUE(a->driver().unregister_area(a->index(), RHN_AREA_KEY(0, 1)).ok());
  EXPECT_TRUE(
      a->register_area(RHN_AREA_KEY(0, 200), ma.mr, ma.va(), 4096).ok());
}

}  // namespace rhinet::test
