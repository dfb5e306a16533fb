// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinetdv_tag_bench: latency and bandwidth of isend/irecv (messages
 * matched by the NIC) between two nodes, in perftest's units, to
 * set beside ib_send_lat and ib_write_bw on the same device.
 *
 *   latency    ping-pong of 8 B, 64 B, 4 KiB (the eager limit) and 64 KiB
 *              (rendezvous): the client isends a ping, the server's irecv
 *              takes it and the server isends the pong; one way = round
 *              trip / 2, the round trip measured as ib_send_lat does (from
 *              one ping's post to the next one's, so re-posting the irecv
 *              counts). Isends up to max_inline bytes are inline (as
 *              perftest's sends; -I: never) and unsignaled (the pong proves
 *              delivery). Prints t_min, t_max, t_typical (median), t_avg
 *              and the 99th percentile in usec.
 *   bandwidth  one-way stream of 64 KiB and 1 MiB isends with a window of
 *              WINDOW isends in flight (signaled) and WINDOW irecvs posted
 *              at the server; from the first post to the last completion
 *              at the client, as ib_write_bw. MB/s are 10^6 bytes/s (Gb/s
 *              as perftest's --report_gbits beside them).
 *
 * Each test first runs CHECKED iterations in which every byte of every
 * message is checked (with the length, tag and source of each irecv
 * completion), then the timed ones, which check the completions inside
 * the loop and, after it, the bytes the last messages left in the
 * receive buffers; with -C the timed ones check every byte too (a
 * correctness run: the figures then include the checks). Any mismatch, on
 * either side, makes both exit 1.
 *
 *   server: rhinetdv_tag_bench [-p PORT]
 *   client: rhinetdv_tag_bench [-p PORT] [-n LAT_ITERS] [-b ITERS_64K]
 *                              [-B ITERS_1M] [-w WINDOW] [-c CHECKED] [-C]
 *                              [-I] SERVER_IP
 * Defaults: port 18741, 1000 round trips per size, 400 messages of 64 KiB
 * and 100 of 1 MiB, a window of 16 (1..64; each node registers
 * max(WINDOW, 2) MiB), 20 checked iterations per test. The client's
 * options rule both sides (it sends them to the server).
 * Besides its tables, the client prints one line per figure for scripts:
 *   RHINETDV-TAG-BENCH lat BYTES ITERS T_MIN T_MAX T_TYPICAL T_AVG T_99
 *   RHINETDV-TAG-BENCH bw BYTES ITERS GBPS GBPS MPPS
 * laid out as perftest's result rows (lat in usec; bw in Gb/s, twice:
 * perftest's peak and average columns, there is no peak here).
 */
#define _GNU_SOURCE
#include <errno.h>
#include "example_tcp.h"
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define BIG (1u << 20) /* the largest message */
#define MAX_WINDOW 64
#define MAX_IRECV 64
#define TAG_PING 0x7470696e67ull /* "tping" */
#define TAG_PONG 0x74706f6e67ull /* "tpong" */
#define TAG_STREAM 0x7473747265ull /* "tstre" */
#define DEADLINE_MS 30000

static const uint32_t lat_sizes[] = {8, 64, 4096, 65536};
static const uint32_t bw_sizes[] = {65536, BIG};
#define N_LAT (sizeof(lat_sizes) / sizeof(lat_sizes[0]))
#define N_BW (sizeof(bw_sizes) / sizeof(bw_sizes[0]))

/* What the client asks for; sent to the server as is. */
struct config {
	uint32_t lat_iters;
	uint32_t bw_iters[N_BW];
	uint32_t window;
	uint32_t checked;
	uint32_t check_all;
	uint32_t no_inline;
};

static int failures;
#define FAIL(...)                                              \
	do {                                                   \
		fprintf(stderr, "rhinetdv_tag_bench: FAIL: "); \
		fprintf(stderr, __VA_ARGS__);                  \
		fprintf(stderr, "\n");                         \
		failures++;                                    \
	} while (0)

/* ---- message contents --------------------------------------------------- */

/*
 * Word @j of message @seed: every message differs from every other one and
 * from its own shifted copies, at 8 bytes per store (a byte loop is slow
 * under TCG).
 */
static uint64_t word_of(uint32_t seed, uint64_t j)
{
	uint64_t x = (((uint64_t)seed << 32) + j + 1) * 0x9e3779b97f4a7c15ull;

	return x ^ (x >> 29);
}

static void fill(uint8_t *p, uint32_t seed, size_t len)
{
	const size_t words = len / 8;
	uint64_t last;

	for (size_t j = 0; j < words; j++)
		((uint64_t *)p)[j] = word_of(seed, j);
	last = word_of(seed, words);
	memcpy(p + words * 8, &last, len % 8);
}

/* The first byte of @p that is not message @seed's, or -1. */
static long first_wrong(const uint8_t *p, uint32_t seed, size_t len)
{
	const size_t words = len / 8;
	uint64_t last;

	for (size_t j = 0; j < words; j++)
		if (((const uint64_t *)p)[j] != word_of(seed, j))
			for (size_t b = j * 8;; b++) {
				uint64_t w = word_of(seed, j);

				if (p[b] != ((const uint8_t *)&w)[b - j * 8])
					return (long)b;
			}
	last = word_of(seed, words);
	for (size_t b = words * 8; b < len; b++)
		if (p[b] != ((const uint8_t *)&last)[b - words * 8])
			return (long)b;
	return -1;
}

/* Seeds: test number, direction and iteration, all distinct. */
static uint32_t seed_of(unsigned test, unsigned dir, uint32_t iter)
{
	return (uint32_t)test << 25 | (uint32_t)dir << 24 | (iter & 0xffffff);
}

/* ---- time ----------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Cheap timestamps inside the timed loops: the TSC, converted with the
 * ratio measured against CLOCK_MONOTONIC over the same loop (a guest's
 * clock_gettime may leave the VM; the TSC does not).
 */
static uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return now_ns();
#endif
}

