// SPDX-License-Identifier: BSD-2-Clause
// RDMA WRITE (PUSH), WRITE with immediate, and READ (PULL), by rkey + VA or
// by area ID + offset: the requester's packets, the responder's placement
// and READ streams, and the READ data arriving back at the requester.
#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"

namespace rhinet::fw {
namespace {

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  // Datagrams are SENDs only; UC has no READ (nothing comes back).
  if (qp.type == RHN_QP_UD ||
      (qp.type == RHN_QP_UC && w.opcode == RHN_OP_READ)) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // A signal is counted per area of an endpoint: a PUSH by
  // area between endpoints.
  if (w.has_grh || ((w.flags & RHN_WQE_F_SIGNAL_REMOTE) &&
                    (w.opcode != RHN_OP_WRITE || !(w.flags & RHN_WQE_F_AREA) ||
                     qp.type != RHN_QP_ENDPOINT))) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (w.xfer_mode != RHN_XFER_BASIC) return partial::check(m, qp, w, syndrome);
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  if (w.opcode == RHN_OP_READ) {
    if (w.xfer_mode != RHN_XFER_BASIC)
      return partial::build_read_request(m, qp, w, offset, op, out);
    // Where the data lands is pinned before it is asked for.
    if (!pin_local_targets(m, qp, w)) return false;
    // The whole request in one packet; the data comes back as a stream.
    op.imm_data = RHN_XFER_BASIC;
    out.last = true;
    return true;
  }
  if (w.xfer_mode != RHN_XFER_BASIC)
    return partial::build_write(m, qp, w, offset, op, out);
  const auto chunk =
      static_cast<uint32_t>(min<uint64_t>(RHN_WIRE_MTU, w.length - offset));
  if (chunk && !gather(m, qp, w, offset, out.payload, chunk)) return false;
  out.len = out.advance = chunk;
  out.last = offset + chunk >= w.length;
  return true;
}

}  // namespace

// A signal for the target process: a CQE on the endpoint's receive CQ
// (which wakes it through the completion event if it sleeps), no receive
// WQE taken. Also for a multicast's members (ops/mcast_switch).
void deliver_signal(Impl& m, const Request& r) {
  rhn_cqe c{};
  c.qpn = r.qpn;
  c.byte_len = r.op.msg_len;
  c.imm_data = r.op.imm_data;
  c.src_qpn = r.src_qpn;
  c.src_node = r.node;
  c.vendor_err = r.op.rkey;
  c.opcode = RHN_CQE_OP_SIGNAL;
  c.status = RHN_CQE_SUCCESS;
  m.counters.add(RHN_CNT_SIGNALS);
  m.cq_push(r.qp.recv_cqn, c, true);
}

