// SPDX-License-Identifier: BSD-2-Clause
// CQ and EQ entry formats and owner bits over laps, CQ arming and its
// events, the doorbell rules (a kick naming a queue the page does not own
// is ignored and counted), the inline doorbell window, MSI-X vectors.
#include <cstring>
#include <string>

#include "case.h"
#include "lib/loop.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::conform {
namespace {

#define LOOP(n, l)                            \
  Nic n(t);                                   \
  Loop l;                                     \
  do {                                        \
    const std::string e_ = l.make(n);         \
    CONFORM_THAT(c, e_.empty(), "setup", e_); \
  } while (0)

void nop(Nic& n, Qp& qp) {
  n.post_one(qp, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
}

// What a bad kick names: a queue of the loop (by kind) or no queue.
enum class Names { kQpA, kCq, kNothing };

// A kick the page does not own (or naming nothing): ignored, counted in
// BAD_DOORBELLS, and the NIC goes on. A NOP waits in QP a's SQ unkicked:
// the bad kick must not start it, the owner's kick then does.
void bad_kick(Target& t, Check& c, uint32_t page, uint32_t offset, Names names,
              bool create_context = true) {
  LOOP(n, l);
  if (page != 0 && create_context)
    CONFORM_THAT(c, n.create_context(page), "CREATE_CONTEXT", n.error());
  uint32_t value = 0x00abcdef;
  if (names == Names::kQpA) value = l.a.qpn;
  if (names == Names::kCq) value = l.scq.cqn;
  uint8_t w[RHN_SQ_SLOT_SIZE];
  rhn_wqe_start(w, RHN_OP_NOP, RHN_WQE_F_SIGNALED,
                static_cast<__u16>(l.a.sq_pi));
  n.post_send(l.a, w, 1, false);
  const uint64_t before = n.counter(RHN_CNT_BAD_DOORBELLS);
  t.doorbell_write(page, offset, value, 4);
  t.settle();
  t.advance(1'000'000);
  rhn_cqe e;
  CONFORM_THAT(c, !n.poll_cq(l.scq, &e), "send CQ",
               "a CQE appeared before the owner's kick");
  CONFORM_EQ(c, "RHN_CNT_BAD_DOORBELLS increase", 1,
             n.counter(RHN_CNT_BAD_DOORBELLS) - before);
  n.kick_sq(l.a);
  c.that(n.wait_cqe(l.scq, &e), "send CQ", "no CQE after the owner's own kick");
}

}  // namespace

// ---- CQEs ----

CONFORM_CASE(cq_owner_first, "queue.cq.owner_first_lap", "queue",
             "the first lap's CQEs carry owner bit 1 (a zeroed ring is "
             "empty)") {
  LOOP(n, l);
  nop(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  c.eq("CQE flags bit 7 (owner)", RHN_CQE_F_OWNER, e.flags & RHN_CQE_F_OWNER);
}

CONFORM_CASE(cq_wrap, "queue.cq.owner_wraps", "queue",
             "a 4-entry CQ: owner bits alternate per lap over 3 laps, every "
             "CQE in its slot") {
  Nic n(t);
  Loop l;
  const std::string e0 = l.make(n, RHN_QP_RC, 16384, 2);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  for (uint32_t i = 0; i < 12; i++) {
    nop(n, l.a);
    t.settle();
    rhn_cqe raw;
    t.mem_read(l.scq.slot_addr(i), &raw, sizeof(raw));
    const uint8_t lap_bit = l.scq.phase(i) ? RHN_CQE_F_OWNER : 0;
    CONFORM_THAT(c,
                 t.wait_until(
                     [&] {
                       t.mem_read(l.scq.slot_addr(i), &raw, sizeof(raw));
                       return (raw.flags & RHN_CQE_F_OWNER) == lap_bit;
                     },
                     kWaitNs),
                 "CQE " + std::to_string(i) + " slot " + std::to_string(i & 3),
                 "owner bit never became " + std::to_string(lap_bit >> 7));
    CONFORM_EQ(c, "CQE " + std::to_string(i) + " wqe_index", i, raw.wqe_index);
    rhn_cqe e;
    n.poll_cq(l.scq, &e);
  }
}

CONFORM_CASE(cq_overflow, "queue.cq.overflow", "queue",
             "a full CQ: CQ_OVERFLOWS counted and RHN_EQE_CQ_ERROR posted "
             "for it") {
  Nic n(t);
  Loop l;
  const std::string e0 = l.make(n, RHN_QP_RC, 16384, 1);  // 2 entries
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  const uint64_t before = n.counter(RHN_CNT_CQ_OVERFLOWS);
  for (int i = 0; i < 3; i++) nop(n, l.a);
  t.settle();
  t.advance(1'000'000);
  CONFORM_THAT(c, n.counter(RHN_CNT_CQ_OVERFLOWS) > before,
               "RHN_CNT_CQ_OVERFLOWS", "did not increase");
  rhn_eqe ev;
  for (;;) {
    CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no RHN_EQE_CQ_ERROR");
    if (ev.type == RHN_EQE_CQ_ERROR) break;
  }
  c.eq("CQ_ERROR object", l.scq.cqn, ev.object);
}

CONFORM_CASE(cq_no_overflow_record, "queue.cq.record_frees_room", "queue",
             "consumed CQEs (CQ record updated) make room: 3 laps of a "
             "2-entry CQ, no overflow") {
  Nic n(t);
  Loop l;
  const std::string e0 = l.make(n, RHN_QP_RC, 16384, 1);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  const uint64_t before = n.counter(RHN_CNT_CQ_OVERFLOWS);
  rhn_cqe e;
  for (int i = 0; i < 6; i++) {
    nop(n, l.a);
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "CQE " + std::to_string(i), "none");
  }
  c.eq("RHN_CNT_CQ_OVERFLOWS increase", 0,
       n.counter(RHN_CNT_CQ_OVERFLOWS) - before);
}

// ---- Runs: several completions in one CQE ----

CONFORM_CASE(cq_runs, "queue.cq.runs", "queue",
             "CAPS.CQE_RUNS: on a CQ created with RHN_CREATE_CQ_F_RUNS, 16 "
             "signalled WRITEs complete in entries whose counts (run_extra "
             "+ 1 with RHN_CQE_X_RUN, else 1) add up to 16, in order, the "
             "last naming the last WQE; unknown CREATE_CQ flags are "
             "BAD_PARAM") {
  Nic n(t);
  Loop l;
  l.scq_flags = RHN_CREATE_CQ_F_RUNS;
  const std::string e0 = l.make(n, RHN_QP_RC, 16384, 6);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_CQE_RUNS) != 0,
               "CAPS.CQE_RUNS", "not advertised");
  // However the NIC's passes split them, the entries stand for every
  // completion once, each run of the one QP and queue.
  constexpr uint32_t kWrites = 16;
  for (uint32_t i = 0; i < kWrites; i++)
    n.post_one(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, l.src.addr + 8 * i, 8,
               l.src.key, l.dst.addr + 8 * i, l.dst.key);
  uint32_t got = 0, entries = 0;
  int last_index = -1;
  while (got < kWrites) {
    rhn_cqe e;
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ",
                 "no entry after " + std::to_string(got) + " completions");
    entries++;
    CONFORM_EQ(c, "status", RHN_CQE_SUCCESS, e.status);
    CONFORM_EQ(c, "opcode", RHN_CQE_OP_WRITE, e.opcode);
    CONFORM_EQ(c, "qpn", l.a.qpn, e.qpn);
    const bool run = (e.ext_flags & RHN_CQE_X_RUN) != 0;
    CONFORM_THAT(c, run ? e.run_extra > 0 : e.run_extra == 0, "run_extra",
                 "a run of " + std::to_string(e.run_extra + 1u) +
                     (run ? " with" : " without") + " RHN_CQE_X_RUN");
    got += run ? e.run_extra + 1u : 1u;
    // Each entry names the last WQE it stands for.
    CONFORM_EQ(
        c, "wqe_index of the entry ending at completion " + std::to_string(got),
        got - 1, e.wqe_index);
    CONFORM_THAT(c, int(e.wqe_index) > last_index, "order",
                 "wqe_index went back");
    last_index = e.wqe_index;
  }
  c.eq("completions the entries stand for", kWrites, got);
  c.that(entries >= 1 && entries <= kWrites, "entries",
         std::to_string(entries));
  Cq bad;
  c.that(!n.create_cq(0, 4, l.eq.eqn, &bad, 0x80), "CREATE_CQ flags 0x80",
         "accepted");
}

