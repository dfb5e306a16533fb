// SPDX-License-Identifier: BSD-2-Clause
// The responder: requests that arrived in order on a node channel are
// checked against the target QP (type, state, connection, RNR blocking),
// then handed to their operation family (ops/); the NAK memory, answers
// and the responder work a QP owns (receive contexts, READ streams) are
// kept here. Failures are answered with a NAK naming the reason.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "transport/channel_inline.h"

namespace rhinet::fw {

bool Engine::Impl::responder_has_room(const Peer& p,
                                      const rhn_op_hdr& op) const {
  if (!can_send(p, kNone)) return false;  // room for a NAK or atomic reply
  const OpFamily* family = family_of_wire(op.opcode);
  return !family || !family->has_room || family->has_room(*this, p, op);
}

// ---- NAK memory: the rest of a refused multi-packet message is dropped,
// and NAKed once. A first packet of a QP's next message ends its history.

bool Engine::Impl::nak_remembered(const Peer& p, uint32_t src,
                                  uint32_t msn) const {
  for (const auto& n : p.naks)
    if (n.src == src && n.msn == msn) return true;
  return false;
}

void Engine::Impl::nak_remember(Peer& p, uint32_t src, uint32_t msn) {
  p.naks[p.nak_next] = Peer::Naked{src, msn};
  p.nak_next = static_cast<uint8_t>((p.nak_next + 1) % kNakMemory);
}

void Engine::Impl::free_read(Peer& p, uint32_t r) {
  // READ streams leave their peer's queue from the front only.
  ResponderRead& rr = responder_reads[r];
  if (rr.bitmap_slot != 0xffff) free_read_bitmaps.push(rr.bitmap_slot);
  p.reads_head = rr.next;
  if (p.reads_head == kNone) p.reads_tail = kNone;
  rr = ResponderRead{};
  free_responder_reads.push(r);
}

void Engine::Impl::cancel_responder_work(uint32_t qpn, bool flush) {
  modules_qp_gone(*this, qpn, flush ? QpGone::kFlushed : QpGone::kStopped);
  for (uint32_t i = 0; i < cfg.rx_contexts; i++) {
    RxContext& m = rx_ctxs[i];
    if (!m.used || m.qpn != qpn) continue;
    Peer& p = peers[m.node];
    if (flush)
      rx_abandon(p, m, RHN_CQE_WR_FLUSH_ERR);
    else
      rx_free(p, m);
  }
  for (auto& r : responder_reads) {
    if (!r.used || r.responder_qpn != qpn || r.cancelled) continue;
    // Streamed no further: the requester gets a NAK in the stream's turn.
    r.cancelled = true;
    peer_needs_service(peers[r.node]);
  }
}

void Engine::Impl::respond(Peer& p, uint8_t wop, uint8_t syndrome,
                           const rhn_op_hdr& req, Span<const uint8_t> payload) {
  if (wop == RHN_WOP_NAK) {
    if (nak_remembered(p, req.src_qpn, req.msn)) return;  // once
    nak_remember(p, req.src_qpn, req.msn);
    // UC is unacknowledged: the message is dropped (its later packets
    // too, by the memory above) and the requester is told nothing.
    if (req.qp_type == RHN_QP_UC) {
      counters.add(RHN_CNT_UC_DROPS);
      return;
    }
  }
  send_answer(p, wop, syndrome, req, payload);
}

void Engine::Impl::send_answer(Peer& p, uint8_t wop, uint8_t syndrome,
                               const rhn_op_hdr& req,
                               Span<const uint8_t> payload) {
  rhn_op_hdr op{};
  op.opcode = wop;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.syndrome = syndrome;
  op.qp_type = req.qp_type;
  op.dst_qpn = req.src_qpn;
  op.src_qpn = req.dst_qpn;
  op.msn = req.msn;
  op.msg_len = static_cast<uint32_t>(payload.size());
  // A NAK echoes the request's immediate: an ISEND numbers its
  // transmissions there, so a NAK of an earlier one is told apart.
  if (wop == RHN_WOP_NAK) op.imm_data = req.imm_data;
  send_data(p, op, payload, false, kNone, 0, false);
}

void Engine::Impl::handle_request(Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint16_t node = node_of(p);
  const uint32_t src = op.src_qpn;  // with the requester's incarnation
  const uint32_t src_qpn = src & RHN_WIRE_QPN_MASK;
  const bool first = op.flags & RHN_WOP_F_FIRST;
  const bool last = op.flags & RHN_WOP_F_LAST;

  if (op.opcode == RHN_WOP_FW) {  // for the NIC itself, not a QP
    fw_receive(p, pkt);
    return;
  }
  // A first packet starts a new message of that QP: what the NAK memory
  // holds of it is history then.
  if (first) nak_forget(p, src);

  const uint32_t qpn = op.dst_qpn;
  QpObj* qp = qpn && qpn < qps.size() && qps[qpn].valid ? &qps[qpn] : nullptr;
  // An RC QP still in RESET or INIT: its peer reached RTS first (each side
  // moves its own QP). Receiver not ready: the requester tries again after
  // its RNR timer, as for a missing receive buffer.
  const uint8_t want_type = target_qp_type(op.qp_type);
  const bool not_ready_qp = qp && reliable_connected_qp(qp->type) &&
                            qp->type == want_type && qp->state < RHN_QPS_RTR;
  if (!not_ready_qp && (!qp || qp->type != want_type ||
                        qp->state < RHN_QPS_RTR || qp->state == RHN_QPS_ERR ||
                        (connected_qp(qp->type) &&
                         (qp->dest_node != node || qp->dest_qpn != src_qpn)))) {
    counters.add(RHN_CNT_NO_QP_REQUESTS);
    refuse(*this, p, op, RHN_SYN_BAD_QP);
    return;
  }
  if (qp->rnr_blocked && qp->rnr_node == node && qp->rnr_src_qpn == src) {
    // After an RNR NAK, everything up to the resent message is dropped.
    if (!(first && op.msn == qp->rnr_msn)) return;
    if (!not_ready_qp) qp->rnr_blocked = false;
  }
  // A source's request a family holds (for pinning) keeps its later ones
  // back.
  if (qp->type == RHN_QP_ENDPOINT && modules_hold_back(*this, p, qpn, op))
    return;
  if (not_ready_qp) {
    if (first) {  // later packets: dropped above
      Request r{p, *qp, qpn, op, pkt.payload, node, src, src_qpn, first, last};
      not_ready(*this, r, RHN_SYN_RNR);
    }
    return;
  }

  // Everything after this point belongs to the operation's family. An
  // XRC target takes SENDs only (queues.md, "XRC").
  const OpFamily* family = family_of_wire(op.opcode);
  if (!family || !family->on_request ||
      (qp->type == RHN_QP_XRC_RECV && op.opcode != RHN_WOP_SEND)) {
    counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(*this, p, op, RHN_SYN_BAD_OPCODE);
    return;
  }
  Request r{p, *qp, qpn, op, pkt.payload, node, src, src_qpn, first, last};
  family->on_request(*this, r);
}

// ---- Services for the families (ops/family.h).

void refuse(Impl& m, Peer& p, const rhn_op_hdr& op, rhn_syndrome syndrome) {
  if (op.qp_type == RHN_QP_UD) {
    m.counters.add(RHN_CNT_UD_DROPS);  // UD is unacknowledged
    return;
  }
  m.respond(p, RHN_WOP_NAK, syndrome, op, {});
}

void refuse(Impl& m, Request& r, rhn_syndrome syndrome) {
  refuse(m, r.peer, r.op, syndrome);
}

void not_ready(Impl& m, Request& r, rhn_syndrome syndrome) {
  m.counters.add(RHN_CNT_RNR_NAKS_SENT);
  if (reliable_connected_qp(r.qp.type)) {
    r.qp.rnr_blocked = true;
    m.rxw_clear_target(r.qpn);
    r.qp.rnr_msn = r.op.msn;
    r.qp.rnr_node = r.node;
    r.qp.rnr_src_qpn = r.src;
  }
  m.respond(r.peer, RHN_WOP_NAK, syndrome, r.op, {});
}

void queue_stream(Impl& m, Peer& p, const ResponderRead& rr) {
  const uint32_t idx = m.free_responder_reads.front();
  m.free_responder_reads.pop();
  ResponderRead& q = m.responder_reads[idx];
  q = rr;
  q.used = true;
  q.next = kNone;
  if (p.reads_tail != kNone)
    m.responder_reads[p.reads_tail].next = idx;
  else
    p.reads_head = idx;
  p.reads_tail = idx;
  m.peer_needs_service(p);
}

rhn_syndrome resolve_target(Impl& m, const Request& r, uint32_t right,
                            uint64_t len, uint64_t* va, uint32_t* key,
                            uint32_t* mr_index) {
  const rhn_op_hdr& op = r.op;
  *va = op.remote_addr;
  *key = op.rkey;
  rhn_syndrome syn = RHN_SYN_NONE;
  // A zero-length WRITE or READ touches no memory and carries no valid
  // address or key: IB (C9-88) forbids checking them; UCX flushes with
  // one to address 0, key 0. Areas name no key and are still resolved.
  // (Only a message that really is empty: a packet that claims no length
  // but carries bytes is checked like any other.)
  if (op.msg_len == 0 && len == 0 && !(op.flags & RHN_WOP_F_AREA) &&
      (op.opcode == RHN_WOP_WRITE || op.opcode == RHN_WOP_READ_REQ)) {
    *mr_index = kNone;
    return RHN_SYN_NONE;
  }
  if (op.flags & RHN_WOP_F_AREA) {
    // The area of the target QP's context: its base plus the offset.
    AreaObj* a = m.find_area(r.qp.context, op.rkey);
    if (!a && !m.in_group(r.qp.context, RHN_AREA_KEY_GROUP(op.rkey))) {
      // The target process is not in the group the initiator names.
      m.counters.add(RHN_CNT_GROUP_VIOLATIONS);
      syn = RHN_SYN_BAD_GROUP;
    } else if (!a) {
      syn = RHN_SYN_BAD_AREA;
    } else if (op.remote_addr > a->length || len > a->length - op.remote_addr) {
      syn = RHN_SYN_BOUNDS;
    } else {
      *va = a->iova + op.remote_addr;
      *key = (a->mr_index << RHN_KEY_INDEX_SHIFT) | m.mrs[a->mr_index].variant;
      m.resolved_area = a;
    }
  }
  if (right && !(r.qp.access & right)) syn = RHN_SYN_ACCESS_RIGHTS;
  if (syn == RHN_SYN_NONE)
    syn = m.check_key(*key, kNone, r.qp.pdn, right, *va, len, mr_index, r.qpn);
  return syn;
}

}  // namespace rhinet::fw
