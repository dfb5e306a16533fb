// SPDX-License-Identifier: BSD-2-Clause
// Triggered operations (triggered.md): trigger counters made by admin
// commands, increments by the TRIGGER doorbell, WQEs parked until their
// counter reaches a threshold, chains, and how parked WQEs end.
#include <string>

#include "case.h"
#include "lib/work.h"

namespace rhinet::conform {
namespace {

// A counter of context ctx holding `value`; its handle (0 when refused).
uint32_t new_counter(Check& c, Nic& n, uint32_t ctx, uint64_t value) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_TRIGGER, ctx);
  m.u.create_trigger.value = value;
  m.u.create_trigger.key = 0x5eed;
  uint32_t h = 0;
  c.eq("CREATE_TRIGGER", RHN_ADMIN_OK, n.run(m, &h));
  return h;
}

uint8_t destroy_counter(Nic& n, uint32_t ctx, uint32_t h) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_DESTROY_TRIGGER, ctx);
  m.u.handle.handle = h;
  return n.run(m);
}

// QUERY_TRIGGER: the admin status, the value in *v.
uint8_t query_counter(Nic& n, uint32_t ctx, uint32_t h, uint64_t* v) {
  const uint64_t out = n.alloc(8, 8);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_QUERY_TRIGGER, ctx);
  m.u.query.out_addr = out;
  m.u.query.out_len = 8;
  m.u.query.handle = h;
  const uint8_t st = n.run(m);
  *v = n.rd64(out);
  return st;
}

void add(Nic& n, uint32_t page, uint32_t h, uint32_t addend) {
  n.target().doorbell_write(page, RHN_DB_TRIGGER,
                            rhn_db_trigger_value(h, addend), 8);
}

// A WQE of `opcode` on `qp` with trigger flags `xflags`: waiting on
// `counter` for `threshold`, chaining to `chain`. Not copied: its tail
// points into it.
struct TrigWqe {
  rhn_wqe_trigger tr{};
  rhn_wqe_tail tail{};
  Wqe w;
  uint16_t index;  // its wqe_index
  TrigWqe(const Qp& qp, uint8_t opcode, uint16_t xflags, uint32_t counter,
          uint64_t threshold, uint32_t chain = 0,
          uint8_t flags = RHN_WQE_F_SIGNALED)
      : w(qp, opcode, flags), index(static_cast<uint16_t>(qp.sq_pi)) {
    tr.counter = counter;
    tr.chain = chain;
    tr.threshold = threshold;
    tail.xflags = xflags;
    tail.trigger = &tr;
    w.tail = &tail;
  }
  TrigWqe(const TrigWqe&) = delete;
};

// A WRITE of src[off, off + len) to dst[off, ...) on l.a, with trigger
// flags as TrigWqe's; its wqe_index.
uint16_t post_write(Nic& n, Loop& l, uint32_t off, uint32_t len,
                    uint16_t xflags, uint32_t counter, uint64_t threshold,
                    uint32_t chain = 0, uint8_t flags = RHN_WQE_F_SIGNALED) {
  TrigWqe t(l.a, RHN_OP_WRITE, xflags, counter, threshold, chain, flags);
  t.w.sge(0, l.src.addr + off, len, l.src.key)
      .remote(l.dst.addr + off, l.dst.key);
  t.w.post(n, l.a);
  return t.index;
}

// The next CQE of l.a's send CQ: `opcode`, `status`, and the WQE's own
// wqe_index (a parked WQE completes with its own, whenever it runs).
bool send_cqe(Check& c, Nic& n, Loop& l, const std::string& what,
              uint8_t opcode, uint8_t status, uint16_t index, rhn_cqe* e) {
  return cqe_is(c, n, l.scq, what, opcode, status, e) &&
         c.eq(what + " wqe_index", index, e->wqe_index);
}

bool no_cqe(Check& c, Nic& n, Cq& cq, const std::string& what) {
  n.target().settle();
  rhn_cqe e;
  if (!n.poll_cq(cq, &e)) return true;
  return c.fail(what, "a CQE came (status " + hex(e.status) + ", wqe_index " +
                          hex(e.wqe_index) + ")");
}

bool untouched(Check& c, Nic& n, uint64_t addr, size_t len,
               const std::string& what) {
  for (uint8_t b : n.bytes(addr, len))
    if (b) return c.fail(what, "bytes were written");
  return true;
}

// A plain signalled WRITE goes through after whatever came before.
bool qp_goes_on(Check& c, Nic& n, Loop& l) {
  const uint16_t i = post_write(n, l, 3072, 64, 0, 0, 0);
  rhn_cqe e;
  return send_cqe(c, n, l, "a later WRITE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
                  i, &e);
}

}  // namespace

// A loopback pair of `type` (LOOP) and a counter `h` of the kernel
// context holding `value`, or the case stops.
#define LOOP_WITH_COUNTER(n, l, type, h, value)     \
  LOOP(n, l, (type));                               \
  const uint32_t h = new_counter(c, n, 0, (value)); \
  if (!c.ok()) return

CONFORM_CASE(trigger_caps, "trigger.device.caps", "trigger",
             "RHN_REG_CAPS announces RHN_CAP_TRIGGER and QUERY_DEVICE the "
             "sizes of the counter and parked-WQE tables") {
  Nic n(t);
  CONFORM_UP(c, n);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_TRIGGER) != 0, "CAPS",
               "RHN_CAP_TRIGGER not set");
  rhn_device_attr a{};
  CONFORM_EQ(c, "QUERY_DEVICE", RHN_ADMIN_OK, n.query_device(&a));
  CONFORM_THAT(c, a.max_trigger_counters > 0, "max_trigger_counters", "0");
  c.that(a.max_trigger_parked > 0, "max_trigger_parked", "0");
}

