/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The byte transport under the core's side of the link (card_link.c):
 * one ordered byte stream each way. Two implementations, chosen when the
 * image is linked: transport_shm.c (rings in shared RAM, the UART only for
 * wake-ups; what the device uses) and transport_uart.c (every byte through
 * the UART; kept to measure against, see soft-core.md).
 */
#ifndef RHINET_CARD_TRANSPORT_H
#define RHINET_CARD_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

/* Waits for the device's side to be ready. */
void rhn_lt_init(void);
/* True when at least one byte from the device can be read. */
bool rhn_lt_avail(void);
/*
 * Reads n bytes of the incoming stream, waiting for them. The device
 * sends whole messages, so once a header is there the rest follows.
 */
void rhn_lt_read(void *dst, uint32_t n);
/* Ends a message read: frees its room for the device. */
void rhn_lt_read_done(void);
/*
 * Starts an outgoing message of total bytes (header included), waiting
 * for room; rhn_lt_write adds its bytes, rhn_lt_send hands it over and
 * wakes the device if it sleeps.
 */
void rhn_lt_begin(uint32_t total);
void rhn_lt_write(const void *src, uint32_t n);
void rhn_lt_send(void);
/*
 * Sleeps until bytes may have arrived: polls spin times first, then waits
 * for the wake-up interrupt (wfi). Returns at once when bytes are there.
 */
void rhn_lt_sleep(uint32_t spin);
/* The device has closed the link. */
bool rhn_lt_closed(void);

/* Ends the emulator with an exit status (start.S calls it after main). */
void rhn_virt_exit(int code) __attribute__((noreturn));
/* Routes the UART's receive interrupt to the core's wfi. */
void rhn_virt_uart_init(void);
/* wfi until the UART interrupt is pending; then takes its bytes away. */
void rhn_virt_uart_wait(void);

#endif /* RHINET_CARD_TRANSPORT_H */
