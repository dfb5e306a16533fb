/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: shared regions.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_SHARE_H
#define INFINIBAND_RHINETDV_SHARE_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- shared regions (RHINETDV_1.7) -------------------------------------- */

/*
 * A shared region is a range [offset, offset + length) of an area (group_id,
 * area_id) that several endpoints keep a copy of, at the same offset of
 * their own area. It is named by its home endpoint (home_node,
 * home_endpoint), whose memory is the master copy, and the area; an
 * endpoint is in at most one region per area. Nothing is set up at the
 * home: its NIC creates the region at the first SUBSCRIBE. Every member's
 * NIC keeps a directory of the region's members and multicasts the
 * member's updates along it; the NICs run the join, so an update that
 * crosses a newcomer's join is applied there exactly once.
 *
 * rhinetdv_subscribe completes (RHINETDV_OP_SUBSCRIBE, byte_len = length)
 * when the home's bytes are in this endpoint's copy: addr/length must be
 * exactly the caller's own area bytes at offset (updates land in the
 * area). RHINETDV_MODE_TWIN also puts them into the twin, so
 * later DIFF updates compare with what the member joined with.
 * rhinetdv_unsubscribe takes the endpoint out at once (later updates are
 * dropped) and completes (RHINETDV_OP_UNSUBSCRIBE) when the home has taken
 * it. rhinetdv_share_update (after the SUBSCRIBE completed) is a PUSH by
 * area inside the region, in any PUSH mode, to every other member of the
 * directory; it completes once (RHINETDV_OP_SHARE_UPDATE) when every member
 * has acknowledged. One member's updates are applied everywhere in its
 * posting order; different members' updates of the same bytes have no
 * order unless the program gives them one.
 *
 * Completions (status / syndrome); those decided at post take the endpoint
 * to error, the others do not:
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_NOT_SUBSCRIBED: a SUBSCRIBE of a
 *     region the endpoint is in (or joining); an UNSUBSCRIBE or update of
 *     one it is not in, still joining, or (UNSUBSCRIBE) of another home;
 *     the home refuses a SUBSCRIBE from one of its members;
 *   IBV_WC_REM_ACCESS_ERR / RHINETDV_SYN_BAD_AREA (or another area
 *     syndrome): the home has no such area, or not readable by peers;
 *   IBV_WC_REM_INV_REQ_ERR / RHINETDV_SYN_BOUNDS: the home has a region of
 *     the area at another offset or length;
 *   IBV_WC_LOC_PROT_ERR / RHINETDV_SYN_BOUNDS: addr/length are not this
 *     endpoint's area bytes at offset; an update outside the region (at
 *     post);
 *   IBV_WC_LOC_PROT_ERR / RHINETDV_SYN_BAD_AREA, _BAD_GROUP: no such area
 *     here, a group the process is not in (at post);
 *   IBV_WC_LOC_LEN_ERR / RHINETDV_SYN_LENGTH: length 0 or above
 *     RHINETDV_SHARE_MAX_BYTES (at post);
 *   IBV_WC_GENERAL_ERR / RHINETDV_SYN_BUSY: this NIC's or the home's region
 *     table is full for the process, or the region has
 *     RHINETDV_SHARE_MAX_MEMBERS members;
 *   IBV_WC_REM_OP_ERR / RHINETDV_SYN_MEMBER_LOST: the home endpoint went
 *     away or its node died, the join timed out, or (an update) the region
 *     was lost;
 *   IBV_WC_RETRY_EXC_ERR / RHINETDV_SYN_RETRY_EXCEEDED: a member's node
 *     (or the home's) stopped answering.
 */
#define RHINETDV_SHARE_MAX_BYTES (1u << 30)
#define RHINETDV_SHARE_MAX_MEMBERS 16 /* the home included */

enum rhinetdv_share_flags {
	RHINETDV_SHARE_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_SHARE_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* rhinetdv_share_update only: the bytes are copied into the work
	 * request (at most max_inline, BASIC only); lkey is not used.
	 */
	RHINETDV_SHARE_INLINE = RHINETDV_XFER_INLINE,
};

struct rhinetdv_subscribe_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint16_t home_node; /* the region's home endpoint */
	uint16_t reserved0; /* 0 */
	uint32_t home_endpoint;
	uint32_t group_id; /* the area's group */
	uint32_t area_id;
	uint64_t offset; /* the region's offset in the area */
	void *addr; /* this endpoint's copy: its area's bytes at offset */
	uint32_t length; /* the region's bytes, 1..RHINETDV_SHARE_MAX_BYTES */
	uint32_t lkey; /* the area's MR */
	uint32_t flags; /* SIGNALED, STATUS_WORD */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint64_t *status_word;
	uint32_t mode; /* RHINETDV_MODE_BASIC or RHINETDV_MODE_TWIN */
	uint32_t reserved1; /* 0 */
	struct ibv_dm *twin; /* TWIN: also receives the data */
	uint64_t twin_offset;
};

struct rhinetdv_unsubscribe_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id;
	uint16_t home_node; /* as subscribed */
	uint16_t reserved0; /* 0 */
	uint32_t home_endpoint;
	uint32_t group_id;
	uint32_t area_id;
	uint64_t offset; /* the region's offset */
	uint32_t flags; /* SIGNALED, STATUS_WORD */
	uint32_t status_lkey;
	uint64_t *status_word;
};

struct rhinetdv_share_update_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id;
	const void *addr; /* the data */
	uint32_t length;
	uint32_t lkey; /* MR of addr (not with INLINE) */
	uint32_t group_id; /* the region's area */
	uint32_t area_id;
	uint64_t offset; /* where in the area: inside the region */
	uint32_t flags; /* enum rhinetdv_share_flags */
	uint32_t status_lkey;
	uint64_t *status_word;
	/* A PUSH mode and its fields, as in rhinetdv_mcast_attr: BASIC, DIFF,
	 * BITMAP or STRIDE
	 */
	uint32_t mode;
	uint32_t block;
	uint32_t count;
	uint32_t bitmap_lkey;
	uint64_t local_stride;
	uint64_t remote_stride;
	const void *bitmap;
	/* DIFF: compared for every member; the twin takes the bytes with the
	 * last one
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * Post a SUBSCRIBE, UNSUBSCRIBE or SHARE_UPDATE; inlen is sizeof(*attr) as
 * the caller knows it. ENOMEM: max_outstanding operations in flight;
 * EINVAL: unknown comp_mask bits or flags, reserved fields not 0, an ID
 * above 65535, a length out of range, a mode the operation does not take
 * (SUBSCRIBE: BASIC, TWIN; an update: a PUSH's) or its fields wrong, INLINE
 * on a SUBSCRIBE or too long or with a mode, a misaligned status word;
 * EPERM: not a member of the group; EOPNOTSUPP: no RHINETDV_CAP_SHARE.
 */
int rhinetdv_subscribe(struct rhinetdv_endpoint *ep,
		       const struct rhinetdv_subscribe_attr *attr,
		       size_t inlen);
int rhinetdv_unsubscribe(struct rhinetdv_endpoint *ep,
			 const struct rhinetdv_unsubscribe_attr *attr,
			 size_t inlen);
int rhinetdv_share_update(struct rhinetdv_endpoint *ep,
			  const struct rhinetdv_share_update_attr *attr,
			  size_t inlen);

#endif /* INFINIBAND_RHINETDV_SHARE_H */
