// SPDX-License-Identifier: BSD-2-Clause
// Collectives' entry in the module list (ops/registry.cpp).
#include "ops/coll/coll.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

// A segment carries up to a whole packet of data.
constexpr FwKind kFwKinds[] = {{RHN_FW_COLL_UP, RHN_WIRE_MTU},
                               {RHN_FW_COLL_DOWN, RHN_WIRE_MTU},
                               {RHN_FW_COLL_ABORT},
                               {RHN_FW_COLL_READY}};

// The switch's part of a collective (in-switch mode): from the switch
// itself, to this node.
FrameClaim claim(const Impl& m, const Packet& pkt) {
  return pkt.hdr.src_node == RHN_NODE_BROADCAST &&
                 pkt.hdr.dst_node == m.cfg.node_id
             ? FrameClaim::kMine
             : FrameClaim::kMalformed;
}

constexpr FrameRoute kFrames[] = {
    {RHN_PKT_COLL, claim,
     [](Impl& m, const Packet& pkt) { coll_switch_receive(m, pkt); }},
};

}  // namespace

extern const FamilyModule kCollModule{
    .name = "coll",
    .id = FwOwner::kColl,
    .place = coll_place,
    .reset = coll_reset,
    // Its communicators' collectives fail.
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) coll_qp_gone(m, qpn);
        },
    // Its collectives fail everywhere (a node first heard from is in none).
    .node_failed =
        [](Impl& m, uint16_t node, NodeLoss why) {
          if (why != NodeLoss::kFirstContact) coll_node_failed(m, node);
        },
    .next_deadline = coll_next_deadline,
    .fw_kinds = kFwKinds,
    .on_fw_message = [](Impl& m, Peer& p,
                        const Packet& pkt) { coll_receive(m, p, pkt); },
    // A segment, an ABORT or a liveness probe.
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { coll_fw_done(m, cookie, syndrome); },
    .frames = kFrames,
    .caps = RHN_CAP_COLL_SWITCH,
};

}  // namespace rhinet::fw