namespace {

// The target of a WRITE or READ request whose payload said it spans
// `extent` bytes (`shape`: whether that payload made sense), checked for
// `right`; false once the request was refused and counted.
bool target_of(Impl& m, Request& r, rhn_syndrome shape, uint32_t right,
               uint64_t extent, uint64_t* va, uint32_t* key,
               uint32_t* mr_index) {
  if (shape != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    refuse(m, r, shape);
    return false;
  }
  const rhn_syndrome syn =
      resolve_target(m, r, right, extent, va, key, mr_index);
  // Pages pinned on demand that are not yet: refused until they are.
  if (syn == RHN_SYN_NONE)
    return pin_check(m, r, *mr_index, *va, extent) == PinCheck::kPresent;
  m.counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
  refuse(m, r, syn);
  return false;
}

void write_request(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  if (!r.first && m.nak_remembered(r.peer, r.src, op.msn)) return;  // NAKed
  uint64_t va;
  uint32_t key, mr_index;
  // A packet of strided blocks reaches what they span (ops/partial).
  uint64_t extent;
  const rhn_syndrome shape = partial::write_extent(op, r.data, &extent);
  // The first packet of a plain or bitmap WRITE answers for the rest of
  // the message (as IB's RETH does): one reaching past the target fails
  // before a byte lands, and pages still to be pinned are asked for at
  // once.
  if (r.first && shape == RHN_SYN_NONE && op.msg_len > op.msg_offset &&
      !(op.flags & (RHN_WOP_F_RUNS | RHN_WOP_F_STRIDED)))
    extent = max<uint64_t>(extent, op.msg_len - op.msg_offset);
  if (!target_of(m, r, shape, RHN_ACCESS_REMOTE_WRITE, extent, &va, &key,
                 &mr_index))
    return;
  if (!partial::place_write(m, op, r.data, mr_index, va)) {
    refuse(m, r, RHN_SYN_DMA);
    return;
  }
  if (r.last && (op.flags & RHN_WOP_F_SIGNAL)) {
    if ((op.flags & RHN_WOP_F_AREA) && r.qp.type == RHN_QP_ENDPOINT)
      deliver_signal(m, r);
    else
      m.counters.add(RHN_CNT_MALFORMED_PACKETS);  // the requester checks
  }
  // The whole message is in place (a message's packets arrive in order):
  // a watch of its area fires now, after its signal.
  if (r.last) area_landed(m, r, op.msg_len);
  if (!r.last || !(op.flags & RHN_WOP_F_IMM)) return;
  // The immediate takes a receive WQE (no data lands there).
  RxContext ctx;
  if (!m.take_recv_wqe(r.qp, r.qpn, ctx)) {
    not_ready(m, r, RHN_SYN_RNR);
    return;
  }
  ctx.length = op.msg_len;
  m.complete_receive(
      ctx, r.node, r.src_qpn, RHN_CQE_OP_RECV_WRITE_IMM, op.imm_data,
      static_cast<uint8_t>(
          RHN_CQE_F_IMM |
          ((op.flags & RHN_WOP_F_SOLICITED) ? RHN_CQE_F_SOLICITED : 0)));
}

void read_request(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  uint64_t va;
  uint32_t key, mr_index;
  // A partial READ reaches what its selection spans (ops/partial).
  uint64_t extent;
  const rhn_syndrome shape = partial::read_extent(op, r.data, &extent);
  if (!target_of(m, r, shape, RHN_ACCESS_REMOTE_READ, extent, &va, &key,
                 &mr_index))
    return;
  // A READ holds a responder READ context (and a bitmap PULL a bitmap)
  // until its stream is sent. With none free it is refused BUSY and asked
  // again later, as a receive without a context is. Refusing it at the
  // channel instead (as if lost) stalled the peer's whole stream: the ACKs
  // that would free this NIC's answers wait for the refused packet, so no
  // context came free and the requester declared the node dead.
  if (m.free_responder_reads.empty() ||
      (partial::read_needs_bitmap(op) && m.free_read_bitmaps.empty())) {
    not_ready(m, r, RHN_SYN_BUSY);
    return;
  }
  // Queue the data stream back to the requester. It keeps the key, PD and
  // right, not the region: each chunk is checked again (stream_reads).
  ResponderRead rr;
  rr.qp_type = r.qp.type;
  rr.node = r.node;
  rr.requester_src = r.src;
  rr.responder_qpn = r.qpn;
  rr.responder_gen = r.qp.gen;
  rr.msn = op.msn;
  rr.key = key;
  rr.pdn = r.qp.pdn;
  rr.va = va;
  rr.length = op.msg_len;
  partial::start_read(m, op, r.data, rr);
  queue_stream(m, r.peer, rr);
}

void on_request(Impl& m, Request& r) {
  if (r.qp.type == RHN_QP_UD) {
    m.counters.add(RHN_CNT_UD_DROPS);
    return;
  }
  if (r.qp.type == RHN_QP_UC && r.op.opcode != RHN_WOP_WRITE) {
    m.counters.add(RHN_CNT_UC_DROPS);
    return;
  }
  if (r.op.opcode == RHN_WOP_WRITE)
    write_request(m, r);
  else
    read_request(m, r);
}

// READ data for one of our READs: into the local SGEs kept since the
// request; the last packet completes it.
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  if (pkt.op.opcode != RHN_WOP_READ_RESP) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  const bool placed =
      m.read_ctxs[e.read_ctx].xfer_mode == RHN_XFER_BASIC
          ? scatter_answer(m, qpn, e, pkt.op.msg_offset, pkt.payload)
          : partial::place_answer(m, qpn, e, pkt.op.msg_offset, pkt.payload);
  if (!placed) return;
  if (pkt.op.flags & RHN_WOP_F_LAST)
    m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

}  // namespace

