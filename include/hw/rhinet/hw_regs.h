/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: PCI identity, BAR0 registers, doorbell pages,
 * MSI-X vectors and hardware counters. Described in
 * Documentation/hardware/registers.md.
 */
#ifndef RHINET_HW_REGS_H
#define RHINET_HW_REGS_H

#include "hw_common.h"

/* PCI identity: QEMU's test vendor ID with a device ID we own. */
#define RHN_PCI_VENDOR_ID 0x1234
#define RHN_PCI_DEVICE_ID 0x4e47 /* "NG" */
#define RHN_PCI_CLASS 0x0200 /* network controller, Ethernet */
#define RHN_PCI_REVISION 0x01

/* BARs */
#define RHN_BAR_REGS 0 /* control/status registers, kernel only */
#define RHN_BAR_REGS_SIZE 0x2000
#define RHN_BAR_DOORBELL 2 /* one page per user context */
#define RHN_BAR_MSIX 4
#define RHN_DB_PAGE_SHIFT 12
#define RHN_DB_PAGE_SIZE (1u << RHN_DB_PAGE_SHIFT)

#define RHN_VERSION_MAJOR 1
#define RHN_VERSION_MINOR 0
#define RHN_VERSION ((RHN_VERSION_MAJOR << 16) | RHN_VERSION_MINOR)

/* BAR0 register offsets. 32-bit registers unless named _LO/_HI or "64". */
enum rhn_reg {
	RHN_REG_VERSION = 0x000, /* RO: major << 16 | minor */
	RHN_REG_CAPS = 0x004, /* RO: enum rhn_cap bits */
	RHN_REG_NODE_ID = 0x008, /* RO: fabric node ID (low 16 bits) */
	RHN_REG_STATUS = 0x00c, /* RO: enum rhn_status bits */
	RHN_REG_CONTROL = 0x010, /* RW: enum rhn_control bits */
	RHN_REG_DB_PAGES = 0x014, /* RO: number of doorbell pages */
	RHN_REG_MSIX_VECTORS = 0x018, /* RO: number of MSI-X vectors */
	RHN_REG_MTU = 0x01c, /* RO: max payload bytes per packet */
	RHN_REG_MAC_LO = 0x020, /* RO: MAC bytes 0..3 */
	RHN_REG_MAC_HI = 0x024, /* RO: MAC bytes 4..5 */
	RHN_REG_ADMIN_SQ_BASE = 0x040, /* RW 64: bus address, 4 KiB aligned */
	RHN_REG_ADMIN_CQ_BASE = 0x048, /* RW 64: bus address, 4 KiB aligned */
	RHN_REG_ADMIN_LOG_DEPTH = 0x050, /* RW: log2 entries of both rings */
	RHN_REG_ADMIN_SQ_TAIL = 0x054, /* WO: producer index (kick) */
	RHN_REG_EQ_DOORBELL = 0x060, /* WO 64: see RHN_EQ_DB_* */
	RHN_REG_COUNTERS = 0x1000, /* RO 64 each: enum rhn_counter */
};

