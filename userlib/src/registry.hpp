// SPDX-License-Identifier: BSD-2-Clause
// detail::Registry (internal): the group's registered local memory, by
// address, so that an operation's span finds its key. Pure bookkeeping
// (no ibverbs): Device owns one, the unit tests use it alone.
#ifndef RHINET_USERLIB_REGISTRY_HPP
#define RHINET_USERLIB_REGISTRY_HPP

#include <cstddef>
#include <cstdint>
#include <map>

#include "rhinet/result.hpp"

namespace rhinet::detail {

class Registry {
 public:
  // Registered local memory [start, end).
  struct Region {
    std::uintptr_t end = 0;
    std::uint32_t lkey = 0;
    bool writable = false;
  };

  // EEXIST when [p, p + len) overlaps a region registered already.
  Result<void> add(const void* p, std::size_t len, std::uint32_t lkey,
                   bool writable);
  // The region starting at p (nothing if none).
  void remove(const void* p);
  // The region that holds all of [p, p + len), or null.
  const Region* find(const void* p, std::size_t len) const;
  std::size_t size() const { return regions_.size(); }

 private:
  std::map<std::uintptr_t, Region> regions_;
};

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_REGISTRY_HPP
