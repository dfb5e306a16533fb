// SPDX-License-Identifier: BSD-2-Clause
// ops/echo: a family that exists only in test builds (RHN_TEST_FAMILY_ECHO),
// the worked example of adding one (Documentation/firmware/README.md). An
// ECHO sends the bytes of its SGEs to the peer QP; the peer's NIC sends the
// same bytes back, with no host involved there, and they land in the same
// SGEs before the WQE completes. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kEchoFamily;  // echo.cpp
inline constexpr OpClaims kEchoClaims{
    .family = &kEchoFamily,
    .wqe_ops = {RHN_OP_ECHO},
    .requests = {RHN_WOP_ECHO},
    .answers = {RHN_WOP_ECHO_RESP},
};

}  // namespace rhinet::fw
