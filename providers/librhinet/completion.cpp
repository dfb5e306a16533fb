// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Completions: the one CQE decoder. A poll reads CQEs whose owner bit says
// they are new, decodes each into a Completion (what verbs and direct
// verbs both need: the wr_id the posting queue kept, status, lengths, the
// opcode in both APIs' terms), and hands the consumed index back through
// the CQ record. poll_cq and the ibv_cq_ex calls (cq_ex.cpp) report it as
// verbs do, rhinetdv_poll (dv_endpoint.cpp) as direct verbs do.
#include <infiniband/rhinetdv.h>

#include <array>
#include <cstring>

#include "provider.h"

namespace rhinet {

namespace {

// RoCE has no service level; a UD receive reports in wc.sl which network
// header its buffer starts with, as mlx5 does (0 GRH, 1 IPv6, 2 IPv4):
// UCX's ud_verbs reads it to find the destination address of RoCE v2
// packets, and drops IPv4 ones without it.
uint8_t roce_header_type(uint8_t cqe_flags) {
  if (cqe_flags & RHN_CQE_F_NET_IPV4) return 2;
  if (cqe_flags & RHN_CQE_F_NET_IPV6) return 1;
  return 0;
}

// The full index a CQE's low 16 bits name, at or after @base.
uint32_t widen(uint32_t base, uint16_t low) {
  return base + static_cast<uint16_t>(low - static_cast<uint16_t>(base));
}

// A status the provider does not know is a general error.
ibv_wc_status wc_status(uint8_t status) {
  return status <= IBV_WC_TM_RNDV_INCOMPLETE
             ? static_cast<ibv_wc_status>(status)
             : IBV_WC_GENERAL_ERR;
}

// The direct-verbs opcode of each CQE opcode, from the operation table
// (hw_ops.h): the row that names one (rows may share a CQE opcode: a SEND
// CQE is an isend's to direct verbs).
constexpr std::array<uint8_t, 256> kDvOfCqe = [] {
  std::array<uint8_t, 256> t{};
#define RHINET_DV_OF_CQE(op, name, wire, cqe, dv, ...) \
  if (dv) t[cqe] = dv;
  RHN_OP_TABLE(RHINET_DV_OF_CQE)
#undef RHINET_DV_OF_CQE
  return t;
}();

static_assert(kDvOfCqe[RHN_CQE_OP_WRITE] == RHINETDV_OP_PUSH &&
                  kDvOfCqe[RHN_CQE_OP_READ] == RHINETDV_OP_PULL &&
                  kDvOfCqe[RHN_CQE_OP_SEND] == RHINETDV_OP_ISEND &&
                  kDvOfCqe[RHN_CQE_OP_TAG_RECV] == RHINETDV_OP_IRECV &&
                  kDvOfCqe[RHN_CQE_OP_PD_RELEASE] == RHINETDV_OP_PD_RELEASE &&
                  kDvOfCqe[RHN_CQE_OP_BARRIER] == RHINETDV_OP_BARRIER &&
                  kDvOfCqe[RHN_CQE_OP_COLLECTIVE] == RHINETDV_OP_COLLECTIVE &&
                  kDvOfCqe[RHN_CQE_OP_TRIGGER_ADD] == RHINETDV_OP_TRIGGER_ADD,
              "the operation table's direct-verbs opcodes are rhinetdv's");

// A CQE opcode in verbs' terms (kNoWcOpcode: direct verbs only) and in
// direct verbs' (an endpoint's other sends complete as PUSH).
struct OpNames {
  int wc;
  int dv;
};

int wc_opcode(uint8_t op) {
  switch (op) {
    case RHN_CQE_OP_SEND:
      return IBV_WC_SEND;
    case RHN_CQE_OP_WRITE:
      return IBV_WC_RDMA_WRITE;
    case RHN_CQE_OP_READ:
      return IBV_WC_RDMA_READ;
    case RHN_CQE_OP_CMP_SWAP:
      return IBV_WC_COMP_SWAP;
    case RHN_CQE_OP_FETCH_ADD:
    // verbs have no opcode of their own for it: a fetch-and-add of a
    // peer's counter (rhinetdv_wr_trigger_add)
    case RHN_CQE_OP_TRIGGER_ADD:
      return IBV_WC_FETCH_ADD;
    case RHN_CQE_OP_RECV_WRITE_IMM:
      return IBV_WC_RECV_RDMA_WITH_IMM;
    case RHN_CQE_OP_BIND_MW:
      return IBV_WC_BIND_MW;
    case RHN_CQE_OP_LOCAL_INV:
      return IBV_WC_LOCAL_INV;
    case RHN_CQE_OP_TM_RECV:
    case RHN_CQE_OP_TM_UNEXPECTED:
      return IBV_WC_TM_RECV;
    case RHN_CQE_OP_TM_NO_TAG:
      return IBV_WC_TM_NO_TAG;
    case RHN_CQE_OP_SIGNAL:  // the library's own
    case RHN_CQE_OP_IPROBE:
    case RHN_CQE_OP_IRECV_CANCEL:
      return kNoWcOpcode;
    default:  // receives; a raw Ethernet send or REG_MR the same way
      return kDvOfCqe[op] ? kNoWcOpcode : IBV_WC_RECV;
  }
}

OpNames op_names(uint8_t op) {
  return {wc_opcode(op),
          kDvOfCqe[op] ? int{kDvOfCqe[op]} : int{RHINETDV_OP_PUSH}};
}

// @member: a run's completion before its last, which the entry names;
// false if it turned out the last (a run the ring does not match).
bool complete_send(Cq* cq, Qp* qp, const rhn_cqe& e, Completion* c,
                   bool member) {
  // A multi-producer QP's posters take the room this completion frees at
  // once, and the NIC may write their CQEs before this poll ends: it must
  // see this entry as read first, or a CQ exactly as deep as the posters'
  // credit looks full to it and overflows.
  if (qp->mp) publish_consumer(cq);
  std::lock_guard<std::mutex> g(qp->sq_lock);
  if (member && sq_complete_run_member(qp, e.wqe_index, &c->wr_id, &c->reported,
                                       &c->wqe_index))
    return true;
  sq_complete(qp, e.wqe_index, &c->wr_id, &c->reported);
  return false;
}

// ---- Tag matching (TM SRQs).

// More unexpected messages than this polled since the last count software
// reported: completions ask for a sync (IBV_WC_TM_SYNC_REQ), as mlx5's do.
constexpr uint32_t kTmMaxSyncDiff = 0x3fff;

bool is_list_op(uint8_t op) {
  return op == RHN_CQE_OP_TM_ADD || op == RHN_CQE_OP_TM_DEL ||
         op == RHN_CQE_OP_TM_SYNC;
}

// A CQE the NIC will write no more of for a tag-list entry (srq->lock
// held): the entry is free once none is owed.
void release_tag(Srq* srq, uint32_t h) {
  if (h >= srq->max_tags) return;
  Srq::TmTag& t = srq->tags[h];
  if (!t.refs || --t.refs) return;
  t.next_free = srq->free_tag;
  srq->free_tag = h;
}

// The last CQE of a match: its data is in place, or it failed.
bool final_tm_recv(const rhn_cqe& e) {
  return (e.ext_flags & RHN_CQE_X_TM_DATA_VALID) || e.status != RHN_CQE_SUCCESS;
}

// A list operation's CQE (qpn = the SRQ): false if nobody asked for it
// (an unsignaled DEL's, which completes only for the bookkeeping).
bool complete_list_op(Context* ctx, const rhn_cqe& e, Completion* c) {
  Srq* srq = ctx->srqs.get(e.qpn);
  if (!srq || !srq->tm) return false;
  std::lock_guard<std::mutex> g(srq->lock);
  const Srq::TmOp& op = srq->op_info[e.wqe_index & (srq->ops_depth - 1)];
  const bool ok = e.status == RHN_CQE_SUCCESS;
  if (op.opcode == RHN_TM_OP_ADD && op.handle < srq->max_tags) {
    if (!ok) srq->tags[op.handle].refs = 1;  // never in the list
    release_tag(srq, op.handle);
  } else if (op.opcode == RHN_TM_OP_DEL) {
    release_tag(srq, op.handle);          // the DEL's
    if (ok) release_tag(srq, op.handle);  // and no match will come
  }
  if (!op.signaled && (ok || op.opcode == RHN_TM_OP_DEL)) return false;
  *c = Completion{};
  c->wr_id = op.wr_id;
  c->status = wc_status(e.status);
  c->vendor_err = e.vendor_err;
  c->cqe_opcode = e.opcode;
  c->wc_opcode = op.opcode == RHN_TM_OP_ADD   ? IBV_WC_TM_ADD
                 : op.opcode == RHN_TM_OP_DEL ? IBV_WC_TM_DEL
                                              : IBV_WC_TM_SYNC;
  if (e.ext_flags & RHN_CQE_X_TM_SYNC_REQ) c->wc_flags |= IBV_WC_TM_SYNC_REQ;
  return true;
}

// A message matched an entry (wqe_index = its handle).
void complete_tm_recv(Qp* qp, const rhn_cqe& e, Completion* c) {
  if (e.ext_flags & RHN_CQE_X_TM_MATCH) c->wc_flags |= IBV_WC_TM_MATCH;
  if (e.ext_flags & RHN_CQE_X_TM_DATA_VALID)
    c->wc_flags |= IBV_WC_TM_DATA_VALID;
  if (e.status == RHN_CQE_SUCCESS || e.status == RHN_CQE_LOC_LEN_ERR ||
      e.status == RHN_CQE_TM_RNDV_INCOMPLETE) {
    c->tm.tag = uint64_t{e.vendor_err} << 32 | e.imm_data;
    c->tm.priv = e.src_qpn;  // the header's app_ctx
    c->vendor_err = 0;
  }
  Srq* srq = qp->srq;
  if (!srq || !srq->tm) return;
  std::lock_guard<std::mutex> g(srq->lock);
  if (e.wqe_index < srq->max_tags) c->wr_id = srq->tags[e.wqe_index].wr_id;
  if (final_tm_recv(e)) release_tag(srq, e.wqe_index);
}

// A receive WQE of @srq completed: its wr_id, and its ring slot is free.
void complete_srq_recv(Srq* srq, const rhn_cqe& e, Completion* c) {
  std::lock_guard<std::mutex> g(srq->lock);
  const uint32_t pos = e.wqe_index & (srq->depth - 1);
  c->wr_id = srq->wr_ids[pos];
  srq->busy[pos] = 0;
}

void complete_recv(Qp* qp, const rhn_cqe& e, Completion* c) {
  if (qp->srq) return complete_srq_recv(qp->srq, e, c);
  std::lock_guard<std::mutex> g(qp->rq_lock);
  const uint32_t idx = widen(qp->rq_consumer, e.wqe_index);
  c->wr_id = qp->rq_wr_ids[idx & (qp->rq_depth - 1)];
  qp->rq_consumer = idx + 1;
}

}  // namespace

bool poll_one(Cq* cq, Completion* out) {
  Context* ctx = to_ctx(cq->vcq.cq.context);
  const uint32_t mask = (1u << cq->log_depth) - 1;
  for (;;) {
    const rhn_cqe* slot = &cq->ring[cq->consumer & mask];
    const uint8_t flags = __atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE);
    const bool phase = ((cq->consumer >> cq->log_depth) & 1) ^ 1;
    if (((flags & RHN_CQE_F_OWNER) != 0) != phase) return false;
    from_device_barrier();
    const rhn_cqe e = *slot;
    // A run (queues.md, "Runs") is handed out one completion per call:
    // this is its completion number `pos` of `n`, the entry's own the
    // last. The entry is consumed with that one only, so a caller that
    // asked for fewer finds the rest here next time.
    const uint32_t n =
        (e.ext_flags & RHN_CQE_X_RUN) ? uint32_t{e.run_extra} + 1 : 1;
    const uint32_t pos = cq->run_given;
    const bool member = pos + 1 < n;
    if (member) {
      cq->run_given++;
    } else {
      cq->run_given = 0;
      cq->consumer++;
    }
    if (is_list_op(e.opcode)) {  // qpn names a TM SRQ
      if (complete_list_op(ctx, e, out)) return true;
      continue;
    }

    // A receive through an XRC SRQ names the target QP, which may be
    // another process's: the SRQ is found by its own number.
    Srq* xrc_srq = nullptr;
    Qp* qp = nullptr;
    if (e.ext_flags & RHN_CQE_X_XRC) {
      xrc_srq = ctx->srqs.get(e.xrc_srqn);
      if (!xrc_srq || !xrc_srq->xrc) continue;  // destroy cleans the CQ
    } else {
      qp = ctx->qps.get(e.qpn);
      if (!qp) continue;  // not ours (cannot happen: destroy cleans the CQ)
    }
    Completion& c = *out;
    c = Completion{};
    const OpNames names = op_names(e.opcode);
    c.status = wc_status(e.status);
    c.vendor_err = e.vendor_err;
    c.cqe_opcode = e.opcode;
    c.ext_flags = e.ext_flags;
    c.wc_opcode = names.wc;
    c.dv_opcode = names.dv;
    c.qp_num = e.qpn;
    c.byte_len = e.byte_len;
    c.wqe_index = e.wqe_index;
    if (e.flags & RHN_CQE_F_IMM) c.wc_flags |= IBV_WC_WITH_IMM;
    // An invalidated key shares imm_data's bytes.
    if (e.flags & RHN_CQE_F_INV) c.wc_flags |= IBV_WC_WITH_INV;
    if (e.flags & (RHN_CQE_F_IMM | RHN_CQE_F_INV)) c.imm_data = e.imm_data;
    if (xrc_srq) {
      complete_srq_recv(xrc_srq, e, &c);
      c.src_qp = e.src_qpn;
      if (e.flags & RHN_CQE_F_GRH) c.wc_flags |= IBV_WC_GRH;
      c.sl = roce_header_type(e.flags);
    } else if (e.opcode == RHN_CQE_OP_WATCH && !(e.flags & RHN_CQE_F_SQ)) {
      // A watch fired on one of the endpoint's areas: no WQE of either
      // queue; wr_id = the area key.
      c.wr_id = e.vendor_err;
      c.vendor_err = 0;
      c.src_qp = e.src_qpn;
      c.src_node = e.src_node;
      c.watch_fired = true;
    } else if (e.opcode == RHN_CQE_OP_SIGNAL || e.opcode == RHN_CQE_OP_TAG_RECV ||
        e.opcode == RHN_CQE_OP_IPROBE || e.opcode == RHN_CQE_OP_IRECV_CANCEL) {
      // Direct verbs' own: a signal on one of the endpoint's areas (no
      // receive WQE; wr_id = the area key, imm = the value it adds), an
      // irecv's completion (out of RQ order: wqe_index names it), a probe's
      // or cancel's answer; tags arrive split over imm_data and vendor_err.
      c.imm_data = e.imm_data;
      c.tag = uint64_t{e.imm_data} | uint64_t{e.vendor_err} << 32;
      c.src_qp = e.src_qpn;
      c.src_node = e.src_node;
      if (e.opcode == RHN_CQE_OP_SIGNAL) {
        c.wr_id = e.vendor_err;
        c.vendor_err = 0;
      } else if (e.opcode == RHN_CQE_OP_TAG_RECV) {
        c.wr_id = e.wqe_index;
      } else {
        complete_send(cq, qp, e, &c, false);
      }
    } else if (e.opcode == RHN_CQE_OP_TM_RECV) {
      complete_tm_recv(qp, e, &c);
    } else if (e.flags & RHN_CQE_F_SQ) {
      // A run's: every signalled WQE from the SQ's consumer up to the
      // one the entry names.
      if (!complete_send(cq, qp, e, &c, member) && member) {
        // The ring has no signalled WQE before the last: the entry is done.
        cq->run_given = 0;
        cq->consumer++;
      }
    } else if (member) {
      // A run's receives took the RQ's WQEs in order, the entry's the last
      // (all of one length).
      rhn_cqe m = e;
      m.wqe_index = static_cast<uint16_t>(e.wqe_index - (n - 1 - pos));
      c.wqe_index = m.wqe_index;
      complete_recv(qp, m, &c);
      c.src_qp = e.src_qpn;
    } else {
      complete_recv(qp, e, &c);
      c.src_qp = e.src_qpn;
      if (e.flags & RHN_CQE_F_GRH) c.wc_flags |= IBV_WC_GRH;
      c.sl = roce_header_type(e.flags);
      // A TM SRQ's receive WQE: a message for software to match.
      if (e.opcode == RHN_CQE_OP_TM_UNEXPECTED) {
        if (!qp->srq) {
          c.wc_opcode = IBV_WC_RECV;
        } else {
          std::lock_guard<std::mutex> g(qp->srq->lock);
          if (++qp->srq->unexp_in - qp->srq->unexp_out > kTmMaxSyncDiff)
            c.wc_flags |= IBV_WC_TM_SYNC_REQ;
        }
      }
    }
    return true;
  }
}

