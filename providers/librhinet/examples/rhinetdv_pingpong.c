// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinetdv_pingpong: the RHiNET direct verbs between two processes on two
 * nodes. Each registers a communication area under the same area ID and
 * creates its endpoint; they swap (node, endpoint, area ID, size) over TCP.
 * First both ping-pong ITERS times: each PUSHes a counter into the other's
 * mailbox (the area's last page) and spins on its own. The client then,
 * through the server's area:
 *   - PULLs the server's first half and checks it (the server's pattern);
 *   - ITERS times PUSHes a new pattern into the second half (status word,
 *     every other one also a signaled completion), PULLs it back and checks
 *     every byte; an inline PUSH likewise;
 *   - measures PUSH and PULL bandwidth with a window of operations;
 *   - PUSHes to an area ID the server never registered and PULLs beyond the
 *     area's end: both must fail with the right status and syndrome, in the
 *     status word and in the completion, and the endpoint must still work;
 *   - tells the server the last pattern, which the server checks in its own
 *     memory.
 * Then, on a NIC with watches (RHINETDV_CAP_WATCH), the server watches its
 * area: a watch of an area it does not have is refused (GENERAL_ERR,
 * NO_WATCH_AREA), its own is armed; it sleeps in rhinetdv_wait_watch until
 * the client's PUSH into its mailbox lands (the value is there when it
 * wakes); a second PUSH does not fire the watch again (one-shot).
 *
 *   server: rhinetdv_pingpong [-d DEV] [-p PORT] [-n ITERS] [-s SIZE]
 *                             [-a AREA_ID]
 *   client: rhinetdv_pingpong [same options] SERVER_IP
 *   rhinetdv_pingpong -F -d DEV: on DEV of another provider (soft-RoCE),
 *                               the direct verbs refuse with EOPNOTSUPP
 * Exit status 0 when every check passed on this side (and, for the client,
 * on the server's).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include "example_tcp.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#define OP_TIMEOUT_NS (20ull * 1000 * 1000 * 1000) /* one operation */
#define BW_WINDOW 16
#define STATUS_WORDS 64

struct info { /* over TCP, network byte order */
	uint32_t node;
	uint32_t endpoint;
	uint32_t area_id;
	uint32_t area_len;
};

struct result { /* client -> server, then server -> client */
	uint32_t seed; /* pattern now in the server's second half */
	uint32_t ok;
};

static struct {
	const char *dev_name;
	int port;
	int iters;
	uint32_t size;
	uint32_t area_id;
	const char *server;
} opt = {NULL, 18700, 100, 4096, 7, NULL};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct rhinetdv_endpoint *ep;
static struct rhinetdv_device_attr dattr;
static uint8_t *area, *buf;
static uint64_t *sw; /* status words */
static struct ibv_mr *area_mr, *buf_mr, *sw_mr;
static uint32_t area_len, half_len; /* area: half, half, mailbox page */
static struct info peer;
static int failures;

#define FAIL(...)                                             \
	do {                                                  \
		fprintf(stderr, "rhinetdv_pingpong: FAIL: "); \
		fprintf(stderr, __VA_ARGS__);                 \
		fprintf(stderr, "\n");                        \
		failures++;                                   \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1u);
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

/* First differing byte, or -1. */
static long check(const uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return (long)i;
	return -1;
}

/* ---- TCP ----------------------------------------------------------------- */

/* ---- verbs --------------------------------------------------------------- */

static int open_device(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;

	if (!list) {
		perror("ibv_get_device_list");
		return -1;
	}
	for (int i = 0; list[i] && !dev; i++)
		if (opt.dev_name ? !strcmp(ibv_get_device_name(list[i]),
					   opt.dev_name)
				 : !strncmp(ibv_get_device_name(list[i]),
					    "rhinet", 6))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "no device %s\n",
			opt.dev_name ? opt.dev_name : "rhinet*");
		ibv_free_device_list(list);
		return -1;
	}
	ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (!ctx) {
		perror("ibv_open_device");
		return -1;
	}
	return 0;
}

