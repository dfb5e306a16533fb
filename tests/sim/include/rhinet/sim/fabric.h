// SPDX-License-Identifier: BSD-2-Clause
// Simulated fabric: the real switch (fabric::SwitchCore, the code the
// QEMU-connected rhinet-switch runs) between links of virtual time. Each
// node's engine transmits into its port's Wire; the switch decides where
// the frame goes (unicast by wiring, broadcast, groups, management frames,
// in-switch reduction) and each frame it sends out passes the links'
// faults (link down; loss, duplication, reordering, corruption as the
// switch's own fabric::FaultInjector decides them; globally or per port,
// seeded) and waits in a queue until deliver() hands it to the
// destination's engine, so an engine is never called back from inside
// transmit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fault_injector.h"
#include "rhinet/fw/engine.h"
#include "rhinet/sim/host.h"
#include "rhinet/sim/rx_fifo.h"
#include "switch_core.h"

namespace rhinet::sim {

// A link's faults: the fabric switch's probabilities per frame (loss,
// duplication, reordering, corruption). Reordering here is a delay in
// virtual time: a held-back frame is overtaken by whatever follows it
// within reorder_delay_ns.
struct FaultConfig : fabric::FaultSpec {
  uint64_t reorder_delay_ns = 5'000;  // how long a held-back frame waits
};

struct SwitchCounters {
  uint64_t transmitted = 0;  // frames handed to the switch by engines
  uint64_t delivered = 0;    // frame_arrived() calls made
  uint64_t rx_refused = 0;   // frame_arrived() returned false
  uint64_t lost = 0;         // dropped by the loss fault or the drop filter
  uint64_t link_drops = 0;   // dropped because a port's link is down
  // The switch has no port for the destination (or does not reduce), or
  // no engine is attached to the destination port.
  uint64_t unroutable = 0;
  uint64_t malformed = 0;  // not a RHiNET frame (the switch's header check)
  uint64_t spoofed = 0;    // src_node is not the node wired to its port
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t mgmt_applied = 0;  // management frames that joined or left
  uint64_t mgmt_refused = 0;  // management frames for a non-UD group
  uint64_t coll_frames = 0;   // in-switch collective frames taken
  // Frames an engine handed to its transmit assembler (Wire::assemble),
  // sent or kept in their slots.
  uint64_t assembled = 0;
};

class SimSwitch {
 public:
  SimSwitch(SimClock& clock, size_t ports, uint64_t seed);
  ~SimSwitch();

  size_t ports() const { return ports_.size(); }
  // The Wire a node's engine transmits into.
  fw::Wire& wire(size_t port);
  // Where frames for `port` are delivered. Must be set before deliver().
  // With `rx`, frames go into that receive FIFO the engine reads in
  // place instead of through Engine::frame_arrived.
  void attach(size_t port, fw::Engine* engine, SimRxFifo* rx = nullptr) {
    ports_.at(port).engine = engine;
    ports_.at(port).rx = rx;
  }

  void set_seed(uint64_t seed) { injector_.seed(seed); }
  void set_faults(const FaultConfig& f) { global_ = f; }
  // Per-port faults apply to frames to or from that port (the destination
  // port's setting wins over the source port's, both over the global one).
  void set_port_faults(size_t port, const FaultConfig& f) {
    ports_.at(port).faults = f;
  }
  void clear_port_faults(size_t port) { ports_.at(port).faults.reset(); }
  void clear_faults();
  void set_link(size_t port, bool up) { ports_.at(port).link_up = up; }
  bool link(size_t port) const { return ports_.at(port).link_up; }
  // A multicast pattern (Documentation/fabric/switch.md), as the
  // administrator sets it in the fabric switch: frames to node ID `group`
  // go to these ports (node i is port i) except the one they came from.
  // Empty: removed. False on a bad ID or port.
  bool set_group(uint16_t group, const std::vector<unsigned>& ports) {
    return core_.set_group(group, ports);
  }
  // A group's member ports now (administrator's or joined by nodes).
  const std::vector<unsigned>& group_members(uint16_t group) const {
    return core_.group_members(group);
  }
  // Virtual time a frame spends in the switch.
  void set_hop_delay(uint64_t ns) { hop_delay_ns_ = ns; }
  // Links of a finite rate (benchmarks): a frame takes ps_per_byte per byte
  // on its sender's link into the switch and again on the link out to its
  // destination (in the order frames reached the switch), each link
  // sending one frame at a time. 0 (the default): frames take no time on
  // the links, only hop_delay.
  void set_link_rate(uint64_t ps_per_byte) { ps_per_byte_ = ps_per_byte; }

