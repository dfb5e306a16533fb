// SPDX-License-Identifier: BSD-2-Clause
// Remote atomics: fetch-and-add and compare-and-swap on an aligned 64-bit
// word, and the extended family (RHN_OP_ATOMIC_EXT: swap, fetch, and/or/
// xor as well, on a 4- or 8-byte word, fetching or not). The responder
// executes each request once (the channel delivers it once and keeps its
// answer until acknowledged) and sends the original value back; the
// requester places it.
#include "ops/atomic/atomic.h"

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

rhn_syndrome decode(const RawWqe&, const DecodedWqe& w) {
  if (w.opcode == RHN_OP_ATOMIC_EXT && !rhn_aop_valid(w.imm_data))
    return RHN_SYN_BAD_WQE;
  return RHN_SYN_NONE;
}

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  // The original value comes back when it is wanted: then its SGE is not
  // optional (the decoder lets a remote trigger add go without one), and
  // when it is not there is nowhere for it.
  const uint32_t want = rhn_atomic_result_len(w.opcode, w.imm_data) ? 1 : 0;
  if (w.num_sge != want) {
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
  // The operands travel (an extended atomic's operation in imm_data, as
  // every request carries it); the result comes back in the answer.
  memcpy(out.payload, &w.compare_add, 8);
  memcpy(out.payload + 8, &w.swap, 8);
  out.len = 16;
  out.last = true;
  return true;
}

// The word's new value after operation `aop` on `old` (a 32-bit
// operation's result is cut to 32 bits by its store).
uint64_t apply(uint32_t aop, uint64_t old, uint64_t operand, uint64_t swap,
               uint64_t mask) {
  switch (aop & RHN_AOP_OP_MASK) {
    case RHN_AOP_ADD:
      return old + operand;
    case RHN_AOP_CMP_SWAP:
      return old == (operand & mask) ? swap : old;
    case RHN_AOP_SWAP:
      return operand;
    case RHN_AOP_AND:
      return old & operand;
    case RHN_AOP_OR:
      return old | operand;
    case RHN_AOP_XOR:
      return old ^ operand;
    default:  // RHN_AOP_FETCH
      return old;
  }
}

void on_request(Impl& m, Request& r) {
  if (r.qp.type == RHN_QP_UD || r.qp.type == RHN_QP_UC) {
    m.counters.add(r.qp.type == RHN_QP_UD ? RHN_CNT_UD_DROPS
                                          : RHN_CNT_UC_DROPS);
    return;
  }
  // The classic pair are operations of the extended family on 8 bytes.
  const uint32_t aop = r.op.opcode == RHN_WOP_ATOMIC_EXT ? r.op.imm_data
                       : r.op.opcode == RHN_WOP_FETCH_ADD
                           ? uint32_t{RHN_AOP_ADD}
                           : uint32_t{RHN_AOP_CMP_SWAP};
  if (r.data.size() != 16 || !rhn_aop_valid(aop)) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, r.data.size() != 16 ? RHN_SYN_LENGTH : RHN_SYN_BAD_OPCODE);
    return;
  }
  const uint32_t width = (aop & RHN_AOP_F_32) ? 4 : 8;
  uint64_t va;
  uint32_t key, mr_index;
  rhn_syndrome syn = resolve_target(m, r, RHN_ACCESS_REMOTE_ATOMIC, width, &va,
                                    &key, &mr_index);
  if (syn == RHN_SYN_NONE && (va & (width - 1))) syn = RHN_SYN_ALIGNMENT;
  if (syn != RHN_SYN_NONE) {
    // A misaligned target is a malformed request, not a protection fault.
    m.counters.add(syn == RHN_SYN_ALIGNMENT ? RHN_CNT_REMOTE_INVALID_REQUESTS
                                            : RHN_CNT_REMOTE_ACCESS_ERRORS);
    refuse(m, r, syn);
    return;
  }
  if (pin_check(m, r, mr_index, va, width) != PinCheck::kPresent) return;
  uint64_t operand[2], old = 0;
  memcpy(operand, r.data.data(), sizeof(operand));
  if (!m.mr_dma(mr_index, va, &old, width, false)) {
    refuse(m, r, RHN_SYN_DMA);
    return;
  }
  const uint64_t mask = width == 8 ? ~uint64_t{0} : 0xffffffffu;
  uint64_t next = apply(aop, old, operand[0], operand[1], mask) & mask;
  // One store of the word: a host CPU that writes it too (a counter it
  // also updates) never sees its write undone by a second copy pass. An
  // aligned 4-byte word is one bus write as well.
  if (next != old && !(width == 8 ? m.mr_store_u64(mr_index, va, next)
                                  : m.mr_dma(mr_index, va, &next, 4, true))) {
    refuse(m, r, RHN_SYN_DMA);
    return;
  }
  // Only a word that changed wakes a watcher: one that stayed (a fetch, a
  // compare that failed) cannot have met what it waits for.
  if (next != old) area_landed(m, r, width);
  // Not wanted: an empty answer, still the one the channel replays.
  const uint32_t answer = (aop & RHN_AOP_F_NO_FETCH) ? 0 : width;
  m.respond(r.peer, RHN_WOP_ATOMIC_RESP, RHN_SYN_NONE, r.op,
            {reinterpret_cast<const uint8_t*>(&old), answer});
}

// An answer of `wop` carrying `len` bytes of value: into the WQE's SGE if
// it has one, and the WQE completes.
void finish_answer(Impl& m, uint32_t qpn, Inflight& e, const Packet& pkt,
                   uint8_t wop, uint32_t len) {
  if (pkt.op.opcode != wop || pkt.payload.size() != len) {
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

void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  // An extended atomic's check made its SGE exactly the bytes the answer
  // carries (none without a fetch); the classic pair always carry 8.
  finish_answer(m, qpn, e, pkt, RHN_WOP_ATOMIC_RESP,
                e.opcode == RHN_OP_ATOMIC_EXT ? e.length : 8);
}

}  // namespace

void finish_value_answer(Impl& m, uint32_t qpn, Inflight& e, const Packet& pkt,
                         uint8_t wop) {
  finish_answer(m, qpn, e, pkt, wop, 8);
}

extern const OpFamily kAtomicFamily = {
    .name = "atomic",
    .decode = decode,
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = nullptr,
    .on_request = on_request,
};

}  // namespace rhinet::fw
