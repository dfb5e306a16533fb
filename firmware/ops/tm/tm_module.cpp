// SPDX-License-Identifier: BSD-2-Clause
// TM SRQs' entry in the module list (ops/registry.cpp). Their tables are
// tag matching's (ops/tag), reset with it.
#include "ops/family.h"
#include "ops/tm/tm.h"

namespace rhinet::fw {
namespace {

constexpr FwKind kFwKinds[] = {{RHN_FW_TM_PULL}, {RHN_FW_TM_FIN}};

// CREATE_SRQ with RHN_CREATE_SRQ_F_TM: the list-op CQ, the list's size
// and the operation ring (whose record the NIC writes: nic_consumer).
rhn_admin_status srq_check(Impl& m, uint32_t ctx, const rhn_admin_create_srq& c,
                           uint32_t& detail) {
  if (!cq_of_context(m, c.cqn, ctx)) return detail = 6, RHN_ADMIN_BAD_HANDLE;
  if (c.max_tags < 1 || c.max_tags > tm_max_tags(m))
    return detail = 7, RHN_ADMIN_BAD_PARAM;
  if (c.ops_log_depth < 1 || c.ops_log_depth > kMaxWqLog)
    return detail = 8, RHN_ADMIN_BAD_PARAM;
  detail = 9;
  rhn_admin_status st = check_queue_memory(
      m, ctx, c.ops_ring, uint64_t{RHN_TM_OP_WQE_SIZE} << c.ops_log_depth,
      false);
  if (st != RHN_ADMIN_OK) return st;
  detail = 10;
  st = check_queue_memory(m, ctx, c.ops_record, sizeof(rhn_queue_record), true);
  return st;
}

void srq_attach(Impl& m, uint32_t srqn, const rhn_admin_create_srq& c) {
  TmSrq& s = m.tags.tm_srqs[srqn];
  s = TmSrq{};
  s.active = true;
  s.cqn = c.cqn;
  s.max_tags = c.max_tags;
  s.ops_log = c.ops_log_depth;
  s.ops_ring = to_ref(c.ops_ring);
  s.ops_record = to_ref(c.ops_record);
  hold_host_ref(m, s.ops_ring, 1);
  hold_host_ref(m, s.ops_record, 1);
  m.cqs[c.cqn].refs++;
}

void srq_gone(Impl& m, uint32_t srqn) {
  TmSrq& s = m.tags.tm_srqs[srqn];
  if (!s.active) return;
  tm_srq_gone(m, srqn);  // its tag list
  hold_host_ref(m, s.ops_ring, -1);
  hold_host_ref(m, s.ops_record, -1);
  m.cqs[s.cqn].refs--;
  s = TmSrq{};
}

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
    .srq_gone = srq_gone,
    .next_deadline = tm_next_retry,
    .fw_kinds = kFwKinds,
    .on_fw_message = fw_message,
    .on_fw_done = [](Impl& m, uint64_t cookie,
                     uint8_t syndrome) { tm_fw_done(m, cookie, syndrome); },
    .caps = RHN_CAP_TM,
    .query_device =
        [](const Impl& m, rhn_device_attr& a) {
          a.tm_max_tags = tm_max_tags(m);
          a.tm_max_ops_log = kMaxWqLog;
        },
    .srq_flags = RHN_CREATE_SRQ_F_TM,
    .srq_check = srq_check,
    .srq_attach = srq_attach,
    .srq_qp_types = 1u << RHN_QP_RC,  // tag matching is for RC QPs
    .srq_land = tm_land,
    .srq_kick =
        [](Impl& m, uint32_t srqn, uint64_t value) {
          // A TM SRQ's tag-list operations run now; receives read the
          // SRQ record when they need a WQE.
          if (value & RHN_DB_SRQ_TM_OPS) tm_run_ops(m, srqn);
        },
};

}  // namespace rhinet::fw
