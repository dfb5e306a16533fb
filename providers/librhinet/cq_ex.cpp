// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The extended CQ (ibv_cq_ex): start_poll takes the CQ lock and decodes the
// first new CQE with the one decoder poll_cq uses (poll_one), next_poll the
// next one,
// the read_* calls return fields of the one decoded last, and end_poll
// hands the consumed entries back to the NIC and drops the lock. Events,
// req_notify_cq and destroy are those of every CQ: an ibv_cq_ex is an
// ibv_cq to the rest of the provider.
#include <cerrno>

#include "provider.h"

namespace rhinet {

namespace {

// What the CQE gives (the wc fields poll_cq fills). SLID, SL and DLID path
// bits are 0 on this Ethernet-only fabric, as in poll_cq. Tag matching:
// the tag and app_ctx of a message that matched a TM SRQ's entry. No
// timestamps, VLANs or flow tags.
constexpr uint64_t kWcFlags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
    IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_TM_INFO;

Cq* cq_of(ibv_cq_ex* c) {
  return container_of_member<Cq>(c, offsetof(Cq, vcq.cq_ex));
}

const Completion& cur(ibv_cq_ex* c) { return cq_of(c)->cur; }

int deliver(ibv_cq_ex* c) {
  Cq* cq = cq_of(c);
  if (!poll_one(cq, &cq->cur)) return ENOENT;
  c->wr_id = cq->cur.wr_id;
  c->status = cq->cur.status;
  return 0;
}

int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr->comp_mask) return EINVAL;
  Cq* cq = cq_of(c);
  cq->lock.lock();
  cq->poll_start = cq->consumer;
  const int err = deliver(c);
  if (err) {  // the caller does not call end_poll then
    if (cq->consumer != cq->poll_start) publish_consumer(cq);
    cq->lock.unlock();
  }
  return err;
}

int next_poll(ibv_cq_ex* c) { return deliver(c); }

void end_poll(ibv_cq_ex* c) {
  Cq* cq = cq_of(c);
  if (cq->consumer != cq->poll_start) publish_consumer(cq);
  cq->lock.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return wc_opcode_of(cur(c)); }
uint32_t read_vendor_err(ibv_cq_ex* c) { return cur(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return cur(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return cur(c).imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return cur(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return cur(c).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return cur(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) { return cur(c).src_node; }
uint8_t read_sl(ibv_cq_ex* c) { return cur(c).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex*) { return 0; }
void read_tm_info(ibv_cq_ex* c, ibv_wc_tm_info* tm) { *tm = cur(c).tm; }

}  // namespace

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  return create_cq_ex_in(context, attr, nullptr);
}

ibv_cq_ex* create_cq_ex_in(ibv_context* context, ibv_cq_init_attr_ex* attr,
                           const QueueBuf* buf) {
  // No parent domains; IBV_CQ_INIT_ATTR_MASK_FLAGS only without flags
  // (IBV_CREATE_CQ_ATTR_SINGLE_THREADED changes nothing here: the lock is
  // uncontended then, so it is accepted).
  if (attr->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS})
    return errno = EOPNOTSUPP, nullptr;
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (attr->flags & ~uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED}))
    return errno = EOPNOTSUPP, nullptr;
  if (attr->wc_flags & ~kWcFlags) return errno = EOPNOTSUPP, nullptr;
  Cq* cq = create_cq_common(context, attr, buf);
  if (!cq) return nullptr;
  set_cq_ex_ops(cq);
  return &cq->vcq.cq_ex;
}

void set_cq_ex_ops(Cq* cq) {
  ibv_cq_ex& c = cq->vcq.cq_ex;
  c.start_poll = start_poll;
  c.next_poll = next_poll;
  c.end_poll = end_poll;
  c.read_opcode = read_opcode;
  c.read_vendor_err = read_vendor_err;
  c.read_byte_len = read_byte_len;
  c.read_imm_data = read_imm_data;
  c.read_qp_num = read_qp_num;
  c.read_src_qp = read_src_qp;
  c.read_wc_flags = read_wc_flags;
  c.read_slid = read_slid;
  c.read_sl = read_sl;
  c.read_dlid_path_bits = read_dlid_path_bits;
  c.read_tm_info = read_tm_info;
}

}  // namespace rhinet
