// SPDX-License-Identifier: BSD-2-Clause
// The reliable node-to-node channel (004 section 4): per-destination serial
// numbers, cumulative ACKs, NAK on a gap, go-back-N retransmission from the
// send-packet memory, retransmission timeouts with back-off, and a peer
// declared dead after bounded retries.
#include <cstring>

#include "core/crc32c.h"
#include "engine/engine_impl.h"

namespace rhinet::fw {

uint32_t Engine::Impl::peer_for(uint16_t node, bool create) {
  if (node >= RHN_MAX_NODES) return kNone;
  if (peer_of_node[node]) return peer_of_node[node] - 1u;
  if (!create) return kNone;
  for (uint32_t i = 0; i < peers.size(); i++) {
    Peer& p = *peers[i];
    if (p.valid) continue;
    p.valid = true;
    p.node = node;
    p.tx_session = session_seed++;
    if (session_seed == 0) session_seed = 1;
    p.tx_syn = true;
    peer_of_node[node] = static_cast<uint16_t>(i + 1);
    active_peers.push_back(i);
    return i;
  }
  return kNone;
}

bool Engine::Impl::can_send(const Peer& p, bool response) const {
  // Responses bypass the window and use a reserve of the send memory, so
  // a responder can always answer: ACKs then always flow and both sides
  // drain even when each one's window is full.
  if (response) return !free_slots.empty() && !p.unacked.full();
  return free_slots.size() > response_reserve &&
         p.unacked.size() < cfg.channel_window;
}

uint32_t Engine::Impl::begin_data() {
  const uint32_t slot = free_slots.front();
  free_slots.pop();
  return slot;
}

uint32_t Engine::Impl::commit_data(Peer& p, uint32_t slot, const rhn_op_hdr& op,
                                   uint32_t payload_len, bool ack_req,
                                   uint32_t qpn, uint32_t qp_gen,
                                   bool completes_message) {
  SendSlot& s = slots[slot];
  const uint32_t pcrc =
      payload_len ? crc32c(0, s.frame + RHN_DATA_HDR_LEN, payload_len) : 0;
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = p.node;
  h.src_node = cfg.node_id;
  h.seq = p.tx_next++;
  h.session = p.tx_session;
  h.payload_len = static_cast<uint16_t>(payload_len);
  h.flags = (p.tx_syn ? RHN_PKT_F_SYN : 0) | (ack_req ? RHN_PKT_F_ACK_REQ : 0);
  if (p.rx_synced) {
    // Piggyback our receive state; it replaces a separate ACK.
    h.flags |= RHN_PKT_F_ACK_VALID;
    h.ack_session = p.rx_session;
    h.ack_seq = p.rx_expected;
    p.rx_unacked = 0;
    p.ack_deadline = 0;
  }
  s.len = static_cast<uint16_t>(seal_packet(s.frame, h, &op, pcrc));
  s.serial = h.seq;
  s.qpn = qpn;
  s.qp_gen = qp_gen;
  s.completes_message = completes_message;
  p.unacked.push(slot);
  if (p.unacked.size() == 1) p.rto_deadline = now + rto(p);
  if (p.resend_pos == p.unacked.size() - 1) p.resend_pos++;
  transmit(p.node, {s.frame, s.len});
  return h.seq;
}

uint32_t Engine::Impl::send_data(Peer& p, const rhn_op_hdr& op,
                                 std::span<const uint8_t> payload, bool ack_req,
                                 uint32_t qpn, uint32_t qp_gen,
                                 bool completes_message) {
  const uint32_t slot = begin_data();
  if (!payload.empty())
    std::memcpy(slots[slot].frame + RHN_DATA_HDR_LEN, payload.data(),
                payload.size());
  return commit_data(p, slot, op, static_cast<uint32_t>(payload.size()),
                     ack_req, qpn, qp_gen, completes_message);
}

void Engine::Impl::transmit(uint16_t node, std::span<const uint8_t> frame) {
  counters.add(RHN_CNT_TX_PACKETS);
  counters.add(RHN_CNT_TX_BYTES, frame.size());
  if (!link_up.load(std::memory_order_relaxed)) return;  // lost on the wire
  if (node == cfg.node_id) {
    // Loopback: the NIC turns the frame around without the switch.
    if (!rx.push_with([&](RxFrame& f) {
          f.len = static_cast<uint16_t>(frame.size());
          std::memcpy(f.data, frame.data(), frame.size());
        }))
      counters.add(RHN_CNT_RX_DROPS);
    return;
  }
  wire.transmit(frame);
}

void Engine::Impl::send_ack(Peer& p, uint8_t type, uint16_t flags,
                            uint16_t ack_session) {
  alignas(8) uint8_t frame[RHN_PKT_HDR_LEN];
  rhn_pkt_hdr h{};
  h.type = type;
  h.dst_node = p.node;
  h.src_node = cfg.node_id;
  h.seq = p.tx_next;
  h.session = p.tx_session;
  h.flags = flags;
  h.ack_session = ack_session;
  h.ack_seq = p.rx_expected;
  seal_packet(frame, h, nullptr, 0);
  if (type == RHN_PKT_ACK) {
    counters.add(RHN_CNT_ACKS_SENT);
    p.rx_unacked = 0;
    p.ack_deadline = 0;
  } else {
    counters.add(RHN_CNT_NAKS_SENT);
  }
  transmit(p.node, {frame, sizeof(frame)});
}

void Engine::Impl::adopt_session(Peer& p, uint16_t session) {
  // The peer started a new stream towards us (first contact or after it
  // declared us dead / was reset). A SEND it left half-way is abandoned.
  p.rx_synced = true;
  p.rx_session = session;
  p.rx_expected = 0;
  p.rx_unacked = 0;
  p.nak_sent = false;
  p.nak_qpn = kNone;
  if (p.rx_msg.active && !p.rx_msg.discard) {
    p.rx_msg.status = RHN_CQE_GENERAL_ERR;
    complete_receive(p.rx_msg, p.node, 0, RHN_CQE_OP_RECV, 0, 0);
  }
  p.rx_msg.active = false;
  release_gated(p);
}

void Engine::Impl::receive_frame(std::span<const uint8_t> frame) {
  Packet pkt;
  switch (parse_packet(frame, pkt)) {
    case ParseStatus::kOk:
      break;
    case ParseStatus::kMalformed:
      counters.add(RHN_CNT_MALFORMED_PACKETS);
      return;
    case ParseStatus::kBadCrc:
      counters.add(RHN_CNT_CRC_ERRORS);
      return;
  }
  const rhn_pkt_hdr& h = pkt.hdr;
  if (h.type == RHN_PKT_RAW && h.src_node < RHN_MAX_NODES &&
      (h.dst_node == cfg.node_id || h.dst_node >= RHN_NODE_MCAST_FIRST)) {
    // Broadcast and group frames too: the switch delivers only to members.
    counters.add(RHN_CNT_RX_PACKETS);
    counters.add(RHN_CNT_RX_BYTES, frame.size());
    receive_raw_frame(pkt);
    return;
  }
  if (h.dst_node != cfg.node_id || h.src_node >= RHN_MAX_NODES ||
      h.type == RHN_PKT_RAW) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  counters.add(RHN_CNT_RX_PACKETS);
  counters.add(RHN_CNT_RX_BYTES, frame.size());

  if (h.type == RHN_PKT_ACK || h.type == RHN_PKT_NAK) {
    const uint32_t pi = peer_for(h.src_node, false);
    if (pi == kNone) return;
    Peer& p = *peers[pi];
    if (h.ack_session != p.tx_session) return;  // about an old stream
    if (h.type == RHN_PKT_NAK && (h.flags & RHN_PKT_F_RESYNC)) {
      // The peer lost its state for our stream: nothing outstanding can
      // be trusted to have happened.
      peer_failed(pi);
      return;
    }
    accept_acks(p, h.ack_seq, h.ack_session, h.session, h.seq);
    if (h.type == RHN_PKT_ACK) {
      counters.add(RHN_CNT_ACKS_RECEIVED);
      return;
    }
    counters.add(RHN_CNT_NAKS_RECEIVED);
    if (p.unacked.empty()) return;
    const uint32_t first = slots[p.unacked.front()].serial;
    const uint32_t pos = h.ack_seq - first;
    if (pos < p.unacked.size() && pos < p.resend_pos) p.resend_pos = pos;
    return;
  }

  // DATA
  const uint32_t pi = peer_for(h.src_node, true);
  if (pi == kNone) {
    counters.add(RHN_CNT_RX_DROPS);
    return;
  }
  Peer& p = *peers[pi];
  if (!p.rx_synced || h.session != p.rx_session) {
    if (!(h.flags & RHN_PKT_F_SYN)) {
      // A stream we know nothing about: we were reset under the sender.
      counters.add(RHN_CNT_OUT_OF_ORDER);
      send_ack(p, RHN_PKT_NAK, RHN_PKT_F_RESYNC, h.session);
      return;
    }
    adopt_session(p, h.session);
  }
  if (h.seq != p.rx_expected) {
    if (seq_before(h.seq, p.rx_expected)) {
      counters.add(RHN_CNT_DUPLICATES);
      send_ack(p, RHN_PKT_ACK, 0, p.rx_session);  // stop the resending
    } else {
      counters.add(RHN_CNT_OUT_OF_ORDER);
      if (!p.nak_sent) {
        p.nak_sent = true;
        send_ack(p, RHN_PKT_NAK, 0, p.rx_session);
      }
    }
    return;
  }
  const uint8_t wop = pkt.op.opcode;
  const bool is_request = wop < RHN_WOP_READ_RESP;
  if (is_request && !responder_has_room(p, pkt.op)) {
    // Not accepted: as if lost; the sender resends it after a timeout.
    counters.add(RHN_CNT_RX_DROPS);
    return;
  }
  p.rx_expected++;
  p.nak_sent = false;
  p.rx_unacked++;
  if (is_request)
    handle_request(p, pi, pkt);
  else
    handle_response(p, pkt);
  // Acknowledgements ride after the operation: a NAK in this very packet
  // has been applied before anything it covers completes.
  if (h.flags & RHN_PKT_F_ACK_VALID)
    accept_acks(p, h.ack_seq, h.ack_session, h.session, h.seq + 1);
  release_gated(p);
  if ((h.flags & RHN_PKT_F_ACK_REQ) || p.rx_unacked >= cfg.ack_coalesce)
    send_ack(p, RHN_PKT_ACK, 0, p.rx_session);
  else if (!p.ack_deadline)
    p.ack_deadline = now + cfg.ack_delay_ns;
}

void Engine::Impl::accept_acks(Peer& p, uint32_t ack_seq, uint16_t ack_session,
                               uint16_t session, uint32_t seq) {
  if (ack_session != p.tx_session) return;
  if (seq_before(p.tx_next, ack_seq)) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);  // acks what we never sent
    return;
  }
  p.tx_syn = false;
  if (seq_before(p.acked_seen, ack_seq)) {
    p.acked_seen = ack_seq;
    p.retries = 0;
    p.rto_deadline = now + rto(p);
  }
  Gate g{ack_seq, session, seq};
  if (p.gates.full()) {
    // Merge into the newest gate: it covers more and waits longer.
    p.gates.at(p.gates.size() - 1) = g;
  } else {
    p.gates.push(g);
  }
  release_gated(p);
}

