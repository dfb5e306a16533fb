// SPDX-License-Identifier: BSD-2-Clause
/*
 * On-demand paging through plain verbs, between two nodes: the server
 * (node 1) registers memory it only mmap()ed with IBV_ACCESS_ON_DEMAND, the
 * client (node 0) reaches it through the rkey; remote pin-down pins it.
 *
 *  - ibv_query_device_ex reports what works: IBV_ODP_SUPPORT, and on RC
 *    SEND, RECV, SRQ_RECV, WRITE, READ and ATOMIC, on UD SEND alone,
 *    nothing on UC, XRC, no implicit ODP;
 *  - registration pins nothing (pinned_pages, VmPin);
 *  - first touch: a 1 MiB WRITE into it, the READ back, a fetch-and-add
 *    on another untouched page; every byte checked on both sides; the
 *    pin events and pinned pages moved (256 + 1 pages);
 *  - ibv_advise_mr(PREFETCH_WRITE, FLUSH) pins a second 1 MiB MR before
 *    the peer comes: its WRITE and READ then post no pin event and ask the
 *    driver nothing; its lkey serves a SEND;
 *  - refused: advise of an MR that is not on demand, a range outside the
 *    MR or of length 0, another PD's or another context's MR (EINVAL),
 *    PREFETCH_WRITE of a read-only MR (EINVAL), PREFETCH_NO_FAULT
 *    (EOPNOTSUPP); rereg of a pinned MR to on demand; nothing pinned by them;
 *    with FLUSH a range partly unmapped fails EFAULT, as a hint it does not;
 *  - local first touch: a SEND from a page of an on-demand MR nobody
 *    pinned into a receive buffer of the peer's on-demand MR nobody
 *    pinned, and a READ into an untouched on-demand buffer: both hosts
 *    pin (pin events, pinned pages), every byte checked;
 *  - a SEND from an on-demand page mapped PROT_NONE completes with
 *    LOC_PROT_ERR (the host cannot pin it);
 *  - deregistering gives every page back, on both nodes;
 *  - UD: a datagram sent from a page of an on-demand MR nobody pinned
 *    arrives whole (its host pinned the page first); one from a PROT_NONE
 *    page, and one from a page of a file past its end, complete
 *    LOC_PROT_ERR, pin nothing, and nothing arrives.
 *
 *   rhinet-odp [-d DEVICE] [-g GID_INDEX] [-p PORT]           server (node 1)
 *   rhinet-odp [-d DEVICE] [-g GID_INDEX] [-p PORT] SERVER    client (node 0)
 *
 * Exits 0 only if every check passed on this node.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#define FAA_ADD 5u
#define SEND_LEN PAGE
#define OD_READ (16 * PAGE)

/* What the server tells the client. */
struct server_info {
	uint32_t qpn;
	uint8_t gid[16];
	uint64_t touch_addr, prefetched_addr, atomic_addr;
	uint32_t touch_rkey, prefetched_rkey, atomic_rkey;
};

static const int kOdpAccess = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC;

static uint64_t stat_of(const struct rc_node *n, const char *name)
{
	return ib_hw_counter(n->dev, name);
}

/* VmPin of this process in kB, -1 if absent. */
static long vmpin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static struct ibv_mr *reg_odp(struct rc_node *n, void *p, size_t len,
			      int access)
{
	struct ibv_mr *mr = ibv_reg_mr(n->pd, p, len, access);

	if (!mr)
		die("ibv_reg_mr(IBV_ACCESS_ON_DEMAND)");
	return mr;
}

