// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Multicast (RHINETDV_1.5, 1.6): to a destination list the WQE's last
// slot names, or to a switch group (the group is the WQE's destination
// node); a shared region's update is the same work request (dv_share.cpp).
#include <cstring>

#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownMcastFlags =
    RHINETDV_MCAST_SIGNALED | RHINETDV_MCAST_STATUS_WORD |
    RHINETDV_MCAST_INLINE | RHINETDV_MCAST_SIGNAL;

}  // namespace

// MCAST_LIST: a PUSH by area whose last slot names the caller's
// destination list; a partial mode's descriptor is the slot before it,
// inline bytes the slots after the base.
// Both multicasts: to a destination list (sequential: the list's slot ends
// the WQE) or to a switch group (simultaneous: the group is the WQE's
// destination node); and a shared region's update, which the NIC
// multicasts along its directory (no destination in the WQE, no signal).
int post_mcast(Endpoint* ep, const rhinetdv_mcast_attr& a, uint8_t opcode,
               uint16_t switch_group) {
  const bool partial = a.mode != RHINETDV_MODE_BASIC;
  const bool inl = a.flags & RHINETDV_MCAST_INLINE;
  const bool list = opcode == RHN_OP_MCAST_LIST;
  const bool share = opcode == RHN_OP_SHARE_UPDATE;
  if (a.comp_mask || a.reserved || (a.flags & ~kKnownMcastFlags) ||
      (share && (a.flags & RHINETDV_MCAST_SIGNAL)) ||
      (list && (!a.num_dests || a.num_dests > RHINETDV_MCAST_MAX_DESTS ||
                !a.dests || (reinterpret_cast<uintptr_t>(a.dests) & 3))) ||
      (inl && (partial || a.length > ep->max_inline ||
               1 + rhn_wqe_units_for_inline(a.length) + (list ? 1 : 0) >
                   RHN_WQE_MAX_SLOTS)) ||
      (!inl && a.length && !a.addr) ||
      !status_word_ok(a.flags, a.status_word) || !mode_taken(opcode, a.mode) ||
      a.area_id > 0xffff || a.group_id > 0xffff ||
      (!(a.flags & RHINETDV_MCAST_SIGNAL) && a.signal))
    return EINVAL;
  const Context* ctx = to_ctx(ep->pub.context);
  if (!op_supported(ctx, opcode)) return EOPNOTSUPP;
  if (!in_groups(ctx, a.group_id)) return EPERM;

  DvWqe w(opcode);
  rhn_send_wqe* h = w.h;
  w.data = put_data(w.buf, a.addr, a.length, a.lkey, a.flags, a.status_word,
                    a.status_lkey);
  if (partial) {
    rhn_wqe_xfer* d = w.partial(a.mode);
    switch (a.mode) {
      case RHINETDV_MODE_STRIDE:
        if (!a.block || !a.count || a.local_stride < a.block ||
            a.remote_stride < a.block || a.block > a.length ||
            (a.count > 1 &&
             a.local_stride > (a.length - a.block) / (a.count - 1u)))
          return EINVAL;
        d->block = a.block;
        d->count = a.count;
        d->local_stride = a.local_stride;
        d->remote_stride = a.remote_stride;
        break;
      case RHINETDV_MODE_BITMAP:
        if (!a.block || !a.bitmap || !a.length) return EINVAL;
        d->block = a.block;
        d->bitmap_addr = reinterpret_cast<uintptr_t>(a.bitmap);
        d->bitmap_lkey = a.bitmap_lkey;
        break;
      default: {  // DIFF: the buffer's copy inside the twin
        if (!a.twin || a.twin->context->device != ep->pub.context->device)
          return EINVAL;
        const uint64_t size = to_dm(a.twin)->length;
        if (a.twin_offset > size || a.length > size - a.twin_offset)
          return EINVAL;
        d->twin = to_dm(a.twin)->twin_handle;
        d->twin_offset = a.twin_offset;
        break;
      }
    }
  }
  rhn_wqe_mcast m{};
  if (list) {  // the destination list's slot ends the WQE
    m.list_addr = reinterpret_cast<uintptr_t>(a.dests);
    m.list_lkey = a.dests_lkey;
    m.count = a.num_dests;
    w.tail.mcast = &m;
  } else {
    h->dst_node = switch_group;  // 0 for an update
  }
  h->flags |= RHN_WQE_F_AREA;
  if (a.flags & RHINETDV_MCAST_SIGNAL) {
    h->flags |= RHN_WQE_F_SIGNAL_REMOTE;
    h->imm_data = a.signal;
  }
  h->remote_key = RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = a.offset;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_MCAST_SIGNALED);
}

}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_mcast_list(rhinetdv_endpoint* pub,
                                        const rhinetdv_mcast_attr* attr,
                                        size_t inlen) {
  rhinetdv_mcast_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_mcast(rhinet::to_ep(pub), a, RHN_OP_MCAST_LIST);
}

RHINETDV_EXPORT int rhinetdv_mcast_switch(
    rhinetdv_endpoint* pub, const rhinetdv_mcast_switch_attr* attr,
    size_t inlen) {
  rhinetdv_mcast_switch_attr s;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &s)) return err;
  if (s.reserved0 || s.switch_group < RHINETDV_MCAST_SWITCH_FIRST ||
      s.switch_group > RHINETDV_MCAST_SWITCH_LAST)
    return EINVAL;
  // The same work request as a list multicast's, without the list.
  return rhinet::post_mcast(rhinet::to_ep(pub), rhinet::mcast_request_of(s),
                            RHN_OP_MCAST_SWITCH, s.switch_group);
}
