// SPDX-License-Identifier: BSD-2-Clause
// Hardware counters. Most are written by the engine thread only; a few are
// also counted at the doors (frames refused by frame_arrived on the wire's
// thread). Each writer side has its own array, so the engine thread's
// updates stay plain relaxed stores and the doors' are atomic adds; a
// read sums both.
#pragma once

#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

class Counters {
 public:
  // Engine thread only.
  void add(rhn_counter c, uint64_t n = 1) {
    auto& v = engine_[c];
    v.store(v.load(MemOrder::kRelaxed) + n, MemOrder::kRelaxed);
  }
  // Any thread.
  void add_shared(rhn_counter c, uint64_t n = 1) {
    shared_[c].fetch_add(n, MemOrder::kRelaxed);
  }
  uint64_t get(unsigned c) const {
    if (c >= RHN_CNT_COUNT) return 0;
    return engine_[c].load(MemOrder::kRelaxed) +
           shared_[c].load(MemOrder::kRelaxed);
  }
  void reset() {
    for (auto& v : engine_) v.store(0, MemOrder::kRelaxed);
    for (auto& v : shared_) v.store(0, MemOrder::kRelaxed);
  }

 private:
  Array<Atomic<uint64_t>, RHN_CNT_COUNT> engine_{};
  alignas(64) Array<Atomic<uint64_t>, RHN_CNT_COUNT> shared_{};
};

}  // namespace rhinet::fw
