// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Creating and destroying objects: each is one uverbs command carrying the
// driver data of rdma/rhinet-abi.h; queues get their buffers here.
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "provider.h"

namespace rhinet {

namespace {

template <typename T>
T* make() {
  void* p = calloc(1, sizeof(T));
  return p ? new (p) T : nullptr;
}

template <typename T>
void destroy_obj(T* obj) {
  obj->~T();
  free(obj);
}

}  // namespace

// ---- PD -------------------------------------------------------------------

RHINET_CMD(AllocPdCmd, ib_uverbs_alloc_pd, rhinet_no_data);
RHINET_RESP(AllocPdResp, ib_uverbs_alloc_pd_resp, rhinet_alloc_pd_resp);

ibv_pd* alloc_pd(ibv_context* context) {
  Pd* pd = make<Pd>();
  if (!pd) return errno = ENOMEM, nullptr;
  AllocPdCmd cmd{};
  AllocPdResp resp{};
  int err = ibv_cmd_alloc_pd(
      context, &pd->ibpd, reinterpret_cast<struct ibv_alloc_pd*>(&cmd),
      sizeof(cmd), reinterpret_cast<ib_uverbs_alloc_pd_resp*>(resp.core),
      sizeof(resp));
  if (err) {
    destroy_obj(pd);
    errno = err;
    return nullptr;
  }
  return &pd->ibpd;
}

int dealloc_pd(ibv_pd* ibpd) {
  int err = ibv_cmd_dealloc_pd(ibpd);
  if (!err) destroy_obj(container_of_member<Pd>(ibpd, offsetof(Pd, ibpd)));
  return err;
}

// ---- memory windows ---------------------------------------------------------

RHINET_CMD(AllocMwCmd, ib_uverbs_alloc_mw, rhinet_no_data);
RHINET_RESP(AllocMwResp, ib_uverbs_alloc_mw_resp, rhinet_no_data);

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
    return errno = EINVAL, nullptr;
  ibv_mw* mw = make<ibv_mw>();
  if (!mw) return errno = ENOMEM, nullptr;
  AllocMwCmd cmd{};
  AllocMwResp resp{};
  int err = ibv_cmd_alloc_mw(
      pd, type, mw, reinterpret_cast<struct ibv_alloc_mw*>(&cmd), sizeof(cmd),
      reinterpret_cast<ib_uverbs_alloc_mw_resp*>(resp.core), sizeof(resp));
  if (err) {
    destroy_obj(mw);
    errno = err;
    return nullptr;
  }
  return mw;
}

int dealloc_mw(ibv_mw* mw) {
  int err = ibv_cmd_dealloc_mw(mw);
  if (!err) destroy_obj(mw);
  return err;
}

// Type 1: a BIND_MW work request on @ibqp; the window's key moves on to
// its next variant (the application reads it back from mw->rkey).
int bind_mw(ibv_qp* ibqp, ibv_mw* mw, ibv_mw_bind* b) {
  if (mw->type != IBV_MW_TYPE_1 || mw->pd != ibqp->pd) return EINVAL;
  if (b->bind_info.length && !b->bind_info.mr) return EINVAL;
  Qp* qp = to_qp(ibqp);
  SendDesc d;
  const uint32_t next = ibv_inc_rkey(mw->rkey);
  describe_bind(&d, mw, next, b->bind_info);
  d.send_flags = b->send_flags;
  std::lock_guard<std::mutex> g(qp->sq_lock);
  if (ibqp->state != IBV_QPS_RTS) return EINVAL;
  int err = enqueue_send(qp, d, b->wr_id);
  if (err) return err;
  sq_publish(qp);
  mw->rkey = next;
  return 0;
}

// ---- MR -------------------------------------------------------------------

RHINET_CMD(RegMrCmd, ib_uverbs_reg_mr, rhinet_reg_mr_cmd);
RHINET_CMD(ReregMrCmd, ib_uverbs_rereg_mr, rhinet_no_data);

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va,
               int access) {
  return reg_mr_area(pd, addr, length, hca_va, access, nullptr);
}

ibv_mr* reg_mr_area(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va,
                    int access, const uint32_t* area_id, bool on_demand) {
  if (on_demand && !area_id) return errno = EINVAL, nullptr;
  Mr* mr = make<Mr>();
  if (!mr) return errno = ENOMEM, nullptr;
  RegMrCmd cmd{};
  if (area_id) {
    cmd.drv.comp_mask = RHINET_REG_MR_AREA;
    cmd.drv.area_id = *area_id;
  }
  if (on_demand) cmd.drv.comp_mask |= RHINET_REG_MR_ON_DEMAND;
  ib_uverbs_reg_mr_resp resp{};
  int err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, &mr->vmr,
                           reinterpret_cast<struct ibv_reg_mr*>(&cmd),
                           sizeof(cmd), &resp, sizeof(resp));
  if (err) {
    destroy_obj(mr);
    errno = err;
    return nullptr;
  }
  return &mr->vmr.ibv_mr;
}

