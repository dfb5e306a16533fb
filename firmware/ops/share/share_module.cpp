// SPDX-License-Identifier: BSD-2-Clause
// Shared regions' entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/pindown/pindown.h"
#include "ops/share/share.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_SHARE_ADD},
                               {RHN_FW_SHARE_ADDED},
                               {RHN_FW_SHARE_JOINED},
                               {RHN_FW_SHARE_REMOVE},
                               {RHN_FW_SHARE_RESEND}};

void fw_message(Impl& m, Peer& p, const Packet& pkt) {
  if (pkt.op.rkey == RHN_FW_SHARE_RESEND)
    // The joining member has its data: the updates it refused go again,
    // as after a pinning target's PIN_READY (same payload).
    pin_ready(m, p, pkt.payload);
  else
    share_fw_receive(m, p, pkt);
}

}  // namespace

extern const FamilyModule kShareModule{
    .name = "share",
    .id = FwOwner::kShare,
    .place = share_place,
    .reset = share_reset,
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) share_qp_gone(m, qpn);
        },
    // Out of every directory (a node first heard from is in none).
    .node_failed =
        [](Impl& m, uint16_t node, NodeLoss why) {
          if (why != NodeLoss::kFirstContact) share_node_failed(m, node);
        },
    .next_deadline = share_next_deadline,
    .fw_kinds = kFwKinds,
    .on_fw_message = fw_message,
    // A directory message or a liveness probe.
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { share_fw_done(m, cookie, syndrome); },
};

}  // namespace rhinet::fw
