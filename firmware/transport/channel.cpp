// SPDX-License-Identifier: BSD-2-Clause
// The reliable node-to-node channel: per-destination serial
// numbers, cumulative ACKs, NAK on a gap, go-back-N retransmission from the
// send-packet memory, retransmission timeouts with back-off, a peer
// declared dead after bounded retries, and ordered session epochs.
//
// Channel state is a small Peer per node ID; the packets it has not got
// acknowledged yet are a list through the shared send-packet memory. Peers
// are visited only when they have work to do now (peer_ready) or when the
// earliest deadline among those with timers running (the busy list) has
// come, never all of them on every poll.
#include "core/crc32c.h"
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "transport/channel_inline.h"

namespace rhinet::fw {
namespace {

// Serial-number order of 16-bit session epochs.
bool session_before(uint16_t a, uint16_t b) {
  return static_cast<int16_t>(static_cast<uint16_t>(a - b)) < 0;
}

// The gates are full: the newest takes the other's acknowledgement too and
// waits for the later of the two points in the reverse stream. The ACKs
// arrive in any order (the fabric reorders and duplicates), so neither one
// may simply replace the other: a stale ACK that overwrote a newer one
// would leave packets the peer has acknowledged never freed, nor resent.
void merge_gate(Gate& into, const Gate& g) {
  if (seq_before(into.ack_seq, g.ack_seq)) into.ack_seq = g.ack_seq;
  if (into.session != g.session) {
    if (session_before(into.session, g.session)) {
      into.session = g.session;
      into.seq = g.seq;
    }
  } else if (seq_before(into.seq, g.seq)) {
    into.seq = g.seq;
  }
}

}  // namespace

Peer* Engine::Impl::peer_for(uint16_t node) {
  return node < cfg.max_nodes ? &peers[node] : nullptr;
}

void Engine::Impl::reset_peer(Peer& p, uint16_t session) {
  rxw_disarm(p);
  p = Peer{};
  p.tx_session = session;
}

bool Engine::Impl::context_over_quota(uint32_t context) const {
  return !shares.room(context, Res::kTxSlots);
}

bool Engine::Impl::can_send(const Peer& p, uint32_t context) const {
  return can_send_now(p, context);
}

bool Engine::Impl::room_for_request(const Peer& p) const {
  return free_slots.size() > response_reserve &&
         p.unacked_count < cfg.channel_window;
}

uint32_t Engine::Impl::begin_data(uint32_t context) {
  return take_slot(context);
}

void Engine::Impl::return_slot(uint32_t slot) { give_slot(slot); }

uint32_t Engine::Impl::commit_data(Peer& p, uint32_t slot, const rhn_op_hdr& op,
                                   uint32_t payload_len, bool ack_req,
                                   uint32_t qpn, uint32_t qp_gen,
                                   bool completes_message) {
  SendSlot& s = slots[slot];
  const uint32_t pcrc = payload_len && !cfg.mac_crc
                            ? crc32c(0, s.frame + RHN_DATA_HDR_LEN, payload_len)
                            : 0;
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = node_of(p);
  h.src_node = cfg.node_id;
  h.seq = p.tx_next;
  h.session = p.tx_session;
  h.payload_len = static_cast<uint16_t>(payload_len);
  h.flags = (p.tx_syn ? RHN_PKT_F_SYN : 0) | (ack_req ? RHN_PKT_F_ACK_REQ : 0);
  if (p.rx_synced) {
    // Piggyback our receive state; it replaces a separate ACK.
    h.flags |= RHN_PKT_F_ACK_VALID;
    h.ack_session = p.rx_session;
    h.ack_seq = p.rx_expected;
  }
  s.len =
      static_cast<uint16_t>(seal_packet(s.frame, h, &op, pcrc, !cfg.mac_crc));
  const uint32_t seq =
      data_sent(p, slot, qpn, qp_gen, completes_message ? kCompletes : 0);
  transmit(node_of(p), {s.frame, s.len});
  return seq;
}

void Engine::Impl::write_request_header(const Peer& p, uint8_t* f,
                                        const TxTemplate& t, const TxPatch& x) {
  using namespace hdr_word;
  uint32_t flags =
      (p.tx_syn ? RHN_PKT_F_SYN : 0) | (x.ack_req ? RHN_PKT_F_ACK_REQ : 0);
  uint32_t ack_seq = 0, ack_session = 0;
  if (p.rx_synced) {
    flags |= RHN_PKT_F_ACK_VALID;
    ack_session = p.rx_session;
    ack_seq = p.rx_expected;
  }
  put_field<uint32_t>(f, kMagic, t.magic_type);
  put_field<uint32_t>(f, kNodes, t.nodes);
  put_field<uint32_t>(f, kSeq, p.tx_next);
  put_field<uint32_t>(f, kAckSeq, ack_seq);
  put_field<uint32_t>(f, kSessionFlags, p.tx_session | flags << 16);
  put_field<uint32_t>(f, kLenAckSession, x.len | ack_session << 16);
  put_field<uint32_t>(f, kPayloadCrc, 0);
  put_field<uint32_t>(f, kHdrCrc, 0);
  put_field<uint32_t>(f, kOpWord,
                      t.op_base | x.wire_op | uint32_t{x.op_flags} << 8);
  put_field<uint32_t>(f, kDstQpn, t.dst_qpn);
  put_field<uint32_t>(f, kSrcQpn, t.src_qpn);
  put_field<uint32_t>(f, kMsn, x.msn);
  put_field<uint32_t>(f, kRkey, x.rkey);
  put_field<uint32_t>(f, kImm, x.imm);
  put_field<uint64_t>(f, kRemoteAddr, x.remote_addr);
  put_field<uint32_t>(f, kMsgLen, x.len);
  put_field<uint32_t>(f, kMsgOffset, 0);
  if (cfg.mac_crc) return;
  // As seal_packet: the payload's CRC, then the headers' with the field
  // still 0.
  if (x.len)
    put_field<uint32_t>(f, kPayloadCrc, crc32c(0, f + RHN_DATA_HDR_LEN, x.len));
  put_field<uint32_t>(f, kHdrCrc, crc32c(0, f, RHN_DATA_HDR_LEN));
}

uint32_t Engine::Impl::send_data(Peer& p, const rhn_op_hdr& op,
                                 Span<const uint8_t> payload, bool ack_req,
                                 uint32_t qpn, uint32_t qp_gen,
                                 bool completes_message) {
  const uint32_t slot = begin_data(kNone);
  if (!payload.empty())
    memcpy(slots[slot].frame + RHN_DATA_HDR_LEN, payload.data(),
           payload.size());
  return commit_data(p, slot, op, static_cast<uint32_t>(payload.size()),
                     ack_req, qpn, qp_gen, completes_message);
}

void Engine::Impl::transmit(uint16_t node, Span<const uint8_t> frame) {
  if (tx_account(node, frame)) wire.transmit(frame);
}

void Engine::Impl::send_ack(Peer& p, uint8_t type, uint16_t flags,
                            uint16_t ack_session) {
  send_control(p, type, flags, ack_session, p.rx_expected);
}

void Engine::Impl::send_control(Peer& p, uint8_t type, uint16_t flags,
                                uint16_t ack_session, uint32_t ack_seq) {
  // The header written word by word in place, as seal_packet would write
  // it (no payload, no payload CRC), without building it twice first.
  using namespace hdr_word;
  alignas(8) uint8_t frame[RHN_PKT_HDR_LEN];
  put_field<uint32_t>(
      frame, kMagic,
      RHN_WIRE_MAGIC | uint32_t{RHN_WIRE_VERSION} << 16 | uint32_t{type} << 24);
  put_field<uint32_t>(frame, kNodes, node_of(p) | uint32_t{cfg.node_id} << 16);
  put_field<uint32_t>(frame, kSeq, p.tx_next);
  put_field<uint32_t>(frame, kAckSeq, ack_seq);
  put_field<uint32_t>(frame, kSessionFlags,
                      p.tx_session | uint32_t{flags} << 16);
  put_field<uint32_t>(frame, kLenAckSession, uint32_t{ack_session} << 16);
  put_field<uint32_t>(frame, kPayloadCrc, 0);
  put_field<uint32_t>(frame, kHdrCrc, 0);
  if (!cfg.mac_crc)
    put_field<uint32_t>(frame, kHdrCrc, crc32c(0, frame, RHN_PKT_HDR_LEN));
  if (type == RHN_PKT_ACK) {
    counters.add(RHN_CNT_ACKS_SENT);
    p.rx_unacked = 0;
    p.ack_deadline = 0;
  } else {
    counters.add(RHN_CNT_NAKS_SENT);
  }
  transmit(node_of(p), {frame, sizeof(frame)});
}

void Engine::Impl::adopt_session(Peer& p, uint16_t session) {
  // The peer started a new stream towards us (first contact or after it
  // declared us dead / was reset). Receives it left half-way are over.
  // If it was reset it knows nothing of our stream either, and would
  // answer our next packet with a RESYNC that fails it: while nothing of
  // ours is outstanding, our stream starts afresh too (a newer session,
  // SYN), so the peer's new incarnation hears us at once.
  const bool known = p.rx_synced;  // not the first contact
  rxw_disarm(p);
  if (p.rx_synced && p.rx_session != session && !p.tx_syn && !p.unacked_count &&
      p.reads_head == kNone) {
    p.tx_session++;
    p.tx_syn = true;
    p.tx_next = 0;
    p.acked_seen = 0;
  }
  p.rx_synced = true;
  p.rx_session = session;
  p.rx_expected = 0;
  p.rx_unacked = 0;
  p.nak_sent = false;
  for (auto& n : p.naks) n = Peer::Naked{};
  rx_abandon_all(p);
  // A new session of a node we knew: it lost its state (or declared us
  // dead and dropped ours): locks and barriers with it fail. Either way
  // what it queued here (isends) was its former life's.
  modules_node_failed(*this, node_of(p),
                      known ? NodeLoss::kRestarted : NodeLoss::kFirstContact);
  release_gated(p);
}

void Engine::Impl::receive_frame(Span<const uint8_t> frame) {
  if (cfg.fast_paths && plain_rc_write(frame) && fast_write(frame)) return;
  lane_only = false;
  Packet pkt;
  switch (parse_packet(frame, pkt, !cfg.mac_crc)) {
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
  // Frames outside the node channels (switch groups' streams, the
  // switch's answers, datagrams to groups): the family that claims one.
  const bool routed = modules.filter.may_route(pkt, cfg.node_id);
  for (const FrameRoute& r :
       routed ? frame_routes(*this) : Span<const FrameRoute>{}) {
    if (r.type != h.type || !r.considers(pkt, cfg.node_id)) continue;
    const FrameClaim claim = r.claim(*this, pkt);
    if (claim == FrameClaim::kNotMine) continue;
    if (claim == FrameClaim::kMalformed) {
      counters.add(RHN_CNT_MALFORMED_PACKETS);
      return;
    }
    counters.add(RHN_CNT_RX_PACKETS);
    counters.add(RHN_CNT_RX_BYTES, frame.size());
    r.receive(*this, pkt);
    return;
  }
  Peer* pp = peer_for(h.src_node);
  if (h.dst_node != cfg.node_id || !pp || h.type == RHN_PKT_RAW) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  Peer& p = *pp;
  counters.add(RHN_CNT_RX_PACKETS);
  counters.add(RHN_CNT_RX_BYTES, frame.size());

  if (h.type == RHN_PKT_ACK || h.type == RHN_PKT_NAK) {
    if (h.ack_session != p.tx_session) {
      counters.add(RHN_CNT_STALE_PACKETS);  // about an old stream
      return;
    }
    p.dead_until = 0;
    if (h.type == RHN_PKT_NAK && (h.flags & RHN_PKT_F_BEHIND)) {
      move_stream_after(p, static_cast<uint16_t>(h.ack_seq));
      return;
    }
    if (h.type == RHN_PKT_NAK && (h.flags & RHN_PKT_F_RESYNC)) {
      // The peer lost its state for our stream: nothing outstanding can
      // be trusted to have happened.
      peer_failed(p, false);
      return;
    }
    accept_acks(p, h.ack_seq, h.ack_session, h.session, h.seq);
    if (h.type == RHN_PKT_ACK) {
      counters.add(RHN_CNT_ACKS_RECEIVED);
      return;
    }
    counters.add(RHN_CNT_NAKS_RECEIVED);
    p.recover_window = 0;  // the NAK says where to go back to
    if (!p.unacked_count) return;
    // Go back to the serial the receiver expects (unless already there).
    const uint32_t first = slots[p.unacked_head].serial;
    const uint32_t pos = h.ack_seq - first;
    if (pos >= p.unacked_count) return;
    if (p.resend != kNone && !seq_before(h.ack_seq, slots[p.resend].serial))
      return;
    uint32_t slot = p.unacked_head;
    for (uint32_t i = 0; i < pos; i++) slot = slots[slot].next;
    p.resend = slot;
    peer_needs_service(p);
    return;
  }

  // DATA
  if (!p.rx_synced || h.session != p.rx_session) {
    const bool older = p.rx_synced && session_before(h.session, p.rx_session);
    const bool quiet = now - p.rx_last > cfg.session_quiet_ns;
    if (older && !quiet) {
      // A straggler of a stream we already left behind: it must not roll
      // us back. A SYN may also be a sender powered on again in an earlier
      // epoch: it is told the session to beat (a straggler's sender is in
      // a newer one already and ignores that).
      counters.add(RHN_CNT_STALE_PACKETS);
      if (h.flags & RHN_PKT_F_SYN)
        send_control(p, RHN_PKT_NAK, RHN_PKT_F_RESYNC | RHN_PKT_F_BEHIND,
                     h.session, p.rx_session);
      return;
    }
    if (!(h.flags & RHN_PKT_F_SYN)) {
      // A stream we know nothing about: we were reset under the sender.
      counters.add(RHN_CNT_OUT_OF_ORDER);
      send_ack(p, RHN_PKT_NAK, RHN_PKT_F_RESYNC, h.session);
      return;
    }
    adopt_session(p, h.session);
  }
  p.dead_until = 0;
  if (h.seq != p.rx_expected) {
    if (seq_before(h.seq, p.rx_expected)) {
      counters.add(RHN_CNT_DUPLICATES);
      send_ack(p, RHN_PKT_ACK, 0, p.rx_session);  // stop the resending
    } else {
      counters.add(RHN_CNT_OUT_OF_ORDER);
      const uint32_t now_us = low32_div1000(now);
      if (!p.nak_sent || now_us - p.nak_at_us >= renak_interval_us(p)) {
        p.nak_sent = true;
        p.nak_at_us = now_us;
        send_ack(p, RHN_PKT_NAK, 0, p.rx_session);
      }
    }
    return;
  }
  const uint8_t wop = pkt.op.opcode;
  const bool is_request = wire_is_request(wop);
  if (is_request && !responder_has_room(p, pkt.op)) {
    // Not accepted: as if lost; the sender resends it after a timeout.
    counters.add(RHN_CNT_RX_DROPS);
    return;
  }
  took_in_order(p);
  if (is_request)
    handle_request(p, pkt);
  else
    handle_response(p, pkt);
  data_done(p, h.flags, h.seq, h.session, h.ack_seq, h.ack_session);
}

void Engine::Impl::accept_acks(Peer& p, uint32_t ack_seq, uint16_t ack_session,
                               uint16_t session, uint32_t seq) {
  if (ack_session != p.tx_session) return;
  if (seq_before(p.tx_next, ack_seq)) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);  // acks what we never sent
    return;
  }
  p.tx_syn = false;
  bool rto_fresh = false;
  if (seq_before(p.acked_seen, ack_seq)) {
    p.acked_seen = ack_seq;
    if (p.timing && seq_before(p.timed_seq, ack_seq)) {
      rtt_sample(p, low32_div1000(now) - p.timed_at_us);
      p.timing = false;
    }
    p.retries = 0;
    p.rto_deadline = now + rto(p);
    rto_fresh = true;
    if (p.recover_window) {
      // Heard: twice as many go again; what this ACK covered need not.
      const uint32_t first = first_unacked(p);
      if (p.resend == kNone || first == kNone) {
        p.recover_window = 0;  // all sent again, or all acknowledged
      } else {
        if (seq_before(slots[p.resend].serial, slots[first].serial))
          p.resend = first;
        p.recover_window =
            static_cast<uint8_t>(min<uint32_t>(2u * p.recover_window, 128));
        p.recover_budget = p.recover_window;
        peer_needs_service(p);
      }
    }
  }
  const Gate g{ack_seq, session, seq};
  // A gate with none before it that opens at once and covers no packet
  // still queued would be released at once and free nothing.
  if (!p.gate_count && gate_open(p, g) &&
      !(p.unacked_count && seq_before(slots[p.unacked_head].serial, ack_seq)))
    return;
  if (p.gate_count < kGates)
    p.gates[p.gate_count++] = g;
  else
    merge_gate(p.gates[kGates - 1], g);
  release_gated(p, rto_fresh);
}

