// SPDX-License-Identifier: BSD-2-Clause
// ops/share: shared regions: the functions the family's module entry
// (share_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void share_place(Impl& m, CardMemory& mem);
void share_reset(Impl& m);
// The endpoint stops: as a member it leaves its regions (the home is
// told), as a home its regions end (the members are told).
void share_qp_gone(Impl& m, uint32_t qpn);
// The node died or lost its state: it leaves every directory; regions
// whose home it was are lost; joins waiting on it go on without it.
void share_node_failed(Impl& m, uint16_t node);
void share_fw_receive(Impl& m, Peer& p, const Packet& pkt);  // RHN_FW_SHARE_*
void share_fw_done(Impl& m, uint64_t cookie,
                   uint8_t syndrome);      // FwOwner::kShare
bool share_run(Impl& m, uint32_t budget);  // owed messages, probes, deadlines
inline uint64_t share_next_deadline(const Impl& m) {
  return m.share.next_probe;
}

// What the family claims, for the registry.
extern const OpFamily kShareFamily;  // share.cpp
inline constexpr OpClaims kShareClaims{
    .family = &kShareFamily,
    .wqe_ops = {RHN_OP_SUBSCRIBE, RHN_OP_UNSUBSCRIBE, RHN_OP_SHARE_UPDATE},
    .requests = {RHN_WOP_SHARE_REQ, RHN_WOP_SHARE_UPDATE},
    .answers = {RHN_WOP_SHARE_DATA},
};

}  // namespace rhinet::fw
