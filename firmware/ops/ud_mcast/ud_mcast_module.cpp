// SPDX-License-Identifier: BSD-2-Clause
// Verbs UD multicast's entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/ud_mcast/ud_mcast.h"

namespace rhinet::fw {
namespace {

// A datagram to a UD group: unsequenced, outside the channels.
FrameClaim claim_data(const Impl&, const Packet& pkt) {
  return pkt.hdr.dst_node >= RHN_NODE_MCAST_UD_FIRST &&
                 pkt.hdr.dst_node != RHN_NODE_BROADCAST
             ? FrameClaim::kMine
             : FrameClaim::kNotMine;
}

// The switch's answer to a join or leave.
FrameClaim claim_mgmt(const Impl&, const Packet&) { return FrameClaim::kMine; }

constexpr FrameRoute kFrames[] = {
    {RHN_PKT_MGMT, claim_mgmt,
     [](Impl& m, const Packet& pkt) { ud_mcast_mgmt(m, pkt); }},
    {RHN_PKT_DATA,
     claim_data,
     [](Impl& m, const Packet& pkt) { ud_mcast_receive(m, pkt); },
     0,
     {},
     true},
};
constexpr uint16_t kAdminOps[] = {RHN_ADMIN_ATTACH_MCAST,
                                  RHN_ADMIN_DETACH_MCAST};

// The kernel's attach_mcast / detach_mcast for a QP of `ctx`.
rhn_admin_status admin(Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                       uint32_t&, uint32_t& detail) {
  return ud_mcast_attach(m, ctx, cmd.u.mcast_attach,
                         cmd.hdr.opcode == RHN_ADMIN_ATTACH_MCAST, detail);
}

void query_device(const Impl& m, rhn_device_attr& a) {
  a.max_mcast_attach = static_cast<uint32_t>(m.ud_mcast.attaches.size());
  a.mcast_attach_per_context = m.ud_mcast.context_quota;
}

}  // namespace

extern const FamilyModule kUdMcastModule{
    .name = "ud_mcast",
    .id = FwOwner::kUdMcast,
    .place = ud_mcast_place,
    .reset = ud_mcast_reset,
    // Its attachments end with the QP (not at a reset: the kernel detaches).
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why == QpGone::kDestroyed) ud_mcast_qp_gone(m, qpn);
        },
    // Switch joins and leaves not answered yet.
    .next_deadline = ud_mcast_next_deadline,
    .frames = kFrames,
    .admin_ops = kAdminOps,
    .on_admin = admin,
    .caps = RHN_CAP_UD_MCAST,
    .query_device = query_device,
    .send_to_group =
        [](Impl& m, QpObj& qp, uint32_t qpn, Inflight& e, const DecodedWqe& w,
           uint8_t* syndrome) {
          return ud_mcast_send(m, qp, qpn, e, w, syndrome);
        },
};

}  // namespace rhinet::fw
