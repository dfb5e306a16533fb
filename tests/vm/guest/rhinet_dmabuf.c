// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory of another device through standard verbs: a dma-buf that vgem
 * exports (a dumb buffer of the vgem DRM device, DRM_IOCTL_PRIME_HANDLE_TO_FD)
 * registered with ibv_reg_dmabuf_mr, between two RC QPs of one node
 * connected to each other through the NIC:
 *
 *  - the dma-buf MR as the target of the peer QP's RDMA WRITE and source of
 *    its RDMA READ, and as the local lkey of a WRITE and a READ, every byte
 *    checked through the process's mmap of the dma-buf;
 *  - rereg to a new translation refused (by libibverbs, and by the driver
 *    to a raw uverbs command), rights changed in place, the MR working;
 *  - an MR over part of the dma-buf (an offset into it, an iova unrelated
 *    to any address), written through its rkey;
 *  - refusals: a descriptor that is no dma-buf (EINVAL), one that is not
 *    open (EBADF), a range past the dma-buf's end (EINVAL), an empty one;
 *    none leaves an attachment behind;
 *  - the dma-buf's descriptor, GEM handle and mapping all closed while the
 *    MR is registered: the MR keeps the buffer alive and working (a WRITE
 *    and a READ through it), and deregistering it frees the buffer;
 *  - the MR deregistered while a WRITE into it is queued: the WRITE either
 *    lands first or fails with a remote access error, nothing else.
 *  - queues in a dma-buf (rhinetdv_create_qp/cq), and a multi-producer
 *    QP there, its 16-byte SQ record written by the library and the NIC.
 * The dma-bufs alive and the devices attached to them are counted in
 * debugfs (dma_buf/bufinfo), so a leaked pin or reference fails the test.
 *
 *   rhinet-dmabuf [-d DEVICE] [-g GID_INDEX]
 *
 * Exits 0 only if every check passed; 2 if there is no vgem device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include <infiniband/rhinetdv.h>
#include <rhinet/hw_queues.h>

#include "verbs_guest.h"
#include "vgem.h"

#define HOST_SIZE (512u << 10)
#define BIG_ROWS 64u /* the main dma-buf: 256 KiB */
#define SMALL_ROWS 16u /* the one whose descriptor is closed: 64 KiB */
/* Offsets in the main dma-buf (and the same in the host buffer). */
#define W_OFF 100u /* the peer's WRITE lands here */
#define W_LEN 5000u
#define R_OFF 20480u /* the peer READs from here */
#define R_LEN 7000u
#define LW_OFF 40960u /* the dma-buf's own WRITE reads from here */
#define LW_LEN 4096u
#define LR_OFF 61440u /* the dma-buf's own READ lands here */
#define LR_LEN 9000u
/* The MR over part of it: [SUB_OFF, SUB_OFF + SUB_LEN) from SUB_IOVA. */
#define SUB_OFF 81920u
#define SUB_LEN 10000u
#define SUB_IOVA 0x100000000ull
#define SUB_W 500u
#define SUB_W_LEN 3000u

static const int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ;

/* ---- vgem ---------------------------------------------------------------- */

struct dbuf {
	uint32_t handle; /* GEM handle, 0 once closed */
	int fd; /* the dma-buf, -1 once closed */
	size_t size;
	volatile uint8_t *map; /* its mmap, NULL once unmapped */
};

/* A dumb buffer of @rows rows, exported as a dma-buf and mapped. */
static void dbuf_create(int card, uint32_t rows, struct dbuf *b)
{
	void *map;

	b->fd = vgem_dmabuf(card, rows, &b->handle, &b->size);
	if (b->fd < 0)
		die("vgem dumb buffer as a dma-buf");
	map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (map == MAP_FAILED)
		die("mmap of the dma-buf");
	b->map = map;
	memset(map, 0, b->size);
}

static void dbuf_close_handle(int card, struct dbuf *b)
{
	check(!vgem_close_handle(card, b->handle), "GEM_CLOSE: %s",
	      strerror(errno));
	b->handle = 0;
}

/*
 * From debugfs' dma_buf/bufinfo: the dma-bufs alive (@objects) and the
 * devices attached to them, all added up (@attached). False if it cannot
 * be read.
 */
static bool bufinfo(int *objects, int *attached)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	char line[512];
	int n;

	*objects = -1;
	*attached = 0;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Total %d", &n) != 1)
			continue;
		if (strstr(line, " devices attached"))
			*attached += n;
		else if (strstr(line, " objects"))
			*objects = n;
	}
	fclose(f);
	return *objects >= 0;
}

/* ---- verbs ---------------------------------------------------------------- */

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *host_mr;
	uint8_t *host;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2]; /* 0 uses host memory, 1 the dma-buf's */
	int gid_index;
};

/* Waits for one completion of qp[@q] (or 30 s); its status, or -1. */
static int wait_one(struct node *n, int q, uint64_t wr_id, const char *what)
{
	double end = now() + 30;
	struct ibv_wc wc;
	int r = 0;

	while (!r && now() < end) {
		r = ibv_poll_cq(n->cq[q], 1, &wc);
		if (r < 0)
			die("ibv_poll_cq");
	}
	check(r == 1, "%s: no completion in 30 s", what);
	if (r != 1)
		return -1;
	check(wc.wr_id == wr_id, "%s: wr_id %" PRIu64, what, wc.wr_id);
	return wc.status;
}