CONFORM_CASE(trigger_threshold, "trigger.fire.threshold", "trigger",
             "a triggered WRITE waits, parked, while the QP's next WQE runs; "
             "it runs when TRIGGER doorbells bring its counter to the "
             "threshold, with its own CQE (wqe_index) on the QP's CQ") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  const uint64_t fired = n.counter(RHN_CNT_TRIGGER_FIRED);
  const uint16_t idx = post_write(n, l, 0, 256, RHN_WQE_X_TRIGGERED, h, 3);
  if (!qp_goes_on(c, n, l)) return;
  add(n, 0, h, 2);
  if (!no_cqe(c, n, l.scq, "value 2 of 3")) return;
  if (!untouched(c, n, l.dst.addr, 256, "destination before the threshold"))
    return;
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  CONFORM_EQ(c, "counter value", 2, v);
  add(n, 0, h, 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered WRITE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
                idx, &e))
    return;
  CONFORM_EQ(c, "byte_len", 256, e.byte_len);
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 256, "triggered data")) return;
  c.eq(counter_name(RHN_CNT_TRIGGER_FIRED), fired + 1,
       n.counter(RHN_CNT_TRIGGER_FIRED));
}

CONFORM_CASE(trigger_reached, "trigger.fire.already_reached", "trigger",
             "a triggered WRITE whose counter holds its threshold already "
             "runs at once") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 5);
  const uint16_t idx = post_write(n, l, 0, 128, RHN_WQE_X_TRIGGERED, h, 5);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered WRITE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
                idx, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr, 128, "data");
}

CONFORM_CASE(trigger_read, "trigger.fire.read", "trigger",
             "a triggered READ (an answered operation) parks, fires and "
             "brings its data") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  TrigWqe r(l.a, RHN_OP_READ, RHN_WQE_X_TRIGGERED, h, 1);
  r.w.sge(0, l.dst.addr, 512, l.dst.key).remote(l.src.addr, l.src.key);
  CONFORM_EQ(c, "slots (base + trigger)", 2, r.w.post(n, l.a));
  if (!no_cqe(c, n, l.scq, "parked")) return;
  add(n, 0, h, 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered READ", RHN_CQE_OP_READ, RHN_CQE_SUCCESS,
                r.index, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr, 512, "data");
}

CONFORM_CASE(trigger_rnr, "trigger.fire.send_rnr", "trigger",
             "a triggered SEND that fires before a receive is posted is "
             "resent after the RNR wait (from the NIC's copy) and lands") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  TrigWqe s(l.a, RHN_OP_SEND, RHN_WQE_X_TRIGGERED, h, 2);
  s.w.sge(0, l.src.addr, 48, l.src.key).post(n, l.a);
  add(n, 0, h, 2);
  // Its first attempt finds no receive WQE; it is sent again (rnr_retry
  // 7: for ever) until one is posted.
  t.settle();
  CONFORM_THAT(c, n.counter(RHN_CNT_RNR_NAKS_SENT) > 0,
               counter_name(RHN_CNT_RNR_NAKS_SENT), "no RNR NAK");
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, s.index,
                &e))
    return;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "received byte_len", 48, e.byte_len);
  same_bytes(c, n, l.src.addr, l.dst.addr, 48, "data");
}

CONFORM_CASE(trigger_ud, "trigger.fire.ud_send", "trigger",
             "a triggered UD SEND (its destination in the WQE) parks and, "
             "fired, lands at its destination") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_UD, h, 0);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  TrigWqe s(l.a, RHN_OP_SEND, RHN_WQE_X_TRIGGERED, h, 4);
  s.w.sge(0, l.src.addr, 64, l.src.key).to(l, l.b).post(n, l.a);
  if (!no_cqe(c, n, l.rcq, "parked")) return;
  add(n, 0, h, 4);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK);
  if (!send_cqe(c, n, l, "triggered SEND", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS,
                s.index, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr + RHN_UD_GRH_LEN, 64, "payload");
}

CONFORM_CASE(trigger_chain_qps, "trigger.chain.across_qps", "trigger",
             "a WRITE on one QP chains to the counter a WRITE parked on "
             "another QP waits on: its completion runs the other") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  // b's WRITE goes the other way: dst[2048, +64) into src[2048, +64).
  TrigWqe back(l.b, RHN_OP_WRITE, RHN_WQE_X_TRIGGERED, h, 1);
  back.w.sge(0, l.dst.addr + 2048, 64, l.dst.key)
      .remote(l.src.addr + 2048, l.src.key);
  n.fill(l.dst.addr + 2048, 64, 9);
  back.w.post(n, l.b);
  if (!no_cqe(c, n, l.rcq, "parked on b")) return;
  post_write(n, l, 0, 64, RHN_WQE_X_CHAIN, 0, 0, h, 0);  // unsignalled
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "b's triggered WRITE", RHN_CQE_OP_WRITE,
              RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "b's wqe_index", back.index, e.wqe_index);
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 64, "a's WRITE")) return;
  same_bytes(c, n, l.dst.addr + 2048, l.src.addr + 2048, 64, "b's WRITE");
}

CONFORM_CASE(trigger_qp_error, "trigger.flush.qp_error", "trigger",
             "an RC QP moved to the error state by a failed WRITE completes "
             "its parked WQE WR_FLUSH_ERR / RHN_SYN_FLUSHED") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  const uint16_t parked = post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED, h, 1);
  TrigWqe bad(l.a, RHN_OP_WRITE, 0, 0, 0);
  bad.w.sge(0, l.src.addr, 64, l.src.key).remote(l.dst.addr, l.dst.key ^ 0x80);
  bad.w.post(n, l.a);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "bad WRITE", RHN_CQE_OP_WRITE, RHN_CQE_REM_ACCESS_ERR,
                bad.index, &e))
    return;
  if (!send_cqe(c, n, l, "parked WQE", RHN_CQE_OP_WRITE, RHN_CQE_WR_FLUSH_ERR,
                parked, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_FLUSHED, e.vendor_err);
  add(n, 0, h, 1);
  no_cqe(c, n, l.scq, "after the doorbell");
}

