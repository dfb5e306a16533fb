// SPDX-License-Identifier: BSD-2-Clause
// ops/coll: its part of the engine's configuration (EngineConfig::coll).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Collectives: communicators the NIC holds at once, each with `window`
// segment buffers of RHN_WIRE_MTU bytes (sized at construction), and a
// context's share of the communicators (1/256ths). A communicator goes
// when the last of its local endpoints does. While a collective waits for
// other nodes, the NIC checks every EngineConfig::sync_probe_ns that they
// still answer.
struct CollConfig {
  uint32_t comms = 16;
  uint32_t window = 16;
  uint32_t context_share = 128;
};

}  // namespace rhinet::fw
