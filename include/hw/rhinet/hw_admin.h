/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: admin queue (driver -> NIC commands).
 * Described in Documentation/hardware/admin.md.
 *
 * The driver places 128-byte commands in the admin SQ ring, writes the new
 * producer index to RHN_REG_ADMIN_SQ_TAIL, and the NIC answers each command
 * in order with a 16-byte completion in the admin CQ ring (owner bit as for
 * CQEs), raising MSI-X vector RHN_MSIX_ADMIN when interrupts are enabled.
 */
#ifndef RHINET_HW_ADMIN_H
#define RHINET_HW_ADMIN_H

#include "hw_common.h"

#define RHN_ADMIN_CMD_SIZE 128
#define RHN_ADMIN_CPL_SIZE 16
#define RHN_ADMIN_MAX_LOG_DEPTH 8

enum rhn_admin_opcode {
	RHN_ADMIN_QUERY_DEVICE = 0x01, /* writes struct rhn_device_attr */
	RHN_ADMIN_QUERY_COUNTERS = 0x02, /* writes u64[RHN_CNT_COUNT] */
	RHN_ADMIN_CREATE_CONTEXT = 0x10,
	RHN_ADMIN_DESTROY_CONTEXT = 0x11,
	RHN_ADMIN_CREATE_PD = 0x12,
	RHN_ADMIN_DESTROY_PD = 0x13,
	RHN_ADMIN_CREATE_MR = 0x14,
	RHN_ADMIN_DESTROY_MR = 0x15, /* also drops its TLB entries */
	RHN_ADMIN_INVALIDATE_TLB = 0x16,
	/* A region's rights and/or PD changed in place: its keys stay. */
	RHN_ADMIN_MODIFY_MR = 0x17,
	RHN_ADMIN_CREATE_EQ = 0x18,
	RHN_ADMIN_DESTROY_EQ = 0x19,
	RHN_ADMIN_CREATE_CQ = 0x1a,
	RHN_ADMIN_DESTROY_CQ = 0x1b,
	RHN_ADMIN_CREATE_SRQ = 0x1c,
	RHN_ADMIN_MODIFY_SRQ = 0x1d,
	RHN_ADMIN_DESTROY_SRQ = 0x1e,
	/* A CQ moves to a new ring and record; its unread CQEs move along. */
	RHN_ADMIN_RESIZE_CQ = 0x1f,
	RHN_ADMIN_CREATE_QP = 0x20,
	RHN_ADMIN_MODIFY_QP = 0x21,
	RHN_ADMIN_QUERY_QP = 0x22, /* writes struct rhn_qp_attr */
	RHN_ADMIN_DESTROY_QP = 0x23,
	/* Memory windows: keys in the MR key space, rkeys only. */
	RHN_ADMIN_CREATE_MW = 0x24, /* result: its key */
	/* u.handle.handle = the key CREATE_MW gave (its index counts) */
	RHN_ADMIN_DESTROY_MW = 0x25,
	/* Completion event moderation of a CQ (u.modify_cq) */
	RHN_ADMIN_MODIFY_CQ = 0x26,
	RHN_ADMIN_REGISTER_AREA = 0x28,
	RHN_ADMIN_UNREGISTER_AREA = 0x29,
	/* kernel only: the groups a context is a member of (u.set_groups) */
	RHN_ADMIN_SET_GROUPS = 0x2a,
	/* Twin memory (on-board, for TWIN and DIFF): result = handle */
	RHN_ADMIN_ALLOC_TWIN = 0x2b,
	RHN_ADMIN_FREE_TWIN = 0x2c, /* u.handle.handle = the handle */
	/* Remote pin-down: the host answered an RHN_EQE_PD_REQUEST
	 * (u.pd_mapped)
	 */
	RHN_ADMIN_PD_MAPPED = 0x2d,
	RHN_ADMIN_SET_LINK = 0x30, /* administrative link up/down */
	RHN_ADMIN_SET_GID = 0x31, /* kernel only: one entry of the GID table */
	/* kernel only: u.handle.handle = node ID; the NIC sends that node's
	 * NIC a firmware PING and reports with RHN_EQE_PROBE_DONE
	 */
	RHN_ADMIN_PROBE_NODE = 0x32,
	/* kernel only: a switch group's member list for simultaneous
	 * multicast (u.mcast_group); count 0 removes the group
	 */
	RHN_ADMIN_SET_MCAST_GROUP = 0x33,
	/* verbs UD multicast (u.mcast_attach): UD QP `qpn` of hdr.context
	 * receives the datagrams sent to MGID `mgid`, or no longer does. The
	 * NIC joins the node's switch port to the MGID's group on its first
	 * attach and leaves it on the last detach (RHN_PKT_MGMT).
	 */
	RHN_ADMIN_ATTACH_MCAST = 0x34,
	RHN_ADMIN_DETACH_MCAST = 0x35,
	/* Twin memory of hdr.context <-> host memory at a bus address, copied
	 * by the NIC (u.twin_copy): how the host reads and writes the NIC's
	 * on-board memory, which no BAR maps
	 */
	RHN_ADMIN_TWIN_WRITE = 0x36, /* host bytes into the twin */
	RHN_ADMIN_TWIN_READ = 0x37, /* the twin's bytes to the host */
	/* Kernel only: a firmware image (hw_fw.h) handed to the card's
	 * shell, chunk by chunk (u.fw_download), then checked and kept to
	 * boot or store (u.fw_commit; a refusal's detail is the shell's
	 * enum rhn_fw_verdict). See firmware-image.md.
	 */
	RHN_ADMIN_FW_DOWNLOAD = 0x38,
	RHN_ADMIN_FW_COMMIT = 0x39,
	/* Triggered operations (triggered.md): a trigger counter of
	 * hdr.context (u.create_trigger; result: its handle), its end
	 * (u.handle.handle = the handle: the WQEs parked on it complete
	 * with WR_FLUSH_ERR), and its value (u.query: handle, and out_addr
	 * receives a __le64). DESTROY_CONTEXT ends the context's counters.
	 */
	RHN_ADMIN_CREATE_TRIGGER = 0x3a,
	RHN_ADMIN_DESTROY_TRIGGER = 0x3b,
	RHN_ADMIN_QUERY_TRIGGER = 0x3c,
};