// ---- CQ arming and completion events ----

CONFORM_CASE(arm_event, "queue.cq_arm.event", "queue",
             "an armed CQ's next completion posts RHN_EQE_COMPLETION (object "
             "= cqn) and raises the EQ's vector") {
  LOOP(n, l);
  n.eq_doorbell(l.eq, true);
  t.settle();
  const uint64_t before = t.msix_count(l.eq.vector);
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  t.settle();
  nop(n, l.a);
  rhn_eqe ev;
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no completion event");
  CONFORM_EQ(c, "EQE type", RHN_EQE_COMPLETION, ev.type);
  CONFORM_EQ(c, "EQE object", l.scq.cqn, ev.object);
  CONFORM_EQ(c, "EQE owner (first lap)", 1, ev.owner & 1);
  t.settle();
  c.eq("MSI-X messages on the EQ's vector", before + 1,
       t.msix_count(l.eq.vector));
}

CONFORM_CASE(kicks_past_full_fifo, "queue.kick_fifo.nothing_lost", "queue",
             "a CQ arm, an EQ arm and an admin command rung among more kicks "
             "than the kick FIFO holds all take effect: the command "
             "completes and the next completion raises its event") {
  LOOP(n, l);
  // No settle in between: on a NIC that takes kicks more slowly than they
  // come, the FIFO fills (KICK_OVERFLOWS), which must lose no doorbell.
  constexpr uint32_t kKicks = 3000;
  auto flood = [&] {
    for (uint32_t i = 0; i < kKicks; i++)
      t.doorbell_write(0, RHN_DB_RQ, l.a.qpn, 4);
  };
  const uint64_t before = t.msix_count(l.eq.vector);
  flood();
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  flood();
  n.eq_doorbell(l.eq, true);
  flood();
  uint32_t pd = 0;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD after the flood", n.error());
  nop(n, l.a);
  rhn_eqe ev;
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no completion event");
  CONFORM_EQ(c, "EQE object", l.scq.cqn, ev.object);
  t.settle();
  c.eq("MSI-X messages on the EQ's vector", before + 1,
       t.msix_count(l.eq.vector));
}

