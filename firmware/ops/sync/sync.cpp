// SPDX-License-Identifier: BSD-2-Clause
// ops/sync: locks and counting barriers between endpoints.
//
// Locks. A lock lives at its manager endpoint's NIC as the queue of its
// members in the order their LOCKs arrived; the NIC of each member keeps
// a record (a hold) of it. The LOCK of a free lock is granted at once
// (SYNC_RESP DONE); a later one is queued (QUEUED) and the manager tells
// the NIC of the member before it, the queue's tail until then
// (RHN_FW_LOCK_LINK). That NIC passes the lock straight to its successor
// when its endpoint UNLOCKs (RHN_FW_SYNC_DONE: one hop) and tells the
// manager so (UNLOCK with PASSED). An UNLOCK that left before its LINK
// arrived is answered QUEUED: its NIC passes the lock when the LINK comes
// and completes the UNLOCK then. The UNLOCKs of successive holders reach
// the manager in any order: an UNLOCK from a member means every member
// before it has passed the lock on, so they are marked released (and
// answered DONE when their UNLOCK comes); the lock is free when no member
// is left unreleased.
//
// Barriers. A round counts BARRIERs of one ID and count: the last to
// arrive is answered DONE, the others get SYNC_DONE; then the ID starts
// its next round. The manager keeps the nodes each ID has seen.
//
// Failures. A member's node that dies (or restarts) breaks its locks:
// every other member not released gets SYNC_DONE MEMBER_LOST (a waiting
// LOCK fails, a holder's UNLOCK fails later) and the lock is free; it
// fails the pending round it is in, or that its ID has seen it in. A
// manager endpoint that goes fails all of its locks' and rounds' members.
// A member endpoint that goes leaves its holds to its NIC (zombies),
// which releases the lock for it at once, or when it gets it. A manager
// node that dies fails the waits on it. Nodes are found dead by the
// channel, so while anything waits the NIC probes the nodes it depends
// on (the manager of a waiting member, the holder of a lock with
// waiters, the members of a pending round) every sync_probe_ns.
//
// Tables. IDs are chosen by users, so no user may decide where another's
// state goes: a lock or barrier ID takes any free slot (a FIFO of them),
// and a chain keyed by (manager QPN, its generation, ID) under a per-NIC
// secret finds it again. Each entry records its owner (the manager
// endpoint's context) and that endpoint's incarnation (its generation,
// unique on the NIC): lookups match the live one only, and an endpoint
// that goes takes its entries along. A context holds at most its share
// of each table. So a LOCK or BARRIER is refused (BUSY) only when its own
// context is at its share or the table is full; nobody else's IDs, within
// their shares, can make it so while there is room. A barrier ID with no
// round pending is forgotten only for a new ID of the same context.
// Members of locks and rounds come from one pool, holds from another
// (chained by a keyed hash of (QPN, ID)); both are charged the same way.
// Messages that find no firmware message free wait in order in bounded
// FIFOs.
#include "ops/sync/sync.h"

#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/sync/sync_detail.h"

