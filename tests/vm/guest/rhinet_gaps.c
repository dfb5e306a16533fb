// SPDX-License-Identifier: BSD-2-Clause
/*
 * Verbs that real software uses beyond the basic data path, through plain
 * libibverbs and the installed provider, between two nodes:
 *
 *  - device memory (ibv_alloc_dm): ibv_memcpy_to_dm / ibv_memcpy_from_dm
 *    at any offset and length, refused beyond the DM; ibv_reg_dm_mr
 *    (IBV_ACCESS_ZERO_BASED) over part of it, used as a local lkey (a SEND
 *    from it, a READ into it) and as the peer's rkey (WRITE, READ,
 *    fetch-and-add, compare-and-swap), every byte checked through
 *    memcpy_from_dm on the owner; a DM with an MR is busy;
 *  - an RC QP without a send queue (max_send_wr = max_send_sge = 0) on an
 *    SRQ, and one on a tag-matching SRQ (ibv_create_qp_ex), as receive-only
 *    QPs are created; the server's receives through it, and a send posted
 *    on it fails with ENOMEM;
 *  - inline data: the limit asked for (0 included) is rounded up to what
 *    the QP's WQEs hold and reported in cap.max_inline_data and by
 *    ibv_query_qp; the client's 16-byte IBV_SEND_INLINE SEND on a QP asked
 *    with max_inline_data = 0 arrives (what rdma_xclient does);
 *  - CQ depth: max_cqe addresses 4M entries (as mlx5), a CQ of the size
 *    libfabric's verbs;ofi_rxm asks for by default (768 x 256) is created.
 *
 *   rhinet-gaps [-d DEVICE] [-g GID_INDEX] [-p PORT]           server (node 1)
 *   rhinet-gaps [-d DEVICE] [-g GID_INDEX] [-p PORT] SERVER    client (node 0)
 *
 * Exits 0 only if every check passed on this node.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_guest.h"

#define BUF_SIZE (256u << 10)
#define RECV 0u /* server: SRQ receive slots */
#define RECV_SLOT 4096u
#define RECVS 8
#define SRC (64u << 10) /* client: WRITE source */
#define ATOMIC_RES (128u << 10) /* client: atomic results, READ target */

/* Device memory: DM_LEN bytes (not a page multiple); the MR covers
 * [DM_MR_OFF, DM_MR_OFF + DM_MR_LEN) of it, addressed from 0.
 */
#define DM_LEN (3u * 4096 + 100)
#define DM_MR_OFF 4096u
#define DM_MR_LEN 8192u
/* Offsets inside the DM MR (zero-based). */
#define DMR_WRITE 100u /* the client's WRITE lands here, READ reads it */
#define DMR_WRITE_LEN 3000u
#define DMR_ATOMIC 4096u /* the word of the atomics */
#define DMR_SEND 0u /* client: the SEND's source */
#define DMR_SEND_LEN 2000u
#define DMR_READ 4200u /* client: the READ's target */
#define ATOMIC_INIT 0x1122334455667788ull

#define INLINE_MSG "rdma_xclient-msg" /* 16 bytes, as rdma_xclient sends */

/* ---- setup ---------------------------------------------------------------- */

struct info {
	uint32_t qpn, dm_rkey;
	uint8_t gid[16];
};

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp; /* client: RC; server: receive-only RC on srq */
	struct ibv_dm *dm;
	struct ibv_mr *dm_mr;
	int gid_index;
	bool have_dm;
	struct info me, peer;
};

static const unsigned int kDmAccess =
	IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
	IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	IBV_ACCESS_REMOTE_ATOMIC;

static struct ibv_qp *rc_qp(struct node *n, struct ibv_srq *srq,
			    struct ibv_qp_cap cap, struct ibv_qp_cap *got)
{
	struct ibv_qp_init_attr a = {
		.send_cq = n->cq,
		.recv_cq = n->cq,
		.srq = srq,
		.cap = cap,
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(n->pd, &a);

