/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG uverbs ABI: the driver-specific data that follows the standard
 * uverbs commands (<rdma/ib_user_verbs.h>) between the rdma-core provider and
 * rhinet.ko. Described in Documentation/driver/uapi.md.
 *
 * Rules the kernel enforces on every request below:
 *  - a request shorter than the structure is refused with EINVAL;
 *  - bytes beyond the structure must be zero, else EOPNOTSUPP;
 *  - comp_mask and reserved fields must be zero, else EOPNOTSUPP;
 *  - a response buffer shorter than the response is refused with EINVAL.
 *
 * Queue memory is the caller's: one buffer per CQ, QP and SRQ holding the
 * ring(s) and their doorbell records, laid out as RHINET_*_LAYOUT says. The
 * kernel pins it and registers it with the NIC for that queue only.
 */
#ifndef RHINET_ABI_USER_H
#define RHINET_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define RHINET_UVERBS_ABI_VERSION 1

/* Queue buffers start on this boundary (one CQE or WQE slot). */
#define RHINET_QUEUE_BUF_ALIGN 64

/* ---- ucontext ----------------------------------------------------------- */

/* rhinet_alloc_ucontext_resp.comp_mask: which later fields are valid. */
enum rhinet_alloc_ucontext_resp_mask {
	/* max_areas is set; reg_mr takes struct rhinet_reg_mr_cmd */
	RHINET_UCONTEXT_RESP_AREAS = 1 << 0,
	/* the request's groups were joined; twin_bytes and twin_share are
	 * set (device memory through alloc_dm is twin memory)
	 */
	RHINET_UCONTEXT_RESP_GROUPS = 1 << 1,
	/* reg_mr takes RHINET_REG_MR_ON_DEMAND (remote pin-down) */
	RHINET_UCONTEXT_RESP_PIN_ON_DEMAND = 1 << 2,
	/* the NIC has RHN_CAP_RQ_RECORD_READ and this driver keeps QP
	 * buffers NIC-writable: a post to a plain RQ (not an endpoint's)
	 * may leave out the RHN_DB_RQ kick unless the RQ record's
	 * nic_consumer holds RHN_RQ_RECORD_DOORBELL_WANTED
	 */
	RHINET_UCONTEXT_RESP_RQ_DOORBELL_ON_REQUEST = 1 << 3,
	/* the NIC has RHN_CAP_SQ_DOORBELL_ON_REQUEST and this driver keeps
	 * QP buffers NIC-writable: a post to a plain SQ (not a
	 * multi-producer one) may leave out the RHN_DB_SQ kick unless the
	 * SQ record's nic_consumer holds RHN_SQ_RECORD_DOORBELL_WANTED
	 */
	RHINET_UCONTEXT_RESP_SQ_DOORBELL_ON_REQUEST = 1 << 4,
	/* with RHINET_UCONTEXT_RESP_SQ_DOORBELL_ON_REQUEST, the NIC has
	 * RHN_CAP_SQ_EVENT_INDEX: a QP created with
	 * RHINET_CREATE_QP_SQ_EVENT_INDEX has an event index in its SQ
	 * record's nic_consumer (rhn_sq_post_must_kick tells a post whether
	 * to kick); a QP created without it keeps the request bit alone
	 */
	RHINET_UCONTEXT_RESP_SQ_EVENT_INDEX = 1 << 5,
	/* the NIC has RHN_CAP_CQE_RUNS: a CQ created with
	 * RHINET_CREATE_CQ_RUNS may hold runs, one CQE (RHN_CQE_X_RUN) for
	 * several successful completions of one queue of one QP; a CQ created
	 * without it never does
	 */
	RHINET_UCONTEXT_RESP_CQE_RUNS = 1 << 6,
};

/* rhinet_alloc_ucontext_cmd.comp_mask */
enum rhinet_alloc_ucontext_cmd_mask {
	RHINET_UCONTEXT_CMD_GROUPS = 1 << 0, /* num_groups and groups[] */
};

