// SPDX-License-Identifier: BSD-2-Clause
/*
 * The extended verbs between two nodes through libibverbs and the installed
 * provider: RC and UD QPs driven through ibv_qp_ex (wr_start ... wr_complete,
 * every opcode, SGE lists, inline lists, wr_abort), completions read through
 * ibv_cq_ex (start_poll/next_poll/end_poll and every read_*), the receive CQ
 * waited for through a completion channel, completion events moderated
 * with ibv_modify_cq. Every byte moved and every
 * completion field is checked on both sides, then the error cases: batches
 * that must post nothing, and objects the provider must refuse.
 *
 *   rhinet-qpex [-d DEVICE] [-g GID_INDEX] [-p PORT]           server (node 1)
 *   rhinet-qpex [-d DEVICE] [-g GID_INDEX] [-p PORT] SERVER    client (node 0)
 *
 * The nodes swap QP numbers, GIDs and the MR over TCP; the client drives
 * every operation, the server posts receives and checks what arrived.
 * Exits 0 only if every check passed on this node.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
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

#define QKEY 0x11111111u
#define BUF_SIZE (1u << 20)
/* Regions of each node's one buffer. */
#define SRC 0u /* client: source bytes */
#define RECV (64u << 10) /* server: RC receive slots, 4 KiB each */
#define RECV_SLOT 4096u
#define RC_RECVS 16
#define WRITE_AREA (128u << 10) /* server: RDMA write target */
#define READ_AREA (160u << 10) /* server: read source; client: destination */
#define ATOMIC (176u << 10) /* server: the word; client: two results */
#define UD_RECV (192u << 10) /* server: UD receive slots */
#define UD_SLOT 2048u
#define UD_RECVS 4
#define GRH 40u
#define WIN (512u << 10) /* memory windows: a region of 64 KiB */
#define WIN_LEN (64u << 10)

static uint8_t pat(uint32_t i, uint32_t seed)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 8));
}

static void fill(uint8_t *p, uint32_t off, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(off + i, seed);
}

/* Bytes at @p equal pattern @seed from offset @off on. */
static bool same(const uint8_t *p, uint32_t off, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pat(off + i, seed))
			return false;
	return true;
}

/* ---- completions through ibv_cq_ex ---------------------------------------- */

struct comp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, qp_num, src_qp, slid;
	unsigned int wc_flags;
	uint32_t imm; /* host order */
	uint32_t inv; /* IBV_WC_WITH_INV: the key invalidated */
	uint8_t sl, dlid_path_bits;
};

static void read_comp(struct ibv_cq_ex *cq, struct comp *c)
{
	c->wr_id = cq->wr_id;
	c->status = cq->status;
	c->opcode = ibv_wc_read_opcode(cq);
	c->vendor_err = ibv_wc_read_vendor_err(cq);
	c->byte_len = ibv_wc_read_byte_len(cq);
	c->wc_flags = ibv_wc_read_wc_flags(cq);
	c->imm = c->wc_flags & IBV_WC_WITH_IMM ? ntohl(ibv_wc_read_imm_data(cq))
					       : 0;
	c->inv = c->wc_flags & IBV_WC_WITH_INV
			 ? ibv_wc_read_invalidated_rkey(cq)
			 : 0;
	c->qp_num = ibv_wc_read_qp_num(cq);
	c->src_qp = ibv_wc_read_src_qp(cq);
	c->slid = ibv_wc_read_slid(cq);
	c->sl = ibv_wc_read_sl(cq);
	c->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/* Appends what the CQ holds now (at most @max - *got entries). */
static void drain(struct ibv_cq_ex *cq, struct comp *out, int max, int *got)
{
	struct ibv_poll_cq_attr attr = {};
	int ret;

	if (*got >= max)
		return;
	ret = ibv_start_poll(cq, &attr);
	if (ret == ENOENT)
		return;
	check(ret == 0, "start_poll returned %d", ret);
	if (ret)
		return;
	do {
		read_comp(cq, &out[(*got)++]);
		if (*got >= max)
			break;
		ret = ibv_next_poll(cq);
		check(ret == 0 || ret == ENOENT, "next_poll returned %d", ret);
	} while (ret == 0);
	ibv_end_poll(cq);
}

/* Busy-polls until @n completions arrived (or 30 s passed). */
static int poll_n(struct ibv_cq_ex *cq, struct comp *out, int n)
{
	double end = now() + 30;
	int got = 0;

	while (got < n && now() < end)
		drain(cq, out, n, &got);
	check(got == n, "%d of %d completions", got, n);
	/* Nothing more than expected. */
	{
		struct comp extra[4];
		int more = 0;

		usleep(20000);
		drain(cq, extra, 4, &more);
		check(more == 0, "%d unexpected completions (first wr_id %llu)",
		      more, more ? (unsigned long long)extra[0].wr_id : 0ull);
	}
	return got;
}

/* Waits for @n completions through the completion channel. */
static int wait_n(struct ibv_comp_channel *ch, struct ibv_cq_ex *cq,
		  struct comp *out, int n, int *events)
{
	double end = now() + 30;
	int got = 0;

	while (got < n && now() < end) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_req_notify_cq(ibv_cq_ex_to_cq(cq), 0))
			die("req_notify_cq");
		drain(cq, out, n, &got);
		if (got >= n)
			break;
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			die("get_cq_event");
		check(ev_cq == ibv_cq_ex_to_cq(cq) && ev_ctx == cq,
		      "event for cq %p ctx %p", (void *)ev_cq, ev_ctx);
		ibv_ack_cq_events(ev_cq, 1);
		(*events)++;
	}
	check(got == n, "%d of %d receive completions", got, n);
	return got;
}

static void expect(const struct comp *c, uint64_t wr_id, enum ibv_wc_opcode op,
		   uint32_t byte_len, uint32_t qp_num, unsigned int wc_flags,
		   uint32_t imm, const char *what)
{
	check(c->wr_id == wr_id, "%s: wr_id %llu, expected %llu", what,
	      (unsigned long long)c->wr_id, (unsigned long long)wr_id);
	check(c->status == IBV_WC_SUCCESS, "%s: status %s (vendor_err %u)",
	      what, ibv_wc_status_str(c->status), c->vendor_err);
	check(c->opcode == op, "%s: opcode %d, expected %d", what, c->opcode,
	      op);
	check(c->vendor_err == 0, "%s: vendor_err %u", what, c->vendor_err);
	check(c->byte_len == byte_len, "%s: byte_len %u, expected %u", what,
	      c->byte_len, byte_len);
	check(c->qp_num == qp_num, "%s: qp_num %u, expected %u", what,
	      c->qp_num, qp_num);
	check(c->wc_flags == wc_flags, "%s: wc_flags %#x, expected %#x", what,
	      c->wc_flags, wc_flags);
	check(c->imm == imm, "%s: imm %#x, expected %#x", what, c->imm, imm);
	check(!c->slid && !c->sl && !c->dlid_path_bits,
	      "%s: slid %u sl %u dlid_path_bits %u on Ethernet", what, c->slid,
	      c->sl, c->dlid_path_bits);
}

/* ---- setup ---------------------------------------------------------------- */

