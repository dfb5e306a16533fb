// SPDX-License-Identifier: BSD-2-Clause
// The entry of the soft core's test image (scripts/firmware-rv32.sh): it
// pulls in the firmware objects of the freestanding build so the linker
// and the symbol check see what they need. It returns 0 when the CRC32C
// of the standard check string is right; nothing runs it yet.
#include "core/crc32c.h"
#include "rhinet/hw.h"

int main() {
  static const char kCheck[] = "123456789";
  const uint32_t crc = rhinet::fw::crc32c(0, kCheck, sizeof(kCheck) - 1);
  return crc == 0xe3069283u ? 0 : 1;
}
