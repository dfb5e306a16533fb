// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinetdv_model: the one-sided RHiNET model through the direct verbs
 * between two nodes (process groups, areas, PUSH and PULL, partial
 * transfers with twin memory, put-with-signal), every byte checked.
 *
 * Both processes are members of the process group named by RHINET_GROUPS
 * (GROUP:TOKEN), which the administrator granted on both nodes to the
 * user running them (rhinet-group grant GROUP --uid USER --token TOKEN).
 * The server registers a 2 MiB area in that group and answers commands over
 * TCP: fill the area with a pattern, send its bytes, wait (sleeping) for a
 * signal count. The client runs every partial-transfer mode of PUSH and PULL
 * by area and by key: PUSH basic/stride/bitmap/diff, PULL basic/stride/
 * bitmap/twin, with twin memory from ibv_alloc_dm; put-with-signal while the
 * server sleeps in rhinetdv_wait_signal; and the refusals: a group the
 * process is not in (EPERM), a wrong token at open (EPERM), a mode an
 * operation does not take (EINVAL).
 *
 *   server: rhinetdv_model [-p PORT]
 *   client: rhinetdv_model [-p PORT] SERVER_IP
 * Prints "rhinetdv_model: PASS" and exits 0, or names what failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include "example_tcp.h"
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define AREA_BYTES (2u << 20)
#define AREA_ID 7
#define N (1u << 20) /* bytes each operation covers */

static int failures;
#define FAIL(...)                                              \
	do {                                                   \
		fprintf(stderr, "rhinetdv_model: FAIL: ");     \
		fprintf(stderr, __VA_ARGS__);                  \
		fprintf(stderr, "\n");                         \
		failures++;                                    \
	} while (0)

static uint8_t pattern(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 9) * 13u + 1u);
}

/* ---- TCP ---------------------------------------------------------------- */

/* ---- the device ----------------------------------------------------------- */

static struct ibv_context *open_rhinet(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "rhinet", 6)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* What the server tells the client. */
struct hello {
	uint32_t node, endpoint, rkey, group;
	uint64_t addr;
};

struct cmd {
	uint8_t op; /* 'F' fill, 'G' get, 'W' wait signal, 'Q' quit */
	uint8_t pad[3];
	uint32_t seed;
	uint64_t count;
};

static int group_from_env(void)
{
	const char *g = getenv("RHINET_GROUPS");

	return g ? atoi(g) : 0;
}

/* ---- server --------------------------------------------------------------- */

static int serve(int port)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct ibv_context *ctx = open_rhinet();
	struct rhinetdv_area_attr aa = {0};
	struct rhinetdv_endpoint *ep;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct hello h;
	uint8_t *area;
	int fd;

	if (!ctx) {
		perror("ibv_open_device");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	ep = pd ? rhinetdv_create_endpoint(pd, NULL) : NULL;
	area = aligned_alloc(4096, AREA_BYTES);
	aa.group_id = (uint32_t)group_from_env();
	aa.area_id = AREA_ID;
	mr = ep && area ? rhinetdv_reg_area_ex(pd, area, AREA_BYTES, access,
					       &aa, sizeof(aa))
			: NULL;
	if (!mr) {
		perror("server setup");
		return 1;
	}
	h = (struct hello){ep->node_id, ep->endpoint_id, mr->rkey, aa.group_id,
			   (uintptr_t)area};
	printf("server: endpoint %u.%u, area %u.%u\n", h.node, h.endpoint,
	       h.group, AREA_ID);
	fd = example_tcp_open(NULL, port, 30);
	if (fd < 0 || example_full_io(fd, &h, sizeof(h), true))
		return 1;
	for (;;) {
		struct cmd c;
		uint64_t got = 0;
		int err = 0;

		if (example_full_io(fd, &c, sizeof(c), false))
			return 1;
		switch (c.op) {
		case 'F':
			for (uint64_t i = 0; i < AREA_BYTES; i++)
				area[i] = pattern(c.seed, i);
			err = example_full_io(fd, &err, sizeof(err), true);
			break;
		case 'G':
			err = example_full_io(fd, area, AREA_BYTES, true);
			break;
		case 'W':
			/* Sleeps in the kernel's completion event. */
			err = rhinetdv_wait_signal(ep, h.group, AREA_ID,
						   c.count, 30000);
			rhinetdv_signal_count(ep, h.group, AREA_ID, &got);
			example_full_io(fd, &err, sizeof(err), true);
			err = example_full_io(fd, &got, sizeof(got), true);
			break;
		case 'Q':
			ibv_dereg_mr(mr);
			rhinetdv_destroy_endpoint(ep);
			ibv_dealloc_pd(pd);
			ibv_close_device(ctx);
			return 0;
		default:
			return 1;
		}
		if (err)
			return 1;
	}
}