#define RHINET_MAX_GROUPS 8

/*
 * Process groups: the processes of one parallel job, the only ones that
 * may reach each other's areas. A process joins groups when it opens the
 * device, each named by its ID (1..65535) and a 64-bit secret token. The
 * administrator grants a group on each node first (RHINET_IB_METHOD_GRANT
 * _GROUP below: its token and the uid and/or gid that may join); a group
 * not granted on this node, named with another token, or by a process
 * whose user or group the grant does not name, is not joined, and the
 * response's groups_refused says which: the context is
 * still created, and the provider closes it and reports EPERM. (Failing
 * the command instead would leak a reference to the task in Linux 6.1's
 * ioctl GET_CONTEXT path, which frees a failed context without releasing
 * its resource-tracking entry.) IDs must be distinct; EINVAL otherwise.
 * No request data (an older provider): no groups.
 */
struct rhinet_group_cred {
	__u16 group;
	__u16 reserved[3];
	__aligned_u64 token;
};

struct rhinet_alloc_ucontext_cmd {
	__u32 comp_mask; /* enum rhinet_alloc_ucontext_cmd_mask */
	__u32 num_groups; /* <= RHINET_MAX_GROUPS */
	struct rhinet_group_cred groups[RHINET_MAX_GROUPS];
};

/*
 * The response names the process's doorbell page. A response buffer that
 * ends at max_cq_log_depth (an older provider) gets the fields up to
 * there, one that ends at reserved those up to there.
 */
struct rhinet_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 db_page; /* NIC context number = doorbell page index */
	__aligned_u64 db_mmap_offset; /* mmap() offset of that page */
	__u32 db_page_size; /* bytes to map */
	__u32 caps; /* enum rhn_cap of the NIC */
	__u32 node_id; /* this NIC's fabric node */
	__u32 max_inline; /* bytes of inline data per send WQE */
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_wq_log_depth;
	__u32 max_cq_log_depth;
	__u32 max_areas; /* communication areas of the NIC, all processes */
	__u32 reserved;
	/* RHINET_UCONTEXT_RESP_GROUPS: */
	__aligned_u64 twin_bytes; /* the NIC's twin memory, all processes */
	__aligned_u64 twin_share; /* what one process may hold of it */
	/* bit i: the request's groups[i] was not joined (not granted on
	 * this node to the process's user or group, or another token)
	 */
	__u32 groups_refused;
	__u32 reserved1;
};

/* The size of the response before max_areas. */
#define RHINET_ALLOC_UCONTEXT_RESP_V0_LEN 48

/* ---- Device memory = twin memory ---------------------------------------- */

/*
 * ibv_alloc_dm() hands out on-board twin memory (the copy a DIFF PUSH
 * compares against, a TWIN PULL fills; RHN_ADMIN_ALLOC_TWIN), rounded up
 * to 4 KiB; freed with the DM or the process. EDQUOT: the process would
 * hold more than twin_share; ENOMEM: the NIC has no room. The response
 * (driver data) gives the NIC's handle that TWIN and DIFF transfers name.
 */
struct rhinet_alloc_dm_resp {
	__u32 comp_mask; /* enum rhinet_alloc_dm_resp_mask */
	__u32 twin_handle;
};

enum rhinet_alloc_dm_resp_mask {
	/* RHINET_IB_METHOD_DM_COPY copies in and out of the DM, and an MR
	 * can be registered over it (ibv_reg_dm_mr, zero-based)
	 */
	RHINET_ALLOC_DM_RESP_COPY = 1 << 0,
};