uint32_t Engine::Impl::retire_quiet_range(Peer& p, uint32_t id,
                                          uint32_t ack_seq) {
  SendSlot& s = slots[id];
  const uint32_t n = s.quiet_run;
  const uint32_t first_serial = s.serial;
  const uint32_t last_serial = first_serial + n - 1;
  // A resend may be inside the run: the per-packet path moves it.
  if (!seq_before(last_serial, ack_seq) || p.resend != kNone) return 0;
  const uint32_t qpn = s.qpn;
  if (qpn >= qps.size()) return 0;
  QpObj& qp = qps[qpn];
  // Anything that completed, refused or left unanswered one of the
  // QP's messages since the run was sent moved quiet_spoils; a reset or
  // an error the generation and the state.
  if (!qp.valid || qp.gen != s.qp_gen || qp.state == RHN_QPS_ERR ||
      qp.quiet_spoils != s.run_spoils)
    return 0;
  const uint32_t head = qp.inflight_head;
  if (qp.inflight_tail - head < n) return 0;
  // The run's entries are the QP's oldest n, in order: its first and
  // last are checked as retire_quiet checks each, and the entry behind
  // it must not be a completed one complete_in_order would go on to.
  const uint16_t node = node_of(p);
  const Inflight& last = entry(qpn, head + n - 1);
  if (!quiet_retirable(entry(qpn, head), first_serial, node) ||
      !quiet_retirable(last, last_serial, node) ||
      (head + n != qp.inflight_tail &&
       entry(qpn, head + n).state == MsgState::kDone))
    return 0;
  // The entries are left as they are behind the head: nothing reads an
  // entry there, and the next message to take one stores every field
  // a quiet message may have changed (txw_entry_over_quiet) or all.
  qp.rnr_count = 0;
  qp.sq_complete = last.slot + last.slots;
  qp.inflight_head = head + n;
  // The slots, still linked in order, from the channel's list to the
  // free list; a free slot's context is stored when it is taken again.
  const uint32_t after = slots[s.run_last].next;
  p.unacked_head = after;
  if (after == kNone) p.unacked_tail = kNone;
  p.unacked_count -= n;
  free_slots.push_chain(id, s.run_last, n);
  if (slot_waiters.head != kNone) wake_all(slot_waiters);
  return n;
}

