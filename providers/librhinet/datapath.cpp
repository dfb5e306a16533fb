// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The data path: no system calls. A post writes WQEs into the ring, then
// the producer index into the doorbell record, then kicks the queue on the
// process's doorbell page. A poll reads CQEs whose owner bit says they are
// new and hands the consumed index back through the CQ record.
#include <cerrno>
#include <cstring>

#include "provider.h"

namespace rhinet {

namespace {

bool is_ud(const Qp* qp) { return qp->vqp.qp.qp_type == IBV_QPT_UD; }

// RoCE has no service level; a UD receive reports in wc.sl which network
// header its buffer starts with, as mlx5 does (0 GRH, 1 IPv6, 2 IPv4):
// UCX's ud_verbs reads it to find the destination address of RoCE v2
// packets, and drops IPv4 ones without it.
uint8_t roce_header_type(uint8_t cqe_flags) {
  if (cqe_flags & RHN_CQE_F_NET_IPV4) return 2;
  if (cqe_flags & RHN_CQE_F_NET_IPV6) return 1;
  return 0;
}

int nic_opcode(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
      return RHN_OP_SEND;
    case IBV_WR_SEND_WITH_IMM:
      return RHN_OP_SEND_IMM;
    case IBV_WR_RDMA_WRITE:
      return RHN_OP_WRITE;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return RHN_OP_WRITE_IMM;
    case IBV_WR_RDMA_READ:
      return RHN_OP_READ;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return RHN_OP_FETCH_ADD;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return RHN_OP_CMP_SWAP;
    case IBV_WR_BIND_MW:
      return RHN_OP_BIND_MW;
    case IBV_WR_LOCAL_INV:
      return RHN_OP_LOCAL_INV;
    case IBV_WR_SEND_WITH_INV:
      return RHN_OP_SEND_INV;
    default:
      return -1;
  }
}

bool carries_payload(int op) {
  return op == RHN_OP_SEND || op == RHN_OP_SEND_IMM || op == RHN_OP_WRITE ||
         op == RHN_OP_WRITE_IMM || op == RHN_OP_SEND_INV;
}

bool may_be_inline(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
         op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
         op == IBV_WR_SEND_WITH_INV;
}

bool is_window_op(int op) {
  return op == RHN_OP_BIND_MW || op == RHN_OP_LOCAL_INV;
}

// Builds one WQE in @w (RHN_WQE_MAX_SLOTS slots, the base slot zeroed);
// returns its slot count or 0 with @err set. Extension slots need no
// clearing: the NIC reads only the SGEs or inline bytes num_sge names.
uint32_t build_wqe(const Qp* qp, const SendDesc& d, uint8_t* w, int* err) {
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  const int op = nic_opcode(d.opcode);
  const bool ud = is_ud(qp);
  const bool atomic = op == RHN_OP_FETCH_ADD || op == RHN_OP_CMP_SWAP;
  // UD: SENDs only; UC: no READ or atomics (nothing comes back to it),
  // and no SEND_WITH_INV (RC only); windows bind on RC and UC.
  const bool uc = qp->vqp.qp.qp_type == IBV_QPT_UC;
  const bool window_op = is_window_op(op);
  if (op < 0 || (ud && (op != RHN_OP_SEND && op != RHN_OP_SEND_IMM)) ||
      (uc && !carries_payload(op) && !window_op) ||
      (uc && op == RHN_OP_SEND_INV) || (ud && !d.ah) ||
      (d.inline_data && !carries_payload(op)) || (window_op && d.num_sge)) {
    *err = EINVAL;
    return 0;
  }
  const uint32_t nsge = d.num_sge;
  uint32_t ext;
  if (d.inline_data) {
    uint64_t len = 0;
    for (uint32_t i = 0; i < nsge; i++) len += d.sge[i].length;
    if (len > qp->max_inline) {
      *err = EINVAL;
      return 0;
    }
    uint8_t* dst = w + offsetof(rhn_send_wqe, d);
    for (uint32_t i = 0; i < nsge; i++) {
      memcpy(dst, reinterpret_cast<void*>(d.sge[i].addr), d.sge[i].length);
      dst += d.sge[i].length;
    }
    h->num_sge = static_cast<uint16_t>(len);
    h->flags |= RHN_WQE_F_INLINE;
    ext = ext_units_for_inline(static_cast<uint32_t>(len));
  } else {
    if (nsge > qp->max_send_sge || (atomic && nsge != 1)) {
      *err = EINVAL;
      return 0;
    }
    // SGEs are contiguous from the base slot's last 16 bytes on.
    auto* sge = reinterpret_cast<rhn_sge*>(w + offsetof(rhn_send_wqe, d));
    for (uint32_t i = 0; i < nsge; i++)
      sge[i] = rhn_sge{d.sge[i].addr, d.sge[i].length, d.sge[i].lkey};
    h->num_sge = static_cast<uint16_t>(nsge);
    ext = ext_units_for_sges(nsge);
  }
  h->opcode = static_cast<uint8_t>(op);
  h->ext_units = static_cast<uint8_t>(ext);
  h->wqe_index = static_cast<uint16_t>(qp->sq_producer);
  if ((d.send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
    h->flags |= RHN_WQE_F_SIGNALED;
  if (d.send_flags & IBV_SEND_SOLICITED) h->flags |= RHN_WQE_F_SOLICITED;
  if (d.send_flags & IBV_SEND_FENCE) h->flags |= RHN_WQE_F_FENCE;
  if (op == RHN_OP_SEND_IMM || op == RHN_OP_WRITE_IMM)
    h->imm_data = d.imm_data;  // opaque, network order both ends
  if (ud) {
    h->dst_node = d.ah->dest_node;
    h->dst_qpn = d.remote_qpn;
    h->u.status.qkey = d.remote_qkey;
    // The GRH slot follows the payload slots.
    h->flags |= RHN_WQE_F_GRH;
    ext += kUdGrhUnits;
    h->ext_units = static_cast<uint8_t>(ext);
    memcpy(w + ext * RHN_SQ_SLOT_SIZE, &d.ah->grh, sizeof(d.ah->grh));
  } else if (atomic) {
    h->remote_addr = d.remote_addr;
    h->remote_key = d.rkey;
    h->u.atomic.compare_add = d.compare_add;
    h->u.atomic.swap = d.swap;
  } else if (op == RHN_OP_BIND_MW) {
    h->remote_key = d.rkey;  // the window's key once bound
    h->remote_addr = d.remote_addr;
    h->imm_data = d.bind_rights;
    h->u.bind.mw_key = d.bind_mw_key;
    h->u.bind.mr_lkey = d.bind_mr_lkey;
    h->u.bind.length = d.bind_length;
  } else if (op == RHN_OP_LOCAL_INV) {
    h->remote_key = d.invalidate_rkey;
  } else if (op == RHN_OP_SEND_INV) {
    h->imm_data = d.invalidate_rkey;  // a key, not an immediate
  } else if (op != RHN_OP_SEND && op != RHN_OP_SEND_IMM) {
    h->remote_addr = d.remote_addr;
    h->remote_key = d.rkey;
  }
  return 1 + ext;
}

SendDesc desc_of(const Qp* qp, const ibv_send_wr* wr) {
  SendDesc d;
  d.opcode = wr->opcode;
  d.send_flags = wr->send_flags;
  // The NIC has no inline READ or atomic: the flag is ignored for those.
  d.inline_data =
      (wr->send_flags & IBV_SEND_INLINE) && may_be_inline(wr->opcode);
  d.sge = wr->sg_list;
  d.num_sge = static_cast<uint32_t>(wr->num_sge);
  d.imm_data = wr->imm_data;
  switch (wr->opcode) {
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      d.remote_addr = wr->wr.atomic.remote_addr;
      d.rkey = wr->wr.atomic.rkey;
      d.compare_add = wr->wr.atomic.compare_add;
      d.swap = wr->wr.atomic.swap;
      break;
    case IBV_WR_BIND_MW:
      // Type 1 windows bind through ibv_bind_mw only.
      if (wr->bind_mw.mw && wr->bind_mw.mw->type == IBV_MW_TYPE_2)
        describe_bind(&d, wr->bind_mw.mw, wr->bind_mw.rkey,
                      wr->bind_mw.bind_info);
      else
        d.opcode = static_cast<ibv_wr_opcode>(-1);  // refused by the builder
      break;
    case IBV_WR_LOCAL_INV:
    case IBV_WR_SEND_WITH_INV:
      d.invalidate_rkey = wr->invalidate_rkey;
      break;
    default:
      d.remote_addr = wr->wr.rdma.remote_addr;
      d.rkey = wr->wr.rdma.rkey;
  }
  if (is_ud(qp) && wr->wr.ud.ah) {  // wr.ud shares its bytes with wr.rdma
    d.ah = to_ah(wr->wr.ud.ah);
    d.remote_qpn = wr->wr.ud.remote_qpn;
    d.remote_qkey = wr->wr.ud.remote_qkey;
  }
  return d;
}

}  // namespace

void describe_bind(SendDesc* d, const ibv_mw* mw, uint32_t new_rkey,
                   const ibv_mw_bind_info& info) {
  d->opcode = IBV_WR_BIND_MW;
  d->bind_mw_key = mw->rkey;
  d->rkey = new_rkey;
  d->bind_mr_lkey = info.mr ? info.mr->lkey : 0;
  d->remote_addr = info.addr;
  d->bind_length = info.length;
  const unsigned int a = info.mw_access_flags;
  d->bind_rights =
      (a & IBV_ACCESS_REMOTE_WRITE ? RHN_ACCESS_REMOTE_WRITE : 0) |
      (a & IBV_ACCESS_REMOTE_READ ? RHN_ACCESS_REMOTE_READ : 0) |
      (a & IBV_ACCESS_REMOTE_ATOMIC ? RHN_ACCESS_REMOTE_ATOMIC : 0);
}

int enqueue_send(Qp* qp, const SendDesc& desc, uint64_t wr_id) {
  // A QP without a send queue is always full, as a queue of 0 WRs is.
  if (qp->no_sq) return ENOMEM;
  const uint32_t depth = 1u << qp->sq_log, mask = depth - 1;
  uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  int err = 0;
  memset(w, 0, RHN_SQ_SLOT_SIZE);
  const uint32_t slots = build_wqe(qp, desc, w, &err);
  if (!slots) return err;
  if (qp->sq_producer + slots - qp->sq_consumer > depth) return ENOMEM;
  for (uint32_t s = 0; s < slots; s++)
    memcpy(qp->sq + ((qp->sq_producer + s) & mask) * RHN_SQ_SLOT_SIZE,
           w + s * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
  qp->sq_info[qp->sq_producer & mask] =
      SendSlot{wr_id, static_cast<uint8_t>(slots)};
  qp->sq_producer += slots;
  return 0;
}

void ring_sq(Qp* qp) {
  to_device_barrier();
  __atomic_store_n(&qp->sq_record->producer_index, qp->sq_producer,
                   __ATOMIC_RELEASE);
  to_ctx(qp->vqp.qp.context)->kick(RHN_DB_SQ, qp->qpn);
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = to_qp(ibqp);
  int err = 0;
  bool posted = false;

  std::lock_guard<std::mutex> g(qp->sq_lock);
  if (ibqp->state < IBV_QPS_RTS && ibqp->state != IBV_QPS_SQD) {
    *bad = wr;
    return EINVAL;
  }
  for (; wr; wr = wr->next) {
    err =
        wr->num_sge < 0 ? EINVAL : enqueue_send(qp, desc_of(qp, wr), wr->wr_id);
    if (err) break;
    posted = true;
  }
  if (posted) ring_sq(qp);
  if (err) *bad = wr;
  return err;
}

namespace {

// Fills one receive WQE; false if it has too many SGEs. UD buffers start
// with the GRH room, which the NIC fills or skips (hw_queues.h).
bool build_recv(const ibv_recv_wr* wr, uint32_t index, uint32_t max_sge,
                rhn_recv_wqe* r) {
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge ||
      wr->num_sge > RHN_RQ_MAX_SGES)
    return false;
  rhn_recv_wqe tmp{};
  tmp.wqe_index = static_cast<uint16_t>(index);
  tmp.num_sge = static_cast<uint16_t>(wr->num_sge);
  for (int i = 0; i < wr->num_sge; i++)
    tmp.sge[i] = rhn_sge{wr->sg_list[i].addr, wr->sg_list[i].length,
                         wr->sg_list[i].lkey};
  *r = tmp;
  return true;
}

}  // namespace

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = to_qp(ibqp);
  int err = 0;
  bool posted = false;
  // Receives go to a QP from INIT on (in ERR they are flushed); a QP in
  // RESET has no receive queue yet.
  if (qp->srq || ibqp->state == IBV_QPS_RESET) {
    *bad = wr;
    return EINVAL;
  }
  std::lock_guard<std::mutex> g(qp->rq_lock);
  for (; wr; wr = wr->next) {
    if (qp->rq_producer - qp->rq_consumer >= qp->rq_depth) {
      err = ENOMEM;
      break;
    }
    const uint32_t pos = qp->rq_producer & (qp->rq_depth - 1);
    if (!build_recv(wr, qp->rq_producer, qp->max_recv_sge, &qp->rq[pos])) {
      err = EINVAL;
      break;
    }
    qp->rq_wr_ids[pos] = wr->wr_id;
    qp->rq_producer++;
    posted = true;
  }
  if (posted) {
    to_device_barrier();
    __atomic_store_n(&qp->rq_record->producer_index, qp->rq_producer,
                     __ATOMIC_RELEASE);
    to_ctx(ibqp->context)->kick(RHN_DB_RQ, qp->qpn);
  }
  if (err) *bad = wr;
  return err;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* srq = to_srq(ibsrq);
  int err = 0;
  bool posted = false;
  std::lock_guard<std::mutex> g(srq->lock);
  for (; wr; wr = wr->next) {
    const uint32_t pos = srq->producer & (srq->depth - 1);
    if (srq->busy[pos]) {
      err = ENOMEM;
      break;
    }
    if (!build_recv(wr, srq->producer, srq->max_sge, &srq->ring[pos])) {
      err = EINVAL;
      break;
    }
    srq->wr_ids[pos] = wr->wr_id;
    srq->busy[pos] = 1;
    srq->producer++;
    posted = true;
  }
  if (posted) {
    to_device_barrier();
    __atomic_store_n(&srq->record->producer_index, srq->producer,
                     __ATOMIC_RELEASE);
    to_ctx(ibsrq->context)->kick(RHN_DB_SRQ, srq->srqn);
  }
  if (err) *bad = wr;
  return err;
}

int post_srq_ops(ibv_srq* ibsrq, ibv_ops_wr* wr, ibv_ops_wr** bad) {
  Srq* srq = to_srq(ibsrq);
  if (!srq->tm) {
    *bad = wr;
    return EINVAL;
  }
  int err = 0;
  bool posted = false;
  std::lock_guard<std::mutex> g(srq->lock);
  const uint32_t mask = srq->ops_depth - 1;
  for (; wr; wr = wr->next) {
    const uint32_t executed =
        __atomic_load_n(&srq->ops_record->nic_consumer, __ATOMIC_ACQUIRE);
    if (srq->ops_producer - executed >= srq->ops_depth) {
      err = ENOMEM;
      break;
    }
    rhn_tm_op_wqe w{};
    Srq::TmOp info{wr->wr_id, UINT32_MAX, 0,
                   (wr->flags & IBV_OPS_SIGNALED) != 0};
    switch (wr->opcode) {
      case IBV_WR_TAG_ADD: {
        const int n = wr->tm.add.num_sge;
        if (n < 0 || n > RHN_TM_MAX_SGES) {
          err = EINVAL;
          break;
        }
        if (srq->free_tag == UINT32_MAX) {  // max_num_tags in the list
          err = ENOMEM;
          break;
        }
        const uint32_t h = srq->free_tag;
        Srq::TmTag& t = srq->tags[h];
        srq->free_tag = t.next_free;
        // A CQE is owed for its match (or its DEL), and for the ADD if
        // signaled.
        t.wr_id = wr->tm.add.recv_wr_id;
        t.refs = info.signaled ? 2 : 1;
        info.handle = h;
        w.opcode = RHN_TM_OP_ADD;
        w.tag = wr->tm.add.tag;
        w.mask = wr->tm.add.mask;
        if (n) {
          const ibv_sge& sg = wr->tm.add.sg_list[0];
          w.num_sge = 1;
          w.sge = rhn_sge{sg.addr, sg.length, sg.lkey};
        }
        wr->tm.handle = h;
        break;
      }
      case IBV_WR_TAG_DEL:
        if (wr->tm.handle >= srq->max_tags || !srq->tags[wr->tm.handle].refs) {
          err = EINVAL;
          break;
        }
        info.handle = wr->tm.handle;
        srq->tags[info.handle].refs++;  // a DEL always completes
        w.opcode = RHN_TM_OP_DEL;
        break;
      case IBV_WR_TAG_SYNC:
        w.opcode = RHN_TM_OP_SYNC;
        break;
      default:
        err = EINVAL;
    }
    if (err) break;
    info.opcode = w.opcode;
    if (info.handle != UINT32_MAX)
      w.handle = static_cast<uint16_t>(info.handle);
    if (info.signaled) w.flags |= RHN_TM_OP_F_SIGNALED;
    if (wr->flags & IBV_OPS_TM_SYNC) {
      w.flags |= RHN_TM_OP_F_SYNC;
      w.unexpected_cnt = wr->tm.unexpected_cnt;
      srq->unexp_out = wr->tm.unexpected_cnt;
    }
    w.wqe_index = static_cast<uint16_t>(srq->ops_producer);
    srq->ops[srq->ops_producer & mask] = w;
    srq->op_info[srq->ops_producer & mask] = info;
    srq->ops_producer++;
    posted = true;
  }
  if (posted) {
    to_device_barrier();
    __atomic_store_n(&srq->ops_record->producer_index, srq->ops_producer,
                     __ATOMIC_RELEASE);
    to_ctx(ibsrq->context)->kick(RHN_DB_SRQ, srq->srqn | RHN_DB_SRQ_TM_OPS);
  }
  if (err) *bad = wr;
  return err;
}

void reset_qp_queues(Qp* qp) {
  std::lock_guard<std::mutex> gs(qp->sq_lock);
  std::lock_guard<std::mutex> gr(qp->rq_lock);
  qp->sq_producer = qp->sq_consumer = 0;
  qp->rq_producer = qp->rq_consumer = 0;
  qp->sq_record->producer_index = 0;
  if (qp->rq_record) qp->rq_record->producer_index = 0;
}

namespace {

// The full index a CQE's low 16 bits name, at or after @base.
uint32_t widen(uint32_t base, uint16_t low) {
  return base + static_cast<uint16_t>(low - static_cast<uint16_t>(base));
}

ibv_wc_opcode wc_opcode(uint8_t op) {
  switch (op) {
    case RHN_CQE_OP_SEND:
      return IBV_WC_SEND;
    case RHN_CQE_OP_WRITE:
      return IBV_WC_RDMA_WRITE;
    case RHN_CQE_OP_READ:
      return IBV_WC_RDMA_READ;
    case RHN_CQE_OP_CMP_SWAP:
      return IBV_WC_COMP_SWAP;
    case RHN_CQE_OP_FETCH_ADD:
      return IBV_WC_FETCH_ADD;
    case RHN_CQE_OP_RECV_WRITE_IMM:
      return IBV_WC_RECV_RDMA_WITH_IMM;
    case RHN_CQE_OP_BIND_MW:
      return IBV_WC_BIND_MW;
    case RHN_CQE_OP_LOCAL_INV:
      return IBV_WC_LOCAL_INV;
    case RHN_CQE_OP_PD_REQUEST:
      return kWcPdRequest;
    case RHN_CQE_OP_PD_RELEASE:
      return kWcPdRelease;
    case RHN_CQE_OP_MCAST_LIST:
      return kWcMcastList;
    case RHN_CQE_OP_MCAST_SWITCH:
      return kWcMcastSwitch;
    case RHN_CQE_OP_SUBSCRIBE:
      return kWcSubscribe;
    case RHN_CQE_OP_UNSUBSCRIBE:
      return kWcUnsubscribe;
    case RHN_CQE_OP_SHARE_UPDATE:
      return kWcShareUpdate;
    case RHN_CQE_OP_LOCK:
      return kWcLock;
    case RHN_CQE_OP_UNLOCK:
      return kWcUnlock;
    case RHN_CQE_OP_BARRIER:
      return kWcBarrier;
    case RHN_CQE_OP_COLLECTIVE:
      return kWcCollective;
    default:
      return IBV_WC_RECV;
  }
}

void complete_send(Qp* qp, const rhn_cqe& e, ibv_wc* wc) {
  std::lock_guard<std::mutex> g(qp->sq_lock);
  const uint32_t idx = widen(qp->sq_consumer, e.wqe_index);
  const SendSlot& info = qp->sq_info[idx & ((1u << qp->sq_log) - 1)];
  wc->wr_id = info.wr_id;
  // Every WQE before this one is complete too (unsignaled ones included).
  qp->sq_last_completed = idx;
  qp->sq_consumer = idx + info.slots;
}

// ---- Tag matching (TM SRQs).

// More unexpected messages than this polled since the last count software
// reported: completions ask for a sync (IBV_WC_TM_SYNC_REQ), as mlx5's do.
constexpr uint32_t kTmMaxSyncDiff = 0x3fff;

bool is_list_op(uint8_t op) {
  return op == RHN_CQE_OP_TM_ADD || op == RHN_CQE_OP_TM_DEL ||
         op == RHN_CQE_OP_TM_SYNC;
}

// A CQE the NIC will write no more of for a tag-list entry (srq->lock
// held): the entry is free once none is owed.
void release_tag(Srq* srq, uint32_t h) {
  if (h >= srq->max_tags) return;
  Srq::TmTag& t = srq->tags[h];
  if (!t.refs || --t.refs) return;
  t.next_free = srq->free_tag;
  srq->free_tag = h;
}

// The last CQE of a match: its data is in place, or it failed.
bool final_tm_recv(const rhn_cqe& e) {
  return (e.ext_flags & RHN_CQE_X_TM_DATA_VALID) || e.status != RHN_CQE_SUCCESS;
}

// A list operation's CQE (qpn = the SRQ): false if nobody asked for it
// (an unsignaled DEL's, which completes only for the bookkeeping).
bool complete_list_op(Context* ctx, const rhn_cqe& e, ibv_wc* wc) {
  Srq* srq = ctx->srqs.get(e.qpn);
  if (!srq || !srq->tm) return false;
  std::lock_guard<std::mutex> g(srq->lock);
  const Srq::TmOp& op = srq->op_info[e.wqe_index & (srq->ops_depth - 1)];
  const bool ok = e.status == RHN_CQE_SUCCESS;
  if (op.opcode == RHN_TM_OP_ADD && op.handle < srq->max_tags) {
    if (!ok) srq->tags[op.handle].refs = 1;  // never in the list
    release_tag(srq, op.handle);
  } else if (op.opcode == RHN_TM_OP_DEL) {
    release_tag(srq, op.handle);          // the DEL's
    if (ok) release_tag(srq, op.handle);  // and no match will come
  }
  if (!op.signaled && (ok || op.opcode == RHN_TM_OP_DEL)) return false;
  memset(wc, 0, sizeof(*wc));
  wc->wr_id = op.wr_id;
  wc->status = e.status <= IBV_WC_TM_RNDV_INCOMPLETE
                   ? static_cast<ibv_wc_status>(e.status)
                   : IBV_WC_GENERAL_ERR;
  wc->vendor_err = e.vendor_err;
  wc->opcode = op.opcode == RHN_TM_OP_ADD   ? IBV_WC_TM_ADD
               : op.opcode == RHN_TM_OP_DEL ? IBV_WC_TM_DEL
                                            : IBV_WC_TM_SYNC;
  if (e.ext_flags & RHN_CQE_X_TM_SYNC_REQ) wc->wc_flags |= IBV_WC_TM_SYNC_REQ;
  return true;
}

// A message matched an entry (wqe_index = its handle).
void complete_tm_recv(Qp* qp, const rhn_cqe& e, ibv_wc* wc,
                      ibv_wc_tm_info* tm) {
  wc->opcode = IBV_WC_TM_RECV;
  if (e.ext_flags & RHN_CQE_X_TM_MATCH) wc->wc_flags |= IBV_WC_TM_MATCH;
  if (e.ext_flags & RHN_CQE_X_TM_DATA_VALID)
    wc->wc_flags |= IBV_WC_TM_DATA_VALID;
  if (e.status == RHN_CQE_SUCCESS || e.status == RHN_CQE_LOC_LEN_ERR ||
      e.status == RHN_CQE_TM_RNDV_INCOMPLETE) {
    tm->tag = uint64_t{e.vendor_err} << 32 | e.imm_data;
    tm->priv = e.src_qpn;  // the header's app_ctx
    wc->vendor_err = 0;
  }
  Srq* srq = qp->srq;
  if (!srq || !srq->tm) return;
  std::lock_guard<std::mutex> g(srq->lock);
  if (e.wqe_index < srq->max_tags) wc->wr_id = srq->tags[e.wqe_index].wr_id;
  if (final_tm_recv(e)) release_tag(srq, e.wqe_index);
}

void complete_recv(Qp* qp, const rhn_cqe& e, ibv_wc* wc) {
  if (qp->srq) {
    Srq* srq = qp->srq;
    std::lock_guard<std::mutex> g(srq->lock);
    const uint32_t pos = e.wqe_index & (srq->depth - 1);
    wc->wr_id = srq->wr_ids[pos];
    srq->busy[pos] = 0;
    return;
  }
  std::lock_guard<std::mutex> g(qp->rq_lock);
  const uint32_t idx = widen(qp->rq_consumer, e.wqe_index);
  wc->wr_id = qp->rq_wr_ids[idx & (qp->rq_depth - 1)];
  qp->rq_consumer = idx + 1;
}

}  // namespace

bool poll_one(Cq* cq, ibv_wc* wc) {
  Context* ctx = to_ctx(cq->vcq.cq.context);
  const uint32_t mask = (1u << cq->log_depth) - 1;
  for (;;) {
    const rhn_cqe* slot = &cq->ring[cq->consumer & mask];
    const uint8_t flags = __atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE);
    const bool phase = ((cq->consumer >> cq->log_depth) & 1) ^ 1;
    if (((flags & RHN_CQE_F_OWNER) != 0) != phase) return false;
    from_device_barrier();
    const rhn_cqe e = *slot;
    cq->consumer++;
    cq->cur_tm = ibv_wc_tm_info{};
    if (is_list_op(e.opcode)) {  // qpn names a TM SRQ
      if (complete_list_op(ctx, e, wc)) return true;
      continue;
    }

    Qp* qp = ctx->qps.get(e.qpn);
    if (!qp) continue;  // not ours (cannot happen: destroy cleans the CQ)
    ibv_wc& c = *wc;
    memset(&c, 0, sizeof(c));
    // A status the provider does not know is a general error.
    c.status = e.status <= IBV_WC_TM_RNDV_INCOMPLETE
                   ? static_cast<ibv_wc_status>(e.status)
                   : IBV_WC_GENERAL_ERR;
    c.vendor_err = e.vendor_err;
    c.opcode = wc_opcode(e.opcode);
    c.qp_num = e.qpn;
    c.byte_len = e.byte_len;
    if (e.flags & RHN_CQE_F_IMM) {
      c.wc_flags |= IBV_WC_WITH_IMM;
      c.imm_data = e.imm_data;
    }
    if (e.flags & RHN_CQE_F_INV) {  // the key shares imm_data's bytes
      c.wc_flags |= IBV_WC_WITH_INV;
      c.invalidated_rkey = e.imm_data;
    }
    if (e.opcode == RHN_CQE_OP_SIGNAL) {
      // A signal on one of the endpoint's areas (004 2.11): no receive
      // WQE; rhinetdv counts it (wr_id = the area key, imm = its value).
      c.opcode = kWcSignal;
      c.wr_id = e.vendor_err;
      c.vendor_err = 0;
      c.imm_data = e.imm_data;
      c.src_qp = e.src_qpn;
      c.slid = e.src_node;
    } else if (e.opcode == RHN_CQE_OP_TM_RECV) {
      complete_tm_recv(qp, e, &c, &cq->cur_tm);
    } else if (e.opcode == RHN_CQE_OP_TAG_RECV) {
      c.opcode = kWcTagRecv;
      c.wr_id = e.wqe_index;
      c.imm_data = e.imm_data;
      c.src_qp = e.src_qpn;
      c.slid = e.src_node;
    } else if (e.flags & RHN_CQE_F_SQ) {
      complete_send(qp, e, &c);
      if (e.opcode == RHN_CQE_OP_IPROBE ||
          e.opcode == RHN_CQE_OP_IRECV_CANCEL) {
        c.opcode = kWcTagLocal;
        c.imm_data = e.imm_data;
        c.pkey_index = e.ext_flags;
        c.src_qp = e.src_qpn;
        c.slid = e.src_node;
      }
    } else {
      complete_recv(qp, e, &c);
      c.src_qp = e.src_qpn;
      if (e.flags & RHN_CQE_F_GRH) c.wc_flags |= IBV_WC_GRH;
      c.sl = roce_header_type(e.flags);
      // A TM SRQ's receive WQE: a message for software to match.
      if (e.opcode == RHN_CQE_OP_TM_NO_TAG) c.opcode = IBV_WC_TM_NO_TAG;
      if (e.opcode == RHN_CQE_OP_TM_UNEXPECTED && qp->srq) {
        c.opcode = IBV_WC_TM_RECV;
        std::lock_guard<std::mutex> g(qp->srq->lock);
        if (++qp->srq->unexp_in - qp->srq->unexp_out > kTmMaxSyncDiff)
          c.wc_flags |= IBV_WC_TM_SYNC_REQ;
      }
    }
    return true;
  }
}

