// SPDX-License-Identifier: BSD-2-Clause
/*
 * Triggered operations through the direct verbs (rhinetdv_create_trigger,
 * rhinetdv_wr_set_trigger), between two RC QPs of one node connected to
 * each other through the NIC, RDMA WRITEs built on an ibv_qp_ex:
 *
 *  - a WRITE triggered at threshold 3 does not go after two adds (the
 *    target's bytes stay zero, no completion), a plain WRITE posted behind
 *    it completes meanwhile, and the third add sends it: it completes with
 *    its own wr_id and its bytes land;
 *  - 50000 adds rung back to back (far more than the NIC's kick FIFO
 *    holds): the value is their exact sum, a WRITE parked at that sum
 *    fires once and one parked a unit beyond it waits for one more add;
 *  - while one WRITE is parked, hundreds of plain WRITEs go around the
 *    send queue (its slots stay taken, the others wrap past them), then
 *    the parked one fires and completes with its own wr_id;
 *  - one lap of the 16-bit WQE index after a parked WRITE the queue is
 *    full (its CQE will name it by those bits), and takes WRITEs again
 *    once it fired;
 *  - a chain of two: the first's completion adds 1 to the counter the
 *    second waits on;
 *  - a threshold already reached: the WRITE goes at post;
 *  - a READ and a FETCH_ADD triggered in one batch wait on one counter
 *    and both go at its threshold;
 *  - more WRITEs parked than the process's share: those beyond complete at
 *    once with RHINETDV_SYN_TRIGGER_NO_ROOM, the rest flush with their
 *    wr_ids when the counter goes;
 *  - a counter destroyed with two WRITEs parked on it: both complete with
 *    IBV_WC_WR_FLUSH_ERR, RHINETDV_SYN_TRIGGER_GONE and their wr_ids, and
 *    the QP goes on;
 *  - a second process cannot add to the first's counter (its doorbell page
 *    names its own context: the NIC drops the add and counts it in
 *    trigger_dropped_adds, the value does not move) nor post on it (the
 *    library refuses a counter of another context with EINVAL; the bare
 *    handle in a WQE completes with RHINETDV_SYN_BAD_TRIGGER);
 *  - a process that creates counters until refused gets ENOSPC, and a
 *    process of another user can still create one meanwhile;
 *  - that process exits holding its counters and WRITEs parked on them:
 *    a new process of its user gets the same number of counters again.
 *
 *   rhinet-trigger [-d DEVICE] [-g GID_INDEX]
 *
 * Exits 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#include "verbs_guest.h"

#define BUF_SIZE (256u << 10)
#define SRC 0u /* WRITEs read from here */
#define DST (128u << 10) /* and land here */
#define LEN 256u /* bytes per WRITE */
#define NOBODY 65534
#define MAX_COUNTERS 1024

static const char *dev_name = "rhinet0";
static int gid_index;

/* One process's view: a buffer and two RC QPs connected to each other. */
struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qx; /* qp[0]'s extended view: WRITEs go from it */
};

/* A QP of @type on @n's CQ and PD, with an ibv_qp_ex view. */
static struct ibv_qp *make_qp(struct node *n, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = type;
	a.send_cq = n->cq;
	a.recv_cq = n->cq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = n->pd;
	a.send_ops_flags =
		type == IBV_QPT_UD ? IBV_QP_EX_WITH_SEND
		: type == IBV_QPT_UC
			? IBV_QP_EX_WITH_RDMA_WRITE
			: IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	qp = ibv_create_qp_ex(n->ctx, &a);
	if (!qp)
		die("ibv_create_qp_ex");
	return qp;
}

static void setup(struct node *n)
{
	uint8_t gid[16];
	int q;

	n->ctx = open_device(dev_name);
	n->mr = alloc_buffer(n->ctx, BUF_SIZE, &n->pd, &n->buf);
	if (!n->mr)
		die("ibv_reg_mr");
	n->cq = ibv_create_cq(n->ctx, 512, NULL, NULL, 0);
	if (!n->cq)
		die("ibv_create_cq");
	for (q = 0; q < 2; q++)
		n->qp[q] = make_qp(n, IBV_QPT_RC);
	n->qx = ibv_qp_to_qp_ex(n->qp[0]);
	local_gid(n->ctx, gid_index, gid);
	rc_connect(n->qp[0], "QP 0", n->qp[1]->qp_num, gid, gid_index, 4);
	rc_connect(n->qp[1], "QP 1", n->qp[0]->qp_num, gid, gid_index, 4);
	pattern_fill(n->buf + SRC, DST - SRC, 7);
}

static void teardown(struct node *n)
{
	ibv_destroy_qp(n->qp[0]);
	ibv_destroy_qp(n->qp[1]);
	ibv_destroy_cq(n->cq);
	ibv_dereg_mr(n->mr);
	ibv_dealloc_pd(n->pd);
	free(n->buf);
	ibv_close_device(n->ctx);
}

/*
 * One WRITE of LEN bytes from SRC + slot * LEN to DST + slot * LEN, posted
 * on qp[0] with wr_id; triggered on @counter at @threshold and/or chained
 * to @chain when they are given. ibv_wr_complete's result (and *set_err
 * rhinetdv_wr_set_trigger's).
 */
static int post_write(struct node *n, uint64_t wr_id, uint32_t slot,
		      struct rhinetdv_trigger *counter, uint64_t threshold,
		      struct rhinetdv_trigger *chain, int *set_err)
{
	struct rhinetdv_wr_trigger t;
	uint32_t off = (slot * LEN) % (DST - SRC);
	int err = 0;

