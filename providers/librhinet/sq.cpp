// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The send queue's one writer. A WQE is built by its poster (post.cpp for
// verbs, the dv_*.cpp families for direct verbs) in a buffer of its own and
// copied into the ring here, where the producer index moves. Publishing
// follows rdma-core's mlx5: the WQE bytes, a barrier to the device, the
// producer index in the doorbell record, then the doorbell write (kick()
// orders it behind the record with another barrier). All of it happens
// under the QP's sq_lock; the CQ side moves only sq_consumer, under the
// same lock.
#include <cerrno>
#include <cstring>

#include "provider.h"

namespace rhinet {

uint32_t sq_room(const Qp* qp) {
  return (1u << qp->sq_log) - (qp->sq_producer - qp->sq_consumer);
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

void sq_rollback(Qp* qp, uint32_t producer) { qp->sq_producer = producer; }

void sq_reset(Qp* qp) {
  qp->sq_producer = qp->sq_consumer = 0;
  qp->sq_record->producer_index = 0;
}

}  // namespace rhinet
