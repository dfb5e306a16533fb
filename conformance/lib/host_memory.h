// SPDX-License-Identifier: BSD-2-Clause
// Host memory as the conformance targets model it: buffers at bus
// addresses from kBusBase, a guard gap after each (running off a buffer's
// end is a bus error), and an address no memory answers at. The in-process
// engine (T1) and the soft core (T3) DMA into it the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace rhinet::conform {

class HostMemory {
 public:
  static constexpr uint64_t kBusBase = 0x1'0000'0000ull;
  // Far more than any case needs.
  static constexpr uint64_t kBusBytes = 256ull << 20;

  uint64_t alloc(size_t len, size_t align) {
    if (!len || !align || (align & (align - 1)) || align > 4096) return 0;
    const uint64_t at = (next_free_ + align - 1) & ~uint64_t(align - 1);
    if (at + len > kBusBase + kBusBytes) return 0;
    regions_[at] = std::vector<uint8_t>(len, 0);
    next_free_ = at + len + 4096;
    return at;
  }
  // Where [bus, bus + len) lives, or nullptr when no buffer holds it all.
  uint8_t* at(uint64_t bus, size_t len) {
    auto it = regions_.upper_bound(bus);
    if (it == regions_.begin()) return nullptr;
    --it;
    const uint64_t off = bus - it->first;
    if (off > it->second.size() || len > it->second.size() - off)
      return nullptr;
    return it->second.data() + off;
  }
  bool read(uint64_t bus, void* dst, size_t len) {
    const uint8_t* p = at(bus, len);
    if (!p) return false;
    std::memcpy(dst, p, len);
    return true;
  }
  bool write(uint64_t bus, const void* src, size_t len) {
    uint8_t* p = at(bus, len);
    if (!p) return false;
    std::memcpy(p, src, len);
    return true;
  }
  // The host CPU's reads of memory that is not there: a recognisable
  // pattern, so a case comparing bytes fails clearly.
  void cpu_read(uint64_t bus, void* dst, size_t len) {
    if (!read(bus, dst, len)) std::memset(dst, 0xee, len);
  }
  static uint64_t bad_address() { return kBusBase - 0x10000; }

 private:
  std::map<uint64_t, std::vector<uint8_t>> regions_;
  uint64_t next_free_ = kBusBase;
};

}  // namespace rhinet::conform
