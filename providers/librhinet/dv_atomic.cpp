// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Remote atomics (RHINETDV_1.9; the whole family, RHINETDV_1.19).
#include <cstring>

#include "dv.h"

namespace {

// One atomic, checked by its entry point: posted on the endpoint.
struct AtomicPost {
  uint8_t opcode;
  uint32_t aop;  // RHN_OP_ATOMIC_EXT's imm_data
  uint64_t wr_id;
  uint64_t result;  // address, 0: not wanted
  uint32_t result_len, result_lkey;
  uint16_t dest_node;
  uint32_t dest_endpoint;
  bool by_key, fence;
  uint32_t key;  // rkey, or the area key
  uint64_t target, operand, swap;
};

// The attr fields both entry points share: the target's form and
// alignment, the groups, the flags every atomic takes.
template <typename Attr>
bool target_ok(const Attr& a, uint32_t width, uint32_t extra_flags) {
  const bool by_key = a.flags & RHINETDV_ATOMIC_BY_KEY;
  const uint64_t target = by_key ? a.remote_addr : a.offset;
  return !a.comp_mask && !a.reserved0 &&
         !(a.flags & ~(uint32_t{RHINETDV_ATOMIC_BY_KEY | RHINETDV_ATOMIC_FENCE} |
                       extra_flags)) &&
         !(target & (width - 1)) &&
         (by_key || (a.area_id <= 0xffff && a.group_id <= 0xffff));
}

template <typename Attr>
AtomicPost post_of(const Attr& a, uint8_t opcode) {
  const bool by_key = a.flags & RHINETDV_ATOMIC_BY_KEY;
  AtomicPost p{};
  p.opcode = opcode;
  p.wr_id = a.wr_id;
  p.result_lkey = a.result_lkey;
  p.dest_node = a.dest_node;
  p.dest_endpoint = a.dest_endpoint;
  p.by_key = by_key;
  p.fence = a.flags & RHINETDV_ATOMIC_FENCE;
  p.key = by_key ? a.rkey : RHN_AREA_KEY(a.group_id, a.area_id);
  p.target = by_key ? a.remote_addr : a.offset;
  p.swap = a.swap;
  return p;
}

int post_atomic(rhinetdv_endpoint* pub, uint32_t group_id, const AtomicPost& a) {
  const rhinet::Context* ctx = rhinet::to_ctx(pub->context);
  if (!rhinet::op_supported(ctx, a.opcode)) return EOPNOTSUPP;
  if (!a.by_key && !rhinet::in_groups(ctx, group_id)) return EPERM;
  rhinet::DvWqe w(a.opcode);
  rhn_send_wqe* h = w.h;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  if (!a.by_key) h->flags |= RHN_WQE_F_AREA;
  if (a.fence) h->flags |= RHN_WQE_F_FENCE;
  h->imm_data = a.aop;
  h->remote_key = a.key;
  h->remote_addr = a.target;
  h->u.atomic.compare_add = a.operand;
  h->u.atomic.swap = a.swap;
  if (a.result_len) {
    rhn_wqe_put_sge(w.buf, 0, a.result, a.result_len, a.result_lkey);
    w.data = rhn_wqe_set_sges(w.buf, 1);
  }
  rhinet::Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  return rhinet::post_wqe_locked(ep, w, a.wr_id, true);
}

// rhinetdv's operations in the NIC's terms.
constexpr uint32_t kAopOf[] = {
    0,  // none
    RHN_AOP_ADD, RHN_AOP_CMP_SWAP, RHN_AOP_SWAP, RHN_AOP_FETCH,
    RHN_AOP_AND, RHN_AOP_OR,       RHN_AOP_XOR,
};

}  // namespace

// RHINETDV_1.9: a remote atomic. Always signaled: the operand bytes of
// the WQE are where a status word's reference would go.
RHINETDV_EXPORT int rhinetdv_atomic(rhinetdv_endpoint* pub,
                                    const rhinetdv_atomic_attr* attr,
                                    size_t inlen) {
  rhinetdv_atomic_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  if (!target_ok(a, 8, 0) ||
      (a.op != RHINETDV_ATOMIC_FETCH_ADD && a.op != RHINETDV_ATOMIC_CMP_SWAP) ||
      !a.result || (reinterpret_cast<uintptr_t>(a.result) & 7) ||
      (a.op == RHINETDV_ATOMIC_FETCH_ADD && a.swap))
    return EINVAL;
  AtomicPost p = post_of(a, a.op == RHINETDV_ATOMIC_FETCH_ADD
                                ? uint8_t{RHN_OP_FETCH_ADD}
                                : uint8_t{RHN_OP_CMP_SWAP});
  p.operand = a.compare_add;
  p.result = reinterpret_cast<uintptr_t>(a.result);
  p.result_len = 8;
  return post_atomic(pub, a.group_id, p);
}

// RHINETDV_1.19: every operation of the family, on 4 or 8 bytes, fetching
// or not.
RHINETDV_EXPORT int rhinetdv_atomic_ext(rhinetdv_endpoint* pub,
                                        const rhinetdv_atomic_ext_attr* attr,
                                        size_t inlen) {
  rhinetdv_atomic_ext_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  const bool w32 = a.flags & RHINETDV_ATOMIC_32;
  const bool fetch = !(a.flags & RHINETDV_ATOMIC_NO_FETCH);
  const uint32_t width = w32 ? 4 : 8;
  if (!target_ok(a, width, RHINETDV_ATOMIC_32 | RHINETDV_ATOMIC_NO_FETCH) ||
      a.op == 0 || a.op > RHINETDV_ATOMIC_XOR ||
      (a.op != RHINETDV_ATOMIC_CMP_SWAP && a.swap) ||
      fetch != (a.result != nullptr) ||
      (reinterpret_cast<uintptr_t>(a.result) & (width - 1)))
    return EINVAL;
  AtomicPost p = post_of(a, RHN_OP_ATOMIC_EXT);
  p.aop = kAopOf[a.op] | (w32 ? RHN_AOP_F_32 : 0) |
          (fetch ? 0 : RHN_AOP_F_NO_FETCH);
  if (!rhn_aop_valid(p.aop)) return EINVAL;  // a FETCH without fetch
  p.operand = a.operand;
  p.result = reinterpret_cast<uintptr_t>(a.result);
  p.result_len = fetch ? width : 0;
  return post_atomic(pub, a.group_id, p);
}
