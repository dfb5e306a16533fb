// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinetdv_pindown: remote pin-down (pd_req, pd_reply, pd_release) through
 * the direct verbs between two nodes.
 *
 * The server mmap()s 1 MiB it never touches and declares it as an
 * on-demand area (RHINETDV_AREA_PIN_ON_DEMAND): nothing is pinned. The
 * client, with the server's endpoint address from TCP:
 *   a  pd_req on the first 256 KiB: completes once they are pinned
 *   b  PUSHes 1 MiB of a pattern into the whole area: the last 768 KiB
 *      were never pinned; the server's NIC holds the PUSH while its host
 *      pins them
 *   c  PULLs the 1 MiB back and compares
 *   d  pd_req by rkey on [256 KiB, 512 KiB), completing into a status
 *      word; a pd_req reaching past the area fails (BOUNDS)
 *   e  pd_release of the whole 1 MiB
 * The server reads its port's pinned_pages statistic at each step: the
 * same after declaring, 64 pages more after (a), 256 after (b), and back
 * where it started after (e); then it checks every byte and deregisters.
 * Each reading waits out ib_core's cache of the port's counters first
 * (stats_settle()): read at once, it may show the previous step's values.
 *
 * With --kill, the client pins part of a 2 MiB area and PUSHes into all of
 * it again and again; the server prints "waiting to be killed" once every
 * page was touched and is then SIGKILLed by the test script, which checks
 * that its node's pinned_pages goes back to 0. The client passes when its
 * PUSHes end with an error after that (none may hang).
 *
 *   server: rhinetdv_pindown [--kill] [-p PORT]
 *   client: rhinetdv_pindown [--kill] [-p PORT] SERVER_IP
 * Prints "rhinetdv_pindown: PASS" and exits 0, or names what failed and
 * exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include "example_tcp.h"
#include <getopt.h>
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define AREA_ID 7
#define AREA_BYTES (1u << 20)
#define KILL_AREA_BYTES (2u << 20)
#define REQ_BYTES (256u << 10) /* the first pd_req */
#define CHUNK (256u << 10) /* --kill: one PUSH */
#define WAIT_MS 30000 /* for one completion */
#define KILL_WAIT_MS 60000 /* --kill: for the server's death */

static int failures;
#define FAIL(...)                                            \
	do {                                                 \
		fprintf(stderr, "rhinetdv_pindown: FAIL: "); \
		fprintf(stderr, __VA_ARGS__);                \
		fprintf(stderr, "\n");                       \
		failures++;                                  \
	} while (0)

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 13u + (i >> 12) * 7u + 5u);
}

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	return now_us() / 1000;
}

/* ---- TCP: addresses and step-by-step synchronisation ------------------- */

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

/* What one side tells the other. */
struct info {
	uint32_t node, endpoint;
	uint32_t area_id, rkey; /* the server's area */
	uint64_t addr, length;
};

/* ---- the device ----------------------------------------------------------- */

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rhinetdv_endpoint *ep;
	const char *dev;
};

static int open_node(struct node *n)
{
	struct rhinetdv_device_attr da;
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
		FAIL("no rhinet device to open");
		return -1;
	}
	n->dev = ibv_get_device_name(n->ctx->device);
	if (rhinetdv_query_device(n->ctx, &da, sizeof(da)) ||
	    !(da.caps & RHINETDV_CAP_PIN_ON_DEMAND)) {
		FAIL("%s does not pin on demand (no RHINETDV_CAP_PIN_ON_DEMAND: NIC or rhinet.ko without remote pin-down)",
		     n->dev);
		return -1;
	}
	n->pd = ibv_alloc_pd(n->ctx);
	n->ep = n->pd ? rhinetdv_create_endpoint(n->pd, NULL) : NULL;
	if (!n->ep) {
		FAIL("endpoint: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The port statistic pinned_pages of the node's device (rhinet.ko's
 * gauge of the pages pinned for user memory: a port counter, as `rdma
 * statistic show link DEV/1` shows it), or -1.
 */
static long port_stat(const struct node *n, const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", n->dev,
		 name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &v) != 1) {
		FAIL("cannot read %s", path);
		v = -1;
	}
	if (f)
		fclose(f);
	return v;
}

