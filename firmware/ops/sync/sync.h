// SPDX-License-Identifier: BSD-2-Clause
// ops/sync: locks and barriers: the functions the family's module entry
// (sync_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void sync_place(Impl& m, CardMemory& mem);
void sync_reset(Impl& m);
// The endpoint stops (destroyed, reset, in error): as a manager its
// locks and rounds fail their members (MEMBER_LOST); as a member the NIC
// releases what it holds and will hold for it.
void sync_qp_gone(Impl& m, uint32_t qpn);
// The node died or lost its state: locks and rounds with it as a member
// break, waits with it as the manager fail (MEMBER_LOST).
void sync_node_failed(Impl& m, uint16_t node);
void sync_link(Impl& m, Peer& p,
               const Packet& pkt);  // RHN_FW_LOCK_LINK arrived
void sync_done(Impl& m, Peer& p,
               const Packet& pkt);  // RHN_FW_SYNC_DONE arrived
void sync_fw_done(Impl& m, uint64_t cookie,
                  uint8_t syndrome);      // FwOwner::kSync
bool sync_run(Impl& m, uint32_t budget);  // owed messages, liveness probes
inline uint64_t sync_next_deadline(const Impl& m) { return m.sync.next_probe; }
// Messages wait for room: sync_run has work now, whatever the time.
inline bool sync_owes(const Impl& m) {
  return !m.sync.owed.empty() || !m.sync.holds_owed.empty();
}

// What the family claims, for the registry.
extern const OpFamily kSyncFamily;  // sync.cpp
inline constexpr OpClaims kSyncClaims{
    .family = &kSyncFamily,
    .wqe_ops = {RHN_OP_LOCK, RHN_OP_UNLOCK, RHN_OP_BARRIER},
    .requests = {RHN_WOP_LOCK, RHN_WOP_UNLOCK, RHN_WOP_BARRIER},
    .answers = {RHN_WOP_SYNC_RESP},
};

}  // namespace rhinet::fw
