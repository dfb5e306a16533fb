// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// isend / irecv / iprobe matched by the NIC (RHINETDV_1.2; ops/tag in the
// firmware). An isend is a send WQE; an irecv a tag WQE in the endpoint's
// receive ring, completed out of ring order.
#include <climits>
#include <cstring>

#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownIsendFlags = RHINETDV_ISEND_SIGNALED |
                                      RHINETDV_ISEND_STATUS_WORD |
                                      RHINETDV_ISEND_INLINE;

constexpr uint64_t kKnownIsendMask = RHINETDV_ISEND_ATTR_MASK_XFER;

constexpr uint64_t kKnownIrecvMask = RHINETDV_IRECV_ATTR_MASK_XFER;

// wr_ids of the library's own tag WQEs (never reported).
constexpr uint64_t kCancelWrId = ~uint64_t{0};

constexpr uint64_t kProbeWrIdBase = ~uint64_t{0} << 32;

// How long rhinetdv_iprobe waits for the NIC's answer.
constexpr uint64_t kProbeTimeoutMs = 10000;

// The partial-transfer fields of an isend or an irecv in one shape
// (`stride` is the isend's local_stride or the irecv's stride).
struct TagXfer {
  uint32_t mode, block, count, bitmap_lkey;
  uint64_t stride;
  const void* bitmap;
  ibv_dm* twin;
  uint64_t twin_offset;

  bool any() const {
    return mode || block || count || bitmap_lkey || stride || bitmap || twin ||
           twin_offset;
  }
};

TagXfer xfer_of(const rhinetdv_isend_attr& a) {
  return {a.mode,         a.block,  a.count, a.bitmap_lkey,
          a.local_stride, a.bitmap, a.twin,  a.twin_offset};
}

TagXfer xfer_of(const rhinetdv_irecv_attr& a) {
  return {a.mode,   a.block,  a.count, a.bitmap_lkey,
          a.stride, a.bitmap, a.twin,  a.twin_offset};
}

// comp_mask of an isend or irecv: only known bits, and no mode fields
// without @xfer_bit (a caller that did not ask for a mode set them by
// mistake).
bool tag_mask_ok(uint64_t comp_mask, uint64_t known, uint64_t xfer_bit,
                 const TagXfer& x) {
  return !(comp_mask & ~known) && ((comp_mask & xfer_bit) || !x.any());
}

// A message's mode (isend basic/diff/bitmap/stride, irecv
// basic/twin/bitmap/stride) and its parameters against the buffer of
// @length bytes. The NIC checks them again (RHN_SYN_BAD_XFER), but a
// refused isend takes the endpoint to error: what can be seen here is
// refused here.
bool tag_xfer_ok(const Endpoint* ep, const TagXfer& x, uint32_t length,
                 bool send) {
  if (!mode_taken(send ? RHN_OP_ISEND : RHN_OP_IRECV, x.mode)) return false;
  if (x.mode == RHINETDV_MODE_BASIC) return true;
  if (!length) return false;
  switch (x.mode) {
    case RHINETDV_MODE_STRIDE: {
      if (!x.block || !x.count || x.stride < x.block || x.block > length)
        return false;
      // (count - 1) * stride + block within the buffer, without overflow.
      const uint64_t gaps = x.count - 1u;
      if (gaps && x.stride > (length - x.block) / gaps) return false;
      // The message (isend) or what the irecv takes is below 4 GiB.
      return uint64_t{x.block} * x.count <= UINT32_MAX;
    }
    case RHINETDV_MODE_BITMAP:
      if (!x.block || !x.bitmap) return false;
      // The sending NIC holds an isend's bitmap while it streams.
      return !send || (uint64_t{length} + x.block - 1) / x.block <=
                          RHN_TAG_BITMAP_BLOCKS;
    default: {  // TWIN, DIFF: the buffer's copy inside the twin
      if (!x.twin || x.twin->context->device != ep->pub.context->device)
        return false;
      const uint64_t size = to_dm(x.twin)->length;
      return x.twin_offset <= size && length <= size - x.twin_offset;
    }
  }
}

