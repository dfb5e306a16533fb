// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device access for guest-side test programs, before a kernel driver exists:
 * BARs through sysfs resource files, DMA memory as locked pages whose
 * physical addresses come from /proc/self/pagemap, and the admin queue.
 * Queues use the physical lkey; only context 0 (doorbell page 0, the
 * kernel's) may do that, which is what these programs act as.
 */
#define _GNU_SOURCE
#include "rhinet_guest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *program = "rhinet-guest";
int node;
volatile uint8_t *regs, *doorbells;
char dev_dir[300];

void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s[node %d]: FAIL: ", program, node);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (regs)
		print_counters();
	exit(1);
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- PCI device through sysfs ---- */

static unsigned long read_hex(const char *dir, const char *file)
{
	char path[400], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return ~0ul;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoul(buf, NULL, 16);
}

void find_device(void)
{
	const char *base = "/sys/bus/pci/devices";
	DIR *d = opendir(base);
	struct dirent *e;
	int found = 0;

	if (!d)
		fail("cannot list %s: %s", base, strerror(errno));
	while ((e = readdir(d))) {
		char dir[300];

		if (e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
		if (read_hex(dir, "vendor") == RHN_PCI_VENDOR_ID &&
		    read_hex(dir, "device") == RHN_PCI_DEVICE_ID) {
			found++;
			snprintf(dev_dir, sizeof(dev_dir), "%s", dir);
		}
	}
	closedir(d);
	if (found != 1)
		fail("expected one RHiNET device (%04x:%04x), found %d",
		     RHN_PCI_VENDOR_ID, RHN_PCI_DEVICE_ID, found);
	if (read_hex(dev_dir, "class") >> 8 != RHN_PCI_CLASS)
		fail("class is 0x%lx, expected 0x%x00",
		     read_hex(dev_dir, "class"), RHN_PCI_CLASS);
	if (read_hex(dev_dir, "revision") != RHN_PCI_REVISION)
		fail("revision is 0x%lx", read_hex(dev_dir, "revision"));
	printf("%s: device %s class 0x%06lx\n", program, dev_dir,
	       read_hex(dev_dir, "class"));
}

void enable_device(void)
{
	char path[400];
	uint16_t cmd;
	int fd;

	snprintf(path, sizeof(path), "%s/enable", dev_dir);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "1", 1) != 1)
		fail("cannot enable the device: %s", strerror(errno));
	close(fd);
	/* Memory decoding and bus mastering in the PCI command register. */
	snprintf(path, sizeof(path), "%s/config", dev_dir);
	fd = open(path, O_RDWR);
	if (fd < 0 || pread(fd, &cmd, 2, 4) != 2)
		fail("cannot read PCI config: %s", strerror(errno));
	cmd |= 0x6;
	if (pwrite(fd, &cmd, 2, 4) != 2)
		fail("cannot write PCI config: %s", strerror(errno));
	close(fd);
}

volatile uint8_t *map_bar(int bar, size_t *size)
{
	char path[400];
	struct stat st;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/resource%d", dev_dir, bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0)
		fail("cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || st.st_size <= 0)
		fail("cannot size %s", path);
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail("cannot map BAR%d: %s", bar, strerror(errno));
	close(fd);
	*size = st.st_size;
	return p;
}

uint32_t rd32(uint32_t off)
{
	return *(volatile uint32_t *)(regs + off);
}

uint64_t rd64(uint32_t off)
{
	return *(volatile uint64_t *)(regs + off);
}

void wr32(uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(regs + off) = v;
}

void wr64(uint32_t off, uint64_t v)
{
	*(volatile uint64_t *)(regs + off) = v;
}

void ring(uint32_t off, uint32_t v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* WQE before doorbell */
	*(volatile uint32_t *)(doorbells + off) = v; /* page 0: kernel ctx */
}

/* ---- DMA pages: locked, physical address from pagemap ---- */

struct dma_page dma_alloc(void)
{
	struct dma_page p;
	uint64_t entry;
	int fd;

	p.va = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1,
		    0);
	if (p.va == MAP_FAILED)
		fail("cannot allocate a locked page: %s", strerror(errno));
	memset(p.va, 0, PAGE);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0 || pread(fd, &entry, 8, (uintptr_t)p.va / PAGE * 8) != 8)
		fail("cannot read pagemap: %s", strerror(errno));
	close(fd);
	if (!(entry >> 63) || !(entry & ((1ull << 55) - 1)))
		fail("pagemap gives no physical frame (not root?)");
	p.pa = (entry & ((1ull << 55) - 1)) * PAGE;
	return p;
}

