// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinet-odremap: on-demand MRs (remote pin-down) follow the process's
 * mappings (tests/vm/scripts/pindown_invalidate.sh). The writer is the
 * process's own endpoint (a loopback PUSH into its own area goes through
 * the NIC's first-touch and pin path as a peer's does). The area's first
 * mapping is a memfd mapped twice: the second mapping ("old view") shows
 * whether the NIC still writes the pages after the process replaced them.
 * Each mode prints "rhinet-odremap: PASS ..." or "... FAIL ..." lines and
 * exits 0 only if every check passed.
 *
 *   remap   PUSH (first touch pins), munmap: pinned_pages back to its
 *           start, pin_invalidations grown; a PUSH into the unmapped range
 *           fails NOT_PINNED; mmap(MAP_FIXED) new anonymous pages, PUSH:
 *           the bytes are in the new mapping, the old view keeps the
 *           first PUSH's; after deregistration pinned_pages and VmPin are
 *           back where they were
 *   stream  a stream of PUSHes, each its own byte; the range is mapped
 *           anew (MAP_FIXED) while they are in flight: every PUSH
 *           succeeds, the old view does not change after the mmap
 *           returned, the new mapping ends with the last PUSH's byte
 *   pullstream  a stream of PULLs out of the area while it is mapped anew
 *           (new pages, new bytes): every PULL succeeds, those posted
 *           after the remap read only the new bytes, none reads a byte
 *           neither mapping held, nothing stays pinned
 *   loop    a thread maps the range anew 200 times while PUSHes go on:
 *           every PUSH succeeds, the old view is never written after the
 *           first replacement, a last PUSH lands in the current mapping,
 *           nothing stays pinned
 *   fork    private anonymous memory, pinned by a PUSH; fork(); a PUSH
 *           after the fork lands in the parent's mapping (its pages are
 *           faulted again: fork write-protected them), the child still
 *           sees what it had at the fork
 *   exit    a child declares 1 MiB, posts PUSHes that fault and exits at
 *           once: its pinned pages all come back (pinned_pages)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "od_guest.h"

#define PAGE 4096ul
#define AREA_PAGES 16u
#define AREA_BYTES (AREA_PAGES * PAGE)
#define AREA_ID 21
#define WAIT_MS 60000

/* A port statistic, read fresh: ib_core hands out its last read for
 * 10 ms.
 */
static long fresh_stat(const struct od_node *n, const char *name)
{
	usleep(30000);
	return od_port_stat(n, name);
}

/* Waits until pinned_pages is @want (work may still be queued); its value. */
static long pinned_settles(const struct od_node *n, long want)
{
	const uint64_t deadline = od_now_ms() + WAIT_MS;
	long p;

	while ((p = fresh_stat(n, "pinned_pages")) != want &&
	       od_now_ms() < deadline)
		usleep(100000);
	return p;
}

/* Posts a PUSH (@pull: a PULL) of @len bytes between @local (lkey) and the
 * node's own area at @off; 0 or the error of posting.
 */
static int post_xfer(struct od_node *n, bool pull, const void *local,
		     uint32_t lkey, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct rhinetdv_xfer x = {0};

	x.wr_id = wr_id;
	x.local_addr = (void *)local;
	x.length = len;
	x.lkey = lkey;
	x.dest_node = (uint16_t)n->ep->node_id;
	x.dest_endpoint = n->ep->endpoint_id;
	x.area_id = AREA_ID;
	x.offset = off;
	x.flags = RHINETDV_XFER_SIGNALED;
	return pull ? rhinetdv_pull(n->ep, &x) : rhinetdv_push(n->ep, &x);
}

static int post_push(struct od_node *n, const void *src, uint32_t lkey,
		     uint64_t off, uint32_t len, uint64_t wr_id)
{
	return post_xfer(n, false, src, lkey, off, len, wr_id);
}

/* One PUSH of the whole area, waited for; its completion in *@c. */
static bool push_sync(struct od_node *n, const void *src, uint32_t lkey,
		      struct rhinetdv_completion *c)
{
	const uint64_t deadline = od_now_ms() + WAIT_MS;
	int err = post_push(n, src, lkey, 0, AREA_BYTES, 1);