// ---- Receives without doorbells ----

CONFORM_CASE(rq_no_doorbell, "queue.rq.no_doorbell", "queue",
             "CAPS.RQ_RECORD_READ: a receive stored only in the RQ record "
             "takes a SEND; after ERR the record asks for kicks and a "
             "receive posted with its kick is flushed; RESET clears the "
             "request") {
  LOOP(n, l);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_RQ_RECORD_READ) != 0,
               "CAPS.RQ_RECORD_READ", "not advertised");
  const uint64_t kicks = n.counter(RHN_CNT_RQ_DOORBELLS);
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key, false);
  n.post_one(l.a, RHN_OP_SEND, RHN_WQE_F_SIGNALED, l.src.addr, 64, l.src.key);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ",
               "no CQE for a receive posted without a kick");
  CONFORM_EQ(c, "receive CQE status", RHN_CQE_SUCCESS, e.status);
  CONFORM_THAT(c, n.bytes(l.dst.addr, 64) == n.bytes(l.src.addr, 64),
               "receive buffer", "payload differs");
  c.eq("RHN_CNT_RQ_DOORBELLS increase", 0,
       n.counter(RHN_CNT_RQ_DOORBELLS) - kicks);
  const uint64_t nic_word =
      l.b.rq_record + RHN_OFFSETOF(rhn_queue_record, nic_consumer);
  c.eq("nic_consumer in RTS", 0, n.rd32(nic_word));

  // A receive stored before the transition: the NIC's flush finds it.
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key, false);
  CONFORM_EQ(c, "MODIFY_QP to ERR", RHN_ADMIN_OK,
             n.modify_qp(l.b, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ",
               "the receive stored before ERR was not flushed");
  CONFORM_EQ(c, "flushed CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
  c.eq("nic_consumer in ERR", RHN_RQ_RECORD_DOORBELL_WANTED, n.rd32(nic_word));
  // One stored after: the request says kick, and the kick flushes it.
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key,
              (n.rd32(nic_word) & RHN_RQ_RECORD_DOORBELL_WANTED) != 0);
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ",
               "the receive posted in ERR was not flushed");
  CONFORM_EQ(c, "flushed CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
  CONFORM_EQ(c, "MODIFY_QP to RESET", RHN_ADMIN_OK,
             n.modify_qp(l.b, RHN_QP_ATTR_STATE, RHN_QPS_RESET));
  c.eq("nic_consumer after RESET", 0, n.rd32(nic_word));
}

