// SPDX-License-Identifier: BSD-2-Clause
// Locks' and barriers' tables (ops/sync).
#pragma once

#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResSyncLocks =
    family_res<FwOwner::kSync, 0>();  // manager: locks
constexpr Res kResSyncMembers =
    family_res<FwOwner::kSync,
               1>();  // manager: members queued in locks and barrier rounds
constexpr Res kResSyncBarriers =
    family_res<FwOwner::kSync, 2>();  // manager: barrier IDs
constexpr Res kResSyncHolds =
    family_res<FwOwner::kSync,
               3>();  // member: records of locks held or waited for

// A lock's or barrier round's member at the manager: the endpoint (node,
// src_qpn with incarnation) and the msn of its LOCK or BARRIER. A lock's
// list is in queue order, members that passed the lock on (their UNLOCK
// not here yet) first. Taken out of its list (a round full, a lock
// broken) a member stays until the SYNC_DONE it is owed has been posted.
struct SyncMember {
  bool used = false;
  bool in_list = false;
  bool released = false;   // passed the lock on; its UNLOCK is on its way
  bool link_owed = false;  // the LINK naming it waits for a message slot
  bool done_owed = false;  // so does its SYNC_DONE (done_syndrome)
  bool queued = false;     // in SyncTables::owed
  uint8_t done_syndrome = 0;
  uint16_t node = 0;
  uint16_t link_node = 0;  // its predecessor, whom the LINK goes to
  uint32_t link_src = 0;
  uint32_t src = 0;
  uint32_t msn = 0;
  uint32_t context = 0;  // the manager endpoint's: its share
  uint32_t mgr_qpn = 0;
  uint32_t lock = kNone;  // the lock's slot and generation (LINK's cookie)
  uint32_t lock_gen = 0;
  uint64_t id = 0;
  uint32_t prev = kNone, next = kNone;
};

// A lock at its manager: any free slot (never a slot a hash of the ID
// picks, so nobody's locks crowd out anybody else's), found again through
// a chain keyed by (qpn, qp_gen, id). The manager endpoint's incarnation
// (qp_gen) and owner (context) come with it.
struct SyncLock {
  bool used = false;
  uint32_t gen = 0;  // bumps on reuse
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint64_t id = 0;
  uint32_t head = kNone, tail = kNone;  // members
  uint32_t active = 0;                  // members not released
  uint32_t chain = kNone;               // next in its bucket
};

// Nodes a barrier ID has seen in its rounds: IDs below this many.
constexpr uint32_t kSyncSeenNodes = 1024;

// A barrier ID at its manager: placed and found as a lock is.
struct SyncBarrier {
  bool used = false;
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint64_t id = 0;
  uint32_t count = 0;  // the pending round's (0: none)
  uint32_t arrived = 0;
  uint32_t head = kNone, tail = kNone;  // arrivals
  uint32_t chain = kNone;               // next in its bucket
  uint64_t idle_since = 0;  // no round pending since: its owner recycles
                            // the oldest such ID first
  uint64_t seen[kSyncSeenNodes / 64] = {};
};

enum class SyncHoldState : uint8_t {
  kFree,
  kWaiting,    // its LOCK is not granted yet
  kHeld,       // granted
  kReleasing,  // its UNLOCK left (passed, or the manager's answer due)
  kBroken,     // the lock broke while held: its UNLOCK fails locally
  kDone,       // over, a message it owes still to post
};

// A member's NIC: a lock one of its endpoints holds or waits for, and
// whom to pass it to. Its endpoint gone, the record stays (zombie) and
// the NIC releases the lock for it.
struct SyncHold {
  SyncHoldState state = SyncHoldState::kFree;
  bool zombie = false;
  bool has_successor = false;
  bool passed = false;       // releasing: the UNLOCK said PASSED
  bool grant_owed = false;   // the successor's SYNC_DONE not posted yet
  bool unlock_owed = false;  // a zombie's UNLOCK not sent yet
  bool queued = false;       // in SyncTables::holds_owed
  uint8_t incarnation = 0;
  uint16_t mgr_node = 0;
  uint16_t succ_node = 0;
  uint32_t qpn = 0, qp_gen = 0, context = kNone;
  uint32_t mgr_qpn = 0;
  uint32_t lock_msn = 0, unlock_msn = 0;
  uint32_t succ_src = 0, succ_msn = 0;
  uint64_t id = 0;
  uint64_t since = 0;
  uint32_t next = kNone;  // hash chain by (qpn, id)
};

struct SyncTables {
  Table<SyncLock> locks;
  Table<SyncBarrier> barriers;
  // Unused lock and barrier slots (any may be taken), and the chains
  // that find a used one by its key.
  Fifo<uint32_t> free_locks, free_barriers;
  Table<uint32_t> lock_buckets, barrier_buckets;
  uint32_t lock_mask = 0, barrier_mask = 0;
  Table<SyncMember> members;
  Fifo<uint32_t> free_members;
  // Members whose LINK or SYNC_DONE found no firmware message free, in
  // order (LINKs to one NIC must arrive in the order they were decided).
  Fifo<uint32_t> owed;
  Table<SyncHold> holds;
  Fifo<uint32_t> free_holds;
  Table<uint32_t> hold_buckets;
  uint32_t hold_mask = 0;
  Fifo<uint32_t> holds_owed;
  // Per context (Impl::shares counts): locks, members and barriers
  // charged to its manager endpoints, records of its member endpoints.
  uint32_t lock_quota = 0, member_quota = 0, barrier_quota = 0;
  uint32_t hold_quota = 0;
  uint32_t locks_used = 0, barriers_used = 0, holds_used = 0;
  bool member_waits = false;  // a LOCK or BARRIER of ours may be waiting
  uint64_t next_probe = UINT64_MAX;
  Table<uint64_t> probe_nodes;  // bitmap over max_nodes
  uint32_t probe_from = 0;      // where the next probes start
};

}  // namespace rhinet::fw
