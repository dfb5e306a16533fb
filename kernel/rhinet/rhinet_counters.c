// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NIC's hardware counters as ib_core port statistics, read as one
 * snapshot, with the driver's own gauges (pinned pages, areas, twin
 * bytes) and remote pin-down counts.
 */
#include <linux/slab.h>

#include "rhinet_obj.h"

/* ---- hardware counters --------------------------------------------------- */

#define RHINET_STAT_PINNED_PAGES RHN_CNT_COUNT
#define RHINET_STAT_AREAS (RHN_CNT_COUNT + 1)
#define RHINET_STAT_TWIN_BYTES (RHN_CNT_COUNT + 2)
#define RHINET_STAT_PIN_REQUESTS (RHN_CNT_COUNT + 3)
#define RHINET_STAT_PIN_REFUSALS (RHN_CNT_COUNT + 4)
#define RHINET_STAT_PIN_RELEASES (RHN_CNT_COUNT + 5)
#define RHINET_STAT_PIN_OVERFLOWS (RHN_CNT_COUNT + 6)
#define RHINET_STATS (RHN_CNT_COUNT + 7)

static const struct rdma_stat_desc rhinet_stats[] = {
	[RHN_CNT_TX_PACKETS].name = "tx_packets",
	[RHN_CNT_RX_PACKETS].name = "rx_packets",
	[RHN_CNT_TX_BYTES].name = "tx_bytes",
	[RHN_CNT_RX_BYTES].name = "rx_bytes",
	[RHN_CNT_RETRANSMITS].name = "retransmits",
	[RHN_CNT_TIMEOUTS].name = "timeouts",
	[RHN_CNT_DUPLICATES].name = "duplicates",
	[RHN_CNT_OUT_OF_ORDER].name = "out_of_order",
	[RHN_CNT_NAKS_SENT].name = "naks_sent",
	[RHN_CNT_NAKS_RECEIVED].name = "naks_received",
	[RHN_CNT_ACKS_SENT].name = "acks_sent",
	[RHN_CNT_ACKS_RECEIVED].name = "acks_received",
	[RHN_CNT_CRC_ERRORS].name = "crc_errors",
	[RHN_CNT_MALFORMED_PACKETS].name = "malformed_packets",
	[RHN_CNT_RX_DROPS].name = "rx_drops",
	[RHN_CNT_PEER_DEAD].name = "peer_dead",
	[RHN_CNT_TLB_HITS].name = "tlb_hits",
	[RHN_CNT_TLB_MISSES].name = "tlb_misses",
	[RHN_CNT_TLB_INVALIDATIONS].name = "tlb_invalidations",
	[RHN_CNT_DMA_ERRORS].name = "dma_errors",
	[RHN_CNT_BAD_DOORBELLS].name = "bad_doorbells",
	[RHN_CNT_BAD_WQES].name = "bad_wqes",
	[RHN_CNT_BAD_ADMIN_CMDS].name = "bad_admin_cmds",
	[RHN_CNT_LOCAL_PROT_ERRORS].name = "local_prot_errors",
	[RHN_CNT_REMOTE_ACCESS_ERRORS].name = "remote_access_errors",
	[RHN_CNT_REMOTE_INVALID_REQUESTS].name = "remote_invalid_requests",
	[RHN_CNT_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[RHN_CNT_RNR_RETRIES].name = "rnr_retries",
	[RHN_CNT_CQ_OVERFLOWS].name = "cq_overflows",
	[RHN_CNT_KICK_OVERFLOWS].name = "kick_overflows",
	[RHN_CNT_UD_DROPS].name = "ud_drops",
	[RHN_CNT_ERROR_CQES].name = "error_cqes",
	[RHN_CNT_COMPLETIONS].name = "completions",
	[RHN_CNT_STALE_PACKETS].name = "stale_packets",
	[RHN_CNT_RX_CONTEXT_BUSY].name = "rx_context_busy",
	[RHN_CNT_SEND_QUOTA_WAITS].name = "send_quota_waits",
	[RHN_CNT_EVENTS_DEFERRED].name = "events_deferred",
	[RHN_CNT_UC_DROPS].name = "uc_drops",
	[RHN_CNT_NO_QP_REQUESTS].name = "no_qp_requests",
	[RHN_CNT_GROUP_VIOLATIONS].name = "group_violations",
	[RHN_CNT_SIGNALS].name = "signals",
	[RHN_CNT_PARTIAL_BYTES_SKIPPED].name = "partial_bytes_skipped",
	[RHN_CNT_TAG_MATCHED_POSTED].name = "tag_matched_posted",
	[RHN_CNT_TAG_UNEXPECTED].name = "tag_unexpected",
	[RHN_CNT_TAG_MATCHED_UNEXPECTED].name = "tag_matched_unexpected",
	[RHN_CNT_TAG_RECV_WAITS].name = "tag_recv_waits",
	[RHN_CNT_TAG_REFUSED].name = "tag_refused",
	[RHN_CNT_PIN_EVENTS].name = "pin_events",
	[RHN_CNT_PIN_HELD].name = "pin_held",
	[RHN_CNT_PIN_FAILED].name = "pin_failed",
	[RHN_CNT_TM_EXPECTED].name = "tm_expected",
	[RHN_CNT_TM_UNEXPECTED].name = "tm_unexpected",
	[RHN_CNT_TM_RNDV_READS].name = "tm_rndv_reads",
	[RHN_CNT_TM_OP_ERRORS].name = "tm_op_errors",
	[RHN_CNT_LOCK_GRANTS].name = "lock_grants",
	[RHN_CNT_LOCK_WAITS].name = "lock_waits",
	[RHN_CNT_BARRIER_ROUNDS].name = "barrier_rounds",
	[RHN_CNT_SYNC_ERRORS].name = "sync_errors",
	[RHN_CNT_MCAST_SWITCH_PACKETS].name = "mcast_switch_packets",
	[RHN_CNT_MCAST_REPAIRS].name = "mcast_repairs",
	[RHN_CNT_MCAST_DUPLICATES].name = "mcast_duplicates",
	[RHN_CNT_MCAST_ERRORS].name = "mcast_errors",
	[RHN_CNT_MCAST_MEMBERS_LOST].name = "mcast_members_lost",
	[RHN_CNT_MCAST_WAITS].name = "mcast_waits",
	[RHN_CNT_SHARE_JOINS].name = "share_joins",
	[RHN_CNT_SHARE_UPDATES].name = "share_updates",
	[RHN_CNT_SHARE_REFUSALS].name = "share_refusals",
	[RHN_CNT_SHARE_SKIPPED].name = "share_skipped",
	[RHN_CNT_SHARE_ERRORS].name = "share_errors",
	[RHN_CNT_MCAST_ATTACHES].name = "mcast_attaches",
	[RHN_CNT_UD_MCAST_DELIVERED].name = "ud_mcast_delivered",
	[RHN_CNT_UD_MCAST_FILTERED].name = "ud_mcast_filtered",
	[RHN_CNT_MCAST_MGMT_SENT].name = "mcast_mgmt_sent",
	[RHN_CNT_MCAST_MGMT_ANSWERS].name = "mcast_mgmt_answers",
	[RHN_CNT_COLL_DONE].name = "coll_done",
	[RHN_CNT_COLL_SEGMENTS].name = "coll_segments",
	[RHN_CNT_COLL_RETRIES].name = "coll_retries",
	[RHN_CNT_COLL_ERRORS].name = "coll_errors",
	[RHN_CNT_COLL_SWITCH_FRAMES].name = "coll_switch_frames",
	/* Not a NIC counter: pages pinned for this device's user memory. */
	[RHINET_STAT_PINNED_PAGES].name = "pinned_pages",
	/* Nor this: communication areas registered by users (MRs). */
	[RHINET_STAT_AREAS].name = "areas",
	/* Nor this: twin memory users hold (device memory), in bytes. */
	[RHINET_STAT_TWIN_BYTES].name = "twin_bytes",
	/* Remote pin-down, the driver's side: PIN requests answered, those
	 * answered NOT_PINNED, releases, and events its queue had no room
	 * for.
	 */
	[RHINET_STAT_PIN_REQUESTS].name = "pin_requests",
	[RHINET_STAT_PIN_REFUSALS].name = "pin_refusals",
	[RHINET_STAT_PIN_RELEASES].name = "pin_releases",
	[RHINET_STAT_PIN_OVERFLOWS].name = "pin_overflows",
};

static_assert(ARRAY_SIZE(rhinet_stats) == RHINET_STATS);

struct rdma_hw_stats *rhinet_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port)
{
	return rdma_alloc_hw_stats_struct(rhinet_stats,
					  ARRAY_SIZE(rhinet_stats),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int rhinet_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port, int index)
{
	struct rhinet_ib *ib = to_rib(ibdev);
	struct rhn_admin_cmd cmd = {};
	__le64 *snap;
	int i, ret;

	/* One snapshot the NIC writes whole: a 64-bit counter read from the
	 * BAR in two 32-bit halves could tear as it crosses 2^32.
	 */
	snap = kmalloc_array(RHN_CNT_COUNT, sizeof(*snap), GFP_KERNEL);
	if (!snap)
		return -ENOMEM;
	cmd.hdr.opcode = RHN_ADMIN_QUERY_COUNTERS;
	ret = rhinet_admin_query(ib->rdev, &cmd, snap,
				 RHN_CNT_COUNT * sizeof(*snap));
	if (ret) {
		kfree(snap);
		return ret;
	}
	for (i = 0; i < RHN_CNT_COUNT; i++)
		stats->value[i] = le64_to_cpu(snap[i]);
	kfree(snap);
	stats->value[RHINET_STAT_PINNED_PAGES] =
		atomic64_read(&ib->pinned_pages);
	stats->value[RHINET_STAT_AREAS] = atomic_read(&ib->num_areas);
	stats->value[RHINET_STAT_TWIN_BYTES] = atomic64_read(&ib->twin_bytes);
	stats->value[RHINET_STAT_PIN_REQUESTS] =
		atomic64_read(&ib->pin_requests);
	stats->value[RHINET_STAT_PIN_REFUSALS] =
		atomic64_read(&ib->pin_refusals);
	stats->value[RHINET_STAT_PIN_RELEASES] =
		atomic64_read(&ib->pin_releases);
	stats->value[RHINET_STAT_PIN_OVERFLOWS] =
		atomic64_read(&ib->pin_overflows);
	return ARRAY_SIZE(rhinet_stats);
}
