// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/verbs.h"

#include <algorithm>
#include <cstring>

namespace rhinet::sim {

namespace {

constexpr uint32_t kQueueAccess = RHN_ACCESS_LOCAL_WRITE;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Atomics carry their operands where other WQEs have a status word: the
// operation table says which opcodes they are.
bool is_atomic(uint8_t op) {
  const rhn_op_desc* row = rhn_op_row(op);
  return row && (row->flags & RHN_OPF_ATOMIC);
}

}  // namespace

// ---- QueueMemory
// -------------------------------------------------------------

rhn_host_ref QueueMemory::ref(size_t offset) const {
  rhn_host_ref r;
  std::memset(&r, 0, sizeof r);
  r.addr = buf.va() + offset;
  r.lkey = lkey;
  return r;
}

void QueueMemory::set_record(uint32_t index) {
  // The index only (same place as rhn_cq_record's): the NIC may write the
  // rest of a queue record.
  buf.write(record_offset + RHN_OFFSETOF(rhn_queue_record, producer_index),
            &index, sizeof index);
}

uint32_t QueueMemory::nic_consumer() const {
  uint32_t v = 0;
  buf.read(record_offset + RHN_OFFSETOF(rhn_queue_record, nic_consumer), &v,
           sizeof v);
  return v;
}

// ---- SimCq
// ---------------------------------------------------------------------

SimCq::~SimCq() {
  for (auto& [qpn, qp] : qps_) {
    if (qp->send_cq_ == this) qp->send_cq_ = nullptr;
    if (qp->recv_cq_ == this) qp->recv_cq_ = nullptr;
  }
  for (auto& [srqn, srq] : tm_srqs_) srq->tm_cq_ = nullptr;
  for (auto& [srqn, srq] : xrc_srqs_) srq->xrc_cq_ = nullptr;
}

std::vector<Completion> SimCq::poll(size_t max) {
  std::vector<Completion> out;
  Completion c;
  while (out.size() < max && poll_one(&c)) out.push_back(c);
  return out;
}

bool SimCq::peek_entry(rhn_cqe* out) const {
  mem_.buf.read(size_t(ci_ & (depth_ - 1)) * RHN_CQE_SIZE, out, sizeof *out);
  // Owner bit of lap k is (k & 1) ^ 1; anything else is last lap's entry.
  const uint8_t want = uint8_t(((ci_ / depth_) & 1) ^ 1);
  return ((out->flags & RHN_CQE_F_OWNER) ? 1 : 0) == want;
}

bool SimCq::poll_one(Completion* out) {
  rhn_cqe cqe;
  if (!peek_entry(&cqe)) return false;

  Completion c;
  c.qpn = cqe.qpn;
  c.byte_len = cqe.byte_len;
  c.imm_data = cqe.imm_data;
  c.src_qpn = cqe.src_qpn;
  c.src_node = cqe.src_node;
  c.wqe_index = cqe.wqe_index;
  c.vendor_err = cqe.vendor_err;
  c.opcode = cqe.opcode;
  c.status = cqe.status;
  c.flags = cqe.flags;
  c.ext_flags = cqe.ext_flags;
  c.xrc_srqn = cqe.xrc_srqn;
  c.wr_id = UINT64_MAX;  // unknown QP or WQE
  if (cqe.ext_flags & RHN_CQE_X_RUN) c.run_count = uint32_t{cqe.run_extra} + 1;
  auto it = qps_.find(cqe.qpn);
  const bool list_op = c.opcode == RHN_CQE_OP_TM_ADD ||
                       c.opcode == RHN_CQE_OP_TM_DEL ||
                       c.opcode == RHN_CQE_OP_TM_SYNC;
  // Of a run, this is completion run_given_ (0-based); the entry's own
  // (its wqe_index) is the last.
  const bool run_member = run_given_ + 1 < c.run_count;
  if (c.ext_flags & RHN_CQE_X_XRC) {  // an XRC SRQ's, whatever the QP
    auto s = xrc_srqs_.find(cqe.xrc_srqn);
    if (s != xrc_srqs_.end()) {
      ++s->second->ci_;
      c.wr_id = s->second->shadow_[c.wqe_index & (s->second->depth_ - 1)];
    }
  } else if (list_op) {  // qpn names a TM SRQ
    auto s = tm_srqs_.find(cqe.qpn);
    if (s != tm_srqs_.end())
      c.wr_id =
          s->second->ops_shadow_[c.wqe_index & (s->second->ops_depth_ - 1)];
  } else if (c.opcode == RHN_CQE_OP_TM_RECV) {  // wqe_index: the handle
    if (it != qps_.end() && it->second->srq_) {
      auto& ids = it->second->srq_->tag_wr_ids_;
      auto t = ids.find(c.wqe_index);
      if (t != ids.end()) c.wr_id = t->second;
    }
  } else if (c.opcode == RHN_CQE_OP_WATCH && !c.is_send()) {
    // A watch firing (ops/watch): no WQE of either queue.
  } else if (it != qps_.end()) {
    SimQp* qp = it->second;
    if (run_member && c.is_send()) {
      c.wr_id = qp->complete_next_signaled(&c.wqe_index);
    } else if (run_member) {
      // The receive side's WQEs are consecutive, the entry's the last.
      c.wqe_index = uint16_t(cqe.wqe_index - (c.run_count - 1 - run_given_));
      c.wr_id = qp->complete_recv(c.wqe_index);
    } else {
      c.wr_id = c.is_send() ? qp->complete_send(c.wqe_index)
                : c.opcode == RHN_CQE_OP_TAG_RECV
                    ? qp->complete_tag_recv(c.wqe_index)
                    : qp->complete_recv(c.wqe_index);
    }
  }
  if (run_member) {
    ++run_given_;  // the entry stays until its last completion
  } else {
    run_given_ = 0;
    ++ci_;
    mem_.set_record(ci_);
  }
  *out = c;
  return true;
}

void SimCq::arm(bool solicited_only) {
  ctx_->doorbell(RHN_DB_CQ_ARM,
                 cqn_ | (solicited_only ? RHN_DB_CQ_SOLICITED : 0));
}

// ---- SimSrq
// --------------------------------------------------------------------

bool SimSrq::post_recv(uint64_t wr_id, const std::vector<Sge>& sges) {
  if (sges.size() > RHN_RQ_MAX_SGES || pi_ - ci_ >= depth_) return false;
  rhn_recv_wqe w;
  std::memset(&w, 0, sizeof w);
  w.wqe_index = uint16_t(pi_);
  w.num_sge = uint16_t(sges.size());
  for (size_t i = 0; i < sges.size(); ++i) {
    w.sge[i].addr = sges[i].addr;
    w.sge[i].length = sges[i].length;
    w.sge[i].lkey = sges[i].lkey;
  }
  mem_.buf.write(size_t(pi_ & (depth_ - 1)) * RHN_RQ_WQE_SIZE, &w, sizeof w);
  shadow_[pi_ & (depth_ - 1)] = wr_id;
  ++pi_;
  mem_.set_record(pi_);
  ctx_->doorbell(RHN_DB_SRQ, srqn_);
  return true;
}

SimSrq::~SimSrq() {
  if (tm_cq_) tm_cq_->tm_srqs_.erase(srqn_);
  if (xrc_cq_) xrc_cq_->xrc_srqs_.erase(srqn_);
}

bool SimSrq::write_tm_op(const TmOp& op) {
  if (!ops_depth_ || ops_pi_ - ops_mem_.nic_consumer() >= ops_depth_)
    return false;
  rhn_tm_op_wqe w;
  std::memset(&w, 0, sizeof w);
  w.opcode = op.opcode;
  w.flags = op.flags;
  w.wqe_index = uint16_t(ops_pi_);
  w.handle = op.handle;
  w.unexpected_cnt = op.unexpected_cnt;
  w.tag = op.tag;
  w.mask = op.mask;
  if (op.sge) {
    w.num_sge = 1;
    w.sge.addr = op.sge->addr;
    w.sge.length = op.sge->length;
    w.sge.lkey = op.sge->lkey;
  }
  ops_mem_.buf.write(size_t(ops_pi_ & (ops_depth_ - 1)) * RHN_TM_OP_WQE_SIZE,
                     &w, sizeof w);
  ops_shadow_[ops_pi_ & (ops_depth_ - 1)] = op.wr_id;
  if (op.opcode == RHN_TM_OP_ADD) tag_wr_ids_[op.handle] = op.recv_wr_id;
  ++ops_pi_;
  ops_mem_.set_record(ops_pi_);
  return true;
}

void SimSrq::kick_tm_ops() {
  ctx_->doorbell(RHN_DB_SRQ, srqn_ | RHN_DB_SRQ_TM_OPS);
}

bool SimSrq::post_tm_op(const TmOp& op) {
  if (!write_tm_op(op)) return false;
  kick_tm_ops();
  return true;
}

// ---- SimQp
// ---------------------------------------------------------------------

SimQp::~SimQp() {
  if (send_cq_) send_cq_->qps_.erase(qpn_);
  if (recv_cq_ && recv_cq_ != send_cq_) recv_cq_->qps_.erase(qpn_);
}

bool SimQp::encode(const SendWr& wr, uint16_t wqe_index,
                   std::vector<uint8_t>* slots) {
  const bool inl = (wr.flags & RHN_WQE_F_INLINE) != 0;
  // The builders write where they are told: refuse what the buffer cannot
  // hold before building.
  if (inl ? wr.inline_data.size() > RHN_WQE_MAX_INLINE
          : wr.sges.size() > RHN_WQE_MAX_SGES)
    return false;
  uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE] = {};
  rhn_send_wqe* w = rhn_wqe_start(buf, wr.opcode, wr.flags, wqe_index);
  w->dst_node = wr.dst_node;
  w->dst_qpn = wr.dst_qpn;
  w->imm_data = wr.imm_data;
  w->remote_key = wr.remote_key;
  w->remote_addr = wr.remote_addr;
  if (is_atomic(wr.opcode)) {
    w->u.atomic.compare_add = wr.compare_add;
    w->u.atomic.swap = wr.swap;
  } else if (wr.opcode == RHN_OP_BIND_MW) {
    w->u.bind.mw_key = wr.bind_mw_key;
    w->u.bind.mr_lkey = wr.bind_mr_lkey;
    w->u.bind.length = wr.bind_length;
  } else if (wr.opcode == RHN_OP_IPROBE || wr.opcode == RHN_OP_IRECV_CANCEL) {
    w->u.tag.mask = wr.tag_mask;
    w->u.tag.flags = wr.tag_flags;
  } else if (wr.opcode == RHN_OP_REG_MR) {
    w->u.reg.length = wr.reg_length;
    w->u.reg.num_pages = wr.reg_pages;
    w->u.reg.page_shift = wr.reg_page_shift;
  } else {
    if (wr.flags & RHN_WQE_F_STATUS_WORD) {
      w->u.status.addr = wr.status_addr;
      w->u.status.lkey = wr.status_lkey;
    }
    w->u.status.qkey = wr.qkey;
  }

