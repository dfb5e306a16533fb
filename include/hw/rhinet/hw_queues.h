/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: work queue entries, completion queue entries,
 * event queue entries, doorbell records and status words. Described in
 * Documentation/hardware/queues.md.
 *
 * All rings have a power-of-two number of entries. Producer and consumer
 * indices are free-running 32-bit counters; the slot is index & (depth - 1).
 */
#ifndef RHINET_HW_QUEUES_H
#define RHINET_HW_QUEUES_H

#include "hw_common.h"
#include "hw_regs.h"

/*
 * Reference to host memory used by the NIC for queues, records and status
 * words. lkey == RHN_LKEY_PHYSICAL means addr is a bus address; only objects
 * of the kernel context (context 0) may use it. Otherwise addr is an I/O
 * virtual address inside the memory region lkey of the same context.
 */
#define RHN_LKEY_PHYSICAL 0u

/*
 * Keys: memory region table index << 8 | 8-bit variant chosen by the driver.
 * Index 0 is never issued, so no key equals RHN_LKEY_PHYSICAL.
 */
#define RHN_KEY_INDEX_SHIFT 8
#define RHN_KEY_VARIANT_MASK 0xffu

/* ---- Send queue ------------------------------------------------------- */

/* The SQ is an array of 64-byte slots; a WQE takes 1 + ext_units slots. */
#define RHN_SQ_SLOT_SIZE 64
#define RHN_WQE_MAX_EXT_UNITS 7
#define RHN_WQE_MAX_SLOTS (1 + RHN_WQE_MAX_EXT_UNITS)
#define RHN_WQE_BASE_SGES 1
#define RHN_SGES_PER_EXT_UNIT 4
#define RHN_WQE_MAX_SGES \
	(RHN_WQE_BASE_SGES + RHN_WQE_MAX_EXT_UNITS * RHN_SGES_PER_EXT_UNIT)
#define RHN_WQE_BASE_INLINE 16
#define RHN_WQE_MAX_INLINE \
	(RHN_WQE_BASE_INLINE + RHN_WQE_MAX_EXT_UNITS * RHN_SQ_SLOT_SIZE)

enum rhn_wqe_opcode {
	RHN_OP_NOP = 0x00,
	RHN_OP_SEND = 0x01,
	RHN_OP_SEND_IMM = 0x02,
	RHN_OP_WRITE = 0x03, /* PUSH */
	RHN_OP_WRITE_IMM = 0x04,
	RHN_OP_READ = 0x05, /* PULL */
	RHN_OP_FETCH_ADD = 0x06,
	RHN_OP_CMP_SWAP = 0x07,
	/* Memory windows (no packet: the NIC executes them in SQ order). */
	RHN_OP_BIND_MW = 0x08, /* u.bind, remote_addr, imm_data = rights */
	/* remote_key: the type 2 window to unbind or the fast-registration MR
	 * to invalidate
	 */
	RHN_OP_LOCAL_INV = 0x09,
	/* SEND whose responder invalidates the key imm_data names (a type 2
	 * window bound through the receiving QP, or a fast-registration MR)
	 */
	RHN_OP_SEND_INV = 0x0a,
	/* Registers a fast-registration MR (u.reg, remote_key = its new key,
	 * remote_addr = iova, imm_data = rights); no data.
	 */
	RHN_OP_REG_MR = 0x0b,
	/* The extended atomic family (RHN_CAP_ATOMIC_EXT): the operation and
	 * its width in imm_data (enum rhn_atomic_op | RHN_AOP_F_*), operands
	 * in u.atomic as for FETCH_ADD/CMP_SWAP, one SGE of the word's width
	 * for the original value (none with RHN_AOP_F_NO_FETCH).
	 */
	RHN_OP_ATOMIC_EXT = 0x0c,
	/* Arms a one-shot watch (RHN_CAP_WATCH), endpoints only, executed by
	 * the NIC in SQ order with nothing sent: remote_key = the key
	 * (RHN_AREA_KEY) of one of this process's own areas, without
	 * RHN_WQE_F_AREA; no SGE, no inline data; a status word as for other
	 * opcodes. It completes once armed. The next PUSH (any mode) or
	 * atomic that changes a word, by area, landing in that area then
	 * writes one RHN_CQE_OP_WATCH CQE (without RHN_CQE_F_SQ) on this
	 * endpoint's receive CQ, raising its completion event when armed, and
	 * the watch is gone. One watch per area: arming again replaces it.
	 * An area that is not the process's own (or none) fails the WQE
	 * with GENERAL_ERR, RHN_SYN_NO_WATCH_AREA (the endpoint goes on).
	 * Described in queues.md "Watches".
	 */
	RHN_OP_WATCH = 0x0d,
	/* Reserved for the capabilities built on top (PRODUCT.md). */
	RHN_OP_RAW_ETH = 0x10, /* Ethernet frame for the net_device */
	/* Key-matched send (tag matching), endpoints only: dst_node/dst_qpn,
	 * remote_addr = the 64-bit tag, at most one SGE (or inline data).
	 * Partial modes (basic, diff, bitmap, stride: the operation table)
	 * with one SGE and a struct rhn_wqe_xfer, choosing which bytes of
	 * the message travel: STRIDE sends count blocks of block bytes,
	 * local_stride apart in the SGE, as a message of block * count bytes
	 * (remote_stride must equal block); BITMAP sends only the SGE's
	 * blocks marked in the bitmap (at most RHN_TAG_BITMAP_BLOCKS blocks)
	 * and DIFF only its bytes that differ from the twin (the twin then
	 * holds them), both as a message of the SGE's length whose other
	 * bytes leave the receiver's memory as it was. A partial isend never
	 * travels eagerly.
	 */
	RHN_OP_ISEND = 0x20,
	RHN_OP_IRECV =
		0x21, /* reserved: irecvs are RQ WQEs (rhn_tag_recv_wqe) */
	/* Reports the oldest queued message matching u.tag (source in
	 * dst_node/dst_qpn, tag in remote_addr) without receiving it.
	 */
	RHN_OP_IPROBE = 0x22,
	/* Takes the posted tag receive with RQ index remote_key (low 16
	 * bits) out of the NIC's list: it completes with WR_FLUSH_ERR.
	 */
	RHN_OP_IRECV_CANCEL = 0x23,
	/* Simultaneous multicast (one send, the switch copies), endpoints
	 * only: a PUSH by area (RHN_WQE_F_AREA; remote_key = the area key,
	 * remote_addr = the offset) of the WQE's data, in any PUSH mode (a
	 * partial mode's descriptor is the last slot), to the endpoints of a
	 * switch group: dst_node = the group's node ID (RHN_NODE_MCAST_FIRST
	 * .. RHN_NODE_BROADCAST - 1), dst_qpn = 0. The kernel registered the
	 * group and its members with this NIC (RHN_ADMIN_SET_MCAST_GROUP) and
	 * the administrator its pattern with the switch; the NIC sends each
	 * packet once, to the group, and the switch copies it to the members.
	 * Every member acknowledges; the WQE completes (one CQE) when all
	 * have: its status is the first failure's (a member's refusal, or
	 * RETRY_EXC_ERR + RHN_SYN_MEMBER_LOST for a member that stopped
	 * answering), the other members still get the data. With
	 * RHN_WQE_F_SIGNAL_REMOTE every member's endpoint gets a signal CQE.
	 * Refused at post: a group this NIC does not know (LOC_QP_OP_ERR,
	 * RHN_SYN_NO_MCAST_GROUP), a context outside the group's endpoint
	 * group (LOC_PROT_ERR, RHN_SYN_BAD_GROUP). Described in queues.md
	 * "Simultaneous multicast".
	 */
	RHN_OP_MCAST_SWITCH = 0x28,
	/* Sequential multicast (the NIC sends to each in turn), endpoints
	 * only: a PUSH by area (RHN_WQE_F_AREA; remote_key = the area key,
	 * remote_addr = the offset: the same at every member) of the WQE's
	 * data, in any PUSH mode, to every endpoint of a destination list.
	 * Described in queues.md "Sequential multicast". The WQE's last slot
	 * is a struct rhn_wqe_mcast naming the list (a partial mode's
	 * descriptor is the slot before it); dst_node and dst_qpn are 0. The
	 * NIC sends to each destination in list order over that node's
	 * reliable channel and completes the WQE (one CQE) when all have
	 * acknowledged: its status is the first failure's, and the other
	 * members still get the data.
	 */
	RHN_OP_MCAST_LIST = 0x29,
	/* Shared regions (a copy at each member), endpoints only, by area
	 * (RHN_WQE_F_AREA; remote_key = the area key, remote_addr = the
	 * region's offset in the area). A region is named by its home
	 * endpoint (dst_node/dst_qpn) and area key; each endpoint is in at
	 * most one region per area key.
	 * SUBSCRIBE: one SGE = this endpoint's own copy (exactly the area's
	 * bytes [remote_addr, remote_addr + length), 1..RHN_SHARE_MAX_BYTES);
	 * basic or TWIN (struct rhn_wqe_xfer in the last slot: the data also
	 * goes into the twin). Completes when the home's data is in place.
	 * UNSUBSCRIBE: no data; completes when the home has taken it.
	 * SHARE_UPDATE: a PUSH by area of the WQE's data (one SGE or inline,
	 * any PUSH mode) inside the region to every other member of this
	 * NIC's directory of it; dst_node and dst_qpn are 0. Completes when
	 * every member has acknowledged (status: the first failure's).
	 * Described in queues.md "Shared regions".
	 */
	RHN_OP_SUBSCRIBE = 0x30,
	RHN_OP_UNSUBSCRIBE = 0x31,
	RHN_OP_SHARE_UPDATE = 0x32,
	/* Locks and barriers kept by a manager endpoint; endpoints only, no
	 * data, one SQ slot: dst_node/dst_qpn = the manager endpoint,
	 * remote_addr = the lock's or barrier's 64-bit ID (a name space per
	 * manager endpoint).
	 * LOCK completes when this endpoint holds the lock; locks are granted
	 * in the order their LOCKs reached the manager (a queue the manager
	 * keeps, each waiter linked to the one before it, whose NIC passes the
	 * lock straight to it on UNLOCK). UNLOCK by the holding endpoint
	 * completes once the lock is passed on or free. BARRIER: imm_data =
	 * the number of participants (1..RHN_BARRIER_MAX_MEMBERS); completes
	 * when that many BARRIERs with this ID have reached the manager (then
	 * the ID is ready for the next round). Described in queues.md "Locks
	 * and barriers".
	 */
	RHN_OP_LOCK = 0x38,
	RHN_OP_UNLOCK = 0x39,
	RHN_OP_BARRIER = 0x3a,
	/* Remote pin-down (the target pins on demand), endpoints only,
	 * addressed like a PULL by area (RHN_WQE_F_AREA) or rkey:
	 * dst_node/dst_qpn, remote_key, remote_addr, and imm_data = the
	 * length in bytes (1..2^32-1); no SGE, no inline data; a status word
	 * as for other opcodes. PD_REQUEST completes when the target's pages
	 * are pinned and hold one more reference (the target host pins them
	 * first if need be); PD_RELEASE when the target's NIC has passed the
	 * release on to its host, which unpins pages nobody holds any longer.
	 */
	RHN_OP_PD_REQUEST = 0x40,
	RHN_OP_PD_RELEASE = 0x41,
	/* A collective executed by the NICs, endpoints only:
	 * the WQE's last slot is a struct rhn_wqe_coll, remote_key the
	 * communicator (RHN_AREA_KEY(group, id): a group the context is in),
	 * no SGE, no inline data; a status word as for other opcodes. The
	 * NIC reads each local rank's operand and writes each rank's result
	 * by DMA (no staging copy); it completes when this rank's part is
	 * done (all results in place). Described in queues.md "Collectives".
	 */
	RHN_OP_COLLECTIVE = 0x48,
	/* Adds to a trigger counter of the peer's NIC (triggered.md, "Remote
	 * increments"), RC QPs and endpoints only: the operand area holds
	 * u.trigger (the addend, the counter's handle and its key); at most
	 * one SGE, of 8 bytes, which receives the counter's value before the
	 * add (none: the value is not wanted); no inline data, status word
	 * or GRH. The peer's NIC adds only to a live counter of the context
	 * the request reaches (the connected QP's, the addressed endpoint's)
	 * whose key matches; otherwise the WQE completes REM_ACCESS_ERR,
	 * RHN_SYN_BAD_REMOTE_TRIGGER.
	 */
	RHN_OP_TRIGGER_ADD = 0x50,
	RHN_OP_MAX = 0x7f
};

