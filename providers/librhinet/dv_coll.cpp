// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Collectives executed by the NICs (RHINETDV_1.10).
#include <cstring>

#include "dv.h"

// RHINETDV_1.10: this rank's part of a collective (two slots: the base and
// the collective's description). The NIC checks the keys and what only it
// can know (the communicator, the other ranks); what is plainly wrong is
// refused here.
RHINETDV_EXPORT int rhinetdv_collective(rhinetdv_endpoint* pub,
                                        const rhinetdv_coll_attr* attr,
                                        size_t inlen) {
  rhinetdv_coll_attr a;
  if (const int err = rhinet::take_attr(pub, attr, inlen, &a)) return err;
  constexpr uint32_t kKnownFlags = RHINETDV_COLL_SIGNALED |
                                   RHINETDV_COLL_STATUS_WORD |
                                   RHINETDV_COLL_IN_SWITCH;
  const uint32_t size = a.type == RHINETDV_COLL_INT64 ||
                                a.type == RHINETDV_COLL_UINT64 ||
                                a.type == RHINETDV_COLL_DOUBLE
                            ? 8
                            : 4;
  const bool fl =
      a.type == RHINETDV_COLL_FLOAT || a.type == RHINETDV_COLL_DOUBLE;
  const bool reduces =
      a.op == RHINETDV_COLL_ALLREDUCE || a.op == RHINETDV_COLL_REDUCE;
  const bool rooted =
      a.op == RHINETDV_COLL_REDUCE || a.op == RHINETDV_COLL_BCAST;
  const bool in_switch = a.flags & RHINETDV_COLL_IN_SWITCH;
  if (a.comp_mask || a.reserved || (a.flags & ~kKnownFlags) ||
      (in_switch && (a.radix || a.op == RHINETDV_COLL_REDUCE ||
                     a.op == RHINETDV_COLL_BCAST)) ||
      a.op < RHINETDV_COLL_ALLREDUCE || a.op > RHINETDV_COLL_BARRIER ||
      a.type > RHINETDV_COLL_DOUBLE || a.reduce > RHINETDV_COLL_BXOR ||
      (reduces && fl && a.reduce > RHINETDV_COLL_MAX) || a.group_id > 0xffff ||
      a.comm_id > 0xffff || !a.nranks || a.nranks > RHINETDV_COLL_MAX_RANKS ||
      a.rank >= a.nranks || (rooted && a.root >= a.nranks) ||
      a.radix > RHINETDV_COLL_MAX_RADIX || a.seg_size > RHN_WIRE_MTU ||
      a.seg_size % size || a.length > UINT32_MAX || a.length % size ||
      (a.op == RHINETDV_COLL_BARRIER && a.length) || !a.members ||
      !rhinet::status_word_ok(a.flags, a.status_word))
    return EINVAL;
  const rhinet::Context* ctx = rhinet::to_ctx(pub->context);
  if (!rhinet::op_supported(ctx, RHN_OP_COLLECTIVE)) return EOPNOTSUPP;
  if (in_switch && !(ctx->attr.caps & RHN_CAP_COLL_SWITCH)) return EOPNOTSUPP;
  if (!rhinet::in_groups(ctx, a.group_id)) return EPERM;
  rhinet::DvWqe w(RHN_OP_COLLECTIVE);
  rhn_send_wqe* h = w.h;
  h->remote_key = RHN_AREA_KEY(a.group_id, a.comm_id);
  rhinet::put_status_word(h, a.flags & RHINETDV_COLL_STATUS_WORD, a.status_word,
                          a.status_lkey);
  rhn_wqe_coll desc{};  // the WQE's last slot
  rhn_wqe_coll* x = &desc;
  w.tail.coll = &desc;
  x->op = static_cast<uint8_t>(a.op);
  x->reduce = static_cast<uint8_t>(a.reduce);
  x->type = static_cast<uint8_t>(a.type);
  x->radix = static_cast<uint8_t>(a.radix);
  x->rank = static_cast<uint16_t>(a.rank);
  x->root = static_cast<uint16_t>(a.root);
  x->nranks = static_cast<uint16_t>(a.nranks);
  x->seg_size = static_cast<uint16_t>(a.seg_size);
  x->length = static_cast<uint32_t>(a.length);
  x->send_addr = reinterpret_cast<uintptr_t>(a.send);
  x->send_lkey = a.send_lkey;
  x->recv_addr = reinterpret_cast<uintptr_t>(a.recv);
  x->recv_lkey = a.recv_lkey;
  x->members_addr = reinterpret_cast<uintptr_t>(a.members);
  x->members_lkey = a.members_lkey;
  x->flags = in_switch ? uint8_t{RHN_COLL_F_IN_SWITCH} : uint8_t{0};
  rhinet::Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  return rhinet::post_wqe_locked(ep, w, a.wr_id,
                                 a.flags & RHINETDV_COLL_SIGNALED);
}