/*
 * Posts one RDMA WRITE or READ on qp[@q] (local @laddr with @lkey, remote
 * @raddr with @rkey); with @wait, waits for it and checks it succeeded.
 */
static bool rdma(struct node *n, int q, enum ibv_wr_opcode op, uint64_t laddr,
		 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t len,
		 bool wait, const char *what)
{
	int ret, st;

	ret = post_rdma(n->qp[q], op, 7, laddr, lkey, raddr, rkey, len);
	check(!ret, "%s: ibv_post_send: %s", what, strerror(ret));
	if (ret || !wait)
		return !ret;
	st = wait_one(n, q, 7, what);
	check(st == IBV_WC_SUCCESS, "%s: completion %s", what,
	      st < 0 ? "missing" : ibv_wc_status_str(st));
	return st == IBV_WC_SUCCESS;
}

static void connect_pair(struct node *n)
{
	uint8_t gid[16];

	local_gid(n->ctx, n->gid_index, gid);
	for (int q = 0; q < 2; q++) {
		struct ibv_qp_init_attr a = {
			.send_cq = n->cq[q],
			.recv_cq = n->cq[q],
			.cap = {.max_send_wr = 16,
				.max_recv_wr = 1,
				.max_send_sge = 1,
				.max_recv_sge = 1},
			.qp_type = IBV_QPT_RC,
		};

		n->cq[q] = ibv_create_cq(n->ctx, 32, NULL, NULL, 0);
		a.send_cq = a.recv_cq = n->cq[q];
		n->qp[q] = n->cq[q] ? ibv_create_qp(n->pd, &a) : NULL;
		if (!n->qp[q])
			die("CQ/QP");
	}
	rc_connect(n->qp[0], "QP 0", n->qp[1]->qp_num, gid, n->gid_index, 4);
	rc_connect(n->qp[1], "QP 1", n->qp[0]->qp_num, gid, n->gid_index, 4);
}

/* ---- the cases ------------------------------------------------------------ */

/* What a refused registration must leave: no MR, errno @want, no
 * attachment more than before.
 */
/* A call that must have failed with errno @want; @made: it did not. */
static void refused_as(bool made, int want, const char *what)
{
	check(!made && errno == want, "%s: %s, errno %d (%s), want %s", what,
	      made ? "done" : "refused", errno, strerror(errno),
	      strerror(want));
}

/* The dma-bufs and attachments are as @obj0 and @att0 counted them. */
static void bufs_as_before(int obj0, int att0, const char *what)
{
	int obj1, att1;

	bufinfo(&obj1, &att1);
	check(obj1 == obj0 && att1 == att0,
	      "%s: dma-bufs %d -> %d, attachments %d -> %d", what, obj0, obj1,
	      att0, att1);
}

static void refused(struct node *n, uint64_t off, size_t len, int fd, int want,
		    const char *what)
{
	int obj0, att0;
	struct ibv_mr *mr;

	bufinfo(&obj0, &att0);
	errno = 0;
	mr = ibv_reg_dmabuf_mr(n->pd, off, len, off, fd, kAllAccess);
	refused_as(mr, want, what);
	if (mr)
		ibv_dereg_mr(mr);
	bufs_as_before(obj0, att0, what);
}

static void refusals(struct node *n, const struct dbuf *b)
{
	int pipefd[2];

	if (pipe(pipefd))
		die("pipe");
	refused(n, 0, 4096, pipefd[0], EINVAL, "a pipe");
	close(pipefd[0]);
	close(pipefd[1]);
	refused(n, 0, 4096, pipefd[0], EBADF, "a closed descriptor");
	refused(n, 0, 4096, -1, EBADF, "descriptor -1");
	refused(n, b->size - 4096, 8192, b->fd, EINVAL, "past the end");
	refused(n, b->size, 4096, b->fd, EINVAL, "starting at the end");
	refused(n, 0, b->size + 1, b->fd, EINVAL, "one byte too long");
	refused(n, 0, 0, b->fd, EINVAL, "empty");
}

/*
 * Rereg as a raw uverbs write (IB_USER_VERBS_CMD_REREG_MR): libibverbs 44
 * refuses to rereg a dma-buf MR itself, this reaches the driver. 0 or the
 * driver's errno.
 */
static int raw_rereg(struct ibv_mr *mr, uint32_t flags, void *addr, size_t len,
		     int access)
{
	struct ib_uverbs_cmd_hdr hdr = {
		.command = IB_USER_VERBS_CMD_REREG_MR,
		.in_words =
			(sizeof(hdr) + sizeof(struct ib_uverbs_rereg_mr)) / 4,
		.out_words = sizeof(struct ib_uverbs_rereg_mr_resp) / 4};
	struct ib_uverbs_rereg_mr_resp resp;
	struct ib_uverbs_rereg_mr cmd = {.response = (uintptr_t)&resp,
					 .mr_handle = mr->handle,
					 .flags = flags,
					 .start = (uintptr_t)addr,
					 .length = len,
					 .hca_va = (uintptr_t)addr,
					 .access_flags = access};
	uint8_t buf[sizeof(hdr) + sizeof(cmd)];

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), &cmd, sizeof(cmd));
	if (write(mr->context->cmd_fd, buf, sizeof(buf)) == sizeof(buf))
		return 0;
	return errno;
}

