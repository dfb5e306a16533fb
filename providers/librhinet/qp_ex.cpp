// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The extended QP (ibv_qp_ex): create_qp_ex and the wr_* calls. A batch
// runs from wr_start to wr_complete under the SQ lock. Each wr_<opcode>
// call starts describing a work request (a SendDesc, the same description
// post_send makes of an ibv_send_wr); its setters fill in the address and
// the data, copying SGE lists and inline bytes into the QP. A described WR
// becomes a WQE in the ring, through the one builder post_send uses, when
// the next one starts or the batch completes; only wr_complete writes the
// producer index and kicks the NIC. Any error inside the batch makes
// wr_complete return it and post nothing; wr_abort drops the batch.
#include <cerrno>
#include <cstring>

#include "provider.h"

namespace rhinet {

namespace {

// What the NIC does per QP type (IBV_QP_EX_WITH_*).
constexpr uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
constexpr uint64_t kUcOps = kUdOps | IBV_QP_EX_WITH_RDMA_WRITE |
                            IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                            IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
constexpr uint64_t kRcOps =
    kUcOps | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kAtomicOps =
    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

Qp* qp_of(ibv_qp_ex* q) {
  return container_of_member<Qp>(q, offsetof(Qp, vqp.qp_ex));
}

void fail(Qp* qp, int err) {
  if (!qp->wr.err) qp->wr.err = err;
}

// Turns the described WR into a WQE (the SQ producer moves, unpublished).
void flush_staged(Qp* qp) {
  WrBatch& b = qp->wr;
  if (!b.staged) return;
  b.staged = false;
  if (b.err) return;
  const ibv_qp_type type = qp->vqp.qp.qp_type;
  if ((type == IBV_QPT_UD || type == IBV_QPT_XRC_SEND) && !b.dest_set) {
    fail(qp, EINVAL);  // wr_set_ud_addr / wr_set_xrc_srqn missing
    return;
  }
  const int err = enqueue_send(qp, b.desc, b.wr_id);
  if (err) fail(qp, err);
}

// Every wr_<opcode>: the previous WR is complete, a new one starts with the
// wr_id and wr_flags the caller set on the ibv_qp_ex.
// @needs 0: an operation of the provider's own, checked by its caller.
SendDesc* begin(ibv_qp_ex* q, ibv_wr_opcode op, uint64_t needs) {
  Qp* qp = qp_of(q);
  WrBatch& b = qp->wr;
  flush_staged(qp);
  if (needs && !(qp->send_ops & needs)) fail(qp, EOPNOTSUPP);
  b.staged = true;
  b.dest_set = false;
  b.wr_id = q->wr_id;
  b.desc = SendDesc{};
  b.desc.opcode = op;
  b.desc.send_flags = q->wr_flags;
  return &b.desc;
}

// The setters refer to the WR a wr_<opcode> call started.
SendDesc* current(ibv_qp_ex* q) {
  Qp* qp = qp_of(q);
  if (!qp->wr.staged) {
    fail(qp, EINVAL);
    return nullptr;
  }
  return &qp->wr.desc;
}

void wr_send(ibv_qp_ex* q) { begin(q, IBV_WR_SEND, IBV_QP_EX_WITH_SEND); }

void wr_send_imm(ibv_qp_ex* q, __be32 imm) {
  begin(q, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM)->imm_data = imm;
}

void wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
  SendDesc* d = begin(q, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE);
  d->rkey = rkey;
  d->remote_addr = addr;
}

void wr_rdma_write_imm(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, __be32 imm) {
  SendDesc* d =
      begin(q, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
  d->rkey = rkey;
  d->remote_addr = addr;
  d->imm_data = imm;
}

void wr_rdma_read(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
  SendDesc* d = begin(q, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ);
  d->rkey = rkey;
  d->remote_addr = addr;
}

void wr_atomic_cmp_swp(ibv_qp_ex* q, uint32_t rkey, uint64_t addr,
                       uint64_t compare, uint64_t swap) {
  SendDesc* d =
      begin(q, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
  d->rkey = rkey;
  d->remote_addr = addr;
  d->compare_add = compare;
  d->swap = swap;
}

void wr_atomic_fetch_add(ibv_qp_ex* q, uint32_t rkey, uint64_t addr,
                         uint64_t add) {
  SendDesc* d = begin(q, IBV_WR_ATOMIC_FETCH_AND_ADD,
                      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
  d->rkey = rkey;
  d->remote_addr = addr;
  d->compare_add = add;
}

// Type 2 windows (type 1 binds through ibv_bind_mw).
void wr_bind_mw(ibv_qp_ex* q, ibv_mw* mw, uint32_t rkey,
                const ibv_mw_bind_info* info) {
  SendDesc* d = begin(q, IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW);
  if (!mw || mw->type != IBV_MW_TYPE_2 || !info) return fail(qp_of(q), EINVAL);
  describe_bind(d, mw, rkey, *info);
}

void wr_local_inv(ibv_qp_ex* q, uint32_t rkey) {
  begin(q, IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV)->invalidate_rkey = rkey;
}

void wr_send_inv(ibv_qp_ex* q, uint32_t rkey) {
  begin(q, IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV)
      ->invalidate_rkey = rkey;
}

// Operations the NIC does not have: the batch fails at wr_complete.
void wr_send_tso(ibv_qp_ex* q, void*, uint16_t, uint16_t) {
  fail(qp_of(q), EOPNOTSUPP);
}
void wr_atomic_write(ibv_qp_ex* q, uint32_t, uint64_t, const void*) {
  fail(qp_of(q), EOPNOTSUPP);
}

void wr_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, uint32_t remote_qpn,
                    uint32_t remote_qkey) {
  Qp* qp = qp_of(q);
  SendDesc* d = current(q);
  if (!d) return;
  if (qp->vqp.qp.qp_type != IBV_QPT_UD || !ah) return fail(qp, EINVAL);
  d->ah = to_ah(ah);
  d->remote_qpn = remote_qpn;
  d->remote_qkey = remote_qkey;
  qp->wr.dest_set = true;
}

// The XRC SRQ at the target that an XRC_SEND QP's WR goes to.
void wr_set_xrc_srqn(ibv_qp_ex* q, uint32_t remote_srqn) {
  Qp* qp = qp_of(q);
  SendDesc* d = current(q);
  if (!d) return;
  if (qp->vqp.qp.qp_type != IBV_QPT_XRC_SEND) return fail(qp, EINVAL);
  d->remote_qpn = remote_srqn;
  qp->wr.dest_set = true;
}

void wr_set_sge_list(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
  Qp* qp = qp_of(q);
  SendDesc* d = current(q);
  if (!d) return;
  if (n > qp->max_send_sge || n > RHN_WQE_MAX_SGES) return fail(qp, EINVAL);
  memcpy(qp->wr.sges, list, n * sizeof(ibv_sge));
  d->sge = qp->wr.sges;
  d->num_sge = static_cast<uint32_t>(n);
  d->inline_data = false;
}

void wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t len) {
  const ibv_sge sge{addr, len, lkey};
  wr_set_sge_list(q, 1, &sge);
}

void wr_set_inline_data_list(ibv_qp_ex* q, size_t n, const ibv_data_buf* bufs) {
  Qp* qp = qp_of(q);
  SendDesc* d = current(q);
  if (!d) return;
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    if (bufs[i].length > qp->max_inline - len ||
        bufs[i].length > sizeof(qp->wr.inline_buf) - len)
      return fail(qp, EINVAL);
    memcpy(qp->wr.inline_buf + len, bufs[i].addr, bufs[i].length);
    len += bufs[i].length;
  }
  // The builder copies inline bytes from SGE addresses: one, the copy.
  qp->wr.sges[0] = ibv_sge{reinterpret_cast<uintptr_t>(qp->wr.inline_buf),
                           static_cast<uint32_t>(len), 0};
  d->sge = qp->wr.sges;
  d->num_sge = 1;
  d->inline_data = true;
}

void wr_set_inline_data(ibv_qp_ex* q, void* addr, size_t len) {
  const ibv_data_buf buf{addr, len};
  wr_set_inline_data_list(q, 1, &buf);
}

void wr_start(ibv_qp_ex* q) {
  Qp* qp = qp_of(q);
  qp->sq_lock.lock();
  qp->wr.start = qp->sq_producer;
  qp->wr.err = 0;
  qp->wr.staged = false;
  const ibv_qp_state state = qp->vqp.qp.state;
  if (state < IBV_QPS_RTS && state != IBV_QPS_SQD) fail(qp, EINVAL);
}

// Forgets the batch's WQEs: the NIC never saw the producer move.
void drop_batch(Qp* qp) {
  sq_rollback(qp, qp->wr.start);
  qp->wr.staged = false;
}

int wr_complete(ibv_qp_ex* q) {
  Qp* qp = qp_of(q);
  flush_staged(qp);
  const int err = qp->wr.err;
  if (err)
    drop_batch(qp);
  else if (qp->sq_producer != qp->wr.start)
    sq_publish(qp);
  qp->sq_lock.unlock();
  return err;
}

void wr_abort(ibv_qp_ex* q) {
  Qp* qp = qp_of(q);
  drop_batch(qp);
  qp->sq_lock.unlock();
}

}  // namespace