// ---- Sends without doorbells ----

// A one-SGE WQE (none for a NOP) into the SQ without a kick.
void post_quiet(Nic& n, Qp& qp, uint8_t opcode, const Buf& src, uint32_t off) {
  uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  rhn_wqe_start(buf, opcode, RHN_WQE_F_SIGNALED, static_cast<__u16>(qp.sq_pi));
  uint32_t data = 0;
  if (opcode != RHN_OP_NOP) {
    rhn_wqe_put_sge(buf, 0, src.addr + off, 64, src.key);
    data = rhn_wqe_set_sges(buf, 1);
  }
  n.post_send(qp, buf, rhn_wqe_finish(buf, data, nullptr), false);
}

CONFORM_CASE(sq_no_doorbell, "queue.sq.no_doorbell", "queue",
             "CAPS.SQ_DOORBELL_ON_REQUEST: an idle SQ asks for a kick in its "
             "record and waits for it; a kick while busy takes the request "
             "back and posts then need none; ERR asks again and flushes; "
             "RESET clears the request") {
  LOOP(n, l);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_SQ_DOORBELL_ON_REQUEST) != 0,
               "CAPS.SQ_DOORBELL_ON_REQUEST", "not advertised");
  t.settle();
  const uint64_t word =
      l.a.sq_record + RHN_OFFSETOF(rhn_queue_record, nic_consumer);
  c.eq("nic_consumer of an idle SQ", RHN_SQ_RECORD_DOORBELL_WANTED,
       n.rd32(word));
  // Idle and asking: a post without its kick waits for the kick.
  rhn_cqe e;
  post_quiet(n, l.a, RHN_OP_NOP, l.src, 0);
  t.settle();
  c.that(!n.poll_cq(l.scq, &e), "send CQ",
         "a NOP ran without the kick the record asked for");
  n.kick_sq(l.a);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ",
               "no CQE for the kicked NOP");
  t.settle();
  c.eq("nic_consumer idle after the NOP", RHN_SQ_RECORD_DOORBELL_WANTED,
       n.rd32(word));

  // A SEND with no receive at b keeps the NIC busy (RNR retries); a
  // second kick then takes the request back, and a SEND posted with no
  // kick is taken when the NIC next reads the record.
  const uint64_t kicks = n.counter(RHN_CNT_HOST_DOORBELLS);
  post_quiet(n, l.a, RHN_OP_SEND, l.src, 0);
  n.kick_sq(l.a);
  t.settle();
  n.kick_sq(l.a);
  t.settle();
  c.eq("nic_consumer while busy", 0, n.rd32(word));
  post_quiet(n, l.a, RHN_OP_SEND, l.src, 64);
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  n.post_recv(l.b, l.dst.addr + 64, 64, l.dst.key);
  for (int i = 0; i < 2; i++) {
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ",
                 "a SEND posted while busy did not complete");
    CONFORM_EQ(c, "SEND CQE status", RHN_CQE_SUCCESS, e.status);
  }
  CONFORM_THAT(c, n.bytes(l.dst.addr, 128) == n.bytes(l.src.addr, 128),
               "receive buffer", "payload differs");
  c.eq("SQ kicks for the two SENDs", 2,
       n.counter(RHN_CNT_HOST_DOORBELLS) - kicks);
  t.settle();
  c.eq("nic_consumer idle again", RHN_SQ_RECORD_DOORBELL_WANTED, n.rd32(word));

  // ERR asks (it stays asked); a post with its kick is flushed.
  CONFORM_EQ(c, "MODIFY_QP to ERR", RHN_ADMIN_OK,
             n.modify_qp(l.a, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
  c.eq("nic_consumer in ERR", RHN_SQ_RECORD_DOORBELL_WANTED, n.rd32(word));
  nop(n, l.a);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ",
               "the NOP posted in ERR was not flushed");
  CONFORM_EQ(c, "flushed CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
  CONFORM_EQ(c, "MODIFY_QP to RESET", RHN_ADMIN_OK,
             n.modify_qp(l.a, RHN_QP_ATTR_STATE, RHN_QPS_RESET));
  c.eq("nic_consumer after RESET", 0, n.rd32(word));
}

CONFORM_CASE(arm_none, "queue.cq_arm.not_armed", "queue",
             "a CQ that is not armed posts no completion event") {
  LOOP(n, l);
  nop(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  t.settle();
  rhn_eqe ev;
  c.that(!n.poll_eq(l.eq, &ev), "EQ",
         "an event (type " + std::to_string(ev.type) + ") appeared");
}

CONFORM_CASE(arm_once, "queue.cq_arm.once", "queue",
             "an arm is used once: two completions, one event") {
  LOOP(n, l);
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  t.settle();
  nop(n, l.a);
  nop(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e) && n.wait_cqe(l.scq, &e), "send CQ",
               "expected two CQEs");
  t.settle();
  rhn_eqe ev;
  CONFORM_THAT(c, n.poll_eq(l.eq, &ev), "EQ", "no event");
  c.that(!n.poll_eq(l.eq, &ev), "EQ", "a second event for one arm");
}

CONFORM_CASE(arm_old_cqes, "queue.cq_arm.earlier_cqes", "queue",
             "CQEs already in the CQ when it is armed raise no event") {
  LOOP(n, l);
  nop(n, l.a);
  t.settle();
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  t.settle();
  t.advance(1'000'000);
  rhn_eqe ev;
  c.that(!n.poll_eq(l.eq, &ev), "EQ",
         "an event for a CQE written before the arm");
}

CONFORM_CASE(arm_solicited, "queue.cq_arm.solicited", "queue",
             "an arm with RHN_DB_CQ_SOLICITED ignores an unsolicited "
             "receive and fires on a solicited one") {
  LOOP(n, l);
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  n.post_recv(l.b, l.dst.addr + 64, 64, l.dst.key);
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.rcq.cqn | RHN_DB_CQ_SOLICITED, 4);
  t.settle();
  n.post_one(l.a, RHN_OP_SEND, 0, l.src.addr, 8, l.src.key);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ", "no first CQE");
  t.settle();
  rhn_eqe ev;
  CONFORM_THAT(c, !n.poll_eq(l.eq, &ev), "EQ",
               "an event for an unsolicited receive");
  n.post_one(l.a, RHN_OP_SEND, RHN_WQE_F_SOLICITED, l.src.addr, 8, l.src.key);
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ", "no second CQE");
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ",
               "no event for a solicited receive");
  c.eq("EQE object", l.rcq.cqn, ev.object);
}

