// SPDX-License-Identifier: BSD-2-Clause
// The family modules of ops/registry.cpp, by their place in its list. A
// module's place is also its account in the firmware-message table (each
// family may hold only its share of it), so the engine needs the count.
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// In the registry's order (see kModules there for why that order).
enum class FwOwner : uint8_t {
  kTag,
  kTm,
  kPin,
  kMcastSwitch,
  kUdMcast,
  kSync,
  kShare,
  kColl,
  kTrigger,
  kProbe,  // the engine's own: a node probe (RHN_ADMIN_PROBE_NODE)
};
constexpr uint32_t kFamilyModules = 9;
constexpr uint32_t kFwOwners = kFamilyModules + 1;

}  // namespace rhinet::fw
