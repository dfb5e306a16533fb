// SPDX-License-Identifier: BSD-2-Clause
// Hardware counters: written by the engine thread only, read by anyone
// (BAR0 reads come from vCPU threads), so plain relaxed atomics suffice.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "rhinet/hw.h"

namespace rhinet::fw {

class Counters {
 public:
  void add(rhn_counter c, uint64_t n = 1) {
    auto& v = v_[c];
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get(unsigned c) const {
    return c < RHN_CNT_COUNT ? v_[c].load(std::memory_order_relaxed) : 0;
  }
  void reset() {
    for (auto& v : v_) v.store(0, std::memory_order_relaxed);
  }

 private:
  std::array<std::atomic<uint64_t>, RHN_CNT_COUNT> v_{};
};

}  // namespace rhinet::fw