enum rhn_wqe_flags {
	RHN_WQE_F_SIGNALED = 1u << 0, /* CQE on success too */
	RHN_WQE_F_SOLICITED = 1u << 1,
	RHN_WQE_F_FENCE = 1u << 2, /* wait for earlier READ/atomics */
	RHN_WQE_F_INLINE = 1u << 3, /* payload in the WQE, not SGEs */
	RHN_WQE_F_STATUS_WORD = 1u << 4, /* write a status word at the end */
	RHN_WQE_F_AREA = 1u << 5, /* remote_key is an area ID */
	/* WRITE by area: the target NIC posts a RHN_CQE_OP_SIGNAL CQE with
	 * imm_data on the target QP's receive CQ (put-with-signal)
	 */
	RHN_WQE_F_SIGNAL_REMOTE = 1u << 6,
	RHN_WQE_F_GRH = 1u << 7, /* UD: the last slot is a struct rhn_wqe_grh */
};

/*
 * Triggered operations (Documentation/hardware/triggered.md): a second
 * flags word, rhn_send_wqe.xflags. With either flag set the WQE's last
 * slot (after every other, a GRH or a family's slot included) is a struct
 * rhn_wqe_trigger, counted in ext_units. The NIC takes that slot off when
 * it fetches the WQE; what is left is an ordinary WQE of its opcode.
 */
enum rhn_wqe_xflags {
	/* Parked in the NIC until trigger counter `counter` holds at least
	 * `threshold`, then run as if just fetched (at once if it does
	 * already); the QP's later WQEs do not wait for it.
	 */
	RHN_WQE_X_TRIGGERED = 1u << 0,
	/* When the WQE completes successfully (where its CQE is or would be
	 * written, signalled or not), counter `chain` goes up by one.
	 */
	RHN_WQE_X_CHAIN = 1u << 1,
};
#define RHN_WQE_X_KNOWN (RHN_WQE_X_TRIGGERED | RHN_WQE_X_CHAIN)

/*
 * Trigger counter handles: table index | generation << 16, given by
 * RHN_ADMIN_CREATE_TRIGGER. Generation 0 is never given, so 0 is no
 * counter's handle.
 */
#define RHN_TRIGGER_INDEX_MASK 0xffffu
#define RHN_TRIGGER_GEN_SHIFT 16

/* The TRIGGER doorbell (RHN_DB_TRIGGER, one 8-byte store): adds `addend`
 * to the counter `handle` names, if it is one of the page's context.
 */
#define RHN_DB_TRIGGER_ADDEND_SHIFT 32
static inline __u64 rhn_db_trigger_value(__u32 handle, __u32 addend)
{
	return (__u64)handle | (__u64)addend << RHN_DB_TRIGGER_ADDEND_SHIFT;
}

/*
 * A store that falls wholly inside a doorbell page's inline WQE window only
 * stages bytes for the next SQ kick with RHN_DB_SQ_INLINE: the NIC has
 * nothing to do until that kick comes, so a device need not wake its
 * engine for the store.
 */
static inline int rhn_db_in_inline_window(__u32 offset, __u32 size)
{
	return offset >= RHN_DB_INLINE_WQE &&
	       offset + size <= RHN_DB_INLINE_WQE + RHN_DB_INLINE_WQE_SIZE;
}

/*
 * The doorbell block's word for a trigger counter (triggered.md, "Pending
 * sums"): the counter's generation in bits 63:48 (0: no live counter)
 * and the sum of the adds the engine has not taken yet in bits 47:0.
 * An add that would carry the sum past 48 bits is not summed: it goes
 * through the kick FIFO as one add.
 */
#define RHN_TRIGGER_SUM_GEN_SHIFT 48
#define RHN_TRIGGER_SUM_MASK ((1ull << RHN_TRIGGER_SUM_GEN_SHIFT) - 1)
RHN_STATIC_ASSERT(RHN_TRIGGER_SUM_GEN_SHIFT + 16 == 64,
		  "the pending-sum word holds a 16-bit generation");
RHN_STATIC_ASSERT(RHN_TRIGGER_GEN_SHIFT + 16 == 32,
		  "a handle's generation is 16 bits, as the word's");

