// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-mprod: many producers on one send queue (mprod.sh). The client
 * (node 0) creates an RC QP with RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER and
 * lets THREADS threads post inline RDMA WRITEs on it at once, none taking
 * a lock, into the server's (node 1) buffer, each WRITE to a place of its
 * own with a value of its own:
 *  - burst: PER_THREAD WRITEs per thread (thread 0 through ibv_post_send,
 *    the others through rhinetdv_mp_post_send). Every completion comes
 *    once, successful, and each thread's in its posting order; the server
 *    finds every value in place. The NIC's host_doorbells counter gives
 *    the doorbells per WQE (one per RHN_MP_DB_BATCH slots expected).
 *  - lost doorbells: the same with RHINETDV_MP_POST_NO_DOORBELL on about
 *    half of the posts, then a few posted on an idle QP with it: all
 *    arrive, found by the NIC's record scan (sq_recovered moved).
 *  - teardown: posters running while the QP goes to ERR (their WRITEs
 *    flushed) and is destroyed: every poster stops with EINVAL, none
 *    hangs, the CQ can be destroyed after.
 * First the refusals: what the flag cannot be combined with, and the
 * direct verb on a QP without it.
 *   rhinet-mprod [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/rhinetdv.h>
#include <rhinet/hw_queues.h>

#include "verbs_guest.h"

#define THREADS 8
#define PER_THREAD 20000 /* the burst's most; MPROD_BURST may ask fewer */
#define FLAKY_PER_THREAD 2000
#define IDLE_LOST 5 /* WRITEs posted without doorbell on an idle QP */
/* The send queue holds more than the CQ: the CQ is what limits posters. */
#define SQ_WRS 1024
#define CQ_ENTRIES 256
#define BURST_BYTES ((size_t)THREADS * PER_THREAD * 8)
#define FLAKY_AT BURST_BYTES
#define FLAKY_BYTES ((size_t)THREADS * FLAKY_PER_THREAD * 8 + IDLE_LOST * 8)
#define TEARDOWN_AT (FLAKY_AT + FLAKY_BYTES)
#define TEARDOWN_SLOTS 4096 /* each thread writes round a ring of these */
#define BUF_BYTES (TEARDOWN_AT + (size_t)THREADS * TEARDOWN_SLOTS * 8)

/* WRITEs per thread in the burst: PER_THREAD, or MPROD_BURST (1 to
 * PER_THREAD) from the environment, for a quick run by hand.
 */
static uint32_t burst_per_thread = PER_THREAD;

struct info {
	uint32_t qpn, rkey;
	uint64_t addr;
	uint8_t gid[16];
};

struct node {
	const char *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int gid_index;
	struct info me, peer;
};

/* The value WRITE @i of thread @t carries: never 0, distinct. */
static uint64_t value_of(uint32_t t, uint32_t i)
{
	return ((uint64_t)(t + 1) << 40) | ((uint64_t)i << 8) | 0x5a;
}

static uint64_t counter(const struct node *n, const char *name)
{
	return ib_hw_counter(n->dev, name);
}

/* ---- the posters ---------------------------------------------------------- */

enum mode {
	BURST,
	FLAKY,
	TEARDOWN
};

struct poster {
	pthread_t tid;
	struct node *n;
	struct ibv_qp *qp; /* n->qp at the start: the teardown clears that */
	enum mode mode;
	uint32_t t, count;
	uint64_t remote; /* where thread t's WRITEs go */
	int err; /* the error that stopped it, 0 if none */
	uint32_t posted; /* WRITEs posted */
	uint64_t enomem; /* posts refused for room, tried again */
	atomic_bool done;
};

/* One signaled inline WRITE of value_of(t, i) to @raddr. */
static int post_one(struct poster *p, uint32_t i, uint64_t raddr,
		    uint32_t flags)
{
	uint64_t v = value_of(p->t, i);
	struct ibv_sge sge = {(uintptr_t)&v, sizeof(v), 0};
	struct ibv_send_wr wr = {
		.wr_id = ((uint64_t)p->t << 32) | i,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.wr.rdma = {raddr, p->n->peer.rkey},
	};
	struct ibv_send_wr *bad = NULL;

	/* Thread 0 shows that ibv_post_send takes the same path. */
	if (p->t == 0 && !flags)
		return ibv_post_send(p->qp, &wr, &bad);
	return rhinetdv_mp_post_send(p->qp, &wr, &bad, flags);
}

static void *poster_main(void *arg)
{
	struct poster *p = arg;
	unsigned int seed = 1234 + p->t;

	for (uint32_t i = 0; p->mode == TEARDOWN || i < p->count;) {
		uint32_t flags = 0;
		uint64_t raddr = p->remote + (uint64_t)i * 8;
		int err;

		if (p->mode == FLAKY && rand_r(&seed) % 2)
			flags = RHINETDV_MP_POST_NO_DOORBELL;
		if (p->mode == TEARDOWN)
			raddr = p->remote + (uint64_t)(i % TEARDOWN_SLOTS) * 8;
		err = post_one(p, i, raddr, flags);
		if (err == ENOMEM) {
			/* Only the poller frees room: give it the CPU rather
			 * than spin (a guest has one, and under the debug
			 * kernel a yield costs tens of microseconds).
			 */
			p->enomem++;
			usleep(50);
			continue;
		}
		if (err) {
			p->err = err;
			break;
		}
		p->posted = ++i;
	}
	atomic_store(&p->done, true);
	return NULL;
}

static void start_posters(struct node *n, struct poster *p, enum mode mode,
			  uint32_t count, uint64_t region)
{
	for (uint32_t t = 0; t < THREADS; t++) {
		p[t] = (struct poster){.n = n,
				       .qp = n->qp,
				       .mode = mode,
				       .t = t,
				       .count = count};
		p[t].remote =
			n->peer.addr + region +
			(uint64_t)t *
				(mode == TEARDOWN ? TEARDOWN_SLOTS : count) * 8;
		atomic_init(&p[t].done, false);
		if (pthread_create(&p[t].tid, NULL, poster_main, &p[t]))
			die("pthread_create");
	}
}

/* Joins the posters, each within what is left of @deadline (now()); false
 * if one hangs (it is left running, the program fails).
 */
static bool join_posters(struct poster *p, double deadline)
{
	bool all = true;

	for (uint32_t t = 0; t < THREADS; t++) {
		while (!atomic_load(&p[t].done) && now() < deadline)
			usleep(1000);
		if (!atomic_load(&p[t].done)) {
			check(false, "poster %u hangs (%u posted)", t,
			      p[t].posted);
			all = false;
			continue;
		}
		pthread_join(p[t].tid, NULL);
	}
	return all;
}

/*
 * Polls until @want completions came or @deadline: each successful, each
 * thread's in the order it posted them (next[t]), none twice. Returns how
 * many came.
 */
static uint64_t poll_in_order(struct node *n, uint32_t *next, uint64_t want,
			      double deadline)
{
	uint64_t got = 0, bad = 0;
	struct ibv_wc wc[32];

	while (got < want && now() < deadline) {
		int r = ibv_poll_cq(n->cq, 32, wc);

		if (r < 0)
			die("ibv_poll_cq");
		if (!r) {
			usleep(100);
			continue;
		}
		for (int k = 0; k < r; k++) {
			uint32_t t = wc[k].wr_id >> 32,
				 i = (uint32_t)wc[k].wr_id;

			got++;
			if (wc[k].status != IBV_WC_SUCCESS ||
			    wc[k].opcode != IBV_WC_RDMA_WRITE || t >= THREADS ||
			    i != next[t]) {
				if (bad++ < 5)
					check(false,
					      "completion wr_id %u/%u: %s, "
					      "opcode %d, thread's next %u",
					      t, i,
					      ibv_wc_status_str(wc[k].status),
					      wc[k].opcode,
					      t < THREADS ? next[t] : 0);
				continue;
			}
			next[t]++;
		}
	}
	check(!bad, "%" PRIu64 " completions wrong", bad);
	return got;
}

/* ---- client --------------------------------------------------------------- */

static struct ibv_qp *mp_qp(struct node *n, uint32_t max_send_wr,
			    enum ibv_qp_type type, uint64_t dv_mask,
			    uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = n->cq,
		.recv_cq = n->cq,
		.cap = {.max_send_wr = max_send_wr,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = 8},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = n->pd,
	};
	struct rhinetdv_qp_init_attr dv = {.comp_mask = dv_mask};

	if (send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	return rhinetdv_create_qp(n->ctx, &a, &dv, sizeof(dv));
}

static void refused(struct ibv_qp *qp, int want, int alt, const char *what)
{
	check(!qp && (errno == want || errno == alt), "%s: %s, want %s", what,
	      qp ? "created" : strerror(errno), strerror(want));
	if (qp)
		ibv_destroy_qp(qp);
}

static void refusals(struct node *n)
{
	const uint64_t mp = RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER;
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE}, *bad;
	struct ibv_qp *plain, *qp;
	int ret;

	errno = 0;
	refused(mp_qp(n, 0, IBV_QPT_RC, mp, 0), EINVAL, EINVAL,
		"multi-producer QP without a send queue");
	refused(mp_qp(n, 64, IBV_QPT_RC, mp | (1u << 7), 0), EINVAL, EINVAL,
		"multi-producer QP and an unknown comp_mask bit");
	refused(mp_qp(n, 64, IBV_QPT_RC, mp, IBV_QP_EX_WITH_RDMA_WRITE), EINVAL,
		EINVAL, "multi-producer QP with ibv_qp_ex send ops");
	refused(mp_qp(n, 64, IBV_QPT_XRC_SEND, mp, 0), EOPNOTSUPP, EINVAL,
		"multi-producer XRC QP");

	/* A small queue is made 64 slots, the least the protocol takes. */
	qp = mp_qp(n, 1, IBV_QPT_RC, mp, 0);
	check(qp, "multi-producer QP of 1 WR: %s", strerror(errno));
	if (qp) {
		ret = rhinetdv_mp_post_send(qp, &wr, &bad, 0);
		check(ret == EINVAL && bad == &wr,
		      "rhinetdv_mp_post_send in RESET: %s, want EINVAL",
		      strerror(ret));
		check(!ibv_destroy_qp(qp), "destroy the 1-WR QP");
	}
	/* UD may ask too (the NIC takes the flag on every QP type). */
	qp = mp_qp(n, 64, IBV_QPT_UD, mp, 0);
	check(qp, "multi-producer UD QP: %s", strerror(errno));
	if (qp)
		check(!ibv_destroy_qp(qp), "destroy the UD QP");

	plain = mp_qp(n, 64, IBV_QPT_RC, 0, 0);
	check(plain, "plain QP: %s", strerror(errno));
	if (plain) {
		ret = rhinetdv_mp_post_send(plain, &wr, &bad, 0);
		check(ret == EOPNOTSUPP,
		      "rhinetdv_mp_post_send on a plain QP: %s, want %s",
		      strerror(ret), strerror(EOPNOTSUPP));
		check(!ibv_destroy_qp(plain), "destroy the plain QP");
	}
}

