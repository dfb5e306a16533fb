// SPDX-License-Identifier: BSD-2-Clause
#include "lib/nic.h"

#include <cstring>

#include "rhinet/hw_wqe.h"

namespace rhinet::conform {

std::string hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), d[v & 15]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

std::string counter_name(unsigned idx) {
  static const char* const names[] = {
#define RHN_CONFORM_NAME_(id, name, doc) "RHN_CNT_" #id,
      RHN_COUNTERS(RHN_CONFORM_NAME_)
#undef RHN_CONFORM_NAME_
  };
  return idx < RHN_CNT_COUNT ? names[idx] : "counter " + std::to_string(idx);
}

uint8_t pattern_byte(uint8_t seed, size_t i) {
  return static_cast<uint8_t>(seed * 31u + i * 7u + (i >> 8));
}

// ---- host memory ----

uint64_t Nic::alloc(size_t len, size_t align) {
  return t_.dma_alloc(len, align);
}
uint32_t Nic::rd32(uint64_t bus) {
  uint32_t v = 0;
  t_.mem_read(bus, &v, sizeof(v));
  return v;
}
uint64_t Nic::rd64(uint64_t bus) {
  uint64_t v = 0;
  t_.mem_read(bus, &v, sizeof(v));
  return v;
}
void Nic::wr32(uint64_t bus, uint32_t v) { t_.mem_write(bus, &v, sizeof(v)); }
void Nic::wr64(uint64_t bus, uint64_t v) { t_.mem_write(bus, &v, sizeof(v)); }
void Nic::fill(uint64_t bus, size_t len, uint8_t seed) {
  std::vector<uint8_t> b(len);
  for (size_t i = 0; i < len; i++) b[i] = pattern_byte(seed, i);
  t_.mem_write(bus, b.data(), len);
}
std::vector<uint8_t> Nic::bytes(uint64_t bus, size_t len) {
  std::vector<uint8_t> b(len);
  t_.mem_read(bus, b.data(), len);
  return b;
}

// ---- bring-up ----

std::string Nic::reset() {
  w32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  // Wait for the reset's whole effect, not only for RESET to read 0: an
  // implementation that shows the write late must not let the driver go
  // on against the old state (regs.control.reset_visible checks that).
  const bool done = t_.wait_until(
      [&] {
        return r32(RHN_REG_CONTROL) == 0 &&
               (r32(RHN_REG_STATUS) &
                (RHN_STATUS_READY | RHN_STATUS_ADMIN_ON)) == RHN_STATUS_READY;
      },
      kWaitNs);
  if (!done && ((r32(RHN_REG_CONTROL) & RHN_CONTROL_RESET) ||
                !(r32(RHN_REG_STATUS) & RHN_STATUS_READY)))
    return "CONTROL.RESET did not clear with STATUS.READY set";
  if (r32(RHN_REG_STATUS) & RHN_STATUS_FATAL) return "STATUS.FATAL after reset";
  return {};
}

std::string Nic::bring_up(uint32_t log_depth, bool intr) {
  std::string e = reset();
  if (!e.empty()) return e;
  const uint32_t depth = 1u << log_depth;
  admin_sq_ = alloc(depth * RHN_ADMIN_CMD_SIZE);
  admin_cq_ = alloc(depth * RHN_ADMIN_CPL_SIZE);
  if (!admin_sq_ || !admin_cq_) return "host memory for the admin rings";
  admin_log_ = log_depth;
  admin_tail_ = admin_ci_ = 0;
  w64(RHN_REG_ADMIN_SQ_BASE, admin_sq_);
  w64(RHN_REG_ADMIN_CQ_BASE, admin_cq_);
  w32(RHN_REG_ADMIN_LOG_DEPTH, log_depth);
  w32(RHN_REG_CONTROL,
      RHN_CONTROL_ENABLE | (intr ? RHN_CONTROL_INTR_ENABLE : 0));
  if (!t_.wait_until(
          [&] { return (r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON) != 0; },
          kWaitNs))
    return "STATUS.ADMIN_ON never set after CONTROL.ENABLE";
  return {};
}