static int setup(void)
{
	const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct rhinetdv_endpoint *second;
	struct ibv_mr *dup;
	int err;

	if (open_device())
		return -1;
	err = rhinetdv_query_device(ctx, &dattr, sizeof(dattr));
	if (err) {
		fprintf(stderr, "rhinetdv_query_device: %s\n", strerror(err));
		return -1;
	}
	printf("node %u, caps %#x, max_areas %u, max_inline %u, "
	       "max_outstanding %u\n",
	       dattr.node_id, dattr.caps, dattr.max_areas, dattr.max_inline,
	       dattr.max_outstanding);
	if (!(dattr.caps & RHINETDV_CAP_AREA) ||
	    !(dattr.caps & RHINETDV_CAP_ENDPOINT)) {
		fprintf(stderr, "device lacks endpoints or areas\n");
		return -1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		perror("ibv_alloc_pd");
		return -1;
	}
	ep = rhinetdv_create_endpoint(pd, NULL);
	if (!ep) {
		perror("rhinetdv_create_endpoint");
		return -1;
	}
	/* One endpoint per process. */
	second = rhinetdv_create_endpoint(pd, NULL);
	if (second || errno != EEXIST) {
		FAIL("second endpoint: %s, expected EEXIST",
		     second ? "created" : strerror(errno));
		if (second)
			rhinetdv_destroy_endpoint(second);
	}

	/* Two halves of the size rounded to pages, then the mailbox page. */
	half_len = (opt.size + 4095) & ~4095u;
	area_len = 2 * half_len + 4096;
	area = aligned_alloc(4096, area_len);
	buf = aligned_alloc(4096, area_len);
	sw = aligned_alloc(4096, 4096);
	if (!area || !buf || !sw)
		return -1;
	memset(area, 0, area_len);
	fill(area, half_len, dattr.node_id + 1000);
	memset(sw, 0, 4096);
	area_mr = rhinetdv_reg_area(pd, area, area_len, remote, opt.area_id);
	if (!area_mr) {
		perror("rhinetdv_reg_area");
		return -1;
	}
	/* An area ID names one area per process. */
	dup = rhinetdv_reg_area(pd, buf, area_len, remote, opt.area_id);
	if (dup || errno != EEXIST) {
		FAIL("second area %u: %s, expected EEXIST", opt.area_id,
		     dup ? "registered" : strerror(errno));
		if (dup)
			ibv_dereg_mr(dup);
	}
	buf_mr = ibv_reg_mr(pd, buf, area_len, IBV_ACCESS_LOCAL_WRITE);
	sw_mr = ibv_reg_mr(pd, sw, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!buf_mr || !sw_mr) {
		perror("ibv_reg_mr");
		return -1;
	}
	printf("endpoint (%u, %u), area %u of %u bytes at %p\n", ep->node_id,
	       ep->endpoint_id, opt.area_id, area_len, (void *)area);
	return 0;
}

static void teardown(void)
{
	if (sw_mr)
		ibv_dereg_mr(sw_mr);
	if (buf_mr)
		ibv_dereg_mr(buf_mr);
	if (area_mr)
		ibv_dereg_mr(area_mr);
	if (ep)
		rhinetdv_destroy_endpoint(ep);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	free(area);
	free(buf);
	free(sw);
}

/* ---- operations ---------------------------------------------------------- */

static struct rhinetdv_xfer xfer(uint64_t wr_id, void *local, uint32_t len,
				 uint32_t area_id, uint64_t offset,
				 uint32_t flags, int word)
{
	struct rhinetdv_xfer x = {
		.wr_id = wr_id,
		.local_addr = local,
		.length = len,
		.lkey = buf_mr->lkey,
		.dest_node = (uint16_t)peer.node,
		.dest_endpoint = peer.endpoint,
		.area_id = area_id,
		.flags = flags,
		.offset = offset,
	};

	if (word >= 0) {
		x.flags |= RHINETDV_XFER_STATUS_WORD;
		x.status_word = &sw[word];
		x.status_lkey = sw_mr->lkey;
		rhinetdv_status_word_clear(&sw[word]);
	}
	return x;
}

