// SPDX-License-Identifier: BSD-2-Clause
#include "core/crc32c.h"

#include <array>
#include <cstring>

namespace rhinet::fw {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (size_t s = 1; s < 8; s++)
      t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}
constexpr auto kTables = make_tables();

uint32_t crc32c_portable(uint32_t crc, const uint8_t* p, size_t len) {
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    v ^= crc;
    crc = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^
          kTables[5][(v >> 16) & 0xff] ^ kTables[4][(v >> 24) & 0xff] ^
          kTables[3][(v >> 32) & 0xff] ^ kTables[2][(v >> 40) & 0xff] ^
          kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
// The crc32 instruction has a 3-cycle latency but issues every cycle, so
// long buffers are cut into three blocks whose CRCs run interleaved and are
// joined afterwards: shifting a CRC register over n zero bytes is linear,
// so it is four table lookups for a fixed n (the tables are built once).
constexpr size_t kBlock = 256;

struct ShiftTable {
  uint32_t t[4][256];
  uint32_t apply(uint32_t v) const {
    return t[0][v & 0xff] ^ t[1][(v >> 8) & 0xff] ^ t[2][(v >> 16) & 0xff] ^
           t[3][v >> 24];
  }
};

ShiftTable make_shift(size_t n) {
  static constexpr uint8_t kZeros[kBlock * 2] = {};
  ShiftTable s{};
  for (int k = 0; k < 4; k++)
    for (uint32_t b = 0; b < 256; b++)
      s.t[k][b] = crc32c_portable(b << (8 * k), kZeros, n);
  return s;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc,
                                                        const uint8_t* p,
                                                        size_t len) {
  static const ShiftTable shift1 = make_shift(kBlock);
  static const ShiftTable shift2 = make_shift(2 * kBlock);
  uint64_t c = crc;
  while (len >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t v0, v1, v2;
      std::memcpy(&v0, p + i, 8);
      std::memcpy(&v1, p + kBlock + i, 8);
      std::memcpy(&v2, p + 2 * kBlock + i, 8);
      c = __builtin_ia32_crc32di(c, v0);
      c1 = __builtin_ia32_crc32di(c1, v1);
      c2 = __builtin_ia32_crc32di(c2, v2);
    }
    c = shift2.apply(static_cast<uint32_t>(c)) ^
        shift1.apply(static_cast<uint32_t>(c1)) ^ static_cast<uint32_t>(c2);
    p += 3 * kBlock;
    len -= 3 * kBlock;
  }
  while (len >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (have_sse42()) return ~crc32c_sse42(crc, p, len);
#endif
  return ~crc32c_portable(crc, p, len);
}

}  // namespace rhinet::fw
