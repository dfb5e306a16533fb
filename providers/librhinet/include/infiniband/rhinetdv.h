/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: direct verbs of the RHiNET-NG NIC (librhinetdv.so.1, symbol
 * versions RHINETDV_1.0 to RHINETDV_1.3 and RHINETDV_1.5 to RHINETDV_1.9;
 * rhinetdv 1.4 added no function, only fields: the partial-transfer modes
 * of isend and irecv, which a library has when it reports
 * RHINETDV_CAP_TAG_XFER; RHINETDV_1.5 adds sequential multicast, locks and
 * barriers; RHINETDV_1.6 simultaneous multicast; RHINETDV_1.7 shared
 * regions; RHINETDV_1.8 the administrator's switch groups; RHINETDV_1.9
 * remote atomics on endpoints; RHINETDV_1.10 collectives executed by the
 * NICs; RHINETDV_1.11 the administrator's process group grants). What
 * ibverbs has no
 * words for:
 * the reliable connectionless endpoint (one per process; it reaches every
 * (node, endpoint) of the fabric), communication areas registered under a
 * group-wide area ID, PUSH and PULL addressed as (node, endpoint, area ID,
 * offset), and completions as status words the NIC writes into memory.
 *
 * Every function checks that the context it is given belongs to a rhinet
 * device and fails with EOPNOTSUPP otherwise. Functions returning int
 * return 0 or an errno value; those returning a pointer return NULL and set
 * errno. PUSH, PULL, polling and status words make no system call.
 *
 * Manual pages: rhinetdv(7), rhinetdv_query_device(3),
 * rhinetdv_create_endpoint(3), rhinetdv_reg_area(3), rhinetdv_push(3),
 * rhinetdv_poll(3), rhinetdv_status_word(3), rhinetdv_push_ex(3),
 * rhinetdv_reg_area_ex(3), rhinetdv_wait_signal(3), rhinetdv_twin_handle(3),
 * rhinetdv_isend(3), rhinetdv_pd_req(3), rhinetdv_mcast_list(3),
 * rhinetdv_mcast_switch(3), rhinetdv_set_mcast_group(3), rhinetdv_lock(3),
 * rhinetdv_subscribe(3), rhinetdv_atomic(3), rhinetdv_collective(3),
 * rhinetdv_grant_group(3), rhinet-group(8).
 */
#ifndef INFINIBAND_RHINETDV_H
#define INFINIBAND_RHINETDV_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device ------------------------------------------------------------- */

enum rhinetdv_device_caps {
	RHINETDV_CAP_ENDPOINT = 1 << 0, /* rhinetdv_create_endpoint works */
	RHINETDV_CAP_AREA = 1 << 1, /* rhinetdv_reg_area works (driver too) */
	RHINETDV_CAP_STATUS_WORD = 1 << 2,
	/* rhinetdv_push_ex/pull_ex: by key, stride, bitmap, remote signals */
	RHINETDV_CAP_XFER_EX = 1 << 3,
	/* twin memory (ibv_alloc_dm): RHINETDV_MODE_TWIN and _DIFF */
	RHINETDV_CAP_TWIN = 1 << 4,
	/* process groups: areas in groups, RHINET_GROUPS at open */
	RHINETDV_CAP_GROUPS = 1 << 5,
	/* isend/irecv matched by the NIC: rhinetdv_isend, _irecv, _iprobe */
	RHINETDV_CAP_TAG = 1 << 6,
	/* remote pin-down: RHINETDV_AREA_PIN_ON_DEMAND, rhinetdv_pd_req and
	 * rhinetdv_pd_release (RHINETDV_1.3)
	 */
	RHINETDV_CAP_PIN_ON_DEMAND = 1 << 7,
	/* isend and irecv take partial-transfer modes (004 table 1):
	 * RHINETDV_ISEND_ATTR_MASK_XFER, RHINETDV_IRECV_ATTR_MASK_XFER
	 * (rhinetdv 1.4)
	 */
	RHINETDV_CAP_TAG_XFER = 1 << 8,
	/* locks and barriers: rhinetdv_lock, _unlock, _barrier (RHINETDV_1.5) */
	RHINETDV_CAP_SYNC = 1 << 9,
	/* sequential multicast: rhinetdv_mcast_list (RHINETDV_1.5) */
	RHINETDV_CAP_MCAST_LIST = 1 << 10,
	/* simultaneous multicast through switch groups: rhinetdv_mcast_switch
	 * (RHINETDV_1.6)
	 */
	RHINETDV_CAP_MCAST_SWITCH = 1 << 11,
	/* shared regions with a home and a directory: rhinetdv_subscribe,
	 * _unsubscribe, _share_update (RHINETDV_1.7)
	 */
	RHINETDV_CAP_SHARE = 1 << 12,
	/* remote fetch-and-add and compare-and-swap: rhinetdv_atomic
	 * (RHINETDV_1.9)
	 */
	RHINETDV_CAP_ATOMIC = 1 << 13,
	/* allreduce, reduce, broadcast and barrier executed by the NICs:
	 * rhinetdv_collective (RHINETDV_1.10)
	 */
	RHINETDV_CAP_COLLECTIVE = 1 << 14,
	/* collectives reduced in the fabric switch: RHINETDV_COLL_IN_SWITCH
	 * (RHINETDV_1.10)
	 */
	RHINETDV_CAP_COLL_IN_SWITCH = 1 << 15,
};

struct rhinetdv_device_attr {
	uint64_t comp_mask; /* set by the library: none defined yet */
	uint32_t node_id; /* this NIC's fabric node */
	uint32_t caps; /* enum rhinetdv_device_caps */
	uint32_t max_areas; /* areas the NIC holds, all processes together */
	uint32_t max_inline; /* bytes a RHINETDV_XFER_INLINE push carries */
	uint32_t max_outstanding; /* largest max_outstanding of an endpoint */
	uint32_t reserved;
};

/*
 * Fills *attr; inlen is sizeof(*attr) as the caller knows it (a shorter,
 * older struct gets the fields that fit).
 */
int rhinetdv_query_device(struct ibv_context *context,
			  struct rhinetdv_device_attr *attr, size_t inlen);

/* ---- endpoint ----------------------------------------------------------- */

enum rhinetdv_endpoint_init_attr_mask {
	/* max_irecv is set */
	RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV = 1 << 0,
};

struct rhinetdv_endpoint_init_attr {
	uint64_t comp_mask; /* enum rhinetdv_endpoint_init_attr_mask */
	/* Operations in flight at once; 0 means 64. */
	uint32_t max_outstanding;
	/* IBV_ACCESS_REMOTE_WRITE / _READ / _ATOMIC (1.9): what peers may
	 * do to this process's areas through the endpoint (each area's MR
	 * access flags must allow it too). 0 means all of them.
	 */
	uint32_t access;
	/* With RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV: irecvs posted and not
	 * completed at once (rounded up to a power of two; 0 means 256).
	 */
	uint32_t max_irecv;
	uint32_t reserved; /* 0 */
};

/* Read-only after creation. */
struct rhinetdv_endpoint {
	struct ibv_context *context;
	struct ibv_pd *pd; /* areas and local buffers must be of this PD */
	uint32_t node_id; /* peers address this endpoint as */
	uint32_t endpoint_id; /* (node_id, endpoint_id) */
};

/*
 * The process's endpoint, with its own completion queue, ready to use.
 * A process (ibv_context) has at most one: EEXIST for a second.
 */
struct rhinetdv_endpoint *
rhinetdv_create_endpoint(struct ibv_pd *pd,
			 const struct rhinetdv_endpoint_init_attr *attr);
/* Operations still in flight are abandoned (their status words may never
 * be written).
 */
int rhinetdv_destroy_endpoint(struct rhinetdv_endpoint *ep);

/* ---- areas -------------------------------------------------------------- */

/*
 * Registers [addr, addr + length) as an MR (access: IBV_ACCESS_*; remote
 * write for PUSH targets, remote read for PULL sources, both need local
 * write) that is also this process's communication area area_id. Peers
 * address it as (this node, this endpoint, area_id, offset). Every process
 * of a group registers its own memory under the same ID. ibv_dereg_mr()
 * removes the area; so does the end of the process.
 * Errors: EEXIST the process has an area area_id; ENOSPC the NIC holds
 * max_areas; EOPNOTSUPP the driver has no areas; as ibv_reg_mr otherwise.
 */
struct ibv_mr *rhinetdv_reg_area(struct ibv_pd *pd, void *addr, size_t length,
				 int access, uint32_t area_id);

/*
 * Areas in a process group (004 2.1, 2.2). A process is a member of the
 * groups named when it opened the device: the environment variable
 * RHINET_GROUPS="GROUP:TOKEN[,GROUP:TOKEN...]" (GROUP 1..65535, TOKEN a
 * 64-bit hexadecimal secret; rhinet-run sets it for every rank). A group
 * is joined only where the administrator granted it, to the process's
 * user or group, with that token (rhinetdv_grant_group, rhinet-group(8));
 * opening the device fails with EPERM otherwise, so a process outside the
 * launch cannot join. Group 0 is the open group every process is in (rhinetdv_reg_area
 * registers there). Areas of a group are reachable only by members of it:
 * the NIC checks the group at both ends (RHINETDV_SYN_BAD_GROUP).
 */
enum rhinetdv_area_attr_mask {
	RHINETDV_AREA_ATTR_MASK_FLAGS = 1 << 0, /* flags is set (1.3) */
};

enum rhinetdv_area_flags {
	/*
	 * Remote pin-down (004 2.5): the range is only declared, nothing is
	 * pinned now; it may be memory the process has only mmap()ed. The
	 * host pins pages when a peer asks for them (rhinetdv_pd_req) or
	 * when a PUSH, PULL or other remote access first touches them (the
	 * NIC holds the access meanwhile). Pages pinned so count against the
	 * process's RLIMIT_MEMLOCK and its user's limit (rhinet.ko's
	 * max_pin_on_demand_pages); they stay
	 * pinned until a rhinetdv_pd_release over them leaves no holder, or
	 * the MR goes. Local work requests may use the MR's lkey only over
	 * pinned pages. EOPNOTSUPP without RHINETDV_CAP_PIN_ON_DEMAND.
	 */
	RHINETDV_AREA_PIN_ON_DEMAND = 1 << 0,
};

struct rhinetdv_area_attr {
	uint64_t comp_mask; /* enum rhinetdv_area_attr_mask */
	uint32_t group_id; /* 0, or a group the process is a member of */
	uint32_t area_id; /* 0..65535, unique per group in the process */
	/* With RHINETDV_AREA_ATTR_MASK_FLAGS (a caller of RHINETDV_1.1
	 * passes the struct without these):
	 */
	uint32_t flags; /* enum rhinetdv_area_flags */
	uint32_t reserved; /* 0 */
};

/*
 * As rhinetdv_reg_area, in a group. inlen: sizeof(*attr) as the caller
 * knows it. EPERM: not a member of the group; EINVAL: area_id > 65535,
 * comp_mask or flags unknown; EOPNOTSUPP: RHINETDV_AREA_PIN_ON_DEMAND
 * and the device or driver does not pin on demand.
 */
struct ibv_mr *rhinetdv_reg_area_ex(struct ibv_pd *pd, void *addr,
				    size_t length, int access,
				    const struct rhinetdv_area_attr *attr,
				    size_t inlen);

/* The groups the process is a member of (up to n); returns how many. */
int rhinetdv_query_groups(struct ibv_context *context, uint16_t *groups,
			  int n);

/*
 * Twin memory: on-board NIC memory (as RHiNET's SDRAM) that keeps the
 * copy of a PULLed area a DIFF PUSH compares against. It is ibverbs
 * device memory: ibv_alloc_dm() hands out twin memory, zeroed (the kernel
 * counts it per process and per user and frees it when the process ends);
 * only the NIC reads and writes it (ibv_memcpy_to/from_dm: EOPNOTSUPP).
 * Transfers take the ibv_dm; this returns the NIC's handle of it (0 and
 * errno EINVAL for a DM of another device).
 */
uint32_t rhinetdv_twin_handle(struct ibv_dm *dm);

/* ---- PUSH and PULL ------------------------------------------------------ */

enum rhinetdv_xfer_flags {
	/* A completion on rhinetdv_poll() on success too (errors always). */
	RHINETDV_XFER_SIGNALED = 1 << 0,
	/* The NIC writes *status_word when the operation is done. */
	RHINETDV_XFER_STATUS_WORD = 1 << 1,
	/* PUSH: the bytes are copied into the work request now (at most
	 * max_inline); lkey is not used and the buffer is free on return.
	 */
	RHINETDV_XFER_INLINE = 1 << 2,
	/* Start only after earlier PULLs of this endpoint completed. */
	RHINETDV_XFER_FENCE = 1 << 3,
};

struct rhinetdv_xfer {
	uint64_t wr_id; /* returned in the completion */
	void *local_addr; /* PUSH: source; PULL: destination */
	uint32_t length; /* bytes */
	uint32_t lkey; /* MR of local_addr, in the endpoint's PD */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint32_t area_id; /* the peer's area */
	uint32_t flags; /* enum rhinetdv_xfer_flags */
	uint64_t offset; /* in the peer's area */
	/* With RHINETDV_XFER_STATUS_WORD: 8-byte aligned, inside an MR with
	 * local write of the endpoint's PD (status_lkey). Clear it (0) before
	 * posting; the NIC writes it once.
	 */
	uint64_t *status_word;
	uint32_t status_lkey;
	uint32_t reserved1; /* 0 */
};

/*
 * Posts one PUSH (remote write) or PULL (remote read) and rings the
 * endpoint's doorbell. ENOMEM: max_outstanding operations are in flight
 * (poll, or wait for status words, and post again); EINVAL: bad flags,
 * inline data too long, reserved fields not 0.
 */
int rhinetdv_push(struct rhinetdv_endpoint *ep, const struct rhinetdv_xfer *x);
int rhinetdv_pull(struct rhinetdv_endpoint *ep, const struct rhinetdv_xfer *x);

/*
 * Partial transfers (004 2.7, table 1): PUSH and isend take BASIC, DIFF,
 * BITMAP and STRIDE; PULL and irecv take BASIC, TWIN, BITMAP and STRIDE.
 */
enum rhinetdv_mode {
	RHINETDV_MODE_BASIC = 0,
	RHINETDV_MODE_TWIN = 1, /* the NIC keeps a copy in twin memory */
	RHINETDV_MODE_DIFF = 2, /* only bytes that differ from the twin */
	RHINETDV_MODE_BITMAP = 3, /* only blocks marked in a bitmap */
	RHINETDV_MODE_STRIDE = 4, /* blocks at strides */
};

enum rhinetdv_xfer_ex_flags {
	/* Remote memory is (remote_addr, rkey), not (group, area, offset). */
	RHINETDV_XFER_EX_BY_KEY = 1 << 16,
	/* PUSH by area: the target process gets a signal (004 2.11) with
	 * value `signal` on that area, in the same packet as the data
	 * (put-with-signal); see rhinetdv_wait_signal.
	 */
	RHINETDV_XFER_EX_SIGNAL = 1 << 17,
};

struct rhinetdv_xfer_ex {
	uint64_t comp_mask; /* 0 */
	struct rhinetdv_xfer base; /* as for rhinetdv_push; flags may also
				    * hold enum rhinetdv_xfer_ex_flags */
	uint32_t group_id; /* by area: the area's group */
	uint32_t mode; /* enum rhinetdv_mode */
	uint64_t remote_addr; /* BY_KEY */
	uint32_t rkey; /* BY_KEY */
	uint32_t signal; /* SIGNAL: value the target's count grows by */
	/* STRIDE: count blocks of block bytes, local_stride apart from
	 * base.local_addr and remote_stride apart at the target
	 * (base.length: the local extent, >= (count-1)*local_stride+block)
	 */
	uint32_t block;
	uint32_t count;
	uint64_t local_stride;
	uint64_t remote_stride;
	/* BITMAP: bit i (LSB first in each byte) marks bytes
	 * [i*block, (i+1)*block) of base.length; the bitmap is local memory
	 * in an MR of the endpoint's PD
	 */
	const void *bitmap;
	uint32_t bitmap_lkey;
	/* TWIN, DIFF: twin memory from ibv_alloc_dm, and where in it this
	 * area's copy starts
	 */
	uint32_t reserved0; /* 0 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * PUSH and PULL with every option; inlen is sizeof(*x) as the caller
 * knows it. EINVAL: a mode the operation does not take (table 1: PUSH
 * basic/diff/bitmap/stride, PULL basic/twin/bitmap/stride), a zero or
 * overlapping stride, a twin of another device. Descriptors the NIC
 * refuses complete with RHINETDV_SYN_BAD_XFER.
 */
int rhinetdv_push_ex(struct rhinetdv_endpoint *ep,
		     const struct rhinetdv_xfer_ex *x, size_t inlen);
int rhinetdv_pull_ex(struct rhinetdv_endpoint *ep,
		     const struct rhinetdv_xfer_ex *x, size_t inlen);

/*
 * Signals that arrived at this endpoint's areas: the sum of the signal
 * values for (group, area) since the endpoint was created. Nonblocking;
 * takes what the NIC has written.
 */
int rhinetdv_signal_count(struct rhinetdv_endpoint *ep, uint32_t group_id,
			  uint32_t area_id, uint64_t *count);
/*
 * Sleeps (no busy polling: the NIC interrupts, through the kernel's
 * completion events) until the signal count of (group, area) reaches
 * `count`, or timeout_ms passes (-1: no limit). 0, ETIMEDOUT, or an
 * errno. Completions that arrive meanwhile stay for rhinetdv_poll.
 */
int rhinetdv_wait_signal(struct rhinetdv_endpoint *ep, uint32_t group_id,
			 uint32_t area_id, uint64_t count, int timeout_ms);

/* ---- isend / irecv (004 2.6, table 2) ---------------------------------- */

/*
 * Messages matched by a 64-bit tag in the receiving NIC. An isend goes to
 * (dest_node, dest_endpoint); the target NIC matches it against that
 * endpoint's posted irecvs, oldest first: an irecv takes a message when
 * its source is the irecv's (or the irecv takes any source) and
 * (message tag ^ tag) & tag_mask == 0. Between one sender and one
 * receiver, messages that match the same irecv are matched in send order.
 * A message that finds no irecv waits at the target (unexpected) until
 * one is posted; rhinetdv_iprobe looks at those. Messages of up to
 * max_eager bytes (rhinetdv_tag_caps) travel with the match request; a
 * longer one is sent once its irecv is known, straight into the irecv's
 * buffer (rendezvous). The isend completes when its data has arrived.
 * When the NIC's lists are full, irecvs wait in the endpoint's receive
 * queue and isends are refused and resent in order: matching stays exact.
 *
 * Partial-transfer modes (004 table 1, rhinetdv 1.4, RHINETDV_CAP_TAG_XFER)
 * choose which bytes of the sender's buffer make the message and where
 * its bytes land in the receiver's; sender and receiver choose theirs
 * independently. An isend takes BASIC, STRIDE (count blocks of block
 * bytes, local_stride apart in the buffer, sent packed as a message of
 * block * count bytes), BITMAP (a message of `length` bytes of which only
 * the blocks marked in the bitmap travel) or DIFF (a message of `length`
 * bytes of which only those that differ from the twin travel; the twin
 * then holds them). Bytes of a BITMAP or DIFF message that do not travel
 * leave the receiver's memory as it was. An irecv takes BASIC, STRIDE
 * (message byte o lands at (o / block) * stride + o % block, for block *
 * count bytes), BITMAP (byte o lands only if bit o / block is set) or
 * TWIN (every byte also lands in the twin at twin_offset + o). A partial
 * isend is never sent eagerly. Parameters the NIC refuses complete the
 * operation with RHINETDV_SYN_BAD_XFER.
 */
enum rhinetdv_isend_flags {
	RHINETDV_ISEND_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_ISEND_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* The bytes are copied into the work request (at most max_inline). */
	RHINETDV_ISEND_INLINE = RHINETDV_XFER_INLINE,
};

enum rhinetdv_isend_attr_mask {
	/* mode and its parameters are set (rhinetdv 1.4) */
	RHINETDV_ISEND_ATTR_MASK_XFER = 1 << 0,
};

struct rhinetdv_isend_attr {
	uint64_t comp_mask; /* enum rhinetdv_isend_attr_mask */
	uint64_t wr_id;
	const void *addr;
	uint32_t length;
	uint32_t lkey; /* MR of addr in the endpoint's PD (not with INLINE) */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint64_t tag;
	uint32_t flags; /* enum rhinetdv_isend_flags */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint64_t *status_word;
	/* With RHINETDV_ISEND_ATTR_MASK_XFER (a caller of RHINETDV_1.2 passes
	 * the structure without these), named as in rhinetdv_xfer_ex:
	 */
	uint32_t mode; /* enum rhinetdv_mode: BASIC, DIFF, BITMAP, STRIDE */
	/* STRIDE: bytes per block; BITMAP: bytes per bit of the bitmap */
	uint32_t block;
	/* STRIDE: count blocks local_stride apart from addr, which holds
	 * (count - 1) * local_stride + block of length bytes; the message
	 * has block * count bytes
	 */
	uint32_t count;
	uint32_t bitmap_lkey; /* BITMAP */
	uint64_t local_stride; /* STRIDE, >= block */
	/* BITMAP: bit i (LSB first in each byte) marks bytes
	 * [i*block, (i+1)*block) of length; local memory in an MR of the
	 * endpoint's PD; at most max_bitmap_blocks blocks
	 * (rhinetdv_query_tag_caps)
	 */
	const void *bitmap;
	/* DIFF: twin memory from ibv_alloc_dm, and where in it the copy of
	 * the buffer starts
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

enum rhinetdv_irecv_flags {
	RHINETDV_IRECV_ANY_SOURCE = 1 << 0, /* src_node/src_endpoint ignored */
};

enum rhinetdv_irecv_attr_mask {
	/* mode and its parameters are set (rhinetdv 1.4) */
	RHINETDV_IRECV_ATTR_MASK_XFER = 1 << 0,
};

struct rhinetdv_irecv_attr {
	uint64_t comp_mask; /* enum rhinetdv_irecv_attr_mask */
	uint64_t wr_id;
	void *addr; /* where the message goes (its first length bytes) */
	uint32_t length;
	uint32_t lkey; /* MR with local write, in the endpoint's PD */
	uint64_t tag;
	uint64_t tag_mask; /* the bits of tag that must match; ~0: all */
	uint16_t src_node;
	uint16_t reserved0; /* 0 */
	uint32_t src_endpoint;
	uint32_t flags; /* enum rhinetdv_irecv_flags */
	uint32_t reserved1; /* 0 */
	/* With RHINETDV_IRECV_ATTR_MASK_XFER (a caller of RHINETDV_1.2 passes
	 * the structure without these):
	 */
	uint32_t mode; /* enum rhinetdv_mode: BASIC, TWIN, BITMAP, STRIDE */
	/* STRIDE: bytes per block; BITMAP: bytes per bit of the bitmap */
	uint32_t block;
	/* STRIDE: count blocks stride apart from addr, which holds
	 * (count - 1) * stride + block of length bytes; the irecv takes
	 * block * count bytes of the message
	 */
	uint32_t count;
	uint32_t bitmap_lkey; /* BITMAP */
	uint64_t stride; /* STRIDE, >= block */
	/* BITMAP: bit i (LSB first in each byte) marks bytes
	 * [i*block, (i+1)*block) of length; local memory in an MR of the
	 * endpoint's PD
	 */
	const void *bitmap;
	/* TWIN: twin memory from ibv_alloc_dm that also gets the message,
	 * from twin_offset on
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * Posts an isend. inlen: sizeof(*attr) as the caller knows it. ENOMEM:
 * max_outstanding operations in flight; EINVAL: bad flags or fields,
 * unknown comp_mask bits, mode fields without RHINETDV_ISEND_ATTR_MASK_XFER,
 * a mode an isend does not take (TWIN), INLINE with a partial mode, a zero
 * or overlapping stride, blocks beyond the buffer, a twin of another
 * device or shorter than twin_offset + length (so that what the NIC would
 * refuse does not take the endpoint to error).
 * Completes as RHINETDV_OP_ISEND (errors always, success if SIGNALED):
 * REM_OP_ERR when the receiving endpoint went away or cancelled its
 * irecv during the transfer.
 */
int rhinetdv_isend(struct rhinetdv_endpoint *ep,
		   const struct rhinetdv_isend_attr *attr, size_t inlen);
/*
 * Posts an irecv; *handle (may be NULL) names it for rhinetdv_irecv_cancel.
 * ENOMEM: max_irecv irecvs are outstanding (or the oldest still waits in
 * the ring); EINVAL as for rhinetdv_isend (an irecv does not take DIFF).
 * Every irecv completes as RHINETDV_OP_IRECV: byte_len is the message's
 * length, rhinetdv_poll_ex gives its tag and source; IBV_WC_LOC_LEN_ERR
 * when it was longer than the irecv takes (length bytes, or block * count
 * with STRIDE), which then holds its first bytes, IBV_WC_WR_FLUSH_ERR
 * when cancelled, IBV_WC_REM_OP_ERR when the sender gave the message up.
 */
int rhinetdv_irecv(struct rhinetdv_endpoint *ep,
		   const struct rhinetdv_irecv_attr *attr, size_t inlen,
		   uint32_t *handle);
/*
 * Takes a posted irecv back. 0: the NIC was asked; the irecv completes
 * either with IBV_WC_WR_FLUSH_ERR (cancelled) or normally (a message
 * matched it first). ENOENT: no such irecv outstanding.
 */
int rhinetdv_irecv_cancel(struct rhinetdv_endpoint *ep, uint32_t handle);

struct rhinetdv_tag_info {
	uint32_t found; /* 1: a message matched; the rest describes it */
	uint32_t length;
	uint16_t src_node;
	uint16_t reserved0;
	uint32_t src_endpoint;
	uint64_t tag;
};

/*
 * iprobe (004 table 2): the oldest unexpected message that an irecv with
 * *sel's source, tag and mask would take, without receiving it (addr,
 * length, lkey, wr_id and the mode fields of *sel are not used). Waits
 * for the NIC's answer (no system call). 0 and info->found, or an errno.
 */
int rhinetdv_iprobe(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_irecv_attr *sel, size_t inlen,
		    struct rhinetdv_tag_info *info);

enum rhinetdv_tag_caps_mask {
	/* max_bitmap_blocks is set (rhinetdv 1.4) */
	RHINETDV_TAG_CAPS_MASK_XFER = 1 << 0,
};

struct rhinetdv_tag_caps {
	uint64_t comp_mask; /* by the library: enum rhinetdv_tag_caps_mask */
	uint32_t max_eager; /* basic isends up to this size go eagerly */
	uint32_t max_irecv; /* of this endpoint */
	/* The most blocks a BITMAP isend selects from (ceil(length / block)) */
	uint32_t max_bitmap_blocks;
	uint32_t reserved;
};
int rhinetdv_query_tag_caps(struct rhinetdv_endpoint *ep,
			    struct rhinetdv_tag_caps *caps, size_t inlen);

/* ---- remote pin-down (004 2.5, RHINETDV_1.3) ---------------------------- */

/*
 * pd_req asks the target (dest_node, dest_endpoint) to pin the range
 * [offset, offset + length) of its area (group_id, area_id), or with
 * RHINETDV_PIN_BY_KEY [remote_addr, remote_addr + length) of its MR rkey,
 * and to hold it for the initiator: it completes (RHINETDV_OP_PD_REQUEST)
 * once the target's pages are pinned and hold one more reference, so that
 * later PUSHes and PULLs there never wait for the target's host. An area
 * declared with RHINETDV_AREA_PIN_ON_DEMAND is pinned then; pages of an
 * ordinary area are pinned already. pd_release drops that reference; it
 * completes (RHINETDV_OP_PD_RELEASE) when the target's NIC has passed it
 * to its host, which unpins the pages of the range that nobody holds any
 * longer (those pinned by a first touch alone included).
 * Errors: the completion's status is IBV_WC_REM_ACCESS_ERR with syndrome
 * RHINETDV_SYN_NOT_PINNED when the target host would not pin (its
 * process's limit, memory not mapped or not writable, the process gone),
 * RHINETDV_SYN_BOUNDS beyond the area, and as a PULL's otherwise.
 */
enum rhinetdv_pin_flags {
	/* A completion on rhinetdv_poll() on success too (errors always). */
	RHINETDV_PIN_SIGNALED = RHINETDV_XFER_SIGNALED,
	/* The NIC writes *status_word when the operation is done. */
	RHINETDV_PIN_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* The range is (remote_addr, rkey), not (group, area, offset). */
	RHINETDV_PIN_BY_KEY = RHINETDV_XFER_EX_BY_KEY,
};

struct rhinetdv_pin_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint32_t group_id; /* by area: the area's group */
	uint32_t area_id; /* by area: the peer's area */
	uint64_t offset; /* by area: in the peer's area */
	uint64_t remote_addr; /* BY_KEY */
	uint32_t rkey; /* BY_KEY */
	uint32_t length; /* bytes, not 0 */
	uint32_t flags; /* enum rhinetdv_pin_flags */
	/* With RHINETDV_PIN_STATUS_WORD, as for rhinetdv_push: 8-byte
	 * aligned, in an MR with local write of the endpoint's PD, cleared
	 * before posting.
	 */
	uint32_t status_lkey;
	uint64_t *status_word;
};

/*
 * Post a pd_req or a pd_release on the endpoint; inlen is sizeof(*attr)
 * as the caller knows it. ENOMEM: max_outstanding operations are in
 * flight; EINVAL: bad flags or fields, length 0, a misaligned status
 * word; EPERM: not a member of the group; EOPNOTSUPP: the device has no
 * remote pin-down (RHINETDV_CAP_PIN_ON_DEMAND).
 */
int rhinetdv_pd_req(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_pin_attr *attr, size_t inlen);
int rhinetdv_pd_release(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_pin_attr *attr, size_t inlen);

/* ---- sequential multicast (004 2.8 mcastB, RHINETDV_1.5) --------------- */

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

/* ---- simultaneous multicast (004 2.8 mcastA, RHINETDV_1.6) ------------- */

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

/* ---- shared regions (004 2.9, RHINETDV_1.7) ---------------------------- */

/*
 * A shared region is a range [offset, offset + length) of an area (group_id,
 * area_id) that several endpoints keep a copy of, at the same offset of
 * their own area. It is named by its home endpoint (home_node,
 * home_endpoint), whose memory is the master copy, and the area; an
 * endpoint is in at most one region per area. Nothing is set up at the
 * home: its NIC creates the region at the first SUBSCRIBE. Every member's
 * NIC keeps a directory of the region's members and multicasts the
 * member's updates along it; the NICs run the join, so an update that
 * crosses a newcomer's join is applied there exactly once.
 *
 * rhinetdv_subscribe completes (RHINETDV_OP_SUBSCRIBE, byte_len = length)
 * when the home's bytes are in this endpoint's copy: addr/length must be
 * exactly the caller's own area bytes at offset (updates land in the
 * area). RHINETDV_MODE_TWIN (004 table 1) also puts them into the twin, so
 * later DIFF updates compare with what the member joined with.
 * rhinetdv_unsubscribe takes the endpoint out at once (later updates are
 * dropped) and completes (RHINETDV_OP_UNSUBSCRIBE) when the home has taken
 * it. rhinetdv_share_update (after the SUBSCRIBE completed) is a PUSH by
 * area inside the region, in any PUSH mode, to every other member of the
 * directory; it completes once (RHINETDV_OP_SHARE_UPDATE) when every member
 * has acknowledged. One member's updates are applied everywhere in its
 * posting order; different members' updates of the same bytes have no
 * order unless the program gives them one.
 *
 * Completions (status / syndrome); those decided at post take the endpoint
 * to error, the others do not:
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_NOT_SUBSCRIBED: a SUBSCRIBE of a
 *     region the endpoint is in (or joining); an UNSUBSCRIBE or update of
 *     one it is not in, still joining, or (UNSUBSCRIBE) of another home;
 *     the home refuses a SUBSCRIBE from one of its members;
 *   IBV_WC_REM_ACCESS_ERR / RHINETDV_SYN_BAD_AREA (or another area
 *     syndrome): the home has no such area, or not readable by peers;
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_BOUNDS: the home has a region of
 *     the area at another offset or length;
 *   IBV_WC_LOC_PROT_ERR / RHINETDV_SYN_BOUNDS: addr/length are not this
 *     endpoint's area bytes at offset; an update outside the region (at
 *     post);
 *   IBV_WC_LOC_PROT_ERR / RHINETDV_SYN_BAD_AREA, _BAD_GROUP: no such area
 *     here, a group the process is not in (at post);
 *   IBV_WC_LOC_LEN_ERR / RHINETDV_SYN_LENGTH: length 0 or above
 *     RHINETDV_SHARE_MAX_BYTES (at post);
 *   IBV_WC_GENERAL_ERR / RHINETDV_SYN_BUSY: this NIC's or the home's region
 *     table is full for the process, or the region has
 *     RHINETDV_SHARE_MAX_MEMBERS members;
 *   IBV_WC_REM_OP_ERR / RHINETDV_SYN_MEMBER_LOST: the home endpoint went
 *     away or its node died, the join timed out, or (an update) the region
 *     was lost;
 *   IBV_WC_RETRY_EXC_ERR / RHINETDV_SYN_RETRY_EXCEEDED: a member's node
 *     (or the home's) stopped answering.
 */
#define RHINETDV_SHARE_MAX_BYTES (1u << 30)
#define RHINETDV_SHARE_MAX_MEMBERS 16 /* the home included */

enum rhinetdv_share_flags {
	RHINETDV_SHARE_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_SHARE_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* rhinetdv_share_update only: the bytes are copied into the work
	 * request (at most max_inline, BASIC only); lkey is not used.
	 */
	RHINETDV_SHARE_INLINE = RHINETDV_XFER_INLINE,
};

struct rhinetdv_subscribe_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint16_t home_node; /* the region's home endpoint */
	uint16_t reserved0; /* 0 */
	uint32_t home_endpoint;
	uint32_t group_id; /* the area's group */
	uint32_t area_id;
	uint64_t offset; /* the region's offset in the area */
	void *addr; /* this endpoint's copy: its area's bytes at offset */
	uint32_t length; /* the region's bytes, 1..RHINETDV_SHARE_MAX_BYTES */
	uint32_t lkey; /* the area's MR */
	uint32_t flags; /* SIGNALED, STATUS_WORD */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint64_t *status_word;
	uint32_t mode; /* RHINETDV_MODE_BASIC or RHINETDV_MODE_TWIN */
	uint32_t reserved1; /* 0 */
	struct ibv_dm *twin; /* TWIN: also receives the data */
	uint64_t twin_offset;
};

struct rhinetdv_unsubscribe_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id;
	uint16_t home_node; /* as subscribed */
	uint16_t reserved0; /* 0 */
	uint32_t home_endpoint;
	uint32_t group_id;
	uint32_t area_id;
	uint64_t offset; /* the region's offset */
	uint32_t flags; /* SIGNALED, STATUS_WORD */
	uint32_t status_lkey;
	uint64_t *status_word;
};

