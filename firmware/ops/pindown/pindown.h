// SPDX-License-Identifier: BSD-2-Clause
// ops/pindown: remote pin-down: the functions the family's module entry
// (pindown_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void pin_place(Impl& m, CardMemory& mem);
void pin_reset(Impl& m);
// The host answered a PD_REQUEST event (RHN_ADMIN_PD_MAPPED).
rhn_admin_status pin_mapped(Impl& m, uint32_t context,
                            const rhn_admin_pd_mapped& c);
// Held requests fail (the MR or the target QP went away) or are let go
// (their requester's node did).
void pin_mr_gone(Impl& m, uint32_t mr_index);
void pin_qp_gone(Impl& m, uint32_t qpn);
void pin_node_failed(Impl& m, uint16_t node);
// Requester: a send's gather found a page of an on-demand MR not pinned
// (pins.fault_mr): true when QP qpn now waits for its host to pin the
// rest of that SGE (the WQE stays where it is, the QP stalls in order and
// goes on at PD_MAPPED, or fails LOC_PROT_ERR if the host refuses); false
// when nothing is missing there (the gather failed for another reason).
bool pin_local_fault(Impl& m, uint32_t qpn);
// An endpoint request from a source with an earlier one held: refused
// (true) so that it does not overtake it.
bool pin_holds_back(Impl& m, Peer& p, uint32_t qpn, const rhn_op_hdr& op);
// RHN_FW_PIN_READY from a target: that QP's refused messages go again.
void pin_ready(Impl& m, Peer& p, Span<const uint8_t> payload);

// What the family claims, for the registry.
extern const OpFamily kPinFamily;  // pindown.cpp
inline constexpr OpClaims kPinClaims{
    .family = &kPinFamily,
    .wqe_ops = {RHN_OP_PD_REQUEST, RHN_OP_PD_RELEASE},
    .requests = {RHN_WOP_PD_REQ, RHN_WOP_PD_RELEASE},
    .answers = {RHN_WOP_PD_REPLY},
};

}  // namespace rhinet::fw
