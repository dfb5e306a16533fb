// SPDX-License-Identifier: BSD-2-Clause
// Many producers on one SQ (Documentation/hardware/queues.md, "Many
// producers on one queue"): for QPs created with
// RHN_CREATE_QP_F_MULTI_PRODUCER the NIC tells the producers which slots
// it is done with (the record's nic_consumer). The record scan here finds
// work whose doorbell was lost by reading records on a timer, for those
// QPs and for QPs with an SQ event index (queues.md, "The SQ event
// index"), whose posts after a lost kick would never kick again. Nothing
// here runs for other QPs; the requester calls in only after it read a
// multi-producer QP's record.
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

void Engine::Impl::scan_arm(uint64_t interval) {
  scan_interval = interval;
  scan_at = now + interval;
  if (scan_at < next_qp_wake) next_qp_wake = scan_at;
}

void Engine::Impl::scan_link(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  qp.scan_listed = true;
  qp.scan_prev = kNone;
  qp.scan_next = scan_head;
  if (scan_head != kNone) qps[scan_head].scan_prev = qpn;
  scan_head = qpn;
  if (scan_at == UINT64_MAX) scan_arm(cfg.sq_scan_ns);
}

void Engine::Impl::scan_unlink(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  if (qp.scan_prev != kNone)
    qps[qp.scan_prev].scan_next = qp.scan_next;
  else
    scan_head = qp.scan_next;
  if (qp.scan_next != kNone) qps[qp.scan_next].scan_prev = qp.scan_prev;
  qp.mp = qp.scan_listed = false;
  qp.scan_prev = qp.scan_next = kNone;
  if (scan_head == kNone) scan_at = UINT64_MAX;  // no scan timer at all
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
    qp.scan_suspect = false;
    if (scan_interval != cfg.sq_scan_ns && now + cfg.sq_scan_ns < scan_at)
      scan_arm(cfg.sq_scan_ns);
  }
  mp_store_consumer(qp);
}

bool Engine::Impl::record_scan() {
  bool took = false, suspect = false;
  for (uint32_t q = scan_head; q != kNone; q = qps[q].scan_next) {
    QpObj& qp = qps[q];
    // Only a QP that took all it knew of and will look again by itself
    // for nothing else: a queued or busy one reads its record soon anyway.
    // An event-index QP only once it stored its index: before that its
    // posts kick (the word is 0 or asks for every kick).
    if ((!qp.mp && qp.sq_event != SqEvent::kStored) ||
        qp.state != RHN_QPS_RTS || qp.in_ready || qp.waiting_on ||
        qp.tx_active || qp.sq_fetch != qp.sq_producer ||
        qp.inflight_tail - qp.inflight_head >= cfg.max_inflight_per_qp) {
      qp.scan_suspect = false;
      continue;
    }
    rhn_queue_record rec;
    counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
    if (!queue_dma(qp.sq_record_key, qp.sq_record, 0, &rec, sizeof(rec),
                   false) ||
        rec.producer_index == qp.sq_producer) {
      qp.scan_suspect = false;
      continue;
    }
    // Published and not taken: a batch whose doorbell is on its way, or
    // a lost doorbell. Taken only if it is still so one interval later.
    // Only a multi-producer suspect brings the scan back to its shortest
    // interval: an event-index QP's kick is nearly always on its way (a
    // latency test finds one at every post), and a scan kept short by
    // them would read every idle QP's record each 100 us.
    if (!qp.scan_suspect || qp.scan_seen != qp.sq_producer) {
      qp.scan_suspect = true;
      qp.scan_seen = qp.sq_producer;
      suspect |= qp.mp;
      continue;
    }
    qp.scan_suspect = false;
    counters.add(RHN_CNT_SQ_RECOVERED, rec.producer_index - qp.sq_producer);
    schedule(q);
    took = true;
  }
  scan_arm(took || suspect ? cfg.sq_scan_ns
                           : min(scan_interval * 2, cfg.sq_scan_max_ns));
  return took;
}

}  // namespace rhinet::fw
