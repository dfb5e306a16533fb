// SPDX-License-Identifier: BSD-2-Clause
// Triggered operations: the trigger counters, the table of parked WQEs
// and the QPs' queues of fired ones (Documentation/hardware/triggered.md).
#include "ops/trigger/trigger.h"

#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr size_t kXflagsAt = RHN_OFFSETOF(rhn_send_wqe, xflags);
constexpr size_t kUnitsAt = RHN_OFFSETOF(rhn_send_wqe, ext_units);

TriggerTables& tables(Impl& m) { return m.trig; }

// The live counter `handle` names for context ctx, or nullptr: a stale
// generation, a free entry, another context's counter.
TrigCounter* counter_of(Impl& m, uint32_t ctx, uint32_t handle) {
  const uint32_t idx = handle & RHN_TRIGGER_INDEX_MASK;
  if (idx >= m.trig.counters.size()) return nullptr;
  TrigCounter& c = m.trig.counters[idx];
  if (!c.valid || c.context != ctx || c.gen != handle >> RHN_TRIGGER_GEN_SHIFT)
    return nullptr;
  return &c;
}

void recompute_min(Impl& m, TrigCounter& c) {
  c.min_threshold = UINT64_MAX;
  for (uint32_t i = c.first; i != kNone; i = m.trig.entries[i].next)
    c.min_threshold = min(c.min_threshold, m.trig.entries[i].threshold);
}

void unlink_parked(Impl& m, uint32_t idx) {
  TrigEntry& e = m.trig.entries[idx];
  TrigCounter& c = m.trig.counters[e.counter];
  if (e.prev != kNone)
    m.trig.entries[e.prev].next = e.next;
  else
    c.first = e.next;
  if (e.next != kNone)
    m.trig.entries[e.next].prev = e.prev;
  else
    c.last = e.prev;
  e.prev = e.next = kNone;
}

void free_entry(Impl& m, uint32_t idx) {
  TrigEntry& e = m.trig.entries[idx];
  m.shares.give(e.context, kResTriggerParked);
  e.state = TrigState::kFree;
}

// A parked or fired entry that will never run: its WQE completes with
// WR_FLUSH_ERR (and `syndrome`) on its QP's send CQ, and the entry is
// free.
void flush_entry(Impl& m, uint32_t idx, uint8_t syndrome) {
  TrigEntry& e = m.trig.entries[idx];
  const QpObj& qp = m.qps[e.qpn];
  if (qp.valid && qp.gen == e.qp_gen) {
    rhn_cqe c{};
    c.qpn = e.qpn;
    c.wqe_index = static_cast<uint16_t>(e.slot);
    c.vendor_err = syndrome;
    c.opcode = op_info(e.raw.bytes[0]).cqe_op;
    c.status = RHN_CQE_WR_FLUSH_ERR;
    c.flags = RHN_CQE_F_SQ;
    m.cq_push(qp.send_cqn, c, false);
    m.counters.add(RHN_CNT_ERROR_CQES);
  }
  free_entry(m, idx);
}

// Counter idx moved: its parked entries whose threshold it reached fire,
// in the order they were parked, each onto its QP's queue.
void fire_reached(Impl& m, uint32_t counter_idx) {
  TrigCounter& c = m.trig.counters[counter_idx];
  if (c.first == kNone || c.value < c.min_threshold) return;
  for (uint32_t i = c.first; i != kNone;) {
    TrigEntry& e = m.trig.entries[i];
    const uint32_t next = e.next;
    if (c.value >= e.threshold) {
      unlink_parked(m, i);
      e.state = TrigState::kFired;
      e.next_fired = kNone;
      TrigQueue& q = m.trig.fired[e.qpn];
      if (q.tail != kNone)
        m.trig.entries[q.tail].next_fired = i;
      else
        q.head = i;
      q.tail = i;
      m.trig.fired_count++;
      m.counters.add(RHN_CNT_TRIGGER_FIRED);
      m.schedule(e.qpn);
    }
    i = next;
  }
  recompute_min(m, c);
}