// ibv_reg_dmabuf_mr: bytes [offset, offset + length) of the dma-buf @fd,
// addressed from @iova on. The kernel pins them through the exporter for
// the MR's life (its own reference on the dma-buf: closing @fd does not end
// the MR) and refuses a descriptor that is not a dma-buf (EINVAL, EBADF) or
// a range beyond its end (EINVAL); ibv_dereg_mr as for any MR.
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                      int fd, int access) {
  Mr* mr = make<Mr>();
  if (!mr) return errno = ENOMEM, nullptr;
  int err =
      ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, &mr->vmr);
  if (err) {
    destroy_obj(mr);
    errno = err;
    return nullptr;
  }
  return &mr->vmr.ibv_mr;
}

int rereg_mr(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length,
             int access) {
  ReregMrCmd cmd{};
  ib_uverbs_rereg_mr_resp resp{};
  return ibv_cmd_rereg_mr(vmr, static_cast<uint32_t>(flags), addr, length,
                          reinterpret_cast<uintptr_t>(addr), access, pd,
                          reinterpret_cast<struct ibv_rereg_mr*>(&cmd),
                          sizeof(cmd), &resp, sizeof(resp));
}

int dereg_mr(verbs_mr* vmr) {
  int err = ibv_cmd_dereg_mr(vmr);
  if (!err) destroy_obj(container_of_member<Mr>(vmr, offsetof(Mr, vmr)));
  return err;
}

// ---- CQ -------------------------------------------------------------------

RHINET_CMD_EX(CreateCqCmd, ib_uverbs_ex_create_cq, rhinet_create_cq_cmd);
RHINET_RESP(CreateCqResp, ib_uverbs_ex_create_cq_resp, rhinet_create_cq_resp);

// A queue's buffer of @need bytes: the library's own (*buf NULL when it
// cannot be had), or the application's @qbuf, which must be long enough,
// mapped and aligned, and is zeroed as a new queue's memory must be (owner
// bits, records). False only for an application buffer that is not fit.
static bool queue_buffer(const QueueBuf* qbuf, size_t need, uint8_t** buf,
                         bool* foreign) {
  *foreign = qbuf != nullptr;
  if (!qbuf) {
    *buf = alloc_queue_buffer(need);
    return true;
  }
  const QueueBuf& b = *qbuf;
  if (b.dmabuf_fd < 0 || !b.addr || b.length < need ||
      reinterpret_cast<uintptr_t>(b.addr) % RHINET_QUEUE_BUF_ALIGN ||
      b.offset % RHINET_QUEUE_BUF_ALIGN)
    return false;
  memset(b.addr, 0, need);
  *buf = b.addr;
  return true;
}

// The create command's dma-buf fields, for a queue in the application's
// buffer (RHINET_QUEUE_BUF_DMABUF).
template <typename DriverCmd>
static void ask_for_dmabuf(DriverCmd& drv, const QueueBuf* qbuf) {
  if (!qbuf) return;
  drv.comp_mask = RHINET_QUEUE_BUF_DMABUF;
  drv.dmabuf_fd = qbuf->dmabuf_fd;
  drv.dmabuf_offset = qbuf->offset;
}

static uint32_t cq_log_depth(uint32_t cqe) {
  const uint32_t log = log2_ceil(cqe);
  return log < 1 ? 1 : log;
}

size_t cq_buf_len(uint32_t cqe) {
  return (size_t{RHN_CQE_SIZE} << cq_log_depth(cqe)) + sizeof(rhn_cq_record);
}

Cq* create_cq_common(ibv_context* context, const ibv_cq_init_attr_ex* attr,
                     const QueueBuf* qbuf) {
  Context* ctx = to_ctx(context);
  if (attr->cqe < 1 || attr->cqe > (1u << ctx->attr.max_cq_log_depth))
    return errno = EINVAL, nullptr;
  Cq* cq = make<Cq>();
  if (!cq) return errno = ENOMEM, nullptr;
  cq->log_depth = cq_log_depth(attr->cqe);
  const size_t ring_bytes = size_t{RHN_CQE_SIZE} << cq->log_depth;
  cq->buf_len = cq_buf_len(attr->cqe);
  if (!queue_buffer(qbuf, cq->buf_len, &cq->buf, &cq->foreign_buf)) {
    destroy_obj(cq);
    return errno = EINVAL, nullptr;
  }
  if (!cq->buf) {
    destroy_obj(cq);
    return errno = ENOMEM, nullptr;
  }
  cq->ring = reinterpret_cast<rhn_cqe*>(cq->buf);
  cq->record = reinterpret_cast<rhn_cq_record*>(cq->buf + ring_bytes);

  // The extended command carries no core flags (no timestamps, no
  // overrun ignoring), so the kernel sees the same request either way.
  CreateCqCmd cmd{};
  cmd.drv.log_depth = cq->log_depth;
  cmd.drv.buf_va = reinterpret_cast<uintptr_t>(cq->buf);
  cmd.drv.buf_len = cq->buf_len;
  ask_for_dmabuf(cmd.drv, qbuf);
  // Runs cost the poller nothing it does not do anyway (completion.cpp
  // expands them), and save the NIC a CQE write per completion they hold.
  // Not in the application's buffer: a device's lanes or the application
  // itself may read those CQEs, one per completion.
  if (ctx->cqe_runs && !qbuf) cmd.drv.comp_mask |= RHINET_CREATE_CQ_RUNS;
  CreateCqResp resp{};
  int err = ibv_cmd_create_cq_ex(
      context, attr, &cq->vcq, reinterpret_cast<struct ibv_create_cq_ex*>(&cmd),
      sizeof(cmd), reinterpret_cast<ib_uverbs_ex_create_cq_resp*>(resp.core),
      sizeof(resp), 0);
  if (err) {
    if (!cq->foreign_buf) free_queue_buffer(cq->buf, cq->buf_len);
    destroy_obj(cq);
    errno = err;
    return nullptr;
  }
  cq->cqn = resp.drv.cqn;
  return cq;
}

ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel,
                  int comp_vector) {
  if (cqe < 1) return errno = EINVAL, nullptr;
  ibv_cq_init_attr_ex attr{};
  attr.cqe = static_cast<uint32_t>(cqe);
  attr.channel = channel;
  attr.comp_vector = static_cast<uint32_t>(comp_vector);
  Cq* cq = create_cq_common(context, &attr);
  return cq ? &cq->vcq.cq : nullptr;
}