static double rate(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void client_burst(struct node *n, int fd)
{
	uint64_t db0 = counter(n, "host_doorbells"), db, enomem = 0;
	uint64_t ovf0 = counter(n, "cq_overflows");
	uint32_t next[THREADS] = {0};
	struct poster p[THREADS];
	const uint64_t want = (uint64_t)THREADS * burst_per_thread;
	double t0 = now();
	uint64_t got;
	int32_t server_bad = -1;

	start_posters(n, p, BURST, burst_per_thread, 0);
	got = poll_in_order(n, next, want, t0 + 600);
	join_posters(p, now() + 30);
	db = counter(n, "host_doorbells") - db0;
	/* Posters get room from the poller's completions: the CQ must never
	 * have looked full to the NIC (the consumer index the poller publishes
	 * has to be ahead of the credit it hands back).
	 */
	check(counter(n, "cq_overflows") == ovf0,
	      "burst: the send CQ overflowed (cq_overflows %" PRIu64
	      " -> %" PRIu64 ")",
	      ovf0, counter(n, "cq_overflows"));
	for (uint32_t t = 0; t < THREADS; t++) {
		check(!p[t].err && p[t].posted == burst_per_thread,
		      "burst: thread %u posted %u, stopped by %s", t,
		      p[t].posted, strerror(p[t].err));
		check(next[t] == burst_per_thread,
		      "burst: thread %u: %u completions in order", t, next[t]);
		enomem += p[t].enomem;
	}
	check(got == want, "burst: %" PRIu64 " of %" PRIu64 " completions", got,
	      want);
	printf("rhinet-mprod client: burst: %d threads x %d WRITEs in %.1f s; "
	       "doorbells %" PRIu64 " for %" PRIu64 " WQEs = %.4f per WQE "
	       "(1/%d = %.4f); ENOMEM retries %" PRIu64 "\n",
	       THREADS, burst_per_thread, now() - t0, db, want, rate(db, want),
	       RHN_MP_DB_BATCH, 1.0 / RHN_MP_DB_BATCH, enomem);
	/* Every batch boundary rings (one-slot WQEs: want / 32 of them);
	 * beyond those only the tails of bursts do.
	 */
	check(db >= want / RHN_MP_DB_BATCH,
	      "burst: %" PRIu64 " doorbells, fewer than one per %d slots", db,
	      RHN_MP_DB_BATCH);
	check(db * 4 < want,
	      "burst: %" PRIu64 " doorbells for %" PRIu64 " WQEs: no batching",
	      db, want);
	sync_peer(fd);
	xfer(fd, &server_bad, &server_bad, sizeof(server_bad));
	check(server_bad == 0, "burst: the server found %d WRITEs missing",
	      server_bad);
}

static void client_flaky(struct node *n, int fd)
{
	uint64_t rec0 = counter(n, "sq_recovered"), rec1, rec2;
	uint32_t next[THREADS] = {0};
	struct poster p[THREADS];
	const uint64_t want = (uint64_t)THREADS * FLAKY_PER_THREAD;
	uint64_t got;
	int32_t server_bad = -1;

	start_posters(n, p, FLAKY, FLAKY_PER_THREAD, FLAKY_AT);
	got = poll_in_order(n, next, want, now() + 300);
	join_posters(p, now() + 30);
	check(got == want,
	      "lost doorbells: %" PRIu64 " of %" PRIu64 " completions", got,
	      want);
	rec1 = counter(n, "sq_recovered");

	/* The QP idle: WRITEs nobody rings for, found by the scan alone. */
	{
		struct poster q = {.n = n, .qp = n->qp, .t = THREADS - 1};
		uint32_t n7 = next[THREADS - 1];

		q.remote = n->peer.addr + FLAKY_AT +
			   (uint64_t)THREADS * FLAKY_PER_THREAD * 8;
		for (uint32_t i = 0; i < IDLE_LOST; i++) {
			int err = post_one(&q, n7 + i, q.remote + i * 8,
					   RHINETDV_MP_POST_NO_DOORBELL);

			check(!err, "idle post %u: %s", i, strerror(err));
		}
		got = poll_in_order(n, next, IDLE_LOST, now() + 30);
		check(got == IDLE_LOST,
		      "lost doorbells on an idle QP: %" PRIu64 " of %d "
		      "completions",
		      got, IDLE_LOST);
	}
	rec2 = counter(n, "sq_recovered");
	printf("rhinet-mprod client: lost doorbells: sq_recovered +%" PRIu64
	       " during the burst, +%" PRIu64 " on the idle QP\n",
	       rec1 - rec0, rec2 - rec1);
	/* The first of them at least only the scan could find (the NIC had
	 * completed everything and read the record before they came).
	 */
	check(rec2 > rec1,
	      "sq_recovered did not move for %d WRITEs without doorbell",
	      IDLE_LOST);
	sync_peer(fd);
	xfer(fd, &server_bad, &server_bad, sizeof(server_bad));
	check(server_bad == 0,
	      "lost doorbells: the server found %d WRITEs missing", server_bad);
}

static void client_teardown(struct node *n)
{
	struct ibv_qp_attr err_attr = {.qp_state = IBV_QPS_ERR};
	uint64_t ok = 0, flushed = 0, other = 0;
	struct poster p[THREADS];
	struct ibv_wc wc[32];
	double end;
	int ret;

	start_posters(n, p, TEARDOWN, 0, TEARDOWN_AT);
	/* Some work done, some queued: then ERR under the posters. */
	end = now() + 60;
	while (ok < 2000 && now() < end) {
		int r = ibv_poll_cq(n->cq, 32, wc);

		for (int k = 0; k < r; k++)
			ok += wc[k].status == IBV_WC_SUCCESS;
	}
	ret = ibv_modify_qp(n->qp, &err_attr, IBV_QP_STATE);
	check(!ret, "teardown: modify to ERR: %s", strerror(ret));
	end = now() + 2;
	while (now() < end) {
		int r = ibv_poll_cq(n->cq, 32, wc);

		for (int k = 0; k < r; k++) {
			if (wc[k].status == IBV_WC_SUCCESS)
				ok++;
			else if (wc[k].status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else
				other++;
		}
	}
	/* Destroyed while they still post. */
	ret = ibv_destroy_qp(n->qp);
	check(!ret, "teardown: destroy under the posters: %s", strerror(ret));
	n->qp = NULL;
	if (join_posters(p, now() + 30))
		for (uint32_t t = 0; t < THREADS; t++)
			check(p[t].err == EINVAL,
			      "teardown: poster %u stopped by %s, want EINVAL",
			      t, strerror(p[t].err));
	printf("rhinet-mprod client: teardown: %" PRIu64 " done, %" PRIu64
	       " flushed, %" PRIu64 " other errors before the destroy\n",
	       ok, flushed, other);
	check(flushed > 0, "teardown: no WRITE flushed in ERR");
	check(!other,
	      "teardown: %" PRIu64 " completions neither done nor "
	      "flushed",
	      other);
	/* The CQ holds nothing of the QP any more and can go. */
	ret = ibv_poll_cq(n->cq, 32, wc);
	check(ret == 0, "teardown: %d completions after the destroy", ret);
}

/* ---- server --------------------------------------------------------------- */

/* Every WRITE of @count per thread from @at on found: the number missing. */
static int32_t server_check(struct node *n, size_t at, uint32_t count,
			    uint32_t extra)
{
	const volatile uint64_t *w = (const volatile uint64_t *)(n->buf + at);
	int32_t bad = 0;

	for (uint32_t t = 0; t < THREADS; t++)
		for (uint32_t i = 0; i < count; i++)
			if (w[(size_t)t * count + i] != value_of(t, i) &&
			    bad++ < 3)
				check(false, "thread %u WRITE %u: %#" PRIx64, t,
				      i, w[(size_t)t * count + i]);
	/* The idle WRITEs are the last thread's, numbered after its own. */
	for (uint32_t i = 0; i < extra; i++)
		if (w[(size_t)THREADS * count + i] !=
		    value_of(THREADS - 1, count + i))
			bad++;
	return bad;
}

static void server_round(struct node *n, int fd, size_t at, uint32_t count,
			 uint32_t extra)
{
	int32_t bad, none;

	sync_peer(fd);
	bad = server_check(n, at, count, extra);
	check(!bad, "%d WRITEs from %d threads missing", bad, THREADS);
	xfer(fd, &bad, &none, sizeof(bad));
}

/* ---- set-up --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct node n = {.dev = "rhinet0", .gid_index = 0};
	const char *server;
	int port = 18720, fd;

	program = "rhinet-mprod";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("MPROD_BURST")) {
		long b = strtol(getenv("MPROD_BURST"), NULL, 10);

		if (b < 1 || b > PER_THREAD)
			die("MPROD_BURST must be 1 to 20000");
		burst_per_thread = (uint32_t)b;
	}
	server = peer_args(argc, argv, &n.dev, &n.gid_index, &port);
	n.ctx = open_device(n.dev);
	n.mr = alloc_buffer(n.ctx, BUF_BYTES, &n.pd, &n.buf);
	n.cq = ibv_create_cq(n.ctx, CQ_ENTRIES, NULL, NULL, 0);
	if (!n.mr || !n.cq)
		die("MR and CQ");
	if (server) {
		refusals(&n);
		n.qp = mp_qp(&n, SQ_WRS, IBV_QPT_RC,
			     RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER, 0);
	} else {
		n.qp = mp_qp(&n, 64, IBV_QPT_RC, 0, 0);
	}
	if (!n.qp)
		die("create the QP");
	n.me.qpn = n.qp->qp_num;
	n.me.rkey = n.mr->rkey;
	n.me.addr = (uintptr_t)n.buf;
	local_gid(n.ctx, n.gid_index, n.me.gid);
	fd = tcp_connect(server, port);
	xfer(fd, &n.me, &n.peer, sizeof(n.me));
	rc_connect(n.qp, "RC", n.peer.qpn, n.peer.gid, n.gid_index, 1);
	sync_peer(fd);

	if (server) {
		client_burst(&n, fd);
		client_flaky(&n, fd);
		client_teardown(&n);
	} else {
		server_round(&n, fd, 0, burst_per_thread, 0);
		server_round(&n, fd, FLAKY_AT, FLAKY_PER_THREAD, IDLE_LOST);
	}
	sync_peer(fd);
	close(fd);
	check(!n.qp || !ibv_destroy_qp(n.qp), "destroy the QP");
	check(!ibv_destroy_cq(n.cq), "destroy the CQ");
	check(!ibv_dereg_mr(n.mr), "deregister the buffer");
	check(!ibv_dealloc_pd(n.pd), "free the PD");
	check(!ibv_close_device(n.ctx), "close the device");
	free(n.buf);
	printf("%s %s: %d checks, %d failures\n", program, role, checks,
	       failures);
	return failures ? 1 : 0;
}