/* The last slot of a WQE with RHN_WQE_X_* flags. */
struct rhn_wqe_trigger {
	__le32 counter; /* RHN_WQE_X_TRIGGERED: the counter waited on */
	__le32 chain; /* RHN_WQE_X_CHAIN: the counter its completion adds to */
	__le64 threshold; /* RHN_WQE_X_TRIGGERED: runs once value >= this */
	__u8 reserved[48]; /* 0 */
};
RHN_ASSERT_SIZE(struct rhn_wqe_trigger, RHN_SQ_SLOT_SIZE);
RHN_ASSERT_OFFSET(struct rhn_wqe_trigger, chain, 4);
RHN_ASSERT_OFFSET(struct rhn_wqe_trigger, threshold, 8);

/*
 * Partial-transfer mode: which bytes travel and where they land. Which
 * opcode takes which mode is its row's in hw_ops.h.
 */
enum rhn_xfer_mode {
	RHN_XFER_BASIC = 0,
	RHN_XFER_TWIN = 1, /* READ: the NIC keeps a copy in twin memory */
	RHN_XFER_DIFF = 2, /* WRITE: only bytes that differ from the twin */
	RHN_XFER_BITMAP = 3, /* WRITE, READ: only blocks marked in a bitmap */
	RHN_XFER_STRIDE = 4, /* WRITE, READ: blocks at strides on both sides */
};

/*
 * Area keys (RHN_WQE_F_AREA): remote_key names the target process's area
 * as (group, area ID). The NIC lets a context use only groups it is a
 * member of (RHN_ADMIN_SET_GROUPS); group 0 is the open group every
 * context belongs to. RHN_SYN_BAD_GROUP otherwise.
 */
#define RHN_AREA_KEY(group, id) (((__u32)(group) << 16) | ((id)&0xffffu))
#define RHN_AREA_KEY_GROUP(key) ((__u16)((key) >> 16))
#define RHN_AREA_KEY_ID(key) ((__u16)((key)&0xffffu))
#define RHN_MAX_GROUPS_PER_CONTEXT 8

struct rhn_sge {
	__le64 addr;
	__le32 length;
	__le32 lkey;
};
RHN_ASSERT_SIZE(struct rhn_sge, 16);

/*
 * RHN_OP_ATOMIC_EXT's operation, in the WQE's imm_data (and the wire
 * request's). The target word is 8 bytes, or 4 with RHN_AOP_F_32, and
 * must be aligned to its width (RHN_SYN_ALIGNMENT otherwise). Operand
 * u.atomic.compare_add is the addend, the new value (SWAP), the mask
 * (AND/OR/XOR) or the value compared (CMP_SWAP, whose new value is
 * u.atomic.swap); a 32-bit operation uses their low 32 bits. The original
 * value comes back into the one SGE, which is exactly the word's width;
 * with RHN_AOP_F_NO_FETCH nothing comes back and the WQE has no SGE (a
 * SET is a SWAP with RHN_AOP_F_NO_FETCH; a FETCH cannot take it).
 */
enum rhn_atomic_op {
	RHN_AOP_ADD = 0,
	RHN_AOP_CMP_SWAP = 1,
	RHN_AOP_SWAP = 2,
	RHN_AOP_FETCH = 3, /* atomic read: the word is left as it is */
	RHN_AOP_AND = 4,
	RHN_AOP_OR = 5,
	RHN_AOP_XOR = 6,
	RHN_AOP_COUNT
};
#define RHN_AOP_OP_MASK 0xfu
#define RHN_AOP_F_32 (1u << 8) /* a 4-byte word */
#define RHN_AOP_F_NO_FETCH (1u << 9) /* the original value is not wanted */
#define RHN_AOP_KNOWN_BITS (RHN_AOP_OP_MASK | RHN_AOP_F_32 | RHN_AOP_F_NO_FETCH)

/* Is `aop` (RHN_OP_ATOMIC_EXT's imm_data) an operation a NIC carries out? */
static inline int rhn_aop_valid(__u32 aop)
{
	return !(aop & ~RHN_AOP_KNOWN_BITS) &&
	       (aop & RHN_AOP_OP_MASK) < RHN_AOP_COUNT &&
	       aop != (RHN_AOP_FETCH | RHN_AOP_F_NO_FETCH) &&
	       aop != (RHN_AOP_FETCH | RHN_AOP_F_32 | RHN_AOP_F_NO_FETCH);
}

/* The width in bytes of the word an atomic WQE works on. */
static inline unsigned int rhn_atomic_width(unsigned int opcode, __u32 imm)
{
	return opcode == RHN_OP_ATOMIC_EXT && (imm & RHN_AOP_F_32) ? 4 : 8;
}

/* The bytes of original value an atomic WQE's SGE takes (0: none). */
static inline unsigned int rhn_atomic_result_len(unsigned int opcode, __u32 imm)
{
	if (opcode == RHN_OP_ATOMIC_EXT && (imm & RHN_AOP_F_NO_FETCH))
		return 0;
	return rhn_atomic_width(opcode, imm);
}

/*
 * Base slot of a send WQE. The operand area at offset 32 is interpreted by
 * opcode: status word reference (any opcode with RHN_WQE_F_STATUS_WORD),
 * or atomic operands (atomics report through the CQE only). The last 16
 * bytes hold the first SGE or the first inline bytes; extension slots hold
 * four more SGEs each, or more inline bytes.
 */
struct rhn_send_wqe {
	__u8 opcode; /* enum rhn_wqe_opcode */
	__u8 flags; /* enum rhn_wqe_flags */
	__u8 ext_units; /* 64-byte slots following this one, 0..7 */
	__u8 xfer_mode; /* enum rhn_xfer_mode */
	__le16 wqe_index; /* low 16 bits of this WQE's first slot index */
	__le16 dst_node; /* UD and endpoint: destination node */
	/* UD and endpoint: destination QPN/endpoint; XRC_SEND: the
	 * target's XRC SRQ number
	 */
	__le32 dst_qpn;
	__le32 imm_data; /* _IMM opcodes */
	__le32 remote_key; /* rkey, or area ID with RHN_WQE_F_AREA */
	__le16 num_sge; /* SGEs, or inline byte count with F_INLINE */
	__le16 xflags; /* enum rhn_wqe_xflags; 0 without a trigger slot */
	__le64 remote_addr; /* remote I/O VA, or offset in the area */
	union {
		struct {
			__le64 addr; /* where the status word goes */
			__le32 lkey;
			__le32 qkey; /* UD: queue key */
		} status;
		struct {
			__le64 compare_add; /* CMP_SWAP: compare; FETCH_ADD: add */
			__le64 swap;
		} atomic;
		/* RHN_OP_TRIGGER_ADD: read by the NIC as the atomics' two
		 * operands (addend, then handle | key << 32).
		 */
		struct {
			__le64 addend;
			__le32 handle; /* the peer's counter */
			__le32 key; /* its key */
		} trigger;
		struct {
			/* The window (by the index of any of its keys);
			 * remote_key: its key once bound (same index, the
			 * variant may change).
			 */
			__le32 mw_key;
			__le32 mr_lkey; /* the region it opens onto */
			__le64 length; /* from remote_addr; 0 unbinds (type 1) */
		} bind;
		struct {
			__le64 mask; /* IPROBE: tag bits that must match */
			__le32 flags; /* IPROBE: enum rhn_tag_recv_flags */
			__le32 reserved;
		} tag;
		struct {
			__le64 length; /* bytes from remote_addr */
			__le32 num_pages; /* page list entries used */
			__u8 page_shift; /* 12..30 */
			__u8 reserved[3];
		} reg;
	} u;
	union {
		struct rhn_sge sge; /* first SGE (atomics: the result) */
		__u8 inline_data[RHN_WQE_BASE_INLINE];
	} d;
};
RHN_ASSERT_SIZE(struct rhn_send_wqe, RHN_SQ_SLOT_SIZE);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, wqe_index, 4);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, remote_key, 16);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, xflags, 22);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, remote_addr, 24);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, u, 32);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, d, 48);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, u.trigger.addend, 32);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, u.trigger.handle, 40);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, u.trigger.key, 44);
RHN_ASSERT_OFFSET(struct rhn_send_wqe, u.atomic.swap, 40);

/*
 * Global route of a UD SEND (RoCE addressing, as in the address handle): the
 * WQE's last slot. The NIC takes the source GID from its GID table, so a
 * process cannot forge it, and sends the 40-byte GRH ahead of the payload;
 * the receiving NIC writes it into the first 40 bytes of the receive buffer.
 * SGEs or inline data must fit in the slots before this one.
 */
struct rhn_wqe_grh {
	__u8 dgid[16];
	__le32 flow_label; /* 20 bits */
	__u8 sgid_index; /* < RHN_GID_TABLE_LEN */
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 reserved[41];
};
RHN_ASSERT_SIZE(struct rhn_wqe_grh, RHN_SQ_SLOT_SIZE);