/* The main dma-buf @b as remote and local memory of RDMA WRITE and READ. */
static void data_path(struct node *n, struct dbuf *b)
{
	uintptr_t map = (uintptr_t)b->map, host = (uintptr_t)n->host;
	uint32_t hkey = n->host_mr->lkey;
	struct ibv_mr *mr, *sub;
	long bad;
	int ret;

	/* Addressed by the mapping's addresses: spans of it are SGEs. */
	mr = ibv_reg_dmabuf_mr(n->pd, 0, b->size, map, b->fd, kAllAccess);
	check(mr, "ibv_reg_dmabuf_mr of %zu bytes: %s", b->size,
	      strerror(errno));
	if (!mr)
		return;
	check(mr->length == b->size && mr->addr == NULL && mr->lkey && mr->rkey,
	      "MR fields: length %zu addr %p", mr->length, mr->addr);

	/* The peer's WRITE into it, its READ from it. */
	pattern_fill(n->host + W_OFF, W_LEN, 1);
	if (rdma(n, 0, IBV_WR_RDMA_WRITE, host + W_OFF, hkey, map + W_OFF,
		 mr->rkey, W_LEN, true, "WRITE into the dma-buf")) {
		bad = pattern_differs(b->map + W_OFF, W_LEN, 1);
		check(bad < 0, "WRITE into the dma-buf: byte %ld differs", bad);
		check(b->map[W_OFF - 1] == 0 && b->map[W_OFF + W_LEN] == 0,
		      "WRITE into the dma-buf: bytes around it changed");
	}
	pattern_fill(b->map + R_OFF, R_LEN, 2);
	if (rdma(n, 0, IBV_WR_RDMA_READ, host + R_OFF, hkey, map + R_OFF,
		 mr->rkey, R_LEN, true, "READ from the dma-buf")) {
		bad = pattern_differs(n->host + R_OFF, R_LEN, 2);
		check(bad < 0, "READ from the dma-buf: byte %ld differs", bad);
	}
	/* Its own lkey: the source of a WRITE, the target of a READ. */
	pattern_fill(b->map + LW_OFF, LW_LEN, 3);
	if (rdma(n, 1, IBV_WR_RDMA_WRITE, map + LW_OFF, mr->lkey, host + LW_OFF,
		 n->host_mr->rkey, LW_LEN, true, "WRITE from the dma-buf")) {
		bad = pattern_differs(n->host + LW_OFF, LW_LEN, 3);
		check(bad < 0, "WRITE from the dma-buf: byte %ld differs", bad);
	}
	pattern_fill(n->host + LR_OFF, LR_LEN, 4);
	if (rdma(n, 1, IBV_WR_RDMA_READ, map + LR_OFF, mr->lkey, host + LR_OFF,
		 n->host_mr->rkey, LR_LEN, true, "READ into the dma-buf")) {
		bad = pattern_differs(b->map + LR_OFF, LR_LEN, 4);
		check(bad < 0, "READ into the dma-buf: byte %ld differs", bad);
	}

	/* No new translation for it (there is no process memory to pin);
	 * the MR stays as it was.
	 */
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, n->host,
			   4096, 0);
	check(ret != 0 && (errno == EINVAL || errno == EOPNOTSUPP),
	      "ibv_rereg_mr of the dma-buf MR to host memory: %d, errno %d "
	      "(%s)",
	      ret, errno, strerror(errno));
	ret = raw_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, n->host, 4096,
			kAllAccess);
	check(ret == EOPNOTSUPP, "raw rereg to host memory: %s, want %s",
	      strerror(ret), strerror(EOPNOTSUPP));
	/* Rights change in place: the keys stay. */
	ret = raw_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0, kAllAccess);
	check(!ret, "raw rereg of the rights in place: %s", strerror(ret));
	pattern_fill(n->host + W_OFF, W_LEN, 9);
	if (rdma(n, 0, IBV_WR_RDMA_WRITE, host + W_OFF, hkey, map + W_OFF,
		 mr->rkey, W_LEN, true, "WRITE after the refused rereg")) {
		bad = pattern_differs(b->map + W_OFF, W_LEN, 9);
		check(bad < 0,
		      "WRITE after the refused rereg: byte %ld differs", bad);
	}

	/* Part of it, from an offset, at an iova of its own. */
	sub = ibv_reg_dmabuf_mr(n->pd, SUB_OFF, SUB_LEN, SUB_IOVA, b->fd,
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);
	check(sub, "ibv_reg_dmabuf_mr at offset %u: %s", SUB_OFF,
	      strerror(errno));
	if (sub) {
		pattern_fill(n->host, SUB_W_LEN, 5);
		if (rdma(n, 0, IBV_WR_RDMA_WRITE, host, hkey, SUB_IOVA + SUB_W,
			 sub->rkey, SUB_W_LEN, true, "WRITE into the part")) {
			bad = pattern_differs(b->map + SUB_OFF + SUB_W,
					      SUB_W_LEN, 5);
			check(bad < 0, "WRITE into the part: byte %ld differs",
			      bad);
		}
		check(!ibv_dereg_mr(sub), "dereg the part's MR");
	}
	check(!ibv_dereg_mr(mr), "dereg the dma-buf MR");
}

