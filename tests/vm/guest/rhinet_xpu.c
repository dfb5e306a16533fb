// SPDX-License-Identifier: BSD-2-Clause
/*
 * Another device's memory through standard verbs, with our own exporter:
 * the server exports a dma-buf over part of its xpu's memory (kernel/xpu,
 * XPU_IOC_EXPORT_DMABUF) and registers it with ibv_reg_dmabuf_mr; the
 * client, on the other node, RDMA-WRITEs into it and READs from it out of
 * host memory. The server checks what arrived through its mapping of the
 * xpu's memory and has an xpu lane copy it within that memory (a program
 * of the device's own); the client READs the copy back. The xpu's bus
 * counters then show the NIC's peer-to-peer reads and writes of its
 * memory, and no access of host RAM by the xpu.
 *
 * The server also checks what may move: a movable export (like VRAM that
 * must stay evictable) is refused by ibv_reg_dmabuf_mr, whose MR pins,
 * with EOPNOTSUPP, and its descriptor stays usable; a pinned export does
 * not move (EBUSY) while an MR holds it, and does once the MR is gone.
 *
 * On a kernel without CONFIG_PCI_P2PDMA the export is refused with
 * EOPNOTSUPP, which the server checks; both sides then stop there.
 * XPU_EXPECT=p2p (or none) in the environment says which the kernel
 * must do.
 *
 * XPU_EXPECT=unreachable: alone, no peer; the node's NIC cannot reach its
 * xpu by peer-to-peer DMA (run-cluster --xpu apart), so registering a
 * dma-buf of the xpu's memory must fail with EREMOTEIO and leave no MR.
 *
 *   rhinet-xpu [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER]
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
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_guest.h"
#include "xpu_guest.h"
#include "xpu/xpu-abi.h"
#include "xpu/xpu.h"

#define EXP_OFF (1u << 20) /* the dma-buf: [1 MiB, 1 MiB + EXP_LEN) */
#define EXP_LEN (256u << 10)
#define EXP_IOVA 0x7700000000ull /* its iova, unrelated to any address */
/* Offsets in the dma-buf */
#define W_OFF 100u /* the client's WRITE lands here */
#define W_LEN 6000u
#define R_OFF 40960u /* the client READs from here */
#define R_LEN 7000u
#define C_OFF 81920u /* the lane copies the WRITE's bytes here */
#define FLAG_OFF 131072u /* and then stores XPU_FLAG here */
#define XPU_FLAG 0x600dull
#define PROG_OFF 0x1000u /* the lane program, below the dma-buf */
#define HOST_SIZE (64u << 10)

struct wire {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr; /* the server's iova of the dma-buf; the client's 0 */
	uint8_t gid[16];
	uint32_t p2p; /* the server registered its dma-buf */
	uint32_t pad;
};

static struct ibv_cq *cq;

static int wait_one(const char *what)
{
	double end = now() + 30;
	struct ibv_wc wc;
	int r = 0;

	while (!r && now() < end) {
		r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			die("ibv_poll_cq");
	}
	check(r == 1, "%s: no completion in 30 s", what);
	return r == 1 ? (int)wc.status : -1;
}

static void rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, void *laddr,
		 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len,
		 const char *what)
{
	int ret, st;

	ret = post_rdma(qp, op, 1, (uintptr_t)laddr, lkey, raddr, rkey, len);
	check(!ret, "%s: ibv_post_send: %s", what, strerror(ret));
	if (ret)
		return;
	st = wait_one(what);
	check(st == IBV_WC_SUCCESS, "%s: completion %s", what,
	      st < 0 ? "missing" : ibv_wc_status_str(st));
}

static struct ibv_qp *make_qp(struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 8,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;

	cq = ibv_create_cq(pd->context, 16, NULL, NULL, 0);
	a.send_cq = a.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &a) : NULL;
	if (!qp)
		die("CQ/QP");
	return qp;
}

/* ---- the server: the xpu's side ------------------------------------------ */

/* As enum xpu_counter orders them. */
static const char *const counter_names[XPU_CNT_NUM] = {
	"HOST_RD_BYTES", "HOST_RD_COUNT", "HOST_WR_BYTES", "HOST_WR_COUNT",
	"P2P_RD_BYTES",	 "P2P_RD_COUNT",  "P2P_WR_BYTES",  "P2P_WR_COUNT",
	"IN_RD_BYTES",	 "IN_RD_COUNT",	  "IN_WR_BYTES",   "IN_WR_COUNT",
	"CMDS",		 "FAULTS",	  "WINDOW_FAULTS",
};

