// SPDX-License-Identifier: BSD-2-Clause
// Wire packet codec: validates and decodes frames, builds headers. Pure
// functions on bytes, so the fuzzer and the bench can drive them alone.
#pragma once

#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

enum class ParseStatus { kOk, kMalformed, kBadCrc };

struct Packet {
  rhn_pkt_hdr hdr;
  rhn_op_hdr op;  // valid for RHN_PKT_DATA
  Span<const uint8_t> payload;
};

// Checks magic, version, type, lengths and both CRCs (not the CRCs when
// the MAC checked them: EngineConfig::mac_crc). Nothing in `frame` is
// trusted before this returns kOk.
ParseStatus parse_packet(Span<const uint8_t> frame, Packet& out,
                         bool check_crcs = true);

// A frame that says it is a packet of a plain RDMA WRITE (no flag beyond
// first and last) of an RC QP: the fast path's candidates, told apart
// with a few loads before anything is called.
inline bool plain_rc_write(Span<const uint8_t> frame) {
  constexpr size_t kOp = RHN_PKT_HDR_LEN;
  const uint8_t* f = frame.data();
  return frame.size() >= RHN_DATA_HDR_LEN &&
         f[RHN_OFFSETOF(rhn_pkt_hdr, type)] == RHN_PKT_DATA &&
         f[kOp + RHN_OFFSETOF(rhn_op_hdr, opcode)] == RHN_WOP_WRITE &&
         !(f[kOp + RHN_OFFSETOF(rhn_op_hdr, flags)] &
           ~(RHN_WOP_F_FIRST | RHN_WOP_F_LAST)) &&
         f[kOp + RHN_OFFSETOF(rhn_op_hdr, qp_type)] == RHN_QP_RC;
}

// Both CRCs of a frame whose lengths were checked.
bool crcs_ok(const uint8_t* frame, size_t hdr_len, uint32_t payload_len,
             uint32_t payload_crc, uint32_t hdr_crc);

// parse_packet's checks of a DATA frame, in place (8-byte aligned): true
// when parse_packet would return kOk for it. Nothing is counted; a frame
// that fails goes to parse_packet, which says why. Inline: the fast
// path's loads of the header are near it.
inline bool data_frame_ok(Span<const uint8_t> frame, bool check_crcs) {
  const uint8_t* f = frame.data();
  if (frame.size() < RHN_DATA_HDR_LEN) return false;
  const auto payload_len =
      field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_len));
  return field_at<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, magic)) ==
             RHN_WIRE_MAGIC &&
         f[RHN_OFFSETOF(rhn_pkt_hdr, version)] == RHN_WIRE_VERSION &&
         f[RHN_OFFSETOF(rhn_pkt_hdr, type)] == RHN_PKT_DATA &&
         payload_len <= RHN_WIRE_MTU + RHN_WIRE_GRH_LEN &&
         frame.size() == size_t{RHN_DATA_HDR_LEN} + payload_len &&
         (!check_crcs ||
          crcs_ok(f, RHN_DATA_HDR_LEN, payload_len,
                  field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, payload_crc)),
                  field_at<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc))));
}

// Header length implied by the packet type.
inline size_t header_length(uint8_t type) {
  return type == RHN_PKT_DATA ? RHN_DATA_HDR_LEN : RHN_PKT_HDR_LEN;
}

// Writes hdr (and op for DATA) in front of a payload already in place at
// frame + header_length(type), filling payload_crc and hdr_crc (left 0
// without fill_crc: the MAC fills it). Returns the frame length.
size_t seal_packet(uint8_t* frame, const rhn_pkt_hdr& hdr, const rhn_op_hdr* op,
                   uint32_t payload_crc, bool fill_crc = true);

// Recomputes hdr_crc after header fields changed (retransmission refreshes
// the piggybacked acknowledgement).
void reseal_header(uint8_t* frame);

}  // namespace rhinet::fw