std::string Nic::bring_up_eq(Eq* eq, uint32_t log_depth, uint16_t vector,
                             bool intr) {
  std::string e = bring_up(5, intr);
  if (e.empty() && !create_eq(log_depth, vector, eq)) e = error_;
  return e;
}

// ---- admin queue ----

rhn_admin_cmd Nic::cmd(uint8_t opcode, uint32_t context) {
  rhn_admin_cmd c;
  std::memset(&c, 0, sizeof(c));
  c.hdr.opcode = opcode;
  c.hdr.context = context;
  return c;
}

void Nic::admin_post(rhn_admin_cmd c) {
  c.hdr.cmd_id = cmd_id_++;
  const uint32_t depth = 1u << admin_log_;
  t_.mem_write(
      admin_sq_ + uint64_t(admin_tail_ & (depth - 1)) * RHN_ADMIN_CMD_SIZE, &c,
      sizeof(c));
  admin_tail_++;
}

void Nic::kick_admin() { w32(RHN_REG_ADMIN_SQ_TAIL, admin_tail_); }

std::optional<rhn_admin_cpl> Nic::admin_reap() {
  const uint32_t depth = 1u << admin_log_;
  const uint64_t at =
      admin_cq_ + uint64_t(admin_ci_ & (depth - 1)) * RHN_ADMIN_CPL_SIZE;
  const uint8_t phase = ((admin_ci_ >> admin_log_) & 1) ^ 1;
  rhn_admin_cpl cpl;
  const bool got = t_.wait_until(
      [&] {
        t_.mem_read(at, &cpl, sizeof(cpl));
        return (cpl.owner & 1) == phase;
      },
      kWaitNs);
  if (!got) return std::nullopt;
  admin_ci_++;
  return cpl;
}

std::optional<rhn_admin_cpl> Nic::admin(rhn_admin_cmd c) {
  admin_post(c);
  kick_admin();
  return admin_reap();
}

uint8_t Nic::run(const rhn_admin_cmd& c, uint32_t* res, uint32_t* detail) {
  auto cpl = admin(c);
  if (!cpl) {
    error_ = "admin opcode " + hex(c.hdr.opcode) + ": no completion";
    return 0xff;
  }
  if (res) *res = cpl->result;
  if (detail) *detail = cpl->detail;
  if (cpl->status != RHN_ADMIN_OK)
    error_ = "admin opcode " + hex(c.hdr.opcode) + ": status " +
             std::to_string(cpl->status) + " detail " +
             std::to_string(cpl->detail);
  return cpl->status;
}

// ---- objects ----

bool Nic::create_context(uint32_t ctx, uint32_t account) {
  rhn_admin_cmd c = cmd(RHN_ADMIN_CREATE_CONTEXT, ctx);
  c.u.create_context.account = account;
  return run(c) == RHN_ADMIN_OK;
}

bool Nic::create_pd(uint32_t ctx, uint32_t* pdn) {
  return run(cmd(RHN_ADMIN_CREATE_PD, ctx), pdn) == RHN_ADMIN_OK;
}

rhn_admin_cmd Nic::mr_cmd(uint32_t ctx, uint32_t pdn, uint64_t iova,
                          uint64_t len, uint32_t access, uint8_t levels,
                          uint64_t table) {
  rhn_admin_cmd c = cmd(RHN_ADMIN_CREATE_MR, ctx);
  c.u.create_mr.pdn = pdn;
  c.u.create_mr.access = access;
  c.u.create_mr.iova = iova;
  c.u.create_mr.length = len;
  c.u.create_mr.table_addr = table;
  c.u.create_mr.num_pages =
      uint32_t(((iova + (len ? len : 1) - 1) >> 12) - (iova >> 12) + 1);
  c.u.create_mr.page_shift = 12;
  c.u.create_mr.levels = levels;
  c.u.create_mr.key_variant = levels ? 0x33 : 0x5a;
  return c;
}

bool Nic::make_buf(uint32_t pdn, uint32_t len, Buf* b, uint32_t access) {
  b->addr = alloc(len ? len : 1);
  b->len = len;
  if (!b->addr) return error_ = "host memory", false;
  return run(mr_cmd(0, pdn, b->addr, len, access), &b->key) == RHN_ADMIN_OK;
}

