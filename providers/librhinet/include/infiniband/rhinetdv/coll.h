/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: collectives executed by the NICs.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_COLL_H
#define INFINIBAND_RHINETDV_COLL_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- collectives (RHINETDV_1.10) ----------------------------------------- */

enum rhinetdv_coll_op {
	RHINETDV_COLL_ALLREDUCE = 1,
	RHINETDV_COLL_REDUCE = 2, /* the result at root only */
	RHINETDV_COLL_BCAST = 3, /* root's send into every other rank's recv */
	RHINETDV_COLL_BARRIER = 4, /* no data: length 0 */
};

enum rhinetdv_coll_reduce {
	RHINETDV_COLL_SUM = 0,
	RHINETDV_COLL_MIN = 1,
	RHINETDV_COLL_MAX = 2,
	RHINETDV_COLL_BAND = 3, /* integer types only, as BOR and BXOR */
	RHINETDV_COLL_BOR = 4,
	RHINETDV_COLL_BXOR = 5,
};

enum rhinetdv_coll_type {
	RHINETDV_COLL_INT32 = 0,
	RHINETDV_COLL_UINT32 = 1,
	RHINETDV_COLL_INT64 = 2,
	RHINETDV_COLL_UINT64 = 3,
	RHINETDV_COLL_FLOAT = 4,
	RHINETDV_COLL_DOUBLE = 5,
};

enum rhinetdv_coll_flags {
	RHINETDV_COLL_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_COLL_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* ALLREDUCE and BARRIER, radix 0: the fabric switch combines the
	 * nodes' partials (each NIC still combines its own ranks first);
	 * every rank must ask for it. RHINETDV_CAP_COLL_IN_SWITCH.
	 */
	RHINETDV_COLL_IN_SWITCH = 1 << 2,
};

#define RHINETDV_COLL_MAX_RANKS 256
#define RHINETDV_COLL_MAX_LOCAL 8 /* ranks of a communicator on one NIC */
#define RHINETDV_COLL_MAX_RADIX 16

struct rhinetdv_coll_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id;
	uint32_t op; /* enum rhinetdv_coll_op */
	uint32_t reduce; /* enum rhinetdv_coll_reduce */
	uint32_t type; /* enum rhinetdv_coll_type */
	/* The communicator: (group_id, comm_id), group 0 or one the process
	 * is in; the same at every rank.
	 */
	uint32_t group_id;
	uint32_t comm_id; /* 0..65535 */
	uint32_t rank; /* this endpoint's */
	uint32_t nranks; /* 1..RHINETDV_COLL_MAX_RANKS */
	uint32_t root; /* REDUCE, BCAST */
	/* 0: the NIC chooses; 1: a chain (the ring's pattern); k: a tree of
	 * fan-out k across nodes, k <= RHINETDV_COLL_MAX_RADIX
	 */
	uint32_t radix;
	uint32_t seg_size; /* 0: the NIC's; else a multiple of the type, <= 4096 */
	uint64_t length; /* bytes of send and of recv */
	const void *send; /* operand (BCAST: root's data); endpoint's PD */
	void *recv; /* result; may equal send */
	uint32_t send_lkey;
	uint32_t recv_lkey;
	/* nranks (node, endpoint) records in rank order, the same list at
	 * every rank, in an MR of the endpoint's PD; entry rank is this
	 * endpoint
	 */
	const struct rhinetdv_mcast_dest *members;
	uint32_t members_lkey;
	uint32_t flags; /* enum rhinetdv_coll_flags */
	uint64_t *status_word; /* STATUS_WORD, as for rhinetdv_push */
	uint32_t status_lkey;
	uint32_t reserved; /* 0 */
};

/*
 * Posts this rank's part of a collective; inlen is sizeof(*attr) as the
 * caller knows it. Every rank of the communicator posts the same sequence
 * of collectives (same op, reduce, type, length, root, radix, seg_size).
 * The NICs execute it: each reads its ranks' operands and writes their
 * results by DMA, no host CPU involved. It completes (RHINETDV_OP_COLLECTIVE)
 * when this rank's result is in place. ENOMEM: max_outstanding operations
 * in flight; EINVAL: unknown comp_mask bits or flags, reserved fields not
 * 0, values out of range, a length that is not whole elements, a bitwise
 * reduce of a floating type, a barrier with data, a misaligned status
 * word; EPERM: not a member of the group; EOPNOTSUPP: no
 * RHINETDV_CAP_COLLECTIVE. Completes with RHINETDV_SYN_COLL_MISMATCH when
 * the ranks disagree, RHINETDV_SYN_MEMBER_LOST when a member's node or
 * endpoint is gone, RHINETDV_SYN_COLL_NO_ROOM when the NIC holds no more
 * communicators for the process, RHINETDV_SYN_COLL_NO_SWITCH when
 * RHINETDV_COLL_IN_SWITCH was asked and the switch never answered (it
 * does not reduce). EOPNOTSUPP also for RHINETDV_COLL_IN_SWITCH without
 * RHINETDV_CAP_COLL_IN_SWITCH; EINVAL for it with another op or a radix.
 */
int rhinetdv_collective(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_coll_attr *attr, size_t inlen);

#endif /* INFINIBAND_RHINETDV_COLL_H */
