// SPDX-License-Identifier: BSD-2-Clause
// More of the verbs data path (queues.md, admin.md): UC and endpoint QPs,
// SRQs, RNR, CQ resize, QUERY_QP's consumer indices, memory windows, fast
// registration, and the raw Ethernet QP with its frames on the wire.
#include <string>

#include "case.h"
#include "lib/frames.h"
#include "lib/work.h"

namespace rhinet::conform {
namespace {

// A SEND of `len` bytes from a to b that lands whole.
void send_lands(Check& c, Nic& n, Loop& l, uint32_t len) {
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe(l.a, RHN_OP_SEND)
      .sge(0, l.src.addr, len, l.src.key)
      .to(l, l.b)
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  const uint32_t room = l.b.type == RHN_QP_UD ? RHN_UD_GRH_LEN : 0;
  if (!c.eq("receive byte_len", room + len, e.byte_len)) return;
  if (l.b.type == RHN_QP_ENDPOINT || l.b.type == RHN_QP_UD) {
    if (!c.eq("src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK)) return;
    if (!c.eq("src_node", l.node, e.src_node)) return;
  }
  same_bytes(c, n, l.src.addr, l.dst.addr + room, len, "received data");
}

}  // namespace

// A WRITE of `len` bytes from a to b's dst + off that completes and lands.
void write_lands(Target& t, Check& c, Nic& n, Loop& l, uint32_t len,
                 uint32_t off) {
  Wqe(l.a, RHN_OP_WRITE)
      .sge(0, l.src.addr, len, l.src.key)
      .remote(l.dst.addr + off, l.dst.key)
      .to(l, l.b)
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  t.settle();  // UC: the CQE may come before the data has landed
  same_bytes(c, n, l.src.addr, l.dst.addr + off, len, "written data");
}

CONFORM_CASE(uc_send, "wqe.uc.send", "wqe",
             "a UC SEND lands in the receive WQE") {
  LOOP(n, l, RHN_QP_UC);
  send_lands(c, n, l, 200);
}

CONFORM_CASE(uc_write, "wqe.uc.write", "wqe",
             "a UC WRITE places its bytes; WRITE CQE") {
  LOOP(n, l, RHN_QP_UC);
  write_lands(t, c, n, l, 64, 0);
}

CONFORM_CASE(ep_send, "wqe.endpoint.send", "wqe",
             "an endpoint SEND to (node, endpoint) lands with src_qpn and "
             "src_node") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  send_lands(c, n, l, 100);
}

CONFORM_CASE(ep_write, "wqe.endpoint.write", "wqe",
             "an endpoint WRITE to (node, endpoint) places its bytes") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  write_lands(t, c, n, l, 96, 8);
}

namespace {

// An SRQ (limit `limit`) with QP b2 on it, and a reconnected to b2.
struct SrqPair {
  uint32_t srqn = 0;
  uint64_t ring = 0, record = 0;
  uint32_t pi = 0;
  Qp b2;
  bool make(Check& c, Nic& n, Loop& l, uint32_t limit) {
    rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_SRQ);
    ring = n.alloc(4096);
    record = n.alloc(8, 8);
    m.u.create_srq.ring.addr = ring;
    m.u.create_srq.record.addr = record;
    m.u.create_srq.pdn = l.pd;
    m.u.create_srq.limit = limit;
    m.u.create_srq.log_depth = 4;
    if (!c.eq("CREATE_SRQ", RHN_ADMIN_OK, n.run(m, &srqn))) return false;
    QpSpec spec;
    spec.srqn = srqn;
    if (!c.that(n.create_qp(0, l.pd, &l.rcq, &l.rcq, spec, &b2) &&
                    n.activate(b2, l.node, l.a.qpn),
                "QP on the SRQ", n.error()))
      return false;
    // a was connected to b: RESET it and connect it to b2.
    if (!c.eq("MODIFY_QP a to RESET", RHN_ADMIN_OK,
              n.modify_qp(l.a, RHN_QP_ATTR_STATE, RHN_QPS_RESET)))
      return false;
    return c.that(n.activate(l.a, l.node, b2.qpn), "reconnect a", n.error());
  }
  // Posts `count` receive WQEs of 64 bytes each into dst and kicks.
  void post(Nic& n, Loop& l, uint32_t count) {
    for (uint32_t i = 0; i < count; i++, pi++) {
      rhn_recv_wqe r{};
      r.wqe_index = static_cast<__u16>(pi);
      r.num_sge = 1;
      r.sge[0].addr = l.dst.addr + 64 * pi;
      r.sge[0].length = 64;
      r.sge[0].lkey = l.dst.key;
      n.target().mem_write(ring + (pi & 15) * RHN_RQ_WQE_SIZE, &r, sizeof(r));
    }
    n.wr32(record, pi);
    n.target().doorbell_write(0, RHN_DB_SRQ, srqn, 4);
  }
};

}  // namespace