int post_isend(Endpoint* ep, const rhinetdv_isend_attr& a) {
  const TagXfer x = xfer_of(a);
  const bool partial = x.mode != RHINETDV_MODE_BASIC;
  if (!tag_mask_ok(a.comp_mask, kKnownIsendMask, RHINETDV_ISEND_ATTR_MASK_XFER,
                   x) ||
      a.reserved0 || (a.flags & ~kKnownIsendFlags) ||
      ((a.flags & RHINETDV_ISEND_INLINE) &&
       (partial || a.length > ep->max_inline)) ||
      !status_word_ok(a.flags, a.status_word) || (a.length && !a.addr) ||
      !tag_xfer_ok(ep, x, a.length, true))
    return EINVAL;
  DvWqe w(RHN_OP_ISEND);
  rhn_send_wqe* h = w.h;
  w.data = put_data(w.buf, a.addr, a.length, a.lkey, a.flags, a.status_word,
                    a.status_lkey);
  if (partial) {
    // One SGE and the descriptor in the slot after the base, as a partial
    // PUSH; the message is packed at the receiver's end (remote_stride =
    // block): where its bytes land is the irecv's choice.
    rhn_wqe_xfer* d = w.partial(x.mode);
    switch (x.mode) {
      case RHINETDV_MODE_STRIDE:
        d->block = x.block;
        d->count = x.count;
        d->local_stride = x.stride;
        d->remote_stride = x.block;
        break;
      case RHINETDV_MODE_BITMAP:
        d->block = x.block;
        d->bitmap_addr = reinterpret_cast<uintptr_t>(x.bitmap);
        d->bitmap_lkey = x.bitmap_lkey;
        break;
      default:  // DIFF
        d->twin = to_dm(x.twin)->twin_handle;
        d->twin_offset = x.twin_offset;
        break;
    }
  }
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  h->remote_addr = a.tag;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_ISEND_SIGNALED);
}

// What an irecv and an iprobe check alike (an iprobe does not look at the
// mode: it receives nothing).
bool irecv_attr_ok(const rhinetdv_irecv_attr& a) {
  return tag_mask_ok(a.comp_mask, kKnownIrecvMask,
                     RHINETDV_IRECV_ATTR_MASK_XFER, xfer_of(a)) &&
         !a.reserved0 && !a.reserved1 &&
         !(a.flags & ~static_cast<uint32_t>(RHINETDV_IRECV_ANY_SOURCE));
}

// The oldest RQ index the NIC may still read (rhn_queue_record).
uint32_t nic_consumer(const Qp* qp) {
  const uint32_t v =
      __atomic_load_n(&qp->rq_record->nic_consumer, __ATOMIC_ACQUIRE);
  from_device_barrier();
  return v;
}

int post_irecv(Endpoint* ep, const rhinetdv_irecv_attr& a, uint32_t* handle) {
  const TagXfer x = xfer_of(a);
  if (!irecv_attr_ok(a) || (a.length && !a.addr) ||
      !tag_xfer_ok(ep, x, a.length, false))
    return EINVAL;
  Qp* qp = ep->qp;
  std::lock_guard<std::mutex> g(ep->lock);
  std::lock_guard<std::mutex> gr(qp->rq_lock);
  const uint32_t index = qp->rq_producer;
  IrecvSlot& slot = ep->irecvs[index & (ep->irecv_cap - 1)];
  // A slot of the ring is free once the NIC read past it: irecvs complete
  // out of order, and one may wait in the ring for the NIC's list.
  if (ep->irecv_outstanding >= ep->max_irecv || slot.busy ||
      index - nic_consumer(qp) >= qp->rq_depth)
    return ENOMEM;
  rhn_tag_recv_wqe w{};
  w.wqe_index = static_cast<uint16_t>(index);
  w.flags = RHN_RQ_F_TAG;
  if (a.flags & RHINETDV_IRECV_ANY_SOURCE) w.flags |= RHN_TAG_F_ANY_SRC;
  w.tag = a.tag;
  w.mask = a.tag_mask;
  w.src_node = a.src_node;
  w.src_qpn = a.src_endpoint;
  if (a.length) {
    w.num_sge = 1;
    w.sge = rhn_sge{reinterpret_cast<uintptr_t>(a.addr), a.length, a.lkey};
  }
  // The mode in flags bits 8..10, its parameters in the WQE's xfer.
  w.flags |= x.mode << RHN_TAG_XFER_SHIFT;
  switch (x.mode) {
    case RHINETDV_MODE_STRIDE:
      w.xfer.stride.block = x.block;
      w.xfer.stride.count = x.count;
      w.xfer.stride.stride = x.stride;
      break;
    case RHINETDV_MODE_BITMAP:
      w.xfer.bitmap.block = x.block;
      w.xfer.bitmap.lkey = x.bitmap_lkey;
      w.xfer.bitmap.addr = reinterpret_cast<uintptr_t>(x.bitmap);
      break;
    case RHINETDV_MODE_TWIN:
      w.xfer.twin.handle = to_dm(x.twin)->twin_handle;
      w.xfer.twin.offset = x.twin_offset;
      break;
    default:  // BASIC
      break;
  }
  memcpy(&qp->rq[index & (qp->rq_depth - 1)], &w, sizeof(w));
  slot = IrecvSlot{a.wr_id, index, true};
  ep->irecv_outstanding++;
  qp->rq_producer = index + 1;
  to_device_barrier();
  __atomic_store_n(&qp->rq_record->producer_index, qp->rq_producer,
                   __ATOMIC_RELEASE);
  to_ctx(ep->pub.context)->kick(RHN_DB_RQ, qp->qpn);
  if (handle) *handle = index;
  return 0;
}

