// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Many producers on one send queue (RHINETDV_1.16): the direct verb that
// posts on a QP created with RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER. The
// WQEs are built as ibv_post_send builds them (post.cpp) and written by
// the send queue's lock-free writer (sq.cpp, sq_mp_write).
#include <cerrno>

#include "dv.h"

RHINETDV_EXPORT int rhinetdv_mp_post_send(ibv_qp* qp, ibv_send_wr* wr,
                                          ibv_send_wr** bad_wr,
                                          uint32_t flags) {
  if (!qp || !bad_wr) return EINVAL;
  *bad_wr = wr;
  if (!rhinet::is_rhinet_context(qp->context)) return EOPNOTSUPP;
  rhinet::Qp* q = rhinet::to_qp(qp);
  if (!q->mp) return EOPNOTSUPP;
  return rhinet::mp_post_send(q, wr, bad_wr, flags);
}
