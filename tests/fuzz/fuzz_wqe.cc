// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the send WQE decoder: any bytes give a decoded WQE whose SGEs and
// inline data lie inside the raw WQE, or a refusal. Decoding into a
// DecodedWqe that earlier inputs left behind (as a QP's is) gives the same
// as decoding into a fresh one.
#include <cstdlib>
#include <cstring>

#include "requester/wqe_decoder.h"

using namespace rhinet::fw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  RawWqe raw;
  std::memset(&raw, 0, sizeof(raw));
  std::memcpy(raw.bytes, data, size < sizeof(raw) ? size : sizeof(raw));
  const uint32_t slots = wqe_slot_count(raw.bytes);
  DecodedWqe w;
  const uint32_t try_slots = slots ? slots : 1;
  const rhn_syndrome syn = decode_send_wqe(raw, try_slots, 1u << 31, w);
  static DecodedWqe reused;  // what the previous inputs left
  if (decode_send_wqe(raw, try_slots, 1u << 31, reused) != syn) abort();
  if (syn != RHN_SYN_NONE) return 0;
  if (std::memcmp(&reused.grh, &w.grh, sizeof(w.grh)) ||
      std::memcmp(&reused.xfer, &w.xfer, sizeof(w.xfer)) ||
      std::memcmp(&reused.mcast, &w.mcast, sizeof(w.mcast)) ||
      std::memcmp(&reused.coll, &w.coll, sizeof(w.coll)) ||
      reused.filled != w.filled || reused.opcode != w.opcode ||
      reused.flags != w.flags || reused.length != w.length ||
      reused.num_sge != w.num_sge || reused.inline_len != w.inline_len ||
      reused.remote_addr != w.remote_addr || reused.has_grh != w.has_grh ||
      reused.xfer_mode != w.xfer_mode || reused.status_addr != w.status_addr ||
      reused.compare_add != w.compare_add || reused.tag_mask != w.tag_mask ||
      reused.reg_length != w.reg_length || reused.keep_twin)
    abort();
  // A WQE the decoder accepts must be self-consistent: SGEs and inline
  // data in the slots before a GRH, partial-transfer descriptor or
  // multicast list.
  const bool xfer = w.xfer_mode != RHN_XFER_BASIC;
  const bool mcast = w.opcode == RHN_OP_MCAST_LIST;
  const size_t room =
      (try_slots - (w.has_grh ? 1 : 0) - (xfer ? 1 : 0) - (mcast ? 1 : 0)) *
          RHN_SQ_SLOT_SIZE -
      48;
  if (mcast) {
    if (w.has_grh || w.mcast.count == 0 || w.mcast.count > RHN_MCAST_MAX_DESTS)
      abort();
    for (uint8_t b : w.mcast.reserved)
      if (b) abort();
  }
  if (w.inline_len > room || w.num_sge * sizeof(rhn_sge) > room) abort();
  uint64_t total = 0;
  for (uint32_t i = 0; i < w.num_sge; i++) total += wqe_sge(raw, i).length;
  if (xfer) {
    const rhn_wqe_xfer& x = w.xfer;
    // Table 1: which opcode takes which mode (an isend and each member of
    // an mcastB send as a PUSH does); one SGE, no inline data.
    // An mcastA and a shared region's update send as PUSHes too; a
    // SUBSCRIBE may bring its data into a twin (basic, twin).
    const bool push =
        (w.opcode == RHN_OP_WRITE || w.opcode == RHN_OP_ISEND || mcast ||
         w.opcode == RHN_OP_MCAST_SWITCH || w.opcode == RHN_OP_SHARE_UPDATE) &&
        (w.xfer_mode == RHN_XFER_STRIDE || w.xfer_mode == RHN_XFER_BITMAP ||
         w.xfer_mode == RHN_XFER_DIFF);
    const bool pull =
        (w.opcode == RHN_OP_READ &&
         (w.xfer_mode == RHN_XFER_STRIDE || w.xfer_mode == RHN_XFER_BITMAP ||
          w.xfer_mode == RHN_XFER_TWIN)) ||
        (w.opcode == RHN_OP_SUBSCRIBE && w.xfer_mode == RHN_XFER_TWIN);
    if (!(push || pull) || w.num_sge != 1 || (w.flags & RHN_WQE_F_INLINE))
      abort();
    if (w.xfer_mode == RHN_XFER_STRIDE) {
      // The blocks do not overlap and lie inside the one SGE.
      if (x.block == 0 || x.count == 0 || x.local_stride < x.block ||
          x.remote_stride < x.block)
        abort();
      if (w.length != uint64_t{x.block} * x.count) abort();
      if ((uint64_t{x.count} - 1) * x.local_stride + x.block > total) abort();
    } else {
      // Bitmap, TWIN, DIFF: the SGE is the extent, never empty.
      if (w.length != total || w.length == 0) abort();
      if (w.xfer_mode == RHN_XFER_BITMAP && x.block == 0) abort();
    }
  } else if (!(w.flags & RHN_WQE_F_INLINE) && total != w.length) {
    abort();
  }
  if (w.length > (1u << 31)) abort();
  return 0;
}
