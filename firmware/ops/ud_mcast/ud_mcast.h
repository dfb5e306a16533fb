// SPDX-License-Identifier: BSD-2-Clause
// ops/ud_mcast: verbs UD multicast: the functions the family's module entry
// (ud_mcast_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void ud_mcast_place(Impl& m, CardMemory& mem);
void ud_mcast_reset(Impl& m);
// RHN_ADMIN_ATTACH_MCAST (attach) / DETACH_MCAST for context `ctx`.
rhn_admin_status ud_mcast_attach(Impl& m, uint32_t ctx,
                                 const rhn_admin_mcast_attach& c, bool attach,
                                 uint32_t& detail);
void ud_mcast_qp_gone(Impl& m,
                      uint32_t qpn);  // its entries go, groups may leave
// A UD SEND to a switch group (start_message's part): out on the wire
// unsequenced, a copy to this node's attached QPs; the CQE status.
uint8_t ud_mcast_send(Impl& m, QpObj& qp, uint32_t qpn, Inflight& e,
                      const DecodedWqe& w, uint8_t* syndrome);
void ud_mcast_receive(Impl& m, const Packet& pkt);  // a datagram to a UD group
void ud_mcast_mgmt(Impl& m, const Packet& pkt);     // the switch's answer
bool ud_mcast_run(Impl& m);  // joins and leaves to resend
inline uint64_t ud_mcast_next_deadline(const Impl& m) {
  return min(m.ud_mcast.next_resend, m.ud_mcast.next_refresh);
}

}  // namespace rhinet::fw