/* ---- client --------------------------------------------------------------- */

static int fd;
static struct hello srv;
static struct rhinetdv_endpoint *ep;
static uint8_t *mirror; /* what the server's area should hold */

static int remote_cmd(uint8_t op, uint32_t seed, uint64_t count)
{
	struct cmd c = {.op = op, .seed = seed, .count = count};
	int err = 0;

	if (example_full_io(fd, &c, sizeof(c), true))
		return -1;
	if (op == 'F') {
		for (uint64_t i = 0; i < AREA_BYTES; i++)
			mirror[i] = pattern(seed, i);
		return example_full_io(fd, &err, sizeof(err), false) ? -1 : err;
	}
	return 0;
}

/* Fetches the server's area over TCP and compares it with the mirror. */
static void check_remote(const char *what)
{
	uint8_t *got = malloc(AREA_BYTES);

	if (!got || remote_cmd('G', 0, 0) ||
	    example_full_io(fd, got, AREA_BYTES, false)) {
		FAIL("%s: cannot read the server's area", what);
		exit(1);
	}
	for (uint64_t i = 0; i < AREA_BYTES; i++)
		if (got[i] != mirror[i]) {
			FAIL("%s: server byte %lu is %u, expected %u", what,
			     (unsigned long)i, got[i], mirror[i]);
			break;
		}
	free(got);
}

/* Posts one transfer and waits for its completion. */
static int run(const struct rhinetdv_xfer_ex *x, bool push, const char *what)
{
	struct rhinetdv_completion c;
	int err = push ? rhinetdv_push_ex(ep, x, sizeof(*x))
		       : rhinetdv_pull_ex(ep, x, sizeof(*x));
	int n;

	if (err) {
		FAIL("%s: post: %s", what, strerror(err));
		return -1;
	}
	for (int spins = 0;; spins++) {
		n = rhinetdv_poll(ep, 1, &c);
		if (n)
			break;
		if (spins > 20000000) {
			FAIL("%s: no completion", what);
			exit(1);
		}
	}
	if (n < 0 || c.status != IBV_WC_SUCCESS) {
		FAIL("%s: status %u syndrome %u", what, n < 0 ? 0 : c.status,
		     n < 0 ? 0 : c.syndrome);
		return -1;
	}
	return 0;
}

static void base(struct rhinetdv_xfer_ex *x, bool by_key, void *local,
		 uint32_t len, uint32_t lkey, uint64_t offset)
{
	memset(x, 0, sizeof(*x));
	x->base.local_addr = local;
	x->base.length = len;
	x->base.lkey = lkey;
	x->base.dest_node = (uint16_t)srv.node;
	x->base.dest_endpoint = srv.endpoint;
	x->base.flags = RHINETDV_XFER_SIGNALED;
	if (by_key) {
		x->base.flags |= RHINETDV_XFER_EX_BY_KEY;
		x->remote_addr = srv.addr + offset;
		x->rkey = srv.rkey;
	} else {
		x->group_id = srv.group;
		x->base.area_id = AREA_ID;
		x->base.offset = offset;
	}
}

static bool bit(const uint8_t *bits, uint64_t i)
{
	return bits[i / 8] >> (i % 8) & 1;
}

