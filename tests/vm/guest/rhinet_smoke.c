// SPDX-License-Identifier: BSD-2-Clause
/*
 * Guest-side smoke test of the emulated NIC, before a kernel driver exists.
 * Runs as root inside a test VM and drives the device from user space:
 * BARs through sysfs resource files, DMA memory as locked pages whose
 * physical addresses come from /proc/self/pagemap (the NIC's physical lkey,
 * which only context 0 may use).
 *
 *   rhinet-smoke NODE PEER
 *
 * Checks that the device is enumerated with our IDs and that BAR0 reports the
 * contract version, this node's ID and MAC. Then brings the engine up through
 * its admin queue, creates a UD QP (QPN 1 on a fresh engine), and:
 *   the lower node sends a datagram to PEER every 20 ms until PEER answers;
 *   the higher node waits for it, checks it, and answers.
 * Exit status 0 on success; every failure prints what was wrong.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rhinet/hw.h"

#define PAGE 4096u
#define QKEY 0x52484e47u
#define ADMIN_LOG_DEPTH 5
#define EQ_LOG_DEPTH 8
#define CQ_LOG_DEPTH 6
#define WQ_LOG_DEPTH 4
#define RECV_BUFS 4

static int node, peer;
static volatile uint8_t *regs, *doorbells;
static void print_counters(void);

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rhinet-smoke[node %d]: FAIL: ", node);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (regs)
		print_counters();
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- PCI device through sysfs ---- */

static char dev_dir[300];

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

static void find_device(void)
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
	printf("rhinet-smoke: device %s class 0x%06lx\n", dev_dir,
	       read_hex(dev_dir, "class"));
}

static void enable_device(void)
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

static volatile uint8_t *map_bar(int bar, size_t *size)
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

static uint32_t rd32(uint32_t off)
{
	return *(volatile uint32_t *)(regs + off);
}

static uint64_t rd64(uint32_t off)
{
	return *(volatile uint64_t *)(regs + off);
}

static void wr32(uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(regs + off) = v;
}

static void wr64(uint32_t off, uint64_t v)
{
	*(volatile uint64_t *)(regs + off) = v;
}

static void ring(uint32_t off, uint32_t v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* WQE before doorbell */
	*(volatile uint32_t *)(doorbells + off) = v; /* page 0: kernel ctx */
}

/* ---- DMA pages: locked, physical address from pagemap ---- */

struct dma_page {
	uint8_t *va;
	uint64_t pa;
};

static struct dma_page dma_alloc(void)
{
	struct dma_page p;
	uint64_t entry;
	int fd;

	p.va = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE,
		    -1, 0);
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

static uint32_t admin(struct rhn_admin_cmd *cmd, const char *what)
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
				     __ATOMIC_ACQUIRE) & 1) == want)
			break;
		if (now_ms() - t0 > 5000)
			fail("admin %s: no completion in 5 s", what);
	}
	memcpy(&cpl, cpl_raw, sizeof(cpl));
	admin_head++;
	if (cpl.cmd_id != cmd->hdr.cmd_id || cpl.status != RHN_ADMIN_OK)
		fail("admin %s: status %u detail %u", what, cpl.status,
		     cpl.detail);
	return cpl.result;
}

static struct rhn_host_ref ref(uint64_t pa)
{
	struct rhn_host_ref r = { .addr = pa, .lkey = RHN_LKEY_PHYSICAL };

	return r;
}

/* ---- Queues ---- */

static struct dma_page eq, cq, sq, rq, records, bufs[RECV_BUFS], out_buf;
static uint32_t cqn, qpn, cq_ci, sq_pi, rq_pi;
static uint32_t dma_lkey; /* levels-0 MR: iova = bus address */

#define SQ_RECORD 0
#define RQ_RECORD 8
#define CQ_RECORD 16