	if (err) {
		od_say(false, "rhinetdv_push: %s", strerror(err));
		return false;
	}
	while (od_now_ms() < deadline) {
		int k = rhinetdv_poll(n->ep, 1, c);

		if (k < 0) {
			od_say(false, "rhinetdv_poll: %s", strerror(errno));
			return false;
		}
		if (k == 1)
			return true;
	}
	od_say(false, "PUSH: no completion within %d s", WAIT_MS / 1000);
	return false;
}

/* The first byte of @p that is not @v, or -1. */
static long differs(const uint8_t *p, uint8_t v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

/* The two views of one memfd of @len bytes, read-write and shared. */
static bool memfd_views(size_t len, uint8_t **mem, uint8_t **old)
{
	int fd = memfd_create("rhinet-odremap", 0);

	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		od_say(false, "memfd: %s", strerror(errno));
		return false;
	}
	*mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*old = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (*mem == MAP_FAILED || *old == MAP_FAILED) {
		od_say(false, "mmap of the memfd: %s", strerror(errno));
		return false;
	}
	return true;
}

/* New anonymous pages at @addr, in place of what was there. */
static bool map_anew(void *addr, size_t len)
{
	void *m = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		od_say(false, "mmap(MAP_FIXED): %s", strerror(errno));
	return m != MAP_FAILED;
}

/* A source buffer of @len bytes registered for local use. */
static uint8_t *source(struct od_node *n, size_t len, struct ibv_mr **mr)
{
	uint8_t *src = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	*mr = src == MAP_FAILED
		      ? NULL
		      : ibv_reg_mr(n->pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	if (!*mr) {
		od_say(false, "source buffer: %s", strerror(errno));
		return NULL;
	}
	return src;
}

/* ---- remap ---------------------------------------------------------------- */

static int remap(void)
{
	struct rhinetdv_completion c;
	struct ibv_mr *mr, *src_mr;
	uint8_t *mem, *old, *src;
	long p0, vp0, inv0, p;
	struct od_node n;

	if (od_open_node(&n, true) || !memfd_views(AREA_BYTES, &mem, &old))
		return 1;
	src = source(&n, AREA_BYTES, &src_mr);
	if (!src)
		return 1;
	p0 = fresh_stat(&n, "pinned_pages");
	inv0 = fresh_stat(&n, "pin_invalidations");
	vp0 = od_vmpin_kb();
	mr = od_reg_on_demand(&n, mem, AREA_BYTES, AREA_ID);
	if (!mr) {
		od_say(false, "remap: on-demand area: %s", strerror(errno));
		return 1;
	}
	memset(src, 0x11, AREA_BYTES);
	if (push_sync(&n, src, src_mr->lkey, &c))
		od_say(c.status == IBV_WC_SUCCESS &&
			       differs(mem, 0x11, AREA_BYTES) < 0,
		       "remap: first PUSH lands in the first mapping: %s, byte "
		       "%ld "
		       "differs",
		       ibv_wc_status_str(c.status),
		       differs(mem, 0x11, AREA_BYTES));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0 + AREA_PAGES,
	       "remap: pinned_pages %ld after it (%ld + %u)", p, p0,
	       AREA_PAGES);

	if (munmap(mem, AREA_BYTES))
		od_say(false, "munmap: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0,
	       "remap: munmap unpinned the pages (pinned_pages %ld, %ld "
	       "before the area)",
	       p, p0);
	p = fresh_stat(&n, "pin_invalidations");
	od_say(inv0 >= 0 && p > inv0, "remap: pin_invalidations %ld -> %ld",
	       inv0, p);
	memset(src, 0x33, AREA_BYTES);
	if (push_sync(&n, src, src_mr->lkey, &c))
		od_say(c.status != IBV_WC_SUCCESS &&
			       c.syndrome == RHINETDV_SYN_NOT_PINNED,
		       "remap: a PUSH into the unmapped range fails: %s "
		       "syndrome "
		       "%u (NOT_PINNED is %u)",
		       ibv_wc_status_str(c.status), c.syndrome,
		       RHINETDV_SYN_NOT_PINNED);

	if (!map_anew(mem, AREA_BYTES))
		return 1;
	memset(src, 0x22, AREA_BYTES);
	if (push_sync(&n, src, src_mr->lkey, &c))
		od_say(c.status == IBV_WC_SUCCESS &&
			       differs(mem, 0x22, AREA_BYTES) < 0,
		       "remap: after mmap(MAP_FIXED) the PUSH lands in the new "
		       "mapping: %s, byte %ld differs (0x%02x)",
		       ibv_wc_status_str(c.status),
		       differs(mem, 0x22, AREA_BYTES), mem[0]);
	od_say(differs(old, 0x11, AREA_BYTES) < 0,
	       "remap: the old pages keep the first PUSH's bytes (byte %ld "
	       "differs, 0x%02x)",
	       differs(old, 0x11, AREA_BYTES), old[0]);
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0 + AREA_PAGES,
	       "remap: pinned_pages %ld with the new pages (%ld + %u)", p, p0,
	       AREA_PAGES);
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0, "remap: pinned_pages %ld after deregistration (%ld)", p,
	       p0);
	od_say(od_vmpin_kb() == vp0, "remap: VmPin %ld kB (%ld before)",
	       od_vmpin_kb(), vp0);
	return od_failures != 0;
}

