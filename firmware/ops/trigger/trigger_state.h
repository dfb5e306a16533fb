// SPDX-License-Identifier: BSD-2-Clause
// Triggered operations' tables (ops/trigger).
#pragma once

#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "requester/wqe_decoder.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResTriggerCounters = family_res<FwOwner::kTrigger, 0>();
constexpr Res kResTriggerParked = family_res<FwOwner::kTrigger, 1>();

// A trigger counter (RHN_ADMIN_CREATE_TRIGGER). Its handle is index |
// gen << 16: a handle of an earlier life names no counter. The WQEs
// parked on it wait in a list in the order they were parked.
struct TrigCounter {
  bool valid = false;
  uint16_t gen = 0;
  uint32_t context = 0;
  uint32_t key = 0;  // for remote increments (triggered.md)
  uint64_t value = 0;
  uint32_t first = kNone, last = kNone;  // parked entries, oldest first
  uint64_t min_threshold = UINT64_MAX;   // the lowest of theirs
};

// An entry of the trigger table: a WQE taken off its QP's send queue
// (its trigger slot taken off too). kParked: waiting on `counter`;
// kFired: its threshold was reached, it waits its turn on its QP;
// kRunning: the QP took it (an Inflight names it until it completes,
// and reads the WQE here when it sends it again).
enum class TrigState : uint8_t { kFree, kParked, kFired, kRunning };

struct TrigEntry {
  TrigState state = TrigState::kFree;
  uint8_t slots = 0;       // the WQE's slots (without its trigger slot)
  bool has_chain = false;  // RHN_WQE_X_CHAIN
  uint32_t context = 0;
  uint32_t qpn = 0;
  uint32_t qp_gen = 0;
  uint32_t slot = 0;     // its first SQ slot: the CQE's wqe_index
  uint32_t counter = 0;  // index
  uint32_t chain = 0;    // handle
  uint64_t threshold = 0;
  uint32_t prev = kNone, next = kNone;  // kParked: its counter's list
  uint32_t next_fired = kNone;          // kFired: its QP's queue
  RawWqe raw;
};

// A QP's fired entries, in the order they fired.
struct TrigQueue {
  uint32_t head = kNone, tail = kNone;
};

// The doorbell block's side of counter i, which a doorbell store (on a
// host's MMIO thread) adds to without the kick FIFO: `word` holds the
// generation and the pending sum (RHN_TRIGGER_SUM_*), `owner` the
// counter's context. The engine writes both when it makes the counter
// and clears the word when it ends; an add changes the word by a
// compare-and-swap only while its generation is the handle's.
struct TrigSlot {
  Atomic<uint64_t> word;
  Atomic<uint32_t> owner;
};

struct TriggerTables {
  Table<TrigCounter> counters;
  Table<TrigSlot> slots;            // by counter index
  Table<Atomic<uint64_t>> pending;  // a bit per slot with a sum
  Atomic<bool> sums_kicked{false};  // a "sums pending" kick is owed
  Table<TrigEntry> entries;
  Table<TrigQueue> fired;    // by QPN
  uint32_t fired_count = 0;  // entries in kFired, all QPs together
};

}  // namespace rhinet::fw