static int post(bool push, const struct rhinetdv_xfer *x)
{
	int err;
	uint64_t t0 = now_ns();

	/* ENOMEM: the window is full until completions come back. */
	while ((err = push ? rhinetdv_push(ep, x) : rhinetdv_pull(ep, x)) ==
		       ENOMEM &&
	       now_ns() - t0 < OP_TIMEOUT_NS)
		;
	if (err)
		FAIL("%s wr_id %llu: %s", push ? "push" : "pull",
		     (unsigned long long)x->wr_id, strerror(err));
	return err;
}

/* Waits for status word @word; false on timeout. */
static bool wait_word(int word, struct rhinetdv_status *s)
{
	uint64_t t0 = now_ns();

	while (!rhinetdv_status_word_poll(&sw[word], s))
		if (now_ns() - t0 > OP_TIMEOUT_NS) {
			FAIL("status word %d never written", word);
			return false;
		}
	return true;
}

/* Waits for one completion; false on timeout or poll error. */
static bool wait_completion(struct rhinetdv_completion *c)
{
	uint64_t t0 = now_ns();
	int n;

	while (!(n = rhinetdv_poll(ep, 1, c)))
		if (now_ns() - t0 > OP_TIMEOUT_NS) {
			FAIL("no completion");
			return false;
		}
	if (n < 0) {
		FAIL("rhinetdv_poll: %s", strerror(errno));
		return false;
	}
	return true;
}

/* One operation waited for by status word (and by completion if @cqe).
 * Returns its decoded status word; done is 0 when it never came.
 */
static struct rhinetdv_status op(bool push, void *local, uint32_t len,
				 uint32_t area_id, uint64_t offset,
				 uint64_t wr_id, bool cqe, uint32_t extra)
{
	struct rhinetdv_xfer x =
		xfer(wr_id, local, len, area_id, offset,
		     extra | (cqe ? RHINETDV_XFER_SIGNALED : 0), 0);
	struct rhinetdv_status s = {0};
	struct rhinetdv_completion c;

	if (post(push, &x) || !wait_word(0, &s))
		return (struct rhinetdv_status){0};
	if (cqe && wait_completion(&c)) {
		if (c.wr_id != wr_id || c.status != s.status ||
		    c.syndrome != s.syndrome ||
		    c.opcode != (push ? RHINETDV_OP_PUSH : RHINETDV_OP_PULL))
			FAIL("completion wr_id %llu status %u syndrome %u "
			     "opcode %u; expected wr_id %llu status %u "
			     "syndrome %u",
			     (unsigned long long)c.wr_id, c.status, c.syndrome,
			     c.opcode, (unsigned long long)wr_id, s.status,
			     s.syndrome);
	}
	return s;
}

static bool expect_ok(const char *what, struct rhinetdv_status s, uint32_t len)
{
	if (s.done && s.status == IBV_WC_SUCCESS && s.length == len)
		return true;
	FAIL("%s: done %u status %u (%s) syndrome %u length %u, expected %u "
	     "bytes",
	     what, s.done, s.status,
	     ibv_wc_status_str((enum ibv_wc_status)s.status), s.syndrome,
	     s.length, len);
	return false;
}

static void print_lat(const char *what, const uint64_t *ns, int n)
{
	uint64_t sum = 0, min = UINT64_MAX, max = 0;

	for (int i = 0; i < n; i++) {
		sum += ns[i];
		min = ns[i] < min ? ns[i] : min;
		max = ns[i] > max ? ns[i] : max;
	}
	if (n)
		printf("%-34s %8.1f us avg %8.1f min %8.1f max (%d x %u B)\n",
		       what, sum / 1000.0 / n, min / 1000.0, max / 1000.0, n,
		       opt.size);
}

