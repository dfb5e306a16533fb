// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-raw: checks rhinet.ko's raw access (raw_access=1) from inside a
 * guest (tests/vm/scripts/raw_access.sh).
 *   rhinet-raw check DEV    bad requests get their errno, good ones work
 *   rhinet-raw open DEV     prints the errno name open fails with, or OK
 *   rhinet-raw unplug DEV PCI_DEVICE
 *                           holds DEV open with a buffer while the PCI
 *                           device is removed: every call is ENODEV after
 */
#include <errno.h>
#include <fcntl.h>
#include <rdma/rhinet-raw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "rhinet/hw.h"

static int failed;

static void expect(const char *what, int ret, int err)
{
	const int got = ret ? errno : 0;

	if (got != err) {
		printf("rhinet-raw: FAIL %s: %s, expected %s\n", what,
		       got ? strerror(got) : "success",
		       err ? strerror(err) : "success");
		failed = 1;
	}
}

static int reg(int fd, unsigned long cmd, uint32_t off, uint32_t size,
	       uint64_t *v)
{
	struct rhinet_raw_reg r = {.offset = off, .size = size};
	int ret;

	r.value = v ? *v : 0;
	ret = ioctl(fd, cmd, &r);
	if (!ret && v)
		*v = r.value;
	return ret;
}

static uint64_t alloc(int fd, uint64_t len, uint64_t align, int err)
{
	struct rhinet_raw_alloc a = {.len = len, .align = align};
	char what[64];

	snprintf(what, sizeof(what), "alloc %llu align %llu",
		 (unsigned long long)len, (unsigned long long)align);
	expect(what, ioctl(fd, RHINET_RAW_DMA_ALLOC, &a), err);
	return a.bus;
}

static int mem(int fd, unsigned long cmd, uint64_t bus, void *p, uint64_t len)
{
	struct rhinet_raw_mem m = {
		.bus = bus, .len = len, .data = (uintptr_t)p};

	return ioctl(fd, cmd, &m);
}