namespace {

// Removes the CQEs @drop says go from @cq (its lock held), moving the later
// ones up; @drop gives back what a removed one held.
template <typename Drop>
void clean_cq(Cq* cq, Drop drop) {
  const uint32_t depth = 1u << cq->log_depth, mask = depth - 1;
  uint32_t end = cq->consumer;  // the entries the NIC has written
  while (end - cq->consumer < depth) {
    const rhn_cqe* slot = &cq->ring[end & mask];
    const uint8_t flags = __atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE);
    const bool phase = ((end >> cq->log_depth) & 1) ^ 1;
    if (((flags & RHN_CQE_F_OWNER) != 0) != phase) break;
    end++;
  }
  from_device_barrier();
  uint32_t removed = 0;
  for (uint32_t i = end; i != cq->consumer;) {
    --i;
    rhn_cqe e = cq->ring[i & mask];
    if (drop(e)) {
      removed++;
    } else if (removed) {
      // Into a slot that holds an entry of the same lap: keep its owner.
      rhn_cqe* dst = &cq->ring[(i + removed) & mask];
      e.flags = static_cast<uint8_t>((e.flags & ~RHN_CQE_F_OWNER) |
                                     (dst->flags & RHN_CQE_F_OWNER));
      *dst = e;
    }
  }
  if (removed) {
    cq->consumer += removed;
    publish_consumer(cq);
  }
}

}  // namespace