/* @count operations of opt.size bytes, at most BW_WINDOW in flight, each
 * signaled; returns MB/s, 0 on failure.
 */
static double bandwidth(bool push, int count)
{
	struct rhinetdv_completion c[BW_WINDOW];
	int posted = 0, done = 0;
	uint64_t t0 = now_ns(), last = t0;

	while (done < count) {
		while (posted < count && posted - done < BW_WINDOW) {
			struct rhinetdv_xfer x = xfer(
				(uint64_t)posted, buf, opt.size, opt.area_id,
				half_len, RHINETDV_XFER_SIGNALED, -1);

			if (post(push, &x))
				return 0;
			posted++;
		}
		int n = rhinetdv_poll(ep, BW_WINDOW, c);

		if (n < 0) {
			FAIL("rhinetdv_poll: %s", strerror(errno));
			return 0;
		}
		for (int i = 0; i < n; i++) {
			if (c[i].status != IBV_WC_SUCCESS ||
			    c[i].wr_id != (uint64_t)done) {
				FAIL("bandwidth completion %d: wr_id %llu "
				     "status %u syndrome %u",
				     done, (unsigned long long)c[i].wr_id,
				     c[i].status, c[i].syndrome);
				return 0;
			}
			done++;
		}
		if (n)
			last = now_ns();
		else if (now_ns() - last > OP_TIMEOUT_NS) {
			FAIL("bandwidth: stuck at %d of %d", done, count);
			return 0;
		}
	}
	return (double)count * opt.size / ((now_ns() - t0) / 1e9) / 1e6;
}

/* The mailbox: the first 8 bytes of the area's last page. */
static volatile uint64_t *mailbox(void)
{
	return (volatile uint64_t *)(area + 2 * half_len);
}

/*
 * Ping-pong through memory, the RHiNET way: each side PUSHes a counter into
 * the other's mailbox (inline, unsignaled, no status word) and spins on its
 * own mailbox for the answer. The client starts; @first is whether this
 * side sends first. Half the mean round trip is the one-way latency.
 */
static bool wait_mailbox(uint64_t want, int round)
{
	uint64_t t0 = now_ns();

	while (*mailbox() != want)
		if (now_ns() - t0 > OP_TIMEOUT_NS) {
			FAIL("ping-pong round %d: mailbox %llu, expected %llu",
			     round, (unsigned long long)*mailbox(),
			     (unsigned long long)want);
			return false;
		}
	return true;
}

static void pingpong(bool first)
{
	const bool inl = dattr.max_inline >= sizeof(uint64_t);
	const uint64_t t0 = now_ns();
	int i;

	for (i = 1; i <= opt.iters; i++) {
		const uint64_t value = (uint64_t)i;
		struct rhinetdv_xfer x = xfer(
			500 + value, buf, sizeof(value), opt.area_id,
			2ull * half_len, inl ? RHINETDV_XFER_INLINE : 0, -1);

		memcpy(buf, &value, sizeof(value));
		if (!first && !wait_mailbox(value, i))
			return;
		if (post(true, &x))
			return;
		if (first && !wait_mailbox(value, i))
			return;
	}
	if (first)
		printf("%-34s %8.1f us one way (%d round trips of 8 B, %s "
		       "push)\n",
		       "ping-pong through mailboxes",
		       (now_ns() - t0) / 1000.0 / opt.iters / 2, opt.iters,
		       inl ? "inline" : "SGE");
}