static int xpu_export_flags(struct xpu *x, uint64_t off, uint64_t len,
			    uint32_t flags)
{
	struct xpu_export e = {.offset = off,
			       .length = len,
			       .flags = O_CLOEXEC | O_RDWR | flags};

	if (ioctl(x->fd, XPU_IOC_EXPORT_DMABUF, &e))
		return -errno;
	return e.fd;
}

static int xpu_export_range(struct xpu *x, uint64_t off, uint64_t len)
{
	return xpu_export_flags(x, off, len, 0);
}

/* Moves dma-buf @fd as an eviction would; 0 or errno. */
static int xpu_move(struct xpu *x, int fd, uint32_t rsvd)
{
	struct xpu_move m = {.fd = fd, .rsvd = rsvd};

	return ioctl(x->fd, XPU_IOC_MOVE_DMABUF, &m) ? errno : 0;
}

static void xpu_counters(struct xpu *x, struct xpu_counters *c)
{
	if (ioctl(x->fd, XPU_IOC_COUNTERS, c))
		die("XPU_IOC_COUNTERS");
}

static void put_cmd(struct xpu *x, uint32_t slot, uint8_t op, uint32_t len,
		    uint64_t a, uint64_t b, uint64_t imm)
{
	struct xpu_cmd c = {.op = op, .len = len, .a = a, .b = b, .imm = imm};

	memcpy((void *)(x->mem + PROG_OFF + slot * XPU_CMD_SIZE), &c,
	       sizeof(c));
}

/* The lane copies the WRITE's bytes within the memory, then sets a flag. */
static void lane_copy(struct xpu *x)
{
	struct xpu_lane_run run = {.lane = 0,
				   .flags = XPU_RUN_WAIT,
				   .pc = PROG_OFF,
				   .timeout_ms = 10000};

	put_cmd(x, 0, XPU_OP_COPY, W_LEN, EXP_OFF + C_OFF, EXP_OFF + W_OFF, 0);
	put_cmd(x, 1, XPU_OP_STORE, 0, EXP_OFF + FLAG_OFF, 0, XPU_FLAG);
	put_cmd(x, 2, XPU_OP_STOP, 0, 0, 0, 0);
	check(!ioctl(x->fd, XPU_IOC_LANE_RUN, &run), "XPU_IOC_LANE_RUN: %s",
	      strerror(errno));
	check(run.status == XPU_LANE_DONE && run.executed == 3,
	      "lane 0: status %u, error %u, %" PRIu64 " commands", run.status,
	      run.error, (uint64_t)run.executed);
	check(pattern_differs(x->mem + EXP_OFF + C_OFF, W_LEN, 1) < 0,
	      "the lane's copy of the WRITE's bytes");
	check(*(volatile uint64_t *)(x->mem + EXP_OFF + FLAG_OFF) == XPU_FLAG,
	      "the lane's flag");
}

static int lane_run(struct xpu *x, struct xpu_lane_run *run)
{
	return ioctl(x->fd, XPU_IOC_LANE_RUN, run) ? errno : 0;
}

