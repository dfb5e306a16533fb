// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the send WQE decoder: any bytes give a decoded WQE whose SGEs and
// inline data lie inside the raw WQE, or a refusal.
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
  if (decode_send_wqe(raw, try_slots, 1u << 31, w) != RHN_SYN_NONE) return 0;
  // A WQE the decoder accepts must be self-consistent.
  const size_t room = try_slots * RHN_SQ_SLOT_SIZE - 48;
  if (w.inline_len > room || w.num_sge * sizeof(rhn_sge) > room) abort();
  uint64_t total = 0;
  for (uint32_t i = 0; i < w.num_sge; i++) total += wqe_sge(raw, i).length;
  if (!(w.flags & RHN_WQE_F_INLINE) && total != w.length) abort();
  if (w.length > (1u << 31)) abort();
  return 0;
}
