// SPDX-License-Identifier: BSD-2-Clause
// Remote atomics: fetch-and-add and compare-and-swap on an aligned 64-bit
// word, executed once by the responder (the channel drops duplicates), the
// original value sent back and placed by the requester.
#include "ops/atomic/atomic.h"

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  // The original value always comes back: its SGE is not optional (the
  // decoder lets a remote trigger add go without one).
  if (w.num_sge != 1) {
    m.counters.add(RHN_CNT_BAD_WQES);
    *syndrome = RHN_SYN_LENGTH;
    return RHN_CQE_LOC_LEN_ERR;
  }
  if (qp.type == RHN_QP_UD || qp.type == RHN_QP_UC) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.has_grh) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t,
                  rhn_op_hdr&, PacketOut& out) {
  // Where the old value lands is pinned before it is asked for.
  if (!pin_local_targets(m, qp, w)) return false;
  // The operands travel; the result comes back in the answer.
  memcpy(out.payload, &w.compare_add, 8);
  memcpy(out.payload + 8, &w.swap, 8);
  out.len = 16;
  out.last = true;
  return true;
}

void on_request(Impl& m, Request& r) {
  if (r.qp.type == RHN_QP_UD || r.qp.type == RHN_QP_UC) {
    m.counters.add(r.qp.type == RHN_QP_UD ? RHN_CNT_UD_DROPS
                                          : RHN_CNT_UC_DROPS);
    return;
  }
  if (r.data.size() != 16) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_LENGTH);
    return;
  }
  uint64_t va;
  uint32_t key, mr_index;
  rhn_syndrome syn =
      resolve_target(m, r, RHN_ACCESS_REMOTE_ATOMIC, 8, &va, &key, &mr_index);
  if (syn == RHN_SYN_NONE && (va & 7)) syn = RHN_SYN_ALIGNMENT;
  if (syn != RHN_SYN_NONE) {
    // A misaligned target is a malformed request, not a protection fault.
    m.counters.add(syn == RHN_SYN_ALIGNMENT ? RHN_CNT_REMOTE_INVALID_REQUESTS
                                            : RHN_CNT_REMOTE_ACCESS_ERRORS);
    refuse(m, r, syn);
    return;
  }
  if (pin_check(m, r, mr_index, va, 8) != PinCheck::kPresent) return;
  uint64_t operand[2], old;
  memcpy(operand, r.data.data(), sizeof(operand));
  if (!m.mr_dma(mr_index, va, &old, 8, false)) {
    refuse(m, r, RHN_SYN_DMA);
    return;
  }
  uint64_t next = old;
  if (r.op.opcode == RHN_WOP_FETCH_ADD)
    next = old + operand[0];
  else if (old == operand[0])
    next = operand[1];
  // One 8-byte store: a host CPU that writes the word too (a counter it
  // also updates) never sees its write undone by a second copy pass.
  if (next != old && !m.mr_store_u64(mr_index, va, next)) {
    refuse(m, r, RHN_SYN_DMA);
    return;
  }
  m.respond(r.peer, RHN_WOP_ATOMIC_RESP, RHN_SYN_NONE, r.op,
            {reinterpret_cast<const uint8_t*>(&old), 8});
}

void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  finish_value_answer(m, qpn, e, pkt, RHN_WOP_ATOMIC_RESP);
}

}  // namespace

void finish_value_answer(Impl& m, uint32_t qpn, Inflight& e, const Packet& pkt,
                         uint8_t wop) {
  if (pkt.op.opcode != wop || pkt.payload.size() != 8) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  // No SGE (length 0): the value is not wanted. A failed placement has
  // finished the WQE already.
  if (e.length && !scatter_answer(m, qpn, e, pkt.op.msg_offset, pkt.payload))
    return;
  m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

extern const OpFamily kAtomicFamily = {
    .name = "atomic",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = nullptr,
    .on_request = on_request,
};

}  // namespace rhinet::fw
