// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device mode: the xpu posts RDMA WRITEs on the NIC by itself. The server
 * (the device's side) creates an RC QP whose send ring, doorbell record and
 * CQ lie in a dma-buf of its xpu's memory (rhinetdv_create_qp/cq), a source
 * MR in that memory (ibv_reg_dmabuf_mr), exports its context's doorbell
 * page (rhinetdv_export_doorbell) and imports it into the xpu for lane 0
 * (XPU_IOC_IMPORT_DMABUF). A lane program then copies WQEs, built here
 * from the contract's headers (hw_wqe.h), into the send ring's slots,
 * stores the record's producer index, writes the doorbell (one 8-byte
 * peer-to-peer write per batch) and polls the last CQE's owner bit in its
 * own memory; twice. The client, on the other node, registered the target
 * in host memory and checks the bytes. The xpu's counters: no host RAM
 * touched, one peer-to-peer write per doorbell.
 *
 * Then the protection: a write to a doorbell page the lane was not given
 * faults WINDOW and the NIC sees nothing; another process can neither run,
 * claim nor import for the first one's lanes (EBUSY); a second context's
 * doorbell page imported for lane 1 is revoked when that context is
 * closed: the lane's next write faults WINDOW (also once a new context may
 * hold the page), and the revoked dma-buf maps nothing (ENODEV). A
 * window given back (XPU_IOC_UNIMPORT_DMABUF) is reached no more: the
 * lane's write faults WINDOW and the NIC sees nothing; it is free for the
 * next import; another process cannot give back the first one's window
 * (EBUSY), nor anyone a window that is free (ENOENT).
 *
 * Last, trigger adds from the device (issue 37): every lane (up to 8) rings
 * ADDS_PER_LANE adds of its own values on one trigger counter through a
 * window onto the doorbell page, far more than the NIC's kick FIFO holds.
 * A WRITE parked at the exact sum fires once, one parked a unit beyond it
 * waits for the CPU's add; no add is dropped, each is one peer-to-peer
 * write, none touches host RAM. Through another context's page the NIC
 * drops the add; a lane with no window faults WINDOW and nothing moves.
 *
 * First of all, each file's memory is its own (XPU_IOC_MEM): another
 * process, with memory of its own on the same xpu, cannot map the server's
 * memory, export a dma-buf of it, nor run a lane STORE, COPY (either way)
 * or POLL on it: each lane command faults LOCAL (counted in LOCAL_FAULTS),
 * and the server's bytes stay as they were; a run whose PC lies outside is
 * refused. A file asking for more than its share is refused (EDQUOT), so
 * is a user whose files together would hold more than a user's share,
 * other users' files fill the device up to ENOSPC, and a closed file's
 * memory is free again, after the dma-buf exported of it is released.
 *
 * XPU_EXPECT=none (a kernel without CONFIG_PCI_P2PDMA): both exports are
 * refused with EOPNOTSUPP, which the server checks; both sides stop there.
 *
 *   rhinet-xpu-dev [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER]
 *
 * Exits 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <rhinet/hw_regs.h>
#include <rhinet/hw_wqe.h>

#include "verbs_guest.h"
#include "xpu_devmode.h"
#include "xpu_guest.h"
#include "xpu/xpu-abi.h"
#include "xpu/xpu.h"

#define PROG_OFF 0x1000u /* lane 0's program; lane 1's at PROG1_OFF */
#define PROG1_OFF 0x3000u
#define STAGE_OFF 0x8000u /* the WQEs as built here, before the lane */
#define EXP_OFF (1u << 20) /* the dma-buf: [1 MiB, 1 MiB + EXP_LEN) */
#define EXP_LEN (256u << 10)
/* In the dma-buf */
#define CQ_OFF 0u
#define QP_OFF (64u << 10)
#define SRC_OFF (128u << 10) /* the source MR: [SRC_OFF, SRC_OFF + SRC_LEN) */
#define SRC_LEN (64u << 10)
#define SRC_IOVA 0x5500000000ull
#define NWQE 8u /* WRITEs, in NBATCH batches, a doorbell each */
#define NBATCH 2u
#define WLEN 1000u /* bytes per WRITE */
#define SQ_WRS 64u /* max_send_wr: 64 one-slot WQEs, a 64-slot ring */
#define RQ_WRS 2u
#define HOST_SIZE (64u << 10)
/* The memory of each file's own: A's bytes another process goes for */
#define MARK_OFF 0x10000u
#define MARK_LEN 4096u
#define MARK_SEED 9u
#define B_PROG_OFF 0x2000u /* the other process's programs, in its memory */
#define B_DATA_OFF 0x4000u
#define B_LANE 3u
#define POLL_ROUNDS 200000u /* 2 s of the guest's clock */

struct wire {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
	uint32_t ok; /* the server set up device mode */
	uint32_t pad;
};

/*
 * Runs @lane from @pc and waits; the lane's status, error in *err. A lane
 * that has just signalled its end in memory may not have reached its STOP
 * yet: EBUSY then, for a moment.
 */
static uint32_t lane_run(struct xpu *x, uint32_t lane, uint32_t pc,
			 uint32_t *err)
{
	struct xpu_lane_run run = {.lane = lane,
				   .pc = pc,
				   .flags = XPU_RUN_WAIT,
				   .timeout_ms = 20000};
	int r = EBUSY;

	for (int i = 0; i < 1000 && r == EBUSY; i++) {
		r = ioctl(x->fd, XPU_IOC_LANE_RUN, &run) ? errno : 0;
		if (r == EBUSY)
			usleep(1000);
	}
	if (r) {
		check(false, "XPU_IOC_LANE_RUN lane %u: %s", lane, strerror(r));
		return XPU_LANE_IDLE;
	}
	*err = run.error;
	return run.status;
}

/* Imports dma-buf @fd for @lanes; 0 and *imp, or errno. */
static int xpu_import(int xfd, int fd, uint32_t lanes, struct xpu_import *imp)
{
	*imp = (struct xpu_import){.fd = fd, .lanes = lanes};
	return ioctl(xfd, XPU_IOC_IMPORT_DMABUF, imp) ? errno : 0;
}

/* @name once it has moved past @from, or after a second as it is then. */
static uint64_t hw_counter_past(const char *dev, const char *name,
				uint64_t from)
{
	uint64_t v = ib_hw_counter(dev, name);

	for (int i = 0; i < 50 && v == from; i++)
		v = ib_hw_counter(dev, name);
	return v;
}

/* Gives window @w back; 0 or errno. */
static int xpu_unimport(int xfd, uint32_t w, uint32_t rsvd)
{
	struct xpu_unimport u = {.window = w, .rsvd = rsvd};

	return ioctl(xfd, XPU_IOC_UNIMPORT_DMABUF, &u) ? errno : 0;
}

/* The file's memory (XPU_IOC_MEM asking @size), or errno. */
static int xpu_mem(int fd, uint64_t size, struct xpu_mem *m)
{
	*m = (struct xpu_mem){.size = size};
	return ioctl(fd, XPU_IOC_MEM, m) ? errno : 0;
}

/* Lane @lane of file @fd runs the one command at @pc (mapped at @mem). */
static uint32_t b_run(int fd, volatile uint8_t *mem, uint32_t lane,
		      struct xpu_cmd c, uint32_t *err)
{
	struct xpu_cmd stop = {.op = XPU_OP_STOP};
	struct xpu_lane_run run = {.lane = lane,
				   .pc = B_PROG_OFF,
				   .flags = XPU_RUN_WAIT,
				   .timeout_ms = 20000};

