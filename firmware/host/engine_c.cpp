// SPDX-License-Identifier: BSD-2-Clause
// C binding of the engine: adapts the callback table of a C host to the
// HostBus and Wire interfaces the engine is written against.
#include "rhinet/fw/engine_c.h"

#include "rhinet/fw/engine.h"

namespace {

class CallbackHost final : public rhinet::fw::HostBus, public rhinet::fw::Wire {
 public:
  explicit CallbackHost(const rhn_fw_host_ops& ops) : ops_(ops) {}
  bool dma_read(uint64_t addr, void* dst, size_t len) override {
    return ops_.dma_read(ops_.opaque, addr, dst, len);
  }
  bool dma_write(uint64_t addr, const void* src, size_t len) override {
    return ops_.dma_write(ops_.opaque, addr, src, len);
  }
  bool dma_store_u64(uint64_t addr, uint64_t value) override {
    return ops_.dma_store_u64(ops_.opaque, addr, value);
  }
  bool dma_write_publish(uint64_t addr, const void* src, size_t len,
                         size_t publish_at) override {
    if (!ops_.dma_write_publish)
      return HostBus::dma_write_publish(addr, src, len, publish_at);
    return ops_.dma_write_publish(ops_.opaque, addr, src, len, publish_at);
  }
  void raise_msix(uint16_t vector) override {
    ops_.raise_msix(ops_.opaque, vector);
  }
  uint64_t now_ns() override { return ops_.now_ns(ops_.opaque); }
  uint32_t fw_stage(uint32_t offset,
                    rhinet::fw::Span<const uint8_t> bytes) override {
    return ops_.fw_stage ? ops_.fw_stage(ops_.opaque, offset, bytes.data(),
                                         static_cast<uint32_t>(bytes.size()))
                         : uint32_t{RHN_FW_NO_STAGING};
  }
  uint32_t fw_commit(uint32_t length, uint32_t flags) override {
    return ops_.fw_commit ? ops_.fw_commit(ops_.opaque, length, flags)
                          : uint32_t{RHN_FW_NO_STAGING};
  }
  void transmit(rhinet::fw::Span<const uint8_t> frame) override {
    ops_.transmit(ops_.opaque, frame.data(), frame.size());
  }

 private:
  rhn_fw_host_ops ops_;
};

rhinet::fw::EngineConfig to_engine_config(const rhn_fw_config& c) {
  rhinet::fw::EngineConfig cfg;
  cfg.node_id = c.node_id;
  for (int i = 0; i < 6; i++) cfg.mac[i] = c.mac[i];
  if (c.db_pages) cfg.db_pages = c.db_pages;
  if (c.msix_vectors) cfg.msix_vectors = c.msix_vectors;
  if (c.twin_bytes) cfg.twin_bytes = c.twin_bytes;
  if (c.retransmit_timeout_ns)
    cfg.retransmit_timeout_ns = c.retransmit_timeout_ns;
  return cfg;
}

}  // namespace

// The host adapter is declared first so it outlives the engine using it.
struct rhn_fw_engine {
  rhn_fw_engine(const rhn_fw_config& c, const rhn_fw_host_ops& ops)
      : host(ops), engine(to_engine_config(c), host, host) {}
  CallbackHost host;
  rhinet::fw::Engine engine;
};

extern "C" {

rhn_fw_engine* rhn_fw_engine_new(const rhn_fw_config* config,
                                 const rhn_fw_host_ops* ops) {
  if (!config || !ops || !ops->dma_read || !ops->dma_write ||
      !ops->dma_store_u64 || !ops->raise_msix || !ops->now_ns || !ops->transmit)
    return nullptr;  // a host that lacks a required callback
  return new rhn_fw_engine(*config, *ops);
}

void rhn_fw_engine_free(rhn_fw_engine* e) { delete e; }

uint64_t rhn_fw_reg_read(rhn_fw_engine* e, uint32_t offset, unsigned int size) {
  return e->engine.reg_read(offset, size);
}

void rhn_fw_reg_write(rhn_fw_engine* e, uint32_t offset, uint64_t value,
                      unsigned int size) {
  e->engine.reg_write(offset, value, size);
}

void rhn_fw_doorbell_write(rhn_fw_engine* e, uint32_t page, uint32_t offset,
                           uint64_t value, unsigned int size) {
  e->engine.doorbell_write(page, offset, value, size);
}

void rhn_fw_doorbell_write_from(rhn_fw_engine* e, uint32_t page,
                                uint32_t offset, uint64_t value,
                                unsigned int size, uint16_t requester) {
  e->engine.doorbell_write(page, offset, value, size, requester);
}

bool rhn_fw_frame_arrived(rhn_fw_engine* e, const uint8_t* frame, size_t len) {
  return e->engine.frame_arrived({frame, len});
}

bool rhn_fw_poll(rhn_fw_engine* e) { return e->engine.poll(); }

uint64_t rhn_fw_next_deadline_ns(const rhn_fw_engine* e) {
  return e->engine.next_deadline_ns();
}

void rhn_fw_set_link_up(rhn_fw_engine* e, bool up) {
  e->engine.set_link_up(up);
}

uint64_t rhn_fw_counter(const rhn_fw_engine* e, unsigned int index) {
  return e->engine.counter(index);
}

}  // extern "C"