	ibv_wr_start(n->qx);
	n->qx->wr_id = wr_id;
	n->qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(n->qx, n->mr->rkey, (uintptr_t)(n->buf + DST + off));
	ibv_wr_set_sge(n->qx, n->mr->lkey, (uintptr_t)(n->buf + SRC + off),
		       LEN);
	if (counter || chain) {
		memset(&t, 0, sizeof(t));
		if (counter) {
			t.comp_mask |= RHINETDV_WR_TRIGGER_COUNTER;
			t.counter = counter;
			t.threshold = threshold;
		}
		if (chain) {
			t.comp_mask |= RHINETDV_WR_TRIGGER_CHAIN;
			t.chain = chain;
		}
		err = rhinetdv_wr_set_trigger(n->qx, &t, sizeof(t));
	}
	if (set_err)
		*set_err = err;
	return ibv_wr_complete(n->qx);
}

static int poll_for(struct node *n, struct ibv_wc *wc, int want, int ms)
{
	return poll_cq_for(n->cq, wc, want, ms);
}

/* Whether the WRITE of @slot landed (its bytes are the source's). */
static bool landed(struct node *n, uint32_t slot)
{
	uint32_t off = (slot * LEN) % (DST - SRC);

	return memcmp(n->buf + DST + off, n->buf + SRC + off, LEN) == 0;
}

/* The counter's value once it equals @want (adds are asynchronous), or
 * the last one read after a second.
 */
static uint64_t value_of(struct rhinetdv_trigger *t, uint64_t want)
{
	double end = now() + 1.0;
	uint64_t v = ~0ull;

	do {
		int err = rhinetdv_trigger_read(t, &v);

		if (err) {
			errno = err;
			die("rhinetdv_trigger_read");
		}
		if (v == want)
			break;
		usleep(1000);
	} while (now() < end);
	return v;
}

static uint64_t hw_counter(const char *name)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev_name,
		 name);
	f = fopen(path, "r");
	if (!f)
		die(path);
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* A NIC counter read anew: ib_core answers from a read of the last 10 ms. */
static uint64_t hw_counter_fresh(const char *name)
{
	usleep(20000);
	return hw_counter(name);
}

/* The NIC counter once it reads @want, or the last value after a second. */
static uint64_t hw_counter_is(const char *name, uint64_t want)
{
	double end = now() + 1.0;
	uint64_t v;

	do
		v = hw_counter_fresh(name);
	while (v != want && now() < end);
	return v;
}

/* The NIC counter once it has moved past @was, or the last value after a
 * second: a doorbell is handled after the write that rang it returns.
 */
static uint64_t hw_counter_past(const char *name, uint64_t was)
{
	double end = now() + 1.0;
	uint64_t v;

	do
		v = hw_counter_fresh(name);
	while (v <= was && now() < end);
	return v;
}

static struct rhinetdv_trigger *make_trigger(struct ibv_context *ctx,
					     uint64_t value)
{
	struct rhinetdv_trigger_init_attr a = {.value = value};
	struct rhinetdv_trigger *t;

	t = rhinetdv_create_trigger(ctx, &a, sizeof(a));
	if (!t)
		die("rhinetdv_create_trigger");
	return t;
}

static void expect_wc(const struct ibv_wc *wc, uint64_t wr_id,
		      enum ibv_wc_status status, uint32_t vendor_err,
		      const char *what)
{
	check(wc->wr_id == wr_id && wc->status == status &&
		      (status == IBV_WC_SUCCESS ||
		       wc->vendor_err == vendor_err),
	      "%s: wr_id %#" PRIx64
	      " status %s vendor_err %u (expected %#" PRIx64 " %s %u)",
	      what, wc->wr_id, ibv_wc_status_str(wc->status), wc->vendor_err,
	      wr_id, ibv_wc_status_str(status), vendor_err);
}

/* One completion within 2 s, as expected. */
static void expect_one(struct node *n, uint64_t wr_id,
		       enum ibv_wc_status status, uint32_t vendor_err,
		       const char *what)
{
	struct ibv_wc wc;
	int got = poll_for(n, &wc, 1, 2000);

	check(got == 1, "%s: a completion within 2 s", what);
	if (got == 1)
		expect_wc(&wc, wr_id, status, vendor_err, what);
}

/* ---- the first process ---- */

static void threshold_three(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct ibv_wc wc[4];
	int err, got;

	check(t->handle != 0, "a handle is never 0");
	got = post_write(n, 0x101, 1, t, 3, NULL, &err);
	check(got == 0 && !err, "triggered WRITE posted (%d, set %d)", got,
	      err);
	check(post_write(n, 0x102, 2, NULL, 0, NULL, NULL) == 0,
	      "plain WRITE posted behind it");
	expect_one(n, 0x102, IBV_WC_SUCCESS, 0,
		   "the plain WRITE completes while the other waits");
	check(landed(n, 2), "the plain WRITE's bytes landed");
	check(rhinetdv_trigger_add(t, 1) == 0 &&
		      rhinetdv_trigger_add(t, 1) == 0,
	      "two adds");
	check(value_of(t, 2) == 2, "value 2 after two adds");
	got = poll_for(n, wc, 1, 300);
	check(got == 0, "no completion at 2 of 3 (got %d)", got);
	check(!landed(n, 1), "nothing landed at 2 of 3");
	check(rhinetdv_trigger_add(t, 1) == 0, "third add");
	expect_one(n, 0x101, IBV_WC_SUCCESS, 0,
		   "the triggered WRITE completes after the third add");
	check(landed(n, 1), "the triggered WRITE's bytes landed");
	check(value_of(t, 3) == 3, "value 3");
	check(rhinetdv_destroy_trigger(t) == 0, "destroy");
}

/*
 * A burst of adds from the CPU, far more than the NIC's kick FIFO holds
 * (1024 entries), as fast as the stores go: every one counts. A WRITE
 * parked at the exact sum fires once, one parked a unit beyond it waits.
 */
