// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the xpu guest programs (rhinet-xpu, rhinet-xpu-dev) share: the
 * device opened, described and its memory mapped. Needs verbs_guest.h
 * (die, program, role) and include/uapi (xpu/xpu-abi.h).
 */
#ifndef XPU_GUEST_H
#define XPU_GUEST_H
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "verbs_guest.h"
#include "xpu/xpu-abi.h"

#define XPU_DEV "/dev/xpu0"

struct xpu {
	int fd;
	struct xpu_info info;
	volatile uint8_t *mem; /* the device's memory, mapped */
};

/* Opens XPU_DEV, reads its description and maps its memory, or dies. */
static inline void xpu_open(struct xpu *x)
{
	void *map;

	x->fd = open(XPU_DEV, O_RDWR | O_CLOEXEC);
	if (x->fd < 0)
		die("open " XPU_DEV " (xpu.ko loaded?)");
	if (ioctl(x->fd, XPU_IOC_INFO, &x->info))
		die("XPU_IOC_INFO");
	map = mmap(NULL, x->info.mem_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   x->fd, 0);
	if (map == MAP_FAILED)
		die("mmap of the xpu's memory");
	x->mem = map;
	printf("%s %s: %s: %" PRIu64 " MiB at bus %#" PRIx64
	       ", %u lanes, P2PDMA %s\n",
	       program, role, XPU_DEV, (uint64_t)x->info.mem_size >> 20,
	       (uint64_t)x->info.mem_bus_addr, x->info.lanes,
	       x->info.flags & XPU_INFO_P2PDMA ? "yes" : "no");
}

#endif
