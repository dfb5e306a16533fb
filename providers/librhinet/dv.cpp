// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rhinetdv: the direct verbs (infiniband/rhinetdv.h). The endpoint is a
// NIC endpoint QP (IBV_QPT_DRIVER, RHINET_QP_DRIVER_TYPE_ENDPOINT) with a
// CQ of its own; PUSH/PULL build WQEs with RHN_WQE_F_AREA (remote_key = area
// ID, remote_addr = offset) and, on request, RHN_WQE_F_STATUS_WORD, into
// the same SQ ring and doorbell path as post_send. Completions come from
// that CQ through poll_cq. Remote pin-down (pd_req, pd_release) posts
// PD_REQUEST/PD_RELEASE WQEs addressed the same way, without data.
//
// SQ slots are handed back only by completions. So that a process using
// status words alone never fills its SQ, every WQE that would leave half
// the ring without a signaled WQE behind it is signaled by the library;
// such completions are consumed here and never reach the caller.
#include <infiniband/rhinetdv.h>
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include "provider.h"

#define RHINETDV_EXPORT extern "C" __attribute__((visibility("default")))

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

namespace rhinet {
namespace {

constexpr uint32_t kDefaultOutstanding = 64;
constexpr uint32_t kKnownXferFlags = RHINETDV_XFER_SIGNALED |
                                     RHINETDV_XFER_STATUS_WORD |
                                     RHINETDV_XFER_INLINE | RHINETDV_XFER_FENCE;
constexpr uint32_t kKnownXferExFlags =
    kKnownXferFlags | RHINETDV_XFER_EX_BY_KEY | RHINETDV_XFER_EX_SIGNAL;
// CQEs an endpoint's CQ holds beyond one per SQ slot: signals from peers
// wait there until the process counts them.
constexpr uint32_t kSignalRoom = 4096;
constexpr uint32_t kDefaultIrecv = 256;
constexpr uint32_t kKnownPinFlags =
    RHINETDV_PIN_SIGNALED | RHINETDV_PIN_STATUS_WORD | RHINETDV_PIN_BY_KEY;
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

// An irecv the NIC has not completed yet, by its RQ index.
struct IrecvSlot {
  uint64_t wr_id;
  uint32_t index;  // its full RQ index (the caller's handle)
  bool busy;
};

struct Endpoint {
  rhinetdv_endpoint pub;  // first: the caller's handle
  std::mutex lock;        // posting and polling; before the CQ's and SQ's
  ibv_comp_channel* channel = nullptr;  // rhinetdv_wait_signal sleeps here
  ibv_cq* cq = nullptr;
  // Signals counted per area key (group << 16 | area), 004 2.11.
  std::unordered_map<uint32_t, uint64_t> signals;
  ibv_qp* ibqp = nullptr;
  Qp* qp = nullptr;
  uint32_t max_inline = 0;
  uint32_t last_signaled = 0;        // SQ index after the last signaled WQE
  uint8_t* user_signaled = nullptr;  // per SQ slot of a WQE's first slot
  // Completions taken from the CQ while making room, not yet returned.
  rhinetdv_completion_ex* pending = nullptr;
  uint32_t pending_head = 0, pending_count = 0, pending_cap = 0;
  // Irecvs (tag RQ): by RQ index modulo irecv_cap; the CQE names the low
  // 16 bits of the index, so irecv_cap divides 65536.
  IrecvSlot* irecvs = nullptr;
  uint32_t irecv_cap = 0, max_irecv = 0, irecv_outstanding = 0;
  // rhinetdv_iprobe: the probe in flight and what it found.
  uint64_t probe_wr_id = 0, probe_seq = 0;
  bool probe_done = false;
  rhinetdv_tag_info probe_info{};
};

Endpoint* to_ep(rhinetdv_endpoint* ep) {
  return reinterpret_cast<Endpoint*>(ep);
}

// Endpoint limits: WQEs of up to max_inline bytes, SQ and CQ of one depth.
uint32_t ep_slots_per_wqe(const Context* ctx) {
  return 1 + ext_units_for_inline(ctx->attr.max_inline);
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
  free(ep->user_signaled);
  free(ep->pending);
  free(ep->irecvs);
  ep->~Endpoint();
  free(ep);
}

uint64_t tag_of(const ibv_wc& wc) {
  return uint64_t{wc.imm_data} | uint64_t{wc.vendor_err} << 32;
}

// An irecv's completion: its slot is free again.
bool convert_irecv(Endpoint* ep, const ibv_wc& wc, rhinetdv_completion_ex* c) {
  const uint16_t index = static_cast<uint16_t>(wc.wr_id);
  if (!ep->irecvs) return false;
  IrecvSlot& slot = ep->irecvs[index & (ep->irecv_cap - 1)];
  if (!slot.busy || static_cast<uint16_t>(slot.index) != index) return false;
  slot.busy = false;
  ep->irecv_outstanding--;
  memset(c, 0, sizeof(*c));
  c->base.wr_id = slot.wr_id;
  c->base.status = wc.status;
  c->base.byte_len = wc.byte_len;
  c->base.opcode = RHINETDV_OP_IRECV;
  c->src_node = static_cast<uint16_t>(wc.slid);
  c->src_endpoint = wc.src_qp;
  if (wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_LOC_LEN_ERR)
    c->tag = tag_of(wc);
  else
    c->base.syndrome = wc.vendor_err;
  return true;
}

// Takes one CQE's worth of work completion into the caller's form; false
// when there is nothing to report (the library signaled it and it
// succeeded, a signal, the library's own probe or cancel).
bool convert(Endpoint* ep, const ibv_wc& wc, uint32_t first_slot,
             rhinetdv_completion_ex* c) {
  if (wc.opcode == kWcSignal) {  // counted, not reported
    ep->signals[static_cast<uint32_t>(wc.wr_id)] += wc.imm_data;
    return false;
  }
  if (wc.opcode == kWcTagRecv) return convert_irecv(ep, wc, c);
  if (wc.opcode == kWcTagLocal) {
    if (wc.wr_id == ep->probe_wr_id && !ep->probe_done) {
      ep->probe_done = true;
      rhinetdv_tag_info& i = ep->probe_info;
      i = rhinetdv_tag_info{};
      if (wc.status == IBV_WC_SUCCESS && (wc.pkey_index & RHN_CQE_X_FOUND)) {
        i.found = 1;
        i.length = wc.byte_len;
        i.src_node = static_cast<uint16_t>(wc.slid);
        i.src_endpoint = wc.src_qp;
        i.tag = tag_of(wc);
      }
    }
    return false;
  }
  const uint32_t mask = (1u << ep->qp->sq_log) - 1;
  const bool wanted = ep->user_signaled[first_slot & mask];
  if (wc.status == IBV_WC_SUCCESS && !wanted) return false;
  memset(c, 0, sizeof(*c));
  c->base.wr_id = wc.wr_id;
  c->base.status = wc.status;
  c->base.syndrome = wc.vendor_err;
  c->base.byte_len = wc.byte_len;
  c->base.opcode = wc.opcode == IBV_WC_RDMA_READ   ? RHINETDV_OP_PULL
                   : wc.opcode == IBV_WC_SEND      ? RHINETDV_OP_ISEND
                   : wc.opcode == kWcPdRequest     ? RHINETDV_OP_PD_REQUEST
                   : wc.opcode == kWcPdRelease     ? RHINETDV_OP_PD_RELEASE
                   : wc.opcode == kWcMcastList     ? RHINETDV_OP_MCAST_LIST
                   : wc.opcode == kWcMcastSwitch   ? RHINETDV_OP_MCAST_SWITCH
                   : wc.opcode == kWcSubscribe     ? RHINETDV_OP_SUBSCRIBE
                   : wc.opcode == kWcUnsubscribe   ? RHINETDV_OP_UNSUBSCRIBE
                   : wc.opcode == kWcShareUpdate   ? RHINETDV_OP_SHARE_UPDATE
                   : wc.opcode == kWcLock          ? RHINETDV_OP_LOCK
                   : wc.opcode == kWcUnlock        ? RHINETDV_OP_UNLOCK
                   : wc.opcode == kWcBarrier       ? RHINETDV_OP_BARRIER
                   : wc.opcode == IBV_WC_FETCH_ADD ? RHINETDV_OP_FETCH_ADD
                   : wc.opcode == IBV_WC_COMP_SWAP ? RHINETDV_OP_CMP_SWAP
                   : wc.opcode == kWcCollective    ? RHINETDV_OP_COLLECTIVE
                                                   : RHINETDV_OP_PUSH;
  return true;
}

// Takes CQEs until @n are to be reported or the CQ is empty; those to
// report go to @out, or to the pending queue when @out is null. Returns how
// many were reported, or -1.
int drain(Endpoint* ep, int n, rhinetdv_completion_ex* out) {
  int reported = 0;
  while (reported < n) {
    ibv_wc wc;
    const int got = poll_cq(ep->cq, 1, &wc);
    if (got < 0) return -1;
    if (got == 0) break;
    rhinetdv_completion_ex c;
    if (!convert(ep, wc, ep->qp->sq_last_completed, &c)) continue;
    if (out) {
      out[reported++] = c;
    } else if (ep->pending_count < ep->pending_cap) {
      ep->pending[(ep->pending_head + ep->pending_count++) % ep->pending_cap] =
          c;
      reported++;
    }
  }
  return reported;
}

// Whether this process may declare on-demand areas and post pd_req and
// pd_release: the NIC pins on demand and so does rhinet.ko.
bool pins_on_demand(const Context* ctx) {
  return (ctx->attr.caps & RHN_CAP_PIN_ON_DEMAND) &&
         (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS) &&
         (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_PIN_ON_DEMAND);
}

// An MR that is also the area `key` (group << 16 | area ID) of the
// process, registered as ibv_reg_mr() would: kept out of fork() children,
// ibv_dereg_mr() undoes both. With @on_demand the kernel pins nothing;
// nothing here touches the pages either (MADV_DONTFORK faults none in).
ibv_mr* reg_area_key(ibv_pd* pd, void* addr, size_t length, int access,
                     uint32_t key, bool on_demand = false) {
  const Context* ctx = to_ctx(pd->context);
  if (!(ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    return errno = EOPNOTSUPP, nullptr;  // rhinet.ko without areas
  if (on_demand && !pins_on_demand(ctx)) return errno = EOPNOTSUPP, nullptr;
  int err = ibv_dontfork_range(addr, length);
  if (err) return errno = err, nullptr;
  ibv_mr* mr = reg_mr_area(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                           access, &key, on_demand);
  if (!mr) {
    err = errno;
    ibv_dofork_range(addr, length);
    errno = err;
    return nullptr;
  }
  // What ibv_reg_mr() fills in after the provider.
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  return mr;
}

bool in_groups(const Context* ctx, uint32_t group) {
  if (group == 0) return true;
  for (uint32_t i = 0; i < ctx->num_groups; i++)
    if (ctx->groups[i] == group) return true;
  return false;
}

// Table 1 of 004: push = basic, diff, bitmap, stride; pull = basic, twin,
// bitmap, stride.
bool mode_taken(uint32_t mode, bool push) {
  switch (mode) {
    case RHINETDV_MODE_BASIC:
    case RHINETDV_MODE_BITMAP:
    case RHINETDV_MODE_STRIDE:
      return true;
    case RHINETDV_MODE_DIFF:
      return push;
    case RHINETDV_MODE_TWIN:
      return !push;
    default:
      return false;
  }
}

// A status word the NIC can write: given, 8-byte aligned.
bool status_word_ok(uint32_t flags, const uint64_t* word) {
  return !(flags & RHINETDV_XFER_STATUS_WORD) ||
         (word && !(reinterpret_cast<uintptr_t>(word) & 7));
}

// The data of a PUSH or isend WQE (inline bytes, or one SGE) and its
// status word, from RHINETDV_XFER_INLINE / _STATUS_WORD in @flags (the
// isend flags have the same values); returns the extension slots the
// inline bytes take.
uint32_t put_data(uint8_t* w, const void* addr, uint32_t length, uint32_t lkey,
                  uint32_t flags, uint64_t* status_word, uint32_t status_lkey) {
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  uint32_t ext = 0;
  if (flags & RHINETDV_XFER_INLINE) {
    if (length) memcpy(w + offsetof(rhn_send_wqe, d), addr, length);
    h->num_sge = static_cast<uint16_t>(length);
    h->flags |= RHN_WQE_F_INLINE;
    ext = ext_units_for_inline(length);
  } else {
    h->d.sge = rhn_sge{reinterpret_cast<uintptr_t>(addr), length, lkey};
    h->num_sge = 1;
  }
  if (flags & RHINETDV_XFER_STATUS_WORD) {
    h->flags |= RHN_WQE_F_STATUS_WORD;
    h->u.status.addr = reinterpret_cast<uintptr_t>(status_word);
    h->u.status.lkey = status_lkey;
  }
  return ext;
}

// Copies a built WQE (@slots slots at @w) into the SQ and kicks; the
// endpoint's lock is held. @wanted: the caller gets its completion.
int post_wqe_locked(Endpoint* ep, uint8_t* w, uint32_t slots, uint64_t wr_id,
                    bool wanted) {
  Qp* qp = ep->qp;
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  const uint32_t depth = 1u << qp->sq_log, mask = depth - 1;
  // Room: completions already written by the NIC free slots.
  while (qp->sq_producer + slots - qp->sq_consumer > depth) {
    const uint32_t before = qp->sq_consumer;
    if (drain(ep, INT_MAX, nullptr) < 0) return EIO;
    if (qp->sq_consumer == before) return ENOMEM;
  }
  if (wanted || (h->flags & RHN_WQE_F_SIGNALED) ||
      qp->sq_producer + slots - ep->last_signaled >= depth / 2) {
    h->flags |= RHN_WQE_F_SIGNALED;
    ep->last_signaled = qp->sq_producer + slots;
  }
  {
    std::lock_guard<std::mutex> gs(qp->sq_lock);
    h->wqe_index = static_cast<uint16_t>(qp->sq_producer);
    for (uint32_t s = 0; s < slots; s++)
      memcpy(qp->sq + ((qp->sq_producer + s) & mask) * RHN_SQ_SLOT_SIZE,
             w + s * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
    qp->sq_info[qp->sq_producer & mask] =
        SendSlot{wr_id, static_cast<uint8_t>(slots)};
    ep->user_signaled[qp->sq_producer & mask] = wanted;
    qp->sq_producer += slots;
    to_device_barrier();
    __atomic_store_n(&qp->sq_record->producer_index, qp->sq_producer,
                     __ATOMIC_RELEASE);
  }
  to_ctx(ep->pub.context)->kick(RHN_DB_SQ, qp->qpn);
  return 0;
}

int post(rhinetdv_endpoint* pub, const rhinetdv_xfer_ex* xe, bool push) {
  if (!pub || !xe) return EINVAL;
  Endpoint* ep = to_ep(pub);
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  const rhinetdv_xfer* x = &xe->base;
  const bool by_key = x->flags & RHINETDV_XFER_EX_BY_KEY;
  const bool partial = xe->mode != RHINETDV_MODE_BASIC;
  if (xe->comp_mask || (x->flags & ~kKnownXferExFlags) || x->reserved0 ||
      x->reserved1 || xe->reserved0 ||
      ((x->flags & RHINETDV_XFER_INLINE) &&
       (!push || partial || x->length > ep->max_inline)) ||
      !status_word_ok(x->flags, x->status_word) ||
      !mode_taken(xe->mode, push) ||
      ((x->flags & RHINETDV_XFER_EX_SIGNAL) && (!push || by_key)) ||
      (!by_key && (x->area_id > 0xffff || xe->group_id > 0xffff)))
    return EINVAL;
  if (!by_key && !in_groups(to_ctx(pub->context), xe->group_id)) return EPERM;

  alignas(8) uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  uint32_t ext = put_data(w, x->local_addr, x->length, x->lkey, x->flags,
                          x->status_word, x->status_lkey);
  if (partial) {
    // The descriptor takes the slot after the base (004 2.7).
    auto* d = reinterpret_cast<rhn_wqe_xfer*>(w + RHN_SQ_SLOT_SIZE);
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
    h->xfer_mode = static_cast<uint8_t>(xe->mode);
    ext = 1;
  }
  const uint32_t slots = 1 + ext;
  h->opcode = push ? RHN_OP_WRITE : RHN_OP_READ;
  h->ext_units = static_cast<uint8_t>(ext);
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
  return post_wqe_locked(ep, w, slots, x->wr_id,
                         x->flags & RHINETDV_XFER_SIGNALED);
}

// pd_req / pd_release (004 2.5): addressed as a PULL by area or key, the
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
  alignas(8) uint8_t w[RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode = request ? RHN_OP_PD_REQUEST : RHN_OP_PD_RELEASE;
  if (!by_key) h->flags |= RHN_WQE_F_AREA;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  h->remote_key = by_key ? a.rkey : RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = by_key ? a.remote_addr : a.offset;
  h->imm_data = a.length;
  if (a.flags & RHINETDV_PIN_STATUS_WORD) {
    h->flags |= RHN_WQE_F_STATUS_WORD;
    h->u.status.addr = reinterpret_cast<uintptr_t>(a.status_word);
    h->u.status.lkey = a.status_lkey;
  }
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, 1, a.wr_id, a.flags & RHINETDV_PIN_SIGNALED);
}

// ---- sequential multicast and locks/barriers (RHINETDV_1.5)

constexpr uint32_t kKnownMcastFlags =
    RHINETDV_MCAST_SIGNALED | RHINETDV_MCAST_STATUS_WORD |
    RHINETDV_MCAST_INLINE | RHINETDV_MCAST_SIGNAL;
constexpr uint32_t kKnownSyncFlags =
    RHINETDV_SYNC_SIGNALED | RHINETDV_SYNC_STATUS_WORD;

// A multicast's work request from the attributes of a call that posts one
// without a destination list (a switch group's, a shared region's
// update): the fields they share with rhinetdv_mcast_attr, the list's left
// empty. A shared-region update has no signal.
template <typename Attr>
rhinetdv_mcast_attr mcast_request_of(const Attr& s) {
  rhinetdv_mcast_attr a{};
  a.comp_mask = s.comp_mask;
  a.wr_id = s.wr_id;
  a.addr = s.addr;
  a.length = s.length;
  a.lkey = s.lkey;
  a.group_id = s.group_id;
  a.area_id = s.area_id;
  a.offset = s.offset;
  a.flags = s.flags;
  a.status_lkey = s.status_lkey;
  a.status_word = s.status_word;
  if constexpr (requires { s.signal; }) a.signal = s.signal;
  a.mode = s.mode;
  a.block = s.block;
  a.count = s.count;
  a.local_stride = s.local_stride;
  a.remote_stride = s.remote_stride;
  a.bitmap = s.bitmap;
  a.bitmap_lkey = s.bitmap_lkey;
  a.twin = s.twin;
  a.twin_offset = s.twin_offset;
  return a;
}

// MCAST_LIST (004 2.8 mcastB): a PUSH by area whose last slot names the
// caller's destination list; a partial mode's descriptor is the slot
// before it, inline bytes the slots after the base.
// Both multicasts (004 2.8): to a destination list (mcastB, the list's
// slot ends the WQE) or to a switch group (mcastA: the group is the WQE's
// destination node); and a shared region's update (004 2.9), which the NIC
// multicasts along its directory (no destination in the WQE, no signal).
int post_mcast(Endpoint* ep, const rhinetdv_mcast_attr& a, uint8_t opcode,
               uint16_t switch_group = 0) {
  const bool partial = a.mode != RHINETDV_MODE_BASIC;
  const bool inl = a.flags & RHINETDV_MCAST_INLINE;
  const bool list = opcode == RHN_OP_MCAST_LIST;
  const bool share = opcode == RHN_OP_SHARE_UPDATE;
  if (a.comp_mask || a.reserved || (a.flags & ~kKnownMcastFlags) ||
      (share && (a.flags & RHINETDV_MCAST_SIGNAL)) ||
      (list && (!a.num_dests || a.num_dests > RHINETDV_MCAST_MAX_DESTS ||
                !a.dests || (reinterpret_cast<uintptr_t>(a.dests) & 3))) ||
      (inl && (partial || a.length > ep->max_inline ||
               1 + ext_units_for_inline(a.length) + (list ? 1 : 0) >
                   RHN_WQE_MAX_SLOTS)) ||
      (!inl && a.length && !a.addr) ||
      !status_word_ok(a.flags, a.status_word) || !mode_taken(a.mode, true) ||
      a.area_id > 0xffff || a.group_id > 0xffff ||
      (!(a.flags & RHINETDV_MCAST_SIGNAL) && a.signal))
    return EINVAL;
  const Context* ctx = to_ctx(ep->pub.context);
  const uint32_t cap = list    ? RHN_CAP_MCAST_LIST
                       : share ? RHN_CAP_SHARE
                               : RHN_CAP_MCAST_SWITCH;
  if (!(ctx->attr.caps & cap)) return EOPNOTSUPP;
  if (!in_groups(ctx, a.group_id)) return EPERM;

  alignas(8) uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  uint32_t ext = put_data(w, a.addr, a.length, a.lkey, a.flags, a.status_word,
                          a.status_lkey);
  if (partial) {
    auto* d = reinterpret_cast<rhn_wqe_xfer*>(w + RHN_SQ_SLOT_SIZE);
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
    h->xfer_mode = static_cast<uint8_t>(a.mode);
    ext = 1;
  }
  if (list) {
    auto* m =
        reinterpret_cast<rhn_wqe_mcast*>(w + (1 + ext) * RHN_SQ_SLOT_SIZE);
    m->list_addr = reinterpret_cast<uintptr_t>(a.dests);
    m->list_lkey = a.dests_lkey;
    m->count = a.num_dests;
    ext++;
  } else {
    h->dst_node = switch_group;  // 0 for an update
  }
  h->opcode = opcode;
  h->ext_units = static_cast<uint8_t>(ext);
  h->flags |= RHN_WQE_F_AREA;
  if (a.flags & RHINETDV_MCAST_SIGNAL) {
    h->flags |= RHN_WQE_F_SIGNAL_REMOTE;
    h->imm_data = a.signal;
  }
  h->remote_key = RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = a.offset;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, 1 + ext, a.wr_id,
                         a.flags & RHINETDV_MCAST_SIGNALED);
}

// LOCK, UNLOCK, BARRIER (004 2.10): one slot, no data, to the manager
// endpoint; remote_addr = the ID, imm_data = a barrier's count.
int post_sync(Endpoint* ep, const rhinetdv_sync_attr& a, uint8_t opcode) {
  const bool barrier = opcode == RHN_OP_BARRIER;
  if (a.comp_mask || a.reserved0 || a.reserved1 ||
      (a.flags & ~kKnownSyncFlags) ||
      (barrier ? !a.count || a.count > RHINETDV_BARRIER_MAX_COUNT
               : a.count != 0) ||
      !status_word_ok(a.flags, a.status_word))
    return EINVAL;
  if (!(to_ctx(ep->pub.context)->attr.caps & RHN_CAP_SYNC)) return EOPNOTSUPP;
  alignas(8) uint8_t w[RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode = opcode;
  h->dst_node = a.manager_node;
  h->dst_qpn = a.manager_endpoint;
  h->remote_addr = a.id;
  h->imm_data = a.count;
  if (a.flags & RHINETDV_SYNC_STATUS_WORD) {
    h->flags |= RHN_WQE_F_STATUS_WORD;
    h->u.status.addr = reinterpret_cast<uintptr_t>(a.status_word);
    h->u.status.lkey = a.status_lkey;
  }
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, 1, a.wr_id, a.flags & RHINETDV_SYNC_SIGNALED);
}

// ---- shared regions (RHINETDV_1.7)

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
       (a.mode != RHINETDV_MODE_BASIC && !twin) ||
       (twin &&
        (!a.twin || a.twin->context->device != ep->pub.context->device ||
         a.twin_offset > to_dm(a.twin)->length ||
         a.length > to_dm(a.twin)->length - a.twin_offset)) ||
       (!twin && (a.twin || a.twin_offset))))
    return EINVAL;
  const Context* ctx = to_ctx(ep->pub.context);
  if (!(ctx->attr.caps & RHN_CAP_SHARE)) return EOPNOTSUPP;
  if (!in_groups(ctx, a.group_id)) return EPERM;