struct span {
	uint64_t ns0, t0, ns1, t1;
};

static void span_start(struct span *s)
{
	s->ns0 = now_ns();
	s->t0 = ticks();
}

static void span_end(struct span *s)
{
	s->t1 = ticks();
	s->ns1 = now_ns();
}

/* Microseconds per tick over the span. */
static double span_us_per_tick(const struct span *s)
{
	if (s->t1 <= s->t0)
		return 0;
	return (double)(s->ns1 - s->ns0) / 1000.0 / (double)(s->t1 - s->t0);
}

/* ---- TCP: configuration, steps and the peer's failures ------------------- */

static int sock = -1;

/*
 * Both sides reach step @s; each learns whether the other has failed so
 * far (then both stop, with exit status 1).
 */
static void step(uint32_t s)
{
	uint32_t mine[2] = {s, (uint32_t)failures}, theirs[2] = {0, 0};

	if (example_full_io(sock, mine, sizeof(mine), true) ||
	    example_full_io(sock, theirs, sizeof(theirs), false)) {
		FAIL("lost the peer at step %u", s);
		exit(1);
	}
	if (theirs[0] != s) {
		FAIL("at step %u, the peer at %u", s, theirs[0]);
		exit(1);
	}
	if (theirs[1] || failures) {
		if (theirs[1])
			fprintf(stderr,
				"rhinetdv_tag_bench: the peer failed %u "
				"checks\n",
				theirs[1]);
		exit(1);
	}
}

/* ---- the device ----------------------------------------------------------- */

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rhinetdv_endpoint *ep;
	struct ibv_mr *mr;
	/* Slots of BIG bytes: a stream's window (the client sends from them,
	 * the server receives into them); a ping-pong's ping and pong.
	 */
	uint8_t *buf;
	size_t bytes;
	uint32_t max_inline, max_eager;
	uint16_t peer_node;
	uint32_t peer_ep;
};

