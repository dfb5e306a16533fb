/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core's side of the link (card_link.c): card.h implemented over the
 * socket protocol of firmware/card/link.h, plus the few calls that start
 * and end it. The FIFOs and the twin memory are static; their sizes are
 * build-time macros (defaults below).
 */
#ifndef RHINET_CARD_LINK_CORE_H
#define RHINET_CARD_LINK_CORE_H

#include <stdbool.h>
#include <stdint.h>

#ifndef RHN_LINK_CORE_DB_FIFO
#define RHN_LINK_CORE_DB_FIFO 1024 /* doorbell FIFO entries, power of 2 */
#endif
#ifndef RHN_LINK_CORE_TRIGGERS
#define RHN_LINK_CORE_TRIGGERS 256 /* trigger sums block entries, 64 * n */
#endif
/* Doorbells a full FIFO keeps aside (card.h, "Full FIFO"): the kernel's
 * EQs by number below this, and CQ arms of this many (page, CQ) pairs. */
#ifndef RHN_LINK_CORE_EQS
#define RHN_LINK_CORE_EQS 64
#endif
#ifndef RHN_LINK_CORE_KEPT_ARMS
#define RHN_LINK_CORE_KEPT_ARMS 64
#endif
#ifndef RHN_LINK_CORE_INLINE_SLOTS
#define RHN_LINK_CORE_INLINE_SLOTS 16 /* staged WQE buffers */
#endif
/*
 * Receive FIFO, power of 2. Deep, because the core drains the link into it
 * in one go: the device may have put a few hundred frames into the ring
 * while an emulated core was busy, and with 16 most of a bandwidth test's
 * frames were dropped and resent (tests/vm/scripts/softcore.sh).
 */
#ifndef RHN_LINK_CORE_RX_FRAMES
#define RHN_LINK_CORE_RX_FRAMES 256
#endif
/* The transmit block's entries the core keeps copies of (link.h, TXW_*):
 * QP entries, and send slots pushed (each with its record). As the
 * device's block is sized (the card's configuration, card_config.h). */
#ifndef RHN_LINK_CORE_TXW_QPS
#define RHN_LINK_CORE_TXW_QPS 256
#endif
#ifndef RHN_LINK_CORE_TXW_SLOTS
#define RHN_LINK_CORE_TXW_SLOTS 512
#endif
#ifndef RHN_LINK_CORE_TWIN_BYTES
#define RHN_LINK_CORE_TWIN_BYTES 65536
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct rhn_link_core_config {
  uint32_t node_id;
  uint32_t db_pages;
  uint32_t msix_vectors;
};

/*
 * Waits for the device, says HELLO and waits for its answer. On a version
 * mismatch the core stops (exit status RHN_LINK_EXIT_VERSION).
 */
void rhn_link_start(const struct rhn_link_core_config *config);
/* Says BYE and ends the emulator with code as its exit status. */
void rhn_link_stop(int code) __attribute__((noreturn));
/* DMA_ERROR messages received: posted writes the host refused. */
uint32_t rhn_link_write_errors(void);

/* Exit statuses of the core when the link breaks. */
#define RHN_LINK_EXIT_PROTOCOL 90 /* the device sent something invalid */
#define RHN_LINK_EXIT_VERSION 91
#define RHN_LINK_EXIT_TRAP 92 /* the core took a trap (start.S) */

#ifdef __cplusplus
}
#endif

#endif /* RHINET_CARD_LINK_CORE_H */
