// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rhinetdv's triggered operations (infiniband/rhinetdv/trigger.h): trigger
// counters as objects of rhinet.ko's uverbs namespace (create, destroy,
// query), adds by one 8-byte store to the process's doorbell page, and the
// trigger slot of a WQE, set on an ibv_qp_ex WR or armed on the endpoint.
// How a triggered WQE keeps its send queue slots: sq.cpp (sq_hold).
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "dv.h"
#include "ioctl_method.h"

namespace rhinet {

namespace {

struct Trigger {
  rhinetdv_trigger pub;  // first: the caller's handle
  uint32_t object = 0;   // the uverbs object's ID
};

Trigger* to_trig(rhinetdv_trigger* t) { return reinterpret_cast<Trigger*>(t); }

bool has_triggers(ibv_context* context) {
  return is_rhinet_context(context) &&
         (to_ctx(context)->attr.caps & RHN_CAP_TRIGGER);
}

}  // namespace

int wqe_trigger_of(ibv_context* context, const rhinetdv_wr_trigger* t,
                   size_t inlen, uint16_t* xflags, rhn_wqe_trigger* slot) {
  constexpr uint64_t kKnown =
      RHINETDV_WR_TRIGGER_COUNTER | RHINETDV_WR_TRIGGER_CHAIN;
  rhinetdv_wr_trigger a{};
  if (!extend(t, inlen, &a, sizeof(a))) return EINVAL;
  if (!has_triggers(context)) return EOPNOTSUPP;
  if (!a.comp_mask || (a.comp_mask & ~kKnown)) return EINVAL;
  *slot = rhn_wqe_trigger{};
  *xflags = 0;
  // The NIC refuses another context's counter too (RHN_SYN_BAD_TRIGGER);
  // a counter of another ibv_context is a mistake found here.
  if (a.comp_mask & RHINETDV_WR_TRIGGER_COUNTER) {
    if (!a.counter || a.counter->context != context) return EINVAL;
    slot->counter = a.counter->handle;
    slot->threshold = a.threshold;
    *xflags |= RHN_WQE_X_TRIGGERED;
  }
  if (a.comp_mask & RHINETDV_WR_TRIGGER_CHAIN) {
    if (!a.chain || a.chain->context != context) return EINVAL;
    slot->chain = a.chain->handle;
    *xflags |= RHN_WQE_X_CHAIN;
  }
  return 0;
}

}  // namespace rhinet

using namespace rhinet;

RHINETDV_EXPORT rhinetdv_trigger* rhinetdv_create_trigger(
    ibv_context* context, const rhinetdv_trigger_init_attr* attr,
    size_t inlen) {
  rhinetdv_trigger_init_attr a{};
  if (attr && !extend(attr, inlen, &a, sizeof(a))) {
    errno = EINVAL;
    return nullptr;
  }
  if (!context || !has_triggers(context)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (a.comp_mask) {
    errno = EINVAL;
    return nullptr;
  }
  auto* t = static_cast<Trigger*>(calloc(1, sizeof(Trigger)));
  if (!t) {
    errno = ENOMEM;
    return nullptr;
  }
  MethodCall<4> call(RHINET_IB_OBJECT_TRIGGER, RHINET_IB_METHOD_TRIGGER_CREATE);
  call.obj(0, RHINET_IB_ATTR_TRIGGER_CREATE_HANDLE, 0);
  call.in(1, RHINET_IB_ATTR_TRIGGER_CREATE_VALUE, &a.value, sizeof(a.value));
  call.out(2, RHINET_IB_ATTR_TRIGGER_CREATE_NIC_HANDLE, &t->pub.handle,
           sizeof(t->pub.handle));
  call.out(3, RHINET_IB_ATTR_TRIGGER_CREATE_KEY, &t->pub.key,
           sizeof(t->pub.key));
  const int err = call.run(context);
  if (err) {
    free(t);
    errno = err;
    return nullptr;
  }
  // The kernel writes the new object's ID back into its attribute.
  t->object = call.object_id(0);
  t->pub.context = context;
  return &t->pub;
}

RHINETDV_EXPORT int rhinetdv_destroy_trigger(rhinetdv_trigger* pub) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Trigger* t = to_trig(pub);
  MethodCall<1> call(RHINET_IB_OBJECT_TRIGGER,
                     RHINET_IB_METHOD_TRIGGER_DESTROY);
  call.obj(0, RHINET_IB_ATTR_TRIGGER_DESTROY_HANDLE, t->object);
  const int err = call.run(pub->context);
  if (err) return err;
  free(t);
  return 0;
}

