// The NIC endpoints a PE keeps for its contexts (shmem_init makes them,
// SHMEM_CONTEXT_ENDPOINTS says how many): which are free. A context takes
// one when it is created and gives it back when destroyed; with none
// free it posts on the PE's default endpoint. Fixed size, no NIC here, so
// the bookkeeping is unit-tested on its own.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "ctx_table.hpp"

namespace rhinet::shmem {

class EndpointPool {
 public:
  // At most one endpoint per context the table holds.
  static constexpr std::size_t kMaxEndpoints = ContextTable::kCapacity;
  static constexpr std::size_t kDefaultEndpoints = 4;

  EndpointPool() = default;
  // `count` endpoints, all free; count must be at most kMaxEndpoints.
  explicit EndpointPool(std::size_t count);

  // The free endpoint of lowest index, now taken; nothing when all are.
  std::optional<std::size_t> take();
  // Gives back a taken endpoint; false (nothing changes) when `index` is
  // no endpoint of the pool or is free already.
  bool give(std::size_t index);
  std::size_t size() const { return count_; }
  std::size_t free() const;

 private:
  std::size_t count_ = 0;
  bool taken_[kMaxEndpoints] = {};
};

// SHMEM_CONTEXT_ENDPOINTS's value: a decimal count 0..kMaxEndpoints.
// error is empty when it parsed, else says why (without the variable's
// name, which the caller puts first).
struct ParsedCount {
  std::size_t count = 0;
  std::string error;
};
ParsedCount parse_endpoint_count(const char* text);

}  // namespace rhinet::shmem
