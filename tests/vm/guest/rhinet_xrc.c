// SPDX-License-Identifier: BSD-2-Clause
/*
 * XRC through plain libibverbs and the installed provider, between two
 * nodes. Node 1 (server) is the target side: XRC domains opened through
 * files, XRC SRQs, XRC_RECV target QPs; node 0 (client) has the XRC_SEND
 * initiators, one per target:
 *
 *  - delivery: two initiators send into one SRQ of domain A, one through
 *    ibv_post_send (wr.qp_type.xrc.remote_srqn), one through ibv_wr_* with
 *    ibv_wr_set_xrc_srqn; every message arrives on the SRQ's CQ with the
 *    wr_id of an SRQ receive, the target QP in qp_num, the initiator in
 *    src_qp, and its bytes;
 *  - another process of domain A (the file opened again, O_CREAT) opens
 *    the first target QP with ibv_open_qp and a SEND naming its own SRQ
 *    completes on its CQ, although the target QP is the server's; a
 *    process holding only another domain cannot open that QP;
 *  - a SEND naming an SRQ of domain B through a target QP of domain A
 *    fails at the initiator with IBV_WC_REM_INV_REQ_ERR, lands nowhere and
 *    moves the server's xrc_refused counter (read with rhinet-diag); so
 *    does a SEND naming a
 *    destroyed SRQ's number (a new SRQ of the domain, perhaps in its
 *    slot, gets nothing);
 *  - refusals at the initiator: WRITE, READ and atomics posted on an
 *    XRC_SEND QP fail EINVAL, a receive EINVAL, an ibv_wr_* SEND without
 *    ibv_wr_set_xrc_srqn EINVAL at ibv_wr_complete, an XRC_SEND QP asking
 *    for WRITE in send_ops_flags EOPNOTSUPP, or for receives EINVAL; and
 *    ibv_get_srq_num of a basic SRQ EINVAL.
 *
 *   rhinet-xrc [-d DEVICE] [-g GID_INDEX] [-p PORT]           server (node 1)
 *   rhinet-xrc [-d DEVICE] [-g GID_INDEX] [-p PORT] SERVER    client (node 0)
 *
 * Exits 0 only if every check passed on this node (children included).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_guest.h"

#define SLOT 4096u
#define MSG_LEN 300u
#define BUF_SIZE (64u * SLOT)
#define SENDS_EACH 8 /* per delivering initiator */
#define SRQ_A_RECVS (2 * SENDS_EACH)
#define SRQ_B_AT 32u /* slots of SRQ b's receives, then the new SRQ's */
#define SRQ_NEW_AT 40u
#define OTHER_RECVS 4
#define DOMAIN_A "/tmp/rhinet-xrc-a"
#define DOMAIN_B "/tmp/rhinet-xrc-b"
#define DOMAIN_C "/tmp/rhinet-xrc-c"
#define MEMBER_WR_ID 0xc0ffeeu

/* The client's initiators and the server's targets, pairwise connected. */
enum {
	INI_POST,
	INI_WR,
	INI_FOREIGN,
	INI_STALE,
	NUM_INI
};

/* What each side tells the other (the client fills qpn and gid only). */
struct info {
	uint32_t qpn[NUM_INI]; /* targets, or initiators */
	uint32_t srqn_a, srqn_b, srqn_stale, srqn_member;
	uint8_t gid[16];
};

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	int gid_index;
};

static void open_node(struct node *n, const char *dev)
{
	n->ctx = open_device(dev);
	n->mr = alloc_buffer(n->ctx, BUF_SIZE, &n->pd, &n->buf);
	n->cq = ibv_create_cq(n->ctx, 128, NULL, NULL, 0);
	if (!n->mr || !n->cq)
		die("mr/cq");
}

