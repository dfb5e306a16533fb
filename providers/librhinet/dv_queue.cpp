// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Queues in another device's memory (RHINETDV_1.12): a QP's or CQ's buffer
// given as a dma-buf and the process's mapping of it. The verbs do the
// rest: the kernel pins the dma-buf's pages for the NIC
// (RHINET_QUEUE_BUF_DMABUF) and the library works on the mapping as on
// its own buffers.
#include <cerrno>

#include "dv.h"

namespace {

// The application's buffer from @b, or EINVAL.
int queue_buf_of(const rhinetdv_queue_buf& b, rhinet::QueueBuf* out) {
  if (b.reserved || b.dmabuf_fd < 0 || !b.addr) return EINVAL;
  out->dmabuf_fd = b.dmabuf_fd;
  out->offset = b.offset;
  out->length = b.length;
  out->addr = static_cast<uint8_t*>(b.addr);
  return 0;
}

}  // namespace

RHINETDV_EXPORT ibv_qp* rhinetdv_create_qp(ibv_context* context,
                                           ibv_qp_init_attr_ex* attr,
                                           const rhinetdv_qp_init_attr* dv_attr,
                                           size_t inlen) {
  if (!context || !attr) return errno = EINVAL, nullptr;
  if (!rhinet::is_rhinet_context(context)) return errno = EOPNOTSUPP, nullptr;
  rhinetdv_qp_init_attr a;
  if (!rhinet::extend(dv_attr, inlen, &a, sizeof(a)) ||
      (a.comp_mask & ~uint64_t{RHINETDV_QP_INIT_ATTR_BUF}))
    return errno = EINVAL, nullptr;
  if (!(a.comp_mask & RHINETDV_QP_INIT_ATTR_BUF))
    return rhinet::create_qp_ex_in(context, attr, nullptr);
  rhinet::QueueBuf buf;
  if (const int err = queue_buf_of(a.buf, &buf)) return errno = err, nullptr;
  return rhinet::create_qp_ex_in(context, attr, &buf);
}

RHINETDV_EXPORT ibv_cq_ex* rhinetdv_create_cq(
    ibv_context* context, ibv_cq_init_attr_ex* attr,
    const rhinetdv_cq_init_attr* dv_attr, size_t inlen) {
  if (!context || !attr) return errno = EINVAL, nullptr;
  if (!rhinet::is_rhinet_context(context)) return errno = EOPNOTSUPP, nullptr;
  rhinetdv_cq_init_attr a;
  if (!rhinet::extend(dv_attr, inlen, &a, sizeof(a)) ||
      (a.comp_mask & ~uint64_t{RHINETDV_CQ_INIT_ATTR_BUF}))
    return errno = EINVAL, nullptr;
  if (!(a.comp_mask & RHINETDV_CQ_INIT_ATTR_BUF))
    return rhinet::create_cq_ex_in(context, attr, nullptr);
  rhinet::QueueBuf buf;
  if (const int err = queue_buf_of(a.buf, &buf)) return errno = err, nullptr;
  return rhinet::create_cq_ex_in(context, attr, &buf);
}

RHINETDV_EXPORT int rhinetdv_qp_buf_len(ibv_context* context,
                                        const ibv_qp_init_attr_ex* attr,
                                        size_t* length) {
  if (!context || !attr || !length) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  rhinet::QpGeometry g;
  if (const int err = rhinet::qp_geometry(rhinet::to_ctx(context), attr, 0, &g))
    return err;
  *length = g.buf_len;
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