CONFORM_CASE(trigger_lock, "trigger.ops.lock_then_unlock", "trigger",
             "a LOCK chained to the counter a parked UNLOCK waits on: the "
             "lock is taken, and its completion releases it with no CPU "
             "between") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_ENDPOINT, h, 0);
  TrigWqe unlock(l.a, RHN_OP_UNLOCK, RHN_WQE_X_TRIGGERED, h, 1);
  unlock.w.to(l, l.b).w->remote_addr = 42;
  unlock.w.post(n, l.a);
  if (!no_cqe(c, n, l.scq, "UNLOCK parked")) return;
  TrigWqe lock(l.a, RHN_OP_LOCK, RHN_WQE_X_CHAIN, 0, 0, h);
  lock.w.to(l, l.b).w->remote_addr = 42;
  lock.w.post(n, l.a);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "LOCK", RHN_CQE_OP_LOCK, RHN_CQE_SUCCESS, lock.index,
                &e))
    return;
  send_cqe(c, n, l, "triggered UNLOCK", RHN_CQE_OP_UNLOCK, RHN_CQE_SUCCESS,
           unlock.index, &e);
}

CONFORM_CASE(trigger_stride, "trigger.ops.write_stride", "trigger",
             "a triggered STRIDE WRITE: its partial-transfer descriptor and "
             "its trigger slot (after it); fired, it places the blocks") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  rhn_wqe_xfer x{};
  x.block = 8;
  x.count = 4;
  x.local_stride = 64;
  x.remote_stride = 16;
  TrigWqe w(l.a, RHN_OP_WRITE, RHN_WQE_X_TRIGGERED, h, 1);
  w.tail.xfer_mode = RHN_XFER_STRIDE;
  w.tail.xfer = &x;
  w.w.sge(0, l.src.addr, 3 * 64 + 8, l.src.key).remote(l.dst.addr, l.dst.key);
  CONFORM_EQ(c, "slots (base + descriptor + trigger)", 3, w.w.post(n, l.a));
  if (!no_cqe(c, n, l.scq, "parked")) return;
  add(n, 0, h, 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered WRITE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
                w.index, &e))
    return;
  CONFORM_EQ(c, "byte_len", 32, e.byte_len);
  for (uint32_t i = 0; i < 4; i++)
    if (!same_bytes(c, n, l.src.addr + 64 * i, l.dst.addr + 16 * i, 8,
                    "block " + std::to_string(i)))
      return;
}

CONFORM_CASE(trigger_mcast, "trigger.ops.mcast_list", "trigger",
             "a triggered MCAST_LIST (a fan-out WQE with a family slot) "
             "fires and reaches its member") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_ENDPOINT, h, 0);
  constexpr uint32_t kArea = RHN_AREA_KEY(0, 5);
  rhn_admin_cmd r = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  r.u.register_area.area_id = kArea;
  r.u.register_area.key = l.dst.key;
  r.u.register_area.iova = l.dst.addr;
  r.u.register_area.length = l.dst.len;
  CONFORM_EQ(c, "REGISTER_AREA", RHN_ADMIN_OK, n.run(r));
  const uint64_t list = l.src.addr + 12288;
  rhn_mcast_dest d{};
  d.node = l.node;
  d.qpn = l.b.qpn;
  t.mem_write(list, &d, sizeof(d));
  rhn_wqe_mcast m{};
  m.list_addr = list;
  m.list_lkey = l.src.key;
  m.count = 1;
  TrigWqe w(l.a, RHN_OP_MCAST_LIST, RHN_WQE_X_TRIGGERED, h, 1, 0,
            RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  w.tail.mcast = &m;
  w.w.sge(0, l.src.addr, 64, l.src.key).remote(256, kArea);
  w.w.post(n, l.a);
  if (!no_cqe(c, n, l.scq, "parked")) return;
  if (!untouched(c, n, l.dst.addr + 256, 64, "member before the doorbell"))
    return;
  add(n, 0, h, 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered MCAST_LIST", RHN_CQE_OP_MCAST_LIST,
                RHN_CQE_SUCCESS, w.index, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr + 256, 64, "member's data");
}

CONFORM_CASE(trigger_chain3, "trigger.chain.three", "trigger",
             "three WRITEs each waiting on the counter the one before chains "
             "to (unsignalled ones too): one doorbell runs them in turn; the "
             "last chain adds 1 to its counter") {
  LOOP(n, l, RHN_QP_RC);
  uint32_t k[4];
  for (uint32_t& h : k) h = new_counter(c, n, 0, 0);
  if (!c.ok()) return;
  // Posted last link first: each parks until the one before completes.
  constexpr uint16_t kBoth = RHN_WQE_X_TRIGGERED | RHN_WQE_X_CHAIN;
  const uint16_t last = post_write(n, l, 512, 64, kBoth, k[2], 1, k[3]);
  post_write(n, l, 256, 64, kBoth, k[1], 1, k[2], 0);
  post_write(n, l, 0, 64, kBoth, k[0], 1, k[1], 0);
  if (!no_cqe(c, n, l.scq, "before the doorbell")) return;
  if (!untouched(c, n, l.dst.addr, 1024, "destination before the doorbell"))
    return;
  add(n, 0, k[0], 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "last link", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, last,
                &e))
    return;
  for (uint32_t off : {0u, 256u, 512u})
    if (!same_bytes(c, n, l.src.addr + off, l.dst.addr + off, 64,
                    "link at " + std::to_string(off)))
      return;
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, k[3], &v));
  c.eq("last chain's counter", 1, v);
}

CONFORM_CASE(trigger_chain_failed, "trigger.chain.failure", "trigger",
             "a chained WRITE that fails (a bad rkey) adds nothing to its "
             "counter; its error CQE is written as usual") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  TrigWqe w(l.a, RHN_OP_WRITE, RHN_WQE_X_CHAIN, 0, 0, h);
  w.w.sge(0, l.src.addr, 64, l.src.key).remote(l.dst.addr, l.dst.key ^ 0x80);
  w.w.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "status", RHN_CQE_REM_ACCESS_ERR, e.status);
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  c.eq("counter value", 0, v);
}