RHINET_CMD(ResizeCqCmd, ib_uverbs_resize_cq, rhinet_create_cq_cmd);
RHINET_RESP(ResizeCqResp, ib_uverbs_resize_cq_resp, rhinet_no_data);

// A new, zeroed buffer; the NIC moves the unread CQEs to its start, so the
// consumer index restarts at 0. Polling waits on the CQ lock meanwhile.
// An extended command without driver data (the kernel takes none).
struct ModifyCqCmd {
  ib_uverbs_cmd_hdr hdr;
  ib_uverbs_ex_cmd_hdr ex_hdr;
  ib_uverbs_ex_modify_cq core;
};

// Completion event moderation is the NIC's (RHN_ADMIN_MODIFY_CQ, set by
// the kernel): nothing of it lives in the provider.
int modify_cq(ibv_cq* ibcq, ibv_modify_cq_attr* attr) {
  ModifyCqCmd cmd{};
  return ibv_cmd_modify_cq(ibcq, attr,
                           reinterpret_cast<struct ibv_modify_cq*>(&cmd),
                           sizeof(cmd));
}

int resize_cq(ibv_cq* ibcq, int cqe) {
  Cq* cq = to_cq(ibcq);
  Context* ctx = to_ctx(ibcq->context);
  // The application's buffer has no room to grow into.
  if (cq->foreign_buf) return EOPNOTSUPP;
  if (cqe < 1 ||
      static_cast<uint32_t>(cqe) > (1u << ctx->attr.max_cq_log_depth))
    return EINVAL;
  uint32_t log_depth = log2_ceil(static_cast<uint32_t>(cqe));
  if (log_depth < 1) log_depth = 1;
  const size_t ring_bytes = size_t{RHN_CQE_SIZE} << log_depth;
  const size_t len = ring_bytes + sizeof(rhn_cq_record);
  uint8_t* buf = alloc_queue_buffer(len);
  if (!buf) return ENOMEM;

  std::lock_guard<std::mutex> g(cq->lock);
  publish_consumer(cq);  // the NIC reads from it which CQEs are unread
  ResizeCqCmd cmd{};
  cmd.drv.log_depth = log_depth;
  cmd.drv.buf_va = reinterpret_cast<uintptr_t>(buf);
  cmd.drv.buf_len = len;
  ResizeCqResp resp{};
  int err = ibv_cmd_resize_cq(
      ibcq, cqe, reinterpret_cast<struct ibv_resize_cq*>(&cmd), sizeof(cmd),
      reinterpret_cast<ib_uverbs_resize_cq_resp*>(resp.core), sizeof(resp));
  if (err) {
    free_queue_buffer(buf, len);
    return err;
  }
  free_queue_buffer(cq->buf, cq->buf_len);
  cq->buf = buf;
  cq->buf_len = len;
  cq->ring = reinterpret_cast<rhn_cqe*>(buf);
  cq->record = reinterpret_cast<rhn_cq_record*>(buf + ring_bytes);
  cq->log_depth = log_depth;
  cq->consumer = 0;  // a run partly handed out moved with its entry
  return 0;
}

int destroy_cq(ibv_cq* ibcq) {
  Cq* cq = to_cq(ibcq);
  int err = ibv_cmd_destroy_cq(ibcq);
  if (err) return err;
  if (!cq->foreign_buf) free_queue_buffer(cq->buf, cq->buf_len);
  destroy_obj(cq);
  return 0;
}

// ---- SRQ ------------------------------------------------------------------

RHINET_CMD(CreateSrqCmd, ib_uverbs_create_srq, rhinet_create_srq_cmd);
RHINET_CMD(CreateXsrqCmd, ib_uverbs_create_xsrq, rhinet_create_srq_cmd);
RHINET_RESP(CreateSrqResp, ib_uverbs_create_srq_resp, rhinet_create_srq_resp);
RHINET_CMD(ModifySrqCmd, ib_uverbs_modify_srq, rhinet_no_data);
RHINET_CMD(QuerySrqCmd, ib_uverbs_query_srq, rhinet_no_data);

static void free_srq(Srq* srq) {
  free_queue_buffer(srq->buf, srq->buf_len);
  free(srq->wr_ids);
  free(srq->busy);
  free(srq->op_info);
  free(srq->tags);
  destroy_obj(srq);
}