void Engine::Impl::release_gated(Peer& p, bool rto_fresh) {
  bool freed = false;
  // The QP whose quiet messages were retired here and whose schedule()
  // is owed: made once for a run of them, still before anything else
  // could schedule a QP (another message's completion). The waiters for
  // a send slot are all woken by the first slot returned, before any
  // message is retired, and nothing here adds one.
  uint32_t owed = kNone;
  uint32_t quiet = 0;  // messages retire_quiet retired, counted at the end
  // The shares of the slots of quiet messages and of packets that
  // complete none go back once for each run of one context's slots (a
  // stream's are all one QP's), before anything else could charge one
  // (a completion's family); a signaled message's slot at once.
  uint32_t share_ctx = kNone, share_n = 0;
  // n more slots of ctx in that batch (another context's go back first).
  auto batch_shares = [&](uint32_t ctx, uint32_t n) {
    if (ctx != share_ctx) {
      if (share_n) shares.give(share_ctx, Res::kTxSlots, share_n);
      share_ctx = ctx;
      share_n = 0;
    }
    share_n += n;
  };
  const uint16_t node = node_of(p);
  while (p.gate_count) {
    const Gate g = p.gates[0];
    if (!gate_open(p, g)) break;
    if (p.gate_count > 1)
      memmove(&p.gates[0], &p.gates[1], sizeof(Gate) * (p.gate_count - 1));
    p.gate_count--;
    while (p.unacked_count) {
      const uint32_t id = p.unacked_head;
      SendSlot& s = slots[id];
      if (!seq_before(s.serial, g.ack_seq)) break;
      if (s.completes_message == kCompletesQuietRun) [[unlikely]] {
        const uint32_t qpn = s.qpn, context = s.context;
        const uint32_t run = retire_quiet_range(p, id, g.ack_seq);
        if (run) {
          batch_shares(context, run);
          if (owed != kNone && owed != qpn) schedule(owed);
          owed = qpn;
          quiet += run;
          freed = true;
          lane_only = false;
          continue;
        }
      }
      unlink_acked(p, id);
      const uint8_t completes = s.completes_message;
      const uint32_t qpn = s.qpn, gen = s.qp_gen, serial = s.serial;
      if (completes == kCompletes) {
        give_slot(id);
      } else {
        batch_shares(s.context, 1);
        free_slot(id);
      }
      freed = true;
      lane_only = false;  // messages complete: the families hear of it
      if (!completes) continue;
      if (owed != kNone && owed != qpn) {
        schedule(owed);
        owed = kNone;
      }
      if (completes >= kCompletesQuiet &&
          retire_quiet(qpn, gen, serial, node)) {
        owed = qpn;
        const uint32_t run =
            retire_quiet_run(p, g.ack_seq, qpn, gen, share_ctx);
        quiet += 1 + run;
        share_n += run;
        continue;
      }
      if (owed != kNone) {
        schedule(owed);
        owed = kNone;
      }
      if (share_n) shares.give(share_ctx, Res::kTxSlots, share_n);
      share_n = 0;
      message_acked(qpn, gen, serial, node);
    }
  }
  if (share_n) shares.give(share_ctx, Res::kTxSlots, share_n);
  if (owed != kNone) schedule(owed);
  if (quiet) counters.add(RHN_CNT_COMPLETIONS, quiet);
  if (freed) {
    if (!p.unacked_count)
      p.rto_deadline = 0;
    else if (!rto_fresh)
      p.rto_deadline = now + rto(p);
    wake_all(p.waiters);
    if (p.reads_head != kNone) peer_needs_service(p);
  }
}

