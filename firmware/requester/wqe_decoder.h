// SPDX-License-Identifier: BSD-2-Clause
// Send WQE decoder: turns the bytes the NIC fetched from a send queue (or
// took from the doorbell page) into a checked description of the work.
// Pure: no state, no host access, so it can be fuzzed alone.
#pragma once

#include <cstdint>
#include <span>

#include "rhinet/hw.h"

namespace rhinet::fw {

// A WQE's raw bytes, its slots laid out contiguously.
struct RawWqe {
  alignas(8) uint8_t bytes[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
};

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
  uint32_t bind_mw_key = 0;  // BIND_MW: u.bind
  uint32_t bind_mr_lkey = 0;
  uint64_t bind_length = 0;
  uint64_t tag_mask = 0;  // IPROBE: u.tag
  uint32_t tag_flags = 0;
  uint64_t reg_length = 0;  // REG_MR: u.reg
  uint32_t reg_pages = 0;
  uint8_t reg_page_shift = 0;
  uint32_t num_sge = 0;     // SGEs in the raw WQE at offset 48
  uint32_t inline_len = 0;  // inline bytes in the raw WQE at offset 48
  uint64_t length = 0;      // message length in bytes
  bool has_grh = false;     // RHN_WQE_F_GRH: grh is the last slot
  uint8_t xfer_mode = RHN_XFER_BASIC;  // not basic: xfer is the last slot
  // Set by the requester, not decoded: a DIFF only compares with its twin
  // while it is sent (the twin takes the bytes when the WQE completes).
  bool keep_twin = false;
  // Which of the slot copies below the last decode filled (kFilled*); the
  // others are all zero. A decode clears only these: zeroing all four for
  // every WQE took most of its time.
  uint8_t filled = 0;
  static constexpr uint8_t kFilledGrh = 1, kFilledXfer = 2, kFilledMcast = 4,
                           kFilledColl = 8;
  // The slot copies, last so a decode can reset the fields above at once.
  rhn_wqe_grh grh{};
  rhn_wqe_xfer xfer{};
  // MCAST_LIST: its destination list (the last slot; xfer the one before).
  rhn_wqe_mcast mcast{};
  // COLLECTIVE: its description (the last slot).
  rhn_wqe_coll coll{};
};

// Slots the WQE beginning with this slot occupies (1..8), or 0 if the
// first slot is already invalid (ext_units out of range).
uint32_t wqe_slot_count(const uint8_t* first_slot);

// Validates and decodes. Returns RHN_SYN_NONE or the reason it is refused
// (RHN_SYN_BAD_OPCODE, RHN_SYN_BAD_WQE, RHN_SYN_LENGTH).
rhn_syndrome decode_send_wqe(const RawWqe& raw, uint32_t slots,
                             uint32_t max_msg_size, DecodedWqe& out);

// The i-th SGE of a decoded WQE (i < num_sge).
rhn_sge wqe_sge(const RawWqe& raw, uint32_t i);

// The inline payload of a decoded WQE.
inline std::span<const uint8_t> wqe_inline(const RawWqe& raw,
                                           const DecodedWqe& w) {
  return {raw.bytes + RHN_OFFSETOF(rhn_send_wqe, d), w.inline_len};
}

inline bool is_atomic(uint8_t opcode) {
  return opcode == RHN_OP_FETCH_ADD || opcode == RHN_OP_CMP_SWAP;
}

}  // namespace rhinet::fw