void Engine::Impl::release_gated(Peer& p) {
  bool freed = false;
  while (!p.gates.empty()) {
    const Gate g = p.gates.front();
    bool open;
    if (!p.rx_synced)
      open = g.seq == 0;  // the peer had sent us nothing
    else if (g.session != p.rx_session)
      open = true;  // that reverse stream is gone
    else
      open = !seq_before(p.rx_expected, g.seq);
    if (!open) break;
    p.gates.pop();
    while (!p.unacked.empty()) {
      const uint32_t id = p.unacked.front();
      SendSlot& s = slots[id];
      if (!seq_before(s.serial, g.ack_seq)) break;
      p.unacked.pop();
      if (p.resend_pos) p.resend_pos--;
      free_slots.push(id);
      freed = true;
      if (s.completes_message)
        message_acked(s.qpn, s.qp_gen, s.serial,
                      static_cast<uint16_t>(p.index));
    }
  }
  if (freed) {
    p.rto_deadline = p.unacked.empty() ? 0 : now + rto(p);
    wake_peer_waiters(p.index);
  }
}

bool Engine::Impl::service_peer(uint32_t pi) {
  Peer& p = *peers[pi];
  bool did = false;
  // Go-back-N: resend from resend_pos, refreshing the piggybacked ACK.
  for (uint32_t n = 0; n < 32 && p.resend_pos < p.unacked.size(); n++) {
    SendSlot& s = slots[p.unacked.at(p.resend_pos++)];
    rhn_pkt_hdr h;
    std::memcpy(&h, s.frame, sizeof(h));
    h.flags &= static_cast<uint16_t>(~RHN_PKT_F_ACK_VALID);
    if (p.tx_syn) h.flags |= RHN_PKT_F_SYN;
    if (p.rx_synced) {
      h.flags |= RHN_PKT_F_ACK_VALID;
      h.ack_session = p.rx_session;
      h.ack_seq = p.rx_expected;
    }
    std::memcpy(s.frame, &h, sizeof(h));
    reseal_header(s.frame);
    counters.add(RHN_CNT_RETRANSMITS);
    transmit(p.node, {s.frame, s.len});
    did = true;
  }
  if (!p.unacked.empty() && now >= p.rto_deadline) {
    counters.add(RHN_CNT_TIMEOUTS);
    if (++p.retries > cfg.max_retries) {
      peer_failed(pi);
      return true;
    }
    p.resend_pos = 0;
    p.rto_deadline = now + rto(p);
    did = true;
  }
  if (p.ack_deadline && now >= p.ack_deadline) {
    send_ack(p, RHN_PKT_ACK, 0, p.rx_session);
    did = true;
  }
  did |= stream_reads(p);
  return did;
}