CONFORM_CASE(arm_moderated, "queue.cq_arm.moderated", "queue",
             "MODIFY_CQ count 3: an armed CQ's first two completions raise "
             "no event, the third raises one; with count 16 and a period, "
             "one completion raises it once the period has passed") {
  LOOP(n, l);
  auto moderate = [&](uint16_t count, uint16_t period_us) {
    rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_CQ);
    m.u.modify_cq.cqn = l.scq.cqn;
    m.u.modify_cq.count = count;
    m.u.modify_cq.period_us = period_us;
    return n.run(m);
  };
  CONFORM_EQ(c, "MODIFY_CQ count 3", RHN_ADMIN_OK, moderate(3, 0xffff));
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  t.settle();
  rhn_cqe e;
  rhn_eqe ev;
  for (int i = 1; i <= 2; i++) {
    nop(n, l.a);
    CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
    t.settle();
    CONFORM_THAT(c, !n.poll_eq(l.eq, &ev), "EQ",
                 "an event after " + std::to_string(i) + " of 3 completions");
  }
  nop(n, l.a);
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no event after 3 completions");
  CONFORM_EQ(c, "EQE object", l.scq.cqn, ev.object);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no third CQE");

  CONFORM_EQ(c, "MODIFY_CQ count 16, 2 ms", RHN_ADMIN_OK, moderate(16, 2000));
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.scq.cqn, 4);
  t.settle();
  nop(n, l.a);
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  t.advance(5'000'000);
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ", "no event after the period");
  CONFORM_EQ(c, "EQE object", l.scq.cqn, ev.object);

  rhn_admin_cmd bad = Nic::cmd(RHN_ADMIN_MODIFY_CQ);
  bad.u.modify_cq.cqn = 0xfffff;
  bad.u.modify_cq.count = 2;
  c.eq("MODIFY_CQ of no CQ", RHN_ADMIN_BAD_HANDLE, n.run(bad));
}

