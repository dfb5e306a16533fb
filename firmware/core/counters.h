// SPDX-License-Identifier: BSD-2-Clause
// Hardware counters. Most are written by the engine thread only; a few are
// also counted at the doors (frames refused by frame_arrived on the wire's
// thread). Each writer side has its own array, so the engine thread's
// updates stay plain relaxed stores and the doors' are atomic adds; a
// read sums both. On a card (RHN_FW_CARD) every count also goes to the
// card's counter block, which answers the host's BAR0 reads without the
// core.
#pragma once

#include "core/freestanding.h"
#include "rhinet/hw.h"
#if defined(RHN_FW_CARD)
#include "rhinet/fw/card.h"
#endif

namespace rhinet::fw {

class Counters {
 public:
  // Engine thread only.
  void add(rhn_counter c, uint64_t n = 1) {
    auto& v = engine_[c];
    v.store(v.load(MemOrder::kRelaxed) + n, MemOrder::kRelaxed);
    to_card(c, n);
  }
  // Any thread.
  void add_shared(rhn_counter c, uint64_t n = 1) {
    shared_[c].fetch_add(n, MemOrder::kRelaxed);
    to_card(c, n);
  }
  // Bus-transaction counts (MMIO writes, DMA, MSI-X): instrumentation of
  // the emulated NIC, which counts what a real card's bus block would
  // count in hardware. Compiled out on the card, so they cost its
  // firmware's paths nothing (its counters stay 0).
  void add_bus([[maybe_unused]] rhn_counter c, [[maybe_unused]] uint64_t n) {
#if !defined(RHN_FW_CARD)
    add(c, n);
#endif
  }
  void add_bus_shared([[maybe_unused]] rhn_counter c) {
#if !defined(RHN_FW_CARD)
    add_shared(c);
#endif
  }
  uint64_t get(unsigned c) const {
    if (c >= RHN_CNT_COUNT) return 0;
    return engine_[c].load(MemOrder::kRelaxed) +
           shared_[c].load(MemOrder::kRelaxed);
  }
  void reset() {
    for (auto& v : engine_) v.store(0, MemOrder::kRelaxed);
    for (auto& v : shared_) v.store(0, MemOrder::kRelaxed);
#if defined(RHN_FW_CARD)
    rhn_card_counters_clear();
#endif
  }

 private:
  static void to_card([[maybe_unused]] rhn_counter c,
                      [[maybe_unused]] uint64_t n) {
#if defined(RHN_FW_CARD)
    rhn_card_counter_add(c, n);
#endif
  }

  Array<Atomic<uint64_t>, RHN_CNT_COUNT> engine_{};
  alignas(64) Array<Atomic<uint64_t>, RHN_CNT_COUNT> shared_{};
};

}  // namespace rhinet::fw
