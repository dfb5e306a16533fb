// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the admin command decoder and executor, then the doorbells: the
// input is a series of 128-byte commands run through the real admin queue,
// followed by doorbell kicks and WQE bytes for whatever objects were
// created. Host memory is pre-filled with input bytes so rings, records
// and translation tables contain garbage too.
#include <algorithm>
#include <cstring>

#include "fuzz_host.h"
#include "rhinet/hw.h"

using namespace rhinet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMem = 256 << 10;
  fuzz::FuzzBus bus(kMem);
  fuzz::NullWire wire;
  fw::Engine engine(fuzz::small_config(), bus, wire);
  // Garbage everywhere (rings, records, tables), from the input itself.
  for (size_t i = 0; i < kMem && size; i += size)
    std::memcpy(bus.at(fuzz::FuzzBus::kBase + i), data,
                std::min(size, kMem - i));
  const uint64_t sq = fuzz::FuzzBus::kBase, cq = sq + 0x1000;
  engine.reg_write(RHN_REG_ADMIN_SQ_BASE, sq, 8);
  engine.reg_write(RHN_REG_ADMIN_CQ_BASE, cq, 8);
  engine.reg_write(RHN_REG_ADMIN_LOG_DEPTH, 5, 4);
  engine.reg_write(RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4);
  engine.poll();
  uint32_t tail = 0;
  size_t off = 0;
  while (off < size) {
    const uint8_t kind = data[off++];
    if (kind < 0xc0 && off + RHN_ADMIN_CMD_SIZE <= size) {
      std::memcpy(bus.at(sq + (tail & 31) * RHN_ADMIN_CMD_SIZE), data + off,
                  RHN_ADMIN_CMD_SIZE);
      off += RHN_ADMIN_CMD_SIZE;
      engine.reg_write(RHN_REG_ADMIN_SQ_TAIL, ++tail, 4);
    } else if (off + 9 <= size) {
      // A doorbell kick or register write with fuzzed page/offset/value.
      uint32_t where;
      uint64_t value;
      std::memcpy(&where, data + off, 4);
      std::memcpy(&value, data + off + 4, 8 <= size - off - 4 ? 8 : 4);
      off += 9;
      if (kind & 1)
        engine.doorbell_write(where >> 12 & 7, where & 0xff8, value, 8);
      else
        engine.reg_write(where & 0x1ff8, value, (kind & 2) ? 8 : 4);
    } else {
      break;
    }
    for (int i = 0; i < 4; i++) engine.poll();
    bus.now += 3'000'000;
  }
  for (int i = 0; i < 50; i++) {
    bus.now += 10'000'000;
    engine.poll();
  }
  return 0;
}