// ---- EQs ----

CONFORM_CASE(eq_port_change, "queue.eq.port_change", "queue",
             "SET_LINK posts RHN_EQE_PORT_CHANGE on the first EQ: data 0 "
             "down, 1 up") {
  Nic n(t);
  Eq eq;
  const std::string e0 = n.bring_up_eq(&eq, 3, 1);
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  for (uint32_t up : {0u, 1u}) {
    rhn_eqe ev;
    CONFORM_THAT(c, n.link_event(eq, up, &ev), "PORT_CHANGE", n.error());
    CONFORM_EQ(c, "EQE type", RHN_EQE_PORT_CHANGE, ev.type);
    CONFORM_EQ(c, "EQE data", up, ev.data);
    CONFORM_EQ(c, "EQE flags", 0, ev.flags);
    CONFORM_EQ(c, "EQE reserved0", 0, ev.reserved0);
  }
}

CONFORM_CASE(eq_wrap, "queue.eq.owner_wraps", "queue",
             "a 4-entry EQ: owner bits alternate per lap over 3 laps") {
  Nic n(t);
  Eq eq;
  const std::string e0 = n.bring_up_eq(&eq, 2, 1);
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  for (uint32_t i = 0; i < 12; i++) {
    rhn_eqe ev;
    CONFORM_THAT(c, n.link_event(eq, i & 1, &ev), "EQE " + std::to_string(i),
                 "none with owner bit " + std::to_string(eq.phase(i)));
    CONFORM_EQ(c, "EQE " + std::to_string(i) + " data", i & 1, ev.data);
    n.eq_doorbell(eq, false);  // consumed: room for the next lap
  }
}

CONFORM_CASE(eq_vector, "queue.intr.eq_vector", "queue",
             "an EQ created with vector 3 raises vector 3, not another") {
  Nic n(t);
  Eq eq;
  const std::string e0 = n.bring_up_eq(&eq, 3, 3);
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  // An interrupt follows its completion: the last one of the bring-up
  // may still be on its way.
  t.settle();
  const uint64_t v0 = t.msix_count(0);
  rhn_eqe ev;
  CONFORM_THAT(c, n.link_event(eq, false, &ev), "PORT_CHANGE", n.error());
  t.settle();
  CONFORM_EQ(c, "MSI-X vector 3 messages", 1, t.msix_count(3));
  CONFORM_EQ(c, "MSI-X vector 1 messages", 0, t.msix_count(1));
  // Vector 0 only for the admin completion, not for the event.
  c.eq("MSI-X vector 0 messages", v0 + 1, t.msix_count(0));
}

