// SPDX-License-Identifier: BSD-2-Clause
// ops/trigger: its part of the engine's configuration
// (EngineConfig::trigger).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Triggered operations: trigger counters, triggered WQEs parked until
// their counter reaches a threshold (each keeps a copy of its WQE, up to
// RHN_WQE_MAX_SLOTS slots), and one context's share of each table (in
// 1/256ths).
struct TriggerConfig {
  uint32_t counters = 256;
  uint32_t parked = 64;
  uint32_t context_share = 128;
};

}  // namespace rhinet::fw
