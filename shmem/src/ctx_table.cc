#include "ctx_table.hpp"

namespace rhinet::shmem {

namespace {
// A handle: generation above the low byte, slot + kFirstHandle in it.
constexpr unsigned kSlotBits = 8;
static_assert(ContextTable::kCapacity + ContextTable::kFirstHandle <=
              (1u << kSlotBits));

std::uintptr_t handle_of(std::size_t slot, std::uint32_t generation) {
  return (std::uintptr_t{generation} << kSlotBits) |
         (slot + ContextTable::kFirstHandle);
}
}  // namespace

std::optional<std::uintptr_t> ContextTable::create() {
  for (std::size_t s = 0; s < kCapacity; s++) {
    if (live_[s]) continue;
    live_[s] = true;
    return handle_of(s, ++generation_[s]);
  }
  return std::nullopt;
}

ContextTable::Lookup ContextTable::find(std::uintptr_t handle) const {
  const std::uintptr_t low = handle & ((1u << kSlotBits) - 1);
  if (low < kFirstHandle || low - kFirstHandle >= kCapacity) return {};
  const std::size_t slot = low - kFirstHandle;
  const std::uintptr_t generation = handle >> kSlotBits;
  if (generation == 0 || generation > generation_[slot]) return {};
  if (generation < generation_[slot] || !live_[slot])
    return {Found::destroyed, slot};
  return {Found::live, slot};
}

bool ContextTable::destroy(std::uintptr_t handle) {
  const Lookup l = find(handle);
  if (l.found != Found::live) return false;
  live_[l.slot] = false;
  return true;
}

std::size_t ContextTable::live() const {
  std::size_t n = 0;
  for (bool l : live_) n += l;
  return n;
}

}  // namespace rhinet::shmem