/*
 * ib_core shows a port's hw_counters from one snapshot for their lifespan
 * (hw_counters/lifespan, 10 ms by default, counted in jiffies) after any
 * reader refreshed it: a value read right after a step may be one from
 * before the step (pin_events and pinned_pages both unchanged). Sleeps
 * until every snapshot taken before the call has expired: what is read
 * next was counted after what happened before it.
 */
static void stats_settle(const struct node *n)
{
	char path[256];
	long ms = 10;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/lifespan",
		 n->dev);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &ms) != 1 || ms < 0)
			ms = 10;
		fclose(f);
	}
	/* Rounded up to jiffies, plus the jiffy it was taken in: 3 jiffies
	 * of at most 10 ms (HZ >= 100) cover both.
	 */
	usleep((useconds_t)(ms + 40) * 1000);
}

static long pinned_pages(const struct node *n)
{
	return port_stat(n, "pinned_pages");
}

/* Waits up to @ms for pinned_pages to be @want; returns what it was. */
static long pinned_pages_become(const struct node *n, long want, int ms)
{
	const uint64_t deadline = now_ms() + (uint64_t)ms;
	long v;

	while ((v = pinned_pages(n)) != want && v >= 0 && now_ms() < deadline)
		usleep(50000);
	return v;
}

/* Waits up to @ms for one completion; 1 if it came. */
static int wait_one(struct node *n, struct rhinetdv_completion *c, int ms)
{
	const uint64_t deadline = now_ms() + (uint64_t)ms;

	while (now_ms() < deadline) {
		int k = rhinetdv_poll(n->ep, 1, c);

		if (k < 0) {
			FAIL("rhinetdv_poll: %s", strerror(errno));
			return 0;
		}
		if (k == 1)
			return 1;
	}
	return 0;
}

static const char *op_name(uint32_t op)
{
	switch (op) {
	case RHINETDV_OP_PUSH:
		return "PUSH";
	case RHINETDV_OP_PULL:
		return "PULL";
	case RHINETDV_OP_PD_REQUEST:
		return "PD_REQUEST";
	case RHINETDV_OP_PD_RELEASE:
		return "PD_RELEASE";
	default:
		return "?";
	}
}

/* A signaled operation completed as @op with success; @what names it. */
static bool expect_ok(struct node *n, uint64_t wr_id, uint32_t op,
		      const char *what)
{
	struct rhinetdv_completion c;

	if (!wait_one(n, &c, WAIT_MS)) {
		FAIL("%s: no completion within %d s", what, WAIT_MS / 1000);
		return false;
	}
	if (c.wr_id != wr_id || c.opcode != op || c.status != IBV_WC_SUCCESS) {
		FAIL("%s: completion wr_id %llu %s status %u (%s) syndrome %u",
		     what, (unsigned long long)c.wr_id, op_name(c.opcode),
		     c.status, ibv_wc_status_str(c.status), c.syndrome);
		return false;
	}
	return true;
}

/* ---- server ------------------------------------------------------------- */

