// SPDX-License-Identifier: BSD-2-Clause
// A loopback pair for data-path cases: two QPs of one type on one NIC,
// connected to each other through the NIC's own node, each with its CQ
// on one EQ, and two registered buffers.
#pragma once

#include <string>

#include "lib/nic.h"

namespace rhinet::conform {

struct Loop {
  Eq eq;
  Cq scq, rcq;  // a's CQ (send side), b's CQ (receive side)
  uint32_t pd = 0;
  Qp a, b;
  Buf src, dst;
  uint16_t node = 0;
  uint8_t rnr_retry = 7;  // a's RNR retries (7: forever)
  uint8_t scq_flags = 0;  // a's CQ's create flags (enum rhn_create_cq_flags)

  // Brings the NIC up and makes everything; empty on success.
  // a_flags: a's create flags (enum rhn_create_qp_flags).
  std::string make(Nic& n, uint8_t type = RHN_QP_RC, uint32_t buf_len = 16384,
                   uint32_t cq_log = 6, uint8_t a_flags = 0) {
    std::string e = n.bring_up();
    if (!e.empty()) return e;
    node = static_cast<uint16_t>(n.r32(RHN_REG_NODE_ID) & 0xffff);
    QpSpec spec;
    spec.type = type;
    QpSpec a_spec = spec;
    a_spec.flags = a_flags;
    if (!n.create_eq(5, 1, &eq) ||
        !n.create_cq(0, cq_log, eq.eqn, &scq, scq_flags) ||
        !n.create_cq(0, cq_log, eq.eqn, &rcq) || !n.create_pd(0, &pd) ||
        !n.create_qp(0, pd, &scq, &scq, a_spec, &a) ||
        !n.create_qp(0, pd, &rcq, &rcq, spec, &b) ||
        !n.make_buf(pd, buf_len, &src) || !n.make_buf(pd, buf_len, &dst))
      return n.error();
    if (!n.activate(a, node, b.qpn, 0x1111, rnr_retry) ||
        !n.activate(b, node, a.qpn, 0x1111))
      return n.error();
    n.fill(src.addr, buf_len, 1);
    return {};
  }
};

}  // namespace rhinet::conform