static void add_burst(struct node *n)
{
	enum {
		ADDS = 50000
	};
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	uint64_t fired = hw_counter_fresh("trigger_fired");
	uint64_t dropped = hw_counter("trigger_dropped_adds");
	uint64_t lost = hw_counter("kick_overflows");
	uint64_t sum = 0, v;
	struct ibv_wc wc;
	int i, err = 0, got;

	for (i = 0; i < ADDS; i++)
		sum += i % 7 + 1;
	check(post_write(n, 0x1b1, 11, t, sum, NULL, NULL) == 0 &&
		      post_write(n, 0x1b2, 12, t, sum + 1, NULL, NULL) == 0,
	      "two WRITEs parked (at the sum and beyond)");
	for (i = 0; i < ADDS; i++)
		err |= rhinetdv_trigger_add(t, i % 7 + 1);
	check(!err, "%d adds rung", ADDS);
	expect_one(n, 0x1b1, IBV_WC_SUCCESS, 0,
		   "the WRITE parked at the sum completes");
	v = value_of(t, sum);
	check(v == sum,
	      "the value is the sum of %d adds (%" PRIu64 ", expected %" PRIu64
	      ")",
	      ADDS, v, sum);
	got = poll_for(n, &wc, 1, 300);
	check(got == 0, "the WRITE parked beyond the sum waits (got %d)", got);
	check(hw_counter_is("trigger_fired", fired + 1) == fired + 1,
	      "trigger_fired moved by one");
	check(hw_counter("trigger_dropped_adds") == dropped, "no add dropped");
	printf("rhinet-trigger: %d adds, kick_overflows +%" PRIu64 "\n", ADDS,
	       hw_counter("kick_overflows") - lost);
	check(rhinetdv_trigger_add(t, 1) == 0, "one more add");
	expect_one(n, 0x1b2, IBV_WC_SUCCESS, 0,
		   "then the WRITE parked beyond it completes");
	check(rhinetdv_destroy_trigger(t) == 0, "destroy");
}

/* The parked WRITE keeps its slots while the ring wraps around it. */
static void ring_wraps(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct ibv_wc wc[16];
	int i, b, err, got, ok = 0, order = 1;
	char first_bad[160] = "";

	check(post_write(n, 0x201, 3, t, 1, NULL, &err) == 0 && !err,
	      "parked WRITE posted");
	for (b = 0; b < 20; b++) {
		for (i = 0; i < 16; i++)
			if (post_write(n, 0x1000 + b * 16 + i, 4 + i, NULL, 0,
				       NULL, NULL))
				break;
		check(i == 16,
		      "batch %d: 16 WRITEs posted beside the parked one", b);
		got = poll_for(n, wc, i, 2000);
		for (int k = 0; k < got; k++) {
			const uint64_t want = 0x1000 + b * 16 + k;

			ok += wc[k].status == IBV_WC_SUCCESS;
			if (order && wc[k].wr_id != want)
				snprintf(first_bad, sizeof(first_bad),
					 "batch %d: completion %d of %d is "
					 "%#" PRIx64 ", not %#" PRIx64,
					 b, k, got, wc[k].wr_id, want);
			order &= wc[k].wr_id == want;
		}
	}
	check(ok == 320, "320 plain WRITEs completed around it (%d)", ok);
	check(order, "each with its own wr_id, in order%s%s",
	      first_bad[0] ? ": " : "", first_bad);
	check(!landed(n, 3), "the parked WRITE did not go");
	rhinetdv_trigger_add(t, 1);
	expect_one(n, 0x201, IBV_WC_SUCCESS, 0, "the parked WRITE fires");
	check(landed(n, 3), "its bytes landed");
	rhinetdv_destroy_trigger(t);
}

/*
 * The CQE of a parked WRITE names it by the low 16 bits of its index, so
 * the library posts nothing that those bits would name again until it
 * completed: one lap of 16 bits after it, the queue is full (ENOMEM) even
 * though the ring is empty; the WRITE fires with its own wr_id, and the
 * queue takes WRITEs again.
 */
static void index_lap(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct ibv_wc wc[64];
	uint32_t posted = 0, done = 0, bad = 0;
	double start = now();
	int err, got;

	check(post_write(n, 0xc01, 5, t, 1, NULL, &err) == 0 && !err,
	      "a WRITE parked (two slots)");
	for (;;) {
		ibv_wr_start(n->qx);
		n->qx->wr_id = 0xd0000000u + posted;
		n->qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(n->qx, n->mr->rkey,
				  (uintptr_t)(n->buf + DST));
		ibv_wr_set_sge_list(n->qx, 0, NULL);
		err = ibv_wr_complete(n->qx);
		if (!err) {
			posted++;
			continue;
		}
		/* Full: the ring, or the lap. Completions free the ring. */
		got = poll_for(n, wc, 64, done == posted ? 200 : 2000);
		for (int k = 0; k < got; k++)
			bad += wc[k].status != IBV_WC_SUCCESS ||
			       wc[k].wr_id != 0xd0000000u + done + k;
		done += got;
		if (!got && done == posted)
			break;
	}
	check(err == ENOMEM, "the queue says ENOMEM (%d)", err);
	check(posted == 65534 && done == posted && !bad,
	      "one 16-bit lap of one-slot WRITEs after it: %u posted, %u "
	      "completed, %u wrong (%.1f s)",
	      posted, done, bad, now() - start);
	rhinetdv_trigger_add(t, 1);
	expect_one(n, 0xc01, IBV_WC_SUCCESS, 0, "the parked WRITE after a lap");
	check(landed(n, 5), "its bytes landed");
	check(post_write(n, 0xc02, 6, NULL, 0, NULL, NULL) == 0,
	      "the queue takes WRITEs again");
	expect_one(n, 0xc02, IBV_WC_SUCCESS, 0, "a WRITE after the lap");
	rhinetdv_destroy_trigger(t);
}