uint32_t Engine::Impl::retire_quiet_run(Peer& p, uint32_t ack_seq, uint32_t qpn,
                                        uint32_t gen, uint32_t context) {
  // What release_gated does for each of them, less what holds for the
  // run: the QP valid, of that generation and not in error (nothing here
  // changes it), the share's context, the owed schedule(). The QP's entry
  // ring is walked by pointer, the free list's tail kept in a register,
  // and the QP's indexes and the list's head are moved once, after the
  // run.
  QpObj& qp = qps[qpn];
  const uint16_t node = node_of(p);
  const uint32_t queued = p.unacked_count;
  const uint32_t ring = cfg.max_inflight_per_qp;
  Inflight* const base = &inflight[size_t{qpn} * ring];
  Inflight* const end = base + ring;
  const uint32_t tail = qp.inflight_tail;
  uint32_t head = qp.inflight_head;
  Inflight* e = base + head % ring;
  uint32_t complete = qp.sq_complete;
  const uint32_t first = p.unacked_head;
  uint32_t n = 0, id = first, last = kNone;
  uint32_t resend = p.resend;
  while (n < queued && head != tail) {
    SendSlot& s = slots[id];
    // (A run's first packet, kCompletesQuietRun: retire_quiet_range's.)
    if (!seq_before(s.serial, ack_seq) ||
        s.completes_message != kCompletesQuiet || s.qpn != qpn ||
        s.qp_gen != gen || s.context != context)
      break;
    Inflight* const after = e + 1 == end ? base : e + 1;
    if (!quiet_retirable(*e, s.serial, node) ||
        (head + 1 != tail && after->state == MsgState::kDone))
      break;
    quiet_retire(*e);
    complete = e->slot + e->slots;
    head++;
    e = after;
    const uint32_t next = s.next;
    if (resend == id) resend = next;
    last = id;
    id = next;
    n++;
  }
  p.resend = resend;
  if (n) {
    // Still linked in order: to the free list at once (free_slot's
    // wake-up below, once); a free slot's context is stored when it is
    // taken again.
    free_slots.push_chain(first, last, n);
    qp.rnr_count = 0;
    qp.sq_complete = complete;
    qp.inflight_head = head;
    // Woken by the first slot release_gated returned; nothing here adds
    // a waiter, so this finds none unless that changes.
    if (slot_waiters.head != kNone) wake_all(slot_waiters);
  }
  p.unacked_head = id;
  if (id == kNone) p.unacked_tail = kNone;
  p.unacked_count = queued - n;
  return n;
}

