// SPDX-License-Identifier: BSD-2-Clause
// Send WQE decoder: turns the bytes the NIC fetched from a send queue (or
// took from the doorbell page) into a checked description of the work.
// Pure: no state, no host access, so it can be fuzzed alone.
#pragma once

#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// A WQE's raw bytes, its slots laid out contiguously.
struct RawWqe {
  alignas(8) uint8_t bytes[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
};

// The operand area of a send WQE (the union in struct rhn_send_wqe).
using WqeOperands = decltype(rhn_send_wqe::u);

struct DecodedWqe {
  uint8_t opcode = 0;
  uint8_t flags = 0;
  uint8_t slots = 1;
  uint16_t wqe_index = 0;
  uint16_t dst_node = 0;
  uint32_t dst_qpn = 0;
  uint32_t imm_data = 0;
  uint32_t remote_key = 0;
  uint64_t remote_addr = 0;
  uint64_t status_addr = 0;
  uint32_t status_lkey = 0;
  uint32_t qkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // Operations without data (RHN_OPF_NO_DATA): the operand area as the
  // WQE has it (a bind's, a registration's, a probe's; see rhn_send_wqe),
  // read by the family.
  WqeOperands operands{};
  uint32_t num_sge = 0;     // SGEs in the raw WQE at offset 48
  uint32_t inline_len = 0;  // inline bytes in the raw WQE at offset 48
  uint64_t length = 0;      // message length in bytes
  bool has_grh = false;     // RHN_WQE_F_GRH: grh is the last slot
  uint8_t xfer_mode = RHN_XFER_BASIC;  // not basic: xfer is the last slot
  // Set by the requester, not decoded: a DIFF only compares with its twin
  // while it is sent (the twin takes the bytes when the WQE completes).
  bool keep_twin = false;
  // Which of the slot copies below the last decode filled (kFilled*); the
  // others are all zero. A decode clears only these: zeroing all three for
  // every WQE took most of its time.
  uint8_t filled = 0;
  static constexpr uint8_t kFilledGrh = 1, kFilledXfer = 2, kFilledFamily = 4;
  // The slot copies, last so a decode can reset the fields above at once.
  rhn_wqe_grh grh{};
  rhn_wqe_xfer xfer{};
  // The family's own last slot, for opcodes whose row has one
  // (RHN_EXT_MCAST, RHN_EXT_COLL; xfer is the slot before it). The family
  // reads it with family_slot<T>().
  alignas(8) uint8_t family_slot[RHN_SQ_SLOT_SIZE]{};
};

// The family's own last slot of a decoded WQE as its structure T (struct
// rhn_wqe_mcast, struct rhn_wqe_coll).
template <class T>
T family_slot(const DecodedWqe& w) {
  static_assert(sizeof(T) == sizeof(w.family_slot));
  T t;
  memcpy(&t, w.family_slot, sizeof(t));
  return t;
}

// Slots the WQE beginning with this slot occupies (1..8), or 0 if the
// first slot is already invalid (ext_units out of range).
uint32_t wqe_slot_count(const uint8_t* first_slot);

// Bytes of the WQE beginning with this slot that are worth copying: its
// slots, or the first one alone when that is already invalid (what a
// fetch from the ring reads too).
inline uint32_t wqe_copy_bytes(const uint8_t* first_slot) {
  const uint32_t n = wqe_slot_count(first_slot);
  return (n ? n : 1) * RHN_SQ_SLOT_SIZE;
}

// Copies the WQE at the start of src (wqe_copy_bytes of it) into dst,
// a slot's 16 words at a time, unrolled: most WQEs are one slot, which
// this copies in 32 loads and stores, where a copy loop of unknown
// length spends about as much again on the loop.
inline void copy_wqe(RawWqe& dst, const RawWqe& src) {
  using Word = uint32_t __attribute__((may_alias));
  static_assert(RHN_SQ_SLOT_SIZE == 16 * sizeof(Word));
  const uint32_t slots = wqe_copy_bytes(src.bytes) / RHN_SQ_SLOT_SIZE;
  auto* d = reinterpret_cast<Word*>(dst.bytes);
  const auto* w = reinterpret_cast<const Word*>(src.bytes);
  for (uint32_t i = 0; i < slots; i++, d += 16, w += 16) {
#pragma GCC unroll 16
    for (uint32_t j = 0; j < 16; j++) d[j] = w[j];
  }
}

// Validates and decodes. Returns RHN_SYN_NONE or the reason it is refused
// (RHN_SYN_BAD_OPCODE, RHN_SYN_BAD_WQE, RHN_SYN_BAD_XFER, RHN_SYN_LENGTH).
// What an opcode may carry and which slots it may end with are its row's
// in the operation table (hw_ops.h); its family checks its own parts
// (OpFamily::decode).
rhn_syndrome decode_send_wqe(const RawWqe& raw, uint32_t slots,
                             uint32_t max_msg_size, DecodedWqe& out);

// The common WQE's fast decode: a WRITE or SEND of one slot (one SGE or
// inline data; no GRH or partial transfer), read in place. True when the
// WQE is one and decode_send_wqe would accept it: `out` is then what
// decode_send_wqe makes of it. False (out untouched) for every other WQE,
// which decode_send_wqe takes.
bool decode_plain_wqe(const RawWqe& raw, uint32_t slots, uint32_t max_msg_size,
                      DecodedWqe& out);

// The i-th SGE of a decoded WQE (i < num_sge), read in place (every WQE
// reads its SGEs twice: a call and a copy each cost more than the loads).
inline rhn_sge wqe_sge(const RawWqe& raw, uint32_t i) {
  const size_t at = RHN_OFFSETOF(rhn_send_wqe, d) + i * sizeof(rhn_sge);
  rhn_sge s;
  s.addr = field_at<uint64_t>(raw.bytes, at + RHN_OFFSETOF(rhn_sge, addr));
  s.length = field_at<uint32_t>(raw.bytes, at + RHN_OFFSETOF(rhn_sge, length));
  s.lkey = field_at<uint32_t>(raw.bytes, at + RHN_OFFSETOF(rhn_sge, lkey));
  return s;
}

// The inline payload of a decoded WQE.
inline Span<const uint8_t> wqe_inline(const RawWqe& raw, const DecodedWqe& w) {
  return {raw.bytes + RHN_OFFSETOF(rhn_send_wqe, d), w.inline_len};
}

}  // namespace rhinet::fw
