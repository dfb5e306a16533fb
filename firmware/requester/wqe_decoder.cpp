// SPDX-License-Identifier: BSD-2-Clause
#include "requester/wqe_decoder.h"

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr uint8_t kKnownFlags = RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED |
                                RHN_WQE_F_FENCE | RHN_WQE_F_INLINE |
                                RHN_WQE_F_STATUS_WORD | RHN_WQE_F_AREA |
                                RHN_WQE_F_SIGNAL_REMOTE | RHN_WQE_F_GRH;

// What the decoder needs of each opcode's row of the operation table, by
// opcode (an array: looking a row up is on every WQE's path).
struct Row {
  bool listed;  // a send-queue opcode of the table
  uint8_t flags, modes, ext;
};

constexpr Array<Row, 256> make_rows() {
  Array<Row, 256> t{};
#define RHN_DECODER_ROW_(op, name, wire, cqe, dv, dv_name, flags, modes, ext, \
                         cap)                                                 \
  t[op] = {((flags)&RHN_OPF_RECV_QUEUE) == 0, static_cast<uint8_t>(flags),    \
           static_cast<uint8_t>(modes), static_cast<uint8_t>(ext)};
  RHN_OP_TABLE(RHN_DECODER_ROW_)
#undef RHN_DECODER_ROW_
  return t;
}

constexpr Array<Row, 256> kRows = make_rows();

// The slot copies as in DecodedWqe{}, writing only those a decode filled.
void clear_slot_copies(DecodedWqe& out) {
  const uint8_t filled = out.filled;
  if (filled & DecodedWqe::kFilledGrh) out.grh = {};
  if (filled & DecodedWqe::kFilledXfer) out.xfer = {};
  if (filled & DecodedWqe::kFilledFamily)
    memset(out.family_slot, 0, sizeof(out.family_slot));
  out.filled = 0;
}

// out = DecodedWqe{}, without writing the slot copies that are zero
// already.
void reset(DecodedWqe& out) {
  static const DecodedWqe kEmpty{};
  clear_slot_copies(out);
  copy_small(static_cast<void*>(&out), &kEmpty, offsetof(DecodedWqe, grh));
}

}  // namespace

uint32_t wqe_slot_count(const uint8_t* first_slot) {
  const uint8_t ext = first_slot[RHN_OFFSETOF(rhn_send_wqe, ext_units)];
  return ext > RHN_WQE_MAX_EXT_UNITS ? 0 : 1u + ext;
}

bool decode_plain_wqe(const RawWqe& raw, uint32_t slots, uint32_t max_msg_size,
                      DecodedWqe& out) {
  const uint8_t* b = raw.bytes;
  const uint8_t opcode = b[RHN_OFFSETOF(rhn_send_wqe, opcode)];
  const uint8_t flags = b[RHN_OFFSETOF(rhn_send_wqe, flags)];
  if ((opcode != RHN_OP_WRITE && opcode != RHN_OP_SEND) || slots != 1 ||
      b[RHN_OFFSETOF(rhn_send_wqe, ext_units)] != 0 ||
      b[RHN_OFFSETOF(rhn_send_wqe, xfer_mode)] != RHN_XFER_BASIC ||
      (flags & ~kKnownFlags) || (flags & RHN_WQE_F_GRH) ||
      field_at<uint16_t>(b, RHN_OFFSETOF(rhn_send_wqe, xflags)) != 0)
    return false;
  // Both opcodes take inline data and carry no family slot or decode
  // (the generic decoder's checks that are left).
  static_assert((kRows[RHN_OP_WRITE].flags & RHN_OPF_INLINE) != 0 &&
                (kRows[RHN_OP_SEND].flags & RHN_OPF_INLINE) != 0);
  const auto n = field_at<uint16_t>(b, RHN_OFFSETOF(rhn_send_wqe, num_sge));
  uint64_t length = n;
  if (flags & RHN_WQE_F_INLINE) {
    if (n > RHN_WQE_BASE_INLINE) return false;
  } else {
    static_assert(RHN_WQE_BASE_SGES == 1);
    if (n > 1) return false;
    length = n ? field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, d) +
                                           RHN_OFFSETOF(rhn_sge, length))
               : 0;
  }
  if (length > max_msg_size) return false;
  // Every field set here, rather than reset() first: copying a blank
  // DecodedWqe over it cost as much as the rest of this decode.
  if (out.filled) clear_slot_copies(out);
  out.opcode = opcode;
  out.flags = flags;
  out.slots = 1;
  out.wqe_index = field_at<uint16_t>(b, RHN_OFFSETOF(rhn_send_wqe, wqe_index));
  out.dst_node = field_at<uint16_t>(b, RHN_OFFSETOF(rhn_send_wqe, dst_node));
  out.dst_qpn = field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, dst_qpn));
  out.imm_data = field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, imm_data));
  out.remote_key =
      field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, remote_key));
  out.remote_addr =
      field_at<uint64_t>(b, RHN_OFFSETOF(rhn_send_wqe, remote_addr));
  out.status_addr =
      field_at<uint64_t>(b, RHN_OFFSETOF(rhn_send_wqe, u.status.addr));
  out.status_lkey =
      field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, u.status.lkey));
  out.qkey = field_at<uint32_t>(b, RHN_OFFSETOF(rhn_send_wqe, u.status.qkey));
  out.compare_add = 0;
  out.swap = 0;
  out.operands = {};
  const bool in = flags & RHN_WQE_F_INLINE;
  out.num_sge = in ? 0 : n;
  out.inline_len = in ? n : 0;
  out.length = length;
  out.has_grh = false;
  out.xfer_mode = RHN_XFER_BASIC;
  out.keep_twin = false;
  return true;
}