static void bad_cases(void)
{
	const uint32_t half = half_len;
	const uint32_t bogus = opt.area_id ^ 0x8000u;
	struct rhinetdv_status s;

	/* An area ID the server never registered. */
	s = op(true, buf, 64, bogus, 0, 1001, true, 0);
	if (!s.done || s.status != IBV_WC_REM_ACCESS_ERR ||
	    s.syndrome != RHINETDV_SYN_BAD_AREA)
		FAIL("push to unregistered area %u: done %u status %u syndrome "
		     "%u, expected REM_ACCESS_ERR/BAD_AREA",
		     bogus, s.done, s.status, s.syndrome);
	else
		printf("push to unregistered area %u: %s, syndrome BAD_AREA "
		       "(status word and completion)\n",
		       bogus, ibv_wc_status_str((enum ibv_wc_status)s.status));
	/* Beyond the area's end. */
	s = op(false, buf, 64, opt.area_id, area_len - 32, 1002, true, 0);
	if (!s.done || s.status != IBV_WC_REM_ACCESS_ERR ||
	    s.syndrome != RHINETDV_SYN_BOUNDS)
		FAIL("pull beyond the area: done %u status %u syndrome %u, "
		     "expected REM_ACCESS_ERR/BOUNDS",
		     s.done, s.status, s.syndrome);
	else
		printf("pull beyond the area's end: %s, syndrome BOUNDS\n",
		       ibv_wc_status_str((enum ibv_wc_status)s.status));
	/* An unsignaled failure still reaches rhinetdv_poll. */
	{
		struct rhinetdv_xfer x = xfer(1003, buf, 8, bogus, 0, 0, -1);
		struct rhinetdv_completion c;

		if (!post(true, &x) && wait_completion(&c) &&
		    (c.wr_id != 1003 || c.status != IBV_WC_REM_ACCESS_ERR))
			FAIL("unsignaled bad push: wr_id %llu status %u",
			     (unsigned long long)c.wr_id, c.status);
	}
	/* The endpoint still works. */
	fill(buf, 64, 77);
	expect_ok("push after errors",
		  op(true, buf, 64, opt.area_id, half, 1004, false, 0), 64);
	(void)half;
}

/*
 * Watches (rhinetdv_watch_area): the server sleeps until the client's PUSH
 * lands in its area. TCP bytes order the steps: 'A' the server's watch is
 * armed, 'B' the client may push again, 'C' that push completed.
 */
#define WATCH_FIRST 0xfeedull
#define WATCH_SECOND 0xbeefull

static void client_watch(int fd)
{
	const struct timespec later = {0, 200 * 1000 * 1000};
	uint64_t v;
	uint8_t b = 0;

	if (example_full_io(fd, &b, 1, false) || b != 'A') {
		FAIL("watch: the server did not arm");
		return;
	}
	/* The server is asleep by now. */
	nanosleep(&later, NULL);
	v = WATCH_FIRST;
	memcpy(buf, &v, sizeof(v));
	expect_ok("push the server watches",
		  op(true, buf, 8, opt.area_id, 2ull * half_len, 800, false, 0),
		  8);
	if (example_full_io(fd, &b, 1, false) || b != 'B') {
		FAIL("watch: the server did not wake");
		return;
	}
	v = WATCH_SECOND;
	memcpy(buf, &v, sizeof(v));
	expect_ok("second push into the watched area",
		  op(true, buf, 8, opt.area_id, 2ull * half_len, 801, false, 0),
		  8);
	b = 'C';
	if (example_full_io(fd, &b, 1, true))
		FAIL("watch: the server went away");
}

/* Arms a watch of (group 0, @area_id) with status word 1; its status. */
static struct rhinetdv_status arm_watch(uint32_t area_id)
{
	struct rhinetdv_watch_attr w = {
		.wr_id = 700,
		.area_id = area_id,
		.flags = RHINETDV_WATCH_STATUS_WORD,
		.status_word = &sw[1],
		.status_lkey = sw_mr->lkey,
	};
	struct rhinetdv_status s = {0};
	int err;

	rhinetdv_status_word_clear(&sw[1]);
	err = rhinetdv_watch_area(ep, &w, sizeof(w));
	if (err)
		FAIL("rhinetdv_watch_area: %s", strerror(err));
	else
		wait_word(1, &s);
	return s;
}

