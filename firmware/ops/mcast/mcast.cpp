// SPDX-License-Identifier: BSD-2-Clause
// Sequential multicast (a multicast list): one WQE, a PUSH by area to every
// endpoint of a destination list in host memory. The requester asks this
// family for the destinations one at a time (next_destination) and sends
// each an ordinary WRITE message on that node's reliable channel, so
// retransmission, ordering and a dead member are the channel's business;
// the WQE completes with its last destination (requester.cpp). The packets
// are the WRITE family's, partial modes included; at the targets they are
// WRITEs (ops/rdma).
#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"

namespace rhinet::fw {

extern const OpFamily kRdmaFamily;

namespace {

// The WQE's last slot names the destination list.
rhn_wqe_mcast list_of(const DecodedWqe& w) {
  return family_slot<rhn_wqe_mcast>(w);
}

rhn_sge list_sge(const rhn_wqe_mcast& l) {
  return rhn_sge{l.list_addr,
                 static_cast<uint32_t>(l.count * sizeof(rhn_mcast_dest)),
                 l.list_lkey};
}

// The list's description: no reserved bytes set, 1..RHN_MCAST_MAX_DESTS
// destinations.
rhn_syndrome decode_list(const RawWqe&, const DecodedWqe& out) {
  const rhn_wqe_mcast l = list_of(out);
  for (uint8_t b : l.reserved)
    if (b) return RHN_SYN_BAD_WQE;
  if (l.count == 0 || l.count > RHN_MCAST_MAX_DESTS) return RHN_SYN_BAD_WQE;
  return RHN_SYN_NONE;
}

bool valid_destination(Impl& m, const rhn_mcast_dest& d) {
  return d.reserved == 0 && d.node < RHN_NODE_MCAST_FIRST &&
         m.peer_for(d.node) != nullptr;
}

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // By area (the same address at every member), nothing of a unicast.
  if (!(w.flags & RHN_WQE_F_AREA) || w.dst_node || w.dst_qpn) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // The list is read whole once, when the first destination is taken.
  if (qp.fanout_next == 0) {
    const uint32_t count = list_of(w).count;
    const rhn_sge list = list_sge(list_of(w));
    const rhn_syndrome s = m.check_key(list.lkey, kNone, qp.pdn, 0, list.addr,
                                       list.length, nullptr);
    if (s != RHN_SYN_NONE) {
      *syndrome = s;
      return RHN_CQE_LOC_PROT_ERR;
    }
    rhn_mcast_dest batch[64];
    for (uint32_t i = 0; i < count; i += 64) {
      const uint32_t n = min<uint32_t>(64, count - i);
      if (!m.sge_dma(&list, 1, uint64_t{i} * sizeof(rhn_mcast_dest),
                     reinterpret_cast<uint8_t*>(batch),
                     n * sizeof(rhn_mcast_dest), qp.pdn, false)) {
        *syndrome = RHN_SYN_DMA;
        return RHN_CQE_LOC_PROT_ERR;
      }
      for (uint32_t k = 0; k < n; k++) {
        if (!valid_destination(m, batch[k])) {
          *syndrome = RHN_SYN_BAD_WQE;
          return RHN_CQE_LOC_QP_OP_ERR;
        }
      }
    }
  }
  if (w.xfer_mode != RHN_XFER_BASIC) return partial::check(m, qp, w, syndrome);
  return RHN_CQE_SUCCESS;
}

bool next_destination(Impl& m, QpObj& qp, const DecodedWqe& w, uint32_t index,
                      uint16_t* node, uint32_t* qpn, uint32_t* count) {
  const rhn_wqe_mcast l = list_of(w);
  const rhn_sge list = list_sge(l);
  rhn_mcast_dest d;
  *count = l.count;
  if (index >= l.count ||
      !m.sge_dma(&list, 1, uint64_t{index} * sizeof(d),
                 reinterpret_cast<uint8_t*>(&d), sizeof(d), qp.pdn, false) ||
      !valid_destination(m, d))
    return false;  // changed under the NIC since check()
  *node = d.node;
  *qpn = d.qpn;
  return true;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  return kRdmaFamily.build_packet(m, qp, w, offset, op, out);
}

void on_response(Impl& m, Peer& p, uint32_t qpn, Inflight& e,
                 const Packet& pkt) {
  kRdmaFamily.on_response(m, p, qpn, e, pkt);
}

}  // namespace

// Requester only: what reaches the targets is a WRITE (ops/rdma).
extern const OpFamily kMcastFamily = {
    .name = "mcast",
    .decode = decode_list,
    .check = check,
    .build_packet = build_packet,
    .on_response = on_response,
    .next_destination = next_destination,
};

}  // namespace rhinet::fw