	memcpy((void *)(mem + B_PROG_OFF), &c, sizeof(c));
	memcpy((void *)(mem + B_PROG_OFF + XPU_CMD_SIZE), &stop, sizeof(stop));
	if (ioctl(fd, XPU_IOC_LANE_RUN, &run)) {
		check(false, "XPU_IOC_LANE_RUN lane %u: %s", lane,
		      strerror(errno));
		return XPU_LANE_IDLE;
	}
	*err = run.error;
	return run.status;
}

static uint64_t local_faults(int fd)
{
	struct xpu_counters c = {0};

	if (ioctl(fd, XPU_IOC_COUNTERS, &c))
		die("XPU_IOC_COUNTERS");
	return c.count[XPU_CNT_LOCAL_FAULTS];
}

/*
 * Another process's file (@fd, its memory @m) goes for the server's bytes
 * at @rel, its own name for them: refused, or faults LOCAL.
 */
static void b_attacks(int fd, const struct xpu_mem *m, uint64_t rel)
{
	struct xpu_export e = {
		.offset = rel, .length = MARK_LEN, .flags = O_CLOEXEC | O_RDWR};
	struct xpu_lane_run run = {.lane = B_LANE, .pc = rel & ~31ull};
	const struct {
		const char *what;
		struct xpu_cmd c;
	} cmds[] = {
		{"STORE into it",
		 {.op = XPU_OP_STORE, .a = rel, .imm = 0xdeadbeef}},
		{"COPY into it",
		 {.op = XPU_OP_COPY, .len = 64, .a = rel, .b = B_DATA_OFF}},
		{"COPY from it",
		 {.op = XPU_OP_COPY, .len = 64, .a = B_DATA_OFF, .b = rel}},
		{"POLL on it", {.op = XPU_OP_POLL, .len = 1, .a = rel}},
	};
	struct xpu_cmd mine = {.op = XPU_OP_STORE, .a = B_DATA_OFF, .imm = 77};
	volatile uint8_t *mem;
	uint64_t faults0 = local_faults(fd);
	uint32_t st, err = 0;
	void *map;
	int r;

	map = mmap(NULL, MARK_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)rel);
	check(map == MAP_FAILED && errno == EINVAL,
	      "mapping another's memory: %s",
	      map == MAP_FAILED ? strerror(errno) : "mapped");
	if (map != MAP_FAILED)
		munmap(map, MARK_LEN);
	r = ioctl(fd, XPU_IOC_EXPORT_DMABUF, &e) ? errno : 0;
	check(r == EINVAL, "exporting another's memory: %s", strerror(r));
	if (!r)
		close(e.fd);
	r = ioctl(fd, XPU_IOC_LANE_RUN, &run) ? errno : 0;
	check(r == EINVAL, "a run from another's memory: %s", strerror(r));

	map = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap of the other process's own memory");
	mem = map;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		st = b_run(fd, mem, B_LANE, cmds[i].c, &err);
		check(st == XPU_LANE_FAULT && err == XPU_ERR_LOCAL,
		      "a lane's %s: status %u, error %u", cmds[i].what, st,
		      err);
	}
	check(local_faults(fd) - faults0 == 4,
	      "LOCAL_FAULTS counted the 4: %" PRIu64,
	      local_faults(fd) - faults0);
	/* Its own memory it reaches, at the same offsets as ever. */
	st = b_run(fd, mem, B_LANE, mine, &err);
	check(st == XPU_LANE_DONE &&
		      *(volatile uint64_t *)(mem + B_DATA_OFF) == 77,
	      "a lane's STORE into its own memory: status %u, error %u", st,
	      err);
	munmap(map, m->size);
}

/* The size of the xpu's memory, BAR2 (the third line of sysfs "resource"). */
static uint64_t xpu_bar_size(void)
{
	FILE *f = fopen("/sys/class/misc/xpu0/device/resource", "r");
	unsigned long long start = 0, end = 0, flags;
	int line;

	if (!f)
		die("open /sys/class/misc/xpu0/device/resource");
	for (line = 0; line < 3; line++)
		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			die("parse /sys/class/misc/xpu0/device/resource");
	fclose(f);
	return end > start ? end - start + 1 : 0;
}

/*
 * The most one user's files hold together: xpu.ko's user_mem_percent of
 * BAR2 in whole granules, a file's share at least. A module without the
 * parameter is held to the default, 50.
 */
static uint64_t user_share(const struct xpu_mem *m, uint64_t bar)
{
	FILE *f = fopen("/sys/module/xpu/parameters/user_mem_percent", "r");
	unsigned int pct = 50;
	uint64_t u;

	if (f) {
		if (fscanf(f, "%u", &pct) != 1)
			die("parse user_mem_percent");
		fclose(f);
	}
	u = bar * (pct < 100 ? pct : 100) / 100 / m->granule * m->granule;
	return u > m->share ? u : m->share;
}

/*
 * XPU_IOC_MEM on @fd (opened by this process) asking @size, by a child
 * running as @uid: the memory is charged to the user who allocates it.
 */
static int xpu_mem_as(uid_t uid, int fd, uint64_t size)
{
	struct xpu_mem got;
	pid_t pid = fork();
	int status;

	if (pid < 0)
		die("fork");
	if (!pid) {
		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(255);
		_exit(xpu_mem(fd, size, &got));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == 255)
		die("a child that runs as another user");
	return WEXITSTATUS(status);
}

/*
 * The shares. More than a file may hold is EDQUOT. One user's files
 * together hold at most the user's share (this user already holds @held,
 * the server's memory): past it, EDQUOT while memory is free, which other
 * users then take, a share each, until the device is full (ENOSPC, also
 * for a user holding nothing). A file's memory is given back to its user
 * and to the device when the file is closed, once the dma-buf exported of
 * it is released.
 */
