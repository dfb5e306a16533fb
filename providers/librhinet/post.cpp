// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Posting, the verbs way: no system calls. post_send builds each work
// request's WQE here and hands it to the send queue's one writer (sq.cpp);
// receives and tag-list operations have rings of their own, written here
// the same way: WQE, barrier, producer index in the doorbell record, then
// the doorbell on the process's page. Completions: completion.cpp.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <cstring>

#include "provider.h"

namespace rhinet {

namespace {

bool is_ud(const Qp* qp) { return qp->vqp.qp.qp_type == IBV_QPT_UD; }
bool is_xrc_send(const Qp* qp) {
  return qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND;
}

int nic_opcode(ibv_wr_opcode op) {
  if (op == kWrTriggerAdd) return RHN_OP_TRIGGER_ADD;
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

// What the operation table says of a verbs opcode: it carries a payload
// (and may carry it inline), it is an atomic, it only touches a window.
uint8_t op_flags(int op) {
  const rhn_op_desc* d =
      op < 0 ? nullptr : rhn_op_row(static_cast<uint8_t>(op));
  return d ? d->flags : 0;
}
bool carries_payload(int op) { return op_flags(op) & RHN_OPF_INLINE; }

bool may_be_inline(ibv_wr_opcode op) { return carries_payload(nic_opcode(op)); }

bool is_window_op(int op) { return op_flags(op) & RHN_OPF_NO_DATA; }

// Builds one WQE in @w (RHN_WQE_MAX_SLOTS slots) with the contract's
// builders (hw_wqe.h); returns its slot count or 0 with @err set. Data
// slots need no clearing: the NIC reads only the SGEs or inline bytes
// num_sge names.
uint32_t build_wqe(const Qp* qp, const SendDesc& d, uint8_t* w, int* err) {
  const int op = nic_opcode(d.opcode);
  const bool ud = is_ud(qp);
  const bool atomic = op_flags(op) & RHN_OPF_ATOMIC;
  // UD and XRC: SENDs only (the NIC refuses the rest over XRC too); UC:
  // no READ or atomics (nothing comes back to it), and no SEND_WITH_INV
  // (RC only); windows bind on RC and UC.
  const bool uc = qp->vqp.qp.qp_type == IBV_QPT_UC;
  const bool sends_only = ud || is_xrc_send(qp);
  const bool window_op = is_window_op(op);
  *err = EINVAL;
  if (op < 0 || (sends_only && (op != RHN_OP_SEND && op != RHN_OP_SEND_IMM)) ||
      (uc && !carries_payload(op) && !window_op) ||
      (uc && op == RHN_OP_SEND_INV) || (ud && !d.ah) ||
      (d.inline_data && !carries_payload(op)) || (window_op && d.num_sge))
    return 0;
  const uint32_t nsge = d.num_sge;
  uint8_t flags = 0;
  // A triggered WQE is always signaled: its CQE is what frees its index.
  if ((d.send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all ||
      (d.xflags & RHN_WQE_X_TRIGGERED))
    flags |= RHN_WQE_F_SIGNALED;
  if (d.send_flags & IBV_SEND_SOLICITED) flags |= RHN_WQE_F_SOLICITED;
  if (d.send_flags & IBV_SEND_FENCE) flags |= RHN_WQE_F_FENCE;
  rhn_send_wqe* h = rhn_wqe_start(w, static_cast<uint8_t>(op), flags, 0);
  uint32_t data;
  if (d.inline_data) {
    uint64_t len = 0;
    for (uint32_t i = 0; i < nsge; i++) len += d.sge[i].length;
    if (len > qp->max_inline) return 0;
    uint32_t at = 0;
    for (uint32_t i = 0; i < nsge; i++) {
      rhn_wqe_put_inline(w, at, reinterpret_cast<void*>(d.sge[i].addr),
                         d.sge[i].length);
      at += d.sge[i].length;
    }
    data = rhn_wqe_set_inline(w, static_cast<uint32_t>(len));
  } else {
    // An atomic's one SGE receives the old value; a remote trigger add
    // may go without (the value not wanted), else it takes 8 bytes.
    const bool trigger_add = op == RHN_OP_TRIGGER_ADD;
    if (nsge > qp->max_send_sge || (atomic && !trigger_add && nsge != 1) ||
        (trigger_add && (nsge > 1 || (nsge && d.sge[0].length != 8))))
      return 0;
    for (uint32_t i = 0; i < nsge; i++)
      rhn_wqe_put_sge(w, i, d.sge[i].addr, d.sge[i].length, d.sge[i].lkey);
    data = rhn_wqe_set_sges(w, nsge);
  }
  if (op == RHN_OP_SEND_IMM || op == RHN_OP_WRITE_IMM)
    h->imm_data = d.imm_data;  // opaque, network order both ends
  rhn_wqe_tail tail{};
  if (ud) {
    h->dst_node = d.ah->dest_node;
    h->dst_qpn = d.remote_qpn;
    h->u.status.qkey = d.remote_qkey;
    tail.grh = &d.ah->grh;  // the route: the WQE's last slot
  } else if (is_xrc_send(qp)) {
    h->dst_qpn = d.remote_qpn;  // the target's XRC SRQ number
  } else if (op == RHN_OP_TRIGGER_ADD) {
    h->u.trigger.addend = d.compare_add;
    h->u.trigger.handle = static_cast<uint32_t>(d.swap);
    h->u.trigger.key = static_cast<uint32_t>(d.swap >> 32);
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
  if (d.xflags) {  // the trigger slot goes last (rhinetdv_wr_set_trigger)
    tail.xflags = d.xflags;
    tail.trigger = &d.trigger;
  }
  const uint32_t slots = rhn_wqe_finish(w, data, &tail);
  if (slots) *err = 0;
  return slots;
}

SendDesc desc_of(const Qp* qp, const ibv_send_wr* wr) {
  SendDesc d;
  d.opcode = wr->opcode;
  // The provider's own opcode is built only by rhinetdv_wr_trigger_add.
  if (d.opcode == kWrTriggerAdd) d.opcode = static_cast<ibv_wr_opcode>(-1);
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
  if (is_xrc_send(qp)) d.remote_qpn = wr->qp_type.xrc.remote_srqn;
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
  // An XRC target is the kernel's QP: it has no send queue here.
  if (qp->xrc_target) return EINVAL;
  // A QP without a send queue is full whatever the request (sq_write says
  // the same; checked first so that no check of the WQE answers instead).
  if (qp->no_sq) return ENOMEM;
  // A multi-producer QP's ring is written only by mp_post_send, without
  // sq_lock (ibv_bind_mw, for one, is refused).
  if (qp->mp) return EINVAL;
  uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  int err = 0;
  const uint32_t slots = build_wqe(qp, desc, w, &err);
  if (!slots) return err;
  uint32_t first = 0;
  err = sq_write(qp, w, slots, wr_id, true, &first);
  if (!err && (desc.xflags & RHN_WQE_X_TRIGGERED)) {
    err = sq_hold(qp, first);
    if (err) sq_rollback(qp, first);
  }
  return err;
}

int mp_post_send(Qp* qp, ibv_send_wr* wr, ibv_send_wr** bad, uint32_t flags) {
  // Posters inside are counted before the closed flag is read, and destroy
  // sets the flag before it waits for the count: one of the two sees the
  // other.
  qp->mp_users.fetch_add(1, std::memory_order_seq_cst);
  // Set by libibverbs after each modify; read once, without the lock.
  const ibv_qp_state state =
      __atomic_load_n(&qp->vqp.qp.state, __ATOMIC_ACQUIRE);
  int err = 0;
  if (qp->mp_closed.load(std::memory_order_seq_cst) ||
      (flags & ~uint32_t{RHINETDV_MP_POST_NO_DOORBELL}) ||
      (state < IBV_QPS_RTS && state != IBV_QPS_SQD))
    err = EINVAL;
  for (; wr && !err; wr = wr->next) {
    uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
    err = EINVAL;
    const uint32_t slots =
        wr->num_sge < 0 ? 0 : build_wqe(qp, desc_of(qp, wr), w, &err);
    if (slots)
      err = sq_mp_write(qp, w, slots, wr->wr_id,
                        flags & RHINETDV_MP_POST_NO_DOORBELL);
    if (err) break;
  }
  qp->mp_users.fetch_sub(1, std::memory_order_seq_cst);
  if (err) *bad = wr;
  return err;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = to_qp(ibqp);
  int err = 0;
  bool posted = false;

  if (qp->mp) return mp_post_send(qp, wr, bad, 0);

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
  if (posted) sq_publish(qp);
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

// The NIC reads the record when a message needs a receive; it asks for
// kicks (QP in ERR: posts are flushed only when kicked) by storing the
// request, then reading the record. We store the index, then load the
// request, with a full fence between: one of us sees the other's store,
// so no post is left unflushed (queues.md, "Receives without doorbells").
bool rq_kick_wanted(const Qp* qp) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return __atomic_load_n(&qp->rq_record->nic_consumer, __ATOMIC_RELAXED) &
         RHN_RQ_RECORD_DOORBELL_WANTED;
}

}  // namespace

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = to_qp(ibqp);
  int err = 0;
  bool posted = false;
  // Receives go to a QP from INIT on (in ERR they are flushed); a QP in
  // RESET has no receive queue yet, one on an SRQ or of XRC none at all.
  if (!qp->rq || ibqp->state == IBV_QPS_RESET) {
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
    if (!qp->rq_kick_on_request || rq_kick_wanted(qp))
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
  sq_reset(qp);
  qp->rq_producer = qp->rq_consumer = 0;
  if (qp->rq_record) qp->rq_record->producer_index = 0;
}

}  // namespace rhinet