/* The XRC domain of the file @path, shared with whoever opens it too. */
static struct ibv_xrcd *open_domain(struct node *n, const char *path)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x;

	a.fd = open(path, O_RDONLY | O_CREAT, 0600);
	if (a.fd < 0)
		die(path);
	x = ibv_open_xrcd(n->ctx, &a);
	if (!x)
		die("ibv_open_xrcd");
	close(a.fd); /* the kernel holds the inode */
	return x;
}

static struct ibv_srq *xrc_srq(struct node *n, struct ibv_xrcd *x,
			       uint32_t *num)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = {.max_wr = SRQ_A_RECVS, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = n->pd,
		.xrcd = x,
		.cq = n->cq,
	};
	struct ibv_srq *srq = ibv_create_srq_ex(n->ctx, &a);
	int err;

	if (!srq)
		die("XRC SRQ");
	err = ibv_get_srq_num(srq, num);
	check(!err, "ibv_get_srq_num: %s", strerror(err));
	return srq;
}

/* @count receives into @srq, slots @at.. of the buffer, wr_id = slot. */
static void post_srq(struct node *n, struct ibv_srq *srq, uint32_t at,
		     uint32_t count)
{
	for (uint32_t i = at; i < at + count; i++) {
		struct ibv_sge sge = {(uintptr_t)n->buf + i * SLOT, SLOT,
				      n->mr->lkey};
		struct ibv_recv_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			die("ibv_post_srq_recv");
	}
}

static struct ibv_qp *xrc_target(struct node *n, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(n->ctx, &a);

	if (!qp)
		die("XRC_RECV QP");
	return qp;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		   const char *what)
{
	if (ibv_modify_qp(qp, a, mask))
		die(what);
}

/*
 * INIT, then RTR toward @qpn; an initiator goes on to RTS. A target takes
 * what it is sent and reads nothing back; an initiator has no responder
 * resources, so its RTR names none.
 */
static void connect_xrc(struct node *n, struct ibv_qp *qp, uint32_t qpn,
			const uint8_t gid[16], bool initiator)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	modify(qp, &a, kRcInitMask, "XRC QP to INIT");
	rc_rtr_attr_to(&a, qpn, gid, n->gid_index, 1);
	if (!initiator) {
		modify(qp, &a, kRcRtrMask, "XRC_RECV to RTR");
		return;
	}
	modify(qp, &a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN,
	       "XRC_SEND to RTR");
	rc_rts_attr(&a, 1);
	modify(qp, &a, kRcRtsMask, "XRC_SEND to RTS");
}

/* ---- the other processes of the server's node ---------------------------- */

static uint32_t read_u32(int fd)
{
	uint32_t v = 0;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n == 0) { /* the other process is gone: nothing to do */
		printf("rhinet-xrc %s: FAIL: the peer process exited\n", role);
		exit(1);
	}
	if (n != sizeof(v))
		die("pipe read");
	return v;
}

static void write_u32(int fd, uint32_t v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		die("pipe write");
}

/* ibv_open_qp of a target QP: its number and domain go in. */
static const struct ibv_qp_open_attr kOpenTarget = {
	.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		     IBV_QP_OPEN_ATTR_TYPE,
	.qp_type = IBV_QPT_XRC_RECV,
};

/*
 * A second process of domain A: opens the server's first target QP by
 * number and receives, on its own SRQ and CQ, what comes through it.
 * Its SRQ number goes to the server through @out once it can receive.
 */