SendDesc* wr_current(ibv_qp_ex* q) { return current(q); }

SendDesc* wr_begin_private(ibv_qp_ex* q, ibv_wr_opcode op) {
  return begin(q, op, 0);
}

void wr_fail(ibv_qp_ex* q, int err) { fail(qp_of(q), err); }

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  return create_qp_ex_in(context, attr, nullptr);
}

ibv_qp* create_qp_ex_in(ibv_context* context, ibv_qp_init_attr_ex* attr,
                        const QueueBuf* buf, bool mp) {
  Context* ctx = to_ctx(context);
  constexpr uint32_t kMask =
      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
      IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
  if (attr->comp_mask & ~kMask) return errno = EOPNOTSUPP, nullptr;
  // Create flags are accepted when none is set (applications pass the
  // mask with flags 0); no flag is supported.
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
    return errno = EOPNOTSUPP, nullptr;
  // An XRC target has no queues here: the kernel's QP, on no PD.
  if (attr->qp_type == IBV_QPT_XRC_RECV && !buf && !mp) {
    ibv_qp_init_attr_ex core = *attr;
    core.comp_mask &= ~uint32_t{IBV_QP_INIT_ATTR_CREATE_FLAGS};
    return create_xrc_target(context, &core);
  }
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
      (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD))
    return errno = EOPNOTSUPP, nullptr;
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
      attr->qp_type != IBV_QPT_UD && attr->qp_type != IBV_QPT_XRC_SEND)
    return errno = EOPNOTSUPP, nullptr;
  uint64_t ops = 0;
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    // An XRC initiator sends SENDs only, as UD.
    uint64_t can = attr->qp_type == IBV_QPT_UD || attr->qp_type == IBV_QPT_XRC_SEND
                       ? kUdOps
                   : attr->qp_type == IBV_QPT_UC ? kUcOps
                                                 : kRcOps;
    if (attr->qp_type == IBV_QPT_RC && (ctx->attr.caps & RHN_CAP_ATOMIC))
      can |= kAtomicOps;
    ops = attr->send_ops_flags;
    if (!ops || (ops & ~can)) return errno = EOPNOTSUPP, nullptr;
  }
  if (!attr->pd || attr->pd->context != context) return errno = EINVAL, nullptr;
  // The wr_* batch holds sq_lock from wr_start on; many producers take no
  // lock, so the two do not mix.
  if (mp && ops) return errno = EINVAL, nullptr;
  // The kernel command knows no create-flags field: it leaves the mask.
  ibv_qp_init_attr_ex core = *attr;
  core.comp_mask &= ~uint32_t{IBV_QP_INIT_ATTR_CREATE_FLAGS};
  Qp* qp = create_qp_common(&core, 0, buf, mp);
  attr->cap = core.cap;
  if (!qp) return nullptr;
  if (ops) {
    ibv_qp_ex& q = qp->vqp.qp_ex;
    qp->send_ops = ops;
    q.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    q.wr_atomic_fetch_add = wr_atomic_fetch_add;
    q.wr_bind_mw = wr_bind_mw;
    q.wr_local_inv = wr_local_inv;
    q.wr_rdma_read = wr_rdma_read;
    q.wr_rdma_write = wr_rdma_write;
    q.wr_rdma_write_imm = wr_rdma_write_imm;
    q.wr_send = wr_send;
    q.wr_send_imm = wr_send_imm;
    q.wr_send_inv = wr_send_inv;
    q.wr_send_tso = wr_send_tso;
    q.wr_set_ud_addr = wr_set_ud_addr;
    q.wr_set_xrc_srqn = wr_set_xrc_srqn;
    q.wr_set_inline_data = wr_set_inline_data;
    q.wr_set_inline_data_list = wr_set_inline_data_list;
    q.wr_set_sge = wr_set_sge;
    q.wr_set_sge_list = wr_set_sge_list;
    q.wr_start = wr_start;
    q.wr_complete = wr_complete;
    q.wr_abort = wr_abort;
    q.wr_atomic_write = wr_atomic_write;
    qp->vqp.comp_mask |= VERBS_QP_EX;
  }
  return &qp->vqp.qp;
}

}  // namespace rhinet