/*
 * Partial transfer: with xfer_mode other than RHN_XFER_BASIC the
 * WQE's last slot is this descriptor (counted in ext_units; the one SGE
 * uses the base slot). Described in queues.md "Partial-transfer modes".
 *
 * STRIDE (WRITE, READ): `count` blocks of `block` bytes, `local_stride`
 * bytes apart in the SGE and `remote_stride` bytes apart from
 * remote_addr; the message is block * count bytes.
 * BITMAP (WRITE, READ): the SGE and the remote range have the same
 * length; bit i of the bitmap (LSB first in each byte, in local memory
 * at bitmap_addr through bitmap_lkey) marks bytes [i*block, (i+1)*block)
 * for transfer; only marked blocks travel.
 * TWIN (READ): as a basic READ, and the NIC also writes every byte that
 * arrives into twin memory `twin` at twin_offset + its message offset.
 * DIFF (WRITE): compares the SGE with the twin at twin_offset and sends
 * only the runs of bytes that differ; when the WQE completes successfully
 * the twin holds the SGE's bytes (every message it sends before compares
 * with the twin as it was).
 *
 * Refused at post with RHN_SYN_BAD_XFER: a mode the opcode does not take,
 * a zero block or count, overlapping strides, an SGE shorter than the
 * blocks' extent, a bitmap outside its key, a twin that is not the
 * context's or too short.
 */
/* A destination of RHN_OP_MCAST_LIST. */
struct rhn_mcast_dest {
	__le16 node;
	__le16 reserved; /* 0 */
	__le32 qpn; /* the endpoint */
};
RHN_ASSERT_SIZE(struct rhn_mcast_dest, 8);
#define RHN_MCAST_MAX_DESTS 4096

/* RHN_OP_MCAST_LIST's last slot: `count` (1..RHN_MCAST_MAX_DESTS) struct
 * rhn_mcast_dest at list_addr, readable through list_lkey (this QP's
 * PD). Refused at post (LOC_QP_OP_ERR, RHN_SYN_BAD_WQE) for a count out
 * of range, reserved bytes set, or a destination that is no node of the
 * fabric (multicast and broadcast IDs included); LOC_PROT_ERR for a list
 * outside its key.
 */
struct rhn_wqe_mcast {
	__le64 list_addr;
	__le32 list_lkey;
	__le32 count;
	__u8 reserved[48];
};
RHN_ASSERT_SIZE(struct rhn_wqe_mcast, RHN_SQ_SLOT_SIZE);

/* ---- Collectives (RHN_OP_COLLECTIVE) -------------------------------- */

enum rhn_coll_op {
	RHN_COLL_ALLREDUCE = 1,
	RHN_COLL_REDUCE = 2, /* the result at `root` only */
	RHN_COLL_BCAST = 3, /* root's send buffer to every other recv */
	RHN_COLL_BARRIER = 4, /* no data: length 0 */
};

enum rhn_coll_reduce {
	RHN_COLL_SUM = 0,
	RHN_COLL_MIN = 1,
	RHN_COLL_MAX = 2,
	RHN_COLL_BAND = 3, /* integer types only, as the bitwise ones */
	RHN_COLL_BOR = 4,
	RHN_COLL_BXOR = 5,
};

enum rhn_coll_type {
	RHN_COLL_INT32 = 0,
	RHN_COLL_UINT32 = 1,
	RHN_COLL_INT64 = 2,
	RHN_COLL_UINT64 = 3,
	RHN_COLL_FLOAT = 4,
	RHN_COLL_DOUBLE = 5,
};

enum rhn_coll_flags {
	RHN_COLL_F_IN_SWITCH = 1u << 0, /* the switch reduces across nodes */
};

/* The radix an IN_SWITCH collective's signature carries (rhn_wire.h). */
#define RHN_COLL_RADIX_SWITCH 0xffu

/* Limits of one communicator. */
#define RHN_COLL_MAX_RANKS 256
#define RHN_COLL_MAX_LOCAL 8 /* its ranks on one NIC */
#define RHN_COLL_MAX_RADIX 16

/*
 * RHN_OP_COLLECTIVE's last slot. Every rank of a communicator posts the
 * same sequence of collectives (same op, reduce, type, length, root,
 * radix and seg_size; the NIC numbers each rank's posts on the
 * communicator itself). members: `nranks` struct rhn_mcast_dest, rank
 * order, the same list at every rank; entry `rank` is this endpoint. The
 * NIC reads it when it first meets the communicator and checks the later
 * posts against what it holds.
 * radix: the fan-out of the reduction tree across nodes (1: a chain
 * whose root turns with every segment, as a ring moves data; 0: the NIC
 * chooses by length). seg_size: bytes per segment (0: the NIC's choice;
 * else a multiple of the type's size, at most RHN_WIRE_MTU).
 * flags RHN_COLL_F_IN_SWITCH (ALLREDUCE and BARRIER, radix 0): the
 * fabric switch combines the nodes' partials (RHN_PKT_COLL frames,
 * hw_wire.h); every rank must ask for it. A switch that never answers
 * fails the collective with RHN_SYN_COLL_NO_SWITCH.
 * Refused at post (LOC_QP_OP_ERR, RHN_SYN_BAD_WQE): values out of range,
 * reserved bytes or unknown flags set, a length that is not a multiple of
 * the type's size, a bitwise reduce of a floating type, BARRIER with a
 * length, IN_SWITCH with another op or a radix.
 * LOC_PROT_ERR: send, recv or the member list outside its key.
 * Fails (REM_OP_ERR) with RHN_SYN_COLL_MISMATCH when the ranks disagree,
 * with RHN_SYN_MEMBER_LOST when a member's node dies or its endpoint
 * goes; GENERAL_ERR with RHN_SYN_COLL_NO_ROOM when the NIC holds no more
 * communicators for the process. These leave the endpoint usable.
 */
struct rhn_wqe_coll {
	__u8 op; /* enum rhn_coll_op */
	__u8 reduce; /* enum rhn_coll_reduce */
	__u8 type; /* enum rhn_coll_type */
	__u8 radix; /* 0..RHN_COLL_MAX_RADIX */
	__le16 rank; /* this endpoint's rank */
	__le16 root; /* REDUCE, BCAST */
	__le16 nranks; /* 1..RHN_COLL_MAX_RANKS */
	__le16 seg_size;
	__le32 length; /* bytes of send and of recv */
	__le64 send_addr; /* operand (BCAST: the root's data) */
	__le32 send_lkey;
	__le32 recv_lkey;
	__le64 recv_addr; /* result; may be send_addr (in place) */
	__le64 members_addr;
	__le32 members_lkey;
	__u8 flags; /* enum rhn_coll_flags */
	__u8 reserved[11];
};
RHN_ASSERT_SIZE(struct rhn_wqe_coll, RHN_SQ_SLOT_SIZE);
RHN_ASSERT_OFFSET(struct rhn_wqe_coll, flags, 52);
RHN_ASSERT_OFFSET(struct rhn_wqe_coll, length, 12);
RHN_ASSERT_OFFSET(struct rhn_wqe_coll, send_addr, 16);
RHN_ASSERT_OFFSET(struct rhn_wqe_coll, recv_addr, 32);
RHN_ASSERT_OFFSET(struct rhn_wqe_coll, members_addr, 40);

struct rhn_wqe_xfer {
	__le32 block; /* STRIDE: block bytes; BITMAP: bytes per bit */
	__le32 count; /* STRIDE: blocks */
	__le64 local_stride; /* STRIDE */
	__le64 remote_stride; /* STRIDE */
	__le64 bitmap_addr; /* BITMAP: the bitmap's local address */
	__le32 bitmap_lkey; /* BITMAP */
	__le32 twin; /* TWIN, DIFF: handle from RHN_ADMIN_ALLOC_TWIN */
	__le64 twin_offset; /* TWIN, DIFF: bytes into that twin */
	__u8 reserved[16];
};
RHN_ASSERT_SIZE(struct rhn_wqe_xfer, RHN_SQ_SLOT_SIZE);
RHN_ASSERT_OFFSET(struct rhn_wqe_xfer, remote_stride, 16);
RHN_ASSERT_OFFSET(struct rhn_wqe_xfer, bitmap_addr, 24);
RHN_ASSERT_OFFSET(struct rhn_wqe_xfer, twin, 36);
RHN_ASSERT_OFFSET(struct rhn_wqe_xfer, twin_offset, 40);

/* ---- Receive queue and SRQ -------------------------------------------- */

