// SPDX-License-Identifier: BSD-2-Clause
// ops/tag: tag matching: the functions the family's module entry
// (tag_module.cpp) and the other families call.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

void tag_place(Impl& m, CardMemory& mem);
void tag_reset(Impl& m);
// Reads the irecvs the endpoint posted since the last call (each takes
// a queued message it matches) and moves the oldest waiting ones into
// the posted list while it has room.
void tag_scan_rq(Impl& m, uint32_t qpn);
// The endpoint stops: its posted and matched receives complete flushed
// (or vanish), its unexpected messages are refused to their senders.
void tag_cancel_qp(Impl& m, uint32_t qpn, bool flush);
// restarted: the node lost its state (its queued isends go too);
// otherwise it stopped answering (receives waiting for its data fail).
void tag_node_failed(Impl& m, uint16_t node, bool restarted);
bool tag_run(Impl& m, uint32_t budget);  // owed CTSs and streams, stalled RQs
// tag_run has work (it has no timer): CTSs or streams owed, or irecvs
// that waited for room since room was freed.
inline bool tag_owes(const Impl& m) {
  return !m.tags.cts_owed.empty() || !m.tags.streams_owed.empty() ||
         (m.tags.rq_retry && m.tags.room_freed);
}

// What the family claims, for the registry.
extern const OpFamily kTagFamily;  // tag.cpp: isends
inline constexpr OpClaims kTagClaims{
    .family = &kTagFamily,
    .wqe_ops = {RHN_OP_ISEND},
    .requests = {RHN_WOP_TAG, RHN_WOP_TAG_DATA},
    .answers = {RHN_WOP_TAG_RESP},
};

// IPROBE, IRECV_CANCEL: executed by the NIC, no message.
extern const OpFamily kTagLocalFamily;  // tag.cpp
inline constexpr OpClaims kTagLocalClaims{
    .family = &kTagLocalFamily,
    .wqe_ops = {RHN_OP_IPROBE, RHN_OP_IRECV_CANCEL},
};

}  // namespace rhinet::fw