static void bring_up(void)
{
	struct rhn_admin_cmd c;
	uint32_t want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
	uint32_t eqn, pdn;
	uint64_t t0;

	admin_sq = dma_alloc();
	admin_cq = dma_alloc();
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

	eq = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_EQ;
	c.u.create_eq.ring_addr = eq.pa;
	c.u.create_eq.vector = 1;
	c.u.create_eq.log_depth = EQ_LOG_DEPTH;
	eqn = admin(&c, "CREATE_EQ");

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_PD;
	pdn = admin(&c, "CREATE_PD");

	/* Data buffers go through a key, as for any context; this kernel-only
	 * MR maps I/O addresses 1:1 to bus addresses. */
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_MR;
	c.u.create_mr.pdn = pdn;
	c.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE;
	c.u.create_mr.iova = 0;
	c.u.create_mr.length = 1ull << 39;
	c.u.create_mr.levels = 0;
	c.u.create_mr.key_variant = 0x5a;
	dma_lkey = admin(&c, "CREATE_MR");

	cq = dma_alloc();
	records = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_CQ;
	c.u.create_cq.ring = ref(cq.pa);
	c.u.create_cq.record = ref(records.pa + CQ_RECORD);
	c.u.create_cq.eqn = eqn;
	c.u.create_cq.log_depth = CQ_LOG_DEPTH;
	cqn = admin(&c, "CREATE_CQ");

	sq = dma_alloc();
	rq = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_QP;
	c.u.create_qp.pdn = pdn;
	c.u.create_qp.send_cqn = cqn;
	c.u.create_qp.recv_cqn = cqn;
	c.u.create_qp.srqn = RHN_NO_SRQ;
	c.u.create_qp.type = RHN_QP_UD;
	c.u.create_qp.sq_log_depth = WQ_LOG_DEPTH;
	c.u.create_qp.rq_log_depth = WQ_LOG_DEPTH;
	c.u.create_qp.sq_ring = ref(sq.pa);
	c.u.create_qp.rq_ring = ref(rq.pa);
	c.u.create_qp.sq_record = ref(records.pa + SQ_RECORD);
	c.u.create_qp.rq_record = ref(records.pa + RQ_RECORD);
	qpn = admin(&c, "CREATE_QP");
	if (qpn != 1)
		fail("first QP of a fresh engine is %u, expected 1", qpn);

	static const uint8_t states[] = { RHN_QPS_INIT, RHN_QPS_RTR,
					  RHN_QPS_RTS };
	for (unsigned i = 0; i < sizeof(states); i++) {
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = RHN_ADMIN_MODIFY_QP;
		c.u.modify_qp.qpn = qpn;
		c.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
		c.u.modify_qp.state = states[i];
		if (states[i] == RHN_QPS_INIT) {
			c.u.modify_qp.attr_mask |= RHN_QP_ATTR_QKEY;
			c.u.modify_qp.qkey = QKEY;
		}
		admin(&c, "MODIFY_QP");
	}
}

static void post_recv(unsigned i)
{
	const uint32_t depth = 1u << WQ_LOG_DEPTH;
	struct rhn_recv_wqe w;

	memset(&w, 0, sizeof(w));
	w.wqe_index = (uint16_t)rq_pi;
	w.num_sge = 1;
	w.sge[0].addr = bufs[i].pa;
	w.sge[0].length = PAGE;
	w.sge[0].lkey = dma_lkey;
	memcpy(rq.va + (rq_pi % depth) * RHN_RQ_WQE_SIZE, &w, sizeof(w));
	rq_pi++;
	*(volatile uint32_t *)(records.va + RQ_RECORD) = rq_pi;
	ring(RHN_DB_RQ, qpn);
}

static void post_send(uint16_t dst_node, uint32_t dst_qpn, size_t len)
{
	const uint32_t depth = 1u << WQ_LOG_DEPTH;
	struct rhn_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.opcode = RHN_OP_SEND;
	w.flags = RHN_WQE_F_SIGNALED;
	w.wqe_index = (uint16_t)sq_pi;
	w.dst_node = dst_node;
	w.dst_qpn = dst_qpn;
	w.u.status.qkey = QKEY;
	w.num_sge = 1;
	w.d.sge.addr = out_buf.pa;
	w.d.sge.length = (uint32_t)len;
	w.d.sge.lkey = dma_lkey;
	memcpy(sq.va + (sq_pi % depth) * RHN_SQ_SLOT_SIZE, &w, sizeof(w));
	sq_pi++;
	*(volatile uint32_t *)(records.va + SQ_RECORD) = sq_pi;
	ring(RHN_DB_SQ, qpn);
}

