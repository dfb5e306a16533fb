// SPDX-License-Identifier: BSD-2-Clause
// Keys the send queue changes: BIND_MW opens part of a region to remote
// access under the window's own key, REG_MR registers a fast-registration
// MR over the page list the kernel wrote, LOCAL_INV closes a type 2 window
// or ends an MR's registration. All are local: the NIC executes them in
// send-queue order and sends nothing. Remote access through a key is
// checked in translation/access.cpp; a SEND that invalidates one at the
// responder is in ops/send.
#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr uint32_t kRemoteRights =
    RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ | RHN_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kMrRights = kRemoteRights | RHN_ACCESS_LOCAL_WRITE;

uint8_t check(Impl&, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome) {
  // A type 2 window belongs to the connection it was bound through; MRs
  // are registered by the kernel's QPs of any type.
  if (w.opcode != RHN_OP_REG_MR && !connected_qp(qp.type)) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

uint8_t bind(Impl& m, QpObj& qp, uint32_t qpn, const DecodedWqe& w,
             uint8_t* syndrome) {
  *syndrome = RHN_SYN_BAD_WINDOW;
  // The window by its index: software may still hold the key it was
  // created with (verbs do not update a type 2 window's key on a bind).
  const uint32_t idx = w.operands.bind.mw_key >> RHN_KEY_INDEX_SHIFT;
  MrObj* mw = idx && idx < m.mrs.size() ? &m.mrs[idx] : nullptr;
  if (!mw || !mw->valid || !mw->window || mw->context != qp.context)
    return RHN_CQE_MW_BIND_ERR;
  // The new key names the same window; only its variant may change.
  if ((w.remote_key >> RHN_KEY_INDEX_SHIFT) != idx) return RHN_CQE_MW_BIND_ERR;
  if (mw->pdn != qp.pdn) {
    *syndrome = RHN_SYN_PD_MISMATCH;
    return RHN_CQE_MW_BIND_ERR;
  }
  const uint32_t rights = w.imm_data;
  if (rights & ~kRemoteRights) return RHN_CQE_MW_BIND_ERR;
  // Type 2 is bound once, until invalidated; type 1 rebinds freely, and a
  // zero length unbinds it.
  if (mw->mw_type == 2 && (mw->bound || w.operands.bind.length == 0))
    return RHN_CQE_MW_BIND_ERR;
  if (w.operands.bind.length == 0) {
    m.unbind_window(*mw);
    mw->variant = static_cast<uint8_t>(w.remote_key & RHN_KEY_VARIANT_MASK);
    *syndrome = RHN_SYN_NONE;
    return RHN_CQE_SUCCESS;
  }
  // The region: of this QP's PD, open to windows, covering the range; a
  // window that lets peers write needs a region the NIC may write.
  uint32_t mr_index = 0;
  const uint32_t need =
      RHN_ACCESS_MW_BIND |
      (rights & (RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_ATOMIC)
           ? RHN_ACCESS_LOCAL_WRITE
           : 0);
  const rhn_syndrome s =
      m.check_key(w.operands.bind.mr_lkey, qp.context, qp.pdn, need,
                  w.remote_addr, w.operands.bind.length, &mr_index);
  if (s != RHN_SYN_NONE) {
    *syndrome = s;
    return RHN_CQE_MW_BIND_ERR;
  }
  m.unbind_window(*mw);
  mw->bound = true;
  mw->bound_mr = mr_index;
  m.mrs[mr_index].refs++;
  mw->bound_qpn = qpn;
  mw->iova = w.remote_addr;
  mw->length = w.operands.bind.length;
  mw->access = rights;
  mw->variant = static_cast<uint8_t>(w.remote_key & RHN_KEY_VARIANT_MASK);
  *syndrome = RHN_SYN_NONE;
  return RHN_CQE_SUCCESS;
}

uint8_t local_invalidate(Impl& m, QpObj& qp, const DecodedWqe& w,
                         uint8_t* syndrome) {
  MrObj* o = m.invalidatable(w.remote_key, qp.context, qp.pdn, kNone);
  if (!o) {
    *syndrome = RHN_SYN_BAD_WINDOW;
    return RHN_CQE_MW_BIND_ERR;
  }
  m.invalidate(*o);
  *syndrome = RHN_SYN_NONE;
  return RHN_CQE_SUCCESS;
}

uint8_t register_mr(Impl& m, QpObj& qp, const DecodedWqe& w,
                    uint8_t* syndrome) {
  // An MR of this QP's context and PD, made for it and not registered:
  // the previous registration must have been invalidated first.
  *syndrome = RHN_SYN_BAD_KEY;
  const uint32_t idx = w.remote_key >> RHN_KEY_INDEX_SHIFT;
  MrObj* mr = idx && idx < m.mrs.size() ? &m.mrs[idx] : nullptr;
  if (!mr || !mr->valid || !mr->fast_reg || mr->registered ||
      mr->context != qp.context)
    return RHN_CQE_LOC_PROT_ERR;
  if (mr->pdn != qp.pdn) {
    *syndrome = RHN_SYN_PD_MISMATCH;
    return RHN_CQE_LOC_PROT_ERR;
  }
  // The pages must cover exactly [iova, iova + length).
  *syndrome = RHN_SYN_BOUNDS;
  const uint64_t iova = w.remote_addr, len = w.operands.reg.length;
  if (w.operands.reg.page_shift < 12 || w.operands.reg.page_shift > 30 ||
      len == 0 || iova + len < iova || (w.imm_data & ~kMrRights))
    return RHN_CQE_LOC_PROT_ERR;
  const uint64_t pages = ((iova + len - 1) >> w.operands.reg.page_shift) -
                         (iova >> w.operands.reg.page_shift) + 1;
  if (pages != w.operands.reg.num_pages || pages > mr->max_pages)
    return RHN_CQE_LOC_PROT_ERR;
  mr->iova = iova;
  mr->length = len;
  mr->page_shift = w.operands.reg.page_shift;
  mr->num_pages = w.operands.reg.num_pages;
  mr->access = w.imm_data;
  mr->variant = static_cast<uint8_t>(w.remote_key & RHN_KEY_VARIANT_MASK);
  mr->registered = true;
  m.tlb.invalidate_region(idx);  // the new pages, not the last ones
  *syndrome = RHN_SYN_NONE;
  return RHN_CQE_SUCCESS;
}

uint8_t execute_local(Impl& m, QpObj& qp, uint32_t qpn, const DecodedWqe& w,
                      uint8_t* syndrome) {
  switch (w.opcode) {
    case RHN_OP_BIND_MW:
      return bind(m, qp, qpn, w, syndrome);
    case RHN_OP_REG_MR:
      return register_mr(m, qp, w, syndrome);
    default:
      return local_invalidate(m, qp, w, syndrome);
  }
}

}  // namespace

extern const OpFamily kWindowFamily = {
    .name = "window",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = execute_local,
    .build_packet = nullptr,
    .on_response = nullptr,
    .has_room = nullptr,
    .on_request = nullptr,
};

}  // namespace rhinet::fw
