// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// PUSH and PULL (RHINETDV_1.0, the _ex forms 1.1): WQEs with
// RHN_WQE_F_AREA (remote_key = area key, remote_addr = offset) or by key,
// a partial mode's descriptor in the slot after the base, and on request
// RHN_WQE_F_STATUS_WORD. Also the pieces every PUSH-like family shares.
#include <cstring>

#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownXferFlags = RHINETDV_XFER_SIGNALED |
                                     RHINETDV_XFER_STATUS_WORD |
                                     RHINETDV_XFER_INLINE | RHINETDV_XFER_FENCE;

constexpr uint32_t kKnownXferExFlags =
    kKnownXferFlags | RHINETDV_XFER_EX_BY_KEY | RHINETDV_XFER_EX_SIGNAL;

int post(rhinetdv_endpoint* pub, const rhinetdv_xfer_ex* xe, bool push) {
  if (!pub || !xe) return EINVAL;
  Endpoint* ep = to_ep(pub);
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  const rhinetdv_xfer* x = &xe->base;
  const bool by_key = x->flags & RHINETDV_XFER_EX_BY_KEY;
  const bool partial = xe->mode != RHINETDV_MODE_BASIC;
  const uint8_t opcode = push ? RHN_OP_WRITE : RHN_OP_READ;
  if (xe->comp_mask || (x->flags & ~kKnownXferExFlags) || x->reserved0 ||
      x->reserved1 || xe->reserved0 ||
      ((x->flags & RHINETDV_XFER_INLINE) &&
       (!push || partial || x->length > ep->max_inline)) ||
      !status_word_ok(x->flags, x->status_word) ||
      !mode_taken(opcode, xe->mode) ||
      ((x->flags & RHINETDV_XFER_EX_SIGNAL) && (!push || by_key)) ||
      (!by_key && (x->area_id > 0xffff || xe->group_id > 0xffff)))
    return EINVAL;
  if (!by_key && !in_groups(to_ctx(pub->context), xe->group_id)) return EPERM;

  DvWqe w(opcode);
  rhn_send_wqe* h = w.h;
  w.data = put_data(w.buf, x->local_addr, x->length, x->lkey, x->flags,
                    x->status_word, x->status_lkey);
  if (partial) {
    // The descriptor takes the slot after the base.
    rhn_wqe_xfer* d = w.partial(xe->mode);
    switch (xe->mode) {
      case RHINETDV_MODE_STRIDE:
        if (!xe->block || !xe->count || xe->local_stride < xe->block ||
            xe->remote_stride < xe->block)
          return EINVAL;
        d->block = xe->block;
        d->count = xe->count;
        d->local_stride = xe->local_stride;
        d->remote_stride = xe->remote_stride;
        break;
      case RHINETDV_MODE_BITMAP:
        if (!xe->block || !xe->bitmap) return EINVAL;
        d->block = xe->block;
        d->bitmap_addr = reinterpret_cast<uintptr_t>(xe->bitmap);
        d->bitmap_lkey = xe->bitmap_lkey;
        break;
      default:  // TWIN, DIFF
        if (!xe->twin || xe->twin->context->device != pub->context->device)
          return EINVAL;
        d->twin = to_dm(xe->twin)->twin_handle;
        d->twin_offset = xe->twin_offset;
        break;
    }
  }
  if (!by_key) h->flags |= RHN_WQE_F_AREA;
  if (x->flags & RHINETDV_XFER_FENCE) h->flags |= RHN_WQE_F_FENCE;
  if (x->flags & RHINETDV_XFER_EX_SIGNAL) {
    h->flags |= RHN_WQE_F_SIGNAL_REMOTE;
    h->imm_data = xe->signal;
  }
  h->dst_node = x->dest_node;
  h->dst_qpn = x->dest_endpoint;
  h->remote_key = by_key ? xe->rkey : RHN_AREA_KEY(xe->group_id, x->area_id);
  h->remote_addr = by_key ? xe->remote_addr : x->offset;

  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, x->wr_id, x->flags & RHINETDV_XFER_SIGNALED);
}

int post_basic(rhinetdv_endpoint* pub, const rhinetdv_xfer* x, bool push) {
  if (!x || (x->flags & ~kKnownXferFlags)) return EINVAL;
  rhinetdv_xfer_ex xe{};
  xe.base = *x;
  return post(pub, &xe, push);
}

}  // namespace

// A status word the NIC can write: given, 8-byte aligned.
bool status_word_ok(uint32_t flags, const uint64_t* word) {
  return !(flags & RHINETDV_XFER_STATUS_WORD) ||
         (word && !(reinterpret_cast<uintptr_t>(word) & 7));
}

void put_status_word(rhn_send_wqe* h, bool on, uint64_t* word, uint32_t lkey) {
  if (!on) return;
  h->flags |= RHN_WQE_F_STATUS_WORD;
  h->u.status.addr = reinterpret_cast<uintptr_t>(word);
  h->u.status.lkey = lkey;
}

// The data of a PUSH or isend WQE (inline bytes, or one SGE) and its
// status word, from RHINETDV_XFER_INLINE / _STATUS_WORD in @flags (the
// isend flags have the same values); returns the extension slots the
// inline bytes take.
uint32_t put_data(uint8_t* w, const void* addr, uint32_t length, uint32_t lkey,
                  uint32_t flags, uint64_t* status_word, uint32_t status_lkey) {
  uint32_t ext;
  if (flags & RHINETDV_XFER_INLINE) {
    if (length) rhn_wqe_put_inline(w, 0, addr, length);
    ext = rhn_wqe_set_inline(w, length);
  } else {
    rhn_wqe_put_sge(w, 0, reinterpret_cast<uintptr_t>(addr), length, lkey);
    ext = rhn_wqe_set_sges(w, 1);
  }
  put_status_word(reinterpret_cast<rhn_send_wqe*>(w),
                  flags & RHINETDV_XFER_STATUS_WORD, status_word, status_lkey);
  return ext;
}

}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_push(rhinetdv_endpoint* ep,
                                  const rhinetdv_xfer* x) {
  return rhinet::post_basic(ep, x, true);
}

RHINETDV_EXPORT int rhinetdv_pull(rhinetdv_endpoint* ep,
                                  const rhinetdv_xfer* x) {
  return rhinet::post_basic(ep, x, false);
}

RHINETDV_EXPORT int rhinetdv_push_ex(rhinetdv_endpoint* ep,
                                     const rhinetdv_xfer_ex* x, size_t inlen) {
  rhinetdv_xfer_ex e;
  if (const int err = rhinet::take_attr(ep, x, inlen, &e)) return err;
  return rhinet::post(ep, &e, true);
}

RHINETDV_EXPORT int rhinetdv_pull_ex(rhinetdv_endpoint* ep,
                                     const rhinetdv_xfer_ex* x, size_t inlen) {
  rhinetdv_xfer_ex e;
  if (const int err = rhinet::take_attr(ep, x, inlen, &e)) return err;
  return rhinet::post(ep, &e, false);
}