bool Nic::make_mapped_buf(uint32_t pdn, uint32_t len, Buf* b, uint32_t access) {
  return make_translated(0, pdn, len, nullptr, b, access);
}

bool Nic::make_user_buf(uint32_t ctx, uint32_t pdn, uint32_t len, uint64_t iova,
                        Buf* b, uint32_t access) {
  return make_translated(ctx, pdn, len, &iova, b, access);
}

bool Nic::make_translated(uint32_t ctx, uint32_t pdn, uint32_t len,
                          const uint64_t* iova, Buf* b, uint32_t access) {
  // The pages counted from the iova asked for, or from a page-aligned one
  // (the memory's own address, which alloc aligns).
  rhn_admin_cmd c = mr_cmd(ctx, pdn, iova ? *iova : 0, len, access, 1);
  const uint32_t pages = c.u.create_mr.num_pages;
  if (pages > RHN_VPT_ENTRIES_PER_PAGE) return error_ = "MR too large", false;
  const uint64_t mem = alloc(uint64_t(pages) * 4096);
  const uint64_t table = alloc(4096);
  if (!mem || !table) return error_ = "host memory", false;
  for (uint32_t i = 0; i < pages; i++)
    wr64(table + 8 * i, (mem + uint64_t(i) * 4096) | RHN_VPTE_VALID);
  c.u.create_mr.iova = iova ? *iova : mem;
  c.u.create_mr.table_addr = table;
  b->addr = c.u.create_mr.iova;
  b->len = len;
  return run(c, &b->key) == RHN_ADMIN_OK;
}

uint8_t Nic::query_device(rhn_device_attr* attr) {
  std::memset(attr, 0, sizeof(*attr));
  const uint64_t out = alloc(sizeof(*attr));
  rhn_admin_cmd q = cmd(RHN_ADMIN_QUERY_DEVICE);
  q.u.query.out_addr = out;
  q.u.query.out_len = sizeof(*attr);
  const uint8_t st = run(q);
  if (st == RHN_ADMIN_OK) t_.mem_read(out, attr, sizeof(*attr));
  return st;
}

bool Nic::link_event(Eq& eq, bool up, rhn_eqe* ev) {
  rhn_admin_cmd link = cmd(RHN_ADMIN_SET_LINK);
  link.u.set_link.up = up;
  if (run(link) != RHN_ADMIN_OK) return false;
  if (!wait_eqe(eq, ev)) return error_ = "no event after SET_LINK", false;
  return true;
}

bool Nic::create_eq(uint32_t log_depth, uint16_t vector, Eq* eq) {
  eq->log_depth = log_depth;
  eq->entry_size = RHN_EQE_SIZE;
  eq->ring = alloc(uint64_t(RHN_EQE_SIZE) << log_depth);
  eq->vector = vector;
  eq->ci = 0;
  rhn_admin_cmd c = cmd(RHN_ADMIN_CREATE_EQ, 0);
  c.u.create_eq.ring_addr = eq->ring;
  c.u.create_eq.vector = vector;
  c.u.create_eq.log_depth = static_cast<uint8_t>(log_depth);
  return run(c, &eq->eqn) == RHN_ADMIN_OK;
}

bool Nic::create_cq(uint32_t ctx, uint32_t log_depth, uint32_t eqn, Cq* cq,
                    uint8_t flags) {
  cq->log_depth = log_depth;
  cq->entry_size = RHN_CQE_SIZE;
  cq->ring = alloc(uint64_t(RHN_CQE_SIZE) << log_depth);
  cq->record = alloc(sizeof(rhn_cq_record), 8);
  cq->context = ctx;
  cq->ci = 0;
  rhn_admin_cmd c = cmd(RHN_ADMIN_CREATE_CQ, ctx);
  c.u.create_cq.ring.addr = cq->ring;
  c.u.create_cq.ring.lkey = RHN_LKEY_PHYSICAL;
  c.u.create_cq.record.addr = cq->record;
  c.u.create_cq.record.lkey = RHN_LKEY_PHYSICAL;
  c.u.create_cq.eqn = eqn;
  c.u.create_cq.log_depth = static_cast<uint8_t>(log_depth);
  c.u.create_cq.flags = flags;
  return run(c, &cq->cqn) == RHN_ADMIN_OK;
}