static void chain_of_two(struct node *n)
{
	struct rhinetdv_trigger *c1 = make_trigger(n->ctx, 0);
	struct rhinetdv_trigger *c2 = make_trigger(n->ctx, 0);
	struct ibv_wc wc[4];
	int e1, e2, got;

	check(post_write(n, 0x301, 30, c1, 1, c2, &e1) == 0 && !e1,
	      "first link: waits on c1, chains to c2");
	check(post_write(n, 0x302, 31, c2, 1, NULL, &e2) == 0 && !e2,
	      "second link: waits on c2");
	got = poll_for(n, wc, 1, 300);
	check(got == 0, "the chain waits");
	rhinetdv_trigger_add(c1, 1);
	got = poll_for(n, wc, 2, 2000);
	check(got == 2, "both links complete after one add (%d)", got);
	if (got == 2) {
		expect_wc(&wc[0], 0x301, IBV_WC_SUCCESS, 0, "first link");
		expect_wc(&wc[1], 0x302, IBV_WC_SUCCESS, 0, "second link");
	}
	check(landed(n, 30) && landed(n, 31), "both links' bytes landed");
	check(value_of(c2, 1) == 1, "the first completion added 1 to c2");
	rhinetdv_destroy_trigger(c1);
	rhinetdv_destroy_trigger(c2);
}

static void already_reached(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 5);
	int err;

	check(post_write(n, 0x401, 40, t, 3, NULL, &err) == 0 && !err,
	      "WRITE at threshold 3 on a counter at 5");
	expect_one(n, 0x401, IBV_WC_SUCCESS, 0, "it goes at post");
	check(landed(n, 40), "its bytes landed");
	rhinetdv_destroy_trigger(t);
}

/* Other opcodes wait the same way: a READ and a FETCH_ADD on one counter. */
static void other_opcodes(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct rhinetdv_wr_trigger wt = {
		.comp_mask = RHINETDV_WR_TRIGGER_COUNTER,
		.counter = t,
		.threshold = 2,
	};
	static const uint8_t zeros[LEN];
	uint64_t *word = (uint64_t *)(n->buf + DST); /* slot 0's, unused */
	uint64_t *old = word + 1;
	uint8_t *read_to = n->buf + DST + 100 * LEN;
	struct ibv_wc wc[2];
	int e1, e2, got;

	*word = 40;
	*old = 0;
	memset(read_to, 0, LEN);
	ibv_wr_start(n->qx);
	n->qx->wr_id = 0x901;
	n->qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(n->qx, n->mr->rkey, (uintptr_t)(n->buf + SRC));
	ibv_wr_set_sge(n->qx, n->mr->lkey, (uintptr_t)read_to, LEN);
	e1 = rhinetdv_wr_set_trigger(n->qx, &wt, sizeof(wt));
	n->qx->wr_id = 0x902;
	n->qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(n->qx, n->mr->rkey, (uintptr_t)word, 2);
	ibv_wr_set_sge(n->qx, n->mr->lkey, (uintptr_t)old, 8);
	e2 = rhinetdv_wr_set_trigger(n->qx, &wt, sizeof(wt));
	check(ibv_wr_complete(n->qx) == 0 && !e1 && !e2,
	      "a triggered READ and FETCH_ADD in one batch");
	check(poll_for(n, wc, 1, 300) == 0 && *word == 40 &&
		      memcmp(read_to, zeros, LEN) == 0,
	      "both wait");
	rhinetdv_trigger_add(t, 2);
	got = poll_for(n, wc, 2, 2000);
	check(got == 2, "both complete at threshold 2 (%d)", got);
	if (got == 2) {
		expect_wc(&wc[0], 0x901, IBV_WC_SUCCESS, 0, "triggered READ");
		expect_wc(&wc[1], 0x902, IBV_WC_SUCCESS, 0,
			  "triggered FETCH_ADD");
	}
	check(pattern_differs(read_to, LEN, 7) < 0,
	      "the READ brought the bytes");
	check(*word == 42 && *old == 40,
	      "the FETCH_ADD added (%" PRIu64 ", old %" PRIu64 ")", *word,
	      *old);
	rhinetdv_destroy_trigger(t);
}

static void destroyed_with_parked(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct ibv_wc wc[4];
	int e1, e2, got;

	check(post_write(n, 0x501, 50, t, 10, NULL, &e1) == 0 && !e1 &&
		      post_write(n, 0x502, 51, t, 20, NULL, &e2) == 0 && !e2,
	      "two WRITEs parked");
	check(poll_for(n, wc, 1, 200) == 0, "they wait");
	check(rhinetdv_destroy_trigger(t) == 0, "destroy with WRITEs parked");
	got = poll_for(n, wc, 2, 2000);
	check(got == 2, "both flushed (%d)", got);
	if (got == 2) {
		expect_wc(&wc[0], 0x501, IBV_WC_WR_FLUSH_ERR,
			  RHINETDV_SYN_TRIGGER_GONE, "flushed first");
		expect_wc(&wc[1], 0x502, IBV_WC_WR_FLUSH_ERR,
			  RHINETDV_SYN_TRIGGER_GONE, "flushed second");
	}
	check(!landed(n, 50) && !landed(n, 51), "nothing landed");
	check(post_write(n, 0x503, 52, NULL, 0, NULL, NULL) == 0 &&
		      poll_for(n, wc, 1, 2000) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 0x503,
	      "the QP goes on");
}

/*
 * More WRITEs parked than the process's share of the NIC's table: those
 * beyond it complete at once with RHINETDV_SYN_TRIGGER_NO_ROOM, in order;
 * a plain WRITE between them frees the ring (parked WRITEs leave it as
 * unsignaled ones do), and destroying the counter flushes every parked
 * one with its own wr_id.
 */