  uint32_t data_units;
  if (inl) {
    const auto n = uint32_t(wr.inline_data.size());
    if (n) rhn_wqe_put_inline(buf, 0, wr.inline_data.data(), n);
    data_units = rhn_wqe_set_inline(buf, n);
  } else {
    for (size_t i = 0; i < wr.sges.size(); ++i)
      rhn_wqe_put_sge(buf, uint32_t(i), wr.sges[i].addr, wr.sges[i].length,
                      wr.sges[i].lkey);
    data_units = rhn_wqe_set_sges(buf, uint32_t(wr.sges.size()));
  }
  // The last slots: which the opcode has comes from the operation table.
  const rhn_op_desc* row = rhn_op_row(wr.opcode);
  const uint32_t ext = row ? row->ext : 0;
  rhn_wqe_tail tail{};
  tail.xfer_mode = wr.xfer_mode;
  tail.xfer = &wr.xfer;
  if (ext & RHN_EXT_MCAST) tail.mcast = &wr.mcast;
  if (ext & RHN_EXT_COLL) tail.coll = &wr.coll;
  if (wr.flags & RHN_WQE_F_GRH) tail.grh = &wr.grh;
  if (wr.xflags) {
    tail.xflags = wr.xflags;
    tail.trigger = &wr.trigger;
  }
  const uint32_t n = rhn_wqe_finish(buf, data_units, &tail);
  if (n == 0) return false;
  slots->assign(buf, buf + size_t(n) * RHN_SQ_SLOT_SIZE);
  return true;
}

