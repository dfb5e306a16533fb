/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: direct verbs of the RHiNET-NG NIC (librhinetdv.so.1, symbol
 * versions RHINETDV_1.0 to RHINETDV_1.3 and RHINETDV_1.5 to RHINETDV_1.21;
 * rhinetdv 1.4 added no function, only fields: the partial-transfer modes
 * of isend and irecv, which a library has when it reports
 * RHINETDV_CAP_TAG_XFER; RHINETDV_1.5 adds sequential multicast, locks and
 * barriers; RHINETDV_1.6 simultaneous multicast; RHINETDV_1.7 shared
 * regions; RHINETDV_1.8 the administrator's switch groups; RHINETDV_1.9
 * remote atomics on endpoints; RHINETDV_1.10 collectives executed by the
 * NICs; RHINETDV_1.11 the administrator's process group grants;
 * RHINETDV_1.12 queues in another device's memory; RHINETDV_1.13 trigger
 * counters and triggered work requests; RHINETDV_1.19 the whole atomic
 * family: swap, fetch, and/or/xor, 32-bit words, no fetch; RHINETDV_1.20
 * sleeping for the endpoint's next completion; RHINETDV_1.21 watches:
 * sleeping until a peer writes one of the process's areas). What
 * ibverbs has no words for: the reliable connectionless endpoint (one per
 * process; it reaches every (node, endpoint) of the fabric), communication
 * areas registered under a group-wide area ID, PUSH and PULL addressed as
 * (node, endpoint, area ID, offset), and completions as status words the
 * NIC writes into memory.
 *
 * This header is the one to include: the operation families' declarations
 * live in <infiniband/rhinetdv/FAMILY.h> (FAMILY: tag, pindown, mcast,
 * share, admin, sync, atomic, coll, trigger, watch), which it includes. Every operation's
 * attributes begin with struct rhinetdv_op_common and are passed with
 * their size.
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
 * rhinetdv_subscribe(3), rhinetdv_atomic(3), rhinetdv_atomic_ext(3),
 * rhinetdv_collective(3),
 * rhinetdv_grant_group(3), rhinetdv_create_trigger(3),
 * rhinetdv_wr_set_trigger(3), rhinetdv_wait_event(3),
 * rhinetdv_watch_area(3), rhinet-group(8).
 */
#ifndef INFINIBAND_RHINETDV_H
#define INFINIBAND_RHINETDV_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the common parameter block ----------------------------------------- */

/*
 * Every operation's attribute struct (rhinetdv_isend_attr, _pin_attr,
 * _mcast_attr, ..., and rhinetdv_xfer_ex, whose wr_id is base.wr_id)
 * begins with these two fields, in this order, and is passed with inlen,
 * its size as the caller knows it: a library that knows a shorter struct
 * takes it if the bytes past its end are zero, a longer struct is padded
 * with zeros. comp_mask says which optional fields are valid; bits the
 * library does not know make the call fail with EINVAL.
 */
struct rhinetdv_op_common {
	uint64_t comp_mask;
	uint64_t wr_id; /* returned in the operation's completion */
};

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
	/* isend and irecv take partial-transfer modes (see Partial transfers below):
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
	/* triggered operations: rhinetdv_create_trigger,
	 * rhinetdv_wr_set_trigger, rhinetdv_set_trigger (RHINETDV_1.13)
	 */
	RHINETDV_CAP_TRIGGER = 1 << 16,
	/* swap, fetch, and/or/xor, 32-bit words and non-fetching atomics:
	 * rhinetdv_atomic_ext (RHINETDV_1.19)
	 */
	RHINETDV_CAP_ATOMIC_EXT = 1 << 17,
	/* watches of the process's own areas: rhinetdv_watch_area,
	 * _watch_count, _wait_watch (RHINETDV_1.21)
	 */
	RHINETDV_CAP_WATCH = 1 << 18,
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

/* ---- queues in another device's memory ---------------------------------- */

/*
 * A queue's buffer given by the application: bytes [offset, offset +
 * length) of a dma-buf it holds (another device's memory, exported by that
 * device's driver), and its own mapping of them at addr, through which the
 * library writes WQEs and reads CQEs. The NIC reaches the buffer by
 * peer-to-peer DMA. addr and offset are 64-byte aligned; the buffer must
 * stay mapped and the dma-buf open until the queue is destroyed; the
 * library zeroes the bytes it uses and never frees them.
 */
struct rhinetdv_queue_buf {
	int dmabuf_fd;
	uint32_t reserved; /* 0 */
	uint64_t offset;
	uint64_t length;
	void *addr;
};

enum rhinetdv_qp_init_attr_mask {
	RHINETDV_QP_INIT_ATTR_BUF = 1 << 0, /* buf is set */
	/*
	 * Many producers (RHINETDV_1.16): any number of threads post on the
	 * QP at once without a lock, through rhinetdv_mp_post_send or
	 * ibv_post_send. RC, UC or UD; at least 64 send queue slots are
	 * used whatever max_send_wr asks; not with IBV_QP_INIT_ATTR_SEND_OPS
	 * _FLAGS (EINVAL). See rhinetdv_mp_post_send(3).
	 */
	RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER = 1 << 1,
};

struct rhinetdv_qp_init_attr {
	uint64_t comp_mask; /* enum rhinetdv_qp_init_attr_mask */
	struct rhinetdv_queue_buf buf; /* the send and receive queues */
};

enum rhinetdv_cq_init_attr_mask {
	RHINETDV_CQ_INIT_ATTR_BUF = 1 << 0, /* buf is set */
};

struct rhinetdv_cq_init_attr {
	uint64_t comp_mask; /* enum rhinetdv_cq_init_attr_mask */
	struct rhinetdv_queue_buf buf; /* the completion ring */
};

/*
 * ibv_create_qp_ex and ibv_create_cq_ex with the queues where @dv_attr
 * says (inlen: sizeof(*dv_attr) as the caller knows it). Errors (errno):
 * EINVAL for a buffer too short or misaligned, comp_mask bits unknown;
 * EBADF for an fd that is no file; the exporter's or the kernel's errno
 * when the dma-buf cannot be pinned or reached by the NIC. A CQ in such a
 * buffer cannot be resized (EOPNOTSUPP).
 */
struct ibv_qp *rhinetdv_create_qp(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr,
				  const struct rhinetdv_qp_init_attr *dv_attr,
				  size_t inlen);
struct ibv_cq_ex *
rhinetdv_create_cq(struct ibv_context *context,
		   struct ibv_cq_init_attr_ex *attr,
		   const struct rhinetdv_cq_init_attr *dv_attr, size_t inlen);
/*
 * Bytes the buffer of a QP or CQ created with @attr needs (the same rules
 * as the create calls); 0, or EINVAL/EOPNOTSUPP as they would fail.
 */
int rhinetdv_qp_buf_len(struct ibv_context *context,
			const struct ibv_qp_init_attr_ex *attr, size_t *length);
int rhinetdv_cq_buf_len(struct ibv_context *context, uint32_t cqe,
			size_t *length);

/* ---- where a QP's queues lie in its buffer (RHINETDV_1.18) -------------- */

enum rhinetdv_qp_buf_flags {
	/* The SQ record is a struct rhn_mp_queue_record (many producers). */
	RHINETDV_QP_BUF_MULTI_PRODUCER = 1 << 0,
	/* The QP receives through an SRQ: it has no receive ring or record. */
	RHINETDV_QP_BUF_SRQ = 1 << 1,
};

/*
 * Offsets in bytes from the start of the QP's buffer, as the kernel placed
 * them: what a device that posts on the QP by itself needs to find the
 * send ring and the SQ record it publishes (see the hardware's
 * queues.md for their formats).
 */
struct rhinetdv_qp_buf_layout {
	uint64_t comp_mask; /* none defined yet: 0 */
	uint64_t length; /* bytes of the buffer the queues use */
	uint64_t sq_offset; /* sq_slots slots of RHN_SQ_SLOT_SIZE bytes */
	uint64_t sq_record_offset;
	uint64_t rq_offset; /* rq_wqes WQEs of RHN_RQ_WQE_SIZE bytes */
	uint64_t rq_record_offset;
	uint32_t sq_slots;
	uint32_t rq_wqes;
	uint32_t flags; /* enum rhinetdv_qp_buf_flags */
	uint32_t reserved; /* 0 */
};

/*
 * The layout of @qp's buffer (one the library allocated or one given with
 * RHINETDV_QP_INIT_ATTR_BUF), into @layout of @outlen bytes as the caller
 * knows the struct (at least up to `flags`). 0, or EINVAL (no QP, a
 * shorter struct), EOPNOTSUPP (not this provider's QP).
 */
int rhinetdv_query_qp_buf(struct ibv_qp *qp,
			  struct rhinetdv_qp_buf_layout *layout, size_t outlen);

/* ---- many producers on one send queue (RHINETDV_1.16) ------------------- */

enum rhinetdv_mp_post_flags {
	/*
	 * Publish the WQEs but ring no doorbell even where the batch rule
	 * says to: the NIC finds them by its record scan (slower; for tests
	 * of lost doorbells).
	 */
	RHINETDV_MP_POST_NO_DOORBELL = 1 << 0,
};

/*
 * ibv_post_send for a QP created with RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER,
 * callable by any number of threads at once: each WQE takes its slots with
 * an atomic add, is written, published in slot order and announced by one
 * doorbell per 32 slots. 0, or an errno with *bad_wr the first WR not
 * posted: ENOMEM when the send queue (or the completions the send CQ could
 * hold for this QP) is full, EINVAL for a bad WR, a QP not yet in RTS,
 * a destroyed QP or unknown flags, EOPNOTSUPP for a QP without the flag.
 */
int rhinetdv_mp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr, uint32_t flags);