static void every_mode(bool by_key, uint8_t *local, struct ibv_mr *lmr,
		       uint8_t *bits, struct ibv_mr *bmr, struct ibv_dm *twin)
{
	const char *how = by_key ? "by key" : "by area";
	const uint32_t g = 61, block = 100, count = 5000, ls = 133, rs = 171;
	struct rhinetdv_xfer_ex x;
	char what[64];

	/* PUSH basic */
	remote_cmd('F', 1, 0);
	for (uint64_t i = 0; i < N; i++)
		local[i] = pattern(50, i);
	base(&x, by_key, local, N, lmr->lkey, 3);
	snprintf(what, sizeof(what), "push basic %s", how);
	if (!run(&x, true, what)) {
		memcpy(mirror + 3, local, N);
		check_remote(what);
	}
	/* PUSH stride */
	remote_cmd('F', 2, 0);
	base(&x, by_key, local, (count - 1) * ls + block, lmr->lkey, 5);
	x.mode = RHINETDV_MODE_STRIDE;
	x.block = block;
	x.count = count;
	x.local_stride = ls;
	x.remote_stride = rs;
	snprintf(what, sizeof(what), "push stride %s", how);
	if (!run(&x, true, what)) {
		for (uint64_t i = 0; i < count; i++)
			memcpy(mirror + 5 + i * rs, local + i * ls, block);
		check_remote(what);
	}
	/* PUSH bitmap */
	remote_cmd('F', 3, 0);
	base(&x, by_key, local, N, lmr->lkey, 0);
	x.mode = RHINETDV_MODE_BITMAP;
	x.block = g;
	x.bitmap = bits;
	x.bitmap_lkey = bmr->lkey;
	snprintf(what, sizeof(what), "push bitmap %s", how);
	if (!run(&x, true, what)) {
		for (uint64_t i = 0; i < N; i++)
			if (bit(bits, i / g))
				mirror[i] = local[i];
		check_remote(what);
	}
	/* PULL basic */
	remote_cmd('F', 4, 0);
	memset(local, 0xee, AREA_BYTES);
	base(&x, by_key, local, N, lmr->lkey, 9);
	snprintf(what, sizeof(what), "pull basic %s", how);
	if (!run(&x, false, what) && memcmp(local, mirror + 9, N))
		FAIL("%s: wrong bytes", what);
	/* PULL stride */
	remote_cmd('F', 5, 0);
	memset(local, 0xee, AREA_BYTES);
	base(&x, by_key, local, (count - 1) * ls + block, lmr->lkey, 1);
	x.mode = RHINETDV_MODE_STRIDE;
	x.block = block;
	x.count = count;
	x.local_stride = ls;
	x.remote_stride = rs;
	snprintf(what, sizeof(what), "pull stride %s", how);
	if (!run(&x, false, what))
		for (uint64_t i = 0; i < count * ls; i++) {
			const bool in = i % ls < block && i / ls < count;
			const uint8_t want =
				in ? mirror[1 + (i / ls) * rs + i % ls] : 0xee;
			if (local[i] != want) {
				FAIL("%s: byte %lu", what, (unsigned long)i);
				break;
			}
		}
	/* PULL bitmap */
	remote_cmd('F', 6, 0);
	memset(local, 0xee, AREA_BYTES);
	base(&x, by_key, local, N, lmr->lkey, 0);
	x.mode = RHINETDV_MODE_BITMAP;
	x.block = g;
	x.bitmap = bits;
	x.bitmap_lkey = bmr->lkey;
	snprintf(what, sizeof(what), "pull bitmap %s", how);
	if (!run(&x, false, what))
		for (uint64_t i = 0; i < N; i++)
			if (local[i] != (bit(bits, i / g) ? mirror[i] : 0xee)) {
				FAIL("%s: byte %lu", what, (unsigned long)i);
				break;
			}
	/* PULL twin, change a few bytes, PUSH diff */
	remote_cmd('F', 7, 0);
	base(&x, by_key, local, N, lmr->lkey, 0);
	x.mode = RHINETDV_MODE_TWIN;
	x.twin = twin;
	x.twin_offset = 4096;
	snprintf(what, sizeof(what), "pull twin %s", how);
	if (!run(&x, false, what) && memcmp(local, mirror, N))
		FAIL("%s: wrong bytes", what);
	for (uint64_t i = 0; i < N; i += 997)
		local[i] ^= 0x3c;
	x.mode = RHINETDV_MODE_DIFF;
	snprintf(what, sizeof(what), "push diff %s", how);
	if (!run(&x, true, what)) {
		memcpy(mirror, local, N);
		check_remote(what);
	}
}

