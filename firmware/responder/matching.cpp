// SPDX-License-Identifier: BSD-2-Clause
// The matching stage: where the bytes of an arriving two-sided message
// land. A receive WQE of the QP's RQ or SRQ, or an entry of a TM SRQ's
// tag list (ops/tm, which also decides which); a multi-packet message
// holds it in a receive context from its first packet to its last.
// Multicast groups and collective segments plug in here.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"

namespace rhinet::fw {

// ---- The matching stage: receive contexts of multi-packet SENDs.

RxContext* Engine::Impl::rx_find(Peer& p, uint32_t src, uint32_t msn) {
  for (uint32_t i = p.rx_head; i != kNone; i = rx_ctxs[i].next) {
    RxContext& m = rx_ctxs[i];
    if (m.src == src && (msn == kNone || m.msn == msn)) return &m;
  }
  return nullptr;
}

RxContext* Engine::Impl::rx_alloc(Peer& p, uint32_t dst_context) {
  if (free_rx_ctxs.empty() || !shares.take(dst_context, Res::kRxContexts))
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
  return &m;
}

void Engine::Impl::rx_free(Peer& p, RxContext& m) {
  const uint32_t idx = static_cast<uint32_t>(&m - rx_ctxs.data());
  for (uint32_t* link = &p.rx_head; *link != kNone;
       link = &rx_ctxs[*link].next) {
    if (*link != idx) continue;
    *link = m.next;
    break;
  }
  shares.give(m.owner, Res::kRxContexts);
  m.used = false;
  m.next = kNone;
  free_rx_ctxs.push(idx);
}

void Engine::Impl::rx_abandon(Peer& p, RxContext& m, uint8_t status) {
  m.status = status;
  complete_receive(m, m.node, m.src & RHN_WIRE_QPN_MASK, m.cqe_op, 0, 0);
  rx_free(p, m);
}

void Engine::Impl::rx_abandon_all(Peer& p) {
  while (p.rx_head != kNone)
    rx_abandon(p, rx_ctxs[p.rx_head], RHN_CQE_GENERAL_ERR);
}

bool Engine::Impl::take_recv_wqe(QpObj& qp, uint32_t qpn, RxContext& m) {
  return take_recv_wqe_from(qp, qpn, qp.srqn, m);
}

SrqObj* Engine::Impl::xrc_srq(uint32_t number, uint32_t xrcd) {
  const uint32_t index = number & RHN_XRC_SRQN_INDEX_MASK;
  if (number > RHN_XRC_SRQN_MASK || index >= srqs.size()) return nullptr;
  SrqObj& s = srqs[index];
  if (!s.valid || s.xrcd == 0 || s.xrcd != xrcd ||
      s.incarnation != number >> RHN_XRC_SRQN_INCARNATION_SHIFT)
    return nullptr;
  return &s;
}

bool Engine::Impl::take_recv_wqe_from(QpObj& qp, uint32_t qpn, uint32_t srqn,
                                      RxContext& m) {
  HostRef ring;
  uint32_t* consumer;
  uint32_t* producer;
  HostRef record;
  uint32_t log;
  uint32_t pdn = qp.pdn;
  SrqObj* srq = nullptr;
  if (srqn != kNone) {
    srq = &srqs[srqn];
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
  // An endpoint whose RQ holds irecvs (ops/tag) has no plain receive:
  // irecvs the NIC has read wait between the consumer and the scan.
  if (!srq && qp.type == RHN_QP_ENDPOINT &&
      int32_t(qp.rq_scan - qp.rq_consumer) > 0)
    return false;
  if (*consumer == *producer) {
    rhn_queue_record rec;
    counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
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
  counters.add_bus(RHN_CNT_RECV_WQE_FETCHES, 1);
  const bool fetched =
      host_dma(ring, uint64_t{index & ((1u << log) - 1)} * RHN_RQ_WQE_SIZE, &w,
               sizeof(w), false);
  if (fetched && !srq && (w.reserved0 & RHN_RQ_F_TAG)) return false;
  (*consumer)++;
  m.qpn = qpn;
  m.qp_gen = qp.gen;
  m.wqe_index = index;
  m.from_srq = srq != nullptr;
  m.xrc_srq = srq && srq->xrcd ? srqn : kNone;
  m.xrc_incarnation = srq ? srq->incarnation : 0;
  m.status = RHN_CQE_SUCCESS;
  m.capacity = 0;
  m.length = 0;
  m.num_sge = 0;
  m.pdn = pdn;
  if (!fetched || w.num_sge > RHN_RQ_MAX_SGES || (w.reserved0 & RHN_RQ_F_TAG)) {
    // (On an SRQ a tag receive is malformed: tag matching is endpoints'.)
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
    async_event(RHN_EQE_SRQ_LIMIT, srqn, 0);
  }
  return true;
}

void Engine::Impl::untake_recv_wqe(QpObj& qp, const RxContext& m) {
  // An XRC receive came from the SRQ its packet named, not the QP's.
  const uint32_t srqn = m.xrc_srq != kNone ? m.xrc_srq : qp.srqn;
  uint32_t& consumer = m.from_srq ? srqs[srqn].consumer : qp.rq_consumer;
  if (consumer == m.wqe_index + 1) consumer = m.wqe_index;
}

void Engine::Impl::complete_receive(RxContext& m, uint16_t src_node,
                                    uint32_t src_qpn, uint8_t cqe_opcode,
                                    uint32_t imm, uint8_t flags) {
  if (m.qpn >= qps.size() || !qps[m.qpn].valid || qps[m.qpn].gen != m.qp_gen)
    return;
  if (m.list_entry != kNone) {  // it landed in a family's buffer list
    modules_placed(*this, m);
    return;
  }
  QpObj& qp = qps[m.qpn];
  rhn_cqe c{};
  uint32_t cqn = qp.recv_cqn;
  if (m.xrc_srq != kNone) {
    // XRC: on the SRQ's CQ, if the SRQ (which holds that CQ) still lives.
    const SrqObj& s = srqs[m.xrc_srq];
    if (!s.valid || s.incarnation != m.xrc_incarnation) return;
    cqn = s.cqn;
    c.xrc_srqn = static_cast<uint16_t>(m.xrc_srq);
    c.ext_flags = RHN_CQE_X_XRC;
  }
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
  // It may join a run (queues.md, "Runs").
  cq_push_recv(cqn, c, (flags & RHN_CQE_F_SOLICITED) != 0, m);
}

}  // namespace rhinet::fw
