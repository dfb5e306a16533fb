// SPDX-License-Identifier: BSD-2-Clause
// TM SRQs' entry in the module list (ops/registry.cpp). Their tables are
// tag matching's (ops/tag), reset with it.
#include "ops/family.h"
#include "ops/tm/tm.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_TM_PULL}, {RHN_FW_TM_FIN}};

void fw_message(Impl& m, Peer& p, const Packet& pkt) {
  if (pkt.op.rkey == RHN_FW_TM_PULL)
    tm_pull(m, p, pkt);
  else
    tm_fin(m, p, pkt);
}

}  // namespace

extern const FamilyModule kTmModule{
    .name = "tm",
    .id = FwOwner::kTm,
    .srq_gone =
        [](Impl& m, uint32_t srqn) {
          if (m.srqs[srqn].tm) tm_srq_gone(m, srqn);  // its tag list
        },
    .run = [](Impl& m, uint32_t budget) { return tm_run(m, budget); },
    .next_deadline = [](const Impl& m) { return tm_next_retry(m); },
    .fw_kinds = kFwKinds,
    .on_fw_message = fw_message,
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { tm_fw_done(m, cookie, syndrome); },
    .query_device = [](const Impl& m,
                       rhn_device_attr& a) { a.tm_max_tags = tm_max_tags(m); },
    .srq_kick =
        [](Impl& m, uint32_t srqn, uint64_t value) {
          // A TM SRQ's tag-list operations run now; receives read the
          // SRQ record when they need a WQE.
          if (value & RHN_DB_SRQ_TM_OPS) tm_run_ops(m, srqn);
        },
    .placed =
        [](Impl& m, RxContext& rx) {
          if (rx.list_entry != kNone) tm_placed(m, rx);  // matched a tag list
        },
};

}  // namespace rhinet::fw
