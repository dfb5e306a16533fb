// SPDX-License-Identifier: BSD-2-Clause
// See softcore_blocks.h. No heap: the state is placed in the caller's
// memory; the tables are sized as the card's configuration sizes the
// engine (card_config.h), so every QP, node and send slot of the firmware
// has its entry.
#include "softcore_blocks.h"

#include <new>

#include "card/card_config.h"
#include "card/mac_crc.h"
#include "card/tx_write_block.h"

namespace {

using rhinet::fw::card::card_config;

constexpr uint32_t kNodes = card_config().max_nodes;
constexpr uint32_t kQps = card_config().max_qps;
constexpr uint32_t kSlots = card_config().send_packet_slots;
constexpr size_t kFrameBytes = size_t{RHN_DATA_HDR_LEN} + RHN_WIRE_MTU;

// The host memory behind the region walk; nothing else of a bus is used.
class Bus final : public rhinet::fw::HostBus {
 public:
  explicit Bus(const RhnScHost& h) : h_(h) {}
  bool dma_read(uint64_t addr, void* dst, size_t len) override {
    return h_.dma_read(h_.opaque, addr, dst, static_cast<uint32_t>(len)) ==
           RHN_CARD_OK;
  }
  bool dma_write(uint64_t addr, const void* src, size_t len) override {
    return h_.dma_write(h_.opaque, addr, src, static_cast<uint32_t>(len)) ==
           RHN_CARD_OK;
  }
  bool dma_store_u64(uint64_t, uint64_t) override { return false; }
  void raise_msix(uint16_t) override {}
  uint64_t now_ns() override { return 0; }

 private:
  RhnScHost h_;
};

}  // namespace

struct RhnScBlocks {
  explicit RhnScBlocks(const RhnScHost& h) : bus(h) {}
  bool walk(const rhn_card_region& r, uint64_t va, void* buf, size_t len,
            bool write) {
    return rhinet::fw::dma_region_walk(bus, rhinet::fw::engine_region(r), va,
                                       buf, len, write);
  }

  Bus bus;
  rhinet::fw::card::TxWriteBlock<kNodes, kQps, kSlots, kSlots> txw;
  // The send slots' frames as the block builds them (a card's slot
  // memory; the core gets a copy with each record).
  uint8_t frames[kSlots][kFrameBytes];
};

extern "C" {

size_t rhn_scb_size(void) { return sizeof(RhnScBlocks); }

RhnScBlocks* rhn_scb_init(void* mem, const RhnScHost* host) {
  return new (mem) RhnScBlocks(*host);
}

int rhn_scb_region(RhnScBlocks* b, const rhn_card_region* region, uint64_t va,
                   void* buf, uint32_t len, bool write) {
  return b->walk(*region, va, buf, len, write) ? RHN_CARD_OK
                                               : RHN_CARD_BUS_ERROR;
}

void rhn_scb_fill_crcs(void* frame, uint32_t len) {
  rhinet::fw::card::mac_fill_crcs(static_cast<uint8_t*>(frame), len);
}

bool rhn_scb_crc_bad(const void* frame, uint32_t len) {
  return rhinet::fw::card::mac_crc_bad(static_cast<const uint8_t*>(frame),
                                       len);
}

void rhn_scb_txw_set_qp(RhnScBlocks* b, uint32_t qpn, const rhn_card_txw_qp* q) {
  b->txw.set_qp(qpn, q, nullptr);
}

void rhn_scb_txw_grant(RhnScBlocks* b, uint32_t qpn, uint32_t inflight,
                       uint32_t slots) {
  b->txw.grant(qpn, inflight, slots);
}

void rhn_scb_txw_set_channel(RhnScBlocks* b, uint16_t node,
                             const rhn_card_txw_channel* c) {
  b->txw.set_channel(node, c);
}

bool rhn_scb_txw_slot_push(RhnScBlocks* b, uint32_t slot) {
  return slot < kSlots && b->txw.slot_push(slot, b->frames[slot]);
}

bool rhn_scb_txw_slot_back(RhnScBlocks* b) {
  uint32_t slot;
  return b->txw.slot_back(&slot);
}

void rhn_scb_txw_flush(RhnScBlocks* b) { b->txw.flush(); }

void rhn_scb_txw_kick(RhnScBlocks* b, uint32_t qpn, rhn_link_txw_kicked* out) {
  // Frames stay in their slots: the device sends each after its record
  // went to the core (link.h).
  struct Port {
    RhnScBlocks& b;
    bool read(const rhn_card_region& r, uint64_t va, void* buf, size_t len) {
      return b.walk(r, va, buf, len, false);
    }
    bool assemble(uint8_t* frame, uint32_t hdr_len, const rhn_card_region& r,
                  uint64_t va, uint32_t len) {
      return b.walk(r, va, frame + hdr_len, len, false);
    }
    void send(const uint8_t*, size_t) {}
  } port{*b};
  *out = rhn_link_txw_kicked{};
  out->took_all = b->txw.kick(qpn, port);
  out->armed = b->txw.armed(qpn);
  // The entry as the kick left it (what a disarm returns), read by a
  // disarm and a new arm with it when the QP stays armed.
  b->txw.set_qp(qpn, nullptr, &out->left);
  if (out->armed) b->txw.set_qp(qpn, &out->left, nullptr);
}

bool rhn_scb_txw_record(RhnScBlocks* b, rhn_card_txw_record* r,
                        const uint8_t** frame, uint32_t* len) {
  if (!b->txw.record_pop(r, 1)) return false;
  *frame = b->frames[r->send_slot];
  *len = r->failed ? 0 : RHN_DATA_HDR_LEN + r->length;
  if (*len) rhn_scb_fill_crcs(b->frames[r->send_slot], *len);
  return true;
}

}  // extern "C"