uint32_t index_of(const Impl& m, const TrigCounter& c) {
  return static_cast<uint32_t>(&c - m.trig.counters.data());
}

void add(Impl& m, TrigCounter& c, uint64_t addend) {
  c.value += addend;
  fire_reached(m, index_of(m, c));
}

// Takes counter idx's pending sum (its generation stays) and adds it.
void take_sum(Impl& m, uint32_t idx) {
  Atomic<uint64_t>& word = m.trig.slots[idx].word;
  uint64_t w = word.load(MemOrder::kAcquire);
  while ((w & RHN_TRIGGER_SUM_MASK) &&
         !word.compare_exchange_weak(w, w & ~RHN_TRIGGER_SUM_MASK)) {
  }
  uint64_t sum = w & RHN_TRIGGER_SUM_MASK;
  if (m.cfg.trigger_sums) sum += m.bus.trigger_take(idx);
  TrigCounter& c = m.trig.counters[idx];
  // A word with a sum carries the live counter's generation: the engine
  // clears it (taking the sum) before the counter ends.
  if (sum && c.valid) add(m, c, sum);
}

// A counter's end: the doorbell block forgets it (a sum rung before the
// end still counts), then what is parked on it completes flushed.
void expire(Impl& m, TrigCounter& c) {
  const uint32_t idx = index_of(m, c);
  uint64_t sum = m.trig.slots[idx].word.exchange(0) & RHN_TRIGGER_SUM_MASK;
  if (m.cfg.trigger_sums) sum += m.bus.trigger_set(idx, 0, 0);
  if (sum) add(m, c, sum);
  while (c.first != kNone) {
    const uint32_t i = c.first;
    unlink_parked(m, i);
    flush_entry(m, i, RHN_SYN_TRIGGER_GONE);
  }
  c.valid = false;
  c.min_threshold = UINT64_MAX;
  m.shares.give(c.context, kResTriggerCounters);
}

// The first entry of a table that `is_free` says is free, or kNone.
template <class T, class Free>
uint32_t first_free(const Table<T>& table, Free is_free) {
  for (uint32_t i = 0; i < table.size(); i++)
    if (is_free(table[i])) return i;
  return kNone;
}

TriggerIntake refused(uint8_t status, uint8_t syndrome) {
  TriggerIntake t;
  t.verdict = TriggerIntake::kRefused;
  t.status = status;
  t.syndrome = syndrome;
  return t;
}

}  // namespace

bool trigger_strip(RawWqe& raw, uint32_t& nslots) {
  const uint16_t x = field_at<uint16_t>(raw.bytes, kXflagsAt);
  if (!x || (x & ~RHN_WQE_X_KNOWN) || nslots < 2 ||
      raw.bytes[kUnitsAt] != nslots - 1)
    return false;
  raw.bytes[kUnitsAt]--;
  raw.bytes[kXflagsAt] = raw.bytes[kXflagsAt + 1] = 0;
  nslots--;
  return true;
}

