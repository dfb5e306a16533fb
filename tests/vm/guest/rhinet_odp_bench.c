// SPDX-License-Identifier: BSD-2-Clause
/*
 * What on-demand memory costs, through plain verbs between two nodes, each
 * figure beside its pinned reference measured in the same run. A
 * benchmark: it prints one table and asserts no time; it fails only if a
 * transfer fails, its bytes differ or a page stays pinned.
 *
 *  1. First touch: the client (node 0) WRITEs 1 MiB into memory of the
 *     server (node 1) registered with plain ibv_reg_mr (pinned), into
 *     never-touched memory registered with IBV_ACCESS_ON_DEMAND (cold),
 *     the same again (warm), and READs it back; the server's pin events,
 *     pin requests, pinned pages and rhinet interrupts it moved.
 *  2. Invalidation: the server drops its pinned 1 MiB of the on-demand MR
 *     with madvise(MADV_DONTNEED), beside the same on touched memory no MR
 *     covers; the client WRITEs again (faults anew); the server munmap()s
 *     the range, beside munmap of unregistered memory.
 *  3. A registration cache's workload on the client: N times allocate
 *     (mmap) 64 KiB, fill it, register it, SEND it, deregister, free it,
 *     at a new address each time (the old mappings stay) or at the same
 *     one (munmap then mmap): with plain ibv_reg_mr, with an on-demand MR
 *     per buffer, and with one on-demand MR over the whole arena that is
 *     registered once (what ODP lets a cache do: the MMU notifier drops
 *     the pages that munmap frees, the next SEND pins the new ones).
 *
 *   rhinet-odp-bench [-d DEVICE] [-g GID_INDEX] [-p PORT]          server
 *   rhinet-odp-bench [-d DEVICE] [-g GID_INDEX] [-p PORT] SERVER   client
 *
 * RHINET_ODP_BENCH_ITERS (environment, client) sets N (default 32).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_guest.h"

#define MIB (1u << 20)
#define PAGE 4096u
#define MSG (64u * 1024) /* one registration cache buffer */
#define RECVS 16u /* receives the server keeps posted */
#define WARM_RUNS 4u /* warm and pinned WRITEs, averaged */
#define MAX_ITERS 1024u

static const int kOdpAccess = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
static const int kPinnedAccess = IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;

/* The server's counters around one step of the client. */
enum {
	C_EVENTS,
	C_REQUESTS,
	C_PINNED,
	C_INVAL,
	C_IRQS,
	C_N
};
static const char *const kCounter[C_N] = {"pin_events", "pin_requests",
					  "pinned_pages", "pin_invalidations",
					  "irqs"};

struct snap {
	int64_t v[C_N];
};

/* Registration cache variants (client). */
enum {
	V_PLAIN,
	V_ODP_EACH,
	V_ODP_ONCE,
	V_N
};
static const char *const kVariant[V_N] = {
	"ibv_reg_mr per buffer", "ODP MR per buffer", "one ODP MR (cache)"};

/* The server's address book and, at the end, what it measured. */
struct server_info {
	uint32_t qpn;
	uint8_t gid[16];
	uint64_t pinned_addr, odp_addr;
	uint32_t pinned_rkey, odp_rkey;
};

struct server_figures {
	struct snap pinned, cold, warm, refault;
	double dontneed_odp_us, dontneed_plain_us, munmap_odp_us,
		munmap_plain_us;
	struct snap dontneed, munmap;
	int64_t pinned_left;
};

/* Interrupts of rhinet's vectors so far, all CPUs (/proc/interrupts). */
static int64_t rhinet_irqs(void)
{
	char line[1024];
	int64_t sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, "rhinet"))
			continue;
		for (p++;;) {
			char *end;
			long long n = strtoll(p, &end, 10);

			if (end == p)
				break;
			sum += n;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

static struct snap take(const struct rc_node *n)
{
	struct snap s;

	for (int i = 0; i < C_IRQS; i++)
		s.v[i] = (int64_t)ib_hw_counter(n->dev, kCounter[i]);
	s.v[C_IRQS] = rhinet_irqs();
	return s;
}

static struct snap delta(struct snap a, struct snap b)
{
	struct snap d;

	for (int i = 0; i < C_N; i++)
		d.v[i] = b.v[i] - a.v[i];
	return d;
}

static double us_since(double t0)
{
	return (now() - t0) * 1e6;
}

/* ---- server -------------------------------------------------------------- */

/* Counts the client's step between two syncs into @d. */
static void around_peer_step(struct rc_node *n, int fd, struct snap *d)
{
	struct snap a = take(n);

	sync_peer(fd); /* go */
	sync_peer(fd); /* done */
	*d = delta(a, take(n));
}

/* Keeps RECVS receives posted into the pinned buffer's second MiB until
 * @total SENDs arrived.
 */
static void serve_sends(struct rc_node *n, uint32_t total)
{
	for (uint32_t i = 0; i < total + RECVS; i++) {
		struct ibv_wc wc;

		if (i >= RECVS) {
			bool ok = poll_cq_for(n->cq, &wc, 1, 60000) == 1 &&
				  wc.status == IBV_WC_SUCCESS;

			check(ok, "SEND %u of the workload did not arrive",
			      i - RECVS);
			if (!ok)
				return;
		}
		if (i < total) {
			uint8_t *slot = n->buf + MIB + (i % RECVS) * MSG;
			struct ibv_sge sge = {(uintptr_t)slot, MSG,
					      n->mr->lkey};
			struct ibv_recv_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1};
			struct ibv_recv_wr *bad;

			if (ibv_post_recv(n->qp, &wr, &bad))
				die("post_recv");
		}
	}
}

