// SPDX-License-Identifier: BSD-2-Clause
// ops/coll: collectives executed by the NICs: the functions the family's module
// entry (coll_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void coll_place(Impl& m, CardMemory& mem);
void coll_reset(Impl& m);
void coll_qp_gone(Impl& m,
                  uint32_t qpn);  // its communicators' collectives fail
void coll_node_failed(Impl& m, uint16_t node);
void coll_receive(Impl& m, Peer& p, const Packet& pkt);  // RHN_FW_COLL_*
void coll_switch_receive(Impl& m, const Packet& pkt);    // RHN_PKT_COLL
void coll_fw_done(Impl& m, uint64_t cookie,
                  uint8_t syndrome);      // FwOwner::kColl
bool coll_run(Impl& m, uint32_t budget);  // segments to move, sends due, probes
inline uint64_t coll_next_deadline(const Impl& m) {
  return m.coll.next_deadline;
}
// When coll_run next has work: now while collectives run; never when none
// does, and then its deadline is cleared (nothing is due).
inline uint64_t coll_due(Impl& m) {
  if (m.coll.used) return 0;
  m.coll.next_deadline = UINT64_MAX;
  return UINT64_MAX;
}

// What the family claims, for the registry.
// Carried by firmware messages: no request of its own.
extern const OpFamily kCollFamily;  // coll.cpp
inline constexpr OpClaims kCollClaims{
    .family = &kCollFamily,
    .wqe_ops = {RHN_OP_COLLECTIVE},
};

}  // namespace rhinet::fw
