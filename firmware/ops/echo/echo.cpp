// SPDX-License-Identifier: BSD-2-Clause
// The echo family (test builds only, see echo.h): one request packet with
// the WQE's bytes, answered by the target's NIC with the same bytes, which
// the requester places into the WQE's SGEs (its READ context) before the
// WQE completes. The channel makes both packets reliable, as for atomics.
#include "ops/echo/echo.h"

namespace rhinet::fw {
namespace {

// Answered on reliable QPs only; one packet each way (at most an MTU of
// data); the bytes come back to the SGEs, so no GRH and no remote area.
uint8_t check(Impl&, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome) {
  if (qp.type == RHN_QP_UD || qp.type == RHN_QP_UC) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.has_grh || (w.flags & RHN_WQE_F_AREA)) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.length > RHN_WIRE_MTU) {
    *syndrome = RHN_SYN_LENGTH;
    return RHN_CQE_LOC_LEN_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t,
                  rhn_op_hdr&, PacketOut& out) {
  const uint32_t len = static_cast<uint32_t>(w.length);
  if (!gather(m, qp, w, 0, out.payload, len)) return false;
  out.len = len;
  out.advance = len;
  out.last = true;
  return true;
}

// The target's NIC answers with the request's bytes; its host sees
// nothing. An echo is one packet on a reliable QP: anything else is
// refused (refuse() drops it on UD, and respond() on UC).
void on_request(Impl& m, Request& r) {
  const bool reliable = r.qp.type != RHN_QP_UD && r.qp.type != RHN_QP_UC;
  if (!reliable || !r.first || !r.last || r.data.size() != r.op.msg_len) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, reliable ? RHN_SYN_LENGTH : RHN_SYN_BAD_OPCODE);
    return;
  }
  m.respond(r.peer, RHN_WOP_ECHO_RESP, RHN_SYN_NONE, r.op, r.data);
}

// All the bytes, and nothing else, or the answer is wrong.
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  const bool whole =
      pkt.op.opcode == RHN_WOP_ECHO_RESP && pkt.payload.size() == e.length;
  if (!whole) m.counters.add(RHN_CNT_MALFORMED_PACKETS);
  // A failed placement has finished the WQE already.
  if (whole && !scatter_answer(m, qpn, e, 0, pkt.payload)) return;
  m.finish_entry(qpn, e, whole ? RHN_CQE_SUCCESS : RHN_CQE_BAD_RESP_ERR,
                 RHN_SYN_NONE);
}

}  // namespace

extern const OpFamily kEchoFamily = {
    .name = "echo",
    .check = check,
    .build_packet = build_packet,
    .on_response = on_response,
    .on_request = on_request,
};

}  // namespace rhinet::fw