void to_wc(const Completion& c, ibv_wc* wc) {
  memset(wc, 0, sizeof(*wc));
  wc->wr_id = c.wr_id;
  wc->status = c.status;
  wc->opcode = wc_opcode_of(c);
  wc->vendor_err = c.vendor_err;
  wc->byte_len = c.byte_len;
  wc->imm_data = c.imm_data;  // invalidated_rkey shares it
  wc->qp_num = c.qp_num;
  wc->src_qp = c.src_qp;
  wc->wc_flags = c.wc_flags;
  wc->slid = c.src_node;
  wc->sl = c.sl;
}

namespace {

// Removes the CQEs @drop says go from @cq (its lock held), moving the later
// ones up; @drop gives back what a removed one held.
template <typename Drop>
void clean_cq(Cq* cq, Drop drop) {
  const uint32_t depth = 1u << cq->log_depth, mask = depth - 1;
  uint32_t end = cq->consumer;  // the entries the NIC has written
  while (end - cq->consumer < depth) {
    const rhn_cqe* slot = &cq->ring[end & mask];
    const uint8_t flags = __atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE);
    const bool phase = ((end >> cq->log_depth) & 1) ^ 1;
    if (((flags & RHN_CQE_F_OWNER) != 0) != phase) break;
    end++;
  }
  from_device_barrier();
  uint32_t removed = 0;
  for (uint32_t i = end; i != cq->consumer;) {
    --i;
    rhn_cqe e = cq->ring[i & mask];
    if (drop(e)) {
      // A run partly handed out goes with the rest of it.
      if (i == cq->consumer) cq->run_given = 0;
      removed++;
    } else if (removed) {
      // Into a slot that holds an entry of the same lap: keep its owner.
      rhn_cqe* dst = &cq->ring[(i + removed) & mask];
      e.flags = static_cast<uint8_t>((e.flags & ~RHN_CQE_F_OWNER) |
                                     (dst->flags & RHN_CQE_F_OWNER));
      *dst = e;
    }
  }
  if (removed) {
    cq->consumer += removed;
    publish_consumer(cq);
  }
}

}  // namespace