rhn_syndrome decode_send_wqe(const RawWqe& raw, uint32_t slots,
                             uint32_t max_msg_size, DecodedWqe& out) {
  rhn_send_wqe w;
  copy_small(&w, raw.bytes, sizeof(w));
  reset(out);
  // Every opcode the operation table lists for the send queue.
  const Row& row = kRows[w.opcode];
  if (!row.listed) return RHN_SYN_BAD_OPCODE;
  if (wqe_slot_count(raw.bytes) != slots || slots == 0) return RHN_SYN_BAD_WQE;
  if (w.flags & ~kKnownFlags) return RHN_SYN_BAD_WQE;
  if (w.xflags != 0) return RHN_SYN_BAD_WQE;  // its trigger slot not taken off
  out.opcode = w.opcode;
  out.flags = w.flags;
  out.slots = static_cast<uint8_t>(slots);
  out.wqe_index = w.wqe_index;
  out.dst_node = w.dst_node;
  out.dst_qpn = w.dst_qpn;
  out.imm_data = w.imm_data;
  out.remote_key = w.remote_key;
  out.remote_addr = w.remote_addr;
  // The GRH takes the last slot; payload descriptions use the others.
  out.has_grh = (w.flags & RHN_WQE_F_GRH) != 0;
  if (out.has_grh) {
    if (slots < 2) return RHN_SYN_BAD_WQE;
    memcpy(&out.grh, raw.bytes + (slots - 1) * RHN_SQ_SLOT_SIZE,
           sizeof(out.grh));
    out.filled |= DecodedWqe::kFilledGrh;
  }
  out.xfer_mode = w.xfer_mode;
  const bool has_xfer = w.xfer_mode != RHN_XFER_BASIC;
  // An opcode that never takes a partial transfer refuses one before its
  // other slots are looked at.
  if (has_xfer && !(row.ext & RHN_EXT_XFER))
    return w.xfer_mode > RHN_XFER_STRIDE ? RHN_SYN_BAD_WQE : RHN_SYN_BAD_XFER;
  if (out.has_grh && !(row.ext & RHN_EXT_GRH)) return RHN_SYN_BAD_WQE;
  // The family's own description (a multicast list's destinations, a
  // collective's) takes the last slot; the family checks it and the rest
  // of what is its own.
  const bool has_family_slot = row.ext & (RHN_EXT_MCAST | RHN_EXT_COLL);
  if (has_family_slot) {
    if (slots < 2) return RHN_SYN_BAD_WQE;
    memcpy(out.family_slot, raw.bytes + (slots - 1) * RHN_SQ_SLOT_SIZE,
           sizeof(out.family_slot));
    out.filled |= DecodedWqe::kFilledFamily;
  }
  const OpFamily* family = op_info(w.opcode).family;
  if (const auto family_decode = family ? family->decode : nullptr) {
    const rhn_syndrome s = family_decode(raw, out);
    if (s != RHN_SYN_NONE) return s;
  }
  // A partial transfer's descriptor takes the last slot left; the modes
  // an opcode takes are its row's.
  const uint32_t xfer_slot = slots - 1 - (has_family_slot ? 1 : 0);
  if (has_xfer) {
    if (w.xfer_mode > RHN_XFER_STRIDE) return RHN_SYN_BAD_WQE;
    if (!(row.modes & RHN_XFER_MODE_BIT(w.xfer_mode)) || out.has_grh ||
        xfer_slot < 1 || (w.flags & RHN_WQE_F_INLINE))
      return RHN_SYN_BAD_XFER;
    memcpy(&out.xfer, raw.bytes + xfer_slot * RHN_SQ_SLOT_SIZE,
           sizeof(out.xfer));
    out.filled |= DecodedWqe::kFilledXfer;
  }
  const uint32_t ext = slots - 1 - (out.has_grh ? 1 : 0) - (has_xfer ? 1 : 0) -
                       (has_family_slot ? 1 : 0);

  const bool atomic = row.flags & RHN_OPF_ATOMIC;
  if (atomic) {
    // Operands share the union with the status word reference.
    if (w.flags & (RHN_WQE_F_STATUS_WORD | RHN_WQE_F_INLINE))
      return RHN_SYN_BAD_WQE;
    out.compare_add = w.u.atomic.compare_add;
    out.swap = w.u.atomic.swap;
  } else if (row.flags & RHN_OPF_NO_DATA) {
    // No data; the family's operands share the union.
    if (w.flags & (RHN_WQE_F_STATUS_WORD | RHN_WQE_F_INLINE | RHN_WQE_F_AREA |
                   RHN_WQE_F_GRH) ||
        w.num_sge)
      return RHN_SYN_BAD_WQE;
    out.operands = w.u;
  } else {
    out.status_addr = w.u.status.addr;
    out.status_lkey = w.u.status.lkey;
    out.qkey = w.u.status.qkey;
  }

  if (w.flags & RHN_WQE_F_INLINE) {
    if (!(row.flags & RHN_OPF_INLINE)) return RHN_SYN_BAD_WQE;
    if (w.num_sge > RHN_WQE_BASE_INLINE + ext * RHN_SQ_SLOT_SIZE)
      return RHN_SYN_BAD_WQE;
    out.inline_len = w.num_sge;
    out.length = w.num_sge;
  } else {
    if (w.num_sge > RHN_WQE_BASE_SGES + ext * RHN_SGES_PER_EXT_UNIT)
      return RHN_SYN_BAD_WQE;
    out.num_sge = w.num_sge;
    uint64_t total = 0;
    for (uint32_t i = 0; i < out.num_sge; i++)
      total += wqe_sge(raw, i).length;  // 32-bit lengths cannot overflow
    out.length = total;
  }
  if (has_xfer) {
    // One SGE, and a descriptor that selects within it.
    const rhn_wqe_xfer& x = out.xfer;
    if (out.num_sge != 1) return RHN_SYN_BAD_XFER;
    for (uint8_t b : x.reserved)
      if (b) return RHN_SYN_BAD_XFER;
    switch (out.xfer_mode) {
      case RHN_XFER_STRIDE: {
        // Blocks that do not overlap on either side, and a message that
        // fits.
        if (x.block == 0 || x.count == 0 || x.local_stride < x.block ||
            x.remote_stride < x.block)
          return RHN_SYN_BAD_XFER;
        const uint64_t total = uint64_t{x.block} * x.count;
        if (total > max_msg_size) return RHN_SYN_LENGTH;
        const uint64_t last = uint64_t{x.count} - 1;
        if (x.local_stride > (uint64_t{1} << 40) ||
            x.remote_stride > (uint64_t{1} << 40) ||
            last * x.local_stride + x.block > out.length)
          return RHN_SYN_BAD_XFER;
        out.length = total;
        break;
      }
      case RHN_XFER_BITMAP:
        // The SGE is the extent; the bitmap's own key is checked when
        // the family sees the WQE (it needs the tables).
        if (x.block == 0 || out.length == 0) return RHN_SYN_BAD_XFER;
        break;
      default:  // TWIN, DIFF: the SGE against the twin
        if (out.length == 0) return RHN_SYN_BAD_XFER;
        break;
    }
  }
  if (w.opcode == RHN_OP_NOP && out.length != 0) return RHN_SYN_BAD_WQE;
  // At most one SGE, of the bytes the original value takes (the word's
  // width); whether an atomic may go without is its family's rule.
  if (atomic &&
      (out.num_sge > 1 ||
       out.length != rhn_atomic_width(w.opcode, w.imm_data) * out.num_sge))
    return RHN_SYN_LENGTH;
  if (out.length > max_msg_size) return RHN_SYN_LENGTH;
  return RHN_SYN_NONE;
}

}  // namespace rhinet::fw