  // In-switch reduction (fabric/coll_reducer.h): `slots` segment buffers
  // (0: none, the switch drops RHN_PKT_COLL frames as a switch without it
  // would), a segment dropped after `stale_ns` without a frame about it.
  void configure_coll(uint32_t slots, uint64_t stale_ns,
                      uint64_t stall_ns = fabric::CollReducer::kStallNs) {
    core_.configure_coll(slots, stale_ns, stall_ns);
  }
  const fabric::CollReducer& coll() const { return core_.coll(); }
  // The switch itself: its wiring (map_node) and per-port counters.
  fabric::SwitchCore& core() { return core_; }

  // Delivers every queued frame that is due by now. Returns true if any was.
  bool deliver();
  // Earliest time a queued frame becomes due, or UINT64_MAX.
  uint64_t next_delivery_ns() const;
  size_t queued() const { return queue_.size(); }

  // The links' counts and the switch's, summed over its ports.
  SwitchCounters counters() const;
  // Observes every frame as transmitted (before faults): src port, bytes.
  std::function<void(size_t, std::span<const uint8_t>)> tap;
  // The next this many transmit assemblies (Wire::assemble) fail as a
  // payload read that failed would: nothing sent.
  uint32_t failing_assemblies = 0;
  // A test's filter over every frame as transmitted (after tap, before
  // faults): true drops it, counted as lost. Holds a chosen frame back
  // (its sender retransmits it) to force an interleaving.
  std::function<bool(size_t, std::span<const uint8_t>)> drop;

 private:
  class PortWire;
  struct Port {
    std::unique_ptr<PortWire> wire;
    fw::Engine* engine = nullptr;
    SimRxFifo* rx = nullptr;
    bool link_up = true;
    std::optional<FaultConfig> faults;
    uint64_t in_free = 0, out_free = 0;  // when each link is idle again
  };
  struct Key {
    uint64_t due;
    uint64_t order;
    bool operator<(const Key& o) const {
      return due != o.due ? due < o.due : order < o.order;
    }
  };
  struct Queued {
    size_t dst;
    std::vector<uint8_t> frame;
    // With a link rate: queued first for when it is in the switch, where
    // it takes its turn on the link out (in the order frames arrive).
    bool in_switch = false;
    uint64_t extra_ns = 0;  // a held-back or duplicate frame's delay
    uint64_t hop_ns = 0;    // its time in the switch
    // A frame for the switch itself (management, collective) from port
    // `dst`: the switch takes it when it is due.
    bool to_switch = false;
  };
  // The frame the switch is taking in, for the frames it sends out.
  struct Ingress {
    size_t port = 0;
    uint64_t at = 0;   // when it is in the switch
    uint64_t hop = 0;  // the time its frames out spend in the switch
    bool for_switch = false;
  };

  void transmit(size_t src, std::span<const uint8_t> frame);
  // Hands the frame to the switch; what it sends out goes through route().
  void enter(const Ingress& in, std::span<const uint8_t> frame);
  // Where the links' faults apply (fabric::FaultInjector decides them): a
  // frame from port `src` to port `dst`, in the switch at `at`, out after
  // `hop`. A frame for the switch itself (src == dst) can only be lost;
  // the switch's own frames leave as if from their port.
  void route(size_t src, size_t dst, std::span<const uint8_t> frame,
             uint64_t at, uint64_t hop, bool to_switch = false);
  const FaultConfig& faults_for(size_t src, size_t dst) const;

  SimClock& clock_;
  std::vector<Port> ports_;
  FaultConfig global_;
  uint64_t hop_delay_ns_ = 500;
  uint64_t ps_per_byte_ = 0;
  fabric::FaultInjector injector_;  // decides what faults_for() does
  std::map<Key, Queued> queue_;
  uint64_t order_ = 0;
  SwitchCounters counters_;  // the links' (the switch's own are in core_)
  fabric::SwitchCore core_;
  Ingress in_;
};

}  // namespace rhinet::sim
