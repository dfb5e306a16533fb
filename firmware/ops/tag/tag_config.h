// SPDX-License-Identifier: BSD-2-Clause
// ops/tag: its part of the engine's configuration (EngineConfig::tag).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Tag matching: posted receives and unexpected messages the NIC holds for
// all endpoints, and a context's share of each (in 1/256ths). Beyond them
// irecvs wait in the RQ and isends are refused and resent, in order.
// Refusal records bound how many senders can be held back at once.
struct TagConfig {
  uint32_t recvs = 4096;
  uint32_t msgs = 4096;
  uint32_t context_share = 128;
  uint32_t refusals = 64;
};

}  // namespace rhinet::fw
