// SPDX-License-Identifier: BSD-2-Clause
#include "card/card_runner.h"

namespace rhinet::fw::card {

bool CardBus::dma_read(uint64_t bus_addr, void* dst, size_t len) {
  return rhn_card_dma_read(bus_addr, dst, len) == RHN_CARD_OK;
}

bool CardBus::dma_write(uint64_t bus_addr, const void* src, size_t len) {
  return rhn_card_dma_write(bus_addr, src, len) == RHN_CARD_OK;
}

bool CardBus::dma_store_u64(uint64_t bus_addr, uint64_t value) {
  return rhn_card_dma_store_u64(bus_addr, value) == RHN_CARD_OK;
}

bool CardBus::dma_write_publish(uint64_t bus_addr, const void* src, size_t len,
                                size_t publish_at) {
  // The DMA block orders the two parts itself (no barrier on the core).
  return rhn_card_dma_publish(bus_addr, src, len, publish_at) == RHN_CARD_OK;
}

bool CardBus::dma_region(const DmaRegion& r, uint64_t va, void* buf, size_t len,
                         bool write) {
  const rhn_card_region region = card_region(r);
  return rhn_card_dma_region(&region, va, buf, len, write) == RHN_CARD_OK;
}

void CardBus::raise_msix(uint16_t vector) { rhn_card_irq(vector); }

uint64_t CardBus::now_ns() { return rhn_card_now_ns(); }
uint32_t CardBus::fw_stage(uint32_t offset, Span<const uint8_t> bytes) {
  return rhn_card_fw_stage(offset, bytes.data(),
                           static_cast<uint32_t>(bytes.size()));
}
uint32_t CardBus::fw_commit(uint32_t length, uint32_t flags) {
  return rhn_card_fw_commit(length, flags);
}
uint64_t CardBus::trigger_set(uint32_t index, uint16_t gen, uint32_t owner) {
  return rhn_card_trigger_set(index, gen, owner);
}
uint64_t CardBus::trigger_take(uint32_t index) {
  return rhn_card_trigger_take(index);
}
uint32_t CardBus::trigger_next() { return rhn_card_trigger_next(); }

void CardWire::transmit(Span<const uint8_t> frame) {
  // A full FIFO or a link down drops it: the transport resends.
  rhn_card_wire_tx(frame.data(), frame.size());
}

size_t CardRx::peek(const uint8_t** frame) {
  return rhn_card_wire_rx_peek(frame);
}

void CardRx::pop() { rhn_card_wire_rx_pop(); }

bool CardRx::placed() { return rhn_card_wire_rx_placed(); }

void CardRx::target(uint32_t qpn, const Target* t) {
  if (!t) {
    rhn_card_rxw_set_target(qpn, nullptr);
    return;
  }
  const rhn_card_rxw_target c = card_target(*t);
  rhn_card_rxw_set_target(qpn, &c);
}

bool CardRx::arm(uint16_t node, uint16_t session, uint32_t next_serial) {
  return rhn_card_rxw_arm(node, session, next_serial);
}

void CardRx::disarm(uint16_t node) { rhn_card_rxw_disarm(node); }

void CardRx::flush() { rhn_card_rxw_flush(); }

void CardTx::set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
                    rhn_card_txw_qp* left) {
  rhn_card_txw_set_qp(qpn, q, left);
}

void CardTx::set_channel(uint16_t node, const rhn_card_txw_channel* c) {
  rhn_card_txw_set_channel(node, c);
}

bool CardTx::slot_push(uint32_t slot, void* frame) {
  return rhn_card_txw_slot_push(slot, frame);
}

uint32_t CardTx::slot_push_n(const uint32_t* slot, void* const* frame,
                             uint32_t n) {
  return rhn_card_txw_slot_push_n(slot, frame, n);
}

bool CardTx::slot_back(uint32_t* slot) { return rhn_card_txw_slot_back(slot); }

uint32_t CardTx::record_pop(rhn_card_txw_record* out, uint32_t max) {
  return rhn_card_txw_record_pop(out, max);
}

void CardTx::flush() { rhn_card_txw_flush(); }

bool CardTx::kick(uint32_t qpn) { return rhn_card_txw_kick(qpn); }

bool CardWire::assemble(HostBus&, const TxGather& g) {
  const rhn_card_region region = card_region(*g.region);
  return rhn_card_tx_assemble(g.frame, g.hdr_len, &region, g.va, g.len,
                              g.send ? RHN_CARD_TX_SEND : 0) == RHN_CARD_OK;
}