enum rhn_admin_status {
	RHN_ADMIN_OK = 0,
	RHN_ADMIN_BAD_OPCODE = 1,
	RHN_ADMIN_BAD_PARAM = 2,
	RHN_ADMIN_NO_RESOURCES = 3,
	RHN_ADMIN_BAD_HANDLE = 4, /* no such object in this context */
	RHN_ADMIN_BUSY = 5, /* object still referenced */
	RHN_ADMIN_BAD_STATE = 6, /* illegal QP transition */
	RHN_ADMIN_DMA_ERROR = 7,
	RHN_ADMIN_NOT_PERMITTED = 8, /* e.g. physical lkey from a user ctx */
	RHN_ADMIN_EXISTS = 9,
};

/* Host memory reference, see RHN_LKEY_PHYSICAL in hw_queues.h. */
struct rhn_host_ref {
	__le64 addr;
	__le32 lkey;
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_host_ref, 16);

enum rhn_access {
	RHN_ACCESS_LOCAL_WRITE = 1u << 0,
	RHN_ACCESS_REMOTE_WRITE = 1u << 1,
	RHN_ACCESS_REMOTE_READ = 1u << 2,
	RHN_ACCESS_REMOTE_ATOMIC = 1u << 3,
	RHN_ACCESS_MW_BIND = 1u << 4, /* an MR windows may be bound to */
};

enum rhn_qp_type {
	RHN_QP_RC = 1,
	RHN_QP_UD = 2,
	RHN_QP_ENDPOINT = 3, /* reliable connectionless (PRODUCT.md) */
	RHN_QP_RAW_ETH = 4, /* kernel only: frames for the net_device */
	RHN_QP_UC = 5, /* connected, unacknowledged: SEND and WRITE only */
	/* XRC (RHN_CAP_XRC, queues.md "XRC"): the initiator, RC-like, no
	 * receive queue; each SEND names an XRC SRQ at the target
	 */
	RHN_QP_XRC_SEND = 6,
	/* XRC target: no queues of its own; a SEND lands in the XRC SRQ it
	 * names if that SRQ is of the QP's XRC domain
	 */
	RHN_QP_XRC_RECV = 7,
};

/* Standard QP states, values as enum ibv_qp_state. */
enum rhn_qp_state {
	RHN_QPS_RESET = 0,
	RHN_QPS_INIT = 1,
	RHN_QPS_RTR = 2,
	RHN_QPS_RTS = 3,
	RHN_QPS_SQD = 4,
	RHN_QPS_SQE = 5,
	RHN_QPS_ERR = 6,
};

