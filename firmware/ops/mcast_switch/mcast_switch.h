// SPDX-License-Identifier: BSD-2-Clause
// ops/mcast_switch: simultaneous multicast: the functions the family's module
// entry (mcast_switch_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void mcast_place(Impl& m, CardMemory& mem);
void mcast_reset(Impl& m);
rhn_admin_status mcast_set_group(Impl& m, const rhn_admin_mcast_group& c,
                                 uint32_t& detail);
McastGroup* mcast_group(Impl& m, uint16_t id);
// An RHN_WOP_MCAST_DATA or RHN_WOP_MCAST_ACK frame (outside the channels).
void mcast_receive(Impl& m, const Packet& pkt);
// The next packet of the QP's MCAST_SWITCH message, into its group's
// stream (send_packet's part for this family).
Impl::TxResult mcast_send_packet(Impl& m, QpObj& qp, uint32_t qpn);
bool mcast_run(Impl& m);  // repairs of lagging members, deaths
inline uint64_t mcast_next_deadline(const Impl& m) {
  return m.switch_mcast.next_repair;
}

// What the family claims, for the registry.
// Its frames travel outside the node channels (its module's routes).
extern const OpFamily kMcastSwitchFamily;  // mcast_switch.cpp
inline constexpr OpClaims kMcastSwitchClaims{
    .family = &kMcastSwitchFamily,
    .wqe_ops = {RHN_OP_MCAST_SWITCH},
};

}  // namespace rhinet::fw
