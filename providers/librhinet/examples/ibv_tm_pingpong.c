// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibv_tm_pingpong: the standard ibverbs tag-matching API (IBV_SRQT_TM,
 * ibv_post_srq_ops, IBV_WC_TM_*, ibv_wc_read_tm_info) between two nodes
 * over RC, written against libibverbs alone (it would run as it is on
 * any device whose tm_caps have IBV_TM_CAP_RC), every byte checked.
 *
 * The receiver (server) has a TM SRQ under its RC QP; the sender (client)
 * a plain RC QP. Over TCP they swap QP numbers and GIDs, then step
 * through:
 *   expected    tags added first (signaled: IBV_WC_TM_ADD), then eager
 *               messages of 0 B .. 200 KiB after their ibv_tmh: one
 *               IBV_WC_TM_RECV each, MATCH | DATA_VALID, recv_wr_id, tag
 *               and app_ctx from ibv_wc_read_tm_info, the data past the
 *               header
 *   unexpected  a tag nobody added: the whole message in an SRQ buffer
 *               (IBV_WC_TM_RECV without MATCH); a tag added before
 *               software reported it gets IBV_WC_TM_SYNC_REQ and matches
 *               nothing (the next one is unexpected too) until
 *               IBV_WR_TAG_SYNC reports both; then it matches
 *   no_tag      an IBV_TMH_NO_TAG message: IBV_WC_TM_NO_TAG
 *   rendezvous  ibv_tmh + ibv_rvh naming 1 MiB of the sender's memory:
 *               MATCH, the receiving device reads it, DATA_VALID; the
 *               sender receives the FIN (IBV_TMH_FIN, its app_ctx and tag)
 *   remove      a removed tag's message is unexpected; removing one that
 *               matched fails with IBV_WC_TM_ERR
 *   full        more tags than max_num_tags: ibv_post_srq_ops says ENOMEM
 *
 *   server: ibv_tm_pingpong [-d DEV] [-g GID_INDEX] [-p PORT]
 *   client: ibv_tm_pingpong [-d DEV] [-g GID_INDEX] [-p PORT] SERVER_IP
 * Prints "ibv_tm_pingpong: PASS" and exits 0, or names what failed.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include "example_tcp.h"
#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (4u << 20)
#define RNDV_BYTES (1u << 20)
#define SRQ_BUFS 16
#define SRQ_BUF_BYTES 65536
#define MAX_TAGS 8
#define TMH sizeof(struct ibv_tmh)

static int failures;
#define FAIL(...)                                             \
	do {                                                  \
		fprintf(stderr, "ibv_tm_pingpong: FAIL: ");   \
		fprintf(stderr, __VA_ARGS__);                 \
		fprintf(stderr, "\n");                        \
		failures++;                                   \
	} while (0)

static int sock = -1;

