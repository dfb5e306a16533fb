// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Remote pin-down (RHINETDV_1.3): PD_REQUEST and PD_RELEASE WQEs,
// addressed as a PULL by area or key, the length in imm_data, no data.
#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownPinFlags =
    RHINETDV_PIN_SIGNALED | RHINETDV_PIN_STATUS_WORD | RHINETDV_PIN_BY_KEY;

// pd_req / pd_release: addressed as a PULL by area or key, the
// length in imm_data, no data; a status word as for PUSH.
int post_pin(Endpoint* ep, const rhinetdv_pin_attr& a, bool request) {
  const bool by_key = a.flags & RHINETDV_PIN_BY_KEY;
  if (a.comp_mask || a.reserved0 || (a.flags & ~kKnownPinFlags) || !a.length ||
      !status_word_ok(a.flags, a.status_word) ||
      (!by_key && (a.area_id > 0xffff || a.group_id > 0xffff)))
    return EINVAL;
  const Context* ctx = to_ctx(ep->pub.context);
  if (!pins_on_demand(ctx)) return EOPNOTSUPP;
  if (!by_key && !in_groups(ctx, a.group_id)) return EPERM;
  DvWqe w(request ? RHN_OP_PD_REQUEST : RHN_OP_PD_RELEASE);
  rhn_send_wqe* h = w.h;
  if (!by_key) h->flags |= RHN_WQE_F_AREA;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  h->remote_key = by_key ? a.rkey : RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = by_key ? a.remote_addr : a.offset;
  h->imm_data = a.length;
  put_status_word(h, a.flags & RHINETDV_PIN_STATUS_WORD, a.status_word,
                  a.status_lkey);
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_PIN_SIGNALED);
}

}  // namespace
}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_pd_req(rhinetdv_endpoint* pub,
                                    const rhinetdv_pin_attr* attr,
                                    size_t inlen) {
  rhinetdv_pin_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_pin(rhinet::to_ep(pub), a, true);
}

RHINETDV_EXPORT int rhinetdv_pd_release(rhinetdv_endpoint* pub,
                                        const rhinetdv_pin_attr* attr,
                                        size_t inlen) {
  rhinetdv_pin_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_pin(rhinet::to_ep(pub), a, false);
}
