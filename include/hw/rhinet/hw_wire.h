/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: wire packet format between NICs and through
 * the fabric switch. Described in Documentation/hardware/wire.md.
 *
 * Every frame starts with the 32-byte transport header. Reliability is per
 * ordered pair of nodes (wire.md, "Reliability per node pair"): each
 * sequenced packet carries the sender's per-destination serial number; the
 * receiver accepts only the next one in order, acknowledges cumulatively
 * and asks for a retransmission (NAK) on a gap. DATA frames add the
 * 40-byte operation header, then the payload.
 */
#ifndef RHINET_HW_WIRE_H
#define RHINET_HW_WIRE_H

#include "hw_common.h"

#define RHN_WIRE_MAGIC 0x4e52 /* "RN" in memory order */
#define RHN_WIRE_VERSION 1
#define RHN_WIRE_MTU 4096 /* max payload bytes of one DATA frame */
#define RHN_NODE_BROADCAST 0xffffu
#define RHN_NODE_MCAST_FIRST 0xf000u /* 0xf000..0xfffe: switch groups */
#define RHN_MAX_NODES 0xf000u
/*
 * The switch groups are split: 0xf000..0xf7ff are the administrator's
 * (static patterns set on the switch's control socket, simultaneous
 * multicast), 0xf800..0xfffe belong to verbs UD multicast: a group ID
 * there is a hash of the MGID (rhn_mgid_group), so every node computes the
 * same one without coordination, and ports join and leave it by
 * management frames (RHN_PKT_MGMT).
 */
#define RHN_NODE_MCAST_UD_FIRST 0xf800u
#define RHN_MCAST_UD_GROUPS (RHN_NODE_BROADCAST - RHN_NODE_MCAST_UD_FIRST)

enum rhn_pkt_type {
	RHN_PKT_DATA = 1, /* sequenced: carries an operation */
	RHN_PKT_ACK = 2, /* unsequenced: cumulative ack */
	RHN_PKT_NAK = 3, /* unsequenced: gap seen, resend from ack_seq */
	RHN_PKT_RAW = 4, /* unsequenced: Ethernet frame for the net_device */
	/* unsequenced: switch management (struct rhn_mgmt_msg), between a
	 * NIC and the switch only; the switch consumes it and answers
	 */
	RHN_PKT_MGMT = 5,
	/* unsequenced: an in-switch collective's segment (struct
	 * rhn_coll_frame), between a NIC and the switch only
	 */
	RHN_PKT_COLL = 6,
};

/*
 * A management frame: the transport header (type RHN_PKT_MGMT, seq,
 * session, ack fields 0, both CRCs as for any frame) and this payload.
 * A NIC sends JOIN or LEAVE with dst_node = RHN_NODE_BROADCAST and
 * src_node = its node ID, only on its kernel's admin command; the switch
 * adds or removes the port the frame arrived on (never any other) to or
 * from `group`, which must be in the UD sub-range (RHN_NODE_MCAST_UD_FIRST
 * and up; others are refused and counted), and answers on that port with
 * ANSWER: the same cookie, status, and whether the port is a member now.
 * Answers come from src_node RHN_NODE_BROADCAST to the requester's node.
 * Both requests are idempotent; the NIC sends again until an answer
 * reports the membership it wants, so lost, duplicated or reordered
 * frames and answers converge on the last decision.
 */
enum rhn_mgmt_op {
	RHN_MGMT_JOIN = 1,
	RHN_MGMT_LEAVE = 2,
	RHN_MGMT_ANSWER = 3,
};

enum rhn_mgmt_status {
	RHN_MGMT_OK = 0,
	RHN_MGMT_REFUSED = 1, /* not a UD group, or a bad request */
};

struct rhn_mgmt_msg {
	__u8 op; /* enum rhn_mgmt_op */
	__u8 status; /* ANSWER: enum rhn_mgmt_status */
	__le16 group;
	__le32 cookie; /* the NIC's, echoed in the answer */
	__u8 member; /* ANSWER: 1 if the port is in the group now */
	__u8 reserved[7];
};
RHN_ASSERT_SIZE(struct rhn_mgmt_msg, 16);

/*
 * In-switch collectives (RHN_COLL_F_IN_SWITCH): the transport header (type
 * RHN_PKT_COLL, seq, session, ack fields 0, both CRCs) and this header,
 * then the segment's bytes (at most RHN_WIRE_MTU; none for a barrier).
 * A NIC sends with dst_node RHN_NODE_BROADCAST (the switch takes it) and
 * src_node its node ID; the switch answers with src_node
 * RHN_NODE_BROADCAST to that node.
 *  UP (NIC): the node's partial of segment `seg` of collective number `seq`
 *   of communicator `key`, its local ranks already combined. The switch
 *   combines the partials of `nnodes` nodes (the first fills its buffer,
 *   later ones combine into it) and sends DOWN to each; until then it
 *   answers HELD, or BUSY when it has no buffer (the NIC sends again
 *   later). The NIC sends UP again until DOWN, on a timeout, and at a
 *   slow pace while HELD (so a switch that restarted learns it again).
 *  DOWN (switch): the result, or status RHN_SYN_COLL_MISMATCH and no
 *   bytes when the partials' signature, members, nnodes, reduce, type or
 *   length disagree.
 *  ACK (NIC): it has the DOWN; the switch frees the segment when every
 *   contributor acknowledged it (or sent a later collective's UP).
 * Switch buffers are bounded; when they are full a segment of a lower
 * (key, seq, seg) takes the buffer of the highest incomplete one (whose
 * contributors hear BUSY and send again), so the lowest segment any NIC
 * waits for always gets through: no deadlock across communicators.
 */