static int server(struct node *n, bool kill_mode)
{
	const size_t len = kill_mode ? KILL_AREA_BYTES : AREA_BYTES;
	const long pages = (long)(len / PAGE);
	struct rhinetdv_area_attr aa = {0};
	struct info me = {0}, peer;
	unsigned char *vec;
	struct ibv_mr *mr;
	long p0, p, events = 0, resident = 0;
	uint8_t *mem;
	size_t bad = len;

	p0 = pinned_pages(n);
	/* Mapped, never touched (not even by the library), not pinned. */
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		FAIL("mmap: %s", strerror(errno));
		return 1;
	}
	aa.comp_mask = RHINETDV_AREA_ATTR_MASK_FLAGS;
	aa.group_id = 0;
	aa.area_id = AREA_ID;
	aa.flags = RHINETDV_AREA_PIN_ON_DEMAND;
	mr = rhinetdv_reg_area_ex(n->pd, mem, len,
				  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ,
				  &aa, sizeof(aa));
	if (!mr) {
		FAIL("rhinetdv_reg_area_ex(PIN_ON_DEMAND): %s",
		     strerror(errno));
		return 1;
	}
	stats_settle(n);
	p = pinned_pages(n);
	vec = calloc((size_t)pages, 1);
	if (vec && !mincore(mem, len, vec))
		for (long i = 0; i < pages; i++)
			resident += vec[i] & 1;
	free(vec);
	printf("rhinetdv_pindown: declared %zu KiB on demand as area %u of %s: pinned_pages %ld -> %ld, %ld pages resident\n",
	       len >> 10, AREA_ID, n->dev, p0, p, resident);
	if (p0 < 0 || p != p0)
		FAIL("declaring pinned pages (pinned_pages %ld -> %ld)", p0, p);
	if (resident)
		FAIL("declaring touched %ld pages of the range", resident);

	me.node = n->ep->node_id;
	me.endpoint = n->ep->endpoint_id;
	me.area_id = AREA_ID;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)mem;
	me.length = len;
	if (example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false)) {
		FAIL("no peer");
		return 1;
	}
	printf("rhinetdv_pindown: server %u.%u, client %u.%u\n", me.node,
	       me.endpoint, peer.node, peer.endpoint);
	fflush(stdout);

	if (kill_mode) {
		step(1); /* every page was touched, the first ones held */
		stats_settle(n);
		p = pinned_pages(n);
		printf("rhinetdv_pindown: pinned_pages %ld (%ld before declaring); waiting to be killed\n",
		       p, p0);
		fflush(stdout);
		if (p < p0 + pages)
			FAIL("only %ld pages pinned after the client touched all %ld",
			     p - p0, pages);
		for (;;)
			pause();
	}

	step(1); /* (a) pd_req of the first 256 KiB completed */
	stats_settle(n);
	events = port_stat(n, "pin_events");
	p = pinned_pages(n);
	printf("rhinetdv_pindown: after pd_req of %u KiB: pinned_pages %ld\n",
	       REQ_BYTES >> 10, p);
	if (p < p0 + (long)(REQ_BYTES / PAGE))
		FAIL("after pd_req of %u pages only %ld are pinned",
		     REQ_BYTES / PAGE, p - p0);
	else
		printf("rhinetdv_pindown: PASS pd_req pinned the range\n");
	step(11); /* read: the client may PUSH now */

	step(2); /* (b)-(d) PUSH, PULL, pd_req by key, pd_req past the end */
	stats_settle(n);
	/* A figure, not a check: how often the NIC interrupted this host to
	 * pin the 768 KiB the PUSH touched first (the goal is once).
	 */
	printf("rhinetdv_pindown: figure: first-touch PUSH of %zu KiB took %ld pin events (host interrupts)\n",
	       (len - REQ_BYTES) >> 10, port_stat(n, "pin_events") - events);
	p = pinned_pages(n);
	printf("rhinetdv_pindown: after PUSH and PULL of %zu KiB: pinned_pages %ld\n",
	       len >> 10, p);
	if (p != p0 + pages)
		FAIL("after the whole area was touched %ld pages are pinned, expected %ld",
		     p - p0, pages);
	else
		printf("rhinetdv_pindown: PASS first touch pinned the rest\n");
	step(12); /* read: the client may release now */

	step(3); /* (e) pd_release of the whole area completed */
	stats_settle(n);
	p = pinned_pages_become(n, p0, 10000);
	printf("rhinetdv_pindown: after pd_release: pinned_pages %ld\n", p);
	if (p != p0)
		FAIL("after pd_release of the whole area pinned_pages is %ld, %ld before declaring",
		     p, p0);
	else
		printf("rhinetdv_pindown: PASS pd_release unpinned held and first-touch pages\n");
	for (size_t i = 0; i < len; i++)
		if (mem[i] != pattern(i)) {
			bad = i;
			break;
		}
	if (bad < len)
		FAIL("byte %zu of the area is 0x%02x, the client pushed 0x%02x",
		     bad, mem[bad], pattern(bad));
	else
		printf("rhinetdv_pindown: PASS %zu bytes pushed intact\n", len);
	if (ibv_dereg_mr(mr))
		FAIL("ibv_dereg_mr: %s", strerror(errno));
	stats_settle(n);
	p = pinned_pages(n);
	printf("rhinetdv_pindown: after deregistering: pinned_pages %ld\n", p);
	if (p != p0)
		FAIL("after deregistering pinned_pages is %ld, %ld before", p,
		     p0);
	munmap(mem, len);
	step(4);
	return 0;
}

