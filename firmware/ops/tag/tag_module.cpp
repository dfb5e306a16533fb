// SPDX-License-Identifier: BSD-2-Clause
// Tag matching's entry in the module list (ops/registry.cpp).
#include "ops/family.h"

namespace rhinet::fw {
namespace {

void qp_gone(Impl& m, uint32_t qpn, QpGone why) {
  if (why != QpGone::kDestroyed) m.tag_cancel_qp(qpn, why == QpGone::kFlushed);
}

void node_failed(Impl& m, uint16_t node, NodeLoss why) {
  // A node that lost its state takes its queued isends with it.
  m.tag_node_failed(node, why != NodeLoss::kTimedOut);
}

}  // namespace

extern const FamilyModule kTagModule{
    .name = "tag",
    .id = FwOwner::kTag,
    .reset = [](Impl& m) { m.tag_reset(); },
    .qp_gone = qp_gone,
    .node_failed = node_failed,
    .run = [](Impl& m, uint32_t budget) { return m.tag_run(budget); },
    .rq_kick = [](Impl& m, uint32_t qpn) { m.tag_scan_rq(qpn); },
};

}  // namespace rhinet::fw