/*
 * A dma-buf whose descriptor, GEM handle and mapping are all gone while
 * its MR lives: the MR holds it, and dereg frees it.
 */
static void closed_fd(struct node *n, int card)
{
	uintptr_t host = (uintptr_t)n->host;
	int obj0, att0, obj1, att1;
	struct dbuf b;
	struct ibv_mr *mr;
	long bad;

	bufinfo(&obj0, &att0);
	dbuf_create(card, SMALL_ROWS, &b);
	mr = ibv_reg_dmabuf_mr(n->pd, 0, b.size, 0, b.fd, kAllAccess);
	check(mr, "ibv_reg_dmabuf_mr (small): %s", strerror(errno));
	if (!mr)
		return;
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 + 1 && att1 == att0 + 1,
	      "registered: dma-bufs %d -> %d, attachments %d -> %d", obj0, obj1,
	      att0, att1);
	dbuf_close_handle(card, &b);
	check(!close(b.fd), "close the dma-buf descriptor");
	b.fd = -1;

	/* Still the same memory: the mapping sees what the NIC writes. */
	pattern_fill(n->host, 8192, 6);
	if (rdma(n, 0, IBV_WR_RDMA_WRITE, host, n->host_mr->lkey, 4096,
		 mr->rkey, 8192, true, "WRITE after close")) {
		bad = pattern_differs(b.map + 4096, 8192, 6);
		check(bad < 0, "WRITE after close: byte %ld differs", bad);
	}
	pattern_fill(b.map + 32768, 4096, 7);
	check(!munmap((void *)b.map, b.size), "munmap");
	b.map = NULL;
	memset(n->host, 0, 4096);
	if (rdma(n, 0, IBV_WR_RDMA_READ, host, n->host_mr->lkey, 32768,
		 mr->rkey, 4096, true, "READ after close and munmap")) {
		bad = pattern_differs(n->host, 4096, 7);
		check(bad < 0, "READ after close and munmap: byte %ld differs",
		      bad);
	}
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 + 1 && att1 == att0 + 1,
	      "all closed, MR held: dma-bufs %d -> %d, attachments %d -> %d",
	      obj0, obj1, att0, att1);
	check(!ibv_dereg_mr(mr), "dereg the small MR");
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 && att1 == att0,
	      "deregistered: dma-bufs %d -> %d, attachments %d -> %d (freed?)",
	      obj0, obj1, att0, att1);
}

/*
 * Dereg while a WRITE into the MR is queued on the peer QP: dereg
 * succeeds; the WRITE landed before or fails with a remote access error.
 * Last: an error leaves QP 0 in the error state.
 */
static void dereg_queued(struct node *n, struct dbuf *b)
{
	int obj0, att0, obj1, att1, st;
	struct ibv_mr *mr;

	bufinfo(&obj0, &att0);
	mr = ibv_reg_dmabuf_mr(n->pd, 0, b->size, 0, b->fd, kAllAccess);
	check(mr, "ibv_reg_dmabuf_mr (queued): %s", strerror(errno));
	if (!mr)
		return;
	pattern_fill(n->host, HOST_SIZE < b->size ? HOST_SIZE : b->size, 8);
	rdma(n, 0, IBV_WR_RDMA_WRITE, (uintptr_t)n->host, n->host_mr->lkey, 0,
	     mr->rkey, b->size, false, "queued WRITE");
	check(!ibv_dereg_mr(mr), "dereg under a queued WRITE");
	st = wait_one(n, 0, 7, "queued WRITE");
	check(st == IBV_WC_SUCCESS || st == IBV_WC_REM_ACCESS_ERR,
	      "queued WRITE: completion %s",
	      st < 0 ? "missing" : ibv_wc_status_str(st));
	printf("rhinet-dmabuf: the WRITE queued under dereg: %s\n",
	       st < 0 ? "missing" : ibv_wc_status_str(st));
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 && att1 == att0,
	      "after dereg: dma-bufs %d -> %d, attachments %d -> %d", obj0,
	      obj1, att0, att1);
}

/* ---- queues in a dma-buf --------------------------------------------------- */

#define QBUF_ROWS 64u /* 256 KiB: two CQs and two QPs */
#define Q_OPS 100u /* more than the rings hold: they wrap */
#define Q_LEN 256u /* bytes per operation */

/* Bytes [@off, @off + @len) of @b and its mapping, for rhinetdv. */
static struct rhinetdv_queue_buf qbuf(const struct dbuf *b, uint64_t off,
				      size_t len)
{
	return (struct rhinetdv_queue_buf){.dmabuf_fd = b->fd,
					   .offset = off,
					   .length = len,
					   .addr = (void *)(b->map + off)};
}

