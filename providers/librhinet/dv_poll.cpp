// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Direct-verbs completions: the endpoint's CQEs, decoded by the provider's
// one decoder (completion.cpp), become rhinetdv completions, signal counts
// or the answer to the library's own probe.
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "dv.h"

namespace rhinet {
namespace {

// An irecv's completion: its slot is free again.
bool convert_irecv(Endpoint* ep, const Completion& k,
                   rhinetdv_completion_ex* c) {
  const uint16_t index = k.wqe_index;
  if (!ep->irecvs) return false;
  IrecvSlot& slot = ep->irecvs[index & (ep->irecv_cap - 1)];
  if (!slot.busy || static_cast<uint16_t>(slot.index) != index) return false;
  slot.busy = false;
  ep->irecv_outstanding--;
  memset(c, 0, sizeof(*c));
  c->base.wr_id = slot.wr_id;
  c->base.status = k.status;
  c->base.byte_len = k.byte_len;
  c->base.opcode = RHINETDV_OP_IRECV;
  c->src_node = k.src_node;
  c->src_endpoint = k.src_qp;
  if (k.status == IBV_WC_SUCCESS || k.status == IBV_WC_LOC_LEN_ERR)
    c->tag = k.tag;
  else
    c->base.syndrome = k.vendor_err;
  return true;
}

// The answer to the library's own probe (a cancel's is only bookkeeping).
void take_probe(Endpoint* ep, const Completion& k) {
  if (k.cqe_opcode != RHN_CQE_OP_IPROBE || k.wr_id != ep->probe_wr_id ||
      ep->probe_done)
    return;
  ep->probe_done = true;
  rhinetdv_tag_info& i = ep->probe_info;
  i = rhinetdv_tag_info{};
  if (k.status == IBV_WC_SUCCESS && (k.ext_flags & RHN_CQE_X_FOUND)) {
    i.found = 1;
    i.length = k.byte_len;
    i.src_node = k.src_node;
    i.src_endpoint = k.src_qp;
    i.tag = k.tag;
  }
}

// Takes one decoded completion into the caller's form; false when there is
// nothing to report (the library signaled it and it succeeded, a signal,
// the library's own probe or cancel).
bool convert(Endpoint* ep, const Completion& k, rhinetdv_completion_ex* c) {
  if (k.watch_fired) {  // counted, not reported
    ep->watches[static_cast<uint32_t>(k.wr_id)]++;
    return false;
  }
  switch (k.cqe_opcode) {
    case RHN_CQE_OP_SIGNAL:  // counted, not reported
      ep->signals[static_cast<uint32_t>(k.wr_id)] += k.imm_data;
      return false;
    case RHN_CQE_OP_TAG_RECV:
      return convert_irecv(ep, k, c);
    case RHN_CQE_OP_IPROBE:
    case RHN_CQE_OP_IRECV_CANCEL:
      take_probe(ep, k);
      return false;
    default:
      break;
  }
  if (k.status == IBV_WC_SUCCESS && !k.reported) return false;
  memset(c, 0, sizeof(*c));
  c->base.wr_id = k.wr_id;
  c->base.status = k.status;
  c->base.syndrome = k.vendor_err;
  c->base.byte_len = k.byte_len;
  c->base.opcode = static_cast<uint32_t>(k.dv_opcode);
  return true;
}

// One completion off the endpoint's CQ; false if there is none.
bool poll_cqe(Endpoint* ep, Completion* k) {
  Cq* cq = to_cq(ep->cq);
  std::lock_guard<std::mutex> g(cq->lock);
  if (!poll_one(cq, k)) return false;
  publish_consumer(cq);
  return true;
}

uint64_t signal_count_locked(Endpoint* ep, uint32_t key) {
  drain(ep, INT_MAX, nullptr);
  const auto it = ep->signals.find(key);
  return it == ep->signals.end() ? 0 : it->second;
}

}  // namespace

uint64_t watch_count_locked(Endpoint* ep, uint32_t key) {
  drain(ep, INT_MAX, nullptr);
  const auto it = ep->watches.find(key);
  return it == ep->watches.end() ? 0 : it->second;
}

int wait_count(Endpoint* ep, uint64_t (*count_locked)(Endpoint*, uint32_t),
               uint32_t key, uint64_t count, int timeout_ms) {
  const uint64_t deadline =
      timeout_ms < 0 ? UINT64_MAX : now_ms() + uint64_t(timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> g(ep->lock);
      if (count_locked(ep, key) >= count) return 0;
    }
    // Armed first, then looked at again: a CQE between the two raises
    // the event, so the sleep below cannot miss it.
    if (ibv_req_notify_cq(ep->cq, 0)) return EIO;
    {
      std::lock_guard<std::mutex> g(ep->lock);
      if (count_locked(ep, key) >= count) return 0;
    }
    const uint64_t now = now_ms();
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

int drain(Endpoint* ep, int n, rhinetdv_completion_ex* out) {
  int reported = 0;
  while (reported < n) {
    Completion k;
    if (!poll_cqe(ep, &k)) break;
    rhinetdv_completion_ex c;
    if (!convert(ep, k, &c)) continue;
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

uint64_t now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000 + uint64_t(t.tv_nsec) / 1000000;
}

}  // namespace rhinet

using rhinet::Endpoint;
using rhinet::is_rhinet_context;

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
  return rhinet::wait_count(rhinet::to_ep(pub), rhinet::signal_count_locked,
                            RHN_AREA_KEY(group_id, area_id), count, timeout_ms);
}

RHINETDV_EXPORT int rhinetdv_arm_event(rhinetdv_endpoint* pub) {
  if (!pub) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = rhinet::to_ep(pub);
  return ibv_req_notify_cq(ep->cq, 0) ? EIO : 0;
}

RHINETDV_EXPORT int rhinetdv_wait_event(rhinetdv_endpoint* pub,
                                        int timeout_ms) {
  if (!pub || timeout_ms < -1) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  Endpoint* ep = rhinet::to_ep(pub);
  pollfd pfd{ep->channel->fd, POLLIN, 0};
  const int r = poll(&pfd, 1, timeout_ms);
  if (r < 0) return errno;
  if (r == 0) return ETIMEDOUT;
  ibv_cq* cq;
  void* cq_ctx;
  if (ibv_get_cq_event(ep->channel, &cq, &cq_ctx)) return EIO;
  ibv_ack_cq_events(cq, 1);
  return 0;
}