/*
 * ibv_memcpy_to_dm / ibv_memcpy_from_dm: no BAR maps twin memory, so the
 * NIC copies it by DMA (RHN_ADMIN_TWIN_WRITE / _READ) through a kernel
 * bounce buffer. A driver namespace method of the core's DM object:
 * HANDLE the DM, OFFSET bytes into it, ADDR and LENGTH the caller's
 * buffer. EINVAL: beyond the DM's length (as ibv_alloc_dm asked for it);
 * EFAULT: the caller's buffer; EIO: the device failed.
 */
enum rhinet_ib_dm_methods {
	RHINET_IB_METHOD_DM_COPY = (1U << UVERBS_ID_NS_SHIFT),
};

enum rhinet_ib_dm_copy_attrs {
	RHINET_IB_ATTR_DM_COPY_HANDLE = (1U << UVERBS_ID_NS_SHIFT), /* the DM */
	RHINET_IB_ATTR_DM_COPY_OFFSET, /* u64: bytes into the DM */
	RHINET_IB_ATTR_DM_COPY_ADDR, /* u64: the caller's buffer */
	RHINET_IB_ATTR_DM_COPY_LENGTH, /* u64 */
	RHINET_IB_ATTR_DM_COPY_DIRECTION, /* enum rhinet_dm_copy_direction */
};

enum rhinet_dm_copy_direction {
	RHINET_DM_COPY_TO_DM = 0,
	RHINET_DM_COPY_FROM_DM = 1,
};

/* ---- PD ----------------------------------------------------------------- */

struct rhinet_alloc_pd_resp {
	__u32 comp_mask;
	__u32 pdn;
};

/* ---- MR ----------------------------------------------------------------- */

enum rhinet_reg_mr_cmd_mask {
	RHINET_REG_MR_AREA = 1 << 0, /* area_id is valid */
	/*
	 * Remote pin-down: the range is only declared, not pinned.
	 * Peers reach it by rkey or area once the process's host pinned the
	 * pages they touch: on their PD_REQUEST, or on first touch by a
	 * PUSH, PULL, WRITE, READ or atomic, which the NIC holds meanwhile.
	 * Pages are unpinned when every PD_REQUEST holder has released them
	 * (pages pinned by a first touch alone: by a release over them, or
	 * with the MR). Pages pinned this way count against the process's
	 * RLIMIT_MEMLOCK and its user's limit (module parameter
	 * max_pin_on_demand_pages); beyond either the
	 * peer's request fails (RHN_SYN_NOT_PINNED). Needs
	 * RHINET_UCONTEXT_RESP_PIN_ON_DEMAND; the lkey serves local work
	 * requests only over pages that are pinned.
	 */
	RHINET_REG_MR_ON_DEMAND = 1 << 1,
};

/*
 * Optional: no request data (or all zero) registers a plain MR. With
 * RHINET_REG_MR_AREA the whole MR [iova, iova + length) also becomes the
 * communication area area_id of the process (NIC context): peers' endpoint
 * PUSH/PULL with RHN_WQE_F_AREA address it as (area_id, offset). The area
 * goes away with the MR. EEXIST: the process has an area of that ID;
 * ENOSPC: max_areas are registered.
 */
struct rhinet_reg_mr_cmd {
	__u32 comp_mask; /* enum rhinet_reg_mr_cmd_mask */
	__u32 area_id;
};

/*
 * Optional (a response buffer this long gets it): how the region was
 * translated, page_shift = log2 of the page size the NIC's tables use.
 */
struct rhinet_reg_mr_resp {
	__u32 comp_mask;
	__u32 page_shift;
};

/* ---- Queue buffers ------------------------------------------------------ */

/*
 * rhinet_create_cq_cmd.comp_mask and rhinet_create_qp_cmd.comp_mask.
 * RHINET_QUEUE_BUF_DMABUF: the queue's buffer (its rings and records, laid
 * out as without the bit) is bytes [dmabuf_offset, + buf_len) of the
 * dma-buf dmabuf_fd, the memory of another device, not process memory.
 * buf_va is then only the address the NIC gives the buffer's first byte
 * (nonzero and aligned as always; providers pass their mapping of it, if
 * they have one). Nothing is counted as the process's pinned memory: the
 * exporter keeps the buffer in place while the queue lives.
 */
