// SPDX-License-Identifier: BSD-2-Clause
// ops/pindown: its part of the engine's configuration (EngineConfig::pin).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Remote pin-down: runs of pages the hosts are pinning at once, requests
// held for them, and a target context's share of those (in 1/256ths).
struct PinConfig {
  uint32_t runs = 64;
  uint32_t waiters = 256;
  uint32_t context_share = 128;
};

}  // namespace rhinet::fw