uint32_t Engine::Impl::first_unacked(const Peer& p) const {
  // Packets an ACK covered stay queued until its gate opens; skip them.
  uint32_t id = p.unacked_head;
  while (id != kNone && seq_before(slots[id].serial, p.acked_seen))
    id = slots[id].next;
  return id;
}

void Engine::Impl::peer_needs_service(Peer& p) {
  if (p.in_ready) return;
  p.in_ready = peer_ready.push(node_of(p));
}

void Engine::Impl::peer_timer(Peer& p, uint64_t deadline) {
  if (!p.in_busy) {
    p.in_busy = true;
    const uint32_t n = node_of(p);
    p.busy_prev = kNone;
    p.busy_next = busy_head;
    if (busy_head != kNone) peers[busy_head].busy_prev = n;
    busy_head = n;
  }
  if (deadline < next_peer_deadline) next_peer_deadline = deadline;
}

void Engine::Impl::unlink_busy(Peer& p) {
  if (!p.in_busy) return;
  if (p.busy_prev != kNone)
    peers[p.busy_prev].busy_next = p.busy_next;
  else
    busy_head = p.busy_next;
  if (p.busy_next != kNone) peers[p.busy_next].busy_prev = p.busy_prev;
  p.busy_prev = p.busy_next = kNone;
  p.in_busy = false;
}

