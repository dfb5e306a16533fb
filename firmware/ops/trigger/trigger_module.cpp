// SPDX-License-Identifier: BSD-2-Clause
// Triggered operations' entry in the module list (ops/registry.cpp).
#include "ops/family.h"
#include "ops/trigger/trigger.h"

namespace rhinet::fw {
namespace {

constexpr uint16_t kAdminOps[] = {RHN_ADMIN_CREATE_TRIGGER,
                                  RHN_ADMIN_DESTROY_TRIGGER,
                                  RHN_ADMIN_QUERY_TRIGGER};

void query_device(const Impl& m, rhn_device_attr& a) {
  a.max_trigger_counters = m.trig.counters.size();
  a.max_trigger_parked = m.trig.entries.size();
}

}  // namespace

extern const FamilyModule kTriggerModule{
    .name = "trigger",
    .id = FwOwner::kTrigger,
    .place = trigger_place,
    .reset = trigger_reset,
    // Its parked and fired WQEs complete flushed whenever the QP's work
    // ends (the error state, a reset, its destruction).
    .qp_gone =
        [](Impl& m, uint32_t qpn, QpGone why) {
          if (why != QpGone::kDestroyed) trigger_qp_gone(m, qpn);
        },
    .admin_ops = kAdminOps,
    .on_admin = trigger_admin,
    .context_gone = trigger_context_gone,
    .caps = RHN_CAP_TRIGGER,
    .query_device = query_device,
};

}  // namespace rhinet::fw