static void b_share(const struct xpu_mem *m, uint64_t held, bool expect_p2p)
{
	enum {
		FIRST_UID = 61000
	};
	struct xpu_mem got, bad = {.rsvd = 1};
	struct xpu_export e = {.length = 4096, .flags = O_CLOEXEC | O_RDWR};
	uint64_t bar = xpu_bar_size(), user = user_share(m, bar);
	uint64_t mine = (user - held) / m->share, taken = held;
	int fds[64], n = 0, others = 0, r, x;
	int fd = open(XPU_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open " XPU_DEV);
	r = ioctl(fd, XPU_IOC_MEM, &bad) ? errno : 0;
	check(r == EINVAL, "XPU_IOC_MEM with rsvd set: %s", strerror(r));
	r = xpu_mem(fd, m->share + m->granule, &got);
	check(r == EDQUOT, "more than the share (%" PRIu64 "): %s",
	      (uint64_t)m->share, strerror(r));
	close(fd);
	printf("rhinet-xpu-dev: BAR2 %" PRIu64 " MiB, a file's share %" PRIu64
	       " MiB, a user's %" PRIu64 " MiB, held %" PRIu64 " MiB\n",
	       bar >> 20, (uint64_t)m->share >> 20, user >> 20, held >> 20);
	/* This user's files, a share each, up to the user's share. */
	for (r = 0; !r && n < 32; n++) {
		fds[n] = open(XPU_DEV, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			die("open " XPU_DEV);
		r = xpu_mem(fds[n], m->share, &got);
		if (!r)
			taken += got.size;
	}
	close(fds[--n]); /* the one refused */
	check(r == EDQUOT && (uint64_t)n == mine,
	      "one user's files taking a share each: %d, then %s (expected "
	      "%" PRIu64 ", then EDQUOT)",
	      n, strerror(r), mine);
	/* Other users, a share each, until the device is full. */
	for (r = 0; !r && n < 64; n++, others++) {
		fds[n] = open(XPU_DEV, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			die("open " XPU_DEV);
		r = xpu_mem_as(FIRST_UID + others, fds[n], m->share);
		if (!r)
			taken += m->share;
	}
	close(fds[--n]); /* the one refused */
	check(r == ENOSPC && others > 1 && bar - taken < m->share,
	      "other users, a share each: %d, then %s with %" PRIu64
	      " MiB of %" PRIu64 " taken (expected ENOSPC, full)",
	      others - 1, strerror(r), taken >> 20, bar >> 20);
	if (n < 1 || others < 2)
		goto out;
	/* This user, at its share, gets one back when one of its files closes. */
	if (mine) {
		x = (int)mine - 1;
		close(fds[x]);
		fds[x] = open(XPU_DEV, O_RDWR | O_CLOEXEC);
		r = xpu_mem(fds[x], m->share, &got);
		check(!r, "a user's closed file's share, its own again: %s",
		      strerror(r));
	}
	/*
	 * The last other user's memory outlives its file while a dma-buf
	 * holds it, then is free for that user again.
	 */
	x = FIRST_UID + others - 2;
	if (expect_p2p) {
		r = ioctl(fds[n - 1], XPU_IOC_EXPORT_DMABUF, &e) ? errno : 0;
		check(!r, "export of a share: %s", strerror(r));
	}
	close(fds[--n]);
	fd = open(XPU_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open " XPU_DEV);
	if (expect_p2p && !r) {
		r = xpu_mem_as(x, fd, m->share);
		check(r == ENOSPC, "a share held by a dma-buf: %s",
		      strerror(r));
		close(e.fd);
	}
	r = xpu_mem_as(x, fd, m->share);
	check(!r, "a closed file's share, free again: %s", strerror(r));
	close(fd);
out:
	while (n)
		close(fds[--n]);
}

/*
 * Another process goes for the server's bytes at MARK_OFF; they stay.
 * Its name for them: where they lie in BAR2 less where its own memory
 * does (a kernel without XPU_IOC_MEM gives everyone all of BAR2).
 */
static void memory_isolation(struct xpu *x, bool expect_p2p)
{
	struct xpu_mem a = {0};
	pid_t pid;
	int status, r;

	r = xpu_mem(x->fd, 0, &a);
	check(!r && a.size == x->info.mem_size &&
		      a.bus_addr == x->info.mem_bus_addr,
	      "XPU_IOC_MEM describes the server's memory: %s", strerror(r));
	pattern_fill(x->mem + MARK_OFF, MARK_LEN, MARK_SEED);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int fd = open(XPU_DEV, O_RDWR | O_CLOEXEC);
		struct xpu_mem b = {0};

		role = "other process";
		failures = 0; /* its own checks only, not the parent's */
		if (fd < 0)
			die("open " XPU_DEV);
		r = xpu_mem(fd, 0, &b);
		check(!r && b.size && b.offset != a.offset,
		      "memory of its own: %s, at %#" PRIx64, strerror(r),
		      (uint64_t)b.offset);
		if (r)
			b.size = x->info.mem_size;
		b_attacks(fd, &b, a.offset + MARK_OFF - b.offset);
		close(fd);
		if (!r)
			b_share(&b, a.size, expect_p2p);
		_exit(failures ? 1 : 0);
	}
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      !WEXITSTATUS(status),
	      "another process is kept out of the server's memory");
	check(pattern_differs(x->mem + MARK_OFF, MARK_LEN, MARK_SEED) < 0,
	      "the server's bytes are intact");
}

/* ---- the server: the device posts ---------------------------------------- */

struct dev_side {
	struct ibv_context *ctx;
	const char *dev;
	struct xpu x;
	int buf_fd; /* the dma-buf of the queues and the source */
	int db_fd; /* the context's doorbell page */
	struct xpu_import db; /* ... as lane 0 reaches it */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *src;
	size_t sq_rec_off; /* the SQ record, in the QP's buffer */
};

static struct rhinetdv_queue_buf qbuf(struct dev_side *d, uint64_t off,
				      size_t len)
{
	return xpu_queue_buf(&d->x, d->buf_fd, EXP_OFF, off, len);
}

/* The CQ and the QP in the dma-buf, the source MR; false if refused. */
static bool make_queues(struct dev_side *d)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 32};
	struct ibv_qp_init_attr_ex qa = {
		.cap = {.max_send_wr = SQ_WRS,
			.max_recv_wr = RQ_WRS,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};
	struct rhinetdv_cq_init_attr cdv = {.comp_mask =
						    RHINETDV_CQ_INIT_ATTR_BUF};
	struct rhinetdv_qp_init_attr qdv = {.comp_mask =
						    RHINETDV_QP_INIT_ATTR_BUF};
	struct rhinetdv_qp_buf_layout lay = {0};
	size_t cq_len = 0, qp_len = 0, want;
	struct ibv_cq_ex *cq;
	int lens;

	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		die("ibv_alloc_pd");
	qa.pd = d->pd;
	/*
	 * The QP's buffer as queues.md lays it out: the send ring (one
	 * 64-byte slot per WQE here), the receive ring, the SQ record, the
	 * RQ record.
	 */
	d->sq_rec_off = (size_t)RHN_SQ_SLOT_SIZE * SQ_WRS +
			(size_t)RHN_RQ_WQE_SIZE * RQ_WRS;
	want = d->sq_rec_off + 2 * sizeof(struct rhn_queue_record);
	/*
	 * The provider's length also fits the QP with many producers (its
	 * SQ record 8 bytes longer), with or without the flag.
	 */
	lens = rhinetdv_cq_buf_len(d->ctx, ca.cqe, &cq_len);
	lens = lens ?: rhinetdv_qp_buf_len(d->ctx, &qa, &qp_len);
	check(!lens &&
		      qp_len == want + sizeof(struct rhn_mp_queue_record) -
					sizeof(struct rhn_queue_record) &&
		      cq_len <= QP_OFF,
	      "queue buffers: %s, QP %zu bytes (want %zu and the larger SQ "
	      "record), CQ %zu",
	      strerror(lens), lens ? 0 : qp_len, want, lens ? 0 : cq_len);
	if (lens)
		return false;
	cdv.buf = qbuf(d, CQ_OFF, cq_len);
	cq = rhinetdv_create_cq(d->ctx, &ca, &cdv, sizeof(cdv));
	check(cq, "CQ in the xpu's memory: %s", strerror(errno));
	if (!cq)
		return false;
	d->cq = ibv_cq_ex_to_cq(cq);
	qa.send_cq = qa.recv_cq = d->cq;
	qdv.buf = qbuf(d, QP_OFF, qp_len);
	d->qp = rhinetdv_create_qp(d->ctx, &qa, &qdv, sizeof(qdv));
	check(d->qp, "QP in the xpu's memory: %s", strerror(errno));
	/* What the provider reports is what queues.md lays out. */
	check(!d->qp || (!rhinetdv_query_qp_buf(d->qp, &lay, sizeof(lay)) &&
			 lay.sq_record_offset == d->sq_rec_off &&
			 lay.sq_slots == SQ_WRS && lay.rq_wqes == RQ_WRS),
	      "rhinetdv_query_qp_buf: SQ record at %" PRIu64 ", want %zu",
	      lay.sq_record_offset, d->sq_rec_off);
	d->src = ibv_reg_dmabuf_mr(d->pd, SRC_OFF, SRC_LEN, SRC_IOVA, d->buf_fd,
				   IBV_ACCESS_LOCAL_WRITE);
	check(d->src, "source MR in the xpu's memory: %s", strerror(errno));
	return d->qp && d->src;
}

/*
 * Lane 0's program: per batch, COPY each WQE into its slot, STORE the
 * producer index, WRITE64 the SQ doorbell, POLL the batch's last CQE
 * until the NIC has written it (owner bit of the first lap: 1).
 */
static void build_program(struct dev_side *d, uint32_t rkey, uint64_t raddr)
{
	uint64_t ring = EXP_OFF + QP_OFF, cqes = EXP_OFF + CQ_OFF;
	uint32_t pc = PROG_OFF, per = NWQE / NBATCH;
	uint8_t wqe[RHN_SQ_SLOT_SIZE * RHN_WQE_MAX_SLOTS];

	for (uint32_t i = 0; i < NWQE; i++) {
		struct rhn_send_wqe *w;
		uint32_t slots;

		memset(wqe, 0, sizeof(wqe));
		w = rhn_wqe_start(wqe, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, i);
		w->remote_key = rkey;
		w->remote_addr = raddr + (uint64_t)i * WLEN;
		rhn_wqe_put_sge(wqe, 0, SRC_IOVA + (uint64_t)i * WLEN, WLEN,
				d->src->lkey);
		slots = rhn_wqe_finish(wqe, rhn_wqe_set_sges(wqe, 1), NULL);
		check(slots == 1, "WQE %u: %u slots", i, slots);
		memcpy((void *)(d->x.mem + STAGE_OFF + i * RHN_SQ_SLOT_SIZE),
		       wqe, RHN_SQ_SLOT_SIZE);
	}
	for (uint32_t b = 0; b < NBATCH; b++) {
		uint32_t last = (b + 1) * per - 1;

		for (uint32_t i = b * per; i <= last; i++) {
			xpu_put_cmd(&d->x, pc, XPU_OP_COPY, 0, RHN_SQ_SLOT_SIZE,
				    ring + i * RHN_SQ_SLOT_SIZE,
				    STAGE_OFF + i * RHN_SQ_SLOT_SIZE, 0);
			pc += XPU_CMD_SIZE;
		}
		/* producer_index = last + 1; nic_consumer stays 0 */
		xpu_put_cmd(&d->x, pc, XPU_OP_STORE, 0, 0, ring + d->sq_rec_off,
			    0, last + 1);
		pc += XPU_CMD_SIZE;
		xpu_put_cmd(&d->x, pc, XPU_OP_WRITE64, 0, 0, 0,
			    d->db.bus_addr + RHN_DB_SQ, d->qp->qp_num);
		pc += XPU_CMD_SIZE;
		/* bytes 24..31 of the CQE: the owner bit is bit 63 */
		xpu_put_cmd(&d->x, pc, XPU_OP_POLL, XPU_POLL_GE, POLL_ROUNDS,
			    cqes + (uint64_t)last * RHN_CQE_SIZE + 24, 0,
			    1ull << 63);
		pc += XPU_CMD_SIZE;
	}
	xpu_put_cmd(&d->x, pc, XPU_OP_STOP, 0, 0, 0, 0, 0);
}

static void device_posts(struct dev_side *d)
{
	const volatile struct rhn_cqe *cqe =
		(const volatile struct rhn_cqe *)(d->x.mem + EXP_OFF + CQ_OFF);
	uint64_t tx0 = eth0_tx();
	uint64_t bad0 = ib_hw_counter(d->dev, "bad_doorbells");
	uint64_t host0 = ib_hw_counter(d->dev, "host_doorbells");
	uint64_t peer0 = ib_hw_counter(d->dev, "peer_doorbells");
	uint64_t host1, peer1, tx1;
	struct xpu_counters c;
	uint32_t st, err = 0;

	if (ioctl(d->x.fd, XPU_IOC_CLEAR_COUNTERS))
		die("XPU_IOC_CLEAR_COUNTERS");
	st = lane_run(&d->x, 0, PROG_OFF, &err);
	host1 = ib_hw_counter(d->dev, "host_doorbells");
	peer1 = ib_hw_counter(d->dev, "peer_doorbells");
	tx1 = eth0_tx(); /* eth0's frames from before host0 to after host1 */
	check(st == XPU_LANE_DONE,
	      "the lane posted and saw its CQEs: status "
	      "%u, error %u",
	      st, err);
	for (uint32_t i = 0; i < NWQE; i++)
		check(cqe[i].status == RHN_CQE_SUCCESS &&
			      cqe[i].opcode == RHN_CQE_OP_WRITE &&
			      cqe[i].qpn == d->qp->qp_num &&
			      cqe[i].wqe_index == i &&
			      (cqe[i].flags & RHN_CQE_F_SQ) &&
			      (cqe[i].flags & RHN_CQE_F_OWNER),
		      "CQE %u: status %u opcode %u qpn %u index %u flags %#x",
		      i, cqe[i].status, cqe[i].opcode, cqe[i].qpn,
		      cqe[i].wqe_index, cqe[i].flags);
	check(!(cqe[NWQE].flags & RHN_CQE_F_OWNER), "no CQE past the last");
	if (ioctl(d->x.fd, XPU_IOC_COUNTERS, &c))
		die("XPU_IOC_COUNTERS");
	printf("rhinet-xpu-dev server: xpu: host rd %" PRIu64 " wr %" PRIu64
	       ", p2p wr %" PRIu64 " (%" PRIu64 " B), in rd %" PRIu64
	       " wr %" PRIu64 ", cmds %" PRIu64 "\n",
	       (uint64_t)c.count[XPU_CNT_HOST_RD_COUNT],
	       (uint64_t)c.count[XPU_CNT_HOST_WR_COUNT],
	       (uint64_t)c.count[XPU_CNT_P2P_WR_COUNT],
	       (uint64_t)c.count[XPU_CNT_P2P_WR_BYTES],
	       (uint64_t)c.count[XPU_CNT_IN_RD_COUNT],
	       (uint64_t)c.count[XPU_CNT_IN_WR_COUNT],
	       (uint64_t)c.count[XPU_CNT_CMDS]);
	check(c.count[XPU_CNT_HOST_RD_COUNT] == 0 &&
		      c.count[XPU_CNT_HOST_WR_COUNT] == 0,
	      "the xpu touched no host RAM");
	check(c.count[XPU_CNT_P2P_WR_COUNT] == NBATCH &&
		      c.count[XPU_CNT_P2P_WR_BYTES] == 8 * NBATCH &&
		      c.count[XPU_CNT_P2P_RD_COUNT] == 0,
	      "one 8-byte peer-to-peer write per doorbell: %" PRIu64,
	      (uint64_t)c.count[XPU_CNT_P2P_WR_COUNT]);
	check(c.count[XPU_CNT_IN_RD_BYTES] >= NWQE * (RHN_SQ_SLOT_SIZE + WLEN),
	      "the NIC read the WQEs and the data from the xpu: %" PRIu64 " B",
	      (uint64_t)c.count[XPU_CNT_IN_RD_BYTES]);
	check(c.count[XPU_CNT_IN_WR_COUNT] >= NWQE,
	      "the NIC wrote the CQEs into the xpu: %" PRIu64,
	      (uint64_t)c.count[XPU_CNT_IN_WR_COUNT]);
	check(c.count[XPU_CNT_FAULTS] == 0, "no fault");
	check(ib_hw_counter(d->dev, "bad_doorbells") == bad0,
	      "the NIC took every doorbell");
	printf("rhinet-xpu-dev server: NIC: SQ doorbells from the host %" PRIu64
	       " (eth0 frames sent %" PRIu64 "), from a peer %" PRIu64
	       " during the lane's run\n",
	       host1 - host0, tx1 - tx0, peer1 - peer0);
	/*
	 * The host's count may move only by the kernel's own eth0 (the side
	 * channel's TCP runs over it): nothing of the lane's.
	 */
	check(peer1 - peer0 == NBATCH && host1 - host0 <= tx1 - tx0,
	      "the NIC counted the xpu's doorbells as a peer's, none as the "
	      "host's");
}

/* A doorbell page the lane was not given: WINDOW, and the NIC saw nothing. */
static void foreign_page(struct dev_side *d)
{
	uint64_t bad0 = ib_hw_counter(d->dev, "bad_doorbells");
	uint32_t st, err = 0;

	xpu_put_cmd(&d->x, PROG_OFF, XPU_OP_WRITE64, 0, 0, 0,
		    d->db.bus_addr + RHN_DB_PAGE_SIZE + RHN_DB_SQ, 0xffffff);
	xpu_put_cmd(&d->x, PROG_OFF + XPU_CMD_SIZE, XPU_OP_STOP, 0, 0, 0, 0, 0);
	st = lane_run(&d->x, 0, PROG_OFF, &err);
	check(st == XPU_LANE_FAULT && err == XPU_ERR_WINDOW,
	      "a write to the next doorbell page: status %u, error %u", st,
	      err);
	check(ib_hw_counter(d->dev, "bad_doorbells") == bad0,
	      "the NIC saw no doorbell");
}

/* Another process: lane 0 and the doorbell are not its to use. */
static void other_process(struct dev_side *d)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		die("fork");
	if (!pid) {
		struct xpu_lane_claim claim = {.lanes = 1};
		struct xpu_lane_run run = {.lane = 0, .pc = PROG_OFF};
		struct xpu_import imp;
		int fd = open(XPU_DEV, O_RDWR | O_CLOEXEC), r;

		role = "other process";
		failures = 0; /* its own checks only, not the parent's */
		if (fd < 0)
			die("open " XPU_DEV);
		r = ioctl(fd, XPU_IOC_LANE_RUN, &run) ? errno : 0;
		check(r == EBUSY, "running another's lane: %s", strerror(r));
		r = ioctl(fd, XPU_IOC_LANE_CLAIM, &claim) ? errno : 0;
		check(r == EBUSY, "claiming another's lane: %s", strerror(r));
		r = xpu_import(fd, d->db_fd, 1, &imp);
		check(r == EBUSY, "importing for another's lane: %s",
		      strerror(r));
		r = xpu_unimport(fd, d->db.window, 0);
		check(r == EBUSY, "giving back another's window: %s",
		      strerror(r));
		r = ioctl(fd, XPU_IOC_LANE_RELEASE, &claim) ? errno : 0;
		check(r == EBUSY, "giving back another's lane: %s",
		      strerror(r));
		claim.lanes = 1u << 3;
		r = ioctl(fd, XPU_IOC_LANE_RELEASE, &claim) ? errno : 0;
		check(r == ENOENT, "giving back a free lane: %s", strerror(r));
		claim.lanes = 1u << 31;
		r = ioctl(fd, XPU_IOC_LANE_RELEASE, &claim) ? errno : 0;
		check(r == EINVAL, "giving back a lane past the device's: %s",
		      strerror(r));
		claim = (struct xpu_lane_claim){.lanes = 1u << 3, .rsvd = 1};
		r = ioctl(fd, XPU_IOC_LANE_RELEASE, &claim) ? errno : 0;
		check(r == EINVAL, "a release with rsvd set: %s", strerror(r));
		close(fd);
		_exit(failures ? 1 : 0);
	}
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      !WEXITSTATUS(status),
	      "another process is refused the lane (EBUSY)");
}

