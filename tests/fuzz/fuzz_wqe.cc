// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the send WQE decoder: any bytes give a decoded WQE whose SGEs and
// inline data lie inside the raw WQE, or a refusal. Decoding into a
// DecodedWqe that earlier inputs left behind (as a QP's is) gives the same
// as decoding into a fresh one. What it accepts obeys the operation table
// (hw_ops.h), and built again with the contract's builders (hw_wqe.h) from
// what was decoded, decodes the same: the builders and the decoder agree
// on the layout.
#include <cstdlib>
#include <cstring>

#include "requester/wqe_decoder.h"

using namespace rhinet::fw;

namespace {

// Everything a decode gives but the slot count (a WQE may have more
// extension slots than its data needs) and keep_twin (not decoded).
bool same_decode(const DecodedWqe& a, const DecodedWqe& b) {
  return !std::memcmp(&a.grh, &b.grh, sizeof(a.grh)) &&
         !std::memcmp(&a.xfer, &b.xfer, sizeof(a.xfer)) &&
         !std::memcmp(a.family_slot, b.family_slot, sizeof(a.family_slot)) &&
         !std::memcmp(&a.operands, &b.operands, sizeof(a.operands)) &&
         a.filled == b.filled && a.opcode == b.opcode && a.flags == b.flags &&
         a.wqe_index == b.wqe_index && a.dst_node == b.dst_node &&
         a.dst_qpn == b.dst_qpn && a.imm_data == b.imm_data &&
         a.remote_key == b.remote_key && a.remote_addr == b.remote_addr &&
         a.status_addr == b.status_addr && a.status_lkey == b.status_lkey &&
         a.qkey == b.qkey && a.compare_add == b.compare_add &&
         a.swap == b.swap && a.num_sge == b.num_sge &&
         a.inline_len == b.inline_len && a.length == b.length &&
         a.has_grh == b.has_grh && a.xfer_mode == b.xfer_mode;
}

// The accepted WQE w (raw) built again with the builders: the base slot's
// addressing and operand fields as they were, then its SGEs or inline
// bytes and its last slots. Returns its slots (0: the builders refused).
uint32_t rebuild(const RawWqe& raw, const DecodedWqe& w, RawWqe& out) {
  std::memset(out.bytes, 0, sizeof(out.bytes));
  rhn_wqe_start(out.bytes, w.opcode,
                w.flags & ~(RHN_WQE_F_INLINE | RHN_WQE_F_GRH), w.wqe_index);
  // dst_node .. remote_key, then remote_addr and the operand area.
  constexpr size_t kDst = RHN_OFFSETOF(rhn_send_wqe, dst_node);
  constexpr size_t kNumSge = RHN_OFFSETOF(rhn_send_wqe, num_sge);
  constexpr size_t kRemote = RHN_OFFSETOF(rhn_send_wqe, remote_addr);
  constexpr size_t kData = RHN_OFFSETOF(rhn_send_wqe, d);
  std::memcpy(out.bytes + kDst, raw.bytes + kDst, kNumSge - kDst);
  std::memcpy(out.bytes + kRemote, raw.bytes + kRemote, kData - kRemote);
  uint32_t units = 0;
  if (w.flags & RHN_WQE_F_INLINE) {
    const auto bytes = wqe_inline(raw, w);
    rhn_wqe_put_inline(out.bytes, 0, bytes.data(),
                       static_cast<uint32_t>(bytes.size()));
    units = rhn_wqe_set_inline(out.bytes, w.inline_len);
  } else {
    for (uint32_t i = 0; i < w.num_sge; i++) {
      const rhn_sge s = wqe_sge(raw, i);
      rhn_wqe_put_sge(out.bytes, i, s.addr, s.length, s.lkey);
    }
    units = rhn_wqe_set_sges(out.bytes, w.num_sge);
  }
  rhn_wqe_tail tail{};
  tail.xfer_mode = w.xfer_mode;
  if (w.filled & DecodedWqe::kFilledXfer) tail.xfer = &w.xfer;
  // The family's own slot: the structure its row names.
  const rhn_wqe_mcast mcast = family_slot<rhn_wqe_mcast>(w);
  const rhn_wqe_coll coll = family_slot<rhn_wqe_coll>(w);
  const uint32_t ext = rhn_op_row(w.opcode)->ext;
  if ((w.filled & DecodedWqe::kFilledFamily) && (ext & RHN_EXT_MCAST))
    tail.mcast = &mcast;
  if ((w.filled & DecodedWqe::kFilledFamily) && (ext & RHN_EXT_COLL))
    tail.coll = &coll;
  if (w.filled & DecodedWqe::kFilledGrh) tail.grh = &w.grh;
  return rhn_wqe_finish(out.bytes, units, &tail);
}

}  // namespace

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
  if (!same_decode(reused, w) || reused.keep_twin) abort();
  // An opcode the table lists for the send queue.
  const rhn_op_desc* row = rhn_op_row(w.opcode);
  if (!row || (row->flags & RHN_OPF_RECV_QUEUE)) abort();
  // Built again by the builders, in as many slots or fewer.
  RawWqe again;
  const uint32_t again_slots = rebuild(raw, w, again);
  DecodedWqe w2;
  if (again_slots == 0 || again_slots > try_slots ||
      decode_send_wqe(again, again_slots, 1u << 31, w2) != RHN_SYN_NONE ||
      !same_decode(w2, w))
    abort();
  // Its last slots are ones its row allows, and the family's own slot is
  // there if the row says it always is.
  const bool xfer = w.xfer_mode != RHN_XFER_BASIC;
  const uint32_t always = row->ext & (RHN_EXT_MCAST | RHN_EXT_COLL);
  const bool family = w.filled & DecodedWqe::kFilledFamily;
  const bool mcast = family && (always & RHN_EXT_MCAST);
  const uint32_t ext = (w.has_grh ? uint32_t{RHN_EXT_GRH} : 0u) |
                       (xfer ? uint32_t{RHN_EXT_XFER} : 0u) |
                       (family ? always : 0u);
  if ((ext & ~uint32_t{row->ext}) || (ext & always) != always ||
      (family && !always))
    abort();
  // A WQE the decoder accepts must be self-consistent: SGEs and inline
  // data in the slots before a GRH, partial-transfer descriptor,
  // multicast list or collective.
  const size_t room =
      (try_slots - (w.has_grh ? 1 : 0) - (xfer ? 1 : 0) - (family ? 1 : 0)) *
          RHN_SQ_SLOT_SIZE -
      RHN_OFFSETOF(rhn_send_wqe, d);
  if (mcast) {
    const rhn_wqe_mcast list = family_slot<rhn_wqe_mcast>(w);
    if (w.has_grh || list.count == 0 || list.count > RHN_MCAST_MAX_DESTS)
      abort();
    for (uint8_t b : list.reserved)
      if (b) abort();
  }
  if (w.inline_len > room || w.num_sge * sizeof(rhn_sge) > room) abort();
  uint64_t total = 0;
  for (uint32_t i = 0; i < w.num_sge; i++) total += wqe_sge(raw, i).length;
  if (xfer) {
    const rhn_wqe_xfer& x = w.xfer;
    // A mode the opcode's row lists; one SGE, no inline data.
    if (!rhn_op_takes_mode(w.opcode, w.xfer_mode) || w.num_sge != 1 ||
        (w.flags & RHN_WQE_F_INLINE))
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