struct info {
	uint32_t rc_qpn, ud_qpn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *rc, *ud;
	struct ibv_qp_ex *rcx, *udx;
	struct ibv_ah *ah;
	uint32_t max_inline, max_sge;
	int gid_index;
	struct info me, peer;
};

static const uint64_t kWcAll = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			       IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			       IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			       IBV_WC_EX_WITH_DLID_PATH_BITS;

static struct ibv_cq_ex *make_cq(struct node *n, struct ibv_comp_channel *ch,
				 void *ctx_is_self)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 256, .channel = ch, .wc_flags = kWcAll};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(n->ctx, &a);

	if (!cq)
		die("ibv_create_cq_ex");
	if (ctx_is_self)
		ibv_cq_ex_to_cq(cq)->cq_context = cq;
	return cq;
}

/* @cap_out (optional): what the QP got, as creation reports it. */
static struct ibv_qp *make_qp(struct node *n, enum ibv_qp_type type,
			      uint64_t ops, uint32_t comp_mask_extra,
			      struct ibv_qp_cap *cap_out)
{
	struct ibv_qp *qp;
	struct ibv_qp_init_attr_ex a = {
		.send_cq = ibv_cq_ex_to_cq(n->scq),
		.recv_cq = ibv_cq_ex_to_cq(n->rcq),
		.cap = {.max_send_wr = 64,
			.max_recv_wr = 32,
			.max_send_sge = 4,
			.max_recv_sge = 1,
			.max_inline_data = 128},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | comp_mask_extra,
		.pd = n->pd,
		.send_ops_flags = ops,
	};

	qp = ibv_create_qp_ex(n->ctx, &a);
	if (qp && cap_out)
		*cap_out = a.cap;
	return qp;
}

static const uint64_t kRcOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
static const uint64_t kUdOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

/* A plain RC QP (no qp_ex), four one-SGE WRs each way, both queues on cq. */
static struct ibv_qp *plain_rc_qp(struct node *n, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(n->pd, &a);
}

static void ah_attr(struct node *n, struct ibv_ah_attr *ah)
{
	ah_attr_to(ah, n->peer.gid, n->gid_index);
}

/* RTR toward the peer's RC QP, with the attributes kRcRtrMask names. */
static void rc_rtr_attr(struct node *n, struct ibv_qp_attr *a)
{
	rc_rtr_attr_to(a, n->peer.rc_qpn, n->peer.gid, n->gid_index, 1);
}

static void connect_qps(struct node *n)
{
	struct ibv_qp_attr a;

	rc_connect(n->rc, "RC", n->peer.rc_qpn, n->peer.gid, n->gid_index, 1);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(n->ud, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(n->ud, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(n->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");

	struct ibv_ah_attr aa;
	ah_attr(n, &aa);
	n->ah = ibv_create_ah(n->pd, &aa);
	if (!n->ah)
		die("ibv_create_ah");
}

static void setup(struct node *n, const char *dev_name)
{
	struct ibv_qp_cap cap;

	n->ctx = open_device(dev_name);
	n->mr = alloc_buffer(n->ctx, BUF_SIZE, &n->pd, &n->buf);
	n->ch = ibv_create_comp_channel(n->ctx);
	if (!n->mr || !n->ch)
		die("mr/channel");
	n->scq = make_cq(n, NULL, NULL);
	n->rcq = make_cq(n, n->ch, n);
	n->rc = make_qp(n, IBV_QPT_RC, kRcOps, 0, &cap);
	n->ud = make_qp(n, IBV_QPT_UD, kUdOps, 0, NULL);
	if (!n->rc || !n->ud)
		die("ibv_create_qp_ex");
	n->rcx = ibv_qp_to_qp_ex(n->rc);
	n->udx = ibv_qp_to_qp_ex(n->ud);
	check(n->rcx && n->udx, "ibv_qp_to_qp_ex of an extended QP is NULL");
	if (!n->rcx || !n->udx)
		exit(1);
	/*
	 * The limits creation reported (ibv_query_qp's IBV_QP_CAP is not used:
	 * rhinet.ko answers it with zero SGEs and the device's inline limit).
	 */
	n->max_inline = cap.max_inline_data;
	n->max_sge = cap.max_send_sge;
	check(n->max_inline >= 64 && n->max_sge >= 3,
	      "RC caps: inline %u, sge %u", n->max_inline, n->max_sge);
	local_gid(n->ctx, n->gid_index, n->me.gid);
	n->me.rc_qpn = n->rc->qp_num;
	n->me.ud_qpn = n->ud->qp_num;
	n->me.rkey = n->mr->rkey;
	n->me.addr = (uintptr_t)n->buf;
}

/* ---- the client: every operation through wr_* ----------------------------- */

static const uint8_t kA[25] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6,
			       0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad,
			       0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4,
			       0xb5, 0xb6, 0xb7, 0xb8};

static void inline_bytes(uint8_t *p, uint32_t len, uint8_t base)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(base + i * 3);
}

static bool inline_same(const uint8_t *p, uint32_t len, uint8_t base)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(base + i * 3))
			return false;
	return true;
}

static struct ibv_sge sge(struct node *n, uint32_t off, uint32_t len)
{
	struct ibv_sge s = {(uintptr_t)n->buf + off, len, n->mr->lkey};
	return s;
}