enum rhn_qp_attr_mask {
	RHN_QP_ATTR_STATE = 1u << 0,
	RHN_QP_ATTR_ACCESS = 1u << 1,
	RHN_QP_ATTR_DEST = 1u << 2, /* dest_node + dest_qpn (RC) */
	RHN_QP_ATTR_QKEY = 1u << 3,
	RHN_QP_ATTR_RETRY = 1u << 4, /* rnr_retry, min_rnr_timer */
	RHN_QP_ATTR_MAX_RD_ATOMIC = 1u << 5,
	RHN_QP_ATTR_TIMEOUT = 1u << 6, /* timeout, retry_cnt */
};

#define RHN_NO_SRQ 0xffffffffu

/*
 * QPN 1 is the general services QP (IBTA's QP1) that management datagrams
 * such as connection requests are sent to. It is never issued otherwise;
 * the kernel context creates it as a UD QP with RHN_CREATE_QP_F_GSI.
 */
#define RHN_QPN_GSI 1u

enum rhn_create_qp_flags {
	RHN_CREATE_QP_F_GSI = 1u << 0,
	/*
	 * Many producers share the SQ (queues.md, "Many producers on one
	 * queue"): its record is a struct rhn_mp_queue_record (16 bytes, the
	 * NIC writes nic_consumer), and the NIC scans the record on its timer
	 * to find work whose doorbell was lost.
	 */
	RHN_CREATE_QP_F_MULTI_PRODUCER = 1u << 1,
	/*
	 * The SQ record's nic_consumer carries an event index, not the
	 * request bit alone (RHN_SQ_RECORD_EVENT; queues.md, "The SQ event
	 * index"). Needs RHN_CAP_SQ_EVENT_INDEX; not with MULTI_PRODUCER.
	 */
	RHN_CREATE_QP_F_SQ_EVENT_INDEX = 1u << 2,
};

/* Source GIDs of outgoing GRHs (RHN_WQE_F_GRH) are taken from this table. */
#define RHN_GID_TABLE_LEN 16

struct rhn_admin_cmd_hdr {
	__u8 opcode; /* enum rhn_admin_opcode */
	__u8 reserved;
	__le16 cmd_id; /* echoed in the completion */
	__le32 context; /* owning context (= doorbell page index) */
};
RHN_ASSERT_SIZE(struct rhn_admin_cmd_hdr, 8);

struct rhn_admin_query {
	__le64 out_addr; /* bus address the NIC writes the result to */
	__le32 out_len; /* bytes available there */
	__le32 handle; /* QUERY_QP: qpn */
};

struct rhn_admin_handle { /* DESTROY_*, UNREGISTER_AREA, INVALIDATE_TLB */
	__le32 handle; /* pdn/key/cqn/...; area ID; key or ~0 for all */
};

/*
 * CREATE_CONTEXT: the account the context is charged to. The driver gives
 * all contexts of one user the same account (0..RHN_MAX_ACCOUNTS-1; 0 is
 * the kernel's); every NIC table that users fill with values of their
 * choosing limits each account to its share, as it limits each context.
 */
#define RHN_MAX_ACCOUNTS 256u
struct rhn_admin_create_context {
	__le32 account; /* < RHN_MAX_ACCOUNTS */
	__le32 reserved; /* 0 */
};

struct rhn_admin_create_mr {
	__le32 pdn;
	__le32 access; /* enum rhn_access */
	__le64 iova; /* first byte */
	__le64 length;
	union {
		/* bus address of the top VP translation table */
		__le64 table_addr;
		/* RHN_CREATE_MR_F_TWIN: where iova is, bytes into the twin */
		__le64 twin_offset;
	};
	union {
		__le32 num_pages; /* translated pages */
		__le32 twin; /* RHN_CREATE_MR_F_TWIN: the context's twin handle */
	};
	__u8 page_shift; /* 12..30 */
	__u8 levels; /* 1..3; 0: iova is the bus address (kernel only) */
	__u8 key_variant; /* low 8 bits of the returned key */
	__u8 flags; /* enum rhn_create_mr_flags */
};

/*
 * A fast-registration MR (kernel context only): created with room for
 * num_pages page addresses at table_addr (one level; iova, length, access
 * and page_shift ignored) and no translation. Its key is refused until a
 * REG_MR WQE of a QP of its PD registers it (iova, length, page size,
 * rights, a new key variant) over the page list the kernel wrote; LOCAL_INV
 * or a peer's SEND_INV ends the registration.
 */
