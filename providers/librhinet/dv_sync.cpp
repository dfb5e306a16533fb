// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Locks and barriers (RHINETDV_1.5): LOCK, UNLOCK, BARRIER, one slot, no
// data, to the manager endpoint; remote_addr = the ID, imm_data = a
// barrier's count.
#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kKnownSyncFlags =
    RHINETDV_SYNC_SIGNALED | RHINETDV_SYNC_STATUS_WORD;

// LOCK, UNLOCK, BARRIER: one slot, no data, to the manager
// endpoint; remote_addr = the ID, imm_data = a barrier's count.
int post_sync(Endpoint* ep, const rhinetdv_sync_attr& a, uint8_t opcode) {
  const bool barrier = opcode == RHN_OP_BARRIER;
  if (a.comp_mask || a.reserved0 || a.reserved1 ||
      (a.flags & ~kKnownSyncFlags) ||
      (barrier ? !a.count || a.count > RHINETDV_BARRIER_MAX_COUNT
               : a.count != 0) ||
      !status_word_ok(a.flags, a.status_word))
    return EINVAL;
  if (!op_supported(to_ctx(ep->pub.context), opcode)) return EOPNOTSUPP;
  DvWqe w(opcode);
  rhn_send_wqe* h = w.h;
  h->dst_node = a.manager_node;
  h->dst_qpn = a.manager_endpoint;
  h->remote_addr = a.id;
  h->imm_data = a.count;
  put_status_word(h, a.flags & RHINETDV_SYNC_STATUS_WORD, a.status_word,
                  a.status_lkey);
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, a.flags & RHINETDV_SYNC_SIGNALED);
}

int post_sync_pub(rhinetdv_endpoint* pub, const rhinetdv_sync_attr* attr,
                  size_t inlen, uint8_t opcode) {
  rhinetdv_sync_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  return rhinet::post_sync(rhinet::to_ep(pub), a, opcode);
}

}  // namespace
}  // namespace rhinet

RHINETDV_EXPORT int rhinetdv_lock(rhinetdv_endpoint* pub,
                                  const rhinetdv_sync_attr* attr,
                                  size_t inlen) {
  return rhinet::post_sync_pub(pub, attr, inlen, RHN_OP_LOCK);
}

RHINETDV_EXPORT int rhinetdv_unlock(rhinetdv_endpoint* pub,
                                    const rhinetdv_sync_attr* attr,
                                    size_t inlen) {
  return rhinet::post_sync_pub(pub, attr, inlen, RHN_OP_UNLOCK);
}

RHINETDV_EXPORT int rhinetdv_barrier(rhinetdv_endpoint* pub,
                                     const rhinetdv_sync_attr* attr,
                                     size_t inlen) {
  return rhinet::post_sync_pub(pub, attr, inlen, RHN_OP_BARRIER);
}
