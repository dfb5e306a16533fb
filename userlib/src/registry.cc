// SPDX-License-Identifier: BSD-2-Clause
#include "registry.hpp"

#include <cerrno>

namespace rhinet::detail {

Result<void> Registry::add(const void* p, std::size_t len, std::uint32_t lkey,
                           bool writable) {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t end = start + len;
  auto it = regions_.lower_bound(end);  // first starting at or after end
  if (it != regions_.begin()) {
    --it;
    if (it->second.end > start)
      return Error(EEXIST,
                   "memory overlaps a Buffer or Area registered "
                   "already");
  }
  regions_.emplace(start, Region{end, lkey, writable});
  return ok();
}

void Registry::remove(const void* p) {
  regions_.erase(reinterpret_cast<std::uintptr_t>(p));
}

const Registry::Region* Registry::find(const void* p, std::size_t len) const {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  auto it = regions_.upper_bound(start);
  if (it == regions_.begin()) return nullptr;
  --it;
  if (start < it->first || start + len > it->second.end) return nullptr;
  return &it->second;
}

}  // namespace rhinet::detail