enum rhn_coll_frame_kind {
	RHN_COLL_FRAME_UP = 1,
	RHN_COLL_FRAME_DOWN = 2,
	RHN_COLL_FRAME_HELD = 3,
	RHN_COLL_FRAME_BUSY = 4,
	RHN_COLL_FRAME_ACK = 5,
};

struct rhn_coll_frame {
	__le32 key; /* RHN_AREA_KEY(group, id) */
	__le32 seq; /* the communicator's collective number */
	__le32 seg; /* segment index */
	__le32 signature; /* rhn_coll_signature(), radix RHN_COLL_RADIX_SWITCH,
			   * XOR rhn_coll_members_hash()
			   */
	__le32 members; /* rhn_coll_nodes_hash() of the communicator's nodes */
	__le16 nnodes; /* nodes whose partials make the result */
	__u8 kind; /* enum rhn_coll_frame_kind */
	__u8 status; /* DOWN: 0 or an rhn_syndrome */
	__u8 reduce; /* enum rhn_coll_reduce */
	__u8 type; /* enum rhn_coll_type */
	__u8 reserved[6];
};
RHN_ASSERT_SIZE(struct rhn_coll_frame, 32);
RHN_ASSERT_OFFSET(struct rhn_coll_frame, nnodes, 20);

/*
 * FNV-1a (32-bit) over a communicator's node IDs (2 bytes each, little
 * end first) in the order of their first rank: partials of communicators
 * that share a key but not their nodes never combine.
 */
static inline __u32 rhn_coll_nodes_hash(const __u16 *nodes, __u32 n)
{
	__u32 h = 2166136261u;
	__u32 i;

	for (i = 0; i < n; i++) {
		h = (h ^ (nodes[i] & 0xffu)) * 16777619u;
		h = (h ^ (nodes[i] >> 8)) * 16777619u;
	}
	return h;
}

/*
 * A GID is multicast when it is an IB/IPv6 multicast GID (ff00::/8) or an
 * IPv4-mapped multicast address (::ffff:224.0.0.0/100), as rdma_cm makes
 * for RoCE joins.
 */
static inline int rhn_gid_is_mcast(const __u8 *gid)
{
	int i;

	if (gid[0] == 0xff)
		return 1;
	for (i = 0; i < 10; i++)
		if (gid[i])
			return 0;
	return gid[10] == 0xff && gid[11] == 0xff && (gid[12] & 0xf0) == 0xe0;
}

/*
 * The switch group of a multicast GID: FNV-1a over its 16 bytes, folded
 * into the UD sub-range. Senders address it, receivers join it; two MGIDs
 * on one group only share bandwidth (receivers filter by the GRH's GID).
 */
static inline __u16 rhn_mgid_group(const __u8 *mgid)
{
	__u32 h = 2166136261u;
	int i;

	for (i = 0; i < 16; i++) {
		h ^= mgid[i];
		h *= 16777619u;
	}
	return (__u16)(RHN_NODE_MCAST_UD_FIRST + h % RHN_MCAST_UD_GROUPS);
}

enum rhn_pkt_flags {
	/* First packet of a new session: the receiver adopts seq. */
	RHN_PKT_F_SYN = 1u << 0,
	/* The sender wants an ACK soon (window filling or idle). */
	RHN_PKT_F_ACK_REQ = 1u << 1,
	/* DATA: ack_session/ack_seq carry a piggybacked acknowledgement. */
	RHN_PKT_F_ACK_VALID = 1u << 2,
	/* NAK: the receiver has no state for the sender's session (it was
	 * reset); the sender must fail what is outstanding and resync.
	 */
	RHN_PKT_F_RESYNC = 1u << 3,
	/* NAK: a SYN of an older session than the receiver's current one
	 * from this sender, while that one is not quiet (the sender was
	 * powered on again in an earlier epoch). ack_seq carries the
	 * receiver's session; the sender moves its stream to the next one.
	 */
	RHN_PKT_F_BEHIND = 1u << 4,
};