#define MANY 48

struct tally {
	bool done[MANY];
	int refused, flushed, plain, other;
};

/* Counts completions: a refusal or a flush of a triggered WRITE (each
 * once), a plain WRITE's success, anything else.
 */
static void tally(struct tally *y, const struct ibv_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - 0xa00;
		bool mine = k < MANY && !y->done[k];

		if (wc[i].wr_id >= 0xb00 && wc[i].status == IBV_WC_SUCCESS) {
			y->plain++;
		} else if (mine && wc[i].status == IBV_WC_GENERAL_ERR &&
			   wc[i].vendor_err == RHINETDV_SYN_TRIGGER_NO_ROOM) {
			y->done[k] = true;
			y->refused++;
		} else if (mine && wc[i].status == IBV_WC_WR_FLUSH_ERR &&
			   wc[i].vendor_err == RHINETDV_SYN_TRIGGER_GONE) {
			y->done[k] = true;
			y->flushed++;
		} else {
			y->other++;
		}
	}
}

static void more_than_the_share(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct tally y = {0};
	struct ibv_wc wc[MANY];
	int i, err = 0;

	for (i = 0; i < MANY && !err; i++) {
		int e = 0;

		err = post_write(n, 0xa00 + i, 120 + i, t, 1000, NULL, &e) | e;
		/* A plain WRITE every 16: its CQE frees the ring behind it. */
		if (!err && i % 16 == 15) {
			int plain = y.plain;

			err = post_write(n, 0xb00 + i, 200, NULL, 0, NULL,
					 NULL);
			while (!err && y.plain == plain) {
				int got = poll_for(n, wc, 1, 2000);

				if (!got)
					break;
				tally(&y, wc, got);
			}
		}
	}
	check(!err && y.plain == MANY / 16, "%d triggered WRITEs posted (%d)",
	      MANY, err);
	/* The refusals come at once. */
	tally(&y, wc, poll_for(n, wc, MANY, 500));
	check(y.refused > 0 && y.refused < MANY && !y.other,
	      "%d of %d refused for want of room, nothing else (%d)", y.refused,
	      MANY, y.other);
	check(rhinetdv_destroy_trigger(t) == 0, "destroy");
	tally(&y, wc, poll_for(n, wc, MANY - y.refused, 2000));
	check(y.flushed == MANY - y.refused && !y.other,
	      "the other %d flushed with their wr_ids (%d)", MANY - y.refused,
	      y.flushed);
	check(poll_for(n, wc, 1, 100) == 0, "no completion beyond");
}

/* ---- remote increments (rhinetdv_wr_trigger_add) ---- */

/* Where an add's old value lands: a word of the buffer no WRITE uses. */
static uint64_t *old_word(struct node *n)
{
	return (uint64_t *)(n->buf + DST + 120 * LEN);
}

/*
 * Posts on @qx an add of @addend to the counter (handle, key) at the other
 * end of the connection, signaled, with wr_id; with @sge_len its old value
 * goes to old_word (0: no SGE); triggered on @on at @threshold when given.
 * ibv_wr_complete's result, and in *add_err rhinetdv_wr_trigger_add's.
 */
static int post_remote_add(struct node *n, struct ibv_qp_ex *qx, uint64_t wr_id,
			   uint32_t handle, uint32_t key, uint64_t addend,
			   uint32_t sge_len, struct rhinetdv_trigger *on,
			   uint64_t threshold, int *add_err)
{
	struct rhinetdv_wr_trigger t = {
		.comp_mask = RHINETDV_WR_TRIGGER_COUNTER,
		.counter = on,
		.threshold = threshold,
	};
	int err;

	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	err = rhinetdv_wr_trigger_add(qx, handle, key, addend);
	if (sge_len)
		ibv_wr_set_sge(qx, n->mr->lkey, (uintptr_t)old_word(n),
			       sge_len);
	if (on && !err)
		err = rhinetdv_wr_set_trigger(qx, &t, sizeof(t));
	if (add_err)
		*add_err = err;
	return ibv_wr_complete(qx);
}