static int member(const char *dev, int in, int out)
{
	struct ibv_qp_open_attr oa = kOpenTarget;
	struct node n = {0};
	struct ibv_xrcd *xa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	uint32_t num;

	role = "member";
	oa.qp_num = read_u32(in);
	open_node(&n, dev);
	xa = open_domain(&n, DOMAIN_A);
	oa.xrcd = xa;
	qp = ibv_open_qp(n.ctx, &oa);
	check(qp && qp->qp_num == oa.qp_num && qp->qp_type == IBV_QPT_XRC_RECV,
	      "ibv_open_qp of target QP %#x in domain A: %s", oa.qp_num,
	      qp ? "wrong QP" : strerror(errno));
	if (!qp)
		return 1;
	oa.qp_num ^= 0x5a5a; /* no target QP of the domain has it */
	errno = 0;
	check(!ibv_open_qp(n.ctx, &oa), "ibv_open_qp of a QP number not in "
					"the domain succeeded");
	srq = xrc_srq(&n, xa, &num);
	post_srq(&n, srq, 0, 1);
	write_u32(out, num);
	if (poll_cq_for(n.cq, &wc, 1, 60000) == 1) {
		uint32_t seed = 0;

		memcpy(&seed, n.buf, 4);
		check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0 &&
			      wc.opcode == IBV_WC_RECV &&
			      wc.qp_num == qp->qp_num &&
			      wc.byte_len == MSG_LEN && seed == MEMBER_WR_ID &&
			      pattern_differs(n.buf + 4, MSG_LEN - 4, seed) < 0,
		      "the member's receive: %s wr_id %" PRIu64
		      " qp %#x len %u seed %#x",
		      ibv_wc_status_str(wc.status), wc.wr_id, wc.qp_num,
		      wc.byte_len, seed);
	} else {
		check(false, "nothing arrived on the member's SRQ");
	}
	check(!ibv_destroy_qp(qp), "the opened QP's destroy");
	check(!ibv_destroy_srq(srq), "the member's SRQ destroy");
	check(!ibv_close_xrcd(xa), "the member's ibv_close_xrcd");
	printf("rhinet-xrc member: %d of %d checks failed\n", failures, checks);
	return failures ? 1 : 0;
}

/* A process with only domain C cannot open domain A's target QP. */
static int outsider(const char *dev, int in)
{
	struct ibv_qp_open_attr oa = kOpenTarget;
	struct node n = {0};
	struct ibv_qp *qp;

	role = "outsider";
	oa.qp_num = read_u32(in);
	open_node(&n, dev);
	oa.xrcd = open_domain(&n, DOMAIN_C);
	errno = 0;
	qp = ibv_open_qp(n.ctx, &oa);
	check(!qp && errno,
	      "ibv_open_qp of domain A's QP %#x from domain C: %s", oa.qp_num,
	      qp ? "opened" : strerror(errno));
	check(!ibv_close_xrcd(oa.xrcd), "the outsider's ibv_close_xrcd");
	printf("rhinet-xrc outsider: %d of %d checks failed\n", failures,
	       checks);
	return failures ? 1 : 0;
}

