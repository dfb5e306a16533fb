// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the packet parser and the whole receive path: the input is split
// into frames fed to an engine with a few live objects, and, to get past
// the CRCs, each frame is also resealed with valid checksums.
#include <cstring>

#include "core/crc32c.h"
#include "fuzz_host.h"
#include "transport/packet.h"

using namespace rhinet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzBus bus(1 << 20);
  fuzz::NullWire wire;
  fw::Engine engine(fuzz::small_config(), bus, wire);
  size_t off = 0;
  while (off + 2 <= size) {
    size_t len = data[off] | (size_t{data[off + 1]} << 8);
    off += 2;
    if (len > size - off) len = size - off;
    std::vector<uint8_t> frame(data + off, data + off + len);
    off += len;
    fw::Packet pkt;
    (void)fw::parse_packet(frame, pkt);
    engine.frame_arrived(frame);
    if (frame.size() >= RHN_PKT_HDR_LEN) {
      // Make it pass the checks that guard the interesting code.
      frame[0] = RHN_WIRE_MAGIC & 0xff;
      frame[1] = RHN_WIRE_MAGIC >> 8;
      frame[2] = RHN_WIRE_VERSION;
      frame[4] = 1;  // dst node 1
      frame[5] = 0;
      const size_t hl = fw::header_length(frame[3]);
      if (frame.size() >= hl) {
        const uint16_t plen = static_cast<uint16_t>(frame.size() - hl);
        std::memcpy(&frame[20], &plen, 2);
        const uint32_t pcrc = plen ? fw::crc32c(0, frame.data() + hl, plen) : 0;
        std::memcpy(&frame[24], &pcrc, 4);
        fw::reseal_header(frame.data());
      }
      engine.frame_arrived(frame);
    }
    engine.poll();
    bus.now += 1'000'000;
    engine.poll();
  }
  for (int i = 0; i < 20; i++) {
    bus.now += 10'000'000;
    engine.poll();
  }
  return 0;
}
