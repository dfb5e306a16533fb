// SPDX-License-Identifier: BSD-2-Clause
// SEND and SEND with immediate (two-sided messages): the requester's rules
// (UD datagrams of one packet, GRHs), their packets, and the responder's
// side, which finds where the bytes land through the matching stage
// (responder/matching.cpp: receive WQEs and receive contexts).
#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type == RHN_QP_UD) {
    if (w.flags & RHN_WQE_F_AREA) {
      *syndrome = RHN_SYN_BAD_OPCODE;
      return RHN_CQE_LOC_QP_OP_ERR;
    }
    if (w.has_grh && !m.gid_valid(w.grh.sgid_index)) {
      // A GRH needs a source GID the kernel has set.
      *syndrome = RHN_SYN_BAD_WQE;
      return RHN_CQE_LOC_QP_OP_ERR;
    }
    if (w.length > RHN_WIRE_MTU) {
      *syndrome = RHN_SYN_LENGTH;
      return RHN_CQE_LOC_LEN_ERR;
    }
    return RHN_CQE_SUCCESS;
  }
  if (w.has_grh) {  // only UD SENDs carry one
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // Invalidating a window at the responder: RC only, as in InfiniBand.
  if (w.opcode == RHN_OP_SEND_INV && qp.type != RHN_QP_RC) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  const auto chunk =
      static_cast<uint32_t>(min<uint64_t>(RHN_WIRE_MTU, w.length - offset));
  uint8_t* p = out.payload;
  uint32_t grh_len = 0;
  if (w.has_grh) {
    // A UD SEND is one packet; its GRH goes ahead of the data.
    m.build_grh(w, p);
    p += RHN_WIRE_GRH_LEN;
    grh_len = RHN_WIRE_GRH_LEN;
    op.flags |= RHN_WOP_F_GRH;
  }
  if (chunk && !gather(m, qp, w, offset, p, chunk)) return false;
  out.len = chunk + grh_len;
  out.advance = chunk;
  out.last = offset + chunk >= w.length;
  // UD SENDs carry the queue key where other requests carry the rkey. A
  // key with the high bit set names the QP's own (IBTA 10.2.5), which only
  // the kernel can set to such a "controlled" key: processes cannot reach
  // the management QP's key.
  if (qp.type == RHN_QP_UD) op.rkey = (w.qkey >> 31) != 0 ? qp.qkey : w.qkey;
  // XRC: the target's SRQ the WQE names, where RC would have no key.
  if (qp.type == RHN_QP_XRC_SEND) op.rkey = w.dst_qpn;
  op.msg_len = static_cast<uint32_t>(w.length) + grh_len;
  if (w.opcode == RHN_OP_SEND_INV) {
    op.rkey = w.imm_data;  // the window the responder unbinds
    op.flags |= RHN_WOP_F_INV;
  }
  return true;
}

