// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Remote atomics (RHINETDV_1.9).
#include <cstring>

#include "dv.h"

// RHINETDV_1.9: a remote atomic. Always signaled: the operand bytes of
// the WQE are where a status word's reference would go.
RHINETDV_EXPORT int rhinetdv_atomic(rhinetdv_endpoint* pub,
                                    const rhinetdv_atomic_attr* attr,
                                    size_t inlen) {
  rhinetdv_atomic_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  const bool by_key = a.flags & RHINETDV_ATOMIC_BY_KEY;
  const uint64_t target = by_key ? a.remote_addr : a.offset;
  if (a.comp_mask || a.reserved0 ||
      (a.flags & ~uint32_t{RHINETDV_ATOMIC_BY_KEY | RHINETDV_ATOMIC_FENCE}) ||
      (a.op != RHINETDV_ATOMIC_FETCH_ADD && a.op != RHINETDV_ATOMIC_CMP_SWAP) ||
      !a.result || (reinterpret_cast<uintptr_t>(a.result) & 7) ||
      (target & 7) || (a.op == RHINETDV_ATOMIC_FETCH_ADD && a.swap) ||
      (!by_key && (a.area_id > 0xffff || a.group_id > 0xffff)))
    return EINVAL;
  const uint8_t opcode =
      a.op == RHINETDV_ATOMIC_FETCH_ADD ? RHN_OP_FETCH_ADD : RHN_OP_CMP_SWAP;
  const rhinet::Context* ctx = rhinet::to_ctx(pub->context);
  if (!rhinet::op_supported(ctx, opcode)) return EOPNOTSUPP;
  if (!by_key && !rhinet::in_groups(ctx, a.group_id)) return EPERM;
  rhinet::DvWqe w(opcode);
  rhn_send_wqe* h = w.h;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  if (!by_key) h->flags |= RHN_WQE_F_AREA;
  if (a.flags & RHINETDV_ATOMIC_FENCE) h->flags |= RHN_WQE_F_FENCE;
  h->remote_key = by_key ? a.rkey : RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = target;
  h->u.atomic.compare_add = a.compare_add;
  h->u.atomic.swap = a.swap;
  rhn_wqe_put_sge(w.buf, 0, reinterpret_cast<uintptr_t>(a.result), 8,
                  a.result_lkey);
  w.data = rhn_wqe_set_sges(w.buf, 1);
  rhinet::Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  return rhinet::post_wqe_locked(ep, w, a.wr_id, true);
}