static void server(struct rc_node *n, int fd)
{
	uint8_t *odp = map_untouched(MIB), *plain = map_untouched(MIB);
	struct server_info me = {.qpn = n->qp->qp_num}, peer;
	struct server_figures f;
	int64_t pinned0 = (int64_t)ib_hw_counter(n->dev, "pinned_pages");
	struct ibv_mr *odp_mr = ibv_reg_mr(n->pd, odp, MIB, kOdpAccess);
	uint32_t total;
	struct snap a;
	double t0;

	if (!odp_mr)
		die("ibv_reg_mr(IBV_ACCESS_ON_DEMAND)");
	memset(&f, 0, sizeof(f));
	local_gid(n->ctx, n->gid_index, me.gid);
	me.pinned_addr = (uintptr_t)n->buf;
	me.pinned_rkey = n->mr->rkey;
	me.odp_addr = (uintptr_t)odp;
	me.odp_rkey = odp_mr->rkey;
	xfer(fd, &me, &peer, sizeof(me));
	rc_connect(n->qp, "RC", peer.qpn, peer.gid, n->gid_index, 4);
	sync_peer(fd); /* connected */

	around_peer_step(n, fd, &f.pinned);
	around_peer_step(n, fd, &f.cold);
	check(pattern_differs(odp, MIB, 1) < 0,
	      "the cold WRITE's bytes differ at %ld",
	      pattern_differs(odp, MIB, 1));
	around_peer_step(n, fd, &f.warm);

	/* Invalidation round trip: the MR's 256 pinned pages, then touched
	 * memory no MR covers.
	 */
	memset(plain, 1, MIB);
	a = take(n);
	t0 = now();
	check(!madvise(odp, MIB, MADV_DONTNEED), "madvise(MADV_DONTNEED)");
	f.dontneed_odp_us = us_since(t0);
	f.dontneed = delta(a, take(n));
	t0 = now();
	check(!madvise(plain, MIB, MADV_DONTNEED), "madvise(MADV_DONTNEED)");
	f.dontneed_plain_us = us_since(t0);

	around_peer_step(n, fd, &f.refault);
	check(pattern_differs(odp, MIB, 2) < 0,
	      "the WRITE after the invalidation differs at %ld",
	      pattern_differs(odp, MIB, 2));

	memset(plain, 1, MIB);
	a = take(n);
	t0 = now();
	check(!munmap(odp, MIB), "munmap");
	f.munmap_odp_us = us_since(t0);
	f.munmap = delta(a, take(n));
	t0 = now();
	check(!munmap(plain, MIB), "munmap");
	f.munmap_plain_us = us_since(t0);
	check(!ibv_dereg_mr(odp_mr), "dereg the on-demand MR");

	/* The client's registration cache workload SENDs to us. */
	xfer(fd, &total, &total, sizeof(total));
	serve_sends(n, total);
	f.pinned_left =
		(int64_t)ib_hw_counter(n->dev, "pinned_pages") - pinned0;
	check(!f.pinned_left, "%" PRId64 " pages stay pinned", f.pinned_left);
	xfer(fd, &f, &f, sizeof(f));
}

/* ---- client -------------------------------------------------------------- */

/* One signalled WRITE (or READ) of 1 MiB; its time in microseconds. */
static double rdma_mib(struct rc_node *n, enum ibv_wr_opcode op, uint64_t laddr,
		       uint64_t raddr, uint32_t rkey, const char *what)
{
	struct ibv_wc wc;
	double t0 = now();

	if (post_rdma(n->qp, op, 1, laddr, n->mr->lkey, raddr, rkey, MIB))
		die("post WRITE/READ");
	check(poll_cq_for(n->cq, &wc, 1, 60000) == 1 &&
		      wc.status == IBV_WC_SUCCESS,
	      "%s did not complete (status %d)", what, wc.status);
	return us_since(t0);
}

