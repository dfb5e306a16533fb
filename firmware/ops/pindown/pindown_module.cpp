// SPDX-License-Identifier: BSD-2-Clause
// Remote pin-down's entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/pindown/pindown.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_PIN_READY}};
constexpr uint16_t kAdminOps[] = {RHN_ADMIN_PD_MAPPED};

}  // namespace

extern const FamilyModule kPinModule{
    .name = "pindown",
    .id = FwOwner::kPin,
    .place = pin_place,
    .reset = pin_reset,
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) pin_qp_gone(m, qpn);
        },
    // Requests held for its pages go again and find it gone.
    .mr_gone =
        [](Impl& m, uint32_t mr_index) {
          if (m.mrs[mr_index].on_demand) pin_mr_gone(m, mr_index);
        },
    .node_failed = [](Impl& m, uint16_t node,
                      NodeLoss) { pin_node_failed(m, node); },
    .fw_kinds = kFwKinds,
    .on_fw_message = [](Impl& m, Peer& p,
                        const Packet& pkt) { pin_ready(m, p, pkt.payload); },
    // A PIN_READY needs no outcome: a requester that misses it sends
    // again on its timer.
    .admin_ops = kAdminOps,
    .on_admin = [](Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd, uint32_t&,
                   uint32_t&) { return pin_mapped(m, ctx, cmd.u.pd_mapped); },
    // A source's request held for pinning keeps its later ones back.
};

}  // namespace rhinet::fw
