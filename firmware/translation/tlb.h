// SPDX-License-Identifier: BSD-2-Clause
// The NIC's translation lookaside buffer for VP (virtual-to-physical)
// translation tables: 4-way set associative, keyed by
// (memory region index, virtual page number), round-robin replacement.
#pragma once

#include "core/card_memory.h"
#include "core/counters.h"

namespace rhinet::fw {

class Tlb {
 public:
  static constexpr uint32_t kWays = 4;

  Tlb(uint32_t entries, Counters& counters, CardMemory& mem);
  // Bus address of the page, counting a hit or a miss (inline: every DMA
  // through a region asks).
  bool lookup(uint32_t mr_index, uint64_t vpn, uint64_t& page_bus) {
    Entry* set = &entries_[set_of(mr_index, vpn) * kWays];
    for (uint32_t w = 0; w < kWays; w++) {
      if (set[w].valid && set[w].vpn == vpn && set[w].mr_index == mr_index) {
        page_bus = set[w].page_bus;
        counters_.add(RHN_CNT_TLB_HITS);
        return true;
      }
    }
    counters_.add(RHN_CNT_TLB_MISSES);
    return false;
  }
  void insert(uint32_t mr_index, uint64_t vpn, uint64_t page_bus);
  // Drops every entry of one region (deregistration) or all of them.
  void invalidate_region(uint32_t mr_index);
  void invalidate_all();

 private:
  struct Entry {
    bool valid = false;
    uint32_t mr_index = 0;
    uint64_t vpn = 0;
    uint64_t page_bus = 0;
  };
  uint32_t set_of(uint32_t mr_index, uint64_t vpn) const {
    // Consecutive pages of one region land in consecutive sets.
    return static_cast<uint32_t>(vpn + mr_index * 0x9e37u) & (sets_ - 1);
  }

  Table<Entry> entries_;
  Table<uint8_t> victim_;  // next way to replace, per set
  uint32_t sets_;
  Counters& counters_;
};

}  // namespace rhinet::fw