/*
 * Transport header. Header length follows from the type: DATA frames are
 * RHN_DATA_HDR_LEN bytes of headers, all others RHN_PKT_HDR_LEN.
 * session/seq: DATA = the sender's session and this packet's serial;
 * ACK/NAK = the sender's session and next serial towards the receiver, so
 * the receiver knows which reverse-direction packets were sent before this
 * ACK (responses such as NAKs must be seen before the operations they
 * answer complete). ack_session/ack_seq: every serial below ack_seq of the
 * receiver's stream ack_session arrived in order (valid on ACK, NAK and on
 * DATA with RHN_PKT_F_ACK_VALID).
 */
struct rhn_pkt_hdr {
	__le16 magic;
	__u8 version;
	__u8 type; /* enum rhn_pkt_type */
	__le16 dst_node;
	__le16 src_node;
	__le32 seq;
	__le32 ack_seq;
	__le16 session; /* sender's session, changes on channel reset */
	__le16 flags; /* enum rhn_pkt_flags */
	__le16 payload_len; /* bytes after the headers (DATA, RAW only) */
	__le16 ack_session; /* session of the stream ack_seq refers to */
	__le32 payload_crc; /* CRC32C of the payload, 0 if empty */
	__le32 hdr_crc; /* CRC32C of all headers with this field zero */
};
RHN_ASSERT_SIZE(struct rhn_pkt_hdr, 32);
RHN_ASSERT_OFFSET(struct rhn_pkt_hdr, dst_node, 4);
RHN_ASSERT_OFFSET(struct rhn_pkt_hdr, hdr_crc, 28);