CONFORM_CASE(srq_recv, "wqe.srq.receive", "wqe",
             "a QP created with an SRQ takes its receive WQE from the SRQ "
             "(after the SRQ kick)") {
  LOOP(n, l, RHN_QP_RC);
  SrqPair s;
  if (!s.make(c, n, l, 0)) return;
  s.post(n, l, 1);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 40, l.src.key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "receive qpn", s.b2.qpn, e.qpn);
  CONFORM_EQ(c, "receive wqe_index (SRQ WQE 0)", 0, e.wqe_index);
  same_bytes(c, n, l.src.addr, l.dst.addr, 40, "received data");
}

CONFORM_CASE(srq_limit, "wqe.srq.limit_event", "wqe",
             "an SRQ with fewer WQEs left than its limit posts "
             "RHN_EQE_SRQ_LIMIT (object = srqn) on the first EQ, once") {
  LOOP(n, l, RHN_QP_RC);
  SrqPair s;
  if (!s.make(c, n, l, 2)) return;
  s.post(n, l, 3);
  for (int i = 0; i < 2; i++)
    Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e) && n.wait_cqe(l.rcq, &e), "receive CQ",
               "expected two receives");
  rhn_eqe ev;
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no SRQ_LIMIT event");
  CONFORM_EQ(c, "EQE type", RHN_EQE_SRQ_LIMIT, ev.type);
  CONFORM_EQ(c, "EQE object", s.srqn, ev.object);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ", "no third receive");
  t.settle();
  c.that(!n.poll_eq(l.eq, &ev), "EQ",
         "a second SRQ_LIMIT without re-arming (MODIFY_SRQ)");
}

CONFORM_CASE(rnr_exceeded, "wqe.rnr.retries_exceeded", "wqe",
             "an RC SEND with no receive WQE and rnr_retry 0: "
             "RNR_RETRY_EXC_ERR; the responder counts RNR_NAKS_SENT") {
  Nic n(t);
  Loop l;
  l.rnr_retry = 0;
  const std::string e0 = l.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e, 1'000'000'000), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_RNR_RETRY_EXC_ERR, e.status);
  c.that(n.counter(RHN_CNT_RNR_NAKS_SENT) >= 1, "RHN_CNT_RNR_NAKS_SENT",
         "still 0");
}

CONFORM_CASE(rnr_retry, "wqe.rnr.retry_then_deliver", "wqe",
             "an RC SEND that found no receive WQE is resent after the RNR "
             "wait and lands once one is posted (RNR_RETRIES counts)") {
  LOOP(n, l, RHN_QP_RC);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  CONFORM_THAT(
      c,
      t.wait_until([&] { return n.counter(RHN_CNT_RNR_NAKS_SENT) > 0; },
                   kWaitNs),
      "RHN_CNT_RNR_NAKS_SENT", "no RNR NAK");
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  c.that(n.counter(RHN_CNT_RNR_RETRIES) > 0, "RHN_CNT_RNR_RETRIES", "still 0");
}

