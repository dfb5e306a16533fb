/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: isend, irecv and iprobe: messages matched by tag in the NIC.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_TAG_H
#define INFINIBAND_RHINETDV_TAG_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- isend / irecv (RHINETDV_1.2) --------------------------------------- */

/*
 * Messages matched by a 64-bit tag in the receiving NIC. An isend goes to
 * (dest_node, dest_endpoint); the target NIC matches it against that
 * endpoint's posted irecvs, oldest first: an irecv takes a message when
 * its source is the irecv's (or the irecv takes any source) and
 * (message tag ^ tag) & tag_mask == 0. Between one sender and one
 * receiver, messages that match the same irecv are matched in send order.
 * A message that finds no irecv waits at the target (unexpected) until
 * one is posted; rhinetdv_iprobe looks at those. Messages of up to
 * max_eager bytes (rhinetdv_tag_caps) travel with the match request; a
 * longer one is sent once its irecv is known, straight into the irecv's
 * buffer (rendezvous). The isend completes when its data has arrived.
 * When the NIC's lists are full, irecvs wait in the endpoint's receive
 * queue and isends are refused and resent in order: matching stays exact.
 *
 * Partial-transfer modes (rhinetdv 1.4, RHINETDV_CAP_TAG_XFER)
 * choose which bytes of the sender's buffer make the message and where
 * its bytes land in the receiver's; sender and receiver choose theirs
 * independently. An isend takes BASIC, STRIDE (count blocks of block
 * bytes, local_stride apart in the buffer, sent packed as a message of
 * block * count bytes), BITMAP (a message of `length` bytes of which only
 * the blocks marked in the bitmap travel) or DIFF (a message of `length`
 * bytes of which only those that differ from the twin travel; the twin
 * then holds them). Bytes of a BITMAP or DIFF message that do not travel
 * leave the receiver's memory as it was. An irecv takes BASIC, STRIDE
 * (message byte o lands at (o / block) * stride + o % block, for block *
 * count bytes), BITMAP (byte o lands only if bit o / block is set) or
 * TWIN (every byte also lands in the twin at twin_offset + o). A partial
 * isend is never sent eagerly. Parameters the NIC refuses complete the
 * operation with RHINETDV_SYN_BAD_XFER.
 */
enum rhinetdv_isend_flags {
	RHINETDV_ISEND_SIGNALED = RHINETDV_XFER_SIGNALED,
	RHINETDV_ISEND_STATUS_WORD = RHINETDV_XFER_STATUS_WORD,
	/* The bytes are copied into the work request (at most max_inline). */
	RHINETDV_ISEND_INLINE = RHINETDV_XFER_INLINE,
};

enum rhinetdv_isend_attr_mask {
	/* mode and its parameters are set (rhinetdv 1.4) */
	RHINETDV_ISEND_ATTR_MASK_XFER = 1 << 0,
};

struct rhinetdv_isend_attr {
	uint64_t comp_mask; /* enum rhinetdv_isend_attr_mask */
	uint64_t wr_id;
	const void *addr;
	uint32_t length;
	uint32_t lkey; /* MR of addr in the endpoint's PD (not with INLINE) */
	uint16_t dest_node;
	uint16_t reserved0; /* 0 */
	uint32_t dest_endpoint;
	uint64_t tag;
	uint32_t flags; /* enum rhinetdv_isend_flags */
	uint32_t status_lkey; /* STATUS_WORD, as for rhinetdv_push */
	uint64_t *status_word;
	/* With RHINETDV_ISEND_ATTR_MASK_XFER (a caller of RHINETDV_1.2 passes
	 * the structure without these), named as in rhinetdv_xfer_ex:
	 */
	uint32_t mode; /* enum rhinetdv_mode: BASIC, DIFF, BITMAP, STRIDE */
	/* STRIDE: bytes per block; BITMAP: bytes per bit of the bitmap */
	uint32_t block;
	/* STRIDE: count blocks local_stride apart from addr, which holds
	 * (count - 1) * local_stride + block of length bytes; the message
	 * has block * count bytes
	 */
	uint32_t count;
	uint32_t bitmap_lkey; /* BITMAP */
	uint64_t local_stride; /* STRIDE, >= block */
	/* BITMAP: bit i (LSB first in each byte) marks bytes
	 * [i*block, (i+1)*block) of length; local memory in an MR of the
	 * endpoint's PD; at most max_bitmap_blocks blocks
	 * (rhinetdv_query_tag_caps)
	 */
	const void *bitmap;
	/* DIFF: twin memory from ibv_alloc_dm, and where in it the copy of
	 * the buffer starts
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

enum rhinetdv_irecv_flags {
	RHINETDV_IRECV_ANY_SOURCE = 1 << 0, /* src_node/src_endpoint ignored */
};

enum rhinetdv_irecv_attr_mask {
	/* mode and its parameters are set (rhinetdv 1.4) */
	RHINETDV_IRECV_ATTR_MASK_XFER = 1 << 0,
};

