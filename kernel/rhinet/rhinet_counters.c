// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The NIC's hardware counters as ib_core port statistics, read as one
 * snapshot, with the driver's own gauges (pinned pages, areas, twin
 * bytes) and remote pin-down counts.
 */
#include <linux/slab.h>

#include "rhinet_obj.h"

/* ---- hardware counters --------------------------------------------------- */

/*
 * The hardware counters before the bus-transaction ones: ib_core answers
 * `rdma statistic show` in one netlink message of NLMSG_DEFAULT_SIZE,
 * which holds about 93 counters with their values. The bus counters
 * (RHN_CNT_MMIO_WRITES on) are read through raw access instead
 * (rhinet-diag, devlink); registers.md, "Bus transaction counters".
 */
#define RHINET_PORT_HW_STATS RHN_CNT_MMIO_WRITES
#define RHINET_STAT_PINNED_PAGES RHINET_PORT_HW_STATS
#define RHINET_STAT_AREAS (RHINET_PORT_HW_STATS + 1)
#define RHINET_STAT_TWIN_BYTES (RHINET_PORT_HW_STATS + 2)
#define RHINET_STAT_PIN_REQUESTS (RHINET_PORT_HW_STATS + 3)
#define RHINET_STAT_PIN_REFUSALS (RHINET_PORT_HW_STATS + 4)
#define RHINET_STAT_PIN_RELEASES (RHINET_PORT_HW_STATS + 5)
#define RHINET_STAT_PIN_OVERFLOWS (RHINET_PORT_HW_STATS + 6)
#define RHINET_STAT_PIN_INVALIDATIONS (RHINET_PORT_HW_STATS + 7)
#define RHINET_STATS (RHINET_PORT_HW_STATS + 8)

/*
 * The NIC's counters by the names the contract's list gives them; those
 * not shown as port statistics all land in one spare entry past the end.
 */
#define RHINET_HW_STAT(id_, name_, doc_)                                 \
	[RHN_CNT_##id_ < RHINET_PORT_HW_STATS ? RHN_CNT_##id_ : RHINET_STATS] = \
		{ .name = #name_ },

static const struct rdma_stat_desc rhinet_stats[] = {
	RHN_COUNTERS(RHINET_HW_STAT)
	/* Not a NIC counter: pages pinned for this device's user memory. */
	[RHINET_STAT_PINNED_PAGES].name = "pinned_pages",
	/* Nor this: communication areas registered by users (MRs). */
	[RHINET_STAT_AREAS].name = "areas",
	/* Nor this: twin memory users hold (device memory), in bytes. */
	[RHINET_STAT_TWIN_BYTES].name = "twin_bytes",
	/* Remote pin-down, the driver's side: PIN requests answered, those
	 * answered NOT_PINNED, releases, events its queue had no room for,
	 * and changes of a process's mappings that unpinned pages.
	 */
	[RHINET_STAT_PIN_REQUESTS].name = "pin_requests",
	[RHINET_STAT_PIN_REFUSALS].name = "pin_refusals",
	[RHINET_STAT_PIN_RELEASES].name = "pin_releases",
	[RHINET_STAT_PIN_OVERFLOWS].name = "pin_overflows",
	[RHINET_STAT_PIN_INVALIDATIONS].name = "pin_invalidations",
};

static_assert(ARRAY_SIZE(rhinet_stats) == RHINET_STATS + 1);

struct rdma_hw_stats *rhinet_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port)
{
	return rdma_alloc_hw_stats_struct(rhinet_stats,
					  RHINET_STATS,
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
	for (i = 0; i < RHINET_PORT_HW_STATS; i++)
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
	stats->value[RHINET_STAT_PIN_INVALIDATIONS] =
		atomic64_read(&ib->pin_invalidations);
	return RHINET_STATS;
}
