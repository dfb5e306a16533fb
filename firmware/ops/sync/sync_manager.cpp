// SPDX-License-Identifier: BSD-2-Clause
// ops/sync at the manager endpoint's NIC: members, locks and barrier
// rounds, and its side of the wire (LOCK, UNLOCK, BARRIER requests). The
// member's NIC (holds), the requester and the engine hooks are in
// sync.cpp.
#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/sync/sync.h"
#include "ops/sync/sync_detail.h"

namespace rhinet::fw {

using namespace sync_detail;

namespace sync_detail {

// ---- The manager: members, locks, barriers.

void list_push(Impl& m, uint32_t& head, uint32_t& tail, uint32_t i) {
  auto& w = m.sync.members;
  w[i].prev = tail;
  w[i].next = kNone;
  w[i].in_list = true;
  if (tail != kNone)
    w[tail].next = i;
  else
    head = i;
  tail = i;
}

void list_cut(Impl& m, uint32_t& head, uint32_t& tail, uint32_t i) {
  auto& w = m.sync.members;
  SyncMember& x = w[i];
  if (x.prev != kNone)
    w[x.prev].next = x.next;
  else
    head = x.next;
  if (x.next != kNone)
    w[x.next].prev = x.prev;
  else
    tail = x.prev;
  x.prev = x.next = kNone;
  x.in_list = false;
}

uint32_t new_member(Impl& m, uint32_t context) {
  SyncTables& t = m.sync;
  if (t.free_members.empty() || !m.shares.take(context, kResSyncMembers))
    return kNone;
  const uint32_t i = t.free_members.front();
  t.free_members.pop();
  t.members[i] = SyncMember{};
  t.members[i].used = true;
  t.members[i].context = context;
  return i;
}

// Out of its list with nothing owed: back to the pool.
void free_member_if_idle(Impl& m, uint32_t i) {
  SyncTables& t = m.sync;
  SyncMember& w = t.members[i];
  if (!w.used || w.in_list || w.link_owed || w.done_owed || w.queued) return;
  m.shares.give(w.context, kResSyncMembers);
  w = SyncMember{};
  t.free_members.push(i);
}

void owe(Impl& m, uint32_t i) {
  SyncMember& w = m.sync.members[i];
  if (w.queued) return;
  w.queued = true;
  m.sync.owed.push(i);  // one place per member: never full
}

bool post_link(Impl& m, const SyncMember& w) {
  rhn_fw_lock_link l{};
  l.lock_id = w.id;
  l.manager_node = m.cfg.node_id;
  l.successor_node = w.node;
  l.manager_qpn = w.mgr_qpn;
  l.holder_qpn = w.link_src;
  l.successor_src = w.src;
  l.successor_msn = w.msn;
  const uint64_t cookie =
      kCookieLink | uint64_t{w.lock} << 2 | uint64_t{w.lock_gen} << 32;
  return m.fw_post(w.link_node, RHN_FW_LOCK_LINK, bytes_of(l), FwOwner::kSync,
                   cookie, w.context) != kNone;
}

// The member's predecessor learns whom to pass the lock to. LINKs leave
// in the order they were decided: behind any that wait for room.
void send_link(Impl& m, uint32_t i) {
  SyncMember& w = m.sync.members[i];
  if (m.sync.owed.empty() && post_link(m, w)) return;
  w.link_owed = true;
  owe(m, i);
}

// A member out of its list hears how its LOCK or BARRIER ended.
void tell(Impl& m, uint32_t i, uint8_t syndrome) {
  SyncMember& w = m.sync.members[i];
  if (syndrome != RHN_SYN_NONE) m.counters.add(RHN_CNT_SYNC_ERRORS);
  if (m.sync.owed.empty() &&
      post_done(m, w.node, w.src, w.msn, w.id, syndrome, w.context))
    return free_member_if_idle(m, i);
  w.done_owed = true;
  w.done_syndrome = syndrome;
  owe(m, i);
}

bool run_owed(Impl& m, uint32_t& budget) {
  SyncTables& t = m.sync;
  bool did = false;
  while (budget && !t.owed.empty()) {
    const uint32_t i = t.owed.front();
    SyncMember& w = t.members[i];
    if (w.link_owed) {
      if (!post_link(m, w)) break;  // in order: the rest waits too
      w.link_owed = false;
    }
    if (w.done_owed) {
      if (!post_done(m, w.node, w.src, w.msn, w.id, w.done_syndrome, w.context))
        break;
      w.done_owed = false;
    }
    t.owed.pop();
    w.queued = false;
    free_member_if_idle(m, i);
    budget--;
    did = true;
  }
  return did;
}

uint32_t& lock_bucket(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id) {
  return m.sync
      .lock_buckets[bucket_of(m, kKeyLock, qpn, gen, id, m.sync.lock_mask)];
}

// The lock of the manager endpoint's incarnation `gen`: an entry of an
// earlier one (same QPN) never matches.
uint32_t find_lock(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id) {
  const auto& t = m.sync.locks;
  for (uint32_t s = lock_bucket(m, qpn, gen, id); s != kNone; s = t[s].chain)
    if (t[s].qpn == qpn && t[s].qp_gen == gen && t[s].id == id) return s;
  return kNone;
}

// Refused only when the owner's share is used or no slot is free.
uint32_t new_lock(Impl& m, const QpObj& qp, uint32_t qpn, uint64_t id) {
  SyncTables& t = m.sync;
  if (t.free_locks.empty() || !m.shares.take(qp.context, kResSyncLocks))
    return kNone;
  const uint32_t s = t.free_locks.front();
  t.free_locks.pop();
  SyncLock& l = t.locks[s];
  const uint32_t gen = l.gen + 1;
  l = SyncLock{};
  l.used = true;
  l.gen = gen;
  l.qpn = qpn;
  l.qp_gen = qp.gen;
  l.context = qp.context;
  l.id = id;
  uint32_t& head = lock_bucket(m, qpn, qp.gen, id);
  l.chain = head;
  head = s;
  t.locks_used++;
  return s;
}

void drop_lock(Impl& m, uint32_t s) {
  SyncTables& t = m.sync;
  SyncLock& l = t.locks[s];
  unchain(t.locks, lock_bucket(m, l.qpn, l.qp_gen, l.id), s);
  m.shares.give(l.context, kResSyncLocks);
  t.locks_used--;
  l.used = false;        // gen stays: a late LINK refusal finds it changed
  t.free_locks.push(s);  // one place per slot: never full
}

// The lock breaks: its members not released hear MEMBER_LOST (those on
// node `dead` are gone and hear nothing); released members stay until
// their UNLOCK comes, except those on `dead`. `all`: everybody goes.
void break_lock(Impl& m, uint32_t s, uint32_t dead, bool all) {
  SyncLock& l = m.sync.locks[s];
  for (uint32_t i = l.head; i != kNone;) {
    SyncMember& w = m.sync.members[i];
    const uint32_t next = w.next;
    if (all || !w.released || w.node == dead) {
      list_cut(m, l.head, l.tail, i);
      // Its LINK, if not sent yet, never is: it would name a successor to
      // whatever lock of that ID its predecessor holds by then.
      w.link_owed = false;
      if (w.released || w.node == dead)
        free_member_if_idle(m, i);
      else
        tell(m, i, RHN_SYN_MEMBER_LOST);
    }
    i = next;
  }
  l.active = 0;
  if (l.head == kNone) drop_lock(m, s);
}

uint32_t& barrier_bucket(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id) {
  return m.sync.barrier_buckets[bucket_of(m, kKeyBarrier, qpn, gen, id,
                                          m.sync.barrier_mask)];
}

uint32_t find_barrier(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id) {
  const auto& t = m.sync.barriers;
  for (uint32_t s = barrier_bucket(m, qpn, gen, id); s != kNone; s = t[s].chain)
    if (t[s].qpn == qpn && t[s].qp_gen == gen && t[s].id == id) return s;
  return kNone;
}

void drop_barrier(Impl& m, uint32_t s) {
  SyncTables& t = m.sync;
  SyncBarrier& b = t.barriers[s];
  unchain(t.barriers, barrier_bucket(m, b.qpn, b.qp_gen, b.id), s);
  m.shares.give(b.context, kResSyncBarriers);
  t.barriers_used--;
  b = SyncBarrier{};
  t.free_barriers.push(s);  // one place per slot: never full
}

// A slot for a barrier ID: a free one while its owner has share left;
// else the owner's own ID idle longest (no round pending: what it had
// seen is forgotten). Another context's IDs are never taken.
uint32_t new_barrier(Impl& m, const QpObj& qp, uint32_t qpn, uint64_t id) {
  SyncTables& t = m.sync;
  if (!m.shares.room(qp.context, kResSyncBarriers) || t.free_barriers.empty()) {
    uint32_t oldest = kNone;
    for (uint32_t s = 0; s < t.barriers.size(); s++) {  // bounded: one pass
      const SyncBarrier& b = t.barriers[s];
      if (b.used && b.context == qp.context && b.count == 0 &&
          (oldest == kNone || b.idle_since < t.barriers[oldest].idle_since))
        oldest = s;
    }
    if (oldest == kNone) return kNone;
    drop_barrier(m, oldest);
  }
  const uint32_t s = t.free_barriers.front();
  t.free_barriers.pop();
  SyncBarrier& b = t.barriers[s];
  b.used = true;
  b.qpn = qpn;
  b.qp_gen = qp.gen;
  b.context = qp.context;
  b.id = id;
  b.idle_since = m.now;
  uint32_t& head = barrier_bucket(m, qpn, qp.gen, id);
  b.chain = head;
  head = s;
  m.shares.charge(qp.context, kResSyncBarriers);
  t.barriers_used++;
  return s;
}

bool seen(const SyncBarrier& b, uint16_t node) {
  return node < kSyncSeenNodes && (b.seen[node / 64] >> (node % 64) & 1);
}

// The round ends: its members hear `syndrome` (NONE: complete) except
// those on node `dead`.
void end_round(Impl& m, uint32_t s, uint8_t syndrome, uint32_t dead) {
  SyncBarrier& b = m.sync.barriers[s];
  while (b.head != kNone) {
    const uint32_t i = b.head;
    list_cut(m, b.head, b.tail, i);
    if (m.sync.members[i].node == dead)
      free_member_if_idle(m, i);
    else
      tell(m, i, syndrome);
  }
  b.count = 0;
  b.arrived = 0;
  b.idle_since = m.now;
}

// ---- The manager's side of the wire.

// SYNC_RESP: imm_data the answer; rkey the wire op it answers and
// remote_addr the ID, so an answer whose WQE is gone still names its lock.
void answer(Impl& m, Request& r, uint32_t kind) {
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_SYNC_RESP;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = r.src;
  op.src_qpn = r.qpn;
  op.msn = r.op.msn;
  op.rkey = r.op.opcode;
  op.remote_addr = r.op.remote_addr;
  op.imm_data = kind;
  m.send_data(r.peer, op, {}, false, kNone, 0, false);
}

// No room in the manager's tables (or the context's share): sent again.
void busy(Impl& m, Request& r) {
  m.counters.add(RHN_CNT_SYNC_ERRORS);
  not_ready(m, r, RHN_SYN_BUSY);
}

void not_held(Impl& m, Request& r) {
  m.counters.add(RHN_CNT_SYNC_ERRORS);
  refuse(m, r, RHN_SYN_NOT_HELD);
}

void lock_request(Impl& m, Request& r) {
  SyncTables& t = m.sync;
  const uint64_t id = r.op.remote_addr;
  uint32_t s = find_lock(m, r.qpn, r.qp.gen, id);
  const bool fresh = s == kNone;
  if (fresh) s = new_lock(m, r.qp, r.qpn, id);
  const uint32_t i = s == kNone ? kNone : new_member(m, r.qp.context);
  if (i == kNone) {
    if (fresh && s != kNone) drop_lock(m, s);
    busy(m, r);
    return;
  }
  SyncLock& l = t.locks[s];
  SyncMember& w = t.members[i];
  w.node = r.node;
  w.src = r.src;
  w.msn = r.op.msn;
  w.mgr_qpn = r.qpn;
  w.id = id;
  w.lock = s;
  w.lock_gen = l.gen;
  const uint32_t tail = l.tail;
  list_push(m, l.head, l.tail, i);
  if (l.active++ == 0) {  // nobody holds it or waits: granted
    m.counters.add(RHN_CNT_LOCK_GRANTS);
    answer(m, r, RHN_SYNC_DONE);
    return;
  }
  // Behind the tail, which is not released (released members come first).
  w.link_node = t.members[tail].node;
  w.link_src = t.members[tail].src;
  m.counters.add(RHN_CNT_LOCK_WAITS);
  answer(m, r, RHN_SYNC_QUEUED);
  send_link(m, i);
  arm_probe(m);  // its holder is watched while somebody waits
}

void unlock_request(Impl& m, Request& r) {
  SyncTables& t = m.sync;
  rhn_wire_unlock u;
  if (r.data.size() != sizeof(u)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    refuse(m, r, RHN_SYN_LENGTH);
    return;
  }
  memcpy(&u, r.data.data(), sizeof(u));
  const uint32_t s = find_lock(m, r.qpn, r.qp.gen, r.op.remote_addr);
  uint32_t i = s == kNone ? kNone : t.locks[s].head;
  while (i != kNone &&
         (t.members[i].node != r.node || t.members[i].src != r.src))
    i = t.members[i].next;
  if (i == kNone) {
    not_held(m, r);
    return;
  }
  SyncLock& l = t.locks[s];
  uint32_t kind = RHN_SYNC_DONE;
  if (!t.members[i].released) {
    // It held the lock: every member before it passed it on.
    for (uint32_t j = l.head; j != i; j = t.members[j].next) {
      if (t.members[j].released) continue;
      t.members[j].released = true;
      l.active--;
    }
    l.active--;
    // Not passed while a successor is queued: the successor's LINK has
    // not reached the holder's NIC yet, which passes the lock when it
    // does and completes the UNLOCK then.
    if (!(u.flags & RHN_UNLOCK_F_PASSED) && t.members[i].next != kNone)
      kind = RHN_SYNC_QUEUED;
  }
  list_cut(m, l.head, l.tail, i);
  free_member_if_idle(m, i);
  if (l.head == kNone) drop_lock(m, s);
  answer(m, r, kind);
}

void barrier_request(Impl& m, Request& r) {
  SyncTables& t = m.sync;
  const uint32_t count = r.op.imm_data;
  if (!r.data.empty() || count == 0 || count > RHN_BARRIER_MAX_MEMBERS) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    m.counters.add(RHN_CNT_SYNC_ERRORS);
    refuse(m, r, RHN_SYN_BAD_WQE);
    return;
  }
  const uint64_t id = r.op.remote_addr;
  uint32_t s = find_barrier(m, r.qpn, r.qp.gen, id);
  if (s == kNone) s = new_barrier(m, r.qp, r.qpn, id);
  if (s == kNone) {
    busy(m, r);
    return;
  }
  SyncBarrier& b = t.barriers[s];
  if (b.count && b.count != count) {
    not_held(m, r);  // not this round's count; the round goes on
    return;
  }
  if (b.arrived + 1 < count) {
    const uint32_t i = new_member(m, r.qp.context);
    if (i == kNone) {
      busy(m, r);
      return;
    }
    SyncMember& w = t.members[i];
    w.node = r.node;
    w.src = r.src;
    w.msn = r.op.msn;
    w.mgr_qpn = r.qpn;
    w.id = id;
    list_push(m, b.head, b.tail, i);
    b.count = count;
    b.arrived++;
    if (r.node < kSyncSeenNodes)
      b.seen[r.node / 64] |= uint64_t{1} << (r.node % 64);
    answer(m, r, RHN_SYNC_QUEUED);
    arm_probe(m);
    return;
  }
  // The last one: the round is complete.
  if (r.node < kSyncSeenNodes)
    b.seen[r.node / 64] |= uint64_t{1} << (r.node % 64);
  m.counters.add(RHN_CNT_BARRIER_ROUNDS);
  end_round(m, s, RHN_SYN_NONE, kNone);
  answer(m, r, RHN_SYNC_DONE);
}

// ---- Responder (the manager)

void on_request(Impl& m, Request& r) {
  if (r.qp.type != RHN_QP_ENDPOINT) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_BAD_OPCODE);
    return;
  }
  if (!r.first || !r.last || (r.op.opcode == RHN_WOP_LOCK && !r.data.empty())) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    refuse(m, r, RHN_SYN_LENGTH);
    return;
  }
  switch (r.op.opcode) {
    case RHN_WOP_LOCK:
      lock_request(m, r);
      return;
    case RHN_WOP_UNLOCK:
      unlock_request(m, r);
      return;
    case RHN_WOP_BARRIER:
      barrier_request(m, r);
      return;
    default:
      m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
      refuse(m, r, RHN_SYN_BAD_OPCODE);
      return;
  }
}
}  // namespace sync_detail

}  // namespace rhinet::fw
