// SPDX-License-Identifier: BSD-2-Clause
// A simulated card's MAC receive FIFO that the engine reads in place
// (RHN_CARD_CAP_RX_IN_PLACE, Engine::attach_rx), and optionally the
// receive placement block in front of it (RHN_CARD_CAP_RX_WRITE,
// EngineConfig::rx_write), which is firmware/card/rx_write_block.h's
// reference model placing payloads through the node's host bus.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "card/rx_write_block.h"
#include "rhinet/fw/engine.h"

namespace rhinet::sim {

class SimRxFifo final : public fw::RxSource {
 public:
  // depth: frames the FIFO holds (the engine's rx_fifo_frames, so that
  // a full one drops what the engine's own FIFO would).
  SimRxFifo(fw::HostBus& bus, uint16_t node, size_t depth, bool block);
  ~SimRxFifo();
  // The MAC hands over a frame; false when the FIFO is full (dropped).
  bool arrive(std::span<const uint8_t> frame);

  size_t peek(const uint8_t** frame) override;
  void pop() override;
  bool placed() override;
  void target(uint32_t qpn, const Target* t) override;
  bool arm(uint16_t node, uint16_t session, uint32_t next_serial) override;
  void disarm(uint16_t node) override;
  void flush() override;

  uint64_t placed_frames = 0;  // frames the block placed
  uint64_t arms = 0;           // arms the block took

 private:
  // Tables as large as the simulated engines' (max_nodes, max_qps); a
  // QP beyond them is never placed.
  using Block = fw::card::RxWriteBlock<256, 4096>;
  struct Entry {
    std::vector<uint64_t> words;  // 8-byte aligned, as the MAC keeps it
    size_t len = 0;
    Block::Verdict verdict;
  };
  fw::HostBus& bus_;
  size_t depth_;
  std::deque<Entry> q_;
  std::unique_ptr<Block> block_;
};

}  // namespace rhinet::sim