/* ---- client ------------------------------------------------------------- */

struct client {
	struct node *n;
	const struct info *peer;
	struct ibv_mr *mr;
	uint8_t *buf; /* source, then destination, then status words */
	uint64_t *words;
};

static int pin(struct client *cl, bool request, uint32_t flags, uint64_t off,
	       uint32_t len, uint64_t wr_id, uint64_t *word)
{
	struct rhinetdv_pin_attr a = {0};
	int err;

	a.wr_id = wr_id;
	a.dest_node = (uint16_t)cl->peer->node;
	a.dest_endpoint = cl->peer->endpoint;
	a.flags = flags;
	a.length = len;
	if (flags & RHINETDV_PIN_BY_KEY) {
		a.remote_addr = cl->peer->addr + off;
		a.rkey = cl->peer->rkey;
	} else {
		a.group_id = 0;
		a.area_id = cl->peer->area_id;
		a.offset = off;
	}
	if (word) {
		rhinetdv_status_word_clear(word);
		a.status_word = word;
		a.status_lkey = cl->mr->lkey;
	}
	err = request ? rhinetdv_pd_req(cl->n->ep, &a, sizeof(a))
		      : rhinetdv_pd_release(cl->n->ep, &a, sizeof(a));
	if (err)
		FAIL("rhinetdv_pd_%s: %s", request ? "req" : "release",
		     strerror(err));
	return err;
}

static int xfer(struct client *cl, bool push, uint8_t *local, uint64_t off,
		uint32_t len, uint64_t wr_id)
{
	struct rhinetdv_xfer x = {0};
	int err;

	x.wr_id = wr_id;
	x.local_addr = local;
	x.length = len;
	x.lkey = cl->mr->lkey;
	x.dest_node = (uint16_t)cl->peer->node;
	x.dest_endpoint = cl->peer->endpoint;
	x.area_id = cl->peer->area_id;
	x.offset = off;
	x.flags = RHINETDV_XFER_SIGNALED;
	err = push ? rhinetdv_push(cl->n->ep, &x)
		   : rhinetdv_pull(cl->n->ep, &x);
	if (err)
		FAIL("rhinetdv_%s: %s", push ? "push" : "pull", strerror(err));
	return err;
}

/* Waits for a status word; true when it says success. */
static bool word_ok(const uint64_t *word, const char *what)
{
	const uint64_t deadline = now_ms() + WAIT_MS;
	struct rhinetdv_status s;

	while (!rhinetdv_status_word_poll(word, &s))
		if (now_ms() > deadline) {
			FAIL("%s: status word not written within %d s", what,
			     WAIT_MS / 1000);
			return false;
		}
	if (s.status != IBV_WC_SUCCESS) {
		FAIL("%s: status word says status %u (%s) syndrome %u", what,
		     s.status, ibv_wc_status_str(s.status), s.syndrome);
		return false;
	}
	return true;
}