enum rhn_cap {
	RHN_CAP_RC = 1u << 0,
	RHN_CAP_UD = 1u << 1,
	RHN_CAP_ENDPOINT = 1u << 2, /* reliable connectionless endpoint */
	RHN_CAP_SRQ = 1u << 3,
	RHN_CAP_ATOMIC = 1u << 4, /* fetch-add, compare-swap, 8 bytes */
	RHN_CAP_AREA = 1u << 5, /* area ID + offset addressing */
	RHN_CAP_INLINE_DB = 1u << 6, /* WQE written into the doorbell page */
	RHN_CAP_STATUS_WORD = 1u << 7,
	RHN_CAP_RAW_ETH = 1u << 8, /* Ethernet frames for the net_device */
	/* endpoints match isends against irecvs (RHN_OP_ISEND, tag RQs) */
	RHN_CAP_TAG = 1u << 9,
	/* remote pin-down (004 2.5): on-demand MRs, PD_REQUEST/RELEASE */
	RHN_CAP_PIN_ON_DEMAND = 1u << 10,
	/* TM SRQs: ibverbs tag matching on RC QPs, rendezvous included */
	RHN_CAP_TM = 1u << 11,
	/* locks and counting barriers (004 2.10): RHN_OP_LOCK/UNLOCK/BARRIER */
	RHN_CAP_SYNC = 1u << 12,
	/* sequential multicast: RHN_OP_MCAST_LIST */
	RHN_CAP_MCAST_LIST = 1u << 13,
	/* simultaneous multicast through switch groups: RHN_OP_MCAST_SWITCH */
	RHN_CAP_MCAST_SWITCH = 1u << 14,
	/* shared regions (004 2.9): RHN_OP_SUBSCRIBE/UNSUBSCRIBE/SHARE_UPDATE */
	RHN_CAP_SHARE = 1u << 15,
	/* verbs UD multicast: RHN_ADMIN_ATTACH_MCAST / DETACH_MCAST, UD
	 * datagrams to hashed switch groups, switch joins (RHN_PKT_MGMT)
	 */
	RHN_CAP_UD_MCAST = 1u << 16,
	/* collectives executed by the NICs: RHN_OP_COLLECTIVE */
	RHN_CAP_COLLECTIVE = 1u << 17,
	/* collectives reduced in the switch: RHN_COLL_F_IN_SWITCH */
	RHN_CAP_COLL_SWITCH = 1u << 18,
};

enum rhn_status {
	RHN_STATUS_READY = 1u << 0, /* engine out of reset */
	RHN_STATUS_LINK_UP = 1u << 1,
	RHN_STATUS_FATAL = 1u << 2, /* needs a reset */
	RHN_STATUS_ADMIN_ON = 1u << 3, /* admin queue accepted */
};

enum rhn_control {
	RHN_CONTROL_ENABLE = 1u << 0, /* accept admin queue base/depth */
	RHN_CONTROL_RESET = 1u << 1, /* self-clearing: drop all state */
	RHN_CONTROL_INTR_ENABLE = 1u << 2, /* master MSI-X enable */
};

/*
 * EQ doorbell (64-bit write): consumer index and optional re-arm. The NIC
 * raises the EQ's vector once when a new entry is written to an armed EQ, then
 * disarms it until the next arm.
 */
#define RHN_EQ_DB_CI_MASK 0xffffffffull
#define RHN_EQ_DB_EQN_SHIFT 32
#define RHN_EQ_DB_EQN_MASK 0xffffull
#define RHN_EQ_DB_ARM (1ull << 63)

/*
 * Doorbell page layout (BAR2, page N belongs to context N; page 0 is the
 * kernel's). A write to a kick register only tells the NIC which queue to
 * look at; producer indices live in doorbell records in host memory. A kick
 * naming a queue of another context is ignored and counted.
 */
enum rhn_db_offset {
	RHN_DB_SQ = 0x000, /* 32-bit: qpn | RHN_DB_SQ_INLINE */
	RHN_DB_RQ = 0x008, /* 32-bit: qpn */
	RHN_DB_SRQ = 0x010, /* 32-bit: srqn */
	RHN_DB_CQ_ARM = 0x018, /* 32-bit: cqn | RHN_DB_CQ_SOLICITED */
	RHN_DB_INLINE_WQE = 0x100, /* inline WQE window, 8-byte stores */
};
#define RHN_DB_INLINE_WQE_SIZE 512
#define RHN_DB_QN_MASK 0x00ffffffu
/* The SQ kick also carries a WQE in the inline window: the NIC uses it
 * instead of fetching the WQE when its wqe_index is the next expected one.
 */
#define RHN_DB_SQ_INLINE (1u << 31)
#define RHN_DB_CQ_SOLICITED (1u << 31)
/* The SRQ kick of a TM SRQ: execute the tag-list operations posted. */
#define RHN_DB_SRQ_TM_OPS (1u << 31)

/* MSI-X: vector 0 is the async/admin vector; EQs name their own vector. */
#define RHN_MSIX_ADMIN 0

