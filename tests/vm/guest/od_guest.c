// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the on-demand MR guest programs share (od_guest.h). */
#define _GNU_SOURCE
#include "od_guest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int od_failures;
static const char *od_prog = "od";

void od_init(const char *prog)
{
	od_prog = prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

void od_say(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s ", od_prog, ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		od_failures++;
}

uint64_t od_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

long od_proc_kb(const char *file, const char *name)
{
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

long od_vmpin_kb(void)
{
	return od_proc_kb("/proc/self/status", "VmPin");
}

int od_open_node(struct od_node *n, bool endpoint)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct rhinetdv_endpoint_init_attr ea = {0};
	struct rhinetdv_device_attr da;

	memset(n, 0, sizeof(*n));
	for (int i = 0; list && list[i]; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "rhinet", 6)) {
			n->ctx = ibv_open_device(list[i]);
			break;
		}
	if (list)
		ibv_free_device_list(list);
	if (!n->ctx) {
		od_say(false, "no rhinet device to open: %s", strerror(errno));
		return -1;
	}
	n->dev = ibv_get_device_name(n->ctx->device);
	if (rhinetdv_query_device(n->ctx, &da, sizeof(da)) ||
	    !(da.caps & RHINETDV_CAP_PIN_ON_DEMAND)) {
		od_say(false, "%s does not pin on demand", n->dev);
		return -1;
	}
	n->pd = ibv_alloc_pd(n->ctx);
	if (!n->pd) {
		od_say(false, "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	if (!endpoint)
		return 0;
	ea.max_outstanding = da.max_outstanding;
	n->ep = rhinetdv_create_endpoint(n->pd, &ea);
	if (!n->ep) {
		od_say(false, "endpoint: %s", strerror(errno));
		return -1;
	}
	return 0;
}

long od_port_stat(const struct od_node *n, const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", n->dev,
		 name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

struct ibv_mr *od_reg_on_demand(struct od_node *n, void *addr, size_t len,
				uint32_t id)
{
	struct rhinetdv_area_attr aa = {0};

	aa.comp_mask = RHINETDV_AREA_ATTR_MASK_FLAGS;
	aa.area_id = id;
	aa.flags = RHINETDV_AREA_PIN_ON_DEMAND;
	return rhinetdv_reg_area_ex(n->pd, addr, len,
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ,
				    &aa, sizeof(aa));
}
