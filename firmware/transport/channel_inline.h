// SPDX-License-Identifier: BSD-2-Clause
// The channel's steps every DATA packet takes, inline: the room and the
// slot for a packet, the bookkeeping of a packet just built and
// transmit's accounting; on arrival, the packet taken in order, the NAK
// memory and the acknowledgement it carries. The generic paths
// (transport/channel.cpp, responder/responder.cpp) and the fast ones
// (requester/fast_post.cpp, responder/fast_write.cpp) take them, and a
// call would cost each a few dozen instructions of saved registers.
#pragma once

#include "engine/engine_impl.h"

namespace rhinet::fw {

// Whether an acknowledgement's gate opens: the packet that carried it has
// been taken in order (or the stream it came on is gone).
inline bool gate_open(const Peer& p, const Gate& g) {
  if (!p.rx_synced) return g.seq == 0;         // the peer had sent us nothing
  if (g.session != p.rx_session) return true;  // that reverse stream is gone
  return !seq_before(p.rx_expected, g.seq);
}

inline bool Engine::Impl::can_send_now(const Peer& p, uint32_t context) const {
  // Responses bypass the window and use a reserve of the send memory, so
  // a responder can always answer: ACKs then always flow and both sides
  // drain even when each one's window is full.
  if (context == kNone)
    return !free_slots.empty() && p.unacked_count < 2 * cfg.channel_window;
  return free_slots.size() > response_reserve &&
         p.unacked_count < cfg.channel_window &&
         shares.room(context, Res::kTxSlots);
}

inline uint32_t Engine::Impl::take_slot(uint32_t context) {
  const uint32_t slot = free_slots.front();
  free_slots.pop();
  slots[slot].context = context;
  slots[slot].next = kNone;
  shares.charge(context, Res::kTxSlots);
  return slot;
}

inline uint32_t Engine::Impl::data_sent(Peer& p, uint32_t slot, uint32_t qpn,
                                        uint32_t qp_gen,
                                        uint8_t completes_message) {
  SendSlot& s = slots[slot];
  const uint32_t seq = p.tx_next++;
  if (p.rx_synced) {
    // The packet carried our receive state: no separate ACK is owed.
    p.rx_unacked = 0;
    p.ack_deadline = 0;
  }
  s.serial = seq;
  s.qpn = qpn;
  s.qp_gen = qp_gen;
  s.completes_message = completes_message;
  s.next = kNone;
  if (p.unacked_tail != kNone)
    slots[p.unacked_tail].next = slot;
  else
    p.unacked_head = slot;
  p.unacked_tail = slot;
  if (!p.timing) {
    p.timing = true;
    p.timed_at_us = low32_div1000(now);
    p.timed_seq = seq;
  }
  if (++p.unacked_count == 1) {
    p.rto_deadline = now + rto(p);
    peer_timer(p, p.rto_deadline);
  }
  return seq;
}

inline bool Engine::Impl::tx_account(uint16_t node, Span<const uint8_t> frame) {
  counters.add(RHN_CNT_TX_PACKETS);
  counters.add(RHN_CNT_TX_BYTES, frame.size());
  if (!link_up.load(MemOrder::kRelaxed)) return false;  // lost on the wire
  if (node == cfg.node_id) {
    // Loopback: the NIC turns the frame around without the switch.
    if (!rx.push_with([&](RxFrame& f) {
          f.len = static_cast<uint16_t>(frame.size());
          memcpy(f.data, frame.data(), frame.size());
        }))
      counters.add(RHN_CNT_RX_DROPS);
    return false;
  }
  return true;
}

inline void Engine::Impl::took_in_order(Peer& p) {
  p.rx_expected++;
  p.rx_last = now;
  p.nak_sent = false;
  p.rx_unacked++;
}

inline void Engine::Impl::nak_forget(Peer& p, uint32_t src) {
  for (auto& n : p.naks)
    if (n.src == src) n = Peer::Naked{};
}

inline bool Engine::Impl::ack_news(const Peer& p, uint32_t ack_seq,
                                   uint16_t ack_session, uint16_t session,
                                   uint32_t seq) const {
  if (ack_session != p.tx_session) return false;  // ignored
  return p.tx_syn || ack_seq != p.acked_seen ||
         seq_before(p.tx_next, ack_seq) || p.gate_count || p.unacked_count ||
         !gate_open(p, Gate{ack_seq, session, seq});
}

inline void Engine::Impl::data_done(Peer& p, uint16_t flags, uint32_t seq,
                                    uint16_t session, uint32_t ack_seq,
                                    uint16_t ack_session) {
  // Acknowledgements ride after the operation: a NAK in this very packet
  // has been applied before anything it covers completes. Most carry
  // nothing new (the reverse stream idle): two tests, no calls.
  if ((flags & RHN_PKT_F_ACK_VALID) &&
      ack_news(p, ack_seq, ack_session, session, seq + 1))
    accept_acks(p, ack_seq, ack_session, session, seq + 1);
  if (p.gate_count) release_gated(p);
  if ((flags & RHN_PKT_F_ACK_REQ) || p.rx_unacked >= cfg.ack_coalesce) {
    send_ack(p, RHN_PKT_ACK, 0, p.rx_session);
  } else if (!p.ack_deadline) {
    p.ack_deadline = now + cfg.ack_delay_ns;
    peer_timer(p, p.ack_deadline);
  }
}

inline bool Engine::Impl::retire_quiet(uint32_t qpn, uint32_t gen,
                                       uint32_t serial, uint16_t peer) {
  if (qpn >= qps.size()) return false;  // the firmware's own too
  QpObj& qp = qps[qpn];
  if (!qp.valid || qp.gen != gen || qp.state == RHN_QPS_ERR) return false;
  return retire_quiet_entry(qp, qpn, serial, peer);
}

// Whether the QP's head entry e is the quiet message of this packet and
// still awaits it. The caller then checks the entry behind it (a later
// message completed before this one: complete_in_order would go on to
// it, so the generic path takes both).
inline bool quiet_retirable(const Inflight& e, uint32_t serial, uint16_t peer) {
  return e.quiet && e.state == MsgState::kAwaitAck && e.last_serial == serial &&
         e.peer == peer;
}

inline void quiet_retire(Inflight& e) {
  // What finish_entry and complete_in_order do for it: no CQE, no family
  // (the caller counts the completions of a run at once).
  e.state = MsgState::kDone;
  e.status = RHN_CQE_SUCCESS;
  e.syndrome = RHN_SYN_NONE;
}

inline bool Engine::Impl::retire_quiet_entry(QpObj& qp, uint32_t qpn,
                                             uint32_t serial, uint16_t peer) {
  if (qp.inflight_head == qp.inflight_tail) return false;
  Inflight& e = entry(qpn, qp.inflight_head);
  if (!quiet_retirable(e, serial, peer)) return false;
  if (qp.inflight_head + 1 != qp.inflight_tail &&
      entry(qpn, qp.inflight_head + 1).state == MsgState::kDone)
    return false;
  quiet_retire(e);
  qp.rnr_count = 0;
  qp.sq_complete = e.slot + e.slots;
  qp.inflight_head++;
  return true;
}

inline void Engine::Impl::give_slot(uint32_t slot) {
  shares.give(slots[slot].context, Res::kTxSlots);
  free_slot(slot);
}

inline void Engine::Impl::unlink_acked(Peer& p, uint32_t id) {
  const uint32_t next = slots[id].next;
  p.unacked_head = next;
  if (next == kNone) p.unacked_tail = kNone;
  p.unacked_count--;
  if (p.resend == id) p.resend = next;
}

inline void Engine::Impl::free_slot(uint32_t slot) {
  slots[slot].context = kNone;
  free_slots.push(slot);
  if (slot_waiters.head != kNone) wake_all(slot_waiters);
}

}  // namespace rhinet::fw
