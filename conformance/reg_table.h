// SPDX-License-Identifier: BSD-2-Clause
// BAR0 registers as the conformance suite checks them: offset, width,
// access type, the bits a reset fixes and their value, and a value an
// RW register must read back. Generated from
// include/hw/rhinet/registers.toml by scripts/regmap.py: edit that
// file, not this one. Counters are not listed: every one is a
// read-only 64-bit register reading 0 after a reset.
#pragma once

#include <cstdint>

#include "rhinet/hw.h"

namespace rhinet::conform {

enum class Access { kRO, kRW, kWO };

struct RegSpec {
  const char* name;
  uint32_t offset;
  unsigned width;  // bits
  Access access;
  // After CONTROL.RESET: (value & reset_mask) == reset_value. A mask of 0:
  // the contract gives no reset value (only other properties are checked).
  uint64_t reset_mask;
  uint64_t reset_value;
  // RW: a value that must read back once written (0 otherwise).
  uint64_t probe;
  const char* meaning;  // registers.toml's words
};

inline constexpr RegSpec kRegs[] = {
    {"RHN_REG_VERSION", 0x000, 32, Access::kRO, 0xffffffffull, 0x10000ull,
     0x0ull,
     "interface version: major << 16 | minor. This contract is 1.0, i.e. "
     "0x00010000 (RHN_VERSION)."},
    {"RHN_REG_CAPS", 0x004, 32, Access::kRO, 0xf8000000ull, 0x0ull, 0x0ull,
     "capability bits, enum rhn_cap (table below)"},
    {"RHN_REG_NODE_ID", 0x008, 32, Access::kRO, 0xffff0000ull, 0x0ull, 0x0ull,
     "this NIC's fabric node ID in bits 15:0"},
    {"RHN_REG_STATUS", 0x00c, 32, Access::kRO, 0xfffffffdull, 0x1ull, 0x0ull,
     "status bits, enum rhn_status"},
    {"RHN_REG_CONTROL", 0x010, 32, Access::kRW, 0xffffffffull, 0x0ull, 0x4ull,
     "control bits, enum rhn_control"},
    {"RHN_REG_DB_PAGES", 0x014, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "number of doorbell pages in BAR2 (= number of contexts, including the "
     "kernel's page 0)"},
    {"RHN_REG_MSIX_VECTORS", 0x018, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "number of MSI-X vectors"},
    {"RHN_REG_MTU", 0x01c, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "largest payload, in bytes, that one packet carries"},
    {"RHN_REG_MAC_LO", 0x020, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "MAC address bytes 0..3"},
    {"RHN_REG_MAC_HI", 0x024, 32, Access::kRO, 0xffff0000ull, 0x0ull, 0x0ull,
     "MAC address bytes 4..5"},
    {"RHN_REG_BOARD_ID", 0x028, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "which board this is: the board_id firmware images for it carry, and the "
     "name of the file the host loads (rhinet/<board>.bin)"},
    {"RHN_REG_FW_STATE", 0x02c, 32, Access::kRO, 0xffffffe0ull, 0x0ull, 0x0ull,
     "the firmware's state: STATE (0 none, 1 booting, 2 running, 3 crashed), "
     "HOST_LOADED (the running image came from the host, not the card's "
     "flash), PENDING (a committed image boots at the next CONTROL.RESET)"},
    {"RHN_REG_SERIAL", 0x030, 64, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "the card's serial number (0: none)"},
    {"RHN_REG_FW_RUNNING", 0x038, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "version of the firmware running, major << 16 | minor << 8 | patch "
     "(hw_fw.h); 0: none"},
    {"RHN_REG_FW_STORED", 0x03c, 32, Access::kRO, 0x0ull, 0x0ull, 0x0ull,
     "version of the image in the card's flash, booted at power-on; 0: none"},
    {"RHN_REG_ADMIN_SQ_BASE", 0x040, 64, Access::kRW, 0x0ull, 0x0ull,
     0x1234567000ull,
     "bus address of the admin submission ring, 4 KiB aligned"},
    {"RHN_REG_ADMIN_CQ_BASE", 0x048, 64, Access::kRW, 0x0ull, 0x0ull,
     0x1234567000ull,
     "bus address of the admin completion ring, 4 KiB aligned"},
    {"RHN_REG_ADMIN_LOG_DEPTH", 0x050, 32, Access::kRW, 0x0ull, 0x0ull, 0x3ull,
     "log2 of the number of entries of both admin rings (at most "
     "RHN_ADMIN_MAX_LOG_DEPTH = 8)"},
    {"RHN_REG_ADMIN_SQ_TAIL", 0x054, 32, Access::kWO, 0x0ull, 0x0ull, 0x0ull,
     "admin SQ producer index; writing it is the kick"},
    {"RHN_REG_EQ_DOORBELL", 0x060, 64, Access::kWO, 0x0ull, 0x0ull, 0x0ull,
     "event queue consumer index and re-arm (below)"},
};

}  // namespace rhinet::conform