enum rhinet_queue_buf_mask {
	RHINET_QUEUE_BUF_DMABUF = 1 << 0,
	/*
	 * rhinet_create_qp_cmd only: many producers share the SQ
	 * (RHN_CREATE_QP_F_MULTI_PRODUCER). Its record is then a struct
	 * rhn_mp_queue_record (16 bytes, the NIC writes its nic_consumer),
	 * so the RQ record moves 8 bytes on (RHINET_QP_LAYOUT). Needs an SQ
	 * of at least RHINET_MP_MIN_SQ_LOG_DEPTH: a doorbell batch
	 * (RHN_MP_DB_BATCH) and the largest WQE must fit. EINVAL otherwise,
	 * or without a send queue (max_send_wr 0); on a CQ, EOPNOTSUPP.
	 */
	RHINET_CREATE_QP_MULTI_PRODUCER = 1 << 1,
	/*
	 * rhinet_create_qp_cmd only: the SQ record's nic_consumer carries
	 * an event index (RHN_CREATE_QP_F_SQ_EVENT_INDEX). EOPNOTSUPP when
	 * the ucontext response lacks RHINET_UCONTEXT_RESP_SQ_EVENT_INDEX;
	 * EINVAL with RHINET_CREATE_QP_MULTI_PRODUCER.
	 */
	RHINET_CREATE_QP_SQ_EVENT_INDEX = 1 << 2,
	/*
	 * rhinet_create_cq_cmd only, and not on a resize (EOPNOTSUPP there:
	 * a resized CQ keeps what it was created with): the NIC may write
	 * runs into the CQ (RHN_CREATE_CQ_F_RUNS). EOPNOTSUPP when the
	 * ucontext response lacks RHINET_UCONTEXT_RESP_CQE_RUNS; on a QP,
	 * EOPNOTSUPP.
	 */
	RHINET_CREATE_CQ_RUNS = 1 << 3,
};

#define RHINET_MP_MIN_SQ_LOG_DEPTH 6

/* ---- CQ ----------------------------------------------------------------- */

/*
 * RHINET_CQ_LAYOUT: 32-byte CQEs (struct rhn_cqe) at buf_va, 1 << log_depth
 * of them, then struct rhn_cq_record. The CQ holds 1 << log_depth entries,
 * at least the cqe count asked for.
 *
 * ibv_resize_cq sends the same command for a new, zeroed buffer: the CQEs
 * not yet consumed (the record's consumer_index tells) move in order to its
 * start, and the consumer index restarts at 0. The old buffer is unpinned.
 */
struct rhinet_create_cq_cmd {
	__u32 comp_mask; /* enum rhinet_queue_buf_mask */
	__u32 log_depth;
	__aligned_u64 buf_va;
	__aligned_u64 buf_len;
	__s32 dmabuf_fd; /* RHINET_QUEUE_BUF_DMABUF */
	__u32 reserved;
	__aligned_u64 dmabuf_offset;
};

/* A request of this length (an older provider) has no dma-buf fields. */
#define RHINET_CREATE_CQ_CMD_V0_LEN 24

struct rhinet_create_cq_resp {
	__u32 comp_mask;
	__u32 cqn; /* for the CQ arm doorbell */
};

/* ---- SRQ ---------------------------------------------------------------- */

/* rhinet_create_srq_cmd.comp_mask */
enum rhinet_create_srq_cmd_mask {
	/*
	 * A tag-matching SRQ (ibverbs IBV_SRQT_TM): ops_log_depth is valid,
	 * and the buffer also holds the ring of tag-list operations.
	 * Requires IB_SRQT_TM (and the other way round); the NIC has
	 * RHN_CAP_TM.
	 */
	RHINET_CREATE_SRQ_TM = 1 << 0,
};