/* Both sides reach step @s before either goes on. */
static void step(uint32_t s)
{
	uint32_t peer;

	if (example_step(sock, s, &peer)) {
		FAIL("lost step with the peer at %u (peer %u)", s, peer);
		exit(1);
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the device ----------------------------------------------------------- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqx; /* server: TM completions need ibv_cq_ex */
	struct ibv_cq *cq;
	struct ibv_srq *srq; /* server */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
};

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int setup(struct side *s, const char *dev, bool server)
{
	struct ibv_device_attr_ex da = {0};
	struct ibv_qp_init_attr qa = {0};

	s->ctx = open_device(dev);
	if (!s->ctx) {
		FAIL("no device %s", dev ? dev : "");
		return -1;
	}
	if (ibv_query_device_ex(s->ctx, NULL, &da)) {
		FAIL("ibv_query_device_ex: %s", strerror(errno));
		return -1;
	}
	printf("tm_caps: flags 0x%x max_num_tags %u max_ops %u max_sge %u max_rndv_hdr_size %u\n",
	       da.tm_caps.flags, da.tm_caps.max_num_tags, da.tm_caps.max_ops,
	       da.tm_caps.max_sge, da.tm_caps.max_rndv_hdr_size);
	if (!(da.tm_caps.flags & IBV_TM_CAP_RC) ||
	    da.tm_caps.max_num_tags < MAX_TAGS || da.tm_caps.max_sge < 1 ||
	    da.tm_caps.max_rndv_hdr_size <
		    sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)) {
		FAIL("the device offers no tag matching on RC");
		return -1;
	}
	if (ibv_query_gid(s->ctx, 1, s->gid_index, &s->gid)) {
		FAIL("no GID %d", s->gid_index);
		return -1;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF_BYTES);
	if (!s->pd || !s->buf)
		return -1;
	memset(s->buf, 0, BUF_BYTES);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr) {
		FAIL("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	if (server) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 256,
			.wc_flags = IBV_WC_STANDARD_FLAGS |
				    IBV_WC_EX_WITH_TM_INFO,
		};
		struct ibv_srq_init_attr_ex sa = {0};

		s->cqx = ibv_create_cq_ex(s->ctx, &ca);
		if (!s->cqx) {
			FAIL("ibv_create_cq_ex: %s", strerror(errno));
			return -1;
		}
		s->cq = ibv_cq_ex_to_cq(s->cqx);
		sa.attr.max_wr = SRQ_BUFS;
		sa.attr.max_sge = 1;
		sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
		sa.srq_type = IBV_SRQT_TM;
		sa.pd = s->pd;
		sa.cq = s->cq;
		sa.tm_cap.max_num_tags = MAX_TAGS;
		sa.tm_cap.max_ops = 32;
		s->srq = ibv_create_srq_ex(s->ctx, &sa);
		if (!s->srq) {
			FAIL("ibv_create_srq_ex(IBV_SRQT_TM): %s",
			     strerror(errno));
			return -1;
		}
	} else {
		s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
		if (!s->cq)
			return -1;
	}
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.srq = s->srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 32;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_wr = s->srq ? 0 : 16;
	qa.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->pd, &qa);
	if (!s->qp) {
		FAIL("ibv_create_qp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct wire_addr {
	uint32_t qpn;
	uint8_t gid[16];
};

static int connect_qp(struct side *s, const struct wire_addr *peer)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(s->qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* ---- completions ----------------------------------------------------------- */

struct comp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int flags;
	uint32_t byte_len;
	struct ibv_wc_tm_info tm;
};

/* The server's next completion, through ibv_cq_ex; false after 20 s. */
static bool next_ex(struct side *s, struct comp *c)
{
	struct ibv_poll_cq_attr pa = {0};
	double end = now() + 20;
	int ret;

	while ((ret = ibv_start_poll(s->cqx, &pa)) == ENOENT)
		if (now() > end) {
			FAIL("no completion on the server");
			return false;
		}
	if (ret) {
		FAIL("ibv_start_poll: %d", ret);
		return false;
	}
	memset(c, 0, sizeof(*c));
	c->wr_id = s->cqx->wr_id;
	c->status = s->cqx->status;
	c->opcode = ibv_wc_read_opcode(s->cqx);
	c->flags = ibv_wc_read_wc_flags(s->cqx);
	c->byte_len = ibv_wc_read_byte_len(s->cqx);
	ibv_wc_read_tm_info(s->cqx, &c->tm);
	ibv_end_poll(s->cqx);
	return true;
}

/* The client's next completion; false after 20 s. */
static bool next_wc(struct side *s, struct ibv_wc *wc)
{
	double end = now() + 20;
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, wc)) == 0)
		if (now() > end) {
			FAIL("no completion on the client");
			return false;
		}
	return n == 1;
}

static void expect_op(const struct comp *c, enum ibv_wc_opcode op,
		      uint64_t wr_id, unsigned int flags, const char *what)
{
	if (c->status != IBV_WC_SUCCESS || c->opcode != op ||
	    c->wr_id != wr_id || c->flags != flags)
		FAIL("%s: status %s opcode %d wr_id %llu flags 0x%x, expected opcode %d wr_id %llu flags 0x%x",
		     what, ibv_wc_status_str(c->status), c->opcode,
		     (unsigned long long)c->wr_id, c->flags, op,
		     (unsigned long long)wr_id, flags);
}

/* ---- the server's tag list ------------------------------------------------ */

static int ops(struct side *s, struct ibv_ops_wr *wr)
{
	struct ibv_ops_wr *bad = NULL;

	return ibv_post_srq_ops(s->srq, wr, &bad);
}

