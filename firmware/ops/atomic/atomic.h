// SPDX-License-Identifier: BSD-2-Clause
// ops/atomic: remote atomics. What the family claims, for the registry.
#pragma once

#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kAtomicFamily;  // atomic.cpp

// The answer of an operation that returns one 8-byte value (`wop`: the
// atomics' ATOMIC_RESP, a remote trigger add's TRIGGER_RESP): the value
// into the WQE's SGE if it has one, and the WQE completes.
void finish_value_answer(Impl& m, uint32_t qpn, Inflight& e, const Packet& pkt,
                         uint8_t wop);
inline constexpr OpClaims kAtomicClaims{
    .family = &kAtomicFamily,
    .wqe_ops = {RHN_OP_FETCH_ADD, RHN_OP_CMP_SWAP, RHN_OP_ATOMIC_EXT},
    .requests = {RHN_WOP_FETCH_ADD, RHN_WOP_CMP_SWAP, RHN_WOP_ATOMIC_EXT},
    .answers = {RHN_WOP_ATOMIC_RESP},
};

}  // namespace rhinet::fw