bool Engine::Impl::stream_reads(Peer& p) {
  bool did = false;
  for (uint32_t n = 0; n < 16 && p.reads_head != kNone; n++) {
    const uint32_t r_index = p.reads_head;
    ResponderRead& r = responder_reads[r_index];
    // READ data takes send memory like a request (the reserve is kept for
    // NAKs and atomic replies) but is charged to no context.
    if (!room_for_request(p)) return did;
    did = true;
    rhn_op_hdr req{};  // the request, as far as an answer needs it
    req.qp_type = r.qp_type;
    req.dst_qpn = r.responder_qpn;
    req.src_qpn = r.requester_src;
    req.msn = r.msn;
    const QpObj& qp = qps[r.responder_qpn];
    // An isend's data (ops/tag) goes as requests to the receive the CTS
    // named; the key is the sender's own lkey. A TM SRQ's rendezvous data
    // (ops/tm) answers no message of the QP: the key is an rkey, as for a
    // READ. Both end on a failure with an empty last packet naming the
    // syndrome instead of a NAK.
    const bool tag = r.wop == RHN_WOP_TAG_DATA || r.wop == RHN_WOP_TM_DATA;
    const bool own_key = r.wop == RHN_WOP_TAG_DATA;
    rhn_op_hdr op{};
    op.opcode = r.wop;
    op.qp_type = r.qp_type;
    op.dst_qpn = r.requester_src;
    op.src_qpn = r.responder_qpn;
    if (tag)
      op.src_qpn |= uint32_t{qp.incarnation} << RHN_WIRE_INCARNATION_SHIFT;
    op.rkey = r.stream_key;
    op.msn = r.msn;
    op.msg_len = r.length;
    if (r.cancelled || !qp.valid || qp.gen != r.responder_gen) {
      if (tag) {
        op.flags = RHN_WOP_F_LAST;
        op.syndrome = RHN_SYN_FLUSHED;
        send_data(p, op, {}, false, kNone, 0, false);
      } else {
        respond(p, RHN_WOP_NAK, RHN_SYN_FLUSHED, req, {});
      }
      free_read(p, r_index);
      continue;
    }
    uint64_t at;
    uint32_t chunk, next;
    rhn_syndrome syn = partial::read_piece(*this, r, &at, &chunk, &next);
    uint32_t mr_index = 0;
    if (syn == RHN_SYN_NONE && chunk)
      syn = own_key
                ? check_key(r.key, kNone, r.pdn, 0, r.va + at, chunk, &mr_index)
                : check_key(r.key, kNone, r.pdn, RHN_ACCESS_REMOTE_READ,
                            r.va + at, chunk, &mr_index, r.responder_qpn);
    const uint32_t slot = begin_data(kNone);
    if (syn == RHN_SYN_NONE && chunk &&
        !mr_dma(mr_index, r.va + at, slots[slot].frame + RHN_DATA_HDR_LEN,
                chunk, false))
      syn = RHN_SYN_DMA;
    if (syn != RHN_SYN_NONE) {
      // The region went away (or changed) under the READ: the rest is
      // refused, and not one byte of whatever is there now leaves.
      return_slot(slot);
      if (tag) {
        counters.add(own_key ? RHN_CNT_LOCAL_PROT_ERRORS
                             : RHN_CNT_REMOTE_ACCESS_ERRORS);
        op.flags = RHN_WOP_F_LAST;
        op.syndrome = static_cast<uint8_t>(syn);
        send_data(p, op, {}, false, kNone, 0, false);
      } else {
        counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
        respond(p, RHN_WOP_NAK, static_cast<uint8_t>(syn), req, {});
      }
      free_read(p, r_index);
      continue;
    }
    // A run of a partial READ: only the message's last run ends it.
    op.flags = (r.sent == 0 && r.msg_offset == 0 ? RHN_WOP_F_FIRST : 0) |
               (r.final && next >= r.length ? RHN_WOP_F_LAST : 0) |
               (own_key && partial::sparse(r) ? RHN_WOP_F_SPARSE : 0);
    op.msg_offset = r.msg_offset + r.sent;
    commit_data(p, slot, op, chunk, false, kNone, 0, false);
    r.sent = next;
    if (r.sent >= r.length) free_read(p, r_index);
  }
  return did;
}

extern const OpFamily kRdmaFamily = {
    .name = "rdma",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = nullptr,
    .on_request = on_request,
};

}  // namespace rhinet::fw