/* Hardware counters, 64-bit each at RHN_REG_COUNTERS + 8 * index. */
enum rhn_counter {
	RHN_CNT_TX_PACKETS,
	RHN_CNT_RX_PACKETS,
	RHN_CNT_TX_BYTES,
	RHN_CNT_RX_BYTES,
	RHN_CNT_RETRANSMITS, /* packets sent again */
	RHN_CNT_TIMEOUTS, /* retransmission timer expiries */
	RHN_CNT_DUPLICATES, /* received serial already seen */
	RHN_CNT_OUT_OF_ORDER, /* received serial beyond the expected one */
	RHN_CNT_NAKS_SENT,
	RHN_CNT_NAKS_RECEIVED,
	RHN_CNT_ACKS_SENT,
	RHN_CNT_ACKS_RECEIVED,
	RHN_CNT_CRC_ERRORS,
	RHN_CNT_MALFORMED_PACKETS,
	RHN_CNT_RX_DROPS, /* receive FIFO full */
	RHN_CNT_PEER_DEAD, /* retries exhausted towards a node */
	RHN_CNT_TLB_HITS,
	RHN_CNT_TLB_MISSES,
	RHN_CNT_TLB_INVALIDATIONS,
	RHN_CNT_DMA_ERRORS,
	RHN_CNT_BAD_DOORBELLS, /* kicks naming a foreign or invalid queue */
	RHN_CNT_BAD_WQES,
	RHN_CNT_BAD_ADMIN_CMDS,
	RHN_CNT_LOCAL_PROT_ERRORS, /* lkey/bounds/rights failures */
	RHN_CNT_REMOTE_ACCESS_ERRORS, /* rkey/area failures as responder */
	RHN_CNT_REMOTE_INVALID_REQUESTS,
	RHN_CNT_RNR_NAKS_SENT,
	RHN_CNT_RNR_RETRIES,
	RHN_CNT_CQ_OVERFLOWS,
	RHN_CNT_KICK_OVERFLOWS, /* kick FIFO full: NIC rescans queues */
	RHN_CNT_UD_DROPS, /* UD message or raw frame not delivered */
	RHN_CNT_ERROR_CQES,
	RHN_CNT_COMPLETIONS,
	/* packets of an older session or of a QP's previous incarnation */
	RHN_CNT_STALE_PACKETS,
	/* multi-packet receives refused for want of a receive context */
	RHN_CNT_RX_CONTEXT_BUSY,
	/* a context's requests waited for its share of send memory */
	RHN_CNT_SEND_QUOTA_WAITS,
	/* completion events held back while their event queue was full;
	 * each is posted once the driver has made room
	 */
	RHN_CNT_EVENTS_DEFERRED,
	/* UC messages dropped by the responder (UC is not acknowledged) */
	RHN_CNT_UC_DROPS,
	/* requests no QP could take (none, wrong type, state or peer): an
	 * RC requester is not told at once, as on IB (admin.md, timeout)
	 */
	RHN_CNT_NO_QP_REQUESTS,
	/* area keys naming a group the initiator or target is not in */
	RHN_CNT_GROUP_VIOLATIONS,
	RHN_CNT_SIGNALS, /* RHN_CQE_OP_SIGNAL CQEs written */
	/* bytes of partial transfers (bitmap, DIFF) that did not travel */
	RHN_CNT_PARTIAL_BYTES_SKIPPED,
	/* isends that found their receive in the NIC's posted list */
	RHN_CNT_TAG_MATCHED_POSTED,
	/* isends that found none and were queued as unexpected */
	RHN_CNT_TAG_UNEXPECTED,
	/* irecvs that matched a queued message when they were posted */
	RHN_CNT_TAG_MATCHED_UNEXPECTED,
	/* overflow: irecvs left in the host's receive queue while the posted
	 * list (or the context's share of it) was full
	 */
	RHN_CNT_TAG_RECV_WAITS,
	/* overflow: isends refused (sent again later, in order) while the
	 * unexpected list (or the context's share of it) was full
	 */
	RHN_CNT_TAG_REFUSED,
	/* remote pin-down: runs of pages the host was asked to pin (one
	 * RHN_EQE_PD_REQUEST each)
	 */
	RHN_CNT_PIN_EVENTS,
	/* requests refused (resent later) or held while the host pinned */
	RHN_CNT_PIN_HELD,
	/* requests failed because the host would not pin (NOT_PINNED) */
	RHN_CNT_PIN_FAILED,
	/* TM SRQs: tagged messages placed into an entry of the tag list */
	RHN_CNT_TM_EXPECTED,
	/* ... handed to software through a receive WQE (unexpected) */
	RHN_CNT_TM_UNEXPECTED,
	/* rendezvous the NIC read from the sender (IBV_TMH_RNDV matched) */
	RHN_CNT_TM_RNDV_READS,
	/* tag-list operations that failed (RHN_CQE_TM_ERR) */
	RHN_CNT_TM_OP_ERRORS,
	/* locks granted by this NIC as manager, or passed on by it as holder */
	RHN_CNT_LOCK_GRANTS,
	/* LOCKs that had to wait in a queue */
	RHN_CNT_LOCK_WAITS,
	/* barrier rounds this NIC completed as manager */
	RHN_CNT_BARRIER_ROUNDS,
	/* locks and barriers failed (a member lost, not held, no room) */
	RHN_CNT_SYNC_ERRORS,
	/* Simultaneous multicast (RHN_OP_MCAST_SWITCH). Packets this NIC sent
	 * to a switch group, once each (repairs not counted)
	 */
	RHN_CNT_MCAST_SWITCH_PACKETS,
	/* packets it sent again to one member that lagged (unicast repairs) */
	RHN_CNT_MCAST_REPAIRS,
	/* multicast packets it received again as a member and dropped */
	RHN_CNT_MCAST_DUPLICATES,
	/* multicasts refused at post (no such group, not in its endpoint
	 * group), packets it refused as a member (no area, no endpoint), and
	 * frames of groups or senders it has no list for
	 */
	RHN_CNT_MCAST_ERRORS,
	/* members it declared dead (retries ran out) */
	RHN_CNT_MCAST_MEMBERS_LOST,
	/* times an endpoint waited for room in a group's window or for its
	 * context's share of the multicast packet memory
	 */
	RHN_CNT_MCAST_WAITS,
	/* shared regions: joins completed (counted by the newcomer's NIC) */
	RHN_CNT_SHARE_JOINS,
	/* shared-region updates applied by this NIC as a member */
	RHN_CNT_SHARE_UPDATES,
	/* updates refused by a joining member before its data (each is
	 * sent again after the data)
	 */
	RHN_CNT_SHARE_REFUSALS,
	/* updates a member dropped: already in the data it joined with, or
	 * for a region it has left
	 */
	RHN_CNT_SHARE_SKIPPED,
	/* shared-region refusals and failures (bad WQE, no room, member or
	 * home lost), as member and as home
	 */
	RHN_CNT_SHARE_ERRORS,
	/* verbs UD multicast: QPs attached to an MGID (RHN_ADMIN_ATTACH_MCAST
	 * that added an entry)
	 */
	RHN_CNT_MCAST_ATTACHES,
	/* copies of multicast UD datagrams handed to attached QPs (each then
	 * takes a receive WQE or is counted in RHN_CNT_UD_DROPS)
	 */
	RHN_CNT_UD_MCAST_DELIVERED,
	/* multicast UD datagrams no QP of this node is attached to (another
	 * MGID on the same switch group, or a group left) or malformed
	 */
	RHN_CNT_UD_MCAST_FILTERED,
	/* switch management frames sent (joins and leaves, resends included)
	 * and answers from the switch that settled a group
	 */
	RHN_CNT_MCAST_MGMT_SENT,
	RHN_CNT_MCAST_MGMT_ANSWERS,
	/* collectives this NIC completed for its ranks (one per rank's WQE),
	 * segments it combined or passed on, segments a peer NIC was not
	 * ready for (sent again), and collectives that failed
	 */
	RHN_CNT_COLL_DONE,
	RHN_CNT_COLL_SEGMENTS,
	RHN_CNT_COLL_RETRIES,
	RHN_CNT_COLL_ERRORS,
	/* IN_SWITCH collectives: RHN_PKT_COLL frames sent to the switch
	 * (partials, again after a timeout, and acknowledgements)
	 */
	RHN_CNT_COLL_SWITCH_FRAMES,
	RHN_CNT_COUNT
};

RHN_STATIC_ASSERT(RHN_REG_COUNTERS + 8 * RHN_CNT_COUNT <= RHN_BAR_REGS_SIZE,
		  "counters fit in BAR0");

#endif /* RHINET_HW_REGS_H */