void clean_qp_cqes(Qp* qp, bool forget) {
  Context* ctx = to_ctx(qp->vqp.qp.context);
  Cq* scq = to_cq(qp->vqp.qp.send_cq);
  Cq* rcq = to_cq(qp->vqp.qp.recv_cq);
  // Two CQs are locked in address order, so two cleaners cannot deadlock.
  Cq* first = scq < rcq ? scq : rcq;
  Cq* second = scq < rcq ? rcq : scq;
  std::unique_lock<std::mutex> l1(first->lock);
  std::unique_lock<std::mutex> l2;
  if (second != first) l2 = std::unique_lock<std::mutex>(second->lock);
  // (A TM SRQ's list operations name the SRQ in qpn: not the QP's.)
  auto mine = [qp](const rhn_cqe& e) {
    return e.qpn == qp->qpn && !is_list_op(e.opcode);
  };
  if (scq != rcq) clean_cq(scq, mine);
  clean_cq(rcq, [&](const rhn_cqe& e) {
    if (!mine(e)) return false;
    // Receives the QP took from its SRQ are given back to it.
    if (qp->srq && !(e.flags & RHN_CQE_F_SQ)) {
      Srq* srq = qp->srq;
      std::lock_guard<std::mutex> g(srq->lock);
      if (e.opcode != RHN_CQE_OP_TM_RECV)
        srq->busy[e.wqe_index & (srq->depth - 1)] = 0;
      else if (final_tm_recv(e))
        release_tag(srq, e.wqe_index);
    }
    return true;
  });
  if (forget) {
    std::lock_guard<std::mutex> g(ctx->table_lock);
    ctx->qps.set(qp->qpn, nullptr);
  }
}