struct rhinetdv_share_update_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id;
	const void *addr; /* the data */
	uint32_t length;
	uint32_t lkey; /* MR of addr (not with INLINE) */
	uint32_t group_id; /* the region's area */
	uint32_t area_id;
	uint64_t offset; /* where in the area: inside the region */
	uint32_t flags; /* enum rhinetdv_share_flags */
	uint32_t status_lkey;
	uint64_t *status_word;
	/* A PUSH mode and its fields, as in rhinetdv_mcast_attr: BASIC, DIFF,
	 * BITMAP or STRIDE
	 */
	uint32_t mode;
	uint32_t block;
	uint32_t count;
	uint32_t bitmap_lkey;
	uint64_t local_stride;
	uint64_t remote_stride;
	const void *bitmap;
	/* DIFF: compared for every member; the twin takes the bytes with the
	 * last one
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * Post a SUBSCRIBE, UNSUBSCRIBE or SHARE_UPDATE; inlen is sizeof(*attr) as
 * the caller knows it. ENOMEM: max_outstanding operations in flight;
 * EINVAL: unknown comp_mask bits or flags, reserved fields not 0, an ID
 * above 65535, a length out of range, a mode the operation does not take
 * (SUBSCRIBE: BASIC, TWIN; an update: a PUSH's) or its fields wrong, INLINE
 * on a SUBSCRIBE or too long or with a mode, a misaligned status word;
 * EPERM: not a member of the group; EOPNOTSUPP: no RHINETDV_CAP_SHARE.
 */