void Engine::Impl::peer_failed(uint32_t pi) {
  Peer& p = *peers[pi];
  counters.add(RHN_CNT_PEER_DEAD);
  // Drop the send-packet memory towards it.
  while (!p.unacked.empty()) {
    free_slots.push(p.unacked.front());
    p.unacked.pop();
  }
  p.gates.clear();
  p.resend_pos = 0;
  p.retries = 0;
  p.rto_deadline = 0;
  // A new session: the next packet re-synchronises the peer.
  p.tx_session = session_seed++;
  if (session_seed == 0) session_seed = 1;
  p.tx_syn = true;
  p.tx_next = 0;
  p.acked_seen = 0;
  while (!p.reads.empty()) {
    responder_reads[p.reads.front()].used = false;
    free_responder_reads.push(p.reads.front());
    p.reads.pop();
  }
  // Everything outstanding towards it fails.
  for (uint32_t q = 0; q < qps.size(); q++) {
    QpObj& qp = qps[q];
    if (!qp.valid) continue;
    bool hit = false;
    for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
      Inflight& e = entry(q, i);
      if (e.peer != pi || e.state == MsgState::kDone) continue;
      if (qp.tx_active && qp.tx_entry == i) abort_tx(qp, q);
      e.state = MsgState::kDone;
      e.status = RHN_CQE_RETRY_EXC_ERR;
      e.syndrome = RHN_SYN_RETRY_EXCEEDED;
      release_read_ctx(e);
      if (e.opcode == RHN_OP_READ || is_atomic(e.opcode))
        qp.outstanding_reads--;
      hit = true;
    }
    if (hit) complete_in_order(q);
  }
  p.send_owner = kNone;
  wake_peer_waiters(pi);
}

}  // namespace rhinet::fw
