// SPDX-License-Identifier: BSD-2-Clause
// The switch's multicast patterns (004 2.8: "each router holds patterns of
// which outputs a multicast goes to"): group ID -> member ports. One table
// logic for the fabric switch (SwitchCore, the socket program) and the
// simulator's switch (tests/sim SimSwitch), so both route groups alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "rhinet/hw_wire.h"

namespace rhinet::fabric {

class GroupTable {
 public:
  GroupTable() : groups_(RHN_NODE_BROADCAST - RHN_NODE_MCAST_FIRST) {}

  static bool is_group(uint16_t id) {
    return id >= RHN_NODE_MCAST_FIRST && id < RHN_NODE_BROADCAST;
  }
  // Sets the group's member ports (each at most once: a port listed twice
  // still gets one copy of a frame); an empty list removes the group.
  // False on an ID that is no group or a port >= `ports`.
  bool set(uint16_t id, std::vector<unsigned> members, unsigned ports) {
    if (!is_group(id)) return false;
    for (unsigned m : members)
      if (m >= ports) return false;
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    groups_[id - RHN_NODE_MCAST_FIRST] = std::move(members);
    return true;
  }
  // The ports a frame to group `id` that entered on `ingress` leaves on
  // (never back where it came from); empty for an unknown group.
  template <typename Out>
  bool for_each_egress(uint16_t id, unsigned ingress, Out out) const {
    if (!is_group(id)) return false;
    const auto& members = groups_[id - RHN_NODE_MCAST_FIRST];
    for (unsigned port : members)
      if (port != ingress) out(port);
    return !members.empty();
  }
  const std::vector<unsigned>& members(uint16_t id) const {
    static const std::vector<unsigned> kNone;
    return is_group(id) ? groups_[id - RHN_NODE_MCAST_FIRST] : kNone;
  }

 private:
  std::vector<std::vector<unsigned>> groups_;
};

}  // namespace rhinet::fabric
