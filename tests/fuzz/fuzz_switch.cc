// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the fabric switch core (routing, management frames and the
// in-switch reduction of collectives, fabric/coll_reducer.h): the input is
// a list of (port, time step, frame) records; each frame goes in as it is
// and again as an RHN_PKT_COLL frame from the port's own node, resealed
// with valid CRCs so that it reaches the reducer's table, which is
// small (4 buffers) so eviction, BUSY and the stale drop all run. Every
// frame the switch answers with must parse as a NIC would parse it.
#include <cstring>
#include <vector>

#include "core/crc32c.h"
#include "switch_core.h"
#include "transport/packet.h"

using namespace rhinet;

namespace {

void reseal(std::vector<uint8_t>& f) {
  if (f.size() < RHN_PKT_HDR_LEN) return;
  f[0] = RHN_WIRE_MAGIC & 0xff;
  f[1] = RHN_WIRE_MAGIC >> 8;
  f[2] = RHN_WIRE_VERSION;
  const size_t hl = fw::header_length(f[3]);
  if (f.size() < hl) return;
  const uint16_t plen = static_cast<uint16_t>(f.size() - hl);
  std::memcpy(&f[20], &plen, 2);
  const uint32_t pcrc = plen ? fw::crc32c(0, f.data() + hl, plen) : 0;
  std::memcpy(&f[24], &pcrc, 4);
  fw::reseal_header(f.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr unsigned kPorts = 4;
  auto check = [](unsigned port, std::span<const uint8_t> f) {
    if (port >= kPorts) __builtin_trap();
    if (f.size() > RHN_MAX_FRAME) __builtin_trap();
    if (f.size() >= RHN_PKT_HDR_LEN &&
        f[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_COLL) {
      fw::Packet pkt;  // the switch's own frames: as the NIC checks them
      if (fw::parse_packet(f, pkt) != fw::ParseStatus::kOk) __builtin_trap();
    }
  };
  fabric::SwitchCore sw(kPorts, 1, check, 4);
  sw.configure_coll(4, 1000);
  uint64_t now = 0;
  size_t off = 0;
  while (off + 4 <= size) {
    const unsigned port = data[off] % kPorts;
    now += data[off + 1];
    size_t len = data[off + 2] | (size_t{data[off + 3]} << 8);
    off += 4;
    if (len > size - off) len = size - off;
    std::vector<uint8_t> frame(data + off, data + off + len);
    off += len;
    sw.ingress(port, frame, now);
    if (frame.size() >= RHN_PKT_HDR_LEN) {
      frame[3] = RHN_PKT_COLL;
      frame[4] = frame[5] = 0xff;  // to the switch
      // In the name of the node wired to the port (node i on port i), or
      // the switch drops it as spoofed before the reducer sees it; the raw
      // frame above covers the spoofed ones.
      frame[offsetof(rhn_pkt_hdr, src_node)] = static_cast<uint8_t>(port);
      frame[offsetof(rhn_pkt_hdr, src_node) + 1] = 0;
      reseal(frame);
      sw.ingress(port, frame, now);
    }
    sw.tick(now);
  }
  return 0;
}