static int client(const char *server, int port)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct ibv_alloc_dm_attr da = {.length = N + 4096};
	struct rhinetdv_device_attr dattr;
	struct rhinetdv_xfer_ex x;
	struct ibv_context *ctx;
	struct ibv_mr *lmr, *bmr;
	struct ibv_dm *twin;
	struct ibv_pd *pd;
	uint8_t *local, *bits;
	uint16_t groups[8];
	uint64_t got = 0;
	int err, ng, status;
	pid_t child;

	ctx = open_rhinet();
	if (!ctx) {
		perror("ibv_open_device");
		return 1;
	}
	/* The administrator granted the group here (rhinet-group): a process
	 * naming it with another token is refused at open.
	 */
	child = fork();
	if (child == 0) {
		char env[64];

		snprintf(env, sizeof(env), "%d:badbadbad", group_from_env());
		setenv("RHINET_GROUPS", env, 1);
		_exit(open_rhinet() ? 1 : errno == EPERM ? 0 : 2);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		FAIL("open with a wrong group token: exit %d, expected EPERM",
		     WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	rhinetdv_query_device(ctx, &dattr, sizeof(dattr));
	if (!(dattr.caps & RHINETDV_CAP_XFER_EX) ||
	    !(dattr.caps & RHINETDV_CAP_TWIN) ||
	    !(dattr.caps & RHINETDV_CAP_GROUPS))
		FAIL("caps %#x lack XFER_EX, TWIN or GROUPS", dattr.caps);
	ng = rhinetdv_query_groups(ctx, groups, 8);
	if (ng != 1 || groups[0] != group_from_env())
		FAIL("query_groups: %d groups, first %u", ng,
		     ng > 0 ? groups[0] : 0);
	pd = ibv_alloc_pd(ctx);
	ep = pd ? rhinetdv_create_endpoint(pd, NULL) : NULL;
	local = aligned_alloc(4096, AREA_BYTES);
	bits = aligned_alloc(4096, 4096 * 8);
	mirror = malloc(AREA_BYTES);
	lmr = local ? ibv_reg_mr(pd, local, AREA_BYTES, access) : NULL;
	bmr = bits ? ibv_reg_mr(pd, bits, 4096 * 8, access) : NULL;
	twin = ibv_alloc_dm(ctx, &da);
	if (!ep || !lmr || !bmr || !mirror) {
		perror("client setup");
		return 1;
	}
	if (!twin) {
		FAIL("ibv_alloc_dm: %s", strerror(errno));
		return 1;
	}
	printf("client: twin memory allocated, connecting\n");
	for (uint32_t i = 0; i < 4096 * 8; i++)
		bits[i] = (uint8_t)(pattern(99, i) & pattern(98, i));
	fd = example_tcp_open(server, port, 30);
	if (fd < 0 || example_full_io(fd, &srv, sizeof(srv), false)) {
		fprintf(stderr, "cannot reach the server\n");
		return 1;
	}
	printf("client: server endpoint %u.%u, area %u.%u; twin handle %#x\n",
	       srv.node, srv.endpoint, srv.group, AREA_ID,
	       rhinetdv_twin_handle(twin));

	every_mode(false, local, lmr, bits, bmr, twin);
	every_mode(true, local, lmr, bits, bmr, twin);

	/* Put-with-signal while the server sleeps in wait_signal: ten PUSHes
	 * with values 1..10 wake it at 55.
	 */
	remote_cmd('F', 8, 0);
	remote_cmd('W', 0, 55);
	usleep(200000); /* let it fall asleep */
	for (uint32_t k = 1; k <= 10; k++) {
		base(&x, false, local, 64, lmr->lkey, 64 * k);
		x.base.flags |= RHINETDV_XFER_EX_SIGNAL;
		x.signal = k;
		if (!run(&x, true, "put-with-signal"))
			memcpy(mirror + 64 * k, local, 64);
	}
	if (example_full_io(fd, &err, sizeof(err), false) ||
	    example_full_io(fd, &got, sizeof(got), false) || err || got != 55)
		FAIL("wait_signal at the server: %s, count %lu (expected 55)",
		     strerror(err), (unsigned long)got);
	check_remote("put-with-signal");

	/* Refusals made by the library before anything is posted. */
	base(&x, false, local, 64, lmr->lkey, 0);
	x.group_id = srv.group + 1;
	err = rhinetdv_push_ex(ep, &x, sizeof(x));
	if (err != EPERM)
		FAIL("push to a group not joined: %s, expected EPERM",
		     strerror(err));
	base(&x, false, local, 64, lmr->lkey, 0);
	x.mode = RHINETDV_MODE_TWIN;
	x.twin = twin;
	if ((err = rhinetdv_push_ex(ep, &x, sizeof(x))) != EINVAL)
		FAIL("PUSH with TWIN: %s, expected EINVAL", strerror(err));
	x.mode = RHINETDV_MODE_DIFF;
	if ((err = rhinetdv_pull_ex(ep, &x, sizeof(x))) != EINVAL)
		FAIL("PULL with DIFF: %s, expected EINVAL", strerror(err));
	/* A twin too short for the area: the NIC refuses it. */
	base(&x, false, local, N, lmr->lkey, 0);
	x.mode = RHINETDV_MODE_DIFF;
	x.twin = twin;
	x.twin_offset = 8192;
	if (!rhinetdv_push_ex(ep, &x, sizeof(x))) {
		struct rhinetdv_completion c;
		int n;

		while (!(n = rhinetdv_poll(ep, 1, &c)))
			;
		if (n != 1 || c.status == IBV_WC_SUCCESS ||
		    c.syndrome != RHINETDV_SYN_BAD_XFER)
			FAIL("DIFF past the twin's end: status %u syndrome %u",
			     c.status, c.syndrome);
	}
	remote_cmd('Q', 0, 0);
	if (ibv_free_dm(twin))
		FAIL("ibv_free_dm");
	printf("rhinetdv_model: %s\n", failures ? "FAILED" : "PASS");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int port = 18711, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "p:")) != -1) {
		if (c != 'p') {
			fprintf(stderr,
				"usage: rhinetdv_model [-p PORT] [SERVER_IP]\n");
			return 2;
		}
		port = atoi(optarg);
	}
	if (!group_from_env()) {
		fprintf(stderr,
			"rhinetdv_model: set RHINET_GROUPS=GROUP:TOKEN (a group granted to you: rhinet-group(8))\n");
		return 2;
	}
	return optind < argc ? client(argv[optind], port) : serve(port);
}
