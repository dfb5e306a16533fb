/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host side of the softcore_link test and benchmark: a fake host
 * memory behind the device library's DMA callbacks, a log of the accesses
 * in order, the interrupts and frames the core sent, and the main loop a
 * QEMU device would run (poll the link, fire the core's deadline).
 */
#ifndef RHINET_SOFTCORE_FAKE_HOST_H
#define RHINET_SOFTCORE_FAKE_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "link_test.h"
#include "rhinet_softcore.h"

#define HOST_LOG 64
#define HOST_FRAMES 8

struct host_access {
  char kind; /* 'w' write, 's' store64, 'b' barrier */
  uint64_t addr;
  uint32_t len;
};

struct fake_host {
  uint8_t mem[HOST_BYTES];
  struct host_access log[HOST_LOG];
  unsigned nlog;
  uint64_t deadline;
  unsigned irqs[TEST_VECTORS + 1];
  unsigned irq_order_bad; /* IRQs whose entry was not in memory yet */
  uint64_t irq_entry;     /* the entry an IRQ announces (0: none) */
  uint8_t frames[HOST_FRAMES][9216];
  uint32_t frame_len[HOST_FRAMES];
  unsigned nframes;
  uint64_t frame_bytes;
  /* Called for each REG_SET after the file took it. */
  void (*on_reg_set)(struct fake_host *h, uint32_t offset, uint64_t value);
  void *user;
};

extern const RhnSoftCoreOps fake_host_ops;

void fake_host_init(struct fake_host *h);
uint64_t fake_host_now(void);
/*
 * Runs the link for up to ms milliseconds (or until stop() is true):
 * polls, processes, fires the core's deadline. -1 when the link broke.
 */
int fake_host_run(struct fake_host *h, RhnSoftCore *sc, int ms,
                  bool (*stop)(struct fake_host *h));

#endif /* RHINET_SOFTCORE_FAKE_HOST_H */