  alignas(8) uint8_t w[2 * RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  uint32_t ext = 0;
  if (subscribe) {
    h->d.sge = rhn_sge{reinterpret_cast<uintptr_t>(a.addr), a.length, a.lkey};
    h->num_sge = 1;
    if (twin) {
      auto* d = reinterpret_cast<rhn_wqe_xfer*>(w + RHN_SQ_SLOT_SIZE);
      d->twin = to_dm(a.twin)->twin_handle;
      d->twin_offset = a.twin_offset;
      h->xfer_mode = RHN_XFER_TWIN;
      ext = 1;
    }
  }
  if (a.flags & RHINETDV_SHARE_STATUS_WORD) {
    h->flags |= RHN_WQE_F_STATUS_WORD;
    h->u.status.addr = reinterpret_cast<uintptr_t>(a.status_word);
    h->u.status.lkey = a.status_lkey;
  }
  h->opcode = subscribe ? RHN_OP_SUBSCRIBE : RHN_OP_UNSUBSCRIBE;
  h->ext_units = static_cast<uint8_t>(ext);
  h->flags |= RHN_WQE_F_AREA;
  h->dst_node = a.home_node;
  h->dst_qpn = a.home_endpoint;
  h->remote_key = RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = a.offset;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, 1 + ext, a.wr_id,
                         a.flags & RHINETDV_SHARE_SIGNALED);
}