/* Lane 1 kicks through @bus_addr's doorbell page: its status and error. */
static uint32_t lane1_kick(struct dev_side *d, uint64_t bus_addr, uint32_t *err)
{
	xpu_put_cmd(&d->x, PROG1_OFF, XPU_OP_WRITE64, 0, 0, 0,
		    bus_addr + RHN_DB_SQ, 0xffffff);
	xpu_put_cmd(&d->x, PROG1_OFF + XPU_CMD_SIZE, XPU_OP_STOP, 0, 0, 0, 0,
		    0);
	return lane_run(&d->x, 1, PROG1_OFF, err);
}

/*
 * Windows given back before close: the context's doorbell page again, in
 * a second window for lane 1, reached (a kick naming no queue: the NIC
 * counts it as bad) until it is given back, then never: WINDOW, and the
 * NIC sees nothing. Every window taken, one given back is free for the
 * next import. The window @revoked_w, closed by its exporter, is given
 * back like any. Bad numbers: EINVAL; a free window: ENOENT.
 */
static void unimported(struct dev_side *d, uint32_t revoked_w)
{
	struct xpu_import imp, more[XPU_WINDOWS_MAX];
	uint64_t bad0, bad1, peer0;
	uint32_t st, err = 0, n = 0;
	int r;

	r = xpu_import(d->x.fd, d->db_fd, 2, &imp);
	check(!r, "the doorbell imported again for lane 1: %s", strerror(r));
	if (r)
		return;
	bad0 = ib_hw_counter(d->dev, "bad_doorbells");
	st = lane1_kick(d, imp.bus_addr, &err);
	bad1 = hw_counter_past(d->dev, "bad_doorbells", bad0);
	check(st == XPU_LANE_DONE && bad1 == bad0 + 1,
	      "lane 1 kicks through window %u: status %u, error %u, the NIC "
	      "saw %" PRIu64,
	      imp.window, st, err, bad1 - bad0);
	r = xpu_unimport(d->x.fd, imp.window, 0);
	check(!r, "window %u given back: %s", imp.window, strerror(r));
	peer0 = ib_hw_counter(d->dev, "peer_doorbells");
	st = lane1_kick(d, imp.bus_addr, &err);
	check(st == XPU_LANE_FAULT && err == XPU_ERR_WINDOW,
	      "after the un-import: the lane's write faults WINDOW (%u, %u)",
	      st, err);
	check(ib_hw_counter(d->dev, "bad_doorbells") == bad1 &&
		      ib_hw_counter(d->dev, "peer_doorbells") == peer0,
	      "the NIC saw nothing of it");
	r = xpu_unimport(d->x.fd, imp.window, 0);
	check(r == ENOENT, "the window given back twice: %s", strerror(r));
	r = xpu_unimport(d->x.fd, XPU_WINDOWS_MAX, 0);
	check(r == EINVAL, "a window past the device's: %s", strerror(r));
	r = xpu_unimport(d->x.fd, d->db.window, 1);
	check(r == EINVAL, "a nonzero reserved field: %s", strerror(r));
	r = xpu_unimport(d->x.fd, revoked_w, 0);
	check(!r, "the revoked window given back: %s", strerror(r));

	/* Every window taken; one given back serves the next import. */
	while (n < XPU_WINDOWS_MAX &&
	       !(r = xpu_import(d->x.fd, d->db_fd, 2, &more[n])))
		n++;
	check(r == ENOSPC && n > 0, "imports until ENOSPC: %u, then %s", n,
	      strerror(r));
	if (n) {
		r = xpu_unimport(d->x.fd, more[n - 1].window, 0);
		check(!r, "one given back: %s", strerror(r));
		r = xpu_import(d->x.fd, d->db_fd, 2, &imp);
		check(!r && imp.window == more[n - 1].window,
		      "the next import takes it: %s, window %u", strerror(r),
		      imp.window);
		st = lane1_kick(d, imp.bus_addr, &err);
		check(st == XPU_LANE_DONE, "and lane 1 reaches it: %u, %u", st,
		      err);
		n--;
	}
	while (n--)
		check(!xpu_unimport(d->x.fd, more[n].window, 0),
		      "window %u given back", more[n].window);
	check(!xpu_unimport(d->x.fd, imp.window, 0), "the last given back");
}

