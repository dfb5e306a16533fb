// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The send queue's one writer. A WQE is built by its poster (post.cpp for
// verbs, the dv_*.cpp families for direct verbs) in a buffer of its own and
// copied into the ring here, where the producer index moves. Publishing
// follows rdma-core's mlx5: the WQE bytes, a barrier to the device, the
// producer index in the doorbell record, then the doorbell write (kick()
// orders it behind the record with another barrier). All of it happens
// under the QP's sq_lock; the CQ side moves only sq_consumer and the held
// triggered WQEs (sq_complete), under the same lock.
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

int sq_write(Qp* qp, uint8_t* wqe, uint32_t slots, uint64_t wr_id, bool report,
             uint32_t* first) {
  // A QP without a send queue is always full, as a queue of 0 WRs is.
  if (qp->no_sq || slots > sq_room(qp)) return ENOMEM;
  const uint32_t mask = (1u << qp->sq_log) - 1;
  const uint32_t at = qp->sq_producer;
  reinterpret_cast<rhn_send_wqe*>(wqe)->wqe_index = static_cast<uint16_t>(at);
  for (uint32_t s = 0; s < slots; s++)
    memcpy(qp->sq + ((at + s) & mask) * RHN_SQ_SLOT_SIZE,
           wqe + s * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
  qp->sq_info[at & mask] = SendSlot{wr_id, static_cast<uint8_t>(slots), report};
  qp->sq_producer = at + slots;
  if (first) *first = at;
  return 0;
}

void sq_publish(Qp* qp) {
  to_device_barrier();
  __atomic_store_n(&qp->sq_record->producer_index, qp->sq_producer,
                   __ATOMIC_RELEASE);
  to_ctx(qp->vqp.qp.context)->kick(RHN_DB_SQ, qp->qpn);
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
  const SendSlot& s = qp->sq_info[first & ((1u << qp->sq_log) - 1)];
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
  qp->sq_consumer = idx + info.slots;
}

void sq_reset(Qp* qp) {
  qp->sq_producer = qp->sq_consumer = 0;
  qp->sq_num_held = 0;
  qp->sq_record->producer_index = 0;
}

}  // namespace rhinet
