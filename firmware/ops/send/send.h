// SPDX-License-Identifier: BSD-2-Clause
// ops/send: SENDs to a receive queue. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kSendFamily;  // send.cpp
inline constexpr OpClaims kSendClaims{
    .family = &kSendFamily,
    .wqe_ops = {RHN_OP_SEND, RHN_OP_SEND_IMM, RHN_OP_SEND_INV},
    .requests = {RHN_WOP_SEND},
};

}  // namespace rhinet::fw