CONFORM_CASE(intr_master, "queue.intr.master_disable", "queue",
             "with CONTROL.INTR_ENABLE clear, events are written but no "
             "MSI-X message is sent") {
  Nic n(t);
  Eq eq;
  const std::string e0 = n.bring_up_eq(&eq, 3, 2, false);
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  rhn_eqe ev;
  CONFORM_THAT(c, n.link_event(eq, false, &ev), "PORT_CHANGE", n.error());
  t.settle();
  c.eq("MSI-X vector 2 messages", 0, t.msix_count(2));
}

// ---- doorbells ----

namespace {

struct BadKick {
  const char* name;
  const char* description;
  uint32_t page;
  uint32_t offset;
  Names names;
  bool create_context;
};

const BadKick kBadKicks[] = {
    {"queue.doorbell.sq_foreign_page",
     "an SQ kick on page 1 for a QP of context 0", 1, RHN_DB_SQ, Names::kQpA,
     true},
    {"queue.doorbell.rq_foreign_page",
     "an RQ kick on page 1 for a QP of context 0", 1, RHN_DB_RQ, Names::kQpA,
     true},
    {"queue.doorbell.cq_arm_foreign_page",
     "a CQ arm on page 1 for a CQ of context 0", 1, RHN_DB_CQ_ARM, Names::kCq,
     true},
    {"queue.doorbell.page_without_context",
     "an SQ kick on a page whose context was never created", 5, RHN_DB_SQ,
     Names::kQpA, false},
    {"queue.doorbell.sq_no_such_qp", "an SQ kick naming no QP", 0, RHN_DB_SQ,
     Names::kNothing, false},
    {"queue.doorbell.rq_no_such_qp", "an RQ kick naming no QP", 0, RHN_DB_RQ,
     Names::kNothing, false},
    {"queue.doorbell.srq_no_such_srq", "an SRQ kick naming no SRQ", 0,
     RHN_DB_SRQ, Names::kNothing, false},
    {"queue.doorbell.cq_arm_no_such_cq", "a CQ arm naming no CQ", 0,
     RHN_DB_CQ_ARM, Names::kNothing, false},
};

void run_bad_kick(const BadKick& k, Target& t, Check& c) {
  bad_kick(t, c, k.page, k.offset, k.names, k.create_context);
}
const bool bad_kick_cases = register_rows(
    kBadKicks, "queue", ": ignored, counted in BAD_DOORBELLS", run_bad_kick);

}  // namespace

CONFORM_CASE(db_flood, "queue.doorbell.kick_flood", "queue",
             "5000 SQ kicks for one posted NOP: it completes exactly once "
             "(lost kicks make the NIC rescan, so no work is lost or "
             "doubled)") {
  LOOP(n, l);
  uint8_t w[RHN_SQ_SLOT_SIZE];
  rhn_wqe_start(w, RHN_OP_NOP, RHN_WQE_F_SIGNALED,
                static_cast<__u16>(l.a.sq_pi));
  n.post_send(l.a, w, 1, false);
  for (int i = 0; i < 5000; i++) n.kick_sq(l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_SUCCESS, e.status);
  t.settle();
  t.advance(1'000'000);
  c.that(!n.poll_cq(l.scq, &e), "send CQ", "a second CQE for one WQE");
}

