// SPDX-License-Identifier: BSD-2-Clause
// BAR0 registers as the conformance suite checks them: offset, width and
// access type from hw_regs.h (its RO/RW/WO comments) and registers.md, and
// the value each must read right after a reset. The contract headers carry
// the access types but no reset values; until a machine-readable register
// source generates this, this table is the one place the suite keeps them,
// each with the document line it follows. Counters are not listed: every
// one is a read-only 64-bit register reading 0 after a reset
// (RHN_COUNTERS in hw_regs.h, CONTROL.RESET drops all state).
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
  const char* source;  // where the expectation comes from
};

inline constexpr RegSpec kRegs[] = {
    {"RHN_REG_VERSION", RHN_REG_VERSION, 32, Access::kRO, 0xffffffffu,
     RHN_VERSION, "registers.md: this contract is 1.0, i.e. 0x00010000"},
    {"RHN_REG_CAPS", RHN_REG_CAPS, 32, Access::kRO,
     ~uint64_t(RHN_CAP_COLL_SWITCH * 2 - 1) & 0xffffffffu, 0,
     "README.md: numbers the headers do not define (capability bits) are "
     "reserved"},
    {"RHN_REG_NODE_ID", RHN_REG_NODE_ID, 32, Access::kRO, 0xffff0000u, 0,
     "registers.md: the node ID in bits 15:0"},
    {"RHN_REG_STATUS", RHN_REG_STATUS, 32, Access::kRO,
     RHN_STATUS_READY | RHN_STATUS_FATAL | RHN_STATUS_ADMIN_ON,
     RHN_STATUS_READY,
     "registers.md bring-up order: READY after reset, no FATAL, admin queue "
     "not yet accepted"},
    {"RHN_REG_CONTROL", RHN_REG_CONTROL, 32, Access::kRW,
     RHN_CONTROL_ENABLE | RHN_CONTROL_RESET | RHN_CONTROL_INTR_ENABLE, 0,
     "registers.md: RESET clears itself; ENABLE and INTR_ENABLE are set by "
     "the driver after reset (bring-up steps 4, 5)"},
    {"RHN_REG_DB_PAGES", RHN_REG_DB_PAGES, 32, Access::kRO, 0, 0,
     "registers.md: pages in BAR2, the kernel's page 0 included"},
    {"RHN_REG_MSIX_VECTORS", RHN_REG_MSIX_VECTORS, 32, Access::kRO, 0, 0,
     "registers.md: number of MSI-X vectors"},
    {"RHN_REG_MTU", RHN_REG_MTU, 32, Access::kRO, 0, 0,
     "registers.md: largest payload of one packet"},
    {"RHN_REG_MAC_LO", RHN_REG_MAC_LO, 32, Access::kRO, 0, 0,
     "registers.md: MAC bytes 0..3"},
    {"RHN_REG_MAC_HI", RHN_REG_MAC_HI, 32, Access::kRO, 0xffff0000u, 0,
     "registers.md: MAC bytes 4..5 (bits 15:0)"},
    {"RHN_REG_ADMIN_SQ_BASE", RHN_REG_ADMIN_SQ_BASE, 64, Access::kRW, 0, 0,
     "registers.md: RW 64, 4 KiB aligned bus address"},
    {"RHN_REG_ADMIN_CQ_BASE", RHN_REG_ADMIN_CQ_BASE, 64, Access::kRW, 0, 0,
     "registers.md: RW 64, 4 KiB aligned bus address"},
    {"RHN_REG_ADMIN_LOG_DEPTH", RHN_REG_ADMIN_LOG_DEPTH, 32, Access::kRW, 0, 0,
     "registers.md: RW, log2 entries of both admin rings"},
    {"RHN_REG_ADMIN_SQ_TAIL", RHN_REG_ADMIN_SQ_TAIL, 32, Access::kWO, 0, 0,
     "registers.md: WO, writing it is the kick"},
    {"RHN_REG_EQ_DOORBELL", RHN_REG_EQ_DOORBELL, 64, Access::kWO, 0, 0,
     "registers.md: WO 64, EQ consumer index and re-arm"},
};

}  // namespace rhinet::conform