CONFORM_CASE(resize_cq, "wqe.cq.resize_keeps_unread", "wqe",
             "RESIZE_CQ moves the unread CQEs, in order, to the start of the "
             "new ring as lap 0") {
  LOOP(n, l, RHN_QP_RC);
  for (int i = 0; i < 3; i++)
    n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "first CQE", "none");
  CONFORM_THAT(c,
               t.wait_until(
                   [&] {
                     rhn_cqe x;
                     t.mem_read(l.scq.slot_addr(2), &x, sizeof(x));
                     return (x.flags & RHN_CQE_F_OWNER) != 0;
                   },
                   kWaitNs),
               "third CQE", "never written");
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_RESIZE_CQ);
  const uint64_t ring = n.alloc(RHN_CQE_SIZE << 8), record = n.alloc(8, 8);
  m.u.resize_cq.cqn = l.scq.cqn;
  m.u.resize_cq.log_depth = 8;
  m.u.resize_cq.ring.addr = ring;
  m.u.resize_cq.record.addr = record;
  CONFORM_EQ(c, "RESIZE_CQ", RHN_ADMIN_OK, n.run(m));
  l.scq.ring = ring;
  l.scq.record = record;
  l.scq.log_depth = 8;
  l.scq.ci = 0;
  for (uint16_t i = 1; i < 3; i++) {
    CONFORM_THAT(c, n.poll_cq(l.scq, &e), "moved CQE " + std::to_string(i - 1),
                 "not in the new ring");
    CONFORM_EQ(c, "moved CQE wqe_index", i, e.wqe_index);
  }
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "CQE after the resize", "none");
  c.eq("its wqe_index", 3, e.wqe_index);
}

CONFORM_CASE(resize_small, "wqe.cq.resize_too_small", "wqe",
             "RESIZE_CQ to a ring the unread CQEs do not fit: BAD_PARAM, the "
             "CQ unchanged") {
  LOOP(n, l, RHN_QP_RC);
  for (int i = 0; i < 3; i++)
    n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  t.settle();
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_RESIZE_CQ);
  m.u.resize_cq.cqn = l.scq.cqn;
  m.u.resize_cq.log_depth = 1;
  m.u.resize_cq.ring.addr = n.alloc(4096);
  m.u.resize_cq.record.addr = n.alloc(8, 8);
  CONFORM_EQ(c, "RESIZE_CQ", RHN_ADMIN_BAD_PARAM, n.run(m));
  rhn_cqe e;
  for (uint16_t i = 0; i < 3; i++) {
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "CQE " + std::to_string(i),
                 "not in the old ring");
    CONFORM_EQ(c, "wqe_index", i, e.wqe_index);
  }
}

CONFORM_CASE(query_consumer, "wqe.query_qp.consumers", "wqe",
             "QUERY_QP's sq_consumer and rq_consumer follow the completed "
             "work") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  CONFORM_THAT(
      c,
      n.wait_cqe(l.scq, &e) && n.wait_cqe(l.scq, &e) && n.wait_cqe(l.rcq, &e),
      "CQs", "expected three CQEs");
  const uint64_t out = n.alloc(64);
  rhn_admin_cmd q = Nic::cmd(RHN_ADMIN_QUERY_QP);
  q.u.query.out_addr = out;
  q.u.query.out_len = 32;
  q.u.query.handle = l.a.qpn;
  CONFORM_EQ(c, "QUERY_QP a", RHN_ADMIN_OK, n.run(q));
  rhn_qp_attr a;
  t.mem_read(out, &a, sizeof(a));
  CONFORM_EQ(c, "a.sq_consumer", 2, a.sq_consumer);
  q.u.query.handle = l.b.qpn;
  CONFORM_EQ(c, "QUERY_QP b", RHN_ADMIN_OK, n.run(q));
  t.mem_read(out, &a, sizeof(a));
  c.eq("b.rq_consumer", 1, a.rq_consumer);
}

