// SPDX-License-Identifier: BSD-2-Clause
// Frames as wire.md lays them out: CRC32C, building a frame with both CRCs
// right (or deliberately wrong) and reading one back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "rhinet/hw.h"
#include "target.h"

namespace rhinet::conform {

// CRC-32C (Castagnoli): reflected 0x82f63b78, init and final XOR ~0.
inline uint32_t crc32c(const uint8_t* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++)
      crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
  }
  return ~crc;
}

// Fills in payload_len, payload_crc and hdr_crc of a frame whose headers
// (32 bytes, or 72 for DATA) and payload are already in place.
inline void seal(Frame& f) {
  const size_t hdr = (f.size() >= RHN_DATA_HDR_LEN && f[3] == RHN_PKT_DATA)
                         ? RHN_DATA_HDR_LEN
                         : RHN_PKT_HDR_LEN;
  rhn_pkt_hdr h;
  std::memcpy(&h, f.data(), sizeof(h));
  h.payload_len = static_cast<__le16>(f.size() - hdr);
  h.payload_crc = f.size() > hdr ? crc32c(f.data() + hdr, f.size() - hdr) : 0;
  h.hdr_crc = 0;
  std::memcpy(f.data(), &h, sizeof(h));
  h.hdr_crc = crc32c(f.data(), hdr);
  std::memcpy(f.data(), &h, sizeof(h));
}

inline rhn_pkt_hdr pkt_hdr(uint8_t type, uint16_t dst, uint16_t src,
                           uint32_t seq = 0, uint16_t session = 1,
                           uint16_t flags = 0) {
  rhn_pkt_hdr h;
  std::memset(&h, 0, sizeof(h));
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = type;
  h.dst_node = dst;
  h.src_node = src;
  h.seq = seq;
  h.session = session;
  h.flags = flags;
  return h;
}

// A sealed frame: headers, op header (DATA), payload.
inline Frame make_frame(const rhn_pkt_hdr& h, const rhn_op_hdr* op,
                        const void* payload, size_t len) {
  Frame f(sizeof(h) + (op ? sizeof(*op) : 0) + len);
  std::memcpy(f.data(), &h, sizeof(h));
  if (op) std::memcpy(f.data() + sizeof(h), op, sizeof(*op));
  if (len)
    std::memcpy(f.data() + sizeof(h) + (op ? sizeof(*op) : 0), payload, len);
  seal(f);
  return f;
}

inline rhn_pkt_hdr hdr_of(const Frame& f) {
  rhn_pkt_hdr h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(&h, f.data(), std::min(f.size(), sizeof(h)));
  return h;
}

inline rhn_op_hdr op_of(const Frame& f) {
  rhn_op_hdr o;
  std::memset(&o, 0, sizeof(o));
  if (f.size() >= RHN_DATA_HDR_LEN)
    std::memcpy(&o, f.data() + RHN_PKT_HDR_LEN, sizeof(o));
  return o;
}

}  // namespace rhinet::conform
