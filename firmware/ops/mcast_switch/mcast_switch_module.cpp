// SPDX-License-Identifier: BSD-2-Clause
// Simultaneous multicast's entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/mcast_switch/mcast_switch.h"

namespace rhinet::fw {
namespace {

// A switch group's stream: its own serials, not a node channel's. Data
// comes to the group or, repaired, to this node; ACKs to this node only.
FrameClaim claim(const Impl& m, const Packet& pkt) {
  const rhn_pkt_hdr& h = pkt.hdr;
  if (pkt.op.opcode != RHN_WOP_MCAST_DATA && pkt.op.opcode != RHN_WOP_MCAST_ACK)
    return FrameClaim::kNotMine;
  if (h.dst_node != m.cfg.node_id &&
      (h.dst_node < RHN_NODE_MCAST_FIRST || h.dst_node == RHN_NODE_BROADCAST ||
       pkt.op.opcode == RHN_WOP_MCAST_ACK))
    return FrameClaim::kMalformed;
  return FrameClaim::kMine;
}

constexpr FrameRoute kFrames[] = {
    {RHN_PKT_DATA,
     claim,
     [](Impl& m, const Packet& pkt) { mcast_receive(m, pkt); },
     2,
     {RHN_WOP_MCAST_DATA, RHN_WOP_MCAST_ACK}},
};
constexpr uint16_t kAdminOps[] = {RHN_ADMIN_SET_MCAST_GROUP};

rhn_admin_status admin(Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                       uint32_t&, uint32_t& detail) {
  // The kernel passes on what the administrator decided (the switch
  // pattern's members); user space never reaches this.
  if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
  return mcast_set_group(m, cmd.u.mcast_group, detail);
}

}  // namespace

extern const FamilyModule kMcastSwitchModule{
    .name = "mcast_switch",
    .id = FwOwner::kMcastSwitch,
    .place = mcast_place,
    .reset = mcast_reset,
    // Repairs of members that lag, deaths.
    .next_deadline = mcast_next_deadline,
    .frames = kFrames,
    .admin_ops = kAdminOps,
    .on_admin = admin,
};

}  // namespace rhinet::fw
