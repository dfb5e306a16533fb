// SPDX-License-Identifier: BSD-2-Clause
// A minimal host for fuzzing the engine: a small flat memory, a wire that
// drops everything, a clock that only moves when told.
#pragma once

#include <cstring>
#include <vector>

#include "rhinet/fw/engine.h"

namespace rhinet::fuzz {

class FuzzBus : public fw::HostBus {
 public:
  static constexpr uint64_t kBase = 0x10000000;
  explicit FuzzBus(size_t size) : mem_(size) {}
  bool dma_read(uint64_t a, void* dst, size_t len) override {
    if (!inside(a, len)) return false;
    std::memcpy(dst, &mem_[a - kBase], len);
    return true;
  }
  bool dma_write(uint64_t a, const void* src, size_t len) override {
    if (!inside(a, len)) return false;
    std::memcpy(&mem_[a - kBase], src, len);
    return true;
  }
  bool dma_store_u64(uint64_t a, uint64_t value) override {
    if ((a & 7) || !inside(a, sizeof(value))) return false;
    std::memcpy(&mem_[a - kBase], &value, sizeof(value));
    return true;
  }
  void raise_msix(uint16_t) override {}
  uint64_t now_ns() override { return now; }
  uint8_t* at(uint64_t a) { return &mem_[a - kBase]; }
  uint64_t now = 1;

 private:
  bool inside(uint64_t a, size_t len) const {
    return a >= kBase && len <= mem_.size() && a - kBase <= mem_.size() - len;
  }
  std::vector<uint8_t> mem_;
};

class NullWire : public fw::Wire {
 public:
  void transmit(rhinet::fw::Span<const uint8_t> frame) override {
    frames++;
    bytes += frame.size();
  }
  uint64_t frames = 0, bytes = 0;
};

inline fw::EngineConfig small_config() {
  fw::EngineConfig c;
  c.node_id = 1;
  c.db_pages = 8;
  c.max_pds = 8;
  c.max_mrs = 16;
  c.max_cqs = 8;
  c.max_qps = 8;
  c.max_srqs = 4;
  c.max_eqs = 4;
  c.max_areas = 16;
  c.max_nodes = 4;
  c.tlb_entries = 16;
  c.send_packet_slots = 64;
  c.channel_window = 16;
  c.rx_fifo_frames = 16;
  c.kick_fifo_entries = 16;
  c.max_inflight_per_qp = 8;
  c.responder_reads = 8;
  return c;
}

}  // namespace rhinet::fuzz
