// SPDX-License-Identifier: BSD-2-Clause
// Firmware-originated messages (fwmsg/).
#pragma once

#include "core/freestanding.h"
#include "ops/module_ids.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

enum class FwState : uint8_t { kFree, kQueued, kInFlight };

// A message the NIC itself sends to another NIC (pin-down replies, lock
// and barrier messages, directory updates, collective segments; today
// the node probe). Tracked here, not by any QP.
struct FwMessage {
  FwState state = FwState::kFree;
  // Who is told when it is over (acknowledged, refused, or its node
  // declared dead): a family module, or the engine (a node probe).
  FwOwner owner = FwOwner::kProbe;
  uint32_t context = 0;  // on whose behalf (Impl::shares); 0: the NIC's
  uint8_t gen = 0;       // bumps on reuse: stale answers are ignored
  uint16_t node = 0;
  uint16_t len = 0;
  uint32_t kind = 0;  // enum rhn_fw_msg
  uint64_t cookie = 0;
  // Header fields some kinds use (collectives: imm_data, remote_addr,
  // msg_offset of the packet).
  uint32_t imm = 0;
  uint64_t addr = 0;
  uint32_t aux = 0;
  uint8_t payload[RHN_FW_MSG_MAX];
};

}  // namespace rhinet::fw