int rhinetdv_subscribe(struct rhinetdv_endpoint *ep,
		       const struct rhinetdv_subscribe_attr *attr,
		       size_t inlen);
int rhinetdv_unsubscribe(struct rhinetdv_endpoint *ep,
			 const struct rhinetdv_unsubscribe_attr *attr,
			 size_t inlen);
int rhinetdv_share_update(struct rhinetdv_endpoint *ep,
			  const struct rhinetdv_share_update_attr *attr,
			  size_t inlen);

/* ---- the administrator's switch groups (RHINETDV_1.8) ------------------- */

/*
 * What the cluster administrator (CAP_NET_ADMIN) gives this node's NIC for
 * switch group `group` (0xf000..0xf7ff, RHINETDV_MCAST_GROUP_FIRST..LAST):
 * the members, one (node, endpoint) each, the same list on every member
 * node, and the process group whose processes may send to it (0: any).
 * rhinetdv_set_mcast_group with count 0 removes the group. Returns 0 or
 * an errno: EPERM (no CAP_NET_ADMIN), EINVAL (a bad ID, a node beyond the
 * fabric or listed twice, reserved bits, a QPN of 25 bits or more), E2BIG
 * (more than RHINETDV_MCAST_GROUP_MAX_MEMBERS), EBUSY (this node's
 * multicasts to the group are outstanding), ENOSPC (the NIC's group table
 * is full), ENOENT (removing a group the NIC does not have), EOPNOTSUPP
 * (not a rhinet device, or a driver without the methods).
 * rhinetdv_query_mcast_group returns the list last set: *count is the
 * capacity of `members` on entry and the number of members on return
 * (only the first capacity of them are written); ENOENT: no list.
 */
