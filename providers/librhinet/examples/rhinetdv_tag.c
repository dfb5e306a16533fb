// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinetdv_tag: isend/irecv matched by the NIC (by tag and source) through the
 * direct verbs between two nodes, every byte checked.
 *
 * The receiver (server) and the sender (client) exchange their endpoint
 * addresses over TCP and step through:
 *   expected    irecvs posted first, then isends of 0 B .. 1 MiB (eager
 *               and rendezvous), exact source and tag
 *   unexpected  isends first; iprobe finds the oldest (length, source,
 *               tag) and misses a tag nobody sent; masked irecvs take
 *               them in send order
 *   truncation  a message longer than its irecv: LOC_LEN_ERR, the
 *               message's length, its first bytes
 *   cancel      an irecv nothing matches is cancelled (WR_FLUSH_ERR);
 *               cancelling it again is ENOENT
 *   stream      STREAM messages with mixed tags into any-source,
 *               any-tag irecvs, at most WINDOW posted at a time: matched
 *               in send order, and the ring's slots are reused many times
 *   vanish      a process with unexpected rendezvous messages queued for
 *               it is killed: the sender's isends end with an error
 *
 *   server: rhinetdv_tag [-p PORT]
 *   client: rhinetdv_tag [-p PORT] SERVER_IP
 * Prints "rhinetdv_tag: PASS" and exits 0, or names what failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include "example_tcp.h"
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (8u << 20)
#define BIG (1u << 20)
#define STREAM 400
#define WINDOW 16
#define MAX_IRECV 32

static int failures;
#define FAIL(...)                                          \
	do {                                               \
		fprintf(stderr, "rhinetdv_tag: FAIL: ");   \
		fprintf(stderr, __VA_ARGS__);              \
		fprintf(stderr, "\n");                     \
		failures++;                                \
	} while (0)

static uint8_t pattern(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 151u + i * 11u + (i >> 10) * 7u + 3u);
}

