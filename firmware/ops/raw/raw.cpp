// SPDX-License-Identifier: BSD-2-Clause
// Raw frames: the Ethernet frames of the kernel's net_device, one frame a
// packet, unsequenced (RHN_PKT_RAW): out on the wire at once and complete,
// and on arrival into the raw QP's next receive WQE or dropped (counted).
#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

uint8_t check(Impl&, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome) {
  if (qp.type != RHN_QP_RAW_ETH) {  // only the kernel's raw-frame QP
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.length > RHN_WIRE_MTU ||
      (w.flags & (RHN_WQE_F_AREA | RHN_WQE_F_STATUS_WORD | RHN_WQE_F_GRH))) {
    *syndrome = RHN_SYN_LENGTH;
    return RHN_CQE_LOC_LEN_ERR;
  }
  // Any node, the broadcast address or a switch group.
  return RHN_CQE_SUCCESS;
}

// Gathered from the WQE and sent as one unsequenced RAW packet.
uint8_t send_unsequenced(Impl& m, QpObj& qp, const DecodedWqe& w) {
  uint8_t* payload = m.raw_frame.data() + RHN_PKT_HDR_LEN;
  const uint32_t len = static_cast<uint32_t>(w.length);
  if (w.flags & RHN_WQE_F_INLINE) {
    // Inline bytes run on from the first slot into the extension slots.
    memcpy(payload, qp.tx_raw.bytes + RHN_OFFSETOF(rhn_send_wqe, d), len);
  } else if (!gather(m, qp, w, 0, payload, len)) {
    return RHN_CQE_LOC_PROT_ERR;
  }
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_RAW;
  h.dst_node = w.dst_node;
  h.src_node = m.cfg.node_id;
  h.payload_len = static_cast<uint16_t>(len);
  const size_t frame_len = seal_packet(m.raw_frame.data(), h, nullptr,
                                       len ? crc32c(0, payload, len) : 0);
  // Counted, dropped on a down link, looped back when sent to ourselves:
  // the same way out as every other frame.
  m.transmit(w.dst_node, {m.raw_frame.data(), frame_len});
  return RHN_CQE_SUCCESS;
}

}  // namespace

void Engine::Impl::receive_raw_frame(const Packet& pkt) {
  if (raw_qpn == kNone || !qps[raw_qpn].valid ||
      (qps[raw_qpn].state != RHN_QPS_RTR &&
       qps[raw_qpn].state != RHN_QPS_RTS)) {
    counters.add(RHN_CNT_UD_DROPS);
    return;
  }
  QpObj& qp = qps[raw_qpn];
  RxContext m;
  if (!take_recv_wqe(qp, raw_qpn, m)) {
    counters.add(RHN_CNT_UD_DROPS);
    return;
  }
  if (m.status == RHN_CQE_SUCCESS && pkt.payload.size() > m.capacity)
    m.status = RHN_CQE_LOC_LEN_ERR;
  if (m.status == RHN_CQE_SUCCESS &&
      !sge_dma(m.sge, m.num_sge, 0, const_cast<uint8_t*>(pkt.payload.data()),
               pkt.payload.size(), m.pdn, true))
    m.status = RHN_CQE_LOC_PROT_ERR;
  if (m.status == RHN_CQE_SUCCESS)
    m.length = static_cast<uint32_t>(pkt.payload.size());
  complete_receive(m, pkt.hdr.src_node, 0, RHN_CQE_OP_RECV_RAW_ETH, 0, 0);
}

extern const OpFamily kRawFamily = {
    .name = "raw",
    .check = check,
    .send_unsequenced = send_unsequenced,
    .execute_local = nullptr,
    .build_packet = nullptr,
    .on_response = nullptr,
    .has_room = nullptr,
    .on_request = nullptr,
};

}  // namespace rhinet::fw