CONFORM_CASE(status_word_align, "wqe.status_word.unaligned", "wqe",
             "a status word not 8-byte aligned: RHN_SYN_ALIGNMENT") {
  LOOP(n, l, RHN_QP_RC);
  Wqe w(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD);
  w.w->u.status.addr = l.src.addr + 8192 + 4;
  w.w->u.status.lkey = l.src.key;
  w.sge(0, l.src.addr, 8, l.src.key).remote(l.dst.addr, l.dst.key).post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_THAT(c, e.status != RHN_CQE_SUCCESS, "CQE status", "success");
  c.eq("CQE vendor_err", RHN_SYN_ALIGNMENT, e.vendor_err);
}

// ---- memory windows ----

namespace {

// A type 1 window over the first 4 KiB of a bindable region, bound by
// BIND_MW on QP a; returns the window's bound key (0 on failure).
uint32_t bound_window(Check& c, Nic& n, Loop& l, Buf* region,
                      uint8_t type = 1) {
  if (!c.that(n.make_buf(l.pd, 8192, region, kAllAccess | RHN_ACCESS_MW_BIND),
              "bindable MR", n.error()))
    return 0;
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MW);
  m.u.create_mw.pdn = l.pd;
  m.u.create_mw.type = type;
  m.u.create_mw.key_variant = 0x20;
  uint32_t key = 0;
  if (!c.eq("CREATE_MW", RHN_ADMIN_OK, n.run(m, &key))) return 0;
  const uint32_t bound = (key & ~RHN_KEY_VARIANT_MASK) | 0x21;
  Wqe w(l.a, RHN_OP_BIND_MW);
  w.w->u.bind.mw_key = key;
  w.w->u.bind.mr_lkey = region->key;
  w.w->u.bind.length = 4096;
  w.w->imm_data = RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ;
  w.remote(region->addr, bound).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "BIND_MW CQE", RHN_CQE_OP_BIND_MW, RHN_CQE_SUCCESS,
              &e))
    return 0;
  return bound;
}

// Binds a window (bound_window) and WRITEs 32 bytes by its key at
// `offset` into the region; the WRITE's CQE in *e.
bool window_write(Check& c, Nic& n, Loop& l, uint32_t offset, Buf* region,
                  rhn_cqe* e) {
  const uint32_t key = bound_window(c, n, l, region);
  if (!key) return false;
  Wqe(l.a, RHN_OP_WRITE)
      .sge(0, l.src.addr, 32, l.src.key)
      .remote(region->addr + offset, key)
      .post(n, l.a);
  return c.that(n.wait_cqe(l.scq, e), "send CQ", "no CQE for the WRITE");
}

}  // namespace

CONFORM_CASE(mw_write, "wqe.window.bind_then_write", "wqe",
             "BIND_MW completes (RHN_CQE_OP_BIND_MW); a WRITE by the window's "
             "key lands inside it") {
  LOOP(n, l, RHN_QP_RC);
  Buf region;
  rhn_cqe e;
  if (!window_write(c, n, l, 100, &region, &e)) return;
  CONFORM_EQ(c, "WRITE CQE status", RHN_CQE_SUCCESS, e.status);
  same_bytes(c, n, l.src.addr, region.addr + 100, 32, "data in the window");
}

CONFORM_CASE(mw_bounds, "wqe.window.write_outside", "wqe",
             "a WRITE by a window's key beyond the window: REM_ACCESS_ERR, "
             "RHN_SYN_BOUNDS") {
  LOOP(n, l, RHN_QP_RC);
  Buf region;
  rhn_cqe e;
  if (!window_write(c, n, l, 4090, &region, &e)) return;
  CONFORM_EQ(c, "CQE status", RHN_CQE_REM_ACCESS_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BOUNDS, e.vendor_err);
}

CONFORM_CASE(mw_lkey, "wqe.window.as_lkey", "wqe",
             "a window's key used as an lkey: LOC_PROT_ERR") {
  LOOP(n, l, RHN_QP_RC);
  Buf region;
  const uint32_t key = bound_window(c, n, l, &region);
  if (!key) return;
  Wqe(l.a, RHN_OP_WRITE)
      .sge(0, region.addr, 32, key)
      .remote(l.dst.addr, l.dst.key)
      .post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  c.eq("CQE status", RHN_CQE_LOC_PROT_ERR, e.status);
}

