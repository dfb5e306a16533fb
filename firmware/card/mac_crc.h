// SPDX-License-Identifier: BSD-2-Clause
// What a MAC with RHN_CARD_CAP_MAC_CRC does to frames (card.h): fills both
// CRCs of a frame on its way out, and tells a frame whose CRCs are wrong
// on its way in. The instruction-count image's card and the QEMU device's
// side of the soft-core link use it; the engine, given the cap, computes
// no CRC.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/crc32c.h"
#include "rhinet/hw.h"
#include "transport/packet.h"

namespace rhinet::fw::card {

// payload_crc, then hdr_crc over the headers (hw_wire.h); a frame that
// is not ours (magic, version) or too short for its headers is left as it
// is: it has no such fields, and the receiver drops it.
inline void mac_fill_crcs(uint8_t* f, size_t len) {
  rhn_pkt_hdr h;
  if (len < sizeof h) return;
  memcpy(&h, f, sizeof h);
  const size_t hdr_len = header_length(h.type);
  if (h.magic != RHN_WIRE_MAGIC || h.version != RHN_WIRE_VERSION ||
      len < hdr_len)
    return;
  h.payload_crc = len > hdr_len ? crc32c(0, f + hdr_len, len - hdr_len) : 0;
  memcpy(f, &h, sizeof h);
  h.hdr_crc = crc32c_hole(0, f, hdr_len, RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc));
  memcpy(f, &h, sizeof h);
}

// A frame well formed but for its CRCs: the MAC counts it (CRC_ERRORS)
// and drops it. Any other frame goes on; the core judges it.
inline bool mac_crc_bad(const uint8_t* f, size_t len) {
  Packet p;
  return parse_packet({f, len}, p, true) == ParseStatus::kBadCrc;
}

}  // namespace rhinet::fw::card