/* ---- Admin queue ---- */

static struct dma_page admin_sq, admin_cq;
static uint32_t admin_tail, admin_head;
static uint16_t next_cmd_id = 1;

int admin_try(struct rhn_admin_cmd *cmd, uint32_t *result, uint32_t *detail)
{
	const uint32_t depth = 1u << ADMIN_LOG_DEPTH;
	const uint8_t *cpl_raw;
	struct rhn_admin_cpl cpl;
	uint8_t want;
	uint64_t t0;

	cmd->hdr.cmd_id = next_cmd_id++;
	memcpy(admin_sq.va + (admin_tail % depth) * RHN_ADMIN_CMD_SIZE, cmd,
	       sizeof(*cmd));
	admin_tail++;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wr32(RHN_REG_ADMIN_SQ_TAIL, admin_tail);

	cpl_raw = admin_cq.va + (admin_head % depth) * RHN_ADMIN_CPL_SIZE;
	want = ((admin_head / depth) & 1) ^ 1;
	for (t0 = now_ms();; usleep(100)) {
		if ((__atomic_load_n(&cpl_raw[RHN_ADMIN_CPL_SIZE - 1],
				     __ATOMIC_ACQUIRE) &
		     1) == want)
			break;
		if (now_ms() - t0 > 5000)
			return -1;
	}
	memcpy(&cpl, cpl_raw, sizeof(cpl));
	admin_head++;
	if (cpl.cmd_id != cmd->hdr.cmd_id)
		fail("admin completion for command %u, expected %u", cpl.cmd_id,
		     cmd->hdr.cmd_id);
	if (result)
		*result = cpl.result;
	if (detail)
		*detail = cpl.detail;
	return cpl.status;
}

uint32_t admin(struct rhn_admin_cmd *cmd, const char *what)
{
	uint32_t result = 0, detail = 0;
	int status = admin_try(cmd, &result, &detail);

	if (status < 0)
		fail("admin %s: no completion in 5 s", what);
	if (status != RHN_ADMIN_OK)
		fail("admin %s: status %d detail %u", what, status, detail);
	return result;
}

void admin_start(void)
{
	const uint32_t want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
	uint64_t t0;

	if (!admin_sq.va) {
		admin_sq = dma_alloc();
		admin_cq = dma_alloc();
	}
	memset(admin_sq.va, 0, PAGE);
	memset(admin_cq.va, 0, PAGE);
	admin_tail = admin_head = 0;
	wr32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
	for (t0 = now_ms(); rd32(RHN_REG_CONTROL) & RHN_CONTROL_RESET;)
		if (now_ms() - t0 > 2000)
			fail("RESET did not clear");
	wr64(RHN_REG_ADMIN_SQ_BASE, admin_sq.pa);
	wr64(RHN_REG_ADMIN_CQ_BASE, admin_cq.pa);
	wr32(RHN_REG_ADMIN_LOG_DEPTH, ADMIN_LOG_DEPTH);
	wr32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
	for (t0 = now_ms(); (rd32(RHN_REG_STATUS) & want) != want;)
		if (now_ms() - t0 > 2000)
			fail("engine not READY|ADMIN_ON: status 0x%x",
			     rd32(RHN_REG_STATUS));
}

void print_counters(void)
{
	printf("%s[node %d]: nonzero counters:", program, node);
	for (unsigned i = 0; i < RHN_CNT_COUNT; i++) {
		uint64_t v = rd64(RHN_REG_COUNTERS + 8 * i);

		if (v)
			printf(" [%u]=%" PRIu64, i, v);
	}
	printf("\n");
	fflush(stdout);
}

struct rhn_host_ref ref(uint64_t pa)
{
	struct rhn_host_ref r = {.addr = pa, .lkey = RHN_LKEY_PHYSICAL};

	return r;
}