bool Nic::create_qp(uint32_t ctx, uint32_t pdn, Cq* scq, Cq* rcq,
                    const QpSpec& spec, Qp* qp) {
  qp->context = ctx;
  qp->type = spec.type;
  qp->sq_log = spec.sq_log;
  qp->rq_log = spec.rq_log;
  qp->sq = alloc(uint64_t(RHN_SQ_SLOT_SIZE) << spec.sq_log);
  qp->rq = alloc(uint64_t(RHN_RQ_WQE_SIZE) << spec.rq_log);
  // A multi-producer SQ's record is two 8-byte words (queues.md).
  qp->sq_record = alloc((spec.flags & RHN_CREATE_QP_F_MULTI_PRODUCER)
                            ? sizeof(rhn_mp_queue_record)
                            : sizeof(rhn_queue_record),
                        8);
  qp->rq_record = alloc(sizeof(rhn_queue_record), 8);
  qp->sq_pi = qp->rq_pi = 0;
  qp->send_cq = scq;
  qp->recv_cq = rcq;
  rhn_admin_cmd c = cmd(RHN_ADMIN_CREATE_QP, ctx);
  auto& q = c.u.create_qp;
  q.pdn = pdn;
  q.send_cqn = scq->cqn;
  q.recv_cqn = rcq->cqn;
  q.srqn = spec.srqn;
  q.type = spec.type;
  q.sq_log_depth = static_cast<uint8_t>(spec.sq_log);
  q.rq_log_depth = static_cast<uint8_t>(spec.rq_log);
  q.flags = spec.flags;
  q.sq_ring = {qp->sq, RHN_LKEY_PHYSICAL, 0};
  q.rq_ring = {qp->rq, RHN_LKEY_PHYSICAL, 0};
  q.sq_record = {qp->sq_record, RHN_LKEY_PHYSICAL, 0};
  if (spec.rings_in_mr) {
    // The ring's pages, then the record's, in one MR.
    const uint32_t ring_bytes = RHN_SQ_SLOT_SIZE << spec.sq_log;
    Buf m;
    if (!make_mapped_buf(pdn, ring_bytes + 4096, &m)) return false;
    qp->sq = m.addr;
    qp->sq_record = m.addr + ring_bytes;
    q.sq_ring = {qp->sq, m.key, 0};
    q.sq_record = {qp->sq_record, m.key, 0};
  }
  q.rq_record = {qp->rq_record, RHN_LKEY_PHYSICAL, 0};
  return run(c, &qp->qpn) == RHN_ADMIN_OK;
}

uint8_t Nic::modify_qp(const Qp& qp, uint32_t mask, uint8_t state,
                       const rhn_admin_modify_qp& extra) {
  rhn_admin_cmd c = cmd(RHN_ADMIN_MODIFY_QP, qp.context);
  c.u.modify_qp = extra;
  c.u.modify_qp.qpn = qp.qpn;
  c.u.modify_qp.attr_mask = mask;
  c.u.modify_qp.state = state;
  return run(c);
}

bool Nic::activate(const Qp& qp, uint16_t dest_node, uint32_t dest_qpn,
                   uint32_t qkey, uint8_t rnr_retry) {
  const bool connected = qp.type == RHN_QP_RC || qp.type == RHN_QP_UC;
  rhn_admin_modify_qp m{};
  m.access = RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
             RHN_ACCESS_REMOTE_ATOMIC;
  m.qkey = qkey;
  if (modify_qp(qp,
                RHN_QP_ATTR_STATE | RHN_QP_ATTR_ACCESS |
                    (connected ? 0 : RHN_QP_ATTR_QKEY),
                RHN_QPS_INIT, m) != RHN_ADMIN_OK)
    return false;
  m.dest_node = dest_node;
  m.dest_qpn = dest_qpn;
  m.max_rd_atomic = 16;
  if (modify_qp(qp,
                RHN_QP_ATTR_STATE | RHN_QP_ATTR_MAX_RD_ATOMIC |
                    (connected ? RHN_QP_ATTR_DEST : 0),
                RHN_QPS_RTR, m) != RHN_ADMIN_OK)
    return false;
  m.rnr_retry = rnr_retry;
  m.min_rnr_timer = 1;
  return modify_qp(qp, RHN_QP_ATTR_STATE | RHN_QP_ATTR_RETRY, RHN_QPS_RTS, m) ==
         RHN_ADMIN_OK;
}

