// SPDX-License-Identifier: BSD-2-Clause
// Frames with a valid RHiNET transport header (CRCs left zero: the switch
// does not check them), for the switch tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "rhinet/hw_wire.h"

namespace rhinet::test {

inline std::vector<uint8_t> fabric_frame(uint16_t src, uint16_t dst,
                                         uint8_t type, size_t payload,
                                         uint8_t fill) {
  const size_t hdr = type == RHN_PKT_DATA ? RHN_DATA_HDR_LEN : RHN_PKT_HDR_LEN;
  std::vector<uint8_t> f(hdr + payload, fill);
  rhn_pkt_hdr h{};
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = type;
  h.dst_node = dst;
  h.src_node = src;
  h.payload_len = uint16_t(payload);
  std::memcpy(f.data(), &h, sizeof(h));
  return f;
}

}  // namespace rhinet::test
