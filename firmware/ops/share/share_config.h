// SPDX-License-Identifier: BSD-2-Clause
// ops/share: its part of the engine's configuration (EngineConfig::share).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Shared regions: records of the regions the NIC's endpoints are members
// or home of (one per endpoint and area key, each holding the region's
// directory), and a context's share of them (1/256ths). While a join
// waits, the NIC checks every EngineConfig::sync_probe_ns that the nodes
// it waits on still answer; a join not done in join_timeout_ns fails
// (RHN_SYN_MEMBER_LOST) rather than hang.
struct ShareConfig {
  uint32_t regions = 256;
  uint32_t context_share = 128;
  uint64_t join_timeout_ns = 2'000'000'000;
};

}  // namespace rhinet::fw
