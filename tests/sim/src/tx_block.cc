// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/tx_block.h"

namespace rhinet::sim {

SimTxBlock::SimTxBlock(fw::HostBus& bus, fw::Wire& wire)
    : bus_(bus), wire_(wire), block_(std::make_unique<Block>()) {}

SimTxBlock::~SimTxBlock() = default;

void SimTxBlock::set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
                        rhn_card_txw_qp* left) {
  block_->set_qp(qpn, q, left);
}

void SimTxBlock::set_channel(uint16_t node, const rhn_card_txw_channel* c) {
  block_->set_channel(node, c);
}

bool SimTxBlock::slot_push(uint32_t slot, void* frame) {
  return block_->slot_push(slot, frame);
}

bool SimTxBlock::slot_back(uint32_t* slot) {
  if (!block_->slot_back(slot)) return false;
  slots_back++;
  return true;
}

uint32_t SimTxBlock::record_pop(rhn_card_txw_record* out, uint32_t max) {
  return block_->record_pop(out, max);
}

void SimTxBlock::flush() { block_->flush(); }

bool SimTxBlock::kick(uint32_t qpn) {
  struct Port {
    SimTxBlock& b;
    bool read(const rhn_card_region& r, uint64_t va, void* buf, size_t len) {
      return b.bus_.dma_region(fw::engine_region(r), va, buf, len, false);
    }
    bool assemble(uint8_t* frame, uint32_t hdr_len, const rhn_card_region& r,
                  uint64_t va, uint32_t len) {
      b.sent_frames++;
      const fw::DmaRegion region = fw::engine_region(r);
      fw::TxGather g;
      g.frame = frame;
      g.hdr_len = hdr_len;
      g.len = len;
      g.region = &region;
      g.va = va;
      return b.wire_.assemble(b.bus_, g);
    }
    void send(const uint8_t* frame, size_t len) {
      b.sent_frames++;
      b.wire_.transmit({frame, len});
    }
  } port{*this};
  return block_->kick(qpn, port);
}

}  // namespace rhinet::sim