int post_basic(rhinetdv_endpoint* pub, const rhinetdv_xfer* x, bool push) {
  if (!x || (x->flags & ~kKnownXferFlags)) return EINVAL;
  rhinetdv_xfer_ex xe{};
  xe.base = *x;
  return post(pub, &xe, push);
}

// The caller's struct as this library knows it: a shorter (older) one
// is padded with zeros, a longer one must have zeros beyond.
bool extend(const void* in, size_t inlen, void* out, size_t outlen) {
  if (!in || inlen < sizeof(uint64_t)) return false;
  const auto* b = static_cast<const uint8_t*>(in);
  for (size_t i = outlen; i < inlen; i++)
    if (b[i]) return false;
  memset(out, 0, outlen);
  memcpy(out, in, inlen < outlen ? inlen : outlen);
  return true;
}

// ---- isend / irecv (ops/tag in the NIC)

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

// A message's mode (004 table 1: isend basic/diff/bitmap/stride, irecv
// basic/twin/bitmap/stride) and its parameters against the buffer of
// @length bytes. The NIC checks them again (RHN_SYN_BAD_XFER), but a
// refused isend takes the endpoint to error: what can be seen here is
// refused here.
bool tag_xfer_ok(const Endpoint* ep, const TagXfer& x, uint32_t length,
                 bool send) {
  if (!mode_taken(x.mode, send)) return false;
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
  alignas(8) uint8_t w[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  uint32_t ext = put_data(w, a.addr, a.length, a.lkey, a.flags, a.status_word,
                          a.status_lkey);
  if (partial) {
    // One SGE and the descriptor in the slot after the base, as a partial
    // PUSH; the message is packed at the receiver's end (remote_stride =
    // block): where its bytes land is the irecv's choice.
    auto* d = reinterpret_cast<rhn_wqe_xfer*>(w + RHN_SQ_SLOT_SIZE);
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
    h->xfer_mode = static_cast<uint8_t>(x.mode);
    ext = 1;
  }
  h->opcode = RHN_OP_ISEND;
  h->ext_units = static_cast<uint8_t>(ext);
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  h->remote_addr = a.tag;
  std::lock_guard<std::mutex> g(ep->lock);
  return post_wqe_locked(ep, w, 1 + ext, a.wr_id,
                         a.flags & RHINETDV_ISEND_SIGNALED);
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
  alignas(8) uint8_t w[RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode = RHN_OP_IRECV_CANCEL;
  h->remote_key = handle & 0xffff;
  return post_wqe_locked(ep, w, 1, kCancelWrId, false);
}

uint64_t now_ms();

int probe(Endpoint* ep, const rhinetdv_irecv_attr& a, rhinetdv_tag_info* info) {
  if (!irecv_attr_ok(a)) return EINVAL;
  alignas(8) uint8_t w[RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode = RHN_OP_IPROBE;
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
  int err = post_wqe_locked(ep, w, 1, ep->probe_wr_id, false);
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

uint64_t signal_count_locked(Endpoint* ep, uint32_t key) {
  drain(ep, INT_MAX, nullptr);
  const auto it = ep->signals.find(key);
  return it == ep->signals.end() ? 0 : it->second;
}

uint64_t now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000 + uint64_t(t.tv_nsec) / 1000000;
}

}  // namespace
}  // namespace rhinet

using rhinet::Context;
using rhinet::Endpoint;
using rhinet::is_rhinet_context;
using rhinet::to_ctx;

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
  if ((ctx->attr.caps & RHN_CAP_COLLECTIVE) &&
      (ctx->attr.caps & RHN_CAP_ENDPOINT))
    a.caps |= RHINETDV_CAP_COLLECTIVE;
  if ((a.caps & RHINETDV_CAP_COLLECTIVE) &&
      (ctx->attr.caps & RHN_CAP_COLL_SWITCH))
    a.caps |= RHINETDV_CAP_COLL_IN_SWITCH;
  a.max_areas = ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS
                    ? ctx->attr.max_areas
                    : 0;
  a.max_inline = ctx->attr.max_inline;
  a.max_outstanding = rhinet::ep_max_outstanding(ctx);
  memcpy(attr, &a, inlen < sizeof(a) ? inlen : sizeof(a));
  return 0;
}

