// SPDX-License-Identifier: BSD-2-Clause
// A reference model of the transmit block for plain WRITEs
// (RHN_CARD_CAP_TX_WRITE, Documentation/hardware/soft-core.md "Optional
// blocks"): what a card's block does with a kick for a QP the core armed
// it for, and with the core's calls (rhn_card_txw_*). The unit tests run
// it where a card runs RTL; an RTL team checks its block against it. No
// heap, tables sized at build time.
//
// The block takes a WQE only when the core's fast path (fast_post) would
// take it the same way: a one-slot RC WRITE, inline or one SGE inside the
// one lkey the core armed, flags no more than signaled, solicited and
// inline, at most one MTU, with an in-flight entry, a send slot, the
// channel's window and a place in the sent FIFO to spare. At the first
// WQE it does not take it disarms the QP and hands the kick to the core,
// whose state (once it took the records) is as if it had posted the
// earlier WQEs itself.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rhinet/fw/card.h"
#include "rhinet/hw.h"

namespace rhinet::fw::card {

template <uint32_t kNodes, uint32_t kQps, uint32_t kSlots, uint32_t kRecords>
class TxWriteBlock {
 public:
  // ---- The core's side (rhn_card_txw_*).
  void set_qp(uint32_t qpn, const rhn_card_txw_qp* q, rhn_card_txw_qp* left) {
    if (qpn >= kQps) return;
    Qp& e = qps_[qpn];
    if (left) *left = e.e;  // the credits unused, the indexes as moved
    e.armed = q != nullptr;
    if (q) e.e = *q;
  }
  void grant(uint32_t qpn, uint32_t inflight, uint32_t slots) {
    if (qpn >= kQps || !qps_[qpn].armed) return;
    qps_[qpn].e.inflight_credit += inflight;
    qps_[qpn].e.slot_credit += slots;
  }
  void set_channel(uint16_t node, const rhn_card_txw_channel* c) {
    if (node >= kNodes) return;
    channels_[node].armed = c != nullptr;
    if (c) channels_[node].c = *c;
  }
  bool slot_push(uint32_t slot, void* frame) {
    if (slots_n_ == kSlots) return false;
    slots_[(slots_head_ + slots_n_++) % kSlots] = {
        slot, static_cast<uint8_t*>(frame)};
    return true;
  }
  bool slot_back(uint32_t* slot) {
    if (!slots_n_) return false;
    // The newest first: the slots the core takes back are those it gave
    // last, so the ones still queued keep their order.
    *slot = slots_[(slots_head_ + --slots_n_) % kSlots].slot;
    return true;
  }
  uint32_t record_pop(rhn_card_txw_record* out, uint32_t max) {
    uint32_t n = 0;
    for (; n < max && records_n_; n++) {
      out[n] = records_[records_head_];
      records_head_ = (records_head_ + 1) % kRecords;
      records_n_--;
    }
    return n;
  }
  void flush() {
    for (Qp& q : qps_) q.armed = false;
  }

  // What the core may read back (a status register on a card).
  bool armed(uint32_t qpn) const { return qpn < kQps && qps_[qpn].armed; }
  const rhn_card_txw_channel* channel(uint16_t node) const {
    return node < kNodes && channels_[node].armed ? &channels_[node].c
                                                  : nullptr;
  }
  uint32_t slots_queued() const { return slots_n_; }
  uint32_t records_queued() const { return records_n_; }

  // ---- A kick for qpn from the doorbell FIFO. The port is the card's:
  // read(region, va, buf, len) is region DMA from the host;
  // assemble(frame, hdr_len, region, va, len) the transmit assembler
  // (true when the payload's DMA succeeded and the frame was sent);
  // send(frame, len) the MAC. True when the block took every WQE posted;
  // false when the kick is the core's (the QP not armed, or disarmed at
  // a WQE it does not take).
  template <class Port>
  bool kick(uint32_t qpn, Port& port) {
    if (qpn >= kQps || !qps_[qpn].armed) return false;
    Qp& q = qps_[qpn];
    rhn_queue_record rec;
    if (!port.read(q.e.sq_record, q.e.sq_record_va, &rec, sizeof rec))
      return hand_over(q);
    // A producer index beyond the ring is the core's to refuse.
    q.e.sq_producer = rec.producer_index;
    if (rec.producer_index - q.e.sq_fetch > q.e.sq_room) return hand_over(q);
    while (q.e.sq_fetch != rec.producer_index)
      if (!take_one(qpn, q, port)) return hand_over(q);
    return true;
  }

