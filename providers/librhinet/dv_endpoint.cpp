// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The endpoint: its QP and CQ, the device's direct-verbs view, and the one
// path every family's WQE takes to the send queue.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>

#include "dv.h"

namespace rhinet {
namespace {

constexpr uint32_t kDefaultOutstanding = 64;

// CQEs an endpoint's CQ holds beyond one per SQ slot: signals from peers
// wait there until the process counts them.
constexpr uint32_t kSignalRoom = 4096;

constexpr uint32_t kDefaultIrecv = 256;

// Endpoint limits: WQEs of up to max_inline bytes, SQ and CQ of one depth.
uint32_t ep_slots_per_wqe(const Context* ctx) {
  return rhn_wqe_slots(1, ctx->attr.max_inline, 0);
}

uint32_t ep_max_outstanding(const Context* ctx) {
  const uint32_t log = ctx->attr.max_wq_log_depth < ctx->attr.max_cq_log_depth
                           ? ctx->attr.max_wq_log_depth
                           : ctx->attr.max_cq_log_depth;
  return (1u << log) / ep_slots_per_wqe(ctx);
}

int ib_access(uint32_t access) {
  // The areas' own access flags decide the rest.
  if (!access)
    access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
             IBV_ACCESS_REMOTE_ATOMIC;
  return static_cast<int>(access);
}

void destroy_parts(Endpoint* ep) {
  if (ep->ibqp) ibv_destroy_qp(ep->ibqp);
  if (ep->cq) ibv_destroy_cq(ep->cq);
  if (ep->channel) ibv_destroy_comp_channel(ep->channel);
  free(ep->pending);
  free(ep->irecvs);
  ep->~Endpoint();
  free(ep);
}

}  // namespace

int post_wqe_locked(Endpoint* ep, DvWqe& w, uint64_t wr_id, bool wanted) {
  Qp* qp = ep->qp;
  rhn_send_wqe* h = w.h;
  if (ep->trig_xflags) {  // rhinetdv_set_trigger armed the endpoint
    w.tail.xflags = ep->trig_xflags;
    w.tail.trigger = &ep->trig;
    // Its CQE is what frees its index (sq_hold): always signaled.
    h->flags |= RHN_WQE_F_SIGNALED;
  }
  const uint32_t slots = rhn_wqe_finish(w.buf, w.data, &w.tail);
  if (!slots) return EINVAL;
  const uint32_t depth = 1u << qp->sq_log;
  // Room: completions already written by the NIC free slots. Polling takes
  // the SQ lock itself, so it is let go meanwhile; only this endpoint posts
  // here, under its lock, so the room found stays.
  std::unique_lock<std::mutex> gs(qp->sq_lock);
  while (sq_room(qp) < slots) {
    const uint32_t room = sq_room(qp);
    gs.unlock();
    if (drain(ep, INT_MAX, nullptr) < 0) return EIO;
    gs.lock();
    if (sq_room(qp) == room) return ENOMEM;
  }
  if (wanted || (h->flags & RHN_WQE_F_SIGNALED) ||
      qp->sq_producer + slots - ep->last_signaled >= depth / 2) {
    h->flags |= RHN_WQE_F_SIGNALED;
    ep->last_signaled = qp->sq_producer + slots;
  }
  uint32_t first = 0;
  const int err = sq_write(qp, w.buf, slots, wr_id, wanted, &first);
  if (err) return err;
  if (ep->trig_xflags & RHN_WQE_X_TRIGGERED) {
    const int held = sq_hold(qp, first);
    if (held) {
      sq_rollback(qp, first);
      return held;
    }
  }
  ep->trig_xflags = 0;  // armed for one operation
  sq_publish(qp);
  return 0;
}

bool op_supported(const Context* ctx, uint8_t opcode) {
  const rhn_op_desc* d = rhn_op_row(opcode);
  return d && (!d->cap || (ctx->attr.caps & d->cap));
}

bool mode_taken(uint8_t opcode, uint32_t mode) {
  return rhn_op_takes_mode(opcode, mode);
}

bool extend(const void* in, size_t inlen, void* out, size_t outlen) {
  if (!in || inlen < sizeof(uint64_t)) return false;
  const auto* b = static_cast<const uint8_t*>(in);
  for (size_t i = outlen; i < inlen; i++)
    if (b[i]) return false;
  memset(out, 0, outlen);
  memcpy(out, in, inlen < outlen ? inlen : outlen);
  return true;
}

}  // namespace rhinet

