/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: building send WQEs. The one way a WQE is
 * laid out, used by the provider, the kernel's own QPs, the simulator and
 * the fuzzers. A WQE is built in a contiguous buffer of RHN_WQE_MAX_SLOTS
 * slots; the caller then copies its slots into the ring (which may wrap).
 *
 * Layout, from the first slot on (Documentation/hardware/queues.md):
 *   the base slot (struct rhn_send_wqe), whose last 16 bytes start the data
 *   data slots: more SGEs (four per slot) or more inline bytes
 *   a partial-transfer descriptor (struct rhn_wqe_xfer), if the mode is
 *   not basic
 *   the family's description (struct rhn_wqe_mcast or rhn_wqe_coll), or,
 *   for a UD SEND, the route (struct rhn_wqe_grh): the last slot
 *   a trigger slot (struct rhn_wqe_trigger) after all of them, with
 *   RHN_WQE_X_* flags (the NIC takes it off when it fetches the WQE)
 *
 *   __u8 buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
 *   struct rhn_send_wqe *w = rhn_wqe_start(buf, RHN_OP_WRITE, flags, pi);
 *   w->remote_key = ...;
 *   for (i = 0; i < n; i++)
 *           rhn_wqe_put_sge(buf, i, addr[i], length[i], lkey[i]);
 *   data = rhn_wqe_set_sges(buf, n);     (or rhn_wqe_put/set_inline)
 *   slots = rhn_wqe_finish(buf, data, &tail);   (0: does not fit)
 *
 * Little-endian hosts only (every structure is little-endian and the
 * builders store host values); the kernel converts with cpu_to_le*() where
 * it fills fields itself.
 */
#ifndef RHINET_HW_WQE_H
#define RHINET_HW_WQE_H

#include "hw_common.h"
#include "hw_queues.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the WQE builders store host values: little-endian hosts only"
#endif

/* Extension slots for @sges SGEs beyond the base slot's one. */
static inline __u32 rhn_wqe_units_for_sges(__u32 sges)
{
	return sges > RHN_WQE_BASE_SGES
		       ? (sges - RHN_WQE_BASE_SGES + RHN_SGES_PER_EXT_UNIT -
			  1) / RHN_SGES_PER_EXT_UNIT
		       : 0;
}

/* Extension slots for @len inline bytes beyond the base slot's 16. */
static inline __u32 rhn_wqe_units_for_inline(__u32 len)
{
	return len > RHN_WQE_BASE_INLINE
		       ? (len - RHN_WQE_BASE_INLINE + RHN_SQ_SLOT_SIZE - 1) /
				 RHN_SQ_SLOT_SIZE
		       : 0;
}

/*
 * Slots the largest WQE of a queue takes: @max_sges SGEs or @max_inline
 * inline bytes, and for UD the route slot. The kernel and the provider
 * size send queues by this one rule.
 */
static inline __u32 rhn_wqe_slots(__u32 max_sges, __u32 max_inline, int ud)
{
	__u32 sge_units = rhn_wqe_units_for_sges(max_sges);
	__u32 inline_units = rhn_wqe_units_for_inline(max_inline);

	return 1 + (sge_units > inline_units ? sge_units : inline_units) +
	       (ud ? 1 : 0);
}

/* Inline bytes a WQE of @slots slots (one of them a route for UD) holds. */
static inline __u32 rhn_wqe_inline_capacity(__u32 slots, int ud)
{
	__u32 data_units = slots - 1 - (ud ? 1 : 0);

	return RHN_WQE_BASE_INLINE + data_units * RHN_SQ_SLOT_SIZE;
}

/* Clears the base slot and sets what every WQE has. */
static inline struct rhn_send_wqe *rhn_wqe_start(void *buf, __u8 opcode,
						 __u8 flags, __u32 wqe_index)
{
	struct rhn_send_wqe *w = (struct rhn_send_wqe *)buf;

	__builtin_memset(w, 0, sizeof(*w));
	w->opcode = opcode;
	w->flags = flags;
	w->wqe_index = (__le16)wqe_index;
	return w;
}

/* Stores the i-th SGE (SGEs are contiguous from the base slot's data). */
static inline void rhn_wqe_put_sge(void *buf, __u32 i, __u64 addr, __u32 length,
				   __u32 lkey)
{
	struct rhn_sge *s =
		(struct rhn_sge *)((__u8 *)buf +
				   RHN_OFFSETOF(struct rhn_send_wqe, d)) +
		i;

	s->addr = (__le64)addr;
	s->length = (__le32)length;
	s->lkey = (__le32)lkey;
}