/*
 * A second context's doorbell page for lane 1: reached while the context
 * lives, revoked when it is closed, never reached after (a third context
 * may hold the page then), and the revoked dma-buf maps nothing. Returns
 * the revoked window (still the file's), XPU_WINDOWS_MAX if none.
 */
static uint32_t revoked(struct dev_side *d)
{
	struct ibv_context *ctx2 = open_device(d->dev), *ctx3;
	struct xpu_import imp, again;
	uint32_t st, err = 0, window = XPU_WINDOWS_MAX;
	int fd2, fd3, r;

	fd2 = rhinetdv_export_doorbell(ctx2, NULL, 0);
	check(fd2 >= 0, "second context's doorbell: %s", strerror(errno));
	if (fd2 < 0)
		return XPU_WINDOWS_MAX;
	check(lseek(fd2, 0, SEEK_END) == RHN_DB_PAGE_SIZE,
	      "the dma-buf is one doorbell page");
	r = xpu_import(d->x.fd, fd2, 2, &imp);
	check(!r && imp.bus_addr != d->db.bus_addr &&
		      imp.size == RHN_DB_PAGE_SIZE &&
		      imp.window != d->db.window,
	      "imported for lane 1: %s, bus %#" PRIx64 " window %u",
	      strerror(r), (uint64_t)imp.bus_addr, imp.window);
	if (!r)
		window = imp.window;
	/* A kick naming no queue of the context: harmless, and counted. */
	xpu_put_cmd(&d->x, PROG1_OFF, XPU_OP_WRITE64, 0, 0, 0,
		    imp.bus_addr + RHN_DB_SQ, 0xffffff);
	xpu_put_cmd(&d->x, PROG1_OFF + XPU_CMD_SIZE, XPU_OP_STOP, 0, 0, 0, 0,
		    0);
	st = lane_run(&d->x, 1, PROG1_OFF, &err);
	check(st == XPU_LANE_DONE, "lane 1 reaches the live page: %u, %u", st,
	      err);
	check(!ibv_close_device(ctx2), "second context closed");
	st = lane_run(&d->x, 1, PROG1_OFF, &err);
	check(st == XPU_LANE_FAULT && err == XPU_ERR_WINDOW,
	      "after the context: the lane's write faults WINDOW (%u, %u)", st,
	      err);
	ctx3 = open_device(d->dev);
	fd3 = rhinetdv_export_doorbell(ctx3, NULL, 0);
	check(fd3 >= 0, "a third context's doorbell: %s", strerror(errno));
	st = lane_run(&d->x, 1, PROG1_OFF, &err);
	check(st == XPU_LANE_FAULT && err == XPU_ERR_WINDOW,
	      "with a new context about: still WINDOW (%u, %u)", st, err);
	r = xpu_import(d->x.fd, fd2, 2, &again);
	check(r == ENODEV, "the revoked dma-buf imported again: %s",
	      strerror(r));
	if (fd3 >= 0)
		close(fd3);
	close(fd2);
	ibv_close_device(ctx3);
	return window;
}