static int prefetch(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {addr, len, lkey};

	return ibv_advise_mr(pd, advice, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
}

static void odp_caps(struct rc_node *n)
{
	struct ibv_device_attr_ex a;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			    IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;

	memset(&a, 0, sizeof(a));
	check(!ibv_query_device_ex(n->ctx, NULL, &a), "ibv_query_device_ex");
	printf("rhinet-odp %s: odp_caps general %#" PRIx64
	       " rc %#x uc %#x ud %#x xrc %#x\n",
	       role, a.odp_caps.general_caps,
	       a.odp_caps.per_transport_caps.rc_odp_caps,
	       a.odp_caps.per_transport_caps.uc_odp_caps,
	       a.odp_caps.per_transport_caps.ud_odp_caps, a.xrc_odp_caps);
	check(a.odp_caps.general_caps == IBV_ODP_SUPPORT,
	      "general_caps %#" PRIx64 ": want IBV_ODP_SUPPORT alone",
	      a.odp_caps.general_caps);
	check(a.odp_caps.per_transport_caps.rc_odp_caps == rc,
	      "rc_odp_caps %#x: want SEND|RECV|WRITE|READ|ATOMIC|SRQ_RECV "
	      "(%#x)",
	      a.odp_caps.per_transport_caps.rc_odp_caps, rc);
	check(a.odp_caps.per_transport_caps.ud_odp_caps == IBV_ODP_SUPPORT_SEND,
	      "ud_odp_caps %#x: want SEND alone",
	      a.odp_caps.per_transport_caps.ud_odp_caps);
	check(!a.odp_caps.per_transport_caps.uc_odp_caps && !a.xrc_odp_caps,
	      "UC/XRC claim on-demand paging");
}

/* Advice the kernel must refuse, and pin nothing for. */
static void refusals(struct rc_node *n, struct ibv_mr *odp)
{
	uint64_t pinned = stat_of(n, "pinned_pages");
	long vmpin = vmpin_kb();
	uint64_t a = (uintptr_t)odp->addr;
	struct ibv_context *ctx2 = open_device(n->dev);
	struct ibv_pd *pd2 = ibv_alloc_pd(n->ctx);
	struct ibv_pd *foreign = ibv_alloc_pd(ctx2);
	uint8_t *ro_buf = map_untouched(PAGE), *holed;
	struct ibv_sge sge;
	struct ibv_mr *ro;
	int r;

	if (!pd2 || !foreign)
		die("PDs");
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		     (uintptr_t)n->buf, PAGE, n->mr->lkey);
	check(r == EINVAL, "advise of an MR not on demand: %d, want EINVAL", r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		     a + odp->length - PAGE, 2 * PAGE, odp->lkey);
	check(r == EINVAL, "advise past the MR's end: %d, want EINVAL", r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, a - PAGE, PAGE,
		     odp->lkey);
	check(r == EINVAL, "advise before the MR: %d, want EINVAL", r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, a, 0,
		     odp->lkey);
	check(r == EINVAL, "advise of 0 bytes: %d, want EINVAL", r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, a, PAGE,
		     odp->lkey ^ 1);
	check(r == EINVAL, "advise of an unknown lkey: %d, want EINVAL", r);
	r = prefetch(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, a, PAGE,
		     odp->lkey);
	check(r == EINVAL, "advise through another PD: %d, want EINVAL", r);
	r = prefetch(foreign, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, a, PAGE,
		     odp->lkey);
	check(r == EINVAL, "advise of another context's MR: %d, want EINVAL",
	      r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, a, PAGE,
		     odp->lkey);
	check(r == EOPNOTSUPP, "PREFETCH_NO_FAULT: %d, want EOPNOTSUPP", r);
	check(ibv_rereg_mr(n->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) != 0,
	      "rereg of a pinned MR to on demand succeeded");
	check(stat_of(n, "pinned_pages") == pinned && vmpin_kb() == vmpin,
	      "refused advice pinned pages");

	/* Read-only: PREFETCH pins it, PREFETCH_WRITE is refused. */
	memset(ro_buf, 0x5a, PAGE);
	ro = reg_odp(n, ro_buf, PAGE,
		     IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		     (uintptr_t)ro_buf, PAGE, ro->lkey);
	check(r == EINVAL, "PREFETCH_WRITE of a read-only MR: %d", r);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, (uintptr_t)ro_buf,
		     PAGE, ro->lkey);
	check(!r, "PREFETCH of a read-only MR: %d", r);
	check(stat_of(n, "pinned_pages") == pinned + 1,
	      "PREFETCH of a read-only page pinned %" PRIu64 " pages",
	      stat_of(n, "pinned_pages") - pinned);
	check(!ibv_dereg_mr(ro), "dereg the read-only MR");
	check(stat_of(n, "pinned_pages") == pinned,
	      "its page stays pinned after dereg");
	munmap(ro_buf, PAGE);

	/* Half of it unmapped after registration: FLUSH says what could not
	 * be pinned (EFAULT), a plain hint does not; the mapped page stays
	 * pinned until dereg.
	 */
	holed = map_untouched(2 * PAGE);
	ro = reg_odp(n, holed, 2 * PAGE, kOdpAccess);
	munmap(holed + PAGE, PAGE);
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		     (uintptr_t)holed, 2 * PAGE, ro->lkey);
	check(r == EFAULT,
	      "FLUSH prefetch over an unmapped page: %d, want EFAULT", r);
	sge.addr = (uintptr_t)holed;
	sge.length = 2 * PAGE;
	sge.lkey = ro->lkey;
	r = ibv_advise_mr(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge,
			  1);
	check(!r, "prefetch hint over an unmapped page: %d, want 0", r);
	check(stat_of(n, "pinned_pages") == pinned + 1,
	      "prefetch over a half-mapped range pinned %" PRIu64
	      " pages, want 1",
	      stat_of(n, "pinned_pages") - pinned);
	check(!ibv_dereg_mr(ro), "dereg the half-mapped MR");
	check(stat_of(n, "pinned_pages") == pinned,
	      "its page stays pinned after dereg");
	munmap(holed, PAGE);
	ibv_dealloc_pd(foreign);
	ibv_dealloc_pd(pd2);
	ibv_close_device(ctx2);
}