static struct ibv_cq *q_cq(struct node *n, const struct rhinetdv_queue_buf *qb)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 32};
	struct rhinetdv_cq_init_attr dv = {
		.comp_mask = RHINETDV_CQ_INIT_ATTR_BUF, .buf = *qb};
	struct ibv_cq_ex *cq = rhinetdv_create_cq(n->ctx, &a, &dv, sizeof(dv));

	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

/* The RC QPs in the dma-buf: 16 WRs each way, one SGE, completing on @cq. */
static struct ibv_qp_init_attr_ex q_attr(struct node *n, struct ibv_cq *cq)
{
	return (struct ibv_qp_init_attr_ex){
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = n->pd,
	};
}

static struct ibv_qp *q_qp(struct node *n, struct ibv_cq *cq,
			   const struct rhinetdv_queue_buf *qb)
{
	struct ibv_qp_init_attr_ex a = q_attr(n, cq);
	struct rhinetdv_qp_init_attr dv = {
		.comp_mask = RHINETDV_QP_INIT_ATTR_BUF, .buf = *qb};

	return rhinetdv_create_qp(n->ctx, &a, &dv, sizeof(dv));
}

/* A refused queue: NULL, errno @want, no attachment left behind. */
static void q_refused(struct node *n, struct ibv_cq *cq,
		      struct rhinetdv_queue_buf qb, int want, const char *what)
{
	struct ibv_qp *qp;
	struct ibv_cq *c;
	int obj0, att0;

	bufinfo(&obj0, &att0);
	errno = 0;
	qp = q_qp(n, cq, &qb);
	refused_as(qp, want, what);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	c = q_cq(n, &qb);
	refused_as(c, want, what);
	if (c)
		ibv_destroy_cq(c);
	bufs_as_before(obj0, att0, what);
}

/*
 * Two RC QPs and their CQs whose rings and records all lie in one vgem
 * dma-buf: SENDs and WRITEs between them, more than the rings hold, every
 * byte and every completion checked, and the CQEs and WQEs seen in the
 * dma-buf through its mapping (so the NIC fetched and wrote them there).
 * Then the refusals, and a QP destroyed with WRITEs queued on it.
 */
/* A plain QP's layout: the 8-byte records after both rings. */
static void plain_layout(struct ibv_qp *qp, size_t len)
{
	struct rhinetdv_qp_buf_layout lay = {0};
	uint8_t longer[sizeof(lay) + 16];

	memset(longer, 0xa5, sizeof(longer));
	check(!rhinetdv_query_qp_buf(qp, &lay, sizeof(lay)) && lay.flags == 0 &&
		      lay.sq_offset == 0 &&
		      lay.rq_offset ==
			      (uint64_t)lay.sq_slots * RHN_SQ_SLOT_SIZE &&
		      lay.sq_record_offset ==
			      lay.rq_offset +
				      (uint64_t)lay.rq_wqes * RHN_RQ_WQE_SIZE &&
		      lay.rq_record_offset ==
			      lay.sq_record_offset +
				      sizeof(struct rhn_queue_record) &&
		      lay.rq_record_offset + sizeof(struct rhn_queue_record) <=
			      len,
	      "QP layout: %u SQ slots, %u RQ WQEs, records at %" PRIu64
	      " and %" PRIu64 " of %zu bytes",
	      lay.sq_slots, lay.rq_wqes, lay.sq_record_offset,
	      lay.rq_record_offset, len);
	/* A caller built against a longer struct gets zeros past ours. */
	check(!rhinetdv_query_qp_buf(qp, (void *)longer, sizeof(longer)) &&
		      !memcmp(longer, &lay, sizeof(lay)) &&
		      longer[sizeof(lay)] == 0 &&
		      longer[sizeof(longer) - 1] == 0,
	      "a longer layout struct: ours, then zeros");
}

