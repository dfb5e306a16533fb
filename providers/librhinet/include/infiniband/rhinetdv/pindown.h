/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: remote pin-down.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_PINDOWN_H
#define INFINIBAND_RHINETDV_PINDOWN_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- remote pin-down (RHINETDV_1.3) ------------------------------------- */

/*
 * pd_req asks the target (dest_node, dest_endpoint) to pin the range
 * [offset, offset + length) of its area (group_id, area_id), or with
 * RHINETDV_PIN_BY_KEY [remote_addr, remote_addr + length) of its MR rkey,
 * and to hold it for the initiator: it completes (RHINETDV_OP_PD_REQUEST)
 * once the target's pages are pinned and hold one more reference, so that
 * later PUSHes and PULLs there never wait for the target's host. An area
 * declared with RHINETDV_AREA_PIN_ON_DEMAND is pinned then; pages of an
 * ordinary area are pinned already. pd_release drops that reference; it
 * completes (RHINETDV_OP_PD_RELEASE) when the target's NIC has passed it
 * to its host, which unpins the pages of the range that nobody holds any
 * longer (those pinned by a first touch alone included).
 * Errors: the completion's status is IBV_WC_REM_ACCESS_ERR with syndrome
 * RHINETDV_SYN_NOT_PINNED when the target host would not pin (its
 * process's limit, memory not mapped or not writable, the process gone),
 * RHINETDV_SYN_BOUNDS beyond the area, and as a PULL's otherwise.
 */
enum rhinetdv_pin_flags {
	/* A completion on rhinetdv_poll() on success too (errors always). */
	RHINETDV_PIN_SIGNALED = RHINETDV_XFER_SIGNALED,
	/* The NIC writes *status_word when the operation is done. */
	RHINETDV_PIN_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* The range is (remote_addr, rkey), not (group, area, offset). */
	RHINETDV_PIN_BY_KEY = RHINETDV_XFER_EX_BY_KEY,
};

struct rhinetdv_pin_attr {
	uint64_t comp_mask; /* 0 */
	uint64_t wr_id; /* returned in the completion */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint32_t group_id; /* by area: the area's group */
	uint32_t area_id; /* by area: the peer's area */
	uint64_t offset; /* by area: in the peer's area */
	uint64_t remote_addr; /* BY_KEY */
	uint32_t rkey; /* BY_KEY */
	uint32_t length; /* bytes, not 0 */
	uint32_t flags; /* enum rhinetdv_pin_flags */
	/* With RHINETDV_PIN_STATUS_WORD, as for rhinetdv_push: 8-byte
	 * aligned, in an MR with local write of the endpoint's PD, cleared
	 * before posting.
	 */
	uint32_t status_lkey;
	uint64_t *status_word;
};

/*
 * Post a pd_req or a pd_release on the endpoint; inlen is sizeof(*attr)
 * as the caller knows it. ENOMEM: max_outstanding operations are in
 * flight; EINVAL: bad flags or fields, length 0, a misaligned status
 * word; EPERM: not a member of the group; EOPNOTSUPP: the device has no
 * remote pin-down (RHINETDV_CAP_PIN_ON_DEMAND).
 */
int rhinetdv_pd_req(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_pin_attr *attr, size_t inlen);
int rhinetdv_pd_release(struct rhinetdv_endpoint *ep,
			const struct rhinetdv_pin_attr *attr, size_t inlen);

#endif /* INFINIBAND_RHINETDV_PINDOWN_H */
