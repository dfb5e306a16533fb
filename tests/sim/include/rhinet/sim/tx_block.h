// SPDX-License-Identifier: BSD-2-Clause
// A simulated card's transmit block for plain WRITEs
// (RHN_CARD_CAP_TX_WRITE, EngineConfig::tx_write): firmware/card/
// tx_write_block.h's reference model, reading the host through the
// node's bus (region DMA) and sending through its wire (the transmit
// assembler and the MAC). The engine runs it when it takes a kick.
#pragma once

#include <cstdint>
#include <memory>

#include "card/tx_write_block.h"
#include "rhinet/fw/engine.h"

namespace rhinet::sim {

class SimTxBlock final : public fw::TxSink {
 public:
  SimTxBlock(fw::HostBus& bus, fw::Wire& wire);
  ~SimTxBlock();

  void set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
              rhn_card_txw_qp* left) override;
  void set_channel(uint16_t node, const rhn_card_txw_channel* c) override;
  bool slot_push(uint32_t slot, void* frame) override;
  bool slot_back(uint32_t* slot) override;
  uint32_t record_pop(rhn_card_txw_record* out, uint32_t max) override;
  void flush() override;
  bool kick(uint32_t qpn) override;

  uint64_t sent_frames = 0;  // frames the block sent (or failed to gather)
  uint64_t slots_back = 0;   // granted slots the core asked back unused

 private:
  // Tables as large as the simulated engines' (max_nodes, max_qps,
  // send_packet_slots); records: a kick's budget at most.
  using Block = fw::card::TxWriteBlock<256, 4096, 1024, 64>;
  fw::HostBus& bus_;
  fw::Wire& wire_;
  std::unique_ptr<Block> block_;
};

}  // namespace rhinet::sim