bool SimQp::post_send(const SendWr& wr) {
  std::vector<uint8_t> slots;
  if (!encode(wr, uint16_t(sq_pi_), &slots)) return false;
  return write_and_kick(slots, wr.wr_id, wr.inline_doorbell);
}

bool SimQp::post_send_raw(std::vector<uint8_t> slots, uint64_t wr_id,
                          bool inline_doorbell) {
  if (slots.empty() || slots.size() % RHN_SQ_SLOT_SIZE != 0) return false;
  // Verbatim but for the index, which only the ring position knows.
  const uint16_t wqe_index = uint16_t(sq_pi_);
  std::memcpy(slots.data() + RHN_OFFSETOF(rhn_send_wqe, wqe_index), &wqe_index,
              sizeof wqe_index);
  return write_and_kick(slots, wr_id, inline_doorbell);
}

bool SimQp::write_and_kick(std::vector<uint8_t>& slots, uint64_t wr_id,
                           bool inline_doorbell) {
  const uint32_t n = uint32_t(slots.size() / RHN_SQ_SLOT_SIZE);
  if (n == 0 || n > RHN_WQE_MAX_SLOTS || n > sq_depth_) return false;
  if (sq_pi_ - sq_ci_ + n > sq_depth_) return false;
  const uint32_t first = sq_pi_;
  // Slots follow the ring index, wrapping at the end of the ring.
  for (uint32_t i = 0; i < n; ++i)
    sq_.buf.write(size_t((first + i) & (sq_depth_ - 1)) * RHN_SQ_SLOT_SIZE,
                  slots.data() + size_t(i) * RHN_SQ_SLOT_SIZE,
                  RHN_SQ_SLOT_SIZE);
  sq_pi_ += n;
  pending_.push_back(
      {first, n, wr_id,
       (slots[RHN_OFFSETOF(rhn_send_wqe, flags)] & RHN_WQE_F_SIGNALED) != 0});
  sq_.set_record(sq_pi_);
  if (!auto_kick) return true;
  // One rule for both words: the request bit alone, or an event index.
  if (sq_kick_on_request &&
      !rhn_sq_post_must_kick(sq_.nic_consumer(), first, sq_pi_))
    return true;
  if (inline_doorbell && slots.size() <= RHN_DB_INLINE_WQE_SIZE) {
    for (size_t off = 0; off < slots.size(); off += 8) {
      uint64_t v;
      std::memcpy(&v, slots.data() + off, 8);
      ctx_->doorbell(RHN_DB_INLINE_WQE + uint32_t(off), v, 8);
    }
    ctx_->doorbell(RHN_DB_SQ, qpn_ | RHN_DB_SQ_INLINE);
  } else {
    ctx_->doorbell(RHN_DB_SQ, qpn_);
  }
  return true;
}

