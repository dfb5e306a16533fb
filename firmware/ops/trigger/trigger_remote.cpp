// SPDX-License-Identifier: BSD-2-Clause
// Remote increments of trigger counters (RHN_OP_TRIGGER_ADD,
// Documentation/hardware/triggered.md): one request to the peer's NIC
// carrying the counter's handle, its key and the addend; the peer adds
// only to a live counter of the context the request reached whose key
// matches, and answers with the value before the add. Executed once, as
// the atomics are: the channel delivers each request once and keeps the
// answer until it is acknowledged, so a resent request never adds again.
#include "core/freestanding.h"
#include "ops/atomic/atomic.h"
#include "ops/trigger/trigger.h"

namespace rhinet::fw {
namespace {

// Answered, so reliable QPs only (RC, endpoints); the decoder has taken at
// most one 8-byte SGE for the value and refused inline data, status words
// and a GRH.
uint8_t check(Impl&, const QpObj& qp, const DecodedWqe&, uint8_t* syndrome) {
  if (qp.type == RHN_QP_UD || qp.type == RHN_QP_UC) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl&, QpObj&, const DecodedWqe& w, uint64_t, rhn_op_hdr& op,
                  PacketOut& out) {
  // The decoder read the operand area as the atomics': the addend, then
  // the handle and the key (struct rhn_send_wqe, u.trigger).
  rhn_wire_trigger_add req;
  req.addend = w.compare_add;
  req.handle = static_cast<uint32_t>(w.swap);
  req.key = static_cast<uint32_t>(w.swap >> 32);
  memcpy(out.payload, &req, sizeof(req));
  out.len = sizeof(req);
  out.last = true;
  // Nothing of the target's memory is named: no rkey, no address.
  op.rkey = 0;
  op.remote_addr = 0;
  return true;
}

// At the target: only a live counter of the target QP's context with the
// key the request carries; anything else is refused and counted, and
// nothing is added.
void on_request(Impl& m, Request& r) {
  if (r.qp.type == RHN_QP_UD || r.qp.type == RHN_QP_UC) {
    m.counters.add(RHN_CNT_TRIGGER_REMOTE_REFUSED);
    refuse(m, r, RHN_SYN_BAD_OPCODE);
    return;
  }
  rhn_wire_trigger_add req;
  uint64_t before = 0;
  const bool whole = r.first && r.last && r.data.size() == sizeof(req);
  if (whole) memcpy(&req, r.data.data(), sizeof(req));
  if (!whole || !trigger_remote_add(m, r.qp.context, req.handle, req.key,
                                    req.addend, &before)) {
    m.counters.add(RHN_CNT_TRIGGER_REMOTE_REFUSED);
    refuse(m, r, whole ? RHN_SYN_BAD_REMOTE_TRIGGER : RHN_SYN_LENGTH);
    return;
  }
  m.respond(r.peer, RHN_WOP_TRIGGER_RESP, RHN_SYN_NONE, r.op,
            {reinterpret_cast<const uint8_t*>(&before), sizeof(before)});
}

// The value before the add, into the WQE's SGE if it has one (as an
// atomic's answer).
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  finish_value_answer(m, qpn, e, pkt, RHN_WOP_TRIGGER_RESP);
}

}  // namespace

extern const OpFamily kTriggerFamily = {
    .name = "trigger",
    .check = check,
    .build_packet = build_packet,
    .on_response = on_response,
    .on_request = on_request,
};

}  // namespace rhinet::fw