/* ---- stream, pullstream, loop: remapped while transfers are in flight --- */

#define STREAM_PUSHES 96u
/* PUSHes in flight at most: most are posted after the midway remap. */
#define STREAM_WINDOW 8u

/*
 * Posts @count PUSHes of the whole area, PUSH i from slot i of @src
 * (filled with byte i % 250 + 1), or with @pull as many PULLs of it, PULL
 * i into slot i; at most STREAM_WINDOW in flight. @midway is called once,
 * when a quarter completed, with the next ones in flight and the number
 * posted so far. True if every one succeeded.
 */
static bool stream(struct od_node *n, bool pull, uint8_t *src, uint32_t lkey,
		   uint32_t count, void (*midway)(void *, uint32_t), void *arg)
{
	const char *what = pull ? "PULL" : "PUSH";
	struct rhinetdv_completion c[32];
	uint32_t posted = 0, done = 0;
	const uint64_t deadline = od_now_ms() + 4 * WAIT_MS;
	bool called = false;

	for (uint32_t i = 0; i < count && !pull; i++)
		memset(src + (size_t)i * AREA_BYTES, (int)(i % 250 + 1),
		       AREA_BYTES);
	while (done < count) {
		while (posted < count && posted - done < STREAM_WINDOW) {
			int err = post_xfer(n, pull,
					    src + (size_t)posted * AREA_BYTES,
					    lkey, 0, AREA_BYTES, posted);

			if (err == ENOMEM)
				break;
			if (err) {
				od_say(false, "posting a %s: %s", what,
				       strerror(err));
				return false;
			}
			posted++;
		}
		if (!called && done >= count / 4) {
			called = true;
			if (midway)
				midway(arg, posted);
		}
		int k = rhinetdv_poll(n->ep, 32, c);

		if (k < 0) {
			od_say(false, "rhinetdv_poll: %s", strerror(errno));
			return false;
		}
		for (int i = 0; i < k; i++)
			if (c[i].status != IBV_WC_SUCCESS) {
				od_say(false, "%s %llu: %s syndrome %u", what,
				       (unsigned long long)c[i].wr_id,
				       ibv_wc_status_str(c[i].status),
				       c[i].syndrome);
				return false;
			}
		done += (uint32_t)k;
		if (od_now_ms() > deadline) {
			od_say(false, "%u of %u %ses done in %d s", done, count,
			       what, 4 * WAIT_MS / 1000);
			return false;
		}
	}
	return true;
}

struct stream_remap {
	uint8_t *mem, *old, *snapshot;
	bool mapped;
};

/* Midway through the stream: new pages, and what the old ones hold then. */
static void stream_midway(void *arg, uint32_t posted)
{
	(void)posted;
	struct stream_remap *s = arg;

	s->mapped = map_anew(s->mem, AREA_BYTES);
	memcpy(s->snapshot, s->old, AREA_BYTES);
}

