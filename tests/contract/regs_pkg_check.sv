// SPDX-License-Identifier: BSD-2-Clause
// Elaborates the generated register package as RTL would use it, with the
// layout rules the C header asserts checked again at elaboration: the
// counter block fits in BAR0 and follows the last register, and each
// register's reset mask stays inside its width.
module regs_pkg_check;
  import rhinet_regs_pkg::*;

  if (32'(RHN_REG_COUNTERS) + 8 * RHN_CNT_COUNT > RHN_BAR_REGS_SIZE)
    $error("the counters do not fit in BAR0");
  if (RHN_REG_EQ_DOORBELL >= RHN_REG_COUNTERS)
    $error("a register lies in the counter block");
  if (RHN_REG_VERSION_RESET != {32'h0, (RHN_VERSION_MAJOR << 16) | RHN_VERSION_MINOR})
    $error("VERSION's reset value is not the contract's version");
  if (RHN_REG_STATUS_WIDTH == 32 && RHN_REG_STATUS_RESET_MASK[63:32] != 0)
    $error("STATUS's reset mask is wider than the register");
  if (32'(RHN_DB_INLINE_WQE) + RHN_DB_INLINE_WQE_SIZE > (1 << RHN_DB_PAGE_SHIFT))
    $error("the inline WQE window leaves its doorbell page");
endmodule