bool SimQp::post_recv(uint64_t wr_id, const std::vector<Sge>& sges) {
  if (srq_ != nullptr) return srq_->post_recv(wr_id, sges);
  if (sges.size() > RHN_RQ_MAX_SGES || rq_depth_ == 0) return false;
  if (rq_pi_ - rq_ci_ >= rq_depth_) return false;
  rhn_recv_wqe w;
  std::memset(&w, 0, sizeof w);
  w.wqe_index = uint16_t(rq_pi_);
  w.num_sge = uint16_t(sges.size());
  for (size_t i = 0; i < sges.size(); ++i) {
    w.sge[i].addr = sges[i].addr;
    w.sge[i].length = sges[i].length;
    w.sge[i].lkey = sges[i].lkey;
  }
  rq_.buf.write(size_t(rq_pi_ & (rq_depth_ - 1)) * RHN_RQ_WQE_SIZE, &w,
                sizeof w);
  rq_shadow_[rq_pi_ & (rq_depth_ - 1)] = wr_id;
  ++rq_pi_;
  rq_.set_record(rq_pi_);
  if (auto_kick) ctx_->doorbell(RHN_DB_RQ, qpn_);
  return true;
}

bool SimQp::post_tag_recv(uint64_t wr_id, const TagRecv& t) {
  if (srq_ != nullptr || rq_depth_ == 0) return false;
  // Irecvs complete out of order: a slot is free once the NIC read past it.
  if (rq_pi_ - rq_.nic_consumer() >= rq_depth_) return false;
  if (tag_shadow_.count(uint16_t(rq_pi_))) return false;  // index still owed
  rhn_tag_recv_wqe w;
  std::memset(&w, 0, sizeof w);
  w.wqe_index = uint16_t(rq_pi_);
  w.num_sge = t.sge ? 1 : 0;
  w.flags = RHN_RQ_F_TAG | (t.any_src ? RHN_TAG_F_ANY_SRC : 0) |
            uint32_t{t.xfer_mode} << RHN_TAG_XFER_SHIFT | t.extra_flags;
  w.xfer = t.xfer;
  w.tag = t.tag;
  w.mask = t.mask;
  w.src_node = t.src_node;
  w.src_qpn = t.src_qpn;
  if (t.sge) {
    w.sge.addr = t.sge->addr;
    w.sge.length = t.sge->length;
    w.sge.lkey = t.sge->lkey;
  }
  rq_.buf.write(size_t(rq_pi_ & (rq_depth_ - 1)) * RHN_RQ_WQE_SIZE, &w,
                sizeof w);
  tag_shadow_[uint16_t(rq_pi_)] = wr_id;
  ++rq_pi_;
  rq_.set_record(rq_pi_);
  if (auto_kick) ctx_->doorbell(RHN_DB_RQ, qpn_);
  return true;
}