// An SRQ's memory (RHINET_SRQ_LAYOUT) for @attr: the receive ring and, with
// @max_tags, the tag-list operation ring of @max_ops entries and the list's
// bookkeeping. Fills cmd's driver data; nullptr with errno set.
static Srq* new_srq(Context* ctx, const ibv_srq_attr& attr, uint32_t max_tags,
                    uint32_t max_ops, rhinet_create_srq_cmd* cmd) {
  if (attr.max_wr < 1 || attr.max_wr > (1u << ctx->attr.max_wq_log_depth) ||
      attr.max_sge > ctx->attr.max_recv_sge)
    return errno = EINVAL, nullptr;
  Srq* srq = make<Srq>();
  if (!srq) return errno = ENOMEM, nullptr;
  uint32_t log = log2_ceil(attr.max_wr);
  if (log < 1) log = 1;
  srq->depth = 1u << log;
  srq->max_sge = attr.max_sge;
  const size_t ring_bytes = size_t{RHN_RQ_WQE_SIZE} << log;
  uint32_t ops_log = 0;
  size_t ops_bytes = 0;
  if (max_tags) {
    srq->tm = true;
    ops_log = log2_ceil(max_ops ? max_ops : 1);
    if (ops_log < 1) ops_log = 1;
    srq->ops_depth = 1u << ops_log;
    srq->max_tags = max_tags;
    ops_bytes = size_t{RHN_TM_OP_WQE_SIZE} << ops_log;
  }
  srq->buf_len =
      ring_bytes + ops_bytes + (max_tags ? 2 : 1) * sizeof(rhn_queue_record);
  srq->buf = alloc_queue_buffer(srq->buf_len);
  srq->wr_ids = static_cast<uint64_t*>(calloc(srq->depth, sizeof(uint64_t)));
  srq->busy = static_cast<uint8_t*>(calloc(srq->depth, 1));
  if (max_tags) {
    srq->op_info =
        static_cast<Srq::TmOp*>(calloc(srq->ops_depth, sizeof(Srq::TmOp)));
    srq->tags = static_cast<Srq::TmTag*>(calloc(max_tags, sizeof(Srq::TmTag)));
  }
  if (!srq->buf || !srq->wr_ids || !srq->busy ||
      (max_tags && (!srq->op_info || !srq->tags))) {
    free_srq(srq);
    return errno = ENOMEM, nullptr;
  }
  srq->ring = reinterpret_cast<rhn_recv_wqe*>(srq->buf);
  srq->record =
      reinterpret_cast<rhn_queue_record*>(srq->buf + ring_bytes + ops_bytes);
  if (max_tags) {
    srq->ops = reinterpret_cast<rhn_tm_op_wqe*>(srq->buf + ring_bytes);
    srq->ops_record = srq->record + 1;
    for (uint32_t h = 0; h < max_tags; h++)  // the free list, 0 first
      srq->tags[h].next_free = h + 1 < max_tags ? h + 1 : UINT32_MAX;
    srq->free_tag = 0;
    cmd->comp_mask = RHINET_CREATE_SRQ_TM;
    cmd->ops_log_depth = ops_log;
  }
  cmd->log_depth = log;
  cmd->buf_va = reinterpret_cast<uintptr_t>(srq->buf);
  cmd->buf_len = srq->buf_len;
  return srq;
}

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  CreateSrqCmd cmd{};
  Srq* srq = new_srq(to_ctx(pd->context), attr->attr, 0, 0, &cmd.drv);
  if (!srq) return nullptr;
  CreateSrqResp resp{};
  int err = ibv_cmd_create_srq(
      pd, &srq->vsrq.srq, attr, reinterpret_cast<struct ibv_create_srq*>(&cmd),
      sizeof(cmd), reinterpret_cast<ib_uverbs_create_srq_resp*>(resp.core),
      sizeof(resp));
  if (err) {
    free_srq(srq);
    errno = err;
    return nullptr;
  }
  srq->srqn = resp.drv.srqn;
  return &srq->vsrq.srq;
}