CONFORM_CASE(trigger_stale, "trigger.error.stale_handle", "trigger",
             "a destroyed counter's handle: a triggered WQE naming it "
             "completes GENERAL_ERR / RHN_SYN_BAD_TRIGGER and the RC QP goes "
             "on; a TRIGGER doorbell naming it is dropped and counted") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  CONFORM_EQ(c, "DESTROY_TRIGGER", RHN_ADMIN_OK, destroy_counter(n, 0, h));
  const uint32_t again = new_counter(c, n, 0, 0);  // may reuse the entry
  if (!c.ok()) return;
  CONFORM_THAT(c, again != h, "new handle", "the stale handle again");
  const uint16_t idx = post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED, h, 1);
  rhn_cqe e;
  if (!send_cqe(c, n, l, "triggered WRITE", RHN_CQE_OP_WRITE,
                RHN_CQE_GENERAL_ERR, idx, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_BAD_TRIGGER, e.vendor_err);
  if (!qp_goes_on(c, n, l)) return;
  const uint64_t dropped = n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS);
  add(n, 0, h, 1);
  n.target().settle();
  CONFORM_EQ(c, counter_name(RHN_CNT_TRIGGER_DROPPED_ADDS), dropped + 1,
             n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS));
  uint64_t v = 1;
  CONFORM_EQ(c, "QUERY_TRIGGER (new)", RHN_ADMIN_OK,
             query_counter(n, 0, again, &v));
  c.eq("new counter's value", 0, v);
}

CONFORM_CASE(trigger_flood, "trigger.doorbell.past_full_fifo", "trigger",
             "TRIGGER doorbells rung among more kicks than the kick FIFO "
             "holds all count: the value is their exact sum, and a WRITE "
             "parked at that sum fires once while one parked a unit "
             "beyond it waits") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  constexpr uint32_t kAdds = 3000;  // each behind an RQ kick
  uint64_t sum = 0;
  for (uint32_t i = 0; i < kAdds; i++) sum += i % 7 + 1;
  const uint64_t fired = n.counter(RHN_CNT_TRIGGER_FIRED);
  const uint64_t dropped = n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS);
  const uint16_t idx = post_write(n, l, 0, 256, RHN_WQE_X_TRIGGERED, h, sum);
  post_write(n, l, 1024, 256, RHN_WQE_X_TRIGGERED, h, sum + 1);
  t.settle();
  // No settle in between: on a NIC that takes kicks more slowly than
  // they come, the FIFO fills (KICK_OVERFLOWS), which must cost no add.
  for (uint32_t i = 0; i < kAdds; i++) {
    t.doorbell_write(0, RHN_DB_RQ, l.a.qpn, 4);
    add(n, 0, h, i % 7 + 1);
  }
  rhn_cqe e;
  if (!send_cqe(c, n, l, "WRITE parked at the sum", RHN_CQE_OP_WRITE,
                RHN_CQE_SUCCESS, idx, &e))
    return;
  if (!no_cqe(c, n, l.scq, "the WRITE parked beyond the sum")) return;
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  CONFORM_EQ(c, "counter value", sum, v);
  CONFORM_EQ(c, counter_name(RHN_CNT_TRIGGER_FIRED), fired + 1,
             n.counter(RHN_CNT_TRIGGER_FIRED));
  c.eq(counter_name(RHN_CNT_TRIGGER_DROPPED_ADDS), dropped,
       n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS));
}

CONFORM_CASE(trigger_foreign, "trigger.doorbell.foreign_context", "trigger",
             "a TRIGGER doorbell on another context's page (or not one "
             "8-byte store) is dropped and counted; on its own page it adds") {
  Nic n(t);
  CONFORM_UP(c, n);
  CONFORM_THAT(c, n.create_context(1), "context 1", n.error());
  const uint32_t h = new_counter(c, n, 1, 0);
  if (!c.ok()) return;
  const uint64_t dropped = n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS);
  add(n, 0, h, 7);                            // the kernel's page
  t.doorbell_write(1, RHN_DB_TRIGGER, h, 4);  // half a store
  t.settle();
  CONFORM_EQ(c, counter_name(RHN_CNT_TRIGGER_DROPPED_ADDS), dropped + 2,
             n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS));
  uint64_t v = 1;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 1, h, &v));
  CONFORM_EQ(c, "value after foreign adds", 0, v);
  // The handle alone names nothing outside its context.
  CONFORM_EQ(c, "QUERY_TRIGGER from the kernel context", RHN_ADMIN_BAD_HANDLE,
             query_counter(n, 0, h, &v));
  add(n, 1, h, 7);
  t.settle();
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 1, h, &v));
  c.eq("value after its own page's add", 7, v);
}

CONFORM_CASE(trigger_full, "trigger.error.table_full", "trigger",
             "triggered WQEs past the context's share of the parked table "
             "complete GENERAL_ERR / RHN_SYN_TRIGGER_NO_ROOM, the QP goes on, "
             "and the parked ones all run when their counter is reached") {
  LOOP(n, l, RHN_QP_RC);
  rhn_device_attr a{};
  CONFORM_EQ(c, "QUERY_DEVICE", RHN_ADMIN_OK, n.query_device(&a));
  const uint32_t h = new_counter(c, n, 0, 0);
  if (!c.ok()) return;
  uint32_t parked = 0;
  rhn_cqe e;
  for (;;) {
    const uint16_t idx = post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED, h, 1);
    n.target().settle();
    if (n.poll_cq(l.scq, &e)) {
      CONFORM_EQ(c, "refusal's wqe_index", idx, e.wqe_index);
      break;
    }
    CONFORM_THAT(c, ++parked <= a.max_trigger_parked, "parked WQEs",
                 "more than max_trigger_parked");
  }
  CONFORM_EQ(c, "refusal status", RHN_CQE_GENERAL_ERR, e.status);
  CONFORM_EQ(c, "refusal vendor_err", RHN_SYN_TRIGGER_NO_ROOM, e.vendor_err);
  CONFORM_THAT(c, parked > 0, "parked WQEs", "none before the refusal");
  if (!qp_goes_on(c, n, l)) return;
  add(n, 0, h, 1);
  for (uint32_t i = 0; i < parked; i++)
    if (!cqe_is(c, n, l.scq, "fired WQE " + std::to_string(i), RHN_CQE_OP_WRITE,
                RHN_CQE_SUCCESS, &e))
      return;
  no_cqe(c, n, l.scq, "after the fired WQEs");
}