namespace rhinet::fw {

using namespace sync_detail;

namespace sync_detail {

bool sync_op(uint8_t opcode) {
  return opcode == RHN_OP_LOCK || opcode == RHN_OP_UNLOCK ||
         opcode == RHN_OP_BARRIER;
}

uint32_t qpn_of(const Impl& m, const QpObj& qp) {
  return static_cast<uint32_t>(&qp - m.qps.data());
}

uint32_t share_of(uint32_t total, uint32_t share) {
  return max<uint32_t>(1, static_cast<uint32_t>(uint64_t{total} * share / 256));
}

// The chains' hash (the NIC's keyed table hash, core/keyed_hash.h). Only
// how long a lookup walks depends on it, never whether an ID gets a slot.
uint64_t keyed_hash(const Impl& m, uint64_t a, uint64_t b) {
  return m.table_hash(a, b);
}

uint32_t bucket_of(const Impl& m, uint64_t table, uint32_t qpn, uint32_t gen,
                   uint64_t id, uint32_t mask) {
  return static_cast<uint32_t>(
             keyed_hash(m, table << 56 | uint64_t{gen} << 24 | qpn, id)) &
         mask;
}

// Wakes the probe timer (it sleeps while nothing waits).
void arm_probe(Impl& m) {
  if (m.sync.next_probe == UINT64_MAX)
    m.sync.next_probe = m.now + m.cfg.sync_probe_ns;
}

// `context`: on whose behalf (its firmware-message share).
bool post_done(Impl& m, uint16_t node, uint32_t src, uint32_t msn, uint64_t id,
               uint8_t syndrome, uint32_t context) {
  rhn_fw_sync_done d{};
  d.qpn = src;
  d.msn = msn;
  d.id = id;
  d.syndrome = syndrome;
  return m.fw_post(node, RHN_FW_SYNC_DONE, bytes_of(d), FwOwner::kSync,
                   kCookieOther, context) != kNone;
}

// ---- A member's NIC: holds.

uint32_t hold_bucket(const Impl& m, uint32_t qpn, uint64_t id) {
  return bucket_of(m, kKeyHold, qpn, 0, id, m.sync.hold_mask);
}

void free_hold(Impl& m, uint32_t i) {
  SyncTables& t = m.sync;
  SyncHold& h = t.holds[i];
  uint32_t* link = &t.hold_buckets[hold_bucket(m, h.qpn, h.id)];
  while (*link != i) link = &t.holds[*link].next;
  *link = h.next;
  if (h.context != kNone) m.shares.give(h.context, kResSyncHolds);
  t.holds_used--;
  h = SyncHold{};
  t.free_holds.push(i);
}

// Over: freed once the messages it owes have been posted.
void finish_hold(Impl& m, uint32_t i) {
  SyncHold& h = m.sync.holds[i];
  h.state = HS::kDone;
  if (!h.grant_owed && !h.unlock_owed && !h.queued) free_hold(m, i);
}

// The operation `opcode` with `msn` of endpoint qpn is live.
Inflight* live_op(Impl& m, uint32_t qpn, uint32_t gen, uint8_t opcode,
                  uint32_t msn) {
  QpObj& qp = m.qps[qpn];
  if (!qp.valid || qp.gen != gen) return nullptr;
  for (uint32_t k = qp.inflight_head; k != qp.inflight_tail; k++) {
    Inflight& e = m.entry(qpn, k);
    if (e.msn == msn && e.opcode == opcode && e.state != MsgState::kDone)
      return &e;
  }
  return nullptr;
}

void complete_op(Impl& m, uint32_t qpn, Inflight& e, uint8_t syndrome) {
  QpObj& qp = m.qps[qpn];
  if (qp.tx_active && &m.entry(qpn, qp.tx_entry) == &e) m.abort_tx(qp);
  if (syndrome != RHN_SYN_NONE) m.counters.add(RHN_CNT_SYNC_ERRORS);
  m.finish_entry(qpn, e,
                 syndrome == RHN_SYN_NONE ? uint8_t{RHN_CQE_SUCCESS}
                                          : uint8_t{RHN_CQE_REM_OP_ERR},
                 syndrome);
}

// A record whose operation ended without it (refused, flushed), or a
// zombie that never settled.
bool stale(Impl& m, const SyncHold& h) {
  if (h.state == HS::kFree || h.state == HS::kDone) return false;
  if (h.zombie) return m.now - h.since > kZombieStaleNs;
  const QpObj& qp = m.qps[h.qpn];
  if (!qp.valid || qp.gen != h.qp_gen) return true;
  switch (h.state) {
    case HS::kWaiting:
      return !live_op(m, h.qpn, h.qp_gen, RHN_OP_LOCK, h.lock_msn);
    case HS::kReleasing:
      return !h.grant_owed &&
             !live_op(m, h.qpn, h.qp_gen, RHN_OP_UNLOCK, h.unlock_msn);
    default:
      return false;
  }
}

void drop_if_stale(Impl& m, uint32_t i) {
  SyncHold& h = m.sync.holds[i];
  if (!stale(m, h)) return;
  h.grant_owed = h.unlock_owed = false;
  finish_hold(m, i);
}

// A record for endpoint (qpn, id), charged to `context` (kNone: to none,
// a zombie the NIC made for an endpoint that is gone).
uint32_t new_hold(Impl& m, uint32_t context, uint32_t qpn, uint64_t id) {
  SyncTables& t = m.sync;
  const bool charged = context != kNone;
  auto full = [&] {
    return t.free_holds.empty() ||
           (charged && !m.shares.room(context, kResSyncHolds));
  };
  if (full())
    for (uint32_t i = 0; i < t.holds.size(); i++) drop_if_stale(m, i);
  if (full()) return kNone;
  const uint32_t i = t.free_holds.front();
  t.free_holds.pop();
  SyncHold& h = t.holds[i];
  h = SyncHold{};
  h.state = HS::kWaiting;
  h.qpn = qpn;
  h.id = id;
  h.context = context;
  h.since = m.now;
  uint32_t& head = t.hold_buckets[hold_bucket(m, qpn, id)];
  h.next = head;
  head = i;
  if (charged) m.shares.charge(context, kResSyncHolds);
  t.holds_used++;
  return i;
}

void owe_hold(Impl& m, uint32_t i) {
  SyncHold& h = m.sync.holds[i];
  if (h.queued) return;
  h.queued = true;
  m.sync.holds_owed.push(i);  // one place per record: never full
}

// The successor gets the lock from us.
void pass_on(Impl& m, uint32_t i) {
  SyncHold& h = m.sync.holds[i];
  h.passed = true;
  m.counters.add(RHN_CNT_LOCK_GRANTS);
  if (post_done(m, h.succ_node, h.succ_src, h.succ_msn, h.id, RHN_SYN_NONE,
                h.context))
    return;
  h.grant_owed = true;
  owe_hold(m, i);
}

// The holder lets go: to its successor if it knows one, and its UNLOCK
// (with `msn`) tells the manager which.
void release(Impl& m, uint32_t i, uint32_t msn) {
  SyncHold& h = m.sync.holds[i];
  h.state = HS::kReleasing;
  h.unlock_msn = msn;
  h.passed = false;
  if (h.has_successor) pass_on(m, i);
  arm_probe(m);  // its manager is watched until it answers
}

rhn_wire_unlock unlock_payload(const SyncHold& h) {
  rhn_wire_unlock u{};
  if (h.passed) {
    u.flags = RHN_UNLOCK_F_PASSED;
    u.successor_node = h.succ_node;
    u.successor_src = h.succ_src;
    u.successor_msn = h.succ_msn;
  }
  return u;
}

// A zombie's UNLOCK, sent by the NIC in its endpoint's name (the answer
// comes back to no WQE: on_orphan_response).
bool send_unlock(Impl& m, const SyncHold& h) {
  Peer* p = m.peer_for(h.mgr_node);
  if (!p) return true;
  if (!m.room_for_request(*p)) return false;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_UNLOCK;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = h.mgr_qpn;
  op.src_qpn = h.qpn | uint32_t{h.incarnation} << RHN_WIRE_INCARNATION_SHIFT;
  op.msn = h.unlock_msn;
  op.remote_addr = h.id;
  const rhn_wire_unlock u = unlock_payload(h);
  op.msg_len = sizeof(u);
  m.send_data(*p, op, bytes_of(u), false, kNone, 0, false);
  return true;
}

// The lock is (or becomes) the zombie's: it goes on at once.
void unlock_for(Impl& m, uint32_t i) {
  SyncHold& h = m.sync.holds[i];
  h.zombie = true;
  h.since = m.now;
  release(m, i, h.lock_msn);
  if (send_unlock(m, h)) return;
  h.unlock_owed = true;
  owe_hold(m, i);
}

bool run_holds_owed(Impl& m, uint32_t& budget) {
  SyncTables& t = m.sync;
  bool did = false;
  for (uint32_t n = t.holds_owed.size(); n && budget; n--) {
    const uint32_t i = t.holds_owed.front();
    t.holds_owed.pop();
    SyncHold& h = t.holds[i];
    h.queued = false;
    if (h.grant_owed && post_done(m, h.succ_node, h.succ_src, h.succ_msn, h.id,
                                  RHN_SYN_NONE, h.context))
      h.grant_owed = false;
    if (h.unlock_owed && send_unlock(m, h)) h.unlock_owed = false;
    if (h.grant_owed || h.unlock_owed) {
      owe_hold(m, i);  // its turn comes again
      continue;
    }
    budget--;
    did = true;
    if (h.state == HS::kDone) finish_hold(m, i);
  }
  return did;
}

Mine mine(const QpObj& qp, const DecodedWqe& w) {
  return {qp.gen, w.dst_node, w.dst_qpn & RHN_WIRE_QPN_MASK};
}

// A LOCK of endpoint qpn was granted: its record holds the lock.
void granted(Impl& m, uint32_t qpn, const Inflight& e, uint64_t id) {
  const QpObj& qp = m.qps[qpn];
  const Mine own{qp.gen, e.peer, e.dst_qpn & RHN_WIRE_QPN_MASK};
  uint32_t i = find_hold(m, qpn, id, [&](const SyncHold& h) {
    return own(h) && h.lock_msn == e.msn &&
           (h.state == HS::kWaiting || h.state == HS::kHeld);
  });
  if (i == kNone) {  // taken as stale meanwhile: made again
    i = new_hold(m, qp.context, qpn, id);
    if (i == kNone) {
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      return;
    }
    SyncHold& h = m.sync.holds[i];
    h.qp_gen = qp.gen;
    h.incarnation = qp.incarnation;
    h.mgr_node = e.peer;
    h.mgr_qpn = own.mgr_qpn;
    h.lock_msn = e.msn;
  }
  m.sync.holds[i].state = HS::kHeld;
}

// ---- Requester

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // An ID (remote_addr) at a manager endpoint (dst_node, dst_qpn), a
  // BARRIER's count in imm_data, and nothing else.
  if (w.num_sge || w.inline_len || w.has_grh || w.xfer_mode != RHN_XFER_BASIC ||
      (w.flags & (RHN_WQE_F_INLINE | RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE |
                  RHN_WQE_F_GRH)) ||
      (w.opcode == RHN_OP_BARRIER &&
       (w.imm_data == 0 || w.imm_data > RHN_BARRIER_MAX_MEMBERS))) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (!m.peer_for(w.dst_node)) {
    *syndrome = RHN_SYN_BAD_QP;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.opcode == RHN_OP_BARRIER) return RHN_CQE_SUCCESS;
  const uint32_t qpn = qpn_of(m, qp);
  const Mine own = mine(qp, w);
  if (w.opcode == RHN_OP_LOCK) {
    // Held or waited for by this endpoint already: it would wait for
    // itself.
    if (find_hold(m, qpn, w.remote_addr, [&](const SyncHold& h) {
          return own(h) && (h.state == HS::kWaiting || h.state == HS::kHeld ||
                            h.state == HS::kBroken);
        }) != kNone) {
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      *syndrome = RHN_SYN_BAD_WQE;
      return RHN_CQE_REM_INV_REQ_ERR;
    }
    const uint32_t i = new_hold(m, qp.context, qpn, w.remote_addr);
    if (i == kNone) {  // this process holds or waits for too many locks
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      *syndrome = RHN_SYN_BUSY;
      return RHN_CQE_GENERAL_ERR;
    }
    SyncHold& h = m.sync.holds[i];
    h.qp_gen = qp.gen;
    h.incarnation = qp.incarnation;
    h.mgr_node = own.node;
    h.mgr_qpn = own.mgr_qpn;
    h.lock_msn = qp.msn_next;  // the message this WQE becomes
    return RHN_CQE_SUCCESS;
  }
  // UNLOCK: of a lock this endpoint holds.
  const uint32_t i = find_hold(m, qpn, w.remote_addr, [&](const SyncHold& h) {
    return own(h) && (h.state == HS::kHeld || h.state == HS::kBroken);
  });
  if (i == kNone) {
    m.counters.add(RHN_CNT_SYNC_ERRORS);
    *syndrome = RHN_SYN_NOT_HELD;
    return RHN_CQE_REM_INV_REQ_ERR;
  }
  if (m.sync.holds[i].state == HS::kBroken) {  // it broke while held
    finish_hold(m, i);
    m.counters.add(RHN_CNT_SYNC_ERRORS);
    *syndrome = RHN_SYN_MEMBER_LOST;
    return RHN_CQE_REM_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t,
                  rhn_op_hdr& op, PacketOut& out) {
  out.last = true;
  op.msg_len = 0;
  if (w.opcode != RHN_OP_UNLOCK) {
    m.sync.member_waits = true;  // its manager is watched while it waits
    arm_probe(m);
    return true;
  }
  const uint32_t qpn = qpn_of(m, qp);
  const uint32_t msn = m.entry(qpn, qp.tx_entry).msn;
  const Mine own = mine(qp, w);
  // Sent again (refused): as decided the first time.
  uint32_t i = find_hold(m, qpn, w.remote_addr, [&](const SyncHold& h) {
    return own(h) && h.state == HS::kReleasing && h.unlock_msn == msn;
  });
  if (i == kNone) {
    i = find_hold(m, qpn, w.remote_addr, [&](const SyncHold& h) {
      return own(h) && h.state == HS::kHeld;
    });
    if (i != kNone) release(m, i, msn);
  }
  const rhn_wire_unlock u =
      i != kNone ? unlock_payload(m.sync.holds[i]) : rhn_wire_unlock{};
  memcpy(out.payload, &u, sizeof(u));
  out.len = sizeof(u);
  op.msg_len = sizeof(u);
  return true;
}

void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  if (op.opcode != RHN_WOP_SYNC_RESP || !pkt.payload.empty() ||
      (op.imm_data != RHN_SYNC_DONE && op.imm_data != RHN_SYNC_QUEUED)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  if (op.imm_data == RHN_SYNC_QUEUED) {
    // A LOCK or BARRIER completes on SYNC_DONE, an UNLOCK when the LINK
    // it waits for comes.
    m.sync.member_waits = true;
    arm_probe(m);
    return;
  }
  if (e.opcode == RHN_OP_LOCK) {
    granted(m, qpn, e, op.remote_addr);
  } else if (e.opcode == RHN_OP_UNLOCK) {
    const QpObj& qp = m.qps[qpn];
    const Mine own{qp.gen, e.peer, e.dst_qpn & RHN_WIRE_QPN_MASK};
    const uint32_t i =
        find_hold(m, qpn, op.remote_addr, [&](const SyncHold& h) {
          return own(h) && h.state == HS::kReleasing && h.unlock_msn == e.msn;
        });
    if (i != kNone) finish_hold(m, i);
  }
  m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

// An answer whose WQE is gone (its endpoint destroyed, reset or in error,
// or the WQE failed meanwhile). A LOCK's grant or queueing must not be
// lost: the lock would stay held by nobody. A record releases it.
void on_orphan_response(Impl& m, Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  if (op.opcode != RHN_WOP_SYNC_RESP) return;
  const uint32_t qpn = op.dst_qpn & RHN_WIRE_QPN_MASK;
  const auto inc =
      static_cast<uint8_t>(op.dst_qpn >> RHN_WIRE_INCARNATION_SHIFT);
  if (qpn == 0 || qpn >= m.qps.size()) return;
  const uint16_t mgr = m.node_of(p);
  auto from = [&](const SyncHold& h) {
    return h.incarnation == inc && h.mgr_node == mgr && h.mgr_qpn == op.src_qpn;
  };
  const bool done = op.imm_data == RHN_SYNC_DONE;
  if (op.rkey == RHN_WOP_UNLOCK) {
    const uint32_t i =
        find_hold(m, qpn, op.remote_addr, [&](const SyncHold& h) {
          return from(h) && h.state == HS::kReleasing && h.unlock_msn == op.msn;
        });
    if (i != kNone && done) finish_hold(m, i);
    return;
  }
  if (op.rkey != RHN_WOP_LOCK) return;
  uint32_t i = find_hold(m, qpn, op.remote_addr, [&](const SyncHold& h) {
    return from(h) && h.lock_msn == op.msn;
  });
  if (i != kNone) {
    if (done && m.sync.holds[i].state == HS::kWaiting) {
      m.sync.holds[i].state = HS::kHeld;
      unlock_for(m, i);
    }
    return;  // known: it waits, or the grant came first
  }
  // Nobody knew of it: the manager granted or queued an endpoint that
  // is gone. A zombie releases the lock for it.
  i = new_hold(m, kNone, qpn, op.remote_addr);
  if (i == kNone) {
    m.counters.add(RHN_CNT_SYNC_ERRORS);
    return;
  }
  SyncHold& h = m.sync.holds[i];
  h.zombie = true;
  h.incarnation = inc;
  h.mgr_node = mgr;
  h.mgr_qpn = op.src_qpn;
  h.lock_msn = op.msn;
  if (done) {
    h.state = HS::kHeld;
    unlock_for(m, i);
  }
  arm_probe(m);
}

// ---- Probes: the nodes waits depend on answer, or are declared dead.

void probe(Impl& m) {
  SyncTables& t = m.sync;
  fill(t.probe_nodes.begin(), t.probe_nodes.end(), 0);
  bool watching = false;
  auto mark = [&](uint16_t node) {
    watching = true;
    if (node != m.cfg.node_id && node < m.cfg.max_nodes)
      t.probe_nodes[node / 64] |= uint64_t{1} << (node % 64);
  };
  // As a manager: holders others wait for, members of pending rounds and
  // the nodes their IDs have seen.
  for (uint32_t s = 0; t.locks_used && s < t.locks.size(); s++) {
    const SyncLock& l = t.locks[s];
    if (!l.used || l.active < 2) continue;
    uint32_t i = l.head;
    while (t.members[i].released) i = t.members[i].next;
    mark(t.members[i].node);
  }
  for (uint32_t s = 0; t.barriers_used && s < t.barriers.size(); s++) {
    const SyncBarrier& b = t.barriers[s];
    if (!b.used || !b.count) continue;
    for (uint32_t i = b.head; i != kNone; i = t.members[i].next)
      mark(t.members[i].node);
    for (uint32_t n = 0; n < kSyncSeenNodes; n++)
      if (seen(b, static_cast<uint16_t>(n))) mark(static_cast<uint16_t>(n));
  }
  // As a member: the managers of what waits (records of locks; the
  // operations themselves for barriers).
  for (uint32_t i = 0; t.holds_used && i < t.holds.size(); i++) {
    drop_if_stale(m, i);
    const SyncHold& h = t.holds[i];
    if (h.state == HS::kWaiting || h.state == HS::kReleasing) mark(h.mgr_node);
  }
  if (t.member_waits) {
    bool any = false;
    for (uint32_t q = 0; q < m.qps.size(); q++) {
      const QpObj& qp = m.qps[q];
      if (!qp.valid || qp.type != RHN_QP_ENDPOINT) continue;
      for (uint32_t k = qp.inflight_head; k != qp.inflight_tail; k++) {
        const Inflight& e = m.entry(q, k);
        if (!sync_op(e.opcode) || e.state == MsgState::kDone) continue;
        any = true;
        mark(e.peer);
      }
    }
    t.member_waits = any;
  }
  // One ping each, for at most half the firmware messages; a node whose
  // channel is already waiting for an answer needs none. The channel
  // declares a node that does not answer dead (sync_node_failed).
  const uint32_t words = static_cast<uint32_t>(t.probe_nodes.size());
  uint32_t budget = max<uint32_t>(1, m.cfg.fw_messages / 2);
  for (uint32_t k = 0; k < words && budget; k++) {
    const uint32_t wi = (t.probe_from + k) % words;
    for (uint64_t bits = t.probe_nodes[wi]; bits && budget; bits &= bits - 1) {
      const auto node = static_cast<uint16_t>(
          wi * 64 + static_cast<uint32_t>(__builtin_ctzll(bits)));
      if (m.peers[node].unacked_count) continue;
      if (m.fw_post(node, RHN_FW_PING, {}, FwOwner::kSync, kCookieProbe, 0) ==
          kNone) {
        budget = 0;
        break;
      }
      budget--;
    }
    if (!budget) t.probe_from = wi;
  }
  t.next_probe = watching ? m.now + m.cfg.sync_probe_ns : UINT64_MAX;
}

}  // namespace sync_detail

extern const OpFamily kSyncFamily = {
    .name = "sync",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = nullptr,
    .on_request = on_request,
    .on_orphan_response = on_orphan_response,
};

// ---- The stages' entry points.

void sync_place(Impl& m, CardMemory& mem) {
  SyncTables& t = m.sync;
  const uint32_t locks = max<uint32_t>(m.cfg.sync.locks, 1);
  const uint32_t barriers = max<uint32_t>(m.cfg.sync.barriers, 1);
  const uint32_t members = max<uint32_t>(m.cfg.sync.waiters, 1);
  const uint32_t holds = max<uint32_t>(m.cfg.sync.holds, 1);
  t.locks = mem.table<SyncLock>(locks);
  t.free_locks = Fifo<uint32_t>(locks, mem);
  t.lock_buckets = mem.table<uint32_t>(bit_ceil(max<uint32_t>(locks, 16)));
  t.lock_mask = t.lock_buckets.size() - 1;
  t.barriers = mem.table<SyncBarrier>(barriers);
  t.free_barriers = Fifo<uint32_t>(barriers, mem);
  t.barrier_buckets =
      mem.table<uint32_t>(bit_ceil(max<uint32_t>(barriers, 16)));
  t.barrier_mask = t.barrier_buckets.size() - 1;
  t.members = mem.table<SyncMember>(members);
  t.free_members = Fifo<uint32_t>(members, mem);
  t.owed = Fifo<uint32_t>(members, mem);
  t.holds = mem.table<SyncHold>(holds);
  t.free_holds = Fifo<uint32_t>(holds, mem);
  t.holds_owed = Fifo<uint32_t>(holds, mem);
  t.hold_buckets = mem.table<uint32_t>(bit_ceil(max<uint32_t>(holds, 16)));
  t.hold_mask = t.hold_buckets.size() - 1;
  t.probe_nodes = mem.table<uint64_t>((m.cfg.max_nodes + 63) / 64);
}

void sync_reset(Impl& m) {
  SyncTables& t = m.sync;
  t.locks.fill(SyncLock{});
  t.barriers.fill(SyncBarrier{});
  t.free_locks.fill_indices(t.locks.size());
  t.free_barriers.fill_indices(t.barriers.size());
  t.lock_buckets.fill(kNone);
  t.barrier_buckets.fill(kNone);
  t.members.fill(SyncMember{});
  t.free_members.fill_indices(t.members.size());
  t.owed.clear();
  t.holds.fill(SyncHold{});
  t.free_holds.fill_indices(t.holds.size());
  t.holds_owed.clear();
  t.hold_buckets.fill(kNone);
  t.lock_quota = share_of(m.cfg.sync.locks, m.cfg.sync.context_share);
  t.member_quota = share_of(m.cfg.sync.waiters, m.cfg.sync.context_share);
  t.barrier_quota = share_of(m.cfg.sync.barriers, m.cfg.sync.context_share);
  t.hold_quota = share_of(m.cfg.sync.holds, m.cfg.sync.context_share);
  m.shares.set_limit(kResSyncLocks, m.cfg.sync.locks, t.lock_quota,
                     m.cfg.account_share);
  m.shares.set_limit(kResSyncMembers, m.cfg.sync.waiters, t.member_quota,
                     m.cfg.account_share);
  m.shares.set_limit(kResSyncBarriers, m.cfg.sync.barriers, t.barrier_quota,
                     m.cfg.account_share);
  m.shares.set_limit(kResSyncHolds, m.cfg.sync.holds, t.hold_quota,
                     m.cfg.account_share);
  t.locks_used = t.barriers_used = t.holds_used = 0;
  t.member_waits = false;
  t.next_probe = UINT64_MAX;
  t.probe_nodes.fill(0);
  t.probe_from = 0;
}

void sync_qp_gone(Impl& m, uint32_t qpn) {
  SyncTables& t = m.sync;
  const QpObj& qp = m.qps[qpn];
  if (qp.type != RHN_QP_ENDPOINT) return;
  // As a manager: its locks and rounds fail their members.
  for (uint32_t s = 0; t.locks_used && s < t.locks.size(); s++)
    if (t.locks[s].used && t.locks[s].qpn == qpn && t.locks[s].qp_gen == qp.gen)
      break_lock(m, s, kNone, true);
  for (uint32_t s = 0; t.barriers_used && s < t.barriers.size(); s++) {
    if (!t.barriers[s].used || t.barriers[s].qpn != qpn ||
        t.barriers[s].qp_gen != qp.gen)
      continue;
    end_round(m, s, RHN_SYN_MEMBER_LOST, kNone);
    drop_barrier(m, s);
  }
  // As a member: the NIC releases for it what it holds or will hold.
  for (uint32_t i = 0; t.holds_used && i < t.holds.size(); i++) {
    SyncHold& h = t.holds[i];
    if (h.state == HS::kFree || h.zombie || h.qpn != qpn || h.qp_gen != qp.gen)
      continue;
    switch (h.state) {
      case HS::kHeld:
        unlock_for(m, i);
        break;
      case HS::kBroken:
        finish_hold(m, i);
        break;
      default:  // waiting: released when granted; releasing: goes on
        h.zombie = true;
        h.since = m.now;
        break;
    }
  }
}

void sync_node_failed(Impl& m, uint16_t node) {
  SyncTables& t = m.sync;
  // As a manager: locks with a member there break; rounds with a member
  // there, or whose ID saw it in an earlier round, fail.
  for (uint32_t s = 0; t.locks_used && s < t.locks.size(); s++) {
    SyncLock& l = t.locks[s];
    if (!l.used) continue;
    bool lost = false, released = false;
    for (uint32_t i = l.head; i != kNone; i = t.members[i].next) {
      if (t.members[i].node != node) continue;
      (t.members[i].released ? released : lost) = true;
    }
    if (lost) {
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      break_lock(m, s, node);
    } else if (released) {
      // Passed on already: only its UNLOCK will not come.
      for (uint32_t i = l.head; i != kNone;) {
        const uint32_t next = t.members[i].next;
        if (t.members[i].node == node) {
          list_cut(m, l.head, l.tail, i);
          free_member_if_idle(m, i);
        }
        i = next;
      }
      if (l.head == kNone) drop_lock(m, s);
    }
  }
  for (uint32_t s = 0; t.barriers_used && s < t.barriers.size(); s++) {
    SyncBarrier& b = t.barriers[s];
    if (!b.used) continue;
    bool member = seen(b, node);
    for (uint32_t i = b.head; i != kNone && !member; i = t.members[i].next)
      member = t.members[i].node == node;
    if (node < kSyncSeenNodes)
      b.seen[node / 64] &= ~(uint64_t{1} << (node % 64));
    if (member && b.count) {
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      end_round(m, s, RHN_SYN_MEMBER_LOST, node);
    }
  }
  // Messages owed to it go nowhere.
  for (uint32_t i = 0; !t.owed.empty() && i < t.members.size(); i++) {
    SyncMember& w = t.members[i];
    if (w.done_owed && w.node == node) w.done_owed = false;
    if (w.link_owed && w.link_node == node) w.link_owed = false;
  }
  // As a member: holds at a manager there are over (held ones broken:
  // their UNLOCK fails locally); grants owed to a successor there go.
  for (uint32_t i = 0; t.holds_used && i < t.holds.size(); i++) {
    SyncHold& h = t.holds[i];
    if (h.state == HS::kFree || h.state == HS::kDone) continue;
    if (h.mgr_node == node) {
      if (h.state == HS::kHeld && !h.zombie) {
        h.state = HS::kBroken;
        h.has_successor = false;
        continue;
      }
      h.grant_owed = h.unlock_owed = false;
      finish_hold(m, i);
    } else if (h.grant_owed && h.succ_node == node) {
      h.grant_owed = false;
    }
  }
  // Our operations waiting for a manager there fail.
  if (!t.holds_used && !t.member_waits) return;
  for (uint32_t q = 0; q < m.qps.size(); q++) {
    QpObj& qp = m.qps[q];
    if (!qp.valid || qp.type != RHN_QP_ENDPOINT) continue;
    bool hit = false;
    for (uint32_t k = qp.inflight_head; k != qp.inflight_tail; k++) {
      Inflight& e = m.entry(q, k);
      if (e.peer != node || !sync_op(e.opcode) || e.state == MsgState::kDone)
        continue;
      if (qp.tx_active && qp.tx_entry == k) m.abort_tx(qp);
      e.state = MsgState::kDone;
      e.status = RHN_CQE_REM_OP_ERR;
      e.syndrome = RHN_SYN_MEMBER_LOST;
      m.counters.add(RHN_CNT_SYNC_ERRORS);
      hit = true;
    }
    if (hit) m.complete_in_order(q);
  }
}

void sync_link(Impl& m, Peer& p, const Packet& pkt) {
  rhn_fw_lock_link l;
  if (pkt.payload.size() != sizeof(l)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&l, pkt.payload.data(), sizeof(l));
  const uint16_t mgr = m.node_of(p);
  const uint32_t qpn = l.holder_qpn & RHN_WIRE_QPN_MASK;
  const auto inc =
      static_cast<uint8_t>(l.holder_qpn >> RHN_WIRE_INCARNATION_SHIFT);
  auto ours = [&](const SyncHold& h) {
    return h.incarnation == inc && h.mgr_node == mgr &&
           h.mgr_qpn == l.manager_qpn;
  };
  // The oldest record that can take it: one whose UNLOCK left knowing no
  // successor (LINKs for it come before any for a later LOCK), else the
  // one waiting or holding.
  uint32_t i = kNone;
  if (qpn < m.qps.size()) {
    i = find_hold(m, qpn, l.lock_id, [&](const SyncHold& h) {
      return ours(h) && h.state == HS::kReleasing && !h.passed;
    });
    if (i == kNone)
      i = find_hold(m, qpn, l.lock_id, [&](const SyncHold& h) {
        return ours(h) && (h.state == HS::kWaiting || h.state == HS::kHeld ||
                           h.state == HS::kBroken);
      });
  }
  if (i == kNone) {
    // Nobody here holds it: the manager breaks the lock.
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    m.respond(p, RHN_WOP_NAK, RHN_SYN_BAD_QP, pkt.op, {});
    return;
  }
  SyncHold& h = m.sync.holds[i];
  if (h.state == HS::kBroken) return;
  h.has_successor = true;
  h.succ_node = l.successor_node;
  h.succ_src = l.successor_src;
  h.succ_msn = l.successor_msn;
  if (h.state != HS::kReleasing) return;
  // Its UNLOCK left before this came (answered QUEUED, or about to be):
  // the lock goes on now and the UNLOCK completes.
  pass_on(m, i);
  if (!h.zombie)
    if (Inflight* e = live_op(m, qpn, h.qp_gen, RHN_OP_UNLOCK, h.unlock_msn))
      complete_op(m, qpn, *e, RHN_SYN_NONE);
  finish_hold(m, i);
}

void sync_done(Impl& m, Peer&, const Packet& pkt) {
  rhn_fw_sync_done d;
  if (pkt.payload.size() != sizeof(d)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&d, pkt.payload.data(), sizeof(d));
  const uint32_t qpn = d.qpn & RHN_WIRE_QPN_MASK;
  const auto inc = static_cast<uint8_t>(d.qpn >> RHN_WIRE_INCARNATION_SHIFT);
  if (qpn == 0 || qpn >= m.qps.size()) return;
  const bool ok = d.syndrome == RHN_SYN_NONE;
  QpObj& qp = m.qps[qpn];
  // The operation waiting for it.
  if (qp.valid && qp.incarnation == inc && qp.type == RHN_QP_ENDPOINT) {
    for (uint32_t k = qp.inflight_head; k != qp.inflight_tail; k++) {
      Inflight& e = m.entry(qpn, k);
      if (e.msn != d.msn || !sync_op(e.opcode) || e.state == MsgState::kDone)
        continue;
      const Mine own{qp.gen, e.peer, e.dst_qpn & RHN_WIRE_QPN_MASK};
      if (e.opcode == RHN_OP_LOCK && ok) {
        granted(m, qpn, e, d.id);
      } else if (e.opcode == RHN_OP_LOCK) {
        const uint32_t i = find_hold(m, qpn, d.id, [&](const SyncHold& h) {
          return own(h) && h.state == HS::kWaiting && h.lock_msn == e.msn;
        });
        if (i != kNone) finish_hold(m, i);
      }
      complete_op(m, qpn, e, d.syndrome);
      return;
    }
  }
  // No operation waits for it: a record of the lock may.
  const uint32_t i = find_hold(m, qpn, d.id, [&](const SyncHold& h) {
    return h.incarnation == inc && h.lock_msn == d.msn && h.state != HS::kDone;
  });
  if (i == kNone) return;  // the lock broke and the record went
  SyncHold& h = m.sync.holds[i];
  if (ok) {
    // Granted to an endpoint that is gone or no longer waits: the lock
    // goes on at once.
    if (h.state == HS::kWaiting) {
      h.state = HS::kHeld;
      unlock_for(m, i);
    }
    return;
  }
  // The lock broke.
  switch (h.state) {
    case HS::kHeld:
      if (!h.zombie) {
        h.state = HS::kBroken;  // its UNLOCK says so
        h.has_successor = false;
        return;
      }
      break;
    case HS::kReleasing:
      // Its UNLOCK was on the way: it fails, and the successor (told by
      // the manager too) is not given the lock.
      h.grant_owed = h.unlock_owed = false;
      if (!h.zombie)
        if (Inflight* e =
                live_op(m, qpn, h.qp_gen, RHN_OP_UNLOCK, h.unlock_msn))
          complete_op(m, qpn, *e, d.syndrome);
      break;
    default:
      break;
  }
  if (h.state != HS::kBroken) finish_hold(m, i);
}

void sync_fw_done(Impl& m, uint64_t cookie, uint8_t syndrome) {
  // A LINK the holder's NIC refused (no record of the lock there): the
  // queue is broken. A node declared dead is sync_node_failed's.
  if ((cookie & 3) != kCookieLink || syndrome == RHN_SYN_NONE ||
      syndrome == RHN_SYN_RETRY_EXCEEDED)
    return;
  const auto s = static_cast<uint32_t>(cookie >> 2 & 0x3fffffff);
  const auto gen = static_cast<uint32_t>(cookie >> 32);
  if (s >= m.sync.locks.size() || !m.sync.locks[s].used ||
      m.sync.locks[s].gen != gen)
    return;
  m.counters.add(RHN_CNT_SYNC_ERRORS);
  break_lock(m, s, kNone);
}

namespace {

// The turn's work, out of line: every poll asks each family, mostly
// nothing is due, and the test alone costs less than this function's
// set-up (the registers its loops save and restore).
[[gnu::noinline]] bool run_due(Impl& m, uint32_t budget) {
  bool did = !m.sync.owed.empty() && run_owed(m, budget);
  if (!m.sync.holds_owed.empty()) did |= run_holds_owed(m, budget);
  if (m.now >= m.sync.next_probe) {
    probe(m);
    did = true;
  }
  return did;
}

}  // namespace

bool sync_run(Impl& m, uint32_t budget) {
  if (!sync_owes(m) && m.now < sync_next_deadline(m)) return false;
  return run_due(m, budget);
}

}  // namespace rhinet::fw
