/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: remote atomics.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_ATOMIC_H
#define INFINIBAND_RHINETDV_ATOMIC_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- remote atomics (RHINETDV_1.9) --------------------------------------- */

enum rhinetdv_atomic_op {
	RHINETDV_ATOMIC_FETCH_ADD = 1, /* word += compare_add */
	RHINETDV_ATOMIC_CMP_SWAP = 2, /* word == compare_add ? swap : word */
	/* rhinetdv_atomic_ext only (RHINETDV_1.19) */
	RHINETDV_ATOMIC_SWAP = 3, /* word = operand (a set without fetch) */
	RHINETDV_ATOMIC_FETCH = 4, /* the word is only read */
	RHINETDV_ATOMIC_AND = 5, /* word &= operand */
	RHINETDV_ATOMIC_OR = 6, /* word |= operand */
	RHINETDV_ATOMIC_XOR = 7, /* word ^= operand */
};

enum rhinetdv_atomic_flags {
	/* the target is (remote_addr, rkey), not (group_id, area_id, offset) */
	RHINETDV_ATOMIC_BY_KEY = 1 << 0,
	/* starts after every earlier PULL and atomic of the endpoint is done */
	RHINETDV_ATOMIC_FENCE = 1 << 1,
	/* rhinetdv_atomic_ext only (RHINETDV_1.19): a 4-byte word */
	RHINETDV_ATOMIC_32 = 1 << 2,
	/* rhinetdv_atomic_ext only: the old value is not wanted (result
	 * NULL); not with RHINETDV_ATOMIC_FETCH
	 */
	RHINETDV_ATOMIC_NO_FETCH = 1 << 3,
};

struct rhinetdv_atomic_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	/* The word's value before the operation lands here: 8-byte aligned,
	 * in an MR with local write of the endpoint's PD (result_lkey).
	 */
	uint64_t *result;
	uint32_t result_lkey;
	uint32_t op; /* enum rhinetdv_atomic_op */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint32_t group_id; /* by area: the area's group */
	uint32_t area_id; /* by area */
	uint64_t offset; /* by area: 8-byte aligned offset of the word */
	uint64_t remote_addr; /* BY_KEY: 8-byte aligned */
	uint32_t rkey; /* BY_KEY: with remote atomic access */
	uint32_t flags; /* enum rhinetdv_atomic_flags */
	uint64_t compare_add; /* FETCH_ADD: the addend; CMP_SWAP: compared */
	uint64_t swap; /* CMP_SWAP: the new value */
};

/*
 * Posts one remote atomic on an aligned 64-bit word of a peer's area (or
 * memory region); inlen is sizeof(*attr) as the caller knows it. The
 * target NIC executes it once (a resent request is answered from its
 * record). It always reports through rhinetdv_poll (RHINETDV_OP_FETCH_ADD,
 * RHINETDV_OP_CMP_SWAP): the WQE's operand bytes leave no room for a
 * status word. Atomics are atomic with respect to each other, not to the
 * target's CPU. ENOMEM: max_outstanding operations in flight; EINVAL:
 * unknown comp_mask bits, op or flags, reserved fields not 0, a
 * misaligned target or result; EPERM: not a member of the area's group;
 * EOPNOTSUPP: no RHINETDV_CAP_ATOMIC. A target the NIC refuses completes
 * with RHINETDV_SYN_ALIGNMENT, _BOUNDS, _BAD_AREA or _ACCESS_RIGHTS.
 */
int rhinetdv_atomic(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_atomic_attr *attr, size_t inlen);

/* ---- the whole atomic family (RHINETDV_1.19) ---------------------------- */

struct rhinetdv_atomic_ext_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	/* The word's value before the operation lands here (4 or 8 bytes,
	 * aligned to them, in an MR with local write: result_lkey); NULL
	 * with RHINETDV_ATOMIC_NO_FETCH.
	 */
	void *result;
	uint32_t result_lkey;
	uint32_t op; /* enum rhinetdv_atomic_op */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint32_t group_id; /* by area: the area's group */
	uint32_t area_id; /* by area */
	uint64_t offset; /* by area: the word's offset, aligned to its width */
	uint64_t remote_addr; /* BY_KEY: aligned to the word's width */
	uint32_t rkey; /* BY_KEY: with remote atomic access */
	uint32_t flags; /* enum rhinetdv_atomic_flags */
	/* the addend, the new value (SWAP), the mask (AND/OR/XOR), the value
	 * compared (CMP_SWAP); the low 32 bits with RHINETDV_ATOMIC_32
	 */
	uint64_t operand;
	uint64_t swap; /* CMP_SWAP: the new value; otherwise 0 */
};

/*
 * As rhinetdv_atomic, for every operation of enum rhinetdv_atomic_op on a
 * 4-byte (RHINETDV_ATOMIC_32) or 8-byte word, fetching the old value or
 * not (RHINETDV_ATOMIC_NO_FETCH). Completes with RHINETDV_OP_ATOMIC_EXT
 * (byte_len: the bytes written to result). EOPNOTSUPP without
 * RHINETDV_CAP_ATOMIC_EXT; EINVAL as rhinetdv_atomic, and for a result
 * given without fetch or missing with it.
 */
int rhinetdv_atomic_ext(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_atomic_ext_attr *attr,
			size_t inlen);

#endif /* INFINIBAND_RHINETDV_ATOMIC_H */