bool Engine::Impl::peer_idle(const Peer& p) const {
  return p.unacked_count == 0 && p.ack_deadline == 0;
}

bool Engine::Impl::run_peers() {
  bool did = false;
  // Work that can be done now: resends after a NAK or timeout, READ
  // streams. Each peer gets a bounded turn, then goes to the back.
  for (uint32_t n = peer_ready.size(); n; n--) {
    Peer& p = peers[peer_ready.front()];
    peer_ready.pop();
    p.in_ready = false;
    did |= service_peer(p);
  }
  if (now < next_peer_deadline) return did;
  // Timers: visit the peers that have some running.
  next_peer_deadline = UINT64_MAX;
  for (uint32_t i = busy_head; i != kNone;) {
    Peer& p = peers[i];
    i = p.busy_next;
    if (p.unacked_count && now >= p.rto_deadline) {
      did = true;
      const uint32_t first = first_unacked(p);
      if (first == kNone) {
        // Everything acknowledged, the ACKs held only until the peer's own
        // stream catches up: the peer is alive, and it is its turn to
        // resend. Nothing was lost, so nothing backs off: a timeout
        // stretched while waiting on the peer would later slow the
        // recovery of a real loss (it doubles up to 128 times).
        p.rto_deadline = now + rto(p);
      } else {
        counters.add(RHN_CNT_TIMEOUTS);
        if (++p.retries > cfg.max_retries) {
          peer_failed(p, true);
          continue;
        }
        // The first timeout since the last ACK starts a recovery; if that
        // is not answered either, everything goes again at once.
        p.recover_window = p.retries == 1 ? 1 : 0;
        p.recover_budget = p.recover_window;
        p.resend = first;
        if (p.backoff < 7) p.backoff++;
        p.rto_deadline = now + rto(p);
        peer_needs_service(p);
      }
    }
    if (p.ack_deadline && now >= p.ack_deadline) {
      send_ack(p, RHN_PKT_ACK, 0, p.rx_session);
      did = true;
    }
    if (peer_idle(p)) {
      unlink_busy(p);
      continue;
    }
    if (p.unacked_count && p.rto_deadline < next_peer_deadline)
      next_peer_deadline = p.rto_deadline;
    if (p.ack_deadline && p.ack_deadline < next_peer_deadline)
      next_peer_deadline = p.ack_deadline;
  }
  return did;
}

