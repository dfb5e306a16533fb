/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The register map as data, for tools that decode a device or a dump
 * (rhinet-diag): every BAR0 register with its fields, every counter with
 * what it counts. Generated from registers.toml by scripts/regmap.py: edit
 * that file, not this one.
 */
#ifndef RHINET_REGMAP_DESC_H
#define RHINET_REGMAP_DESC_H

struct rhn_regmap_field {
	const char *name;
	unsigned int lsb;
	unsigned int width;
};

struct rhn_regmap_reg {
	const char *name; /* without RHN_REG_ */
	unsigned int offset;
	unsigned int width; /* bits */
	const char *access; /* RO, RW, WO */
	const struct rhn_regmap_field *fields;
	unsigned int nfields;
};

struct rhn_regmap_counter {
	const char *name; /* as the driver's statistics call it */
	const char *doc;
};

static const struct rhn_regmap_field rhn_regmap_fields_caps[] = {
	{"RC", 0, 1},
	{"UD", 1, 1},
	{"ENDPOINT", 2, 1},
	{"SRQ", 3, 1},
	{"ATOMIC", 4, 1},
	{"AREA", 5, 1},
	{"INLINE_DB", 6, 1},
	{"STATUS_WORD", 7, 1},
	{"RAW_ETH", 8, 1},
	{"TAG", 9, 1},
	{"PIN_ON_DEMAND", 10, 1},
	{"TM", 11, 1},
	{"SYNC", 12, 1},
	{"MCAST_LIST", 13, 1},
	{"MCAST_SWITCH", 14, 1},
	{"SHARE", 15, 1},
	{"UD_MCAST", 16, 1},
	{"COLLECTIVE", 17, 1},
	{"COLL_SWITCH", 18, 1},
	{"TRIGGER", 19, 1},
	{"RQ_RECORD_READ", 20, 1},
	{"SQ_DOORBELL_ON_REQUEST", 21, 1},
	{"ATOMIC_EXT", 22, 1},
	{"XRC", 23, 1},
	{"SQ_EVENT_INDEX", 24, 1},
	{"WATCH", 25, 1},
	{"CQE_RUNS", 26, 1},
};

static const struct rhn_regmap_field rhn_regmap_fields_node_id[] = {
	{"VALUE", 0, 16},
};

static const struct rhn_regmap_field rhn_regmap_fields_status[] = {
	{"READY", 0, 1},
	{"LINK_UP", 1, 1},
	{"FATAL", 2, 1},
	{"ADMIN_ON", 3, 1},
};

static const struct rhn_regmap_field rhn_regmap_fields_control[] = {
	{"ENABLE", 0, 1},
	{"RESET", 1, 1},
	{"INTR_ENABLE", 2, 1},
};

static const struct rhn_regmap_field rhn_regmap_fields_mac_hi[] = {
	{"BYTES", 0, 16},
};

static const struct rhn_regmap_field rhn_regmap_fields_fw_state[] = {
	{"STATE", 0, 4},
	{"HOST_LOADED", 4, 1},
	{"PENDING", 5, 1},
};

static const struct rhn_regmap_field rhn_regmap_fields_eq_doorbell[] = {
	{"CI", 0, 32},
	{"EQN", 32, 16},
	{"ARM", 63, 1},
};

static const struct rhn_regmap_reg rhn_regmap_regs[] = {
	{"VERSION", 0x000, 32, "RO", 0, 0},
	{"CAPS", 0x004, 32, "RO", rhn_regmap_fields_caps,
	 sizeof(rhn_regmap_fields_caps) / sizeof(rhn_regmap_fields_caps[0])},
	{"NODE_ID", 0x008, 32, "RO", rhn_regmap_fields_node_id,
	 sizeof(rhn_regmap_fields_node_id) /
		 sizeof(rhn_regmap_fields_node_id[0])},
	{"STATUS", 0x00c, 32, "RO", rhn_regmap_fields_status,
	 sizeof(rhn_regmap_fields_status) /
		 sizeof(rhn_regmap_fields_status[0])},
	{"CONTROL", 0x010, 32, "RW", rhn_regmap_fields_control,
	 sizeof(rhn_regmap_fields_control) /
		 sizeof(rhn_regmap_fields_control[0])},
	{"DB_PAGES", 0x014, 32, "RO", 0, 0},
	{"MSIX_VECTORS", 0x018, 32, "RO", 0, 0},
	{"MTU", 0x01c, 32, "RO", 0, 0},
	{"MAC_LO", 0x020, 32, "RO", 0, 0},
	{"MAC_HI", 0x024, 32, "RO", rhn_regmap_fields_mac_hi,
	 sizeof(rhn_regmap_fields_mac_hi) /
		 sizeof(rhn_regmap_fields_mac_hi[0])},
	{"BOARD_ID", 0x028, 32, "RO", 0, 0},
	{"FW_STATE", 0x02c, 32, "RO", rhn_regmap_fields_fw_state,
	 sizeof(rhn_regmap_fields_fw_state) /
		 sizeof(rhn_regmap_fields_fw_state[0])},
	{"SERIAL", 0x030, 64, "RO", 0, 0},
	{"FW_RUNNING", 0x038, 32, "RO", 0, 0},
	{"FW_STORED", 0x03c, 32, "RO", 0, 0},
	{"ADMIN_SQ_BASE", 0x040, 64, "RW", 0, 0},
	{"ADMIN_CQ_BASE", 0x048, 64, "RW", 0, 0},
	{"ADMIN_LOG_DEPTH", 0x050, 32, "RW", 0, 0},
	{"ADMIN_SQ_TAIL", 0x054, 32, "WO", 0, 0},
	{"EQ_DOORBELL", 0x060, 64, "WO", rhn_regmap_fields_eq_doorbell,
	 sizeof(rhn_regmap_fields_eq_doorbell) /
		 sizeof(rhn_regmap_fields_eq_doorbell[0])},
};

