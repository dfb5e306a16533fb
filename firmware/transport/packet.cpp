// SPDX-License-Identifier: BSD-2-Clause
#include "transport/packet.h"

#include "core/crc32c.h"
#include "core/freestanding.h"

namespace rhinet::fw {
namespace {

constexpr size_t kCrcOffset = RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc);

// CRC of the headers with the hdr_crc field taken as zero, in place.
uint32_t header_crc(const uint8_t* frame, size_t hdr_len) {
  static_assert(kCrcOffset + 4 <= RHN_PKT_HDR_LEN);
  return crc32c_hole(0, frame, hdr_len, kCrcOffset);
}

}  // namespace

bool crcs_ok(const uint8_t* frame, size_t hdr_len, uint32_t payload_len,
             uint32_t payload_crc, uint32_t hdr_crc) {
  if (header_crc(frame, hdr_len) != hdr_crc) return false;
  const uint32_t pcrc =
      payload_len ? crc32c(0, frame + hdr_len, payload_len) : 0;
  return pcrc == payload_crc;
}

ParseStatus parse_packet(Span<const uint8_t> frame, Packet& out,
                         bool check_crcs) {
  if (frame.size() < RHN_PKT_HDR_LEN) return ParseStatus::kMalformed;
  copy_small(&out.hdr, frame.data(), sizeof(out.hdr));
  const rhn_pkt_hdr& h = out.hdr;
  if (h.magic != RHN_WIRE_MAGIC || h.version != RHN_WIRE_VERSION)
    return ParseStatus::kMalformed;
  if (h.type < RHN_PKT_DATA || h.type > RHN_PKT_COLL)
    return ParseStatus::kMalformed;
  const size_t hdr_len = header_length(h.type);
  if (frame.size() < hdr_len) return ParseStatus::kMalformed;
  if (h.type == RHN_PKT_ACK || h.type == RHN_PKT_NAK) {
    if (h.payload_len != 0) return ParseStatus::kMalformed;
  } else if (h.payload_len >
             RHN_WIRE_MTU + (h.type == RHN_PKT_RAW ? 64 : RHN_WIRE_GRH_LEN)) {
    return ParseStatus::kMalformed;
  }
  if (frame.size() != hdr_len + h.payload_len) return ParseStatus::kMalformed;
  if (check_crcs &&
      !crcs_ok(frame.data(), hdr_len, h.payload_len, h.payload_crc, h.hdr_crc))
    return ParseStatus::kBadCrc;
  out.payload = frame.subspan(hdr_len, h.payload_len);
  if (h.type == RHN_PKT_DATA) {
    copy_small(&out.op, frame.data() + RHN_PKT_HDR_LEN, sizeof(out.op));
  } else {
    memset(&out.op, 0, sizeof(out.op));
  }
  return ParseStatus::kOk;
}

size_t seal_packet(uint8_t* frame, const rhn_pkt_hdr& hdr, const rhn_op_hdr* op,
                   uint32_t payload_crc, bool fill_crc) {
  static_assert(RHN_PKT_HDR_LEN == sizeof(rhn_pkt_hdr) &&
                RHN_DATA_HDR_LEN == RHN_PKT_HDR_LEN + sizeof(rhn_op_hdr));
  rhn_pkt_hdr h = hdr;
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.payload_crc = payload_crc;
  h.hdr_crc = 0;
  // From the structures, not from the frame just written: reading back
  // bytes still in the store queue costs more than the CRC itself.
  if (fill_crc) {
    uint32_t crc = crc32c(0, &h, sizeof(h));
    if (hdr.type == RHN_PKT_DATA) crc = crc32c(crc, op, sizeof(rhn_op_hdr));
    h.hdr_crc = crc;
  }
  copy_small(frame, &h, sizeof(h));
  if (hdr.type == RHN_PKT_DATA)
    copy_small(frame + RHN_PKT_HDR_LEN, op, sizeof(rhn_op_hdr));
  return header_length(hdr.type) + hdr.payload_len;
}

void reseal_header(uint8_t* frame) {
  const uint32_t crc =
      header_crc(frame, header_length(frame[RHN_OFFSETOF(rhn_pkt_hdr, type)]));
  memcpy(frame + kCrcOffset, &crc, sizeof(crc));
}

}  // namespace rhinet::fw