CONFORM_CASE(db_host_count, "queue.doorbell.host_count", "queue",
             "an SQ kick the host CPU writes counts in HOST_DOORBELLS, not "
             "in PEER_DOORBELLS (the doorbell's requester is 0)") {
  LOOP(n, l);
  const uint64_t host = n.counter(RHN_CNT_HOST_DOORBELLS);
  const uint64_t peer = n.counter(RHN_CNT_PEER_DOORBELLS);
  nop(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  c.eq("RHN_CNT_HOST_DOORBELLS increase", 1,
       n.counter(RHN_CNT_HOST_DOORBELLS) - host);
  c.eq("RHN_CNT_PEER_DOORBELLS increase", 0,
       n.counter(RHN_CNT_PEER_DOORBELLS) - peer);
}

CONFORM_CASE(db_bad_eq, "queue.doorbell.eq_no_such_eq", "queue",
             "an EQ doorbell naming no EQ: ignored, counted in "
             "BAD_DOORBELLS") {
  Nic n(t);
  const std::string e0 = n.bring_up();
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  const uint64_t before = n.counter(RHN_CNT_BAD_DOORBELLS);
  n.w64(RHN_REG_EQ_DOORBELL,
        (uint64_t(0x1234) << RHN_EQ_DB_EQN_SHIFT) | RHN_EQ_DB_ARM);
  t.settle();
  c.eq("RHN_CNT_BAD_DOORBELLS increase", 1,
       n.counter(RHN_CNT_BAD_DOORBELLS) - before);
}

CONFORM_CASE(db_inline, "queue.doorbell.inline_wqe", "queue",
             "an SQ kick with RHN_DB_SQ_INLINE and the WQE in the window "
             "runs it") {
  LOOP(n, l);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_INLINE_DB) != 0,
               "CAPS.INLINE_DB", "not announced");
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  uint8_t w[RHN_SQ_SLOT_SIZE];
  rhn_wqe_start(w, RHN_OP_SEND, RHN_WQE_F_SIGNALED,
                static_cast<__u16>(l.a.sq_pi));
  rhn_wqe_put_sge(w, 0, l.src.addr, 48, l.src.key);
  rhn_wqe_set_sges(w, 1);
  rhn_wqe_finish(w, 0, nullptr);
  n.post_send(l.a, w, 1, false);  // the ring copy is always required
  for (uint32_t i = 0; i < RHN_SQ_SLOT_SIZE; i += 8) {
    uint64_t v;
    std::memcpy(&v, w + i, 8);
    t.doorbell_write(0, RHN_DB_INLINE_WQE + i, v, 8);
  }
  t.doorbell_write(0, RHN_DB_SQ, l.a.qpn | RHN_DB_SQ_INLINE, 4);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ", "no CQE");
  CONFORM_EQ(c, "receive status", RHN_CQE_SUCCESS, e.status);
  c.eq("receive byte_len", 48, e.byte_len);
}

CONFORM_CASE(db_inline_stale, "queue.doorbell.inline_wrong_index", "queue",
             "a window WQE whose wqe_index is not the next one is ignored: "
             "the NIC runs the ring's WQE") {
  LOOP(n, l);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  uint8_t w[RHN_SQ_SLOT_SIZE];
  rhn_wqe_start(w, RHN_OP_SEND, RHN_WQE_F_SIGNALED,
                static_cast<__u16>(l.a.sq_pi));
  rhn_wqe_put_sge(w, 0, l.src.addr, 48, l.src.key);
  rhn_wqe_set_sges(w, 1);
  rhn_wqe_finish(w, 0, nullptr);
  n.post_send(l.a, w, 1, false);
  // The window holds a different WQE (20 bytes) with a stale index.
  uint8_t x[RHN_SQ_SLOT_SIZE];
  std::memcpy(x, w, sizeof(x));
  reinterpret_cast<rhn_send_wqe*>(x)->wqe_index = 0x7777;
  reinterpret_cast<rhn_send_wqe*>(x)->d.sge.length = 20;
  for (uint32_t i = 0; i < RHN_SQ_SLOT_SIZE; i += 8) {
    uint64_t v;
    std::memcpy(&v, x + i, 8);
    t.doorbell_write(0, RHN_DB_INLINE_WQE + i, v, 8);
  }
  t.doorbell_write(0, RHN_DB_SQ, l.a.qpn | RHN_DB_SQ_INLINE, 4);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ", "no CQE");
  c.eq("receive byte_len (the ring's WQE)", 48, e.byte_len);
}

}  // namespace rhinet::conform