// Basic SRQs, tag-matching ones (IBV_SRQT_TM: an RC QP using one matches
// the SENDs it receives against the list ibv_post_srq_ops edits; list
// operations complete on attr->cq) and XRC SRQs (IBV_SRQT_XRC: of
// attr->xrcd, receives through any target QP of the domain complete on
// attr->cq).
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  Context* ctx = to_ctx(context);
  constexpr uint32_t kKnown = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                              IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM |
                              IBV_SRQ_INIT_ATTR_XRCD;
  if (attr->comp_mask & ~kKnown) return errno = EOPNOTSUPP, nullptr;
  const ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
                                ? attr->srq_type
                                : IBV_SRQT_BASIC;
  const bool tm = type == IBV_SRQT_TM;
  const bool xrc = type == IBV_SRQT_XRC;
  if (type != IBV_SRQT_BASIC && !tm && !xrc)
    return errno = EOPNOTSUPP, nullptr;
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd->context != context)
    return errno = EINVAL, nullptr;
  if (tm && !(ctx->attr.caps & RHN_CAP_TM)) return errno = EOPNOTSUPP, nullptr;
  if (xrc && !(ctx->attr.caps & RHN_CAP_XRC))
    return errno = EOPNOTSUPP, nullptr;
  if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
              !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->cq ||
              !attr->xrcd || attr->cq->context != context ||
              attr->xrcd->context != context))
    return errno = EINVAL, nullptr;
  // (The kernel checks max_num_tags against what the NIC gives a list.)
  if (tm && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
             !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) ||
             !attr->tm_cap.max_num_tags || attr->cq->context != context ||
             attr->tm_cap.max_num_tags > 0xffff ||
             attr->tm_cap.max_ops > (1u << ctx->attr.max_wq_log_depth)))
    return errno = EINVAL, nullptr;
  CreateXsrqCmd cmd{};
  Srq* srq = new_srq(ctx, attr->attr, tm ? attr->tm_cap.max_num_tags : 0,
                     tm ? attr->tm_cap.max_ops : 0, &cmd.drv);
  if (!srq) return nullptr;
  CreateSrqResp resp{};
  int err = ibv_cmd_create_srq_ex(
      context, &srq->vsrq, attr,
      reinterpret_cast<struct ibv_create_xsrq*>(&cmd), sizeof(cmd),
      reinterpret_cast<ib_uverbs_create_srq_resp*>(resp.core), sizeof(resp));
  if (err) {
    free_srq(srq);
    errno = err;
    return nullptr;
  }
  srq->srqn = resp.drv.srqn;
  if (tm) {
    srq->tm_cq = to_cq(attr->cq);
    attr->tm_cap.max_ops = srq->ops_depth;
  } else if (xrc) {
    srq->xrc = true;
    srq->xrc_cq = to_cq(attr->cq);
  }
  if (tm || xrc) {
    std::lock_guard<std::mutex> g(ctx->table_lock);
    if (!ctx->srqs.set(srq->srqn, srq)) {
      ibv_cmd_destroy_srq(&srq->vsrq.srq);
      free_srq(srq);
      return errno = ENOMEM, nullptr;
    }
  }
  return &srq->vsrq.srq;
}

int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  ModifySrqCmd cmd{};
  return ibv_cmd_modify_srq(srq, attr, mask,
                            reinterpret_cast<struct ibv_modify_srq*>(&cmd),
                            sizeof(cmd));
}

int query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  QuerySrqCmd cmd{};
  return ibv_cmd_query_srq(
      srq, attr, reinterpret_cast<struct ibv_query_srq*>(&cmd), sizeof(cmd));
}

int destroy_srq(ibv_srq* ibsrq) {
  Srq* srq = to_srq(ibsrq);
  int err = ibv_cmd_destroy_srq(ibsrq);
  if (err) return err;
  // The NIC has forgotten it: its CQEs go, then its entry.
  if (srq->tm || srq->xrc) clean_srq_cqes(srq);
  free_srq(srq);
  return 0;
}

int get_srq_num(ibv_srq* ibsrq, uint32_t* srq_num) {
  Srq* srq = to_srq(ibsrq);
  if (!srq->xrc) return EINVAL;  // only XRC SRQs are named by peers
  *srq_num = srq->vsrq.srq_num;
  return 0;
}

// ---- XRC domains ----------------------------------------------------------

RHINET_CMD(OpenXrcdCmd, ib_uverbs_open_xrcd, rhinet_no_data);
RHINET_RESP(OpenXrcdResp, ib_uverbs_open_xrcd_resp, rhinet_no_data);

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  if (!(to_ctx(context)->attr.caps & RHN_CAP_XRC))
    return errno = EOPNOTSUPP, nullptr;
  verbs_xrcd* x = make<verbs_xrcd>();
  if (!x) return errno = ENOMEM, nullptr;
  OpenXrcdCmd cmd{};
  OpenXrcdResp resp{};
  int err = ibv_cmd_open_xrcd(
      context, x, sizeof(*x), attr,
      reinterpret_cast<struct ibv_open_xrcd*>(&cmd), sizeof(cmd),
      reinterpret_cast<ib_uverbs_open_xrcd_resp*>(resp.core), sizeof(resp));
  if (err) {
    destroy_obj(x);
    errno = err;
    return nullptr;
  }
  return &x->xrcd;
}

int close_xrcd(ibv_xrcd* xrcd) {
  verbs_xrcd* x =
      container_of_member<verbs_xrcd>(xrcd, offsetof(verbs_xrcd, xrcd));
  int err = ibv_cmd_close_xrcd(x);
  if (!err) destroy_obj(x);
  return err;
}

// ---- QP -------------------------------------------------------------------

RHINET_CMD(CreateQpCmd, ib_uverbs_create_qp, rhinet_create_qp_cmd);
RHINET_RESP(CreateQpResp, ib_uverbs_create_qp_resp, rhinet_create_qp_resp);
RHINET_CMD(ModifyQpCmd, ib_uverbs_modify_qp, rhinet_no_data);
RHINET_CMD(QueryQpCmd, ib_uverbs_query_qp, rhinet_no_data);

// Inline bytes a WQE of @slots slots holds (hw_wqe.h; a UD WQE's route
// slot holds none), at most what the device takes: the QP's limit whatever
// was asked (rdma_xclient asks for 0 and posts 16 inline bytes), as other
// providers round it up and report it.
static uint32_t inline_capacity(uint32_t slots, bool ud, uint32_t device_max) {
  const uint32_t bytes = rhn_wqe_inline_capacity(slots, ud);
  return bytes < device_max ? bytes : device_max;
}

static void free_qp(Qp* qp) {
  if (!qp->foreign_buf) free_queue_buffer(qp->buf, qp->buf_len);
  free(qp->sq_info);
  free(qp->sq_held);
  free(qp->rq_wr_ids);
  destroy_obj(qp);
}

