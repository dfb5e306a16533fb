// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Watches (RHINETDV_1.21): a WATCH WQE, one slot, no data, naming one of
// this process's areas by key in remote_key; its firings are counted per
// area key when the endpoint's CQ is read (dv_poll.cpp), as signals are.
#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownWatchFlags =
    RHINETDV_WATCH_SIGNALED | RHINETDV_WATCH_STATUS_WORD;

int post_watch(Endpoint* ep, const rhinetdv_watch_attr& a) {
  if (a.comp_mask || a.group_id > 0xffff || a.area_id > 0xffff ||
      (a.flags & ~kKnownWatchFlags) || !status_word_ok(a.flags, a.status_word))
    return EINVAL;
  if (!op_supported(to_ctx(ep->pub.context), RHN_OP_WATCH)) return EOPNOTSUPP;
  DvWqe w(RHN_OP_WATCH);
  w.h->remote_key = RHN_AREA_KEY(a.group_id, a.area_id);
  put_status_word(w.h, a.flags & RHINETDV_WATCH_STATUS_WORD, a.status_word,
                  a.status_lkey);
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_WATCH_SIGNALED);
}

}  // namespace
}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_watch_area(rhinetdv_endpoint* pub,
                                        const rhinetdv_watch_attr* attr,
                                        size_t inlen) {
  rhinetdv_watch_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_watch(rhinet::to_ep(pub), a);
}

RHINETDV_EXPORT int rhinetdv_watch_count(rhinetdv_endpoint* pub,
                                         uint32_t group_id, uint32_t area_id,
                                         uint64_t* count) {
  if (!pub || !count || group_id > 0xffff || area_id > 0xffff) return EINVAL;
  if (!rhinet::is_rhinet_context(pub->context)) return EOPNOTSUPP;
  rhinet::Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  *count = rhinet::watch_count_locked(ep, RHN_AREA_KEY(group_id, area_id));
  return 0;
}

RHINETDV_EXPORT int rhinetdv_wait_watch(rhinetdv_endpoint* pub,
                                        uint32_t group_id, uint32_t area_id,
                                        uint64_t count, int timeout_ms) {
  if (!pub || group_id > 0xffff || area_id > 0xffff || timeout_ms < -1)
    return EINVAL;
  if (!rhinet::is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::wait_count(rhinet::to_ep(pub), rhinet::watch_count_locked,
                            RHN_AREA_KEY(group_id, area_id), count, timeout_ms);
}
