/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the on-demand MR (remote pin-down) guest programs share
 * (rhinet-odlimits, rhinet-odremap): their PASS/FAIL lines, /proc and
 * port statistic readers, a device with a PD and an endpoint, and the
 * on-demand area registration.
 */
#ifndef OD_GUEST_H
#define OD_GUEST_H

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Checks failed so far (od_say). */
extern int od_failures;

/* The program's name in front of every line od_say prints. */
void od_init(const char *prog);
/* "PROG: PASS ..." or "PROG: FAIL ..." (counted in od_failures). */
void od_say(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t od_now_ms(void);
/* A line "NAME: N kB" of a /proc file, or -1. */
long od_proc_kb(const char *file, const char *name);
long od_vmpin_kb(void);

struct od_node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rhinetdv_endpoint *ep; /* NULL unless asked for */
	const char *dev;
};

/* The first rhinet device (which must pin on demand), a PD and, with
 * @endpoint, an endpoint; -1 after saying what failed.
 */
int od_open_node(struct od_node *n, bool endpoint);
/* A port statistic of the node's device as ib_core shows it, or -1. */
long od_port_stat(const struct od_node *n, const char *name);
/* Declares [addr, addr + len) on demand as area @id (local write, remote
 * write and read); NULL with errno.
 */
struct ibv_mr *od_reg_on_demand(struct od_node *n, void *addr, size_t len,
				uint32_t id);

#endif