static void client_basic(struct client *cl)
{
	const uint32_t len = (uint32_t)cl->peer->length;
	uint8_t *src = cl->buf, *dst = cl->buf + len;
	uint64_t t0, first_touch_us;
	struct rhinetdv_completion c;
	size_t bad = len;

	/* (a) */
	if (!pin(cl, true, RHINETDV_PIN_SIGNALED, 0, REQ_BYTES, 1, NULL) &&
	    expect_ok(cl->n, 1, RHINETDV_OP_PD_REQUEST, "pd_req of 256 KiB"))
		printf("rhinetdv_pindown: PASS pd_req of the first %u KiB completed\n",
		       REQ_BYTES >> 10);
	step(1);
	step(11); /* the server has read the counters (a) left */

	/* (b) the last 768 KiB were never pinned */
	for (uint32_t i = 0; i < len; i++)
		src[i] = pattern(i);
	t0 = now_us();
	if (!xfer(cl, true, src, 0, len, 2) &&
	    expect_ok(cl->n, 2, RHINETDV_OP_PUSH, "PUSH of the whole area"))
		printf("rhinetdv_pindown: PASS PUSH of %u KiB, %u KiB of it never pinned before\n",
		       len >> 10, (len - REQ_BYTES) >> 10);
	first_touch_us = now_us() - t0;
	/* The same PUSH again, every page pinned now: the reference. */
	t0 = now_us();
	if (!xfer(cl, true, src, 0, len, 2) &&
	    expect_ok(cl->n, 2, RHINETDV_OP_PUSH, "PUSH again"))
		printf("rhinetdv_pindown: figure: PUSH of %u KiB with %u KiB first touched: %llu us; the same PUSH pinned: %llu us\n",
		       len >> 10, (len - REQ_BYTES) >> 10,
		       (unsigned long long)first_touch_us,
		       (unsigned long long)(now_us() - t0));
	/* (c) */
	memset(dst, 0, len);
	if (!xfer(cl, false, dst, 0, len, 3) &&
	    expect_ok(cl->n, 3, RHINETDV_OP_PULL, "PULL of the whole area")) {
		for (uint32_t i = 0; i < len; i++)
			if (dst[i] != pattern(i)) {
				bad = i;
				break;
			}
		if (bad < len)
			FAIL("PULL: byte %zu is 0x%02x, pushed 0x%02x", bad,
			     dst[bad], pattern(bad));
		else
			printf("rhinetdv_pindown: PASS PULL of %u KiB read back what was pushed\n",
			       len >> 10);
	}
	/* (d) by rkey, into a status word, unsignaled */
	if (!pin(cl, true, RHINETDV_PIN_BY_KEY | RHINETDV_PIN_STATUS_WORD,
		 REQ_BYTES, REQ_BYTES, 4, &cl->words[0]) &&
	    word_ok(&cl->words[0], "pd_req by rkey"))
		printf("rhinetdv_pindown: PASS pd_req by rkey completed into a status word\n");
	/* past the end of the area: BOUNDS */
	if (!pin(cl, true, RHINETDV_PIN_SIGNALED, len - PAGE, 2 * PAGE, 5,
		 NULL)) {
		if (!wait_one(cl->n, &c, WAIT_MS))
			FAIL("pd_req past the area: no completion");
		else if (c.wr_id != 5 || c.opcode != RHINETDV_OP_PD_REQUEST ||
			 c.status == IBV_WC_SUCCESS ||
			 c.syndrome != RHINETDV_SYN_BOUNDS)
			FAIL("pd_req past the area: wr_id %llu %s status %u (%s) syndrome %u, expected an error with syndrome BOUNDS (%u)",
			     (unsigned long long)c.wr_id, op_name(c.opcode),
			     c.status, ibv_wc_status_str(c.status), c.syndrome,
			     RHINETDV_SYN_BOUNDS);
		else
			printf("rhinetdv_pindown: PASS pd_req past the area failed: %s, syndrome BOUNDS\n",
			       ibv_wc_status_str(c.status));
	}
	step(2);
	step(12); /* the server has read what (b) pinned */

	/* (e) drops both holds; first-touch pages go too */
	if (!pin(cl, false, RHINETDV_PIN_SIGNALED, 0, len, 6, NULL) &&
	    expect_ok(cl->n, 6, RHINETDV_OP_PD_RELEASE,
		      "pd_release of the whole area"))
		printf("rhinetdv_pindown: PASS pd_release of %u KiB completed\n",
		       len >> 10);
	step(3);
	step(4); /* the server checked */
}

/*
 * --kill: touch every page (the first ones held), tell the server, and
 * PUSH on until the server's death ends a PUSH with an error.
 */
