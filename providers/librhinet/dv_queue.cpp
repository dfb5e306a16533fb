// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Queues in another device's memory (RHINETDV_1.12): a QP's or CQ's buffer
// given as a dma-buf and the process's mapping of it. The verbs do the
// rest: the kernel pins the dma-buf's pages for the NIC
// (RHINET_QUEUE_BUF_DMABUF) and the library works on the mapping as on
// its own buffers.
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "dv.h"

namespace rhinet {

int queue_buf_of(const rhinetdv_queue_buf& b, QueueBuf* out) {
  if (b.reserved || b.dmabuf_fd < 0 || !b.addr) return EINVAL;
  out->dmabuf_fd = b.dmabuf_fd;
  out->offset = b.offset;
  out->length = b.length;
  out->addr = static_cast<uint8_t*>(b.addr);
  return 0;
}

}  // namespace rhinet

namespace {

// A create call's direct-verbs attributes (@inlen bytes as the caller
// knows them), of which only @bit is defined: 0 with *buf set, or nullptr
// when no buffer is asked for; otherwise an errno.
// @others: the further comp_mask bits the call knows, left to it (*mask).
template <typename Attr>
int take_queue_attr(ibv_context* context, const Attr* dv_attr, size_t inlen,
                    uint64_t bit, rhinet::QueueBuf* buf,
                    const rhinet::QueueBuf** use, uint64_t others = 0,
                    uint64_t* mask = nullptr) {
  if (!context) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  Attr a;
  if (!rhinet::extend(dv_attr, inlen, &a, sizeof(a)) ||
      (a.comp_mask & ~(bit | others)))
    return EINVAL;
  if (mask) *mask = a.comp_mask;
  *use = nullptr;
  if (!(a.comp_mask & bit)) return 0;
  if (const int err = rhinet::queue_buf_of(a.buf, buf)) return err;
  *use = buf;
  return 0;
}

}  // namespace

RHINETDV_EXPORT ibv_qp* rhinetdv_create_qp(ibv_context* context,
                                           ibv_qp_init_attr_ex* attr,
                                           const rhinetdv_qp_init_attr* dv_attr,
                                           size_t inlen) {
  rhinet::QueueBuf buf;
  const rhinet::QueueBuf* use;
  uint64_t mask = 0;
  if (!attr) return errno = EINVAL, nullptr;
  if (const int err = take_queue_attr(
          context, dv_attr, inlen, RHINETDV_QP_INIT_ATTR_BUF, &buf, &use,
          RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER, &mask))
    return errno = err, nullptr;
  return rhinet::create_qp_ex_in(context, attr, use,
                                 mask & RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER);
}

RHINETDV_EXPORT ibv_cq_ex* rhinetdv_create_cq(
    ibv_context* context, ibv_cq_init_attr_ex* attr,
    const rhinetdv_cq_init_attr* dv_attr, size_t inlen) {
  rhinet::QueueBuf buf;
  const rhinet::QueueBuf* use;
  if (!attr) return errno = EINVAL, nullptr;
  if (const int err = take_queue_attr(context, dv_attr, inlen,
                                      RHINETDV_CQ_INIT_ATTR_BUF, &buf, &use))
    return errno = err, nullptr;
  ibv_cq_ex* cq = rhinet::create_cq_ex_in(context, attr, use);
  // What libibverbs' ibv_create_cq_ex does after the provider's call: the
  // CQ's context and channel, the channel's reference, the events' lock.
  if (cq)
    verbs_init_cq(ibv_cq_ex_to_cq(cq), context, attr->channel,
                  attr->cq_context);
  return cq;
}

RHINETDV_EXPORT int rhinetdv_qp_buf_len(ibv_context* context,
                                        const ibv_qp_init_attr_ex* attr,
                                        size_t* length) {
  if (!context || !attr || !length) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  rhinet::QpGeometry g;
  if (const int err = rhinet::qp_geometry(rhinet::to_ctx(context), attr, 0, &g))
    return err;
  // Room for the multi-producer SQ record (8 bytes longer): the length
  // fits the QP with or without RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER.
  *length = g.buf_len + sizeof(rhn_mp_queue_record) - sizeof(rhn_queue_record);
  return 0;
}

RHINETDV_EXPORT int rhinetdv_cq_buf_len(ibv_context* context, uint32_t cqe,
                                        size_t* length) {
  if (!context || !length) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  const rhinet::Context* ctx = rhinet::to_ctx(context);
  if (cqe < 1 || cqe > (1u << ctx->attr.max_cq_log_depth)) return EINVAL;
  *length = rhinet::cq_buf_len(cqe);
  return 0;
}

RHINETDV_EXPORT int rhinetdv_query_qp_buf(ibv_qp* ibqp,
                                          rhinetdv_qp_buf_layout* layout,
                                          size_t outlen) {
  if (!ibqp || !layout ||
      outlen < offsetof(rhinetdv_qp_buf_layout, flags) + sizeof(uint32_t))
    return EINVAL;
  if (!rhinet::is_rhinet_context(ibqp->context)) return EOPNOTSUPP;
  const rhinet::Qp* qp = rhinet::to_qp(ibqp);
  rhinetdv_qp_buf_layout l{};
  const auto at = [qp](const void* p) {
    return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - qp->buf);
  };
  l.length = qp->buf_len;
  l.sq_offset = at(qp->sq);
  l.sq_slots = 1u << qp->sq_log;
  l.sq_record_offset = at(qp->mp ? static_cast<const void*>(qp->sq_mp_record)
                                 : static_cast<const void*>(qp->sq_record));
  if (qp->mp) l.flags |= RHINETDV_QP_BUF_MULTI_PRODUCER;
  if (qp->rq) {
    l.rq_offset = at(qp->rq);
    l.rq_record_offset = at(qp->rq_record);
    l.rq_wqes = qp->rq_depth;
  } else {
    l.flags |= RHINETDV_QP_BUF_SRQ;
  }
  // A caller that knows a longer struct gets zeros past ours.
  std::memset(layout, 0, outlen);
  std::memcpy(layout, &l, outlen < sizeof(l) ? outlen : sizeof(l));
  return 0;
}
