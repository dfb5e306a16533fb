// SPDX-License-Identifier: BSD-2-Clause
/* Device access for guest-side test programs (see rhinet_guest.c). */
#ifndef RHINET_GUEST_H
#define RHINET_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rhinet/hw.h"

#define PAGE 4096u
#define ADMIN_LOG_DEPTH 5

extern const char *program; /* for messages */
extern int node;
extern volatile uint8_t *regs, *doorbells;
extern char dev_dir[300]; /* sysfs directory of the device */

struct dma_page {
	uint8_t *va;
	uint64_t pa;
};

/* Prints "PROGRAM[node N]: FAIL: ...", the counters, and exits 1. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t now_ms(void);

/* Finds the one RHiNET device and checks its IDs; enables memory decoding
 * and bus mastering; maps a BAR. */
void find_device(void);
void enable_device(void);
volatile uint8_t *map_bar(int bar, size_t *size);

uint32_t rd32(uint32_t off);
uint64_t rd64(uint32_t off);
void wr32(uint32_t off, uint32_t v);
void wr64(uint32_t off, uint64_t v);
/* A 32-bit doorbell write to page 0, after a full barrier. */
void ring(uint32_t off, uint32_t v);

/* A zeroed, locked page and its physical address. */
struct dma_page dma_alloc(void);
struct rhn_host_ref ref(uint64_t pa);

/* RESET, admin rings, ENABLE; fails unless READY | ADMIN_ON follows. */
void admin_start(void);
/* Runs one command: status (enum rhn_admin_status), or -1 after 5 s. */
int admin_try(struct rhn_admin_cmd *cmd, uint32_t *result, uint32_t *detail);
/* The same, failing the program unless the status is OK; returns result. */
uint32_t admin(struct rhn_admin_cmd *cmd, const char *what);

void print_counters(void);

#endif /* RHINET_GUEST_H */