/* A SEND of @len bytes from @addr (@lkey); its completion's status. */
static int send_from(struct rc_node *n, uint64_t addr, uint32_t lkey,
		     uint32_t len)
{
	struct ibv_wc wc;

	/* post_rdma's remote address and key mean nothing to a SEND. */
	if (post_rdma(n->qp, IBV_WR_SEND, 7, addr, lkey, 0, 0, len))
		die("post SEND");
	if (poll_cq_for(n->cq, &wc, 1, 20000) != 1)
		return -1;
	return wc.status;
}

static void server(struct rc_node *n, int fd)
{
	uint8_t *touch = map_untouched(MIB), *prefetched = map_untouched(MIB);
	uint8_t *atomic = map_untouched(PAGE), *unpinned = map_untouched(PAGE);
	uint8_t *sealed = map_untouched(PAGE);
	struct server_info me = {.qpn = n->qp->qp_num}, peer;
	uint64_t pinned0, pinned, requests, events;
	struct ibv_mr *touch_mr, *pre_mr, *atomic_mr, *unpinned_mr, *sealed_mr;
	long vmpin0 = vmpin_kb();
	int r;

	pinned0 = stat_of(n, "pinned_pages");
	touch_mr = reg_odp(n, touch, MIB, kOdpAccess);
	pre_mr = reg_odp(n, prefetched, MIB, kOdpAccess);
	atomic_mr = reg_odp(n, atomic, PAGE, kOdpAccess);
	unpinned_mr = reg_odp(n, unpinned, PAGE, kOdpAccess);
	sealed_mr = reg_odp(n, sealed, PAGE, kOdpAccess);
	check(stat_of(n, "pinned_pages") == pinned0 && vmpin_kb() == vmpin0,
	      "registration on demand pinned pages");
	refusals(n, touch_mr);

	local_gid(n->ctx, n->gid_index, me.gid);
	me.touch_addr = (uintptr_t)touch;
	me.touch_rkey = touch_mr->rkey;
	me.prefetched_addr = (uintptr_t)prefetched;
	me.prefetched_rkey = pre_mr->rkey;
	me.atomic_addr = (uintptr_t)atomic;
	me.atomic_rkey = atomic_mr->rkey;
	xfer(fd, &me, &peer, sizeof(me));
	rc_connect(n->qp, "RC", peer.qpn, peer.gid, n->gid_index, 4);
	requests = stat_of(n, "pin_requests");
	events = stat_of(n, "pin_events");
	sync_peer(fd); /* connected */

	/* The client's first touch: WRITE, READ back, fetch-and-add. */
	sync_peer(fd);
	pinned = stat_of(n, "pinned_pages");
	printf("rhinet-odp server: first touch: pin_events +%" PRIu64
	       ", pin_requests +%" PRIu64 ", pinned_pages +%" PRIu64
	       ", VmPin +%ld kB\n",
	       stat_of(n, "pin_events") - events,
	       stat_of(n, "pin_requests") - requests, pinned - pinned0,
	       vmpin_kb() - vmpin0);
	check(pinned - pinned0 == MIB / PAGE + 1,
	      "first touch pinned %" PRIu64 " pages, want %u", pinned - pinned0,
	      MIB / PAGE + 1);
	check(vmpin_kb() - vmpin0 == (long)(MIB + PAGE) / 1024, "VmPin +%ld kB",
	      vmpin_kb() - vmpin0);
	check(stat_of(n, "pin_events") - events >= 2 &&
		      stat_of(n, "pin_requests") - requests >= 2,
	      "first touches posted no pin event or request");
	check(pattern_differs(touch, MIB, 1) < 0,
	      "the WRITE's bytes in the on-demand MR differ at %ld",
	      pattern_differs(touch, MIB, 1));
	check(*(volatile uint64_t *)atomic == FAA_ADD,
	      "fetch-and-add left %" PRIu64, *(volatile uint64_t *)atomic);

	/* Prefetched: the peer's accesses then need no pinning. */
	r = prefetch(n->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		     (uintptr_t)prefetched, MIB, pre_mr->lkey);
	check(!r, "ibv_advise_mr(PREFETCH_WRITE, FLUSH) of 1 MiB: %s",
	      strerror(r));
	check(stat_of(n, "pinned_pages") - pinned == MIB / PAGE,
	      "prefetch pinned %" PRIu64 " pages, want %u",
	      stat_of(n, "pinned_pages") - pinned, MIB / PAGE);
	requests = stat_of(n, "pin_requests");
	events = stat_of(n, "pin_events");
	sync_peer(fd);
	sync_peer(fd); /* the client wrote and read it */
	check(stat_of(n, "pin_events") == events &&
		      stat_of(n, "pin_requests") == requests,
	      "the peer's accesses to prefetched pages posted %" PRIu64
	      " pin events, %" PRIu64 " requests",
	      stat_of(n, "pin_events") - events,
	      stat_of(n, "pin_requests") - requests);
	check(pattern_differs(prefetched, MIB, 2) < 0,
	      "the WRITE into the prefetched MR differs at %ld",
	      pattern_differs(prefetched, MIB, 2));

	/* Local use: the lkey of prefetched pages serves; of pages nobody
	 * pinned too, its host pins them first.
	 */
	r = send_from(n, (uintptr_t)prefetched, pre_mr->lkey, SEND_LEN);
	check(r == IBV_WC_SUCCESS, "SEND from a prefetched page: %d", r);
	sync_peer(fd); /* the client checked it */
	pattern_fill(unpinned, SEND_LEN, 3); /* mapped, written, not pinned */
	pinned = stat_of(n, "pinned_pages");
	events = stat_of(n, "pin_events");
	r = send_from(n, (uintptr_t)unpinned, unpinned_mr->lkey, SEND_LEN);
	check(r == IBV_WC_SUCCESS,
	      "SEND from an on-demand page nobody pinned: status %d", r);
	sync_peer(fd); /* the client checked it and READ */
	printf("rhinet-odp server: SEND's local first touch: pin_events "
	       "+%" PRIu64 ", pinned_pages +%" PRIu64 "\n",
	       stat_of(n, "pin_events") - events,
	       stat_of(n, "pinned_pages") - pinned);
	check(stat_of(n, "pin_events") > events &&
		      stat_of(n, "pinned_pages") - pinned == 1,
	      "the SEND's source was not pinned on demand (pinned +%" PRIu64
	      ")",
	      stat_of(n, "pinned_pages") - pinned);

	/* Memory the host cannot pin: a clear local error. Last: the QP goes
	 * to error with it.
	 */
	check(!mprotect(sealed, PAGE, PROT_NONE), "mprotect PROT_NONE");
	r = send_from(n, (uintptr_t)sealed, sealed_mr->lkey, SEND_LEN);
	check(r == IBV_WC_LOC_PROT_ERR,
	      "SEND from an on-demand page mapped PROT_NONE: status %d, want "
	      "LOC_PROT_ERR",
	      r);

	check(!ibv_dereg_mr(touch_mr) && !ibv_dereg_mr(pre_mr) &&
		      !ibv_dereg_mr(atomic_mr) && !ibv_dereg_mr(unpinned_mr) &&
		      !ibv_dereg_mr(sealed_mr),
	      "dereg the on-demand MRs");
	check(stat_of(n, "pinned_pages") == pinned0 && vmpin_kb() == vmpin0,
	      "pages stay pinned after dereg: %" PRIu64 ", VmPin %ld kB",
	      stat_of(n, "pinned_pages") - pinned0, vmpin_kb() - vmpin0);
	munmap(touch, MIB);
	munmap(prefetched, MIB);
	munmap(atomic, PAGE);
	munmap(unpinned, PAGE);
	munmap(sealed, PAGE);
}