static const struct rhn_regmap_counter rhn_regmap_counters[] = {
	{"tx_packets", "frames sent"},
	{"rx_packets", "frames received"},
	{"tx_bytes", "bytes sent"},
	{"rx_bytes", "bytes received"},
	{"retransmits", "sequenced packets sent again"},
	{"timeouts", "retransmission timer expiries"},
	{"duplicates", "received packets whose serial was already accepted"},
	{"out_of_order",
	 "received packets whose serial is beyond the expected one"},
	{"naks_sent", "transport NAKs sent"},
	{"naks_received", "transport NAKs received"},
	{"acks_sent", "ACKs sent"},
	{"acks_received", "ACKs received"},
	{"crc_errors", "frames dropped for a bad header or payload CRC"},
	{"malformed_packets",
	 "frames dropped as malformed (bad magic, version, lengths, fields)"},
	{"rx_drops", "frames dropped because the receive FIFO was full"},
	{"peer_dead", "times retries towards a node were exhausted"},
	{"tlb_hits", "address translations served by the TLB"},
	{"tlb_misses", "translations that needed a table walk"},
	{"tlb_invalidations",
	 "TLB entries dropped (DESTROY_MR, INVALIDATE_TLB)"},
	{"dma_errors", "host bus errors on DMA"},
	{"bad_doorbells", "kicks naming a foreign or invalid queue"},
	{"bad_wqes", "malformed WQEs"},
	{"bad_admin_cmds", "admin commands completed with an error status"},
	{"local_prot_errors",
	 "lkey, bounds or rights failures on the local side"},
	{"remote_access_errors", "rkey or area failures seen as responder"},
	{"remote_invalid_requests", "invalid requests seen as responder"},
	{"rnr_naks_sent", "receiver-not-ready NAKs sent"},
	{"rnr_retries", "messages resent after an RNR NAK"},
	{"cq_overflows", "CQEs that found their CQ full"},
	{"kick_overflows",
	 "times the kick FIFO was full and dropped kicks; the NIC then "
	 "rescans, and no doorbell of any kind is lost (queue, admin tail, "
	 "CONTROL, EQ doorbell, CQ arm, trigger add)"},
	{"ud_drops", "UD messages and raw frames dropped: no receive WQE, "
		     "wrong Q_Key, or no raw QP ready"},
	{"error_cqes", "CQEs written with a status other than success"},
	{"completions", "CQEs written"},
	{"stale_packets", "packets of an older session, or answers to a QP's "
			  "previous incarnation, dropped"},
	{"rx_context_busy",
	 "first packets of multi-packet SENDs answered BUSY: no receive "
	 "context (or the process's share used up)"},
	{"send_quota_waits", "times a QP waited because its context held its "
			     "share of the send-packet memory"},
	{"events_deferred",
	 "completion events held back while their event queue was full (posted "
	 "once the driver made room)"},
	{"uc_drops",
	 "UC messages the responder dropped (bad QP or key, no receive WQE, no "
	 "receive context): UC tells the requester nothing"},
	{"no_qp_requests",
	 "requests that found no QP to take them: none with that number, "
	 "another type, a state before RTR or in error, or connected to "
	 "another peer. An RC requester is not told at once: the request fails "
	 "with `RETRY_EXC_ERR` when its timeout runs out, as on IB (admin.md, "
	 "MODIFY_QP)"},
	{"group_violations",
	 "area accesses naming a group the initiator (at post) or the target "
	 "(as responder) is not a member of"},
	{"signals", "`RHN_CQE_OP_SIGNAL` CQEs written (put-with-signal)"},
	{"partial_bytes_skipped",
	 "bytes of bitmap and DIFF transfers that did not travel, counted by "
	 "the NIC that would have sent them"},
	{"tag_matched_posted",
	 "isends that found their receive in the posted list on arrival"},
	{"tag_unexpected",
	 "isends that found none and were queued (unexpected)"},
	{"tag_matched_unexpected",
	 "irecvs that matched a queued message when the NIC took them"},
	{"tag_recv_waits", "overflow: times the posted list (or the context's "
			   "share) was full with irecvs left in the RQ"},
	{"tag_refused",
	 "overflow: isends refused with `RHN_SYN_BUSY` (resent later, in "
	 "order) while the unexpected list or the context's share was full"},
	{"pin_events", "remote pin-down: runs of pages the host was asked to "
		       "pin (one `RHN_EQE_PD_REQUEST` each)"},
	{"pin_held",
	 "requests refused (resent later) or held while the host pinned"},
	{"pin_failed",
	 "requests failed because the host would not pin (`NOT_PINNED`)"},
	{"tm_expected", "TM SRQs: tagged messages that matched an entry of the "
			"tag list (eager placed, or a rendezvous started)"},
	{"tm_unexpected", "TM SRQs: tagged messages handed to software through "
			  "a receive WQE (the unexpected count)"},
	{"tm_rndv_reads", "TM SRQs: rendezvous headers the NIC executed (it "
			  "read the data from the sender)"},
	{"tm_op_errors", "TM SRQs: tag-list operations that completed with "
			 "`RHN_CQE_TM_ERR` or another error"},
	{"lock_grants",
	 "locks granted by this NIC as a manager, or passed on by it as a "
	 "holder's NIC (one per grant over all NICs)"},
	{"lock_waits", "LOCKs the manager queued behind a holder"},
	{"barrier_rounds", "barrier rounds completed by this NIC as a manager"},
	{"sync_errors", "lock and barrier refusals and failures (member lost, "
			"not held, no room), as manager and as member"},
	{"mcast_switch_packets",
	 "simultaneous multicast: packets sent to a switch group, once each "
	 "(repairs not counted)"},
	{"mcast_repairs", "packets sent again to one member that lagged"},
	{"mcast_duplicates",
	 "multicast packets received again as a member, dropped"},
	{"mcast_errors",
	 "multicasts refused at post (no such group, not in its process "
	 "group), packets refused as a member (no area, no endpoint), frames "
	 "of groups or senders this NIC has no list for"},
	{"mcast_members_lost", "members declared dead (retries ran out)"},
	{"mcast_waits",
	 "times an endpoint waited for room in a group's window or its "
	 "context's share of the multicast packet memory"},
	{"share_joins", "shared-region joins completed (counted by the "
			"newcomer's NIC when its data is in)"},
	{"share_updates", "shared-region updates applied by this NIC as a "
			  "member (home included)"},
	{"share_refusals", "updates refused by a joining member before its "
			   "data (each comes again after it)"},
	{"share_skipped", "updates a member dropped: already in the data it "
			  "joined with, or for a region it left"},
	{"share_errors",
	 "shared-region refusals and failures (bad WQE, no room, not "
	 "subscribed, member or home lost), as member and as home"},
	{"mcast_attaches", "verbs UD multicast: `ATTACH_MCAST` that added an "
			   "entry to the attach table"},
	{"ud_mcast_delivered",
	 "copies of multicast UD datagrams handed to attached QPs (each then "
	 "takes a receive WQE, or is dropped and counted in "
	 "`RHN_CNT_UD_DROPS`)"},
	{"ud_mcast_filtered",
	 "multicast UD datagrams no QP of this node is attached to (another "
	 "MGID on the same group, a group just left)"},
	{"mcast_mgmt_sent",
	 "switch management frames sent (joins and leaves, resends included)"},
	{"mcast_mgmt_answers", "switch answers that settled a join or leave"},
	{"coll_done", "collectives completed for local ranks (one per rank's "
		      "WQE, any status)"},
	{"coll_segments", "collective segments this NIC combined into a buffer "
			  "or took from its parent"},
	{"coll_retries", "collective segments a peer NIC was not ready for "
			 "(`RHN_SYN_COLL_NOT_READY`), sent again"},
	{"coll_errors",
	 "collectives refused or failed (bad WQE, mismatch, table full, member "
	 "lost), counted once per failing rank's WQE"},
	{"coll_switch_frames",
	 "in-switch collectives: `RHN_PKT_COLL` frames sent to the switch "
	 "(partials, their repeats, acknowledgements)"},
	{"trigger_dropped_adds",
	 "trigger counter increments dropped: a `TRIGGER` doorbell that was "
	 "not one 8-byte store or named no live counter of its page's context "
	 "(a stale handle, another context's), or a chained completion whose "
	 "counter was gone"},
	{"trigger_fired", "parked triggered WQEs whose counter reached their "
			  "threshold (each then ran on its QP)"},
	{"host_doorbells",
	 "SQ kicks (`RHN_DB_SQ`) the host CPU wrote: the doorbell write's PCIe "
	 "requester is 0 (on the soft core, every SQ kick: its BAR2 window "
	 "does not carry the requester)"},
	{"peer_doorbells",
	 "SQ kicks (`RHN_DB_SQ`) a peer device wrote by peer-to-peer DMA: the "
	 "doorbell write carries the device's PCIe requester ID (nonzero)"},
	{"sq_recovered",
	 "send-queue slots of multi-producer QPs "
	 "(`RHN_CREATE_QP_F_MULTI_PRODUCER`) and of QPs with an SQ event index "
	 "(`RHN_CREATE_QP_F_SQ_EVENT_INDEX`) that the NIC's record scan found "
	 "published with no doorbell (each of its doorbells lost, or never "
	 "rung), and took"},
	{"trigger_remote_refused",
	 "remote trigger adds (`RHN_WOP_TRIGGER_ADD`) this NIC refused as "
	 "target (`RHN_SYN_BAD_REMOTE_TRIGGER`, nothing added): the handle "
	 "named no live counter of the context the request reached, or the key "
	 "did not match; or a malformed request"},
	{"mmio_writes", "writes the host made to BAR0 registers and BAR2 "
			"doorbell pages (each store to the inline WQE window "
			"included); under emulation each is a VM exit"},
	{"rq_doorbells", "RQ kicks (`RHN_DB_RQ`) written"},
	{"srq_doorbells", "SRQ kicks (`RHN_DB_SRQ`) written"},
	{"cq_arm_doorbells", "CQ arm kicks (`RHN_DB_CQ_ARM`) written"},
	{"sq_inline_doorbells",
	 "SQ kicks that carried a WQE in the inline window "
	 "(`RHN_DB_SQ_INLINE`); also counted in `RHN_CNT_HOST_DOORBELLS` or "
	 "`RHN_CNT_PEER_DOORBELLS`"},
	{"dma_reads",
	 "DMA reads the NIC made from host memory (one per request to the bus: "
	 "WQEs, doorbell records, payload, translation table entries)"},
	{"dma_read_bytes", "bytes of those DMA reads"},
	{"dma_writes",
	 "DMA writes the NIC made to host memory (one per request to the bus: "
	 "payload, CQEs, EQEs, status words, admin completions)"},
	{"dma_write_bytes", "bytes of those DMA writes"},
	{"sq_wqe_fetches", "send WQEs read from an SQ ring by DMA (a WQE taken "
			   "from the doorbell's inline window is not); also "
			   "counted in `RHN_CNT_DMA_READS`"},
	{"sq_wqe_fetch_bytes", "bytes of those SQ WQE reads"},
	{"recv_wqe_fetches", "receive WQEs read from an RQ or SRQ ring by DMA; "
			     "also counted in `RHN_CNT_DMA_READS`"},
	{"queue_record_reads",
	 "doorbell records (a queue's producer index in host memory) read by "
	 "DMA; also counted in `RHN_CNT_DMA_READS`"},
	{"msix_interrupts", "MSI-X messages the NIC sent (event queues' "
			    "vectors and the admin vector)"},
	{"xrc_refused",
	 "XRC SENDs refused as responder: the SRQ they name is not a live XRC "
	 "SRQ of the target QP's XRC domain (`RHN_SYN_XRC_SRQ`)"},
	{"watches_fired",
	 "watches (`RHN_OP_WATCH`) that fired: a PUSH or a word-changing "
	 "atomic by area landed in a watched area, and its `RHN_CQE_OP_WATCH` "
	 "CQE went to the arming endpoint's receive CQ"},
	{"watch_refused", "WATCH WQEs refused (`RHN_SYN_NO_WATCH_AREA`): the "
			  "key named no area of the posting process"},
	{"watch_stale", "watches dropped when they would have fired: the "
			"arming endpoint was destroyed or reset since (its "
			"generation differs), so no CQE was written"},
	{"cqe_writes",
	 "CQEs the NIC wrote into completion queues (a run is one; the admin "
	 "queue's completions and a resize's copies are not counted); also "
	 "counted in `RHN_CNT_DMA_WRITES`"},
	{"cqes_saved",
	 "CQE writes that runs saved: completions that joined an open run "
	 "(`RHN_CQE_X_RUN`) instead of taking an entry of their own"},
};

#endif /* RHINET_REGMAP_DESC_H */
