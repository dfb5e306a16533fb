// SPDX-License-Identifier: BSD-2-Clause
// Tag matching's entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/tag/tag.h"

namespace rhinet::fw {
namespace {

void qp_gone(Impl& m, uint32_t qpn, QpGone why) {
  if (why != QpGone::kDestroyed) tag_cancel_qp(m, qpn, why == QpGone::kFlushed);
}

void node_failed(Impl& m, uint16_t node, NodeLoss why) {
  // A node that lost its state takes its queued isends with it.
  tag_node_failed(m, node, why != NodeLoss::kTimedOut);
}

}  // namespace

extern const FamilyModule kTagModule{
    .name = "tag",
    .id = FwOwner::kTag,
    .place = tag_place,
    .reset = tag_reset,
    .qp_gone = qp_gone,
    .node_failed = node_failed,
};

}  // namespace rhinet::fw