static uint8_t *slot(struct node *n, uint32_t k, uint32_t window)
{
	return n->buf + (size_t)(k % window) * BIG;
}

static int open_node(struct node *n, uint32_t window)
{
	struct rhinetdv_endpoint_init_attr ea = {0};
	struct rhinetdv_device_attr da;
	struct rhinetdv_tag_caps tc;
	struct ibv_device **list = ibv_get_device_list(NULL);

	memset(n, 0, sizeof(*n));
	for (int i = 0; list && list[i]; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "rhinet", 6)) {
			n->ctx = ibv_open_device(list[i]);
			break;
		}
	if (list)
		ibv_free_device_list(list);
	if (!n->ctx) {
		fprintf(stderr, "rhinetdv_tag_bench: no rhinet device\n");
		return -1;
	}
	if (rhinetdv_query_device(n->ctx, &da, sizeof(da)) ||
	    !(da.caps & RHINETDV_CAP_TAG)) {
		fprintf(stderr,
			"rhinetdv_tag_bench: the device does not match tags\n");
		return -1;
	}
	n->max_inline = da.max_inline;
	ea.comp_mask = RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV;
	ea.max_irecv = MAX_IRECV;
	n->pd = ibv_alloc_pd(n->ctx);
	n->ep = n->pd ? rhinetdv_create_endpoint(n->pd, &ea) : NULL;
	if (!n->ep || rhinetdv_query_tag_caps(n->ep, &tc, sizeof(tc))) {
		perror("rhinetdv_tag_bench: endpoint");
		return -1;
	}
	n->max_eager = tc.max_eager;
	n->bytes = (size_t)(window > 2 ? window : 2) * BIG;
	n->buf = aligned_alloc(4096, n->bytes);
	if (!n->buf)
		return -1;
	memset(n->buf, 0, n->bytes);
	n->mr = ibv_reg_mr(n->pd, n->buf, n->bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!n->mr) {
		perror("rhinetdv_tag_bench: ibv_reg_mr");
		return -1;
	}
	return 0;
}

/* One completion of a signaled isend or an irecv, or of a failed isend;
 * waits at most DEADLINE_MS. 1, or 0 on a timeout (counted as a failure).
 */
static int next_completion(struct node *n, struct rhinetdv_completion_ex *c)
{
	uint64_t deadline = 0;

	for (unsigned spins = 0;; spins++) {
		int k = rhinetdv_poll_ex(n->ep, 1, c, sizeof(*c));

		if (k == 1)
			return 1;
		if (k < 0) {
			FAIL("rhinetdv_poll_ex: %s", strerror(errno));
			return 0;
		}
		if ((spins & 1023) == 0) {
			const uint64_t t = now_ns() / 1000000;

			if (!deadline)
				deadline = t + DEADLINE_MS;
			else if (t > deadline) {
				FAIL("no completion in %d ms", DEADLINE_MS);
				return 0;
			}
		}
	}
}

static int post_isend(struct node *n, const uint8_t *p, uint32_t len,
		      uint64_t tag, uint64_t wr_id, bool signaled, bool inl)
{
	struct rhinetdv_isend_attr a = {0};
	struct rhinetdv_completion_ex c;
	int err;

	a.wr_id = wr_id;
	a.addr = p;
	a.length = len;
	a.lkey = n->mr->lkey;
	a.dest_node = n->peer_node;
	a.dest_endpoint = n->peer_ep;
	a.tag = tag;
	a.flags = (signaled ? RHINETDV_ISEND_SIGNALED : 0) |
		  (inl ? RHINETDV_ISEND_INLINE : 0);
	/* Queue full: a signaled isend (the stream) waits for the caller's
	 * next completion (1); unsignaled ones retire as the library polls
	 * (a completion here is an error: the peer answers only after this
	 * isend arrived).
	 */
	while ((err = rhinetdv_isend(n->ep, &a, sizeof(a))) == ENOMEM) {
		if (signaled)
			return 1;
		if (rhinetdv_poll_ex(n->ep, 1, &c, sizeof(c)) > 0) {
			FAIL("isend %llu: status %u syndrome %u",
			     (unsigned long long)c.base.wr_id, c.base.status,
			     c.base.syndrome);
			return -1;
		}
	}
	if (err) {
		FAIL("rhinetdv_isend: %s", strerror(err));
		return -1;
	}
	return 0;
}