/* WRITE @seed's pattern to [@raddr, +MIB) and READ it back. */
static void write_read(struct rc_node *n, uint64_t raddr, uint32_t rkey,
		       uint32_t seed, const char *what)
{
	uint8_t *src = n->buf, *dst = n->buf + MIB;
	struct ibv_wc wc[2];

	pattern_fill(src, MIB, seed);
	memset(dst, 0, MIB);
	if (post_rdma(n->qp, IBV_WR_RDMA_WRITE, 1, (uintptr_t)src, n->mr->lkey,
		      raddr, rkey, MIB) ||
	    post_rdma(n->qp, IBV_WR_RDMA_READ, 2, (uintptr_t)dst, n->mr->lkey,
		      raddr, rkey, MIB))
		die("post WRITE/READ");
	check(poll_cq_for(n->cq, wc, 2, 60000) == 2 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      wc[1].status == IBV_WC_SUCCESS,
	      "%s: WRITE and READ of 1 MiB did not both complete", what);
	check(pattern_differs(dst, MIB, seed) < 0,
	      "%s: READ back differs at %ld", what,
	      pattern_differs(dst, MIB, seed));
}

static void client(struct rc_node *n, int fd)
{
	struct server_info me = {.qpn = n->qp->qp_num}, peer;
	uint8_t *faa_result = n->buf + 2 * MIB;
	uint8_t *recv_buf = n->buf + 2 * MIB + PAGE;
	struct ibv_sge sge = {(uintptr_t)faa_result, 8, n->mr->lkey};
	struct ibv_send_wr faa = {.wr_id = 3,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED};
	struct ibv_sge rsge = {(uintptr_t)recv_buf, SEND_LEN, n->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 4, .sg_list = &rsge, .num_sge = 1};
	/* On demand, untouched: the second SEND lands here, a READ there. */
	uint8_t *odp_recv = map_untouched(SEND_LEN),
		*odp_read = map_untouched(OD_READ);
	uint64_t pinned0 = stat_of(n, "pinned_pages"), events;
	struct ibv_mr *recv_mr = reg_odp(n, odp_recv, SEND_LEN, kOdpAccess);
	struct ibv_mr *read_mr = reg_odp(n, odp_read, OD_READ, kOdpAccess);
	struct ibv_sge osge = {(uintptr_t)odp_recv, SEND_LEN, recv_mr->lkey};
	struct ibv_recv_wr owr = {.wr_id = 5, .sg_list = &osge, .num_sge = 1};
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	local_gid(n->ctx, n->gid_index, me.gid);
	xfer(fd, &me, &peer, sizeof(me));
	rc_connect(n->qp, "RC", peer.qpn, peer.gid, n->gid_index, 4);
	if (ibv_post_recv(n->qp, &rwr, &rbad) ||
	    ibv_post_recv(n->qp, &owr, &rbad))
		die("post_recv");
	sync_peer(fd); /* connected */

	write_read(n, peer.touch_addr, peer.touch_rkey, 1, "first touch");
	memset(faa_result, 0xff, 8);
	faa.wr.atomic.remote_addr = peer.atomic_addr;
	faa.wr.atomic.rkey = peer.atomic_rkey;
	faa.wr.atomic.compare_add = FAA_ADD;
	if (ibv_post_send(n->qp, &faa, &bad))
		die("post fetch-and-add");
	check(poll_cq_for(n->cq, &wc, 1, 20000) == 1 &&
		      wc.status == IBV_WC_SUCCESS,
	      "fetch-and-add on an untouched page did not complete");
	check(*(uint64_t *)faa_result == 0,
	      "fetch-and-add fetched %" PRIu64 " from an untouched page",
	      *(uint64_t *)faa_result);
	sync_peer(fd);

	sync_peer(fd); /* the server prefetched */
	write_read(n, peer.prefetched_addr, peer.prefetched_rkey, 2,
		   "prefetched");
	sync_peer(fd);

	/* The server's SEND from its prefetched pages (pattern 2). */
	check(poll_cq_for(n->cq, &wc, 1, 20000) == 1 &&
		      wc.status == IBV_WC_SUCCESS && wc.byte_len == SEND_LEN,
	      "no SEND from the prefetched pages arrived");
	check(pattern_differs(recv_buf, SEND_LEN, 2) < 0,
	      "the SEND from prefetched pages differs at %ld",
	      pattern_differs(recv_buf, SEND_LEN, 2));
	events = stat_of(n, "pin_events");
	sync_peer(fd);

	/* The server's SEND from pages nobody pinned (pattern 3) into ours
	 * nobody pinned: each host pins its side.
	 */
	check(poll_cq_for(n->cq, &wc, 1, 20000) == 1 &&
		      wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 &&
		      wc.byte_len == SEND_LEN,
	      "no SEND into the untouched receive buffer arrived");
	check(pattern_differs(odp_recv, SEND_LEN, 3) < 0,
	      "the SEND into the untouched receive buffer differs at %ld",
	      pattern_differs(odp_recv, SEND_LEN, 3));
	/* A READ of the server's prefetched pages (pattern 2) into ours. */
	if (post_rdma(n->qp, IBV_WR_RDMA_READ, 6, (uintptr_t)odp_read,
		      read_mr->lkey, peer.prefetched_addr, peer.prefetched_rkey,
		      OD_READ))
		die("post READ");
	check(poll_cq_for(n->cq, &wc, 1, 20000) == 1 &&
		      wc.status == IBV_WC_SUCCESS,
	      "READ into an untouched on-demand buffer: status %d", wc.status);
	check(pattern_differs(odp_read, OD_READ, 2) < 0,
	      "the READ into the untouched buffer differs at %ld",
	      pattern_differs(odp_read, OD_READ, 2));
	printf("rhinet-odp client: local first touches: pin_events +%" PRIu64
	       ", pinned_pages +%" PRIu64 "\n",
	       stat_of(n, "pin_events") - events,
	       stat_of(n, "pinned_pages") - pinned0);
	check(stat_of(n, "pin_events") - events >= 2 &&
		      stat_of(n, "pinned_pages") - pinned0 ==
			      (SEND_LEN + OD_READ) / PAGE,
	      "receive and READ buffers pinned %" PRIu64 " pages, want %u",
	      stat_of(n, "pinned_pages") - pinned0,
	      (SEND_LEN + OD_READ) / PAGE);
	check(!ibv_dereg_mr(recv_mr) && !ibv_dereg_mr(read_mr),
	      "dereg the client's on-demand MRs");
	check(stat_of(n, "pinned_pages") == pinned0,
	      "client pages stay pinned after dereg: %" PRIu64,
	      stat_of(n, "pinned_pages") - pinned0);
	munmap(odp_recv, SEND_LEN);
	munmap(odp_read, OD_READ);
	sync_peer(fd);
}