enum rhn_create_mr_flags {
	RHN_CREATE_MR_F_FAST_REG = 1u << 0,
	/*
	 * Remote pin-down (queues.md): memory the process has only mapped.
	 * The VP tables are complete but leaf entries start invalid, and the
	 * host fills them on demand. A remote access (by rkey or area) that
	 * reaches an invalid entry is held, not refused: the NIC asks the
	 * host to pin the rest of the message's range (RHN_EQE_PD_REQUEST)
	 * and resumes the request when RHN_ADMIN_PD_MAPPED answers. A local
	 * access (lkey) to an invalid entry fails as a protection error.
	 * User contexts only; levels 1..3, page_shift 12.
	 */
	RHN_CREATE_MR_F_ON_DEMAND = 1u << 1,
	/*
	 * Twin memory (ibverbs device memory, ibv_reg_dm_mr): the
	 * region's bytes are those of twin `twin` of the command's context,
	 * iova at `twin_offset` in it, all inside the twin; no translation
	 * (levels and page_shift 0). Its key works wherever a key does: SGEs,
	 * remote WRITE/READ/atomics by rkey, status words. The twin cannot
	 * be freed (BUSY) while such a region exists.
	 */
	RHN_CREATE_MR_F_TWIN = 1u << 2,
};

/*
 * A window opens part of a region to remote access under its own key.
 * Type 1: bound (and rebound) through any QP of its PD; type 2: bound
 * through a QP, reachable only through that QP's peer requests, unbound
 * by LOCAL_INV or a SEND_INV before it can be bound again.
 */
struct rhn_admin_create_mw {
	__le32 pdn;
	__u8 type; /* 1 or 2 */
	__u8 key_variant; /* low 8 bits of the returned key */
	__u8 reserved[2];
};

enum rhn_modify_mr_mask {
	RHN_MODIFY_MR_ACCESS = 1u << 0,
	RHN_MODIFY_MR_PD = 1u << 1,
};

struct rhn_admin_modify_mr {
	__le32 key; /* the region's lkey/rkey (one key names it) */
	__le32 mask; /* enum rhn_modify_mr_mask */
	__le32 access; /* enum rhn_access, with RHN_MODIFY_MR_ACCESS */
	__le32 pdn; /* with RHN_MODIFY_MR_PD: a PD of the same context */
};

struct rhn_admin_create_eq {
	__le64 ring_addr; /* bus address, contiguous */
	__le16 vector; /* MSI-X vector */
	__u8 log_depth;
	__u8 reserved[5];
};

/* rhn_admin_create_cq.flags */
enum rhn_create_cq_flags {
	/* The NIC may write runs into the CQ (RHN_CAP_CQE_RUNS): one CQE,
	 * RHN_CQE_X_RUN, for several successful completions of one queue of
	 * one QP (queues.md, "Runs"). BAD_PARAM without the capability.
	 */
	RHN_CREATE_CQ_F_RUNS = 1u << 0,
};

struct rhn_admin_create_cq {
	struct rhn_host_ref ring;
	struct rhn_host_ref record; /* struct rhn_cq_record */
	__le32 eqn;
	__u8 log_depth;
	__u8 flags; /* enum rhn_create_cq_flags; other bits: BAD_PARAM */
	__u8 reserved[2];
};

/*
 * The CQEs software has not consumed (the old record's consumer_index up to
 * the producer) are copied in order to the start of the new ring, and the
 * CQ's indices restart at 0 (the new record's consumer_index must be 0).
 * BAD_PARAM (detail 2) if they do not fit; software does not poll the CQ
 * while the command runs.
 */
struct rhn_admin_resize_cq {
	__le32 cqn;
	__u8 log_depth;
	__u8 reserved[3];
	struct rhn_host_ref ring;
	struct rhn_host_ref record; /* struct rhn_cq_record */
};

/*
 * An armed CQ raises its event once `count` completions that would have
 * raised it have been added, or `period_us` microseconds after the first
 * of them, whichever comes first. count <= 1 or period_us 0: at the first
 * (no moderation). An event already owed under the old setting is raised
 * at once when moderation is turned off or its count is reached, else
 * kept with its deadline. A CQ of another context: BAD_HANDLE (detail 3).
 */
struct rhn_admin_modify_cq {
	__le32 cqn;
	__le16 count;
	__le16 period_us;
};