enum rhn_wire_op {
	/* Requests, requester -> responder */
	RHN_WOP_SEND = 1,
	RHN_WOP_WRITE = 2,
	RHN_WOP_READ_REQ = 3,
	RHN_WOP_FETCH_ADD = 4,
	RHN_WOP_CMP_SWAP = 5,
	/* NIC to NIC: a firmware-originated message (enum rhn_fw_msg in
	 * rkey; dst_qpn = src_qpn = RHN_WIRE_QPN_FIRMWARE; msn = the sender's
	 * message handle). Acknowledged by the channel like any request.
	 */
	RHN_WOP_FW = 6,
	/* An isend: one packet carrying the tag in remote_addr and
	 * the message length in msg_len, with the data if the message is at
	 * most RHN_TAG_EAGER_MAX bytes (payload_len == msg_len), without it
	 * otherwise (a request to send). Answered by RHN_WOP_TAG_RESP.
	 */
	RHN_WOP_TAG = 7,
	/* The data of an isend, sent by the sender's NIC after a CTS: rkey =
	 * the receive handle the CTS named, msn = the isend's, msg_offset
	 * and msg_len as for a READ answer. With LAST and a syndrome: the
	 * sender gave the message up (its endpoint went away), no data.
	 */
	RHN_WOP_TAG_DATA = 8,
	/* Remote pin-down: addressed like a READ_REQ (rkey or
	 * area, remote_addr, msg_len = bytes), no payload. PD_REQ is
	 * answered by RHN_WOP_PD_REPLY once the range is pinned and held;
	 * PD_RELEASE by the channel's ACK.
	 */
	RHN_WOP_PD_REQ = 9,
	RHN_WOP_PD_RELEASE = 10,
	/* Locks and barriers, to the manager endpoint: the ID in
	 * remote_addr. LOCK and BARRIER (count in imm_data) have no payload;
	 * UNLOCK carries a struct rhn_wire_unlock naming whom the holder's
	 * NIC passed the lock to. Answered by RHN_WOP_SYNC_RESP.
	 */
	RHN_WOP_LOCK = 11,
	RHN_WOP_UNLOCK = 12,
	RHN_WOP_BARRIER = 13,
	/* Shared regions. SHARE_REQ goes to the home endpoint
	 * (area key in rkey, the region's offset in remote_addr, msg_len =
	 * its length, no payload), imm_data = enum rhn_share_req: SUBSCRIBE
	 * is answered by RHN_WOP_SHARE_DATA once every member has added the
	 * newcomer; UNSUBSCRIBE by the channel's ACK.
	 * SHARE_UPDATE is a WRITE by area to a member (its packets as a
	 * WRITE's, partial modes included) with imm_data = the sender's
	 * update number for the region (1, 2, ...), the same for every
	 * member of one update.
	 */
	RHN_WOP_SHARE_REQ = 14,
	RHN_WOP_SHARE_UPDATE = 15,
	/* Responses, responder -> requester */
	RHN_WOP_READ_RESP = 16,
	RHN_WOP_ATOMIC_RESP = 17, /* payload: the original value (or none) */
	RHN_WOP_NAK = 18, /* syndrome says why; RHN_SYN_RNR: retry later */
	/* The receiving NIC's answer to an RHN_WOP_TAG: imm_data = enum
	 * rhn_tag_answer; a CTS carries the receive handle in rkey and the
	 * bytes the receive takes in msg_len.
	 */
	RHN_WOP_TAG_RESP = 19,
	RHN_WOP_PD_REPLY = 20, /* the pages of a PD_REQ are pinned, held */
	/* Rendezvous data of a TM SRQ (RHN_FW_TM_PULL): sent by the NIC of
	 * the QP whose memory is read, like a READ answer (it waits for no
	 * window reserve and no receive) but answering no message: dst_qpn /
	 * src_qpn = the two QPs with their incarnations, rkey = the handle
	 * the pull named, msg_offset / msg_len as for a READ answer. With
	 * LAST and a syndrome: the read failed (no data).
	 */
	RHN_WOP_TM_DATA = 21,
	/* The manager's answer to LOCK, UNLOCK, BARRIER: imm_data = enum
	 * rhn_sync_answer
	 */
	RHN_WOP_SYNC_RESP = 22,
	/* Simultaneous multicast (RHN_OP_MCAST_SWITCH), outside the node
	 * channels: each (sender, group) pair is a stream of its own, see
	 * "Simultaneous multicast" in wire.md. MCAST_DATA is a WRITE by area
	 * (op header as for RHN_WOP_WRITE, partial-mode flags included) with
	 * dst_qpn = the group's node ID; the transport header's seq is the
	 * stream's serial, session the stream's session and ack_seq the
	 * stream's floor (every serial below it was acknowledged by every
	 * member). dst_node is the group (the switch copies the frame to its
	 * members) or, for a repair, one member's node.
	 */
	RHN_WOP_MCAST_DATA = 25,
	/* A member's cumulative acknowledgement of a stream, to the sender:
	 * ack_seq = the next serial it expects, session = the stream's,
	 * dst_qpn = the group. syndrome != 0: the member refused the packet
	 * with serial msn (no area, bounds, no endpoint); it is counted as
	 * received, and the member refuses no other packet until the floor
	 * has passed that one (so the report cannot be overtaken).
	 * imm_data bit 0 (RHN_MCAST_ACK_GAP): a later serial arrived first,
	 * resend from ack_seq now.
	 */
	RHN_WOP_MCAST_ACK = 26,
	/* 27: reserved for simultaneous multicast */
	/* A remote increment of a trigger counter (RHN_OP_TRIGGER_ADD): one
	 * packet, payload a struct rhn_wire_trigger_add, to the connected QP
	 * or the addressed endpoint. Answered by RHN_WOP_TRIGGER_RESP
	 * (payload: the counter's 8-byte value before the add), or a NAK
	 * RHN_SYN_BAD_REMOTE_TRIGGER when the handle and key name no live
	 * counter of the target QP's context. Executed once: the channel
	 * delivers each request once and keeps the answer until it is
	 * acknowledged, as for the atomics.
	 */
	RHN_WOP_TRIGGER_ADD = 28,
	RHN_WOP_TRIGGER_RESP = 29,
	/* An extended atomic (RHN_OP_ATOMIC_EXT): addressed and with the
	 * payload of RHN_WOP_FETCH_ADD (compare_add, swap), imm_data = the
	 * WQE's enum rhn_atomic_op | RHN_AOP_F_*. Answered by
	 * RHN_WOP_ATOMIC_RESP carrying the original value in the word's width
	 * (4 or 8 bytes), or no payload with RHN_AOP_F_NO_FETCH.
	 */
	RHN_WOP_ATOMIC_EXT = 30,
	/* A UD SEND to a multicast group (dst_node in the UD sub-range) is an
	 * RHN_WOP_SEND with dst_qpn RHN_WIRE_QPN_MASK, sent outside the node
	 * channels: seq, session and the ack fields are 0, no ACK, no resend.
	 */
	/* The home's answer to a SUBSCRIBE: the region's bytes, as a READ
	 * answer (msg_offset, msg_len; LAST ends it). With LAST and a
	 * syndrome: the join failed (no data).
	 */
	RHN_WOP_SHARE_DATA = 23,
};

enum rhn_share_req {
	RHN_SHARE_REQ_SUBSCRIBE = 0,
	RHN_SHARE_REQ_UNSUBSCRIBE = 1,
};

#define RHN_MCAST_ACK_GAP 1u

enum rhn_sync_answer {
	/* granted, passed on or free, barrier complete: the WQE completes */
	RHN_SYNC_DONE = 0,
	/* queued: the WQE completes on RHN_FW_SYNC_DONE (a LOCK when its
	 * predecessor passes the lock, a BARRIER when the round is full, an
	 * UNLOCK whose successor was still being linked when the manager
	 * saw it: once the holder's NIC has passed the lock on)
	 */
	RHN_SYNC_QUEUED = 1,
};

/* The most participants one barrier round has. */
#define RHN_BARRIER_MAX_MEMBERS 1024

/* UNLOCK's payload: the waiter the holder's NIC passed the lock to. */
struct rhn_wire_unlock {
	__le16 successor_node; /* with RHN_UNLOCK_F_PASSED */
	__le16 flags; /* RHN_UNLOCK_F_PASSED: the lock went to the successor */
	__le32 successor_src; /* its endpoint, with incarnation */
	__le32 successor_msn; /* its LOCK's msn */
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_wire_unlock, 16);
#define RHN_UNLOCK_F_PASSED 1u