/* What each node tells the other of its UD QP. */
struct ud_info {
	uint32_t qpn;
	uint8_t gid[16];
};

#define UD_QKEY 0x11111111u
#define UD_LEN 1000u
#define UD_GRH 40u

static struct ibv_qp *ud_qp(struct rc_node *n, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {.send_cq = cq,
				      .recv_cq = cq,
				      .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 4,
					      .max_recv_wr = 4,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY};
	struct ibv_qp *qp = ibv_create_qp(n->pd, &qa);

	if (!qp || ibv_modify_qp(qp, &a,
				 IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					 IBV_QP_PORT | IBV_QP_QKEY))
		die("UD QP to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD QP to RTS");
	return qp;
}

/* One datagram of UD_LEN bytes from @p (@lkey); its completion's status. */
static int ud_send(struct ibv_cq *cq, struct ibv_qp *qp, struct ibv_ah *ah,
		   uint32_t qpn, void *p, uint32_t lkey)
{
	struct ibv_sge sge = {(uintptr_t)p, UD_LEN, lkey};
	struct ibv_send_wr wr = {.wr_id = 9,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = UD_QKEY;
	if (ibv_post_send(qp, &wr, &bad))
		die("post UD SEND");
	if (poll_cq_for(cq, &wc, 1, 20000) != 1)
		return -1;
	return wc.status;
}

/*
 * A datagram from @p, a page of @mr the host cannot pin: the SEND
 * completes LOC_PROT_ERR, on a QP of its own (the error ends the QP).
 */
static void ud_unpinnable(struct rc_node *n, struct ibv_cq *cq,
			  struct ibv_ah *ah, uint32_t qpn, void *p,
			  struct ibv_mr *mr, const char *what)
{
	struct ibv_qp *qp = ud_qp(n, cq);
	uint64_t pinned = stat_of(n, "pinned_pages");
	int r = ud_send(cq, qp, ah, qpn, p, mr->lkey);

	check(r == IBV_WC_LOC_PROT_ERR,
	      "UD SEND from an on-demand page %s: status %d, want "
	      "LOC_PROT_ERR",
	      what, r);
	check(stat_of(n, "pinned_pages") == pinned,
	      "UD SEND from a page %s pinned pages", what);
	check(!ibv_destroy_qp(qp), "destroy UD QP");
}

/* Two pages of a memfd one page long: the second lies past its end. */
static uint8_t *past_eof(void)
{
	int fd = memfd_create("rhinet-odp", 0);
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, PAGE))
		die("memfd");
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap memfd");
	close(fd);
	return p;
}

