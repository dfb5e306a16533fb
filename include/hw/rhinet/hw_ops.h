/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: the operation table. One row per work
 * request opcode says how the operation shows everywhere: its request on
 * the wire, its send CQE, its direct-verbs completion, what it may carry
 * and which transfer modes it takes. The engine, the kernel, the provider,
 * the user library and the tests derive their opcode maps and checks from
 * this one list. Described in Documentation/hardware/queues.md, "The
 * operation table". WQEs themselves are built with hw_wqe.h.
 *
 * The list is an X-macro so that C and C++ users can build what they need
 * from it (a switch, a constexpr array, a name table):
 *
 *   #define ROW(op, name, wire, cqe, dv, dv_name, flags, modes, ext, cap) ...
 *   RHN_OP_TABLE(ROW)
 *
 * op       enum rhn_wqe_opcode
 * name     the operation's name in messages and tools
 * wire     enum rhn_wire_op of its request; 0: it sends no request of its
 *          own (executed by the NIC, or carried by firmware messages)
 * cqe      enum rhn_cqe_opcode of its completion
 * dv       its direct-verbs completion opcode (enum rhinetdv_opcode in
 *          infiniband/rhinetdv.h); 0: it completes through verbs only
 * dv_name  its name in direct verbs and the user library ("" if none)
 * flags    enum rhn_op_flag
 * modes    the transfer modes it takes: RHN_XFER_MODES(...) of
 *          enum rhn_xfer_mode (RHN_XFER_BASIC is always taken)
 * ext      enum rhn_op_ext: the extension slots its WQEs may end with
 * cap      the enum rhn_cap bit a NIC announces it with (0: every NIC)
 */
#ifndef RHINET_HW_OPS_H
#define RHINET_HW_OPS_H

#include "hw_common.h"
#include "hw_queues.h"
#include "hw_regs.h"
#include "hw_wire.h"

enum rhn_op_flag {
	/* Completes on the target's answer, not on the channel's ACK. */
	RHN_OPF_ANSWERED = 1u << 0,
	/* imm_data is an immediate the receiver is given. */
	RHN_OPF_IMM = 1u << 1,
	/* May carry its data inline in the WQE (RHN_WQE_F_INLINE). */
	RHN_OPF_INLINE = 1u << 2,
	/* Holds a READ context (local SGEs for the answer's data) and counts
	 * against the QP's max_rd_atomic.
	 */
	RHN_OPF_READ_CTX = 1u << 3,
	/* Refused for room (BUSY) at an endpoint: later messages of the same
	 * opcode to that endpoint go again after it, in order (tag matching
	 * keeps each sender's order).
	 */
	RHN_OPF_ORDERED_RETRY = 1u << 4,
	/* Carries no data: no SGE, no inline bytes, no status word, no area
	 * key, no GRH; its operands are in the WQE's operand area.
	 */
	RHN_OPF_NO_DATA = 1u << 5,
	/* Atomic: one SGE of the word's width (rhn_atomic_result_len:
	 * 8 bytes, 4 for a 32-bit ATOMIC_EXT) receives the original value;
	 * the operand area holds the operands (no status word). The decoder
	 * takes at most one such SGE; FETCH_ADD, CMP_SWAP and a fetching
	 * ATOMIC_EXT require it (their family's check), a non-fetching
	 * ATOMIC_EXT refuses it, TRIGGER_ADD may go without.
	 */
	RHN_OPF_ATOMIC = 1u << 6,
	/* Posted to a receive queue, never a send WQE (the transfer modes of
	 * an irecv): the send-WQE decoder refuses it.
	 */
	RHN_OPF_RECV_QUEUE = 1u << 7,
};

/* Extension slots a WQE may end with, besides SGE and inline-data slots.
 * When several are present they are, from the last slot backwards: the
 * family's own description (mcast, coll), then the partial-transfer
 * descriptor, then (UD only) the GRH.
 */
