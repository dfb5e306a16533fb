// SPDX-License-Identifier: BSD-2-Clause
// The fast path of the most common posted WQE: an RC WRITE or SEND of one
// packet (one SGE or inline data, no GRH, area, status word, remote
// signal, fence behind a READ or immediate), from its decode to its frame
// on the wire in one function. It makes the checks start_message and the
// families make for such a WQE, all before anything changes; a WQE that
// fails one (a bad key, no room on the channel, a peer beyond the fabric,
// anything else) goes on through start_message untouched, which does what
// it always did (the error CQE included). What is done here is what the
// generic path does, in the same order where order shows: the in-flight
// entry, the send slot, the payload's DMA (and its failure), the packet.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"

namespace rhinet::fw {

namespace {

// WQE flags the fast path takes; any other goes the generic way.
constexpr uint8_t kFastFlags =
    RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED | RHN_WQE_F_INLINE;

}  // namespace

bool Engine::Impl::fast_post(QpObj& qp, uint32_t qpn, uint32_t nslots) {
  const DecodedWqe& w = qp.tx_wqe;
  // decode_plain_wqe took a one-slot WRITE or SEND without GRH; one
  // packet, nothing but the flags above, on RC (where both families'
  // checks pass such a WQE).
  if (qp.type != RHN_QP_RC || (w.flags & ~kFastFlags) ||
      w.length > RHN_WIRE_MTU)
    return false;
  const OpInfo& info = op_info(w.opcode);
  const OpFamily* family = info.family;
  if (!family || info.has_imm || info.awaits_response || info.uses_read_ctx ||
      family->send_packet || family->execute_local ||
      family->send_unsequenced || family->next_destination)
    return false;
  uint8_t syndrome = RHN_SYN_NONE;
  if (family->check(*this, qp, w, &syndrome) != RHN_CQE_SUCCESS) return false;
  // The local key, checked once: the payload's DMA uses the region found.
  uint32_t mr_index = kNone;
  const bool in = w.flags & RHN_WQE_F_INLINE;
  const rhn_sge sge = in ? rhn_sge{} : wqe_sge(qp.tx_raw, 0);
  if (!in && w.length &&
      check_key(sge.lkey, kNone, qp.pdn, 0, sge.addr, sge.length, &mr_index) !=
          RHN_SYN_NONE)
    return false;
  Peer* const pp = peer_for(qp.dest_node);
  if (!pp || !can_send(*pp, qp.context)) return false;
  Peer& p = *pp;

  // The in-flight entry: what the ACK, a NAK, a resend and the CQE read.
  const uint32_t idx = qp.inflight_tail++;
  Inflight& e = entry(qpn, idx);
  e = Inflight{};
  e.slot = qp.sq_fetch;
  e.slots = static_cast<uint8_t>(nslots);
  e.opcode = w.opcode;
  e.wqe_flags = w.flags;
  e.msn = qp.msn_next++;
  e.peer = qp.dest_node;
  e.dst_qpn = qp.dest_qpn;
  e.length = static_cast<uint32_t>(w.length);
  e.status_addr = w.status_addr;
  e.status_lkey = w.status_lkey;
  e.state = MsgState::kSending;
  e.fanout_imm = w.imm_data;
  qp.tx_wqe.keep_twin = true;
  qp.sq_fetch += nslots;
  qp.fanout_next = 0;
  qp.tx_entry = idx;
  qp.tx_peer = qp.dest_node;
  qp.tx_dst_qpn = qp.dest_qpn;

  // The packet: its payload into a send slot, then its header.
  const uint32_t slot = begin_data(qp.context);
  const auto len = static_cast<uint32_t>(w.length);
  uint8_t* payload = slots[slot].frame + RHN_DATA_HDR_LEN;
  if (in) {
    copy_small(payload, wqe_inline(qp.tx_raw, w).data(), len);
  } else if (len && !mr_dma(mr_index, sge.addr, payload, len, false)) {
    qp.tx_offset = 0;
    return_slot(slot);
    counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    return true;
  }
  rhn_op_hdr op;
  op.opcode = info.wire_op;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST |
             ((w.flags & RHN_WQE_F_SOLICITED) ? RHN_WOP_F_SOLICITED : 0);
  op.qp_type = qp.type;
  op.syndrome = 0;
  op.dst_qpn = qp.dest_qpn;
  op.src_qpn = qpn | (uint32_t{qp.incarnation} << RHN_WIRE_INCARNATION_SHIFT);
  op.msn = e.msn;
  op.rkey = w.remote_key;
  op.imm_data = w.imm_data;
  op.remote_addr = w.remote_addr;
  op.msg_len = len;
  op.msg_offset = 0;
  const bool wants_ack = (w.flags & RHN_WQE_F_SIGNALED) ||
                         p.unacked_count + 1 >= cfg.channel_window / 2;
  e.last_serial = commit_data(p, slot, op, len, wants_ack, qpn, qp.gen, true);
  e.state = MsgState::kAwaitAck;
  qp.tx_offset = len;
  qp.tx_active = false;
  return true;
}

}  // namespace rhinet::fw