uint64_t SimQp::complete_tag_recv(uint16_t wqe_index) {
  auto it = tag_shadow_.find(wqe_index);
  if (it == tag_shadow_.end()) return UINT64_MAX;
  const uint64_t wr_id = it->second;
  tag_shadow_.erase(it);
  ++rq_ci_;
  return wr_id;
}

void SimQp::kick_sq() { ctx_->doorbell(RHN_DB_SQ, qpn_); }
void SimQp::kick_rq() { ctx_->doorbell(RHN_DB_RQ, qpn_); }

uint64_t SimQp::complete_send(uint16_t wqe_index) {
  // A CQE also retires every unsignalled WQE posted before it.
  for (size_t k = 0; k < pending_.size(); ++k) {
    if (uint16_t(pending_[k].first_slot) != wqe_index) continue;
    const uint64_t wr_id = pending_[k].wr_id;
    sq_ci_ = pending_[k].first_slot + pending_[k].slots;
    pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(k) + 1);
    return wr_id;
  }
  return UINT64_MAX;
}

uint64_t SimQp::complete_next_signaled(uint16_t* wqe_index) {
  // Unsignalled WQEs before it are retired with it.
  for (size_t k = 0; k < pending_.size(); ++k) {
    if (!pending_[k].signaled) continue;
    const uint64_t wr_id = pending_[k].wr_id;
    *wqe_index = uint16_t(pending_[k].first_slot);
    sq_ci_ = pending_[k].first_slot + pending_[k].slots;
    pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(k) + 1);
    return wr_id;
  }
  return UINT64_MAX;
}

