/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: PCI identity, BAR0 registers, doorbell pages,
 * MSI-X vectors and hardware counters. Described in
 * Documentation/hardware/registers.md.
 *
 * Generated from registers.toml by scripts/regmap.py: edit that file, not
 * this one.
 */
#ifndef RHINET_HW_REGS_H
#define RHINET_HW_REGS_H

#include "hw_common.h"

/* PCI identity */
#define RHN_PCI_VENDOR_ID 0x1234 /* QEMU's test vendor ID */
#define RHN_PCI_DEVICE_ID 0x4e47 /* "NG" */
#define RHN_PCI_CLASS 0x0200 /* network controller, Ethernet */
#define RHN_PCI_REVISION 0x01

/* Boards a firmware image is built for (hw_fw.h, board_id). */
/* the QEMU device with the engine in its own process */
#define RHN_BOARD_QEMU 1
/* the QEMU device hosting the firmware on a soft core (core=softcore) */
#define RHN_BOARD_QEMU_SOFTCORE 2
/* Boards' names by ID, as firmware files are named ("": no board). */
#define RHN_BOARD_NAME_LIST "", "qemu", "qemu-softcore"

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

/* BAR0 register offsets. 32-bit registers unless marked "64". */
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
	RHN_REG_BOARD_ID =
		0x028, /* RO: the board (registers.toml's [[board]]) */
	RHN_REG_FW_STATE = 0x02c, /* RO: STATE, HOST_LOADED, PENDING */
	RHN_REG_SERIAL = 0x030, /* RO 64: the card's serial number */
	RHN_REG_FW_RUNNING = 0x038, /* RO: version of the running firmware */
	RHN_REG_FW_STORED = 0x03c, /* RO: version of the firmware in flash */
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
	RHN_CAP_TAG = 1u << 9,
	RHN_CAP_PIN_ON_DEMAND = 1u << 10,
	RHN_CAP_TM = 1u << 11,
	RHN_CAP_SYNC = 1u << 12,
	RHN_CAP_MCAST_LIST = 1u << 13,
	RHN_CAP_MCAST_SWITCH = 1u << 14,
	RHN_CAP_SHARE = 1u << 15,
	RHN_CAP_UD_MCAST = 1u << 16,
	RHN_CAP_COLLECTIVE = 1u << 17,
	RHN_CAP_COLL_SWITCH = 1u << 18,
	RHN_CAP_TRIGGER = 1u << 19,
	RHN_CAP_RQ_RECORD_READ =
		1u << 20, /* RQ posts need a kick only when the record asks */
	RHN_CAP_SQ_DOORBELL_ON_REQUEST =
		1u << 21, /* SQ posts need a kick only when the record asks */
	RHN_CAP_ATOMIC_EXT = 1u
			     << 22, /* swap, fetch, and/or/xor; 4 or 8 bytes */
	RHN_CAP_XRC = 1u << 23,
	RHN_CAP_SQ_EVENT_INDEX =
		1u << 24, /* SQ record carries an event index on request */
	RHN_CAP_WATCH =
		1u << 25, /* RHN_OP_WATCH: a CQE when a PUSH lands in an area */
	RHN_CAP_CQE_RUNS =
		1u
		<< 26, /* a CQE may stand for several completions on request */
};

#define RHN_NODE_ID_VALUE_SHIFT 0
#define RHN_NODE_ID_VALUE_MASK 0xffffu

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

#define RHN_MAC_HI_BYTES_SHIFT 0
#define RHN_MAC_HI_BYTES_MASK 0xffffu

#define RHN_FW_STATE_STATE_SHIFT 0
#define RHN_FW_STATE_STATE_MASK 0xfu
enum rhn_fw_run_state {
	RHN_FW_STATE_NONE = 0,
	RHN_FW_STATE_BOOTING = 1,
	RHN_FW_STATE_RUNNING = 2,
	RHN_FW_STATE_CRASHED = 3,
};
#define RHN_FW_STATE_STATE_NAMES "none", "booting", "running", "crashed"
#define RHN_FW_STATE_HOST_LOADED (1u << 4)
#define RHN_FW_STATE_PENDING (1u << 5)

/*
 * EQ doorbell (64-bit write): consumer index and optional re-arm. The NIC
 * raises the EQ's vector once when a new entry is written to an armed EQ, then
 * disarms it until the next arm.
 */
