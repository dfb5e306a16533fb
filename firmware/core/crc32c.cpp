// SPDX-License-Identifier: BSD-2-Clause
#include "core/crc32c.h"

#include <string.h>  // no C++ library in the soft core's build
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rhinet::fw {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables, built at compile time.
struct Tables {
  using Row = uint32_t[256];
  Row t[8];
  constexpr const Row& operator[](size_t s) const { return t[s]; }
};

constexpr Tables make_tables() {
  Tables r{};
  auto& t = r.t;
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (size_t s = 1; s < 8; s++)
      t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return r;
}
constexpr auto kTables = make_tables();

// kHole: the 4 bytes at hole (4-byte aligned) are taken as zero.
template <bool kHole = false>
[[gnu::always_inline]] inline uint32_t crc32c_portable(
    uint32_t crc, const uint8_t* p, size_t len, const uint8_t* hole = nullptr) {
  const auto byte = [&](const uint8_t* b) -> uint8_t {
    return kHole && static_cast<size_t>(b - hole) < 4 ? 0 : *b;
  };
  // Two aligned 32-bit words, not one 64-bit one: the soft core has
  // 32-bit registers (64-bit shifts are calls into libgcc there) and no
  // unaligned loads (an unaligned copy is a call to memcpy).
  while (len >= 8 && (reinterpret_cast<uintptr_t>(p) & 3)) {
    crc = (crc >> 8) ^ kTables[0][(crc ^ byte(p++)) & 0xff];
    len--;
  }
  using Word = uint32_t __attribute__((may_alias));
  while (len >= 8) {
    const auto* w = reinterpret_cast<const Word*>(p);
    uint32_t lo = kHole && p == hole ? 0 : w[0];
    const uint32_t hi = kHole && p + 4 == hole ? 0 : w[1];
    lo ^= crc;
    crc = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^
          kTables[5][(lo >> 16) & 0xff] ^ kTables[4][lo >> 24] ^
          kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
          kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ kTables[0][(crc ^ byte(p++)) & 0xff];
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
      memcpy(&v0, p + i, 8);
      memcpy(&v1, p + kBlock + i, 8);
      memcpy(&v2, p + 2 * kBlock + i, 8);
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
    memcpy(&v, p, 8);
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

// Long buffers on CPUs with 512-bit carry-less multiplication: fold 256
// bytes per turn in four registers of four 128-bit lanes, then finish the
// last 64 bytes of folded state with the crc32 instruction. A lane X at
// some position stands for the same CRC as X * x^D at D bits further on,
// and that product modulo the polynomial is two 64 x 32-bit carry-less
// products: the lane's first 8 bytes (the higher powers in this
// bit-reflected CRC) by x^(D+63) mod P, its last 8 by x^(D-1) mod P (one
// less than the distance: the product comes out one bit short).
constexpr uint64_t kPolyNormal = 0x1edc6f41u;  // x^32 implied

// x^n mod P as a bit-reflected constant for a 64-bit carry-less multiply
// (the coefficient of x^m at bit 63 - m).
constexpr uint64_t fold_constant(unsigned n) {
  uint64_t r = 1;  // x^0
  for (unsigned i = 0; i < n; i++) {
    r <<= 1;
    if (r & (uint64_t{1} << 32)) r ^= (uint64_t{1} << 32) | kPolyNormal;
  }
  uint64_t reflected = 0;
  for (unsigned m = 0; m < 32; m++)
    if (r & (uint64_t{1} << m)) reflected |= uint64_t{1} << (63 - m);
  return reflected;
}

// The instructions the folding code is built for; have_fold() checks the
// CPU has each of them.
#define RHN_FOLD_TARGET __attribute__((target("avx512f,vpclmulqdq,sse4.2")))

constexpr size_t kFoldTurn = 256;           // bytes folded per turn
constexpr size_t kFoldMin = 2 * kFoldTurn;  // shorter: crc32 alone is as fast

RHN_FOLD_TARGET __m512i fold(__m512i x, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                          _mm512_clmulepi64_epi128(x, k, 0x11));
}

// Each 128-bit lane's two constants for a fold over `bits` (computed by
// the compiler: constexpr), in all four lanes.
template <unsigned bits>
RHN_FOLD_TARGET __m512i fold_by() {
  constexpr uint64_t kFirst = fold_constant(bits + 63);  // the lane's bytes 0-7
  constexpr uint64_t kLast = fold_constant(bits - 1);    // its bytes 8-15
  const auto first = static_cast<long long>(kFirst);
  const auto last = static_cast<long long>(kLast);
  return _mm512_set_epi64(last, first, last, first, last, first, last, first);
}

// crc is the crc32 instruction's state (pre-inverted); len >= 256. Folds
// whole turns; returns the state after them and in *done how many bytes
// they were (the caller finishes the rest with crc32c_sse42).
RHN_FOLD_TARGET uint32_t crc32c_fold(uint32_t crc, const uint8_t* p, size_t len,
                                     size_t* done) {
  const __m512i k_turn = fold_by<kFoldTurn * 8>();
  const __m512i k_reg = fold_by<64 * 8>();
  // The state joins the data: crc32(c, v) == crc32(0, v ^ c).
  __m512i a0 = _mm512_xor_si512(
      _mm512_loadu_si512(p),
      _mm512_castsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
  __m512i a1 = _mm512_loadu_si512(p + 64);
  __m512i a2 = _mm512_loadu_si512(p + 128);
  __m512i a3 = _mm512_loadu_si512(p + 192);
  size_t off = kFoldTurn;
  for (; off + kFoldTurn <= len; off += kFoldTurn) {
    a0 = _mm512_xor_si512(fold(a0, k_turn), _mm512_loadu_si512(p + off));
    a1 = _mm512_xor_si512(fold(a1, k_turn), _mm512_loadu_si512(p + off + 64));
    a2 = _mm512_xor_si512(fold(a2, k_turn), _mm512_loadu_si512(p + off + 128));
    a3 = _mm512_xor_si512(fold(a3, k_turn), _mm512_loadu_si512(p + off + 192));
  }
  // Four registers into one, 64 bytes apart, then its 64 bytes through
  // the crc32 instruction from a zero state.
  __m512i a = _mm512_xor_si512(fold(a0, k_reg), a1);
  a = _mm512_xor_si512(fold(a, k_reg), a2);
  a = _mm512_xor_si512(fold(a, k_reg), a3);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, a);
  uint64_t c = 0;
  for (uint64_t v : lanes) c = __builtin_ia32_crc32di(c, v);
  *done = off;
  return static_cast<uint32_t>(c);
}

bool have_fold() {
  static const bool yes = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (len >= kFoldMin && have_fold()) {
    size_t done = 0;
    crc = crc32c_fold(crc, p, len, &done);
    return ~crc32c_sse42(crc, p + done, len - done);
  }
  if (have_sse42()) return ~crc32c_sse42(crc, p, len);
#endif
  return ~crc32c_portable(crc, p, len);
}

uint32_t crc32c_hole(uint32_t crc, const void* data, size_t len, size_t hole) {
  const auto* p = static_cast<const uint8_t*>(data);
#if !defined(__x86_64__)
  if (!(reinterpret_cast<uintptr_t>(p + hole) & 3))
    return ~crc32c_portable<true>(~crc, p, len, p + hole);
#endif
  // Three pieces (cheap with a CRC instruction; otherwise the rare
  // unaligned hole).
  static constexpr uint8_t kZeros[4] = {};
  crc = crc32c(crc, p, hole);
  crc = crc32c(crc, kZeros, sizeof(kZeros));
  return crc32c(crc, p + hole + 4, len - hole - 4);
}

}  // namespace rhinet::fw
