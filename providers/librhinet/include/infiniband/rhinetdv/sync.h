/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: locks and barriers.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_SYNC_H
#define INFINIBAND_RHINETDV_SYNC_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- locks and barriers (RHINETDV_1.5) ---------------------------------- */

/*
 * A lock or a barrier is named by a 64-bit ID at a manager endpoint
 * (manager_node, manager_endpoint): any endpoint, nothing to set up; its
 * NIC keeps the state. IDs are a name space per manager endpoint; a lock
 * and a barrier of the same ID are unrelated.
 *
 * rhinetdv_lock completes (RHINETDV_OP_LOCK) when this endpoint holds the
 * lock; locks are granted in the order the LOCKs reached the manager.
 * rhinetdv_unlock completes (RHINETDV_OP_UNLOCK) once the lock is passed
 * on or free. rhinetdv_barrier completes (RHINETDV_OP_BARRIER) when
 * `count` barriers of this ID (this one included) have reached the
 * manager; then the ID starts its next round. Completions come in posting
 * order: work posted after a waiting LOCK completes after it, although it
 * is not held back; post the critical section's work when the LOCK has
 * completed, and the UNLOCK when that work has.
 *
 * Completions (status / syndrome):
 *   IBV_WC_SUCCESS: granted, released, the round complete;
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_NOT_HELD: an UNLOCK of a lock
 *     this endpoint does not hold; a BARRIER whose count differs from its
 *     round's (the round goes on without it);
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_BAD_WQE: a LOCK of a lock this
 *     endpoint already holds or waits for;
 *   IBV_WC_REM_OP_ERR / RHINETDV_SYN_MEMBER_LOST: the lock broke or the
 *     round failed because a member's node (or the manager's) died or
 *     restarted, or the manager endpoint went away;
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_BAD_ENDPOINT: no manager
 *     endpoint there;
 *   IBV_WC_GENERAL_ERR / RHINETDV_SYN_BUSY: this NIC's records of locks
 *     held or waited for are full for the process.
 * None of these takes the endpoint to error. An endpoint that goes away
 * (destroyed, or its process exits) has what it holds passed on.
 */
enum rhinetdv_sync_flags {
	RHINETDV_SYNC_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_SYNC_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
};

/* The most participants of a barrier. */
#define RHINETDV_BARRIER_MAX_COUNT 1024

struct rhinetdv_sync_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint16_t manager_node;
	uint16_t reserved0; /* 0 */
	uint32_t manager_endpoint;
	uint64_t id; /* the lock's or barrier's ID */
	/* rhinetdv_barrier: participants, 1..RHINETDV_BARRIER_MAX_COUNT;
	 * 0 for locks
	 */
	uint32_t count;
	uint32_t flags; /* enum rhinetdv_sync_flags */
	uint64_t *status_word; /* STATUS_WORD, as for rhinetdv_push */
	uint32_t status_lkey;
	uint32_t reserved1; /* 0 */
};

/*
 * Post a LOCK, UNLOCK or BARRIER; inlen is sizeof(*attr) as the caller
 * knows it. ENOMEM: max_outstanding operations in flight; EINVAL: unknown
 * comp_mask bits or flags, reserved fields not 0, a count out of range
 * (or not 0 for a lock), a misaligned status word; EOPNOTSUPP: no
 * RHINETDV_CAP_SYNC.
 */
int rhinetdv_lock(struct rhinetdv_endpoint *ep,
		  const struct rhinetdv_sync_attr *attr, size_t inlen);
int rhinetdv_unlock(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_sync_attr *attr, size_t inlen);
int rhinetdv_barrier(struct rhinetdv_endpoint *ep,
		     const struct rhinetdv_sync_attr *attr, size_t inlen);

#endif /* INFINIBAND_RHINETDV_SYNC_H */
