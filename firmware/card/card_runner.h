// SPDX-License-Identifier: BSD-2-Clause
// The engine on a card: HostBus and Wire as the card's blocks
// (rhinet/fw/card.h), and the loop that feeds the engine from the
// doorbell and receive FIFOs and mirrors what the host reads into the
// register file. Documentation/hardware/soft-core.md describes the
// blocks.
#pragma once

#include "rhinet/fw/card.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"

namespace rhinet::fw::card {

// The DMA window, the MSI-X block and the timer.
class CardBus final : public HostBus {
 public:
  bool dma_read(uint64_t bus_addr, void* dst, size_t len) override;
  bool dma_write(uint64_t bus_addr, const void* src, size_t len) override;
  bool dma_store_u64(uint64_t bus_addr, uint64_t value) override;
  bool dma_write_publish(uint64_t bus_addr, const void* src, size_t len,
                         size_t publish_at) override;
  bool dma_region(const DmaRegion& r, uint64_t va, void* buf, size_t len,
                  bool write) override;
  void raise_msix(uint16_t vector) override;
  uint64_t now_ns() override;
  uint32_t fw_stage(uint32_t offset, Span<const uint8_t> bytes) override;
  uint32_t fw_commit(uint32_t length, uint32_t flags) override;
  uint64_t trigger_set(uint32_t index, uint16_t gen, uint32_t owner) override;
  uint64_t trigger_take(uint32_t index) override;
  uint32_t trigger_next() override;
};

// The MAC's transmit FIFO, and the transmit assembler in front of it.
class CardWire final : public Wire {
 public:
  void transmit(Span<const uint8_t> frame) override;
  bool assemble(HostBus& bus, const TxGather& g) override;
};

// The engine's descriptions in the card's terms (rhinet/fw/card.h;
// card_region is engine.h's).
inline rhn_card_rxw_target card_target(const RxSource::Target& t) {
  rhn_card_rxw_target c{};
  c.region = card_region(t.region);
  c.iova = t.iova;
  c.length = t.length;
  c.rkey = t.rkey;
  c.peer_qpn = t.peer_qpn;
  c.peer_node = t.peer_node;
  return c;
}

// The MAC's receive FIFO, read in place (RHN_CARD_CAP_RX_IN_PLACE), and
// the receive placement block in front of it (RHN_CARD_CAP_RX_WRITE).
class CardRx final : public RxSource {
 public:
  size_t peek(const uint8_t** frame) override;
  void pop() override;
  bool placed() override;
  void target(uint32_t qpn, const Target* t) override;
  bool arm(uint16_t node, uint16_t session, uint32_t next_serial) override;
  void disarm(uint16_t node) override;
  void flush() override;
};

// The transmit block for plain WRITEs (RHN_CARD_CAP_TX_WRITE): the
// engine's calls as card.h's rhn_card_txw_*.
class CardTx final : public TxSink {
 public:
  void set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
              rhn_card_txw_qp* left) override;
  void set_channel(uint16_t node, const rhn_card_txw_channel* c) override;
  bool slot_push(uint32_t slot, void* frame) override;
  uint32_t slot_push_n(const uint32_t* slot, void* const* frame,
                       uint32_t n) override;
  bool slot_back(uint32_t* slot) override;
  uint32_t record_pop(rhn_card_txw_record* out, uint32_t max) override;
  void flush() override;
  bool kick(uint32_t qpn) override;
};

class CardRunner {
 public:
  // Places the engine in mem with `config`, its identity and settings
  // from the card.
  CardRunner(const EngineConfig& config, CardMemory& mem);
  CardRunner(const CardRunner&) = delete;
  CardRunner& operator=(const CardRunner&) = delete;

  bool failed() const { return engine_->failed(); }
  // The configuration the engine was placed with.
  const EngineConfig& config() const { return config_; }
  // One round: the doorbell FIFO, the receive FIFO (unless the engine
  // reads it in place), one poll() of the engine, the registers the host
  // reads. True if anything happened.
  bool step();
  // Rounds forever; sleeps in rhn_card_wait while idle.
  [[noreturn]] void run();

 private:
  void take_doorbell(const rhn_card_doorbell& d);
  void mirror_registers(bool all);

  CardBus bus_;
  CardWire wire_;
  CardRx rx_;
  CardTx tx_;
  const EngineConfig config_;
  Engine* engine_;
  bool rx_in_place_ = false;  // the engine reads the MAC's FIFO itself
  uint64_t status_ = ~0ull, control_ = ~0ull;
};

}  // namespace rhinet::fw::card