static int stream_mode(void)
{
	struct stream_remap s = {0};
	struct ibv_mr *mr, *src_mr;
	uint8_t last = (STREAM_PUSHES - 1) % 250 + 1;
	long p0, p;
	uint8_t *src;
	struct od_node n;
	bool ok;

	if (od_open_node(&n, true) || !memfd_views(AREA_BYTES, &s.mem, &s.old))
		return 1;
	src = source(&n, (size_t)STREAM_PUSHES * AREA_BYTES, &src_mr);
	s.snapshot = malloc(AREA_BYTES);
	if (!src || !s.snapshot)
		return 1;
	p0 = fresh_stat(&n, "pinned_pages");
	mr = od_reg_on_demand(&n, s.mem, AREA_BYTES, AREA_ID);
	if (!mr) {
		od_say(false, "stream: on-demand area: %s", strerror(errno));
		return 1;
	}
	ok = stream(&n, false, src, src_mr->lkey, STREAM_PUSHES, stream_midway,
		    &s);
	od_say(ok && s.mapped,
	       "stream: %u PUSHes of %lu KiB, the range mapped anew midway: "
	       "every one succeeded",
	       STREAM_PUSHES, AREA_BYTES >> 10);
	od_say(!memcmp(s.snapshot, s.old, AREA_BYTES),
	       "stream: no PUSH wrote the old pages after the mmap returned");
	od_say(differs(s.mem, last, AREA_BYTES) < 0,
	       "stream: the new mapping holds the last PUSH's byte 0x%02x "
	       "(byte "
	       "%ld differs, 0x%02x)",
	       last, differs(s.mem, last, AREA_BYTES), s.mem[0]);
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0, "stream: pinned_pages %ld after deregistration (%ld)",
	       p, p0);
	return od_failures != 0;
}

#define OLD_BYTE 0xaa
#define NEW_BYTE 0x55

struct pull_remap {
	uint8_t *mem;
	uint32_t posted; /* PULLs posted before the new pages held NEW_BYTE */
	bool mapped;
};

/* Midway through the PULLs: new pages, filled with NEW_BYTE. */
static void pull_midway(void *arg, uint32_t posted)
{
	struct pull_remap *s = arg;

	s->mapped = map_anew(s->mem, AREA_BYTES);
	if (s->mapped)
		memset(s->mem, NEW_BYTE, AREA_BYTES);
	s->posted = posted;
}

/*
 * A stream of PULLs out of the area while the process maps it anew: every
 * PULL succeeds; one posted after the new pages were filled reads them
 * alone (never the old pages); one in flight then reads old bytes, the new
 * mapping's zeros or its bytes, nothing else; nothing stays pinned.
 */
static int pullstream_mode(void)
{
	struct pull_remap s = {0};
	struct ibv_mr *mr, *dst_mr;
	long p0, p, inval0;
	uint32_t stale = 0, strange = 0;
	uint8_t *dst;
	struct od_node n;
	bool ok;

	if (od_open_node(&n, true))
		return 1;
	s.mem = mmap(NULL, AREA_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = source(&n, (size_t)STREAM_PUSHES * AREA_BYTES, &dst_mr);
	if (s.mem == MAP_FAILED || !dst)
		return 1;
	memset(s.mem, OLD_BYTE, AREA_BYTES);
	p0 = fresh_stat(&n, "pinned_pages");
	inval0 = fresh_stat(&n, "pin_invalidations");
	mr = od_reg_on_demand(&n, s.mem, AREA_BYTES, AREA_ID);
	if (!mr) {
		od_say(false, "pullstream: on-demand area: %s",
		       strerror(errno));
		return 1;
	}
	ok = stream(&n, true, dst, dst_mr->lkey, STREAM_PUSHES, pull_midway,
		    &s);
	od_say(ok && s.mapped,
	       "pullstream: %u PULLs of %lu KiB, the range mapped anew "
	       "midway (after %u were posted): every one succeeded",
	       STREAM_PUSHES, AREA_BYTES >> 10, s.posted);
	for (uint32_t i = 0; i < STREAM_PUSHES; i++) {
		const uint8_t *slot = dst + (size_t)i * AREA_BYTES;

		for (size_t b = 0; b < AREA_BYTES; b++) {
			if (i >= s.posted && slot[b] != NEW_BYTE) {
				stale++;
				break;
			}
			if (slot[b] != OLD_BYTE && slot[b] != 0 &&
			    slot[b] != NEW_BYTE) {
				strange++;
				break;
			}
		}
	}
	od_say(!stale,
	       "pullstream: every PULL posted after the remap read the new "
	       "pages alone (%u of %u did not)",
	       stale, STREAM_PUSHES - s.posted);
	od_say(!strange,
	       "pullstream: no PULL read a byte neither mapping held (%u did)",
	       strange);
	od_say(fresh_stat(&n, "pin_invalidations") > inval0,
	       "pullstream: the remap counted in pin_invalidations");
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0,
	       "pullstream: pinned_pages %ld after deregistration (%ld)", p,
	       p0);
	return od_failures != 0;
}

#define LOOP_REMAPS 200
#define LOOP_PUSHES 64u