static void queues(struct node *n, int card)
{
	uintptr_t host = (uintptr_t)n->host;
	struct rhinetdv_queue_buf qb[4];
	size_t cq_len, qp_len, off = 0;
	struct ibv_qp_init_attr_ex qa = q_attr(n, NULL);
	int obj0, att0, obj1, att1, ret;
	struct ibv_cq *cq[2] = {0};
	struct ibv_qp *qp[2] = {0};
	const volatile struct rhn_cqe *cqe;
	uint8_t gid[16];
	unsigned int seen = 0;
	struct dbuf b;

	bufinfo(&obj0, &att0);
	dbuf_create(card, QBUF_ROWS, &b);
	check(!rhinetdv_cq_buf_len(n->ctx, 32, &cq_len) &&
		      !rhinetdv_qp_buf_len(n->ctx, &qa, &qp_len),
	      "queue buffer lengths");
	for (int i = 0; i < 4; i++) {
		size_t len = i < 2 ? cq_len : qp_len;

		qb[i] = qbuf(&b, off, len);
		off += (len + 4095) & ~(size_t)4095;
	}
	check(off <= b.size, "queues need %zu bytes of %zu", off, b.size);
	printf("rhinet-dmabuf: queues in a dma-buf: CQ %zu bytes, QP %zu "
	       "bytes\n",
	       cq_len, qp_len);
	for (int i = 0; i < 2; i++) {
		cq[i] = q_cq(n, &qb[i]);
		check(cq[i], "CQ %d in the dma-buf: %s", i, strerror(errno));
		qp[i] = cq[i] ? q_qp(n, cq[i], &qb[2 + i]) : NULL;
		check(qp[i], "QP %d in the dma-buf: %s", i, strerror(errno));
	}
	if (!qp[0] || !qp[1])
		goto out;
	plain_layout(qp[0], qp_len);
	bufinfo(&obj1, &att1);
	check(att1 == att0 + 4, "four queues: attachments %d -> %d", att0,
	      att1);
	local_gid(n->ctx, n->gid_index, gid);
	rc_connect(qp[0], "dma-buf QP 0", qp[1]->qp_num, gid, n->gid_index, 4);
	rc_connect(qp[1], "dma-buf QP 1", qp[0]->qp_num, gid, n->gid_index, 4);

	/* Each round: a RECV on QP 1, a SEND and a WRITE from QP 0. */
	for (uint32_t i = 0; i < Q_OPS && !failures; i++) {
		uint32_t so = (i % 64) * Q_LEN, ro = 65536 + (i % 64) * Q_LEN;
		uint32_t wo = 131072 + (i % 64) * Q_LEN;
		struct ibv_sge rs = {host + ro, Q_LEN, n->host_mr->lkey};
		struct ibv_sge ss = {host + so, Q_LEN, n->host_mr->lkey};
		struct ibv_recv_wr rwr = {
			.wr_id = 100 + i, .sg_list = &rs, .num_sge = 1};
		struct ibv_send_wr wr[2] = {
			{.wr_id = 200 + i,
			 .next = &wr[1],
			 .sg_list = &ss,
			 .num_sge = 1,
			 .opcode = IBV_WR_SEND,
			 .send_flags = IBV_SEND_SIGNALED},
			{.wr_id = 300 + i,
			 .sg_list = &ss,
			 .num_sge = 1,
			 .opcode = IBV_WR_RDMA_WRITE,
			 .send_flags = IBV_SEND_SIGNALED,
			 .wr.rdma = {host + wo, n->host_mr->rkey}}};
		struct ibv_recv_wr *rbad;
		struct ibv_send_wr *sbad;
		struct ibv_wc wc;
		double end = now() + 30;
		int got = 0;

		pattern_fill(n->host + so, Q_LEN, 20 + i);
		ret = ibv_post_recv(qp[1], &rwr, &rbad);
		check(!ret, "round %u: post_recv: %s", i, strerror(ret));
		ret = ibv_post_send(qp[0], wr, &sbad);
		check(!ret, "round %u: post_send: %s", i, strerror(ret));
		while (got < 3 && now() < end) {
			int r = ibv_poll_cq(got < 2 ? cq[0] : cq[1], 1, &wc);

			if (r < 0)
				die("ibv_poll_cq");
			if (!r)
				continue;
			check(wc.status == IBV_WC_SUCCESS,
			      "round %u: wr_id %" PRIu64 " %s", i, wc.wr_id,
			      ibv_wc_status_str(wc.status));
			check(wc.wr_id == (got == 0   ? 200 + i
					   : got == 1 ? 300 + i
						      : 100 + i),
			      "round %u: wr_id %" PRIu64 " out of order", i,
			      wc.wr_id);
			got++;
		}
		check(got == 3, "round %u: %d of 3 completions in 30 s", i,
		      got);
		check(pattern_differs(n->host + ro, Q_LEN, 20 + i) < 0,
		      "round %u: the SEND's bytes differ", i);
		check(pattern_differs(n->host + wo, Q_LEN, 20 + i) < 0,
		      "round %u: the WRITE's bytes differ", i);
	}
	/* The completions are in the dma-buf: every CQE slot of both rings
	 * written (each took more than its ring holds), and QP 0's SQ ring
	 * holds its WQEs.
	 */
	for (int i = 0; i < 2; i++) {
		cqe = (const volatile struct rhn_cqe *)(b.map + qb[i].offset);
		for (uint32_t k = 0; k < 32; k++)
			seen += cqe[k].qpn != 0;
	}
	check(seen == 64, "CQEs written in the dma-buf: %u of 64 slots", seen);
	check(b.map[qb[2].offset] == RHN_OP_SEND ||
		      b.map[qb[2].offset] == RHN_OP_WRITE,
	      "QP 0's first SQ slot in the dma-buf holds opcode %u",
	      b.map[qb[2].offset]);

	/* A CQ made through rhinetdv holds its completion channel as one
	 * of ibv_create_cq's does: the channel cannot go before it.
	 */
	{
		struct ibv_comp_channel *ch = ibv_create_comp_channel(n->ctx);
		struct ibv_cq_init_attr_ex ca = {.cqe = 8, .channel = ch};
		struct rhinetdv_cq_init_attr none = {0};
		struct ibv_cq_ex *c =
			ch ? rhinetdv_create_cq(n->ctx, &ca, &none,
						sizeof(none))
			   : NULL;

		check(c, "rhinetdv_create_cq with a channel: %s",
		      strerror(errno));
		if (c) {
			ret = ibv_destroy_comp_channel(ch);
			check(ret == EBUSY,
			      "channel destroyed under its CQ: %d, want %s",
			      ret, strerror(EBUSY));
			check(!ibv_destroy_cq(ibv_cq_ex_to_cq(c)),
			      "destroy the channel's CQ");
		}
		if (ch)
			check(!ibv_destroy_comp_channel(ch),
			      "destroy the channel after its CQ");
	}

	/* Resize would need a buffer of the application's. */
	errno = 0;
	ret = ibv_resize_cq(cq[0], 64);
	check(ret == EOPNOTSUPP, "ibv_resize_cq in the dma-buf: %d, want %s",
	      ret, strerror(EOPNOTSUPP));

	/* Torn down with work queued: WRITEs posted, the QP destroyed at
	 * once, its CQ after it.
	 */
	for (uint32_t i = 0; i < 8; i++) {
		ret = post_rdma(qp[0], IBV_WR_RDMA_WRITE, 7, host,
				n->host_mr->lkey, host + 131072,
				n->host_mr->rkey, 4096);
		check(!ret, "WRITE to be torn down: ibv_post_send: %s",
		      strerror(ret));
	}
out:
	for (int i = 0; i < 2; i++) {
		if (qp[i])
			check(!ibv_destroy_qp(qp[i]), "destroy dma-buf QP %d",
			      i);
		if (cq[i])
			check(!ibv_destroy_cq(cq[i]), "destroy dma-buf CQ %d",
			      i);
	}
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 + 1 && att1 == att0,
	      "queues destroyed: dma-bufs %d -> %d, attachments %d -> %d", obj0,
	      obj1, att0, att1);

	/* Refusals, each leaving nothing attached. */
	{
		struct ibv_cq *hcq = ibv_create_cq(n->ctx, 32, NULL, NULL, 0);
		struct rhinetdv_queue_buf r;
		int pipefd[2];

		if (!hcq || pipe(pipefd))
			die("CQ or pipe");
		r = qbuf(&b, 0, 4096);
		r.length = 64;
		q_refused(n, hcq, r, EINVAL, "in too short a buffer");
		r = qbuf(&b, 4096 + 32, qp_len);
		q_refused(n, hcq, r, EINVAL, "at a misaligned offset");
		r = qbuf(&b, b.size - 512, qp_len);
		r.addr = (void *)b.map; /* a mapping long enough */
		q_refused(n, hcq, r, EINVAL, "past the dma-buf's end");
		r = qbuf(&b, 0, qp_len);
		r.dmabuf_fd = pipefd[0];
		q_refused(n, hcq, r, EINVAL, "in a pipe");
		close(pipefd[0]);
		close(pipefd[1]);
		r.dmabuf_fd = pipefd[0];
		q_refused(n, hcq, r, EBADF, "in a closed descriptor");
		r = qbuf(&b, 0, qp_len);
		r.addr = NULL;
		q_refused(n, hcq, r, EINVAL, "without a mapping");
		ibv_destroy_cq(hcq);
	}
	munmap((void *)b.map, b.size);
	close(b.fd);
	dbuf_close_handle(card, &b);
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 && att1 == att0,
	      "dma-buf of the queues freed: dma-bufs %d -> %d, attachments %d "
	      "-> %d",
	      obj0, obj1, att0, att1);
}