/* The completion of @wr_id among @wc[0..n). */
static const struct ibv_wc *wc_of(const struct ibv_wc *wc, int n,
				  uint64_t wr_id)
{
	for (int i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	return NULL;
}

/*
 * A WRITE parked on counter t at 5; the peer end of the connection (here
 * the same process, through the NIC) adds 3 with the old value wanted,
 * then 2 without: the first completes FETCH_ADD with byte_len 8 and old
 * value 0, and the WRITE still waits; the second (byte_len 0) fires it.
 * Exactly one triggered WQE fired.
 */
static void remote_add(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	uint64_t fired = hw_counter_fresh("trigger_fired");
	const struct ibv_wc *w;
	struct ibv_wc wc[4];
	int err, got;

	check(post_write(n, 0xa01, 90, t, 5, NULL, &err) == 0 && !err,
	      "a WRITE parked at 5");
	*old_word(n) = ~0ull;
	check(post_remote_add(n, n->qx, 0xa02, t->handle, t->key, 3, 8, NULL, 0,
			      &err) == 0 &&
		      !err,
	      "remote add of 3 posted");
	got = poll_for(n, wc, 1, 2000);
	check(got == 1 && wc[0].wr_id == 0xa02 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_FETCH_ADD && wc[0].byte_len == 8,
	      "the add completes as FETCH_ADD, byte_len 8 (%d: %s op %d len "
	      "%u)",
	      got, got ? ibv_wc_status_str(wc[0].status) : "-",
	      got ? (int)wc[0].opcode : -1, got ? wc[0].byte_len : 0);
	check(*old_word(n) == 0, "the old value 0 came back (%" PRIu64 ")",
	      *old_word(n));
	check(value_of(t, 3) == 3, "the counter is 3");
	check(poll_for(n, wc, 1, 200) == 0 && !landed(n, 90),
	      "the WRITE waits at 3 of 5");
	check(post_remote_add(n, n->qx, 0xa03, t->handle, t->key, 2, 0, NULL, 0,
			      &err) == 0 &&
		      !err,
	      "remote add of 2, no SGE");
	got = poll_for(n, wc, 2, 2000);
	check(got == 2, "the add and the fired WRITE complete (%d)", got);
	w = wc_of(wc, got, 0xa03);
	check(w && w->status == IBV_WC_SUCCESS && w->byte_len == 0,
	      "the add without SGE: byte_len 0");
	w = wc_of(wc, got, 0xa01);
	check(w && w->status == IBV_WC_SUCCESS, "the WRITE fired");
	check(landed(n, 90), "its bytes landed");
	check(value_of(t, 5) == 5, "the counter is 5");
	check(hw_counter_is("trigger_fired", fired + 1) == fired + 1,
	      "exactly one WQE fired (%" PRIu64 ")",
	      hw_counter("trigger_fired") - fired);
	rhinetdv_destroy_trigger(t);
}

/*
 * A chain through a remote add: an add parked on counter c (threshold 2)
 * names counter t, on which a WRITE is parked at 1. Two local adds to c
 * fire the add, whose arrival fires the WRITE: two WQEs fired, none
 * before the second add.
 */
static void remote_chain(struct node *n)
{
	struct rhinetdv_trigger *c = make_trigger(n->ctx, 0);
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	uint64_t fired = hw_counter_fresh("trigger_fired");
	struct ibv_wc wc[4];
	int err, got;

	check(post_write(n, 0xa11, 91, t, 1, NULL, &err) == 0 && !err,
	      "a WRITE parked on t at 1");
	check(post_remote_add(n, n->qx, 0xa12, t->handle, t->key, 1, 8, c, 2,
			      &err) == 0 &&
		      !err,
	      "a remote add to t parked on c at 2");
	rhinetdv_trigger_add(c, 1);
	check(poll_for(n, wc, 1, 300) == 0 && value_of(t, 0) == 0 &&
		      !landed(n, 91),
	      "nothing goes at 1 of 2");
	rhinetdv_trigger_add(c, 1);
	got = poll_for(n, wc, 2, 2000);
	check(got == 2 && wc_of(wc, got, 0xa11) && wc_of(wc, got, 0xa12),
	      "the add and the WRITE behind it complete (%d)", got);
	for (int i = 0; i < got; i++)
		check(wc[i].status == IBV_WC_SUCCESS, "wr %#" PRIx64 ": %s",
		      wc[i].wr_id, ibv_wc_status_str(wc[i].status));
	check(landed(n, 91) && value_of(t, 1) == 1, "the WRITE landed");
	check(hw_counter_is("trigger_fired", fired + 2) == fired + 2,
	      "two WQEs fired (%" PRIu64 ")",
	      hw_counter("trigger_fired") - fired);
	rhinetdv_destroy_trigger(t);
	rhinetdv_destroy_trigger(c);
}

/* What the library refuses before the NIC sees it. */
static void remote_add_refused_at_post(struct node *n)
{
	struct ibv_qp *uc = make_qp(n, IBV_QPT_UC);
	struct ibv_qp *ud = make_qp(n, IBV_QPT_UD);
	struct ibv_qp_ex *ux;
	struct ibv_wc wc;
	int err, rc;

	rc = post_remote_add(n, n->qx, 0xa21, 1, 1, 1, 4, NULL, 0, &err);
	check(rc == EINVAL && !err, "a 4-byte result SGE: EINVAL (%d)", rc);
	ux = ibv_qp_to_qp_ex(uc);
	ibv_wr_start(ux);
	err = rhinetdv_wr_trigger_add(ux, 1, 1, 1);
	rc = ibv_wr_complete(ux);
	check(err == EOPNOTSUPP && rc != 0, "on a UC QP: EOPNOTSUPP (%d, %d)",
	      err, rc);
	ux = ibv_qp_to_qp_ex(ud);
	ibv_wr_start(ux);
	err = rhinetdv_wr_trigger_add(ux, 1, 1, 1);
	rc = ibv_wr_complete(ux);
	check(err == EOPNOTSUPP && rc != 0, "on a UD QP: EOPNOTSUPP (%d, %d)",
	      err, rc);
	check(poll_for(n, &wc, 1, 100) == 0, "nothing was posted");
	ibv_destroy_qp(uc);
	ibv_destroy_qp(ud);
}

/* ---- other processes ---- */

/* A process that runs @fn as @name and exits with its failures (0: all
 * passed); its pid.
 */
static pid_t spawn(const char *name, int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		role = name;
		checks = failures = 0;
		_exit(fn(arg) ? 1 : failures ? 1 : 0);
	}
	return pid;
}

/* Its exit status (128: it did not exit). */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The first process's counter as another process would name it. */
struct foreign {
	struct rhinetdv_trigger *theirs;
	uint32_t handle;
};