 private:
  struct Qp {
    bool armed = false;
    rhn_card_txw_qp e{};
  };
  struct Channel {
    bool armed = false;
    rhn_card_txw_channel c{};
  };
  struct Slot {
    uint32_t slot = 0;
    uint8_t* frame = nullptr;
  };
  static constexpr uint8_t kTakenFlags =
      RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED | RHN_WQE_F_INLINE;

  template <class T>
  static T at(const uint8_t* b, size_t off) {
    T v;
    memcpy(&v, b + off, sizeof v);
    return v;
  }
  template <class T>
  static void put(uint8_t* b, size_t off, T v) {
    memcpy(b + off, &v, sizeof v);
  }
  static bool hand_over(Qp& q) {
    q.armed = false;
    return false;
  }

  // Fetches, checks, builds and sends the WQE at sq_fetch; false (nothing
  // changed, or a record marked failed queued) when the core must go on.
  template <class Port>
  bool take_one(uint32_t qpn, Qp& q, Port& port) {
    rhn_card_txw_qp& e = q.e;
    uint8_t w[RHN_SQ_SLOT_SIZE];
    const uint32_t first = e.sq_fetch & ((1u << e.sq_log) - 1);
    if (!port.read(e.sq_ring, e.sq_ring_va + uint64_t{first} * sizeof w, w,
                   sizeof w))
      return false;
    const uint8_t flags = w[RHN_OFFSETOF(rhn_send_wqe, flags)];
    if (w[RHN_OFFSETOF(rhn_send_wqe, opcode)] != RHN_OP_WRITE ||
        w[RHN_OFFSETOF(rhn_send_wqe, ext_units)] != 0 ||
        w[RHN_OFFSETOF(rhn_send_wqe, xfer_mode)] != RHN_XFER_BASIC ||
        (flags & ~kTakenFlags) ||
        at<uint16_t>(w, RHN_OFFSETOF(rhn_send_wqe, xflags)) != 0)
      return false;
    const auto n = at<uint16_t>(w, RHN_OFFSETOF(rhn_send_wqe, num_sge));
    const bool in = flags & RHN_WQE_F_INLINE;
    constexpr size_t kSge = RHN_OFFSETOF(rhn_send_wqe, d);
    uint32_t len = n;
    uint64_t va = 0;
    if (in) {
      if (n > RHN_WQE_BASE_INLINE) return false;
    } else {
      if (n > 1) return false;
      len = n ? at<uint32_t>(w, kSge + RHN_OFFSETOF(rhn_sge, length)) : 0;
      va = at<uint64_t>(w, kSge + RHN_OFFSETOF(rhn_sge, addr));
      // The one key the core armed, and the SGE inside its bounds.
      if (len &&
          (at<uint32_t>(w, kSge + RHN_OFFSETOF(rhn_sge, lkey)) != e.lkey ||
           va < e.key_iova || va - e.key_iova > e.key_length ||
           len > e.key_length - (va - e.key_iova)))
        return false;
    }
    if (len > RHN_WIRE_MTU) return false;
    // Room: an in-flight entry, a send slot, the window, a record.
    if (e.peer_node >= kNodes || !channels_[e.peer_node].armed) return false;
    rhn_card_txw_channel& c = channels_[e.peer_node].c;
    if (!e.inflight_credit || !e.slot_credit || !slots_n_ ||
        c.unacked >= c.window || records_n_ == kRecords)
      return false;

    const Slot s = slots_[slots_head_];
    slots_head_ = (slots_head_ + 1) % kSlots;
    slots_n_--;
    const bool signaled = flags & RHN_WQE_F_SIGNALED;
    write_header(s.frame, e, c, w, len, signaled);
    rhn_card_txw_record& r =
        records_[(records_head_ + records_n_++) % kRecords];
    r = rhn_card_txw_record{};
    r.qpn = qpn;
    r.wqe_slot = e.sq_fetch;
    r.serial = c.tx_next;
    r.msn = e.msn_next;
    r.send_slot = s.slot;
    r.length = len;
    r.ack_seq = c.ack_seq;
    r.ack_session = c.ack_session;
    r.ack_valid = c.ack_valid;
    r.wqe_flags = flags;
    // The record is queued before the frame leaves: the core links the
    // slot before any ACK of it can arrive.
    bool ok = true;
    if (in) {
      memcpy(s.frame + RHN_DATA_HDR_LEN, w + kSge, len);
      port.send(s.frame, size_t{RHN_DATA_HDR_LEN} + len);
    } else if (len) {
      ok = port.assemble(s.frame, RHN_DATA_HDR_LEN, e.key_region, va, len);
    } else {
      port.send(s.frame, size_t{RHN_DATA_HDR_LEN});
    }
    e.sq_fetch++;
    e.msn_next++;
    e.inflight_credit--;
    e.slot_credit--;
    if (!ok) {
      // No frame: the serial is not taken; the core fails the WQE (and
      // the QP with it), so the block stops here.
      r.failed = 1;
      return false;
    }
    c.tx_next++;
    c.unacked++;
    return true;
  }

