/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: multicast: to a destination list and through switch groups.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_MCAST_H
#define INFINIBAND_RHINETDV_MCAST_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- sequential multicast (RHINETDV_1.5) -------------------------------- */

/*
 * One PUSH by area to every endpoint of a destination list: the NIC sends
 * the data to each destination in list order, over that node's reliable
 * channel, into the same (group_id, area_id, offset) of each member (what
 * a member sees is an ordinary PUSH: its group, area and rights checks).
 * The operation completes once (RHINETDV_OP_MCAST_LIST, byte_len = the
 * message length) when every destination has acknowledged; its status is
 * the first failure among them (IBV_WC_RETRY_EXC_ERR for an unreachable
 * member, a refusal's status otherwise) and the members that did not fail
 * have the data.
 *
 * The destination list is the caller's: num_dests entries at dests, in an
 * MR of the endpoint's PD readable through dests_lkey. The NIC reads it at
 * post time and again per destination, so it must stay unchanged (and
 * registered) until the operation completes; one list serves any number
 * of multicasts to the same members. A bad list completes the operation
 * with IBV_WC_LOC_PROT_ERR (key) or IBV_WC_LOC_QP_OP_ERR /
 * RHINETDV_SYN_BAD_WQE (a node that is no node of the fabric) before
 * anything is sent, and takes the endpoint to error as any refused work
 * request does.
 */
struct rhinetdv_mcast_dest {
	uint16_t node;
	uint16_t reserved; /* 0 */
	uint32_t endpoint;
};

/* The most destinations one multicast takes. */
#define RHINETDV_MCAST_MAX_DESTS 4096

enum rhinetdv_mcast_flags {
	RHINETDV_MCAST_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_MCAST_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* The bytes are copied into the work request (at most max_inline,
	 * BASIC only); lkey is not used.
	 */
	RHINETDV_MCAST_INLINE = RHINETDV_XFER_INLINE,
	/* Every member gets a signal of value `signal` on the area, as with
	 * RHINETDV_XFER_EX_SIGNAL (rhinetdv_wait_signal).
	 */
	RHINETDV_MCAST_SIGNAL = RHINETDV_XFER_EX_SIGNAL,
};

struct rhinetdv_mcast_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	const void *addr; /* the data */
	uint32_t length;
	uint32_t lkey; /* MR of addr in the endpoint's PD (not with INLINE) */
	uint32_t group_id; /* the target area's group */
	uint32_t area_id; /* the members' area */
	uint64_t offset; /* in each member's area */
	/* The destination list (see above), 1..RHINETDV_MCAST_MAX_DESTS */
	const struct rhinetdv_mcast_dest *dests;
	uint32_t dests_lkey;
	uint32_t num_dests;
	uint32_t flags; /* enum rhinetdv_mcast_flags */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint64_t *status_word;
	uint32_t signal; /* SIGNAL: the value each member's count grows by */
	/* A PUSH mode and its fields, as in rhinetdv_xfer_ex: BASIC, DIFF,
	 * BITMAP or STRIDE (length: the local extent)
	 */
	uint32_t mode; /* enum rhinetdv_mode */
	uint32_t block;
	uint32_t count;
	uint64_t local_stride;
	uint64_t remote_stride;
	const void *bitmap;
	uint32_t bitmap_lkey;
	uint32_t reserved; /* 0 */
	/* DIFF: compared for every member; the twin takes the bytes when the
	 * multicast completes, so every member receives the same runs
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * Posts a multicast; inlen is sizeof(*attr) as the caller knows it.
 * ENOMEM: max_outstanding operations in flight; EINVAL: unknown comp_mask
 * bits or flags, reserved fields not 0, no destinations or more than
 * RHINETDV_MCAST_MAX_DESTS, a NULL or misaligned list, a mode a PUSH does
 * not take or its fields wrong (as rhinetdv_push_ex), INLINE too long or
 * with a mode, a misaligned status word; EPERM: not a member of the
 * group; EOPNOTSUPP: no RHINETDV_CAP_MCAST_LIST.
 */
int rhinetdv_mcast_list(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_mcast_attr *attr, size_t inlen);

/* ---- simultaneous multicast (RHINETDV_1.6) ------------------------------ */

/*
 * One PUSH by area to every endpoint of a switch group: the NIC sends each
 * packet once, to the group, and the fabric switch copies it to the
 * members. The cluster administrator defines the groups (the pattern in
 * the switch, the member list in every member's NIC through its kernel);
 * a process only names one (switch_group, 0xf000..0xfffe) that its
 * process group may use. Every member acknowledges, losses are repaired,
 * and each member sees one sender's multicasts once and in posting order.
 * The operation completes once (RHINETDV_OP_MCAST_SWITCH, byte_len = the
 * message length) when every member has acknowledged; its status is the
 * first failure (IBV_WC_RETRY_EXC_ERR / RHINETDV_SYN_MEMBER_LOST: a
 * member stopped answering, and later multicasts to the group fail too
 * until the administrator sets the group again; a member's refusal, e.g.
 * IBV_WC_REM_ACCESS_ERR / RHINETDV_SYN_BAD_AREA), and the other members
 * have the data. A group this NIC has no list for completes with
 * IBV_WC_LOC_QP_OP_ERR / RHINETDV_SYN_NO_MCAST_GROUP before anything is
 * sent, and takes the endpoint to error as any refused work request does.
 * Fields and flags as for rhinetdv_mcast_list (no destination list).
 */
#define RHINETDV_MCAST_SWITCH_FIRST 0xf000
#define RHINETDV_MCAST_SWITCH_LAST 0xfffe

struct rhinetdv_mcast_switch_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	const void *addr; /* the data */
	uint32_t length;
	uint32_t lkey; /* MR of addr in the endpoint's PD (not with INLINE) */
	uint32_t group_id; /* the target area's group */
	uint32_t area_id; /* the members' area */
	uint64_t offset; /* in each member's area */
	uint16_t switch_group; /* the switch group's node ID */
	uint16_t reserved0; /* 0 */
	uint32_t flags; /* enum rhinetdv_mcast_flags */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint32_t signal; /* SIGNAL: the value each member's count grows by */
	uint64_t *status_word;
	/* A PUSH mode and its fields, as in rhinetdv_mcast_attr */
	uint32_t mode; /* enum rhinetdv_mode */
	uint32_t block;
	uint32_t count;
	uint32_t bitmap_lkey;
	uint64_t local_stride;
	uint64_t remote_stride;
	const void *bitmap;
	struct ibv_dm *twin; /* DIFF: sent once for all members */
	uint64_t twin_offset;
};

/*
 * Posts a simultaneous multicast; inlen is sizeof(*attr) as the caller
 * knows it. ENOMEM: max_outstanding operations in flight; EINVAL: unknown
 * comp_mask bits or flags, reserved fields not 0, switch_group outside
 * 0xf000..0xfffe, a mode a PUSH does not take or its fields wrong, INLINE
 * too long or with a mode, a misaligned status word; EPERM: not a member
 * of the area's group; EOPNOTSUPP: no RHINETDV_CAP_MCAST_SWITCH.
 */
int rhinetdv_mcast_switch(struct rhinetdv_endpoint *ep,
			  const struct rhinetdv_mcast_switch_attr *attr,
			  size_t inlen);

#endif /* INFINIBAND_RHINETDV_MCAST_H */