static int intruder(void *arg)
{
	struct foreign *f = arg;
	struct {
		struct rhinetdv_trigger pub;
		uint64_t pad[2]; /* the library's private part */
	} fake;
	struct ibv_wc wc[2];
	struct node n;
	int err;

	setup(&n);
	memset(&fake, 0, sizeof(fake));
	fake.pub.context = n.ctx;
	fake.pub.handle = f->handle;
	/* The store goes to this process's page: the NIC drops it. */
	check(rhinetdv_trigger_add(&fake.pub, 100) == 0,
	      "the add is one store (the NIC judges it)");
	/* The library knows the struct is not of this context. */
	post_write(&n, 0x601, 60, f->theirs, 1, NULL, &err);
	check(err == EINVAL, "a counter of another context: EINVAL (%d)", err);
	/* The bare handle reaches the NIC, which refuses it. */
	check(post_write(&n, 0x602, 61, &fake.pub, 1, NULL, &err) == 0 && !err,
	      "a WRITE naming the other process's handle is posted");
	expect_one(&n, 0x602, IBV_WC_GENERAL_ERR, RHINETDV_SYN_BAD_TRIGGER,
		   "a foreign handle completes at once");
	check(!landed(&n, 61), "nothing landed");
	check(post_write(&n, 0x603, 62, NULL, 0, NULL, NULL) == 0 &&
		      poll_for(&n, wc, 1, 2000) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS,
	      "its QP goes on");
	teardown(&n);
	return 0;
}

static void foreign_process(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct foreign f = {.theirs = t, .handle = t->handle};
	uint64_t dropped = hw_counter_fresh("trigger_dropped_adds"),
		 now_dropped;
	struct ibv_wc wc[2];
	int err;

	check(post_write(n, 0x701, 70, t, 1, NULL, &err) == 0 && !err,
	      "a WRITE parked on the counter");
	check(reap(spawn("intruder", intruder, &f)) == 0,
	      "the second process's checks");
	now_dropped = hw_counter_past("trigger_dropped_adds", dropped);
	check(now_dropped > dropped,
	      "the NIC counted the dropped add (%" PRIu64 " -> %" PRIu64 ")",
	      dropped, now_dropped);
	check(value_of(t, 0) == 0, "the value did not move");
	check(poll_for(n, wc, 1, 200) == 0 && !landed(n, 70),
	      "the parked WRITE still waits");
	rhinetdv_trigger_add(t, 1);
	check(poll_for(n, wc, 1, 2000) == 1 && wc[0].wr_id == 0x701 &&
		      wc[0].status == IBV_WC_SUCCESS,
	      "its owner's add sends it");
	rhinetdv_destroy_trigger(t);
}

/* Counters until refused; the count through @fd, then waits for a byte. */
struct hog {
	int report, go;
	bool park; /* WRITEs parked on the first counters */
	bool as_nobody;
};

static int hog(void *arg)
{
	static struct rhinetdv_trigger *t[MAX_COUNTERS];
	struct hog *h = arg;
	struct node n;
	int count = 0, err, e = 0;
	char c;

	if (h->as_nobody && setresuid(NOBODY, NOBODY, NOBODY))
		die("setresuid");
	if (h->park)
		setup(&n);
	else
		n.ctx = open_device(dev_name);
	while (count < MAX_COUNTERS) {
		t[count] = rhinetdv_create_trigger(n.ctx, NULL, 0);
		if (!t[count]) {
			e = errno;
			break;
		}
		count++;
	}
	check(e == ENOSPC, "refused with ENOSPC after %d counters (%s)", count,
	      strerror(e));
	for (int i = 0; h->park && i < 4 && i < count; i++)
		check(post_write(&n, 0x800 + i, 80 + i, t[i], 1000, NULL,
				 &err) == 0 &&
			      !err,
		      "WRITE parked on counter %d", i);
	if (write(h->report, &count, sizeof(count)) != sizeof(count))
		die("write");
	if (h->go >= 0 && read(h->go, &c, 1) != 1)
		die("read");
	/* Exits holding everything: the kernel and the NIC clean up. */
	return 0;
}

static int run_hog(struct hog *h, int *count, pid_t *pid)
{
	int rep[2], go[2];

	if (pipe(rep) || pipe(go))
		die("pipe");
	h->report = rep[1];
	h->go = go[0];
	*pid = spawn(h->as_nobody ? "hog (nobody)" : "hog", hog, h);
	close(rep[1]);
	close(go[0]);
	if (read(rep[0], count, sizeof(*count)) != sizeof(*count))
		*count = -1;
	close(rep[0]);
	return go[1];
}

static int finish_hog(int go, pid_t pid)
{
	if (write(go, "x", 1) != 1)
		die("write");
	close(go);
	return reap(pid);
}

static void shares(void)
{
	struct hog a = {.park = true}, b = {.as_nobody = true}, c = {0};
	int na, nb, nc, ga, gb, gc;
	pid_t pa, pb, pc;

	ga = run_hog(&a, &na, &pa);
	check(na > 0, "the first process got %d counters", na);
	gb = run_hog(&b, &nb, &pb);
	check(nb > 0, "another user's process still gets counters (%d)", nb);
	check(finish_hog(gb, pb) == 0, "the other user's process");
	/* The first exits holding its counters and parked WRITEs. */
	check(finish_hog(ga, pa) == 0, "the first process's checks");
	gc = run_hog(&c, &nc, &pc);
	check(nc == na, "a new process gets the share back: %d of %d", nc, na);
	check(finish_hog(gc, pc) == 0, "the new process");
}

/*
 * Refusals by the target, each in a process of its own (the RC QP goes to
 * the error state after one): a wrong key, and the handle and key of a
 * destroyed counter (another counter made since). The add completes
 * REM_ACCESS_ERR / RHINETDV_SYN_BAD_REMOTE_TRIGGER, the NIC counts it in
 * trigger_remote_refused, nothing is added and nothing fires.
 */
