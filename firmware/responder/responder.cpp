// SPDX-License-Identifier: BSD-2-Clause
// The responder: requests that arrived in order on a node channel are
// checked against the target QP, keys or areas, and rights, then placed in
// host memory; failures are answered with a NAK naming the reason.
#include <cstring>

#include "engine/engine_impl.h"

namespace rhinet::fw {

bool Engine::Impl::responder_has_room(const Peer& p,
                                      const rhn_op_hdr& op) const {
  if (!can_send(p, kNone)) return false;  // room for a NAK or atomic reply
  if (op.opcode == RHN_WOP_READ_REQ) return !free_responder_reads.empty();
  return true;
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

void Engine::Impl::nak_forget(Peer& p, uint32_t src) {
  for (auto& n : p.naks)
    if (n.src == src) n = Peer::Naked{};
}

// ---- The matching stage: receive contexts of multi-packet SENDs.

RxContext* Engine::Impl::rx_find(Peer& p, uint32_t src, uint32_t msn) {
  for (uint32_t i = p.rx_head; i != kNone; i = rx_ctxs[i].next) {
    RxContext& m = rx_ctxs[i];
    if (m.src == src && (msn == kNone || m.msn == msn)) return &m;
  }
  return nullptr;
}

RxContext* Engine::Impl::rx_alloc(Peer& p, uint32_t dst_context) {
  if (free_rx_ctxs.empty() ||
      contexts[dst_context].rx_contexts >= rx_context_quota)
    return nullptr;
  const uint32_t i = free_rx_ctxs.front();
  free_rx_ctxs.pop();
  RxContext& m = rx_ctxs[i];
  m = RxContext{};
  m.used = true;
  m.owner = dst_context;
  m.node = node_of(p);
  m.next = p.rx_head;
  p.rx_head = i;
  contexts[dst_context].rx_contexts++;
  return &m;
}

void Engine::Impl::rx_free(Peer& p, RxContext& m) {
  const uint32_t idx = static_cast<uint32_t>(&m - rx_ctxs.get());
  for (uint32_t* link = &p.rx_head; *link != kNone;
       link = &rx_ctxs[*link].next) {
    if (*link != idx) continue;
    *link = m.next;
    break;
  }
  contexts[m.owner].rx_contexts--;
  m.used = false;
  m.next = kNone;
  free_rx_ctxs.push(idx);
}

void Engine::Impl::rx_abandon(Peer& p, RxContext& m, uint8_t status) {
  m.status = status;
  complete_receive(m, m.node, m.src & RHN_WIRE_QPN_MASK, RHN_CQE_OP_RECV, 0, 0);
  rx_free(p, m);
}

void Engine::Impl::rx_abandon_all(Peer& p) {
  while (p.rx_head != kNone)
    rx_abandon(p, rx_ctxs[p.rx_head], RHN_CQE_GENERAL_ERR);
}

void Engine::Impl::free_read(Peer& p, uint32_t r) {
  // READ streams leave their peer's queue from the front only.
  ResponderRead& rr = responder_reads[r];
  p.reads_head = rr.next;
  if (p.reads_head == kNone) p.reads_tail = kNone;
  rr = ResponderRead{};
  free_responder_reads.push(r);
}

void Engine::Impl::cancel_responder_work(uint32_t qpn, bool flush) {
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
                           const rhn_op_hdr& req,
                           std::span<const uint8_t> payload) {
  if (wop == RHN_WOP_NAK) {
    if (nak_remembered(p, req.src_qpn, req.msn)) return;  // once
    nak_remember(p, req.src_qpn, req.msn);
  }
  rhn_op_hdr op{};
  op.opcode = wop;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.syndrome = syndrome;
  op.qp_type = req.qp_type;
  op.dst_qpn = req.src_qpn;
  op.src_qpn = req.dst_qpn;
  op.msn = req.msn;
  op.msg_len = static_cast<uint32_t>(payload.size());
  send_data(p, op, payload, false, kNone, 0, false);
}

bool Engine::Impl::take_recv_wqe(QpObj& qp, uint32_t qpn, RxContext& m) {
  HostRef ring;
  uint32_t* consumer;
  uint32_t* producer;
  HostRef record;
  uint32_t log;
  uint32_t pdn = qp.pdn;
  SrqObj* srq = nullptr;
  if (qp.srqn != kNone) {
    srq = &srqs[qp.srqn];
    ring = srq->ring;
    record = srq->record;
    consumer = &srq->consumer;
    producer = &srq->producer_seen;
    log = srq->log_depth;
    pdn = srq->pdn;
  } else {
    ring = qp.rq_ring;
    record = qp.rq_record;
    consumer = &qp.rq_consumer;
    producer = &qp.rq_producer;
    log = qp.rq_log;
  }
  if (*consumer == *producer) {
    rhn_queue_record rec;
    if (!host_dma(record, 0, &rec, sizeof(rec), false)) return false;
    if (rec.producer_index - *consumer > (1u << log)) {
      counters.add(RHN_CNT_BAD_WQES);  // a producer beyond the ring
      return false;
    }
    *producer = rec.producer_index;
    if (*consumer == *producer) return false;
  }
  rhn_recv_wqe w;
  const uint32_t index = *consumer;
  const bool fetched =
      host_dma(ring, uint64_t{index & ((1u << log) - 1)} * RHN_RQ_WQE_SIZE, &w,
               sizeof(w), false);
  (*consumer)++;
  m.qpn = qpn;
  m.qp_gen = qp.gen;
  m.wqe_index = index;
  m.from_srq = srq != nullptr;
  m.status = RHN_CQE_SUCCESS;
  m.capacity = 0;
  m.length = 0;
  m.num_sge = 0;
  m.pdn = pdn;
  if (!fetched || w.num_sge > RHN_RQ_MAX_SGES) {
    counters.add(RHN_CNT_BAD_WQES);
    m.status = RHN_CQE_LOC_QP_OP_ERR;
  } else {
    m.num_sge = w.num_sge;
    for (uint32_t i = 0; i < w.num_sge; i++) {
      m.sge[i] = w.sge[i];
      if (w.sge[i].length &&
          check_key(w.sge[i].lkey, kNone, pdn, RHN_ACCESS_LOCAL_WRITE,
                    w.sge[i].addr, w.sge[i].length, nullptr) != RHN_SYN_NONE) {
        counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
        m.status = RHN_CQE_LOC_PROT_ERR;
      }
      m.capacity += w.sge[i].length;
    }
  }
  if (srq && srq->limit && *producer - *consumer < srq->limit) {
    srq->limit = 0;  // one event per arm (MODIFY_SRQ re-arms)
    for (uint32_t e = 0; e < eqs.size(); e++)
      if (eqs[e].valid) {
        eq_push(e, RHN_EQE_SRQ_LIMIT, qp.srqn, 0);
        break;
      }
  }
  return true;
}

void Engine::Impl::complete_receive(RxContext& m, uint16_t src_node,
                                    uint32_t src_qpn, uint8_t cqe_opcode,
                                    uint32_t imm, uint8_t flags) {
  if (m.qpn >= qps.size() || !qps[m.qpn].valid || qps[m.qpn].gen != m.qp_gen)
    return;
  QpObj& qp = qps[m.qpn];
  rhn_cqe c{};
  c.qpn = m.qpn;
  c.byte_len = m.length;
  c.imm_data = imm;
  c.src_qpn = src_qpn;
  c.src_node = src_node;
  c.wqe_index = static_cast<uint16_t>(m.wqe_index);
  c.vendor_err = m.status == RHN_CQE_SUCCESS ? 0 : RHN_SYN_BAD_WQE;
  c.opcode = cqe_opcode;
  c.status = m.status;
  c.flags = flags;
  if (m.status != RHN_CQE_SUCCESS) counters.add(RHN_CNT_ERROR_CQES);
  counters.add(RHN_CNT_COMPLETIONS);
  cq_push(qp.recv_cqn, c, (flags & RHN_CQE_F_SOLICITED) != 0);
}

void Engine::Impl::handle_request(Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint16_t node = node_of(p);
  const uint32_t src = op.src_qpn;  // with the requester's incarnation
  const uint32_t src_qpn = src & RHN_WIRE_QPN_MASK;
  const std::span<const uint8_t> data = pkt.payload;
  const bool first = op.flags & RHN_WOP_F_FIRST;
  const bool last = op.flags & RHN_WOP_F_LAST;
  auto nak = [&](rhn_syndrome syn) {
    if (op.qp_type == RHN_QP_UD) {
      counters.add(RHN_CNT_UD_DROPS);  // UD is unacknowledged
      return;
    }
    respond(p, RHN_WOP_NAK, syn, op, {});
  };

  // A first packet starts a new message of that QP: what the NAK memory
  // holds of it is history then.
  if (first) nak_forget(p, src);

  const uint32_t qpn = op.dst_qpn;
  QpObj* qp = qpn && qpn < qps.size() && qps[qpn].valid ? &qps[qpn] : nullptr;
  // An RC QP still in RESET or INIT: its peer reached RTS first (each side
  // moves its own QP). Receiver not ready: the requester tries again after
  // its RNR timer, as for a missing receive buffer.
  const bool not_ready = qp && qp->type == RHN_QP_RC &&
                         op.qp_type == RHN_QP_RC && qp->state < RHN_QPS_RTR;
  if (!not_ready && (!qp || qp->type != op.qp_type || qp->state < RHN_QPS_RTR ||
                     qp->state == RHN_QPS_ERR ||
                     (qp->type == RHN_QP_RC &&
                      (qp->dest_node != node || qp->dest_qpn != src_qpn)))) {
    counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    nak(RHN_SYN_BAD_QP);
    return;
  }
  if (qp->rnr_blocked && qp->rnr_node == node && qp->rnr_src_qpn == src) {
    // After an RNR NAK, everything up to the resent message is dropped.
    if (!(first && op.msn == qp->rnr_msn)) return;
    if (!not_ready) qp->rnr_blocked = false;
  }
  // Receiver not ready (no receive WQE; BUSY: no receive context): the
  // requester sends this message again later. On RC, later messages of
  // that QP are dropped until then, so none overtakes it.
  auto rnr = [&](rhn_syndrome syn) {
    counters.add(RHN_CNT_RNR_NAKS_SENT);
    if (qp->type == RHN_QP_RC) {
      qp->rnr_blocked = true;
      qp->rnr_msn = op.msn;
      qp->rnr_node = node;
      qp->rnr_src_qpn = src;
    }
    respond(p, RHN_WOP_NAK, syn, op, {});
  };

  if (not_ready) {
    if (first) rnr(RHN_SYN_RNR);  // later packets: dropped above
    return;
  }

  switch (op.opcode) {
    case RHN_WOP_SEND: {
      // UD: the buffer starts with the GRH room (hw_queues.h); a GRH sent
      // along fills it, otherwise the payload lands behind it.
      const bool ud = qp->type == RHN_QP_UD;
      const bool grh = ud && (op.flags & RHN_WOP_F_GRH);
      const uint32_t skip = ud && !grh ? RHN_UD_GRH_LEN : 0;
      if (ud) {
        if (!first || !last || (grh && data.size() < RHN_WIRE_GRH_LEN)) {
          counters.add(RHN_CNT_MALFORMED_PACKETS);
          return;
        }
        if (op.rkey != qp->qkey) {
          counters.add(RHN_CNT_UD_DROPS);
          return;
        }
      } else if (op.flags & RHN_WOP_F_GRH || data.size() > RHN_WIRE_MTU) {
        counters.add(RHN_CNT_MALFORMED_PACKETS);
        return;
      }
      // The matching stage: where this message's bytes land. A single
      // packet needs no state beyond this call.
      RxContext single;
      RxContext* m = &single;
      if (first) {
        // The sender's previous message from this QP is over: a receive
        // it left half-way (its QP failed) ends here.
        if (RxContext* old = rx_find(p, src, kNone))
          rx_abandon(p, *old, RHN_CQE_GENERAL_ERR);
        if (!last) {
          m = rx_alloc(p, qp->context);
          if (!m) {
            counters.add(RHN_CNT_RX_CONTEXT_BUSY);
            rnr(RHN_SYN_BUSY);
            return;
          }
        }
        if (!take_recv_wqe(*qp, qpn, *m)) {
          if (m != &single) rx_free(p, *m);
          if (ud) {
            counters.add(RHN_CNT_UD_DROPS);
            return;
          }
          rnr(RHN_SYN_RNR);
          return;
        }
        m->node = node;
        m->src = src;
        m->msn = op.msn;
        m->length = skip;
        if (m->status == RHN_CQE_SUCCESS &&
            uint64_t{op.msg_len} + skip > m->capacity)
          m->status = RHN_CQE_LOC_LEN_ERR;
        if (m->status != RHN_CQE_SUCCESS) {
          if (m->status == RHN_CQE_LOC_LEN_ERR)
            counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
          nak(m->status == RHN_CQE_LOC_LEN_ERR ? RHN_SYN_LENGTH
                                               : RHN_SYN_BAD_WQE);
          complete_receive(*m, node, src_qpn, RHN_CQE_OP_RECV, 0, 0);
          if (m != &single) rx_free(p, *m);
          return;
        }
      } else {
        m = rx_find(p, src, op.msn);
        if (!m || m->qpn != qpn) {
          // The rest of a refused message is expected; anything else is
          // not.
          if (!nak_remembered(p, src, op.msn))
            counters.add(RHN_CNT_MALFORMED_PACKETS);
          return;
        }
      }
      if (op.msg_offset + skip != m->length ||
          uint64_t{m->length} + data.size() > m->capacity) {
        counters.add(RHN_CNT_MALFORMED_PACKETS);
        return;
      }
      // Scatter into the receive WQE's SGEs.
      const bool ok =
          sge_dma(m->sge, m->num_sge, m->length,
                  const_cast<uint8_t*>(data.data()), data.size(), m->pdn, true);
      if (!ok) {
        m->status = RHN_CQE_LOC_PROT_ERR;
        nak(RHN_SYN_DMA);
        complete_receive(*m, node, src_qpn, RHN_CQE_OP_RECV, 0, 0);
        if (m != &single) rx_free(p, *m);
        return;
      }
      m->length += static_cast<uint32_t>(data.size());
      if (last) {
        const bool imm = op.flags & RHN_WOP_F_IMM;
        complete_receive(
            *m, node, src_qpn, RHN_CQE_OP_RECV, imm ? op.imm_data : 0,
            static_cast<uint8_t>(
                (imm ? RHN_CQE_F_IMM : 0) | (grh ? RHN_CQE_F_GRH : 0) |
                ((op.flags & RHN_WOP_F_SOLICITED) ? RHN_CQE_F_SOLICITED : 0)));
        if (m != &single) rx_free(p, *m);
      }
      return;
    }
    case RHN_WOP_WRITE:
    case RHN_WOP_READ_REQ:
    case RHN_WOP_FETCH_ADD:
    case RHN_WOP_CMP_SWAP: {
      if (qp->type == RHN_QP_UD) {
        counters.add(RHN_CNT_UD_DROPS);
        return;
      }
      const bool atomic =
          op.opcode == RHN_WOP_FETCH_ADD || op.opcode == RHN_WOP_CMP_SWAP;
      const uint32_t right = op.opcode == RHN_WOP_WRITE
                                 ? RHN_ACCESS_REMOTE_WRITE
                             : atomic ? RHN_ACCESS_REMOTE_ATOMIC
                                      : RHN_ACCESS_REMOTE_READ;
      const uint64_t len = op.opcode == RHN_WOP_WRITE ? data.size()
                           : atomic                   ? 8
                                                      : op.msg_len;
      if (!first && nak_remembered(p, src, op.msn)) return;  // NAKed
      if (atomic && data.size() != 16) {
        counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
        nak(RHN_SYN_LENGTH);
        return;
      }
      // Resolve the target: rkey + VA, or the area of the target's context.
      uint64_t va = op.remote_addr;
      uint32_t key = op.rkey;
      rhn_syndrome syn = RHN_SYN_NONE;
      if (op.flags & RHN_WOP_F_AREA) {
        const AreaObj* a = find_area(qp->context, op.rkey);
        if (!a) {
          syn = RHN_SYN_BAD_AREA;
        } else if (op.remote_addr > a->length ||
                   len > a->length - op.remote_addr) {
          syn = RHN_SYN_BOUNDS;
        } else {
          va = a->iova + op.remote_addr;
          const MrObj& mr = mrs[a->mr_index];
          key = (a->mr_index << RHN_KEY_INDEX_SHIFT) | mr.variant;
        }
      }
      if (!(qp->access & right)) syn = RHN_SYN_ACCESS_RIGHTS;
      uint32_t mr_index = 0;
      if (syn == RHN_SYN_NONE)
        syn = check_key(key, kNone, qp->pdn, right, va, len, &mr_index);
      if (syn == RHN_SYN_NONE && atomic && (va & 7)) syn = RHN_SYN_ALIGNMENT;
      if (syn != RHN_SYN_NONE) {
        counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
        nak(syn);
        return;
      }
      if (op.opcode == RHN_WOP_WRITE) {
        if (!data.empty() &&
            !mr_dma(mr_index, va, const_cast<uint8_t*>(data.data()),
                    data.size(), true)) {
          nak(RHN_SYN_DMA);
          return;
        }
        if (last && (op.flags & RHN_WOP_F_IMM)) {
          RxContext m;
          if (!take_recv_wqe(*qp, qpn, m)) {
            rnr(RHN_SYN_RNR);
            return;
          }
          m.length = op.msg_len;
          complete_receive(m, node, src_qpn, RHN_CQE_OP_RECV_WRITE_IMM,
                           op.imm_data,
                           static_cast<uint8_t>(
                               RHN_CQE_F_IMM | ((op.flags & RHN_WOP_F_SOLICITED)
                                                    ? RHN_CQE_F_SOLICITED
                                                    : 0)));
        }
        return;
      }
      if (atomic) {
        uint64_t operand[2], old;
        std::memcpy(operand, data.data(), sizeof(operand));
        if (!mr_dma(mr_index, va, &old, 8, false)) {
          nak(RHN_SYN_DMA);
          return;
        }
        uint64_t next = old;
        if (op.opcode == RHN_WOP_FETCH_ADD)
          next = old + operand[0];
        else if (old == operand[0])
          next = operand[1];
        if (next != old && !mr_dma(mr_index, va, &next, 8, true)) {
          nak(RHN_SYN_DMA);
          return;
        }
        respond(p, RHN_WOP_ATOMIC_RESP, RHN_SYN_NONE, op,
                {reinterpret_cast<const uint8_t*>(&old), 8});
        return;
      }
      // READ: queue the data stream back to the requester. It keeps the
      // key, PD and right, not the region: each chunk is checked again.
      const uint32_t r = free_responder_reads.front();
      free_responder_reads.pop();
      ResponderRead& rr = responder_reads[r];
      rr = ResponderRead{};
      rr.used = true;
      rr.qp_type = qp->type;
      rr.node = node;
      rr.requester_src = src;
      rr.responder_qpn = qpn;
      rr.responder_gen = qp->gen;
      rr.msn = op.msn;
      rr.key = key;
      rr.pdn = qp->pdn;
      rr.va = va;
      rr.length = op.msg_len;
      if (p.reads_tail != kNone)
        responder_reads[p.reads_tail].next = r;
      else
        p.reads_head = r;
      p.reads_tail = r;
      peer_needs_service(p);
      return;
    }
    default:
      counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
      nak(RHN_SYN_BAD_OPCODE);
      return;
  }
}

bool Engine::Impl::stream_reads(Peer& p) {
  bool did = false;
  for (uint32_t n = 0; n < 16 && p.reads_head != kNone; n++) {
    const uint32_t r_index = p.reads_head;
    ResponderRead& r = responder_reads[r_index];
    // READ data takes send memory like a request (the reserve is kept for
    // NAKs and atomic replies) but is charged to no context.
    if (free_slots.size() <= response_reserve ||
        p.unacked_count >= cfg.channel_window)
      return did;
    did = true;
    rhn_op_hdr req{};  // the request, as far as an answer needs it
    req.qp_type = r.qp_type;
    req.dst_qpn = r.responder_qpn;
    req.src_qpn = r.requester_src;
    req.msn = r.msn;
    const QpObj& qp = qps[r.responder_qpn];
    if (r.cancelled || !qp.valid || qp.gen != r.responder_gen) {
      respond(p, RHN_WOP_NAK, RHN_SYN_FLUSHED, req, {});
      free_read(p, r_index);
      continue;
    }
    const uint32_t chunk = std::min<uint32_t>(RHN_WIRE_MTU, r.length - r.sent);
    uint32_t mr_index = 0;
    rhn_syndrome syn = RHN_SYN_NONE;
    if (chunk)
      syn = check_key(r.key, kNone, r.pdn, RHN_ACCESS_REMOTE_READ,
                      r.va + r.sent, chunk, &mr_index);
    const uint32_t slot = begin_data(kNone);
    if (syn == RHN_SYN_NONE && chunk &&
        !mr_dma(mr_index, r.va + r.sent, slots[slot].frame + RHN_DATA_HDR_LEN,
                chunk, false))
      syn = RHN_SYN_DMA;
    if (syn != RHN_SYN_NONE) {
      // The region went away (or changed) under the READ: the rest is
      // refused, and not one byte of whatever is there now leaves.
      return_slot(slot);
      counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
      respond(p, RHN_WOP_NAK, static_cast<uint8_t>(syn), req, {});
      free_read(p, r_index);
      continue;
    }
    rhn_op_hdr op{};
    op.opcode = RHN_WOP_READ_RESP;
    op.flags = (r.sent == 0 ? RHN_WOP_F_FIRST : 0) |
               (r.sent + chunk == r.length ? RHN_WOP_F_LAST : 0);
    op.qp_type = r.qp_type;
    op.dst_qpn = r.requester_src;
    op.src_qpn = r.responder_qpn;
    op.msn = r.msn;
    op.msg_len = r.length;
    op.msg_offset = r.sent;
    commit_data(p, slot, op, chunk, false, kNone, 0, false);
    r.sent += chunk;
    if (r.sent == r.length) free_read(p, r_index);
  }
  return did;
}

// A raw frame for the net_device: into the raw QP's next receive WQE, or
// dropped (counted) when there is none; nothing is resent.
void Engine::Impl::receive_raw_frame(const Packet& pkt) {
  if (raw_qpn == kNone || !qps[raw_qpn].valid ||
      (qps[raw_qpn].state != RHN_QPS_RTR &&
       qps[raw_qpn].state != RHN_QPS_RTS)) {
    counters.add(RHN_CNT_UD_DROPS);
    return;
  }
  QpObj& qp = qps[raw_qpn];
  RxContext m;
  if (!take_recv_wqe(qp, raw_qpn, m)) {
    counters.add(RHN_CNT_UD_DROPS);
    return;
  }
  if (m.status == RHN_CQE_SUCCESS && pkt.payload.size() > m.capacity)
    m.status = RHN_CQE_LOC_LEN_ERR;
  if (m.status == RHN_CQE_SUCCESS &&
      !sge_dma(m.sge, m.num_sge, 0, const_cast<uint8_t*>(pkt.payload.data()),
               pkt.payload.size(), m.pdn, true))
    m.status = RHN_CQE_LOC_PROT_ERR;
  if (m.status == RHN_CQE_SUCCESS)
    m.length = static_cast<uint32_t>(pkt.payload.size());
  complete_receive(m, pkt.hdr.src_node, 0, RHN_CQE_OP_RECV_RAW_ETH, 0, 0);
}

}  // namespace rhinet::fw