enum rhn_tag_answer {
	/* matched and delivered: the isend completes */
	RHN_TAG_DONE = 0,
	/* no receive matched: the message waits in the receiver's list */
	RHN_TAG_QUEUED = 1,
	/* a receive matched: send the data (RHN_WOP_TAG_DATA); DONE follows
	 * when the last byte has landed
	 */
	RHN_TAG_CTS = 2,
};

/*
 * Messages of at most this many bytes travel with the isend's packet
 * (eager); longer ones wait for a matching receive (rendezvous). An eager
 * message that finds no receive is not kept: its data is fetched again
 * once a receive matches, so the NIC never buffers payloads.
 */
#define RHN_TAG_EAGER_MAX RHN_WIRE_MTU

enum rhn_wire_op_flags {
	RHN_WOP_F_FIRST = 1u << 0, /* first packet of the message */
	RHN_WOP_F_LAST = 1u << 1, /* last packet of the message */
	RHN_WOP_F_IMM = 1u << 2,
	RHN_WOP_F_SOLICITED = 1u << 3,
	RHN_WOP_F_AREA = 1u << 4, /* rkey is an area ID */
	RHN_WOP_F_SIGNAL = 1u << 5, /* interrupt the receiving host */
	RHN_WOP_F_GRH = 1u << 6, /* UD SEND: payload starts with the GRH */
	/* SEND: rkey is a type 2 window the responder unbinds on delivery */
	RHN_WOP_F_INV = 1u << 7,
	/* WRITE (GRH's bit, which only a UD SEND uses): the payload starts
	 * with a struct rhn_write_stride and holds whole blocks, block i
	 * landing at remote_addr + i * remote_stride (a strided PUSH of
	 * small blocks packs many into one packet)
	 */
	RHN_WOP_F_STRIDED = RHN_WOP_F_GRH,
	/* WRITE (INV's bit, which only a SEND uses): the payload is a run
	 * list, struct rhn_write_runs, then `count` struct rhn_write_run,
	 * then the runs' bytes back to back (a DIFF PUSH packs the runs of
	 * changed bytes this way)
	 */
	RHN_WOP_F_RUNS = RHN_WOP_F_INV,
	/* TAG_DATA (INV's bit too): the isend selects bytes (BITMAP, DIFF);
	 * a packet may start past the previous one's end, and the bytes
	 * between are not sent: the receiver leaves them as they were
	 */
	RHN_WOP_F_SPARSE = RHN_WOP_F_INV,
};

/*
 * Run i starts `skip` bytes after the end of run i - 1 (run 0: after
 * remote_addr) and is `length` (>= 1) bytes long; bytes between runs are
 * not written.
 */
struct rhn_write_runs {
	__le16 count; /* >= 1 */
	__le16 reserved;
};

struct rhn_write_run {
	__le16 skip;
	__le16 length;
};

struct rhn_write_stride {
	__le32 block;
	__le32 reserved;
	__le64 remote_stride;
};

/*
 * The GRH of a UD SEND, in InfiniBand's byte order (big-endian): version 6,
 * traffic class and flow label; payload length; next header 0x1b; hop
 * limit; source and destination GID. It counts in payload_len and msg_len.
 */
#define RHN_WIRE_GRH_LEN 40

/*
 * A requester's src_qpn carries the QP's incarnation in its high byte (it
 * changes on every create and RESET); responses echo it in dst_qpn, so an
 * answer to a QP's previous life is told apart from one to its new life.
 */
#define RHN_WIRE_QPN_MASK 0x00ffffffu
#define RHN_WIRE_INCARNATION_SHIFT 24
/* The NIC's own endpoint for firmware messages (no QP has this number). */
#define RHN_WIRE_QPN_FIRMWARE 0x00ffffffu

