// SPDX-License-Identifier: BSD-2-Clause
// ops/ud_mcast: its part of the engine's configuration
// (EngineConfig::ud_mcast).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Verbs UD multicast: (MGID, QP) entries of the attach table and one
// context's share of them (in 1/256ths); a join or leave the switch has
// not answered is sent again after join_retry_ns (doubling up to 64 times
// that), and every joined group is confirmed again every join_refresh_ns
// (0: never), so a restarted switch learns them.
struct UdMcastConfig {
  uint32_t attach = 256;
  uint32_t context_share = 64;
  uint64_t join_retry_ns = 1'000'000;
  uint64_t join_refresh_ns = 5'000'000'000;
};

}  // namespace rhinet::fw
