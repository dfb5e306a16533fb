// SPDX-License-Identifier: BSD-2-Clause
// ops/window: memory windows and fast registration. What the family claims, for
// the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kWindowFamily;  // window.cpp
inline constexpr OpClaims kWindowClaims{
    .family = &kWindowFamily,
    .wqe_ops = {RHN_OP_BIND_MW, RHN_OP_LOCAL_INV, RHN_OP_REG_MR},
};

}  // namespace rhinet::fw
