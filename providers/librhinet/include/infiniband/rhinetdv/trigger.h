/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: triggered operations (Documentation/hardware/triggered.md).
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_TRIGGER_H
#define INFINIBAND_RHINETDV_TRIGGER_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- trigger counters and triggered work requests (RHINETDV_1.13) ------- */

/*
 * A trigger counter: a 64-bit value on the NIC, owned by the process
 * (ibv_context) that created it. One 8-byte store to the process's
 * doorbell page adds to it (rhinetdv_trigger_add); work requests posted
 * triggered wait in the NIC until it reaches their threshold, and chained
 * ones add 1 to a counter when they complete. Read-only after creation.
 */
struct rhinetdv_trigger {
	struct ibv_context *context;
	uint32_t handle; /* the NIC's: what the doorbell and WQEs name */
	/* Chosen at random by the driver: what a peer's increment has to
	 * carry besides the handle (rhinetdv_wr_trigger_add,
	 * rhinetdv_trigger_add_remote). The owner hands handle and key to
	 * the peers it lets in; neither is secret from the owner.
	 */
	uint32_t key;
};

struct rhinetdv_trigger_init_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t value; /* the counter's first value */
};

/*
 * Creates a counter (inlen: sizeof(*attr) as the caller knows it; attr
 * may be NULL: value 0). NULL and errno: EOPNOTSUPP (not a rhinet
 * context, or a NIC without triggered operations), EINVAL (unknown
 * comp_mask bits), ENOSPC (the NIC's table is full, or this process or
 * its user holds its share of it), ENOMEM.
 */
struct rhinetdv_trigger *
rhinetdv_create_trigger(struct ibv_context *context,
			const struct rhinetdv_trigger_init_attr *attr,
			size_t inlen);
/*
 * Ends the counter: work requests still waiting on it complete with
 * IBV_WC_WR_FLUSH_ERR, vendor_err RHINETDV_SYN_TRIGGER_GONE, their own
 * wr_id. Closing the device or exiting does the same for every counter.
 */
int rhinetdv_destroy_trigger(struct rhinetdv_trigger *trig);
/*
 * Adds @addend to the counter: one 8-byte store to the doorbell page, no
 * system call; work requests whose threshold it reaches start. The NIC
 * applies adds in the order it takes its doorbells; one that exceeds
 * its doorbell queue is lost (read the value back when in doubt).
 */
int rhinetdv_trigger_add(struct rhinetdv_trigger *trig, uint32_t addend);
/* The counter's value now (a system call: the NIC is asked). */
int rhinetdv_trigger_read(struct rhinetdv_trigger *trig, uint64_t *value);

enum rhinetdv_wr_trigger_mask {
	/* counter and threshold are set: the WR waits on the counter */
	RHINETDV_WR_TRIGGER_COUNTER = 1 << 0,
	/* chain is set: the WR's successful completion adds 1 to it */
	RHINETDV_WR_TRIGGER_CHAIN = 1 << 1,
};

struct rhinetdv_wr_trigger {
	uint64_t comp_mask; /* enum rhinetdv_wr_trigger_mask, at least one */
	struct rhinetdv_trigger *counter;
	uint64_t threshold; /* starts once the counter's value >= this */
	struct rhinetdv_trigger *chain;
};

/* vendor_err of completions of triggered work requests */
enum rhinetdv_trigger_syndrome {
	/* IBV_WC_GENERAL_ERR: counter or chain is no live counter of the
	 * QP's process (destroyed, or another process's)
	 */
	RHINETDV_SYN_BAD_TRIGGER = 31,
	/* IBV_WC_GENERAL_ERR: the NIC's table of waiting WRs is full, or
	 * the process holds its share of it
	 */
	RHINETDV_SYN_TRIGGER_NO_ROOM = 32,
	/* IBV_WC_WR_FLUSH_ERR: the counter was destroyed (or its process
	 * closed the device) while the WR waited
	 */
	RHINETDV_SYN_TRIGGER_GONE = 33,
};

/*
 * Makes the work request being built on @qp (the one the last
 * ibv_wr_<opcode> call between ibv_wr_start and ibv_wr_complete started,
 * like ibv_wr_set_sge) triggered and/or chained. Any WR of the QP's
 * opcodes may be. A triggered WR is always signaled: its completion comes
 * when it ran, with its own wr_id, possibly after WRs posted behind it;
 * until then no WR 65536 slots later is posted (ENOMEM), nor more than 256
 * triggered WRs on the QP. Errors fail the batch at
 * ibv_wr_complete: EINVAL (no WR started, unknown comp_mask bits, none
 * set, a counter of another context, a WR that does not fit the send
 * queue's slots with one slot more), EOPNOTSUPP (no triggered operations).
 * Returns the same errno at once.
 */