int qp_geometry(Context* ctx, const ibv_qp_init_attr_ex* attr,
                uint32_t driver_qp_type, QpGeometry* g, bool mp) {
  const ibv_qp_cap& cap = attr->cap;
  const bool xrc_send = attr->qp_type == IBV_QPT_XRC_SEND;
  if (driver_qp_type ? attr->qp_type != IBV_QPT_DRIVER
                     : attr->qp_type != IBV_QPT_RC &&
                           attr->qp_type != IBV_QPT_UC &&
                           attr->qp_type != IBV_QPT_UD && !xrc_send)
    return EOPNOTSUPP;
  if (xrc_send && !(ctx->attr.caps & RHN_CAP_XRC)) return EOPNOTSUPP;
  // An XRC initiator only sends: no RQ, no SRQ, nothing to receive.
  if (xrc_send && (attr->srq || cap.max_recv_wr || cap.max_recv_sge))
    return EINVAL;
  if (cap.max_send_sge > ctx->attr.max_send_sge ||
      cap.max_recv_sge > ctx->attr.max_recv_sge ||
      cap.max_inline_data > ctx->attr.max_inline)
    return EINVAL;
  const bool ud = attr->qp_type == IBV_QPT_UD;
  g->slots = rhn_wqe_slots(cap.max_send_sge, cap.max_inline_data, ud);
  if (g->slots > RHN_WQE_MAX_SLOTS) return EINVAL;
  // max_send_wr 0: a QP without a send queue (one that only receives, on
  // an SRQ for instance). The NIC still gets the smallest ring, which
  // nothing is ever posted to.
  g->no_sq = cap.max_send_wr == 0;
  // Many producers need a queue to post to, of a doorbell batch and the
  // largest WQE at least (the kernel checks the same).
  if (mp && (g->no_sq || ctx->attr.max_wq_log_depth < kMinSqLog)) return EINVAL;
  const uint64_t sq_slots =
      uint64_t{cap.max_send_wr ? cap.max_send_wr : 1} * g->slots;
  const uint32_t max_depth = 1u << ctx->attr.max_wq_log_depth;
  if (sq_slots > max_depth || cap.max_recv_wr > max_depth) return EINVAL;
  // At least kMinSqLog: applications such as perftest keep a WR or two
  // more in flight than they asked for (as hardware with larger minimum
  // queues allows).
  g->sq_log = log2_ceil(static_cast<uint32_t>(sq_slots));
  if (g->sq_log < kMinSqLog && kMinSqLog <= ctx->attr.max_wq_log_depth &&
      !g->no_sq)
    g->sq_log = kMinSqLog;
  if (g->sq_log < 1) g->sq_log = 1;
  g->rq_log = 0;
  g->rq_depth = 0;
  g->has_rq = !attr->srq && !xrc_send;
  if (g->has_rq) {
    g->rq_log = log2_ceil(cap.max_recv_wr ? cap.max_recv_wr : 1);
    if (g->rq_log < 1) g->rq_log = 1;
    g->rq_depth = 1u << g->rq_log;
  }
  const size_t sq_bytes = size_t{RHN_SQ_SLOT_SIZE} << g->sq_log;
  const size_t rq_bytes = size_t{RHN_RQ_WQE_SIZE} * g->rq_depth;
  const size_t sq_record =
      mp ? sizeof(rhn_mp_queue_record) : sizeof(rhn_queue_record);
  g->buf_len =
      sq_bytes + rq_bytes + sq_record + (g->has_rq ? sizeof(rhn_queue_record) : 0);
  return 0;
}

