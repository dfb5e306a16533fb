// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/rx_fifo.h"

#include <cstring>

#include "card/card_runner.h"

namespace rhinet::sim {

SimRxFifo::SimRxFifo(fw::HostBus& bus, uint16_t node, size_t depth, bool block)
    : bus_(bus), depth_(depth) {
  if (!block) return;
  block_ = std::make_unique<Block>();
  block_->node_id = node;
}

SimRxFifo::~SimRxFifo() = default;

bool SimRxFifo::arrive(std::span<const uint8_t> frame) {
  if (q_.size() >= depth_) return false;
  Entry e;
  e.words.resize((frame.size() + 7) / 8 + 1);
  e.len = frame.size();
  if (!frame.empty()) memcpy(e.words.data(), frame.data(), frame.size());
  if (block_) {
    const auto* f = reinterpret_cast<const uint8_t*>(e.words.data());
    const auto v = block_->arrive(f, e.len,
                                  [&](const rhn_card_region& r, uint64_t va,
                                      const uint8_t* p, size_t len) {
                                    return bus_.dma_region(
                                        fw::engine_region(r), va,
                                        const_cast<uint8_t*>(p), len, true);
                                  });
    e.verdict = v;
    placed_frames += v.placed;
  }
  q_.push_back(std::move(e));
  return true;
}

size_t SimRxFifo::peek(const uint8_t** frame) {
  if (q_.empty()) return 0;
  *frame = reinterpret_cast<const uint8_t*>(q_.front().words.data());
  return q_.front().len;
}

void SimRxFifo::pop() {
  if (q_.empty()) return;
  const Entry& e = q_.front();
  if (block_) block_->popped(e.verdict);
  q_.pop_front();
}

bool SimRxFifo::placed() {
  return block_ && !q_.empty() && block_->current(q_.front().verdict);
}

void SimRxFifo::target(uint32_t qpn, const Target* t) {
  if (!block_) return;
  if (!t) {
    block_->target(qpn, nullptr);
    return;
  }
  const rhn_card_rxw_target c = fw::card::card_target(*t);
  block_->target(qpn, &c);
}

bool SimRxFifo::arm(uint16_t node, uint16_t session, uint32_t next_serial) {
  const bool ok = block_ && block_->arm(node, session, next_serial);
  arms += ok;
  return ok;
}

void SimRxFifo::disarm(uint16_t node) {
  if (block_) block_->disarm(node);
}

void SimRxFifo::flush() {
  if (block_) block_->flush();
}

}  // namespace rhinet::sim