static int refused_by_peer(void *arg)
{
	const bool stale = arg != NULL;
	uint64_t refused, fired;
	struct rhinetdv_trigger *t;
	const struct ibv_wc *w;
	uint32_t handle, key;
	struct ibv_wc wc[4];
	struct node n;
	int err, got;

	setup(&n);
	refused = hw_counter_fresh("trigger_remote_refused");
	fired = hw_counter_fresh("trigger_fired");
	t = make_trigger(n.ctx, 0);
	handle = t->handle;
	key = t->key + 1;
	if (stale) {
		key = t->key;
		rhinetdv_destroy_trigger(t);
		t = make_trigger(n.ctx, 0);
	}
	check(post_write(&n, 0xb01, 95, t, 1, NULL, &err) == 0 && !err,
	      "a WRITE parked at 1");
	check(post_remote_add(&n, n.qx, 0xb02, handle, key, 1, 8, NULL, 0,
			      &err) == 0 &&
		      !err,
	      "the add is posted");
	got = poll_for(&n, wc, 2, 2000);
	w = wc_of(wc, got, 0xb02);
	check(w && w->status == IBV_WC_REM_ACCESS_ERR &&
		      w->vendor_err == RHINETDV_SYN_BAD_REMOTE_TRIGGER,
	      "REM_ACCESS_ERR / BAD_REMOTE_TRIGGER (%s %u)",
	      w ? ibv_wc_status_str(w->status) : "none", w ? w->vendor_err : 0);
	check(hw_counter_is("trigger_remote_refused", refused + 1) ==
		      refused + 1,
	      "the target counted one refusal (%" PRIu64 ")",
	      hw_counter("trigger_remote_refused") - refused);
	check(value_of(t, 0) == 0 && !landed(&n, 95), "nothing added");
	check(hw_counter_is("trigger_fired", fired) == fired, "nothing fired");
	rhinetdv_destroy_trigger(t);
	teardown(&n);
	return 0;
}

/* A process whose QP is connected to one of the first's: it adds to the
 * first's counter (handle and key through a pipe), parks another add on
 * a counter of its own that nothing reaches, and exits without waiting.
 */
struct leaver {
	int to_child, from_child;
};

static int leaver(void *arg)
{
	struct leaver *l = arg;
	struct {
		uint32_t qpn, handle, key;
	} peer;
	struct rhinetdv_trigger *own;
	struct ibv_qp *qp;
	uint8_t gid[16];
	struct node n;
	int err;

	setup(&n);
	qp = make_qp(&n, IBV_QPT_RC);
	if (write(l->from_child, &qp->qp_num, 4) != 4 ||
	    read(l->to_child, &peer, sizeof(peer)) != sizeof(peer))
		die("pipe");
	local_gid(n.ctx, gid_index, gid);
	rc_connect(qp, "leaver QP", peer.qpn, gid, gid_index, 4);
	own = make_trigger(n.ctx, 0);
	check(post_remote_add(&n, ibv_qp_to_qp_ex(qp), 0xc02, peer.handle,
			      peer.key, 1000, 0, own, 1, &err) == 0 &&
		      !err,
	      "an add parked on a counter nothing reaches");
	check(post_remote_add(&n, ibv_qp_to_qp_ex(qp), 0xc01, peer.handle,
			      peer.key, 1, 8, NULL, 0, &err) == 0 &&
		      !err,
	      "an add to the other process's counter");
	/* Exits with both in flight: the kernel and the NIC clean up. */
	return 0;
}

static void exit_with_add_in_flight(struct node *n)
{
	struct rhinetdv_trigger *t = make_trigger(n->ctx, 0);
	struct leaver l;
	struct {
		uint32_t qpn, handle, key;
	} me;
	int down[2], up[2];
	struct ibv_qp *qp = make_qp(n, IBV_QPT_RC);
	uint32_t child_qpn;
	uint8_t gid[16];
	struct ibv_wc wc;
	pid_t pid;

	if (pipe(down) || pipe(up))
		die("pipe");
	l.to_child = down[0];
	l.from_child = up[1];
	pid = spawn("leaver", leaver, &l);
	if (read(up[0], &child_qpn, 4) != 4)
		die("read");
	local_gid(n->ctx, gid_index, gid);
	rc_connect(qp, "QP to the leaver", child_qpn, gid, gid_index, 4);
	me.qpn = qp->qp_num;
	me.handle = t->handle;
	me.key = t->key;
	if (write(down[1], &me, sizeof(me)) != sizeof(me))
		die("write");
	check(reap(pid) == 0, "the leaving process's checks");
	/* Its add arrives once or not at all, the parked one never. */
	{
		uint64_t v = value_of(t, 1);

		check(v <= 1,
		      "the counter got at most the one add (%" PRIu64 ")", v);
	}
	check(post_write(n, 0xc03, 96, NULL, 0, NULL, NULL) == 0 &&
		      poll_for(n, &wc, 1, 2000) == 1 &&
		      wc.status == IBV_WC_SUCCESS && wc.wr_id == 0xc03,
	      "this process's QPs go on");
	ibv_destroy_qp(qp);
	rhinetdv_destroy_trigger(t);
	close(down[0]);
	close(down[1]);
	close(up[0]);
	close(up[1]);
}

int main(int argc, char **argv)
{
	struct node n;

	program = "rhinet-trigger";
	setvbuf(stdout, NULL, _IOLBF, 0);
	peer_args(argc, argv, &dev_name, &gid_index, NULL);
	role = NULL;
	setup(&n);
	threshold_three(&n);
	add_burst(&n);
	ring_wraps(&n);
	index_lap(&n);
	chain_of_two(&n);
	already_reached(&n);
	other_opcodes(&n);
	more_than_the_share(&n);
	destroyed_with_parked(&n);
	remote_add(&n);
	remote_chain(&n);
	remote_add_refused_at_post(&n);
	check(reap(spawn("wrong key", refused_by_peer, NULL)) == 0,
	      "a wrong key refused by the target");
	check(reap(spawn("stale handle", refused_by_peer, &n)) == 0,
	      "a stale handle refused by the target");
	exit_with_add_in_flight(&n);
	foreign_process(&n);
	/* The first process holds no counter now: the shares are whole. */
	shares();
	teardown(&n);
	printf("rhinet-trigger: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
