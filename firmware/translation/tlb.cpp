// SPDX-License-Identifier: BSD-2-Clause
#include "translation/tlb.h"

namespace rhinet::fw {

Tlb::Tlb(uint32_t entries, Counters& counters, CardMemory& mem)
    : counters_(counters) {
  sets_ = 1;
  while (sets_ * kWays < entries) sets_ <<= 1;
  entries_ = mem.table<Entry>(sets_ * kWays);
  victim_ = mem.table<uint8_t>(sets_);
  if (victim_.empty()) sets_ = 0;  // no memory: the engine reports failure
}

void Tlb::insert(uint32_t mr_index, uint64_t vpn, uint64_t page_bus) {
  const uint32_t s = set_of(mr_index, vpn);
  Entry* set = &entries_[s * kWays];
  uint32_t way = kWays;
  for (uint32_t w = 0; w < kWays && way == kWays; w++)
    if (!set[w].valid) way = w;
  if (way == kWays) {
    way = victim_[s];
    victim_[s] = static_cast<uint8_t>((way + 1) % kWays);
  }
  set[way] = Entry{true, mr_index, vpn, page_bus};
}

void Tlb::invalidate_region(uint32_t mr_index) {
  for (uint32_t i = 0; i < sets_ * kWays; i++) {
    if (entries_[i].valid && entries_[i].mr_index == mr_index) {
      entries_[i].valid = false;
      counters_.add(RHN_CNT_TLB_INVALIDATIONS);
    }
  }
}

void Tlb::invalidate_all() {
  for (uint32_t i = 0; i < sets_ * kWays; i++) {
    if (entries_[i].valid) counters_.add(RHN_CNT_TLB_INVALIDATIONS);
    entries_[i].valid = false;
  }
}

}  // namespace rhinet::fw
