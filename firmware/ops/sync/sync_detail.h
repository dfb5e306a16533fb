// SPDX-License-Identifier: BSD-2-Clause
// ops/sync's internals shared by its files (sync_manager.cpp: the
// manager; sync.cpp: the member's NIC, requester, probes, hooks).
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/sync/sync.h"

namespace rhinet::fw::sync_detail {

using HS = SyncHoldState;

// A hold whose endpoint is gone and whose lock never settled (its manager
// stopped answering it): taken over when records are short.
constexpr uint64_t kZombieStaleNs = 10'000'000'000ull;

// FwOwner::kSync cookies: bits 0..1 what the message was; a LINK adds its
// lock's slot (bits 2..31) and generation (bits 32..63).
constexpr uint64_t kCookieLink = 1, kCookieOther = 2, kCookieProbe = 3;

// Tables the chains tell apart (a lock and a barrier may share an ID).
enum : uint64_t { kKeyLock = 1, kKeyBarrier = 2, kKeyHold = 3 };

// The endpoint's own record of a lock at (node, mgr_qpn).
struct Mine {
  uint32_t gen;
  uint16_t node;
  uint32_t mgr_qpn;
  bool operator()(const SyncHold& h) const {
    return !h.zombie && h.qp_gen == gen && h.mgr_node == node &&
           h.mgr_qpn == mgr_qpn;
  }
};

bool sync_op(uint8_t opcode);
uint32_t qpn_of(const Impl& m, const QpObj& qp);
uint32_t share_of(uint32_t total, uint32_t share);
uint64_t keyed_hash(const Impl& m, uint64_t a, uint64_t b);
uint32_t bucket_of(const Impl& m, uint64_t table, uint32_t qpn, uint32_t gen,
                   uint64_t id, uint32_t mask);
void arm_probe(Impl& m);
bool post_done(Impl& m, uint16_t node, uint32_t src, uint32_t msn, uint64_t id,
               uint8_t syndrome, uint32_t context);
void list_push(Impl& m, uint32_t& head, uint32_t& tail, uint32_t i);
void list_cut(Impl& m, uint32_t& head, uint32_t& tail, uint32_t i);
uint32_t new_member(Impl& m, uint32_t context);
void free_member_if_idle(Impl& m, uint32_t i);
void owe(Impl& m, uint32_t i);
bool post_link(Impl& m, const SyncMember& w);
void send_link(Impl& m, uint32_t i);
void tell(Impl& m, uint32_t i, uint8_t syndrome);
bool run_owed(Impl& m, uint32_t& budget);
uint32_t& lock_bucket(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id);
uint32_t find_lock(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id);
uint32_t new_lock(Impl& m, const QpObj& qp, uint32_t qpn, uint64_t id);
void drop_lock(Impl& m, uint32_t s);
void break_lock(Impl& m, uint32_t s, uint32_t dead, bool all = false);
uint32_t& barrier_bucket(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id);
uint32_t find_barrier(Impl& m, uint32_t qpn, uint32_t gen, uint64_t id);
void drop_barrier(Impl& m, uint32_t s);
uint32_t new_barrier(Impl& m, const QpObj& qp, uint32_t qpn, uint64_t id);
bool seen(const SyncBarrier& b, uint16_t node);
void end_round(Impl& m, uint32_t s, uint8_t syndrome, uint32_t dead);
void answer(Impl& m, Request& r, uint32_t kind);
void busy(Impl& m, Request& r);
void not_held(Impl& m, Request& r);
void lock_request(Impl& m, Request& r);
void unlock_request(Impl& m, Request& r);
void barrier_request(Impl& m, Request& r);
uint32_t hold_bucket(const Impl& m, uint32_t qpn, uint64_t id);
void free_hold(Impl& m, uint32_t i);
void finish_hold(Impl& m, uint32_t i);
Inflight* live_op(Impl& m, uint32_t qpn, uint32_t gen, uint8_t opcode,
                  uint32_t msn);
void complete_op(Impl& m, uint32_t qpn, Inflight& e, uint8_t syndrome);
bool stale(Impl& m, const SyncHold& h);
void drop_if_stale(Impl& m, uint32_t i);
uint32_t new_hold(Impl& m, uint32_t context, uint32_t qpn, uint64_t id);
void owe_hold(Impl& m, uint32_t i);
void pass_on(Impl& m, uint32_t i);
void release(Impl& m, uint32_t i, uint32_t msn);
rhn_wire_unlock unlock_payload(const SyncHold& h);
bool send_unlock(Impl& m, const SyncHold& h);
void unlock_for(Impl& m, uint32_t i);
bool run_holds_owed(Impl& m, uint32_t& budget);
Mine mine(const QpObj& qp, const DecodedWqe& w);
void granted(Impl& m, uint32_t qpn, const Inflight& e, uint64_t id);
uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome);
bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t,
                  rhn_op_hdr& op, PacketOut& out);
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt);
void on_orphan_response(Impl& m, Peer& p, const Packet& pkt);
void on_request(Impl& m, Request& r);
void probe(Impl& m);

template <typename T>
Span<const uint8_t> bytes_of(const T& v) {
  return {reinterpret_cast<const uint8_t*>(&v), sizeof(v)};
}

template <typename Pred>
uint32_t find_hold(const Impl& m, uint32_t qpn, uint64_t id, Pred pred) {
  const SyncTables& t = m.sync;
  for (uint32_t i = t.hold_buckets[hold_bucket(m, qpn, id)]; i != kNone;
       i = t.holds[i].next) {
    const SyncHold& h = t.holds[i];
    if (h.qpn == qpn && h.id == id && h.state != HS::kFree && pred(h)) return i;
  }
  return kNone;
}

}  // namespace rhinet::fw::sync_detail
