// SPDX-License-Identifier: BSD-2-Clause
// Many producers on one SQ (Documentation/hardware/queues.md, "Many
// producers on one queue"): for QPs created with
// RHN_CREATE_QP_F_MULTI_PRODUCER the NIC tells the producers which slots
// it is done with (the record's nic_consumer) and finds work whose
// doorbell was lost by reading the records on a timer. Nothing here runs
// for other QPs; the requester calls in only after it read such a QP's
// record.
#include "core/freestanding.h"
#include "engine/engine_impl.h"

namespace rhinet::fw {

namespace {

// One aligned 8-byte store into queue memory: a producer polling the word
// sees the old count or the new one, never half of each.
bool store_record_word(Engine::Impl& m, const HostRef& ref, uint64_t offset,
                       uint64_t value) {
  if (ref.lkey != RHN_LKEY_PHYSICAL)
    return m.mr_store_u64(ref.lkey >> RHN_KEY_INDEX_SHIFT, ref.addr + offset,
                          value);
  if (m.bus.dma_store_u64(ref.addr + offset, value)) return true;
  m.counters.add(RHN_CNT_DMA_ERRORS);
  return false;
}

}  // namespace

void Engine::Impl::mp_arm(uint64_t interval) {
  mp_interval = interval;
  mp_scan_at = now + interval;
  if (mp_scan_at < next_qp_wake) next_qp_wake = mp_scan_at;
}

void Engine::Impl::mp_link(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  qp.mp = true;
  qp.mp_prev = kNone;
  qp.mp_next = mp_head;
  if (mp_head != kNone) qps[mp_head].mp_prev = qpn;
  mp_head = qpn;
  if (mp_scan_at == UINT64_MAX) mp_arm(cfg.mp_scan_ns);
}

void Engine::Impl::mp_unlink(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  if (qp.mp_prev != kNone)
    qps[qp.mp_prev].mp_next = qp.mp_next;
  else
    mp_head = qp.mp_next;
  if (qp.mp_next != kNone) qps[qp.mp_next].mp_prev = qp.mp_prev;
  qp.mp = false;
  qp.mp_prev = qp.mp_next = kNone;
  if (mp_head == kNone) mp_scan_at = UINT64_MAX;  // no scan timer at all
}

void Engine::Impl::mp_store_consumer(QpObj& qp) {
  // sq_complete only grows: its distance from the last count stored (mod
  // 2^32) extends the count to 64 bits.
  const uint64_t done =
      qp.mp_consumed +
      static_cast<uint32_t>(qp.sq_complete -
                            static_cast<uint32_t>(qp.mp_consumed));
  if (done == qp.mp_consumed) return;
  if (store_record_word(*this, qp.sq_record,
                        RHN_OFFSETOF(rhn_mp_queue_record, nic_consumer), done))
    qp.mp_consumed = done;
}

void Engine::Impl::mp_record_read(QpObj& qp) {
  if (qp.sq_producer != qp.sq_fetch) {
    // Producers at work: whatever the scan suspected is taken now, and
    // the scan comes back to its shortest interval.
    qp.mp_suspect = false;
    if (mp_interval != cfg.mp_scan_ns && now + cfg.mp_scan_ns < mp_scan_at)
      mp_arm(cfg.mp_scan_ns);
  }
  mp_store_consumer(qp);
}

bool Engine::Impl::mp_scan() {
  bool took = false, suspect = false;
  for (uint32_t q = mp_head; q != kNone; q = qps[q].mp_next) {
    QpObj& qp = qps[q];
    // Only a QP that took all it knew of and will look again by itself
    // for nothing else: a queued or busy one reads its record soon anyway.
    if (qp.state != RHN_QPS_RTS || qp.in_ready || qp.waiting_on ||
        qp.tx_active || qp.sq_fetch != qp.sq_producer ||
        qp.inflight_tail - qp.inflight_head >= cfg.max_inflight_per_qp) {
      qp.mp_suspect = false;
      continue;
    }
    rhn_queue_record rec;
    counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
    if (!queue_dma(qp.sq_record_key, qp.sq_record, 0, &rec, sizeof(rec),
                   false) ||
        rec.producer_index == qp.sq_producer) {
      qp.mp_suspect = false;
      continue;
    }
    // Published and not taken: a batch whose doorbell is on its way, or
    // a lost doorbell. Taken only if it is still so one interval later.
    if (!qp.mp_suspect || qp.mp_seen != qp.sq_producer) {
      qp.mp_suspect = true;
      qp.mp_seen = qp.sq_producer;
      suspect = true;
      continue;
    }
    qp.mp_suspect = false;
    counters.add(RHN_CNT_SQ_RECOVERED, rec.producer_index - qp.sq_producer);
    schedule(q);
    took = true;
  }
  mp_arm(took || suspect ? cfg.mp_scan_ns
                         : min(mp_interval * 2, cfg.mp_scan_max_ns));
  return took;
}

}  // namespace rhinet::fw