static pid_t spawn(int (*fn)(const char *, int, int), const char *dev,
		   int *to_child, int *from_child)
{
	int down[2], up[2];
	pid_t pid;

	if (pipe(down) || pipe(up))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(down[1]);
		close(up[0]);
		exit(fn(dev, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	*to_child = down[1];
	*from_child = up[0];
	return pid;
}

static int outsider_main(const char *dev, int in, int out)
{
	(void)out;
	return outsider(dev, in);
}

static bool child_passed(pid_t pid, const char *what)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the %s process: status %#x", what, st);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- the server: targets --------------------------------------------------- */

/* Nothing more arrives on @cq within a quarter second. */
static void nothing_arrives(struct node *n, const char *after)
{
	struct ibv_wc wc;
	int got = poll_cq_for(n->cq, &wc, 1, 250);

	check(got == 0, "after %s: a completion (%s, wr_id %" PRIu64 ")", after,
	      got ? ibv_wc_status_str(wc.status) : "-", got ? wc.wr_id : 0);
}

/* The children, forked before this process opened the device. */
struct children {
	pid_t member, outsider;
	int to_member, from_member, to_outsider, from_outsider;
};

static int server(struct node *n, int port, const struct children *ch)
{
	struct ibv_srq *srq_a, *srq_b, *srq_new, *basic;
	struct ibv_xrcd *xa, *xb;
	struct ibv_qp *tgt[NUM_INI];
	struct info me = {0}, peer;
	uint32_t num, seen[NUM_INI] = {0}, seen_slots = 0;
	uint64_t refused, now_refused;
	struct ibv_wc wc[SRQ_A_RECVS];
	int fd, got;

	xa = open_domain(n, DOMAIN_A);
	xb = open_domain(n, DOMAIN_B);
	srq_a = xrc_srq(n, xa, &me.srqn_a);
	srq_b = xrc_srq(n, xb, &me.srqn_b);
	/* A number kept from a destroyed SRQ; the next SRQ of the domain
	 * may take its slot, under another incarnation.
	 */
	{
		struct ibv_srq *old = xrc_srq(n, xa, &me.srqn_stale);

		check(!ibv_destroy_srq(old), "destroy an XRC SRQ");
	}
	srq_new = xrc_srq(n, xa, &num);
	check(num != me.srqn_stale, "a new SRQ has the destroyed one's number");
	printf("rhinet-xrc server: SRQ a %#x, b %#x, destroyed %#x, new %#x "
	       "(%s slot)\n",
	       me.srqn_a, me.srqn_b, me.srqn_stale, num,
	       (num & 0xffff) == (me.srqn_stale & 0xffff) ? "the same"
							  : "another");
	post_srq(n, srq_a, 0, SRQ_A_RECVS);
	post_srq(n, srq_b, SRQ_B_AT, OTHER_RECVS);
	post_srq(n, srq_new, SRQ_NEW_AT, OTHER_RECVS);
	{
		struct ibv_srq_init_attr sa = {
			.attr = {.max_wr = 4, .max_sge = 1}};

		basic = ibv_create_srq(n->pd, &sa);
		check(basic && ibv_get_srq_num(basic, &num) == EINVAL,
		      "ibv_get_srq_num of a basic SRQ not EINVAL");
		if (basic)
			ibv_destroy_srq(basic);
	}
	for (int i = 0; i < NUM_INI; i++) {
		tgt[i] = xrc_target(n, xa);
		me.qpn[i] = tgt[i]->qp_num;
	}

	/* The member opens the first target QP, the outsider tries. */
	write_u32(ch->to_member, me.qpn[INI_POST]);
	write_u32(ch->to_outsider, me.qpn[INI_POST]);
	me.srqn_member = read_u32(ch->from_member);

	local_gid(n->ctx, n->gid_index, me.gid);
	fd = tcp_connect(NULL, port);
	xfer(fd, &me, &peer, sizeof(me));
	for (int i = 0; i < NUM_INI; i++)
		connect_xrc(n, tgt[i], peer.qpn[i], peer.gid, false);
	sync_peer(fd); /* targets ready */

	/* Delivery: both initiators' messages in SRQ a. */
	got = poll_cq_for(n->cq, wc, SRQ_A_RECVS, 60000);
	check(got == SRQ_A_RECVS, "%d of %d messages on SRQ a", got,
	      SRQ_A_RECVS);
	for (int k = 0; k < got; k++) {
		const struct ibv_wc *w = &wc[k];
		const uint8_t *slot = n->buf + w->wr_id * SLOT;
		uint32_t seed = 0;
		int from = -1;

		for (int i = 0; i < NUM_INI; i++)
			if (w->src_qp == peer.qpn[i])
				from = i;
		if (w->wr_id < SRQ_A_RECVS)
			memcpy(&seed, slot, 4);
		check(w->status == IBV_WC_SUCCESS && w->opcode == IBV_WC_RECV &&
			      w->wr_id < SRQ_A_RECVS &&
			      !(seen_slots & (1u << w->wr_id)) &&
			      (from == INI_POST || from == INI_WR) &&
			      w->qp_num == me.qpn[from] &&
			      w->byte_len == MSG_LEN &&
			      seed >> 8 == (uint32_t)from &&
			      pattern_differs(slot + 4, MSG_LEN - 4, seed) < 0,
		      "receive %d: %s wr_id %" PRIu64 " qp %#x src %#x len %u "
		      "seed %#x",
		      k, ibv_wc_status_str(w->status), w->wr_id, w->qp_num,
		      w->src_qp, w->byte_len, seed);
		if (w->wr_id < SRQ_A_RECVS)
			seen_slots |= 1u << w->wr_id;
		if (from >= 0)
			seen[from]++;
		if (from == INI_WR && (w->wc_flags & IBV_WC_WITH_IMM))
			check(ntohl(w->imm_data) == 0x1234, "immediate %#x",
			      ntohl(w->imm_data));
	}
	check(seen[INI_POST] == SENDS_EACH && seen[INI_WR] == SENDS_EACH,
	      "%u and %u messages from the two initiators", seen[INI_POST],
	      seen[INI_WR]);
	printf("rhinet-xrc server: %u + %u messages through two target QPs "
	       "into one SRQ\n",
	       seen[INI_POST], seen[INI_WR]);
	check(child_passed(ch->member, "member"),
	      "a process of the domain did not receive through ibv_open_qp");
	check(child_passed(ch->outsider, "outsider"),
	      "a process of another domain opened the target QP");
	nothing_arrives(n, "delivery");

	/* Domain B's SRQ through a target QP of domain A, then a destroyed
	 * SRQ's number: refused, counted, nothing lands.
	 */
	refused = nic_counter("xrc_refused");
	sync_peer(fd); /* the client sends to SRQ b */
	sync_peer(fd); /* and has its error completion */
	now_refused = nic_counter("xrc_refused");
	check(now_refused == refused + 1,
	      "xrc_refused %" PRIu64 " after a SEND to another domain's "
	      "SRQ, was %" PRIu64,
	      now_refused, refused);
	nothing_arrives(n, "the SEND to domain B's SRQ");
	sync_peer(fd); /* the client sends to the destroyed SRQ */
	sync_peer(fd);
	now_refused = nic_counter("xrc_refused");
	check(now_refused == refused + 2,
	      "xrc_refused %" PRIu64 " after a SEND to a destroyed SRQ, was "
	      "%" PRIu64,
	      now_refused, refused);
	printf("rhinet-xrc server: xrc_refused %" PRIu64 " -> %" PRIu64 "\n",
	       refused, now_refused);
	nothing_arrives(n, "the SEND to a destroyed SRQ");

	for (int i = 0; i < NUM_INI; i++)
		check(!ibv_destroy_qp(tgt[i]), "destroy target QP %d", i);
	check(!ibv_destroy_srq(srq_a) && !ibv_destroy_srq(srq_b) &&
		      !ibv_destroy_srq(srq_new),
	      "destroy the XRC SRQs");
	check(!ibv_close_xrcd(xa) && !ibv_close_xrcd(xb), "ibv_close_xrcd");
	sync_peer(fd);
	close(fd);
	return 0;
}

/* ---- the client: initiators ------------------------------------------------ */

static struct ibv_qp *initiator(struct node *n, uint64_t send_ops,
				uint32_t max_recv_wr)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = n->cq,
		.cap = {.max_send_wr = 32,
			.max_send_sge = 1,
			.max_recv_wr = max_recv_wr},
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = n->pd,
	};

	if (send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	return ibv_create_qp_ex(n->ctx, &a);
}

/* Slot @slot of the buffer: the seed, then its pattern. */
static struct ibv_sge message(struct node *n, uint32_t slot, uint32_t seed)
{
	uint8_t *p = n->buf + slot * SLOT;

	memcpy(p, &seed, 4);
	pattern_fill(p + 4, MSG_LEN - 4, seed);
	return (struct ibv_sge){(uintptr_t)p, MSG_LEN, n->mr->lkey};
}

static int post_xrc_send(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
			 uint32_t srqn)
{
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(qp, &wr, &bad);
}

static int wr_xrc_send(struct ibv_qp_ex *qx, uint64_t wr_id,
		       struct ibv_sge *sge, uint32_t srqn, bool imm)
{
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	if (imm)
		ibv_wr_send_imm(qx, htonl(0x1234));
	else
		ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, srqn);
	ibv_wr_set_sge(qx, sge->lkey, sge->addr, sge->length);
	return ibv_wr_complete(qx);
}