/*
 * RHINET_SRQ_LAYOUT: 64-byte receive WQEs (struct rhn_recv_wqe) at buf_va,
 * 1 << log_depth of them, then struct rhn_queue_record. A TM SRQ: the
 * receive WQEs, then 1 << ops_log_depth 64-byte struct rhn_tm_op_wqe,
 * then the receive ring's struct rhn_queue_record, then the operation
 * ring's (whose nic_consumer the NIC writes).
 * A request of RHINET_CREATE_SRQ_CMD_V0_LEN bytes (an older provider)
 * asks for a basic SRQ.
 */
struct rhinet_create_srq_cmd {
	__u32 comp_mask; /* enum rhinet_create_srq_cmd_mask */
	__u32 log_depth;
	__aligned_u64 buf_va;
	__aligned_u64 buf_len;
	__u32 ops_log_depth; /* RHINET_CREATE_SRQ_TM: 1..tm_caps.max_ops */
	__u32 reserved;
};

#define RHINET_CREATE_SRQ_CMD_V0_LEN 24

struct rhinet_create_srq_resp {
	__u32 comp_mask;
	__u32 srqn;
};

/* ---- QP ----------------------------------------------------------------- */

/* With IB_QPT_DRIVER, which NIC QP type. */
enum rhinet_qp_driver_type {
	/* Reliable connectionless endpoint: one per process, addresses any
	 * (node, endpoint) per WQE, like UD but acknowledged.
	 */
	RHINET_QP_DRIVER_TYPE_ENDPOINT = 1,
};

/*
 * RHINET_QP_LAYOUT: the SQ ring (64-byte slots, 1 << sq_log_depth of them)
 * at buf_va; the RQ ring (64-byte WQEs, 1 << rq_log_depth) right after it,
 * absent with an SRQ (rq_log_depth 0); then the SQ's struct
 * rhn_queue_record (struct rhn_mp_queue_record with
 * RHINET_CREATE_QP_MULTI_PRODUCER) and, without an SRQ, the RQ's. The
 * response repeats the offsets the kernel used.
 */
struct rhinet_create_qp_cmd {
	__u32 comp_mask; /* enum rhinet_queue_buf_mask (both bits) */
	__u32 driver_qp_type; /* enum rhinet_qp_driver_type, IB_QPT_DRIVER */
	__u8 sq_log_depth; /* SQ slots; a WQE takes 1 + ext_units slots */
	__u8 rq_log_depth; /* RQ WQEs; 0 with an SRQ */
	__u8 reserved[6];
	__aligned_u64 buf_va;
	__aligned_u64 buf_len;
	__s32 dmabuf_fd; /* RHINET_QUEUE_BUF_DMABUF */
	__u32 reserved2;
	__aligned_u64 dmabuf_offset;
};

/* A request of this length (an older provider) has no dma-buf fields. */
#define RHINET_CREATE_QP_CMD_V0_LEN 32

struct rhinet_create_qp_resp {
	__u32 comp_mask;
	__u32 qpn; /* for the SQ/RQ doorbells; the endpoint number */
	__u32 rq_offset; /* from buf_va */
	__u32 sq_record_offset;
	__u32 rq_record_offset;
	__u32 reserved;
};

/* ---- AH ----------------------------------------------------------------- */

/* No request data. The node the address resolved to goes into UD WQEs. */
struct rhinet_create_ah_resp {
	__u32 comp_mask;
	__u16 dest_node;
	__u16 reserved;
};

/* ---- switch groups of simultaneous multicast (ioctl methods) ----------- */