Qp* create_qp_common(ibv_qp_init_attr_ex* attr, uint32_t driver_qp_type,
                     const QueueBuf* qbuf, bool mp) {
  ibv_pd* pd = attr->pd;
  Context* ctx = to_ctx(pd->context);
  ibv_qp_cap& cap = attr->cap;
  QpGeometry geo;
  if (int err = qp_geometry(ctx, attr, driver_qp_type, &geo, mp))
    return errno = err, nullptr;
  const bool ud = attr->qp_type == IBV_QPT_UD;
  const uint32_t slots = geo.slots;
  const bool no_sq = geo.no_sq;

  Qp* qp = make<Qp>();
  if (!qp) return errno = ENOMEM, nullptr;
  qp->sq_log = geo.sq_log;
  qp->srq = attr->srq ? to_srq(attr->srq) : nullptr;
  const uint32_t rq_log = geo.rq_log;
  qp->rq_depth = geo.rq_depth;
  qp->buf_len = geo.buf_len;
  if (!queue_buffer(qbuf, qp->buf_len, &qp->buf, &qp->foreign_buf)) {
    free_qp(qp);
    return errno = EINVAL, nullptr;
  }
  qp->sq_info =
      static_cast<SendSlot*>(calloc(size_t{1} << qp->sq_log, sizeof(SendSlot)));
  qp->rq_wr_ids = static_cast<uint64_t*>(
      calloc(qp->rq_depth ? qp->rq_depth : 1, sizeof(uint64_t)));
  if (!qp->buf || !qp->sq_info || !qp->rq_wr_ids) {
    free_qp(qp);
    return errno = ENOMEM, nullptr;
  }

  CreateQpCmd cmd{};
  cmd.drv.driver_qp_type = driver_qp_type;
  cmd.drv.sq_log_depth = static_cast<uint8_t>(qp->sq_log);
  cmd.drv.rq_log_depth = static_cast<uint8_t>(rq_log);
  cmd.drv.buf_va = reinterpret_cast<uintptr_t>(qp->buf);
  cmd.drv.buf_len = qp->buf_len;
  ask_for_dmabuf(cmd.drv, qbuf);
  if (mp) cmd.drv.comp_mask |= RHINET_CREATE_QP_MULTI_PRODUCER;
  if (ctx->sq_event_index && !mp)
    cmd.drv.comp_mask |= RHINET_CREATE_QP_SQ_EVENT_INDEX;
  CreateQpResp resp{};
  int err = ibv_cmd_create_qp_ex(
      pd->context, &qp->vqp, attr,
      reinterpret_cast<struct ibv_create_qp*>(&cmd), sizeof(cmd),
      reinterpret_cast<ib_uverbs_create_qp_resp*>(resp.core), sizeof(resp));
  if (err) {
    free_qp(qp);
    errno = err;
    return nullptr;
  }
  qp->qpn = resp.drv.qpn;
  qp->sq_sig_all = attr->sq_sig_all;
  qp->sq = qp->buf;
  qp->sq_record =
      reinterpret_cast<rhn_queue_record*>(qp->buf + resp.drv.sq_record_offset);
  if (mp) {
    qp->mp = true;
    qp->sq_mp_record = reinterpret_cast<rhn_mp_queue_record*>(
        qp->buf + resp.drv.sq_record_offset);
    // The QP alone never owes more completions than its send CQ holds.
    const int64_t cq_entries = int64_t{1} << to_cq(attr->send_cq)->log_depth;
    const int64_t depth = int64_t{1} << qp->sq_log;
    qp->mp_credit_max = depth < cq_entries ? depth : cq_entries;
    qp->mp_credit.store(qp->mp_credit_max);
  }
  // A multi-producer record's nic_consumer is a count: it keeps its rules.
  qp->sq_kick_on_request = ctx->sq_kick_on_request && !mp;
  if (geo.has_rq) {
    qp->rq = reinterpret_cast<rhn_recv_wqe*>(qp->buf + resp.drv.rq_offset);
    qp->rq_record = reinterpret_cast<rhn_queue_record*>(
        qp->buf + resp.drv.rq_record_offset);
    // An endpoint's RQ holds irecvs, which the NIC matches as they come:
    // it must hear of each one.
    qp->rq_kick_on_request = ctx->rq_kick_on_request &&
                             driver_qp_type != RHINET_QP_DRIVER_TYPE_ENDPOINT;
  }
  // What the QP got: no send queue reports none; otherwise the inline
  // limit is what its WQEs hold (the kernel answers the same).
  if (no_sq) {
    cap.max_send_wr = cap.max_send_sge = cap.max_inline_data = 0;
  } else {
    cap.max_inline_data = inline_capacity(slots, ud, ctx->attr.max_inline);
  }
  qp->no_sq = no_sq;
  qp->max_send_sge = cap.max_send_sge;
  qp->max_recv_sge = cap.max_recv_sge;
  qp->max_inline = cap.max_inline_data;
  {
    std::lock_guard<std::mutex> g(ctx->table_lock);
    if (!ctx->qps.set(qp->qpn, qp)) {
      ibv_cmd_destroy_qp(&qp->vqp.qp);
      free_qp(qp);
      return errno = ENOMEM, nullptr;
    }
  }
  return qp;
}

ibv_qp* create_qp_typed(ibv_pd* pd, ibv_qp_init_attr* attr,
                        uint32_t driver_qp_type) {
  ibv_qp_init_attr_ex ex{};
  ex.qp_context = attr->qp_context;
  ex.send_cq = attr->send_cq;
  ex.recv_cq = attr->recv_cq;
  ex.srq = attr->srq;
  ex.cap = attr->cap;
  ex.qp_type = attr->qp_type;
  ex.sq_sig_all = attr->sq_sig_all;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  Qp* qp = create_qp_common(&ex, driver_qp_type);
  if (!qp) return nullptr;
  attr->cap = ex.cap;  // what the QP got
  return &qp->vqp.qp;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  return create_qp_typed(pd, attr, 0);
}

int modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
  ModifyQpCmd cmd{};
  int err = ibv_cmd_modify_qp(ibqp, attr, mask,
                              reinterpret_cast<struct ibv_modify_qp*>(&cmd),
                              sizeof(cmd));
  if (!err && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET &&
      !to_qp(ibqp)->xrc_target) {
    // Nothing of the QP's previous life is reported after a RESET.
    clean_qp_cqes(to_qp(ibqp), false);
    reset_qp_queues(to_qp(ibqp));
  }
  return err;
}

int query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask,
             ibv_qp_init_attr* init) {
  QueryQpCmd cmd{};
  return ibv_cmd_query_qp(ibqp, attr, mask, init,
                          reinterpret_cast<struct ibv_query_qp*>(&cmd),
                          sizeof(cmd));
}

