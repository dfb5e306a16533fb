// SPDX-License-Identifier: BSD-2-Clause
// The engine on a host (the QEMU device, the test bench): the host plays
// the card's RAM. Host-only code; the soft-core image leaves this folder
// out (scripts/firmware-rv32.sh).
#include <cstdlib>
#include <new>

#include "engine/engine_impl.h"

namespace rhinet::fw {

// Card memory handed over in large blocks as power-on asks for it. Blocks
// are reserved, not touched: untouched pages (twin memory, idle tables)
// cost the host nothing.
struct HostMemory final : CardMemory {
  HostMemory() : CardMemory(nullptr, 0) {}
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory() {
    while (blocks) {
      Block* next = blocks->next;
      ::operator delete (blocks, std::align_val_t{kAlign});
      blocks = next;
    }
  }

 private:
  static constexpr size_t kAlign = 4096;
  static constexpr size_t kBlock = 4u << 20;
  struct Block {
    Block* next;
  };

  bool refill(size_t at_least, void** base, size_t* bytes) override {
    const size_t size = max(kBlock, at_least + kAlign);
    auto* b = static_cast<Block*>(
        ::operator new (size, std::align_val_t{kAlign}, std::nothrow));
    if (!b) return false;
    b->next = blocks;
    blocks = b;
    *base = reinterpret_cast<uint8_t*>(b) + kAlign;
    *bytes = size - kAlign;
    return true;
  }

  Block* blocks = nullptr;
};

Engine::Engine(const EngineConfig& config, HostBus& bus, Wire& wire)
    : host_memory_(new HostMemory) {
  impl_ = host_memory_->object<Impl>(config, bus, wire, *host_memory_);
}

Engine::~Engine() {
  if (impl_) impl_->~Impl();
  delete host_memory_;
}

}  // namespace rhinet::fw