// ---- work ----

void Nic::kick_sq(const Qp& qp) {
  t_.doorbell_write(qp.context, RHN_DB_SQ, qp.qpn, 4);
}

void Nic::post_send(Qp& qp, const void* wqe, uint32_t slots, bool kick) {
  const auto* p = static_cast<const uint8_t*>(wqe);
  const uint32_t depth = 1u << qp.sq_log;
  for (uint32_t i = 0; i < slots; i++)
    t_.mem_write(
        qp.sq + uint64_t((qp.sq_pi + i) & (depth - 1)) * RHN_SQ_SLOT_SIZE,
        p + i * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
  qp.sq_pi += slots;
  wr32(qp.sq_record, qp.sq_pi);
  if (kick) kick_sq(qp);
}

void Nic::post_one(Qp& qp, uint8_t opcode, uint8_t flags, uint64_t laddr,
                   uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey) {
  uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  rhn_send_wqe* w =
      rhn_wqe_start(buf, opcode, flags, static_cast<__u16>(qp.sq_pi));
  w->remote_addr = raddr;
  w->remote_key = rkey;
  uint32_t data = 0;
  if (len || lkey) {
    rhn_wqe_put_sge(buf, 0, laddr, len, lkey);
    data = rhn_wqe_set_sges(buf, 1);
  }
  const uint32_t slots = rhn_wqe_finish(buf, data, nullptr);
  post_send(qp, buf, slots);
}

void Nic::post_recv(Qp& qp, uint64_t addr, uint32_t len, uint32_t lkey,
                    bool kick) {
  rhn_recv_wqe r;
  std::memset(&r, 0, sizeof(r));
  r.wqe_index = static_cast<__u16>(qp.rq_pi);
  r.num_sge = 1;
  r.sge[0].addr = addr;
  r.sge[0].length = len;
  r.sge[0].lkey = lkey;
  const uint32_t depth = 1u << qp.rq_log;
  t_.mem_write(qp.rq + uint64_t(qp.rq_pi & (depth - 1)) * RHN_RQ_WQE_SIZE, &r,
               sizeof(r));
  qp.rq_pi++;
  wr32(qp.rq_record, qp.rq_pi);
  if (kick) t_.doorbell_write(qp.context, RHN_DB_RQ, qp.qpn, 4);
}

bool Nic::poll_cq(Cq& cq, rhn_cqe* out) {
  rhn_cqe e;
  t_.mem_read(cq.slot_addr(cq.ci), &e, sizeof(e));
  if (((e.flags >> 7) & 1) != cq.phase(cq.ci)) return false;
  *out = e;
  cq.ci++;
  wr32(cq.record, cq.ci);
  return true;
}

bool Nic::wait_cqe(Cq& cq, rhn_cqe* out, uint64_t budget) {
  return t_.wait_until([&] { return poll_cq(cq, out); }, budget);
}

bool Nic::poll_eq(Eq& eq, rhn_eqe* out) {
  rhn_eqe e;
  t_.mem_read(eq.slot_addr(eq.ci), &e, sizeof(e));
  if ((e.owner & 1) != eq.phase(eq.ci)) return false;
  *out = e;
  eq.ci++;
  return true;
}

bool Nic::wait_eqe(Eq& eq, rhn_eqe* out, uint64_t budget) {
  return t_.wait_until([&] { return poll_eq(eq, out); }, budget);
}

void Nic::eq_doorbell(const Eq& eq, bool arm) {
  w64(RHN_REG_EQ_DOORBELL, (uint64_t(eq.ci) & RHN_EQ_DB_CI_MASK) |
                               (uint64_t(eq.eqn) << RHN_EQ_DB_EQN_SHIFT) |
                               (arm ? RHN_EQ_DB_ARM : 0));
}

}  // namespace rhinet::conform