CONFORM_CASE(mw_busy, "wqe.window.region_busy", "wqe",
             "a region with a bound window cannot be destroyed: BUSY") {
  LOOP(n, l, RHN_QP_RC);
  Buf region;
  if (!bound_window(c, n, l, &region)) return;
  rhn_admin_cmd d = Nic::cmd(RHN_ADMIN_DESTROY_MR);
  d.u.handle.handle = region.key;
  c.eq("DESTROY_MR of the region", RHN_ADMIN_BUSY, n.run(d));
}

// Type 2: bound through a, a's peer (b) reaches it; unbound by a's
// LOCAL_INV or b's SEND_INV, after which b's WRITE is refused.
void type2_unbind(Target& t, Check& c, bool by_send_inv) {
  LOOP(n, l, RHN_QP_RC);
  Buf region;
  const uint32_t key = bound_window(c, n, l, &region, 2);
  if (!key) return;
  rhn_cqe e;
  Wqe(l.b, RHN_OP_WRITE)
      .sge(0, l.src.addr, 16, l.src.key)
      .remote(region.addr, key)
      .post(n, l.b);
  if (!cqe_is(c, n, l.rcq, "b's WRITE through the window", RHN_CQE_OP_WRITE,
              RHN_CQE_SUCCESS, &e))
    return;
  if (by_send_inv) {
    n.post_recv(l.a, l.dst.addr, 64, l.dst.key);
    Wqe w(l.b, RHN_OP_SEND_INV);
    w.w->imm_data = key;
    w.sge(0, l.src.addr, 8, l.src.key).post(n, l.b);
    if (!cqe_is(c, n, l.scq, "a's receive CQE", RHN_CQE_OP_RECV,
                RHN_CQE_SUCCESS, &e))
      return;
    CONFORM_EQ(c, "receive flags & F_INV", RHN_CQE_F_INV,
               e.flags & RHN_CQE_F_INV);
    CONFORM_EQ(c, "receive imm_data (the key)", key, e.imm_data);
    if (!cqe_is(c, n, l.rcq, "SEND_INV CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS,
                &e))
      return;
  } else {
    Wqe w(l.a, RHN_OP_LOCAL_INV);
    w.remote(0, key).post(n, l.a);
    if (!cqe_is(c, n, l.scq, "LOCAL_INV CQE", RHN_CQE_OP_LOCAL_INV,
                RHN_CQE_SUCCESS, &e))
      return;
  }
  Wqe(l.b, RHN_OP_WRITE)
      .sge(0, l.src.addr, 16, l.src.key)
      .remote(region.addr, key)
      .post(n, l.b);
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "b's CQ", "no CQE for the WRITE");
  c.eq("WRITE after the unbind: status", RHN_CQE_REM_ACCESS_ERR, e.status);
}

CONFORM_CASE(mw2_local_inv, "wqe.window.type2_local_inv", "wqe",
             "a type 2 window takes its peer's WRITE until LOCAL_INV "
             "(RHN_CQE_OP_LOCAL_INV) unbinds it; then REM_ACCESS_ERR") {
  type2_unbind(t, c, false);
}

CONFORM_CASE(mw2_send_inv, "wqe.window.type2_send_inv", "wqe",
             "a peer's SEND_INV unbinds a type 2 window: the receive has "
             "F_INV and the key in imm_data; then REM_ACCESS_ERR") {
  type2_unbind(t, c, true);
}

// ---- fast registration ----