#define RHINETDV_MCAST_GROUP_FIRST 0xf000
#define RHINETDV_MCAST_GROUP_LAST 0xf7ff
#define RHINETDV_MCAST_GROUP_MAX_MEMBERS 128

struct rhinetdv_mcast_member {
	uint16_t node;
	uint16_t reserved; /* 0 */
	uint32_t qpn; /* the member's endpoint (rhinetdv_endpoint.endpoint_id) */
};

int rhinetdv_set_mcast_group(struct ibv_context *context, uint16_t group,
			     uint16_t endpoint_group,
			     const struct rhinetdv_mcast_member *members,
			     uint32_t count);
int rhinetdv_query_mcast_group(struct ibv_context *context, uint16_t group,
			       uint16_t *endpoint_group,
			       struct rhinetdv_mcast_member *members,
			       uint32_t *count);

/* ---- the administrator's process group grants (RHINETDV_1.11) ---------- */

/*
 * A process joins a process group (RHINET_GROUPS) only where the group is
 * granted: on each node, the administrator (CAP_NET_ADMIN; a resource
 * manager, or rhinet-run's privileged step: the tool rhinet-group(8))
 * grants group `group` (1..65535) with its token to a uid and/or a gid;
 * then a process whose effective uid is that uid, or whose groups hold
 * that gid, joins by naming the token. Nobody creates a group by naming
 * it, root included. With RHINETDV_GROUP_GRANT_LIFETIME nobody joins after
 * `lifetime` seconds. rhinetdv_revoke_group ends a grant: nobody joins any
 * more, the members keep the group until they close the device (*members,
 * if not NULL, says how many contexts are in it), and the ID cannot be
 * granted again until then. rhinetdv_query_group_grants lists the groups
 * of the node (ascending IDs; revoked and expired ones while they have
 * members): *count is the capacity of `grants` on entry and the number
 * of groups on return (only the first capacity of them are written);
 * tokens are never read back. Return 0 or an errno: EPERM (no
 * CAP_NET_ADMIN), EINVAL (group 0, neither uid nor gid, an unmapped id,
 * unknown comp_mask bits, reserved fields not 0), EEXIST (the group is
 * granted), EBUSY (its grant was revoked or expired and members remain),
 * ENOSPC (RHINETDV_MAX_GROUP_GRANTS groups on the node), ENOENT (revoking
 * a group that is not granted), EOPNOTSUPP (not a rhinet device, or a
 * driver without grants).
 */
