/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the firmware uses of qemu-system-riscv32's "virt" machine (QEMU
 * 7.2): the 16550 UART (the link's socket), the PLIC that routes its
 * interrupt to the core, and the test device that ends the emulator.
 */
#ifndef RHINET_CARD_VIRT_H
#define RHINET_CARD_VIRT_H

#include <stdint.h>

#define VIRT_TEST_BASE 0x00100000u /* sifive_test: write to power off */
#define VIRT_TEST_PASS 0x5555u     /* exit status 0 */
#define VIRT_TEST_FAIL 0x3333u     /* exit status in bits 31:16 */
#define VIRT_PLIC_BASE 0x0c000000u
#define VIRT_UART_BASE 0x10000000u
#define VIRT_UART_IRQ 10u
#define VIRT_RAM_BASE 0x80000000u

/* 16550 registers (one byte apart on virt) and bits. */
#define UART_RBR 0u /* read: receive buffer */
#define UART_THR 0u /* write: transmit holding */
#define UART_IER 1u
#define UART_FCR 2u
#define UART_LCR 3u
#define UART_MCR 4u
#define UART_LSR 5u
#define UART_IER_RX 0x01u
#define UART_LSR_DR 0x01u   /* a byte to read */
#define UART_LSR_THRE 0x20u /* room to write */

static inline volatile uint8_t *virt_uart(unsigned int reg) {
  return (volatile uint8_t *)(uintptr_t)(VIRT_UART_BASE + reg);
}

static inline volatile uint32_t *virt_plic(uint32_t offset) {
  return (volatile uint32_t *)(uintptr_t)(VIRT_PLIC_BASE + offset);
}

/* PLIC context 0: hart 0 in machine mode. */
#define PLIC_PRIORITY(irq) (4u * (irq))
#define PLIC_ENABLE0 0x2000u
#define PLIC_THRESHOLD0 0x200000u
#define PLIC_CLAIM0 0x200004u

#endif /* RHINET_CARD_VIRT_H */
