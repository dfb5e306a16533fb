// SPDX-License-Identifier: BSD-2-Clause
// The link's transport inside qemu-system-riscv32: a ring each way in the
// link area of RAM, which the device maps from the same file QEMU backs the
// RAM with; the UART (a chardev socket to the device) carries one-byte
// wake-ups only. Layout and rules: firmware/card/link.h.
#include <string.h>

#include "link.h"
#include "transport.h"
#include "virt.h"

#define AREA (VIRT_RAM_BASE + RHN_LINK_SHM_OFFSET)
#define SHM ((volatile struct rhn_link_shm *)(uintptr_t)AREA)
#define RING_IN ((uint8_t *)(uintptr_t)(AREA + RHN_LINK_SHM_RING0))
#define RING_OUT ((uint8_t *)(uintptr_t)(AREA + RHN_LINK_SHM_RING1))
#define RING_MASK (RHN_LINK_SHM_RING_BYTES - 1u)

static uint32_t in_tail;   // read position, published by rhn_lt_read_done
static uint32_t out_head;  // write position, published by rhn_lt_send

static uint32_t load_acquire(volatile uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_release(volatile uint32_t *p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// Waits for a wake-up byte and drops it (and any others queued).
static void wait_for_wake(void) {
  rhn_virt_uart_wait();
  while (*virt_uart(UART_LSR) & UART_LSR_DR) (void)*virt_uart(UART_RBR);
}

static void wake_device(void) {
  while (!(*virt_uart(UART_LSR) & UART_LSR_THRE)) {
  }
  *virt_uart(UART_THR) = 1;
}

// After moving our index: the device may sleep waiting for it.
static void wake_if_sleeping(volatile uint32_t *flag) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (*flag) {
    *flag = 0;
    wake_device();
  }
}

void rhn_lt_init(void) {
  while (load_acquire(&SHM->magic) != RHN_LINK_SHM_MAGIC) {
  }
  in_tail = SHM->to_core.tail;
  out_head = SHM->from_core.head;
  rhn_virt_uart_init();
}

bool rhn_lt_avail(void) { return load_acquire(&SHM->to_core.head) != in_tail; }

bool rhn_lt_closed(void) { return SHM->closed != 0; }

void rhn_lt_read(void *dst, uint32_t n) {
  while (load_acquire(&SHM->to_core.head) - in_tail < n) {
    if (rhn_lt_closed()) rhn_virt_exit(0);
    rhn_lt_sleep(1000);
  }
  uint32_t at = in_tail & RING_MASK;
  uint32_t first = RHN_LINK_SHM_RING_BYTES - at;
  if (first > n) first = n;
  memcpy(dst, RING_IN + at, first);
  memcpy((uint8_t *)dst + first, RING_IN, n - first);
  in_tail += n;
}

void rhn_lt_read_done(void) {
  store_release(&SHM->to_core.tail, in_tail);
  wake_if_sleeping(&SHM->to_core.producer_sleeping);
}

void rhn_lt_begin(uint32_t total) {
  volatile struct rhn_link_ring *r = &SHM->from_core;
  while (RHN_LINK_SHM_RING_BYTES - (out_head - load_acquire(&r->tail)) <
         total) {
    if (rhn_lt_closed()) rhn_virt_exit(0);
    r->producer_sleeping = 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (RHN_LINK_SHM_RING_BYTES - (out_head - load_acquire(&r->tail)) >= total)
      break;
    wait_for_wake();
  }
  r->producer_sleeping = 0;
}

void rhn_lt_write(const void *src, uint32_t n) {
  uint32_t at = out_head & RING_MASK;
  uint32_t first = RHN_LINK_SHM_RING_BYTES - at;
  if (first > n) first = n;
  memcpy(RING_OUT + at, src, first);
  memcpy(RING_OUT, (const uint8_t *)src + first, n - first);
  out_head += n;
}

void rhn_lt_send(void) {
  store_release(&SHM->from_core.head, out_head);
  wake_if_sleeping(&SHM->from_core.consumer_sleeping);
}

void rhn_lt_sleep(uint32_t spin) {
  for (uint32_t i = 0; i < spin; i++)
    if (rhn_lt_avail() || rhn_lt_closed()) return;
  volatile uint32_t *flag = &SHM->to_core.consumer_sleeping;
  *flag = 1;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!rhn_lt_avail() && !rhn_lt_closed()) wait_for_wake();
  *flag = 0;
}