RHINETDV_EXPORT int rhinetdv_trigger_add(rhinetdv_trigger* pub,
                                         uint32_t addend) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Context* ctx = to_ctx(pub->context);
  // One 8-byte store: the NIC drops a narrower one (triggered.md).
  to_device_barrier();
  *reinterpret_cast<volatile uint64_t*>(ctx->db + RHN_DB_TRIGGER) =
      rhn_db_trigger_value(pub->handle, addend);
  return 0;
}

RHINETDV_EXPORT int rhinetdv_trigger_read(rhinetdv_trigger* pub,
                                          uint64_t* value) {
  if (!pub || !value) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  MethodCall<2> call(RHINET_IB_OBJECT_TRIGGER, RHINET_IB_METHOD_TRIGGER_QUERY);
  call.obj(0, RHINET_IB_ATTR_TRIGGER_QUERY_HANDLE, to_trig(pub)->object);
  call.out(1, RHINET_IB_ATTR_TRIGGER_QUERY_VALUE, value, sizeof(*value));
  return call.run(pub->context);
}

RHINETDV_EXPORT int rhinetdv_wr_set_trigger(ibv_qp_ex* q,
                                            const rhinetdv_wr_trigger* trig,
                                            size_t inlen) {
  if (!q) return EINVAL;
  ibv_context* context = q->qp_base.context;
  if (!is_rhinet_context(context)) return EOPNOTSUPP;
  SendDesc* d = wr_current(q);  // fails the batch if no WR started
  if (!d) return EINVAL;
  const int err = wqe_trigger_of(context, trig, inlen, &d->xflags, &d->trigger);
  if (err) {
    d->xflags = 0;
    wr_fail(q, err);
  }
  return err;
}

RHINETDV_EXPORT int rhinetdv_set_trigger(rhinetdv_endpoint* pub,
                                         const rhinetdv_wr_trigger* trig,
                                         size_t inlen) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  if (!trig) {
    ep->trig_xflags = 0;
    return 0;
  }
  uint16_t xflags = 0;
  rhn_wqe_trigger slot{};
  const int err = wqe_trigger_of(pub->context, trig, inlen, &xflags, &slot);
  if (err) return err;
  ep->trig_xflags = xflags;
  ep->trig = slot;
  return 0;
}

// RHINETDV_1.17: a remote increment on an ibv_qp_ex. The operands ride in
// the atomics' fields of the WR's description (post.cpp builds them).
RHINETDV_EXPORT int rhinetdv_wr_trigger_add(ibv_qp_ex* q, uint32_t handle,
                                            uint32_t key, uint64_t addend) {
  if (!q) return EINVAL;
  ibv_context* context = q->qp_base.context;
  if (!is_rhinet_context(context)) return EOPNOTSUPP;
  SendDesc* d = wr_begin_private(q, kWrTriggerAdd);
  // The answer needs a reliable channel: RC only.
  int err = 0;
  if (q->qp_base.qp_type != IBV_QPT_RC || !has_triggers(context))
    err = EOPNOTSUPP;
  d->compare_add = addend;
  d->swap = uint64_t{handle} | uint64_t{key} << 32;
  if (err) wr_fail(q, err);
  return err;
}

// RHINETDV_1.17: the endpoint form. Always signaled: the operand bytes of
// the WQE are where a status word's reference would go.
RHINETDV_EXPORT int rhinetdv_trigger_add_remote(
    rhinetdv_endpoint* pub, const rhinetdv_trigger_add_attr* attr,
    size_t inlen) {
  rhinetdv_trigger_add_attr a;
  if (const int err = take_attr(pub, attr, inlen, &a)) return err;
  if (a.comp_mask || a.reserved0 || a.reserved1 ||
      (reinterpret_cast<uintptr_t>(a.result) & 7))
    return EINVAL;
  const Context* ctx = to_ctx(pub->context);
  if (!op_supported(ctx, RHN_OP_TRIGGER_ADD)) return EOPNOTSUPP;
  DvWqe w(RHN_OP_TRIGGER_ADD);
  rhn_send_wqe* h = w.h;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  h->u.trigger.addend = a.addend;
  h->u.trigger.handle = a.handle;
  h->u.trigger.key = a.key;
  if (a.result)
    rhn_wqe_put_sge(w.buf, 0, reinterpret_cast<uintptr_t>(a.result), 8,
                    a.result_lkey);
  w.data = rhn_wqe_set_sges(w.buf, a.result ? 1 : 0);
  Endpoint* ep = to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, a.wr_id, true);
}
