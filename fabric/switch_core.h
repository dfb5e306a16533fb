// SPDX-License-Identifier: BSD-2-Clause
// The RHiNET-NG fabric switch, without sockets: frames come in on a port,
// are routed by destination node (unicast, broadcast, multicast group), pass
// the egress port's fault injector and leave through a callback. The socket
// program (rhinet_switch.cc) and the unit tests drive the same core.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "coll_reducer.h"
#include "fault_injector.h"
#include "group_table.h"

namespace rhinet::fabric {

struct PortCounters {
  uint64_t rx_frames = 0, rx_bytes = 0;
  uint64_t tx_frames = 0, tx_bytes = 0;
  uint64_t malformed = 0;   // dropped at ingress: not a RHiNET frame
  uint64_t unroutable = 0;  // dropped at ingress: no port for the node
  uint64_t link_down_drops = 0;
  uint64_t loss_drops = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t overflow_drops = 0;  // egress buffer full (counted by the owner)
  // Management frames (verbs UD multicast joins and leaves of this port):
  // applied, and refused (a group outside the UD sub-range).
  uint64_t mgmt_applied = 0;
  uint64_t mgmt_refused = 0;
  // Dropped at ingress: src_node is not the node wired to the port (a
  // node speaking in another's name).
  uint64_t spoofed = 0;
};

// pcap writer (LINKTYPE_USER0): every frame as it entered the switch.
class Capture {
 public:
  ~Capture();
  bool open(const std::string& path);
  void close();
  bool is_open() const { return file_ != nullptr; }
  void record(std::span<const uint8_t> frame, uint64_t now_ns);

 private:
  std::FILE* file_ = nullptr;
};

class SwitchCore {
 public:
  static constexpr uint64_t kReorderHoldNs = 1'000'000;
  using Egress = std::function<void(unsigned port, std::span<const uint8_t>)>;

  // coll_slots: the in-switch reduction's segment buffers (configure_coll).
  SwitchCore(unsigned ports, uint64_t seed, Egress egress,
             uint32_t coll_slots = CollReducer::kDefaultSlots);

  unsigned ports() const { return unsigned(ports_.size()); }
  void ingress(unsigned port, std::span<const uint8_t> frame, uint64_t now_ns);
  // Releases held (reordered) frames and ends timed link-downs.
  void tick(uint64_t now_ns);
  uint64_t next_deadline_ns() const;

  void reseed(uint64_t seed);
  // port < 0: every port.
  void set_fault(int port, const FaultSpec& spec);
  // Down for `down_ns` (0: until set up again).
  void set_link(unsigned port, bool up, uint64_t down_ns, uint64_t now_ns);
  bool link_up(unsigned port) const { return ports_[port].up; }
  // The administrator's groups, RHN_NODE_MCAST_FIRST..
  // RHN_NODE_MCAST_UD_FIRST-1; an empty member list removes the group.
  // False on a bad ID or port (GroupTable). The UD sub-range above is
  // joined by the nodes' management frames only.
  bool set_group(uint16_t group, const std::vector<unsigned>& members);
  const std::vector<unsigned>& group_members(uint16_t group) const {
    return groups_.members(group);
  }
  // A new node connected on the port: it is in no UD group yet.
  void port_reconnected(unsigned port);
  // Wires `node` to `port` (node i is on port i until then): frames for
  // the node go there, and only it may send there. The port's previous
  // node and the node's previous port are left unwired. False on a bad
  // node or port.
  bool map_node(uint16_t node, unsigned port);

  // In-switch reduction (RHN_PKT_COLL): a table of `slots` segment
  // buffers, a segment dropped after `stale_ns` without a frame about it,
  // given to another after `stall_ns` without a new partial
  // (CollReducer). No slots: the switch does not reduce, and drops
  // RHN_PKT_COLL frames as unroutable, as a switch without it would.
  void configure_coll(uint32_t slots, uint64_t stale_ns,
                      uint64_t stall_ns = CollReducer::kStallNs) {
    coll_ = CollReducer(slots, stale_ns, stall_ns);
    reduces_ = slots != 0;
  }
  const CollReducer& coll() const { return coll_; }

  PortCounters& counters(unsigned port) { return ports_[port].cnt; }
  const PortCounters& counters(unsigned port) const { return ports_[port].cnt; }
  std::string stats_text() const;
  Capture& capture() { return capture_; }

 private:
  struct Port {
    FaultSpec fault;
    PortCounters cnt;
    FaultInjector injector;
    bool up = true;
    uint64_t up_at_ns = 0;  // 0: no timed link-down
    std::vector<uint8_t> held;
    bool holding = false;
    uint64_t held_until_ns = 0;
  };

  void egress(unsigned port, std::span<const uint8_t> frame, uint64_t now_ns);
  void deliver(unsigned port, std::span<const uint8_t> frame);

  std::vector<Port> ports_;
  // The wiring, both ways (-1: none). Set by the administrator, never
  // learnt from frames: a port is the node wired to it, whatever a frame
  // claims.
  std::vector<int32_t> node_port_;  // node ID -> port
  std::vector<int32_t> port_node_;  // port -> node ID
  GroupTable groups_;
  CollReducer coll_;
  bool reduces_;
  uint64_t seed_;
  Egress egress_;
  Capture capture_;
  std::vector<uint8_t> scratch_;
};

}  // namespace rhinet::fabric