enum rhn_op_ext {
	RHN_EXT_GRH = 1u << 0, /* RHN_WQE_F_GRH: struct rhn_wqe_grh */
	RHN_EXT_XFER = 1u << 1, /* a mode other than basic: rhn_wqe_xfer */
	RHN_EXT_MCAST = 1u << 2, /* always: struct rhn_wqe_mcast */
	RHN_EXT_COLL = 1u << 3, /* always: struct rhn_wqe_coll */
};

#define RHN_XFER_MODE_BIT(mode) (1u << (mode))
#define RHN_XFER_PUSH_MODES                   \
	(RHN_XFER_MODE_BIT(RHN_XFER_BASIC) |  \
	 RHN_XFER_MODE_BIT(RHN_XFER_DIFF) |   \
	 RHN_XFER_MODE_BIT(RHN_XFER_BITMAP) | \
	 RHN_XFER_MODE_BIT(RHN_XFER_STRIDE))
#define RHN_XFER_PULL_MODES                   \
	(RHN_XFER_MODE_BIT(RHN_XFER_BASIC) |  \
	 RHN_XFER_MODE_BIT(RHN_XFER_TWIN) |   \
	 RHN_XFER_MODE_BIT(RHN_XFER_BITMAP) | \
	 RHN_XFER_MODE_BIT(RHN_XFER_STRIDE))
#define RHN_XFER_BASIC_ONLY RHN_XFER_MODE_BIT(RHN_XFER_BASIC)
/* A SUBSCRIBE takes the region whole, into its copy and maybe a twin. */
#define RHN_XFER_COPY_MODES \
	(RHN_XFER_MODE_BIT(RHN_XFER_BASIC) | RHN_XFER_MODE_BIT(RHN_XFER_TWIN))

/* Shorthands for the table only. */
#define RHN_OPT_DATA_EXT (RHN_EXT_GRH)
#define RHN_OPT_PUSH_EXT (RHN_EXT_GRH | RHN_EXT_XFER)

/* Rows that exist only in test builds: families that prove the steps of
 * adding one (Documentation/firmware/README.md, "Adding a family") and are
 * never part of a NIC. Their numbers are ones no NIC uses.
 */
#ifdef RHN_TEST_FAMILY_ECHO
enum rhn_test_family_echo {
	RHN_OP_ECHO = 0x70, /* enum rhn_wqe_opcode */
	RHN_WOP_ECHO = 0x70, /* enum rhn_wire_op: the request */
	RHN_WOP_ECHO_RESP = 0x71, /* enum rhn_wire_op: the answer */
	RHN_CQE_OP_ECHO = 0x70, /* enum rhn_cqe_opcode */
};
/* clang-format off */
#define RHN_OP_TABLE_TEST_ROWS(X)                                          \
	X(RHN_OP_ECHO, "echo", RHN_WOP_ECHO, RHN_CQE_OP_ECHO, 0, "",       \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX, RHN_XFER_BASIC_ONLY, 0, 0)
/* clang-format on */
#else
#define RHN_OP_TABLE_TEST_ROWS(X)
#endif

