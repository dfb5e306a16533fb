// SPDX-License-Identifier: BSD-2-Clause
// ops/atomic: remote atomics. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kAtomicFamily;  // atomic.cpp
inline constexpr OpClaims kAtomicClaims{
    .family = &kAtomicFamily,
    .wqe_ops = {RHN_OP_FETCH_ADD, RHN_OP_CMP_SWAP},
    .requests = {RHN_WOP_FETCH_ADD, RHN_WOP_CMP_SWAP},
    .answers = {RHN_WOP_ATOMIC_RESP},
};

}  // namespace rhinet::fw