#define RHN_RQ_WQE_SIZE 64
#define RHN_RQ_MAX_SGES 3

/*
 * A UD receive buffer starts with RHN_UD_GRH_LEN bytes for the sender's GRH
 * (written only when the CQE has RHN_CQE_F_GRH); the payload follows, and
 * the CQE's byte_len counts both, as in InfiniBand.
 */
#define RHN_UD_GRH_LEN 40

struct rhn_recv_wqe {
	__le16 wqe_index; /* low 16 bits of this WQE's index */
	__le16 num_sge; /* 0..3 */
	__le32 reserved0;
	__le64 reserved1;
	struct rhn_sge sge[RHN_RQ_MAX_SGES];
};
RHN_ASSERT_SIZE(struct rhn_recv_wqe, RHN_RQ_WQE_SIZE);

/*
 * A tag-matched receive (irecv): an RQ WQE of an endpoint with
 * RHN_RQ_F_TAG in flags (an endpoint's RQ holds either these or plain
 * receives). The NIC reads each when its doorbell comes: it takes the
 * oldest queued message it matches at once, or waits. Waiting ones move
 * from the head of the RQ into the NIC's posted-receive list while it has
 * room; the rest stay in the ring, where arriving messages look for them
 * too. One taken out of RQ order gets RHN_RQ_F_TAKEN written into its
 * flags by the NIC; software must not touch a posted WQE. A message
 * matches when its source equals (src_node, src_qpn) or RHN_TAG_F_ANY_SRC
 * is set, and (tag ^ message tag) & mask == 0. It completes out of RQ
 * order with an RHN_CQE_OP_TAG_RECV CQE naming its wqe_index.
 */
enum rhn_tag_recv_flags {
	RHN_TAG_F_ANY_SRC = 1u << 0,
};
/*
 * Bits 8..10 of a tag receive's flags: its partial-transfer mode (basic,
 * twin, bitmap or stride: RHN_OP_IRECV's row), enum rhn_xfer_mode, with
 * its parameters in `xfer`. Message byte o (of the bytes the sender
 * selected, see RHN_OP_ISEND) lands
 *   BASIC:  at sge.addr + o;
 *   STRIDE: at sge.addr + (o / block) * stride + o % block; the receive
 *           holds block * count bytes (stride >= block, and
 *           (count - 1) * stride + block <= sge.length);
 *   BITMAP: at sge.addr + o only if bit o / block of the bitmap (LSB
 *           first, local memory at addr through lkey, one bit per block of
 *           sge.length) is set; other bytes are dropped;
 *   TWIN:   at sge.addr + o, and into twin memory `handle` (the context's,
 *           from RHN_ADMIN_ALLOC_TWIN) at offset + o.
 * Any other mode, or parameters that break these rules, complete the
 * receive with RHN_CQE_LOC_QP_OP_ERR and RHN_SYN_BAD_XFER.
 */
#define RHN_TAG_XFER_SHIFT 8
#define RHN_TAG_XFER_MASK (7u << RHN_TAG_XFER_SHIFT)
#define RHN_RQ_F_TAG (1u << 31) /* the RQ WQE is a rhn_tag_recv_wqe */
/* Written by the NIC into a tag receive it took out of RQ order */
#define RHN_RQ_F_TAKEN (1u << 30)

struct rhn_tag_recv_wqe {
	__le16 wqe_index;
	__le16 num_sge; /* 0 or 1 */
	__le32 flags; /* enum rhn_tag_recv_flags */
	__le64 tag;
	struct rhn_sge sge;
	__le64 mask;
	__le16 src_node;
	__le16 reserved0;
	__le32 src_qpn;
	union {
		struct {
			__le32 block;
			__le32 count;
			__le64 stride;
		} stride;
		struct {
			__le32 block; /* bytes per bit */
			__le32 lkey;
			__le64 addr;
		} bitmap;
		struct {
			__le32 handle;
			__le32 reserved;
			__le64 offset;
		} twin;
		__u8 reserved1[16];
	} xfer; /* with RHN_TAG_XFER_MASK bits set in flags */
};
RHN_ASSERT_SIZE(struct rhn_tag_recv_wqe, RHN_RQ_WQE_SIZE);
RHN_ASSERT_OFFSET(struct rhn_tag_recv_wqe, xfer, 48);
RHN_ASSERT_OFFSET(struct rhn_tag_recv_wqe, flags, 4);
RHN_ASSERT_OFFSET(struct rhn_tag_recv_wqe, sge, 16);

/* ---- Tag matching on a TM SRQ (ibverbs IBV_SRQT_TM) -------------------- */

/*
 * A TM SRQ (RHN_ADMIN_CREATE_SRQ with RHN_CREATE_SRQ_F_TM) matches the
 * SENDs arriving at the RC QPs that use it against a tag list software
 * keeps with operations in a ring of its own (these 64-byte WQEs, with
 * their own struct rhn_queue_record). The NIC executes them in ring order
 * when RHN_DB_SRQ is written with RHN_DB_SRQ_TM_OPS, then writes the index
 * of the next one into the record's nic_consumer: software reuses a slot
 * once nic_consumer has passed it. A message starting with a struct
 * rhn_tmh (hw_wire.h) whose tag matches an entry lands in the entry's
 * buffer (after the header; a rendezvous header makes the NIC read the
 * data from the sender's memory); any other message takes a receive WQE
 * of the SRQ as usual. Described in queues.md "Tag matching on a TM SRQ".
 */
#define RHN_TM_OP_WQE_SIZE 64
#define RHN_TM_MAX_SGES 1

enum rhn_tm_op {
	/* Adds the entry `handle` (software's name for it, below the SRQ's
	 * max_tags): a message matches when (tag ^ message tag) & mask is 0;
	 * the oldest entry that matches takes it.
	 */
	RHN_TM_OP_ADD = 1,
	RHN_TM_OP_DEL = 2, /* takes entry `handle` out of the list */
	RHN_TM_OP_SYNC = 3, /* only the unexpected count (with F_SYNC) */
};

enum rhn_tm_op_flags {
	/* a CQE on success too (DEL always has one, failures too) */
	RHN_TM_OP_F_SIGNALED = 1u << 0,
	/* unexpected_cnt = the unexpected messages software has handled */
	RHN_TM_OP_F_SYNC = 1u << 1,
};

struct rhn_tm_op_wqe {
	__u8 opcode; /* enum rhn_tm_op */
	__u8 flags; /* enum rhn_tm_op_flags */
	__le16 wqe_index; /* low 16 bits of its index in the ring */
	__le16 handle;
	__le16 num_sge; /* ADD: 0 or RHN_TM_MAX_SGES */
	__le32 unexpected_cnt;
	__le32 reserved0;
	__le64 tag;
	__le64 mask;
	struct rhn_sge sge; /* ADD: the buffer (local write, the SRQ's PD) */
	__u8 reserved1[16];
};
RHN_ASSERT_SIZE(struct rhn_tm_op_wqe, RHN_TM_OP_WQE_SIZE);
RHN_ASSERT_OFFSET(struct rhn_tm_op_wqe, handle, 4);
RHN_ASSERT_OFFSET(struct rhn_tm_op_wqe, unexpected_cnt, 8);
RHN_ASSERT_OFFSET(struct rhn_tm_op_wqe, tag, 16);
RHN_ASSERT_OFFSET(struct rhn_tm_op_wqe, sge, 32);

/* ---- Doorbell records (host memory, written by software) --------------- */

/*
 * SQ: producer index in slots. RQ/SRQ: producer index in WQEs.
 * nic_consumer: written by the NIC in the RQ record of an endpoint that
 * takes tag receives (rhn_tag_recv_wqe), which complete out of RQ order:
 * the index of the oldest RQ WQE the NIC may still read. Software reuses
 * a ring slot only when its index is before nic_consumer (a receive that
 * waits in the ring keeps its slot however many later ones complete).
 * In the RQ record of any other QP (RHN_CAP_RQ_RECORD_READ): 0, or
 * RHN_RQ_RECORD_DOORBELL_WANTED while the NIC needs an RHN_DB_RQ kick for
 * every post (queues.md, "Receives without doorbells"). In the SQ record
 * of a plain SQ (RHN_CAP_SQ_DOORBELL_ON_REQUEST): 0, or
 * RHN_SQ_RECORD_DOORBELL_WANTED while the NIC needs an RHN_DB_SQ kick to
 * look at the SQ again (queues.md, "Sends without doorbells"), or, for a
 * QP created with RHN_CREATE_QP_F_SQ_EVENT_INDEX, RHN_SQ_RECORD_EVENT and
 * the slot whose post must kick (queues.md, "The SQ event index"). Elsewhere
 * 0, and never read by the NIC.
 */