static void client_rc(struct node *n, int fd)
{
	struct ibv_qp_ex *q = n->rcx;
	uint64_t r = n->peer.addr;
	uint32_t rkey = n->peer.rkey, me = n->me.rc_qpn;
	uint8_t b1[25], b2[15], c24[24];
	struct comp c[16];
	int ret;

	fill(n->buf + SRC, 0, 64u << 10, 1);
	sync_peer(fd); /* the server's receives are posted */

	ibv_wr_start(q);
	q->wr_id = 101;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	struct ibv_sge three[3] = {sge(n, SRC + 0, 100),
				   sge(n, SRC + 1000, 200),
				   sge(n, SRC + 3000, 300)};
	ibv_wr_set_sge_list(q, 3, three);
	memset(three, 0, sizeof(three)); /* the list was copied */

	q->wr_id = 102;
	q->wr_flags = 0; /* unsignaled: retired by the next completion */
	ibv_wr_send(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC + 5000, 64);

	q->wr_id = 103;
	q->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(q, htonl(0x12345678));
	memcpy(b1, kA, 25);
	inline_bytes(b2, 15, 0x40);
	struct ibv_data_buf two[2] = {{b1, 25}, {b2, 15}};
	ibv_wr_set_inline_data_list(q, 2, two);
	memset(b1, 0xee, 25); /* inline data was copied at the call */
	memset(b2, 0xee, 15);

	q->wr_id = 104;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(q, rkey, r + WRITE_AREA);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC + 8192, 4096);

	q->wr_id = 105;
	ibv_wr_rdma_write_imm(q, rkey, r + WRITE_AREA + 8192,
			      htonl(0xabcdef01));
	inline_bytes(c24, 24, 0x77);
	ibv_wr_set_inline_data(q, c24, 24);
	memset(c24, 0, 24);

	q->wr_id = 106;
	ibv_wr_rdma_read(q, rkey, r + READ_AREA);
	struct ibv_sge rd[2] = {sge(n, READ_AREA, 1000),
				sge(n, READ_AREA + 2000, 3000)};
	ibv_wr_set_sge_list(q, 2, rd);

	q->wr_id = 107;
	ibv_wr_atomic_fetch_add(q, rkey, r + ATOMIC, 5);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + ATOMIC, 8);

	q->wr_id = 108;
	q->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_atomic_cmp_swp(q, rkey, r + ATOMIC, 105, 777);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + ATOMIC + 8, 8);
	ret = ibv_wr_complete(q);
	check(ret == 0, "wr_complete of the RC batch: %d", ret);

	/* The classic call still works on an extended QP. */
	struct ibv_sge s32 = sge(n, SRC + 20000, 32);
	struct ibv_send_wr wr = {.wr_id = 109,
				 .sg_list = &s32,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	check(ibv_post_send(n->rc, &wr, &bad) == 0, "ibv_post_send on qp_ex");

	if (poll_n(n->scq, c, 8) == 8) {
		expect(&c[0], 101, IBV_WC_SEND, 600, me, 0, 0, "send sge list");
		expect(&c[1], 103, IBV_WC_SEND, 40, me, 0, 0,
		       "send_imm inline");
		expect(&c[2], 104, IBV_WC_RDMA_WRITE, 4096, me, 0, 0, "write");
		expect(&c[3], 105, IBV_WC_RDMA_WRITE, 24, me, 0, 0,
		       "write_imm inline");
		expect(&c[4], 106, IBV_WC_RDMA_READ, 4000, me, 0, 0, "read");
		expect(&c[5], 107, IBV_WC_FETCH_ADD, 8, me, 0, 0, "fetch_add");
		expect(&c[6], 108, IBV_WC_COMP_SWAP, 8, me, 0, 0, "cmp_swp");
		expect(&c[7], 109, IBV_WC_SEND, 32, me, 0, 0, "post_send");
	}
	check(same(n->buf + READ_AREA, 0, 1000, 3) &&
		      same(n->buf + READ_AREA + 2000, 1000, 3000, 3),
	      "RDMA read data differs");
	uint64_t fa, cs;
	memcpy(&fa, n->buf + ATOMIC, 8);
	memcpy(&cs, n->buf + ATOMIC + 8, 8);
	check(fa == 100, "fetch_add returned %llu, expected 100",
	      (unsigned long long)fa);
	check(cs == 105, "cmp_swp returned %llu, expected 105",
	      (unsigned long long)cs);
	sync_peer(fd); /* the server checks what arrived */
}

static void client_errors(struct node *n, int fd)
{
	struct ibv_qp_ex *q = n->rcx;
	struct ibv_sge many[64];
	uint8_t big[1024] = {0};
	struct comp c[4];
	int ret;

	/* wr_abort: nothing of the batch goes out. */
	ibv_wr_start(q);
	q->wr_id = 301;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC + 30000, 50);
	ibv_wr_abort(q);
	ibv_wr_start(q);
	q->wr_id = 302;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC + 31000, 70);
	ret = ibv_wr_complete(q);
	check(ret == 0, "wr_complete after wr_abort: %d", ret);
	if (poll_n(n->scq, c, 1) == 1)
		expect(&c[0], 302, IBV_WC_SEND, 70, n->me.rc_qpn, 0, 0,
		       "send after abort");

	/* Too many SGEs: the valid WR before it is not posted either. */
	ibv_wr_start(q);
	q->wr_id = 303;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC, 10);
	q->wr_id = 304;
	ibv_wr_send(q);
	for (uint32_t i = 0; i <= n->max_sge && i < 64; i++)
		many[i] = sge(n, SRC + i * 8, 8);
	ibv_wr_set_sge_list(q, n->max_sge + 1, many);
	ret = ibv_wr_complete(q);
	check(ret == EINVAL, "wr_complete with %u SGEs: %d, expected EINVAL",
	      n->max_sge + 1, ret);

	/* Inline data longer than the QP's max_inline_data. */
	ibv_wr_start(q);
	q->wr_id = 305;
	ibv_wr_send_imm(q, 0);
	ibv_wr_set_inline_data(q, big, n->max_inline + 1);
	ret = ibv_wr_complete(q);
	check(ret == EINVAL, "wr_complete with %u inline bytes: %d",
	      n->max_inline + 1, ret);

	/* A setter without an opcode call. */
	ibv_wr_start(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf, 8);
	ret = ibv_wr_complete(q);
	check(ret == EINVAL, "wr_complete of a lone setter: %d", ret);

	/* UD: a WR without wr_set_ud_addr; an opcode the QP was not made for. */
	ibv_wr_start(n->udx);
	n->udx->wr_id = 306;
	n->udx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(n->udx);
	ibv_wr_set_sge(n->udx, n->mr->lkey, (uintptr_t)n->buf, 8);
	ret = ibv_wr_complete(n->udx);
	check(ret == EINVAL, "UD WR without an address: %d", ret);
	ibv_wr_start(n->udx);
	ibv_wr_rdma_write(n->udx, 1, 0);
	ibv_wr_set_ud_addr(n->udx, n->ah, n->peer.ud_qpn, QKEY);
	ibv_wr_set_sge(n->udx, n->mr->lkey, (uintptr_t)n->buf, 8);
	ret = ibv_wr_complete(n->udx);
	check(ret == EOPNOTSUPP, "RDMA write on a UD qp_ex: %d", ret);

	/* None of those reached the wire: the next send is the next receive. */
	ibv_wr_start(q);
	q->wr_id = 307;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC + 33000, 90);
	ret = ibv_wr_complete(q);
	check(ret == 0, "wr_complete after the failed batches: %d", ret);
	if (poll_n(n->scq, c, 1) == 1)
		expect(&c[0], 307, IBV_WC_SEND, 90, n->me.rc_qpn, 0, 0,
		       "send after failed batches");
	sync_peer(fd);
}

