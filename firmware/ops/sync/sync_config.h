// SPDX-License-Identifier: BSD-2-Clause
// ops/sync: its part of the engine's configuration (EngineConfig::sync).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Locks and barriers, as a manager: locks, the members queued in locks and
// barrier rounds, and barrier IDs, for all of its manager endpoints; as a
// member: records of the locks its endpoints hold or wait for. A context's
// share of each (in 1/256ths; a manager's tables are charged to the
// manager endpoint's context). While anything waits, the NIC checks every
// EngineConfig::sync_probe_ns that the nodes it waits on still answer.
struct SyncConfig {
  uint32_t locks = 1024;
  uint32_t waiters = 4096;
  uint32_t barriers = 256;
  uint32_t holds = 1024;
  uint32_t context_share = 128;
};

}  // namespace rhinet::fw