/* ---- a burst of trigger adds rung by the lanes ---------------------------- */

#define ADD_LANES_MAX 8u
#define ADDS_PER_LANE 8192u /* 4 lanes: 32 times the NIC's kick FIFO */
#define ADD_PROG_OFF 0x20000u /* lane L's program at + L * ADD_PROG_LEN */
#define ADD_PROG_LEN 0x400u
#define ADD_DATA_OFF 0x24000u /* lane L's words at + L * ADD_DATA_LEN */
#define ADD_DATA_LEN 64u
#define ADD_DONE_OFF 0x25000u /* each lane adds 1 here at its end */
#define ADD_W_VALUE 0u /* the doorbell word the lane writes next */
#define ADD_W_COUNT 8u /* adds rung so far */
#define ADD_W_SCRATCH 16u /* what FADD reads back */
#define TRIG_BUF (64u << 10)
#define TRIG_LEN 256u /* bytes per WRITE: at the sum, and beyond it */

/* Lane @l's first addend; its k-th add is that plus k. */
static uint32_t lane_addend(uint32_t l)
{
	return 1 + 7 * l;
}

/* What lane @l adds in all: ADDS_PER_LANE addends from lane_addend(l) on. */
static uint64_t lane_sum(uint32_t l)
{
	const uint64_t n = ADDS_PER_LANE;

	return n * lane_addend(l) + n * (n - 1) / 2;
}

/*
 * Lane @l's program: one 8-byte write of its doorbell word to the page's
 * TRIGGER doorbell (the store rhinetdv_trigger_add makes), the addend in
 * the word's high half moved on by 1, the count by 1, back until
 * ADDS_PER_LANE adds are rung; then 1 added to the done word.
 */
static void build_adder(struct xpu *x, uint32_t l, uint64_t db_bus,
			uint32_t handle)
{
	const uint64_t pc0 = ADD_PROG_OFF + (uint64_t)l * ADD_PROG_LEN;
	const uint64_t data = ADD_DATA_OFF + (uint64_t)l * ADD_DATA_LEN;
	volatile uint64_t *w = (volatile uint64_t *)(x->mem + data);
	uint64_t pc = pc0;

	w[ADD_W_VALUE / 8] = rhn_db_trigger_value(handle, lane_addend(l));
	w[ADD_W_COUNT / 8] = 0;
	xpu_put_cmd(x, pc, XPU_OP_WRITE64, XPU_IND_IMM, 0, 0,
		    db_bus + RHN_DB_TRIGGER, data + ADD_W_VALUE);
	pc += XPU_CMD_SIZE;
	xpu_put_cmd(x, pc, XPU_OP_ALU, 0, XPU_ALU_ADD, data + ADD_W_VALUE,
		    data + ADD_W_VALUE, 1ull << RHN_DB_TRIGGER_ADDEND_SHIFT);
	pc += XPU_CMD_SIZE;
	xpu_put_cmd(x, pc, XPU_OP_ALU, 0, XPU_ALU_ADD, data + ADD_W_COUNT,
		    data + ADD_W_COUNT, 1);
	pc += XPU_CMD_SIZE;
	xpu_put_cmd(x, pc, XPU_OP_BRANCH, 0, XPU_COND_LT, data + ADD_W_COUNT,
		    ADDS_PER_LANE, pc0);
	pc += XPU_CMD_SIZE;
	xpu_put_cmd(x, pc, XPU_OP_FADD, 0, 0, ADD_DONE_OFF,
		    data + ADD_W_SCRATCH, 1);
	pc += XPU_CMD_SIZE;
	xpu_put_cmd(x, pc, XPU_OP_STOP, 0, 0, 0, 0, 0);
}

/* Two RC QPs of @ctx connected to each other: WRITEs go from qp[0]. */
struct trig_pair {
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
};

static void trig_pair_make(struct ibv_context *ctx, int gid_index,
			   struct trig_pair *p)
{
	struct ibv_qp_init_attr_ex a = {
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.comp_mask =
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
	};
	uint8_t gid[16];

	p->mr = alloc_buffer(ctx, TRIG_BUF, &p->pd, &p->buf);
	p->cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!p->mr || !p->cq)
		die("MR/CQ for the triggered WRITEs");
	a.pd = p->pd;
	a.send_cq = a.recv_cq = p->cq;
	for (int q = 0; q < 2; q++) {
		p->qp[q] = ibv_create_qp_ex(ctx, &a);
		if (!p->qp[q])
			die("ibv_create_qp_ex");
	}
	local_gid(ctx, gid_index, gid);
	rc_connect(p->qp[0], "trigger QP 0", p->qp[1]->qp_num, gid, gid_index,
		   1);
	rc_connect(p->qp[1], "trigger QP 1", p->qp[0]->qp_num, gid, gid_index,
		   1);
	pattern_fill(p->buf, TRIG_LEN * 2, 11);
}