static int post_irecv(struct node *n, uint8_t *p, uint32_t len, uint64_t tag,
		      uint64_t wr_id)
{
	struct rhinetdv_irecv_attr a = {0};
	int err;

	a.wr_id = wr_id;
	a.addr = p;
	a.length = len;
	a.lkey = n->mr->lkey;
	a.tag = tag;
	a.tag_mask = ~0ull;
	a.src_node = n->peer_node;
	a.src_endpoint = n->peer_ep;
	err = rhinetdv_irecv(n->ep, &a, sizeof(a), NULL);
	if (err) {
		FAIL("rhinetdv_irecv: %s", strerror(err));
		return -1;
	}
	return 0;
}

/*
 * An irecv's completion: success, message @wr_id of @len bytes with @tag
 * from the peer, and with @seed (not 0) its bytes at @p. 0 when right.
 */
static int check_irecv(struct node *n, const struct rhinetdv_completion_ex *c,
		       uint64_t wr_id, uint32_t len, uint64_t tag,
		       const uint8_t *p, uint32_t seed, const char *what)
{
	long bad;

	if (c->base.opcode != RHINETDV_OP_IRECV ||
	    c->base.status != IBV_WC_SUCCESS) {
		FAIL("%s: %llu: opcode %u status %u syndrome %u", what,
		     (unsigned long long)c->base.wr_id, c->base.opcode,
		     c->base.status, c->base.syndrome);
		return -1;
	}
	if (c->base.wr_id != wr_id || c->base.byte_len != len ||
	    c->tag != tag || c->src_node != n->peer_node ||
	    c->src_endpoint != n->peer_ep) {
		FAIL("%s: irecv %llu (wanted %llu): %u B (wanted %u), tag %llx "
		     "from %u.%u",
		     what, (unsigned long long)c->base.wr_id,
		     (unsigned long long)wr_id, c->base.byte_len, len,
		     (unsigned long long)c->tag, c->src_node, c->src_endpoint);
		return -1;
	}
	if (seed && (bad = first_wrong(p, seed, len)) >= 0) {
		FAIL("%s: message %llu of %u B: byte %ld differs", what,
		     (unsigned long long)wr_id, len, bad);
		return -1;
	}
	return 0;
}

/* ---- latency -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct lat_result {
	double min, max, typical, avg, p99;
};

/*
 * @iters round trips of @len bytes; with @check every byte of each ping
 * and pong is checked. The client fills *@r (one-way usec).
 */
static int pingpong(struct node *n, bool client, unsigned test, uint32_t len,
		    uint32_t iters, bool check, bool inl, uint32_t *s,
		    struct lat_result *r)
{
	const uint64_t my_tag = client ? TAG_PING : TAG_PONG;
	const uint64_t peer_tag = client ? TAG_PONG : TAG_PING;
	uint8_t *out = slot(n, 0, 2), *in = slot(n, 1, 2);
	uint64_t *t = client ? calloc(iters + 1, sizeof(*t)) : NULL;
	double *us = client ? calloc(iters, sizeof(*us)) : NULL;
	struct rhinetdv_completion_ex c;
	struct span sp;
	int rc = -1;