bool Engine::Impl::service_peer(Peer& p) {
  bool did = false;
  // Go-back-N: resend from p.resend, refreshing the piggybacked ACK.
  if (p.resend != kNone) p.timing = false;  // an ACK now times nothing
  for (uint32_t n = 0; n < 32 && p.resend != kNone; n++) {
    if (p.recover_window && !p.recover_budget--) {
      p.recover_budget = 0;
      break;  // more when the next ACK moves on
    }
    SendSlot& s = slots[p.resend];
    p.resend = s.next;
    rhn_pkt_hdr h;
    memcpy(&h, s.frame, sizeof(h));
    h.flags &= static_cast<uint16_t>(~RHN_PKT_F_ACK_VALID);
    if (p.tx_syn) h.flags |= RHN_PKT_F_SYN;
    if (p.rx_synced) {
      h.flags |= RHN_PKT_F_ACK_VALID;
      h.ack_session = p.rx_session;
      h.ack_seq = p.rx_expected;
    }
    memcpy(s.frame, &h, sizeof(h));
    if (!cfg.mac_crc) reseal_header(s.frame);
    counters.add(RHN_CNT_RETRANSMITS);
    transmit(node_of(p), {s.frame, s.len});
    did = true;
  }
  did |= stream_reads(p);
  const bool may_resend =
      p.resend != kNone && (!p.recover_window || p.recover_budget);
  if (may_resend || (p.reads_head != kNone && room_for_request(p)))
    peer_needs_service(p);
  return did;
}