struct loop_arg {
	uint8_t *mem;
	int remaps;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool first_done;
};

static void *loop_thread(void *arg)
{
	struct loop_arg *l = arg;

	for (int i = 0; i < LOOP_REMAPS; i++) {
		if (!map_anew(l->mem, AREA_BYTES))
			break;
		l->remaps++;
		if (i == 0) {
			pthread_mutex_lock(&l->lock);
			l->first_done = true;
			pthread_cond_signal(&l->cond);
			pthread_mutex_unlock(&l->lock);
		}
	}
	pthread_mutex_lock(&l->lock);
	l->first_done = true; /* also when the first failed */
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static int loop_mode(void)
{
	struct loop_arg l = {.lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER};
	struct rhinetdv_completion c;
	struct ibv_mr *mr, *src_mr;
	uint8_t *old, *src;
	long p0, p, inv0;
	pthread_t t;
	struct od_node n;
	bool ok;

	if (od_open_node(&n, true) || !memfd_views(AREA_BYTES, &l.mem, &old))
		return 1;
	src = source(&n, (size_t)LOOP_PUSHES * AREA_BYTES, &src_mr);
	if (!src)
		return 1;
	p0 = fresh_stat(&n, "pinned_pages");
	inv0 = fresh_stat(&n, "pin_invalidations");
	mr = od_reg_on_demand(&n, l.mem, AREA_BYTES, AREA_ID);
	if (!mr) {
		od_say(false, "loop: on-demand area: %s", strerror(errno));
		return 1;
	}
	memset(src, 0xee, AREA_BYTES);
	ok = push_sync(&n, src, src_mr->lkey, &c) && c.status == IBV_WC_SUCCESS;
	od_say(ok, "loop: first PUSH into the memfd pages");
	if (pthread_create(&t, NULL, loop_thread, &l))
		return 1;
	pthread_mutex_lock(&l.lock);
	while (!l.first_done)
		pthread_cond_wait(&l.cond, &l.lock);
	pthread_mutex_unlock(&l.lock);
	ok = stream(&n, false, src, src_mr->lkey, LOOP_PUSHES, NULL, NULL);
	pthread_join(t, NULL);
	od_say(ok && l.remaps == LOOP_REMAPS,
	       "loop: %u PUSHes while the range was mapped anew %d times: "
	       "every "
	       "one succeeded",
	       LOOP_PUSHES, l.remaps);
	od_say(differs(old, 0xee, AREA_BYTES) < 0,
	       "loop: the first pages were not written after they were "
	       "replaced "
	       "(byte %ld differs)",
	       differs(old, 0xee, AREA_BYTES));
	memset(src, 0x5c, AREA_BYTES);
	ok = push_sync(&n, src, src_mr->lkey, &c) && c.status == IBV_WC_SUCCESS;
	od_say(ok && differs(l.mem, 0x5c, AREA_BYTES) < 0,
	       "loop: a last PUSH lands in the current mapping (byte %ld "
	       "differs)",
	       differs(l.mem, 0x5c, AREA_BYTES));
	p = fresh_stat(&n, "pin_invalidations");
	printf("rhinet-odremap: loop: pin_invalidations %ld -> %ld\n", inv0, p);
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0, "loop: pinned_pages %ld after deregistration (%ld)", p,
	       p0);
	return od_failures != 0;
}

/* ---- fork ------------------------------------------------------------------ */