/*
 * The member list a switch group has on this node's NIC (simultaneous
 * multicast, Documentation/hardware/queues.md):
 * the same list on every member's NIC, as the administrator set the
 * group's pattern in the fabric switch. Only a caller with CAP_NET_ADMIN
 * may set, clear or read a list (EPERM otherwise); any process opening
 * the device reaches the methods, which is how an admin tool runs them
 * (rdma-core: rhinetdv_set_mcast_group, rhinetdv_query_mcast_group).
 * Driver namespace methods of the driver object RHINET_IB_OBJECT_MCAST_SWITCH,
 * no object handle.
 */
#define RHINET_MCAST_GROUP_FIRST 0xf000 /* the administrator's sub-range */
#define RHINET_MCAST_GROUP_LAST 0xf7ff
#define RHINET_MCAST_GROUP_MAX_MEMBERS 128

/* One member: a node and its endpoint (the QPN of a process's endpoint). */
struct rhinet_mcast_member {
	__u16 node;
	__u16 reserved; /* 0 */
	__u32 qpn; /* < 1 << 24 */
};

enum rhinet_ib_objects {
	RHINET_IB_OBJECT_MCAST_SWITCH = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_OBJECT_GROUP, /* process group grants, below */
	RHINET_IB_OBJECT_DOORBELL, /* the context's doorbell page, below */
	RHINET_IB_OBJECT_TRIGGER, /* trigger counters, below */
};

enum rhinet_ib_mcast_switch_methods {
	/*
	 * Sets (a nonempty MEMBERS) or clears (MEMBERS absent or empty) the
	 * group's list. EINVAL: an ID outside RHINET_MCAST_GROUP_FIRST..LAST,
	 * a MEMBERS length that is no multiple of the entry, reserved bits, a
	 * node beyond the fabric or listed twice, a QPN of 25 bits or more.
	 * E2BIG: more than RHINET_MCAST_GROUP_MAX_MEMBERS. From the NIC:
	 * EBUSY (multicasts of this node to the group are still outstanding),
	 * ENOSPC (its group table is full), ENOENT (clearing a group it does
	 * not have), EIO (the device failed).
	 */
	RHINET_IB_METHOD_SET_MCAST_GROUP = (1U << UVERBS_ID_NS_SHIFT),
	/*
	 * The list last set for the group. ENOENT: none. COUNT is the number
	 * of members; MEMBERS gets as many of them as its length holds.
	 */
	RHINET_IB_METHOD_QUERY_MCAST_GROUP,
};

enum rhinet_ib_set_mcast_group_attrs {
	/* u16: the group's ID */
	RHINET_IB_ATTR_SET_MCAST_GROUP_ID = (1U << UVERBS_ID_NS_SHIFT),
	/* u16: the process group whose contexts may send; 0: every one */
	RHINET_IB_ATTR_SET_MCAST_GROUP_ENDPOINT_GROUP,
	RHINET_IB_ATTR_SET_MCAST_GROUP_MEMBERS, /* struct rhinet_mcast_member[] */
};

enum rhinet_ib_query_mcast_group_attrs {
	/* u16: the group's ID */
	RHINET_IB_ATTR_QUERY_MCAST_GROUP_ID = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_ATTR_QUERY_MCAST_GROUP_ENDPOINT_GROUP, /* u16, out */
	RHINET_IB_ATTR_QUERY_MCAST_GROUP_COUNT, /* u32, out */
	RHINET_IB_ATTR_QUERY_MCAST_GROUP_MEMBERS, /* out, optional */
};

/* ---- process group grants (ioctl methods) ------------------------------ */

/*
 * Who may join a process group on this node. Only the administrator of
 * the device's network namespace (CAP_NET_ADMIN there: the initial one
 * unless the device was moved in exclusive rdma netns mode) grants,
 * revokes or lists (EPERM otherwise); any process opening the device
 * reaches the methods, which is how the tool runs them (rdma-core:
 * rhinetdv_grant_group, rhinetdv_revoke_group, rhinetdv_query_group_grants;
 * the tool rhinet-group). Driver namespace methods of the driver object
 * RHINET_IB_OBJECT_GROUP, no object handle. A group is joined by naming
 * its token, by a process whose effective uid is the grant's uid or whose
 * effective or supplementary groups hold the grant's gid. Nobody joins a
 * group that is not granted, root included.
 */
