// SPDX-License-Identifier: BSD-2-Clause
// T1: the engine in-process. The target plays the card around the engine:
// host memory behind a HostBus, MSI-X counted per vector, a virtual clock,
// and a switch port that captures every transmitted frame and (forwarding
// on) delivers it to the node it names. A second node, made on demand,
// shares the clock and the switch.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <span>

#include "lib/card_shell.h"
#include "lib/host_memory.h"
#include "lib/switch_model.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "target.h"

namespace rhinet::conform {
namespace {

constexpr uint16_t kFirstNode = 1;
// Work rounds settle() runs before it gives up on a NIC that never idles.
constexpr unsigned kSettleRounds = 200000;

class EngineNode;

// What both nodes share: the clock and the switch's queue.
struct World {
  uint64_t now = 1'000'000;  // never 0, so a zero timestamp is invalid
  SwitchModel<EngineNode> fabric;

  bool run_once();
  uint64_t next_deadline() const;
  void settle();
};

class EngineNode final : public Target, public fw::HostBus, public fw::Wire {
 public:
  EngineNode(std::shared_ptr<World> world, uint16_t node_id)
      : world_(std::move(world)), node_id_(node_id) {
    port_.node_id = node_id;
    fw::EngineConfig cfg;
    cfg.node_id = node_id;
    cfg.mac[4] = static_cast<uint8_t>(node_id >> 8);
    cfg.mac[5] = static_cast<uint8_t>(node_id);
    cfg.boot_session = 1;
    engine_ = std::make_unique<fw::Engine>(cfg, *this, *this);
    // The cable is plugged in at power-on.
    engine_->set_link_up(true);
    world_->fabric.attach(this);
  }
  ~EngineNode() override { world_->fabric.detach(this); }

  SwitchPort& port() { return port_; }
  fw::Engine& engine() { return *engine_; }

  // ---- Target ----
  std::string name() const override { return "engine"; }
  uint64_t reg_read(uint32_t offset, unsigned size) override {
    uint64_t v;
    if (shell_.reg_read(offset, size, v)) return v;
    return engine_->reg_read(offset, size);
  }
  void reg_write(uint32_t offset, uint64_t value, unsigned size) override {
    shell_.reg_written(offset, value);
    engine_->reg_write(offset, value, size);
  }
  void doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                      unsigned size) override {
    engine_->doorbell_write(page, offset, value, size);
  }
  uint64_t dma_alloc(size_t len, size_t align) override {
    return host_.alloc(len, align);
  }
  void mem_write(uint64_t bus, const void* src, size_t len) override {
    host_.write(bus, src, len);
  }
  void mem_read(uint64_t bus, void* dst, size_t len) override {
    host_.cpu_read(bus, dst, len);
  }
  uint64_t bad_bus_address() const override {
    return HostMemory::bad_address();
  }
  uint64_t msix_count(uint16_t vector) override {
    auto it = msix_.find(vector);
    return it == msix_.end() ? 0 : it->second;
  }
  void inject_frame(const Frame& frame) override {
    world_->fabric.inject(this, frame);
  }
  std::vector<Frame> take_tx_frames() override { return port_.take(); }
  void set_forwarding(bool on) override { port_.forwarding = on; }
  void settle() override { world_->settle(); }
  bool wait_until(const std::function<bool()>& pred,
                  uint64_t budget_ns) override {
    const uint64_t end = world_->now + budget_ns;
    for (;;) {
      if (pred()) return true;
      if (world_->run_once()) continue;
      if (world_->now >= end) return pred();
      // Idle: jump to the next timer, in steps of at most 10 us so that
      // a host-side condition is noticed soon after it becomes true.
      uint64_t next = world_->next_deadline();
      next = std::min({next, world_->now + 10'000, end});
      world_->now = std::max(next, world_->now + 1);
    }
  }
  void advance(uint64_t ns) override {
    const uint64_t end = world_->now + ns;
    for (;;) {
      world_->settle();
      const uint64_t next = world_->next_deadline();
      if (next > end) break;
      world_->now = std::max(next, world_->now + 1);
    }
    world_->now = end;
    world_->settle();
  }
  Target* peer() override {
    if (world_->fabric.nodes.size() < 2) {
      peer_ = std::make_unique<EngineNode>(world_, node_id_ + 1);
      peer_->peer_of_ = this;
    }
    if (peer_) return peer_.get();
    return peer_of_;
  }

  // ---- HostBus ----
  bool dma_read(uint64_t bus_addr, void* dst, size_t len) override {
    return host_.read(bus_addr, dst, len);
  }
  bool dma_write(uint64_t bus_addr, const void* src, size_t len) override {
    return host_.write(bus_addr, src, len);
  }
  bool dma_store_u64(uint64_t bus_addr, uint64_t value) override {
    if (bus_addr & 7) return false;
    return dma_write(bus_addr, &value, sizeof(value));
  }
  void raise_msix(uint16_t vector) override { msix_[vector]++; }
  uint64_t now_ns() override { return world_->now; }
  uint32_t fw_stage(uint32_t offset, fw::Span<const uint8_t> bytes) override {
    return shell_.stage(offset, bytes.data(), bytes.size());
  }
  uint32_t fw_commit(uint32_t length, uint32_t flags) override {
    return shell_.commit(length, flags);
  }

  // ---- Wire ----
  void transmit(fw::Span<const uint8_t> frame) override {
    world_->fabric.transmit(this, frame.data(), frame.size());
  }

 private:
  std::shared_ptr<World> world_;
  uint16_t node_id_;
  CardShell shell_{RHN_BOARD_QEMU, node_id_};
  std::unique_ptr<fw::Engine> engine_;
  HostMemory host_;
  std::map<uint16_t, uint64_t> msix_;
  SwitchPort port_;
  std::unique_ptr<EngineNode> peer_;
  EngineNode* peer_of_ = nullptr;
};

bool World::run_once() {
  // Deliver what is on the wire now (frames transmitted meanwhile wait for
  // the next round, as on a switch).
  bool did = fabric.deliver(
      [](EngineNode* to, const Frame& f) { to->engine().frame_arrived(f); });
  for (EngineNode* n : fabric.nodes) did |= n->engine().poll();
  return did;
}

uint64_t World::next_deadline() const {
  uint64_t t = UINT64_MAX;
  for (EngineNode* n : fabric.nodes)
    t = std::min(t, n->engine().next_deadline_ns());
  return t;
}

void World::settle() {
  for (unsigned i = 0; i < kSettleRounds; i++)
    if (!run_once()) return;
}

}  // namespace

std::unique_ptr<Target> make_engine_target() {
  return std::make_unique<EngineNode>(std::make_shared<World>(), kFirstNode);
}

}  // namespace rhinet::conform