CONFORM_CASE(fast_reg, "wqe.fast_reg.register_then_write", "wqe",
             "REG_MR registers a fast-registration MR over its page list; a "
             "WRITE by the new key lands, the old key is refused") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t list = n.alloc(4096), page = n.alloc(4096);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MR);
  m.u.create_mr.pdn = l.pd;
  m.u.create_mr.table_addr = list;
  m.u.create_mr.num_pages = 4;
  m.u.create_mr.levels = 1;
  m.u.create_mr.key_variant = 0x40;
  m.u.create_mr.flags = RHN_CREATE_MR_F_FAST_REG;
  uint32_t key = 0;
  CONFORM_EQ(c, "CREATE_MR fast-reg", RHN_ADMIN_OK, n.run(m, &key));
  n.wr64(list, page | RHN_VPTE_VALID);
  const uint32_t new_key = (key & ~RHN_KEY_VARIANT_MASK) | 0x41;
  Wqe w(l.a, RHN_OP_REG_MR);
  w.w->u.reg.length = 4096;
  w.w->u.reg.num_pages = 1;
  w.w->u.reg.page_shift = 12;
  w.w->imm_data = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE;
  w.remote(0x5000'0000'0000ull, new_key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "REG_MR CQE", RHN_CQE_OP_REG_MR, RHN_CQE_SUCCESS,
              &e))
    return;
  Wqe(l.a, RHN_OP_WRITE)
      .sge(0, l.src.addr, 48, l.src.key)
      .remote(0x5000'0000'0000ull + 16, new_key)
      .post(n, l.a);
  if (!cqe_is(c, n, l.scq, "WRITE CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  if (!same_bytes(c, n, l.src.addr, page + 16, 48, "data in the page")) return;
  Wqe(l.a, RHN_OP_WRITE)
      .sge(0, l.src.addr, 8, l.src.key)
      .remote(0x5000'0000'0000ull, key)
      .post(n, l.a);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE for the old key");
  CONFORM_EQ(c, "old key's CQE status", RHN_CQE_REM_ACCESS_ERR, e.status);
  c.eq("old key's vendor_err", RHN_SYN_BAD_KEY, e.vendor_err);
}

// ---- the raw Ethernet QP (README.md decision 12) ----

namespace {

struct Raw {
  Eq eq;
  Cq cq;
  uint32_t pd = 0;
  Qp qp;
  Buf buf;
  std::string make(Nic& n, uint32_t ctx = 0) {
    n.target().set_forwarding(false);
    std::string e = n.bring_up();
    if (!e.empty()) return e;
    QpSpec spec;
    spec.type = RHN_QP_RAW_ETH;
    if (!n.create_eq(4, 1, &eq) || !n.create_cq(0, 6, eq.eqn, &cq) ||
        !n.create_pd(0, &pd) || !n.make_buf(pd, 4096, &buf))
      return n.error();
    if (ctx == 0 &&
        (!n.create_qp(0, pd, &cq, &cq, spec, &qp) || !n.activate(qp)))
      return n.error();
    return {};
  }
};

}  // namespace

CONFORM_CASE(raw_second, "wqe.raw.second_qp_exists", "wqe",
             "a second RHN_QP_RAW_ETH QP: EXISTS") {
  Nic n(t);
  Raw r;
  const std::string e0 = r.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  QpSpec spec;
  spec.type = RHN_QP_RAW_ETH;
  Qp q2;
  CONFORM_THAT(c, !n.create_qp(0, r.pd, &r.cq, &r.cq, spec, &q2),
               "second raw QP", "created");
  c.that(n.error().find("status 9") != std::string::npos, "status",
         "expected EXISTS (9): " + n.error());
}

CONFORM_CASE(raw_user, "wqe.raw.user_context", "wqe",
             "a raw QP from a user context: NOT_PERMITTED") {
  Nic n(t);
  Raw r;
  const std::string e0 = r.make(n, 1);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  uint32_t upd = 0;
  CONFORM_THAT(c, n.create_pd(1, &upd), "CREATE_PD 1", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_QP, 1);
  m.u.create_qp.pdn = upd;
  m.u.create_qp.send_cqn = m.u.create_qp.recv_cqn = r.cq.cqn;
  m.u.create_qp.srqn = RHN_NO_SRQ;
  m.u.create_qp.type = RHN_QP_RAW_ETH;
  m.u.create_qp.sq_log_depth = m.u.create_qp.rq_log_depth = 4;
  c.eq("CREATE_QP raw from context 1", RHN_ADMIN_NOT_PERMITTED, n.run(m));
}

CONFORM_CASE(raw_send, "wqe.raw.send_frame", "wqe",
             "RAW_ETH leaves at once as one RAW frame to dst_node with the "
             "payload; the WQE completes RHN_CQE_OP_RAW_ETH") {
  Nic n(t);
  Raw r;
  const std::string e0 = r.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  n.fill(r.buf.addr, 60, 8);
  Wqe w(r.qp, RHN_OP_RAW_ETH);
  w.w->dst_node = 50;
  w.sge(0, r.buf.addr, 60, r.buf.key).post(n, r.qp);
  rhn_cqe e;
  if (!cqe_is(c, n, r.cq, "send CQE", RHN_CQE_OP_RAW_ETH, RHN_CQE_SUCCESS, &e))
    return;
  // The CQE may be seen before a guest target's capture has the frame
  // (it arrives over the wire socket): wait for it.
  Frame f;
  bool found = false;
  t.wait_until(
      [&] {
        for (auto& x : t.take_tx_frames())
          if (x.size() >= RHN_PKT_HDR_LEN && x[3] == RHN_PKT_RAW) {
            f = x;
            found = true;
          }
        return found;
      },
      kWaitNs);
  CONFORM_THAT(c, found, "wire", "no RAW frame");
  CONFORM_EQ(c, "frame length", RHN_PKT_HDR_LEN + 60, f.size());
  CONFORM_EQ(c, "dst_node", 50, hdr_of(f).dst_node);
  CONFORM_EQ(c, "payload_crc", crc32c(f.data() + RHN_PKT_HDR_LEN, 60),
             hdr_of(f).payload_crc);
  const auto mem = n.bytes(r.buf.addr, 60);
  for (int i = 0; i < 60; i++)
    CONFORM_EQ(c, "payload byte " + std::to_string(i), mem[i],
               f[RHN_PKT_HDR_LEN + i]);
}

CONFORM_CASE(raw_recv, "wqe.raw.receive_frame", "wqe",
             "a RAW frame for this node lands in the raw QP's receive WQE: "
             "RECV_RAW_ETH, src_node set, src_qpn 0") {
  Nic n(t);
  Raw r;
  const std::string e0 = r.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  n.post_recv(r.qp, r.buf.addr, 2048, r.buf.key);
  uint8_t eth[64];
  for (int i = 0; i < 64; i++) eth[i] = uint8_t(i * 5);
  const uint16_t node = uint16_t(n.r32(RHN_REG_NODE_ID));
  t.inject_frame(make_frame(pkt_hdr(RHN_PKT_RAW, node, 50, 0, 0), nullptr, eth,
                            sizeof(eth)));
  rhn_cqe e;
  if (!cqe_is(c, n, r.cq, "receive CQE", RHN_CQE_OP_RECV_RAW_ETH,
              RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", sizeof(eth), e.byte_len);
  CONFORM_EQ(c, "src_node", 50, e.src_node);
  CONFORM_EQ(c, "src_qpn", 0, e.src_qpn);
  const auto mem = n.bytes(r.buf.addr, sizeof(eth));
  for (size_t i = 0; i < sizeof(eth); i++)
    CONFORM_EQ(c, "frame byte " + std::to_string(i), eth[i], mem[i]);
}

CONFORM_CASE(raw_small, "wqe.raw.receive_too_small", "wqe",
             "a RAW frame longer than the receive WQE: LOC_LEN_ERR") {
  Nic n(t);
  Raw r;
  const std::string e0 = r.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  n.post_recv(r.qp, r.buf.addr, 16, r.buf.key);
  const uint8_t eth[64] = {1};
  const uint16_t node = uint16_t(n.r32(RHN_REG_NODE_ID));
  t.inject_frame(make_frame(pkt_hdr(RHN_PKT_RAW, node, 50, 0, 0), nullptr, eth,
                            sizeof(eth)));
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(r.cq, &e), "receive CQ", "no CQE");
  c.eq("CQE status", RHN_CQE_LOC_LEN_ERR, e.status);
}

}  // namespace rhinet::conform