#define RHINETDV_MAX_GROUP_GRANTS 1024

enum rhinetdv_group_grant_flags {
	RHINETDV_GROUP_GRANT_UID = 1 << 0, /* uid is set */
	RHINETDV_GROUP_GRANT_GID = 1 << 1, /* gid is set */
	RHINETDV_GROUP_GRANT_LIFETIME = 1 << 2, /* lifetime is set */
	/* rhinetdv_group_grant.flags only: */
	RHINETDV_GROUP_GRANT_REVOKED = 1 << 3,
	RHINETDV_GROUP_GRANT_EXPIRED = 1 << 4, /* the lifetime is over */
};

struct rhinetdv_group_grant_attr {
	uint32_t comp_mask; /* RHINETDV_GROUP_GRANT_UID, _GID, _LIFETIME */
	uint16_t group; /* 1..65535 */
	uint16_t reserved; /* 0 */
	uint64_t token;
	uint32_t uid;
	uint32_t gid;
	uint32_t lifetime; /* seconds */
	uint32_t reserved1; /* 0 */
};

/* One group of the node. */
struct rhinetdv_group_grant {
	uint16_t group;
	uint16_t flags; /* enum rhinetdv_group_grant_flags */
	uint32_t uid;
	uint32_t gid;
	uint32_t members; /* contexts in the group on this node */
	uint32_t granted_by; /* real uid of the process that granted it */
	uint32_t expires_in; /* seconds of lifetime left (0: none, or over) */
};

