// SPDX-License-Identifier: BSD-2-Clause
// Small vocabulary shared by the rhinet headers.
#ifndef RHINET_TYPES_HPP
#define RHINET_TYPES_HPP

#include <chrono>
#include <cstdint>

namespace rhinet {

// A timeout that never expires.
inline constexpr std::chrono::milliseconds forever =
    std::chrono::milliseconds::max();

// Largest group the bootstrap accepts.
inline constexpr std::uint32_t max_ranks = 65536;

// Where a rank is on the fabric: its NIC's node ID and its endpoint there
// (the endpoint stands for the process on that node).
struct Peer {
  std::uint32_t node_id = 0;
  std::uint32_t endpoint_id = 0;
  friend bool operator==(const Peer&, const Peer&) = default;
};

}  // namespace rhinet

#endif  // RHINET_TYPES_HPP