int rhinetdv_wr_set_trigger(struct ibv_qp_ex *qp,
			    const struct rhinetdv_wr_trigger *trig,
			    size_t inlen);
/*
 * The next operation posted on @ep that its call accepts (returns 0) is
 * triggered and/or chained as @trig says, whatever its kind (push, pull,
 * isend, atomic, ...); calls refused leave it armed, @trig NULL disarms.
 * The operation reports as it would untriggered (through rhinetdv_poll
 * with its own wr_id, or its status word) once it ran. EINVAL and
 * EOPNOTSUPP as rhinetdv_wr_set_trigger.
 */
int rhinetdv_set_trigger(struct rhinetdv_endpoint *ep,
			 const struct rhinetdv_wr_trigger *trig, size_t inlen);

/* ---- remote increments (RHINETDV_1.17) ---------------------------------- */

/* vendor_err of a refused remote increment */
enum rhinetdv_remote_trigger_syndrome {
	/* IBV_WC_REM_ACCESS_ERR: the handle and key do not name a live
	 * counter of the process the request reached (a wrong key, a
	 * destroyed counter, another process's); nothing was added
	 */
	RHINETDV_SYN_BAD_REMOTE_TRIGGER = 34,
};

/*
 * Starts a work request on an RC @qp (between ibv_wr_start and
 * ibv_wr_complete, like ibv_wr_rdma_write) that adds @addend to a peer's
 * counter, named by the handle and key its owner gave out (struct
 * rhinetdv_trigger's fields). Work requests parked on it whose threshold
 * is reached start at the peer. Optionally ibv_wr_set_sge with exactly 8
 * bytes (local write) receives the counter's value before the add; with
 * no SGE the value is not wanted. It completes as IBV_WC_FETCH_ADD
 * (byte_len 8 with the SGE, 0 without); a refusal at the peer as
 * IBV_WC_REM_ACCESS_ERR, vendor_err RHINETDV_SYN_BAD_REMOTE_TRIGGER (the
 * QP then goes to the error state, as after any remote error). It may be
 * triggered or chained itself (rhinetdv_wr_set_trigger). Errors fail the
 * batch at ibv_wr_complete and are returned at once: EOPNOTSUPP (a UD or
 * UC QP: the answer needs a reliable channel; a NIC without triggered
 * operations; a QP of another provider, whose batch is not touched),
 * EINVAL at ibv_wr_complete (an SGE list of another length, or of more
 * than one entry; inline data).
 */
int rhinetdv_wr_trigger_add(struct ibv_qp_ex *qp, uint32_t handle,
			    uint32_t key, uint64_t addend);

struct rhinetdv_trigger_add_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	/* NULL, or where the counter's value before the add lands: 8-byte
	 * aligned, in an MR with local write of the endpoint's PD
	 */
	uint64_t *result;
	uint32_t result_lkey;
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint; /* the counter's owner's endpoint */
	uint32_t handle; /* the peer's counter, as its owner gave it out */
	uint32_t key; /* its key */
	uint32_t reserved1; /* 0 */
	uint64_t addend;
};

/*
 * The endpoint form of rhinetdv_wr_trigger_add: adds attr->addend to the
 * counter (handle, key) of the process owning endpoint dest_endpoint of
 * dest_node; inlen is sizeof(*attr) as the caller knows it. Always
 * reports through rhinetdv_poll (RHINETDV_OP_TRIGGER_ADD; byte_len 8 with
 * a result, 0 without): no status word. A refusal at the peer completes
 * IBV_WC_REM_ACCESS_ERR, syndrome RHINETDV_SYN_BAD_REMOTE_TRIGGER. It
 * may be triggered or chained (rhinetdv_set_trigger). EINVAL: unknown
 * comp_mask bits, reserved fields not 0, a misaligned result; ENOMEM:
 * the endpoint's queue is full; EOPNOTSUPP: no triggered operations.
 */
int rhinetdv_trigger_add_remote(struct rhinetdv_endpoint *ep,
				const struct rhinetdv_trigger_add_attr *attr,
				size_t inlen);

#endif /* INFINIBAND_RHINETDV_TRIGGER_H */