	if (qp && got)
		*got = a.cap;
	return qp;
}

static void connect_qp(struct node *n)
{
	rc_connect(n->qp, "QP", n->peer.qpn, n->peer.gid, n->gid_index, 4);
}

/* Busy-polls @n completions of n->cq into @wc (or 30 s). */
static int poll_n(struct node *n, struct ibv_wc *wc, int count)
{
	int got = poll_cq_for(n->cq, wc, count, 30000);

	check(got == count, "%d of %d completions", got, count);
	return got;
}

/* Posts one WR on n->qp and waits for its completion. */
static bool post_wait(struct node *n, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int ret;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(n->qp, wr, &bad);
	check(ret == 0, "%s: ibv_post_send: %s", what, strerror(ret));
	if (ret)
		return false;
	if (poll_n(n, &wc, 1) != 1)
		return false;
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr->wr_id,
	      "%s: completion %s (vendor_err %#x), wr_id %" PRIu64, what,
	      ibv_wc_status_str(wc.status), wc.vendor_err, wc.wr_id);
	return wc.status == IBV_WC_SUCCESS;
}

/* ---- local checks ----------------------------------------------------------- */

/*
 * CQ depth: a CQ is host memory, the device addresses 4M entries (as mlx5);
 * libfabric's verbs;ofi_rxm sizes its CQ as (tx + rx size) x
 * FI_UNIVERSE_SIZE = (384 + 384) x 256 by default.
 */
