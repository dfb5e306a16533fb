// SPDX-License-Identifier: BSD-2-Clause
// TM SRQs' entry in the module list (ops/registry.cpp). Their tables are
// tag matching's (ops/tag), reset with it.
#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_TM_PULL}, {RHN_FW_TM_FIN}};

void fw_message(Impl& m, Peer& p, const Packet& pkt) {
  if (pkt.op.rkey == RHN_FW_TM_PULL)
    m.tm_pull(p, pkt);
  else
    m.tm_fin(p, pkt);
}

}  // namespace

extern const FamilyModule kTmModule{
    .name = "tm",
    .id = FwOwner::kTm,
    .srq_gone =
        [](Impl& m, uint32_t srqn) {
          if (m.srqs[srqn].tm) m.tm_srq_gone(srqn);  // its tag list
        },
    .run = [](Impl& m, uint32_t budget) { return m.tm_run(budget); },
    .next_deadline = [](const Impl& m) { return m.tm_next_retry(); },
    .fw_kinds = kFwKinds,
    .on_fw_message = fw_message,
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { m.tm_fw_done(cookie, syndrome); },
    .query_device = [](const Impl& m,
                       rhn_device_attr& a) { a.tm_max_tags = m.tm_max_tags(); },
    .srq_kick =
        [](Impl& m, uint32_t srqn, uint64_t value) {
          // A TM SRQ's tag-list operations run now; receives read the
          // SRQ record when they need a WQE.
          if (value & RHN_DB_SRQ_TM_OPS) m.tm_run_ops(srqn);
        },
    .placed =
        [](Impl& m, RxContext& rx) {
          if (rx.list_entry != kNone) m.tm_placed(rx);  // matched a tag list
        },
};

}  // namespace rhinet::fw
