// SPDX-License-Identifier: BSD-2-Clause
// N simulated nodes (memory + bus + engine + driver) over one SimSwitch,
// driven by a deterministic step loop in virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rhinet/fw/engine.h"
#include "rhinet/sim/driver.h"
#include "rhinet/sim/fabric.h"
#include "rhinet/sim/host.h"
#include "rhinet/sim/tx_block.h"
#include "rhinet/sim/verbs.h"

namespace rhinet::sim {

struct ClusterConfig {
  size_t nodes = 2;
  size_t memory_bytes = SimMemory::kDefaultBytes;
  uint64_t seed = 1;
  uint64_t hop_delay_ns = 500;
  // Link rate (SimSwitch::set_link_rate): 0, links take no time.
  uint64_t link_ps_per_byte = 0;
  // Virtual time one step costs when any engine did work: keeps time
  // moving while engines are busy, so timers still fire.
  uint64_t busy_step_ns = 50;
  bool bring_up = true;
  fw::EngineConfig engine;  // node_id and mac are set per node
  // The engines read the MAC's receive FIFO in place (SimRxFifo), with
  // the receive placement block in front when engine.rx_write is set.
  bool rx_in_place = false;
  // Per-node adjustment of the engine configuration.
  std::function<void(uint16_t node, fw::EngineConfig&)> tweak;
};

class SimCluster;

struct SimNode {
  SimNode(SimCluster& cluster, uint16_t id, const ClusterConfig& cfg);
  ~SimNode();

  // A new user context (the next free doorbell page) with its default PD,
  // charged to `account` (default: an account of its own, one user each).
  std::unique_ptr<SimContext> open_context(
      uint32_t account = SimDriver::kDefaultAccount);
  // The kernel's own context 0.
  std::unique_ptr<SimContext> kernel_context();
  uint64_t counter(unsigned index) const { return engine->counter(index); }

  uint16_t id;
  fw::EngineConfig config;
  SimMemory memory;
  SimHostBus bus;
  SimAddressSpace address_space;
  std::unique_ptr<fw::Engine> engine;
  std::unique_ptr<SimRxFifo> rx_fifo;    // with ClusterConfig::rx_in_place
  std::unique_ptr<SimTxBlock> tx_block;  // with engine.tx_write
  std::unique_ptr<SimDriver> driver;
  uint32_t next_context = 1;
  // The host's own work between engine polls (an interrupt handler's):
  // true if it did anything.
  std::function<bool()> host_work;
};

class SimCluster {
 public:
  explicit SimCluster(const ClusterConfig& cfg = {});
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  size_t size() const { return nodes_.size(); }
  SimNode& node(size_t i) { return *nodes_.at(i); }
  SimClock& clock() { return clock_; }
  SimSwitch& fabric() { return switch_; }
  bool all_up() const { return all_up_; }

  // Polls every engine once and delivers due frames. True if anything
  // happened (then a little virtual time passes).
  bool step();
  // step(), and when nothing happened jump the clock to the next event
  // (engine timer or frame due), at most `max_idle_jump_ns` ahead.
  bool tick(uint64_t max_idle_jump_ns = 1'000'000);
  // Runs until pred() holds or `timeout_ns` of virtual time pass (or a hard
  // step budget runs out). Returns pred().
  bool run_until(const std::function<bool()>& pred, uint64_t timeout_ns);
  // Lets `ns` of virtual time pass while everything runs.
  void run_for(uint64_t ns);
  // Node i loses power and comes back: a new engine (with `cfg` as its
  // configuration) and driver, brought up again. Every object of the old
  // driver must have been released first. Returns the bring-up's result.
  bool power_cycle(size_t i, const fw::EngineConfig& cfg);
  // Polls `cq` until `n` completions arrived (or timeout); returns them all.
  std::vector<Completion> wait_cqes(SimCq& cq, size_t n,
                                    uint64_t timeout_ns = 50'000'000);
  // Hard bound on steps per run_until, so a spinning engine cannot hang.
  uint64_t max_steps = 20'000'000;
  // Node i's engine is not polled for `ns` of virtual time, as an emulated
  // NIC's thread that the host does not schedule: frames still reach its
  // receive FIFO (and overflow it), its timers fire late, all at once.
  void stall(size_t i, uint64_t ns);

 private:
  ClusterConfig cfg_;
  SimClock clock_;
  SimSwitch switch_;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  std::vector<uint64_t> stalled_until_;
  bool all_up_ = true;
};

// A connected pair of RC QPs, each in a fresh user context.
struct RcPair {
  std::unique_ptr<SimContext> ctx_a, ctx_b;
  std::unique_ptr<SimCq> cq_a, cq_b;
  std::unique_ptr<SimQp> qp_a, qp_b;
  bool ok = false;
};

struct RcOptions {
  uint8_t type = RHN_QP_RC;  // or RHN_QP_UC
  uint8_t access = RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
                   RHN_ACCESS_REMOTE_ATOMIC;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;
  uint8_t max_rd_atomic = 16;  // READs and atomics the QP keeps in flight
  uint8_t sq_log_depth = 8;
  uint8_t rq_log_depth = 7;
  uint8_t cq_log_depth = 10;
  uint8_t cq_flags = 0;  // enum rhn_create_cq_flags
  uint8_t qp_flags = 0;  // enum rhn_create_qp_flags
};

// Creates contexts, CQs and QPs on nodes a and b and brings both QPs to RTS
// pointing at each other.
RcPair make_rc_pair(SimCluster& c, uint16_t a, uint16_t b,
                    const RcOptions& opt = {});
// Brings an existing RC QP to RTS towards (node, qpn).
bool connect_rc(SimQp& qp, uint16_t dest_node, uint32_t dest_qpn,
                const RcOptions& opt = {});
// Brings a UD or endpoint QP to RTS.
bool activate_datagram(SimQp& qp, uint32_t qkey);

}  // namespace rhinet::sim