using rhinet::Context;
using rhinet::Endpoint;
using rhinet::is_rhinet_context;
using rhinet::to_ctx;

constexpr bool same(int dv, int nic) { return dv == nic; }
static_assert(same(RHINETDV_SYN_BAD_KEY, RHN_SYN_BAD_KEY) &&
                  same(RHINETDV_SYN_PD_MISMATCH, RHN_SYN_PD_MISMATCH) &&
                  same(RHINETDV_SYN_ACCESS_RIGHTS, RHN_SYN_ACCESS_RIGHTS) &&
                  same(RHINETDV_SYN_BOUNDS, RHN_SYN_BOUNDS) &&
                  same(RHINETDV_SYN_BAD_AREA, RHN_SYN_BAD_AREA) &&
                  same(RHINETDV_SYN_BAD_ENDPOINT, RHN_SYN_BAD_QP) &&
                  same(RHINETDV_SYN_LENGTH, RHN_SYN_LENGTH) &&
                  same(RHINETDV_SYN_BAD_WQE, RHN_SYN_BAD_WQE) &&
                  same(RHINETDV_SYN_DMA, RHN_SYN_DMA) &&
                  same(RHINETDV_SYN_RETRY_EXCEEDED, RHN_SYN_RETRY_EXCEEDED) &&
                  same(RHINETDV_SYN_ALIGNMENT, RHN_SYN_ALIGNMENT) &&
                  same(RHINETDV_SYN_FLUSHED, RHN_SYN_FLUSHED) &&
                  same(RHINETDV_SYN_BAD_XFER, RHN_SYN_BAD_XFER) &&
                  same(RHINETDV_SYN_BAD_GROUP, RHN_SYN_BAD_GROUP) &&
                  same(RHINETDV_SYN_NOT_PINNED, RHN_SYN_NOT_PINNED) &&
                  same(RHINETDV_SYN_BUSY, RHN_SYN_BUSY) &&
                  same(RHINETDV_SYN_MEMBER_LOST, RHN_SYN_MEMBER_LOST) &&
                  same(RHINETDV_SYN_NOT_HELD, RHN_SYN_NOT_HELD) &&
                  same(RHINETDV_SYN_NO_MCAST_GROUP, RHN_SYN_NO_MCAST_GROUP) &&
                  same(RHINETDV_SYN_NOT_SUBSCRIBED, RHN_SYN_NOT_SUBSCRIBED) &&
                  same(RHINETDV_SYN_COLL_MISMATCH, RHN_SYN_COLL_MISMATCH) &&
                  same(RHINETDV_SYN_COLL_NO_ROOM, RHN_SYN_COLL_NO_ROOM) &&
                  same(RHINETDV_SYN_COLL_NO_SWITCH, RHN_SYN_COLL_NO_SWITCH),
              "rhinetdv syndromes are the NIC's");
static_assert(same(RHINETDV_MODE_BASIC, RHN_XFER_BASIC) &&
                  same(RHINETDV_MODE_TWIN, RHN_XFER_TWIN) &&
                  same(RHINETDV_MODE_DIFF, RHN_XFER_DIFF) &&
                  same(RHINETDV_MODE_BITMAP, RHN_XFER_BITMAP) &&
                  same(RHINETDV_MODE_STRIDE, RHN_XFER_STRIDE),
              "rhinetdv modes are the NIC's");
static_assert(RHINETDV_STATUS_WORD_DONE == RHN_STATUS_WORD_DONE &&
                  RHINETDV_STATUS_WORD_RUNNING == RHN_STATUS_WORD_RUNNING &&
                  RHINETDV_STATUS_WORD_STATUS_SHIFT ==
                      RHN_STATUS_WORD_STATUS_SHIFT &&
                  RHINETDV_STATUS_WORD_SYNDROME_SHIFT ==
                      RHN_STATUS_WORD_SYNDROME_SHIFT &&
                  RHINETDV_STATUS_WORD_LEN_MASK == RHN_STATUS_WORD_LEN_MASK,
              "rhinetdv status words are the NIC's");