static void server_watch(int fd)
{
	uint64_t before = 0, after = 0, t0;
	struct rhinetdv_status s;
	uint8_t b;
	int err;

	/* An area this process does not have: refused, the endpoint goes on
	 * (the failure's completion stays for rhinetdv_poll).
	 */
	s = arm_watch(opt.area_id ^ 0x4000u);
	if (!s.done || s.status != IBV_WC_GENERAL_ERR ||
	    s.syndrome != RHINETDV_SYN_NO_WATCH_AREA)
		FAIL("watch of an area not ours: done %u status %u syndrome "
		     "%u, expected GENERAL_ERR/NO_WATCH_AREA",
		     s.done, s.status, s.syndrome);
	if (rhinetdv_watch_count(ep, 0, opt.area_id, &before))
		FAIL("rhinetdv_watch_count failed");
	if (!expect_ok("watch of the area", arm_watch(opt.area_id), 0))
		return;
	b = 'A';
	if (example_full_io(fd, &b, 1, true))
		return;
	t0 = now_ns();
	err = rhinetdv_wait_watch(ep, 0, opt.area_id, before + 1, 20000);
	if (err) {
		FAIL("rhinetdv_wait_watch: %s", strerror(err));
		return;
	}
	/* What landed is in memory before the watch's completion. */
	if (*mailbox() != WATCH_FIRST)
		FAIL("woken by the watch, mailbox 0x%llx, expected 0x%llx",
		     (unsigned long long)*mailbox(), WATCH_FIRST);
	else
		printf("watch: slept %.1f ms until the client's push landed\n",
		       (now_ns() - t0) / 1e6);
	b = 'B';
	if (example_full_io(fd, &b, 1, true) ||
	    example_full_io(fd, &b, 1, false) || b != 'C') {
		FAIL("watch: the client went away");
		return;
	}
	/* One-shot: the second push landed and fired nothing. */
	if (rhinetdv_watch_count(ep, 0, opt.area_id, &after) ||
	    after != before + 1 || *mailbox() != WATCH_SECOND)
		FAIL("after a second push: %llu firings (expected %llu), "
		     "mailbox 0x%llx",
		     (unsigned long long)(after - before), 1ull,
		     (unsigned long long)*mailbox());
	else
		printf("watch: refused for an area not ours, fired once for "
		       "two pushes\n");
}