TriggerIntake trigger_intake(Impl& m, const QpObj& qp, uint32_t qpn,
                             uint32_t slot, RawWqe& raw, uint32_t& nslots) {
  const uint16_t x = field_at<uint16_t>(raw.bytes, kXflagsAt);
  rhn_wqe_trigger tr;
  if (nslots >= 2)
    memcpy(&tr, raw.bytes + (nslots - 1) * RHN_SQ_SLOT_SIZE, sizeof(tr));
  bool reserved = false;
  for (uint8_t b : tr.reserved) reserved |= b != 0;
  if (reserved || !trigger_strip(raw, nslots)) {
    m.counters.add(RHN_CNT_BAD_WQES);
    return refused(RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
  }
  TriggerIntake t;
  if (x & RHN_WQE_X_CHAIN) {
    if (!counter_of(m, qp.context, tr.chain))
      return refused(RHN_CQE_GENERAL_ERR, RHN_SYN_BAD_TRIGGER);
    t.has_chain = true;
    t.chain = tr.chain;
  }
  if (!(x & RHN_WQE_X_TRIGGERED)) return t;
  TrigCounter* c = counter_of(m, qp.context, tr.counter);
  if (!c) return refused(RHN_CQE_GENERAL_ERR, RHN_SYN_BAD_TRIGGER);
  if (c->value >= tr.threshold) return t;  // reached already: runs now
  const uint32_t idx = first_free(m.trig.entries, [](const TrigEntry& e) {
    return e.state == TrigState::kFree;
  });
  if (idx == kNone || !m.shares.take(qp.context, kResTriggerParked))
    return refused(RHN_CQE_GENERAL_ERR, RHN_SYN_TRIGGER_NO_ROOM);
  TrigEntry& e = m.trig.entries[idx];
  e.state = TrigState::kParked;
  e.slots = static_cast<uint8_t>(nslots);
  e.has_chain = t.has_chain;
  e.context = qp.context;
  e.qpn = qpn;
  e.qp_gen = qp.gen;
  e.slot = slot;
  e.counter = tr.counter & RHN_TRIGGER_INDEX_MASK;
  e.chain = t.chain;
  e.threshold = tr.threshold;
  e.next_fired = kNone;
  copy_wqe(e.raw, raw);
  e.next = kNone;
  e.prev = c->last;
  if (c->last != kNone)
    m.trig.entries[c->last].next = idx;
  else
    c->first = idx;
  c->last = idx;
  c->min_threshold = min<uint64_t>(c->min_threshold, tr.threshold);
  t.verdict = TriggerIntake::kParked;
  return t;
}

void trigger_load(const Impl& m, uint32_t entry, RawWqe& raw, uint32_t& nslots,
                  TriggerIntake& t) {
  const TrigEntry& e = m.trig.entries[entry];
  copy_wqe(raw, e.raw);
  nslots = e.slots;
  t = TriggerIntake{};
  t.has_chain = e.has_chain;
  t.chain = e.chain;
  t.entry = entry;
  t.slot = e.slot;
}

void trigger_started(Impl& m, uint32_t qpn) {
  TrigQueue& q = m.trig.fired[qpn];
  const uint32_t i = q.head;
  if (i == kNone) return;
  TrigEntry& e = m.trig.entries[i];
  q.head = e.next_fired;
  if (q.head == kNone) q.tail = kNone;
  e.next_fired = kNone;
  e.state = TrigState::kRunning;
  m.trig.fired_count--;
}

void trigger_retire(Impl& m, uint32_t entry) {
  if (entry < m.trig.entries.size() &&
      m.trig.entries[entry].state == TrigState::kRunning)
    free_entry(m, entry);
}

void trigger_chain(Impl& m, uint32_t ctx, uint32_t handle) {
  TrigCounter* c = counter_of(m, ctx, handle);
  if (!c) {
    m.counters.add(RHN_CNT_TRIGGER_DROPPED_ADDS);
    return;
  }
  add(m, *c, 1);
}

bool trigger_remote_add(Impl& m, uint32_t ctx, uint32_t handle, uint32_t key,
                        uint64_t addend, uint64_t* before) {
  TrigCounter* c = counter_of(m, ctx, handle);
  if (!c || c->key != key) return false;
  *before = c->value;
  add(m, *c, addend);
  return true;
}

void trigger_doorbell(Impl& m, uint32_t ctx, uint64_t value) {
  TrigCounter* c = counter_of(m, ctx, static_cast<uint32_t>(value));
  if (!c) {
    m.counters.add(RHN_CNT_TRIGGER_DROPPED_ADDS);
    return;
  }
  add(m, *c, value >> RHN_DB_TRIGGER_ADDEND_SHIFT);
}

TriggerDbAdd trigger_doorbell_sum(Impl& m, uint32_t ctx, uint64_t value) {
  TriggerTables& t = m.trig;
  const auto handle = static_cast<uint32_t>(value);
  const uint64_t addend = value >> RHN_DB_TRIGGER_ADDEND_SHIFT;
  const uint32_t idx = handle & RHN_TRIGGER_INDEX_MASK;
  const uint64_t gen = handle >> RHN_TRIGGER_GEN_SHIFT;
  if (idx >= t.slots.size()) {
    m.counters.add_shared(RHN_CNT_TRIGGER_DROPPED_ADDS);
    return TriggerDbAdd::kDropped;
  }
  TrigSlot& slot = t.slots[idx];
  uint64_t w = slot.word.load(MemOrder::kAcquire);
  // The owner is written before the word's generation, so with the
  // generation seen the owner read is that counter's.
  const bool owned = slot.owner.load(MemOrder::kRelaxed) == ctx;
  for (;;) {
    if (!gen || w >> RHN_TRIGGER_SUM_GEN_SHIFT != gen || !owned) {
      m.counters.add_shared(RHN_CNT_TRIGGER_DROPPED_ADDS);
      return TriggerDbAdd::kDropped;
    }
    if ((w & RHN_TRIGGER_SUM_MASK) + addend > RHN_TRIGGER_SUM_MASK)
      return TriggerDbAdd::kViaFifo;
    if (slot.word.compare_exchange_weak(w, w + addend)) break;
  }
  t.pending[idx / 64].fetch_or(uint64_t{1} << (idx % 64));
  return t.sums_kicked.exchange(true) ? TriggerDbAdd::kSummed
                                      : TriggerDbAdd::kKickSums;
}

void trigger_take_sums(Impl& m) {
  TriggerTables& t = m.trig;
  if (m.cfg.trigger_sums)  // the card's block: it says which have sums
    for (uint32_t i = m.bus.trigger_next(); i < t.counters.size();
         i = m.bus.trigger_next())
      take_sum(m, i);
  // Cleared first: an add after this owes a kick of its own.
  if (!t.sums_kicked.exchange(false)) return;
  for (uint32_t i = 0; i < t.pending.size(); i++) {
    if (!t.pending[i].load(MemOrder::kRelaxed)) continue;
    uint64_t bits = t.pending[i].exchange(0);
    for (uint32_t b = 0; bits; b++, bits >>= 1)
      if (bits & 1) take_sum(m, i * 64 + b);
  }
}

void trigger_place(Impl& m, CardMemory& mem) {
  TriggerTables& t = tables(m);
  // Handles hold a 16-bit index.
  t.counters = mem.table<TrigCounter>(min<uint32_t>(
      max<uint32_t>(m.cfg.trigger.counters, 1), RHN_TRIGGER_INDEX_MASK + 1));
  // Inflight::trig holds an entry's index in 16 bits, kNoTrigger excluded.
  t.entries = mem.table<TrigEntry>(
      min<uint32_t>(max<uint32_t>(m.cfg.trigger.parked, 1), kNoTrigger));
  t.fired = mem.table<TrigQueue>(m.cfg.max_qps);
  t.slots = mem.table<TrigSlot>(t.counters.size());
  t.pending = mem.table<Atomic<uint64_t>>((t.counters.size() + 63) / 64);
}

void trigger_reset(Impl& m) {
  TriggerTables& t = tables(m);
  // Generations survive a reset: a handle from before it stays stale.
  for (TrigCounter& c : t.counters) {
    const uint16_t gen = c.gen;
    c = TrigCounter{};
    c.gen = gen;
  }
  // Sums not taken go with the reset, as kicks still queued do.
  for (TrigSlot& s : t.slots) s.word.store(0);
  if (m.cfg.trigger_sums)
    for (uint32_t i = 0; i < t.counters.size(); i++) m.bus.trigger_set(i, 0, 0);
  for (Atomic<uint64_t>& p : t.pending) p.store(0);
  t.sums_kicked.store(false);
  for (TrigEntry& e : t.entries) e.state = TrigState::kFree;
  t.fired.fill(TrigQueue{});
  t.fired_count = 0;
  const uint32_t share = m.cfg.trigger.context_share;
  m.shares.set_limit(kResTriggerCounters, t.counters.size(),
                     uint32_t(uint64_t{t.counters.size()} * share / 256),
                     m.cfg.account_share);
  m.shares.set_limit(kResTriggerParked, t.entries.size(),
                     uint32_t(uint64_t{t.entries.size()} * share / 256),
                     m.cfg.account_share);
}

void trigger_qp_gone(Impl& m, uint32_t qpn) {
  TriggerTables& t = tables(m);
  if (qpn >= t.fired.size()) return;
  // Parked and fired WQEs complete flushed; running ones belong to the
  // QP's messages (flushed with them, or gone with a reset).
  for (uint32_t i = 0; i < t.entries.size(); i++) {
    TrigEntry& e = t.entries[i];
    if (e.state == TrigState::kFree || e.qpn != qpn) continue;
    if (e.state == TrigState::kParked) {
      TrigCounter& c = t.counters[e.counter];
      unlink_parked(m, i);
      recompute_min(m, c);
    }
    if (e.state == TrigState::kRunning)
      free_entry(m, i);
    else
      flush_entry(m, i, RHN_SYN_FLUSHED);
  }
  if (t.fired[qpn].head != kNone) {
    for (uint32_t i = t.fired[qpn].head; i != kNone;
         i = t.entries[i].next_fired)
      t.fired_count--;
    t.fired[qpn] = TrigQueue{};
  }
}

void trigger_context_gone(Impl& m, uint32_t ctx) {
  for (TrigCounter& c : tables(m).counters)
    if (c.valid && c.context == ctx) expire(m, c);
}

rhn_admin_status trigger_admin(Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                               uint32_t& result, uint32_t& detail) {
  TriggerTables& t = tables(m);
  switch (cmd.hdr.opcode) {
    case RHN_ADMIN_CREATE_TRIGGER: {
      const auto& c = cmd.u.create_trigger;
      if (c.reserved) return detail = 2, RHN_ADMIN_BAD_PARAM;
      const uint32_t idx =
          first_free(t.counters, [](const TrigCounter& k) { return !k.valid; });
      if (idx == kNone || !m.shares.take(ctx, kResTriggerCounters))
        return RHN_ADMIN_NO_RESOURCES;
      TrigCounter& k = t.counters[idx];
      // The next generation; 0 never, so no handle is 0.
      const auto gen = static_cast<uint16_t>(k.gen == 0xffff ? 1 : k.gen + 1);
      k = TrigCounter{.valid = true,
                      .gen = gen,
                      .context = ctx,
                      .key = c.key,
                      .value = c.value};
      // The doorbell block takes adds from here on (owner first).
      t.slots[idx].owner.store(ctx, MemOrder::kRelaxed);
      t.slots[idx].word.store(uint64_t{gen} << RHN_TRIGGER_SUM_GEN_SHIFT,
                              MemOrder::kRelease);
      if (m.cfg.trigger_sums) m.bus.trigger_set(idx, gen, ctx);
      result = idx | uint32_t{gen} << RHN_TRIGGER_GEN_SHIFT;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_TRIGGER: {
      TrigCounter* c = counter_of(m, ctx, cmd.u.handle.handle);
      if (!c) return RHN_ADMIN_BAD_HANDLE;
      expire(m, *c);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_QUERY_TRIGGER: {
      const TrigCounter* c = counter_of(m, ctx, cmd.u.query.handle);
      if (!c) return RHN_ADMIN_BAD_HANDLE;
      if (cmd.u.query.out_len < sizeof(uint64_t))
        return detail = 1, RHN_ADMIN_BAD_PARAM;
      // Adds rung before the query count even if their kick was lost.
      take_sum(m, index_of(m, *c));
      const uint64_t v = c->value;
      return m.write_result(cmd.u.query.out_addr, &v, sizeof(v));
    }
    default:
      return RHN_ADMIN_BAD_OPCODE;
  }
}

}  // namespace rhinet::fw
