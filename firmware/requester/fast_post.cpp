// SPDX-License-Identifier: BSD-2-Clause
// The fast path of the most common posted WQE: an RC WRITE or SEND of one
// packet (one SGE or inline data, no GRH, area, status word, remote
// signal, fence behind a READ or immediate), from its decode to its frame
// on the wire in one function. It makes the checks start_message and the
// families make for such a WQE, all before anything changes; a WQE that
// fails one (a bad key, a source in an on-demand MR, no room on the
// channel, a peer beyond the fabric, anything else) goes on through
// start_message untouched, which does what it always did (the error CQE
// included; for an on-demand source, the wait for its host to pin). What is
// done here is what the generic path does, in the same order where order shows:
// the in-flight entry, the send slot, the payload's DMA (and its failure), the
// packet.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "transport/channel_inline.h"

namespace rhinet::fw {

namespace {

// WQE flags the fast path takes; any other goes the generic way.
constexpr uint8_t kFastFlags =
    RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED | RHN_WQE_F_INLINE;

}  // namespace

bool Engine::Impl::fast_post(QpObj& qp, uint32_t qpn, uint32_t nslots) {
  const DecodedWqe& w = qp.tx_wqe;
  // decode_plain_wqe took a one-slot WRITE or SEND without GRH; one
  // packet, nothing but the flags above, on RC (where both families'
  // checks pass such a WQE).
  if (qp.type != RHN_QP_RC || (w.flags & ~kFastFlags) ||
      w.length > RHN_WIRE_MTU)
    return false;
  const OpInfo& info = op_info(w.opcode);
  const OpFamily* family = info.family;
  if (!family || info.has_imm || info.awaits_response || info.uses_read_ctx ||
      family->send_packet || family->execute_local ||
      family->send_unsequenced || family->next_destination)
    return false;
  uint8_t syndrome = RHN_SYN_NONE;
  if (family->check(*this, qp, w, &syndrome) != RHN_CQE_SUCCESS) return false;
  // The local key, checked once: the payload's DMA uses the region found.
  uint32_t mr_index = kNone;
  const bool in = w.flags & RHN_WQE_F_INLINE;
  const rhn_sge sge = in ? rhn_sge{} : wqe_sge(qp.tx_raw, 0);
  if (!in && w.length) {
    if (qp.tx_key.holds(sge.lkey, mr_epoch, sge.addr, sge.length)) {
      mr_index = qp.tx_key.mr_index;
    } else if (check_key_remember(qp.tx_key, sge.lkey, qp.pdn, 0, sge.addr,
                                  sge.length, &mr_index,
                                  kNone) != RHN_SYN_NONE ||
               mrs[mr_index].on_demand) {
      // An on-demand source (never kept) goes the core's way, which waits
      // for its host to pin a page that is not, where this path would
      // have consumed the WQE and failed it.
      return false;
    }
  }
  if (qp.dest_node >= cfg.max_nodes) return false;  // beyond the fabric
  Peer& p = peers[qp.dest_node];
  if (!can_send_now(p, qp.context)) return false;

  const uint32_t idx = qp.inflight_tail++;
  const auto len = static_cast<uint32_t>(w.length);
  const uint32_t msn = qp.msn_next++;

  // The packet: its payload into a send slot and its header from the
  // QP's template; or the header, and the transmit assembler gathers the
  // payload behind it and sends the frame.
  const uint32_t slot = take_slot(qp.context);
  SendSlot& s = slots[slot];
  TxPatch x;
  x.wire_op = info.wire_op;
  x.op_flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST |
               ((w.flags & RHN_WQE_F_SOLICITED) ? RHN_WOP_F_SOLICITED : 0);
  x.ack_req = (w.flags & RHN_WQE_F_SIGNALED) ||
              p.unacked_count + 1 >= cfg.channel_window / 2;
  x.msn = msn;
  x.rkey = w.remote_key;
  x.imm = w.imm_data;
  x.remote_addr = w.remote_addr;
  x.len = len;
  const bool gather = !in && len && cfg.tx_assembler && cfg.mac_crc &&
                      cfg.dma_region && mrs[mr_index].levels &&
                      !mrs[mr_index].on_twin;
  bool ok = true;
  if (in)
    copy_small(s.frame + RHN_DATA_HDR_LEN, wqe_inline(qp.tx_raw, w).data(),
               len);
  else if (len && !gather)
    ok = key_dma(qp.tx_key, mr_index, sge.addr, s.frame + RHN_DATA_HDR_LEN, len,
                 false);
  if (ok) write_request_header(p, s.frame, tx_template(qp, qpn), x);
  if (gather) {
    // The region as the key cache keeps it, or built from the MR.
    const DmaRegion* kept = qp.tx_key.region_of(mr_index, mr_epoch);
    const DmaRegion region = kept ? DmaRegion{} : region_of(mrs[mr_index]);
    TxGather g;
    g.frame = s.frame;
    g.hdr_len = RHN_DATA_HDR_LEN;
    g.len = len;
    g.region = kept ? kept : &region;
    g.va = sge.addr;
    // A frame to this node or with the link down stays in its slot only
    // (transmit turns it around or drops it, as for any other).
    g.send = qp.dest_node != cfg.node_id && link_up.load(MemOrder::kRelaxed);
    ok = wire.assemble(bus, g);
    if (!ok) counters.add(RHN_CNT_DMA_ERRORS);
  }
  // The in-flight entry: what the ACK, a NAK, a resend and the CQE read,
  // each word stored once (no blank entry copied first); the rest as a
  // blank Inflight has it. Stored once the frame is on its way (nothing
  // before reads it): the assembler reads the payload meanwhile.
  Inflight& e = entry(qpn, idx);
  e = Inflight{
      .slot = qp.sq_fetch,
      .slots = static_cast<uint8_t>(nslots),
      .opcode = w.opcode,
      .wqe_flags = w.flags,
      // Sent: waits for its ACK (a failure below finishes it).
      .state = MsgState::kAwaitAck,
      .peer = qp.dest_node,
      .msn = msn,
      .last_serial = p.tx_next,  // data_sent takes it
      .length = len,
      .status_addr = w.status_addr,
      .status_lkey = w.status_lkey,
      .dst_qpn = qp.dest_qpn,
      .quiet = !(w.flags & RHN_WQE_F_SIGNALED) && !family->message_done,
      .fanout_imm = w.imm_data};
  qp.tx_wqe.keep_twin = true;
  qp.sq_fetch += nslots;
  qp.fanout_next = 0;
  qp.tx_entry = idx;
  qp.tx_peer = qp.dest_node;
  qp.tx_dst_qpn = qp.dest_qpn;

  if (!ok) {
    qp.tx_offset = 0;
    return_slot(slot);
    counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    return true;
  }
  s.len = static_cast<uint16_t>(RHN_DATA_HDR_LEN + len);
  data_sent(p, slot, qpn, qp.gen, e.quiet ? kCompletesQuiet : kCompletes);
  if (gather)
    tx_account(node_of(p), {s.frame, s.len});
  else
    transmit(node_of(p), {s.frame, s.len});
  qp.tx_offset = len;
  qp.tx_active = false;
  return true;
}

const TxTemplate& Engine::Impl::rebuild_template(const QpObj& qp,
                                                 uint32_t qpn) {
  TxTemplate& t = tx_templates[qpn];
  t.gen = qp.gen;
  t.dest_node = qp.dest_node;
  t.dest_qpn = qp.dest_qpn;
  t.magic_type = RHN_WIRE_MAGIC | uint32_t{RHN_WIRE_VERSION} << 16 |
                 uint32_t{RHN_PKT_DATA} << 24;
  t.nodes = qp.dest_node | uint32_t{cfg.node_id} << 16;
  t.op_base = uint32_t{qp.type} << 24;
  t.dst_qpn = qp.dest_qpn;
  t.src_qpn = qpn | uint32_t{qp.incarnation} << RHN_WIRE_INCARNATION_SHIFT;
  return t;
}

}  // namespace rhinet::fw