static int client(int fd)
{
	const uint32_t half = half_len, size = opt.size;
	uint64_t *lat_push = calloc((size_t)opt.iters, sizeof(uint64_t));
	uint64_t *lat_pull = calloc((size_t)opt.iters, sizeof(uint64_t));
	struct result res;
	uint32_t seed = 0;
	long bad;
	int it;

	if (!lat_push || !lat_pull)
		return 1;
	pingpong(true);
	/* The server's own pattern, read from its first half. */
	memset(buf, 0, half);
	if (expect_ok("pull of the server's first half",
		      op(false, buf, half, opt.area_id, 0, 1, true, 0), half) &&
	    (bad = check(buf, half, peer.node + 1000)) >= 0)
		FAIL("server's first half differs at byte %ld", bad);

	for (it = 0; it < opt.iters && !failures; it++) {
		uint64_t t0;

		seed = (uint32_t)it + 1;
		fill(buf, size, seed);
		t0 = now_ns();
		if (!expect_ok("push",
			       op(true, buf, size, opt.area_id, half,
				  100 + (uint64_t)it, it & 1, 0),
			       size))
			break;
		lat_push[it] = now_ns() - t0;
		memset(buf + half, 0, size);
		t0 = now_ns();
		if (!expect_ok("pull",
			       op(false, buf + half, size, opt.area_id, half,
				  200 + (uint64_t)it, !(it & 1), 0),
			       size))
			break;
		lat_pull[it] = now_ns() - t0;
		bad = check(buf + half, size, seed);
		if (bad >= 0)
			FAIL("iteration %d: byte %ld pulled back differs", it,
			     bad);
	}
	printf("%d push/pull round trips, every byte checked: %s\n", it,
	       failures ? "FAILED" : "ok");
	print_lat("push (status word)", lat_push, it);
	print_lat("pull (status word)", lat_pull, it);

	/* Inline push: the bytes travel in the work request. */
	if (!failures && dattr.max_inline >= 8) {
		uint32_t n = dattr.max_inline < 64 ? dattr.max_inline : 64;
		uint8_t small[64];
		struct rhinetdv_status s;

		fill(small, n, 4242);
		s = op(true, small, n, opt.area_id, half, 300, true,
		       RHINETDV_XFER_INLINE);
		memset(small, 0, sizeof(small));
		if (expect_ok("inline push", s, n) &&
		    expect_ok(
			    "pull after inline push",
			    op(false, buf, n, opt.area_id, half, 301, false, 0),
			    n) &&
		    (bad = check(buf, n, 4242)) >= 0)
			FAIL("inline push: byte %ld differs", bad);
	}

	if (!failures) {
		int count = opt.iters * 2 < 64 ? 64 : opt.iters * 2;
		double push_bw, pull_bw;

		fill(buf, size, 99);
		push_bw = bandwidth(true, count);
		pull_bw = bandwidth(false, count);
		printf("push bandwidth %.1f MB/s, pull bandwidth %.1f MB/s (%d "
		       "x %u B, window %d)\n",
		       push_bw, pull_bw, count, size, BW_WINDOW);
	}
	if (!failures)
		bad_cases();

	/* Last pattern into the server's second half, for it to check. */
	seed = 555;
	fill(buf, size, seed);
	expect_ok("final push",
		  op(true, buf, size, opt.area_id, half, 400, false, 0), size);
	res.seed = htonl(seed);
	res.ok = htonl(failures == 0);
	if (example_full_io(fd, &res, sizeof(res), true) ||
	    example_full_io(fd, &res, sizeof(res), false)) {
		FAIL("no result from the server");
	} else if (!ntohl(res.ok)) {
		FAIL("the server's checks failed");
	} else {
		printf("server checked its area: ok\n");
	}
	if (!failures && (dattr.caps & RHINETDV_CAP_WATCH)) {
		client_watch(fd);
		if (example_full_io(fd, &res, sizeof(res), false) ||
		    !ntohl(res.ok))
			FAIL("the server's watch checks failed");
		else
			printf("server's watch of its area: ok\n");
	}
	free(lat_push);
	free(lat_pull);
	return failures ? 1 : 0;
}

static int server(int fd)
{
	const uint32_t half = half_len;
	struct result res;
	long bad;

	printf("serving area %u; ping-pong, then waiting for the client\n",
	       opt.area_id);
	pingpong(false);
	if (example_full_io(fd, &res, sizeof(res), false)) {
		FAIL("client went away");
		return 1;
	}
	/* The client's last push arrived before its result (status word). */
	bad = check(area + half, opt.size, ntohl(res.seed));
	if (bad >= 0)
		FAIL("second half of the area differs at byte %ld", bad);
	bad = check(area, half, dattr.node_id + 1000);
	if (bad >= 0)
		FAIL("first half of the area changed at byte %ld", bad);
	if (!ntohl(res.ok))
		FAIL("the client's checks failed");
	else if (!failures)
		printf("area holds the client's last pattern; first half "
		       "intact\n");
	res.ok = htonl(failures == 0);
	example_full_io(fd, &res, sizeof(res), true);
	if (!failures && (dattr.caps & RHINETDV_CAP_WATCH)) {
		server_watch(fd);
		res.ok = htonl(failures == 0);
		example_full_io(fd, &res, sizeof(res), true);
	}
	return failures ? 1 : 0;
}