/* Adds a tag (signaled); the entry's handle, or -1. */
static int add_tag(struct side *s, uint64_t tag, size_t off, size_t len,
		   uint64_t recv_wr_id, unsigned int want_flags)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, (uint32_t)len,
			      s->mr->lkey};
	struct ibv_ops_wr wr = {0};
	struct comp c;

	wr.wr_id = 1000 + recv_wr_id;
	wr.opcode = IBV_WR_TAG_ADD;
	wr.flags = IBV_OPS_SIGNALED;
	wr.tm.add.recv_wr_id = recv_wr_id;
	wr.tm.add.sg_list = &sge;
	wr.tm.add.num_sge = 1;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = ~0ull;
	if (ops(s, &wr)) {
		FAIL("ibv_post_srq_ops(ADD tag %llu)",
		     (unsigned long long)tag);
		return -1;
	}
	if (!next_ex(s, &c))
		return -1;
	expect_op(&c, IBV_WC_TM_ADD, wr.wr_id, want_flags, "ADD");
	return (int)wr.tm.handle;
}

/* A sync reporting @count unexpected messages handled (signaled). */
static void sync_tags(struct side *s, uint32_t count, unsigned int want_flags)
{
	struct ibv_ops_wr wr = {0};
	struct comp c;

	wr.wr_id = 77;
	wr.opcode = IBV_WR_TAG_SYNC;
	wr.flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
	wr.tm.unexpected_cnt = count;
	if (ops(s, &wr))
		FAIL("ibv_post_srq_ops(SYNC)");
	else if (next_ex(s, &c))
		expect_op(&c, IBV_WC_TM_SYNC, 77, want_flags, "SYNC");
}

static void post_srq_buf(struct side *s, uint32_t i)
{
	size_t off = BUF_BYTES - (size_t)SRQ_BUFS * SRQ_BUF_BYTES +
		     (size_t)i * SRQ_BUF_BYTES;
	struct ibv_sge sge = {(uintptr_t)s->buf + off, SRQ_BUF_BYTES,
			      s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 500 + i, .sg_list = &sge,
				 .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (ibv_post_srq_recv(s->srq, &wr, &bad))
		FAIL("ibv_post_srq_recv");
}

static uint8_t *srq_buf(struct side *s, uint64_t wr_id)
{
	return s->buf + BUF_BYTES - (size_t)SRQ_BUFS * SRQ_BUF_BYTES +
	       (size_t)(wr_id - 500) * SRQ_BUF_BYTES;
}

/*
 * The next completion is an unexpected message from an SRQ buffer with
 * @tag and @len data bytes of @seed; the buffer is posted again.
 */
static void expect_unexpected(struct side *s, uint64_t tag, uint32_t seed,
			      size_t len, enum ibv_wc_opcode op, uint8_t tmh_op)
{
	struct comp c;
	const struct ibv_tmh *h;
	uint8_t *b;

	if (!next_ex(s, &c))
		return;
	if (c.status != IBV_WC_SUCCESS || c.opcode != op ||
	    (c.flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) ||
	    c.wr_id < 500 || c.wr_id >= 500 + SRQ_BUFS) {
		FAIL("unexpected tag %llu: status %s opcode %d flags 0x%x wr_id %llu",
		     (unsigned long long)tag, ibv_wc_status_str(c.status),
		     c.opcode, c.flags, (unsigned long long)c.wr_id);
		return;
	}
	b = srq_buf(s, c.wr_id);
	h = (const struct ibv_tmh *)b;
	if (c.byte_len != TMH + len || h->opcode != tmh_op ||
	    be64toh(h->tag) != tag || !example_same(b + TMH, seed, len))
		FAIL("unexpected tag %llu: %u bytes, header op %u tag %llu, data %s",
		     (unsigned long long)tag, c.byte_len, h->opcode,
		     (unsigned long long)be64toh(h->tag),
		     example_same(b + TMH, seed, len) ? "ok" : "wrong");
	post_srq_buf(s, (uint32_t)(c.wr_id - 500));
}

/* ---- the client's messages ------------------------------------------------ */

static void put_tmh(uint8_t *p, uint8_t op, uint32_t app_ctx, uint64_t tag)
{
	struct ibv_tmh h = {.opcode = op};

	h.app_ctx = htobe32(app_ctx);
	h.tag = htobe64(tag);
	memcpy(p, &h, sizeof(h));
}

/* Sends @len bytes at @off (header already there) and waits for it. */
static void send_msg(struct side *s, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)s->buf + off, (uint32_t)len,
			      s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(s->qp, &wr, &bad)) {
		FAIL("ibv_post_send");
		return;
	}
	if (next_wc(s, &wc) &&
	    (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	     wc.opcode != IBV_WC_SEND))
		FAIL("send %llu: %s", (unsigned long long)wr_id,
		     ibv_wc_status_str(wc.status));
}

