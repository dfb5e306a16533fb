// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinet-odlimits: what on-demand MRs (remote pin-down) may cost
 * the host (tests/vm/scripts/pindown_limits.sh). Each mode prints
 * "rhinet-odlimits: PASS ..." or "rhinet-odlimits: FAIL ..." lines and
 * exits 0 only if every check passed.
 *
 *   reg-default   declares 8 GiB on-demand areas (PROT_NONE, never
 *                 touched) one after another: the kernel must refuse one
 *                 (ENOMEM) before its translation tables and page
 *                 bookkeeping take 1/8 of the memory (MemAvailable)
 *   reg-limit P   with rhinet.ko's max_on_demand_reg_pages = P: four
 *                 areas of P/4 pages are accepted, a fifth is refused
 *                 (ENOMEM), so is one of another process of the same user,
 *                 and after one deregistration there is room again
 *   memlock       as user nobody: a 1 MiB on-demand area, then
 *                 RLIMIT_MEMLOCK lowered to what the process has pinned
 *                 plus 256 KiB; a pd_req of 128 KiB of its own area
 *                 (loopback to its own endpoint) succeeds, a pd_req of the
 *                 whole MiB and a PUSH into it fail with NOT_PINNED, and
 *                 VmPin stays within the limit
 *   user-limit P  with max_pin_on_demand_pages = P (< 128): two processes
 *                 of user nobody each pd_req 64 pages of their own area;
 *                 the first succeeds, the second fails (NOT_PINNED)
 *                 because the limit is the user's, not each process's
 *   flood-server / flood-client SERVER_IP
 *                 node 1 declares 16 MiB + 16 pages; node 0 holds the
 *                 16 MiB once (pd_req), then 6000 times more in chunks of
 *                 1000 (each chunk followed by a pd_req of a fresh page,
 *                 which completes only once node 1's host has handled
 *                 every event before it), then floods exactly 6001
 *                 pd_releases of the 16 MiB without pause and releases the
 *                 fresh pages. Node 1's pinned_pages must go back to where
 *                 it was (no RELEASE lost) and its pin_overflows must have
 *                 grown (the flood went past the driver's event ring).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../providers/librhinet/examples/example_tcp.h"
#include "od_guest.h"

#define PAGE 4096ul
#define NOBODY 65534
#define WAIT_MS 60000
#define FLOOD_PORT 18741
#define FLOOD_AREA 13
#define FLOOD_PAGES 4096u /* held and released */
#define FLOOD_FENCES 16u /* pages after them, pinned one per chunk */
#define FLOOD_HOLDS 6000u
#define FLOOD_CHUNK 1000u

static long mem_available_kb(void)
{
	return od_proc_kb("/proc/meminfo", "MemAvailable");
}

/* ---- the device ---------------------------------------------------------- */

/* Waits up to WAIT_MS for one completion; 1 if it came. */
static int wait_one(struct od_node *n, struct rhinetdv_completion *c)
{
	const uint64_t deadline = od_now_ms() + WAIT_MS;

	while (od_now_ms() < deadline) {
		int k = rhinetdv_poll(n->ep, 1, c);

		if (k < 0) {
			od_say(false, "rhinetdv_poll: %s", strerror(errno));
			return 0;
		}
		if (k == 1)
			return 1;
	}
	return 0;
}

/* A pd_req (@request) or pd_release of [off, off + len) of area @area of
 * (@node, @endpoint), signaled; 0 or the error of posting.
 */
static int post_pin(struct od_node *n, bool request, uint32_t node,
		    uint32_t endpoint, uint32_t area, uint64_t off,
		    uint32_t len, uint64_t wr_id)
{
	struct rhinetdv_pin_attr a = {0};

	a.wr_id = wr_id;
	a.dest_node = (uint16_t)node;
	a.dest_endpoint = endpoint;
	a.area_id = area;
	a.offset = off;
	a.length = len;
	a.flags = RHINETDV_PIN_SIGNALED;
	return request ? rhinetdv_pd_req(n->ep, &a, sizeof(a))
		       : rhinetdv_pd_release(n->ep, &a, sizeof(a));
}

/* Posts one operation and waits for its completion into *@c; false when
 * it could not be posted or did not complete.
 */
static bool pin_sync(struct od_node *n, bool request, uint32_t node,
		     uint32_t endpoint, uint32_t area, uint64_t off,
		     uint32_t len, struct rhinetdv_completion *c)
{
	int err = post_pin(n, request, node, endpoint, area, off, len, 1);

	if (err) {
		od_say(false, "rhinetdv_pd_%s: %s", request ? "req" : "release",
		       strerror(err));
		return false;
	}
	if (!wait_one(n, c)) {
		od_say(false, "pd_%s of %u bytes: no completion within %d s",
		       request ? "req" : "release", len, WAIT_MS / 1000);
		return false;
	}
	return true;
}

/* ---- reg-default, reg-limit: what declaring costs ------------------------- */

#define REG_DEFAULT_BYTES (8ul << 30)
#define REG_DEFAULT_MAX 16

static int reg_default(void)
{
	struct ibv_mr *mr[REG_DEFAULT_MAX] = {0};
	void *mem[REG_DEFAULT_MAX] = {0};
	long total = od_proc_kb("/proc/meminfo", "MemTotal");
	long a0 = mem_available_kb(), taken = 0;
	int i, declared = 0, refused = 0;
	struct od_node n;

	if (od_open_node(&n, false))
		return 1;
	for (i = 0; i < REG_DEFAULT_MAX && taken <= total / 8; i++) {
		mem[i] = mmap(NULL, REG_DEFAULT_BYTES, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0);
		if (mem[i] == MAP_FAILED) {
			mem[i] = NULL;
			od_say(false, "mmap of 8 GiB: %s", strerror(errno));
			break;
		}
		mr[i] = od_reg_on_demand(&n, mem[i], REG_DEFAULT_BYTES,
					 100 + i);
		if (!mr[i]) {
			refused = errno;
			break;
		}
		declared++;
		taken = a0 - mem_available_kb();
		printf("rhinet-odlimits: %d on-demand areas of 8 GiB: "
		       "MemAvailable %ld kB less\n",
		       declared, taken);
	}
	taken = a0 - mem_available_kb();
	od_say(taken <= total / 8,
	       "reg-default: %d on-demand areas of 8 GiB declared, the kernel "
	       "took %ld kB for them (limit 1/8 of MemTotal %ld kB)",
	       declared, taken, total);
	od_say(refused == ENOMEM,
	       "reg-default: a declaration beyond the user's share is refused "
	       "(ENOMEM): %s",
	       refused ? strerror(refused) : "none was");
	for (i = 0; i < REG_DEFAULT_MAX; i++) {
		if (mr[i] && ibv_dereg_mr(mr[i]))
			od_say(false, "ibv_dereg_mr: %s", strerror(errno));
		if (mem[i])
			munmap(mem[i], REG_DEFAULT_BYTES);
	}
	return od_failures != 0;
}

/* In a child of the same user: one more area of @bytes; its errno or 0. */
static int reg_in_child(size_t bytes)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct od_node n;
		void *m;

		if (od_open_node(&n, false))
			_exit(100);
		m = mmap(NULL, bytes, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			_exit(101);
		_exit(od_reg_on_demand(&n, m, bytes, 200) ? 0 : errno);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int reg_limit(unsigned long pages)
{
	const size_t bytes = pages / 4 * PAGE;
	struct ibv_mr *mr[5] = {0};
	void *mem[5] = {0};
	struct od_node n;
	int err;

	if (pages < 4 || od_open_node(&n, false))
		return 1;
	for (int i = 0; i < 5; i++) {
		mem[i] = mmap(NULL, bytes, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0);
		if (mem[i] == MAP_FAILED) {
			od_say(false, "mmap: %s", strerror(errno));
			return 1;
		}
	}
	for (int i = 0; i < 4; i++) {
		mr[i] = od_reg_on_demand(&n, mem[i], bytes, 100 + i);
		od_say(mr[i],
		       "reg-limit: area %d of %lu pages (of %lu) declared%s%s",
		       i + 1, pages / 4, pages, mr[i] ? "" : ": ",
		       mr[i] ? "" : strerror(errno));
	}
	mr[4] = od_reg_on_demand(&n, mem[4], bytes, 104);
	err = mr[4] ? 0 : errno;
	od_say(err == ENOMEM,
	       "reg-limit: a fifth area beyond %lu pages refused: %s", pages,
	       err ? strerror(err) : "it was accepted");
	err = reg_in_child(bytes);
	od_say(err == ENOMEM,
	       "reg-limit: another process of the same user refused too: %s",
	       err > 0 ? strerror(err)
	       : err   ? "child failed"
		       : "it was accepted");
	if (mr[0] && !ibv_dereg_mr(mr[0])) {
		mr[0] = od_reg_on_demand(&n, mem[0], bytes, 100);
		od_say(mr[0],
		       "reg-limit: after a deregistration there is room "
		       "again%s%s",
		       mr[0] ? "" : ": ", mr[0] ? "" : strerror(errno));
	}
	for (int i = 0; i < 5; i++) {
		if (mr[i] && ibv_dereg_mr(mr[i]))
			od_say(false, "ibv_dereg_mr: %s", strerror(errno));
		munmap(mem[i], bytes);
	}
	return od_failures != 0;
}

/* ---- memlock, user-limit: what pinning may take ------------------------ */

/* Becomes user nobody with RLIMIT_MEMLOCK @bytes (no CAP_IPC_LOCK). */
static void become_nobody(rlim_t bytes)
{
	struct rlimit r = {bytes, bytes};

	if (setrlimit(RLIMIT_MEMLOCK, &r) || setgid(NOBODY) || setuid(NOBODY)) {
		od_say(false, "becoming nobody: %s", strerror(errno));
		exit(1);
	}
}

#define ML_BYTES (1ul << 20)
#define ML_SLACK (256ul << 10)
#define ML_AREA 11

static void memlock_child(void)
{
	struct rhinetdv_completion c;
	struct rhinetdv_xfer x = {0};
	struct ibv_mr *mr, *src_mr;
	long base, pin;
	struct rlimit r;
	uint8_t *mem, *src;
	struct od_node n;
	int err;

	become_nobody(16ul << 20);
	if (od_open_node(&n, true))
		exit(1);
	mem = mmap(NULL, ML_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = mmap(NULL, ML_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || src == MAP_FAILED) {
		od_say(false, "mmap: %s", strerror(errno));
		exit(1);
	}
	memset(src, 0x5a, ML_BYTES);
	src_mr = ibv_reg_mr(n.pd, src, ML_BYTES, IBV_ACCESS_LOCAL_WRITE);
	mr = od_reg_on_demand(&n, mem, ML_BYTES, ML_AREA);
	if (!src_mr || !mr) {
		od_say(false, "memlock: registrations: %s", strerror(errno));
		exit(1);
	}
	base = od_vmpin_kb();
	r.rlim_cur = r.rlim_max = (rlim_t)base * 1024 + ML_SLACK;
	if (base < 0 || setrlimit(RLIMIT_MEMLOCK, &r)) {
		od_say(false, "memlock: VmPin %ld kB, setrlimit: %s", base,
		       strerror(errno));
		exit(1);
	}
	printf("rhinet-odlimits: memlock: as uid %d, VmPin %ld kB, "
	       "RLIMIT_MEMLOCK now %lu kB\n",
	       (int)getuid(), base, (unsigned long)r.rlim_cur >> 10);

	/* Within the limit: granted. */
	if (pin_sync(&n, true, n.ep->node_id, n.ep->endpoint_id, ML_AREA, 0,
		     ML_SLACK / 2, &c))
		od_say(c.status == IBV_WC_SUCCESS,
		       "memlock: pd_req of %lu KiB of its own area: %s "
		       "syndrome "
		       "%u",
		       ML_SLACK / 2 >> 10, ibv_wc_status_str(c.status),
		       c.syndrome);
	pin = od_vmpin_kb();
	od_say(pin == base + (long)(ML_SLACK / 2 >> 10),
	       "memlock: VmPin %ld kB after it (%ld + %lu)", pin, base,
	       ML_SLACK / 2 >> 10);

	/* Beyond it: refused, the access completes with an error. */
	if (pin_sync(&n, true, n.ep->node_id, n.ep->endpoint_id, ML_AREA, 0,
		     ML_BYTES, &c))
		od_say(c.status != IBV_WC_SUCCESS &&
			       c.syndrome == RHINETDV_SYN_NOT_PINNED,
		       "memlock: pd_req of the whole %lu KiB beyond "
		       "RLIMIT_MEMLOCK: %s syndrome %u (NOT_PINNED is %u)",
		       ML_BYTES >> 10, ibv_wc_status_str(c.status), c.syndrome,
		       RHINETDV_SYN_NOT_PINNED);
	x.wr_id = 2;
	x.local_addr = src;
	x.length = ML_BYTES;
	x.lkey = src_mr->lkey;
	x.dest_node = (uint16_t)n.ep->node_id;
	x.dest_endpoint = n.ep->endpoint_id;
	x.area_id = ML_AREA;
	x.flags = RHINETDV_XFER_SIGNALED;
	err = rhinetdv_push(n.ep, &x);
	if (err)
		od_say(false, "rhinetdv_push: %s", strerror(err));
	else if (!wait_one(&n, &c))
		od_say(false, "memlock: PUSH: no completion within %d s",
		       WAIT_MS / 1000);
	else
		od_say(c.status != IBV_WC_SUCCESS &&
			       c.syndrome == RHINETDV_SYN_NOT_PINNED,
		       "memlock: PUSH of %lu KiB into its own area beyond "
		       "RLIMIT_MEMLOCK: %s syndrome %u",
		       ML_BYTES >> 10, ibv_wc_status_str(c.status), c.syndrome);
	pin = od_vmpin_kb();
	od_say(pin >= 0 && (unsigned long)pin * 1024 <= r.rlim_cur,
	       "memlock: VmPin %ld kB within RLIMIT_MEMLOCK %lu kB", pin,
	       (unsigned long)r.rlim_cur >> 10);
	if (pin_sync(&n, false, n.ep->node_id, n.ep->endpoint_id, ML_AREA, 0,
		     ML_BYTES, &c) &&
	    c.status != IBV_WC_SUCCESS)
		od_say(false, "memlock: pd_release: %s",
		       ibv_wc_status_str(c.status));
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	pin = od_vmpin_kb();
	od_say(pin == base,
	       "memlock: VmPin %ld kB after deregistering the area (%ld before "
	       "it "
	       "pinned)",
	       pin, base);
	if (ibv_dereg_mr(src_mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	exit(od_failures != 0);
}

/* Runs @fn in a child; its exit status (0: passed). */
static int in_child(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

#define UL_AREA 12
#define UL_PIN_PAGES 64u

/*
 * A process of user nobody that pd_reqs 64 pages of its own area, says
 * on @up whether that succeeded ('y'/'n'), and waits for a byte on @go
 * before it lets go.
 */
static void user_limit_proc(int up, int go)
{
	struct rhinetdv_completion c;
	struct ibv_mr *mr;
	struct od_node n;
	char b = 'n';
	void *mem;

	become_nobody(64ul << 20);
	if (od_open_node(&n, true))
		goto out;
	mem = mmap(NULL, 2 * UL_PIN_PAGES * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = mem == MAP_FAILED
		     ? NULL
		     : od_reg_on_demand(&n, mem, 2 * UL_PIN_PAGES * PAGE,
					UL_AREA);
	if (!mr) {
		od_say(false, "user-limit: area: %s", strerror(errno));
		goto out;
	}
	if (pin_sync(&n, true, n.ep->node_id, n.ep->endpoint_id, UL_AREA, 0,
		     UL_PIN_PAGES * PAGE, &c)) {
		printf("rhinet-odlimits: user-limit: pid %d: pd_req of %u "
		       "pages: %s syndrome %u, VmPin %ld kB\n",
		       (int)getpid(), UL_PIN_PAGES, ibv_wc_status_str(c.status),
		       c.syndrome, od_vmpin_kb());
		fflush(stdout);
		b = c.status == IBV_WC_SUCCESS ? 'y' : 'n';
	}
out:
	if (write(up, &b, 1) != 1 || read(go, &b, 1) != 1)
		_exit(1);
	_exit(0);
}

static int user_limit(unsigned long limit)
{
	int up[2], go[2], status;
	char a = 0, b = 0;
	pid_t pa, pb;

	if (limit >= 2 * UL_PIN_PAGES || limit < UL_PIN_PAGES || pipe(up) ||
	    pipe(go))
		return 1;
	pa = fork();
	if (pa == 0)
		user_limit_proc(up[1], go[0]);
	if (pa < 0 || read(up[0], &a, 1) != 1)
		return 1;
	pb = fork();
	if (pb == 0)
		user_limit_proc(up[1], go[0]);
	if (pb < 0 || read(up[0], &b, 1) != 1)
		return 1;
	od_say(a == 'y',
	       "user-limit: the first process of user nobody pinned %u pages "
	       "(limit %lu per user)",
	       UL_PIN_PAGES, limit);
	od_say(b == 'n',
	       "user-limit: a second process of the same user was refused "
	       "another "
	       "%u pages (%s)",
	       UL_PIN_PAGES, b == 'y' ? "it pinned them" : "refused");
	if (write(go[1], "gg", 2) != 2)
		return 1;
	waitpid(pa, &status, 0);
	waitpid(pb, &status, 0);
	return od_failures != 0;
}

/* ---- flood: no pin-down event may be lost ------------------------------ */

struct flood_info {
	uint32_t node, endpoint;
};

static int sock = -1;

static bool step(uint32_t s)
{
	uint32_t peer;

	if (!example_step(sock, s, &peer))
		return true;
	od_say(false, "flood: lost step with the peer at %u (peer %u)", s,
	       peer);
	return false;
}

static int flood_server(void)
{
	const size_t len = (size_t)(FLOOD_PAGES + FLOOD_FENCES) * PAGE;
	struct flood_info me, peer;
	long p0, o0, vp0, p, o;
	struct ibv_mr *mr;
	uint64_t deadline;
	struct od_node n;
	void *mem;

	sock = example_tcp_open(NULL, FLOOD_PORT, 0);
	if (sock < 0 || od_open_node(&n, true))
		return 1;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = mem == MAP_FAILED ? NULL
			       : od_reg_on_demand(&n, mem, len, FLOOD_AREA);
	if (!mr) {
		od_say(false, "flood: area: %s", strerror(errno));
		return 1;
	}
	p0 = od_port_stat(&n, "pinned_pages");
	o0 = od_port_stat(&n, "pin_overflows");
	vp0 = od_vmpin_kb(); /* the endpoint's queues */
	me.node = n.ep->node_id;
	me.endpoint = n.ep->endpoint_id;
	if (example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false))
		return 1;
	if (!step(1)) /* the client holds the area */
		return 1;
	/* ib_core shows the counters of its last read for their lifespan
	 * (10 ms, in jiffies): at once, p0's snapshot may come back.
	 */
	usleep(50000);
	p = od_port_stat(&n, "pinned_pages");
	od_say(p == p0 + FLOOD_PAGES,
	       "flood: the client's pd_req pinned %ld pages (%u)", p - p0,
	       FLOOD_PAGES);
	if (!step(2)) /* held 6000 times more, released 6001 times */
		return 1;
	deadline = od_now_ms() + 2 * WAIT_MS;
	while ((p = od_port_stat(&n, "pinned_pages")) != p0 &&
	       od_now_ms() < deadline)
		usleep(100000);
	o = od_port_stat(&n, "pin_overflows");
	printf("rhinet-odlimits: flood: %u holds and %u releases of %u pages: "
	       "pinned_pages %ld -> %ld, pin_overflows %ld -> %ld, "
	       "pin_releases %ld, VmPin %ld kB\n",
	       FLOOD_HOLDS + 1, FLOOD_HOLDS + 1, FLOOD_PAGES, p0, p, o0, o,
	       od_port_stat(&n, "pin_releases"), od_vmpin_kb());
	od_say(o > o0,
	       "flood: the flood went past the driver's event ring "
	       "(pin_overflows "
	       "+%ld)",
	       o - o0);
	od_say(p == p0,
	       "flood: after every release no page stays pinned (pinned_pages "
	       "%ld, %ld before)",
	       p, p0);
	od_say(od_vmpin_kb() == vp0,
	       "flood: the target's VmPin is %ld kB (%ld before)",
	       od_vmpin_kb(), vp0);
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	step(3);
	return od_failures != 0;
}

/* Posts @count pd_req or pd_release of the held pages as fast as the
 * endpoint takes them; every one must succeed.
 */
static bool flood_post(struct od_node *n, const struct flood_info *peer,
		       bool request, uint32_t count)
{
	struct rhinetdv_completion c[64];
	uint32_t posted = 0, done = 0;
	uint64_t deadline = od_now_ms() + 4 * WAIT_MS;

	while (done < count) {
		while (posted < count) {
			int err = post_pin(n, request, peer->node,
					   peer->endpoint, FLOOD_AREA, 0,
					   FLOOD_PAGES * PAGE, posted);

			if (err == ENOMEM)
				break;
			if (err) {
				od_say(false, "flood: rhinetdv_pd_%s: %s",
				       request ? "req" : "release",
				       strerror(err));
				return false;
			}
			posted++;
		}
		int k = rhinetdv_poll(n->ep, 64, c);

		if (k < 0) {
			od_say(false, "rhinetdv_poll: %s", strerror(errno));
			return false;
		}
		for (int i = 0; i < k; i++)
			if (c[i].status != IBV_WC_SUCCESS) {
				od_say(false,
				       "flood: pd_%s %llu: %s syndrome %u",
				       request ? "req" : "release",
				       (unsigned long long)c[i].wr_id,
				       ibv_wc_status_str(c[i].status),
				       c[i].syndrome);
				return false;
			}
		done += k;
		if (od_now_ms() > deadline) {
			od_say(false, "flood: %u of %u pd_%s done in %d s",
			       done, count, request ? "req" : "release",
			       4 * WAIT_MS / 1000);
			return false;
		}
	}
	return true;
}

static int flood_client(const char *server)
{
	struct flood_info me, peer;
	struct rhinetdv_completion c;
	uint64_t t0;
	struct od_node n;
	bool ok;

	sock = example_tcp_open(server, FLOOD_PORT, 120);
	if (sock < 0 || od_open_node(&n, true))
		return 1;
	me.node = n.ep->node_id;
	me.endpoint = n.ep->endpoint_id;
	if (example_full_io(sock, &me, sizeof(me), true) ||
	    example_full_io(sock, &peer, sizeof(peer), false))
		return 1;
	ok = pin_sync(&n, true, peer.node, peer.endpoint, FLOOD_AREA, 0,
		      FLOOD_PAGES * PAGE, &c) &&
	     c.status == IBV_WC_SUCCESS;
	od_say(ok, "flood: pd_req of %u pages", FLOOD_PAGES);
	if (!step(1))
		return 1;
	/* Paced: the target's host catches up after every chunk (the fence
	 * page is pinned, and the pd_req answered, only after its host has
	 * handled every event before it).
	 */
	for (uint32_t k = 0; ok && k < FLOOD_HOLDS / FLOOD_CHUNK; k++) {
		ok = flood_post(&n, &peer, true, FLOOD_CHUNK) &&
		     pin_sync(&n, true, peer.node, peer.endpoint, FLOOD_AREA,
			      (uint64_t)(FLOOD_PAGES + k) * PAGE, PAGE, &c) &&
		     c.status == IBV_WC_SUCCESS;
	}
	od_say(ok, "flood: %u more pd_reqs of the %u pages, paced", FLOOD_HOLDS,
	       FLOOD_PAGES);
	/* Without a pause: exactly as many releases as holds. */
	t0 = od_now_ms();
	ok = ok && flood_post(&n, &peer, false, FLOOD_HOLDS + 1);
	od_say(ok, "flood: %u pd_releases of the %u pages in %llu ms",
	       FLOOD_HOLDS + 1, FLOOD_PAGES,
	       (unsigned long long)(od_now_ms() - t0));
	/* The fence pages (first-touch pinned, held once) go too. */
	ok = ok &&
	     pin_sync(&n, false, peer.node, peer.endpoint, FLOOD_AREA,
		      (uint64_t)FLOOD_PAGES * PAGE, FLOOD_FENCES * PAGE, &c) &&
	     c.status == IBV_WC_SUCCESS;
	od_say(ok, "flood: pd_release of the fence pages");
	if (!step(2) || !step(3))
		return 1;
	return od_failures != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int ret;

	od_init("rhinet-odlimits");
	if (!strcmp(mode, "reg-default"))
		ret = reg_default();
	else if (!strcmp(mode, "reg-limit") && argc > 2)
		ret = reg_limit(strtoul(argv[2], NULL, 0));
	else if (!strcmp(mode, "memlock"))
		ret = in_child(memlock_child);
	else if (!strcmp(mode, "user-limit") && argc > 2)
		ret = user_limit(strtoul(argv[2], NULL, 0));
	else if (!strcmp(mode, "flood-server"))
		ret = flood_server();
	else if (!strcmp(mode, "flood-client") && argc > 2)
		ret = flood_client(argv[2]);
	else {
		fprintf(stderr, "usage: rhinet-odlimits reg-default | "
				"reg-limit PAGES | memlock | user-limit PAGES "
				"| flood-server | flood-client SERVER_IP\n");
		return 2;
	}
	printf("rhinet-odlimits: %s: %s\n", mode, ret ? "FAIL" : "PASS");
	return ret ? 1 : 0;
}
