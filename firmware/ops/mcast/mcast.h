// SPDX-License-Identifier: BSD-2-Clause
// ops/mcast: multicast by a list of destinations (mcastB). What the family
// claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kMcastFamily;  // mcast.cpp
inline constexpr OpClaims kMcastClaims{
    .family = &kMcastFamily,
    .wqe_ops = {RHN_OP_MCAST_LIST},
};

}  // namespace rhinet::fw