void clean_qp_cqes(Qp* qp, bool forget) {
  Context* ctx = to_ctx(qp->vqp.qp.context);
  Cq* scq = to_cq(qp->vqp.qp.send_cq);
  // An XRC initiator has no receive CQ (the NIC's stand-in is the send CQ).
  Cq* rcq = qp->vqp.qp.recv_cq ? to_cq(qp->vqp.qp.recv_cq) : scq;
  // Two CQs are locked in address order, so two cleaners cannot deadlock.
  Cq* first = scq < rcq ? scq : rcq;
  Cq* second = scq < rcq ? rcq : scq;
  std::unique_lock<std::mutex> l1(first->lock);
  std::unique_lock<std::mutex> l2;
  if (second != first) l2 = std::unique_lock<std::mutex>(second->lock);
  // (A TM SRQ's list operations name the SRQ in qpn: not the QP's.)
  auto mine = [qp](const rhn_cqe& e) {
    return e.qpn == qp->qpn && !is_list_op(e.opcode);
  };
  if (scq != rcq) clean_cq(scq, mine);
  clean_cq(rcq, [&](const rhn_cqe& e) {
    if (!mine(e)) return false;
    // Receives the QP took from its SRQ are given back to it.
    if (qp->srq && !(e.flags & RHN_CQE_F_SQ)) {
      Srq* srq = qp->srq;
      std::lock_guard<std::mutex> g(srq->lock);
      if (e.opcode != RHN_CQE_OP_TM_RECV)
        srq->busy[e.wqe_index & (srq->depth - 1)] = 0;
      else if (final_tm_recv(e))
        release_tag(srq, e.wqe_index);
    }
    return true;
  });
  if (forget) {
    std::lock_guard<std::mutex> g(ctx->table_lock);
    ctx->qps.set(qp->qpn, nullptr);
  }
}

