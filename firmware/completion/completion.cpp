// SPDX-License-Identifier: BSD-2-Clause
// Completion: CQEs into completion queues, status words into the issuing
// process's memory, events into event queues and MSI-X interrupts.
#include "core/freestanding.h"
#include "engine/engine_impl.h"

namespace rhinet::fw {

void Engine::Impl::publish_cq_producer(uint32_t cqn, uint32_t index) {
  cq_published[cqn].store(index, MemOrder::kRelease);
#if defined(RHN_FW_CARD)
  rhn_card_cq_produced(cqn, index);
#endif
}

namespace {

// Room for the CQ's next entry, at its producer index: the full check
// reads the consumer index software last wrote. False once the CQ
// overflowed; it is broken from then on.
[[gnu::always_inline]] inline bool cq_room(Engine::Impl& m, uint32_t cqn,
                                           CqObj& cq) {
  const uint32_t depth = 1u << cq.log_depth;
  if (cq.producer - cq.consumer_seen >= depth) {
    rhn_cq_record rec;
    if (m.host_dma(cq.record, 0, &rec, sizeof(rec), false) &&
        cq.producer - rec.consumer_index <= depth)
      cq.consumer_seen = rec.consumer_index;
    if (cq.producer - cq.consumer_seen >= depth) {
      cq.error = true;
      Engine::Impl::cq_set_slow(cq);
      m.counters.add(RHN_CNT_CQ_OVERFLOWS);
      m.eq_push(cq.eqn, RHN_EQE_CQ_ERROR, cqn, 0);
      return false;
    }
  }
  return true;
}

// The entry at the producer index (its room checked), owner bit last.
[[gnu::always_inline]] inline void cq_write(Engine::Impl& m, uint32_t cqn,
                                            CqObj& cq, rhn_cqe& cqe) {
  const uint32_t depth = 1u << cq.log_depth;
  const uint8_t owner = ((cq.producer >> cq.log_depth) & 1) ^ 1;
  cqe.flags = static_cast<uint8_t>((cqe.flags & ~RHN_CQE_F_OWNER) |
                                   (owner ? RHN_CQE_F_OWNER : 0));
  const uint64_t at = uint64_t{cq.producer & (depth - 1)} * RHN_CQE_SIZE;
  // Body, then the last 8 bytes holding the owner bit.
  m.host_publish(cq.ring, at, &cqe, RHN_CQE_SIZE, 24);
  m.counters.add_bus(RHN_CNT_CQE_WRITES, 1);
  cq.producer++;
  m.publish_cq_producer(cqn, cq.producer);
}

// The push of a CQ whose slow is 0, or that its slow path left to it:
// room, the entry, the arm. Inlined into each push, as the one function
// it was before runs: the hot path pays no call for them.
[[gnu::always_inline]] inline void cq_push_plain(Engine::Impl& m, uint32_t cqn,
                                                 CqObj& cq, rhn_cqe& cqe,
                                                 bool solicited) {
  if (!cq_room(m, cqn, cq)) return;
  cq_write(m, cqn, cq, cqe);
  const bool failed = cqe.status != RHN_CQE_SUCCESS;
  if (solicited || failed) cq.solicited_end = cq.producer;
  if (cq.arm == 1 || (cq.arm == 2 && (solicited || failed)))
    m.cq_arm_hit(cqn, 1);
}

// A completion that may join a run (the CQ has runs), extending its open
// run or opening one. Out of line, as cq_run_close: the pushes' fast
// path keeps its registers.
[[gnu::noinline]] void push_run(Engine::Impl& m, uint32_t cqn, CqObj& cq,
                                const rhn_cqe& cqe) {
  rhn_cqe& r = m.run_cqes[cqn];
  if (cq.run_flags & kCqRunOpen) {
    // The same queue of the same QP and the same operation; a receive
    // also takes the RQ's next WQE and has the run's length.
    const bool joins =
        r.qpn == cqe.qpn && r.opcode == cqe.opcode && r.flags == cqe.flags &&
        ((cqe.flags & RHN_CQE_F_SQ) ||
         (r.byte_len == cqe.byte_len &&
          static_cast<uint16_t>(r.wqe_index + 1) == cqe.wqe_index));
    if (joins) {
      r = cqe;
      cq.run_extra++;
      m.counters.add(RHN_CNT_CQES_SAVED);
      // At most the CQ's depth and what run_extra holds.
      if (cq.run_extra + 1u ==
          min<uint32_t>(1u << cq.log_depth, RHN_CQE_RUN_MAX))
        m.cq_run_close(cqn);
      // Arming counts completions, not entries (a moderated CQ counts
      // each); an event writes the run first (cq_event).
      if (cq.arm == 1) m.cq_arm_hit(cqn, 1);
      return;
    }
    m.cq_run_close(cqn);
  }
  // Its entry's slot is taken now: a run is one entry, however long.
  if (!cq_room(m, cqn, cq)) return;
  r = cqe;
  cq.run_extra = 0;
  cq.run_flags |= kCqRunOpen;
  if (!(cq.run_flags & kCqRunListed)) {
    cq.run_flags |= kCqRunListed;
    m.open_runs[m.num_open_runs++] = cqn;
  }
  if (cq.arm == 1) m.cq_arm_hit(cqn, 1);
}

// Runs: a successful signalled plain SEND or WRITE from its SQ slots,
// which software reports from its own record of the WQE; nothing else
// the CQE would have to carry (an immediate, a status word, ext_flags),
// no triggered WQE (it completes out of ring order).
bool send_joins_runs(const rhn_cqe& c, const Inflight& e) {
  return c.status == RHN_CQE_SUCCESS &&
         (e.opcode == RHN_OP_SEND || e.opcode == RHN_OP_WRITE) &&
         !(e.wqe_flags & RHN_WQE_F_STATUS_WORD) && !e.ext_flags &&
         e.trig == kNoTrigger && !e.fanout;
}

}  // namespace

void Engine::Impl::cq_push(uint32_t cqn, rhn_cqe& cqe, bool solicited) {
  CqObj& cq = cqs[cqn];
  if (cq.slow) {
    if (!cq.valid || cq.error) return;
    // An open run holds earlier completions: it goes first.
    if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
  }
  cq_push_plain(*this, cqn, cq, cqe, solicited);
}

void Engine::Impl::cq_push_send(uint32_t cqn, rhn_cqe& cqe, const Inflight& e) {
  CqObj& cq = cqs[cqn];
  if (cq.slow) {
    if (!cq.valid || cq.error) return;
    if ((cq.run_flags & kCqRuns) && send_joins_runs(cqe, e))
      return push_run(*this, cqn, cq, cqe);
    if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
  }
  cq_push_plain(*this, cqn, cq, cqe, false);
}

void Engine::Impl::cq_push_recv(uint32_t cqn, rhn_cqe& cqe, bool solicited,
                                const RxContext& m) {
  CqObj& cq = cqs[cqn];
  if (cq.slow) {
    if (!cq.valid || cq.error) return;
    // Plain receives of a connected QP's own RQ, in RQ order; a UD or
    // endpoint receive names its sender, an SRQ's index its ring.
    const uint8_t type = qps[m.qpn].type;
    if ((cq.run_flags & kCqRuns) && cqe.status == RHN_CQE_SUCCESS &&
        !cqe.flags && cqe.opcode == RHN_CQE_OP_RECV && !m.from_srq &&
        (type == RHN_QP_RC || type == RHN_QP_UC))
      return push_run(*this, cqn, cq, cqe);
    if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
  }
  cq_push_plain(*this, cqn, cq, cqe, solicited);
}

[[gnu::noinline]] void Engine::Impl::cq_run_close(uint32_t cqn) {
  CqObj& cq = cqs[cqn];
  rhn_cqe& e = run_cqes[cqn];
  // A run of one is the plain CQE it would have been.
  if (cq.run_extra) {
    e.ext_flags = RHN_CQE_X_RUN;
    e.run_extra = cq.run_extra;
  }
  cq.run_flags &= static_cast<uint8_t>(~kCqRunOpen);
  cq.run_extra = 0;
  if (cq.valid) cq_write(*this, cqn, cq, e);
}

void Engine::Impl::cq_runs_close_all() {
  for (uint32_t i = 0; i < num_open_runs; i++) {
    const uint32_t cqn = open_runs[i];
    CqObj& cq = cqs[cqn];
    if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
    cq.run_flags &= static_cast<uint8_t>(~kCqRunListed);
  }
  num_open_runs = 0;
}

void Engine::Impl::cq_arm_hit(uint32_t cqn, uint32_t n) {
  CqObj& cq = cqs[cqn];
  if (cq.mod_count > 1 && cq.mod_period_us) {
    if (!cq.mod_deadline) {
      cq.mod_deadline = now + uint64_t{cq.mod_period_us} * 1000;
      if (cq.mod_deadline < cq_mod_at) cq_mod_at = cq.mod_deadline;
      if (cq.mod_deadline < next_qp_wake) next_qp_wake = cq.mod_deadline;
    }
    cq.mod_counted += n;
    if (cq.mod_counted < cq.mod_count) return;
  }
  cq_raise(cqn);
}

void Engine::Impl::cq_raise(uint32_t cqn) {
  CqObj& cq = cqs[cqn];
  cq.mod_counted = 0;
  cq.mod_deadline = 0;  // cq_mod_at may stay earlier: the scan finds none
  cq.arm = 0;
  cq_event(cqn);
}

void Engine::Impl::modify_cq(uint32_t cqn, uint16_t count, uint16_t period_us) {
  // The command's 16-bit fields cannot exceed the NIC's limits.
  static_assert(kMaxCqModCount == 0xffff && kMaxCqModPeriodUs == 0xffff);
  CqObj& cq = cqs[cqn];
  cq.mod_count = count;
  cq.mod_period_us = period_us;
  // An event already owed: at once when moderation is now off or its
  // count is reached; otherwise it keeps its deadline.
  if (cq.mod_deadline && (count <= 1 || !period_us || cq.mod_counted >= count))
    cq_raise(cqn);
}

bool Engine::Impl::cq_mod_expire() {
  // Rare (one deadline per moderated event): a scan of the CQ table.
  bool did = false;
  cq_mod_at = UINT64_MAX;
  for (uint32_t n = 0; n < cqs.size(); n++) {
    CqObj& cq = cqs[n];
    if (!cq.valid || !cq.mod_deadline) continue;
    if (cq.mod_deadline <= now) {
      cq_raise(n);
      did = true;
    } else if (cq.mod_deadline < cq_mod_at) {
      cq_mod_at = cq.mod_deadline;
    }
  }
  return did;
}

// RHN_ADMIN_RESIZE_CQ: the unread CQEs go to the start of the new ring,
// lap 0, and the indices restart there. Nothing changes until every one
// of them has been copied, so a DMA error leaves the CQ as it was.
rhn_admin_status Engine::Impl::resize_cq(uint32_t cqn, uint32_t log_depth,
                                         HostRef ring, HostRef record,
                                         uint32_t& detail) {
  CqObj& cq = cqs[cqn];
  if (cq.error) return detail = 1, RHN_ADMIN_BAD_STATE;  // overflowed
  rhn_cq_record rec;
  if (!host_dma(cq.record, 0, &rec, sizeof(rec), false))
    return RHN_ADMIN_DMA_ERROR;
  const uint32_t old_depth = 1u << cq.log_depth;
  const uint32_t unread = cq.producer - rec.consumer_index;
  if (unread > old_depth) return detail = 5, RHN_ADMIN_BAD_STATE;
  if (unread > (1u << log_depth)) return detail = 2, RHN_ADMIN_BAD_PARAM;
  for (uint32_t i = 0; i < unread; i++) {
    rhn_cqe e;
    const uint32_t from = (rec.consumer_index + i) & (old_depth - 1);
    if (!host_dma(cq.ring, uint64_t{from} * RHN_CQE_SIZE, &e, sizeof(e), false))
      return RHN_ADMIN_DMA_ERROR;
    e.flags |= RHN_CQE_F_OWNER;  // lap 0 of the new ring
    if (!host_publish(ring, uint64_t{i} * RHN_CQE_SIZE, &e, RHN_CQE_SIZE, 24))
      return RHN_ADMIN_DMA_ERROR;
  }
  cq.ring = ring;
  cq.record = record;
  const uint32_t solicited = cq.solicited_end - rec.consumer_index;
  cq.solicited_end = solicited <= unread ? solicited : 0;
  cq.log_depth = log_depth;
  cq.producer = unread;
  cq.consumer_seen = 0;
  publish_cq_producer(cqn, unread);
  return RHN_ADMIN_OK;
}

void Engine::Impl::cq_arm(uint32_t cqn, bool solicited_only,
                          uint32_t requested_at) {
  CqObj& cq = cqs[cqn];
  // Software saw none of an open run's completions: written now, it was
  // added after the request and raises the event below.
  if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
  cq.arm = solicited_only ? 2 : 1;
  // ibv_req_notify_cq: an event for the next completion added after the
  // request; CQEs already there when it was made raise none (the software
  // polls after arming). Completions added between the doorbell write and
  // this kick were added after the request: they fire now.
  const uint32_t since =
      (solicited_only ? cq.solicited_end : cq.producer) - requested_at;
  if (since != 0 && since < (1u << 31)) cq_arm_hit(cqn, since);
}

uint32_t Engine::Impl::eq_completion_room(const EqObj& eq) const {
  const uint32_t depth = 1u << eq.log_depth;
  const uint32_t reserve = min<uint32_t>(64, depth / 4);
  const uint32_t used = eq.producer - eq.consumer;
  return used + reserve < depth ? depth - reserve - used : 0;
}

void Engine::Impl::cq_event(uint32_t cqn) {
  CqObj& cq = cqs[cqn];
  // The event finds every completion.
  if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
  if (cq.event_deferred) return;  // one is owed already
  if (cq.eqn >= eqs.size() || !eqs[cq.eqn].valid) return;
  EqObj& eq = eqs[cq.eqn];
  if (eq_completion_room(eq)) {
    eq_push(cq.eqn, RHN_EQE_COMPLETION, cqn, 0);
    return;
  }
  cq.event_deferred = true;
  eq.deferred++;
  counters.add(RHN_CNT_EVENTS_DEFERRED);
}

void Engine::Impl::eq_catch_up(uint32_t eqn) {
  EqObj& eq = eqs[eqn];
  // Round robin over the CQs, so every owed event gets its turn.
  const uint32_t n = static_cast<uint32_t>(cqs.size());
  for (uint32_t k = 0; k < n && eq.deferred && eq_completion_room(eq); k++) {
    const uint32_t cqn = eq.defer_cursor;
    eq.defer_cursor = (eq.defer_cursor + 1) % n;
    CqObj& cq = cqs[cqn];
    if (!cq.event_deferred || cq.eqn != eqn) continue;
    cq.event_deferred = false;
    eq.deferred--;
    if (cq.run_flags & kCqRunOpen) cq_run_close(cqn);
    if (cq.valid) eq_push(eqn, RHN_EQE_COMPLETION, cqn, 0);
  }
}

bool Engine::Impl::eq_push(uint32_t eqn, uint8_t type, uint32_t object,
                           uint64_t data, uint8_t flags) {
  if (eqn >= eqs.size() || !eqs[eqn].valid) return false;
  EqObj& eq = eqs[eqn];
  const uint32_t depth = 1u << eq.log_depth;
  if (eq.producer - eq.consumer >= depth) {
    counters.add(RHN_CNT_CQ_OVERFLOWS);  // the driver stopped consuming
    return false;
  }
  rhn_eqe e{};
  e.data = data;
  e.object = object;
  e.type = type;
  e.flags = flags;
  e.owner = ((eq.producer >> eq.log_depth) & 1) ^ 1;
  const uint64_t at = eq.ring + uint64_t{eq.producer & (depth - 1)} * sizeof(e);
  if (!bus.dma_write_publish(at, &e, sizeof(e), 8))
    counters.add(RHN_CNT_DMA_ERRORS);
  eq.producer++;
  if (eq.armed && (control.load() & RHN_CONTROL_INTR_ENABLE)) {
    eq.armed = false;
    bus.raise_msix(eq.vector);
  }
  return true;
}

namespace {

// One 8-byte store through the WQE's status key (never a copy: see
// queues.md, "Status words").
void store_status(Engine::Impl& m, const QpObj& qp, const Inflight& e,
                  uint64_t word) {
  // A word is seen with the CQEs before it: a run on the QP's send CQ is
  // written first.
  if (m.num_open_runs && qp.send_cqn < m.cqs.size() &&
      (m.cqs[qp.send_cqn].run_flags & kCqRunOpen))
    m.cq_run_close(qp.send_cqn);
  uint32_t mr_index;
  if (m.check_key(e.status_lkey, kNone, qp.pdn, RHN_ACCESS_LOCAL_WRITE,
                  e.status_addr, sizeof(word), &mr_index) != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    return;
  }
  m.mr_store_u64(mr_index, e.status_addr, word);
}

}  // namespace

void Engine::Impl::write_status_progress(const QpObj& qp, const Inflight& e,
                                         uint32_t bytes) {
  store_status(*this, qp, e, RHN_STATUS_WORD_RUNNING | bytes);
}

void Engine::Impl::write_status_word(const QpObj& qp, const Inflight& e) {
  const uint64_t word =
      RHN_STATUS_WORD_DONE |
      (uint64_t{e.status} << RHN_STATUS_WORD_STATUS_SHIFT) |
      (uint64_t{e.syndrome} << RHN_STATUS_WORD_SYNDROME_SHIFT) |
      (e.status == RHN_CQE_SUCCESS ? e.length : 0);
  store_status(*this, qp, e, word);
}

}  // namespace rhinet::fw