enum rhn_create_srq_flags {
	/* A TM SRQ (hw_queues.h, "Tag matching on a TM SRQ"): the fields
	 * from cqn on are valid; QPs using it must be RC.
	 */
	RHN_CREATE_SRQ_F_TM = 1u << 0,
	/* An XRC SRQ (RHN_CAP_XRC): of XRC domain `xrcd`, completions on
	 * `cqn`; the command's result is its XRC SRQ number (index in bits
	 * 15:0, the handle other commands take; incarnation in 23:16)
	 */
	RHN_CREATE_SRQ_F_XRC = 1u << 1,
};

/* An XRC SRQ number: the SRQ's index and the incarnation of its slot. */
#define RHN_XRC_SRQN_INDEX_MASK 0xffffu
#define RHN_XRC_SRQN_INCARNATION_SHIFT 16
#define RHN_XRC_SRQN_MASK 0x00ffffffu

struct rhn_admin_create_srq {
	struct rhn_host_ref ring;
	struct rhn_host_ref record; /* struct rhn_queue_record */
	__le32 pdn;
	__le32 limit; /* SRQ limit event when fewer WQEs remain; 0 = off */
	__u8 log_depth;
	__u8 flags; /* enum rhn_create_srq_flags */
	__u8 ops_log_depth; /* TM: operation ring entries, log2 */
	__u8 reserved;
	__le32 xrcd; /* RHN_CREATE_SRQ_F_XRC: its XRC domain, not 0 */
	/* RHN_CREATE_SRQ_F_TM, RHN_CREATE_SRQ_F_XRC */
	__le32 cqn; /* where tag-list operations (XRC: receives) complete */
	__le32 max_tags; /* entries in the tag list, 1..tm_max_tags */
	struct rhn_host_ref ops_ring; /* struct rhn_tm_op_wqe */
	struct rhn_host_ref ops_record; /* struct rhn_queue_record */
};

struct rhn_admin_modify_srq {
	__le32 srqn;
	__le32 limit; /* re-arm the limit event */
};

struct rhn_admin_create_qp {
	__le32 pdn;
	__le32 send_cqn;
	__le32 recv_cqn;
	__le32 srqn; /* RHN_NO_SRQ: own receive queue */
	__u8 type; /* enum rhn_qp_type */
	__u8 sq_log_depth; /* SQ slots */
	__u8 rq_log_depth;
	__u8 flags; /* enum rhn_create_qp_flags */
	__le32 xrcd; /* RHN_QP_XRC_RECV: its XRC domain, not 0; else 0 */
	struct rhn_host_ref sq_ring;
	struct rhn_host_ref rq_ring;
	struct rhn_host_ref sq_record;
	struct rhn_host_ref rq_record;
};

struct rhn_admin_modify_qp {
	__le32 qpn;
	__le32 attr_mask; /* enum rhn_qp_attr_mask */
	__u8 state; /* enum rhn_qp_state */
	__u8 access; /* RHN_ACCESS_REMOTE_* the QP accepts as responder */
	__u8 retry_cnt; /* with timeout: how long an RC request may go unanswered */
	__u8 rnr_retry; /* 7 = infinite */
	__u8 min_rnr_timer; /* in units of 10 us, 0 = 10 us */
	__u8 max_rd_atomic;
	__le16 dest_node;
	__le32 dest_qpn;
	__le32 qkey;
	/*
	 * IB's local ACK timeout, 4.096 us << timeout (0 = infinite): a request
	 * the target's NIC dropped because no QP there may take it fails with
	 * RETRY_EXC after (retry_cnt + 1) timeouts, as it would on IB.
	 */
	__u8 timeout;
	__u8 reserved[3];
};

struct rhn_admin_register_area {
	__le32 area_id; /* group-wide area ID */
	__le32 key; /* memory region holding the area */
	__le64 iova; /* area base */
	__le64 length;
};

/*
 * Every area key names a group (RHN_AREA_KEY); a context may register
 * areas in, and address areas of, group 0 and the groups set here. The
 * list replaces the previous one; the kernel issues it for a process
 * (hdr.context) once it has checked the process's right to each group.
 */
struct rhn_admin_set_groups {
	__le32 count; /* 0..RHN_MAX_GROUPS_PER_CONTEXT */
	__le16 group[8]; /* nonzero, distinct */
	__le32 reserved;
};