/* Polls one CQE; false if none is ready. */
static bool poll_cq(struct rhn_cqe *out)
{
	const uint32_t depth = 1u << CQ_LOG_DEPTH;
	const uint8_t *raw = cq.va + (cq_ci % depth) * RHN_CQE_SIZE;
	uint8_t want = ((cq_ci / depth) & 1) ^ 1;
	uint8_t flags = __atomic_load_n(&raw[RHN_CQE_SIZE - 1],
					__ATOMIC_ACQUIRE);

	if (!!(flags & RHN_CQE_F_OWNER) != want)
		return false;
	memcpy(out, raw, sizeof(*out));
	cq_ci++;
	*(volatile uint32_t *)(records.va + CQ_RECORD) = cq_ci;
	return true;
}

static void print_counters(void)
{
	printf("rhinet-smoke[node %d]: nonzero counters:", node);
	for (unsigned i = 0; i < RHN_CNT_COUNT; i++) {
		uint64_t v = rd64(RHN_REG_COUNTERS + 8 * i);

		if (v)
			printf(" [%u]=%" PRIu64, i, v);
	}
	printf("\n");
	fflush(stdout);
}

/*
 * Message of round R from node N: "hello R from node N" (or "reply"), NUL,
 * then a pattern up to a length that varies with R (up to 3 KiB).
 */
static size_t make_message(uint8_t *buf, const char *kind, unsigned round,
			   int from)
{
	size_t len = 64 + (round * 997u) % 3000;
	int n = snprintf((char *)buf, 48, "%s %u from node %d", kind, round,
			 from);

	for (size_t i = n + 1; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + round + from);
	return len;
}

/* Checks a received message; returns its round or -1 if it is stale. */
static int check_message(const struct rhn_cqe *cqe, const char *kind)
{
	static uint8_t want[PAGE];
	const uint8_t *got = bufs[cqe->wqe_index % RECV_BUFS].va;
	unsigned round;
	char fmt[32];
	size_t len;

	if (cqe->src_node != peer || cqe->src_qpn != 1)
		fail("datagram from node %u QP %u, expected node %d QP 1",
		     cqe->src_node, cqe->src_qpn, peer);
	snprintf(fmt, sizeof(fmt), "%s %%u from node", kind);
	if (sscanf((const char *)got, fmt, &round) != 1)
		fail("received '%.40s', expected a %s", got, kind);
	len = make_message(want, kind, round, peer);
	if (cqe->byte_len != len || memcmp(got, want, len))
		fail("%s %u: %u bytes, expected %zu, or the content differs",
		     kind, round, cqe->byte_len, len);
	return (int)round;
}

/* Waits for the next completion, up to @ms; false on timeout. */
static bool wait_cq(struct rhn_cqe *cqe, unsigned ms)
{
	for (uint64_t t0 = now_ms(); !poll_cq(cqe); usleep(100))
		if (now_ms() - t0 > ms)
			return false;
	return true;
}

/*
 * Responder: answer every hello (a resent one again); done when the last
 * round is answered and every reply has left.
 */
static void respond(unsigned rounds)
{
	unsigned next = 0, replies_done = 0;
	struct rhn_cqe cqe;

	while (next < rounds || replies_done < sq_pi) {
		if (!wait_cq(&cqe, 30000))
			fail("no hello %u from node %d in 30 s", next, peer);
		if (cqe.status != RHN_CQE_SUCCESS)
			fail("%s completion status %u syndrome %u",
			     cqe.flags & RHN_CQE_F_SQ ? "reply" : "receive",
			     cqe.status, cqe.vendor_err);
		if (cqe.flags & RHN_CQE_F_SQ) {
			replies_done++;
			continue;
		}
		unsigned got = (unsigned)check_message(&cqe, "hello");

		post_recv(cqe.wqe_index % RECV_BUFS);
		if (sq_pi - replies_done >= (1u << WQ_LOG_DEPTH))
			fail("send queue full of unanswered replies");
		post_send(peer, 1, make_message(out_buf.va, "reply", got, node));
		if (got + 1 > next)
			next = got + 1;
	}
}