/* clang-format off */
#define RHN_OP_TABLE(X)                                                    \
	X(RHN_OP_NOP, "nop", 0, RHN_CQE_OP_SEND, 0, "",                    \
	  0, RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, 0)                     \
	X(RHN_OP_SEND, "send", RHN_WOP_SEND, RHN_CQE_OP_SEND, 0, "",       \
	  RHN_OPF_INLINE, RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, 0)        \
	X(RHN_OP_SEND_IMM, "send_imm", RHN_WOP_SEND, RHN_CQE_OP_SEND, 0,   \
	  "", RHN_OPF_IMM | RHN_OPF_INLINE, RHN_XFER_BASIC_ONLY,           \
	  RHN_OPT_DATA_EXT, 0)                                             \
	/* imm_data names the key to invalidate: not an immediate */      \
	X(RHN_OP_SEND_INV, "send_inv", RHN_WOP_SEND, RHN_CQE_OP_SEND, 0,   \
	  "", RHN_OPF_INLINE, RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, 0)    \
	X(RHN_OP_WRITE, "write", RHN_WOP_WRITE, RHN_CQE_OP_WRITE, 1,       \
	  "push", RHN_OPF_INLINE, RHN_XFER_PUSH_MODES, RHN_OPT_PUSH_EXT,   \
	  0)                                                               \
	X(RHN_OP_WRITE_IMM, "write_imm", RHN_WOP_WRITE, RHN_CQE_OP_WRITE,  \
	  0, "", RHN_OPF_IMM | RHN_OPF_INLINE, RHN_XFER_BASIC_ONLY,        \
	  RHN_OPT_DATA_EXT, 0)                                             \
	X(RHN_OP_READ, "read", RHN_WOP_READ_REQ, RHN_CQE_OP_READ, 2,       \
	  "pull", RHN_OPF_ANSWERED | RHN_OPF_READ_CTX,                     \
	  RHN_XFER_PULL_MODES, RHN_OPT_PUSH_EXT, 0)                        \
	X(RHN_OP_FETCH_ADD, "fetch_add", RHN_WOP_FETCH_ADD,                \
	  RHN_CQE_OP_FETCH_ADD, 15, "fetch_add",                           \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX | RHN_OPF_ATOMIC,            \
	  RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, RHN_CAP_ATOMIC)           \
	X(RHN_OP_CMP_SWAP, "cmp_swap", RHN_WOP_CMP_SWAP,                   \
	  RHN_CQE_OP_CMP_SWAP, 16, "compare_swap",                         \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX | RHN_OPF_ATOMIC,            \
	  RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, RHN_CAP_ATOMIC)           \
	/* the operation and width in imm_data: not an immediate */        \
	X(RHN_OP_ATOMIC_EXT, "atomic_ext", RHN_WOP_ATOMIC_EXT,             \
	  RHN_CQE_OP_ATOMIC_EXT, 19, "atomic_ext",                         \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX | RHN_OPF_ATOMIC,            \
	  RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, RHN_CAP_ATOMIC_EXT)       \
	/* remote_key: one of the process's own area keys (not F_AREA) */  \
	X(RHN_OP_WATCH, "watch", 0, RHN_CQE_OP_WATCH, 20, "watch", 0,      \
	  RHN_XFER_BASIC_ONLY, 0, RHN_CAP_WATCH)                           \
	X(RHN_OP_BIND_MW, "bind_mw", 0, RHN_CQE_OP_BIND_MW, 0, "",         \
	  RHN_OPF_NO_DATA, RHN_XFER_BASIC_ONLY, 0, 0)                      \
	X(RHN_OP_LOCAL_INV, "local_inv", 0, RHN_CQE_OP_LOCAL_INV, 0, "",   \
	  RHN_OPF_NO_DATA, RHN_XFER_BASIC_ONLY, 0, 0)                      \
	X(RHN_OP_REG_MR, "reg_mr", 0, RHN_CQE_OP_REG_MR, 0, "",            \
	  RHN_OPF_NO_DATA, RHN_XFER_BASIC_ONLY, 0, 0)                      \
	X(RHN_OP_RAW_ETH, "raw_eth", 0, RHN_CQE_OP_RAW_ETH, 0, "",         \
	  RHN_OPF_INLINE, RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT,           \
	  RHN_CAP_RAW_ETH)                                                 \
	X(RHN_OP_ISEND, "isend", RHN_WOP_TAG, RHN_CQE_OP_SEND, 3, "isend", \
	  RHN_OPF_ANSWERED | RHN_OPF_INLINE | RHN_OPF_ORDERED_RETRY,       \
	  RHN_XFER_PUSH_MODES, RHN_OPT_PUSH_EXT, RHN_CAP_TAG)              \
	X(RHN_OP_IRECV, "irecv", 0, RHN_CQE_OP_TAG_RECV, 4, "irecv",       \
	  RHN_OPF_RECV_QUEUE, RHN_XFER_PULL_MODES, 0, RHN_CAP_TAG)         \
	X(RHN_OP_IPROBE, "iprobe", 0, RHN_CQE_OP_IPROBE, 0, "",            \
	  RHN_OPF_NO_DATA, RHN_XFER_BASIC_ONLY, 0, RHN_CAP_TAG)            \
	X(RHN_OP_IRECV_CANCEL, "irecv_cancel", 0, RHN_CQE_OP_IRECV_CANCEL, \
	  0, "", RHN_OPF_NO_DATA, RHN_XFER_BASIC_ONLY, 0, RHN_CAP_TAG)     \
	X(RHN_OP_MCAST_SWITCH, "mcast_switch", RHN_WOP_MCAST_DATA,         \
	  RHN_CQE_OP_MCAST_SWITCH, 11, "mcast_switch", RHN_OPF_INLINE,     \
	  RHN_XFER_PUSH_MODES, RHN_OPT_PUSH_EXT, RHN_CAP_MCAST_SWITCH)     \
	X(RHN_OP_MCAST_LIST, "mcast_list", RHN_WOP_WRITE,                  \
	  RHN_CQE_OP_MCAST_LIST, 7, "mcast", RHN_OPF_INLINE,               \
	  RHN_XFER_PUSH_MODES, RHN_EXT_XFER | RHN_EXT_MCAST,               \
	  RHN_CAP_MCAST_LIST)                                              \
	X(RHN_OP_SUBSCRIBE, "subscribe", RHN_WOP_SHARE_REQ,                \
	  RHN_CQE_OP_SUBSCRIBE, 12, "subscribe",                           \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX, RHN_XFER_COPY_MODES,        \
	  RHN_OPT_PUSH_EXT, RHN_CAP_SHARE)                                 \
	X(RHN_OP_UNSUBSCRIBE, "unsubscribe", RHN_WOP_SHARE_REQ,            \
	  RHN_CQE_OP_UNSUBSCRIBE, 13, "unsubscribe", 0,                    \
	  RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, RHN_CAP_SHARE)            \
	X(RHN_OP_SHARE_UPDATE, "share_update", RHN_WOP_SHARE_UPDATE,       \
	  RHN_CQE_OP_SHARE_UPDATE, 14, "share_update", RHN_OPF_INLINE,     \
	  RHN_XFER_PUSH_MODES, RHN_OPT_PUSH_EXT, RHN_CAP_SHARE)            \
	/* a BARRIER's count rides in imm_data: not an immediate */       \
	X(RHN_OP_LOCK, "lock", RHN_WOP_LOCK, RHN_CQE_OP_LOCK, 8, "lock",   \
	  RHN_OPF_ANSWERED, RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT,         \
	  RHN_CAP_SYNC)                                                    \
	X(RHN_OP_UNLOCK, "unlock", RHN_WOP_UNLOCK, RHN_CQE_OP_UNLOCK, 9,   \
	  "unlock", RHN_OPF_ANSWERED, RHN_XFER_BASIC_ONLY,                 \
	  RHN_OPT_DATA_EXT, RHN_CAP_SYNC)                                  \
	X(RHN_OP_BARRIER, "barrier", RHN_WOP_BARRIER, RHN_CQE_OP_BARRIER,  \
	  10, "barrier", RHN_OPF_ANSWERED, RHN_XFER_BASIC_ONLY,            \
	  RHN_OPT_DATA_EXT, RHN_CAP_SYNC)                                  \
	X(RHN_OP_PD_REQUEST, "pd_request", RHN_WOP_PD_REQ,                 \
	  RHN_CQE_OP_PD_REQUEST, 5, "pd_req", RHN_OPF_ANSWERED,            \
	  RHN_XFER_BASIC_ONLY, RHN_OPT_DATA_EXT, RHN_CAP_PIN_ON_DEMAND)    \
	X(RHN_OP_PD_RELEASE, "pd_release", RHN_WOP_PD_RELEASE,             \
	  RHN_CQE_OP_PD_RELEASE, 6, "pd_release", 0, RHN_XFER_BASIC_ONLY,  \
	  RHN_OPT_DATA_EXT, RHN_CAP_PIN_ON_DEMAND)                         \
	/* carried by firmware messages between the NICs, not by a       \
	 * request of this QP                                              \
	 */                                                                \
	X(RHN_OP_COLLECTIVE, "collective", 0, RHN_CQE_OP_COLLECTIVE, 17,   \
	  "collective", RHN_OPF_ANSWERED, RHN_XFER_BASIC_ONLY,             \
	  RHN_EXT_COLL, RHN_CAP_COLLECTIVE)                                \
	/* atomic operands: the addend, the counter's handle and key; the \
	 * one SGE (of 8 bytes) is optional                                \
	 */                                                                \
	X(RHN_OP_TRIGGER_ADD, "trigger_add", RHN_WOP_TRIGGER_ADD,          \
	  RHN_CQE_OP_TRIGGER_ADD, 18, "trigger_add",                       \
	  RHN_OPF_ANSWERED | RHN_OPF_READ_CTX | RHN_OPF_ATOMIC,            \
	  RHN_XFER_BASIC_ONLY, 0, RHN_CAP_TRIGGER)                         \
	RHN_OP_TABLE_TEST_ROWS(X)