/* Records that the WQE has @n SGEs; returns its data extension slots. */
static inline __u32 rhn_wqe_set_sges(void *buf, __u32 n)
{
	((struct rhn_send_wqe *)buf)->num_sge = (__le16)n;
	return rhn_wqe_units_for_sges(n);
}

/*
 * Copies @len inline bytes at @offset into the WQE's data (pieces of one
 * payload are put one after the other).
 */
static inline void rhn_wqe_put_inline(void *buf, __u32 offset, const void *src,
				      __u32 len)
{
	__builtin_memcpy((__u8 *)buf + RHN_OFFSETOF(struct rhn_send_wqe, d) +
				 offset,
			 src, len);
}

/* Marks the WQE inline with @len bytes; returns its data extension slots. */
static inline __u32 rhn_wqe_set_inline(void *buf, __u32 len)
{
	struct rhn_send_wqe *w = (struct rhn_send_wqe *)buf;

	w->flags |= RHN_WQE_F_INLINE;
	w->num_sge = (__le16)len;
	return rhn_wqe_units_for_inline(len);
}

/* The slots that end a WQE; any may be absent (NULL). */
struct rhn_wqe_tail {
	__u8 xfer_mode; /* enum rhn_xfer_mode; not basic: xfer is set */
	const struct rhn_wqe_xfer *xfer;
	const struct rhn_wqe_mcast *mcast;
	const struct rhn_wqe_coll *coll;
	const struct rhn_wqe_grh *grh; /* UD: also sets RHN_WQE_F_GRH */
	/* enum rhn_wqe_xflags; not 0: trigger is set and goes last */
	__u16 xflags;
	const struct rhn_wqe_trigger *trigger;
};

/*
 * Appends the tail after @data_units data slots and sets ext_units (and
 * xflags). Returns the WQE's slots, or 0 if it would not fit in
 * RHN_WQE_MAX_SLOTS or names more than one last slot.
 */
static inline __u32 rhn_wqe_finish(void *buf, __u32 data_units,
				   const struct rhn_wqe_tail *t)
{
	struct rhn_send_wqe *w = (struct rhn_send_wqe *)buf;
	__u8 *slots = (__u8 *)buf;
	__u32 n = 1 + data_units;
	int last = 0;

	if (t && t->xfer_mode != RHN_XFER_BASIC) {
		if (!t->xfer || n >= RHN_WQE_MAX_SLOTS)
			return 0;
		__builtin_memcpy(slots + n++ * RHN_SQ_SLOT_SIZE, t->xfer,
				 RHN_SQ_SLOT_SIZE);
		w->xfer_mode = t->xfer_mode;
	}
	if (t && t->mcast) {
		if (n >= RHN_WQE_MAX_SLOTS)
			return 0;
		__builtin_memcpy(slots + n++ * RHN_SQ_SLOT_SIZE, t->mcast,
				 RHN_SQ_SLOT_SIZE);
		last++;
	}
	if (t && t->coll) {
		if (n >= RHN_WQE_MAX_SLOTS)
			return 0;
		__builtin_memcpy(slots + n++ * RHN_SQ_SLOT_SIZE, t->coll,
				 RHN_SQ_SLOT_SIZE);
		last++;
	}
	if (t && t->grh) {
		if (n >= RHN_WQE_MAX_SLOTS)
			return 0;
		__builtin_memcpy(slots + n++ * RHN_SQ_SLOT_SIZE, t->grh,
				 RHN_SQ_SLOT_SIZE);
		w->flags |= RHN_WQE_F_GRH;
		last++;
	}
	if (t && t->xflags) {
		if (!t->trigger || n >= RHN_WQE_MAX_SLOTS)
			return 0;
		__builtin_memcpy(slots + n++ * RHN_SQ_SLOT_SIZE, t->trigger,
				 RHN_SQ_SLOT_SIZE);
		w->xflags = (__le16)t->xflags;
	}
	if (last > 1 || n > RHN_WQE_MAX_SLOTS)
		return 0;
	w->ext_units = (__u8)(n - 1);
	return n;
}

#endif /* RHINET_HW_WQE_H */