/* Firmware message kinds (RHN_WOP_FW). */
enum rhn_fw_msg {
	RHN_FW_PING = 1, /* no payload: the channel's ACK is the answer */
	/* The pages a request was refused for (NAK RHN_SYN_PINNING)
	 * are pinned, or will not be: payload struct rhn_fw_pin_ready; the
	 * requester sends that QP's refused messages to this node again.
	 */
	RHN_FW_PIN_READY = 2,
	/* tag matching: struct rhn_fw_tm_pull, struct rhn_fw_tm_fin */
	RHN_FW_TM_PULL = 3,
	RHN_FW_TM_FIN = 4,
	/* locks and barriers: struct rhn_fw_lock_link, struct rhn_fw_sync_done */
	RHN_FW_LOCK_LINK = 5,
	RHN_FW_SYNC_DONE = 6,
	/* shared regions: struct rhn_fw_share (ADD, ADDED, REMOVE),
	 * struct rhn_fw_share_joined, struct rhn_fw_pin_ready (RESEND)
	 */
	/* home -> member: add `member` */
	RHN_FW_SHARE_ADD = 7,
	/* member -> home: added; `seq` = the first update that goes to it */
	RHN_FW_SHARE_ADDED = 8,
	/* joining member -> a sender it refused: send that QP's refused
	 * messages to it again (the data is in)
	 */
	RHN_FW_SHARE_RESEND = 9,
	/* home -> newcomer: the directory, the updates the data holds */
	RHN_FW_SHARE_JOINED = 13,
	/* home -> members: drop `member` (RHN_FW_SHARE_F_GONE: the region
	 * ended, its home endpoint went away); member -> home: `member` (the
	 * sender's endpoint) left without an UNSUBSCRIBE (destroyed)
	 */
	RHN_FW_SHARE_REMOVE = 14,
	/* Collectives (ops/coll): one segment of one collective, between
	 * the NICs of a communicator's nodes. imm_data = the communicator
	 * (the WQE's remote_key), remote_addr = seq << 32 | segment,
	 * msg_offset = rhn_coll_signature() of the sender's collective XOR
	 * its rhn_coll_members_hash() (a receiver whose own differs fails
	 * it: RHN_SYN_COLL_MISMATCH; so a segment of another life of the key
	 * is never combined); the payload is the segment's bytes (up to
	 * RHN_WIRE_MTU). UP: a partial result towards the segment's root;
	 * DOWN: the result from it (REDUCE: empty, it releases the segment).
	 * NAK RHN_SYN_COLL_NOT_READY: sent again later.
	 */
	RHN_FW_COLL_UP = 15,
	RHN_FW_COLL_DOWN = 16,
	/* the collective `seq` of the communicator failed at the sender's
	 * node (imm_data, remote_addr as above; msg_offset = the syndrome;
	 * payload struct rhn_fw_coll_life): it fails at every node of that
	 * life
	 */
	RHN_FW_COLL_ABORT = 17,
	/* the sender refused segments of collective `seq` with NOT_READY
	 * and is ready for them now (it started that collective, or freed
	 * segment buffers): imm_data, remote_addr as above, payload struct
	 * rhn_fw_coll_life; the receiver sends its refused segments again at
	 * once
	 */
	RHN_FW_COLL_READY = 18,
};

/*
 * A collective's signature: FNV-1a (32-bit) over its parameters as eight
 * u32 in this order: op, reduce, type, the radix and the segment size the
 * NIC uses (after its choices for 0), the root rank, nranks, length. Every
 * segment carries it, so ranks that disagree in any of them (a length
 * that differs only in the last segment included) are found at the first
 * segment that meets another node's.
 */
static inline __u32 rhn_coll_signature(__u32 op, __u32 reduce, __u32 type,
				       __u32 radix, __u32 seg_size, __u32 root,
				       __u32 nranks, __u32 length)
{
	const __u32 p[8] = {op,	      reduce, type,   radix,
			    seg_size, root,   nranks, length};
	__u32 h = 2166136261u;
	int i, b;

	for (i = 0; i < 8; i++)
		for (b = 0; b < 32; b += 8)
			h = (h ^ ((p[i] >> b) & 0xffu)) * 16777619u;
	return h;
}

/*
 * A communicator's life: FNV-1a (32-bit) over its member list in rank
 * order, each rank as its node ID (2 bytes) and its endpoint's QPN
 * without the incarnation bits (3 bytes), little end first. Start from
 * RHN_COLL_MEMBERS_HASH_INIT and add the ranks one by one. Every node
 * of a communicator computes the same from the same list; a later job on
 * the same key has new endpoints, so another value, and nothing of the
 * earlier job's (an ABORT, a READY, a segment) is taken for the new one's.
 */