struct rhn_queue_record {
	__le32 producer_index;
	__le32 nic_consumer;
};
RHN_ASSERT_OFFSET(struct rhn_queue_record, nic_consumer, 4);
RHN_ASSERT_SIZE(struct rhn_queue_record, 8);

/*
 * Set by the NIC in a plain RQ's nic_consumer (the QP entered ERR: posts
 * are flushed only when kicked); cleared when the QP enters RESET. The
 * top bit, so no RQ index (at most 2^15 WQEs) can be mistaken for it.
 */
#define RHN_RQ_RECORD_DOORBELL_WANTED 0x80000000u

/*
 * Set by the NIC in a plain SQ's nic_consumer when it has taken and
 * completed all it knew of (it reads producer_index once more after the
 * store), and while the QP is in ERR; cleared by a kick that finds the
 * NIC busy on the SQ (it reads the record again before it goes idle)
 * and when the QP enters RESET. No SQ index (at most 2^15 slots) reaches
 * the top bit.
 */
#define RHN_SQ_RECORD_DOORBELL_WANTED 0x80000000u

/*
 * The event index (RHN_CAP_SQ_EVENT_INDEX, a QP created with
 * RHN_CREATE_QP_F_SQ_EVENT_INDEX; queues.md, "The SQ event index"). The
 * plain SQ's nic_consumer is then 0 (no kick wanted: RESET, or not yet in
 * RTS), RHN_SQ_RECORD_DOORBELL_WANTED (ERR: every post kicks), or
 * RHN_SQ_RECORD_EVENT | E: the NIC went idle when producer_index was E
 * (its low 16 bits), and the post that writes slot E must kick. The NIC
 * never takes it back: posts after that one cross nothing until the NIC
 * goes idle again and stores a new E.
 */
#define RHN_SQ_RECORD_EVENT 0x40000000u
#define RHN_SQ_RECORD_EVENT_INDEX 0x0000ffffu

/*
 * Whether a post that moved producer_index from old_pi to new_pi (32-bit
 * free-running slot counts) must kick, given the word it loaded after its
 * store and a full fence. Indices compare modulo 2^16: a post covers at
 * most a ring (2^15 slots), so "slot E lies in [old_pi, new_pi)" is exact;
 * a stale E met again 2^16 slots later costs one kick, never a lost one.
 */
static inline int rhn_sq_post_must_kick(__u32 word, __u32 old_pi, __u32 new_pi)
{
	if (word & RHN_SQ_RECORD_DOORBELL_WANTED)
		return 1;
	if (!(word & RHN_SQ_RECORD_EVENT))
		return 0;
	return (__u16)(new_pi - (word & RHN_SQ_RECORD_EVENT_INDEX) - 1) <
	       (__u16)(new_pi - old_pi);
}

/*
 * The SQ record of a QP created with RHN_CREATE_QP_F_MULTI_PRODUCER
 * (queues.md, "Many producers on one queue"). Two 8-byte words, each
 * written by one side only and always as one aligned 8-byte store, so a
 * producer that can store only 8 bytes at a time (a peer device's lane)
 * never overwrites the NIC's word:
 * producer: the producers' 64-bit count of published slots; the NIC reads
 *   its low 32 bits as the SQ producer index (so the first 8 bytes are a
 *   struct rhn_queue_record as the NIC reads one).
 * nic_consumer: written by the NIC, a 64-bit count of the SQ slots it is
 *   done with (it will never read them again: their WQEs completed); a
 *   producer may write slot s once s < nic_consumer + depth.
 */
struct rhn_mp_queue_record {
	__le64 producer;
	__le64 nic_consumer;
};
RHN_ASSERT_OFFSET(struct rhn_mp_queue_record, nic_consumer, 8);
RHN_ASSERT_SIZE(struct rhn_mp_queue_record, 16);

/*
 * Producers ring the SQ doorbell once per RHN_MP_DB_BATCH slots: the one
 * whose WQE covers a slot s with s % RHN_MP_DB_BATCH == RHN_MP_DB_BATCH - 1,
 * and the one that publishes while no later slot is reserved (the tail).
 * A power of two, and at most the SQ depth minus one WQE's slots, so a
 * ring never fills with published WQEs no doorbell announced.
 */
#define RHN_MP_DB_BATCH 32
RHN_STATIC_ASSERT((RHN_MP_DB_BATCH & (RHN_MP_DB_BATCH - 1)) == 0,
		  "the doorbell batch is a power of two");
RHN_STATIC_ASSERT(RHN_MP_DB_BATCH + RHN_WQE_MAX_SLOTS <= 64,
		  "the default batch fits an SQ of 64 slots");

/*
 * The producers' two decisions, for a WQE of `slots` slots at ticket t on
 * a ring of `depth` slots, all counts 64-bit. Room: its slots may be
 * written once nic_consumer + depth has passed them.
 */
static inline int rhn_mp_has_room(__u64 t, __u32 slots, __u64 nic_consumer,
				  __u32 depth)
{
	return t + slots <= nic_consumer + depth;
}

/*
 * After publishing: ring the doorbell if the WQE covers the last slot of
 * a batch, or if nobody reserved a later slot (`reserved`: the
 * reservation counter, read after the publishing store).
 */
static inline int rhn_mp_rings(__u64 t, __u32 slots, __u64 reserved,
			       __u32 batch)
{
	return (t + slots) / batch != t / batch || reserved == t + slots;
}

/* CQ: consumer index, read by the NIC only when the ring looks full or on
 * an arm kick.
 */
struct rhn_cq_record {
	__le32 consumer_index;
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_cq_record, 8);

/* ---- Completion queue --------------------------------------------------- */

#define RHN_CQE_SIZE 32