static void trig_pair_destroy(struct trig_pair *p)
{
	ibv_destroy_qp(p->qp[0]);
	ibv_destroy_qp(p->qp[1]);
	ibv_destroy_cq(p->cq);
	ibv_dereg_mr(p->mr);
	ibv_dealloc_pd(p->pd);
	free(p->buf);
}

/* WRITE @i (bytes [i * TRIG_LEN, +TRIG_LEN) to the buffer's second half)
 * parked on @t until it reaches @threshold; ibv_wr_complete's result.
 */
static int park_write(struct trig_pair *p, uint32_t i,
		      struct rhinetdv_trigger *t, uint64_t threshold)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(p->qp[0]);
	struct rhinetdv_wr_trigger wt = {.comp_mask =
						 RHINETDV_WR_TRIGGER_COUNTER,
					 .counter = t,
					 .threshold = threshold};
	int err;

	ibv_wr_start(qx);
	qx->wr_id = 0x7700 + i;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, p->mr->rkey,
			  (uintptr_t)(p->buf + TRIG_BUF / 2 + i * TRIG_LEN));
	ibv_wr_set_sge(qx, p->mr->lkey, (uintptr_t)(p->buf + i * TRIG_LEN),
		       TRIG_LEN);
	err = rhinetdv_wr_set_trigger(qx, &wt, sizeof(wt));
	return ibv_wr_complete(qx) ?: err;
}

/* Whether WRITE @i's bytes landed. */
static bool write_landed(struct trig_pair *p, uint32_t i)
{
	return !memcmp(p->buf + TRIG_BUF / 2 + i * TRIG_LEN,
		       p->buf + i * TRIG_LEN, TRIG_LEN);
}

/* The counter's value once it reads @want, or the last read after 2 s. */
static uint64_t trigger_value(struct rhinetdv_trigger *t, uint64_t want)
{
	uint64_t v = ~0ull;
	double end = now() + 2.0;
	int r;

	do {
		r = rhinetdv_trigger_read(t, &v);
		if (r)
			check(false, "rhinetdv_trigger_read: %s", strerror(r));
		if (r || v == want)
			break;
		usleep(1000);
	} while (now() < end);
	return v;
}

/* One completion of WRITE @i, successful, within 5 s. */
static void expect_fired(struct trig_pair *p, uint32_t i, const char *what)
{
	struct ibv_wc wc;
	int got = poll_cq_for(p->cq, &wc, 1, 5000);

	check(got == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x7700 + i,
	      "%s: %d completions, status %s, wr_id %#" PRIx64, what, got,
	      got == 1 ? ibv_wc_status_str(wc.status) : "-",
	      got == 1 ? wc.wr_id : 0);
	check(write_landed(p, i), "%s: its bytes landed", what);
}

/*
 * The lanes ring the counter: every lane of the xpu (up to 8) at once, a
 * loop of ADDS_PER_LANE adds each with values of its own, all through a
 * window onto the context's doorbell page. A WRITE parked at the exact sum
 * of them all fires once; one parked a unit beyond it waits for one more
 * add (by the CPU). No add is lost or dropped although there are far more
 * than the NIC's kick FIFO holds, and each is one 8-byte peer-to-peer
 * write of the xpu, none reaching host RAM.
 */
static void lanes_add(struct dev_side *d, int gid_index)
{
	const uint32_t lanes = d->x.info.lanes < ADD_LANES_MAX ? d->x.info.lanes
							       : ADD_LANES_MAX;
	const uint64_t adds = (uint64_t)lanes * ADDS_PER_LANE;
	volatile uint64_t *done =
		(volatile uint64_t *)(d->x.mem + ADD_DONE_OFF);
	struct rhinetdv_trigger_init_attr ta = {0};
	struct rhinetdv_trigger *t;
	uint64_t sum = 0, v, fired0, dropped0, lost0;
	struct trig_pair p;
	struct xpu_import imp;
	struct xpu_counters c;
	struct ibv_wc wc;
	uint32_t st, err = 0;
	double t0;
	int r, got;

	r = xpu_import(d->x.fd, d->db_fd, (1u << lanes) - 1, &imp);
	check(!r, "the doorbell imported for %u lanes: %s", lanes, strerror(r));
	t = rhinetdv_create_trigger(d->ctx, &ta, sizeof(ta));
	check(t, "a trigger counter: %s", strerror(errno));
	if (r || !t)
		return;
	trig_pair_make(d->ctx, gid_index, &p);
	for (uint32_t l = 0; l < lanes; l++) {
		sum += lane_sum(l);
		build_adder(&d->x, l, imp.bus_addr, t->handle);
	}
	check(!park_write(&p, 0, t, sum) && !park_write(&p, 1, t, sum + 1),
	      "two WRITEs parked, at %" PRIu64 " and a unit beyond", sum);
	*done = 0;
	if (ioctl(d->x.fd, XPU_IOC_CLEAR_COUNTERS))
		die("XPU_IOC_CLEAR_COUNTERS");
	fired0 = ib_hw_counter(d->dev, "trigger_fired");
	dropped0 = ib_hw_counter(d->dev, "trigger_dropped_adds");
	lost0 = ib_hw_counter(d->dev, "kick_overflows");
	t0 = now();
	for (uint32_t l = 0; l < lanes; l++) {
		struct xpu_lane_run run = {
			.lane = l, .pc = ADD_PROG_OFF + l * ADD_PROG_LEN};

		r = ioctl(d->x.fd, XPU_IOC_LANE_RUN, &run) ? errno : 0;
		check(!r, "lane %u started: %s", l, strerror(r));
	}
	while (*done < lanes && now() < t0 + 60)
		usleep(1000);
	check(*done == lanes, "%u lanes rang their adds (%" PRIu64 ")", lanes,
	      (uint64_t)*done);
	expect_fired(&p, 0, "the WRITE parked at the lanes' sum");
	v = trigger_value(t, sum);
	check(v == sum,
	      "the value is the sum of the %" PRIu64 " adds: %" PRIu64
	      ", expected %" PRIu64,
	      adds, v, sum);
	got = poll_cq_for(p.cq, &wc, 1, 300);
	check(got == 0 && !write_landed(&p, 1),
	      "the WRITE parked beyond the sum waits (%d completions)", got);
	check(ib_hw_counter(d->dev, "trigger_fired") == fired0 + 1,
	      "trigger_fired moved by one");
	check(ib_hw_counter(d->dev, "trigger_dropped_adds") == dropped0,
	      "no add dropped");
	if (ioctl(d->x.fd, XPU_IOC_COUNTERS, &c))
		die("XPU_IOC_COUNTERS");
	printf("rhinet-xpu-dev server: %u lanes, %" PRIu64
	       " trigger adds in %.2f s: xpu p2p wr %" PRIu64 " (%" PRIu64
	       " B), host rd %" PRIu64 " wr %" PRIu64 ", cmds %" PRIu64
	       "; NIC kick_overflows +%" PRIu64 "\n",
	       lanes, adds, now() - t0, (uint64_t)c.count[XPU_CNT_P2P_WR_COUNT],
	       (uint64_t)c.count[XPU_CNT_P2P_WR_BYTES],
	       (uint64_t)c.count[XPU_CNT_HOST_RD_COUNT],
	       (uint64_t)c.count[XPU_CNT_HOST_WR_COUNT],
	       (uint64_t)c.count[XPU_CNT_CMDS],
	       ib_hw_counter(d->dev, "kick_overflows") - lost0);
	check(c.count[XPU_CNT_HOST_RD_COUNT] == 0 &&
		      c.count[XPU_CNT_HOST_WR_COUNT] == 0 &&
		      c.count[XPU_CNT_FAULTS] == 0,
	      "the lanes touched no host RAM and did not fault");
	check(c.count[XPU_CNT_P2P_WR_COUNT] == adds &&
		      c.count[XPU_CNT_P2P_WR_BYTES] == 8 * adds,
	      "one 8-byte peer-to-peer write per add: %" PRIu64,
	      (uint64_t)c.count[XPU_CNT_P2P_WR_COUNT]);
	/* per add WRITE64, two ALUs, BRANCH; per lane FADD and STOP */
	check(c.count[XPU_CNT_CMDS] == 4 * adds + 2 * lanes,
	      "the lanes ran their loops and nothing else: %" PRIu64
	      " commands",
	      (uint64_t)c.count[XPU_CNT_CMDS]);
	check(rhinetdv_trigger_add(t, 1) == 0, "the CPU adds one more");
	expect_fired(&p, 1, "then the WRITE parked beyond the sum");
	sum++;

	/*
	 * Another context's doorbell page, live, reached by lane 0: the add
	 * names this context's counter, so the NIC drops it and counts it.
	 */
	{
		struct ibv_context *ctx2 = open_device(d->dev);
		int fd2 = rhinetdv_export_doorbell(ctx2, NULL, 0);
		struct xpu_import imp2;

		r = fd2 < 0 ? errno : xpu_import(d->x.fd, fd2, 1, &imp2);
		check(!r, "another context's page imported for lane 0: %s",
		      strerror(r));
		if (!r) {
			build_adder(&d->x, 0, imp2.bus_addr, t->handle);
			/* one add, then STOP */
			xpu_put_cmd(&d->x, ADD_PROG_OFF + XPU_CMD_SIZE,
				    XPU_OP_STOP, 0, 0, 0, 0, 0);
			st = lane_run(&d->x, 0, ADD_PROG_OFF, &err);
			check(st == XPU_LANE_DONE,
			      "lane 0 writes the other page: %u, %u", st, err);
			v = hw_counter_past(d->dev, "trigger_dropped_adds",
					    dropped0);
			check(v == dropped0 + 1,
			      "the NIC dropped the add through another "
			      "context's page (+%" PRIu64 ")",
			      v - dropped0);
			check(trigger_value(t, sum) == sum,
			      "the counter did not move");
			check(!xpu_unimport(d->x.fd, imp2.window, 0),
			      "its window given back");
		}
		if (fd2 >= 0)
			close(fd2);
		ibv_close_device(ctx2);
	}

	/* No window onto a doorbell page any more: lane 1 cannot add. */
	check(!xpu_unimport(d->x.fd, imp.window, 0), "window %u given back",
	      imp.window);
	build_adder(&d->x, 1, imp.bus_addr, t->handle);
	dropped0 = ib_hw_counter(d->dev, "trigger_dropped_adds");
	st = lane_run(&d->x, 1, ADD_PROG_OFF + ADD_PROG_LEN, &err);
	check(st == XPU_LANE_FAULT && err == XPU_ERR_WINDOW,
	      "lane 1 without a window: its add faults WINDOW (%u, %u)", st,
	      err);
	check(trigger_value(t, sum) == sum &&
		      ib_hw_counter(d->dev, "trigger_dropped_adds") == dropped0,
	      "the counter did not move, the NIC saw nothing");
	check(rhinetdv_destroy_trigger(t) == 0, "the counter destroyed");
	trig_pair_destroy(&p);
}

