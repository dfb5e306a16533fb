// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/cluster.h"

#include <algorithm>
#include <cstdint>

namespace rhinet::sim {

// ---- SimNode
// ---------------------------------------------------------------------

SimNode::SimNode(SimCluster& cluster, uint16_t node_id,
                 const ClusterConfig& cfg)
    : id(node_id),
      config(cfg.engine),
      memory(cfg.memory_bytes, SimMemory::kDefaultBusBase,
             cfg.seed * 131 + node_id),
      bus(memory, cluster.clock()),
      // VAs look like user-space addresses and differ per node.
      address_space(memory, 0x7f00'0000'0000ull +
                                uint64_t(node_id) * 0x10'0000'0000ull +
                                0x5'3000ull) {
  config.node_id = node_id;
  config.mac[0] = 0x02;
  config.mac[1] = 0x52;
  config.mac[2] = 0x4e;
  config.mac[3] = 0x00;
  config.mac[4] = uint8_t(node_id >> 8);
  config.mac[5] = uint8_t(node_id);
  if (cfg.tweak) cfg.tweak(node_id, config);
  engine =
      std::make_unique<fw::Engine>(config, bus, cluster.fabric().wire(node_id));
  if (cfg.rx_in_place) {
    rx_fifo = std::make_unique<SimRxFifo>(bus, node_id, config.rx_fifo_frames,
                                          config.rx_write);
    engine->attach_rx(*rx_fifo);
  }
  if (config.tx_write) {
    tx_block =
        std::make_unique<SimTxBlock>(bus, cluster.fabric().wire(node_id));
    engine->attach_tx(*tx_block);
  }
  driver = std::make_unique<SimDriver>(*engine, memory,
                                       [&cluster] { cluster.tick(); });
}

SimNode::~SimNode() = default;

std::unique_ptr<SimContext> SimNode::open_context(uint32_t account) {
  return std::make_unique<SimContext>(*driver, address_space, next_context++,
                                      id, account);
}

std::unique_ptr<SimContext> SimNode::kernel_context() {
  return std::make_unique<SimContext>(*driver, address_space, 0, id);
}

// ---- SimCluster
// --------------------------------------------------------------------

SimCluster::SimCluster(const ClusterConfig& cfg)
    : cfg_(cfg), switch_(clock_, cfg.nodes, cfg.seed) {
  switch_.set_hop_delay(cfg.hop_delay_ns);
  switch_.set_link_rate(cfg.link_ps_per_byte);
  for (size_t i = 0; i < cfg.nodes; ++i) {
    nodes_.push_back(std::make_unique<SimNode>(*this, uint16_t(i), cfg));
    switch_.attach(i, nodes_.back()->engine.get(),
                   nodes_.back()->rx_fifo.get());
  }
  if (cfg.bring_up) {
    for (auto& n : nodes_) all_up_ = n->driver->bring_up() && all_up_;
  }
}

bool SimCluster::power_cycle(size_t i, const fw::EngineConfig& cfg) {
  SimNode& n = *nodes_.at(i);
  switch_.attach(i, nullptr);
  n.driver.reset();
  n.config = cfg;
  n.engine = std::make_unique<fw::Engine>(n.config, n.bus, switch_.wire(i));
  if (cfg_.rx_in_place) {
    n.rx_fifo = std::make_unique<SimRxFifo>(
        n.bus, n.id, n.config.rx_fifo_frames, n.config.rx_write);
    n.engine->attach_rx(*n.rx_fifo);
  }
  n.tx_block.reset();
  if (n.config.tx_write) {
    n.tx_block = std::make_unique<SimTxBlock>(n.bus, switch_.wire(i));
    n.engine->attach_tx(*n.tx_block);
  }
  n.driver =
      std::make_unique<SimDriver>(*n.engine, n.memory, [this] { tick(); });
  n.next_context = 1;
  switch_.attach(i, n.engine.get(), n.rx_fifo.get());
  return n.driver->bring_up();
}

SimCluster::~SimCluster() {
  // Detach engines before they go away; nothing is delivered afterwards.
  for (size_t i = 0; i < nodes_.size(); ++i) switch_.attach(i, nullptr);
}

void SimCluster::stall(size_t i, uint64_t ns) {
  stalled_until_.resize(nodes_.size(), 0);
  stalled_until_.at(i) = clock_.now() + ns;
}

bool SimCluster::step() {
  bool any = false;
  for (size_t i = 0; i < nodes_.size(); i++) {
    if (i < stalled_until_.size() && clock_.now() < stalled_until_[i]) continue;
    any = nodes_[i]->engine->poll() || any;
  }
  for (auto& n : nodes_)
    if (n->host_work) any = n->host_work() || any;
  any = switch_.deliver() || any;
  if (any) clock_.advance(cfg_.busy_step_ns);
  return any;
}

bool SimCluster::tick(uint64_t max_idle_jump_ns) {
  if (step()) return true;
  uint64_t next = switch_.next_delivery_ns();
  for (size_t i = 0; i < nodes_.size(); i++) {
    const bool stalled =
        i < stalled_until_.size() && clock_.now() < stalled_until_[i];
    next = std::min(next, stalled ? stalled_until_[i]
                                  : nodes_[i]->engine->next_deadline_ns());
  }
  const uint64_t now = clock_.now();
  const uint64_t limit = now + max_idle_jump_ns;
  // Always move forward at least a little, so a deadline that poll() did not
  // act on cannot stall the loop.
  clock_.advance_to(std::clamp(next, now + 1, limit));
  return false;
}

bool SimCluster::run_until(const std::function<bool()>& pred,
                           uint64_t timeout_ns) {
  const uint64_t deadline = clock_.now() + timeout_ns;
  for (uint64_t steps = 0; !pred(); ++steps) {
    if (clock_.now() >= deadline || steps >= max_steps) return pred();
    tick(deadline - clock_.now());
  }
  return true;
}

void SimCluster::run_for(uint64_t ns) {
  const uint64_t end = clock_.now() + ns;
  run_until([&] { return clock_.now() >= end; }, ns + 1);
}

std::vector<Completion> SimCluster::wait_cqes(SimCq& cq, size_t n,
                                              uint64_t timeout_ns) {
  std::vector<Completion> got;
  run_until(
      [&] {
        // Everything that is there: an idle cluster jumps to the deadline.
        for (const Completion& c : cq.poll(SIZE_MAX)) got.push_back(c);
        return got.size() >= n;
      },
      timeout_ns);
  return got;
}

// ---- helpers
// -------------------------------------------------------------------------

bool connect_rc(SimQp& qp, uint16_t dest_node, uint32_t dest_qpn,
                const RcOptions& opt) {
  return qp.to_init(opt.access).ok() &&
         qp.to_rtr(dest_node, dest_qpn, opt.max_rd_atomic).ok() &&
         qp.to_rts(opt.rnr_retry, opt.min_rnr_timer).ok();
}

bool activate_datagram(SimQp& qp, uint32_t qkey) {
  return qp.to_init(RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
                        RHN_ACCESS_REMOTE_ATOMIC,
                    qkey)
             .ok() &&
         qp.to_rtr().ok() && qp.to_rts().ok();
}

RcPair make_rc_pair(SimCluster& c, uint16_t a, uint16_t b,
                    const RcOptions& opt) {
  RcPair p;
  p.ctx_a = c.node(a).open_context();
  p.ctx_b = c.node(b).open_context();
  if (!p.ctx_a->ok() || !p.ctx_b->ok()) return p;
  p.cq_a = p.ctx_a->create_cq(opt.cq_log_depth, opt.cq_flags);
  p.cq_b = p.ctx_b->create_cq(opt.cq_log_depth, opt.cq_flags);
  if (!p.cq_a || !p.cq_b) return p;
  QpInit init;
  init.type = opt.type;
  init.sq_log_depth = opt.sq_log_depth;
  init.rq_log_depth = opt.rq_log_depth;
  init.flags = opt.qp_flags;
  init.send_cq = p.cq_a.get();
  p.qp_a = p.ctx_a->create_qp(init);
  init.send_cq = p.cq_b.get();
  p.qp_b = p.ctx_b->create_qp(init);
  if (!p.qp_a || !p.qp_b) return p;
  p.ok = connect_rc(*p.qp_a, b, p.qp_b->qpn(), opt) &&
         connect_rc(*p.qp_b, a, p.qp_a->qpn(), opt);
  return p;
}

}  // namespace rhinet::sim