	if (client && (!t || !us)) {
		FAIL("out of memory");
		goto out;
	}
	if (!check)
		fill(out, seed_of(test, client, 0), len);
	if (post_irecv(n, in, len, peer_tag, 0))
		goto out;
	step((*s)++);
	span_start(&sp);
	for (uint32_t i = 0; i < iters; i++) {
		const uint32_t in_seed = check ? seed_of(test, !client, i) : 0;

		if (client) {
			t[i] = ticks();
			if (check)
				fill(out, seed_of(test, 1, i), len);
			if (post_isend(n, out, len, my_tag, i, false, inl))
				goto out;
		}
		if (!next_completion(n, &c) ||
		    check_irecv(n, &c, i, len, peer_tag, in, in_seed,
				client ? "pong" : "ping"))
			goto out;
		if (i + 1 < iters && post_irecv(n, in, len, peer_tag, i + 1))
			goto out;
		if (!client) {
			if (check)
				fill(out, seed_of(test, 0, i), len);
			if (post_isend(n, out, len, my_tag, i, false, inl))
				goto out;
		}
	}
	if (client) {
		t[iters] = ticks();
		span_end(&sp);
		const double k = span_us_per_tick(&sp) / 2;
		double sum = 0;

		for (uint32_t i = 0; i < iters; i++) {
			us[i] = (double)(t[i + 1] - t[i]) * k;
			sum += us[i];
		}
		qsort(us, iters, sizeof(*us), cmp_double);
		r->min = us[0];
		r->max = us[iters - 1];
		r->typical = us[iters / 2];
		r->avg = sum / iters;
		r->p99 = us[(size_t)((iters - 1) * 0.99)];
	}
	/* Unchecked, every message carried the same bytes: the last one's
	 * are still there.
	 */
	if (!check && first_wrong(in, seed_of(test, !client, 0), len) >= 0) {
		FAIL("%s of %u B: bytes differ", client ? "pong" : "ping", len);
		goto out;
	}
	rc = 0;
out:
	free(t);
	free(us);
	step((*s)++);
	return rc;
}

/* ---- bandwidth ------------------------------------------------------------ */

struct bw_result {
	double mbps, mpps, gbps;
};

/*
 * The client streams @iters messages of @len bytes, @window in flight;
 * the server keeps @window irecvs posted. With @check every message's
 * bytes are written (client) and checked (server) inside the loop.
 */
static int stream(struct node *n, bool client, unsigned test, uint32_t len,
		  uint32_t iters, uint32_t window, bool check,
		  struct bw_result *r, uint32_t *s)
{
	struct rhinetdv_completion_ex c;
	uint32_t posted = 0, done = 0;
	int err;
	struct span sp;
	int rc = -1;

	if (client && !check)
		for (uint32_t k = 0; k < window && k < iters; k++)
			fill(slot(n, k, window), seed_of(test, 1, k), len);
	if (!client)
		for (; posted < window && posted < iters; posted++)
			if (post_irecv(n, slot(n, posted, window), len,
				       TAG_STREAM, posted))
				goto out;
	step((*s)++);
	span_start(&sp);
	while (done < iters) {
		while (client && posted < iters && posted - done < window) {
			uint8_t *p = slot(n, posted, window);

			if (check)
				fill(p, seed_of(test, 1, posted), len);
			err = post_isend(n, p, len, TAG_STREAM, posted, true,
					 false);
			if (err < 0)
				goto out;
			if (err > 0) /* full: poll first */
				break;
			posted++;
		}
		if (!next_completion(n, &c))
			goto out;
		if (client) {
			if (c.base.opcode != RHINETDV_OP_ISEND ||
			    c.base.status != IBV_WC_SUCCESS ||
			    c.base.wr_id != done) {
				FAIL("stream: isend %llu (wanted %u): opcode "
				     "%u status %u syndrome %u",
				     (unsigned long long)c.base.wr_id, done,
				     c.base.opcode, c.base.status,
				     c.base.syndrome);
				goto out;
			}
		} else {
			/* Messages of one tag from one sender match irecvs
			 * in send order: irecv k holds message k.
			 */
			const uint32_t k = (uint32_t)c.base.wr_id;

			if (k >= posted) {
				FAIL("stream: irecv %u completed, %u posted", k,
				     posted);
				goto out;
			}
			if (check_irecv(n, &c, k, len, TAG_STREAM,
					slot(n, k, window),
					check ? seed_of(test, 1, k) : 0,
					"stream"))
				goto out;
			if (posted < iters) {
				if (post_irecv(n, slot(n, posted, window), len,
					       TAG_STREAM, posted))
					goto out;
				posted++;
			}
		}
		done++;
	}
	span_end(&sp);
	/* Unchecked, message k carried slot k's first contents: the last
	 * window of them is still in the receiver's slots.
	 */
	for (uint32_t k = iters > window ? iters - window : 0;
	     !client && !check && k < iters; k++)
		if (first_wrong(slot(n, k, window),
				seed_of(test, 1, k % window), len) >= 0) {
			FAIL("stream: message %u of %u B: bytes differ", k,
			     len);
			goto out;
		}
	if (client) {
		const double us = (double)(sp.ns1 - sp.ns0) / 1000.0;
		const double bytes = (double)len * iters;

		r->mbps = bytes / us;
		r->gbps = bytes * 8 / us / 1000.0;
		r->mpps = iters / us;
	}
	rc = 0;
out:
	step((*s)++);
	return rc;
}

