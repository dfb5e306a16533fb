// SPDX-License-Identifier: BSD-2-Clause
// The link's whole byte stream through the virt machine's 16550 UART, one
// MMIO access per byte. Not what the device uses: kept so the benchmark
// can compare it with the shared-memory rings (soft-core.md has numbers).
#include "transport.h"
#include "virt.h"

void rhn_lt_init(void) { rhn_virt_uart_init(); }

bool rhn_lt_avail(void) { return (*virt_uart(UART_LSR) & UART_LSR_DR) != 0; }

bool rhn_lt_closed(void) { return false; }

void rhn_lt_read(void *dst, uint32_t n) {
  uint8_t *p = dst;
  for (uint32_t i = 0; i < n; i++) {
    while (!rhn_lt_avail()) rhn_lt_sleep(100);
    p[i] = *virt_uart(UART_RBR);
  }
}

void rhn_lt_read_done(void) {}

void rhn_lt_begin(uint32_t total) { (void)total; }

void rhn_lt_write(const void *src, uint32_t n) {
  const uint8_t *p = src;
  for (uint32_t i = 0; i < n; i++) {
    while (!(*virt_uart(UART_LSR) & UART_LSR_THRE)) {
    }
    *virt_uart(UART_THR) = p[i];
  }
}

void rhn_lt_send(void) {}

void rhn_lt_sleep(uint32_t spin) {
  for (uint32_t i = 0; i < spin; i++)
    if (rhn_lt_avail()) return;
  if (!rhn_lt_avail()) rhn_virt_uart_wait();
}