/* Objects the provider must refuse. Local only. */
static void refusals(struct node *n)
{
	struct ibv_qp *qp;
	struct ibv_cq_ex *cq;

	/* Windows: bind and local invalidate on RC and UC, SEND_WITH_INV on
	 * RC only; TSO never.
	 */
	errno = 0;
	qp = make_qp(n, IBV_QPT_RC,
		     kRcOps | IBV_QP_EX_WITH_LOCAL_INV |
			     IBV_QP_EX_WITH_BIND_MW |
			     IBV_QP_EX_WITH_SEND_WITH_INV,
		     0, NULL);
	check(qp != NULL, "RC with the window operations: errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(n, IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV, 0, NULL);
	check(!qp && errno == EOPNOTSUPP, "UC with SEND_WITH_INV: errno %d",
	      errno);
	errno = 0;
	qp = make_qp(n, IBV_QPT_RC, IBV_QP_EX_WITH_TSO, 0, NULL);
	check(!qp && errno == EOPNOTSUPP, "RC with TSO: errno %d", errno);
	errno = 0;
	qp = make_qp(n, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, 0, NULL);
	check(!qp && errno == EOPNOTSUPP, "UD with RDMA_WRITE: errno %d",
	      errno);
	errno = 0;
	/* UC: SENDs and WRITEs, but no READ (nothing comes back). */
	qp = make_qp(n, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, 0, NULL);
	check(!qp && errno == EOPNOTSUPP, "UC with RDMA_READ: errno %d", errno);
	qp = make_qp(n, IBV_QPT_UC,
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		     0, NULL);
	check(qp != NULL, "UC qp_ex with SEND and WRITE: errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
	/* Create flags in comp_mask with no flag set ask for nothing. */
	errno = 0;
	qp = make_qp(n, IBV_QPT_RC, kRcOps, IBV_QP_INIT_ATTR_CREATE_FLAGS,
		     NULL);
	check(qp != NULL, "create flags 0 refused: errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
	{
		struct ibv_qp_init_attr_ex a = {
			.send_cq = ibv_cq_ex_to_cq(n->scq),
			.recv_cq = ibv_cq_ex_to_cq(n->rcq),
			.cap = {.max_send_wr = 4,
				.max_recv_wr = 4,
				.max_send_sge = 1,
				.max_recv_sge = 1},
			.qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_CREATE_FLAGS,
			.pd = n->pd,
			.create_flags = IBV_QP_CREATE_SCATTER_FCS,
		};
		errno = 0;
		qp = ibv_create_qp_ex(n->ctx, &a);
		check(!qp && errno == EOPNOTSUPP, "SCATTER_FCS: errno %d",
		      errno);
		if (qp)
			ibv_destroy_qp(qp);
	}

	static const uint64_t bad_wc[] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_EX_WITH_CVLAN,
		IBV_WC_EX_WITH_FLOW_TAG,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
	for (unsigned i = 0; i < sizeof(bad_wc) / sizeof(bad_wc[0]); i++) {
		struct ibv_cq_init_attr_ex a = {.cqe = 16,
						.wc_flags = bad_wc[i]};
		errno = 0;
		cq = ibv_create_cq_ex(n->ctx, &a);
		check(!cq && errno == EOPNOTSUPP,
		      "cq_ex wc_flags %#llx: errno %d",
		      (unsigned long long)bad_wc[i], errno);
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	{
		/* Tag matching (IBV_SRQT_TM) reports through tm_info. */
		struct ibv_cq_init_attr_ex a = {
			.cqe = 16, .wc_flags = IBV_WC_EX_WITH_TM_INFO};

		cq = ibv_create_cq_ex(n->ctx, &a);
		check(cq != NULL, "cq_ex with TM_INFO: errno %d", errno);
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	{
		struct ibv_cq_init_attr_ex a = {
			.cqe = 16,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
			.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN};
		errno = 0;
		cq = ibv_create_cq_ex(n->ctx, &a);
		check(!cq && errno == EOPNOTSUPP, "IGNORE_OVERRUN: errno %d",
		      errno);
	}
	{
		/* A plain QP is no qp_ex. */
		qp = plain_rc_qp(n, ibv_cq_ex_to_cq(n->scq));
		check(qp && !ibv_qp_to_qp_ex(qp), "plain QP as qp_ex");
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/*
 * Posting in the states ibverbs defines: a receive to a QP in RESET is
 * refused and accepted from INIT on; a send before RTS is refused; a send
 * to a QP in ERR is accepted and completes as flushed, like the receives
 * it holds (the drain-by-post idiom).
 */
static void state_corners(struct node *n)
{
	struct ibv_cq_ex *cq = make_cq(n, NULL, NULL);
	struct ibv_qp *qp = plain_rc_qp(n, ibv_cq_ex_to_cq(cq));
	struct ibv_sge s = sge(n, SRC, 64);
	struct ibv_recv_wr rwr = {.wr_id = 71, .sg_list = &s, .num_sge = 1};
	struct ibv_send_wr swr = {.wr_id = 72,
				  .sg_list = &s,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	struct ibv_recv_wr *rbad = NULL;
	struct ibv_send_wr *sbad = NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct comp c[2];
	int ret;

	check(qp != NULL, "state-corner QP: errno %d", errno);
	if (!qp)
		return;
	ret = ibv_post_recv(qp, &rwr, &rbad);
	check(ret == EINVAL && rbad == &rwr,
	      "receive posted to a QP in RESET: %d", ret);
	check(!ibv_modify_qp(qp, &a, kRcInitMask), "corner QP to INIT");
	ret = ibv_post_recv(qp, &rwr, &rbad);
	check(ret == 0, "receive posted in INIT: %d", ret);
	ret = ibv_post_send(qp, &swr, &sbad);
	check(ret == EINVAL && sbad == &swr, "send posted in INIT: %d", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "corner QP to ERR");
	ret = ibv_post_send(qp, &swr, &sbad);
	check(ret == 0, "send posted to a QP in ERR: %d", ret);
	if (poll_n(cq, c, 2) == 2) {
		bool recv_first = c[0].wr_id == 71;
		const struct comp *r = &c[recv_first ? 0 : 1];
		const struct comp *w = &c[recv_first ? 1 : 0];

		check(r->wr_id == 71 && r->status == IBV_WC_WR_FLUSH_ERR,
		      "receive in ERR: wr_id %llu status %d",
		      (unsigned long long)r->wr_id, r->status);
		check(w->wr_id == 72 && w->status == IBV_WC_WR_FLUSH_ERR,
		      "send in ERR: wr_id %llu status %d",
		      (unsigned long long)w->wr_id, w->status);
	}
	check(!ibv_destroy_qp(qp), "destroy corner QP");

	/*
	 * Two QPs on the CQ, each with a flushed receive in it, unpolled. A
	 * RESET takes one QP's CQEs out (the other's stays and is found);
	 * a destroy takes the rest.
	 */
	{
		struct ibv_qp *b = plain_rc_qp(n, ibv_cq_ex_to_cq(cq));
		struct ibv_qp *d = plain_rc_qp(n, ibv_cq_ex_to_cq(cq));
		struct ibv_qp *both[2] = {b, d};

		check(b && d, "two more corner QPs");
		if (!b || !d)
			return;
		for (int i = 0; i < 2; i++) {
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_INIT;
			a.port_num = 1;
			check(!ibv_modify_qp(both[i], &a, kRcInitMask),
			      "QP %d to INIT", i);
			rwr.wr_id = 91 + i;
			check(!ibv_post_recv(both[i], &rwr, &rbad),
			      "receive on QP %d", i);
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_ERR;
			check(!ibv_modify_qp(both[i], &a, IBV_QP_STATE),
			      "QP %d to ERR", i);
		}
		usleep(100000); /* the NIC writes both flushes */
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		check(!ibv_modify_qp(b, &a, IBV_QP_STATE), "QP to RESET");
		if (poll_n(cq, c, 1) == 1)
			check(c[0].wr_id == 92 && c[0].qp_num == d->qp_num &&
				      c[0].status == IBV_WC_WR_FLUSH_ERR,
			      "after a RESET: wr_id %llu qp %u status %d",
			      (unsigned long long)c[0].wr_id, c[0].qp_num,
			      c[0].status);
		rwr.wr_id = 93;
		check(!ibv_post_recv(d, &rwr, &rbad), "receive in ERR");
		usleep(100000);
		check(!ibv_destroy_qp(d), "destroy QP with a CQE left");
		check(!ibv_destroy_qp(b), "destroy reset QP");
		poll_n(cq, c, 0);
	}
	check(!ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), "destroy corner CQ");
}

/*
 * ibv_query_qp reports the address vector the QP was connected with, and
 * what it reports connects a reset QP again (no traffic: the peer's QP
 * never hears of it).
 */
static void query_reconnect(struct node *n)
{
	struct ibv_cq_ex *cq = make_cq(n, NULL, NULL);
	struct ibv_qp *qp = plain_rc_qp(n, ibv_cq_ex_to_cq(cq));
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1}, q;
	struct ibv_qp_init_attr init;
	int ret;

	check(qp != NULL, "query QP: errno %d", errno);
	if (!qp)
		return;
	check(!ibv_modify_qp(qp, &a, kRcInitMask), "query QP to INIT");
	rc_rtr_attr(n, &a);
	check(!ibv_modify_qp(qp, &a, kRcRtrMask), "query QP to RTR");
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(qp, &q, IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_STATE,
			   &init);
	check(!ret, "ibv_query_qp: %d", ret);
	check(q.ah_attr.is_global &&
		      !memcmp(q.ah_attr.grh.dgid.raw, n->peer.gid, 16) &&
		      q.ah_attr.grh.sgid_index == n->gid_index &&
		      q.ah_attr.port_num == 1,
	      "queried AV: global %d sgid %u port %u dgid %s",
	      q.ah_attr.is_global, q.ah_attr.grh.sgid_index, q.ah_attr.port_num,
	      memcmp(q.ah_attr.grh.dgid.raw, n->peer.gid, 16) ? "differs"
							      : "ok");
	check(q.dest_qp_num == n->peer.rc_qpn && q.qp_state == IBV_QPS_RTR,
	      "queried dest QPN %u state %d", q.dest_qp_num, q.qp_state);
	/* Reset, and connect again with what the query said. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "query QP to RESET");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	check(!ibv_modify_qp(qp, &a, kRcInitMask), "query QP to INIT again");
	q.qp_state = IBV_QPS_RTR;
	q.path_mtu = IBV_MTU_1024;
	q.max_dest_rd_atomic = 1;
	q.min_rnr_timer = 12;
	ret = ibv_modify_qp(qp, &q, kRcRtrMask);
	check(!ret, "RTR with the queried AV: %d", ret);
	check(!ibv_destroy_qp(qp), "destroy query QP");
	check(!ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), "destroy query CQ");
}

/*
 * More than one completion vector, and a CQ on the second one gets its
 * completion event through its channel (the event arrives on the second
 * event queue, not the first).
 */
static void second_vector(struct node *n)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp;
	struct ibv_sge s = sge(n, SRC, 64);
	struct ibv_recv_wr rwr = {.wr_id = 95, .sg_list = &s, .num_sge = 1},
			   *rbad;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct comp c[1];
	int events = 0;

	check(n->ctx->num_comp_vectors >= 2, "%d completion vectors",
	      n->ctx->num_comp_vectors);
	if (n->ctx->num_comp_vectors < 2)
		return;
	ch = ibv_create_comp_channel(n->ctx);
	{
		struct ibv_cq_init_attr_ex ca = {.cqe = 16,
						 .channel = ch,
						 .comp_vector = 1,
						 .wc_flags = kWcAll};

		cq = ch ? ibv_create_cq_ex(n->ctx, &ca) : NULL;
	}
	check(cq != NULL, "CQ on vector 1: errno %d", errno);
	if (!cq)
		goto out_ch;
	ibv_cq_ex_to_cq(cq)->cq_context = cq;
	qp = plain_rc_qp(n, ibv_cq_ex_to_cq(cq));
	check(qp != NULL, "QP on vector 1's CQ");
	if (!qp)
		goto out_cq;
	check(!ibv_modify_qp(qp, &a, kRcInitMask) &&
		      !ibv_post_recv(qp, &rwr, &rbad),
	      "vector-1 QP to INIT with a receive");
	check(!ibv_req_notify_cq(ibv_cq_ex_to_cq(cq), 0), "arm vector 1's CQ");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR; /* the receive completes as flushed */
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "vector-1 QP to ERR");
	{
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (poll(&pfd, 1, 10000) == 1 &&
		    !ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
			check(ev_cq == ibv_cq_ex_to_cq(cq),
			      "event for another CQ");
			ibv_ack_cq_events(ev_cq, 1);
			events++;
		}
	}
	check(events == 1, "no completion event on vector 1");
	if (poll_n(cq, c, 1) == 1)
		check(c[0].wr_id == 95 && c[0].status == IBV_WC_WR_FLUSH_ERR,
		      "vector 1: wr_id %llu status %d",
		      (unsigned long long)c[0].wr_id, c[0].status);
	ibv_destroy_qp(qp);
out_cq:
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
out_ch:
	if (ch)
		ibv_destroy_comp_channel(ch);
}

/* Posts @count receives (wr_id @first on) to @qp in INIT and moves it to
 * ERR: each completes on its CQ as flushed, with no traffic needed.
 */
static void flushed_receives(struct node *n, struct ibv_qp *qp, int first,
			     int count)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_sge s = sge(n, SRC, 64);
	struct ibv_recv_wr rwr = {.sg_list = &s, .num_sge = 1}, *rbad;

	check(!ibv_modify_qp(qp, &a, kRcInitMask), "flush QP to INIT");
	for (int i = 0; i < count; i++) {
		rwr.wr_id = first + i;
		check(!ibv_post_recv(qp, &rwr, &rbad), "post receive %d", i);
	}
	a.qp_state = IBV_QPS_ERR;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "flush QP to ERR");
}

/* Takes @count flushed receives, wr_ids @first on in order, off @cq. */
static void expect_flushed(struct ibv_cq *cq, int first, int count)
{
	struct ibv_wc wc[16];
	double end = now() + 10;
	int got = 0;

	while (got < count && now() < end) {
		int k = ibv_poll_cq(cq, count - got < 16 ? count - got : 16,
				    wc);

		check(k >= 0, "poll_cq returned %d", k);
		for (int i = 0; i < k; i++, got++)
			check(wc[i].wr_id == (uint64_t)(first + got) &&
				      wc[i].status == IBV_WC_WR_FLUSH_ERR,
			      "completion %d: wr_id %llu status %d", got,
			      (unsigned long long)wc[i].wr_id, wc[i].status);
	}
	check(got == count, "%d of %d flushed receives", got, count);
}

/* Completion events of @ch within @ms milliseconds, each acknowledged. */
static int events_within(struct ibv_comp_channel *ch, int ms)
{
	double end = now() + ms / 1000.0;
	int events = 0;

	while (now() < end) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int left = (int)((end - now()) * 1000) + 1;

		if (poll(&pfd, 1, left) != 1 ||
		    ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			continue;
		ibv_ack_cq_events(ev_cq, 1);
		events++;
	}
	return events;
}

/*
 * ibv_modify_cq (completion event moderation, the NIC's MODIFY_CQ): with
 * count 4 and the longest period, 3 completions on an armed CQ raise no
 * event and the 4th raises one; with count 16 and a period of 2 ms, one
 * completion raises its event once the period is over; moderation off
 * again, the next completion raises its own. The limits are in
 * ibv_query_device_ex; bad attribute masks are refused.
 */
static void moderation(struct node *n)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(n->ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(n->ctx, 64, NULL, ch, 0) : NULL;
	struct ibv_device_attr_ex dx;
	struct ibv_modify_cq_attr m = {.attr_mask = IBV_CQ_ATTR_MODERATE};
	struct ibv_qp *qp[4] = {};
	int ev;

	check(cq != NULL, "CQ with a channel for moderation");
	if (!cq)
		goto out;
	check(!ibv_query_device_ex(n->ctx, NULL, &dx) &&
		      dx.cq_mod_caps.max_cq_count == 0xffff &&
		      dx.cq_mod_caps.max_cq_period == 0xffff,
	      "cq_mod_caps %u %u", dx.cq_mod_caps.max_cq_count,
	      dx.cq_mod_caps.max_cq_period);
	for (int i = 0; i < 4; i++) {
		qp[i] = plain_rc_qp(n, cq);
		check(qp[i] != NULL, "moderation QP %d", i);
		if (!qp[i])
			goto out;
	}
	m.moderate.cq_count = 4;
	m.moderate.cq_period = 0xffff; /* 65 ms: the count decides */
	check(!ibv_modify_cq(cq, &m), "modify_cq count 4: errno %d", errno);
	check(!ibv_req_notify_cq(cq, 0), "arm the moderated CQ");
	flushed_receives(n, qp[0], 1, 3);
	ev = events_within(ch, 30);
	check(ev == 0, "%d events for 3 of 4 completions", ev);
	flushed_receives(n, qp[1], 4, 1);
	ev = events_within(ch, 1000);
	check(ev == 1, "%d events for 4 completions with count 4", ev);
	expect_flushed(cq, 1, 4);

	m.moderate.cq_count = 16;
	m.moderate.cq_period = 2000;
	check(!ibv_modify_cq(cq, &m), "modify_cq count 16, 2 ms");
	check(!ibv_req_notify_cq(cq, 0), "arm again");
	flushed_receives(n, qp[2], 10, 1);
	ev = events_within(ch, 1000);
	check(ev == 1, "%d events for 1 completion after the period", ev);
	expect_flushed(cq, 10, 1);

	m.moderate.cq_count = 0;
	m.moderate.cq_period = 0;
	check(!ibv_modify_cq(cq, &m), "modify_cq off");
	check(!ibv_req_notify_cq(cq, 0), "arm unmoderated");
	flushed_receives(n, qp[3], 20, 1);
	ev = events_within(ch, 1000);
	check(ev == 1, "%d events for 1 unmoderated completion", ev);
	expect_flushed(cq, 20, 1);

	m.attr_mask = 1u << 7;
	check(ibv_modify_cq(cq, &m) != 0, "modify_cq with an unknown mask bit");
out:
	for (int i = 0; i < 4; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	if (cq)
		check(!ibv_destroy_cq(cq), "destroy the moderated CQ");
	if (ch)
		ibv_destroy_comp_channel(ch);
}

/*
 * ibv_resize_cq: a CQ of 4 holding 3 unread completions refuses to shrink
 * below them, grows to 100 with the 3 kept in order, then takes 40 more
 * (ten times what it first held); absurd sizes are refused.
 */
static void resize(struct node *n)
{
	struct ibv_cq *cq = ibv_create_cq(n->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1,
			.max_recv_wr = 64,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *small, *big;
	struct ibv_device_attr da;

	check(cq != NULL, "CQ of 4");
	if (!cq)
		return;
	qa.send_cq = qa.recv_cq = cq;
	small = plain_rc_qp(n, cq);
	big = ibv_create_qp(n->pd, &qa);
	check(small && big, "QPs on the CQ to resize");
	if (!small || !big)
		goto out;
	flushed_receives(n, small, 1, 3);
	usleep(50000); /* the 3 completions are in the ring */
	errno = 0;
	check(ibv_resize_cq(cq, 2) == EINVAL,
	      "shrinking below 3 unread completions: %d", errno);
	check(ibv_resize_cq(cq, 100) == 0, "resize to 100");
	check(cq->cqe >= 100, "cqe %d after resizing to 100", cq->cqe);
	expect_flushed(cq, 1, 3);
	flushed_receives(n, big, 100, 40);
	usleep(50000);
	expect_flushed(cq, 100, 40);
	check(!ibv_query_device(n->ctx, &da) &&
		      ibv_resize_cq(cq, da.max_cqe + 1) == EINVAL,
	      "resize beyond max_cqe %d", da.max_cqe);
	check(ibv_resize_cq(cq, 0) == EINVAL, "resize to 0");
	/* Down again, and the CQ still works after it. */
	check(ibv_resize_cq(cq, 8) == 0 && cq->cqe >= 8 && cq->cqe < 100,
	      "resize down to 8: cqe %d", cq->cqe);
out:
	if (big)
		ibv_destroy_qp(big);
	if (small)
		ibv_destroy_qp(small);
	check(!ibv_destroy_cq(cq), "destroy the resized CQ");
}

/* ---- memory windows ------------------------------------------------------- */

/* What the server opens to the client through windows. */
struct windows {
	uint32_t rkey2, rkey1; /* type 2 (read/write), type 1 (read) */
	uint64_t addr2, addr1;
};

/* One signaled WR on the RC QP, its completion taken from the send CQ. */
static struct comp post_one(struct node *n, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct comp c = {.status = IBV_WC_GENERAL_ERR};

	wr->send_flags |= IBV_SEND_SIGNALED;
	check(!ibv_post_send(n->rc, wr, &bad), "post opcode %d", wr->opcode);
	poll_n(n->scq, &c, 1);
	return c;
}

/*
 * The server binds a type 2 window (IBV_WR_BIND_MW) and a type 1 window
 * (ibv_bind_mw) over a region registered with IBV_ACCESS_MW_BIND, hands the
 * keys to the client, which PUSHes and PULLs through them and then sends
 * with invalidate; the server sees the key invalidated, binds the window
 * again (it is free) and invalidates it locally.
 */
static void windows_server(struct node *n, int fd)
{
	struct ibv_mr *mr =
		ibv_reg_mr(n->pd, n->buf + WIN, WIN_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw2 = ibv_alloc_mw(n->pd, IBV_MW_TYPE_2);
	struct ibv_mw *mw1 = ibv_alloc_mw(n->pd, IBV_MW_TYPE_1);
	struct windows w = {0}, none;
	struct ibv_send_wr wr;
	struct ibv_send_wr *bad;
	struct comp c[1];

	check(mr && mw2 && mw1, "MW_BIND region and windows: errno %d", errno);
	if (!mr || !mw2 || !mw1)
		exit(1);
	fill(n->buf + WIN + 8192, 8192, 4096, 0x77);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 701;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr,
		.addr = (uintptr_t)n->buf + WIN,
		.length = 4096,
		.mw_access_flags =
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	c[0] = post_one(n, &wr);
	check(c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_BIND_MW &&
		      c[0].wr_id == 701,
	      "type 2 bind: status %d opcode %d", c[0].status, c[0].opcode);
	w.rkey2 = wr.bind_mw.rkey;
	w.addr2 = (uintptr_t)n->buf + WIN;
	{
		struct ibv_mw_bind b = {
			.wr_id = 702,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = {.mr = mr,
				      .addr = (uintptr_t)n->buf + WIN + 8192,
				      .length = 4096,
				      .mw_access_flags =
					      IBV_ACCESS_REMOTE_READ}};
		uint32_t before = mw1->rkey;

		check(!ibv_bind_mw(n->rc, mw1, &b), "ibv_bind_mw: errno %d",
		      errno);
		poll_n(n->scq, c, 1);
		check(c[0].status == IBV_WC_SUCCESS &&
			      c[0].opcode == IBV_WC_BIND_MW &&
			      c[0].wr_id == 702,
		      "type 1 bind: status %d", c[0].status);
		check(mw1->rkey == ibv_inc_rkey(before),
		      "type 1 key %#x after bind (was %#x)", mw1->rkey, before);
		/* A type 2 window does not bind through ibv_bind_mw, nor a
		 * type 1 window through a work request.
		 */
		check(ibv_bind_mw(n->rc, mw2, &b) == EINVAL,
		      "ibv_bind_mw of a type 2 window");
		wr.bind_mw.mw = mw1;
		check(ibv_post_send(n->rc, &wr, &bad) == EINVAL,
		      "IBV_WR_BIND_MW of a type 1 window");
	}
	w.rkey1 = mw1->rkey;
	w.addr1 = (uintptr_t)n->buf + WIN + 8192;
	xfer(fd, &w, &none, sizeof(w));
	sync_peer(fd); /* the client's PUSH, PULL and SEND_INV are done */
	if (poll_n(n->rcq, c, 1) == 1) {
		check(c[0].status == IBV_WC_SUCCESS &&
			      c[0].opcode == IBV_WC_RECV,
		      "SEND_INV receive: status %d opcode %d", c[0].status,
		      c[0].opcode);
		check(c[0].wc_flags & IBV_WC_WITH_INV,
		      "SEND_INV receive without IBV_WC_WITH_INV (%#x)",
		      c[0].wc_flags);
		check(c[0].inv == w.rkey2, "invalidated %#x, expected %#x",
		      c[0].inv, w.rkey2);
	}
	check(same(n->buf + WIN, 0, 4096, 0x66),
	      "the PUSH through the type 2 window did not land");
	/* Unbound by the peer: it binds again, then goes locally. */
	wr.wr_id = 703;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(w.rkey2);
	c[0] = post_one(n, &wr);
	check(c[0].status == IBV_WC_SUCCESS, "rebind after SEND_INV: %d",
	      c[0].status);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 704;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = ibv_inc_rkey(w.rkey2);
	c[0] = post_one(n, &wr);
	check(c[0].status == IBV_WC_SUCCESS && c[0].opcode == IBV_WC_LOCAL_INV,
	      "local invalidate: status %d opcode %d", c[0].status,
	      c[0].opcode);
	check(!ibv_dealloc_mw(mw1) && !ibv_dealloc_mw(mw2), "dealloc windows");
	check(!ibv_dereg_mr(mr), "dereg the windows' region");
}

static void windows_client(struct node *n, int fd)
{
	struct windows w, none = {0};
	struct ibv_sge s = sge(n, WIN, 4096);
	struct ibv_send_wr wr;
	struct comp c;

	fill(n->buf + WIN, 0, 4096, 0x66);
	xfer(fd, &none, &w, sizeof(w));
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 711;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = w.addr2;
	wr.wr.rdma.rkey = w.rkey2;
	c = post_one(n, &wr);
	check(c.status == IBV_WC_SUCCESS, "PUSH through the type 2 window: %s",
	      ibv_wc_status_str(c.status));
	s = sge(n, WIN + 8192, 4096);
	wr.wr_id = 712;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = w.addr1;
	wr.wr.rdma.rkey = w.rkey1;
	c = post_one(n, &wr);
	check(c.status == IBV_WC_SUCCESS &&
		      same(n->buf + WIN + 8192, 8192, 4096, 0x77),
	      "PULL through the type 1 window: %s",
	      ibv_wc_status_str(c.status));
	s = sge(n, WIN, 16);
	wr.wr_id = 713;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = w.rkey2;
	c = post_one(n, &wr);
	check(c.status == IBV_WC_SUCCESS && c.opcode == IBV_WC_SEND,
	      "SEND_WITH_INV: %s", ibv_wc_status_str(c.status));
	sync_peer(fd);
}

static void client_ud(struct node *n, int fd)
{
	struct ibv_qp_ex *q = n->udx;
	uint8_t d[30], e[30];
	struct comp c[2];
	int ret;

	sync_peer(fd); /* UD receives posted */
	ibv_wr_start(q);
	q->wr_id = 501;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, n->ah, n->peer.ud_qpn, QKEY);
	struct ibv_sge two[2] = {sge(n, SRC + 40000, 100),
				 sge(n, SRC + 41000, 200)};
	ibv_wr_set_sge_list(q, 2, two);
	q->wr_id = 502;
	ibv_wr_send_imm(q, htonl(0x55aa1234));
	inline_bytes(d, 30, 0x10);
	inline_bytes(e, 30, 0x10 + 90);
	struct ibv_data_buf bufs[2] = {{d, 30}, {e, 30}};
	ibv_wr_set_inline_data_list(q, 2, bufs); /* data first, then address */
	ibv_wr_set_ud_addr(q, n->ah, n->peer.ud_qpn, QKEY);
	ret = ibv_wr_complete(q);
	check(ret == 0, "wr_complete of the UD batch: %d", ret);
	if (poll_n(n->scq, c, 2) == 2) {
		expect(&c[0], 501, IBV_WC_SEND, 300, n->me.ud_qpn, 0, 0,
		       "UD send");
		expect(&c[1], 502, IBV_WC_SEND, 60, n->me.ud_qpn, 0, 0,
		       "UD send_imm inline");
	}
	sync_peer(fd);
}

/* Last: a remote access error ends the RC QP's life. */
static void client_remote_error(struct node *n, int fd)
{
	struct ibv_qp_ex *q = n->rcx;
	struct comp c[1];
	int got = 0;
	double end = now() + 30;

	ibv_wr_start(q);
	q->wr_id = 601;
	q->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(q, n->peer.rkey + 0x100000,
			  n->peer.addr + WRITE_AREA);
	ibv_wr_set_sge(q, n->mr->lkey, (uintptr_t)n->buf + SRC, 16);
	check(ibv_wr_complete(q) == 0, "wr_complete of the bad write");
	while (!got && now() < end)
		drain(n->scq, c, 1, &got);
	check(got == 1, "no completion for a write with a bad rkey");
	if (got) {
		check(c[0].wr_id == 601, "bad write: wr_id %llu",
		      (unsigned long long)c[0].wr_id);
		check(c[0].status == IBV_WC_REM_ACCESS_ERR,
		      "bad write: status %s", ibv_wc_status_str(c[0].status));
		check(c[0].vendor_err != 0, "bad write: vendor_err 0");
		check(c[0].qp_num == n->me.rc_qpn, "bad write: qp_num %u",
		      c[0].qp_num);
	}
	sync_peer(fd);
}

/* ---- the server: receives, checks what arrived ----------------------------- */

static void post_recv(struct ibv_qp *qp, struct node *n, uint64_t wr_id,
		      uint32_t off, uint32_t len)
{
	struct ibv_sge s = sge(n, off, len);
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1},
			   *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static void server_rc(struct node *n, int fd, int *events)
{
	uint32_t me = n->me.rc_qpn;
	struct comp c[8];
	uint8_t *rx = n->buf + RECV;
	uint64_t word = 100;

	for (int i = 0; i < RC_RECVS; i++)
		post_recv(n->rc, n, 200 + i, RECV + i * RECV_SLOT, RECV_SLOT);
	fill(n->buf + READ_AREA, 0, 8192, 3);
	memcpy(n->buf + ATOMIC, &word, 8);
	if (ibv_req_notify_cq(ibv_cq_ex_to_cq(n->rcq), 0))
		die("req_notify_cq");
	sync_peer(fd);

	if (wait_n(n->ch, n->rcq, c, 5, events) == 5) {
		expect(&c[0], 200, IBV_WC_RECV, 600, me, 0, 0, "recv sge list");
		expect(&c[1], 201, IBV_WC_RECV, 64, me, 0, 0,
		       "recv unsignaled");
		expect(&c[2], 202, IBV_WC_RECV, 40, me, IBV_WC_WITH_IMM,
		       0x12345678, "recv imm inline");
		expect(&c[3], 203, IBV_WC_RECV_RDMA_WITH_IMM, 24, me,
		       IBV_WC_WITH_IMM, 0xabcdef01, "recv write_imm");
		expect(&c[4], 204, IBV_WC_RECV, 32, me, 0, 0, "recv post_send");
	}
	check(same(rx, 0, 100, 1) && same(rx + 100, 1000, 200, 1) &&
		      same(rx + 300, 3000, 300, 1),
	      "bytes of the SGE-list send differ");
	check(same(rx + RECV_SLOT, 5000, 64, 1), "unsignaled send bytes");
	check(!memcmp(rx + 2 * RECV_SLOT, kA, 25) &&
		      inline_same(rx + 2 * RECV_SLOT + 25, 15, 0x40),
	      "inline list bytes differ");
	check(same(rx + 4 * RECV_SLOT, 20000, 32, 1), "post_send bytes");
	sync_peer(fd); /* the client's completions are in: writes landed */
	check(same(n->buf + WRITE_AREA, 8192, 4096, 1), "RDMA write bytes");
	check(inline_same(n->buf + WRITE_AREA + 8192, 24, 0x77),
	      "inline write_imm bytes");
	memcpy(&word, n->buf + ATOMIC, 8);
	check(word == 777, "atomic word %llu, expected 777",
	      (unsigned long long)word);
}

static void server_errors(struct node *n, int fd, int *events)
{
	struct comp c[2];
	uint8_t *rx = n->buf + RECV;
	uint32_t me = n->me.rc_qpn;

	/* Exactly two sends arrive: the one after wr_abort, the last one. */
	if (wait_n(n->ch, n->rcq, c, 2, events) == 2) {
		expect(&c[0], 205, IBV_WC_RECV, 70, me, 0, 0,
		       "recv after abort");
		expect(&c[1], 206, IBV_WC_RECV, 90, me, 0, 0,
		       "recv after failed batches");
	}
	check(same(rx + 5 * RECV_SLOT, 31000, 70, 1), "bytes after abort");
	check(same(rx + 6 * RECV_SLOT, 33000, 90, 1), "bytes after failures");
	sync_peer(fd);
	{
		struct comp extra[2];
		int more = 0;

		drain(n->rcq, extra, 2, &more);
		check(more == 0, "%d receives from failed batches", more);
	}
}

static void server_ud(struct node *n, int fd, int *events)
{
	struct comp c[2];
	uint8_t *rx = n->buf + UD_RECV;
	uint32_t me = n->me.ud_qpn;

	for (int i = 0; i < UD_RECVS; i++)
		post_recv(n->ud, n, 400 + i, UD_RECV + i * UD_SLOT, GRH + 1024);
	sync_peer(fd);
	if (wait_n(n->ch, n->rcq, c, 2, events) == 2) {
		expect(&c[0], 400, IBV_WC_RECV, GRH + 300, me, IBV_WC_GRH, 0,
		       "UD recv");
		expect(&c[1], 401, IBV_WC_RECV, GRH + 60, me,
		       IBV_WC_GRH | IBV_WC_WITH_IMM, 0x55aa1234, "UD recv imm");
		check(c[0].src_qp == n->peer.ud_qpn &&
			      c[1].src_qp == n->peer.ud_qpn,
		      "UD src_qp %u/%u, expected %u", c[0].src_qp, c[1].src_qp,
		      n->peer.ud_qpn);
	}
	check(same(rx + GRH, 40000, 100, 1) &&
		      same(rx + GRH + 100, 41000, 200, 1),
	      "UD SGE-list bytes differ");
	check(inline_same(rx + UD_SLOT + GRH, 30, 0x10) &&
		      inline_same(rx + UD_SLOT + GRH + 30, 30, 0x10 + 90),
	      "UD inline bytes differ");
	sync_peer(fd);
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *server;
	struct node n = {.gid_index = 0};
	int port = 18700, fd, events = 0;

	program = "rhinet-qpex";
	setvbuf(stdout, NULL, _IOLBF, 0);
	server = peer_args(argc, argv, &dev, &n.gid_index, &port);
	setup(&n, dev);
	fd = tcp_connect(server, port);
	xfer(fd, &n.me, &n.peer, sizeof(n.me));
	connect_qps(&n);
	sync_peer(fd); /* both QPs ready on both sides */

	if (server) {
		client_rc(&n, fd);
		printf("rhinet-qpex client: RC batch done (%d failures)\n",
		       failures);
		client_errors(&n, fd);
		refusals(&n);
		state_corners(&n);
		query_reconnect(&n);
		second_vector(&n);
		resize(&n);
		moderation(&n);
		windows_client(&n, fd);
		printf("rhinet-qpex client: error cases done (%d failures)\n",
		       failures);
		client_ud(&n, fd);
		client_remote_error(&n, fd);
	} else {
		server_rc(&n, fd, &events);
		server_errors(&n, fd, &events);
		refusals(&n);
		state_corners(&n);
		query_reconnect(&n);
		second_vector(&n);
		resize(&n);
		moderation(&n);
		windows_server(&n, fd);
		server_ud(&n, fd, &events);
		sync_peer(fd); /* the client's remote error */
		check(events > 0, "no completion event arrived");
	}
	sync_peer(fd);
	close(fd);

	ibv_destroy_ah(n.ah);
	check(!ibv_destroy_qp(n.rc) && !ibv_destroy_qp(n.ud), "destroy QPs");
	check(!ibv_destroy_cq(ibv_cq_ex_to_cq(n.scq)) &&
		      !ibv_destroy_cq(ibv_cq_ex_to_cq(n.rcq)),
	      "destroy CQs");
	check(!ibv_destroy_comp_channel(n.ch), "destroy channel (events %d)",
	      events);
	ibv_dereg_mr(n.mr);
	ibv_dealloc_pd(n.pd);
	ibv_close_device(n.ctx);
	printf("rhinet-qpex %s: %s (%d checks, %d failed, %d events)\n", role,
	       failures ? "FAIL" : "PASS", checks, failures, events);
	return failures ? 1 : 0;
}
