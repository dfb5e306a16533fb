// SPDX-License-Identifier: BSD-2-Clause
// Triggered operations (Documentation/hardware/triggered.md): trigger
// counters, WQEs parked until a counter reaches their threshold, and
// completions that add to a counter (chains). The requester hands every
// WQE with RHN_WQE_X_* flags here when it fetches it, before it decodes
// it, so any opcode may be triggered; a fired WQE comes back to its QP
// through trigger_fired() and runs as if just fetched.
#pragma once

#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"

namespace rhinet::fw {

// Remote increments (RHN_OP_TRIGGER_ADD): what the family claims, for the
// registry. Its hooks are in trigger_remote.cpp.
extern const OpFamily kTriggerFamily;
inline constexpr OpClaims kTriggerClaims{
    .family = &kTriggerFamily,
    .wqe_ops = {RHN_OP_TRIGGER_ADD},
    .requests = {RHN_WOP_TRIGGER_ADD},
    .answers = {RHN_WOP_TRIGGER_RESP},
};

// What trigger_intake made of a fetched WQE with RHN_WQE_X_* flags, or
// trigger_load of a fired one.
struct TriggerIntake {
  enum Verdict : uint8_t {
    kRun,      // runs now (raw holds it without its trigger slot)
    kParked,   // taken into the table: the QP goes on with its next WQE
    kRefused,  // completes with status/syndrome
  };
  Verdict verdict = kRun;
  uint8_t status = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
  bool has_chain = false;
  uint32_t chain = 0;      // the handle its completion adds 1 to
  uint32_t entry = kNone;  // a fired WQE's table entry
  uint32_t slot = 0;       // a fired WQE's first SQ slot
};

// Does the WQE at the start of raw carry trigger flags (a trigger slot)?
inline bool wqe_has_trigger(const RawWqe& raw) {
  return field_at<uint16_t>(raw.bytes, RHN_OFFSETOF(rhn_send_wqe, xflags)) != 0;
}

// Takes the trigger slot off the WQE fetched from QP qpn's slot `slot`
// (`nslots` slots, then one fewer) and parks it, or says it runs now or
// is refused.
TriggerIntake trigger_intake(Impl& m, const QpObj& qp, uint32_t qpn,
                             uint32_t slot, RawWqe& raw, uint32_t& nslots);
// Only takes the trigger slot off (a WQE fetched again from its ring):
// false when the WQE is no longer one with a trigger slot.
bool trigger_strip(RawWqe& raw, uint32_t& nslots);

// The oldest fired entry of QP qpn waiting to run (kNone: none).
inline uint32_t trigger_fired(const Impl& m, uint32_t qpn) {
  return m.trig.fired_count ? m.trig.fired[qpn].head : kNone;
}
// A fired (or running) entry's WQE into raw.
void trigger_load(const Impl& m, uint32_t entry, RawWqe& raw, uint32_t& nslots,
                  TriggerIntake& t);
// The QP took its oldest fired entry: it runs (until trigger_retire).
void trigger_started(Impl& m, uint32_t qpn);
// A running entry's WQE completed: the entry is free.
void trigger_retire(Impl& m, uint32_t entry);
// A chained WQE of context ctx completed successfully.
void trigger_chain(Impl& m, uint32_t ctx, uint32_t handle);
// A peer's remote add to context ctx's counter `handle`, allowed only with
// its key: true (and the value before the add in *before) when it added.
bool trigger_remote_add(Impl& m, uint32_t ctx, uint32_t handle, uint32_t key,
                        uint64_t addend, uint64_t* before);
// An add that came through the kick FIFO (trigger_doorbell_sum said so).
void trigger_doorbell(Impl& m, uint32_t ctx, uint64_t value);
// The TRIGGER doorbell of context ctx's page, on the thread that takes
// doorbell stores: the add goes into its counter's pending sum.
enum class TriggerDbAdd : uint8_t {
  kSummed,    // in the sum; a kick is owed already
  kKickSums,  // in the sum; the caller queues a KickKind::kTriggerSums
  kViaFifo,   // the sum is full: the caller queues the add itself
  kDropped,   // no live counter of ctx: counted
};
TriggerDbAdd trigger_doorbell_sum(Impl& m, uint32_t ctx, uint64_t value);
// The engine takes every pending sum (a "sums pending" kick, or lost
// kicks): each is added to its counter, which may fire parked WQEs.
void trigger_take_sums(Impl& m);
// A refusal of trigger_intake: the QP goes on (no error state).
inline bool trigger_refusal(uint8_t status, uint8_t syndrome) {
  return status == RHN_CQE_GENERAL_ERR && (syndrome == RHN_SYN_BAD_TRIGGER ||
                                           syndrome == RHN_SYN_TRIGGER_NO_ROOM);
}

// The module's hooks (trigger_module.cpp).
void trigger_place(Impl& m, CardMemory& mem);
void trigger_reset(Impl& m);
void trigger_qp_gone(Impl& m, uint32_t qpn);
void trigger_context_gone(Impl& m, uint32_t ctx);
rhn_admin_status trigger_admin(Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                               uint32_t& result, uint32_t& detail);

}  // namespace rhinet::fw
