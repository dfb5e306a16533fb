/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * C binding of the NIC engine, for hosts written in C (the QEMU device).
 * Mirrors rhinet::fw::Engine one call for one method; the host's bus and wire
 * are given as callbacks. Threading rules are those of engine.h: poll() and
 * the callbacks run on one engine thread, the other calls on any thread.
 */
#ifndef RHINET_FW_ENGINE_C_H
#define RHINET_FW_ENGINE_C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rhn_fw_engine;

struct rhn_fw_host_ops {
  void *opaque;
  /* false on a bus error; the engine counts it and reports it */
  bool (*dma_read)(void *opaque, uint64_t addr, void *dst, size_t len);
  /* may store a byte more than once (a memcpy does) */
  bool (*dma_write)(void *opaque, uint64_t addr, const void *src, size_t len);
  /*
   * Required: one aligned 8-byte little-endian store, atomic to the host's
   * CPUs, for status words and owner words (see HostBus::dma_store_u64).
   */
  bool (*dma_store_u64)(void *opaque, uint64_t addr, uint64_t value);
  /*
   * Optional (NULL: two dma_write calls with a release fence between):
   * write src[0, publish_at) visibly before src[publish_at, len).
   */
  bool (*dma_write_publish)(void *opaque, uint64_t addr, const void *src,
                            size_t len, size_t publish_at);
  void (*raise_msix)(void *opaque, uint16_t vector);
  uint64_t (*now_ns)(void *opaque);
  /* the frame is valid only during the call */
  void (*transmit)(void *opaque, const uint8_t *frame, size_t len);
  /*
   * Optional (NULL: the card takes no image, RHN_FW_NO_STAGING): the
   * shell's firmware slot, see HostBus::fw_stage and fw_commit. Each
   * returns an enum rhn_fw_verdict. The same signatures as the soft
   * core's (card.h), so one shell serves both.
   */
  uint32_t (*fw_stage)(void *opaque, uint32_t offset, const void *data,
                       uint32_t len);
  uint32_t (*fw_commit)(void *opaque, uint32_t length, uint32_t flags);
};

struct rhn_fw_config {
  uint16_t node_id;
  uint8_t mac[6];
  uint32_t db_pages;     /* 0: engine default */
  uint32_t msix_vectors; /* 0: engine default */
  uint64_t twin_bytes;   /* on-board twin memory; 0: engine default */
  /* the retransmission timeout's floor; 0: engine default */
  uint64_t retransmit_timeout_ns;
};

/*
 * The tables are allocated here, once; none are allocated later. NULL when
 * a required callback (all but dma_write_publish) is missing.
 */
struct rhn_fw_engine *rhn_fw_engine_new(const struct rhn_fw_config *config,
                                        const struct rhn_fw_host_ops *ops);
void rhn_fw_engine_free(struct rhn_fw_engine *engine);

uint64_t rhn_fw_reg_read(struct rhn_fw_engine *engine, uint32_t offset,
                         unsigned int size);
void rhn_fw_reg_write(struct rhn_fw_engine *engine, uint32_t offset,
                      uint64_t value, unsigned int size);
void rhn_fw_doorbell_write(struct rhn_fw_engine *engine, uint32_t page,
                           uint32_t offset, uint64_t value, unsigned int size);
/* The same, written by @requester (its PCIe requester ID; 0: the host). */
void rhn_fw_doorbell_write_from(struct rhn_fw_engine *engine, uint32_t page,
                                uint32_t offset, uint64_t value,
                                unsigned int size, uint16_t requester);
bool rhn_fw_frame_arrived(struct rhn_fw_engine *engine, const uint8_t *frame,
                          size_t len);
bool rhn_fw_poll(struct rhn_fw_engine *engine);
uint64_t rhn_fw_next_deadline_ns(const struct rhn_fw_engine *engine);
void rhn_fw_set_link_up(struct rhn_fw_engine *engine, bool up);
uint64_t rhn_fw_counter(const struct rhn_fw_engine *engine, unsigned int index);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_FW_ENGINE_C_H */
