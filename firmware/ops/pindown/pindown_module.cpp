// SPDX-License-Identifier: BSD-2-Clause
// Remote pin-down's entry in the module list (ops/registry.cpp).
#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_PIN_READY}};
constexpr uint16_t kAdminOps[] = {RHN_ADMIN_PD_MAPPED};

}  // namespace

extern const FamilyModule kPinModule{
    .name = "pindown",
    .id = FwOwner::kPin,
    .reset = [](Impl& m) { m.pin_reset(); },
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) m.pin_qp_gone(qpn);
        },
    // Requests held for its pages go again and find it gone.
    .mr_gone =
        [](Impl& m, uint32_t mr_index) {
          if (m.mrs[mr_index].on_demand) m.pin_mr_gone(mr_index);
        },
    .node_failed = [](Impl& m, uint16_t node,
                      NodeLoss) { m.pin_node_failed(node); },
    .fw_kinds = kFwKinds,
    .on_fw_message = [](Impl& m, Peer& p,
                        const Packet& pkt) { m.pin_ready(p, pkt.payload); },
    // A PIN_READY needs no outcome: a requester that misses it sends
    // again on its timer.
    .admin_ops = kAdminOps,
    .on_admin = [](Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                   uint32_t&) { return m.pin_mapped(ctx, cmd.u.pd_mapped); },
    // A source's request held for pinning keeps its later ones back.
    .holds_back =
        [](Impl& m, Peer& p, uint32_t qpn, const rhn_op_hdr& op) {
          return m.pins.waiters_used && m.pin_holds_back(p, qpn, op);
        },
};

}  // namespace rhinet::fw
