/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: watches, sleeping until a peer writes one of this process's
 * areas (RHINETDV_1.21).
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_WATCH_H
#define INFINIBAND_RHINETDV_WATCH_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- watches (RHINETDV_1.21) -------------------------------------------- */

/*
 * A process waiting for a word of its own area that peers write (a flag
 * after a PUSH, a counter they add to) cannot see the write land: the NIC
 * writes by DMA. rhinetdv_watch_area asks the NIC to tell: it arms a
 * one-shot watch on one of this process's areas (group_id, area_id). The
 * next PUSH by area (any mode, multicast included) or atomic that changes
 * a word of it, landing after the watch is armed, fires the watch: the
 * NIC writes a CQE to this endpoint's CQ (raising its completion event,
 * so a sleeping rhinetdv_wait_event or rhinetdv_wait_watch wakes) and the
 * watch is gone. rhinetdv_watch_count counts the firings per area; they
 * are never reported by rhinetdv_poll.
 *
 * One watch per area for the whole process: arming again replaces the
 * last one (fired or not), from this endpoint or another of the process.
 * A watch of a destroyed endpoint fires nowhere.
 *
 * The watch is armed when its operation completes (RHINETDV_OP_WATCH, as
 * asked for by SIGNALED or STATUS_WORD); a write that landed before fires
 * nothing. A wait that does not miss a write: look at memory; arm; wait
 * for the arming's completion; look again; then rhinetdv_wait_watch for a
 * count above the one read before arming; after each firing look again
 * and arm again. Stores that do not come through the NIC (this process's
 * own, another device's) fire nothing: sleep in bounded slices if there
 * are any.
 *
 * Completions of rhinetdv_watch_area (status / syndrome):
 *   IBV_WC_SUCCESS: armed;
 *   IBV_WC_GENERAL_ERR / RHINETDV_SYN_NO_WATCH_AREA: no area (group_id,
 *     area_id) of this process; nothing armed, the endpoint goes on.
 */
enum rhinetdv_watch_flags {
	RHINETDV_WATCH_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_WATCH_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
};

struct rhinetdv_watch_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint32_t group_id; /* the area's process group (0: the open group) */
	uint32_t area_id; /* the area, as rhinetdv_reg_area registered it */
	uint32_t flags; /* enum rhinetdv_watch_flags */
	uint32_t status_lkey;
	uint64_t *status_word; /* STATUS_WORD, as for rhinetdv_push */
};

/*
 * Post a WATCH of one of this process's areas; inlen is sizeof(*attr) as
 * the caller knows it. ENOMEM: max_outstanding operations in flight;
 * EINVAL: unknown comp_mask bits or flags, a group or area ID above
 * 0xffff, a misaligned status word; EOPNOTSUPP: no RHINETDV_CAP_WATCH.
 */
int rhinetdv_watch_area(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_watch_attr *attr, size_t inlen);
/*
 * How many watches of (group, area) armed by this endpoint fired since it
 * was created. Nonblocking; takes what the NIC has written to the CQ
 * (other completions stay for rhinetdv_poll).
 */
int rhinetdv_watch_count(struct rhinetdv_endpoint *ep, uint32_t group_id,
			 uint32_t area_id, uint64_t *count);
/*
 * Sleeps (the NIC interrupts through the kernel's completion events; no
 * busy polling) until rhinetdv_watch_count of (group, area) reaches
 * `count`, or timeout_ms passes (-1: no limit). 0, ETIMEDOUT, or an
 * errno: EINVAL, EIO (the completion channel failed), EOPNOTSUPP.
 * Completions that arrive meanwhile stay for rhinetdv_poll.
 */
int rhinetdv_wait_watch(struct rhinetdv_endpoint *ep, uint32_t group_id,
			uint32_t area_id, uint64_t count, int timeout_ms);

#endif /* INFINIBAND_RHINETDV_WATCH_H */
