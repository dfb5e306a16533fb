// SPDX-License-Identifier: BSD-2-Clause
// The targets the runner can drive. A new target adds its factory here.
#include "target.h"

namespace rhinet::conform {

std::unique_ptr<Target> make_engine_target();
std::unique_ptr<Target> make_softcore_target();
std::unique_ptr<Target> make_guest_target();

const std::vector<TargetEntry>& targets() {
  static const std::vector<TargetEntry> list = {
      {"engine", "T1: the NIC engine in-process (firmware/), virtual time",
       make_engine_target},
      {"softcore",
       "T3: the engine firmware on a RISC-V soft core in "
       "qemu-system-riscv32, joined by the socket link (RHINET_FIRMWARE "
       "names the image)",
       make_softcore_target},
      {"guest",
       "T2: the QEMU device in a TCG guest through rhinet.ko's raw access "
       "and the guest agent, real time (RHINET_VM_ENV names the VM "
       "artifacts, default build/vm/env)",
       make_guest_target},
  };
  return list;
}

}  // namespace rhinet::conform