int main(int argc, char **argv)
{
	size_t size;
	uint32_t mac_lo, mac_hi;
	bool initiator;
	unsigned rounds, round, i, resends = 0, sends_done = 0;
	uint64_t t0;

	if (argc != 3 && argc != 4)
		fail("usage: rhinet-smoke NODE PEER [ROUNDS]");
	node = atoi(argv[1]);
	peer = atoi(argv[2]);
	rounds = argc == 4 ? (unsigned)atoi(argv[3]) : 1;
	initiator = node < peer;

	find_device();
	enable_device();
	regs = map_bar(RHN_BAR_REGS, &size);
	if (size < RHN_BAR_REGS_SIZE)
		fail("BAR0 is %zu bytes, expected %u", size, RHN_BAR_REGS_SIZE);
	doorbells = map_bar(RHN_BAR_DOORBELL, &size);
	if (size != (size_t)rd32(RHN_REG_DB_PAGES) * RHN_DB_PAGE_SIZE)
		fail("BAR2 is %zu bytes for %u doorbell pages", size,
		     rd32(RHN_REG_DB_PAGES));

	if (rd32(RHN_REG_VERSION) != RHN_VERSION)
		fail("VERSION 0x%x, expected 0x%x", rd32(RHN_REG_VERSION),
		     RHN_VERSION);
	if (rd32(RHN_REG_NODE_ID) != (uint32_t)node)
		fail("NODE_ID %u, expected %d", rd32(RHN_REG_NODE_ID), node);
	mac_lo = rd32(RHN_REG_MAC_LO);
	mac_hi = rd32(RHN_REG_MAC_HI);
	if (mac_lo != 0x004e5202u || mac_hi != (uint32_t)(((node & 0xff) << 8) |
							   (node >> 8)))
		fail("MAC registers 0x%08x 0x%08x do not name node %d", mac_lo,
		     mac_hi, node);
	printf("rhinet-smoke[node %d]: version 0x%x caps 0x%x node %u "
	       "mtu %u db_pages %u\n",
	       node, rd32(RHN_REG_VERSION), rd32(RHN_REG_CAPS),
	       rd32(RHN_REG_NODE_ID), rd32(RHN_REG_MTU),
	       rd32(RHN_REG_DB_PAGES));

	bring_up();
	for (i = 0; i < RECV_BUFS; i++) {
		bufs[i] = dma_alloc();
		post_recv(i);
	}
	out_buf = dma_alloc();
	printf("rhinet-smoke[node %d]: engine up, UD QP %u ready\n", node, qpn);

	t0 = now_ms();
	if (!initiator)
		respond(rounds);
	for (round = 0; initiator && round < rounds;) {
		struct rhn_cqe cqe;
		bool replied = false;

		/*
		 * Initiator: send hello ROUND until its reply arrives. A hello
		 * can be lost for good when the peer's NIC is reset after it
		 * arrived (UD promises nothing more), so it is sent again when
		 * no reply came within 200 ms.
		 */
		post_send(peer, 1, make_message(out_buf.va, "hello", round,
						node));
		for (uint64_t sent = now_ms(); !replied;) {
			if (!wait_cq(&cqe, 200)) {
				if (sends_done < sq_pi)
					continue; /* still in flight */
				if (now_ms() - t0 > 30000)
					fail("no reply %u from node %d in 30 s",
					     round, peer);
				if (now_ms() - sent >= 200)
					break;
				continue;
			}
			if (cqe.flags & RHN_CQE_F_SQ) {
				sends_done++;
				/* RETRY_EXC: the peer's NIC was reset while
				 * our hello was in flight. */
				if (cqe.status != RHN_CQE_SUCCESS &&
				    cqe.status != RHN_CQE_RETRY_EXC_ERR)
					fail("send status %u syndrome %u",
					     cqe.status, cqe.vendor_err);
				continue;
			}
			if (cqe.status != RHN_CQE_SUCCESS)
				fail("receive status %u", cqe.status);
			int got = check_message(&cqe, "reply");

			post_recv(cqe.wqe_index % RECV_BUFS);
			replied = got == (int)round;
		}
		if (replied)
			round++;
		else
			resends++;
	}
	/* Every send completes before the VM ends. */
	while (initiator && sends_done < sq_pi) {
		struct rhn_cqe cqe;

		if (!wait_cq(&cqe, 5000))
			fail("a send never completed");
		if (cqe.flags & RHN_CQE_F_SQ)
			sends_done++;
	}
	printf("rhinet-smoke[node %d]: PASS: %u rounds with node %d in %llu ms"
	       " (%u hellos sent again)\n",
	       node, rounds, peer, (unsigned long long)(now_ms() - t0),
	       resends);
	print_counters();
	return 0;
}