int rhinetdv_grant_group(struct ibv_context *context,
			 const struct rhinetdv_group_grant_attr *attr);
int rhinetdv_revoke_group(struct ibv_context *context, uint16_t group,
			  uint32_t *members);
int rhinetdv_query_group_grants(struct ibv_context *context,
				struct rhinetdv_group_grant *grants,
				uint32_t *count);

/* ---- locks and barriers (004 2.10, RHINETDV_1.5) ------------------------ */

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

/* ---- remote atomics (RHINETDV_1.9) --------------------------------------- */

enum rhinetdv_atomic_op {
	RHINETDV_ATOMIC_FETCH_ADD = 1, /* word += compare_add */
	RHINETDV_ATOMIC_CMP_SWAP = 2, /* word == compare_add ? swap : word */
};

enum rhinetdv_atomic_flags {
	/* the target is (remote_addr, rkey), not (group_id, area_id, offset) */
	RHINETDV_ATOMIC_BY_KEY = 1 << 0,
	/* starts after every earlier PULL and atomic of the endpoint is done */
	RHINETDV_ATOMIC_FENCE = 1 << 1,
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

/* ---- completions -------------------------------------------------------- */

enum rhinetdv_opcode {
	RHINETDV_OP_PUSH = 1,
	RHINETDV_OP_PULL = 2,
	RHINETDV_OP_ISEND = 3,
	RHINETDV_OP_IRECV = 4,
	RHINETDV_OP_PD_REQUEST = 5, /* rhinetdv_pd_req */
	RHINETDV_OP_PD_RELEASE = 6, /* rhinetdv_pd_release */
	RHINETDV_OP_MCAST_LIST = 7, /* rhinetdv_mcast_list (1.5) */
	RHINETDV_OP_LOCK = 8, /* rhinetdv_lock (1.5) */
	RHINETDV_OP_UNLOCK = 9, /* rhinetdv_unlock (1.5) */
	RHINETDV_OP_BARRIER = 10, /* rhinetdv_barrier (1.5) */
	RHINETDV_OP_MCAST_SWITCH = 11, /* rhinetdv_mcast_switch (1.6) */
	RHINETDV_OP_SUBSCRIBE = 12, /* rhinetdv_subscribe (1.7) */
	RHINETDV_OP_UNSUBSCRIBE = 13, /* rhinetdv_unsubscribe (1.7) */
	RHINETDV_OP_SHARE_UPDATE = 14, /* rhinetdv_share_update (1.7) */
	RHINETDV_OP_FETCH_ADD = 15, /* rhinetdv_atomic (1.9) */
	RHINETDV_OP_CMP_SWAP = 16, /* rhinetdv_atomic (1.9) */
	RHINETDV_OP_COLLECTIVE = 17, /* rhinetdv_collective (1.10) */
};

/* Why an operation failed (values of the NIC's syndromes). */
enum rhinetdv_syndrome {
	RHINETDV_SYN_NONE = 0,
	RHINETDV_SYN_BAD_KEY = 1, /* local or remote key unknown */
	RHINETDV_SYN_PD_MISMATCH = 2,
	RHINETDV_SYN_ACCESS_RIGHTS = 3,
	RHINETDV_SYN_BOUNDS = 4, /* offset + length beyond the area */
	RHINETDV_SYN_BAD_AREA = 5, /* no such area at the target */
	RHINETDV_SYN_BAD_ENDPOINT = 6, /* no such endpoint at the target */
	RHINETDV_SYN_LENGTH = 8,
	RHINETDV_SYN_BAD_WQE = 10,
	RHINETDV_SYN_DMA = 11,
	RHINETDV_SYN_RETRY_EXCEEDED = 12, /* target node unreachable */
	RHINETDV_SYN_ALIGNMENT = 14,
	RHINETDV_SYN_BUSY = 15, /* the NIC's tables for the process are full */
	RHINETDV_SYN_FLUSHED = 16, /* the endpoint went to error */
	RHINETDV_SYN_BAD_XFER = 18, /* a partial-transfer descriptor refused */
	RHINETDV_SYN_BAD_GROUP = 19, /* not a member of the area's group */
	/* the target host would not pin: its process's limit, memory not
	 * mapped or not writable, or the process is gone (004 2.5)
	 */
	RHINETDV_SYN_NOT_PINNED = 21,
	/* a lock or barrier failed: a member's node (or the manager's) died
	 * or restarted, or the manager endpoint went away (1.5)
	 */
	RHINETDV_SYN_MEMBER_LOST = 22,
	/* an UNLOCK of a lock the endpoint does not hold; a BARRIER whose
	 * count differs from its round's (1.5)
	 */
	RHINETDV_SYN_NOT_HELD = 23,
	/* rhinetdv_mcast_switch to a group the NIC has no member list for */
	RHINETDV_SYN_NO_MCAST_GROUP = 24,
	/* (25 is the NIC's own: a joining member's refusal, never reported) */
	/* a SUBSCRIBE of a region the endpoint is in; an UNSUBSCRIBE or
	 * update of one it is not in (or still joining) (1.7)
	 */
	RHINETDV_SYN_NOT_SUBSCRIBED = 26,
	/* the ranks of a communicator posted collectives that disagree */
	RHINETDV_SYN_COLL_MISMATCH = 28,
	/* the NIC holds no more communicators for this process */
	RHINETDV_SYN_COLL_NO_ROOM = 29,
	/* RHINETDV_COLL_IN_SWITCH: the switch never answered */
	RHINETDV_SYN_COLL_NO_SWITCH = 30,
};

struct rhinetdv_completion {
	uint64_t wr_id;
	uint32_t status; /* enum ibv_wc_status */
	uint32_t syndrome; /* enum rhinetdv_syndrome */
	uint32_t byte_len;
	uint32_t opcode; /* enum rhinetdv_opcode */
};

/*
 * Up to n completions of signaled operations and of failed ones, in
 * posting order; returns how many, or -1 with errno. Errors of unsignaled
 * operations are kept for the next poll, at most max_outstanding of them.
 */
int rhinetdv_poll(struct rhinetdv_endpoint *ep, int n,
		  struct rhinetdv_completion *c);

/* A completion with what an irecv learnt. */
struct rhinetdv_completion_ex {
	struct rhinetdv_completion base;
	uint64_t tag; /* IRECV: the message's tag */
	uint16_t src_node; /* IRECV: its sender */
	uint16_t reserved0;
	uint32_t src_endpoint;
};

/*
 * As rhinetdv_poll; stride is sizeof(*c) as the caller knows it (at least
 * sizeof(struct rhinetdv_completion)); fields past it are not written.
 */
int rhinetdv_poll_ex(struct rhinetdv_endpoint *ep, int n,
		     struct rhinetdv_completion_ex *c, size_t stride);

/* ---- status words ------------------------------------------------------- */

/* The NIC's format (bit 63 done, status, syndrome, byte count). */
#define RHINETDV_STATUS_WORD_DONE (1ull << 63)
/* rhinetdv_collective only, before done: it runs, and the byte count is
 * how much of it is finished at this rank's NIC so far (1.10)
 */
#define RHINETDV_STATUS_WORD_RUNNING (1ull << 62)
#define RHINETDV_STATUS_WORD_STATUS_SHIFT 32
#define RHINETDV_STATUS_WORD_SYNDROME_SHIFT 40
#define RHINETDV_STATUS_WORD_LEN_MASK 0xffffffffull

struct rhinetdv_status {
	/* 0: not done; the rest is 0, but a running collective's length
	 * (RHINETDV_STATUS_WORD_RUNNING) is the bytes finished so far
	 */
	uint32_t done;
	uint32_t status; /* enum ibv_wc_status */
	uint32_t syndrome; /* enum rhinetdv_syndrome */
	uint32_t length; /* bytes moved, on success */
};

/* Decodes a status word; returns s->done. */
static inline int rhinetdv_status_word_decode(uint64_t word,
					      struct rhinetdv_status *s)
{
	s->done = (word & RHINETDV_STATUS_WORD_DONE) != 0;
	s->status =
		(uint32_t)(word >> RHINETDV_STATUS_WORD_STATUS_SHIFT) & 0xff;
	s->syndrome =
		(uint32_t)(word >> RHINETDV_STATUS_WORD_SYNDROME_SHIFT) & 0xff;
	s->length = (uint32_t)(word & RHINETDV_STATUS_WORD_LEN_MASK);
	return (int)s->done;
}

/*
 * Reads a status word the NIC may be writing; returns 1 (and decodes it)
 * once it is done. What the operation moved is visible after a 1.
 */
static inline int rhinetdv_status_word_poll(const uint64_t *word,
					    struct rhinetdv_status *s)
{
	return rhinetdv_status_word_decode(
		__atomic_load_n(word, __ATOMIC_ACQUIRE), s);
}

static inline void rhinetdv_status_word_clear(uint64_t *word)
{
	__atomic_store_n(word, 0, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_RHINETDV_H */