/* The mean of WARM_RUNS WRITEs of 1 MiB. */
static double write_mean(struct rc_node *n, uint64_t raddr, uint32_t rkey,
			 const char *what)
{
	double sum = 0;

	for (unsigned int i = 0; i < WARM_RUNS; i++)
		sum += rdma_mib(n, IBV_WR_RDMA_WRITE, (uintptr_t)n->buf, raddr,
				rkey, what);
	return sum / WARM_RUNS;
}

static int send_from(struct rc_node *n, void *p, uint32_t lkey)
{
	struct ibv_wc wc;

	if (post_rdma(n->qp, IBV_WR_SEND, 7, (uintptr_t)p, lkey, 0, 0, MSG))
		die("post SEND");
	if (poll_cq_for(n->cq, &wc, 1, 60000) != 1)
		return -1;
	return wc.status;
}

struct workload {
	double us; /* per iteration */
	struct snap d;
};

/*
 * @iters rounds of allocate, fill, register, SEND, deregister, free, in
 * variant @v; @reuse: at the same address each time, else at a new one
 * (the arena's next slot; the previous mappings are dropped at the end).
 */
static struct workload cache_run(struct rc_node *n, int v, bool reuse,
				 uint32_t iters)
{
	size_t arena_len = (size_t)iters * MSG;
	/* Address space only, reserved so that nothing else lands there:
	 * every buffer maps its part anew.
	 */
	uint8_t *arena = mmap(NULL, arena_len, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *once = NULL;
	struct workload w;
	struct snap a;
	double t0;

	if (arena == MAP_FAILED)
		die("mmap arena");
	if (v == V_ODP_ONCE) {
		once = ibv_reg_mr(n->pd, arena, arena_len, kOdpAccess);
		if (!once)
			die("ibv_reg_mr(arena, IBV_ACCESS_ON_DEMAND)");
	}
	a = take(n);
	t0 = now();
	for (uint32_t i = 0; i < iters; i++) {
		uint8_t *want = arena + (reuse ? 0 : (size_t)i * MSG);
		uint8_t *p =
			mmap(want, MSG, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		struct ibv_mr *mr = once;
		int r;

		if (p == MAP_FAILED)
			die("mmap buffer");
		pattern_fill(p, MSG, i + 10);
		if (!once) {
			mr = ibv_reg_mr(n->pd, p, MSG,
					v == V_PLAIN ? kPinnedAccess
						     : kOdpAccess);
			if (!mr)
				die("ibv_reg_mr(buffer)");
		}
		r = send_from(n, p, mr->lkey);
		check(r == IBV_WC_SUCCESS, "%s: SEND %u: status %d",
		      kVariant[v], i, r);
		if (!once)
			check(!ibv_dereg_mr(mr), "dereg buffer");
		/* Freed: the range stays reserved for the next one. */
		if (mmap(p, MSG, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			die("mmap PROT_NONE");
	}
	w.us = us_since(t0) / iters;
	w.d = delta(a, take(n));
	if (once)
		check(!ibv_dereg_mr(once), "dereg the arena's MR");
	munmap(arena, arena_len);
	return w;
}

static void print_row(const char *what, double us, const struct snap *d)
{
	if (us < 0)
		printf("  %-44s %10s", what, "-");
	else
		printf("  %-44s %10.0f", what, us);
	for (int i = 0; i < C_N; i++) {
		if (d)
			printf(" %9" PRId64, d->v[i]);
		else
			printf(" %9s", "-");
	}
	printf("\n");
}

static void print_header(const char *title, const char *unit)
{
	printf("%s\n  %-44s %10s", title, "", unit);
	for (int i = 0; i < C_N; i++)
		printf(" %9.9s", i == C_INVAL ? "invalid." : kCounter[i]);
	printf("\n");
}

static void client(struct rc_node *n, int fd)
{
	struct server_info me = {.qpn = n->qp->qp_num}, peer;
	struct server_figures f;
	struct workload w[V_N][2];
	char title[128];
	const char *env = getenv("RHINET_ODP_BENCH_ITERS");
	uint32_t iters = env ? (uint32_t)atoi(env) : 32, total;
	double t_pinned, t_cold, t_warm, t_read, t_refault;
	int64_t pinned0 = (int64_t)ib_hw_counter(n->dev, "pinned_pages");

	if (!iters || iters > MAX_ITERS) {
		fprintf(stderr, "RHINET_ODP_BENCH_ITERS: 1..%u\n", MAX_ITERS);
		exit(2);
	}
	local_gid(n->ctx, n->gid_index, me.gid);
	xfer(fd, &me, &peer, sizeof(me));
	rc_connect(n->qp, "RC", peer.qpn, peer.gid, n->gid_index, 4);
	sync_peer(fd); /* connected */

	pattern_fill(n->buf, MIB, 1);
	sync_peer(fd);
	t_pinned = write_mean(n, peer.pinned_addr, peer.pinned_rkey,
			      "WRITE into pinned memory");
	sync_peer(fd);
	sync_peer(fd);
	t_cold = rdma_mib(n, IBV_WR_RDMA_WRITE, (uintptr_t)n->buf,
			  peer.odp_addr, peer.odp_rkey, "cold WRITE");
	sync_peer(fd);
	sync_peer(fd);
	t_warm = write_mean(n, peer.odp_addr, peer.odp_rkey, "warm WRITE");
	memset(n->buf + MIB, 0, MIB);
	t_read = rdma_mib(n, IBV_WR_RDMA_READ, (uintptr_t)n->buf + MIB,
			  peer.odp_addr, peer.odp_rkey, "warm READ");
	check(pattern_differs(n->buf + MIB, MIB, 1) < 0,
	      "the READ back differs at %ld",
	      pattern_differs(n->buf + MIB, MIB, 1));
	sync_peer(fd);

	pattern_fill(n->buf, MIB, 2);
	sync_peer(fd); /* the server invalidated */
	t_refault =
		rdma_mib(n, IBV_WR_RDMA_WRITE, (uintptr_t)n->buf, peer.odp_addr,
			 peer.odp_rkey, "WRITE after invalidation");
	sync_peer(fd);

	total = iters * V_N * 2;
	xfer(fd, &total, &total, sizeof(total));
	for (int v = 0; v < V_N; v++)
		for (int reuse = 0; reuse < 2; reuse++)
			w[v][reuse] = cache_run(n, v, reuse, iters);
	xfer(fd, &f, &f, sizeof(f));
	check(ib_hw_counter(n->dev, "pinned_pages") == (uint64_t)pinned0,
	      "client pages stay pinned");

	printf("\nrhinet-odp-bench: what on-demand memory costs "
	       "(counters: the node that pins)\n");
	print_header("1 MiB WRITE into node 1 (server's counters)", "us");
	print_row("into pinned memory (ibv_reg_mr), mean of 4", t_pinned,
		  &f.pinned);
	print_row("into untouched ODP memory (first touch)", t_cold, &f.cold);
	print_row("into the same ODP memory, warm, mean of 4", t_warm, NULL);
	print_row("  (counters of those warm WRITEs and the READ)", -1,
		  &f.warm);
	print_row("READ back of the warm ODP memory", t_read, NULL);
	print_row("after MADV_DONTNEED of it (faults again)", t_refault,
		  &f.refault);
	print_header("invalidation of 1 MiB on node 1 (touched)", "us");
	print_row("madvise(MADV_DONTNEED), ODP MR pinned", f.dontneed_odp_us,
		  &f.dontneed);
	print_row("madvise(MADV_DONTNEED), no MR", f.dontneed_plain_us, NULL);
	print_row("munmap, ODP MR pinned", f.munmap_odp_us, &f.munmap);
	print_row("munmap, no MR", f.munmap_plain_us, NULL);
	snprintf(title, sizeof(title),
		 "registration cache on node 0, %u x (mmap 64 KiB, fill, "
		 "register, SEND, deregister, free)",
		 iters);
	print_header(title, "us/iter");
	for (int v = 0; v < V_N; v++)
		for (int reuse = 0; reuse < 2; reuse++) {
			char what[96];

			snprintf(what, sizeof(what), "%s, %s", kVariant[v],
				 reuse ? "same address" : "new address");
			print_row(what, w[v][reuse].us, &w[v][reuse].d);
		}
	printf("irqs: all of rhinet's vectors, the TCP side channel's (eth0) "
	       "too: compare with the pinned row\n");
	printf("pages left pinned: node 1 %" PRId64 ", node 0 %" PRId64 "\n",
	       f.pinned_left,
	       (int64_t)ib_hw_counter(n->dev, "pinned_pages") - pinned0);
}

int main(int argc, char **argv)
{
	struct rc_node n = {.dev = "rhinet0"};
	const struct ibv_qp_cap cap = {.max_send_wr = 8,
				       .max_recv_wr = RECVS,
				       .max_send_sge = 1,
				       .max_recv_sge = 1};
	int port = 18531, fd;
	const char *srv;

	program = "rhinet-odp-bench";
	srv = peer_args(argc, argv, &n.dev, &n.gid_index, &port);
	rc_node_open(&n, 2 * MIB, 2 * RECVS, cap);
	fd = tcp_connect(srv, port);
	if (srv)
		client(&n, fd);
	else
		server(&n, fd);
	close(fd);
	return rc_node_close(&n);
}
