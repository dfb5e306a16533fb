// SPDX-License-Identifier: BSD-2-Clause
// CRC32C (Castagnoli), the wire checksum. Hardware computes it in the MAC;
// the software engine uses the CPU's crc32 instruction when present.
#pragma once

// C headers: the soft core's freestanding build has no C++ library.
#include <stddef.h>
#include <stdint.h>

namespace rhinet::fw {

// Continue a CRC32C over data. Start with crc = 0; the result is final
// (pre- and post-inversion are handled inside).
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

// The same over data whose 4 bytes at offset hole are taken as zero (a
// header's own CRC field), without copying it; hole + 4 <= len.
uint32_t crc32c_hole(uint32_t crc, const void* data, size_t len, size_t hole);

}  // namespace rhinet::fw