#define RHINET_MAX_GROUP_GRANTS 1024 /* granted groups per node */

enum rhinet_ib_group_methods {
	/*
	 * Grants a group. ID 1..65535, a token, at least one of UID and GID
	 * (IDs of the caller's user namespace), optionally a LIFETIME in
	 * seconds after which nobody else joins (as if revoked). EINVAL: ID
	 * 0, neither UID nor GID, an ID with no mapping. EEXIST: the group
	 * is granted. EBUSY: its grant was revoked (or expired) and members
	 * of it remain. ENOSPC: RHINET_MAX_GROUP_GRANTS groups are granted.
	 */
	RHINET_IB_METHOD_GRANT_GROUP = (1U << UVERBS_ID_NS_SHIFT),
	/*
	 * Revokes a grant: nobody joins any more; the processes in the
	 * group stay members until they close the device (MEMBERS: how
	 * many contexts), and the group's ID cannot be granted again until
	 * then. ENOENT: not granted (or already revoked).
	 */
	RHINET_IB_METHOD_REVOKE_GROUP,
	/*
	 * The groups of the node: COUNT how many (granted, and revoked or
	 * expired ones that still have members); ENTRIES gets as many of
	 * them, by ascending ID, as its length holds. Tokens are never read
	 * back.
	 */
	RHINET_IB_METHOD_QUERY_GROUPS,
};

enum rhinet_ib_grant_group_attrs {
	RHINET_IB_ATTR_GRANT_GROUP_ID = (1U << UVERBS_ID_NS_SHIFT), /* u16 */
	RHINET_IB_ATTR_GRANT_GROUP_TOKEN, /* u64 */
	RHINET_IB_ATTR_GRANT_GROUP_UID, /* u32, optional */
	RHINET_IB_ATTR_GRANT_GROUP_GID, /* u32, optional */
	RHINET_IB_ATTR_GRANT_GROUP_LIFETIME, /* u32 seconds, optional */
};

enum rhinet_ib_revoke_group_attrs {
	RHINET_IB_ATTR_REVOKE_GROUP_ID = (1U << UVERBS_ID_NS_SHIFT), /* u16 */
	RHINET_IB_ATTR_REVOKE_GROUP_MEMBERS, /* u32, out, optional */
};

enum rhinet_ib_query_groups_attrs {
	/* u32, out */
	RHINET_IB_ATTR_QUERY_GROUPS_COUNT = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_ATTR_QUERY_GROUPS_ENTRIES, /* struct rhinet_group_grant[] */
};

/* rhinet_group_grant.flags */
enum rhinet_group_grant_flags {
	RHINET_GROUP_GRANT_UID = 1 << 0, /* uid is set */
	RHINET_GROUP_GRANT_GID = 1 << 1, /* gid is set */
	RHINET_GROUP_GRANT_LIFETIME = 1 << 2, /* granted with a lifetime */
	RHINET_GROUP_GRANT_REVOKED = 1 << 3,
	RHINET_GROUP_GRANT_EXPIRED = 1 << 4, /* its lifetime is over */
};

/* One group of the node, as RHINET_IB_METHOD_QUERY_GROUPS reports it. */
struct rhinet_group_grant {
	__u16 group;
	__u16 flags; /* enum rhinet_group_grant_flags */
	__u32 uid; /* who may join (the caller's user namespace) */
	__u32 gid;
	__u32 members; /* contexts in the group on this node */
	__u32 granted_by; /* real uid of the process that granted it */
	__u32 expires_in; /* seconds of lifetime left (0: none, or over) */
};

/* ---- the doorbell page for a peer device (ioctl method) ---------------- */

