// SPDX-License-Identifier: BSD-2-Clause
// A reference model of the receive placement block (RHN_CARD_CAP_RX_WRITE,
// Documentation/hardware/soft-core.md "Optional blocks"): what a card's
// block does with a frame the MAC received (CRCs already checked), and
// with the core's calls (rhn_card_rxw_*). The instruction-count image and
// the unit tests' fake card run it where a card runs RTL; an RTL team
// checks its block against it. No heap, tables sized at build time.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rhinet/fw/card.h"
#include "rhinet/hw.h"

namespace rhinet::fw::card {

template <uint32_t kNodes, uint32_t kQps>
class RxWriteBlock {
 public:
  // What one frame came to: placed or not, and the flush generation it
  // was placed in (rhn_card_wire_rx_placed is true only while current).
  struct Verdict {
    bool placed = false;
    uint16_t waiting_node = kNoNode;  // the channel it counts against
    uint32_t generation = 0;
  };
  static constexpr uint16_t kNoNode = 0xffff;
  uint16_t node_id = 0;  // the card's own node (its identity)

  void flush() {
    for (Entry& e : targets_) e.valid = false;
    generation_++;
  }
  void target(uint32_t qpn, const rhn_card_rxw_target* t) {
    if (qpn >= kQps) return;
    targets_[qpn].valid = t != nullptr;
    if (t)
      targets_[qpn].t = *t;
    else
      generation_++;  // what was placed through it is no longer current
  }
  bool arm(uint16_t node, uint16_t session, uint32_t next_serial) {
    if (node >= kNodes || channels_[node].waiting) return false;
    Channel& c = channels_[node];
    c.armed = true;
    c.session = session;
    c.next = next_serial;
    return true;
  }
  void disarm(uint16_t node) {
    if (node < kNodes) channels_[node].armed = false;
  }
  bool current(const Verdict& v) const {
    return v.placed && v.generation == generation_;
  }
  bool armed(uint16_t node) const {
    return node < kNodes && channels_[node].armed;
  }

  // A frame from the MAC on its way into the receive FIFO. place(region,
  // va, bytes, len) is region DMA (true when every page moved).
  template <class Place>
  Verdict arrive(const uint8_t* f, size_t len, Place&& place) {
    Verdict v;
    uint16_t src;
    if (!data_from(f, len, &src)) return v;  // no channel's business
    Channel& c = channels_[src];
    if (matches(f, len, c) && place_payload(f, len, place)) {
      c.next++;
      v.placed = true;
      v.generation = generation_;
      return v;
    }
    // Handed over whole: the core decides, the channel waits for its arm.
    c.armed = false;
    c.waiting++;
    v.waiting_node = src;
    return v;
  }
  // The core popped a frame (arrive said v for it).
  void popped(const Verdict& v) {
    if (v.waiting_node != kNoNode) channels_[v.waiting_node].waiting--;
  }

 private:
  struct Channel {
    bool armed = false;
    uint16_t session = 0;
    uint32_t next = 0;
    uint32_t waiting = 0;  // its DATA frames handed over, not yet popped
  };
  struct Entry {
    bool valid = false;
    rhn_card_rxw_target t{};
  };
  template <class T>
  static T at(const uint8_t* f, size_t off) {
    T v;
    memcpy(&v, f + off, sizeof v);
    return v;
  }
  bool data_from(const uint8_t* f, size_t len, uint16_t* src) const {
    if (len < RHN_PKT_HDR_LEN ||
        f[RHN_OFFSETOF(rhn_pkt_hdr, type)] != RHN_PKT_DATA)
      return false;
    *src = at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node));
    return *src < kNodes;
  }
  // A plain RC WRITE in sequence on an armed channel, to a QP with a
  // target: the peer, the key and the bounds the core's checks gave.
  bool matches(const uint8_t* f, size_t len, const Channel& c) const {
    constexpr size_t kOp = RHN_PKT_HDR_LEN;
    if (!c.armed || c.waiting || len < RHN_DATA_HDR_LEN) return false;
    const auto payload_len =
        at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_len));
    const uint8_t flags = f[kOp + RHN_OFFSETOF(rhn_op_hdr, flags)];
    if (at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, magic)) != RHN_WIRE_MAGIC ||
        f[RHN_OFFSETOF(rhn_pkt_hdr, version)] != RHN_WIRE_VERSION ||
        f[kOp + RHN_OFFSETOF(rhn_op_hdr, opcode)] != RHN_WOP_WRITE ||
        (flags & ~(RHN_WOP_F_FIRST | RHN_WOP_F_LAST)) ||
        f[kOp + RHN_OFFSETOF(rhn_op_hdr, qp_type)] != RHN_QP_RC ||
        at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, dst_node)) != node_id ||
        at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, session)) != c.session ||
        at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, seq)) != c.next ||
        !payload_len || payload_len > RHN_WIRE_MTU + RHN_WIRE_GRH_LEN ||
        len != size_t{RHN_DATA_HDR_LEN} + payload_len)
      return false;
    const auto qpn = at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, dst_qpn));
    if (qpn >= kQps || !targets_[qpn].valid) return false;
    const rhn_card_rxw_target& t = targets_[qpn].t;
    const auto src_qpn =
        at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, src_qpn));
    if (t.peer_node != at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node)) ||
        t.peer_qpn != (src_qpn & RHN_WIRE_QPN_MASK) ||
        t.rkey != at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, rkey)))
      return false;
    // The bounds as the core checks them: the first packet answers for
    // the rest of its message.
    const auto msg_len =
        at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_len));
    const auto msg_offset =
        at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msg_offset));
    const auto va =
        at<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr));
    uint64_t extent = payload_len;
    if ((flags & RHN_WOP_F_FIRST) && msg_len > msg_offset &&
        msg_len - msg_offset > extent)
      extent = msg_len - msg_offset;
    return va >= t.iova && va - t.iova <= t.length &&
           extent <= t.length - (va - t.iova);
  }
  template <class Place>
  bool place_payload(const uint8_t* f, size_t len, Place& place) const {
    constexpr size_t kOp = RHN_PKT_HDR_LEN;
    const auto qpn = at<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, dst_qpn));
    const auto va =
        at<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr));
    return place(targets_[qpn].t.region, va, f + RHN_DATA_HDR_LEN,
                 len - RHN_DATA_HDR_LEN);
  }

  Channel channels_[kNodes];
  Entry targets_[kQps];
  uint32_t generation_ = 1;
};

}  // namespace rhinet::fw::card