/* ---- the doorbell page for a peer device -------------------------------- */

enum rhinetdv_export_doorbell_flags {
	RHINETDV_EXPORT_DOORBELL_CLOEXEC = 1 << 0, /* the fd is O_CLOEXEC */
};

struct rhinetdv_export_doorbell_attr {
	uint64_t comp_mask; /* 0: no optional field yet */
	uint32_t flags; /* enum rhinetdv_export_doorbell_flags */
	uint32_t reserved; /* 0 */
};

/*
 * The context's own doorbell page as a dma-buf, for another device's
 * driver to import, so that the device rings the NIC itself (1.14). attr
 * may be NULL (inlen 0). Returns the dma-buf's fd, or -1 with errno:
 * EINVAL (unknown bits), EOPNOTSUPP (not a rhinet context, or a kernel
 * without CONFIG_PCI_P2PDMA), EMFILE. The dma-buf is revoked when the
 * context is closed.
 */
int rhinetdv_export_doorbell(struct ibv_context *context,
			     const struct rhinetdv_export_doorbell_attr *attr,
			     size_t inlen);

/*
 * Kicks the send queue of @qp on its context's doorbell page from this
 * CPU, without posting (1.15): for a QP whose send ring and record another
 * device fills (rhinetdv_create_qp with a dma-buf), when that device
 * cannot reach the doorbell page itself and asks a CPU thread to ring for
 * it. The NIC reads the SQ record and fetches up to its producer index.
 * Returns 0, or an errno: EINVAL (NULL), EOPNOTSUPP (not a rhinet QP).
 */