namespace {

// The identity block's and the hosting device's word over the build's.
EngineConfig from_card(EngineConfig c) {
  rhn_card_identity id{};
  rhn_card_get_identity(&id);
  rhn_card_settings settings{};
  rhn_card_get_settings(&settings);
  if (settings.rto_floor_us)
    c.retransmit_timeout_ns = uint64_t{settings.rto_floor_us} * 1000;
  c.node_id = id.node_id;
  memcpy(c.mac, id.mac, sizeof(c.mac));
  // A MAC that fills and checks the CRCs takes them off the core.
  c.mac_crc = (rhn_card_caps() & RHN_CARD_CAP_MAC_CRC) != 0;
  // A DMA block that walks the regions' tables takes them off the core.
  c.dma_region = (rhn_card_caps() & RHN_CARD_CAP_DMA_REGION) != 0;
  // A transmit assembler takes the posted payload's bytes off the core.
  c.tx_assembler = (rhn_card_caps() & RHN_CARD_CAP_TX_ASSEMBLER) != 0;
  // A receive placement block takes a plain WRITE's checks and placement
  // (the engine uses it only with the FIFO read in place).
  c.rx_write = (rhn_card_caps() & RHN_CARD_CAP_RX_WRITE) != 0;
  // A transmit block takes plain WRITEs' fetch, checks and frames off the
  // core (the engine uses it only with the three blocks above).
  c.tx_write = (rhn_card_caps() & RHN_CARD_CAP_TX_WRITE) != 0;
  // A doorbell block that sums TRIGGER adds loses none to a full FIFO.
  c.trigger_sums = (rhn_card_caps() & RHN_CARD_CAP_TRIGGER_SUMS) != 0;
  // The power-on epoch of the node's channels: a card that restarts must
  // not reuse its last one (peers would take old packets for new).
  if (!c.boot_session)
    c.boot_session = static_cast<uint16_t>(id.entropy % 0xfffe + 1);
  return c;
}

}  // namespace

CardRunner::CardRunner(const EngineConfig& config, CardMemory& mem)
    : config_(from_card(config)),
      engine_(mem.object<Engine>(config_, bus_, wire_, mem)) {
  // A MAC FIFO the core reads as its own memory: no copy of each frame.
  if (engine_ && (rhn_card_caps() & RHN_CARD_CAP_RX_IN_PLACE)) {
    engine_->attach_rx(rx_);
    rx_in_place_ = true;
  }
  if (engine_ && config_.tx_write) engine_->attach_tx(tx_);
  mirror_registers(true);
}

void CardRunner::take_doorbell(const rhn_card_doorbell& d) {
  switch (d.source) {
    case RHN_CARD_DB_PAGE:
      if (d.flags & RHN_CARD_DB_F_INLINE)
        engine_->doorbell_inline(d.page, rhn_card_doorbell_inline(&d),
                                 RHN_DB_INLINE_WQE_SIZE);
      engine_->doorbell_write(d.page, d.offset, d.value, d.size);
      return;
    case RHN_CARD_DB_SUMS:
      engine_->trigger_sums_pending();
      return;
    case RHN_CARD_DB_REG:
      // The admin ring registers live in the register file (the host
      // stores them without a kick): the engine takes their values as
      // they are with the kicks that use them (not with an EQ doorbell,
      // which comes with every event the driver takes).
      if (d.offset == RHN_REG_CONTROL || d.offset == RHN_REG_ADMIN_SQ_TAIL) {
        engine_->reg_write(RHN_REG_ADMIN_SQ_BASE,
                           rhn_card_reg_get(RHN_REG_ADMIN_SQ_BASE), 8);
        engine_->reg_write(RHN_REG_ADMIN_CQ_BASE,
                           rhn_card_reg_get(RHN_REG_ADMIN_CQ_BASE), 8);
        engine_->reg_write(RHN_REG_ADMIN_LOG_DEPTH,
                           rhn_card_reg_get(RHN_REG_ADMIN_LOG_DEPTH), 4);
      }
      engine_->reg_write(d.offset, d.value, d.size);
      // The file shows the host's RESET at once; what CONTROL reads once
      // the engine handled the write goes there even if it equals what
      // was mirrored before.
      if (d.offset == RHN_REG_CONTROL) control_ = ~0ull;
      return;
    case RHN_CARD_DB_LINK:
      engine_->set_link_up(d.value != 0);
      return;
    default:
      return;  // a source this firmware does not know: ignored
  }
}

void CardRunner::mirror_registers(bool all) {
  if (all) {
    for (uint32_t off = RHN_REG_VERSION; off <= RHN_REG_MAC_HI; off += 4)
      rhn_card_reg_set(off, engine_->reg_read(off, 4));
  }
  // What the engine changes on its own: STATUS (ready, link, fatal,
  // admin on) and CONTROL (a reset clears it).
  const uint64_t status = engine_->reg_read(RHN_REG_STATUS, 4);
  if (status != status_) rhn_card_reg_set(RHN_REG_STATUS, status_ = status);
  const uint64_t control = engine_->reg_read(RHN_REG_CONTROL, 4);
  if (control != control_)
    rhn_card_reg_set(RHN_REG_CONTROL, control_ = control);
}

bool CardRunner::step() {
  if (failed()) return false;
  bool did = false;
  rhn_card_doorbell d;
  for (uint32_t n = 0; n < 64 && rhn_card_doorbell_pop(&d); n++) {
    take_doorbell(d);
    did = true;
  }
  if (rhn_card_doorbell_overflowed()) {
    engine_->doorbells_lost();
    did = true;
  }
  for (uint32_t n = 0; n < 64 && !rx_in_place_; n++) {
    const uint8_t* frame = nullptr;
    const size_t len = rhn_card_wire_rx_peek(&frame);
    if (!len) break;
    engine_->frame_arrived({frame, len});  // a refusal is counted there
    rhn_card_wire_rx_pop();
    did = true;
  }
  if (const uint32_t dropped = rhn_card_wire_rx_dropped()) {
    engine_->frames_dropped(dropped);
    did = true;
  }
  did |= engine_->poll();
  mirror_registers(false);
  return did;
}

void CardRunner::run() {
  for (;;)
    if (!step())
      rhn_card_wait(failed() ? UINT64_MAX : engine_->next_deadline_ns());
}

}  // namespace rhinet::fw::card
