// SPDX-License-Identifier: BSD-2-Clause
// Locks' and barriers' entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/sync/sync.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_LOCK_LINK}, {RHN_FW_SYNC_DONE}};

void fw_message(Impl& m, Peer& p, const Packet& pkt) {
  if (pkt.op.rkey == RHN_FW_LOCK_LINK)
    sync_link(m, p, pkt);
  else
    sync_done(m, p, pkt);
}

}  // namespace

extern const FamilyModule kSyncModule{
    .name = "sync",
    .id = FwOwner::kSync,
    .place = sync_place,
    .reset = sync_reset,
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) sync_qp_gone(m, qpn);
        },
    // Its locks' and barriers' waits fail (MEMBER_LOST); a node first
    // heard from had none.
    .node_failed =
        [](Impl& m, uint16_t node, NodeLoss why) {
          if (why != NodeLoss::kFirstContact) sync_node_failed(m, node);
        },
    .next_deadline = sync_next_deadline,
    .fw_kinds = kFwKinds,
    .on_fw_message = fw_message,
    // A lock's LINK or SYNC_DONE, or a liveness probe.
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { sync_fw_done(m, cookie, syndrome); },
};

}  // namespace rhinet::fw