// The peer refused our stream's SYN: it holds a newer session of ours (we
// were powered on again in an earlier epoch). It took nothing of this
// stream, which no ACK has confirmed yet (tx_syn still set), so the same
// packets, serials unchanged, go again in the session after the peer's.
// A stream the peer did acknowledge cannot be moved: it fails instead.
void Engine::Impl::move_stream_after(Peer& p, uint16_t their_session) {
  const uint16_t next = static_cast<uint16_t>(their_session + 1);
  if (!session_before(p.tx_session, next)) {
    counters.add(RHN_CNT_STALE_PACKETS);  // we are ahead already
    return;
  }
  if (!p.tx_syn) {
    peer_failed(p, false);
    return;
  }
  p.tx_session = next;
  for (uint32_t id = p.unacked_head; id != kNone; id = slots[id].next) {
    rhn_pkt_hdr h;
    memcpy(&h, slots[id].frame, sizeof(h));
    h.session = next;
    memcpy(slots[id].frame, &h, sizeof(h));
    if (!cfg.mac_crc) reseal_header(slots[id].frame);
  }
  p.retries = 0;
  p.recover_window = 0;
  p.resend = p.unacked_head;
  if (p.resend != kNone) peer_needs_service(p);
}

void Engine::Impl::peer_failed(Peer& p, bool timed_out) {
  counters.add(RHN_CNT_PEER_DEAD);
  const uint16_t node = node_of(p);
  // Drop the send-packet memory towards it.
  for (uint32_t id = p.unacked_head; id != kNone;) {
    const uint32_t next = slots[id].next;
    return_slot(id);
    id = next;
  }
  p.unacked_head = p.unacked_tail = p.resend = kNone;
  p.unacked_count = 0;
  p.gate_count = 0;
  p.retries = 0;
  p.timing = false;
  p.recover_window = 0;
  p.rto_deadline = 0;
  // A new, newer session: the next packet re-synchronises the peer.
  p.tx_session++;
  p.tx_syn = true;
  p.tx_next = 0;
  p.acked_seen = 0;
  if (timed_out) p.dead_until = now + cfg.dead_holdoff_ns;
  while (p.reads_head != kNone) free_read(p, p.reads_head);
  if (peer_idle(p)) unlink_busy(p);
  fw_node_failed(node);
  modules_node_failed(*this, node, NodeLoss::kTimedOut);
  // Everything outstanding towards it fails. Rare: a scan of the QPs.
  for (uint32_t q = 0; q < qps.size(); q++) {
    QpObj& qp = qps[q];
    if (!qp.valid) continue;
    bool hit = false;
    for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
      Inflight& e = entry(q, i);
      if (e.peer != node || e.state == MsgState::kDone) continue;
      if (qp.tx_active && qp.tx_entry == i) abort_tx(qp);
      qp.quiet_spoils++;
      e.state = MsgState::kDone;
      e.status = RHN_CQE_RETRY_EXC_ERR;
      e.syndrome = RHN_SYN_RETRY_EXCEEDED;
      // Only READs and atomics hold a READ context and count as
      // outstanding (an isend or PD_REQ awaits an answer but holds none).
      if (e.read_ctx != 0xffff) {
        release_read_ctx(e);
        qp.outstanding_reads--;
      }
      hit = true;
    }
    if (hit) complete_in_order(q);
  }
  wake_all(p.waiters);
}

}  // namespace rhinet::fw