#define RHN_EQ_DB_CI_SHIFT 0
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
	RHN_DB_TRIGGER =
		0x020, /* 64-bit, one store: handle | addend << 32 (triggered.md) */
	RHN_DB_INLINE_WQE = 0x100, /* inline WQE window, 8-byte stores */
};
#define RHN_DB_INLINE_WQE_SIZE 512
#define RHN_DB_QN_MASK 0x00ffffffu
/* The SQ kick also carries a WQE in the inline window: the NIC uses it
 * instead of fetching the WQE when its wqe_index is the next expected one.
 */
#define RHN_DB_SQ_INLINE (1u << 31)
/* The SRQ kick of a TM SRQ: execute the tag-list operations posted. */
#define RHN_DB_SRQ_TM_OPS (1u << 31)
#define RHN_DB_CQ_SOLICITED (1u << 31)

/* MSI-X: vector 0 is the async/admin vector; EQs name their own vector. */
#define RHN_MSIX_ADMIN 0

/*
 * Hardware counters, 64-bit each at RHN_REG_COUNTERS + 8 * index, in the
 * order of this list: X(id, name, what it counts). The enum and the
 * kernel's port statistics (by name) come from it. New counters go at the
 * end: the index is the ABI.
 */
/* clang-format off */
#define RHN_COUNTERS(X) \
	X(TX_PACKETS, tx_packets, \
	  "frames sent") \
	X(RX_PACKETS, rx_packets, \
	  "frames received") \
	X(TX_BYTES, tx_bytes, \
	  "bytes sent") \
	X(RX_BYTES, rx_bytes, \
	  "bytes received") \
	X(RETRANSMITS, retransmits, \
	  "sequenced packets sent again") \
	X(TIMEOUTS, timeouts, \
	  "retransmission timer expiries") \
	X(DUPLICATES, duplicates, \
	  "received packets whose serial was already accepted") \
	X(OUT_OF_ORDER, out_of_order, \
	  "received packets whose serial is beyond the expected one") \
	X(NAKS_SENT, naks_sent, \
	  "transport NAKs sent") \
	X(NAKS_RECEIVED, naks_received, \
	  "transport NAKs received") \
	X(ACKS_SENT, acks_sent, \
	  "ACKs sent") \
	X(ACKS_RECEIVED, acks_received, \
	  "ACKs received") \
	X(CRC_ERRORS, crc_errors, \
	  "frames dropped for a bad header or payload CRC") \
	X(MALFORMED_PACKETS, malformed_packets, \
	  "frames dropped as malformed (bad magic, version, lengths, fields)") \
	X(RX_DROPS, rx_drops, \
	  "frames dropped because the receive FIFO was full") \
	X(PEER_DEAD, peer_dead, \
	  "times retries towards a node were exhausted") \
	X(TLB_HITS, tlb_hits, \
	  "address translations served by the TLB") \
	X(TLB_MISSES, tlb_misses, \
	  "translations that needed a table walk") \
	X(TLB_INVALIDATIONS, tlb_invalidations, \
	  "TLB entries dropped (DESTROY_MR, INVALIDATE_TLB)") \
	X(DMA_ERRORS, dma_errors, \
	  "host bus errors on DMA") \
	X(BAD_DOORBELLS, bad_doorbells, \
	  "kicks naming a foreign or invalid queue") \
	X(BAD_WQES, bad_wqes, \
	  "malformed WQEs") \
	X(BAD_ADMIN_CMDS, bad_admin_cmds, \
	  "admin commands completed with an error status") \
	X(LOCAL_PROT_ERRORS, local_prot_errors, \
	  "lkey, bounds or rights failures on the local side") \
	X(REMOTE_ACCESS_ERRORS, remote_access_errors, \
	  "rkey or area failures seen as responder") \
	X(REMOTE_INVALID_REQUESTS, remote_invalid_requests, \
	  "invalid requests seen as responder") \
	X(RNR_NAKS_SENT, rnr_naks_sent, \
	  "receiver-not-ready NAKs sent") \
	X(RNR_RETRIES, rnr_retries, \
	  "messages resent after an RNR NAK") \
	X(CQ_OVERFLOWS, cq_overflows, \
	  "CQEs that found their CQ full") \
	X(KICK_OVERFLOWS, kick_overflows, \
	  "times the kick FIFO was full and dropped kicks; the NIC then rescans, and no doorbell of any kind is lost (queue, admin tail, CONTROL, EQ doorbell, CQ arm, trigger add)") \
	X(UD_DROPS, ud_drops, \
	  "UD messages and raw frames dropped: no receive WQE, wrong Q_Key, or no raw QP ready") \
	X(ERROR_CQES, error_cqes, \
	  "CQEs written with a status other than success") \
	X(COMPLETIONS, completions, \
	  "CQEs written") \
	X(STALE_PACKETS, stale_packets, \
	  "packets of an older session, or answers to a QP's previous incarnation, dropped") \
	X(RX_CONTEXT_BUSY, rx_context_busy, \
	  "first packets of multi-packet SENDs answered BUSY: no receive context (or the process's share used up)") \
	X(SEND_QUOTA_WAITS, send_quota_waits, \
	  "times a QP waited because its context held its share of the send-packet memory") \
	X(EVENTS_DEFERRED, events_deferred, \
	  "completion events held back while their event queue was full (posted once the driver made room)") \
	X(UC_DROPS, uc_drops, \
	  "UC messages the responder dropped (bad QP or key, no receive WQE, no receive context): UC tells the requester nothing") \
	X(NO_QP_REQUESTS, no_qp_requests, \
	  "requests that found no QP to take them: none with that number, another type, a state before RTR or in error, or connected to another peer. An RC requester is not told at once: the request fails with `RETRY_EXC_ERR` when its timeout runs out, as on IB (admin.md, MODIFY_QP)") \
	X(GROUP_VIOLATIONS, group_violations, \
	  "area accesses naming a group the initiator (at post) or the target (as responder) is not a member of") \
	X(SIGNALS, signals, \
	  "`RHN_CQE_OP_SIGNAL` CQEs written (put-with-signal)") \
	X(PARTIAL_BYTES_SKIPPED, partial_bytes_skipped, \
	  "bytes of bitmap and DIFF transfers that did not travel, counted by the NIC that would have sent them") \
	X(TAG_MATCHED_POSTED, tag_matched_posted, \
	  "isends that found their receive in the posted list on arrival") \
	X(TAG_UNEXPECTED, tag_unexpected, \
	  "isends that found none and were queued (unexpected)") \
	X(TAG_MATCHED_UNEXPECTED, tag_matched_unexpected, \
	  "irecvs that matched a queued message when the NIC took them") \
	X(TAG_RECV_WAITS, tag_recv_waits, \
	  "overflow: times the posted list (or the context's share) was full with irecvs left in the RQ") \
	X(TAG_REFUSED, tag_refused, \
	  "overflow: isends refused with `RHN_SYN_BUSY` (resent later, in order) while the unexpected list or the context's share was full") \
	X(PIN_EVENTS, pin_events, \
	  "remote pin-down: runs of pages the host was asked to pin (one `RHN_EQE_PD_REQUEST` each)") \
	X(PIN_HELD, pin_held, \
	  "requests refused (resent later) or held while the host pinned") \
	X(PIN_FAILED, pin_failed, \
	  "requests failed because the host would not pin (`NOT_PINNED`)") \
	X(TM_EXPECTED, tm_expected, \
	  "TM SRQs: tagged messages that matched an entry of the tag list (eager placed, or a rendezvous started)") \
	X(TM_UNEXPECTED, tm_unexpected, \
	  "TM SRQs: tagged messages handed to software through a receive WQE (the unexpected count)") \
	X(TM_RNDV_READS, tm_rndv_reads, \
	  "TM SRQs: rendezvous headers the NIC executed (it read the data from the sender)") \
	X(TM_OP_ERRORS, tm_op_errors, \
	  "TM SRQs: tag-list operations that completed with `RHN_CQE_TM_ERR` or another error") \
	X(LOCK_GRANTS, lock_grants, \
	  "locks granted by this NIC as a manager, or passed on by it as a holder's NIC (one per grant over all NICs)") \
	X(LOCK_WAITS, lock_waits, \
	  "LOCKs the manager queued behind a holder") \
	X(BARRIER_ROUNDS, barrier_rounds, \
	  "barrier rounds completed by this NIC as a manager") \
	X(SYNC_ERRORS, sync_errors, \
	  "lock and barrier refusals and failures (member lost, not held, no room), as manager and as member") \
	X(MCAST_SWITCH_PACKETS, mcast_switch_packets, \
	  "simultaneous multicast: packets sent to a switch group, once each (repairs not counted)") \
	X(MCAST_REPAIRS, mcast_repairs, \
	  "packets sent again to one member that lagged") \
	X(MCAST_DUPLICATES, mcast_duplicates, \
	  "multicast packets received again as a member, dropped") \
	X(MCAST_ERRORS, mcast_errors, \
	  "multicasts refused at post (no such group, not in its process group), packets refused as a member (no area, no endpoint), frames of groups or senders this NIC has no list for") \
	X(MCAST_MEMBERS_LOST, mcast_members_lost, \
	  "members declared dead (retries ran out)") \
	X(MCAST_WAITS, mcast_waits, \
	  "times an endpoint waited for room in a group's window or its context's share of the multicast packet memory") \
	X(SHARE_JOINS, share_joins, \
	  "shared-region joins completed (counted by the newcomer's NIC when its data is in)") \
	X(SHARE_UPDATES, share_updates, \
	  "shared-region updates applied by this NIC as a member (home included)") \
	X(SHARE_REFUSALS, share_refusals, \
	  "updates refused by a joining member before its data (each comes again after it)") \
	X(SHARE_SKIPPED, share_skipped, \
	  "updates a member dropped: already in the data it joined with, or for a region it left") \
	X(SHARE_ERRORS, share_errors, \
	  "shared-region refusals and failures (bad WQE, no room, not subscribed, member or home lost), as member and as home") \
	X(MCAST_ATTACHES, mcast_attaches, \
	  "verbs UD multicast: `ATTACH_MCAST` that added an entry to the attach table") \
	X(UD_MCAST_DELIVERED, ud_mcast_delivered, \
	  "copies of multicast UD datagrams handed to attached QPs (each then takes a receive WQE, or is dropped and counted in `RHN_CNT_UD_DROPS`)") \
	X(UD_MCAST_FILTERED, ud_mcast_filtered, \
	  "multicast UD datagrams no QP of this node is attached to (another MGID on the same group, a group just left)") \
	X(MCAST_MGMT_SENT, mcast_mgmt_sent, \
	  "switch management frames sent (joins and leaves, resends included)") \
	X(MCAST_MGMT_ANSWERS, mcast_mgmt_answers, \
	  "switch answers that settled a join or leave") \
	X(COLL_DONE, coll_done, \
	  "collectives completed for local ranks (one per rank's WQE, any status)") \
	X(COLL_SEGMENTS, coll_segments, \
	  "collective segments this NIC combined into a buffer or took from its parent") \
	X(COLL_RETRIES, coll_retries, \
	  "collective segments a peer NIC was not ready for (`RHN_SYN_COLL_NOT_READY`), sent again") \
	X(COLL_ERRORS, coll_errors, \
	  "collectives refused or failed (bad WQE, mismatch, table full, member lost), counted once per failing rank's WQE") \
	X(COLL_SWITCH_FRAMES, coll_switch_frames, \
	  "in-switch collectives: `RHN_PKT_COLL` frames sent to the switch (partials, their repeats, acknowledgements)") \
	X(TRIGGER_DROPPED_ADDS, trigger_dropped_adds, \
	  "trigger counter increments dropped: a `TRIGGER` doorbell that was not one 8-byte store or named no live counter of its page's context (a stale handle, another context's), or a chained completion whose counter was gone") \
	X(TRIGGER_FIRED, trigger_fired, \
	  "parked triggered WQEs whose counter reached their threshold (each then ran on its QP)") \
	X(HOST_DOORBELLS, host_doorbells, \
	  "SQ kicks (`RHN_DB_SQ`) the host CPU wrote: the doorbell write's PCIe requester is 0 (on the soft core, every SQ kick: its BAR2 window does not carry the requester)") \
	X(PEER_DOORBELLS, peer_doorbells, \
	  "SQ kicks (`RHN_DB_SQ`) a peer device wrote by peer-to-peer DMA: the doorbell write carries the device's PCIe requester ID (nonzero)") \
	X(SQ_RECOVERED, sq_recovered, \
	  "send-queue slots of multi-producer QPs (`RHN_CREATE_QP_F_MULTI_PRODUCER`) and of QPs with an SQ event index (`RHN_CREATE_QP_F_SQ_EVENT_INDEX`) that the NIC's record scan found published with no doorbell (each of its doorbells lost, or never rung), and took") \
	X(TRIGGER_REMOTE_REFUSED, trigger_remote_refused, \
	  "remote trigger adds (`RHN_WOP_TRIGGER_ADD`) this NIC refused as target (`RHN_SYN_BAD_REMOTE_TRIGGER`, nothing added): the handle named no live counter of the context the request reached, or the key did not match; or a malformed request") \
	X(MMIO_WRITES, mmio_writes, \
	  "writes the host made to BAR0 registers and BAR2 doorbell pages (each store to the inline WQE window included); under emulation each is a VM exit") \
	X(RQ_DOORBELLS, rq_doorbells, \
	  "RQ kicks (`RHN_DB_RQ`) written") \
	X(SRQ_DOORBELLS, srq_doorbells, \
	  "SRQ kicks (`RHN_DB_SRQ`) written") \
	X(CQ_ARM_DOORBELLS, cq_arm_doorbells, \
	  "CQ arm kicks (`RHN_DB_CQ_ARM`) written") \
	X(SQ_INLINE_DOORBELLS, sq_inline_doorbells, \
	  "SQ kicks that carried a WQE in the inline window (`RHN_DB_SQ_INLINE`); also counted in `RHN_CNT_HOST_DOORBELLS` or `RHN_CNT_PEER_DOORBELLS`") \
	X(DMA_READS, dma_reads, \
	  "DMA reads the NIC made from host memory (one per request to the bus: WQEs, doorbell records, payload, translation table entries)") \
	X(DMA_READ_BYTES, dma_read_bytes, \
	  "bytes of those DMA reads") \
	X(DMA_WRITES, dma_writes, \
	  "DMA writes the NIC made to host memory (one per request to the bus: payload, CQEs, EQEs, status words, admin completions)") \
	X(DMA_WRITE_BYTES, dma_write_bytes, \
	  "bytes of those DMA writes") \
	X(SQ_WQE_FETCHES, sq_wqe_fetches, \
	  "send WQEs read from an SQ ring by DMA (a WQE taken from the doorbell's inline window is not); also counted in `RHN_CNT_DMA_READS`") \
	X(SQ_WQE_FETCH_BYTES, sq_wqe_fetch_bytes, \
	  "bytes of those SQ WQE reads") \
	X(RECV_WQE_FETCHES, recv_wqe_fetches, \
	  "receive WQEs read from an RQ or SRQ ring by DMA; also counted in `RHN_CNT_DMA_READS`") \
	X(QUEUE_RECORD_READS, queue_record_reads, \
	  "doorbell records (a queue's producer index in host memory) read by DMA; also counted in `RHN_CNT_DMA_READS`") \
	X(MSIX_INTERRUPTS, msix_interrupts, \
	  "MSI-X messages the NIC sent (event queues' vectors and the admin vector)") \
	X(XRC_REFUSED, xrc_refused, \
	  "XRC SENDs refused as responder: the SRQ they name is not a live XRC SRQ of the target QP's XRC domain (`RHN_SYN_XRC_SRQ`)") \
	X(WATCHES_FIRED, watches_fired, \
	  "watches (`RHN_OP_WATCH`) that fired: a PUSH or a word-changing atomic by area landed in a watched area, and its `RHN_CQE_OP_WATCH` CQE went to the arming endpoint's receive CQ") \
	X(WATCH_REFUSED, watch_refused, \
	  "WATCH WQEs refused (`RHN_SYN_NO_WATCH_AREA`): the key named no area of the posting process") \
	X(WATCH_STALE, watch_stale, \
	  "watches dropped when they would have fired: the arming endpoint was destroyed or reset since (its generation differs), so no CQE was written") \
	X(CQE_WRITES, cqe_writes, \
	  "CQEs the NIC wrote into completion queues (a run is one; the admin queue's completions and a resize's copies are not counted); also counted in `RHN_CNT_DMA_WRITES`") \
	X(CQES_SAVED, cqes_saved, \
	  "CQE writes that runs saved: completions that joined an open run (`RHN_CQE_X_RUN`) instead of taking an entry of their own")
/* clang-format on */

enum rhn_counter {
#define RHN_CNT_ENUM_(id, name, doc) RHN_CNT_##id,
	RHN_COUNTERS(RHN_CNT_ENUM_)
#undef RHN_CNT_ENUM_
	RHN_CNT_COUNT
};

RHN_STATIC_ASSERT(RHN_REG_COUNTERS + 8 * RHN_CNT_COUNT <= RHN_BAR_REGS_SIZE,
		  "counters fit in BAR0");

#endif /* RHINET_HW_REGS_H */