/* Verbs the initiator refuses before anything reaches the NIC. */
static void refusals(struct node *n, struct ibv_qp *qp, struct ibv_qp_ex *qx,
		     uint32_t srqn)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE,	   IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ,	   IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_SEND_WITH_INV,
	};
	struct ibv_sge sge = {(uintptr_t)n->buf, 8, n->mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;
	struct ibv_qp *bad_qp;
	int ret;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_send_wr wr = {.sg_list = &sge,
					 .num_sge = 1,
					 .opcode = ops[i],
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_send_wr *bad = NULL;

		wr.qp_type.xrc.remote_srqn = srqn;
		wr.wr.rdma.rkey = n->mr->rkey; /* shares wr.atomic's place */
		ret = ibv_post_send(qp, &wr, &bad);
		check(ret == EINVAL && bad == &wr,
		      "opcode %d on an XRC_SEND QP: %s", ops[i], strerror(ret));
	}
	ret = ibv_post_recv(qp, &rwr, &rbad);
	check(ret == EINVAL, "a receive on an XRC_SEND QP: %s", strerror(ret));
	/* ibv_wr_*: no SRQ number, no WQE. */
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, sge.lkey, sge.addr, sge.length);
	ret = ibv_wr_complete(qx);
	check(ret == EINVAL, "ibv_wr_send without ibv_wr_set_xrc_srqn: %s",
	      strerror(ret));
	check(poll_cq_for(n->cq, &wc, 1, 100) == 0,
	      "a refused request completed");
	errno = 0;
	bad_qp = initiator(n, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
			   0);
	check(!bad_qp && errno == EOPNOTSUPP,
	      "an XRC_SEND QP with RDMA WRITE in send_ops_flags: %s",
	      bad_qp ? "created" : strerror(errno));
	if (bad_qp)
		ibv_destroy_qp(bad_qp);
	errno = 0;
	bad_qp = initiator(n, 0, 4);
	check(!bad_qp && errno == EINVAL,
	      "an XRC_SEND QP with a receive queue: %s",
	      bad_qp ? "created" : strerror(errno));
	if (bad_qp)
		ibv_destroy_qp(bad_qp);
}

