// SPDX-License-Identifier: BSD-2-Clause
// ops/rdma: RDMA WRITE and READ. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kRdmaFamily;  // rdma.cpp
inline constexpr OpClaims kRdmaClaims{
    .family = &kRdmaFamily,
    .wqe_ops = {RHN_OP_WRITE, RHN_OP_WRITE_IMM, RHN_OP_READ},
    .requests = {RHN_WOP_WRITE, RHN_WOP_READ_REQ},
    .answers = {RHN_WOP_READ_RESP},
};

}  // namespace rhinet::fw