RHINETDV_EXPORT rhinetdv_endpoint* rhinetdv_create_endpoint(
    ibv_pd* pd, const rhinetdv_endpoint_init_attr* attr) {
  if (!pd) return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  Context* ctx = to_ctx(pd->context);
  const rhinetdv_endpoint_init_attr none{};
  if (!attr) attr = &none;
  const uint32_t max = attr->max_outstanding ? attr->max_outstanding
                                             : rhinet::kDefaultOutstanding;
  uint32_t max_irecv = rhinet::kDefaultIrecv;
  if ((attr->comp_mask & RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV) &&
      attr->max_irecv)
    max_irecv = attr->max_irecv;
  if ((attr->comp_mask & ~uint64_t{RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV}) ||
      ((attr->comp_mask & RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV) &&
       (attr->reserved || max_irecv > (1u << ctx->attr.max_wq_log_depth) ||
        max_irecv > 16384)) ||
      (attr->access & ~static_cast<uint32_t>(IBV_ACCESS_REMOTE_WRITE |
                                             IBV_ACCESS_REMOTE_READ |
                                             IBV_ACCESS_REMOTE_ATOMIC)) ||
      max > rhinet::ep_max_outstanding(ctx))
    return errno = EINVAL, nullptr;

  void* mem = calloc(1, sizeof(Endpoint));
  if (!mem) return errno = ENOMEM, nullptr;
  auto* ep = new (mem) Endpoint;
  int err = 0;
  ibv_qp_init_attr qa{};
  ibv_qp_attr m{};
  const uint32_t slots = rhinet::ep_slots_per_wqe(ctx);
  // The CQ holds a CQE per SQ slot: never more completions than WQEs.
  const uint32_t sq_slots = 1u << rhinet::log2_ceil(max * slots);
  const uint32_t rq_depth = 1u << rhinet::log2_ceil(max_irecv);
  ep->channel = ibv_create_comp_channel(pd->context);
  if (!ep->channel) goto err;
  ep->cq = ibv_create_cq(pd->context,
                         static_cast<int>(std::min<uint32_t>(
                             sq_slots + rq_depth + rhinet::kSignalRoom,
                             1u << ctx->attr.max_cq_log_depth)),
                         nullptr, ep->channel, 0);
  if (!ep->cq) goto err;
  qa.send_cq = ep->cq;
  qa.recv_cq = ep->cq;
  qa.qp_type = IBV_QPT_DRIVER;
  qa.cap.max_send_wr = max;
  qa.cap.max_recv_wr = rq_depth;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = ctx->attr.max_inline;
  ep->ibqp = rhinet::create_qp_typed(pd, &qa, RHINET_QP_DRIVER_TYPE_ENDPOINT);
  if (!ep->ibqp) goto err;
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
  ep->user_signaled =
      static_cast<uint8_t*>(calloc(size_t{1} << ep->qp->sq_log, 1));
  // Every posted operation and irecv reports at most one completion.
  ep->max_irecv = ep->qp->rq_depth;
  ep->pending_cap = max + ep->max_irecv;
  ep->pending = static_cast<rhinetdv_completion_ex*>(
      calloc(ep->pending_cap, sizeof(rhinetdv_completion_ex)));
  ep->irecv_cap = std::min<uint32_t>(4 * ep->max_irecv, 65536);
  ep->irecvs = static_cast<rhinet::IrecvSlot*>(
      calloc(ep->irecv_cap, sizeof(*ep->irecvs)));
  if (!ep->user_signaled || !ep->pending || !ep->irecvs) {
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

RHINETDV_EXPORT ibv_mr* rhinetdv_reg_area(ibv_pd* pd, void* addr, size_t length,
                                          int access, uint32_t area_id) {
  if (!pd || area_id > 0xffff) return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  return rhinet::reg_area_key(pd, addr, length, access, area_id);
}

RHINETDV_EXPORT int rhinetdv_push(rhinetdv_endpoint* ep,
                                  const rhinetdv_xfer* x) {
  return rhinet::post_basic(ep, x, true);
}

RHINETDV_EXPORT int rhinetdv_pull(rhinetdv_endpoint* ep,
                                  const rhinetdv_xfer* x) {
  return rhinet::post_basic(ep, x, false);
}

RHINETDV_EXPORT int rhinetdv_poll_ex(rhinetdv_endpoint* pub, int n,
                                     rhinetdv_completion_ex* c, size_t stride) {
  if (!pub || n < 0 || (n && !c) || stride < sizeof(rhinetdv_completion))
    return errno = EINVAL, -1;
  if (!is_rhinet_context(pub->context)) return errno = EOPNOTSUPP, -1;
  Endpoint* ep = rhinet::to_ep(pub);
  auto* out = reinterpret_cast<uint8_t*>(c);
  const size_t copy = std::min(stride, sizeof(rhinetdv_completion_ex));
  std::lock_guard<std::mutex> g(ep->lock);
  int got = 0;
  while (got < n && ep->pending_count) {
    memcpy(out + size_t(got++) * stride, &ep->pending[ep->pending_head], copy);
    ep->pending_head = (ep->pending_head + 1) % ep->pending_cap;
    ep->pending_count--;
  }
  while (got < n) {
    rhinetdv_completion_ex one;
    const int more = rhinet::drain(ep, 1, &one);
    if (more < 0) return got ? got : -1;
    if (more == 0) break;
    memcpy(out + size_t(got++) * stride, &one, copy);
  }
  return got;
}

RHINETDV_EXPORT int rhinetdv_poll(rhinetdv_endpoint* pub, int n,
                                  rhinetdv_completion* c) {
  return rhinetdv_poll_ex(pub, n, reinterpret_cast<rhinetdv_completion_ex*>(c),
                          sizeof(*c));
}

RHINETDV_EXPORT int rhinetdv_isend(rhinetdv_endpoint* pub,
                                   const rhinetdv_isend_attr* attr,
                                   size_t inlen) {
  rhinetdv_isend_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_isend(rhinet::to_ep(pub), a);
}

RHINETDV_EXPORT int rhinetdv_irecv(rhinetdv_endpoint* pub,
                                   const rhinetdv_irecv_attr* attr,
                                   size_t inlen, uint32_t* handle) {
  rhinetdv_irecv_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
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

RHINETDV_EXPORT ibv_mr* rhinetdv_reg_area_ex(ibv_pd* pd, void* addr,
                                             size_t length, int access,
                                             const rhinetdv_area_attr* attr,
                                             size_t inlen) {
  rhinetdv_area_attr a;
  if (!pd || !rhinet::extend(attr, inlen, &a, sizeof(a)) ||
      (a.comp_mask & ~uint64_t{RHINETDV_AREA_ATTR_MASK_FLAGS}) ||
      a.area_id > 0xffff || a.group_id > 0xffff)
    return errno = EINVAL, nullptr;
  if ((a.flags & ~uint32_t{RHINETDV_AREA_PIN_ON_DEMAND}) || a.reserved ||
      (a.flags && !(a.comp_mask & RHINETDV_AREA_ATTR_MASK_FLAGS)))
    return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  if (!rhinet::in_groups(to_ctx(pd->context), a.group_id))
    return errno = EPERM, nullptr;
  return rhinet::reg_area_key(pd, addr, length, access,
                              RHN_AREA_KEY(a.group_id, a.area_id),
                              a.flags & RHINETDV_AREA_PIN_ON_DEMAND);
}

RHINETDV_EXPORT int rhinetdv_query_groups(ibv_context* context,
                                          uint16_t* groups, int n) {
  if (n < 0 || (n && !groups)) return errno = EINVAL, -1;
  if (!is_rhinet_context(context)) return errno = EOPNOTSUPP, -1;
  const Context* ctx = to_ctx(context);
  const int have = static_cast<int>(ctx->num_groups);
  for (int i = 0; i < have && i < n; i++) groups[i] = ctx->groups[i];
  return have < n ? have : n;
}

RHINETDV_EXPORT uint32_t rhinetdv_twin_handle(ibv_dm* dm) {
  if (!dm || !is_rhinet_context(dm->context)) return errno = EINVAL, 0;
  return rhinet::to_dm(dm)->twin_handle;
}

RHINETDV_EXPORT int rhinetdv_push_ex(rhinetdv_endpoint* ep,
                                     const rhinetdv_xfer_ex* x, size_t inlen) {
  rhinetdv_xfer_ex e;
  if (!rhinet::extend(x, inlen, &e, sizeof(e))) return EINVAL;
  return rhinet::post(ep, &e, true);
}

RHINETDV_EXPORT int rhinetdv_pull_ex(rhinetdv_endpoint* ep,
                                     const rhinetdv_xfer_ex* x, size_t inlen) {
  rhinetdv_xfer_ex e;
  if (!rhinet::extend(x, inlen, &e, sizeof(e))) return EINVAL;
  return rhinet::post(ep, &e, false);
}

RHINETDV_EXPORT int rhinetdv_signal_count(rhinetdv_endpoint* pub,
                                          uint32_t group_id, uint32_t area_id,
                                          uint64_t* count) {
  if (!pub || !count || group_id > 0xffff || area_id > 0xffff) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  *count = rhinet::signal_count_locked(ep, RHN_AREA_KEY(group_id, area_id));
  return 0;
}

RHINETDV_EXPORT int rhinetdv_wait_signal(rhinetdv_endpoint* pub,
                                         uint32_t group_id, uint32_t area_id,
                                         uint64_t count, int timeout_ms) {
  if (!pub || group_id > 0xffff || area_id > 0xffff || timeout_ms < -1)
    return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = rhinet::to_ep(pub);
  const uint32_t key = RHN_AREA_KEY(group_id, area_id);
  const uint64_t deadline =
      timeout_ms < 0 ? UINT64_MAX : rhinet::now_ms() + uint64_t(timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> g(ep->lock);
      if (rhinet::signal_count_locked(ep, key) >= count) return 0;
    }
    // Armed first, then looked at again: a signal between the two raises
    // the event, so the sleep below cannot miss it.
    if (ibv_req_notify_cq(ep->cq, 0)) return EIO;
    {
      std::lock_guard<std::mutex> g(ep->lock);
      if (rhinet::signal_count_locked(ep, key) >= count) return 0;
    }
    const uint64_t now = rhinet::now_ms();
    if (now >= deadline) return ETIMEDOUT;
    pollfd pfd{ep->channel->fd, POLLIN, 0};
    const int wait =
        deadline == UINT64_MAX ? -1 : static_cast<int>(deadline - now);
    const int r = poll(&pfd, 1, wait);
    if (r < 0 && errno != EINTR) return errno;
    if (r > 0) {
      ibv_cq* cq;
      void* cq_ctx;
      if (ibv_get_cq_event(ep->channel, &cq, &cq_ctx)) return EIO;
      ibv_ack_cq_events(cq, 1);
    }
  }
}

RHINETDV_EXPORT int rhinetdv_pd_req(rhinetdv_endpoint* pub,
                                    const rhinetdv_pin_attr* attr,
                                    size_t inlen) {
  rhinetdv_pin_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_pin(rhinet::to_ep(pub), a, true);
}

RHINETDV_EXPORT int rhinetdv_pd_release(rhinetdv_endpoint* pub,
                                        const rhinetdv_pin_attr* attr,
                                        size_t inlen) {
  rhinetdv_pin_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_pin(rhinet::to_ep(pub), a, false);
}

RHINETDV_EXPORT int rhinetdv_mcast_list(rhinetdv_endpoint* pub,
                                        const rhinetdv_mcast_attr* attr,
                                        size_t inlen) {
  rhinetdv_mcast_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_mcast(rhinet::to_ep(pub), a, RHN_OP_MCAST_LIST);
}

RHINETDV_EXPORT int rhinetdv_mcast_switch(
    rhinetdv_endpoint* pub, const rhinetdv_mcast_switch_attr* attr,
    size_t inlen) {
  rhinetdv_mcast_switch_attr s;
  if (!pub || !rhinet::extend(attr, inlen, &s, sizeof(s))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  if (s.reserved0 || s.switch_group < RHINETDV_MCAST_SWITCH_FIRST ||
      s.switch_group > RHINETDV_MCAST_SWITCH_LAST)
    return EINVAL;
  // The same work request as a list multicast's, without the list.
  return rhinet::post_mcast(rhinet::to_ep(pub), rhinet::mcast_request_of(s),
                            RHN_OP_MCAST_SWITCH, s.switch_group);
}

RHINETDV_EXPORT int rhinetdv_subscribe(rhinetdv_endpoint* pub,
                                       const rhinetdv_subscribe_attr* attr,
                                       size_t inlen) {
  rhinetdv_subscribe_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_share(rhinet::to_ep(pub), a, true);
}

RHINETDV_EXPORT int rhinetdv_unsubscribe(rhinetdv_endpoint* pub,
                                         const rhinetdv_unsubscribe_attr* attr,
                                         size_t inlen) {
  rhinetdv_unsubscribe_attr u;
  if (!pub || !rhinet::extend(attr, inlen, &u, sizeof(u))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
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
  if (!pub || !rhinet::extend(attr, inlen, &s, sizeof(s))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  // A multicast's work request; the NIC takes the members from its
  // directory of the region.
  return rhinet::post_mcast(rhinet::to_ep(pub), rhinet::mcast_request_of(s),
                            RHN_OP_SHARE_UPDATE);
}

namespace {
int post_sync_pub(rhinetdv_endpoint* pub, const rhinetdv_sync_attr* attr,
                  size_t inlen, uint8_t opcode) {
  rhinetdv_sync_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return rhinet::post_sync(rhinet::to_ep(pub), a, opcode);
}
}  // namespace

RHINETDV_EXPORT int rhinetdv_lock(rhinetdv_endpoint* pub,
                                  const rhinetdv_sync_attr* attr,
                                  size_t inlen) {
  return post_sync_pub(pub, attr, inlen, RHN_OP_LOCK);
}

RHINETDV_EXPORT int rhinetdv_unlock(rhinetdv_endpoint* pub,
                                    const rhinetdv_sync_attr* attr,
                                    size_t inlen) {
  return post_sync_pub(pub, attr, inlen, RHN_OP_UNLOCK);
}

// RHINETDV_1.9: a remote atomic. Always signaled: the operand bytes of
// the WQE are where a status word's reference would go.
RHINETDV_EXPORT int rhinetdv_atomic(rhinetdv_endpoint* pub,
                                    const rhinetdv_atomic_attr* attr,
                                    size_t inlen) {
  rhinetdv_atomic_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  const bool by_key = a.flags & RHINETDV_ATOMIC_BY_KEY;
  const uint64_t target = by_key ? a.remote_addr : a.offset;
  if (a.comp_mask || a.reserved0 ||
      (a.flags & ~uint32_t{RHINETDV_ATOMIC_BY_KEY | RHINETDV_ATOMIC_FENCE}) ||
      (a.op != RHINETDV_ATOMIC_FETCH_ADD && a.op != RHINETDV_ATOMIC_CMP_SWAP) ||
      !a.result || (reinterpret_cast<uintptr_t>(a.result) & 7) ||
      (target & 7) || (a.op == RHINETDV_ATOMIC_FETCH_ADD && a.swap) ||
      (!by_key && (a.area_id > 0xffff || a.group_id > 0xffff)))
    return EINVAL;
  const rhinet::Context* ctx = rhinet::to_ctx(pub->context);
  if (!(ctx->attr.caps & RHN_CAP_ATOMIC)) return EOPNOTSUPP;
  if (!by_key && !rhinet::in_groups(ctx, a.group_id)) return EPERM;
  alignas(8) uint8_t w[RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode =
      a.op == RHINETDV_ATOMIC_FETCH_ADD ? RHN_OP_FETCH_ADD : RHN_OP_CMP_SWAP;
  h->dst_node = a.dest_node;
  h->dst_qpn = a.dest_endpoint;
  if (!by_key) h->flags |= RHN_WQE_F_AREA;
  if (a.flags & RHINETDV_ATOMIC_FENCE) h->flags |= RHN_WQE_F_FENCE;
  h->remote_key = by_key ? a.rkey : RHN_AREA_KEY(a.group_id, a.area_id);
  h->remote_addr = target;
  h->u.atomic.compare_add = a.compare_add;
  h->u.atomic.swap = a.swap;
  h->d.sge = rhn_sge{reinterpret_cast<uintptr_t>(a.result), 8, a.result_lkey};
  h->num_sge = 1;
  rhinet::Endpoint* ep = rhinet::to_ep(pub);
  std::lock_guard<std::mutex> g(ep->lock);
  return rhinet::post_wqe_locked(ep, w, 1, a.wr_id, true);
}

// RHINETDV_1.10: this rank's part of a collective (two slots: the base and
// the collective's description). The NIC checks the keys and what only it
// can know (the communicator, the other ranks); what is plainly wrong is
// refused here.
RHINETDV_EXPORT int rhinetdv_collective(rhinetdv_endpoint* pub,
                                        const rhinetdv_coll_attr* attr,
                                        size_t inlen) {
  rhinetdv_coll_attr a;
  if (!pub || !rhinet::extend(attr, inlen, &a, sizeof(a))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  constexpr uint32_t kKnownFlags = RHINETDV_COLL_SIGNALED |
                                   RHINETDV_COLL_STATUS_WORD |
                                   RHINETDV_COLL_IN_SWITCH;
  const uint32_t size =
      a.type == RHINETDV_COLL_INT64 || a.type == RHINETDV_COLL_UINT64 ||
              a.type == RHINETDV_COLL_DOUBLE
          ? 8
          : 4;
  const bool fl =
      a.type == RHINETDV_COLL_FLOAT || a.type == RHINETDV_COLL_DOUBLE;
  const bool reduces =
      a.op == RHINETDV_COLL_ALLREDUCE || a.op == RHINETDV_COLL_REDUCE;
  const bool rooted = a.op == RHINETDV_COLL_REDUCE || a.op == RHINETDV_COLL_BCAST;
  const bool in_switch = a.flags & RHINETDV_COLL_IN_SWITCH;
  if (a.comp_mask || a.reserved || (a.flags & ~kKnownFlags) ||
      (in_switch && (a.radix || a.op == RHINETDV_COLL_REDUCE ||
                     a.op == RHINETDV_COLL_BCAST)) ||
      a.op < RHINETDV_COLL_ALLREDUCE || a.op > RHINETDV_COLL_BARRIER ||
      a.type > RHINETDV_COLL_DOUBLE || a.reduce > RHINETDV_COLL_BXOR ||
      (reduces && fl && a.reduce > RHINETDV_COLL_MAX) ||
      a.group_id > 0xffff || a.comm_id > 0xffff || !a.nranks ||
      a.nranks > RHINETDV_COLL_MAX_RANKS || a.rank >= a.nranks ||
      (rooted && a.root >= a.nranks) || a.radix > RHINETDV_COLL_MAX_RADIX ||
      a.seg_size > RHN_WIRE_MTU || a.seg_size % size ||
      a.length > UINT32_MAX || a.length % size ||
      (a.op == RHINETDV_COLL_BARRIER && a.length) || !a.members ||
      !rhinet::status_word_ok(a.flags, a.status_word))
    return EINVAL;
  const rhinet::Context* ctx = rhinet::to_ctx(pub->context);
  if (!(ctx->attr.caps & RHN_CAP_COLLECTIVE)) return EOPNOTSUPP;
  if (in_switch && !(ctx->attr.caps & RHN_CAP_COLL_SWITCH)) return EOPNOTSUPP;
  if (!rhinet::in_groups(ctx, a.group_id)) return EPERM;
  alignas(8) uint8_t w[2 * RHN_SQ_SLOT_SIZE];
  memset(w, 0, sizeof(w));
  auto* h = reinterpret_cast<rhn_send_wqe*>(w);
  h->opcode = RHN_OP_COLLECTIVE;
  h->ext_units = 1;
  h->remote_key = RHN_AREA_KEY(a.group_id, a.comm_id);
  if (a.flags & RHINETDV_COLL_STATUS_WORD) {
    h->flags |= RHN_WQE_F_STATUS_WORD;
    h->u.status.addr = reinterpret_cast<uintptr_t>(a.status_word);
    h->u.status.lkey = a.status_lkey;
  }
  auto* x = reinterpret_cast<rhn_wqe_coll*>(w + RHN_SQ_SLOT_SIZE);
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
  return rhinet::post_wqe_locked(ep, w, 2, a.wr_id,
                                 a.flags & RHINETDV_COLL_SIGNALED);
}

RHINETDV_EXPORT int rhinetdv_barrier(rhinetdv_endpoint* pub,
                                     const rhinetdv_sync_attr* attr,
                                     size_t inlen) {
  return post_sync_pub(pub, attr, inlen, RHN_OP_BARRIER);
}