uint64_t SimQp::complete_recv(uint16_t wqe_index) {
  if (srq_ != nullptr) {
    ++srq_->ci_;
    return srq_->shadow_[wqe_index & (srq_->depth_ - 1)];
  }
  if (rq_depth_ == 0) return UINT64_MAX;
  ++rq_ci_;
  return rq_shadow_[wqe_index & (rq_depth_ - 1)];
}

AdminResult SimQp::modify(const rhn_admin_modify_qp& m) {
  rhn_admin_modify_qp c = m;
  c.qpn = qpn_;
  return ctx_->driver().modify_qp(ctx_->index(), c);
}

// QP types connected to one peer QP at RTR (RC, UC, both XRC ends).
static bool connected_type(uint8_t type) {
  return type == RHN_QP_RC || type == RHN_QP_UC || type == RHN_QP_XRC_SEND ||
         type == RHN_QP_XRC_RECV;
}

AdminResult SimQp::to_init(uint8_t access, uint32_t qkey) {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_STATE | RHN_QP_ATTR_ACCESS;
  if (!connected_type(type_)) m.attr_mask |= RHN_QP_ATTR_QKEY;
  m.state = RHN_QPS_INIT;
  m.access = access;
  m.qkey = qkey;
  return modify(m);
}

AdminResult SimQp::to_rtr(uint16_t dest_node, uint32_t dest_qpn,
                          uint8_t max_rd_atomic) {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_STATE | RHN_QP_ATTR_MAX_RD_ATOMIC;
  if (connected_type(type_)) m.attr_mask |= RHN_QP_ATTR_DEST;
  m.state = RHN_QPS_RTR;
  m.dest_node = dest_node;
  m.dest_qpn = dest_qpn;
  m.max_rd_atomic = max_rd_atomic;
  return modify(m);
}

AdminResult SimQp::to_rts(uint8_t rnr_retry, uint8_t min_rnr_timer) {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_STATE | RHN_QP_ATTR_RETRY;
  m.state = RHN_QPS_RTS;
  m.retry_cnt = 7;
  m.rnr_retry = rnr_retry;
  m.min_rnr_timer = min_rnr_timer;
  return modify(m);
}

AdminResult SimQp::to_err() {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_STATE;
  m.state = RHN_QPS_ERR;
  return modify(m);
}

AdminResult SimQp::to_reset() {
  rhn_admin_modify_qp m;
  std::memset(&m, 0, sizeof m);
  m.attr_mask = RHN_QP_ATTR_STATE;
  m.state = RHN_QPS_RESET;
  AdminResult r = modify(m);
  if (!r.ok()) return r;
  sq_pi_ = sq_ci_ = rq_pi_ = rq_ci_ = 0;
  pending_.clear();
  sq_.set_record(0);
  // Only the producer index, as a provider does: the NIC clears its own
  // word (nic_consumer) when the QP enters RESET.
  if (rq_depth_) rq_.set_record(0);
  tag_shadow_.clear();
  return r;
}

AdminResult SimQp::query(rhn_qp_attr* out) {
  return ctx_->driver().query_qp(ctx_->index(), qpn_, out);
}

// ---- SimContext
// ------------------------------------------------------------------

SimContext::SimContext(SimDriver& driver, SimAddressSpace& as, uint32_t index,
                       uint16_t node_id, uint32_t account)
    : driver_(driver), as_(as), index_(index), node_id_(node_id) {
  if (index != 0) {
    last = driver_.create_context(index, account);
    if (!last.ok()) return;
  }
  last = driver_.create_pd(index);
  if (!last.ok()) return;
  pdn_ = last.result;
  ok_ = true;
}

AdminResult SimContext::alloc_pd(uint32_t* pdn) {
  AdminResult r = driver_.create_pd(index_);
  if (r.ok() && pdn) *pdn = r.result;
  return r;
}