/*
 * UD on demand: node 1 sends from on-demand pages nobody pinned, node 0
 * receives into pinned memory (a UD receive into unpinned memory drops
 * the datagram, which is why UD RECV is not claimed).
 */
static void ud_send_on_demand(struct rc_node *n, int fd)
{
	/* Its own CQ: nothing of the RC QP's errors comes in between. */
	struct ibv_cq *cq = ibv_create_cq(n->ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? ud_qp(n, cq) : NULL;
	struct ud_info me, peer;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	if (!qp)
		die("UD CQ");
	me.qpn = qp->qp_num;

	local_gid(n->ctx, n->gid_index, me.gid);
	xfer(fd, &me, &peer, sizeof(me));
	ah_attr_to(&aa, peer.gid, n->gid_index);
	ah = ibv_create_ah(n->pd, &aa);
	if (!ah)
		die("ibv_create_ah");
	if (!strcmp(role, "client")) {
		struct ibv_sge sge = {(uintptr_t)n->buf, UD_GRH + UD_LEN,
				      n->mr->lkey};
		struct ibv_recv_wr wr = {
			.wr_id = 8, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;

		/* The second receive catches a datagram that should not
		 * have been sent.
		 */
		memset(n->buf, 0, UD_GRH + UD_LEN);
		if (ibv_post_recv(qp, &wr, &bad))
			die("post UD receive");
		sge.addr += PAGE;
		if (ibv_post_recv(qp, &wr, &bad))
			die("post UD receive");
		sync_peer(fd); /* posted */
		check(poll_cq_for(cq, &wc, 1, 20000) == 1 &&
			      wc.status == IBV_WC_SUCCESS &&
			      wc.byte_len == UD_GRH + UD_LEN,
		      "no datagram from the peer's unpinned page arrived");
		check(pattern_differs(n->buf + UD_GRH, UD_LEN, 4) < 0,
		      "the datagram from an unpinned page differs at %ld",
		      pattern_differs(n->buf + UD_GRH, UD_LEN, 4));
		sync_peer(fd); /* received */
		sync_peer(fd); /* the unpinnable ones failed */
		check(poll_cq_for(cq, &wc, 1, 200) == 0,
		      "a datagram from an unpinnable page arrived");
	} else {
		uint8_t *src = map_untouched(PAGE),
			*sealed = map_untouched(PAGE);
		uint8_t *file = past_eof();
		struct ibv_mr *src_mr = reg_odp(n, src, PAGE, kOdpAccess);
		struct ibv_mr *sealed_mr = reg_odp(n, sealed, PAGE, kOdpAccess);
		struct ibv_mr *file_mr = reg_odp(n, file, 2 * PAGE, kOdpAccess);
		uint64_t pinned = stat_of(n, "pinned_pages");
		uint64_t events = stat_of(n, "pin_events");
		int r;

		pattern_fill(src, UD_LEN, 4); /* mapped, written, not pinned */
		sync_peer(fd); /* the peer posted its receive */
		r = ud_send(cq, qp, ah, peer.qpn, src, src_mr->lkey);
		check(r == IBV_WC_SUCCESS,
		      "UD SEND from an on-demand page nobody pinned: status %d",
		      r);
		printf("rhinet-odp server: UD SEND's first touch: pin_events "
		       "+%" PRIu64 ", pinned_pages +%" PRIu64 "\n",
		       stat_of(n, "pin_events") - events,
		       stat_of(n, "pinned_pages") - pinned);
		check(stat_of(n, "pin_events") > events &&
			      stat_of(n, "pinned_pages") - pinned == 1,
		      "the UD SEND's source was not pinned on demand");
		sync_peer(fd); /* the peer received it */
		check(!mprotect(sealed, PAGE, PROT_NONE), "mprotect PROT_NONE");
		ud_unpinnable(n, cq, ah, peer.qpn, sealed, sealed_mr,
			      "mapped PROT_NONE");
		ud_unpinnable(n, cq, ah, peer.qpn, file + PAGE, file_mr,
			      "of a file past its end");
		sync_peer(fd);
		check(!ibv_dereg_mr(src_mr) && !ibv_dereg_mr(sealed_mr) &&
			      !ibv_dereg_mr(file_mr),
		      "dereg the UD source MRs");
		check(stat_of(n, "pinned_pages") == pinned,
		      "UD source pages stay pinned after dereg");
		munmap(src, PAGE);
		munmap(sealed, PAGE);
		munmap(file, 2 * PAGE);
	}
	ibv_destroy_ah(ah);
	check(!ibv_destroy_qp(qp), "destroy UD QP");
	ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	struct rc_node n = {.dev = "rhinet0"};
	const struct ibv_qp_cap cap = {.max_send_wr = 8,
				       .max_recv_wr = 4,
				       .max_send_sge = 1,
				       .max_recv_sge = 1};
	int port = 18530, fd;
	const char *srv;

	program = "rhinet-odp";
	srv = peer_args(argc, argv, &n.dev, &n.gid_index, &port);
	rc_node_open(&n, 2 * MIB + 2 * PAGE, 16, cap);
	odp_caps(&n);
	fd = tcp_connect(srv, port);
	if (srv)
		client(&n, fd);
	else
		server(&n, fd);
	ud_send_on_demand(&n, fd);
	close(fd);
	return rc_node_close(&n);
}