  // As write_request_header with the QP's template: one whole message,
  // the CRC fields left to the MAC.
  static void write_header(uint8_t* f, const rhn_card_txw_qp& e,
                           const rhn_card_txw_channel& c, const uint8_t* w,
                           uint32_t len, bool signaled) {
    constexpr size_t kOp = RHN_PKT_HDR_LEN;
    const uint8_t wqe_flags = w[RHN_OFFSETOF(rhn_send_wqe, flags)];
    const bool ack_req = signaled || c.unacked + 1 >= c.window / 2;
    const uint32_t pkt_flags = (ack_req ? RHN_PKT_F_ACK_REQ : 0) |
                               (c.ack_valid ? RHN_PKT_F_ACK_VALID : 0);
    const uint32_t op_flags =
        RHN_WOP_F_FIRST | RHN_WOP_F_LAST |
        ((wqe_flags & RHN_WQE_F_SOLICITED) ? RHN_WOP_F_SOLICITED : 0);
    put<uint32_t>(f, 0, e.hdr[0]);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, dst_node), e.hdr[1]);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, seq), c.tx_next);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_seq),
                  c.ack_valid ? c.ack_seq : 0);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, session),
                  c.session | pkt_flags << 16);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_len),
                  len | uint32_t{c.ack_valid ? c.ack_session : 0u} << 16);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_crc), 0);
    put<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc), 0);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, opcode),
                  e.hdr[2] | RHN_WOP_WRITE | op_flags << 8);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, dst_qpn), e.hdr[3]);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, src_qpn), e.hdr[4]);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msn), e.msn_next);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, rkey),
                  at<uint32_t>(w, RHN_OFFSETOF(rhn_send_wqe, remote_key)));
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, imm_data),
                  at<uint32_t>(w, RHN_OFFSETOF(rhn_send_wqe, imm_data)));
    put<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr),
                  at<uint64_t>(w, RHN_OFFSETOF(rhn_send_wqe, remote_addr)));
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_len), len);
    put<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_offset), 0);
  }

  Qp qps_[kQps];
  Channel channels_[kNodes];
  Slot slots_[kSlots];
  uint32_t slots_head_ = 0, slots_n_ = 0;
  rhn_card_txw_record records_[kRecords];
  uint32_t records_head_ = 0, records_n_ = 0;
};

}  // namespace rhinet::fw::card
