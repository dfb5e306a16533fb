// SPDX-License-Identifier: BSD-2-Clause
// The receive placement block (EngineConfig::rx_write,
// RHN_CARD_CAP_RX_WRITE; Documentation/hardware/soft-core.md): the core's
// side. The block places a plain RC WRITE's payload when the frame's
// channel is armed (session, next serial) and its QP has a target (peer,
// rkey, region, bounds). Both tables hold only what the core wrote from
// its own state, and the core takes back what changes: a target on every
// admin command (flush), a QP moved to error or blocked by an RNR NAK; a
// channel when the peer is reset or starts a new session, and the block
// disarms a channel itself on any DATA frame of it that it hands over
// unplaced. So a placed frame is one fast_write would have taken, and
// the core does the rest of what fast_write does: the channel's
// bookkeeping. A frame placed before the core's state moved (the block
// reports it placed only while no flush or clear came after it) goes the
// generic way, as without the block.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "transport/channel_inline.h"
#include "transport/packet.h"

namespace rhinet::fw {

// True when the frame was the block's to place: the caller counts it
// (RX_PACKETS, RX_BYTES once per call of take_placed).
[[gnu::always_inline]] inline bool Engine::Impl::placed_write(
    Span<const uint8_t> frame) {
  const uint8_t* f = frame.data();
  const auto src = field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node));
  const auto seq = field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, seq));
  const auto session =
      field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, session));
  Peer& p = peers[src < cfg.max_nodes ? src : 0];
  // What fast_write checks that changes between frames without the block
  // hearing of it: the room for a NAK (the generic path drops the frame
  // without it; its bytes landed early, a resend writes the same ones).
  if (src >= cfg.max_nodes || !p.rxw_armed || session != p.rx_session ||
      seq != p.rx_expected || !can_send_now(p, kNone)) {
    // The block moved its channel on past this frame: set it back.
    if (src < cfg.max_nodes) {
      p.rxw_armed = false;
      rx_source->disarm(src);
    }
    receive_frame(frame);
    return false;
  }
  p.dead_until = 0;
  took_in_order(p);
  // The NAK memory is empty: the block is armed only then, and a refusal
  // comes from a frame it handed over, which disarmed it.
  data_done(p, field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, flags)), seq,
            session, field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_seq)),
            field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_session)));
  return true;
}

bool Engine::Impl::take_placed(uint32_t budget) {
  uint32_t n = 0;
  // The counters of the frames the block placed, added once.
  uint32_t placed = 0, placed_bytes = 0;
  for (; n < budget; n++) {
    const uint8_t* frame = nullptr;
    const size_t len = rx_source->peek(&frame);
    if (!len) break;
    // What take_in_place does, and the block's frames and arms.
    uint32_t missed = kNone;
    if (len > sizeof(RxFrame::data)) {
      counters.add(RHN_CNT_MALFORMED_PACKETS);
    } else if (!link_up.load(MemOrder::kRelaxed)) {
      // Dropped: a frame the block placed moved its channel on, so the
      // block's channel is set back (disarmed) as for one it did not.
      missed = rxw_missed(frame, len);
      if (missed != kNone) rx_source->disarm(static_cast<uint16_t>(missed));
    } else if (rx_source->placed()) {
      if (placed_write({frame, len})) {
        placed++;
        placed_bytes += static_cast<uint32_t>(len);
      }
    } else {
      missed = rxw_missed(frame, len);
      receive_frame({frame, len});
      if (missed != kNone) rxw_note_target(frame, len);
    }
    rx_source->pop();
    // The block takes an arm only with no frame of that node left queued.
    if (missed != kNone) rxw_arm(missed);
  }
  if (placed) {
    counters.add(RHN_CNT_RX_PACKETS, placed);
    counters.add(RHN_CNT_RX_BYTES, placed_bytes);
  }
  return n != 0;
}

uint32_t Engine::Impl::rxw_missed(const uint8_t* f, size_t len) {
  // The block disarms the channel of every DATA frame it does not place.
  if (len < RHN_PKT_HDR_LEN ||
      f[RHN_OFFSETOF(rhn_pkt_hdr, type)] != RHN_PKT_DATA)
    return kNone;
  const auto src = field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node));
  if (src >= cfg.max_nodes) return kNone;
  peers[src].rxw_armed = false;
  return src;
}

void Engine::Impl::rxw_arm(uint32_t node) {
  Peer& p = peers[node];
  if (p.rxw_armed || !p.rx_synced || node == cfg.node_id) return;
  for (const auto& n : p.naks)
    if (n.src != kNone) return;
  // A family that claims plain WRITEs to this node: not the block's.
  if (modules.filter.may_route_fields(RHN_PKT_DATA, cfg.node_id, RHN_WOP_WRITE,
                                      cfg.node_id))
    return;
  p.rxw_armed =
      rx_source->arm(static_cast<uint16_t>(node), p.rx_session, p.rx_expected);
}

void Engine::Impl::rxw_disarm(Peer& p) {
  if (!p.rxw_armed) return;
  p.rxw_armed = false;
  rx_source->disarm(node_of(p));
}

void Engine::Impl::rxw_note_target(const uint8_t* f, size_t len) {
  if (!plain_rc_write({f, len})) return;
  const auto qpn = field_at<uint32_t>(
      f, RHN_PKT_HDR_LEN + RHN_OFFSETOF(rhn_op_hdr, dst_qpn));
  if (!qpn || qpn >= qps.size()) return;
  QpObj& qp = qps[qpn];
  // What fast_write asks of the QP; the block asks the rest of each
  // frame (the peer, the key, the bounds). The rkey cached in this epoch
  // was checked for this QP, its PD and remote writes; only a key whose
  // region the block can walk is kept with its region.
  const KeyCache& k = qp.rx_key;
  if (qp.rxw_epoch == mr_epoch || !qp.valid || qp.type != RHN_QP_RC ||
      qp.state < RHN_QPS_RTR || qp.state == RHN_QPS_ERR || qp.rnr_blocked ||
      !(qp.access & RHN_ACCESS_REMOTE_WRITE) ||
      !k.region_of(k.mr_index, mr_epoch))
    return;
  RxSource::Target t;
  t.region = k.region;
  t.iova = k.iova;
  t.length = k.length;
  t.rkey = k.key;
  t.peer_qpn = qp.dest_qpn;
  t.peer_node = static_cast<uint16_t>(qp.dest_node);
  rx_source->target(qpn, &t);
  qp.rxw_epoch = mr_epoch;
}

void Engine::Impl::rxw_clear_target(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  if (!rx_write || !qp.rxw_epoch) return;
  qp.rxw_epoch = 0;
  rx_source->target(qpn, nullptr);
}

}  // namespace rhinet::fw