/* The driver's lane calls: refusals, a fault, a wait that runs out. */
static void lane_checks(struct xpu *x)
{
	volatile uint64_t *word =
		(volatile uint64_t *)(x->mem + PROG_OFF + 0x100);
	struct xpu_lane_run run = {.lane = x->info.lanes, .pc = PROG_OFF};
	int r;

	r = lane_run(x, &run);
	check(r == EINVAL, "a lane past the device's: %s", strerror(r));
	run = (struct xpu_lane_run){.pc = PROG_OFF + 8};
	r = lane_run(x, &run);
	check(r == EINVAL, "an unaligned PC: %s", strerror(r));
	run = (struct xpu_lane_run){.pc = PROG_OFF, .flags = 1u << 7};
	r = lane_run(x, &run);
	check(r == EINVAL, "an unknown flag: %s", strerror(r));

	put_cmd(x, 0, 99, 0, 0, 0, 0);
	run = (struct xpu_lane_run){.pc = PROG_OFF, .flags = XPU_RUN_WAIT};
	r = lane_run(x, &run);
	check(!r && run.status == XPU_LANE_FAULT && run.error == XPU_ERR_OPCODE,
	      "an unknown opcode: %s, status %u, error %u", strerror(r),
	      run.status, run.error);

	/* POLL for a value nobody stores: the wait runs out, the lane stops. */
	*word = 0;
	put_cmd(x, 0, XPU_OP_POLL, 0, PROG_OFF + 0x100, 0, 1);
	put_cmd(x, 1, XPU_OP_STOP, 0, 0, 0, 0);
	run = (struct xpu_lane_run){.lane = 1,
				    .pc = PROG_OFF,
				    .flags = XPU_RUN_WAIT,
				    .timeout_ms = 50};
	r = lane_run(x, &run);
	check(r == ETIMEDOUT && run.status == XPU_LANE_IDLE,
	      "a wait that runs out: %s, status %u (aborted)", strerror(r),
	      run.status);
	/* Started without waiting: EBUSY while it runs. */
	run = (struct xpu_lane_run){.lane = 1, .pc = PROG_OFF};
	r = lane_run(x, &run);
	check(!r && run.status == XPU_LANE_RUNNING, "started: %s, status %u",
	      strerror(r), run.status);
	r = lane_run(x, &run);
	check(r == EBUSY, "the running lane again: %s", strerror(r));
	/* The value arrives: it ends; run again (EBUSY until then), waiting. */
	*word = 1;
	run.flags = XPU_RUN_WAIT;
	for (int i = 0; i < 1000 && (r = lane_run(x, &run)) == EBUSY; i++)
		usleep(1000);
	check(!r && run.status == XPU_LANE_DONE && run.executed == 2,
	      "the POLL ended when the value came: %s, status %u", strerror(r),
	      run.status);
}

static void refusals(struct xpu *x)
{
	int r;

	r = xpu_export_range(x, 100, 4096);
	check(r == -EINVAL, "export at an unaligned offset: %d", r);
	r = xpu_export_range(x, x->info.mem_size - 4096, 8192);
	check(r == -EINVAL, "export past the end: %d", r);
	r = xpu_export_range(x, 0, 0);
	check(r == -EINVAL, "empty export: %d", r);
	r = xpu_export_flags(x, 0, 4096, 1u << 30);
	check(r == -EINVAL, "export with an unknown flag: %d", r);
}

#define MOVE_OFF (2u << 20) /* the dma-bufs that move, or do not */
#define MOVE_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

/*
 * A movable dma-buf cannot be pinned, so not registered: the MR's pin is
 * refused with the exporter's errno, nothing is left attached (it moves,
 * pinned by none) and the descriptor still works. A pinned one does not
 * move while an MR holds it.
 */
