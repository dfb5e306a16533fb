// SPDX-License-Identifier: BSD-2-Clause
// The switch's multicast patterns (which output ports a group's frames go
// to, set in advance by the administrator; Documentation/fabric/switch.md):
// group ID -> member ports. Part of SwitchCore, which the socket program
// and the simulator's switch (tests/sim SimSwitch) both drive, so both
// route groups alike and both answer management frames (verbs UD
// multicast joins) alike.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "rhinet/hw_wire.h"

namespace rhinet::fabric {

// What the switch did with a management frame (GroupTable::manage).
enum class MgmtVerdict {
  kApplied,    // a JOIN or LEAVE of a UD group: done, answered
  kRefused,    // a group outside the UD sub-range: refused, answered
  kMalformed,  // bad CRC, size or operation: dropped, no answer
};

constexpr size_t kMgmtFrameLen = RHN_PKT_HDR_LEN + sizeof(rhn_mgmt_msg);

class GroupTable {
 public:
  GroupTable() : groups_(RHN_NODE_BROADCAST - RHN_NODE_MCAST_FIRST) {}

  static bool is_group(uint16_t id) {
    return id >= RHN_NODE_MCAST_FIRST && id < RHN_NODE_BROADCAST;
  }
  // The administrator's sub-range (static patterns); the rest of the
  // groups are verbs UD multicast's, joined by management frames only.
  static bool is_admin_group(uint16_t id) {
    return id >= RHN_NODE_MCAST_FIRST && id < RHN_NODE_MCAST_UD_FIRST;
  }
  static bool is_ud_group(uint16_t id) {
    return id >= RHN_NODE_MCAST_UD_FIRST && id < RHN_NODE_BROADCAST;
  }
  // Sets an administrator's group's member ports (each at most once: a
  // port listed twice still gets one copy of a frame); an empty list
  // removes the group. False on an ID outside the administrator's
  // sub-range or a port >= `ports`.
  bool set(uint16_t id, std::vector<unsigned> members, unsigned ports) {
    if (!is_admin_group(id)) return false;
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

  // A management frame (RHN_PKT_MGMT, hw_wire.h) that entered on port
  // `ingress`: a JOIN or LEAVE changes only that port's membership, only
  // of a UD group. The answer (kMgmtFrameLen bytes) goes back out on
  // `ingress` unless the verdict is kMalformed. The switch checks this
  // frame's CRCs itself: it acts on it, unlike frames it only forwards.
  MgmtVerdict manage(std::span<const uint8_t> frame, unsigned ingress,
                     std::array<uint8_t, kMgmtFrameLen>& answer) {
    rhn_pkt_hdr h;
    rhn_mgmt_msg m;
    if (frame.size() != kMgmtFrameLen) return MgmtVerdict::kMalformed;
    std::memcpy(&h, frame.data(), sizeof h);
    std::memcpy(&m, frame.data() + RHN_PKT_HDR_LEN, sizeof m);
    if (h.type != RHN_PKT_MGMT || h.payload_len != sizeof m ||
        h.hdr_crc != header_crc(frame.data()) ||
        h.payload_crc != crc32c(0, &m, sizeof m) ||
        (m.op != RHN_MGMT_JOIN && m.op != RHN_MGMT_LEAVE))
      return MgmtVerdict::kMalformed;
    rhn_mgmt_msg a{};
    a.op = RHN_MGMT_ANSWER;
    a.group = m.group;
    a.cookie = m.cookie;
    MgmtVerdict verdict = MgmtVerdict::kApplied;
    if (!is_ud_group(m.group)) {
      a.status = RHN_MGMT_REFUSED;
      verdict = MgmtVerdict::kRefused;
    } else {
      auto& v = groups_[m.group - RHN_NODE_MCAST_FIRST];
      auto at = std::lower_bound(v.begin(), v.end(), ingress);
      const bool member = at != v.end() && *at == ingress;
      if (m.op == RHN_MGMT_JOIN && !member) v.insert(at, ingress);
      if (m.op == RHN_MGMT_LEAVE && member) v.erase(at);
      a.status = RHN_MGMT_OK;
      a.member = m.op == RHN_MGMT_JOIN;
    }
    rhn_pkt_hdr r{};
    r.magic = RHN_WIRE_MAGIC;
    r.version = RHN_WIRE_VERSION;
    r.type = RHN_PKT_MGMT;
    r.dst_node = h.src_node;
    r.src_node = RHN_NODE_BROADCAST;  // the switch
    r.payload_len = sizeof a;
    r.payload_crc = crc32c(0, &a, sizeof a);
    std::memcpy(answer.data(), &r, sizeof r);
    std::memcpy(answer.data() + RHN_PKT_HDR_LEN, &a, sizeof a);
    r.hdr_crc = header_crc(answer.data());
    std::memcpy(answer.data(), &r, sizeof r);
    return verdict;
  }
  // A port's node went away (a new connection replaced it): it leaves
  // every UD group; the administrator's patterns stay.
  void leave_all(unsigned port) {
    for (uint32_t id = RHN_NODE_MCAST_UD_FIRST; id < RHN_NODE_BROADCAST; id++) {
      auto& v = groups_[id - RHN_NODE_MCAST_FIRST];
      v.erase(std::remove(v.begin(), v.end(), port), v.end());
    }
  }

  // CRC32C (Castagnoli) as the NICs compute it (firmware/core/crc32c):
  // bitwise, management frames are rare.
  static uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
      crc ^= p[i];
      for (int k = 0; k < 8; k++)
        crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return ~crc;
  }
  // The header CRC of a header-only type: the 32 bytes with hdr_crc zero.
  static uint32_t header_crc(const uint8_t* frame) {
    uint8_t h[RHN_PKT_HDR_LEN];
    std::memcpy(h, frame, sizeof h);
    std::memset(h + offsetof(rhn_pkt_hdr, hdr_crc), 0, 4);
    return crc32c(0, h, sizeof h);
  }

 private:
  std::vector<std::vector<unsigned>> groups_;
};

}  // namespace rhinet::fabric