int rhinetdv_ring_sq(struct ibv_qp *qp);

/* ---- endpoint ----------------------------------------------------------- */

enum rhinetdv_endpoint_init_attr_mask {
	/* max_irecv is set */
	RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV = 1 << 0,
	/* qp_buf and cq_buf are set (1.12) */
	RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS = 1 << 1,
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
	/* With RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS (1.12): the endpoint's
	 * queues in buffers of the application's, as rhinetdv_create_qp and
	 * rhinetdv_create_cq take them; rhinetdv_endpoint_buf_len gives the
	 * bytes each needs. Read only with the bit set.
	 */
	struct rhinetdv_queue_buf qp_buf;
	struct rhinetdv_queue_buf cq_buf;
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
/*
 * Bytes the endpoint's QP and CQ buffers need for @attr (NULL: the
 * defaults), for RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS (1.12); 0, or
 * EINVAL as rhinetdv_create_endpoint would refuse @attr.
 */
int rhinetdv_endpoint_buf_len(struct ibv_context *context,
			      const struct rhinetdv_endpoint_init_attr *attr,
			      size_t *qp_len, size_t *cq_len);
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
 * Areas in a process group. A process is a member of the groups named
 * when it opened the device: the environment variable
 * RHINET_GROUPS="GROUP:TOKEN[,GROUP:TOKEN...]" (GROUP 1..65535, TOKEN a
 * 64-bit hexadecimal secret; rhinet-run sets it for every rank). A group
 * is joined only where the administrator granted it, to the process's
 * user or group, with that token (rhinetdv_grant_group, rhinet-group(8));
 * opening the device fails with EPERM otherwise, so a process outside the
 * launch cannot join. Group 0 is the open group every process is in
 * (rhinetdv_reg_area registers there). Areas of a group are reachable
 * only by members of it: the NIC checks the group at both ends
 * (RHINETDV_SYN_BAD_GROUP).
 */
enum rhinetdv_area_attr_mask {
	RHINETDV_AREA_ATTR_MASK_FLAGS = 1 << 0, /* flags is set (1.3) */
};

enum rhinetdv_area_flags {
	/*
	 * Remote pin-down: the range is only declared, nothing is
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
int rhinetdv_query_groups(struct ibv_context *context, uint16_t *groups, int n);

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
 * Partial transfers: PUSH and isend take BASIC, DIFF,
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
	/* PUSH by area: the target process gets a signal with
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
 * knows it. EINVAL: a mode the operation does not take (PUSH
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

/*
 * Sleeping until the endpoint's CQ gets a completion (1.20), for a waiter
 * that has spun long enough: rhinetdv_arm_event asks for one event for the
 * next CQE the NIC writes to the endpoint's CQ (a signaled operation's,
 * any failure's, an irecv's, a signal's); then look at what you wait for
 * once more (a CQE written before the arming raises no event) and, if it
 * has not come, rhinetdv_wait_event sleeps until the event, or timeout_ms
 * passes (-1: no limit), and takes it. A status word alone raises nothing:
 * post with the family's SIGNALED flag what you mean to sleep for.
 * 0, or an errno: ETIMEDOUT, EINTR (a signal handler ran), EINVAL (NULL,
 * a timeout below -1), EIO (the completion channel failed), EOPNOTSUPP.
 */
int rhinetdv_arm_event(struct rhinetdv_endpoint *ep);
int rhinetdv_wait_event(struct rhinetdv_endpoint *ep, int timeout_ms);

/* The operation families, one header each (C declarations, inside the
 * extern "C" block for C++).
 */
#include <infiniband/rhinetdv/tag.h>
#include <infiniband/rhinetdv/pindown.h>
#include <infiniband/rhinetdv/mcast.h>
#include <infiniband/rhinetdv/share.h>
#include <infiniband/rhinetdv/admin.h>
#include <infiniband/rhinetdv/sync.h>
#include <infiniband/rhinetdv/atomic.h>
#include <infiniband/rhinetdv/coll.h>
#include <infiniband/rhinetdv/trigger.h>
#include <infiniband/rhinetdv/watch.h>

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
	RHINETDV_OP_TRIGGER_ADD = 18, /* rhinetdv_trigger_add_remote (1.17) */
	RHINETDV_OP_ATOMIC_EXT = 19, /* rhinetdv_atomic_ext (1.19) */
	RHINETDV_OP_WATCH = 20, /* rhinetdv_watch_area (1.21) */
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
	 * mapped or not writable, or the process is gone
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
	/* rhinetdv_watch_area of an area this process has not registered */
	RHINETDV_SYN_NO_WATCH_AREA = 36,
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