static_assert(sizeof(rhinetdv_mcast_dest) == sizeof(rhn_mcast_dest) &&
                  offsetof(rhinetdv_mcast_dest, node) ==
                      offsetof(rhn_mcast_dest, node) &&
                  offsetof(rhinetdv_mcast_dest, endpoint) ==
                      offsetof(rhn_mcast_dest, qpn) &&
                  RHINETDV_MCAST_MAX_DESTS == RHN_MCAST_MAX_DESTS &&
                  RHINETDV_BARRIER_MAX_COUNT == RHN_BARRIER_MAX_MEMBERS,
              "rhinetdv destination lists and barriers are the NIC's");
static_assert(same(RHINETDV_COLL_ALLREDUCE, RHN_COLL_ALLREDUCE) &&
                  same(RHINETDV_COLL_BARRIER, RHN_COLL_BARRIER) &&
                  same(RHINETDV_COLL_SUM, RHN_COLL_SUM) &&
                  same(RHINETDV_COLL_BXOR, RHN_COLL_BXOR) &&
                  same(RHINETDV_COLL_INT32, RHN_COLL_INT32) &&
                  same(RHINETDV_COLL_DOUBLE, RHN_COLL_DOUBLE) &&
                  RHINETDV_COLL_MAX_RANKS == RHN_COLL_MAX_RANKS &&
                  RHINETDV_COLL_MAX_LOCAL == RHN_COLL_MAX_LOCAL &&
                  RHINETDV_COLL_MAX_RADIX == RHN_COLL_MAX_RADIX,
              "rhinetdv collectives are the NIC's");
static_assert(RHINETDV_SHARE_MAX_BYTES == RHN_SHARE_MAX_BYTES &&
                  RHINETDV_SHARE_MAX_MEMBERS == RHN_SHARE_MAX_MEMBERS,
              "rhinetdv shared-region limits are the NIC's");

