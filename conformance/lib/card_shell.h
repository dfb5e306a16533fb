// SPDX-License-Identifier: BSD-2-Clause
// The card's shell around a target's core: the firmware slot and its
// registers (firmware/card/fw_shell.h), as the QEMU device has it. T1 and
// T3 play it; a real card's shell is RTL. A reset records which image
// boots; these targets keep running their core (the QEMU device really
// boots a soft core's image, tests/vm/tests/firmware.sh).
#pragma once

#include <cstdint>
#include <cstdlib>

#include "fw_shell.h"
#include "rhinet/fw/version.h"
#include "rhinet/hw.h"

namespace rhinet::conform {

class CardShell {
 public:
  CardShell(uint32_t board_id, uint16_t node_id) {
    // calloc: an image's pages are touched only when one comes.
    sh_.staging = buffer();
    sh_.pending = buffer();
    sh_.running = buffer();
    sh_.flash = buffer();
    rhn_fw_shell_init(&sh_, board_id, kSerialBase | node_id,
                      RHN_ENGINE_FW_VERSION);
    rhn_fw_shell_set_state(&sh_, RHN_FW_STATE_RUNNING);
  }
  ~CardShell() {
    std::free(sh_.staging);
    std::free(sh_.pending);
    std::free(sh_.running);
    std::free(sh_.flash);
  }
  CardShell(const CardShell&) = delete;
  CardShell& operator=(const CardShell&) = delete;

  uint32_t stage(uint32_t offset, const void* data, size_t len) {
    return rhn_fw_shell_stage(&sh_, offset, data, len);
  }
  uint32_t commit(uint32_t length, uint32_t flags) {
    return rhn_fw_shell_commit(&sh_, length, flags);
  }
  // True if the shell answers the register.
  bool reg_read(uint32_t offset, unsigned size, uint64_t& value) const {
    return rhn_fw_shell_reg_read(&sh_, offset, size, &value);
  }
  // A host write: CONTROL.RESET boots what the shell says, and the core
  // (which these targets keep) runs again.
  void reg_written(uint32_t offset, uint64_t value) {
    if (offset == RHN_REG_CONTROL && (value & RHN_CONTROL_RESET)) {
      rhn_fw_shell_reset(&sh_);
      rhn_fw_shell_set_state(&sh_, RHN_FW_STATE_RUNNING);
    }
  }

 private:
  static constexpr uint64_t kSerialBase = 0x52484e0000000000ull;  // "RHN"
  static uint8_t* buffer() {
    return static_cast<uint8_t*>(std::calloc(1, RHN_FW_SHELL_CAPACITY));
  }
  rhn_fw_shell sh_{};
};

}  // namespace rhinet::conform