static void fill(uint8_t *p, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

static bool same(const uint8_t *p, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return false;
	return true;
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

/* ---- the device ----------------------------------------------------------- */

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rhinetdv_endpoint *ep;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static int open_node(struct node *n)
{
	struct rhinetdv_endpoint_init_attr ea = {0};
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
	if (!n->ctx)
		return -1;
	if (rhinetdv_query_device(n->ctx, &da, sizeof(da)) ||
	    !(da.caps & RHINETDV_CAP_TAG)) {
		fprintf(stderr, "rhinetdv_tag: the device does not match tags\n");
		return -1;
	}
	ea.comp_mask = RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV;
	ea.max_irecv = MAX_IRECV;
	n->pd = ibv_alloc_pd(n->ctx);
	n->ep = n->pd ? rhinetdv_create_endpoint(n->pd, &ea) : NULL;
	n->buf = aligned_alloc(4096, BUF_BYTES);
	n->mr = n->ep && n->buf ? ibv_reg_mr(n->pd, n->buf, BUF_BYTES,
					     IBV_ACCESS_LOCAL_WRITE)
				: NULL;
	return n->mr ? 0 : -1;
}

struct addr {
	uint32_t node, endpoint;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Waits for @want completions (at most 30 s); returns how many came. */
static int wait_completions(struct node *n, struct rhinetdv_completion_ex *c,
			    int want)
{
	const uint64_t deadline = now_ms() + 30000;
	int got = 0;

	while (got < want && now_ms() < deadline) {
		int k = rhinetdv_poll_ex(n->ep, want - got, c + got,
					 sizeof(*c));

		if (k < 0) {
			FAIL("rhinetdv_poll_ex: %s", strerror(errno));
			break;
		}
		got += k;
	}
	return got;
}

static int isend(struct node *n, const struct addr *to, uint64_t tag,
		 size_t off, size_t len, uint32_t seed, uint64_t wr_id)
{
	struct rhinetdv_isend_attr a = {0};
	int err;

	fill(n->buf + off, seed, len);
	a.wr_id = wr_id;
	a.addr = n->buf + off;
	a.length = (uint32_t)len;
	a.lkey = n->mr->lkey;
	a.dest_node = (uint16_t)to->node;
	a.dest_endpoint = to->endpoint;
	a.tag = tag;
	a.flags = RHINETDV_ISEND_SIGNALED;
	while ((err = rhinetdv_isend(n->ep, &a, sizeof(a))) == ENOMEM)
		usleep(100);
	if (err)
		FAIL("rhinetdv_isend tag %llu: %s", (unsigned long long)tag,
		     strerror(err));
	return err;
}

static int irecv(struct node *n, const struct addr *from, uint64_t tag,
		 uint64_t mask, size_t off, size_t len, uint64_t wr_id,
		 uint32_t *handle)
{
	struct rhinetdv_irecv_attr a = {0};
	int err;

	a.wr_id = wr_id;
	a.addr = n->buf + off;
	a.length = (uint32_t)len;
	a.lkey = n->mr->lkey;
	a.tag = tag;
	a.tag_mask = mask;
	if (from) {
		a.src_node = (uint16_t)from->node;
		a.src_endpoint = from->endpoint;
	} else {
		a.flags = RHINETDV_IRECV_ANY_SOURCE;
	}
	err = rhinetdv_irecv(n->ep, &a, sizeof(a), handle);
	if (err && err != ENOMEM)
		FAIL("rhinetdv_irecv tag %llu: %s", (unsigned long long)tag,
		     strerror(err));
	return err;
}

/* The sender's side: every isend completes, successfully. */
static void sends_done(struct node *n, int count, const char *what)
{
	struct rhinetdv_completion_ex c[64];
	int got = 0;

	while (got < count) {
		int want = count - got > 64 ? 64 : count - got;
		int k = wait_completions(n, c, want);

		for (int i = 0; i < k; i++)
			if (c[i].base.status != IBV_WC_SUCCESS ||
			    c[i].base.opcode != RHINETDV_OP_ISEND)
				FAIL("%s: isend %llu status %u syndrome %u", what,
				     (unsigned long long)c[i].base.wr_id,
				     c[i].base.status, c[i].base.syndrome);
		got += k;
		if (k < want) {
			FAIL("%s: %d of %d isends completed", what, got, count);
			return;
		}
	}
}

static const size_t sizes[] = {0, 1, 64, 4096, BIG};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- receiver --------------------------------------------------------- */

static void check_recv(const struct node *n,
		       const struct rhinetdv_completion_ex *c,
		       const struct addr *from, uint64_t tag, size_t len,
		       size_t off, uint32_t seed, const char *what)
{
	if (c->base.opcode != RHINETDV_OP_IRECV ||
	    c->base.status != IBV_WC_SUCCESS)
		FAIL("%s: irecv %llu status %u syndrome %u opcode %u", what,
		     (unsigned long long)c->base.wr_id, c->base.status,
		     c->base.syndrome, c->base.opcode);
	else if (c->base.byte_len != len || c->tag != tag ||
		 c->src_node != from->node || c->src_endpoint != from->endpoint)
		FAIL("%s: irecv %llu got %u B tag %llu from %u.%u", what,
		     (unsigned long long)c->base.wr_id, c->base.byte_len,
		     (unsigned long long)c->tag, c->src_node, c->src_endpoint);
	else if (!same(n->buf + off, seed, len))
		FAIL("%s: irecv %llu: bytes differ", what,
		     (unsigned long long)c->base.wr_id);
}

/* A child process with an endpoint that rendezvous messages wait for. */
static pid_t victim(struct addr *out)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct node v;
		struct addr a = {0, 0};

		if (!open_node(&v)) {
			a.node = v.ep->node_id;
			a.endpoint = v.ep->endpoint_id;
		}
		if (write(p[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], out, sizeof(*out)) != sizeof(*out) ||
	    !out->endpoint) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return pid;
}

static void receiver(struct node *n, const struct addr *peer)
{
	struct rhinetdv_completion_ex c[WINDOW + 8];
	struct rhinetdv_tag_info info;
	struct rhinetdv_irecv_attr sel = {0};
	uint32_t handle;
	int err;

	/* expected */
	for (unsigned i = 0; i < NSIZES; i++)
		irecv(n, peer, 100 + i, ~0ull, (size_t)i * (BIG + 4096),
		      sizes[i], i, NULL);
	step(1);
	if (wait_completions(n, c, NSIZES) != NSIZES) {
		FAIL("expected: not every irecv completed");
	} else {
		for (unsigned i = 0; i < NSIZES; i++) {
			unsigned k = (unsigned)c[i].base.wr_id;

			if (k >= NSIZES) {
				FAIL("expected: wr_id %u", k);
				continue;
			}
			check_recv(n, &c[i], peer, 100 + k, sizes[k],
				   (size_t)k * (BIG + 4096), 100 + k, "expected");
		}
	}
	step(2);

	/* unexpected: the client sent tag 200 (100 B) then 201 (300 KB) */
	step(3);
	sel.tag = 200;
	sel.tag_mask = ~0ull;
	sel.flags = RHINETDV_IRECV_ANY_SOURCE;
	err = rhinetdv_iprobe(n->ep, &sel, sizeof(sel), &info);
	if (err || !info.found || info.length != 100 || info.tag != 200 ||
	    info.src_node != peer->node || info.src_endpoint != peer->endpoint)
		FAIL("iprobe tag 200: err %d found %u len %u tag %llu from %u.%u",
		     err, info.found, info.length, (unsigned long long)info.tag,
		     info.src_node, info.src_endpoint);
	sel.tag = 299;
	err = rhinetdv_iprobe(n->ep, &sel, sizeof(sel), &info);
	if (err || info.found)
		FAIL("iprobe of a tag nobody sent: err %d found %u", err,
		     info.found);
	/* tags 200 and 201 both match (tag 200, mask ~1): in send order */
	irecv(n, NULL, 200, ~1ull, 0, BIG, 10, NULL);
	irecv(n, NULL, 200, ~1ull, BIG, BIG, 11, NULL);
	if (wait_completions(n, c, 2) != 2) {
		FAIL("unexpected: not every irecv completed");
	} else {
		for (int i = 0; i < 2; i++) {
			const bool first = c[i].base.wr_id == 10;

			check_recv(n, &c[i], peer, first ? 200 : 201,
				   first ? 100 : 300000, first ? 0 : BIG,
				   first ? 200 : 201, "unexpected");
		}
	}
	step(4);

	/* truncation: 200 B into 64 */
	irecv(n, peer, 300, ~0ull, 0, 64, 20, NULL);
	step(5);
	if (wait_completions(n, c, 1) != 1)
		FAIL("truncation: no completion");
	else if (c[0].base.status != IBV_WC_LOC_LEN_ERR ||
		 c[0].base.byte_len != 200 || c[0].tag != 300 ||
		 !same(n->buf, 300, 64))
		FAIL("truncation: status %u, %u B, tag %llu", c[0].base.status,
		     c[0].base.byte_len, (unsigned long long)c[0].tag);
	step(6);

	/* cancel */
	if (!irecv(n, NULL, 400, ~0ull, 0, 64, 30, &handle)) {
		err = rhinetdv_irecv_cancel(n->ep, handle);
		if (err)
			FAIL("cancel: %s", strerror(err));
		if (wait_completions(n, c, 1) != 1 || c[0].base.wr_id != 30 ||
		    c[0].base.status != IBV_WC_WR_FLUSH_ERR)
			FAIL("cancel: the irecv did not complete as flushed");
		err = rhinetdv_irecv_cancel(n->ep, handle);
		if (err != ENOENT)
			FAIL("cancel of a completed irecv: %d, not ENOENT", err);
	}
	step(7);

	/* stream: any source, any tag, WINDOW posted at a time; irecv k
	 * takes message k (one sender: send order), whenever it completes
	 */
	{
		int posted = 0, done = 0;

		while (done < STREAM) {
			int k;

			while (posted < STREAM && posted - done < WINDOW) {
				err = irecv(n, NULL, 0, 0,
					    (size_t)(posted % 256) * 8192, 8192,
					    1000 + (uint64_t)posted, NULL);
				if (err)
					break;
				posted++;
			}
			k = rhinetdv_poll_ex(n->ep, WINDOW, c, sizeof(c[0]));
			if (k < 0) {
				FAIL("stream: poll");
				break;
			}
			for (int i = 0; i < k; i++) {
				const uint64_t wr = c[i].base.wr_id - 1000;
				const uint32_t len = wr % 7 == 0 ? 3000 : 4;
				uint32_t seq = ~0u;

				memcpy(&seq, n->buf + (wr % 256) * 8192, 4);
				if (c[i].base.status != IBV_WC_SUCCESS ||
				    seq != wr || c[i].base.byte_len != len ||
				    c[i].tag != 500 + wr % 5) {
					FAIL("stream: irecv %llu got seq %u, %u B, tag %llu, status %u",
					     (unsigned long long)wr, seq,
					     c[i].base.byte_len,
					     (unsigned long long)c[i].tag,
					     c[i].base.status);
					done = STREAM;
					break;
				}
			}
			done += k;
		}
	}
	step(8);

	/* vanish: a process the client sends to is killed */
	{
		struct addr v;
		pid_t pid = victim(&v);

		if (pid < 0)
			FAIL("vanish: no victim process");
		if (example_full_io(sock, &v, sizeof(v), true))
			exit(1);
		step(9); /* the client's isends are queued at the victim */
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		step(10);
	}
}

/* ---- sender ------------------------------------------------------------- */

static void sender(struct node *n, const struct addr *peer)
{
	struct rhinetdv_completion_ex c[4];
	struct addr v;

	step(1);
	for (unsigned i = 0; i < NSIZES; i++)
		isend(n, peer, 100 + i, (size_t)i * (BIG + 4096), sizes[i],
		      100 + i, i);
	sends_done(n, NSIZES, "expected");
	step(2);

	isend(n, peer, 200, 0, 100, 200, 10);
	isend(n, peer, 201, BIG, 300000, 201, 11);
	usleep(200000); /* they wait at the receiver, unexpected */
	step(3);
	sends_done(n, 2, "unexpected");
	step(4);

	step(5);
	isend(n, peer, 300, 0, 200, 300, 20);
	sends_done(n, 1, "truncation");
	step(6);
	step(7);

	for (uint32_t s = 0; s < STREAM; s++) {
		struct rhinetdv_isend_attr a = {0};
		int err;

		/* small, inline, and unsignaled: only errors complete */
		memcpy(n->buf + 4096 * (s % 512), &s, 4);
		a.addr = n->buf + 4096 * (s % 512);
		a.length = s % 7 == 0 ? 3000 : 4;
		a.lkey = n->mr->lkey;
		a.dest_node = (uint16_t)peer->node;
		a.dest_endpoint = peer->endpoint;
		a.tag = 500 + s % 5;
		a.wr_id = s;
		while ((err = rhinetdv_isend(n->ep, &a, sizeof(a))) == ENOMEM)
			if (rhinetdv_poll_ex(n->ep, 4, c, sizeof(c[0])) > 0)
				FAIL("stream: isend %llu status %u",
				     (unsigned long long)c[0].base.wr_id,
				     c[0].base.status);
		if (err) {
			FAIL("stream: isend %u: %s", s, strerror(err));
			break;
		}
	}
	step(8);

	if (example_full_io(sock, &v, sizeof(v), false))
		exit(1);
	if (v.endpoint) {
		isend(n, &v, 600, 0, BIG, 600, 60);
		isend(n, &v, 601, BIG, BIG, 601, 61);
	}
	usleep(200000);
	step(9);
	if (v.endpoint) {
		int k = wait_completions(n, c, 2);

		if (k != 2)
			FAIL("vanish: %d of 2 isends ended (a hang)", k);
		for (int i = 0; i < k; i++)
			if (c[i].base.status == IBV_WC_SUCCESS)
				FAIL("vanish: isend %llu to a killed process succeeded",
				     (unsigned long long)c[i].base.wr_id);
	}
	step(10);
}

int main(int argc, char **argv)
{
	const char *server = NULL;
	struct addr me, peer;
	struct node n;
	int port = 18731, opt;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p') {
			fprintf(stderr, "usage: rhinetdv_tag [-p PORT] [SERVER_IP]\n");
			return 2;
		}
		port = atoi(optarg);
	}
	if (optind < argc)
		server = argv[optind];
	if (open_node(&n)) {
		perror("rhinetdv_tag: setup");
		return 1;
	}
	me.node = n.ep->node_id;
	me.endpoint = n.ep->endpoint_id;
	sock = example_tcp_open(server, port, 60);
	if (sock < 0 || example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false)) {
		fprintf(stderr, "rhinetdv_tag: no peer\n");
		return 1;
	}
	printf("rhinetdv_tag: %s %u.%u, peer %u.%u\n",
	       server ? "sender" : "receiver", me.node, me.endpoint, peer.node,
	       peer.endpoint);
	if (server)
		sender(&n, &peer);
	else
		receiver(&n, &peer);
	if (failures) {
		fprintf(stderr, "rhinetdv_tag: %d failures\n", failures);
		return 1;
	}
	printf("rhinetdv_tag: PASS\n");
	return 0;
}