/* clang-format on */

/* One row, as C structure (for C users; C++ users may build their own). */
struct rhn_op_desc {
	const char *name;
	const char *dv_name;
	__u8 opcode; /* enum rhn_wqe_opcode */
	__u8 wire_op; /* enum rhn_wire_op */
	__u8 cqe_op; /* enum rhn_cqe_opcode */
	__u8 dv_op; /* enum rhinetdv_opcode, 0: none */
	__u8 flags; /* enum rhn_op_flag */
	__u8 modes; /* RHN_XFER_MODE_BIT()s */
	__u8 ext; /* enum rhn_op_ext */
	__u32 cap; /* enum rhn_cap, 0: every NIC */
};

#define RHN_OP_DESC_CASE_(op_, name_, wire_, cqe_, dv_, dv_name_, flags_, \
			  modes_, ext_, cap_)                             \
	case op_: {                                                       \
		static const struct rhn_op_desc d = {                     \
			name_, dv_name_, op_,	 wire_, cqe_,             \
			dv_,   flags_,	 modes_, ext_,	cap_};            \
		return &d;                                                \
	}

/* The row of a WQE opcode, or NULL for an opcode no NIC knows. */
static inline const struct rhn_op_desc *rhn_op_row(unsigned int opcode)
{
	switch (opcode) {
		RHN_OP_TABLE(RHN_OP_DESC_CASE_)
	default:
		return 0;
	}
}

/* The row whose direct-verbs completion opcode is dv_op, or NULL. */
static inline const struct rhn_op_desc *rhn_op_row_by_dv(unsigned int dv_op)
{
	const struct rhn_op_desc *d;
	unsigned int op;

	for (op = 0; dv_op && op <= RHN_OP_MAX; op++) {
		d = rhn_op_row(op);
		if (d && d->dv_op == dv_op)
			return d;
	}
	return 0;
}

/* Does opcode take transfer mode `mode` (enum rhn_xfer_mode)? */
static inline int rhn_op_takes_mode(unsigned int opcode, unsigned int mode)
{
	const struct rhn_op_desc *d = rhn_op_row(opcode);

	return d && mode < 8 && (d->modes & RHN_XFER_MODE_BIT(mode));
}

#endif /* RHINET_HW_OPS_H */