int destroy_qp(ibv_qp* ibqp) {
  Qp* qp = to_qp(ibqp);
  if (qp->xrc_target) {  // nothing of it lives here but the struct
    int err = ibv_cmd_destroy_qp(ibqp);
    if (!err) free_qp(qp);
    return err;
  }
  if (qp->mp) {
    // Posters still at work are waited for; later ones find the flag.
    qp->mp_closed.store(true, std::memory_order_seq_cst);
    while (qp->mp_users.load(std::memory_order_seq_cst)) sched_yield();
  }
  int err = ibv_cmd_destroy_qp(ibqp);
  if (err) {
    qp->mp_closed.store(false);
    return err;
  }
  // The NIC has forgotten the QP: its CQEs go, then the QP itself, under
  // the CQ locks a poller holds while it looks QPs up.
  clean_qp_cqes(qp, true);
  if (!qp->mp) {
    free_qp(qp);
    return 0;
  }
  // A multi-producer QP's rings go; its struct stays with the context.
  if (!qp->foreign_buf) free_queue_buffer(qp->buf, qp->buf_len);
  qp->buf = nullptr;
  qp->foreign_buf = true;
  free(qp->sq_info);
  free(qp->rq_wr_ids);
  qp->sq_info = nullptr;
  qp->rq_wr_ids = nullptr;
  Context* ctx = to_ctx(ibqp->context);
  std::lock_guard<std::mutex> g(ctx->table_lock);
  qp->mp_next_closed = ctx->mp_closed_qps;
  ctx->mp_closed_qps = qp;
  return 0;
}

void free_closed_qps(Context* ctx) {
  while (Qp* qp = ctx->mp_closed_qps) {
    ctx->mp_closed_qps = qp->mp_next_closed;
    free_qp(qp);
  }
}

// A struct for an XRC target QP that @command (a uverbs command filling
// in qp->vqp, returning 0 or an errno) created or opened; null with errno.
template <typename Command>
static ibv_qp* xrc_target_qp(Command command) {
  Qp* qp = make<Qp>();
  if (!qp) return errno = ENOMEM, nullptr;
  if (int err = command(qp)) {
    free_qp(qp);
    errno = err;
    return nullptr;
  }
  qp->xrc_target = true;
  qp->qpn = qp->vqp.qp.qp_num;
  return &qp->vqp.qp;
}

// An XRC target QP: the kernel makes it (ib_core shares it among the
// domain's processes), so the command carries no queues.
RHINET_CMD(CreateXrcTargetCmd, ib_uverbs_create_qp, rhinet_no_data);
RHINET_RESP(CreateXrcTargetResp, ib_uverbs_create_qp_resp, rhinet_no_data);

ibv_qp* create_xrc_target(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (!(to_ctx(context)->attr.caps & RHN_CAP_XRC))
    return errno = EOPNOTSUPP, nullptr;
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
      attr->xrcd->context != context ||
      (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
    return errno = EINVAL, nullptr;
  return xrc_target_qp([&](Qp* qp) {
    CreateXrcTargetCmd cmd{};
    CreateXrcTargetResp resp{};
    return ibv_cmd_create_qp_ex(
        context, &qp->vqp, attr, reinterpret_cast<struct ibv_create_qp*>(&cmd),
        sizeof(cmd), reinterpret_cast<ib_uverbs_create_qp_resp*>(resp.core),
        sizeof(resp));
  });
}

RHINET_CMD(OpenQpCmd, ib_uverbs_open_qp, rhinet_no_data);
RHINET_RESP(OpenQpResp, ib_uverbs_create_qp_resp, rhinet_no_data);

// Another process's XRC target QP of a domain this one has open: the
// kernel checks the domain.
ibv_qp* open_qp(ibv_context* context, ibv_qp_open_attr* attr) {
  return xrc_target_qp([&](Qp* qp) {
    OpenQpCmd cmd{};
    OpenQpResp resp{};
    return ibv_cmd_open_qp(
        context, &qp->vqp, sizeof(qp->vqp), attr,
        reinterpret_cast<struct ibv_open_qp*>(&cmd), sizeof(cmd),
        reinterpret_cast<ib_uverbs_create_qp_resp*>(resp.core), sizeof(resp));
  });
}

// ---- AH -------------------------------------------------------------------

RHINET_RESP(CreateAhResp, ib_uverbs_create_ah_resp, rhinet_create_ah_resp);

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  Ah* ah = make<Ah>();
  if (!ah) return errno = ENOMEM, nullptr;
  CreateAhResp resp{};
  int err = ibv_cmd_create_ah(
      pd, &ah->ibah, attr,
      reinterpret_cast<ib_uverbs_create_ah_resp*>(resp.core), sizeof(resp));
  if (err) {
    destroy_obj(ah);
    errno = err;
    return nullptr;
  }
  ah->dest_node = resp.drv.dest_node;
  // RoCE AHs always have a GRH (the kernel refuses others); the NIC puts
  // the source GID of sgid_index in.
  memcpy(ah->grh.dgid, attr->grh.dgid.raw, sizeof(ah->grh.dgid));
  ah->grh.flow_label = attr->grh.flow_label;
  ah->grh.sgid_index = attr->grh.sgid_index;
  ah->grh.hop_limit = attr->grh.hop_limit;
  ah->grh.traffic_class = attr->grh.traffic_class;
  return &ah->ibah;
}

int destroy_ah(ibv_ah* ibah) {
  int err = ibv_cmd_destroy_ah(ibah);
  if (!err) destroy_obj(to_ah(ibah));
  return err;
}

}  // namespace rhinet