void on_request(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  Peer& p = r.peer;
  // UD: the buffer starts with the GRH room (hw_queues.h); a GRH sent
  // along fills it, otherwise the payload lands behind it.
  const bool ud = r.qp.type == RHN_QP_UD;
  const bool grh = ud && (op.flags & RHN_WOP_F_GRH);
  const uint32_t skip = ud && !grh ? RHN_UD_GRH_LEN : 0;
  if (ud) {
    if (!r.first || !r.last || (grh && r.data.size() < RHN_WIRE_GRH_LEN)) {
      m.counters.add(RHN_CNT_MALFORMED_PACKETS);
      return;
    }
    if (op.rkey != r.qp.qkey) {
      m.counters.add(RHN_CNT_UD_DROPS);
      return;
    }
  } else if (op.flags & RHN_WOP_F_GRH || r.data.size() > RHN_WIRE_MTU) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  // The matching stage: where this message's bytes land. A single packet
  // needs no state beyond this call.
  RxContext single;
  RxContext* ctx = &single;
  if (r.first) {
    // The sender's previous message from this QP is over: a receive it
    // left half-way (its QP failed) ends here.
    if (RxContext* old = m.rx_find(p, r.src, kNone))
      m.rx_abandon(p, *old, RHN_CQE_GENERAL_ERR);
    // SEND_INV: the key must be one this QP may invalidate (a type 2
    // window bound through it, or a registered fast-registration MR of
    // its PD), or the message is refused before it lands.
    if (op.flags & RHN_WOP_F_INV) {
      if (!m.invalidatable(op.rkey, r.qp.context, r.qp.pdn, r.qpn)) {
        m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
        refuse(m, r, RHN_SYN_BAD_WINDOW);
        return;
      }
    }
    // XRC: the SEND names its SRQ, which must be a live one of the
    // target QP's domain; the receive is counted against its owner.
    uint32_t srqn = r.qp.srqn;
    uint32_t owner = r.qp.context;
    if (r.qp.type == RHN_QP_XRC_RECV) {
      const SrqObj* s = m.xrc_srq(op.rkey, r.qp.xrcd);
      if (!s) {
        m.counters.add(RHN_CNT_XRC_REFUSED);
        refuse(m, r, RHN_SYN_XRC_SRQ);
        return;
      }
      srqn = op.rkey & RHN_XRC_SRQN_INDEX_MASK;
      owner = s->context;
    }
    if (!r.last) {
      ctx = m.rx_alloc(p, owner);
      if (!ctx) {
        m.counters.add(RHN_CNT_RX_CONTEXT_BUSY);
        not_ready(m, r, RHN_SYN_BUSY);
        return;
      }
    }
    // A family's SRQ (a TM SRQ, ops/tm) decides between its own entries
    // and its receive WQEs, or takes the message whole.
    bool landed;
    const FamilyModule* srq_runner =
        srqn != kNone ? srq_family(m, srqn) : nullptr;
    if (srq_runner && srq_runner->srq_land) {
      const SrqLanding l = srq_runner->srq_land(m, r, *ctx);
      if (l == SrqLanding::kConsumed) {
        if (ctx != &single) m.rx_free(p, *ctx);
        return;
      }
      landed = l == SrqLanding::kReceive;
    } else {
      landed = m.take_recv_wqe_from(r.qp, r.qpn, srqn, *ctx);
    }
    if (!landed) {
      if (ctx != &single) m.rx_free(p, *ctx);
      if (ud) {
        m.counters.add(RHN_CNT_UD_DROPS);
        return;
      }
      not_ready(m, r, RHN_SYN_RNR);
      return;
    }
    ctx->node = r.node;
    ctx->src = r.src;
    ctx->msn = op.msn;
    ctx->length = skip;
    if (ctx->status == RHN_CQE_SUCCESS &&
        uint64_t{op.msg_len} - ctx->drop + skip > ctx->capacity)
      ctx->status = RHN_CQE_LOC_LEN_ERR;
    // A receive buffer of an on-demand MR whose pages are not all pinned:
    // the message comes again once its host has pinned them, into the
    // same receive WQE (a TM SRQ's landing keeps its own state: not
    // there).
    if (ctx->status == RHN_CQE_SUCCESS &&
        !(srq_runner && srq_runner->srq_land) &&
        !pin_receive(m, r, *ctx, uint64_t{op.msg_len} - ctx->drop)) {
      m.untake_recv_wqe(r.qp, *ctx);
      if (ctx != &single) m.rx_free(p, *ctx);
      if (ud) m.counters.add(RHN_CNT_UD_DROPS);
      return;
    }
    if (ctx->status != RHN_CQE_SUCCESS) {
      if (ctx->status == RHN_CQE_LOC_LEN_ERR)
        m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
      refuse(m, r,
             ctx->status == RHN_CQE_LOC_LEN_ERR ? RHN_SYN_LENGTH
                                                : RHN_SYN_BAD_WQE);
      m.complete_receive(*ctx, r.node, r.src_qpn, ctx->cqe_op, 0, 0);
      if (ctx != &single) m.rx_free(p, *ctx);
      return;
    }
  } else {
    ctx = m.rx_find(p, r.src, op.msn);
    if (!ctx || ctx->qpn != r.qpn) {
      // The rest of a refused message is expected; anything else is not.
      if (!m.nak_remembered(p, r.src, op.msn))
        m.counters.add(RHN_CNT_MALFORMED_PACKETS);
      return;
    }
  }
  // The message's first ctx->drop bytes (a TM header) land nowhere.
  Span<const uint8_t> data = r.data;
  uint64_t at = op.msg_offset;
  if (at < ctx->drop) {
    const size_t cut = min<size_t>(ctx->drop - at, data.size());
    data = data.subspan(cut);
    at += cut;
  }
  if (at + skip - ctx->drop != ctx->length ||
      uint64_t{ctx->length} + data.size() > ctx->capacity) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  // Scatter into the receive WQE's SGEs.
  if (!m.sge_dma(ctx->sge, ctx->num_sge, ctx->length,
                 const_cast<uint8_t*>(data.data()), data.size(), ctx->pdn,
                 true)) {
    ctx->status = RHN_CQE_LOC_PROT_ERR;
    refuse(m, r, RHN_SYN_DMA);
    m.complete_receive(*ctx, r.node, r.src_qpn, ctx->cqe_op, 0, 0);
    if (ctx != &single) m.rx_free(p, *ctx);
    return;
  }
  ctx->length += static_cast<uint32_t>(data.size());
  if (!r.last) return;
  const bool imm = op.flags & RHN_WOP_F_IMM;
  const bool inv = op.flags & RHN_WOP_F_INV;
  if (inv) {
    // Checked at the first packet; it may have been invalidated since.
    if (MrObj* o = m.invalidatable(op.rkey, r.qp.context, r.qp.pdn, r.qpn))
      m.invalidate(*o);
  }
  m.complete_receive(
      *ctx, r.node, r.src_qpn, ctx->cqe_op,
      imm ? op.imm_data : (inv ? op.rkey : 0),
      static_cast<uint8_t>(
          (imm ? RHN_CQE_F_IMM : 0) | (inv ? RHN_CQE_F_INV : 0) |
          (grh ? RHN_CQE_F_GRH | m.grh_net_flag(r.data.data()) : 0) |
          ((op.flags & RHN_WOP_F_SOLICITED) ? RHN_CQE_F_SOLICITED : 0)));
  if (ctx != &single) m.rx_free(p, *ctx);
}

}  // namespace

extern const OpFamily kSendFamily = {
    .name = "send",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = nullptr,
    .has_room = nullptr,
    .on_request = on_request,
};

}  // namespace rhinet::fw