RHINETDV_EXPORT int rhinetdv_query_device(ibv_context* context,
                                          rhinetdv_device_attr* attr,
                                          size_t inlen) {
  if (!attr) return EINVAL;
  if (!is_rhinet_context(context)) return EOPNOTSUPP;
  const Context* ctx = to_ctx(context);
  rhinetdv_device_attr a{};
  a.node_id = ctx->attr.node_id;
  a.caps = RHINETDV_CAP_STATUS_WORD | RHINETDV_CAP_XFER_EX;
  if (ctx->attr.caps & RHN_CAP_TAG)
    a.caps |= RHINETDV_CAP_TAG | RHINETDV_CAP_TAG_XFER;
  if (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_GROUPS)
    a.caps |= RHINETDV_CAP_TWIN | RHINETDV_CAP_GROUPS;
  if (ctx->attr.caps & RHN_CAP_ENDPOINT) a.caps |= RHINETDV_CAP_ENDPOINT;
  if (rhinet::pins_on_demand(ctx)) a.caps |= RHINETDV_CAP_PIN_ON_DEMAND;
  // The NIC's bits reach us unchanged (rhinet.ko copies RHN_REG_CAPS).
  if ((ctx->attr.caps & RHN_CAP_SYNC) && (ctx->attr.caps & RHN_CAP_ENDPOINT))
    a.caps |= RHINETDV_CAP_SYNC;
  if ((ctx->attr.caps & RHN_CAP_MCAST_LIST) &&
      (ctx->attr.caps & RHN_CAP_ENDPOINT) &&
      (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    a.caps |= RHINETDV_CAP_MCAST_LIST;
  if ((ctx->attr.caps & RHN_CAP_MCAST_SWITCH) &&
      (ctx->attr.caps & RHN_CAP_ENDPOINT) &&
      (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    a.caps |= RHINETDV_CAP_MCAST_SWITCH;
  if ((ctx->attr.caps & RHN_CAP_SHARE) && (ctx->attr.caps & RHN_CAP_ENDPOINT) &&
      (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    a.caps |= RHINETDV_CAP_SHARE;
  if ((ctx->attr.caps & RHN_CAP_AREA) &&
      (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS) && ctx->attr.max_areas)
    a.caps |= RHINETDV_CAP_AREA;
  if ((ctx->attr.caps & RHN_CAP_ATOMIC) && (ctx->attr.caps & RHN_CAP_ENDPOINT))
    a.caps |= RHINETDV_CAP_ATOMIC;
  if ((ctx->attr.caps & RHN_CAP_ATOMIC_EXT) &&
      (ctx->attr.caps & RHN_CAP_ENDPOINT))
    a.caps |= RHINETDV_CAP_ATOMIC_EXT;
  if ((ctx->attr.caps & RHN_CAP_COLLECTIVE) &&
      (ctx->attr.caps & RHN_CAP_ENDPOINT))
    a.caps |= RHINETDV_CAP_COLLECTIVE;
  if ((a.caps & RHINETDV_CAP_COLLECTIVE) &&
      (ctx->attr.caps & RHN_CAP_COLL_SWITCH))
    a.caps |= RHINETDV_CAP_COLL_IN_SWITCH;
  if (ctx->attr.caps & RHN_CAP_TRIGGER) a.caps |= RHINETDV_CAP_TRIGGER;
  // A watch names an area of the endpoint's own process.
  if ((ctx->attr.caps & RHN_CAP_WATCH) && (ctx->attr.caps & RHN_CAP_ENDPOINT) &&
      (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    a.caps |= RHINETDV_CAP_WATCH;
  a.max_areas = ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS
                    ? ctx->attr.max_areas
                    : 0;
  a.max_inline = ctx->attr.max_inline;
  a.max_outstanding = rhinet::ep_max_outstanding(ctx);
  memcpy(attr, &a, inlen < sizeof(a) ? inlen : sizeof(a));
  return 0;
}

namespace {

constexpr uint64_t kEndpointMask = RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV |
                                   RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS;

// What an endpoint of @attr is made of: its QP's and CQ's sizes; 0 or
// EINVAL.
struct EndpointGeometry {
  uint32_t max = 0;  // operations in flight
  uint32_t cq_entries = 0;
  ibv_qp_init_attr_ex qa{};
};

int endpoint_geometry(Context* ctx, const rhinetdv_endpoint_init_attr* attr,
                      EndpointGeometry* g) {
  const uint32_t max = attr->max_outstanding ? attr->max_outstanding
                                             : rhinet::kDefaultOutstanding;
  uint32_t max_irecv = rhinet::kDefaultIrecv;
  if ((attr->comp_mask & RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV) &&
      attr->max_irecv)
    max_irecv = attr->max_irecv;
  if ((attr->comp_mask & ~kEndpointMask) ||
      ((attr->comp_mask & RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV) &&
       (attr->reserved || max_irecv > (1u << ctx->attr.max_wq_log_depth) ||
        max_irecv > 16384)) ||
      (attr->access &
       ~static_cast<uint32_t>(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC)) ||
      max > rhinet::ep_max_outstanding(ctx))
    return EINVAL;
  const uint32_t slots = rhinet::ep_slots_per_wqe(ctx);
  // The CQ holds a CQE per SQ slot: never more completions than WQEs.
  const uint32_t sq_slots = 1u << rhinet::log2_ceil(max * slots);
  const uint32_t rq_depth = 1u << rhinet::log2_ceil(max_irecv);
  g->max = max;
  g->cq_entries = std::min<uint32_t>(sq_slots + rq_depth + rhinet::kSignalRoom,
                                     1u << ctx->attr.max_cq_log_depth);
  g->qa.qp_type = IBV_QPT_DRIVER;
  g->qa.cap.max_send_wr = max;
  g->qa.cap.max_recv_wr = rq_depth;
  g->qa.cap.max_send_sge = 1;
  g->qa.cap.max_recv_sge = 1;
  g->qa.cap.max_inline_data = ctx->attr.max_inline;
  return 0;
}

// The endpoint's queue buffers from @attr, or EINVAL.
int endpoint_bufs(const rhinetdv_endpoint_init_attr* attr, rhinet::QueueBuf* qp,
                  rhinet::QueueBuf* cq) {
  if (int err = rhinet::queue_buf_of(attr->qp_buf, qp)) return err;
  return rhinet::queue_buf_of(attr->cq_buf, cq);
}

}  // namespace

RHINETDV_EXPORT int rhinetdv_endpoint_buf_len(
    ibv_context* context, const rhinetdv_endpoint_init_attr* attr,
    size_t* qp_len, size_t* cq_len) {
  if (!context || !qp_len || !cq_len) return EINVAL;
  if (!is_rhinet_context(context)) return EOPNOTSUPP;
  Context* ctx = to_ctx(context);
  const rhinetdv_endpoint_init_attr none{};
  EndpointGeometry g;
  if (int err = endpoint_geometry(ctx, attr ? attr : &none, &g)) return err;
  rhinet::QpGeometry q;
  if (int err =
          rhinet::qp_geometry(ctx, &g.qa, RHINET_QP_DRIVER_TYPE_ENDPOINT, &q))
    return err;
  *qp_len = q.buf_len;
  *cq_len = rhinet::cq_buf_len(g.cq_entries);
  return 0;
}

RHINETDV_EXPORT rhinetdv_endpoint* rhinetdv_create_endpoint(
    ibv_pd* pd, const rhinetdv_endpoint_init_attr* attr) {
  if (!pd) return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  Context* ctx = to_ctx(pd->context);
  const rhinetdv_endpoint_init_attr none{};
  if (!attr) attr = &none;
  EndpointGeometry g;
  if (int e = endpoint_geometry(ctx, attr, &g)) return errno = e, nullptr;
  const bool in_bufs = attr->comp_mask & RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS;
  rhinet::QueueBuf qp_buf, cq_buf;
  if (in_bufs)
    if (int e = endpoint_bufs(attr, &qp_buf, &cq_buf))
      return errno = e, nullptr;
  const uint32_t max = g.max;

  void* mem = calloc(1, sizeof(Endpoint));
  if (!mem) return errno = ENOMEM, nullptr;
  auto* ep = new (mem) Endpoint;
  int err = 0;
  ibv_qp_attr m{};
  ibv_cq_init_attr_ex ca{};
  rhinet::Cq* cq = nullptr;
  rhinet::Qp* qp = nullptr;
  ep->channel = ibv_create_comp_channel(pd->context);
  if (!ep->channel) goto err;
  ca.cqe = g.cq_entries;
  ca.channel = ep->channel;
  cq = rhinet::create_cq_common(pd->context, &ca, in_bufs ? &cq_buf : nullptr);
  if (!cq) goto err;
  ep->cq = &cq->vcq.cq;
  // What libibverbs' ibv_create_cq does after the provider's call (the
  // channel's reference, the events' lock).
  verbs_init_cq(ep->cq, pd->context, ep->channel, nullptr);
  g.qa.send_cq = ep->cq;
  g.qa.recv_cq = ep->cq;
  g.qa.comp_mask = IBV_QP_INIT_ATTR_PD;
  g.qa.pd = pd;
  qp = rhinet::create_qp_common(&g.qa, RHINET_QP_DRIVER_TYPE_ENDPOINT,
                                in_bufs ? &qp_buf : nullptr);
  if (!qp) goto err;
  ep->ibqp = &qp->vqp.qp;
  ep->qp = rhinet::to_qp(ep->ibqp);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = rhinet::ib_access(attr->access);
  err = ibv_modify_qp(ep->ibqp, &m,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS);
  if (!err) {
    m.qp_state = IBV_QPS_RTR;
    err = ibv_modify_qp(ep->ibqp, &m, IBV_QP_STATE);
  }
  if (!err) {
    m.qp_state = IBV_QPS_RTS;
    err = ibv_modify_qp(ep->ibqp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN);
  }
  if (err) {
    errno = err;
    goto err;
  }
  ep->max_inline = ep->qp->max_inline;
  // Every posted operation and irecv reports at most one completion.
  ep->max_irecv = ep->qp->rq_depth;
  ep->pending_cap = max + ep->max_irecv;
  ep->pending = static_cast<rhinetdv_completion_ex*>(
      calloc(ep->pending_cap, sizeof(rhinetdv_completion_ex)));
  ep->irecv_cap = std::min<uint32_t>(4 * ep->max_irecv, 65536);
  ep->irecvs = static_cast<rhinet::IrecvSlot*>(
      calloc(ep->irecv_cap, sizeof(*ep->irecvs)));
  if (!ep->pending || !ep->irecvs) {
    errno = ENOMEM;
    goto err;
  }
  ep->pub.context = pd->context;
  ep->pub.pd = pd;
  ep->pub.node_id = ctx->attr.node_id;
  ep->pub.endpoint_id = ep->qp->qpn;
  return &ep->pub;

err:
  err = errno;
  rhinet::destroy_parts(ep);
  errno = err;
  return nullptr;
}

RHINETDV_EXPORT int rhinetdv_destroy_endpoint(rhinetdv_endpoint* pub) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = rhinet::to_ep(pub);
  int err = ibv_destroy_qp(ep->ibqp);
  if (err) return err;
  ep->ibqp = nullptr;
  err = ibv_destroy_cq(ep->cq);
  if (err) return err;
  ep->cq = nullptr;
  err = ibv_destroy_comp_channel(ep->channel);
  if (err) return err;
  ep->channel = nullptr;
  rhinet::destroy_parts(ep);
  return 0;
}