/*
 * A multi-producer QP (RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER) whose rings
 * and 16-byte SQ record lie in a dma-buf of rhinetdv_qp_buf_len's length:
 * WRITEs through rhinetdv_mp_post_send to a plain QP, more than the ring
 * holds, and the record seen in the dma-buf: the producer count the
 * library published and the nic_consumer the NIC wrote back.
 */
static void mp_queue(struct node *n, int card)
{
	struct ibv_cq *cq = ibv_create_cq(n->ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex qa = q_attr(n, cq);
	uintptr_t host = (uintptr_t)n->host;
	struct rhinetdv_queue_buf qb;
	struct rhinetdv_qp_init_attr dv;
	struct ibv_qp *mp = NULL, *peer = NULL;
	struct rhinetdv_qp_buf_layout lay = {0};
	const volatile uint64_t *rec;
	uint64_t consumer = 0;
	uint8_t gid[16];
	size_t len = 0;
	struct dbuf b;
	double end;

	if (!cq)
		die("CQ");
	dbuf_create(card, 16, &b);
	check(!rhinetdv_qp_buf_len(n->ctx, &qa, &len), "QP buffer length");
	qb = qbuf(&b, 0, len);
	dv = (struct rhinetdv_qp_init_attr){
		.comp_mask = RHINETDV_QP_INIT_ATTR_BUF |
			     RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER,
		.buf = qb};
	mp = rhinetdv_create_qp(n->ctx, &qa, &dv, sizeof(dv));
	check(mp, "multi-producer QP in the dma-buf (%zu bytes): %s", len,
	      strerror(errno));
	qa = q_attr(n, cq);
	peer = ibv_create_qp_ex(n->ctx, &qa);
	if (!mp || !peer)
		goto out;
	local_gid(n->ctx, n->gid_index, gid);
	rc_connect(mp, "multi-producer QP", peer->qp_num, gid, n->gid_index, 1);
	rc_connect(peer, "its peer", mp->qp_num, gid, n->gid_index, 1);
	for (uint32_t i = 0; i < Q_OPS && !failures; i++) {
		uint32_t so = (i % 64) * Q_LEN, wo = 131072 + (i % 64) * Q_LEN;
		struct ibv_sge sge = {host + so, Q_LEN, n->host_mr->lkey};
		struct ibv_send_wr wr = {
			.wr_id = 400 + i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = {host + wo, n->host_mr->rkey}};
		struct ibv_send_wr *bad;
		struct ibv_wc wc;
		int ret;

		pattern_fill(n->host + so, Q_LEN, 40 + i);
		ret = rhinetdv_mp_post_send(mp, &wr, &bad, 0);
		check(!ret, "multi-producer WRITE %u: %s", i, strerror(ret));
		check(poll_cq_for(cq, &wc, 1, 30000) == 1 &&
			      wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == 400 + i,
		      "multi-producer WRITE %u: no completion, or not its own",
		      i);
		check(pattern_differs(n->host + wo, Q_LEN, 40 + i) < 0,
		      "multi-producer WRITE %u: bytes differ", i);
	}
	/*
	 * Where the kernel put the record, by rhinetdv_query_qp_buf; the
	 * layout's end: the 16-byte SQ record, then the RQ's 8 bytes.
	 */
	check(!rhinetdv_query_qp_buf(mp, &lay, sizeof(lay)) &&
		      lay.flags == RHINETDV_QP_BUF_MULTI_PRODUCER &&
		      lay.sq_offset == 0 && lay.sq_record_offset == len - 24 &&
		      lay.rq_record_offset == len - 8 && lay.length == len &&
		      lay.sq_slots * RHN_SQ_SLOT_SIZE <= lay.rq_offset,
	      "multi-producer QP's layout: flags %u, SQ record at %" PRIu64
	      ", RQ record at %" PRIu64 " of %zu bytes",
	      lay.flags, lay.sq_record_offset, lay.rq_record_offset, len);
	check(rhinetdv_query_qp_buf(mp, &lay,
				    offsetof(struct rhinetdv_qp_buf_layout,
					     flags)) == EINVAL &&
		      rhinetdv_query_qp_buf(NULL, &lay, sizeof(lay)) == EINVAL,
	      "a layout query with a short struct or no QP is EINVAL");
	rec = (const volatile uint64_t *)(b.map + lay.sq_record_offset);
	end = now() + 5;
	while ((consumer = rec[1]) != Q_OPS && now() < end)
		usleep(1000);
	check(rec[0] == Q_OPS && consumer == Q_OPS,
	      "the record in the dma-buf: producer %" PRIu64
	      ", nic_consumer %" PRIu64 ", want %u each",
	      rec[0], consumer, Q_OPS);
out:
	if (mp)
		check(!ibv_destroy_qp(mp), "destroy the multi-producer QP");
	if (peer)
		check(!ibv_destroy_qp(peer), "destroy its peer");
	check(!ibv_destroy_cq(cq), "destroy their CQ");
	munmap((void *)b.map, b.size);
	close(b.fd);
	dbuf_close_handle(card, &b);
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0";
	struct node n = {.gid_index = 0};
	int port = 0, card, obj0, att0, obj1, att1;
	struct dbuf big;

	program = "rhinet-dmabuf";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (peer_args(argc, argv, &dev, &n.gid_index, &port)) {
		fprintf(stderr, "usage: rhinet-dmabuf [-d DEV] [-g GID]\n");
		return 2;
	}
	role = NULL;
	card = vgem_open();
	if (card < 0) {
		printf("rhinet-dmabuf: FAIL: no vgem device (modprobe vgem)\n");
		return 2;
	}
	if (!bufinfo(&obj0, &att0))
		die("debugfs dma_buf/bufinfo");

	n.ctx = open_device(dev);
	n.host_mr = alloc_buffer(n.ctx, HOST_SIZE, &n.pd, &n.host);
	if (!n.host_mr)
		die("host MR");
	connect_pair(&n);
	dbuf_create(card, BIG_ROWS, &big);
	printf("rhinet-dmabuf: vgem dma-buf of %zu bytes, fd %d\n", big.size,
	       big.fd);

	refusals(&n, &big);
	data_path(&n, &big);
	closed_fd(&n, card);
	printf("rhinet-dmabuf: %d checks so far, %d failed\n", checks,
	       failures);
	dereg_queued(&n, &big);
	queues(&n, card);
	mp_queue(&n, card);

	check(!ibv_destroy_qp(n.qp[0]) && !ibv_destroy_qp(n.qp[1]),
	      "destroy the QPs");
	ibv_destroy_cq(n.cq[0]);
	ibv_destroy_cq(n.cq[1]);
	check(!ibv_dereg_mr(n.host_mr), "dereg the host MR");
	ibv_dealloc_pd(n.pd);
	ibv_close_device(n.ctx);
	munmap((void *)big.map, big.size);
	close(big.fd);
	dbuf_close_handle(card, &big);
	close(card);
	bufinfo(&obj1, &att1);
	check(obj1 == obj0 && att1 == att0,
	      "at the end: dma-bufs %d -> %d, attachments %d -> %d", obj0, obj1,
	      att0, att1);
	printf("rhinet-dmabuf: %s (%d checks, %d failed)\n",
	       failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