static void moves(struct xpu *x, struct ibv_pd *pd)
{
	struct ibv_mr *mr;
	int fd, r;

	fd = xpu_export_flags(x, MOVE_OFF, EXP_LEN, XPU_EXPORT_MOVABLE);
	check(fd >= 0, "movable export: %s", strerror(-fd));
	if (fd >= 0) {
		errno = 0;
		mr = ibv_reg_dmabuf_mr(pd, 0, EXP_LEN, EXP_IOVA, fd,
				       MOVE_ACCESS);
		check(!mr && errno == EOPNOTSUPP,
		      "a movable dma-buf as an MR: %s, errno %d (%s)",
		      mr ? "registered" : "refused", errno, strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		check(lseek(fd, 0, SEEK_END) == EXP_LEN,
		      "the movable dma-buf's size after the refusal");
		r = xpu_move(x, fd, 0);
		check(!r, "the movable dma-buf moves: %s", strerror(r));
		close(fd);
	}

	fd = xpu_export_range(x, MOVE_OFF, EXP_LEN);
	check(fd >= 0, "pinned export: %s", strerror(-fd));
	if (fd < 0)
		return;
	mr = ibv_reg_dmabuf_mr(pd, 0, EXP_LEN, EXP_IOVA, fd, MOVE_ACCESS);
	check(mr, "the pinned export as an MR: %s", strerror(errno));
	r = xpu_move(x, fd, 0);
	check(r == (mr ? EBUSY : 0), "moving it while the MR pins it: %s",
	      strerror(r));
	if (mr)
		check(!ibv_dereg_mr(mr), "dereg the pinned export's MR");
	r = xpu_move(x, fd, 0);
	check(!r, "moving it once the MR is gone: %s", strerror(r));
	r = xpu_move(x, fd, 1);
	check(r == EINVAL, "a move with a reserved field: %s", strerror(r));
	r = xpu_move(x, x->fd, 0);
	check(r == EINVAL, "moving what is no dma-buf: %s", strerror(r));
	r = xpu_move(x, -1, 0);
	check(r == EBADF, "moving no descriptor: %s", strerror(r));
	close(fd);
}

static void server(int sock, struct ibv_context *ctx, int gid_index,
		   bool expect_p2p)
{
	struct xpu_counters c0, c1;
	struct wire me = {0}, peer;
	struct ibv_mr *mr = NULL;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	struct xpu x;
	int fd;

	xpu_open(&x);
	check(!!(x.info.flags & XPU_INFO_P2PDMA) == expect_p2p,
	      "P2PDMA %s, expected %s",
	      x.info.flags & XPU_INFO_P2PDMA ? "on" : "off",
	      expect_p2p ? "on" : "off");
	lane_checks(&x);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	qp = make_qp(pd);
	fd = xpu_export_range(&x, EXP_OFF, EXP_LEN);
	if (!(x.info.flags & XPU_INFO_P2PDMA)) {
		check(fd == -EOPNOTSUPP, "export without P2PDMA: %d, want %d",
		      fd, -EOPNOTSUPP);
		fd = xpu_export_flags(&x, EXP_OFF, EXP_LEN, XPU_EXPORT_MOVABLE);
		check(fd == -EOPNOTSUPP, "movable export without P2PDMA: %d",
		      fd);
	} else {
		check(fd >= 0, "export: %s", strerror(-fd));
		refusals(&x);
		moves(&x, pd);
	}
	if (fd >= 0) {
		mr = ibv_reg_dmabuf_mr(pd, 0, EXP_LEN, EXP_IOVA, fd,
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ);
		check(mr, "ibv_reg_dmabuf_mr of the xpu's dma-buf: %s",
		      strerror(errno));
		/* The MR holds the dma-buf; the descriptor can go. */
		close(fd);
	}
	memset((void *)(x.mem + EXP_OFF), 0, EXP_LEN);
	pattern_fill(x.mem + EXP_OFF + R_OFF, R_LEN, 2);
	if (ioctl(x.fd, XPU_IOC_CLEAR_COUNTERS))
		die("XPU_IOC_CLEAR_COUNTERS");

	me.qpn = qp->qp_num;
	me.rkey = mr ? mr->rkey : 0;
	me.addr = EXP_IOVA;
	me.p2p = !!mr;
	local_gid(ctx, gid_index, me.gid);
	xfer(sock, &me, &peer, sizeof(me));
	rc_connect(qp, "QP", peer.qpn, peer.gid, gid_index, 4);
	sync_peer(sock); /* both connected */
	if (!mr)
		goto out;

	sync_peer(sock); /* the client WROTE and READ */
	check(pattern_differs(x.mem + EXP_OFF + W_OFF, W_LEN, 1) < 0,
	      "the WRITE's bytes in the xpu's memory");
	check(x.mem[EXP_OFF + W_OFF - 1] == 0 &&
		      x.mem[EXP_OFF + W_OFF + W_LEN] == 0,
	      "nothing written around the WRITE");
	xpu_counters(&x, &c0);
	lane_copy(&x);
	sync_peer(sock); /* the copy is there */
	sync_peer(sock); /* the client READ it */
	xpu_counters(&x, &c1);
	for (int i = 0; i < XPU_CNT_NUM; i++)
		printf("rhinet-xpu server: %-14s %" PRIu64 "\n",
		       counter_names[i], (uint64_t)c1.count[i]);
	check(c0.count[XPU_CNT_IN_WR_BYTES] >= W_LEN &&
		      c0.count[XPU_CNT_IN_WR_COUNT] >= 1,
	      "the NIC's p2p writes counted: %" PRIu64 " bytes",
	      (uint64_t)c0.count[XPU_CNT_IN_WR_BYTES]);
	check(c0.count[XPU_CNT_IN_RD_BYTES] >= R_LEN,
	      "the NIC's p2p reads counted: %" PRIu64 " bytes",
	      (uint64_t)c0.count[XPU_CNT_IN_RD_BYTES]);
	check(c1.count[XPU_CNT_IN_RD_BYTES] >=
		      c0.count[XPU_CNT_IN_RD_BYTES] + W_LEN,
	      "the READ of the copy counted: %" PRIu64 " bytes in all",
	      (uint64_t)c1.count[XPU_CNT_IN_RD_BYTES]);
	check(c1.count[XPU_CNT_HOST_RD_COUNT] == 0 &&
		      c1.count[XPU_CNT_HOST_WR_COUNT] == 0,
	      "the xpu touched no host RAM");
	check(c1.count[XPU_CNT_P2P_RD_COUNT] == 0 &&
		      c1.count[XPU_CNT_P2P_WR_COUNT] == 0 &&
		      c1.count[XPU_CNT_CMDS] == 3 &&
		      c1.count[XPU_CNT_FAULTS] == 0,
	      "the lane ran 3 commands within its memory");
	check(!ibv_dereg_mr(mr), "dereg the dma-buf MR");
out:
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	munmap((void *)x.mem, x.info.mem_size);
	close(x.fd);
}

/* The NIC cannot reach the xpu: the registration is refused. */
static void unreachable(struct ibv_context *ctx)
{
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct xpu x;
	int fd;

	xpu_open(&x);
	check(x.info.flags & XPU_INFO_P2PDMA, "P2PDMA on");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	fd = xpu_export_range(&x, EXP_OFF, EXP_LEN);
	check(fd >= 0, "export: %s", strerror(-fd));
	if (fd >= 0) {
		errno = 0;
		mr = ibv_reg_dmabuf_mr(pd, 0, EXP_LEN, EXP_IOVA, fd,
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE);
		check(!mr && errno == EREMOTEIO,
		      "a NIC that cannot reach the xpu: %s, errno %d (%s)",
		      mr ? "registered" : "refused", errno, strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		close(fd);
	}
	ibv_dealloc_pd(pd);
	munmap((void *)x.mem, x.info.mem_size);
	close(x.fd);
}

/* ---- the client: the peer, from host memory ------------------------------- */

static void client(int sock, struct ibv_context *ctx, int gid_index)
{
	struct wire me = {0}, peer;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	uint8_t *buf;

	mr = alloc_buffer(ctx, HOST_SIZE, &pd, &buf);
	if (!mr)
		die("host MR");
	qp = make_qp(pd);
	me.qpn = qp->qp_num;
	local_gid(ctx, gid_index, me.gid);
	xfer(sock, &me, &peer, sizeof(me));
	rc_connect(qp, "QP", peer.qpn, peer.gid, gid_index, 4);
	sync_peer(sock);
	if (!peer.p2p) {
		printf("rhinet-xpu client: no dma-buf MR on the server\n");
		goto out;
	}
	pattern_fill(buf, W_LEN, 1);
	rdma(qp, IBV_WR_RDMA_WRITE, buf, mr->lkey, peer.addr + W_OFF, peer.rkey,
	     W_LEN, "WRITE into the xpu");
	rdma(qp, IBV_WR_RDMA_READ, buf + 16384, mr->lkey, peer.addr + R_OFF,
	     peer.rkey, R_LEN, "READ from the xpu");
	check(pattern_differs(buf + 16384, R_LEN, 2) < 0, "the READ's bytes");
	sync_peer(sock);
	sync_peer(sock); /* the lane's copy is there */
	memset(buf + 32768, 0, W_LEN);
	rdma(qp, IBV_WR_RDMA_READ, buf + 32768, mr->lkey, peer.addr + C_OFF,
	     peer.rkey, W_LEN, "READ of the lane's copy");
	check(pattern_differs(buf + 32768, W_LEN, 1) < 0,
	      "the lane's copy, READ");
	sync_peer(sock);
out:
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *server_addr, *expect;
	int gid_index = 0, port = 18700, sock;
	struct ibv_context *ctx;

	program = "rhinet-xpu";
	setvbuf(stdout, NULL, _IOLBF, 0);
	server_addr = peer_args(argc, argv, &dev, &gid_index, &port);
	expect = getenv("XPU_EXPECT");
	if (!server_addr &&
	    (!expect || (strcmp(expect, "p2p") && strcmp(expect, "none") &&
			 strcmp(expect, "unreachable")))) {
		fprintf(stderr,
			"rhinet-xpu: XPU_EXPECT=p2p, none or unreachable\n");
		return 2;
	}
	ctx = open_device(dev);
	if (!server_addr && !strcmp(expect, "unreachable")) {
		role = "alone";
		unreachable(ctx);
		goto out;
	}
	sock = tcp_connect(server_addr, port);
	if (server_addr)
		client(sock, ctx, gid_index);
	else
		server(sock, ctx, gid_index, !strcmp(expect, "p2p"));
	close(sock);
out:
	ibv_close_device(ctx);
	printf("rhinet-xpu %s: %s (%d checks, %d failed)\n", role,
	       failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