void clean_srq_cqes(Srq* srq) {
  Context* ctx = to_ctx(srq->vsrq.srq.context);
  Cq* cq = srq->tm ? srq->tm_cq : srq->xrc_cq;
  {
    std::lock_guard<std::mutex> g(cq->lock);
    clean_cq(cq, [srq](const rhn_cqe& e) {
      if (srq->xrc)
        return (e.ext_flags & RHN_CQE_X_XRC) && e.xrc_srqn == srq->srqn;
      return is_list_op(e.opcode) && e.qpn == srq->srqn;
    });
  }
  std::lock_guard<std::mutex> g(ctx->table_lock);
  ctx->srqs.set(srq->srqn, nullptr);
}

void publish_consumer(Cq* cq) {
  to_device_barrier();
  __atomic_store_n(&cq->record->consumer_index, cq->consumer, __ATOMIC_RELEASE);
}

int poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = to_cq(ibcq);
  int got = 0;

  std::lock_guard<std::mutex> g(cq->lock);
  const uint32_t before = cq->consumer;
  Completion c;
  while (got < n && poll_one(cq, &c)) to_wc(c, &wc[got++]);
  if (cq->consumer != before) publish_consumer(cq);
  return got;
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = to_cq(ibcq);
  {
    std::lock_guard<std::mutex> g(cq->lock);
    // The consumer index goes back with every arm (the NIC's view of how
    // full the CQ is); the event is for completions added after the kick.
    __atomic_store_n(&cq->record->consumer_index, cq->consumer,
                     __ATOMIC_RELEASE);
  }
  to_ctx(ibcq->context)
      ->kick(RHN_DB_CQ_ARM,
             cq->cqn | (solicited_only ? RHN_DB_CQ_SOLICITED : 0));
  return 0;
}

}  // namespace rhinet
