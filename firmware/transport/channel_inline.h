// SPDX-License-Identifier: BSD-2-Clause
// The channel's steps a DATA packet ends with, inline: the bookkeeping of
// a packet just built and transmit's accounting. Both commit_data and
// transmit (transport/channel.cpp) and the posted fast path
// (requester/fast_post.cpp) take them, and a call would cost each a few
// dozen instructions of saved registers.
#pragma once

#include "engine/engine_impl.h"

namespace rhinet::fw {

inline uint32_t Engine::Impl::data_sent(Peer& p, uint32_t slot, uint32_t qpn,
                                        uint32_t qp_gen,
                                        bool completes_message) {
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

}  // namespace rhinet::fw