static void client_kill(struct client *cl)
{
	const uint32_t len = (uint32_t)cl->peer->length;
	struct rhinetdv_completion c;
	uint64_t deadline, wr = 100;
	uint32_t off = 0;

	for (uint32_t i = 0; i < len; i++)
		cl->buf[i] = pattern(i);
	if (pin(cl, true, RHINETDV_PIN_SIGNALED, 0, REQ_BYTES, 1, NULL) ||
	    !expect_ok(cl->n, 1, RHINETDV_OP_PD_REQUEST, "pd_req"))
		exit(1);
	for (off = 0; off < len; off += CHUNK, wr++)
		if (xfer(cl, true, cl->buf + off, off, CHUNK, wr) ||
		    !expect_ok(cl->n, wr, RHINETDV_OP_PUSH, "first PUSHes"))
			exit(1);
	printf("rhinetdv_pindown: %u KiB pushed; the server is to be killed now\n",
	       len >> 10);
	fflush(stdout);
	step(1);
	deadline = now_ms() + KILL_WAIT_MS;
	for (off = 0;; off = (off + CHUNK) % len, wr++) {
		if (now_ms() > deadline) {
			FAIL("PUSHes still succeed %d s after the server was to be killed",
			     KILL_WAIT_MS / 1000);
			return;
		}
		if (xfer(cl, true, cl->buf + off, off, CHUNK, wr))
			return;
		if (!wait_one(cl->n, &c, WAIT_MS)) {
			FAIL("PUSH %llu neither completed nor failed within %d s",
			     (unsigned long long)wr, WAIT_MS / 1000);
			return;
		}
		if (c.status != IBV_WC_SUCCESS) {
			printf("rhinetdv_pindown: PASS PUSH %llu after the server's death: %s, syndrome %u\n",
			       (unsigned long long)c.wr_id,
			       ibv_wc_status_str(c.status), c.syndrome);
			return;
		}
	}
}

static int client(struct node *n, bool kill_mode)
{
	struct info me = {0}, peer;
	struct client cl = {n, &peer, NULL, NULL, NULL};
	size_t buf_len;

	me.node = n->ep->node_id;
	me.endpoint = n->ep->endpoint_id;
	if (example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false)) {
		FAIL("no peer");
		return 1;
	}
	printf("rhinetdv_pindown: client %u.%u, server %u.%u area %u (%llu KiB)\n",
	       me.node, me.endpoint, peer.node, peer.endpoint, peer.area_id,
	       (unsigned long long)(peer.length >> 10));
	if (peer.length != (kill_mode ? KILL_AREA_BYTES : AREA_BYTES)) {
		FAIL("the server's area is %llu bytes (one side runs --kill, the other not?)",
		     (unsigned long long)peer.length);
		return 1;
	}
	buf_len = 2 * peer.length + PAGE;
	cl.buf = aligned_alloc(PAGE, buf_len);
	cl.mr = cl.buf ? ibv_reg_mr(n->pd, cl.buf, buf_len,
				    IBV_ACCESS_LOCAL_WRITE)
		       : NULL;
	if (!cl.mr) {
		FAIL("local buffer: %s", strerror(errno));
		return 1;
	}
	cl.words = (uint64_t *)(cl.buf + 2 * peer.length);
	if (kill_mode)
		client_kill(&cl);
	else
		client_basic(&cl);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"kill", no_argument, NULL, 'k'},
		{"port", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0}};
	const char *server_ip = NULL;
	bool kill_mode = false;
	int port = 18733, opt;
	struct node n;

	while ((opt = getopt_long(argc, argv, "kp:", opts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			kill_mode = true;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: rhinetdv_pindown [--kill] [-p PORT] [SERVER_IP]\n");
			return 2;
		}
	}
	if (optind < argc)
		server_ip = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The connection first: a side that cannot go on then ends the
	 * other's run at once (it reads end of file).
	 */
	sock = example_tcp_open(server_ip, port, 60);
	if (sock < 0) {
		fprintf(stderr, "rhinetdv_pindown: no peer\n");
		return 1;
	}
	if (open_node(&n))
		return 1;
	if ((server_ip ? client(&n, kill_mode) : server(&n, kill_mode)) &&
	    !failures)
		failures = 1;
	if (failures) {
		fprintf(stderr, "rhinetdv_pindown: %d failures\n", failures);
		return 1;
	}
	printf("rhinetdv_pindown: PASS\n");
	return 0;
}
