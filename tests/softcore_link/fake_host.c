// SPDX-License-Identifier: BSD-2-Clause
#define _POSIX_C_SOURCE 200809L
#include "fake_host.h"

#include <poll.h>
#include <string.h>
#include <time.h>

uint64_t fake_host_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Where [addr, addr + len) lies: host memory, the fault window, or nowhere.
static int host_range(uint64_t addr, uint32_t len) {
  if (addr >= HOST_BASE && len <= HOST_BYTES &&
      addr - HOST_BASE <= HOST_BYTES - len)
    return RHN_CARD_OK;
  if (addr >= FAULT_BASE && addr < FAULT_BASE + FAULT_BYTES)
    return RHN_CARD_IOMMU_FAULT;
  return RHN_CARD_BUS_ERROR;
}

static void host_log(struct fake_host *h, char kind, uint64_t addr,
                     uint32_t len) {
  if (h->nlog < HOST_LOG)
    h->log[h->nlog++] = (struct host_access){kind, addr, len};
}

static int host_dma_read(void *opaque, uint64_t addr, void *buf, uint32_t len) {
  struct fake_host *h = opaque;
  int st = host_range(addr, len);
  if (st == RHN_CARD_OK) memcpy(buf, h->mem + (addr - HOST_BASE), len);
  return st;
}

static int host_dma_write(void *opaque, uint64_t addr, const void *buf,
                          uint32_t len) {
  struct fake_host *h = opaque;
  int st = host_range(addr, len);
  if (st == RHN_CARD_OK) memcpy(h->mem + (addr - HOST_BASE), buf, len);
  host_log(h, 'w', addr, len);
  return st;
}

static int host_store64(void *opaque, uint64_t addr, uint64_t value) {
  struct fake_host *h = opaque;
  int st = host_range(addr, 8);
  if (st == RHN_CARD_OK) memcpy(h->mem + (addr - HOST_BASE), &value, 8);
  host_log(h, 's', addr, 8);
  return st;
}

static void host_barrier(void *opaque) { host_log(opaque, 'b', 0, 0); }

static void host_irq(void *opaque, uint16_t vector) {
  struct fake_host *h = opaque;
  if (vector < TEST_VECTORS) h->irqs[vector]++;
  if (h->irq_entry) {
    // The entry's owner word must be there when the interrupt is.
    uint64_t owner;
    memcpy(&owner, h->mem + (h->irq_entry - HOST_BASE) + 56, 8);
    if (owner != 0x8000000000000001ull) h->irq_order_bad++;
  }
}

static void host_frame_out(void *opaque, const void *frame, uint32_t len) {
  struct fake_host *h = opaque;
  if (h->nframes < HOST_FRAMES) {
    memcpy(h->frames[h->nframes], frame, len);
    h->frame_len[h->nframes] = len;
  }
  h->nframes++;
  h->frame_bytes += len;
}

static void host_deadline(void *opaque, uint64_t deadline) {
  ((struct fake_host *)opaque)->deadline = deadline;
}

static void host_reg_set(void *opaque, uint32_t offset, uint64_t value) {
  struct fake_host *h = opaque;
  if (h->on_reg_set) h->on_reg_set(h, offset, value);
}

const RhnSoftCoreOps fake_host_ops = {
    .dma_read = host_dma_read,
    .dma_write = host_dma_write,
    .dma_store64 = host_store64,
    .write_barrier = host_barrier,
    .irq = host_irq,
    .frame_out = host_frame_out,
    .deadline = host_deadline,
    .reg_set = host_reg_set,
};

void fake_host_init(struct fake_host *h) {
  memset(h, 0, sizeof(*h));
  for (uint32_t i = 0; i < HOST_BYTES; i++)
    h->mem[i] = host_pattern(HOST_BASE + i);
  h->deadline = UINT64_MAX;
}

int fake_host_run(struct fake_host *h, RhnSoftCore *sc, int ms,
                  bool (*stop)(struct fake_host *h)) {
  const uint64_t end = fake_host_now() + (uint64_t)ms * 1000000u;
  for (;;) {
    if (stop && stop(h)) return 0;
    uint64_t now = fake_host_now();
    if (now >= end) return 0;
    if (now >= h->deadline) {
      h->deadline = UINT64_MAX;
      rhn_sc_tick(sc);
    }
    uint64_t until = h->deadline < end ? h->deadline : end;
    int wait_ms = (int)((until - now + 999999u) / 1000000u);
    if (rhn_sc_run(sc, wait_ms) < 0) return -1;
  }
}
