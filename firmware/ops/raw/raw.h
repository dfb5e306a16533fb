// SPDX-License-Identifier: BSD-2-Clause
// ops/raw: raw frames. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kRawFamily;  // raw.cpp
inline constexpr OpClaims kRawClaims{
    .family = &kRawFamily,
    .wqe_ops = {RHN_OP_RAW_ETH},
};

}  // namespace rhinet::fw
