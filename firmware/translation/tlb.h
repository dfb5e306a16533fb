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
  // Bus address of the page, counting a hit or a miss.
  bool lookup(uint32_t mr_index, uint64_t vpn, uint64_t& page_bus);
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
  uint32_t set_of(uint32_t mr_index, uint64_t vpn) const;

  Table<Entry> entries_;
  Table<uint8_t> victim_;  // next way to replace, per set
  uint32_t sets_;
  Counters& counters_;
};

}  // namespace rhinet::fw