CONFORM_CASE(trigger_qp_destroyed, "trigger.flush.qp_destroyed", "trigger",
             "destroying a QP with a parked WQE completes it WR_FLUSH_ERR / "
             "RHN_SYN_FLUSHED on the QP's CQ; its counter stays usable") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  const uint16_t idx = post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED, h, 1);
  if (!no_cqe(c, n, l.scq, "parked")) return;
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_DESTROY_QP);
  m.u.handle.handle = l.a.qpn;
  CONFORM_EQ(c, "DESTROY_QP", RHN_ADMIN_OK, n.run(m));
  rhn_cqe e;
  if (!send_cqe(c, n, l, "parked WQE", RHN_CQE_OP_WRITE, RHN_CQE_WR_FLUSH_ERR,
                idx, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_FLUSHED, e.vendor_err);
  add(n, 0, h, 1);
  if (!no_cqe(c, n, l.scq, "after the doorbell")) return;
  untouched(c, n, l.dst.addr, 64, "destination");
}

CONFORM_CASE(trigger_counter_destroyed, "trigger.flush.counter_destroyed",
             "trigger",
             "destroying a counter completes the WQEs parked on it "
             "WR_FLUSH_ERR / RHN_SYN_TRIGGER_GONE; the QP goes on") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  const uint16_t i0 = post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED, h, 1);
  const uint16_t i1 = post_write(n, l, 64, 64, RHN_WQE_X_TRIGGERED, h, 2, 0, 0);
  if (!no_cqe(c, n, l.scq, "parked")) return;
  CONFORM_EQ(c, "DESTROY_TRIGGER", RHN_ADMIN_OK, destroy_counter(n, 0, h));
  rhn_cqe e;
  for (uint16_t idx : {i0, i1}) {
    if (!send_cqe(c, n, l, "parked WQE", RHN_CQE_OP_WRITE, RHN_CQE_WR_FLUSH_ERR,
                  idx, &e))
      return;
    CONFORM_EQ(c, "vendor_err", RHN_SYN_TRIGGER_GONE, e.vendor_err);
  }
  CONFORM_EQ(c, "DESTROY_TRIGGER again", RHN_ADMIN_BAD_HANDLE,
             destroy_counter(n, 0, h));
  if (!qp_goes_on(c, n, l)) return;
  untouched(c, n, l.dst.addr, 128, "destination");
}

CONFORM_CASE(trigger_context_gone, "trigger.context.teardown", "trigger",
             "DESTROY_CONTEXT ends the context's counters: in the context's "
             "next life the old handle names nothing (admin refuses it, a "
             "doorbell naming it is dropped and counted)") {
  Nic n(t);
  CONFORM_UP(c, n);
  CONFORM_THAT(c, n.create_context(1), "context 1", n.error());
  const uint32_t h = new_counter(c, n, 1, 3);
  if (!c.ok()) return;
  CONFORM_EQ(c, "DESTROY_CONTEXT", RHN_ADMIN_OK,
             n.run(Nic::cmd(RHN_ADMIN_DESTROY_CONTEXT, 1)));
  CONFORM_THAT(c, n.create_context(1), "context 1 again", n.error());
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER (old handle)", RHN_ADMIN_BAD_HANDLE,
             query_counter(n, 1, h, &v));
  const uint64_t dropped = n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS);
  add(n, 1, h, 1);
  t.settle();
  CONFORM_EQ(c, counter_name(RHN_CNT_TRIGGER_DROPPED_ADDS), dropped + 1,
             n.counter(RHN_CNT_TRIGGER_DROPPED_ADDS));
  const uint32_t again = new_counter(c, n, 1, 0);
  if (!c.ok()) return;
  c.that(again != h, "new counter's handle", "the old handle again");
}

CONFORM_CASE(trigger_bad_flags, "trigger.error.unknown_xflags", "trigger",
             "an unknown RHN_WQE_X_* bit is a malformed WQE: LOC_QP_OP_ERR / "
             "RHN_SYN_BAD_WQE") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  post_write(n, l, 0, 64, RHN_WQE_X_TRIGGERED | 0x8000, h, 1);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "WQE", RHN_CQE_OP_WRITE, RHN_CQE_LOC_QP_OP_ERR, &e))
    return;
  c.eq("vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
}

// ---- Collectives (queues.md "Collectives") -------------------------------