struct rhinetdv_irecv_attr {
	uint64_t comp_mask; /* enum rhinetdv_irecv_attr_mask */
	uint64_t wr_id;
	void *addr; /* where the message goes (its first length bytes) */
	uint32_t length;
	uint32_t lkey; /* MR with local write, in the endpoint's PD */
	uint64_t tag;
	uint64_t tag_mask; /* the bits of tag that must match; ~0: all */
	uint16_t src_node;
	uint16_t reserved0; /* 0 */
	uint32_t src_endpoint;
	uint32_t flags; /* enum rhinetdv_irecv_flags */
	uint32_t reserved1; /* 0 */
	/* With RHINETDV_IRECV_ATTR_MASK_XFER (a caller of RHINETDV_1.2 passes
	 * the structure without these):
	 */
	uint32_t mode; /* enum rhinetdv_mode: BASIC, TWIN, BITMAP, STRIDE */
	/* STRIDE: bytes per block; BITMAP: bytes per bit of the bitmap */
	uint32_t block;
	/* STRIDE: count blocks stride apart from addr, which holds
	 * (count - 1) * stride + block of length bytes; the irecv takes
	 * block * count bytes of the message
	 */
	uint32_t count;
	uint32_t bitmap_lkey; /* BITMAP */
	uint64_t stride; /* STRIDE, >= block */
	/* BITMAP: bit i (LSB first in each byte) marks bytes
	 * [i*block, (i+1)*block) of length; local memory in an MR of the
	 * endpoint's PD
	 */
	const void *bitmap;
	/* TWIN: twin memory from ibv_alloc_dm that also gets the message,
	 * from twin_offset on
	 */
	struct ibv_dm *twin;
	uint64_t twin_offset;
};

/*
 * Posts an isend. inlen: sizeof(*attr) as the caller knows it. ENOMEM:
 * max_outstanding operations in flight; EINVAL: bad flags or fields,
 * unknown comp_mask bits, mode fields without RHINETDV_ISEND_ATTR_MASK_XFER,
 * a mode an isend does not take (TWIN), INLINE with a partial mode, a zero
 * or overlapping stride, blocks beyond the buffer, a twin of another
 * device or shorter than twin_offset + length (so that what the NIC would
 * refuse does not take the endpoint to error).
 * Completes as RHINETDV_OP_ISEND (errors always, success if SIGNALED):
 * REM_OP_ERR when the receiving endpoint went away or cancelled its
 * irecv during the transfer.
 */
int rhinetdv_isend(struct rhinetdv_endpoint *ep,
		   const struct rhinetdv_isend_attr *attr, size_t inlen);
/*
 * Posts an irecv; *handle (may be NULL) names it for rhinetdv_irecv_cancel.
 * ENOMEM: max_irecv irecvs are outstanding (or the oldest still waits in
 * the ring); EINVAL as for rhinetdv_isend (an irecv does not take DIFF).
 * Every irecv completes as RHINETDV_OP_IRECV: byte_len is the message's
 * length, rhinetdv_poll_ex gives its tag and source; IBV_WC_LOC_LEN_ERR
 * when it was longer than the irecv takes (length bytes, or block * count
 * with STRIDE), which then holds its first bytes, IBV_WC_WR_FLUSH_ERR
 * when cancelled, IBV_WC_REM_OP_ERR when the sender gave the message up.
 */
int rhinetdv_irecv(struct rhinetdv_endpoint *ep,
		   const struct rhinetdv_irecv_attr *attr, size_t inlen,
		   uint32_t *handle);
/*
 * Takes a posted irecv back. 0: the NIC was asked; the irecv completes
 * either with IBV_WC_WR_FLUSH_ERR (cancelled) or normally (a message
 * matched it first). ENOENT: no such irecv outstanding.
 */
int rhinetdv_irecv_cancel(struct rhinetdv_endpoint *ep, uint32_t handle);

struct rhinetdv_tag_info {
	uint32_t found; /* 1: a message matched; the rest describes it */
	uint32_t length;
	uint16_t src_node;
	uint16_t reserved0;
	uint32_t src_endpoint;
	uint64_t tag;
};

/*
 * iprobe: the oldest unexpected message that an irecv with
 * *sel's source, tag and mask would take, without receiving it (addr,
 * length, lkey, wr_id and the mode fields of *sel are not used). Waits
 * for the NIC's answer (no system call). 0 and info->found, or an errno.
 */
int rhinetdv_iprobe(struct rhinetdv_endpoint *ep,
		    const struct rhinetdv_irecv_attr *sel, size_t inlen,
		    struct rhinetdv_tag_info *info);

enum rhinetdv_tag_caps_mask {
	/* max_bitmap_blocks is set (rhinetdv 1.4) */
	RHINETDV_TAG_CAPS_MASK_XFER = 1 << 0,
};

struct rhinetdv_tag_caps {
	uint64_t comp_mask; /* by the library: enum rhinetdv_tag_caps_mask */
	uint32_t max_eager; /* basic isends up to this size go eagerly */
	uint32_t max_irecv; /* of this endpoint */
	/* The most blocks a BITMAP isend selects from (ceil(length / block)) */
	uint32_t max_bitmap_blocks;
	uint32_t reserved;
};
int rhinetdv_query_tag_caps(struct rhinetdv_endpoint *ep,
			    struct rhinetdv_tag_caps *caps, size_t inlen);

#endif /* INFINIBAND_RHINETDV_TAG_H */