int cancel_irecv(Endpoint* ep, uint32_t handle) {
  std::lock_guard<std::mutex> g(ep->lock);
  if (!ep->irecvs) return ENOENT;
  const IrecvSlot& slot = ep->irecvs[handle & (ep->irecv_cap - 1)];
  if (!slot.busy || slot.index != handle) return ENOENT;
  DvWqe w(RHN_OP_IRECV_CANCEL);
  rhn_send_wqe* h = w.h;
  h->remote_key = handle & 0xffff;
  return post_wqe_locked(ep, w, kCancelWrId, false);
}

int probe(Endpoint* ep, const rhinetdv_irecv_attr& a, rhinetdv_tag_info* info) {
  if (!irecv_attr_ok(a)) return EINVAL;
  DvWqe w(RHN_OP_IPROBE);
  rhn_send_wqe* h = w.h;
  h->flags = RHN_WQE_F_SIGNALED;
  h->dst_node = a.src_node;
  h->dst_qpn = a.src_endpoint;
  h->remote_addr = a.tag;
  h->u.tag.mask = a.tag_mask;
  if (a.flags & RHINETDV_IRECV_ANY_SOURCE) h->u.tag.flags = RHN_TAG_F_ANY_SRC;
  std::lock_guard<std::mutex> g(ep->lock);
  // A new token each time: the answer to a probe that timed out is not
  // taken for this one's.
  ep->probe_wr_id = kProbeWrIdBase | (++ep->probe_seq & 0xffffffffu);
  ep->probe_done = false;
  int err = post_wqe_locked(ep, w, ep->probe_wr_id, false);
  if (err) return err;
  // The NIC answers from its lists at once; completions that come first
  // wait in the pending queue.
  const uint64_t deadline = now_ms() + kProbeTimeoutMs;
  while (!ep->probe_done) {
    if (drain(ep, INT_MAX, nullptr) < 0) return EIO;
    if (!ep->probe_done && now_ms() > deadline) return ETIMEDOUT;
  }
  *info = ep->probe_info;
  return 0;
}

}  // namespace
}  // namespace rhinet

using rhinet::is_rhinet_context;

RHINETDV_EXPORT int rhinetdv_isend(rhinetdv_endpoint* pub,
                                   const rhinetdv_isend_attr* attr,
                                   size_t inlen) {
  rhinetdv_isend_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_isend(rhinet::to_ep(pub), a);
}

RHINETDV_EXPORT int rhinetdv_irecv(rhinetdv_endpoint* pub,
                                   const rhinetdv_irecv_attr* attr,
                                   size_t inlen, uint32_t* handle) {
  rhinetdv_irecv_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_irecv(rhinet::to_ep(pub), a, handle);
}

RHINETDV_EXPORT int rhinetdv_irecv_cancel(rhinetdv_endpoint* pub,
                                          uint32_t handle) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::cancel_irecv(rhinet::to_ep(pub), handle);
}

RHINETDV_EXPORT int rhinetdv_iprobe(rhinetdv_endpoint* pub,
                                    const rhinetdv_irecv_attr* sel,
                                    size_t inlen, rhinetdv_tag_info* info) {
  rhinetdv_irecv_attr a;
  if (!pub || !info || !rhinet::extend(sel, inlen, &a, sizeof(a)))
    return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::probe(rhinet::to_ep(pub), a, info);
}

RHINETDV_EXPORT int rhinetdv_query_tag_caps(rhinetdv_endpoint* pub,
                                            rhinetdv_tag_caps* caps,
                                            size_t inlen) {
  if (!pub || !caps) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  rhinetdv_tag_caps c{};
  c.max_eager = RHN_TAG_EAGER_MAX;
  c.max_irecv = rhinet::to_ep(pub)->max_irecv;
  // A field's bit only for a caller whose struct has the field.
  if (inlen >= offsetof(rhinetdv_tag_caps, max_bitmap_blocks) +
                   sizeof(c.max_bitmap_blocks)) {
    c.comp_mask |= RHINETDV_TAG_CAPS_MASK_XFER;
    c.max_bitmap_blocks = RHN_TAG_BITMAP_BLOCKS;
  }
  memcpy(caps, &c, std::min(inlen, sizeof(c)));
  return 0;
}
