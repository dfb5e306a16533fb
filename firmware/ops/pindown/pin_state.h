// SPDX-License-Identifier: BSD-2-Clause
// Remote pin-down's tables (ops/pindown).
#pragma once

#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResPinWaiters =
    family_res<FwOwner::kPin, 0>();  // requests held for a target pinning

// Pages [first, first + count) of an on-demand MR the host was asked to
// pin (one RHN_EQE_PD_REQUEST), until RHN_ADMIN_PD_MAPPED answers.
struct PinRun {
  bool used = false;
  uint32_t mr_index = 0;
  uint32_t first = 0, count = 0;
  WaitList senders;  // QPs whose send gathers from these pages (in order)
};

// A request refused (NAK PINNING) or held (a PD_REQ) for a run. An
// endpoint's record also keeps its source's later requests to that
// endpoint back until the refused one comes again (order per source).
struct PinWaiter {
  bool used = false;
  bool reply = false;   // a held PD_REQ: answered when the run is done
  bool orders = false;  // an endpoint's: later requests wait behind it
  uint16_t node = 0;
  uint32_t run = 0;  // kNone once the run is done (only ordering left)
  uint32_t qpn = 0;  // the target QP
  uint32_t context = 0;
  uint64_t since = 0;
  uint64_t va = 0;  // where the request starts in its MR
  rhn_op_hdr op{};  // the request's header
};

struct PinTables {
  Table<PinRun> runs;
  Table<PinWaiter> waiters;
  uint32_t waiters_used = 0;
  uint32_t context_quota = 0;  // waiters one target context may have
  // The last gather of a send that reached a page of an on-demand MR not
  // pinned (Impl::sge_dma): [fault_va, + fault_len) of MR fault_mr, the
  // rest of that SGE; kNone: none since the requester took it.
  uint32_t fault_mr = kNone;
  uint64_t fault_va = 0, fault_len = 0;
};

}  // namespace rhinet::fw