SimMr SimContext::reg_mr(const SimBuffer& buf, uint32_t access,
                         std::optional<uint32_t> pdn, const MrOptions& opt) {
  return driver_.register_mr(index_, pdn.value_or(pdn_), buf.va(), buf.size(),
                             buf.pages(), access, opt);
}

SimMr SimContext::reg_mr_range(const SimBuffer& buf, size_t offset,
                               size_t length, uint32_t access,
                               std::optional<uint32_t> pdn) {
  const size_t first = ((buf.va() & kPageMask) + offset) >> kPageShift;
  const size_t last_page =
      ((buf.va() & kPageMask) + offset + length - 1) >> kPageShift;
  std::vector<uint64_t> pages(buf.pages().begin() + ptrdiff_t(first),
                              buf.pages().begin() + ptrdiff_t(last_page) + 1);
  return driver_.register_mr(index_, pdn.value_or(pdn_), buf.va() + offset,
                             length, pages, access);
}

bool SimContext::make_queue_memory(size_t ring_bytes, QueueMemory* out) {
  const size_t ring = round_up(std::max<size_t>(ring_bytes, 64), 64);
  const size_t total = ring + 64;  // doorbell record after the ring
  out->record_offset = ring;
  if (index_ == 0) {
    // The kernel's own queues use bus addresses directly.
    out->buf = as_.alloc_physical(total);
    out->lkey = RHN_LKEY_PHYSICAL;
    return out->buf.valid();
  }
  out->buf = as_.alloc(total);
  if (!out->buf.valid()) return false;
  out->mr = reg_mr(out->buf, kQueueAccess);
  last = out->mr.res;
  out->lkey = out->mr.key;
  return out->mr.ok();
}

std::unique_ptr<SimCq> SimContext::create_cq(uint8_t log_depth, uint8_t flags) {
  auto cq = std::make_unique<SimCq>();
  cq->ctx_ = this;
  cq->depth_ = 1u << log_depth;
  if (!make_queue_memory(size_t(RHN_CQE_SIZE) << log_depth, &cq->mem_))
    return nullptr;
  last = driver_.create_cq(index_, cq->mem_.ref(0), cq->mem_.record_ref(),
                           driver_.kernel_eqn(), log_depth, flags);
  if (!last.ok()) return nullptr;
  cq->cqn_ = last.result;
  return cq;
}

std::unique_ptr<SimSrq> SimContext::create_srq(uint8_t log_depth,
                                               uint32_t limit) {
  return make_srq(log_depth, limit, nullptr, 0, 0);
}

std::unique_ptr<SimSrq> SimContext::create_tm_srq(SimCq& cq, uint32_t max_tags,
                                                  uint8_t log_depth,
                                                  uint8_t ops_log_depth) {
  return make_srq(log_depth, 0, &cq, max_tags, ops_log_depth);
}

std::unique_ptr<SimSrq> SimContext::create_xrc_srq(SimCq& cq, uint32_t xrcd,
                                                   uint8_t log_depth) {
  return make_srq(log_depth, 0, nullptr, 0, 0, &cq, xrcd);
}

AdminResult SimContext::destroy_srq(SimSrq& srq) {
  return driver_.destroy(RHN_ADMIN_DESTROY_SRQ, index_, srq.srqn());
}