/*
 * A process hands its own doorbell page (the context's, nobody else's) to
 * another device as a dma-buf, so that the device rings the NIC by itself
 * (device-initiated posting: Documentation/driver/uapi.md, "The doorbell
 * page for a peer device"). A driver method of the driver object
 * RHINET_IB_OBJECT_DOORBELL, no object handle; the context is the
 * caller's. The dma-buf covers the one page; its importer must take
 * peer-to-peer memory and must be revocable (a dynamic importer, with
 * move_notify), else attaching is EOPNOTSUPP: when the context goes, the
 * driver revokes every dma-buf of its page before the page can be another
 * context's, and mapping it again is ENODEV. Its size (lseek SEEK_END) is
 * the doorbell page's, RHN_DB_PAGE_SIZE. Errors: EOPNOTSUPP (a kernel
 * without CONFIG_PCI_P2PDMA), EINVAL (unknown flags), EMFILE/ENFILE.
 */
enum rhinet_ib_doorbell_methods {
	RHINET_IB_METHOD_EXPORT_DOORBELL = (1U << UVERBS_ID_NS_SHIFT),
};

enum rhinet_ib_export_doorbell_attrs {
	/* u32, optional: O_CLOEXEC, else 0 */
	RHINET_IB_ATTR_EXPORT_DOORBELL_FLAGS = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_ATTR_EXPORT_DOORBELL_FD, /* s32, out: the dma-buf */
};

/* ---- trigger counters (ioctl methods) ---------------------------------- */

/*
 * Trigger counters of triggered operations (Documentation/hardware/
 * triggered.md): a 64-bit value on the NIC that the process's doorbell
 * page adds to (RHN_DB_TRIGGER), and that WQEs posted with
 * RHN_WQE_X_TRIGGERED wait on and with RHN_WQE_X_CHAIN add to. A driver
 * object of its own, RHINET_IB_OBJECT_TRIGGER: it belongs to the process
 * that created it and goes with its context (the WQEs parked on it then
 * complete with WR_FLUSH_ERR, vendor_err RHN_SYN_TRIGGER_GONE). Needs
 * RHN_CAP_TRIGGER (EOPNOTSUPP otherwise). rdma-core:
 * rhinetdv_create_trigger(3).
 */
enum rhinet_ib_trigger_methods {
	/*
	 * Creates a counter of the caller's context with the first value
	 * VALUE (0 if absent). Returns the NIC's handle (what the doorbell
	 * and WQEs name; valid in this context only) and its key, a random
	 * number the driver chose that a peer's increment will have to
	 * carry. ENOSPC: the NIC's table is full, or the context (or its
	 * user's account) holds its share of it; EIO: the device failed.
	 */
	RHINET_IB_METHOD_TRIGGER_CREATE = (1U << UVERBS_ID_NS_SHIFT),
	/* Ends the counter: the WQEs parked on it complete (flushed). */
	RHINET_IB_METHOD_TRIGGER_DESTROY,
	/* The counter's value now (QUERY_TRIGGER). */
	RHINET_IB_METHOD_TRIGGER_QUERY,
};

enum rhinet_ib_trigger_create_attrs {
	/* the new object */
	RHINET_IB_ATTR_TRIGGER_CREATE_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_ATTR_TRIGGER_CREATE_VALUE, /* u64, optional */
	RHINET_IB_ATTR_TRIGGER_CREATE_NIC_HANDLE, /* u32, out */
	RHINET_IB_ATTR_TRIGGER_CREATE_KEY, /* u32, out */
};

enum rhinet_ib_trigger_destroy_attrs {
	RHINET_IB_ATTR_TRIGGER_DESTROY_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
};

enum rhinet_ib_trigger_query_attrs {
	RHINET_IB_ATTR_TRIGGER_QUERY_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	RHINET_IB_ATTR_TRIGGER_QUERY_VALUE, /* u64, out */
};

#endif /* RHINET_ABI_USER_H */