/* An eager message: ibv_tmh, then @len bytes of @seed. */
static void send_eager(struct side *s, uint8_t op, uint64_t tag,
		       uint32_t app_ctx, uint32_t seed, size_t len)
{
	put_tmh(s->buf, op, app_ctx, tag);
	example_fill(s->buf + TMH, seed, len);
	send_msg(s, 0, TMH + len, tag);
}

/* ---- the steps ------------------------------------------------------------- */

static const size_t sizes[] = {0, 1, 1000, 4080, 4081, 200000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define EAGER_SLOT (256u * 1024)

static void server(struct side *s)
{
	uint32_t unexpected = 0;
	struct comp c;
	int h, d;

	for (uint32_t i = 0; i < SRQ_BUFS; i++)
		post_srq_buf(s, i);

	/* expected: the tags first */
	for (uint32_t i = 0; i < NSIZES; i++)
		add_tag(s, 100 + i, i * EAGER_SLOT, EAGER_SLOT, 10 + i, 0);
	step(1);
	for (uint32_t n = 0; n < NSIZES; n++) {
		uint32_t i;

		if (!next_ex(s, &c))
			return;
		i = (uint32_t)(c.wr_id - 10);
		if (c.status != IBV_WC_SUCCESS || c.opcode != IBV_WC_TM_RECV ||
		    i >= NSIZES ||
		    c.flags != (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) ||
		    c.tm.tag != 100 + i || c.tm.priv != 7000 + i ||
		    c.byte_len != sizes[i] ||
		    !example_same(s->buf + i * EAGER_SLOT, 40 + i, sizes[i])) {
			FAIL("expected #%u: %s opcode %d wr_id %llu flags 0x%x tag %llu priv %u len %u",
			     n, ibv_wc_status_str(c.status), c.opcode,
			     (unsigned long long)c.wr_id, c.flags,
			     (unsigned long long)c.tm.tag, c.tm.priv,
			     c.byte_len);
		}
	}
	printf("expected: %zu eager messages matched, every byte checked\n",
	       NSIZES);
	step(2);

	/* unexpected: nobody added tag 200 */
	expect_unexpected(s, 200, 50, 3000, IBV_WC_TM_RECV, IBV_TMH_EAGER);
	unexpected++;
	/* Not reported yet: an entry added now asks for a sync and matches
	 * nothing, so the second message of tag 201 is unexpected too.
	 */
	h = add_tag(s, 201, 0, EAGER_SLOT, 20, IBV_WC_TM_SYNC_REQ);
	step(3);
	expect_unexpected(s, 201, 51, 500, IBV_WC_TM_RECV, IBV_TMH_EAGER);
	unexpected++;
	sync_tags(s, unexpected, 0);
	step(4);
	if (next_ex(s, &c)) {
		expect_op(&c, IBV_WC_TM_RECV, 20,
			  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID,
			  "tag 201 after the sync");
		if (c.tm.tag != 201 || !example_same(s->buf, 52, 700))
			FAIL("tag 201 after the sync: tag %llu, data",
			     (unsigned long long)c.tm.tag);
	}
	printf("unexpected: into SRQ buffers, sync, then matched (entry %d)\n",
	       h);
	step(5);

	/* no_tag */
	expect_unexpected(s, 202, 53, 100, IBV_WC_TM_NO_TAG, IBV_TMH_NO_TAG);
	printf("no_tag: IBV_WC_TM_NO_TAG\n");
	step(6);

	/* rendezvous */
	add_tag(s, 300, 0, RNDV_BYTES, 30, 0);
	step(7);
	if (next_ex(s, &c)) {
		expect_op(&c, IBV_WC_TM_RECV, 30, IBV_WC_TM_MATCH,
			  "rendezvous match");
		if (c.tm.tag != 300 || c.tm.priv != 0xcafe)
			FAIL("rendezvous match: tag %llu priv 0x%x",
			     (unsigned long long)c.tm.tag, c.tm.priv);
	}
	if (next_ex(s, &c)) {
		expect_op(&c, IBV_WC_TM_RECV, 30, IBV_WC_TM_DATA_VALID,
			  "rendezvous data");
		if (c.byte_len != RNDV_BYTES || !example_same(s->buf, 60, RNDV_BYTES))
			FAIL("rendezvous data: %u bytes, %s", c.byte_len,
			     example_same(s->buf, 60, RNDV_BYTES) ? "same" : "wrong");
	}
	printf("rendezvous: 1 MiB read by the device, every byte checked\n");
	step(8);

	/* remove */
	h = add_tag(s, 400, 0, EAGER_SLOT, 40, 0);
	d = add_tag(s, 401, EAGER_SLOT, EAGER_SLOT, 41, 0);
	{
		struct ibv_ops_wr del = {.wr_id = 88, .opcode = IBV_WR_TAG_DEL,
					 .flags = IBV_OPS_SIGNALED};

		del.tm.handle = (uint32_t)h;
		if (ops(s, &del))
			FAIL("ibv_post_srq_ops(DEL)");
		else if (next_ex(s, &c))
			expect_op(&c, IBV_WC_TM_DEL, 88, 0, "DEL");
	}
	step(9);
	expect_unexpected(s, 400, 70, 64, IBV_WC_TM_RECV, IBV_TMH_EAGER);
	unexpected++;
	sync_tags(s, unexpected, 0);
	step(10);
	/* Tag 401's message has matched (its send completed) but its
	 * completion is not polled yet: removing the entry now fails.
	 */
	step(11);
	{
		struct ibv_ops_wr del = {.wr_id = 89, .opcode = IBV_WR_TAG_DEL,
					 .flags = IBV_OPS_SIGNALED};

		del.tm.handle = (uint32_t)d;
		if (ops(s, &del))
			FAIL("ibv_post_srq_ops(DEL of a matched tag)");
	}
	if (next_ex(s, &c))
		expect_op(&c, IBV_WC_TM_RECV, 41,
			  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "tag 401");
	if (next_ex(s, &c) && (c.status != IBV_WC_TM_ERR ||
			       c.opcode != IBV_WC_TM_DEL || c.wr_id != 89))
		FAIL("DEL of a matched tag: %s opcode %d wr_id %llu",
		     ibv_wc_status_str(c.status), c.opcode,
		     (unsigned long long)c.wr_id);
	printf("remove: a removed tag is unexpected, a matched one IBV_WC_TM_ERR\n");

	/* full: MAX_TAGS entries at most */
	{
		struct ibv_ops_wr wr[MAX_TAGS + 1];
		struct ibv_ops_wr *bad = NULL;
		struct ibv_sge sge = {(uintptr_t)s->buf, 64, s->mr->lkey};
		int ret;

		memset(wr, 0, sizeof(wr));
		for (int i = 0; i <= MAX_TAGS; i++) {
			wr[i].wr_id = 900 + i;
			wr[i].opcode = IBV_WR_TAG_ADD;
			wr[i].tm.add.sg_list = &sge;
			wr[i].tm.add.num_sge = 1;
			wr[i].tm.add.tag = 900 + i;
			wr[i].tm.add.mask = ~0ull;
			wr[i].next = i < MAX_TAGS ? &wr[i + 1] : NULL;
		}
		ret = ibv_post_srq_ops(s->srq, wr, &bad);
		if (ret != ENOMEM || bad != &wr[MAX_TAGS])
			FAIL("%d tags in a list of %d: ret %d, bad %ld",
			     MAX_TAGS + 1, MAX_TAGS, ret,
			     bad ? (long)(bad - wr) : -1L);
		else
			printf("full: tag %d of %d refused (ENOMEM)\n",
			       MAX_TAGS + 1, MAX_TAGS);
	}
	step(12);
}

static void client(struct side *s)
{
	struct ibv_recv_wr *bad;
	struct ibv_wc wc;

	step(1);
	for (uint32_t i = 0; i < NSIZES; i++)
		send_eager(s, IBV_TMH_EAGER, 100 + i, 7000 + i, 40 + i,
			   sizes[i]);
	step(2);
	send_eager(s, IBV_TMH_EAGER, 200, 1, 50, 3000);
	step(3);
	send_eager(s, IBV_TMH_EAGER, 201, 2, 51, 500);
	step(4);
	send_eager(s, IBV_TMH_EAGER, 201, 3, 52, 700);
	step(5);
	send_eager(s, IBV_TMH_NO_TAG, 202, 4, 53, 100);
	step(6);

	/* rendezvous: the data at 1 MiB, a receive for the FIN */
	{
		uint8_t *data = s->buf + RNDV_BYTES;
		struct ibv_rvh rvh;
		struct ibv_sge rs = {(uintptr_t)s->buf + 3 * RNDV_BYTES, 64,
				     s->mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = 55, .sg_list = &rs,
					 .num_sge = 1};
		const struct ibv_tmh *fin;
		bool sent = false, got_fin = false;

		example_fill(data, 60, RNDV_BYTES);
		if (ibv_post_recv(s->qp, &rw, &bad))
			FAIL("ibv_post_recv for the FIN");
		step(7);
		put_tmh(s->buf, IBV_TMH_RNDV, 0xcafe, 300);
		rvh.va = htobe64((uintptr_t)data);
		rvh.rkey = htobe32(s->mr->rkey);
		rvh.len = htobe32(RNDV_BYTES);
		memcpy(s->buf + TMH, &rvh, sizeof(rvh));
		{
			struct ibv_sge sge = {(uintptr_t)s->buf,
					      TMH + sizeof(rvh), s->mr->lkey};
			struct ibv_send_wr wr = {.wr_id = 300,
						 .sg_list = &sge,
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND,
						 .send_flags =
							 IBV_SEND_SIGNALED};
			struct ibv_send_wr *sbad;

			if (ibv_post_send(s->qp, &wr, &sbad))
				FAIL("ibv_post_send(rendezvous)");
		}
		/* The send completes, and the FIN arrives (any order). */
		while ((!sent || !got_fin) && next_wc(s, &wc)) {
			if (wc.status != IBV_WC_SUCCESS) {
				FAIL("rendezvous: %s",
				     ibv_wc_status_str(wc.status));
				break;
			}
			if (wc.opcode == IBV_WC_SEND) {
				sent = true;
				continue;
			}
			got_fin = true;
			fin = (const struct ibv_tmh *)(s->buf +
						       3 * RNDV_BYTES);
			if (wc.opcode != IBV_WC_RECV || wc.wr_id != 55 ||
			    wc.byte_len != TMH || fin->opcode != IBV_TMH_FIN ||
			    be32toh(fin->app_ctx) != 0xcafe ||
			    be64toh(fin->tag) != 300)
				FAIL("FIN: opcode %d len %u tmh op %u app_ctx 0x%x tag %llu",
				     wc.opcode, wc.byte_len, fin->opcode,
				     be32toh(fin->app_ctx),
				     (unsigned long long)be64toh(fin->tag));
		}
		if (got_fin)
			printf("rendezvous: FIN received\n");
	}
	step(8);
	step(9);
	send_eager(s, IBV_TMH_EAGER, 400, 5, 70, 64);
	step(10);
	send_eager(s, IBV_TMH_EAGER, 401, 6, 71, 64);
	step(11);
	step(12);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	struct side s = {0};
	struct wire_addr me, peer;
	int port = 18740, opt;
	bool is_server;

	while ((opt = getopt(argc, argv, "d:g:p:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			s.gid_index = atoi(optarg);
			break;
		case 'p':
			port = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEV] [-g GID_INDEX] [-p PORT] [SERVER_IP]\n",
				argv[0]);
			return 2;
		}
	}
	is_server = optind >= argc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (setup(&s, dev, is_server))
		return 1;
	sock = example_tcp_open(is_server ? NULL : argv[optind], port, 60);
	if (sock < 0)
		return 1;
	me.qpn = s.qp->qp_num;
	memcpy(me.gid, s.gid.raw, 16);
	if (example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false)) {
		FAIL("address exchange");
		return 1;
	}
	if (connect_qp(&s, &peer)) {
		FAIL("connecting the QP: %s", strerror(errno));
		return 1;
	}
	step(0);
	if (is_server)
		server(&s);
	else
		client(&s);
	if (failures)
		return 1;
	printf("ibv_tm_pingpong: PASS\n");
	return 0;
}