static void server(int sock, struct ibv_context *ctx, const char *dev,
		   int gid_index, bool expect_p2p)
{
	struct dev_side d = {.ctx = ctx, .dev = dev, .buf_fd = -1};
	struct wire me = {0}, peer;
	int r;

	xpu_open(&d.x);
	memory_isolation(&d.x, expect_p2p);
	if (!xpu_devmode_exports(ctx, &d.x, EXP_OFF, EXP_LEN, &d.db_fd,
				 &d.buf_fd, expect_p2p))
		goto talk;
	memset((void *)(d.x.mem + EXP_OFF), 0, EXP_LEN);
	pattern_fill(d.x.mem + EXP_OFF + SRC_OFF, NWQE * WLEN, 7);
	{
		/* The NIC may not take its own doorbell page as memory. */
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_mr *mr =
			pd ? ibv_reg_dmabuf_mr(pd, 0, RHN_DB_PAGE_SIZE, 0x1000,
					       d.db_fd, IBV_ACCESS_LOCAL_WRITE)
			   : NULL;

		check(!mr && errno == EOPNOTSUPP,
		      "the doorbell's dma-buf as an MR: %s",
		      mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		if (pd)
			ibv_dealloc_pd(pd);
	}
	r = xpu_import(d.x.fd, d.db_fd, 1, &d.db);
	check(!r && d.db.size == RHN_DB_PAGE_SIZE,
	      "doorbell imported for lane 0: %s, bus %#" PRIx64 ", window %u",
	      strerror(r), (uint64_t)d.db.bus_addr, d.db.window);
	if (r || !make_queues(&d))
		goto talk;
	me.ok = 1;
	me.qpn = d.qp->qp_num;
talk:
	local_gid(ctx, gid_index, me.gid);
	xfer(sock, &me, &peer, sizeof(me));
	if (!me.ok)
		return;
	rc_connect(d.qp, "QP", peer.qpn, peer.gid, gid_index, 4);
	sync_peer(sock); /* both connected */
	build_program(&d, peer.rkey, peer.addr);
	device_posts(&d);
	sync_peer(sock); /* the client checks the bytes */
	sync_peer(sock);
	foreign_page(&d);
	other_process(&d);
	unimported(&d, revoked(&d));
	lanes_add(&d, gid_index);
	ibv_destroy_qp(d.qp);
	ibv_destroy_cq(d.cq);
	ibv_dereg_mr(d.src);
	ibv_dealloc_pd(d.pd);
	close(d.buf_fd);
	close(d.db_fd);
	close(d.x.fd);
}

/* ---- the client: the target, in host memory ------------------------------- */

static void client(int sock, struct ibv_context *ctx, int gid_index)
{
	struct wire me = {0}, peer;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	uint8_t *buf;

	mr = alloc_buffer(ctx, HOST_SIZE, &pd, &buf);
	if (!mr)
		die("host MR");
	qp = xpu_target_qp(ctx, pd);
	me.qpn = qp->qp_num;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	local_gid(ctx, gid_index, me.gid);
	xfer(sock, &me, &peer, sizeof(me));
	if (!peer.ok) {
		printf("rhinet-xpu-dev client: the server has no device "
		       "mode\n");
		goto out;
	}
	rc_connect(qp, "QP", peer.qpn, peer.gid, gid_index, 4);
	sync_peer(sock);
	sync_peer(sock); /* the device posted */
	check(pattern_differs(buf, NWQE * WLEN, 7) < 0,
	      "the device's WRITEs arrived");
	check(buf[NWQE * WLEN] == 0, "nothing written past them");
	sync_peer(sock);
out:
	xpu_target_qp_destroy(qp);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *server_name;
	int gid_index = 1, port = 18521, sock, p2p;
	struct ibv_context *ctx;

	program = "rhinet-xpu-dev";
	setvbuf(stdout, NULL, _IOLBF, 0);
	server_name = peer_args(argc, argv, &dev, &gid_index, &port);
	p2p = xpu_expect_p2p();
	if (p2p < 0)
		return 2;
	ctx = open_device(dev);
	sock = tcp_connect(server_name, port);
	if (server_name)
		client(sock, ctx, gid_index);
	else
		server(sock, ctx, dev, gid_index, p2p);
	close(sock);
	ibv_close_device(ctx);
	printf("%s %s: %d checks, %d failed\n", program, role, checks,
	       failures);
	return failures ? 1 : 0;
}