#define RHN_COLL_MEMBERS_HASH_INIT 2166136261u
static inline __u32 rhn_coll_members_hash_add(__u32 h, __u16 node, __u32 qpn)
{
	const __u32 b[5] = {node & 0xffu, (__u32)node >> 8, qpn & 0xffu,
			    (qpn >> 8) & 0xffu, (qpn >> 16) & 0xffu};
	int i;

	for (i = 0; i < 5; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/*
 * The payload of RHN_FW_COLL_ABORT and RHN_FW_COLL_READY: the
 * communicator life the message is about. A receiver whose communicator
 * of that key has another life ignores it (RHN_CNT_STALE_PACKETS).
 */
struct rhn_fw_coll_life {
	__le32 members; /* the sender's rhn_coll_members_hash() */
	__le16 flags; /* RHN_FW_COLL_F_* */
	__le16 reserved;
};
RHN_ASSERT_SIZE(struct rhn_fw_coll_life, 8);
/* ABORT: a member endpoint on the sender's node is gone; every collective
 * of that life from `seq` on fails, and the sender needs no ABORT back.
 */
#define RHN_FW_COLL_F_GONE 1u

/* The region of `qpn` (the receiving NIC's endpoint, with incarnation)
 * with this area key and home; `member` the endpoint added or removed.
 */
struct rhn_fw_share {
	__le32 area_key;
	__le32 qpn;
	__le32 home_qpn;
	__le16 home_node;
	__le16 member_node;
	__le32 member_qpn;
	__le32 seq; /* ADDED: the first update number that goes to member */
	__le32 flags; /* RHN_FW_SHARE_F_* */
	__le32 from_qpn; /* ADDED: the member endpoint that answers */
};
RHN_ASSERT_SIZE(struct rhn_fw_share, 32);
#define RHN_FW_SHARE_F_NOT_MEMBER 1u /* ADDED: the region was not here */
#define RHN_FW_SHARE_F_GONE 2u /* REMOVE: the region ended */

/* The most members of one shared region (its directory, home included). */
#define RHN_SHARE_MAX_MEMBERS 16

/* A member of a region and the last of its updates in the data. */
struct rhn_share_member {
	__le16 node;
	__le16 reserved;
	__le32 qpn; /* with incarnation */
	__le32 seq;
};
RHN_ASSERT_SIZE(struct rhn_share_member, 12);

/* To the newcomer `qpn` before its data: the directory (home included,
 * newcomer not), each member with the last of its updates the data
 * holds: the newcomer applies from that member only updates numbered
 * above it.
 */
struct rhn_fw_share_joined {
	__le32 area_key;
	__le32 qpn;
	__le32 home_qpn;
	__le16 home_node;
	__le16 count;
	struct rhn_share_member members[RHN_SHARE_MAX_MEMBERS];
};
RHN_ASSERT_SIZE(struct rhn_fw_share_joined, 16 + 12 * RHN_SHARE_MAX_MEMBERS);

/*
 * The manager queued a LOCK behind `holder` (the queue's tail until now):
 * holder's NIC passes the lock to (successor_node, successor_src,
 * successor_msn) when holder UNLOCKs, or at once if it already did.
 */
struct rhn_fw_lock_link {
	__le64 lock_id;
	__le16 manager_node;
	__le16 successor_node;
	__le32 manager_qpn;
	__le32 holder_qpn; /* the tail's endpoint, with incarnation */
	__le32 successor_src; /* with incarnation */
	__le32 successor_msn;
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_fw_lock_link, 32);

/*
 * Completes a queued LOCK, UNLOCK or BARRIER of endpoint `qpn` whose
 * message had msn `msn`: with syndrome RHN_SYN_NONE the lock is granted
 * (or passed on, or the barrier round is full), otherwise the operation
 * failed (RHN_SYN_MEMBER_LOST).
 */
struct rhn_fw_sync_done {
	__le32 qpn; /* with incarnation */
	__le32 msn;
	__le64 id; /* the lock's or barrier's */
	__u8 syndrome;
	__u8 reserved[7];
};
RHN_ASSERT_SIZE(struct rhn_fw_sync_done, 24);

struct rhn_fw_pin_ready {
	__le32 qpn; /* the requester's QP (src_qpn of the refused request) */
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_fw_pin_ready, 8);

/*
 * Tag matching (ibverbs IBV_SRQT_TM): the headers an application puts at
 * the start of a SEND to an RC QP whose SRQ is a TM SRQ, in its byte
 * order (big-endian), as rdma-core's <infiniband/tm_types.h>. A
 * rendezvous request is a struct rhn_tmh, a struct rhn_rvh, and possibly
 * more bytes, at most RHN_TM_MAX_RNDV_HDR in all.
 */
enum rhn_tmh_op {
	RHN_TMH_NO_TAG = 0, /* not for matching: to a receive WQE */
	RHN_TMH_RNDV = 1, /* rendezvous: the data is at the rvh's address */
	RHN_TMH_FIN = 2, /* the receiver has read a rendezvous' data */
	RHN_TMH_EAGER = 3, /* the data follows the header */
};

struct rhn_tmh {
	__u8 opcode; /* enum rhn_tmh_op */
	__u8 reserved[3];
	__be32 app_ctx; /* the application's, echoed in CQEs and the FIN */
	__be64 tag;
};
RHN_ASSERT_SIZE(struct rhn_tmh, 16);

struct rhn_rvh {
	__be64 va; /* the data in the sender's memory */
	__be32 rkey; /* readable through the sender's QP */
	__be32 len;
};
RHN_ASSERT_SIZE(struct rhn_rvh, 16);
#define RHN_TM_MAX_RNDV_HDR 64

/*
 * A TM SRQ matched a rendezvous header: the receiving NIC asks the
 * sender's NIC (RHN_FW_TM_PULL) to stream `len` bytes at (rkey, va),
 * checked as a READ through QP `qpn`, back to QP `src_qpn` as
 * RHN_WOP_TM_DATA naming `handle`. Refused with a NAK (the READ's
 * syndromes; BUSY: no stream free, asked again later).
 */
struct rhn_fw_tm_pull {
	__le32 qpn; /* the sender's QP, with its incarnation */
	__le32 src_qpn; /* the receiving QP, with its incarnation */
	__le32 handle; /* the receiving NIC's, echoed in RHN_WOP_TM_DATA */
	__le32 rkey;
	__le64 va;
	__le32 len;
	__le32 reserved;
};
RHN_ASSERT_SIZE(struct rhn_fw_tm_pull, 32);

/*
 * The data is in place: the sender's QP `qpn` receives `tmh` (opcode
 * RHN_TMH_FIN, app_ctx and tag of the rendezvous header) as a 16-byte
 * message from `src_qpn`, through a receive WQE as if it had been sent.
 * NAK RNR: no receive WQE, sent again later.
 */
struct rhn_fw_tm_fin {
	__le32 qpn; /* the sender's QP, with its incarnation */
	__le32 src_qpn; /* the receiving QP */
	struct rhn_tmh tmh;
};
RHN_ASSERT_SIZE(struct rhn_fw_tm_fin, 24);
/* The most payload one firmware message carries. */
#define RHN_FW_MSG_MAX 256
RHN_STATIC_ASSERT(sizeof(struct rhn_fw_share_joined) <= RHN_FW_MSG_MAX,
		  "a region's directory fits in one firmware message");

/*
 * Operation header. For requests dst_qpn is the responder's QP/endpoint and
 * src_qpn the requester's; responses swap them. msn numbers the requester
 * QP's messages, so responses and NAKs name the message they answer.
 * remote_addr is the address (or area offset) of this packet's first byte;
 * READ_REQ and atomics carry the whole request in one packet (atomic
 * operands in the payload: compare_add, swap).
 */
struct rhn_op_hdr {
	__u8 opcode; /* enum rhn_wire_op */
	__u8 flags; /* enum rhn_wire_op_flags */
	__u8 syndrome; /* NAK: enum rhn_syndrome */
	__u8 qp_type; /* requester's enum rhn_qp_type */
	__le32 dst_qpn;
	__le32 src_qpn;
	__le32 msn;
	/* rkey, area ID, the Q_Key of a UD SEND, or the XRC SRQ number
	 * (with incarnation) of a SEND from an RHN_QP_XRC_SEND QP
	 */
	__le32 rkey;
	__le32 imm_data;
	__le64 remote_addr;
	__le32 msg_len; /* total message (READ: requested) length */
	__le32 msg_offset; /* offset of this packet's payload */
};
RHN_ASSERT_SIZE(struct rhn_op_hdr, 40);

/* RHN_WOP_TRIGGER_ADD's payload. */
struct rhn_wire_trigger_add {
	__le64 addend;
	__le32 handle; /* the counter, as RHN_ADMIN_CREATE_TRIGGER gave it */
	__le32 key; /* its key */
};
RHN_ASSERT_SIZE(struct rhn_wire_trigger_add, 16);
RHN_ASSERT_OFFSET(struct rhn_wire_trigger_add, key, 12);

/*
 * A partial PULL: its READ_REQ carries imm_data = the mode
 * (enum rhn_xfer_mode, 0 for a plain READ) and this descriptor as its
 * payload; the responder streams only what it selects, each READ_RESP's
 * msg_offset saying where its bytes go. msg_offset of the request is
 * where its range starts in the message; only the request marked
 * RHN_WOP_F_LAST ends the message (its last answer is marked LAST, empty
 * if nothing is left to send).
 * STRIDE: msg_len = block * count; message byte o is at remote_addr +
 * (o / block) * remote_stride + o % block.
 * BITMAP: msg_len bytes from remote_addr; the bitmap bits follow this
 * struct, bit i (LSB first) marking bytes [i * block, (i + 1) * block).
 */
struct rhn_read_xfer {
	__le32 block;
	__le32 reserved;
	__le64 remote_stride;
};
RHN_ASSERT_SIZE(struct rhn_read_xfer, 16);
RHN_ASSERT_SIZE(struct rhn_write_stride, 16);
RHN_ASSERT_SIZE(struct rhn_write_runs, 4);
RHN_ASSERT_SIZE(struct rhn_write_run, 4);
/* Blocks one bitmap READ request covers. */
#define RHN_READ_BITMAP_BLOCKS (8 * (RHN_WIRE_MTU - 16))
/* The most blocks a BITMAP isend selects from (its bits travel in no packet,
 * but the sending NIC holds them in a READ bitmap slot while it streams).
 */
#define RHN_TAG_BITMAP_BLOCKS RHN_READ_BITMAP_BLOCKS

#define RHN_PKT_HDR_LEN 32
#define RHN_DATA_HDR_LEN (RHN_PKT_HDR_LEN + 40)
#define RHN_MAX_FRAME (RHN_DATA_HDR_LEN + RHN_WIRE_GRH_LEN + RHN_WIRE_MTU)

#endif /* RHINET_HW_WIRE_H */