/* One SEND, expected to fail at the peer with REM_INV_REQ_ERR. */
static void refused_send(struct node *n, struct ibv_qp *qp, uint32_t slot,
			 uint32_t srqn, const char *what)
{
	struct ibv_sge sge = message(n, slot, 0xbad);
	struct ibv_wc wc;
	int ret = post_xrc_send(qp, slot, &sge, srqn);

	check(!ret, "%s: ibv_post_send: %s", what, strerror(ret));
	if (poll_cq_for(n->cq, &wc, 1, 30000) != 1) {
		check(false, "%s: no completion", what);
		return;
	}
	check(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == slot &&
		      wc.qp_num == qp->qp_num,
	      "%s: %s (vendor_err %u), wr_id %" PRIu64, what,
	      ibv_wc_status_str(wc.status), wc.vendor_err, wc.wr_id);
	printf("rhinet-xrc client: %s: %s, vendor_err %u\n", what,
	       ibv_wc_status_str(wc.status), wc.vendor_err);
}

static int client(struct node *n, const char *srv, int port)
{
	struct ibv_qp *ini[NUM_INI];
	struct ibv_qp_ex *qx;
	struct info me = {0}, peer;
	struct ibv_wc wc[2 * SENDS_EACH + 1];
	uint32_t slot = 0;
	int fd, got, ok = 0;

	ini[INI_WR] = initiator(
		n, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, 0);
	for (int i = 0; i < NUM_INI; i++) {
		if (i != INI_WR)
			ini[i] = initiator(n, 0, 0);
		if (!ini[i])
			die("XRC_SEND QP");
		me.qpn[i] = ini[i]->qp_num;
	}
	qx = ibv_qp_to_qp_ex(ini[INI_WR]);
	if (!qx)
		die("ibv_qp_to_qp_ex");
	local_gid(n->ctx, n->gid_index, me.gid);
	fd = tcp_connect(srv, port);
	xfer(fd, &me, &peer, sizeof(me));
	for (int i = 0; i < NUM_INI; i++)
		connect_xrc(n, ini[i], peer.qpn[i], peer.gid, true);
	refusals(n, ini[INI_POST], qx, peer.srqn_a);
	sync_peer(fd); /* targets ready */

	for (int k = 0; k < SENDS_EACH; k++) {
		struct ibv_sge a = message(n, slot, INI_POST << 8 | k);
		struct ibv_sge b = message(n, slot + 1, INI_WR << 8 | k);
		int ra = post_xrc_send(ini[INI_POST], slot, &a, peer.srqn_a);
		int rb = wr_xrc_send(qx, slot + 1, &b, peer.srqn_a,
				     k == SENDS_EACH - 1);

		check(!ra && !rb, "SEND %d: %s / %s", k, strerror(ra),
		      strerror(rb));
		slot += 2;
	}
	{
		struct ibv_sge m = message(n, slot, MEMBER_WR_ID);
		int r = post_xrc_send(ini[INI_POST], slot, &m,
				      peer.srqn_member);

		check(!r, "SEND to the member's SRQ: %s", strerror(r));
		slot++;
	}
	got = poll_cq_for(n->cq, wc, 2 * SENDS_EACH + 1, 60000);
	check(got == 2 * SENDS_EACH + 1, "%d of %d send completions", got,
	      2 * SENDS_EACH + 1);
	for (int k = 0; k < got; k++) {
		check(wc[k].status == IBV_WC_SUCCESS &&
			      wc[k].opcode == IBV_WC_SEND && wc[k].wr_id < slot,
		      "send completion %d: %s wr_id %" PRIu64, k,
		      ibv_wc_status_str(wc[k].status), wc[k].wr_id);
		ok += wc[k].status == IBV_WC_SUCCESS;
	}
	printf("rhinet-xrc client: %d SENDs from two initiators completed\n",
	       ok);

	sync_peer(fd);
	refused_send(n, ini[INI_FOREIGN], slot++, peer.srqn_b,
		     "SEND to another domain's SRQ");
	sync_peer(fd);
	sync_peer(fd);
	refused_send(n, ini[INI_STALE], slot++, peer.srqn_stale,
		     "SEND to a destroyed SRQ");
	sync_peer(fd);

	for (int i = 0; i < NUM_INI; i++)
		check(!ibv_destroy_qp(ini[i]), "destroy initiator %d", i);
	sync_peer(fd);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *srv;
	struct node n = {.gid_index = 0};
	int port = 18810;
	struct children ch;

	program = "rhinet-xrc";
	setvbuf(stdout, NULL, _IOLBF, 0);
	srv = peer_args(argc, argv, &dev, &n.gid_index, &port);
	if (!srv) {
		/* Domains of an earlier run are not this one's. */
		unlink(DOMAIN_A);
		unlink(DOMAIN_B);
		unlink(DOMAIN_C);
	}
	if (!srv) {
		ch.member = spawn(member, dev, &ch.to_member, &ch.from_member);
		ch.outsider = spawn(outsider_main, dev, &ch.to_outsider,
				    &ch.from_outsider);
	}
	open_node(&n, dev);
	if (srv)
		client(&n, srv, port);
	else
		server(&n, port, &ch);
	printf("rhinet-xrc %s: %s (%d of %d checks failed)\n", role,
	       failures ? "FAIL" : "PASS", failures, checks);
	return failures ? 1 : 0;
}