static void cq_depth(struct node *n)
{
	struct ibv_device_attr attr;
	struct ibv_cq *cq;

	if (ibv_query_device(n->ctx, &attr))
		die("ibv_query_device");
	check(attr.max_cqe >= (1 << 22), "max_cqe %d, expected at least 4M",
	      attr.max_cqe);
	cq = ibv_create_cq(n->ctx, 768 * 256, NULL, NULL, 0);
	check(cq != NULL, "CQ of %d entries: %s", 768 * 256, strerror(errno));
	if (cq) {
		check(cq->cqe >= 768 * 256, "CQ of %d entries has %d",
		      768 * 256, cq->cqe);
		check(!ibv_destroy_cq(cq), "destroy the big CQ");
	}
	errno = 0;
	cq = ibv_create_cq(n->ctx, attr.max_cqe + 1, NULL, NULL, 0);
	check(!cq && errno == EINVAL, "CQ of max_cqe + 1: %s",
	      cq ? "created" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	printf("rhinet-gaps %s: max_cqe %d, a CQ of %d entries created\n", role,
	       attr.max_cqe, 768 * 256);
}

/*
 * The inline limit a QP reports is what its WQE holds: a WQE of one slot
 * carries 16 inline bytes, each further 64-byte slot 64 more; the SGEs
 * asked for may take more slots than the inline bytes (UD's GRH slot
 * carries none).
 */
static void inline_caps(struct node *n)
{
	static const struct {
		enum ibv_qp_type type;
		uint32_t sge, inl, expect;
	} cases[] = {
		{IBV_QPT_RC, 1, 0, 16},	   {IBV_QPT_RC, 0, 0, 16},
		{IBV_QPT_RC, 1, 16, 16},   {IBV_QPT_RC, 1, 17, 80},
		{IBV_QPT_RC, 4, 0, 80},	   {IBV_QPT_RC, 5, 0, 80},
		{IBV_QPT_RC, 1, 100, 144}, {IBV_QPT_UD, 1, 0, 16},
		{IBV_QPT_UD, 1, 64, 80},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibv_qp_init_attr a = {
			.send_cq = n->cq,
			.recv_cq = n->cq,
			.cap = {.max_send_wr = 8,
				.max_recv_wr = 4,
				.max_send_sge = cases[i].sge,
				.max_recv_sge = 1,
				.max_inline_data = cases[i].inl},
			.qp_type = cases[i].type,
		};
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr qa;
		struct ibv_qp *qp = ibv_create_qp(n->pd, &a);

		check(qp != NULL, "%s QP, %u SGEs, inline %u: %s",
		      cases[i].type == IBV_QPT_UD ? "UD" : "RC", cases[i].sge,
		      cases[i].inl, strerror(errno));
		if (!qp)
			continue;
		check(a.cap.max_inline_data == cases[i].expect,
		      "%s QP, %u SGEs, inline %u asked: max_inline_data %u, "
		      "expected %u",
		      cases[i].type == IBV_QPT_UD ? "UD" : "RC", cases[i].sge,
		      cases[i].inl, a.cap.max_inline_data, cases[i].expect);
		check(a.cap.max_send_sge >= cases[i].sge &&
			      a.cap.max_send_wr >= 8,
		      "caps shrank: %u SGEs, %u WRs", a.cap.max_send_sge,
		      a.cap.max_send_wr);
		if (!ibv_query_qp(qp, &qa, IBV_QP_CAP, &init))
			check(init.cap.max_inline_data == a.cap.max_inline_data,
			      "query_qp: max_inline_data %u, creation said %u",
			      init.cap.max_inline_data, a.cap.max_inline_data);
		else
			check(false, "ibv_query_qp: %s", strerror(errno));
		check(!ibv_destroy_qp(qp), "destroy inline QP");
	}
	/* Beyond what the device holds: still refused. */
	{
		struct ibv_qp_cap cap = {.max_send_wr = 4,
					 .max_recv_wr = 4,
					 .max_send_sge = 1,
					 .max_recv_sge = 1,
					 .max_inline_data = 1u << 20};
		struct ibv_qp *qp = rc_qp(n, NULL, cap, NULL);

		check(!qp, "a QP with 1 MiB of inline data was created");
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/* Receive-only QPs: no send queue at all. */
static void empty_sq(struct node *n)
{
	struct ibv_qp_cap zero = {.max_send_wr = 0,
				  .max_recv_wr = 0,
				  .max_send_sge = 0,
				  .max_recv_sge = 0,
				  .max_inline_data = 0};
	struct ibv_qp_cap got;
	struct ibv_qp *qp = rc_qp(n, n->srq, zero, &got);
	struct ibv_device_attr_ex dx;

	check(qp != NULL, "RC QP without a send queue on an SRQ: %s",
	      strerror(errno));
	if (qp) {
		struct ibv_send_wr wr = {.wr_id = 1, .opcode = IBV_WR_SEND};
		struct ibv_send_wr *bad = NULL;
		int ret = ibv_post_send(qp, &wr, &bad);

		check(got.max_send_wr == 0 && got.max_send_sge == 0,
		      "receive-only QP reports %u send WRs, %u SGEs",
		      got.max_send_wr, got.max_send_sge);
		check(ret == EINVAL && bad == &wr,
		      "send on a receive-only QP in RESET: %d", ret);
		check(!ibv_destroy_qp(qp), "destroy the receive-only QP");
	}
	/* Through ibv_create_qp_ex on a tag-matching SRQ, as rdma-core's
	 * tag-matching users make the QPs that only receive.
	 */
	if (ibv_query_device_ex(n->ctx, NULL, &dx))
		die("ibv_query_device_ex");
	if (!dx.tm_caps.max_num_tags) {
		printf("rhinet-gaps %s: no tag matching, TM SRQ case skipped\n",
		       role);
		return;
	}
	{
		struct ibv_srq_init_attr_ex sa = {
			.attr = {.max_wr = 16, .max_sge = 1},
			.comp_mask =
				IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
			.srq_type = IBV_SRQT_TM,
			.pd = n->pd,
			.cq = n->cq,
			.tm_cap = {.max_num_tags = 16, .max_ops = 16},
		};
		struct ibv_srq *tm = ibv_create_srq_ex(n->ctx, &sa);
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = n->cq,
			.recv_cq = n->cq,
			.srq = tm,
			.cap = zero,
			.qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = n->pd,
		};

		check(tm != NULL, "TM SRQ: %s", strerror(errno));
		if (!tm)
			return;
		qp = ibv_create_qp_ex(n->ctx, &qa);
		check(qp != NULL,
		      "ibv_create_qp_ex: RC QP without a send queue on a TM "
		      "SRQ: %s",
		      strerror(errno));
		if (qp) {
			check(qa.cap.max_send_wr == 0,
			      "TM receive-only QP reports %u send WRs",
			      qa.cap.max_send_wr);
			check(!ibv_destroy_qp(qp), "destroy the TM QP");
		}
		check(!ibv_destroy_srq(tm), "destroy the TM SRQ");
	}
}

/* Device memory without a peer: copies, refusals, MRs over it. */
static void dm_local(struct node *n)
{
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da = {.length = DM_LEN};
	static uint8_t a[DM_LEN], b[DM_LEN];
	struct ibv_mr *mr;
	long at;
	int ret;

	if (ibv_query_device_ex(n->ctx, NULL, &dx))
		die("ibv_query_device_ex");
	check(dx.max_dm_size >= DM_LEN, "max_dm_size %" PRIu64, dx.max_dm_size);
	n->dm = ibv_alloc_dm(n->ctx, &da);
	check(n->dm != NULL, "ibv_alloc_dm %u: %s", DM_LEN, strerror(errno));
	if (!n->dm)
		return;
	memset(b, 0xee, sizeof(b));
	ret = ibv_memcpy_from_dm(b, n->dm, 0, DM_LEN);
	check(ret == 0, "memcpy_from_dm of a new DM: %s", strerror(ret));
	for (at = 0; at < DM_LEN && !b[at]; at++)
		;
	check(ret || at == DM_LEN, "a new DM is not zero at byte %ld", at);
	pattern_fill(a, DM_LEN, 1);
	ret = ibv_memcpy_to_dm(n->dm, 0, a, DM_LEN);
	check(ret == 0, "memcpy_to_dm %u bytes: %s", DM_LEN, strerror(ret));
	memset(b, 0, sizeof(b));
	ret = ibv_memcpy_from_dm(b, n->dm, 0, DM_LEN);
	at = pattern_differs(b, DM_LEN, 1);
	check(ret == 0 && at < 0,
	      "memcpy_from_dm %u bytes: %s, byte %ld differs", DM_LEN,
	      strerror(ret), at);
	/* Across a page, odd offsets and lengths. */
	pattern_fill(a, 300, 2);
	ret = ibv_memcpy_to_dm(n->dm, 4093, a, 300);
	check(ret == 0, "memcpy_to_dm at 4093: %s", strerror(ret));
	ret = ibv_memcpy_from_dm(b, n->dm, 4090, 306);
	check(ret == 0 && b[0] == pattern_byte(4090, 1) &&
		      b[1] == pattern_byte(4091, 1) &&
		      b[2] == pattern_byte(4092, 1) &&
		      pattern_differs(b + 3, 300, 2) < 0 &&
		      b[303] == pattern_byte(4393, 1) &&
		      b[305] == pattern_byte(4395, 1),
	      "memcpy_from_dm around 4093: %s", strerror(ret));
	ret = ibv_memcpy_from_dm(b, n->dm, DM_LEN - 7, 7);
	check(ret == 0 && b[0] == pattern_byte(DM_LEN - 7, 1) &&
		      b[6] == pattern_byte(DM_LEN - 1, 1),
	      "memcpy_from_dm of the last 7 bytes: %s", strerror(ret));
	check(ibv_memcpy_to_dm(n->dm, 5, a, 0) == 0, "memcpy_to_dm of 0 bytes");
	/* Beyond the DM: refused, nothing copied. */
	ret = ibv_memcpy_to_dm(n->dm, DM_LEN - 10, a, 11);
	check(ret == EINVAL, "memcpy_to_dm past the end: %d", ret);
	ret = ibv_memcpy_from_dm(b, n->dm, DM_LEN, 1);
	check(ret == EINVAL, "memcpy_from_dm past the end: %d", ret);
	ret = ibv_memcpy_to_dm(n->dm, UINT64_MAX - 2, a, 8);
	check(ret == EINVAL, "memcpy_to_dm with a wrapping offset: %d", ret);

	/* MRs over it: zero-based only, inside it. */
	errno = 0;
	mr = ibv_reg_dm_mr(n->pd, n->dm, DM_MR_OFF, DM_MR_LEN,
			   kDmAccess & ~IBV_ACCESS_ZERO_BASED);
	check(!mr && errno == EINVAL, "reg_dm_mr without ZERO_BASED: %s",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_dm_mr(n->pd, n->dm, DM_MR_OFF, DM_LEN, kDmAccess);
	check(!mr && errno == EINVAL, "reg_dm_mr past the end: %s",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	n->dm_mr = ibv_reg_dm_mr(n->pd, n->dm, DM_MR_OFF, DM_MR_LEN, kDmAccess);
	check(n->dm_mr != NULL, "reg_dm_mr %u at %u: %s", DM_MR_LEN, DM_MR_OFF,
	      strerror(errno));
	if (!n->dm_mr)
		return;
	check(n->dm_mr->length == DM_MR_LEN && n->dm_mr->lkey &&
		      n->dm_mr->rkey && n->dm_mr->pd == n->pd,
	      "DM MR: length %zu lkey %#x rkey %#x", n->dm_mr->length,
	      n->dm_mr->lkey, n->dm_mr->rkey);
	/* A DM with an MR over it stays. */
	ret = ibv_free_dm(n->dm);
	check(ret == EBUSY, "free_dm with an MR over it: %d", ret);
	n->have_dm = true;
	/* The word the peer's atomics work on. */
	{
		uint64_t w = ATOMIC_INIT;

		check(!ibv_memcpy_to_dm(n->dm, DM_MR_OFF + DMR_ATOMIC, &w,
					sizeof(w)),
		      "memcpy_to_dm of the atomic word");
	}
}

/* ---- between the nodes ------------------------------------------------------ */

static void client(struct node *n, int fd)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	char msg[17] = INLINE_MSG;
	uint64_t *res = (uint64_t *)(n->buf + ATOMIC_RES);
	static uint8_t b[DMR_WRITE_LEN];
	long at;
	int ret;

	/* What rdma_xclient does: a 16-byte inline SEND on a QP asked
	 * with max_inline_data = 0, from memory no MR covers.
	 */
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){(uintptr_t)msg, 16, 0};
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	post_wait(n, &wr, "16-byte inline SEND");

	if (!n->have_dm) {
		sync_peer(fd);
		return;
	}
	/* A SEND whose source is this node's DM MR (lkey, zero-based). */
	pattern_fill(b, DMR_SEND_LEN, 5);
	check(!ibv_memcpy_to_dm(n->dm, DM_MR_OFF + DMR_SEND, b, DMR_SEND_LEN),
	      "memcpy_to_dm of the SEND's bytes");
	sge = (struct ibv_sge){DMR_SEND, DMR_SEND_LEN, n->dm_mr->lkey};
	wr.wr_id = 2;
	wr.send_flags = 0;
	post_wait(n, &wr, "SEND from device memory");

	/* WRITE into the peer's DM, READ it back into this node's DM. */
	pattern_fill(n->buf + SRC, DMR_WRITE_LEN, 6);
	sge = (struct ibv_sge){(uintptr_t)n->buf + SRC, DMR_WRITE_LEN,
			       n->mr->lkey};
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = DMR_WRITE;
	wr.wr.rdma.rkey = n->peer.dm_rkey;
	post_wait(n, &wr, "WRITE into the peer's device memory");
	sge = (struct ibv_sge){DMR_READ, DMR_WRITE_LEN, n->dm_mr->lkey};
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	post_wait(n, &wr, "READ from the peer's DM into this DM");
	memset(b, 0, sizeof(b));
	ret = ibv_memcpy_from_dm(b, n->dm, DM_MR_OFF + DMR_READ, DMR_WRITE_LEN);
	at = pattern_differs(b, DMR_WRITE_LEN, 6);
	check(!ret && at < 0, "READ into device memory: %s, byte %ld differs",
	      strerror(ret), at);

	/* Atomics on the peer's DM word. */
	res[0] = res[1] = res[2] = 0;
	sge = (struct ibv_sge){(uintptr_t)&res[0], 8, n->mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 5;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = DMR_ATOMIC;
	wr.wr.atomic.rkey = n->peer.dm_rkey;
	wr.wr.atomic.compare_add = 5;
	post_wait(n, &wr, "fetch-and-add on device memory");
	check(res[0] == ATOMIC_INIT, "fetch-and-add returned %#" PRIx64,
	      res[0]);
	sge.addr = (uintptr_t)&res[1];
	wr.wr_id = 6;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = ATOMIC_INIT + 5;
	wr.wr.atomic.swap = 0xfeedfacecafebeefull;
	post_wait(n, &wr, "compare-and-swap on device memory");
	check(res[1] == ATOMIC_INIT + 5, "compare-and-swap returned %#" PRIx64,
	      res[1]);
	sge.addr = (uintptr_t)&res[2];
	wr.wr_id = 7;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = DMR_ATOMIC;
	wr.wr.rdma.rkey = n->peer.dm_rkey;
	post_wait(n, &wr, "READ of the swapped word");
	check(res[2] == 0xfeedfacecafebeefull, "the word reads %#" PRIx64,
	      res[2]);
	sync_peer(fd); /* the server checks its DM now */
}

static void server(struct node *n, int fd)
{
	struct ibv_wc wc[2];
	static uint8_t b[DMR_WRITE_LEN];
	int want = n->have_dm && n->peer.dm_rkey ? 2 : 1;
	long at;
	int ret;

	if (poll_n(n, wc, want) == want) {
		check(wc[0].status == IBV_WC_SUCCESS &&
			      wc[0].opcode == IBV_WC_RECV &&
			      wc[0].byte_len == 16 &&
			      wc[0].qp_num == n->qp->qp_num &&
			      !memcmp(n->buf + RECV + wc[0].wr_id * RECV_SLOT,
				      INLINE_MSG, 16),
		      "inline SEND received: %s, %u bytes, QP %u",
		      ibv_wc_status_str(wc[0].status), wc[0].byte_len,
		      wc[0].qp_num);
		if (want == 2)
			check(wc[1].status == IBV_WC_SUCCESS &&
				      wc[1].byte_len == DMR_SEND_LEN &&
				      pattern_differs(n->buf + RECV +
							      wc[1].wr_id *
								      RECV_SLOT,
						      DMR_SEND_LEN, 5) < 0,
			      "SEND from the peer's DM: %s, %u bytes",
			      ibv_wc_status_str(wc[1].status), wc[1].byte_len);
	}
	/* A QP without a send queue takes no send, in RTS too. */
	{
		struct ibv_sge sge = {(uintptr_t)n->buf, 8, n->mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 9,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_send_wr *bad = NULL;

		ret = ibv_post_send(n->qp, &wr, &bad);
		check(ret == ENOMEM && bad == &wr,
		      "send on a receive-only QP in RTS: %d (%s)", ret,
		      strerror(ret));
	}
	sync_peer(fd); /* the client is done with this node's DM */
	if (!n->have_dm)
		return;
	ret = ibv_memcpy_from_dm(b, n->dm, DM_MR_OFF + DMR_WRITE,
				 DMR_WRITE_LEN);
	at = pattern_differs(b, DMR_WRITE_LEN, 6);
	check(!ret && at < 0,
	      "the peer's WRITE into device memory: %s, byte %ld differs",
	      strerror(ret), at);
	{
		uint64_t w = 0;

		check(!ibv_memcpy_from_dm(&w, n->dm, DM_MR_OFF + DMR_ATOMIC,
					  sizeof(w)) &&
			      w == 0xfeedfacecafebeefull,
		      "the atomics' word in device memory: %#" PRIx64, w);
	}
	/* Before the WRITE: what dm_local's copy at 4093 left there. */
	check(!ibv_memcpy_from_dm(b, n->dm, DM_MR_OFF + DMR_WRITE - 4, 4) &&
		      b[0] == pattern_byte(DM_MR_OFF + DMR_WRITE - 4 - 4093,
					   2) &&
		      b[3] == pattern_byte(DM_MR_OFF + DMR_WRITE - 1 - 4093, 2),
	      "device memory before the WRITE changed");
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *srv;
	struct node n = {.gid_index = 0};
	int port = 18800, fd;

	program = "rhinet-gaps";
	setvbuf(stdout, NULL, _IOLBF, 0);
	srv = peer_args(argc, argv, &dev, &n.gid_index, &port);

	n.ctx = open_device(dev);
	n.mr = alloc_buffer(n.ctx, BUF_SIZE, &n.pd, &n.buf);
	n.cq = ibv_create_cq(n.ctx, 256, NULL, NULL, 0);
	{
		struct ibv_srq_init_attr sa = {
			.attr = {.max_wr = 32, .max_sge = 1}};

		n.srq = ibv_create_srq(n.pd, &sa);
	}
	if (!n.mr || !n.cq || !n.srq)
		die("mr/cq/srq");

	cq_depth(&n);
	inline_caps(&n);
	empty_sq(&n);
	dm_local(&n);
	printf("rhinet-gaps %s: local checks done (%d of %d failed)\n", role,
	       failures, checks);

	if (srv) {
		/* As rdma_xclient asks: no inline data. */
		struct ibv_qp_cap cap = {.max_send_wr = 16,
					 .max_recv_wr = 4,
					 .max_send_sge = 1,
					 .max_recv_sge = 1,
					 .max_inline_data = 0};

		n.qp = rc_qp(&n, NULL, cap, NULL);
	} else {
		struct ibv_qp_cap zero = {0};

		n.qp = rc_qp(&n, n.srq, zero, NULL);
	}
	if (!n.qp) {
		printf("rhinet-gaps %s: FAIL: the connected QP: %s\n", role,
		       strerror(errno));
		return 1;
	}
	local_gid(n.ctx, n.gid_index, n.me.gid);
	n.me.qpn = n.qp->qp_num;
	n.me.dm_rkey = n.dm_mr ? n.dm_mr->rkey : 0;
	fd = tcp_connect(srv, port);
	xfer(fd, &n.me, &n.peer, sizeof(n.me));
	connect_qp(&n);
	if (!srv) {
		for (uint32_t i = 0; i < RECVS; i++) {
			struct ibv_sge sge = {(uintptr_t)n.buf + RECV +
						      i * RECV_SLOT,
					      RECV_SLOT, n.mr->lkey};
			struct ibv_recv_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1};
			struct ibv_recv_wr *bad;

			if (ibv_post_srq_recv(n.srq, &wr, &bad))
				die("post_srq_recv");
		}
	}
	sync_peer(fd); /* both QPs connected, receives posted */
	if (srv) {
		n.have_dm = n.have_dm && n.peer.dm_rkey;
		client(&n, fd);
	} else {
		server(&n, fd);
	}
	sync_peer(fd);
	close(fd);

	check(!ibv_destroy_qp(n.qp), "destroy QP");
	if (n.dm_mr)
		check(!ibv_dereg_mr(n.dm_mr), "dereg the DM MR");
	if (n.dm)
		check(!ibv_free_dm(n.dm), "free the DM");
	ibv_destroy_srq(n.srq);
	ibv_destroy_cq(n.cq);
	ibv_dereg_mr(n.mr);
	ibv_dealloc_pd(n.pd);
	ibv_close_device(n.ctx);
	printf("rhinet-gaps %s: %s (%d checks, %d failed)\n", role,
	       failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