/*
 * Simultaneous multicast (RHN_OP_MCAST_SWITCH): the members of switch group
 * `group`, as the administrator set the group's pattern in the switch. The
 * kernel gives every member's NIC the same list: a sender waits for the
 * acknowledgements of the members other than itself, a member finds its own
 * endpoint (the one whose node is its own) and accepts streams only from
 * the nodes listed. Only contexts in `endpoint_group` (RHN_ADMIN_SET_GROUPS;
 * 0: every context) may send to the group. At most one entry per node.
 * BUSY while multicasts of this NIC to the group are outstanding;
 * NO_RESOURCES when the NIC's group table is full.
 */
#define RHN_MCAST_SWITCH_MAX_MEMBERS 128
struct rhn_admin_mcast_group {
	__le16 group; /* RHN_NODE_MCAST_FIRST .. RHN_NODE_BROADCAST - 1 */
	__le16 endpoint_group;
	__le16 count; /* 0..RHN_MCAST_SWITCH_MAX_MEMBERS; 0 removes */
	__le16 reserved;
	__le64 list_addr; /* bus address of count struct rhn_mcast_dest */
};

/*
 * ATTACH_MCAST / DETACH_MCAST. The attach table is bounded
 * (rhn_device_attr.max_mcast_attach entries, one per (MGID, QP)), and one
 * context holds at most mcast_attach_per_context of them. ATTACH:
 * BAD_HANDLE no such QP in the context; BAD_PARAM not a UD QP or not a
 * multicast GID (rhn_gid_is_mcast); NO_RESOURCES the table or the
 * context's share is full; attaching twice is OK (one entry). DETACH:
 * BAD_HANDLE when the QP is not attached to the MGID.
 */
struct rhn_admin_mcast_attach {
	__le32 qpn;
	__le32 reserved;
	__u8 mgid[16]; /* network byte order, as in the GRH */
};

/* Twin memory is handed out in RHN_TWIN_PAGE units. */
#define RHN_TWIN_PAGE 4096
struct rhn_admin_alloc_twin {
	__le64 length; /* bytes, rounded up to RHN_TWIN_PAGE */
};

/*
 * TWIN_WRITE / TWIN_READ: `length` bytes between host memory at bus
 * address `addr` and twin `handle` of hdr.context from `offset` on.
 * BAD_HANDLE: not a twin of the context; BAD_PARAM: a length of 0 or
 * beyond RHN_TWIN_COPY_MAX, a range outside the twin, reserved bits;
 * DMA_ERROR: the host memory could not be read or written (a TWIN_WRITE
 * then may have changed part of the range).
 */
#define RHN_TWIN_COPY_MAX (1u << 20)
struct rhn_admin_twin_copy {
	__le32 handle;
	__le32 length; /* 1..RHN_TWIN_COPY_MAX */
	__le64 offset; /* bytes into the twin */
	__le64 addr; /* host bus address */
	__le64 reserved; /* 0 */
};

/*
 * The host's answer to an RHN_EQE_PD_REQUEST with RHN_EQE_F_PD_PIN: the
 * leaf VP entries of pages [first_page, first_page + num_pages) of the
 * on-demand MR `key` (page numbers as in the EQE) are valid now, or the
 * host could not pin them (status = RHN_SYN_NOT_PINNED: the process's
 * limit, memory not mapped or not writable, the process gone). The NIC
 * resumes or fails the requests it holds for that range. BAD_HANDLE: no
 * such on-demand MR of hdr.context (it was destroyed meanwhile).
 */
struct rhn_admin_pd_mapped {
	__le32 key;
	__le32 first_page;
	__le32 num_pages;
	__u8 status; /* enum rhn_syndrome: RHN_SYN_NONE or NOT_PINNED */
	__u8 reserved[3];
};
RHN_ASSERT_SIZE(struct rhn_admin_pd_mapped, 16);

struct rhn_admin_set_link {
	__le32 up;
};

/*
 * A GID table entry's type says which network header the NIC builds for
 * UD sends from it (the 40 bytes a UD receiver finds ahead of the data):
 * RoCE v1, an InfiniBand GRH; RoCE v2, an IPv4 header in the last 20 bytes
 * (IPv4-mapped GIDs, checksum valid) or an IPv6 header (next header UDP).
 */
enum rhn_gid_type {
	RHN_GID_ROCE_V1 = 0,
	RHN_GID_ROCE_V2 = 1,
};

/* Bytes [offset, offset + length) of the image, from host memory. */
#define RHN_FW_CHUNK_MAX (64u << 10)
struct rhn_admin_fw_download {
	__le64 addr; /* bus address of the chunk */
	__le32 offset; /* into the image */
	__le32 length; /* 1..RHN_FW_CHUNK_MAX */
};