namespace {

// An allreduce (INT64 sum) of kCollLen bytes between the loop's two
// endpoints, rank 0 = a, rank 1 = b, on the NIC's own node. Rank r's
// operand is src + r * kCollStride, its result dst + r * kCollStride; both
// ranks read one member list.
constexpr uint32_t kComm = RHN_AREA_KEY(0, 9);
constexpr uint32_t kCollLen = 256;
constexpr uint32_t kCollStride = 1024;
constexpr uint32_t kMembersOff = 12288;

int64_t coll_element(uint32_t rank, uint32_t i, uint64_t salt) {
  return static_cast<int64_t>((rank + 1) * 1000003u * (i + 1) + salt) *
         (rank ? -1 : 3);
}

// Writes the member list and both operands (`salt` makes each round's
// differ) and zeroes the results.
void coll_prepare(Nic& n, Loop& l, uint64_t salt) {
  for (uint32_t r = 0; r < 2; r++) {
    rhn_mcast_dest d{};
    d.node = l.node;
    d.qpn = r ? l.b.qpn : l.a.qpn;
    n.target().mem_write(l.src.addr + kMembersOff + 8u * r, &d, sizeof(d));
    for (uint32_t i = 0; i < kCollLen / 8; i++) {
      n.wr64(l.src.addr + r * kCollStride + 8u * i,
             static_cast<uint64_t>(coll_element(r, i, salt)));
      n.wr64(l.dst.addr + r * kCollStride + 8u * i, 0);
    }
  }
}

// The allreduce part of `rank` on `qp`, with trigger flags as TrigWqe's.
struct CollWqe : TrigWqe {
  rhn_wqe_coll x{};
  CollWqe(const Loop& l, const Qp& qp, uint16_t rank, uint16_t xflags = 0,
          uint32_t counter = 0, uint64_t threshold = 0, uint32_t chain = 0)
      : TrigWqe(qp, RHN_OP_COLLECTIVE, xflags, counter, threshold, chain) {
    x.op = RHN_COLL_ALLREDUCE;
    x.reduce = RHN_COLL_SUM;
    x.type = RHN_COLL_INT64;
    x.rank = rank;
    x.nranks = 2;
    x.length = kCollLen;
    x.send_addr = l.src.addr + rank * kCollStride;
    x.send_lkey = l.src.key;
    x.recv_addr = l.dst.addr + rank * kCollStride;
    x.recv_lkey = l.dst.key;
    x.members_addr = l.src.addr + kMembersOff;
    x.members_lkey = l.src.key;
    w.remote(0, kComm);
    tail.coll = &x;
  }
};

// Both ranks' results hold the sum of the two operands of round `salt`.
bool coll_result(Check& c, Nic& n, Loop& l, uint64_t salt) {
  for (uint32_t r = 0; r < 2; r++)
    for (uint32_t i = 0; i < kCollLen / 8; i++) {
      const uint64_t want = static_cast<uint64_t>(coll_element(0, i, salt)) +
                            static_cast<uint64_t>(coll_element(1, i, salt));
      if (!c.eq("rank " + std::to_string(r) + " element " + std::to_string(i),
                want, n.rd64(l.dst.addr + r * kCollStride + 8u * i)))
        return false;
    }
  return true;
}

// Neither rank's result written yet.
bool no_result(Check& c, Nic& n, Loop& l, const std::string& when) {
  return untouched(c, n, l.dst.addr, kCollLen, "rank 0's result " + when) &&
         untouched(c, n, l.dst.addr + kCollStride, kCollLen,
                   "rank 1's result " + when);
}

// The collective's CQE on each rank's CQ (a: scq, b: rcq), a's with the
// wqe_index a_index.
bool coll_done(Check& c, Nic& n, Loop& l, uint16_t a_index) {
  rhn_cqe e;
  if (!send_cqe(c, n, l, "rank 0's collective", RHN_CQE_OP_COLLECTIVE,
                RHN_CQE_SUCCESS, a_index, &e))
    return false;
  return cqe_is(c, n, l.rcq, "rank 1's collective", RHN_CQE_OP_COLLECTIVE,
                RHN_CQE_SUCCESS, &e);
}

}  // namespace

#define COLL_LOOP_WITH_COUNTER(n, l, h, salt)                              \
  LOOP_WITH_COUNTER(n, l, RHN_QP_ENDPOINT, h, 0);                          \
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_COLLECTIVE) != 0, "CAPS", \
               "RHN_CAP_COLLECTIVE not set");                              \
  coll_prepare(n, l, (salt))

CONFORM_CASE(trigger_coll, "trigger.ops.collective", "trigger",
             "a triggered COLLECTIVE (an allreduce of two endpoints, the "
             "other rank's part posted plain) parks: neither rank completes "
             "and no result is written until the counter reaches the "
             "threshold; then both complete with the sum") {
  COLL_LOOP_WITH_COUNTER(n, l, h, 1);
  const uint64_t fired = n.counter(RHN_CNT_TRIGGER_FIRED);
  CollWqe a(l, l.a, 0, RHN_WQE_X_TRIGGERED, h, 2);
  CONFORM_EQ(c, "slots (base + coll + trigger)", 3, a.w.post(n, l.a));
  CollWqe b(l, l.b, 1);
  CONFORM_EQ(c, "slots (base + coll)", 2, b.w.post(n, l.b));
  add(n, 0, h, 1);
  if (!no_cqe(c, n, l.scq, "rank 0 at 1 of 2")) return;
  if (!no_cqe(c, n, l.rcq, "rank 1 while rank 0 is parked")) return;
  if (!no_result(c, n, l, "before it fired")) return;
  add(n, 0, h, 1);
  if (!coll_done(c, n, l, a.index)) return;
  if (!coll_result(c, n, l, 1)) return;
  c.eq(counter_name(RHN_CNT_TRIGGER_FIRED), fired + 1,
       n.counter(RHN_CNT_TRIGGER_FIRED));
}

CONFORM_CASE(trigger_coll_barrier, "trigger.ops.collective_barrier", "trigger",
             "a triggered BARRIER collective of rank 1 (rank 0's posted "
             "plain) holds both ranks until its counter reaches the "
             "threshold; then both complete") {
  COLL_LOOP_WITH_COUNTER(n, l, h, 4);
  CollWqe a(l, l.a, 0);
  CollWqe b(l, l.b, 1, RHN_WQE_X_TRIGGERED, h, 1);
  for (CollWqe* p : {&a, &b}) {
    p->x.op = RHN_COLL_BARRIER;
    p->x.length = 0;
  }
  a.w.post(n, l.a);
  b.w.post(n, l.b);
  if (!no_cqe(c, n, l.scq, "rank 0 while rank 1 is parked")) return;
  if (!no_cqe(c, n, l.rcq, "rank 1 parked")) return;
  add(n, 0, h, 1);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "rank 1's barrier", RHN_CQE_OP_COLLECTIVE,
              RHN_CQE_SUCCESS, &e))
    return;
  if (!c.eq("rank 1's wqe_index", b.index, e.wqe_index)) return;
  send_cqe(c, n, l, "rank 0's barrier", RHN_CQE_OP_COLLECTIVE, RHN_CQE_SUCCESS,
           a.index, &e);
}