enum rhn_cqe_opcode {
	RHN_CQE_OP_SEND = 0,
	RHN_CQE_OP_WRITE = 1,
	RHN_CQE_OP_READ = 2,
	RHN_CQE_OP_CMP_SWAP = 3,
	RHN_CQE_OP_FETCH_ADD = 4,
	RHN_CQE_OP_RAW_ETH = 5,
	RHN_CQE_OP_BIND_MW = 6,
	RHN_CQE_OP_LOCAL_INV = 7,
	RHN_CQE_OP_REG_MR = 8,
	/* IPROBE: RHN_CQE_X_FOUND in ext_flags if a queued message matched;
	 * then byte_len, src_node/src_qpn and the tag as for TAG_RECV.
	 */
	RHN_CQE_OP_IPROBE = 9,
	/* IRECV_CANCEL: RHN_CQE_X_FOUND if the receive was still posted */
	RHN_CQE_OP_IRECV_CANCEL = 10,
	RHN_CQE_OP_PD_REQUEST = 11,
	RHN_CQE_OP_PD_RELEASE = 12,
	/*
	 * Tag-list operations of a TM SRQ (struct rhn_tm_op_wqe), on the
	 * SRQ's CQ: qpn = the SRQ's number, wqe_index = the operation's
	 * index in the SRQ's operation ring. Status RHN_CQE_TM_ERR (DEL: the
	 * entry was not in the list, it matched meanwhile; ADD: no room or a
	 * handle in use) with vendor_err = enum rhn_syndrome.
	 * RHN_CQE_X_TM_SYNC_REQ: the SRQ's unexpected count and the last one
	 * software reported differ (see "Tag matching on a TM SRQ").
	 */
	RHN_CQE_OP_TM_ADD = 13,
	RHN_CQE_OP_TM_DEL = 14,
	RHN_CQE_OP_TM_SYNC = 15,
	RHN_CQE_OP_LOCK = 16,
	RHN_CQE_OP_UNLOCK = 17,
	RHN_CQE_OP_BARRIER = 18,
	RHN_CQE_OP_MCAST_LIST = 19,
	RHN_CQE_OP_MCAST_SWITCH = 20,
	/* shared regions (see "Shared regions" in queues.md) */
	RHN_CQE_OP_SUBSCRIBE = 21,
	RHN_CQE_OP_UNSUBSCRIBE = 22,
	RHN_CQE_OP_SHARE_UPDATE = 23,
	RHN_CQE_OP_COLLECTIVE = 24,
	RHN_CQE_OP_TRIGGER_ADD = 25,
	RHN_CQE_OP_ATOMIC_EXT = 26, /* byte_len: the original value's bytes */
	/* RHN_OP_WATCH: its send completion (RHN_CQE_F_SQ), and the watch
	 * firing on the arming endpoint's receive CQ (no RHN_CQE_F_SQ, no
	 * receive WQE used): vendor_err = the area key, byte_len = the
	 * landing PUSH's length (an atomic's word width), src_node/src_qpn =
	 * its initiator
	 */
	RHN_CQE_OP_WATCH = 27,
	RHN_CQE_OP_RECV = 0x80,
	RHN_CQE_OP_RECV_WRITE_IMM = 0x81,
	RHN_CQE_OP_RECV_RAW_ETH = 0x82,
	/*
	 * A PUSH with RHN_WOP_F_SIGNAL reached one of the QP's areas
	 * (put-with-signal): no receive WQE is used; imm_data = the signal
	 * value, vendor_err = the area key (group, area ID), byte_len = the
	 * PUSH's length, src_node/src_qpn = the initiator.
	 */
	RHN_CQE_OP_SIGNAL = 0x83,
	/*
	 * A tag receive (rhn_tag_recv_wqe) completed: byte_len = the
	 * message's length, src_node/src_qpn = its sender, and on success
	 * imm_data = the tag's low 32 bits, vendor_err = its high 32 bits.
	 * LOC_LEN_ERR: the message was longer than the buffer (which holds
	 * its first bytes). WR_FLUSH_ERR: cancelled or flushed. REM_OP_ERR:
	 * the sender gave the message up.
	 */
	RHN_CQE_OP_TAG_RECV = 0x84,
	/*
	 * A message matched an entry of a TM SRQ's tag list, on the
	 * receiving QP's CQ: wqe_index = the entry's handle, imm_data /
	 * vendor_err = the low / high 32 bits of the message's tag (on
	 * success and LOC_LEN_ERR; vendor_err = syndrome otherwise), src_qpn
	 * = the header's app_ctx, byte_len = bytes placed. ext_flags:
	 * RHN_CQE_X_TM_MATCH when the entry was taken (an eager message, or
	 * the start of a rendezvous), RHN_CQE_X_TM_DATA_VALID when its data
	 * is in place (the entry is released then). An eager message gives
	 * one CQE with both, a rendezvous two: MATCH (byte_len = the bytes
	 * the NIC will read), then DATA_VALID.
	 */
	RHN_CQE_OP_TM_RECV = 0x85,
	/* A TM SRQ's receive WQE took a tagged message no entry matched
	 * (the whole message, headers included): an ordinary receive CQE
	 * otherwise. The SRQ's unexpected count went up by one.
	 */
	RHN_CQE_OP_TM_UNEXPECTED = 0x86,
	/* A TM SRQ's receive WQE took a message that is not for matching
	 * (IBV_TMH_NO_TAG, a FIN, shorter than a header): as UNEXPECTED but
	 * not counted.
	 */
	RHN_CQE_OP_TM_NO_TAG = 0x87,
};

enum rhn_cqe_ext_flags {
	RHN_CQE_X_FOUND = 1u << 0, /* IPROBE, IRECV_CANCEL */
	RHN_CQE_X_TM_MATCH = 1u << 1, /* TM_RECV: the entry was taken */
	RHN_CQE_X_TM_DATA_VALID = 1u << 2, /* TM_RECV: its data is in place */
	RHN_CQE_X_TM_SYNC_REQ = 1u << 3, /* TM list op: software must sync */
	/* A receive through an XRC SRQ: xrc_srqn is the SRQ's index, qpn the
	 * XRC_RECV QP the SEND came through
	 */
	RHN_CQE_X_XRC = 1u << 4,
	/* A run (RHN_CAP_CQE_RUNS, a CQ created with RHN_CREATE_CQ_F_RUNS):
	 * the entry stands for run_extra + 1 successful completions of one
	 * queue of qpn, this one the last (queues.md, "Runs")
	 */
	RHN_CQE_X_RUN = 1u << 5,
};

/* The most completions one run holds (run_extra is 16 bits); a run also
 * holds at most as many as its CQ has entries.
 */
#define RHN_CQE_RUN_MAX 65536u

/* Values match enum ibv_wc_status so the provider passes them through. */
enum rhn_cqe_status {
	RHN_CQE_SUCCESS = 0,
	RHN_CQE_LOC_LEN_ERR = 1,
	RHN_CQE_LOC_QP_OP_ERR = 2,
	RHN_CQE_LOC_PROT_ERR = 4,
	RHN_CQE_WR_FLUSH_ERR = 5,
	RHN_CQE_MW_BIND_ERR = 6,
	RHN_CQE_BAD_RESP_ERR = 7,
	RHN_CQE_LOC_ACCESS_ERR = 8,
	RHN_CQE_REM_INV_REQ_ERR = 9,
	RHN_CQE_REM_ACCESS_ERR = 10,
	RHN_CQE_REM_OP_ERR = 11,
	RHN_CQE_RETRY_EXC_ERR = 12,
	RHN_CQE_RNR_RETRY_EXC_ERR = 13,
	RHN_CQE_FATAL_ERR = 19,
	RHN_CQE_GENERAL_ERR = 21,
	RHN_CQE_TM_ERR = 22, /* a tag-list operation failed */
	/* TM_RECV: a rendezvous header the NIC does not execute (longer than
	 * RHN_TM_MAX_RNDV_HDR, or shorter than both headers) matched: what
	 * follows its struct rhn_tmh is in the entry's buffer; software reads
	 * the data and sends the FIN
	 */
	RHN_CQE_TM_RNDV_INCOMPLETE = 23,
};

enum rhn_cqe_flags {
	RHN_CQE_F_IMM = 1u << 0,
	RHN_CQE_F_SOLICITED = 1u << 1,
	RHN_CQE_F_SQ = 1u << 2, /* from the send queue */
	RHN_CQE_F_GRH = 1u << 3, /* UD receive: the buffer starts with a GRH */
	/* With RHN_CQE_F_GRH, the network header is RoCE v2's: an IPv4
	 * header in the last 20 of the 40 bytes, or an IPv6 header (neither:
	 * an InfiniBand GRH, RoCE v1).
	 */
	RHN_CQE_F_NET_IPV4 = 1u << 4,
	RHN_CQE_F_NET_IPV6 = 1u << 5,
	/* Receive of a SEND_INV: imm_data is the key the NIC invalidated. */
	RHN_CQE_F_INV = 1u << 6,
	RHN_CQE_F_OWNER = 1u << 7, /* phase bit, flips on every wrap */
};

/*
 * The NIC writes the first 24 bytes, then the last 8 (owner bit last), so
 * software that sees the owner bit flip (then dma_rmb) sees a whole CQE.
 * The owner bit of lap k (index / depth) is (k & 1) ^ 1: a zeroed ring is
 * empty.
 */
struct rhn_cqe {
	__le32 qpn;
	__le32 byte_len;
	__le32 imm_data;
	__le32 src_qpn; /* UD/endpoint receives */
	__le16 src_node;
	__le16 wqe_index; /* SQ slot index or RQ/SRQ WQE index */
	__le32 vendor_err; /* enum rhn_syndrome for errors */
	__u8 opcode; /* enum rhn_cqe_opcode */
	__u8 status; /* enum rhn_cqe_status */
	__le16 xrc_srqn; /* RHN_CQE_X_XRC: the XRC SRQ's index; else 0 */
	/* RHN_CQE_X_RUN: the completions the entry stands for besides its
	 * own (it stands for run_extra + 1); else 0
	 */
	__le16 run_extra;
	__u8 ext_flags; /* enum rhn_cqe_ext_flags */
	__u8 flags; /* enum rhn_cqe_flags, owner bit last */
};
RHN_ASSERT_SIZE(struct rhn_cqe, RHN_CQE_SIZE);
RHN_ASSERT_OFFSET(struct rhn_cqe, opcode, 24);
RHN_ASSERT_OFFSET(struct rhn_cqe, flags, 31);
RHN_ASSERT_OFFSET(struct rhn_cqe, run_extra, 28);
RHN_STATIC_ASSERT(RHN_CQE_RUN_MAX - 1 == 0xffffu,
		  "run_extra holds every run's count but its own");

