// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Shared regions with a home and a directory (RHINETDV_1.7): SUBSCRIBE
// (one SGE: the caller's copy, TWIN's descriptor after it) and UNSUBSCRIBE
// (no data), both by area to the home endpoint; an update is a multicast
// the NIC sends along its directory.
#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownShareFlags =
    RHINETDV_SHARE_SIGNALED | RHINETDV_SHARE_STATUS_WORD;

// SUBSCRIBE (one SGE: the caller's copy, TWIN's descriptor after it) and
// UNSUBSCRIBE (no data), both by area to the home endpoint. @a is
// zero-filled beyond an unsubscribe's fields.
int post_share(Endpoint* ep, const rhinetdv_subscribe_attr& a, bool subscribe) {
  const bool twin = a.mode == RHINETDV_MODE_TWIN;
  if (a.comp_mask || a.reserved0 || a.reserved1 ||
      (a.flags & ~kKnownShareFlags) ||
      !status_word_ok(a.flags, a.status_word) || a.area_id > 0xffff ||
      a.group_id > 0xffff)
    return EINVAL;
  if (subscribe &&
      (!a.addr || !a.length || a.length > RHINETDV_SHARE_MAX_BYTES ||
       !mode_taken(RHN_OP_SUBSCRIBE, a.mode) ||
       (twin &&
        (!a.twin || a.twin->context->device != ep->pub.context->device ||
         a.twin_offset > to_dm(a.twin)->length ||
         a.length > to_dm(a.twin)->length - a.twin_offset)) ||
       (!twin && (a.twin || a.twin_offset))))
    return EINVAL;
  const Context* ctx = to_ctx(ep->pub.context);
  const uint8_t opcode = subscribe ? RHN_OP_SUBSCRIBE : RHN_OP_UNSUBSCRIBE;
  if (!op_supported(ctx, opcode)) return EOPNOTSUPP;
  if (!in_groups(ctx, a.group_id)) return EPERM;

  DvWqe w(opcode);
  rhn_send_wqe* h = w.h;
  if (subscribe) {
    rhn_wqe_put_sge(w.buf, 0, reinterpret_cast<uintptr_t>(a.addr), a.length,
                    a.lkey);
    w.data = rhn_wqe_set_sges(w.buf, 1);
    if (twin) {
      rhn_wqe_xfer* d = w.partial(RHN_XFER_TWIN);
      d->twin = to_dm(a.twin)->twin_handle;
      d->twin_offset = a.twin_offset;
    }
  }
  put_status_word(h, a.flags & RHINETDV_SHARE_STATUS_WORD, a.status_word,
                  a.status_lkey);
  h->flags |= RHN_WQE_F_AREA;
  h->dst_node = a.home_node;
  h->dst_qpn = a.home_endpoint;
  h->remote_key = RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = a.offset;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_SHARE_SIGNALED);
}

}  // namespace
}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_subscribe(rhinetdv_endpoint* pub,
                                       const rhinetdv_subscribe_attr* attr,
                                       size_t inlen) {
  rhinetdv_subscribe_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_share(rhinet::to_ep(pub), a, true);
}

RHINETDV_EXPORT int rhinetdv_unsubscribe(rhinetdv_endpoint* pub,
                                         const rhinetdv_unsubscribe_attr* attr,
                                         size_t inlen) {
  rhinetdv_unsubscribe_attr u;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &u)) return err;
  // A subscribe's request without its data.
  rhinetdv_subscribe_attr a{};
  a.comp_mask = u.comp_mask;
  a.wr_id = u.wr_id;
  a.home_node = u.home_node;
  a.reserved0 = u.reserved0;
  a.home_endpoint = u.home_endpoint;
  a.group_id = u.group_id;
  a.area_id = u.area_id;
  a.offset = u.offset;
  a.flags = u.flags;
  a.status_lkey = u.status_lkey;
  a.status_word = u.status_word;
  return rhinet::post_share(rhinet::to_ep(pub), a, false);
}

RHINETDV_EXPORT int rhinetdv_share_update(
    rhinetdv_endpoint* pub, const rhinetdv_share_update_attr* attr,
    size_t inlen) {
  rhinetdv_share_update_attr s;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &s)) return err;
  // A multicast's work request; the NIC takes the members from its
  // directory of the region.
  return rhinet::post_mcast(rhinet::to_ep(pub), rhinet::mcast_request_of(s),
                            RHN_OP_SHARE_UPDATE);
}