/* ---- both sides ----------------------------------------------------------- */

static const char *lat_mode(const struct node *n, uint32_t len, bool inl)
{
	if (len > n->max_eager)
		return "rendezvous";
	return inl ? "eager, inline" : "eager";
}

static void run(struct node *n, bool client, const struct config *cf)
{
	struct lat_result lat[N_LAT];
	struct bw_result bw[N_BW];
	uint32_t s = 1;
	unsigned test = 0;

	for (unsigned i = 0; i < N_LAT; i++, test++) {
		const bool inl =
			!cf->no_inline && lat_sizes[i] <= n->max_inline;

		if (cf->checked)
			pingpong(n, client, test, lat_sizes[i], cf->checked,
				 true, inl, &s, &lat[i]);
		pingpong(n, client, test + 64, lat_sizes[i], cf->lat_iters,
			 cf->check_all, inl, &s, &lat[i]);
	}
	for (unsigned i = 0; i < N_BW; i++, test++) {
		if (cf->checked)
			stream(n, client, test, bw_sizes[i], cf->checked,
			       cf->window, true, &bw[i], &s);
		stream(n, client, test + 64, bw_sizes[i], cf->bw_iters[i],
		       cf->window, cf->check_all, &bw[i], &s);
	}
	if (!client)
		return;

	printf("\nrhinetdv_tag_bench: isend/irecv ping-pong, one-way latency = "
	       "round trip / 2%s\n",
	       cf->check_all ? " (every byte checked inside the loop)" : "");
	printf(" %-8s %-7s %-12s %-12s %-16s %-12s %-12s %s\n", "#bytes",
	       "#iter", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
	       "t_avg[usec]", "t_99%[usec]", "isend");
	for (unsigned i = 0; i < N_LAT; i++) {
		const bool inl =
			!cf->no_inline && lat_sizes[i] <= n->max_inline;

		printf(" %-8u %-7u %-12.2f %-12.2f %-16.2f %-12.2f %-12.2f "
		       "%s\n",
		       lat_sizes[i], cf->lat_iters, lat[i].min, lat[i].max,
		       lat[i].typical, lat[i].avg, lat[i].p99,
		       lat_mode(n, lat_sizes[i], inl));
	}
	printf("\nrhinetdv_tag_bench: one-way isend/irecv stream, %u in flight "
	       "(MB = 10^6 bytes)%s\n",
	       cf->window,
	       cf->check_all
		       ? " (every byte written and checked inside the loop)"
		       : "");
	printf(" %-8s %-7s %-12s %-12s %-14s %s\n", "#bytes", "#iter",
	       "BW[MB/s]", "BW[Gb/s]", "MsgRate[Mpps]", "isend");
	for (unsigned i = 0; i < N_BW; i++)
		printf(" %-8u %-7u %-12.2f %-12.4f %-14.6f %s\n", bw_sizes[i],
		       cf->bw_iters[i], bw[i].mbps, bw[i].gbps, bw[i].mpps,
		       lat_mode(n, bw_sizes[i], false));
	printf("\n");
	for (unsigned i = 0; i < N_LAT; i++)
		printf("RHINETDV-TAG-BENCH lat %u %u %.2f %.2f %.2f %.2f "
		       "%.2f\n",
		       lat_sizes[i], cf->lat_iters, lat[i].min, lat[i].max,
		       lat[i].typical, lat[i].avg, lat[i].p99);
	for (unsigned i = 0; i < N_BW; i++)
		printf("RHINETDV-TAG-BENCH bw %u %u %.4f %.4f %.6f\n",
		       bw_sizes[i], cf->bw_iters[i], bw[i].gbps, bw[i].gbps,
		       bw[i].mpps);
}