enum rhn_fw_commit_flags {
	RHN_FW_COMMIT_STORE = 1u << 0, /* into the card's flash */
	RHN_FW_COMMIT_ACTIVATE = 1u << 1, /* booted at the next CONTROL.RESET */
};

/* The first `length` bytes downloaded are the image. */
struct rhn_admin_fw_commit {
	__le32 length;
	__le32 flags; /* enum rhn_fw_commit_flags, at least one */
};

/* A trigger counter: its first value, and the key a peer's increment
 * must carry (chosen by the driver; kept for remote increments, see
 * triggered.md).
 */
struct rhn_admin_create_trigger {
	__le64 value;
	__le32 key;
	__le32 reserved; /* 0 */
};

struct rhn_admin_set_gid {
	__le32 index; /* < RHN_GID_TABLE_LEN */
	__u8 type; /* enum rhn_gid_type */
	__u8 reserved[3];
	__u8 gid[16]; /* all zero: the entry is unused */
};

struct rhn_admin_cmd {
	struct rhn_admin_cmd_hdr hdr;
	union {
		struct rhn_admin_query query;
		struct rhn_admin_handle handle;
		struct rhn_admin_create_context create_context;
		struct rhn_admin_create_mr create_mr;
		struct rhn_admin_modify_mr modify_mr;
		struct rhn_admin_create_eq create_eq;
		struct rhn_admin_create_cq create_cq;
		struct rhn_admin_resize_cq resize_cq;
		struct rhn_admin_modify_cq modify_cq;
		struct rhn_admin_create_mw create_mw;
		struct rhn_admin_create_srq create_srq;
		struct rhn_admin_modify_srq modify_srq;
		struct rhn_admin_create_qp create_qp;
		struct rhn_admin_modify_qp modify_qp;
		struct rhn_admin_register_area register_area;
		struct rhn_admin_set_groups set_groups;
		struct rhn_admin_alloc_twin alloc_twin;
		struct rhn_admin_twin_copy twin_copy;
		struct rhn_admin_set_link set_link;
		struct rhn_admin_pd_mapped pd_mapped;
		struct rhn_admin_set_gid set_gid;
		struct rhn_admin_mcast_group mcast_group;
		struct rhn_admin_mcast_attach mcast_attach;
		struct rhn_admin_fw_download fw_download;
		struct rhn_admin_fw_commit fw_commit;
		struct rhn_admin_create_trigger create_trigger;
		__u8 raw[RHN_ADMIN_CMD_SIZE - 8];
	} u;
};
RHN_ASSERT_SIZE(struct rhn_admin_cmd, RHN_ADMIN_CMD_SIZE);
RHN_ASSERT_SIZE(struct rhn_admin_fw_download, 16);
RHN_ASSERT_SIZE(struct rhn_admin_fw_commit, 8);
RHN_ASSERT_SIZE(struct rhn_admin_create_trigger, 16);
RHN_ASSERT_OFFSET(struct rhn_admin_create_trigger, key, 8);
RHN_ASSERT_SIZE(struct rhn_admin_create_context, 8);
RHN_ASSERT_OFFSET(struct rhn_admin_create_context, reserved, 4);
RHN_ASSERT_SIZE(struct rhn_admin_create_mr, 40);
RHN_ASSERT_OFFSET(struct rhn_admin_create_mr, twin_offset, 24);
RHN_ASSERT_OFFSET(struct rhn_admin_create_mr, twin, 32);
RHN_ASSERT_SIZE(struct rhn_admin_twin_copy, 32);
RHN_ASSERT_OFFSET(struct rhn_admin_twin_copy, addr, 16);
RHN_ASSERT_SIZE(struct rhn_admin_modify_mr, 16);
RHN_ASSERT_SIZE(struct rhn_admin_create_cq, 40);
RHN_ASSERT_OFFSET(struct rhn_admin_create_cq, flags, 37);
RHN_ASSERT_SIZE(struct rhn_admin_resize_cq, 40);
RHN_ASSERT_SIZE(struct rhn_admin_modify_cq, 8);
RHN_ASSERT_OFFSET(struct rhn_admin_modify_cq, period_us, 6);
RHN_ASSERT_SIZE(struct rhn_admin_create_mw, 8);
RHN_ASSERT_OFFSET(struct rhn_admin_resize_cq, ring, 8);
RHN_ASSERT_SIZE(struct rhn_admin_create_srq, 88);
RHN_ASSERT_OFFSET(struct rhn_admin_create_srq, cqn, 48);
RHN_ASSERT_OFFSET(struct rhn_admin_create_srq, xrcd, 44);
RHN_ASSERT_OFFSET(struct rhn_admin_create_qp, xrcd, 20);
RHN_ASSERT_OFFSET(struct rhn_admin_create_srq, ops_ring, 56);
RHN_ASSERT_SIZE(struct rhn_admin_create_qp, 88);
RHN_ASSERT_SIZE(struct rhn_admin_modify_qp, 28);
RHN_ASSERT_OFFSET(struct rhn_admin_modify_qp, timeout, 24);
RHN_ASSERT_SIZE(struct rhn_admin_set_gid, 24);
RHN_ASSERT_SIZE(struct rhn_admin_set_groups, 24);
RHN_ASSERT_SIZE(struct rhn_admin_mcast_group, 16);
RHN_ASSERT_OFFSET(struct rhn_admin_mcast_group, list_addr, 8);
RHN_ASSERT_SIZE(struct rhn_admin_mcast_attach, 24);
RHN_ASSERT_OFFSET(struct rhn_admin_create_qp, sq_ring, 24);