CONFORM_CASE(trigger_coll_chain, "trigger.chain.collective", "trigger",
             "a COLLECTIVE chained to a counter: its completion fires the "
             "WRITE parked on it, which sends on the result it wrote") {
  COLL_LOOP_WITH_COUNTER(n, l, h, 2);
  // The parked WRITE copies rank 0's result to dst + 8192.
  TrigWqe wr(l.a, RHN_OP_WRITE, RHN_WQE_X_TRIGGERED, h, 1);
  wr.w.sge(0, l.dst.addr, kCollLen, l.dst.key)
      .remote(l.dst.addr + 8192, l.dst.key)
      .to(l, l.b);
  wr.w.post(n, l.a);
  if (!no_cqe(c, n, l.scq, "WRITE parked")) return;
  CollWqe a(l, l.a, 0, RHN_WQE_X_CHAIN, 0, 0, h);
  a.w.post(n, l.a);
  // Rank 1 not in yet: the collective waits, so the chain adds nothing.
  if (!no_cqe(c, n, l.scq, "rank 0 alone")) return;
  uint64_t v = 1;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  CONFORM_EQ(c, "counter before the collective completes", 0, v);
  CollWqe b(l, l.b, 1);
  b.w.post(n, l.b);
  if (!coll_done(c, n, l, a.index)) return;
  rhn_cqe e;
  if (!send_cqe(c, n, l, "fired WRITE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
                wr.index, &e))
    return;
  if (!coll_result(c, n, l, 2)) return;
  same_bytes(c, n, l.dst.addr, l.dst.addr + 8192, kCollLen,
             "the result the WRITE sent on");
}

CONFORM_CASE(trigger_coll_gone, "trigger.flush.collective_counter_destroyed",
             "trigger",
             "a triggered COLLECTIVE whose counter is destroyed completes "
             "WR_FLUSH_ERR / RHN_SYN_TRIGGER_GONE and never joins the "
             "communicator: the rank's next collective pairs with the other "
             "rank's waiting part and both complete with the sum") {
  COLL_LOOP_WITH_COUNTER(n, l, h, 3);
  CollWqe a(l, l.a, 0, RHN_WQE_X_TRIGGERED, h, 1);
  a.w.post(n, l.a);
  CollWqe b(l, l.b, 1);
  b.w.post(n, l.b);
  if (!no_cqe(c, n, l.rcq, "rank 1 while rank 0 is parked")) return;
  CONFORM_EQ(c, "DESTROY_TRIGGER", RHN_ADMIN_OK, destroy_counter(n, 0, h));
  rhn_cqe e;
  if (!send_cqe(c, n, l, "parked collective", RHN_CQE_OP_COLLECTIVE,
                RHN_CQE_WR_FLUSH_ERR, a.index, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_TRIGGER_GONE, e.vendor_err);
  if (!no_cqe(c, n, l.rcq, "rank 1 after the flush")) return;
  if (!no_result(c, n, l, "after the flush")) return;
  CollWqe again(l, l.a, 0);
  again.w.post(n, l.a);
  if (!coll_done(c, n, l, again.index)) return;
  coll_result(c, n, l, 3);
}

// ---- Remote increments (RHN_OP_TRIGGER_ADD) ------------------------------

namespace {

// A TRIGGER_ADD on `qp` of `addend` to the peer's counter (handle, key);
// with result_key != 0 an SGE (of result_len bytes) takes the value
// before the add. Its wqe_index.
uint16_t post_remote_add(Nic& n, Qp& qp, uint32_t handle, uint32_t key,
                         uint64_t addend, uint64_t result_addr = 0,
                         uint32_t result_key = 0, uint32_t result_len = 8) {
  Wqe w(qp, RHN_OP_TRIGGER_ADD);
  const auto index = static_cast<uint16_t>(qp.sq_pi);
  w.w->u.trigger.addend = addend;
  w.w->u.trigger.handle = handle;
  w.w->u.trigger.key = key;
  if (result_key) w.sge(0, result_addr, result_len, result_key);
  w.post(n, qp);
  return index;
}

// A refused remote add: its CQE, the target's count, the counter as it
// was.
void remote_refused(Check& c, Nic& n, Loop& l, uint32_t ctx, uint32_t h,
                    uint64_t value, uint64_t refused_before) {
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "TRIGGER_ADD", RHN_CQE_OP_TRIGGER_ADD,
              RHN_CQE_REM_ACCESS_ERR, &e))
    return;
  if (!c.eq("vendor_err", RHN_SYN_BAD_REMOTE_TRIGGER, e.vendor_err)) return;
  if (!c.eq(counter_name(RHN_CNT_TRIGGER_REMOTE_REFUSED), refused_before + 1,
            n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED)))
    return;
  uint64_t v = ~value;
  if (!c.eq("QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, ctx, h, &v)))
    return;
  c.eq("counter value", value, v);
}

}  // namespace

