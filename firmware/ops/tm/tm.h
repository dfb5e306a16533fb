// SPDX-License-Identifier: BSD-2-Clause
// ops/tm: ibverbs tag matching on TM SRQs (IBV_SRQT_TM): the functions the
// family's module entry (tm_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

// The SRQ's operation ring after a kick: adds, removes, syncs.
void tm_run_ops(Impl& m, uint32_t srqn);
// The SRQ goes: its tag list with it.
void tm_srq_gone(Impl& m, uint32_t srqn);
// The matching stage for a SEND on a QP whose SRQ is a TM SRQ: a
// tag-list entry, a receive WQE, or a rendezvous header taken whole
// (kConsumed: its data is pulled).
SrqLanding tm_land(Impl& m, Request& r, RxContext& rx);
// A message placed into an entry's buffer ended (complete_receive).
void tm_placed(Impl& m, RxContext& rx);
// A matched entry completes (ops/tag's complete_recv): status, CQE.
void tm_complete(Impl& m, const TagRecv& r, uint8_t status, uint8_t syndrome);
void tm_pull(Impl& m, Peer& p, const Packet& pkt);  // RHN_FW_TM_PULL arrived
void tm_fin(Impl& m, Peer& p, const Packet& pkt);   // RHN_FW_TM_FIN arrived
void tm_fw_done(Impl& m, uint64_t cookie, uint8_t syndrome);  // FwOwner::kTm
void tm_data(Impl& m, Peer& p, const Packet& pkt);  // RHN_WOP_TM_DATA arrived
bool tm_run(Impl& m, uint32_t budget);              // pulls and FINs due again
inline uint64_t tm_next_retry(const Impl& m) {
  return m.tags.tm_retries.empty() ? UINT64_MAX : m.tags.tm_retries.front().at;
}
// Entries one TM SRQ's list may hold: a context's share of the posted
// list (its handles are 16 bits).
inline uint32_t tm_max_tags(const Impl& m) {
  return m.tags.recv_quota < 0xffff ? m.tags.recv_quota : 0xffff;
}

// What the family claims, for the registry.
// No WQE of its own; its rendezvous data answers no WQE (on_nic_answer).
extern const OpFamily kTmFamily;  // tm.cpp
inline constexpr OpClaims kTmClaims{
    .family = &kTmFamily,
    .answers = {RHN_WOP_TM_DATA},
};

}  // namespace rhinet::fw