static int check(int fd)
{
	struct rhinet_raw_info info;
	struct rhinet_raw_db db = {.page = 0, .offset = 0, .size = 4};
	struct rhinet_raw_msix x;
	uint64_t v = 0, counts[64];
	static uint8_t big[1 << 16];
	uint8_t buf[64];
	uint64_t a, b;

	expect("info", ioctl(fd, RHINET_RAW_INFO, &info), 0);
	expect("VERSION", reg(fd, RHINET_RAW_REG_READ, RHN_REG_VERSION, 4, &v),
	       0);
	if (v >> 16 != RHN_VERSION_MAJOR) {
		printf("rhinet-raw: FAIL VERSION reads %#llx\n",
		       (unsigned long long)v);
		failed = 1;
	}
	expect("8-byte read",
	       reg(fd, RHINET_RAW_REG_READ, RHN_REG_COUNTERS, 8, &v), 0);
	expect("size 2", reg(fd, RHINET_RAW_REG_READ, 0, 2, &v), EINVAL);
	expect("unaligned", reg(fd, RHINET_RAW_REG_READ, 2, 4, &v), EINVAL);
	expect("8 at 4", reg(fd, RHINET_RAW_REG_READ, 4, 8, &v), EINVAL);
	expect("beyond BAR0",
	       reg(fd, RHINET_RAW_REG_READ, (uint32_t)info.bar0_len, 4, &v),
	       EINVAL);
	expect("write beyond BAR0",
	       reg(fd, RHINET_RAW_REG_WRITE, 0xfffffff0u, 4, &v), EINVAL);
	expect("bad user pointer", ioctl(fd, RHINET_RAW_REG_READ, (void *)8),
	       EFAULT);
	expect("doorbell", ioctl(fd, RHINET_RAW_DB_WRITE, &db), 0);
	db.page = (uint32_t)(info.db_len >> RHN_DB_PAGE_SHIFT);
	expect("doorbell page beyond", ioctl(fd, RHINET_RAW_DB_WRITE, &db),
	       EINVAL);
	db.page = 0;
	db.offset = RHN_DB_PAGE_SIZE;
	expect("doorbell offset 4096", ioctl(fd, RHINET_RAW_DB_WRITE, &db),
	       EINVAL);
	db.offset = 4;
	db.size = 8;
	expect("doorbell unaligned", ioctl(fd, RHINET_RAW_DB_WRITE, &db),
	       EINVAL);

	alloc(fd, 0, 64, EINVAL);
	alloc(fd, 64, 3, EINVAL);
	alloc(fd, 64, 8192, EINVAL);
	alloc(fd, RHINET_RAW_DMA_CAP + 1, 4096, EINVAL);
	a = alloc(fd, 100, 64, 0);
	b = alloc(fd, 4096, 4096, 0);
	if (!a || (b & 4095)) {
		printf("rhinet-raw: FAIL buffers at %#llx, %#llx\n",
		       (unsigned long long)a, (unsigned long long)b);
		failed = 1;
	}
	memset(buf, 0x5a, sizeof(buf));
	expect("read fresh", mem(fd, RHINET_RAW_MEM_READ, a, buf, 64), 0);
	if (buf[0] || buf[63]) {
		printf("rhinet-raw: FAIL a new buffer is not zeroed\n");
		failed = 1;
	}
	memset(buf, 0xa5, sizeof(buf));
	expect("write", mem(fd, RHINET_RAW_MEM_WRITE, a + 36, buf, 64), 0);
	memset(buf, 0, sizeof(buf));
	expect("read back", mem(fd, RHINET_RAW_MEM_READ, a + 36, buf, 64), 0);
	if (buf[0] != 0xa5 || buf[63] != 0xa5) {
		printf("rhinet-raw: FAIL read back differs\n");
		failed = 1;
	}
	expect("read past the buffer's end",
	       mem(fd, RHINET_RAW_MEM_READ, a + 37, buf, 64), EFAULT);
	expect("write before a buffer",
	       mem(fd, RHINET_RAW_MEM_WRITE, a - 1, buf, 2), EFAULT);
	expect("read of no buffer", mem(fd, RHINET_RAW_MEM_READ, 0, buf, 8),
	       EFAULT);
	expect("read length 0", mem(fd, RHINET_RAW_MEM_READ, a, buf, 0),
	       EINVAL);
	expect("read of 2 MiB", mem(fd, RHINET_RAW_MEM_READ, b, big, 2 << 20),
	       EINVAL);
	expect("bad user buffer",
	       mem(fd, RHINET_RAW_MEM_READ, b, (void *)8, 16), EFAULT);
	expect("across two buffers", mem(fd, RHINET_RAW_MEM_READ, b, big, 8192),
	       EFAULT);
	/* The cap: 64 MiB a device, whole pages counted. */
	for (int i = 0; i < 15; i++)
		alloc(fd, 4 << 20, 4096, 0);
	alloc(fd, 4 << 20, 4096, ENOMEM);
	expect("free all", ioctl(fd, RHINET_RAW_DMA_FREE_ALL), 0);
	expect("read after free", mem(fd, RHINET_RAW_MEM_READ, a, buf, 8),
	       EFAULT);
	alloc(fd, 4 << 20, 4096, 0);

	x = (struct rhinet_raw_msix){.count = 64, .data = (uintptr_t)counts};
	expect("msix", ioctl(fd, RHINET_RAW_MSIX, &x), 0);
	if (x.count != info.msix_vectors || !x.count) {
		printf("rhinet-raw: FAIL %u MSI-X counts for %u vectors\n",
		       x.count, info.msix_vectors);
		failed = 1;
	}
	x.reserved = 1;
	expect("msix reserved", ioctl(fd, RHINET_RAW_MSIX, &x), EINVAL);
	expect("unknown ioctl", ioctl(fd, _IO(RHINET_RAW_IOC_MAGIC, 99)),
	       ENOTTY);
	return failed;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc < 3)
		return 2;
	fd = open(argv[2], O_RDWR);
	if (!strcmp(argv[1], "open")) {
		printf("%s\n", fd < 0 ? strerror(errno) : "OK");
		return 0;
	}
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "check")) {
		int again = open(argv[2], O_RDWR);

		expect("a second open file", again < 0, EBUSY);
		return check(fd);
	}
	if (!strcmp(argv[1], "unplug") && argc == 4) {
		char path[128];
		uint64_t v;
		FILE *f;

		alloc(fd, 8192, 4096, 0);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove",
			 argv[3]);
		f = fopen(path, "w");
		if (!f || fputs("1\n", f) < 0 || fclose(f)) {
			perror(path);
			return 1;
		}
		expect("read after unplug",
		       reg(fd, RHINET_RAW_REG_READ, 0, 4, &v), ENODEV);
		expect("free all after unplug",
		       ioctl(fd, RHINET_RAW_DMA_FREE_ALL), ENODEV);
		close(fd);
		return failed;
	}
	return 2;
}