void clean_srq_cqes(Srq* srq) {
  Context* ctx = to_ctx(srq->vsrq.srq.context);
  {
    std::lock_guard<std::mutex> g(srq->tm_cq->lock);
    clean_cq(srq->tm_cq, [srq](const rhn_cqe& e) {
      return is_list_op(e.opcode) && e.qpn == srq->srqn;
    });
  }
  std::lock_guard<std::mutex> g(ctx->table_lock);
  ctx->srqs.set(srq->srqn, nullptr);
}

void publish_consumer(Cq* cq) {
  to_device_barrier();
  __atomic_store_n(&cq->record->consumer_index, cq->consumer, __ATOMIC_RELEASE);
}

int poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = to_cq(ibcq);
  int got = 0;

  std::lock_guard<std::mutex> g(cq->lock);
  const uint32_t before = cq->consumer;
  while (got < n && poll_one(cq, &wc[got])) got++;
  if (cq->consumer != before) publish_consumer(cq);
  return got;
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = to_cq(ibcq);
  {
    std::lock_guard<std::mutex> g(cq->lock);
    // The consumer index goes back with every arm (the NIC's view of how
    // full the CQ is); the event is for completions added after the kick.
    __atomic_store_n(&cq->record->consumer_index, cq->consumer,
                     __ATOMIC_RELEASE);
  }
  to_ctx(ibcq->context)
      ->kick(RHN_DB_CQ_ARM,
             cq->cqn | (solicited_only ? RHN_DB_CQ_SOLICITED : 0));
  return 0;
}

}  // namespace rhinet