static void usage(void)
{
	fprintf(stderr, "usage: rhinetdv_tag_bench [-p PORT] [-n LAT_ITERS] "
			"[-b ITERS_64K] [-B ITERS_1M]\n"
			"                          [-w WINDOW] [-c CHECKED] "
			"[-C] [-I] [SERVER_IP]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct config cf = {.lat_iters = 1000,
			    .bw_iters = {400, 100},
			    .window = 16,
			    .checked = 20};
	const char *server = NULL;
	uint32_t me[2], peer[2];
	struct node n;
	int port = 18741, opt;

	while ((opt = getopt(argc, argv, "p:n:b:B:w:c:CI")) != -1) {
		switch (opt) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			cf.lat_iters = (uint32_t)atoi(optarg);
			break;
		case 'b':
			cf.bw_iters[0] = (uint32_t)atoi(optarg);
			break;
		case 'B':
			cf.bw_iters[1] = (uint32_t)atoi(optarg);
			break;
		case 'w':
			cf.window = (uint32_t)atoi(optarg);
			break;
		case 'c':
			cf.checked = (uint32_t)atoi(optarg);
			break;
		case 'C':
			cf.check_all = 1;
			break;
		case 'I':
			cf.no_inline = 1;
			break;
		default:
			usage();
		}
	}
	if (optind < argc)
		server = argv[optind];
	if (cf.lat_iters < 1 || cf.bw_iters[0] < 1 || cf.bw_iters[1] < 1 ||
	    cf.window < 1 || cf.window > MAX_WINDOW || cf.checked > 0xffffff ||
	    cf.lat_iters > 0xffffff) {
		fprintf(stderr,
			"rhinetdv_tag_bench: iterations 1..2^24, window "
			"1..%d\n",
			MAX_WINDOW);
		return 2;
	}
	sock = example_tcp_open(server, port, 60);
	if (sock < 0) {
		fprintf(stderr, "rhinetdv_tag_bench: no peer\n");
		return 1;
	}
	/* The client's configuration rules: the server learns it first. */
	if (example_full_io(sock, &cf, sizeof(cf), server != NULL)) {
		fprintf(stderr, "rhinetdv_tag_bench: no configuration\n");
		return 1;
	}
	if (open_node(&n, cf.window))
		return 1;
	me[0] = n.ep->node_id;
	me[1] = n.ep->endpoint_id;
	if (example_full_io(sock, me, sizeof(me), true) ||
	    example_full_io(sock, peer, sizeof(peer), false)) {
		fprintf(stderr, "rhinetdv_tag_bench: no peer address\n");
		return 1;
	}
	n.peer_node = (uint16_t)peer[0];
	n.peer_ep = peer[1];
	printf("rhinetdv_tag_bench: %s %u.%u, peer %u.%u; max_eager %u B, "
	       "max_inline %u B; %u checked iterations per test%s\n",
	       server ? "client" : "server", me[0], me[1], peer[0], peer[1],
	       n.max_eager, n.max_inline, cf.checked,
	       cf.check_all ? ", and every timed one" : "");
	run(&n, server != NULL, &cf);
	if (failures) {
		fprintf(stderr, "rhinetdv_tag_bench: %d failures\n", failures);
		return 1;
	}
	printf("rhinetdv_tag_bench: PASS\n");
	return 0;
}