CONFORM_CASE(trigger_remote_fire, "trigger.remote.fires", "trigger",
             "TRIGGER_ADDs over an RC QP add to the peer's counter (handle "
             "and key), the first returning the value before it into its "
             "8-byte SGE, the second without an SGE; reaching the threshold "
             "fires the WRITE parked on it") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 10);
  const uint64_t refused = n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED);
  const uint64_t result = l.dst.addr + 8192;
  n.wr64(result, 0xeeeeeeeeeeeeeeee);
  n.wr64(result + 8, 0xeeeeeeeeeeeeeeee);
  const uint16_t wi = post_write(n, l, 0, 256, RHN_WQE_X_TRIGGERED, h, 15);
  if (!no_cqe(c, n, l.scq, "parked")) return;
  const uint16_t a1 = post_remote_add(n, l.a, h, 0x5eed, 3, result, l.dst.key);
  const uint16_t a2 = post_remote_add(n, l.a, h, 0x5eed, 2);
  // Three CQEs: the two adds, and the WRITE their second one fired.
  bool seen1 = false, seen2 = false, seen_write = false;
  for (int i = 0; i < 3; i++) {
    rhn_cqe e;
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "CQE " + std::to_string(i),
                 "no CQE");
    CONFORM_EQ(c, "status", RHN_CQE_SUCCESS, e.status);
    if (e.wqe_index == a1) {
      seen1 = c.eq("first add opcode", RHN_CQE_OP_TRIGGER_ADD, e.opcode) &&
              c.eq("first add byte_len", 8, e.byte_len);
    } else if (e.wqe_index == a2) {
      seen2 = c.eq("second add opcode", RHN_CQE_OP_TRIGGER_ADD, e.opcode);
    } else if (e.wqe_index == wi) {
      seen_write = c.eq("fired WRITE opcode", RHN_CQE_OP_WRITE, e.opcode);
    } else {
      CONFORM_THAT(c, false, "wqe_index", "unknown " + hex(e.wqe_index));
    }
  }
  CONFORM_THAT(c, seen1 && seen2 && seen_write, "CQEs",
               "not one each for the adds and the WRITE");
  CONFORM_EQ(c, "value before the first add", 10, n.rd64(result));
  CONFORM_EQ(c, "bytes after the SGE", 0xeeeeeeeeeeeeeeee, n.rd64(result + 8));
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 256, "fired WRITE's data"))
    return;
  uint64_t v = 0;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  CONFORM_EQ(c, "counter value", 15, v);
  c.eq(counter_name(RHN_CNT_TRIGGER_REMOTE_REFUSED), refused,
       n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED));
}

CONFORM_CASE(trigger_remote_key, "trigger.remote.wrong_key", "trigger",
             "a TRIGGER_ADD with the wrong key completes REM_ACCESS_ERR / "
             "RHN_SYN_BAD_REMOTE_TRIGGER, is counted at the target, adds "
             "nothing and writes no result") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 4);
  const uint64_t refused = n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED);
  const uint64_t result = l.dst.addr + 8192;
  n.wr64(result, 0xeeeeeeeeeeeeeeee);
  post_remote_add(n, l.a, h, 0x5eed ^ 0x100, 1, result, l.dst.key);
  remote_refused(c, n, l, 0, h, 4, refused);
  if (!c.ok()) return;
  c.eq("result word", 0xeeeeeeeeeeeeeeee, n.rd64(result));
}

CONFORM_CASE(trigger_remote_stale, "trigger.remote.stale_handle", "trigger",
             "a TRIGGER_ADD naming a destroyed counter (its key right, the "
             "entry given again) is refused: REM_ACCESS_ERR / "
             "RHN_SYN_BAD_REMOTE_TRIGGER, the new counter untouched") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, old, 0);
  CONFORM_EQ(c, "DESTROY_TRIGGER", RHN_ADMIN_OK, destroy_counter(n, 0, old));
  const uint32_t h = new_counter(c, n, 0, 0);
  if (!c.ok()) return;
  const uint64_t refused = n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED);
  post_remote_add(n, l.a, old, 0x5eed, 1);
  remote_refused(c, n, l, 0, h, 0, refused);
}

CONFORM_CASE(trigger_remote_foreign, "trigger.remote.foreign_context",
             "trigger",
             "a TRIGGER_ADD reaches only counters of the target QP's "
             "context: another context's counter, with its handle and key, "
             "is refused (REM_ACCESS_ERR / RHN_SYN_BAD_REMOTE_TRIGGER)") {
  LOOP(n, l, RHN_QP_RC);
  CONFORM_THAT(c, n.create_context(1), "context 1", n.error());
  const uint32_t h = new_counter(c, n, 1, 0);
  if (!c.ok()) return;
  const uint64_t refused = n.counter(RHN_CNT_TRIGGER_REMOTE_REFUSED);
  post_remote_add(n, l.a, h, 0x5eed, 1);
  remote_refused(c, n, l, 1, h, 0, refused);
}

CONFORM_CASE(trigger_remote_uc, "trigger.remote.unreliable_qp", "trigger",
             "a TRIGGER_ADD on a UC QP is refused at the post "
             "(LOC_QP_OP_ERR / RHN_SYN_BAD_OPCODE) and adds nothing") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_UC, h, 0);
  post_remote_add(n, l.a, h, 0x5eed, 1);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "TRIGGER_ADD", RHN_CQE_OP_TRIGGER_ADD,
              RHN_CQE_LOC_QP_OP_ERR, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_BAD_OPCODE, e.vendor_err);
  t.settle();
  uint64_t v = 1;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  c.eq("counter value", 0, v);
}

CONFORM_CASE(trigger_remote_len, "trigger.remote.result_length", "trigger",
             "a TRIGGER_ADD whose result SGE is not 8 bytes is refused at the "
             "post (LOC_LEN_ERR / RHN_SYN_LENGTH) and adds nothing") {
  LOOP_WITH_COUNTER(n, l, RHN_QP_RC, h, 0);
  post_remote_add(n, l.a, h, 0x5eed, 1, l.dst.addr, l.dst.key, 4);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "TRIGGER_ADD", RHN_CQE_OP_TRIGGER_ADD,
              RHN_CQE_LOC_LEN_ERR, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_LENGTH, e.vendor_err);
  uint64_t v = 1;
  CONFORM_EQ(c, "QUERY_TRIGGER", RHN_ADMIN_OK, query_counter(n, 0, h, &v));
  c.eq("counter value", 0, v);
}

}  // namespace rhinet::conform
