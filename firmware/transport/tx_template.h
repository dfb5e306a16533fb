// SPDX-License-Identifier: BSD-2-Clause
// A QP's request header template: the words of a DATA packet's headers
// (hw_wire.h) that are the same on every packet the QP sends to its
// connected peer, built once and patched per packet in the few fields
// that vary (serial, acknowledgement, flags, MSN, key, address, length).
// The posted fast path (requester/fast_post.cpp) writes a frame's
// headers from it, one store per word; a transmit assembler block
// (EngineConfig::tx_assembler) takes the frame so written.
#pragma once

#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

struct TxTemplate {
  // What it was built for: the QP's generation (never 0 for a created
  // QP; a RESET bumps it with the incarnation) and its peer. Anything
  // else changed rebuilds it.
  uint32_t gen = 0;
  uint32_t dest_qpn = 0;
  uint16_t dest_node = 0;
  // The fixed words, little-endian as on the wire: magic, version and
  // type; the destination and source node; the operation word's QP type
  // (opcode and flags are or-ed in); the destination and source QPN.
  uint32_t magic_type = 0;
  uint32_t nodes = 0;
  uint32_t op_base = 0;
  uint32_t dst_qpn = 0;
  uint32_t src_qpn = 0;
};

// The per-packet fields of a request packet of one whole message (first
// and last, msg_offset 0).
struct TxPatch {
  uint8_t wire_op = 0;
  uint8_t op_flags = 0;
  bool ack_req = false;
  uint32_t msn = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint64_t remote_addr = 0;
  uint32_t len = 0;  // msg_len and payload_len
};

// Offsets of a DATA packet's header words (hw_wire.h).
namespace hdr_word {
constexpr size_t kOp = RHN_PKT_HDR_LEN;
constexpr size_t kMagic = 0, kNodes = 4;
constexpr size_t kSeq = RHN_OFFSETOF(rhn_pkt_hdr, seq);
constexpr size_t kAckSeq = RHN_OFFSETOF(rhn_pkt_hdr, ack_seq);
constexpr size_t kSessionFlags = RHN_OFFSETOF(rhn_pkt_hdr, session);
constexpr size_t kLenAckSession = RHN_OFFSETOF(rhn_pkt_hdr, payload_len);
constexpr size_t kPayloadCrc = RHN_OFFSETOF(rhn_pkt_hdr, payload_crc);
constexpr size_t kHdrCrc = RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc);
constexpr size_t kOpWord = kOp + RHN_OFFSETOF(rhn_op_hdr, opcode);
constexpr size_t kDstQpn = kOp + RHN_OFFSETOF(rhn_op_hdr, dst_qpn);
constexpr size_t kSrcQpn = kOp + RHN_OFFSETOF(rhn_op_hdr, src_qpn);
constexpr size_t kMsn = kOp + RHN_OFFSETOF(rhn_op_hdr, msn);
constexpr size_t kRkey = kOp + RHN_OFFSETOF(rhn_op_hdr, rkey);
constexpr size_t kImm = kOp + RHN_OFFSETOF(rhn_op_hdr, imm_data);
constexpr size_t kRemoteAddr = kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr);
constexpr size_t kMsgLen = kOp + RHN_OFFSETOF(rhn_op_hdr, msg_len);
constexpr size_t kMsgOffset = kOp + RHN_OFFSETOF(rhn_op_hdr, msg_offset);
static_assert(kNodes == RHN_OFFSETOF(rhn_pkt_hdr, dst_node) &&
              RHN_OFFSETOF(rhn_pkt_hdr, src_node) == kNodes + 2 &&
              RHN_OFFSETOF(rhn_pkt_hdr, flags) == kSessionFlags + 2 &&
              RHN_OFFSETOF(rhn_pkt_hdr, ack_session) == kLenAckSession + 2 &&
              RHN_OFFSETOF(rhn_op_hdr, qp_type) == 3 && kRemoteAddr % 8 == 0 &&
              kMsgOffset + 4 == RHN_DATA_HDR_LEN);
}  // namespace hdr_word

}  // namespace rhinet::fw
