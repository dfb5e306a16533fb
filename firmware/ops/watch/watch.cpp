// SPDX-License-Identifier: BSD-2-Clause
// Watches (watch.h): arming at the requester, firing at the responder.
// Arming writes the endpoint and its generation into the area; the
// responder's landing paths (ops/rdma, ops/atomic, ops/mcast_switch) call
// area_landed (ops/family.h), which costs one test while nothing is armed.
#include "ops/watch/watch.h"

namespace rhinet::fw {
namespace {

// Endpoints only: the watch's CQE is direct verbs' own, as a signal's, and
// a verbs QP's consumer would take it for a receive. The WQE names the key
// in remote_key and carries nothing else: no data, no area flag (the area
// is this process's, not a peer's), no signal, no GRH.
uint8_t check(Impl&, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.num_sge || w.length ||
      (w.flags & (RHN_WQE_F_INLINE | RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE |
                  RHN_WQE_F_GRH))) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

// Arms (or re-arms: one watch per area, the last one wins). find_area
// looks only among the QP's own context's areas, so another process's
// area and an unknown key are the same refusal; it leaves the endpoint
// going (GENERAL_ERR is no local error), as a waiter falls back to
// looking at memory.
uint8_t execute_local(Impl& m, QpObj& qp, uint32_t qpn, const DecodedWqe& w,
                      uint8_t* syndrome) {
  AreaObj* a = m.find_area(qp.context, w.remote_key);
  if (!a) {
    m.counters.add(RHN_CNT_WATCH_REFUSED);
    *syndrome = RHN_SYN_NO_WATCH_AREA;
    return RHN_CQE_GENERAL_ERR;
  }
  a->watch_qpn = qpn;
  a->watch_gen = qp.gen;
  *syndrome = RHN_SYN_NONE;
  return RHN_CQE_SUCCESS;
}

}  // namespace

// One-shot: disarmed before anything else, so a landing that finds the
// arming endpoint gone drops the watch too. The endpoint is the one that
// armed it only while it is valid with the same generation: a destroyed
// one (valid false), or one reset or destroyed and made again since (a new
// generation: every create and RESET takes the next one), gets nothing.
void watch_fire(Impl& m, AreaObj& a, const Request& r, uint32_t len) {
  const uint32_t qpn = a.watch_qpn;
  a.watch_qpn = kNone;
  const QpObj* qp = qpn < m.qps.size() ? &m.qps[qpn] : nullptr;
  if (!qp || !qp->valid || qp->gen != a.watch_gen) {
    m.counters.add(RHN_CNT_WATCH_STALE);
    return;
  }
  rhn_cqe c{};
  c.qpn = qpn;
  c.byte_len = len;
  c.src_qpn = r.src_qpn;
  c.src_node = r.node;
  c.vendor_err = a.area_id;
  c.opcode = RHN_CQE_OP_WATCH;
  c.status = RHN_CQE_SUCCESS;
  m.counters.add(RHN_CNT_WATCHES_FIRED);
  // Solicited: a CQ armed for solicited completions only wakes for it too.
  m.cq_push(qp->recv_cqn, c, true);
}

extern const OpFamily kWatchFamily = {
    .name = "watch",
    .check = check,
    .execute_local = execute_local,
};

}  // namespace rhinet::fw
