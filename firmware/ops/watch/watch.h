// SPDX-License-Identifier: BSD-2-Clause
// ops/watch: sleeping waits on memory. An endpoint arms a one-shot watch
// on one of its process's areas (RHN_OP_WATCH, executed here in SQ
// order); the next PUSH or word-changing atomic by area that lands there
// writes one RHN_CQE_OP_WATCH CQE on the endpoint's receive CQ, whose
// completion event wakes a process sleeping on it. The watch lives in the
// area (AreaObj::watch_qpn, watch_gen): no table of its own. What the
// family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kWatchFamily;  // watch.cpp
inline constexpr OpClaims kWatchClaims{
    .family = &kWatchFamily,
    .wqe_ops = {RHN_OP_WATCH},
};

}  // namespace rhinet::fw
