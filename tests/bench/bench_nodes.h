// SPDX-License-Identifier: BSD-2-Clause
// Two NIC engines joined by a cable, with simulated host memory and the
// real clock: the setting of the engine benchmarks (engine_bench,
// tag_bench). No switch, no faults, no simulated time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>

#include "rhinet/sim/driver.h"
#include "rhinet/sim/host.h"
#include "rhinet/sim/verbs.h"

namespace rhinet::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// DMA through the simulated memory, time from the real clock.
class BenchBus : public fw::HostBus {
 public:
  BenchBus(sim::SimMemory& mem, sim::SimClock& clock) : inner_(mem, clock) {}
  bool dma_read(uint64_t a, void* d, size_t n) override {
    return inner_.dma_read(a, d, n);
  }
  bool dma_write(uint64_t a, const void* s, size_t n) override {
    return inner_.dma_write(a, s, n);
  }
  bool dma_store_u64(uint64_t a, uint64_t v) override {
    return inner_.dma_store_u64(a, v);
  }
  void raise_msix(uint16_t v) override { inner_.raise_msix(v); }
  uint64_t now_ns() override {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            Clock::now().time_since_epoch())
            .count());
  }

 private:
  sim::SimHostBus inner_;
};

// A cable: frames go straight into the other engine's receive FIFO.
class DirectWire : public fw::Wire {
 public:
  void transmit(rhinet::fw::Span<const uint8_t> frame) override {
    while (!peer->frame_arrived(frame)) {
      // Receive FIFO full: a real link would apply back-pressure.
      full_waits++;
      std::this_thread::yield();
    }
  }
  fw::Engine* peer = nullptr;
  uint64_t full_waits = 0;  // times the peer's receive FIFO was full
};

struct Node {
  explicit Node(uint16_t id, fw::EngineConfig cfg = {})
      : memory(512ull << 20),
        bus(memory, clock),
        as(memory, 0x7f00'0000'0000ull + uint64_t{id} * 0x10'0000'0000ull) {
    cfg.node_id = id;
    cfg.mac[5] = static_cast<uint8_t>(id);
    engine = std::make_unique<fw::Engine>(cfg, bus, wire);
  }
  sim::SimClock clock;
  sim::SimMemory memory;
  BenchBus bus;
  sim::SimAddressSpace as;
  DirectWire wire;
  std::unique_ptr<fw::Engine> engine;
  std::unique_ptr<sim::SimDriver> driver;
  std::unique_ptr<sim::SimContext> ctx;
};

// Two nodes wired to each other, drivers up, one user context each; both
// engines are pumped by the caller's thread until it starts others.
struct Pair {
  explicit Pair(const fw::EngineConfig& cfg = {}) : a(1, cfg), b(2, cfg) {
    a.wire.peer = b.engine.get();
    b.wire.peer = a.engine.get();
    auto pump = [this] {
      a.engine->poll();
      b.engine->poll();
    };
    a.driver = std::make_unique<sim::SimDriver>(*a.engine, a.memory, pump);
    b.driver = std::make_unique<sim::SimDriver>(*b.engine, b.memory, pump);
    if (!a.driver->bring_up() || !b.driver->bring_up()) return;
    a.ctx = std::make_unique<sim::SimContext>(*a.driver, a.as, 1, 1);
    b.ctx = std::make_unique<sim::SimContext>(*b.driver, b.as, 1, 2);
    up = a.ctx->ok() && b.ctx->ok();
  }
  void pump() {
    a.engine->poll();
    b.engine->poll();
  }
  Node a, b;
  bool up = false;
};

}  // namespace rhinet::bench