/* -F: on a device of another provider, every call says EOPNOTSUPP. */
static int foreign(void)
{
	struct rhinetdv_endpoint *e;
	struct ibv_mr *mr;
	static uint8_t mem[4096];
	int err;

	if (open_device())
		return 1;
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		perror("ibv_alloc_pd");
		return 1;
	}
	err = rhinetdv_query_device(ctx, &dattr, sizeof(dattr));
	if (err != EOPNOTSUPP)
		FAIL("rhinetdv_query_device on %s: %s", opt.dev_name,
		     strerror(err));
	e = rhinetdv_create_endpoint(pd, NULL);
	if (e || errno != EOPNOTSUPP)
		FAIL("rhinetdv_create_endpoint on %s: %s", opt.dev_name,
		     e ? "created" : strerror(errno));
	mr = rhinetdv_reg_area(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE, 1);
	if (mr || errno != EOPNOTSUPP)
		FAIL("rhinetdv_reg_area on %s: %s", opt.dev_name,
		     mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	{
		/* An endpoint on that device cannot be made: one that names
		 * its context is refused all the same.
		 */
		struct rhinetdv_endpoint other = {.context = ctx, .pd = pd};
		uint64_t n = 0;

		err = rhinetdv_watch_count(&other, 0, 1, &n);
		if (err != EOPNOTSUPP)
			FAIL("rhinetdv_watch_count on %s: %s", opt.dev_name,
			     strerror(err));
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("rhinetdv_pingpong: %s (%s): EOPNOTSUPP from query_device, "
	       "create_endpoint, reg_area, watch_count: %s\n",
	       opt.dev_name, "another provider", failures ? "FAILED" : "PASS");
	return failures ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: rhinetdv_pingpong [-d DEV] [-p PORT] [-n "
			"ITERS] [-s SIZE] [-a AREA_ID] [SERVER_IP]\n"
			"       rhinetdv_pingpong -F -d DEV   (DEV of another "
			"provider)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct info mine;
	bool foreign_check = false;
	int c, fd, rc;

	while ((c = getopt(argc, argv, "d:p:n:s:a:Fh")) != -1) {
		switch (c) {
		case 'F':
			foreign_check = true;
			break;
		case 'd':
			opt.dev_name = optarg;
			break;
		case 'p':
			opt.port = atoi(optarg);
			break;
		case 'n':
			opt.iters = atoi(optarg);
			break;
		case 's':
			opt.size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			opt.area_id = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind < argc)
		opt.server = argv[optind++];
	if (optind != argc || opt.iters < 1 || opt.size < 64 ||
	    opt.size > (1u << 24))
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (foreign_check)
		return opt.dev_name ? foreign() : 2;

	if (setup()) {
		teardown();
		return 1;
	}
	fd = example_tcp_open(opt.server, opt.port, 20);
	if (fd < 0) {
		teardown();
		return 1;
	}
	mine = (struct info){htonl(ep->node_id), htonl(ep->endpoint_id),
			     htonl(opt.area_id), htonl(area_len)};
	if (example_full_io(fd, &mine, sizeof(mine), true) ||
	    example_full_io(fd, &peer, sizeof(peer), false)) {
		fprintf(stderr, "exchange with the peer failed\n");
		close(fd);
		teardown();
		return 1;
	}
	peer.node = ntohl(peer.node);
	peer.endpoint = ntohl(peer.endpoint);
	peer.area_id = ntohl(peer.area_id);
	peer.area_len = ntohl(peer.area_len);
	printf("peer endpoint (%u, %u), area %u of %u bytes\n", peer.node,
	       peer.endpoint, peer.area_id, peer.area_len);
	if (peer.area_id != opt.area_id || peer.area_len != area_len) {
		fprintf(stderr, "peer runs with other -a/-s\n");
		close(fd);
		teardown();
		return 1;
	}
	rc = opt.server ? client(fd) : server(fd);
	close(fd);
	teardown();
	printf("rhinetdv_pingpong: %s\n", rc ? "FAILED" : "PASS");
	return rc;
}
