// SPDX-License-Identifier: BSD-2-Clause
// The fast path of the most common arriving packet: a plain RDMA WRITE
// (no immediate, area, signal, strides or runs) on an RC QP, in order on
// its channel. It reads the headers in place instead of copying them into
// a Packet, and goes from the channel's checks straight to the key check
// and the DMA instead of through the family tables. Every check it makes
// comes before anything changes: a packet that fails one is handed to the
// generic path (receive_frame), which does exactly what it always did.
// What is done here is what the generic path would do, in the same order
// where order shows (counters, NAK memory, the data, the ACK).
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "transport/channel_inline.h"

namespace rhinet::fw {

bool Engine::Impl::fast_write(Span<const uint8_t> frame) {
  // receive_frame asked plain_rc_write() first.
  const uint8_t* f = frame.data();
  if (reinterpret_cast<uintptr_t>(f) & 7) return false;
  constexpr size_t kOp = RHN_PKT_HDR_LEN;
  const uint8_t flags = f[kOp + RHN_OFFSETOF(rhn_op_hdr, flags)];
  // The channel: a known node's current session, the serial expected next.
  const auto dst = field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, dst_node));
  const auto src = field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node));
  const auto seq = field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, seq));
  const auto session =
      field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, session));
  if (dst != cfg.node_id || src >= cfg.max_nodes) return false;
  Peer& p = peers[src];
  if (!p.rx_synced || session != p.rx_session || seq != p.rx_expected ||
      !can_send_now(p, kNone))
    return false;
  // No family claims a plain WRITE to this node outside the channels.
  if (modules.filter.may_route_fields(RHN_PKT_DATA, dst, RHN_WOP_WRITE,
                                      cfg.node_id))
    return false;
  // The target QP: connected to the sender's QP, ready, not refusing.
  const auto qpn =
      field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, dst_qpn));
  const auto src_full =
      field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, src_qpn));
  const auto msn = field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msn));
  if (!qpn || qpn >= qps.size()) return false;
  QpObj& qp = qps[qpn];
  if (!qp.valid || qp.type != RHN_QP_RC || qp.state < RHN_QPS_RTR ||
      qp.state == RHN_QPS_ERR || qp.dest_node != src ||
      qp.dest_qpn != (src_full & RHN_WIRE_QPN_MASK) || qp.rnr_blocked)
    return false;
  const bool first = flags & RHN_WOP_F_FIRST;
  if (!first && nak_remembered(p, src_full, msn)) return false;
  // The target: what the generic path checks (the first packet answers
  // for the rest of the message), and a region not pinned on demand.
  const auto payload_len =
      field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_len));
  const auto msg_len =
      field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_len));
  const auto msg_offset =
      field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_offset));
  const auto va =
      field_at<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr));
  uint64_t extent = payload_len;
  if (first && msg_len > msg_offset)
    extent = max<uint64_t>(extent, msg_len - msg_offset);
  uint32_t mr_index = kNone;
  if (msg_len != 0 || extent != 0) {
    if (!(qp.access & RHN_ACCESS_REMOTE_WRITE)) return false;
    const auto rkey =
        field_at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, rkey));
    if (check_key_cached(qp.rx_key, rkey, qp.pdn, RHN_ACCESS_REMOTE_WRITE, va,
                         extent, &mr_index, qpn) != RHN_SYN_NONE ||
        (extent && mrs[mr_index].on_demand))
      return false;
  }
  // Last: the frame itself (lengths and CRCs), as parse_packet checks it.
  if (!data_frame_ok(frame, !cfg.mac_crc)) return false;

  counters.add(RHN_CNT_RX_PACKETS);
  counters.add(RHN_CNT_RX_BYTES, frame.size());
  p.dead_until = 0;
  took_in_order(p);
  if (first) nak_forget(p, src_full);
  if (payload_len &&
      !key_dma(qp.rx_key, mr_index, va,
               const_cast<uint8_t*>(f + RHN_DATA_HDR_LEN), payload_len, true)) {
    rhn_op_hdr op;
    copy_small(&op, f + kOp, sizeof op);
    lane_only = false;
    refuse(*this, p, op, RHN_SYN_DMA);
  }
  data_done(p, field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, flags)), seq,
            session, field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_seq)),
            field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_session)));
  return true;
}

}  // namespace rhinet::fw