std::unique_ptr<SimSrq> SimContext::make_srq(uint8_t log_depth, uint32_t limit,
                                             SimCq* tm_cq, uint32_t max_tags,
                                             uint8_t ops_log_depth,
                                             SimCq* xrc_cq, uint32_t xrcd) {
  auto srq = std::make_unique<SimSrq>();
  srq->ctx_ = this;
  srq->depth_ = 1u << log_depth;
  srq->shadow_.assign(srq->depth_, UINT64_MAX);
  if (!make_queue_memory(size_t(RHN_RQ_WQE_SIZE) << log_depth, &srq->mem_))
    return nullptr;
  rhn_admin_create_srq c;
  std::memset(&c, 0, sizeof c);
  c.ring = srq->mem_.ref(0);
  c.record = srq->mem_.record_ref();
  c.pdn = pdn_;
  c.limit = limit;
  c.log_depth = log_depth;
  if (tm_cq) {  // a TM SRQ: its operation ring, and where ops complete
    srq->ops_depth_ = 1u << ops_log_depth;
    srq->ops_shadow_.assign(srq->ops_depth_, UINT64_MAX);
    if (!make_queue_memory(size_t(RHN_TM_OP_WQE_SIZE) << ops_log_depth,
                           &srq->ops_mem_))
      return nullptr;
    c.flags = RHN_CREATE_SRQ_F_TM;
    c.ops_log_depth = ops_log_depth;
    c.cqn = tm_cq->cqn();
    c.max_tags = max_tags;
    c.ops_ring = srq->ops_mem_.ref(0);
    c.ops_record = srq->ops_mem_.record_ref();
  }
  if (xrc_cq) {
    c.flags = RHN_CREATE_SRQ_F_XRC;
    c.cqn = xrc_cq->cqn();
    c.xrcd = xrcd;
  }
  last = driver_.create_srq(index_, c);
  if (!last.ok()) return nullptr;
  srq->srqn_ = last.result;
  if (xrc_cq) {
    srq->srqn_ = last.result & RHN_XRC_SRQN_INDEX_MASK;
    srq->xrc_number_ = last.result;
    srq->xrc_cq_ = xrc_cq;
    xrc_cq->xrc_srqs_[srq->srqn_] = srq.get();
  }
  if (tm_cq) {
    srq->tm_cq_ = tm_cq;
    tm_cq->tm_srqs_[srq->srqn_] = srq.get();
  }
  return srq;
}

std::unique_ptr<SimQp> SimContext::create_qp(const QpInit& init) {
  auto qp = std::make_unique<SimQp>();
  qp->ctx_ = this;
  qp->type_ = init.type;
  qp->send_cq_ = init.send_cq;
  qp->recv_cq_ = init.recv_cq ? init.recv_cq : init.send_cq;
  qp->srq_ = init.srq;
  qp->sq_depth_ = 1u << init.sq_log_depth;
  const bool xrc = init.type == RHN_QP_XRC_SEND || init.type == RHN_QP_XRC_RECV;
  qp->rq_depth_ = init.srq || xrc ? 0 : 1u << init.rq_log_depth;
  if (qp->send_cq_ == nullptr) return nullptr;
  if (!make_queue_memory(size_t(RHN_SQ_SLOT_SIZE) << init.sq_log_depth,
                         &qp->sq_))
    return nullptr;
  rhn_admin_create_qp c;
  std::memset(&c, 0, sizeof c);
  c.pdn = init.pdn.value_or(pdn_);
  c.send_cqn = qp->send_cq_->cqn();
  c.recv_cqn = qp->recv_cq_->cqn();
  c.srqn = init.srq ? init.srq->srqn() : RHN_NO_SRQ;
  c.type = init.type;
  c.flags = init.flags;
  c.xrcd = init.xrcd;
  c.sq_log_depth = init.sq_log_depth;
  c.sq_ring = qp->sq_.ref(0);
  c.sq_record = qp->sq_.record_ref();
  if (init.srq == nullptr && !xrc) {
    if (!make_queue_memory(size_t(RHN_RQ_WQE_SIZE) << init.rq_log_depth,
                           &qp->rq_))
      return nullptr;
    qp->rq_shadow_.assign(qp->rq_depth_, UINT64_MAX);
    c.rq_log_depth = init.rq_log_depth;
    c.rq_ring = qp->rq_.ref(0);
    c.rq_record = qp->rq_.record_ref();
  }
  last = driver_.create_qp(index_, c);
  if (!last.ok()) return nullptr;
  qp->qpn_ = last.result;
  qp->send_cq_->qps_[qp->qpn_] = qp.get();
  qp->recv_cq_->qps_[qp->qpn_] = qp.get();
  return qp;
}

}  // namespace rhinet::sim