struct rhn_admin_cpl {
	__le32 result; /* created handle or key */
	__le16 cmd_id;
	__u8 status; /* enum rhn_admin_status */
	__u8 reserved0;
	__le32 detail; /* diagnostic: which parameter was refused */
	__u8 reserved1[3];
	__u8 owner; /* bit 0: phase, written last */
};
RHN_ASSERT_SIZE(struct rhn_admin_cpl, RHN_ADMIN_CPL_SIZE);

struct rhn_device_attr {
	__le32 max_contexts;
	__le32 max_pds;
	__le32 max_mrs;
	__le32 max_cqs;
	__le32 max_qps;
	__le32 max_srqs;
	__le32 max_eqs;
	__le32 max_areas;
	__le32 max_cq_log_depth;
	__le32 max_wq_log_depth; /* SQ slots, RQ and SRQ WQEs */
	__le32 max_send_sges;
	__le32 max_recv_sges;
	__le32 max_inline;
	__le32 max_rd_atomic; /* outstanding READ/atomics per QP */
	__le32 max_msg_size;
	__le32 mtu;
	__le32 tlb_entries;
	__le32 page_size_cap; /* bit n set: 2^n page size supported */
	__le64 max_mr_size;
	__le32 max_peers; /* nodes with reliable channel state */
	__le32 node_id;
	__le64 twin_bytes; /* on-board twin memory */
	__le32 max_twins; /* twin allocations, all contexts together */
	/* TM SRQs: entries one SRQ's tag list may hold (at most 65535), and
	 * the largest operation ring (log2)
	 */
	__le32 tm_max_tags;
	__le32 tm_max_ops_log;
	/* verbs UD multicast: (MGID, QP) entries of the attach table, and
	 * the most one context may hold
	 */
	__le32 max_mcast_attach;
	__le32 mcast_attach_per_context;
	/* triggered operations: trigger counters, and parked WQEs, all
	 * contexts together
	 */
	__le32 max_trigger_counters;
	__le32 max_trigger_parked;
	/* completion event moderation (RHN_ADMIN_MODIFY_CQ): the largest
	 * count and period; 0 when the NIC does not moderate
	 */
	__le16 max_cq_mod_count;
	__le16 max_cq_mod_period_us;
};
RHN_ASSERT_SIZE(struct rhn_device_attr, 128);

struct rhn_qp_attr {
	__le32 qpn;
	__u8 state;
	__u8 type;
	__le16 dest_node;
	__le32 dest_qpn;
	__le32 sq_consumer; /* next SQ slot the NIC will complete */
	__le32 rq_consumer;
	__le32 reserved[3];
};
RHN_ASSERT_SIZE(struct rhn_qp_attr, 32);

/* VP translation table entry: bus address of a page, bit 0 = valid. */
#define RHN_VPTE_VALID 1ull
#define RHN_VPTE_ADDR_MASK (~0xfffull)
#define RHN_VPT_ENTRIES_PER_PAGE 512 /* 4 KiB table pages */
#define RHN_VPT_LEVEL_SHIFT 9

#endif /* RHINET_HW_ADMIN_H */