/* Why an operation failed; carried in CQE vendor_err and NAK syndromes. */
enum rhn_syndrome {
	RHN_SYN_NONE = 0,
	RHN_SYN_BAD_KEY = 1, /* no such key or stale variant */
	RHN_SYN_PD_MISMATCH = 2,
	RHN_SYN_ACCESS_RIGHTS = 3,
	RHN_SYN_BOUNDS = 4,
	RHN_SYN_BAD_AREA = 5,
	RHN_SYN_BAD_QP = 6, /* no such QP, wrong type, state or peer */
	RHN_SYN_RNR = 7, /* no receive WQE */
	RHN_SYN_LENGTH = 8, /* message longer than the receive WQE */
	RHN_SYN_BAD_OPCODE = 9,
	RHN_SYN_BAD_WQE = 10, /* malformed WQE */
	RHN_SYN_DMA = 11, /* host bus error */
	RHN_SYN_RETRY_EXCEEDED = 12, /* peer node unreachable */
	RHN_SYN_BAD_QKEY = 13,
	RHN_SYN_ALIGNMENT = 14, /* an atomic's word not aligned to its width */
	RHN_SYN_BUSY = 15, /* responder resources full, retried */
	RHN_SYN_FLUSHED = 16,
	RHN_SYN_BAD_WINDOW = 17, /* bind or invalidate of a window refused */
	RHN_SYN_BAD_XFER = 18, /* a partial-transfer descriptor refused */
	/* an area key in a group the initiator (or target) is not in */
	RHN_SYN_BAD_GROUP = 19,
	/* NAK: the target's pages are being pinned (remote pin-down); the
	 * requester sends the message (and, in order, its later ones to that
	 * QP) again on RHN_FW_PIN_READY, or after RHN_PIN_RETRY_US if none
	 * comes (the target NIC had no room to record the request)
	 */
	RHN_SYN_PINNING = 20,
	/* the target host would not pin: its process's limit, memory not
	 * mapped or not writable, or the process is gone
	 */
	RHN_SYN_NOT_PINNED = 21,
	/* a lock or barrier failed because one of its members (or its
	 * manager) was declared dead, or the manager endpoint went away
	 */
	RHN_SYN_MEMBER_LOST = 22,
	/* UNLOCK of a lock the endpoint does not hold; a BARRIER whose count
	 * differs from the round's first
	 */
	RHN_SYN_NOT_HELD = 23,
	/* RHN_OP_MCAST_SWITCH to a group this NIC has no member list for */
	RHN_SYN_NO_MCAST_GROUP = 24,
	/* NAK only: the target endpoint is joining the shared region and
	 * its data has not arrived; the requester sends the update (and its
	 * later messages to that endpoint) again on RHN_FW_SHARE_RESEND, or
	 * after RHN_PIN_RETRY_US. Never in a CQE.
	 */
	RHN_SYN_SHARE_JOINING = 25,
	/* a SHARE_UPDATE or UNSUBSCRIBE of a region the endpoint is not in
	 * (or still joining), a SUBSCRIBE of one it is in already
	 */
	RHN_SYN_NOT_SUBSCRIBED = 26,
	/* NAK only: the target NIC has not started that collective (or that
	 * segment's buffer is still busy); the sender sends it again after
	 * a short delay. Never in a CQE.
	 */
	RHN_SYN_COLL_NOT_READY = 27,
	/* the ranks of a communicator posted collectives that disagree (op,
	 * type, length, root, radix, member list)
	 */
	RHN_SYN_COLL_MISMATCH = 28,
	/* the NIC's communicator table is full, or the context holds its
	 * share of it (a GENERAL_ERR completion: the endpoint goes on)
	 */
	RHN_SYN_COLL_NO_ROOM = 29,
	/* IN_SWITCH: the switch never answered a segment (it does not
	 * reduce, or it is gone)
	 */
	RHN_SYN_COLL_NO_SWITCH = 30,
	/* a triggered or chained WQE naming a trigger counter that is not a
	 * live counter of its QP's context (destroyed, of an earlier life,
	 * another context's): a GENERAL_ERR completion, the QP goes on
	 */
	RHN_SYN_BAD_TRIGGER = 31,
	/* the NIC's table of parked triggered WQEs is full, or the context
	 * holds its share of it (a GENERAL_ERR completion, the QP goes on)
	 */
	RHN_SYN_TRIGGER_NO_ROOM = 32,
	/* a parked WQE whose counter was destroyed (or whose context went):
	 * it completes with WR_FLUSH_ERR
	 */
	RHN_SYN_TRIGGER_GONE = 33,
	/* a remote trigger add (RHN_OP_TRIGGER_ADD) whose handle and key do
	 * not name a live counter of the context it reached (a wrong key, a
	 * destroyed counter, another context's): REM_ACCESS_ERR, nothing
	 * added
	 */
	RHN_SYN_BAD_REMOTE_TRIGGER = 34,
	/* an XRC SEND naming no live XRC SRQ of the target QP's XRC domain
	 * (no such SRQ, an earlier incarnation's number, another domain's):
	 * REM_INV_REQ_ERR, nothing delivered
	 */
	RHN_SYN_XRC_SRQ = 35,
	/* a WATCH (RHN_OP_WATCH) naming no area of the posting process (none
	 * with that key, or another process's): GENERAL_ERR, nothing armed,
	 * the endpoint goes on
	 */
	RHN_SYN_NO_WATCH_AREA = 36,
};

/* Shared regions: the largest region (RHN_SHARE_MAX_MEMBERS, the most
 * members of one region, home included, is in hw_wire.h).
 */
#define RHN_SHARE_MAX_BYTES (1u << 30)

#define RHN_PIN_RETRY_US 5000

/* ---- Status words (queues.md "Status words") ---------------------------- */

/* Software clears the word before posting; the NIC writes it once. */
#define RHN_STATUS_WORD_DONE (1ull << 63)
/* COLLECTIVE only, before DONE: the collective runs; the length field says
 * how many bytes of it are finished at this rank's NIC (its execution
 * state, readable while it runs). Rewritten as it moves on.
 */
#define RHN_STATUS_WORD_RUNNING (1ull << 62)
#define RHN_STATUS_WORD_STATUS_SHIFT 32 /* enum rhn_cqe_status, 8 bits */
#define RHN_STATUS_WORD_SYNDROME_SHIFT 40 /* enum rhn_syndrome, 8 bits */
#define RHN_STATUS_WORD_LEN_MASK 0xffffffffull /* bytes transferred */

/* ---- Event queue -------------------------------------------------------- */

#define RHN_EQE_SIZE 16

enum rhn_eqe_type {
	RHN_EQE_COMPLETION = 1, /* object = cqn */
	RHN_EQE_CQ_ERROR = 2, /* object = cqn (overflow) */
	RHN_EQE_QP_FATAL = 3, /* object = qpn, data = syndrome */
	RHN_EQE_SRQ_LIMIT = 4, /* object = srqn */
	RHN_EQE_PORT_CHANGE = 5, /* data = 1 link up, 0 down */
	/*
	 * Remote pin-down: object = the on-demand MR's key, data = its pages
	 * [first, first + count) as first | count << 32 (pages of 4 KiB
	 * counted from the one holding the MR's iova); flags (reserved0[0],
	 * enum rhn_eqe_pd_flags) say what the host does: PIN, pin the pages
	 * that are not and answer with RHN_ADMIN_PD_MAPPED; HOLD, count one
	 * more holder of each page (a PD_REQUEST was answered). One EQE per
	 * missing run, so a 1 MiB first touch is one event.
	 */
	RHN_EQE_PD_REQUEST = 6,
	/* RHN_ADMIN_PROBE_NODE finished: object = node, data = enum
	 * rhn_syndrome (RHN_SYN_NONE: the node's NIC answered)
	 */
	RHN_EQE_PROBE_DONE = 7,
	/* A peer released pages (PD_RELEASE): object and data as for
	 * PD_REQUEST; the host drops one holder of each and unpins (and
	 * invalidates) the pages nobody holds
	 */
	RHN_EQE_PD_RELEASE = 8,
};

enum rhn_eqe_pd_flags {
	RHN_EQE_F_PD_PIN = 1u << 0,
	RHN_EQE_F_PD_HOLD = 1u << 1,
};
#define RHN_EQE_PD_FIRST(data) ((__u32)(data))
#define RHN_EQE_PD_COUNT(data) ((__u32)((data) >> 32))

/* Written like a CQE: the first 8 bytes, then the last 8 (owner last). */
struct rhn_eqe {
	__le64 data;
	__le32 object;
	__u8 type; /* enum rhn_eqe_type */
	__u8 flags; /* RHN_EQE_PD_*: enum rhn_eqe_pd_flags */
	__u8 reserved0;
	__u8 owner; /* bit 0: phase, as for CQEs */
};
RHN_ASSERT_SIZE(struct rhn_eqe, RHN_EQE_SIZE);
RHN_ASSERT_OFFSET(struct rhn_eqe, owner, 15);

#endif /* RHINET_HW_QUEUES_H */
