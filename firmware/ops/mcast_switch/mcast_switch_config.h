// SPDX-License-Identifier: BSD-2-Clause
// ops/mcast_switch: its part of the engine's configuration
// (EngineConfig::mcast_switch).
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// Simultaneous multicast: switch groups this NIC has member lists for
// (RHN_ADMIN_SET_MCAST_GROUP), and the packet memory that keeps each
// multicast packet until every member acknowledged it (shared by the
// groups' streams; a stream holds at most kMcastWindow of them, one
// context at most its share, in 1/256ths).
struct McastSwitchConfig {
  uint32_t groups = 16;
  uint32_t frames = 64;
  uint32_t context_share = 128;
};

}  // namespace rhinet::fw