static int fork_mode(void)
{
	struct rhinetdv_completion c;
	struct ibv_mr *mr, *src_mr;
	int go[2], status = -1;
	uint8_t *mem, *src;
	long p0, p, inv0, req0;
	struct od_node n;
	pid_t pid;
	char b;

	if (od_open_node(&n, true) || pipe(go))
		return 1;
	mem = mmap(NULL, AREA_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = source(&n, AREA_BYTES, &src_mr);
	if (mem == MAP_FAILED || !src)
		return 1;
	p0 = fresh_stat(&n, "pinned_pages");
	mr = od_reg_on_demand(&n, mem, AREA_BYTES, AREA_ID);
	if (!mr) {
		od_say(false, "fork: on-demand area: %s", strerror(errno));
		return 1;
	}
	memset(src, 0x11, AREA_BYTES);
	if (push_sync(&n, src, src_mr->lkey, &c))
		od_say(c.status == IBV_WC_SUCCESS &&
			       differs(mem, 0x11, AREA_BYTES) < 0,
		       "fork: PUSH before the fork: %s",
		       ibv_wc_status_str(c.status));
	inv0 = fresh_stat(&n, "pin_invalidations");
	pid = fork();
	if (pid == 0) {
		/* Only reads its memory: verbs are the parent's. */
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		_exit(differs(mem, 0x11, AREA_BYTES) < 0 ? 0 : 1);
	}
	if (pid < 0)
		return 1;
	p = fresh_stat(&n, "pin_invalidations");
	od_say(p > inv0,
	       "fork: the fork's write protection invalidated the pinned pages "
	       "(pin_invalidations %ld -> %ld)",
	       inv0, p);
	req0 = fresh_stat(&n, "pin_requests");
	memset(src, 0x22, AREA_BYTES);
	if (push_sync(&n, src, src_mr->lkey, &c))
		od_say(c.status == IBV_WC_SUCCESS &&
			       differs(mem, 0x22, AREA_BYTES) < 0,
		       "fork: a PUSH after the fork lands in the parent's "
		       "mapping: %s, byte %ld differs (0x%02x)",
		       ibv_wc_status_str(c.status),
		       differs(mem, 0x22, AREA_BYTES), mem[0]);
	p = fresh_stat(&n, "pin_requests");
	od_say(p > req0,
	       "fork: the parent's pages were faulted again (pin_requests %ld "
	       "-> "
	       "%ld)",
	       req0, p);
	if (write(go[1], "g", 1) != 1 || waitpid(pid, &status, 0) != pid)
		return 1;
	od_say(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "fork: the child still sees what it had at the fork (status %d)",
	       status);
	if (ibv_dereg_mr(mr))
		od_say(false, "ibv_dereg_mr: %s", strerror(errno));
	p = fresh_stat(&n, "pinned_pages");
	od_say(p == p0, "fork: pinned_pages %ld after deregistration (%ld)", p,
	       p0);
	return od_failures != 0;
}

/* ---- exit ------------------------------------------------------------------ */

#define EXIT_PAGES 256u

/* Declares 1 MiB, posts PUSHes into it that fault, exits without waiting. */
static void exit_child(void)
{
	const size_t len = (size_t)EXIT_PAGES * PAGE;
	struct ibv_mr *src_mr;
	uint8_t *mem, *src;
	struct od_node n;
	int posted = 0;

	if (od_open_node(&n, true))
		_exit(1);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = source(&n, AREA_BYTES, &src_mr);
	if (mem == MAP_FAILED || !src ||
	    !od_reg_on_demand(&n, mem, len, AREA_ID))
		_exit(1);
	for (uint64_t off = 0; off < len; off += AREA_BYTES)
		posted +=
			!post_push(&n, src, src_mr->lkey, off, AREA_BYTES, off);
	printf("rhinet-odremap: exit: child posted %d PUSHes, exits\n", posted);
	fflush(stdout);
	_exit(posted ? 0 : 1);
}

static int exit_mode(void)
{
	struct od_node n;
	int status;
	long p0, p;
	pid_t pid;

	if (od_open_node(&n, true))
		return 1;
	p0 = fresh_stat(&n, "pinned_pages");
	for (int round = 0; round < 3; round++) {
		pid = fork();
		if (pid == 0)
			exit_child();
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 1;
		od_say(WIFEXITED(status) && !WEXITSTATUS(status),
		       "exit: round %d: child exited with PUSHes pending",
		       round);
		p = pinned_settles(&n, p0);
		od_say(p == p0,
		       "exit: round %d: pinned_pages back to %ld (%ld)", round,
		       p0, p);
	}
	return od_failures != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int ret;

	od_init("rhinet-odremap");
	if (!strcmp(mode, "remap"))
		ret = remap();
	else if (!strcmp(mode, "stream"))
		ret = stream_mode();
	else if (!strcmp(mode, "pullstream"))
		ret = pullstream_mode();
	else if (!strcmp(mode, "loop"))
		ret = loop_mode();
	else if (!strcmp(mode, "fork"))
		ret = fork_mode();
	else if (!strcmp(mode, "exit"))
		ret = exit_mode();
	else {
		fprintf(stderr,
			"usage: rhinet-odremap remap | stream | pullstream | "
			"loop | fork | exit\n");
		return 2;
	}
	printf("rhinet-odremap: %s: %s\n", mode, ret ? "FAIL" : "PASS");
	return ret ? 1 : 0;
}
