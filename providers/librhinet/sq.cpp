// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The send queue's one writer. A WQE is built by its poster (post.cpp for
// verbs, the dv_*.cpp families for direct verbs) in a buffer of its own and
// copied into the ring here, where the producer index moves. Publishing
// follows rdma-core's mlx5: the WQE bytes, a barrier to the device, the
// producer index in the doorbell record, then the doorbell write (kick()
// orders it behind the record with another barrier). All of it happens
// under the QP's sq_lock; the CQ side moves only sq_consumer and the held
// triggered WQEs (sq_complete), under the same lock. A multi-producer QP's
// posters take no lock (sq_mp_write); its pollers still take sq_lock.
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider.h"

namespace rhinet {

// A WQE's index names it in its CQE by its low 16 bits.
constexpr uint32_t kIndexSpace = 1u << 16;

uint32_t sq_room(const Qp* qp) {
  const uint32_t room =
      (1u << qp->sq_log) - (qp->sq_producer - qp->sq_consumer);
  if (!qp->sq_num_held) return room;
  // Up to the oldest held WQE's index one lap of 16 bits on, not beyond.
  const uint32_t names = qp->sq_held[0].index + kIndexSpace - qp->sq_producer;
  return room < names ? room : names;
}

namespace {

// The WQE into its slots from @at on, stamped with its index, and what its
// completion will need in the table by slot; nothing is published yet.
void copy_wqe(Qp* qp, uint8_t* wqe, uint32_t slots, uint32_t at, uint64_t wr_id,
              bool report) {
  const uint32_t mask = (1u << qp->sq_log) - 1;
  reinterpret_cast<rhn_send_wqe*>(wqe)->wqe_index = static_cast<uint16_t>(at);
  for (uint32_t s = 0; s < slots; s++)
    memcpy(qp->sq + ((at + s) & mask) * RHN_SQ_SLOT_SIZE,
           wqe + s * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
  // Whether the NIC completes it with a CQE, or as part of one naming a
  // later WQE (and, in a run, of the WQEs that entry stands for).
  const bool signaled =
      (reinterpret_cast<rhn_send_wqe*>(wqe)->flags & RHN_WQE_F_SIGNALED) != 0;
  qp->sq_info[at & mask] =
      SendSlot{wr_id, static_cast<uint8_t>(slots), report, signaled, false};
}

// A multi-producer poster's waits are on other threads (the poster before
// it) or on the NIC: spin briefly, then give the core away, since there
// may be more posters than cores.
void mp_pause(uint32_t* spins) {
  if (++*spins >= 64) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

int sq_write(Qp* qp, uint8_t* wqe, uint32_t slots, uint64_t wr_id, bool report,
             uint32_t* first) {
  // A QP without a send queue is always full, as a queue of 0 WRs is.
  if (qp->no_sq || slots > sq_room(qp)) return ENOMEM;
  const uint32_t at = qp->sq_producer;
  copy_wqe(qp, wqe, slots, at, wr_id, report);
  qp->sq_producer = at + slots;
  if (first) *first = at;
  return 0;
}

// The producers' protocol of queues.md "Many producers on one queue".
// Credit first: a reservation cannot be handed back once later posters
// hold tickets behind it, so whether there is room is settled before the
// ticket is taken, and ENOMEM leaves nothing behind.
int sq_mp_write(Qp* qp, uint8_t* wqe, uint32_t slots, uint64_t wr_id,
                bool no_doorbell) {
  const int64_t n = slots;
  if (qp->mp_credit.fetch_sub(n, std::memory_order_acq_rel) < n) {
    qp->mp_credit.fetch_add(n, std::memory_order_acq_rel);
    return ENOMEM;
  }
  const uint32_t depth = 1u << qp->sq_log;
  const uint64_t t = qp->mp_reserve.fetch_add(slots, std::memory_order_acq_rel);
  rhn_mp_queue_record* rec = qp->sq_mp_record;
  uint32_t spins = 0;
  // The credit says the poller is past these slots; the NIC says so in
  // nic_consumer at its next record read.
  while (!rhn_mp_has_room(
      t, slots, __atomic_load_n(&rec->nic_consumer, __ATOMIC_ACQUIRE), depth)) {
    if (qp->mp_closed.load(std::memory_order_acquire)) return EINVAL;
    mp_pause(&spins);
  }
  copy_wqe(qp, wqe, slots, static_cast<uint32_t>(t), wr_id, true);
  // Publish in slot order: the NIC sees one producer count.
  spins = 0;
  while (__atomic_load_n(&rec->producer, __ATOMIC_ACQUIRE) != t) {
    if (qp->mp_closed.load(std::memory_order_acquire)) return EINVAL;
    mp_pause(&spins);
  }
  to_device_barrier();
  __atomic_store_n(&rec->producer, t + slots, __ATOMIC_SEQ_CST);
  const uint64_t reserved = qp->mp_reserve.load(std::memory_order_seq_cst);
  if (no_doorbell || !rhn_mp_rings(t, slots, reserved, RHN_MP_DB_BATCH))
    return 0;
  // The tail of a burst need not ring while the NIC still owes a
  // completion before it: the NIC reads the record again when it has
  // fetched what it knew of and at each completion after that, and takes
  // this WQE then. One thread posting alone is the tail of every post,
  // so otherwise it would ring each time. Should the NIC's last record
  // read have come just before the publishing store (its nic_consumer
  // not yet visible here), its record scan finds the WQE. Only in RTS:
  // the scan looks at no other state.
  const bool batch_end = (t + slots) / RHN_MP_DB_BATCH != t / RHN_MP_DB_BATCH;
  const bool nic_busy =
      __atomic_load_n(&qp->vqp.qp.state, __ATOMIC_ACQUIRE) == IBV_QPS_RTS &&
      __atomic_load_n(&rec->nic_consumer, __ATOMIC_SEQ_CST) < t;
  if (batch_end || !nic_busy)
    to_ctx(qp->vqp.qp.context)->kick(RHN_DB_SQ, qp->qpn);
  return 0;
}

// The NIC stores the request (or its event index) when it goes idle on
// the SQ, then reads producer_index; we store producer_index, fence, then
// load the word. One of us sees the other's store: the NIC's read finds
// the WQE, or we kick (queues.md, "Sends without doorbells"). With an
// event index only the post that writes the slot the NIC went idle at
// kicks; the request bit alone makes every post kick.
static bool sq_kick_wanted(const Qp* qp, uint32_t first) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return rhn_sq_post_must_kick(
      __atomic_load_n(&qp->sq_record->nic_consumer, __ATOMIC_RELAXED), first,
      qp->sq_producer);
}

// The kick, with the first WQE not yet announced in the inline window
// when it is one slot: an idle NIC expects exactly that one and takes it
// from the window instead of reading the ring (registers.md, "SQ kick").
// The ring copy stays the truth for a NIC that expects another one.
static void sq_kick(Context* ctx, Qp* qp, uint32_t first) {
  const uint8_t* wqe =
      qp->sq + (first & ((1u << qp->sq_log) - 1)) * RHN_SQ_SLOT_SIZE;
  if (!ctx->sq_inline_db || first == qp->sq_producer ||
      reinterpret_cast<const rhn_send_wqe*>(wqe)->ext_units != 0 ||
      ctx->inline_window_held.test_and_set(std::memory_order_acquire)) {
    ctx->kick(RHN_DB_SQ, qp->qpn);
    return;
  }
  auto* window =
      reinterpret_cast<volatile uint64_t*>(ctx->db + RHN_DB_INLINE_WQE);
  for (uint32_t i = 0; i < RHN_SQ_SLOT_SIZE / 8; i++) {
    uint64_t v;
    memcpy(&v, wqe + i * 8, sizeof(v));
    window[i] = v;
  }
  ctx->kick(RHN_DB_SQ, qp->qpn | RHN_DB_SQ_INLINE);
  ctx->inline_window_held.clear(std::memory_order_release);
}

void sq_publish(Qp* qp) {
  Context* ctx = to_ctx(qp->vqp.qp.context);
  const uint32_t first = qp->sq_announced;
  qp->sq_announced = qp->sq_producer;
  to_device_barrier();
  __atomic_store_n(&qp->sq_record->producer_index, qp->sq_producer,
                   __ATOMIC_RELEASE);
  if (!qp->sq_kick_on_request) {
    ctx->kick(RHN_DB_SQ, qp->qpn);
    return;
  }
  if (sq_kick_wanted(qp, first)) sq_kick(ctx, qp, first);
}

void sq_rollback(Qp* qp, uint32_t producer) {
  // Held WQEs are in posting order: those of the rollback are last.
  while (qp->sq_num_held && qp->sq_held[qp->sq_num_held - 1].index - producer <
                                qp->sq_producer - producer)
    qp->sq_num_held--;
  qp->sq_producer = producer;
}

// Triggered WQEs and the ring: the NIC takes a parked WQE out of the ring
// (its slots complete in ring order without a CQE, as an unsignaled WQE's
// do, and are reused) and completes it whenever its counter fires, after
// WQEs behind it, naming it by the low 16 bits of its first slot's index.
// So the provider keeps what that CQE needs here, and posts no WQE whose
// index has the same low 16 bits (sq_room) until it came: a CQE naming a
// held index is the held WQE's, any other one is in ring order.
int sq_hold(Qp* qp, uint32_t first) {
  if (!qp->sq_held) {
    qp->sq_held = static_cast<HeldWqe*>(calloc(kMaxHeld, sizeof(HeldWqe)));
    if (!qp->sq_held) return ENOMEM;
  }
  if (qp->sq_num_held == kMaxHeld) return ENOMEM;
  SendSlot& s = qp->sq_info[first & ((1u << qp->sq_log) - 1)];
  s.triggered = true;
  qp->sq_held[qp->sq_num_held++] = HeldWqe{s.wr_id, first, s.report};
  return 0;
}

void sq_complete(Qp* qp, uint16_t wqe_index, uint64_t* wr_id, bool* report) {
  for (uint32_t i = 0; i < qp->sq_num_held; i++) {
    if (static_cast<uint16_t>(qp->sq_held[i].index) != wqe_index) continue;
    *wr_id = qp->sq_held[i].wr_id;
    *report = qp->sq_held[i].report;
    memmove(&qp->sq_held[i], &qp->sq_held[i + 1],
            (qp->sq_num_held - i - 1) * sizeof(HeldWqe));
    qp->sq_num_held--;
    return;
  }
  // The full index at or after the consumer's.
  const uint32_t idx =
      qp->sq_consumer +
      static_cast<uint16_t>(wqe_index - static_cast<uint16_t>(qp->sq_consumer));
  const SendSlot& info = qp->sq_info[idx & ((1u << qp->sq_log) - 1)];
  *wr_id = info.wr_id;
  *report = info.report;
  // Every WQE before this one is complete too (unsignaled ones included).
  // Their slots go back to the multi-producer posters only now, after
  // their wr_ids were read.
  if (qp->mp)
    qp->mp_credit.fetch_add(idx + info.slots - qp->sq_consumer,
                            std::memory_order_acq_rel);
  qp->sq_consumer = idx + info.slots;
}

bool sq_complete_run_member(Qp* qp, uint16_t last, uint64_t* wr_id,
                            bool* report, uint16_t* index) {
  const uint32_t mask = (1u << qp->sq_log) - 1;
  // The last WQE's full index, at or after the consumer's.
  const uint32_t end =
      qp->sq_consumer +
      static_cast<uint16_t>(last - static_cast<uint16_t>(qp->sq_consumer));
  uint32_t idx = qp->sq_consumer;
  for (;;) {
    if (static_cast<int32_t>(end - idx) <= 0) return false;
    const SendSlot& info = qp->sq_info[idx & mask];
    // A triggered WQE is reported by its own CQE, whether that came
    // already (it is no longer held) or is still to come.
    if (info.signaled && !info.triggered) break;
    idx += info.slots ? info.slots : 1;
  }
  const SendSlot& info = qp->sq_info[idx & mask];
  *wr_id = info.wr_id;
  *report = info.report;
  *index = static_cast<uint16_t>(idx);
  if (qp->mp)
    qp->mp_credit.fetch_add(idx + info.slots - qp->sq_consumer,
                            std::memory_order_acq_rel);
  qp->sq_consumer = idx + info.slots;
  return true;
}

void sq_reset(Qp* qp) {
  qp->sq_producer = qp->sq_consumer = qp->sq_announced = 0;
  qp->sq_num_held = 0;
  if (qp->mp) {  // no poster runs across a RESET (the QP is not in RTS)
    qp->mp_reserve.store(0);
    qp->mp_credit.store(qp->mp_credit_max);
    __atomic_store_n(&qp->sq_mp_record->producer, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&qp->sq_mp_record->nic_consumer, 0, __ATOMIC_RELEASE);
    return;
  }
  qp->sq_record->producer_index = 0;
}

}  // namespace rhinet
