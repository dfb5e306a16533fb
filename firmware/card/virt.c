// SPDX-License-Identifier: BSD-2-Clause
// The virt machine's pieces both transports use: the emulator's exit, the
// UART and its interrupt as a wake-up for wfi.
#include "virt.h"

#include "transport.h"

void rhn_virt_exit(int code) {
  volatile uint32_t *test = (volatile uint32_t *)(uintptr_t)VIRT_TEST_BASE;
  *test = code == 0 ? VIRT_TEST_PASS
                    : (((uint32_t)code & 0xffffu) << 16) | VIRT_TEST_FAIL;
  for (;;) __asm__ volatile("wfi");
}

void rhn_virt_uart_init(void) {
  *virt_uart(UART_LCR) = 0x03;  // 8 bits, no parity, one stop bit
  *virt_uart(UART_FCR) = 0x07;  // FIFOs on and cleared
  *virt_uart(UART_MCR) = 0x0b;  // DTR, RTS, OUT2 (the interrupt line)
  *virt_uart(UART_IER) = UART_IER_RX;
  *virt_plic(PLIC_PRIORITY(VIRT_UART_IRQ)) = 1;
  *virt_plic(PLIC_ENABLE0) = 1u << VIRT_UART_IRQ;
  *virt_plic(PLIC_THRESHOLD0) = 0;
  // External interrupts wake wfi; mstatus.MIE stays clear, so no trap is
  // taken: the core continues after the wfi.
  __asm__ volatile(
      ".option push\n.option arch, +zicsr\ncsrs mie, %0\n.option pop" ::"r"(
          1u << 11));
}

void rhn_virt_uart_wait(void) {
  __asm__ volatile("wfi" ::: "memory");
  uint32_t irq = *virt_plic(PLIC_CLAIM0);
  if (irq != 0) *virt_plic(PLIC_CLAIM0) = irq;
}
