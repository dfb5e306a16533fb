// SPDX-License-Identifier: BSD-2-Clause
// The requester: fetches WQEs from send queues, checks what every
// operation shares (local keys, status word, destination), lets the
// operation's family (ops/) check the rest and build each packet, cuts
// messages into packets for the channel and completes WQEs in order when
// their ACK or answer arrives.
#include "core/crc32c.h"
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "ops/partial/partial.h"
#include "ops/pindown/pindown.h"
#include "ops/trigger/trigger.h"

namespace rhinet::fw {
namespace {

bool local_error(uint8_t status) {
  return status == RHN_CQE_LOC_LEN_ERR || status == RHN_CQE_LOC_QP_OP_ERR ||
         status == RHN_CQE_LOC_PROT_ERR || status == RHN_CQE_LOC_ACCESS_ERR;
}

}  // namespace

uint8_t status_of_nak(uint8_t syndrome) {
  switch (syndrome) {
    case RHN_SYN_BAD_KEY:
    case RHN_SYN_PD_MISMATCH:
    case RHN_SYN_ACCESS_RIGHTS:
    case RHN_SYN_BOUNDS:
    case RHN_SYN_BAD_AREA:
    case RHN_SYN_BAD_GROUP:
    case RHN_SYN_NOT_PINNED:
    case RHN_SYN_BAD_REMOTE_TRIGGER:  // no such counter there, or its key
      return RHN_CQE_REM_ACCESS_ERR;
    case RHN_SYN_ALIGNMENT:  // a misaligned atomic is an invalid request
    case RHN_SYN_BAD_QP:
    case RHN_SYN_BAD_OPCODE:
    case RHN_SYN_LENGTH:
    case RHN_SYN_BAD_QKEY:
    case RHN_SYN_BAD_WINDOW:      // a SEND_INV naming no window it may unbind
    case RHN_SYN_NOT_HELD:        // an UNLOCK not held, a BARRIER's count
    case RHN_SYN_NOT_SUBSCRIBED:  // an UNSUBSCRIBE from a non-member
    case RHN_SYN_XRC_SRQ:         // no XRC SRQ of the target's domain
      return RHN_CQE_REM_INV_REQ_ERR;
    default:
      return RHN_CQE_REM_OP_ERR;
  }
}

bool Engine::Impl::requester_run(uint32_t budget) {
  bool did = false;
  const uint32_t n = ready.size();
  for (uint32_t i = 0; i < n && budget; i++, budget--) {
    const uint32_t qpn = ready.front();
    ready.pop();
    qps[qpn].in_ready = false;
    if (qps[qpn].valid) did |= requester_step(qpn, 16);
  }
  return did;
}

bool Engine::Impl::requester_step(uint32_t qpn, uint32_t budget) {
  QpObj& qp = qps[qpn];
  if (qp.state == RHN_QPS_ERR) {
    if (!qp.flushing) return false;
    flush_qp(qpn);
    return true;
  }
  if (qp.state != RHN_QPS_RTS && qp.state != RHN_QPS_SQD) return false;
  if (qp.has_unanswered && expire_unanswered(qpn)) return true;
  // The transmit block first: the plain WRITEs it takes count against
  // the budget as the core's own would.
  uint32_t n = tx_write ? txw_run(qp, qpn, budget) : 0;
  bool did = n != 0;
  if (qp.state == RHN_QPS_ERR) return did;
  for (; n < budget; n++) {
    if (!qp.tx_active) {
      if (qp.state == RHN_QPS_SQD) return did;  // drained: no new WQEs
      if (!start_message(qp, qpn)) return did;
      did = true;
      // A WQE that failed here took the QP to the error state (and
      // flushed what was posted): nothing posted after that may run.
      if (qp.state == RHN_QPS_ERR) return did;
      if (!qp.tx_active) continue;  // completed without packets
    }
    if (send_packet(qp, qpn) == TxResult::kBlocked) return did;
    did = true;
    if (qp.state == RHN_QPS_ERR) return did;
  }
  schedule(qpn);  // budget used up: let other QPs run, then continue
  return did;
}

bool Engine::Impl::fetch_wqe(QpObj& qp, uint32_t slot, RawWqe& raw,
                             uint32_t& nslots) {
  if (qp.prefetched_slot == slot && &raw == &qp.tx_raw) {
    qp.prefetched_slot = kNone;
    nslots = wqe_slot_count(raw.bytes);
    return true;
  }
  qp.prefetched_slot = kNone;
  const uint32_t depth = 1u << qp.sq_log;
  const uint32_t first = slot & (depth - 1);
  counters.add_bus(RHN_CNT_SQ_WQE_FETCHES, 1);
  counters.add_bus(RHN_CNT_SQ_WQE_FETCH_BYTES, RHN_SQ_SLOT_SIZE);
  if (!queue_dma(qp.sq_ring_key, qp.sq_ring, uint64_t{first} * RHN_SQ_SLOT_SIZE,
                 raw.bytes, RHN_SQ_SLOT_SIZE, false))
    return false;
  nslots = wqe_slot_count(raw.bytes);
  return nslots <= 1 || fetch_rest(qp, first, raw, nslots);
}

bool Engine::Impl::fetch_rest(QpObj& qp, uint32_t first, RawWqe& raw,
                              uint32_t nslots) {
  // The rest, in up to two pieces when the WQE wraps around the ring.
  const uint32_t depth = 1u << qp.sq_log;
  const uint32_t rest = nslots - 1;
  const uint32_t before_wrap = min(rest, depth - first - 1);
  counters.add_bus(RHN_CNT_SQ_WQE_FETCH_BYTES,
                   uint64_t{rest} * RHN_SQ_SLOT_SIZE);
  if (before_wrap &&
      !queue_dma(qp.sq_ring_key, qp.sq_ring,
                 uint64_t{first + 1} * RHN_SQ_SLOT_SIZE,
                 raw.bytes + RHN_SQ_SLOT_SIZE,
                 uint64_t{before_wrap} * RHN_SQ_SLOT_SIZE, false))
    return false;
  if (rest > before_wrap &&
      !queue_dma(qp.sq_ring_key, qp.sq_ring, 0,
                 raw.bytes + (1 + before_wrap) * RHN_SQ_SLOT_SIZE,
                 uint64_t{rest - before_wrap} * RHN_SQ_SLOT_SIZE, false))
    return false;
  return true;
}

bool Engine::Impl::refetch_wqe(QpObj& qp, const Inflight& e, RawWqe& raw,
                               uint32_t& nslots) {
  if (e.trig != kNoTrigger) {
    TriggerIntake t;
    trigger_load(*this, e.trig, raw, nslots, t);
    return true;
  }
  if (!fetch_wqe(qp, e.slot, raw, nslots) || nslots != e.slots) return false;
  return !wqe_has_trigger(raw) || trigger_strip(raw, nslots);
}

void Engine::Impl::park_consumed(QpObj& qp, uint32_t qpn, uint32_t consumed) {
  Inflight& e = entry(qpn, qp.inflight_tail++);
  e = Inflight{};
  e.slot = qp.sq_fetch;
  e.slots = static_cast<uint8_t>(consumed);
  e.opcode = RHN_OP_NOP;
  qp.sq_fetch += consumed;
  finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

bool Engine::Impl::start_message(QpObj& qp, uint32_t qpn) {
  // RNR resends go first, in order, before any new WQE.
  if (qp.has_resend) {
    uint32_t idx = qp.inflight_head;
    while (idx != qp.inflight_tail &&
           entry(qpn, idx).state != MsgState::kResendPending)
      idx++;
    if (idx == qp.inflight_tail) {
      qp.has_resend = false;
    } else {
      Inflight& e = entry(qpn, idx);
      if (e.resend_at > now) {
        wake_later(qpn, e.resend_at);
        return false;
      }
      uint32_t nslots = 0;
      if (!refetch_wqe(qp, e, qp.tx_raw, nslots) ||
          decode_send_wqe(qp.tx_raw, nslots, 1u << 31, qp.tx_wqe) !=
              RHN_SYN_NONE) {
        // The software overwrote a WQE it had not got back.
        counters.add(RHN_CNT_BAD_WQES);
        finish_entry(qpn, e, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
        return true;
      }
      e.state = MsgState::kSending;
      qp.tx_wqe.keep_twin = true;  // the twin moves at the WQE's completion
      if (op_info(e.opcode).family && op_info(e.opcode).family->fanout_imm)
        qp.tx_wqe.imm_data = e.fanout_imm;
      qp.tx_active = true;
      qp.tx_entry = idx;
      qp.tx_offset = 0;
      qp.tx_peer = e.peer;
      qp.tx_dst_qpn = e.dst_qpn;
      return true;
    }
  }

  if (qp.inflight_tail - qp.inflight_head >= cfg.max_inflight_per_qp)
    return false;  // woken when the head completes

  // A fired triggered WQE (ops/trigger) goes before the ring's next one;
  // it comes from the trigger table and frees no SQ slot.
  TriggerIntake intake;
  const uint32_t fired = trigger_fired(*this, qpn);
  uint32_t slot = qp.sq_fetch;
  uint32_t nslots = 0;
  uint32_t consumed = 0;  // SQ slots the WQE takes from the ring
  bool fetched = true;
  uint32_t posted = 0;
  if (fired != kNone) {
    trigger_load(*this, fired, qp.tx_raw, nslots, intake);
    slot = intake.slot;
    qp.prefetched_slot = kNone;  // tx_raw holds no slot of the ring now
  } else {
    if (qp.sq_fetch == qp.sq_producer) {
      rhn_queue_record rec;
      counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
      if (!queue_dma(qp.sq_record_key, qp.sq_record, 0, &rec, sizeof(rec),
                     false)) {
        qp_to_error(qpn);
        return true;
      }
      qp.sq_producer = rec.producer_index;
      if (qp.mp) mp_record_read(qp);
      if (qp.sq_fetch == qp.sq_producer && !sq_idle_found_work(qp))
        return false;
    }
    const uint32_t depth = 1u << qp.sq_log;
    posted = qp.sq_producer - qp.sq_fetch;
    if (qp.sq_producer - qp.sq_complete > depth) {
      // A producer index beyond the ring: the software broke the contract.
      counters.add(RHN_CNT_BAD_WQES);
      qp.sq_producer = qp.sq_fetch;
      qp_to_error(qpn);
      return true;
    }
    fetched = fetch_wqe(qp, qp.sq_fetch, qp.tx_raw, nslots);
    consumed = nslots;
  }
  bool decoded = false;
  DecodedWqe& w = qp.tx_wqe;
  uint8_t result = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
  // Trigger flags: the one place every opcode passes between its fetch
  // and its decode. The trigger slot comes off here (the WQE is then
  // fetched again from the ring, not kept prefetched).
  const bool had_trigger = fired == kNone && fetched && nslots != 0 &&
                           nslots <= posted && wqe_has_trigger(qp.tx_raw);
  if (had_trigger) {
    intake = trigger_intake(*this, qp, qpn, slot, qp.tx_raw, nslots);
    if (intake.verdict == TriggerIntake::kParked) {
      park_consumed(qp, qpn, consumed);
      return true;
    }
  }
  if (!fetched) {
    result = RHN_CQE_LOC_QP_OP_ERR;
    syndrome = RHN_SYN_DMA;
    nslots = consumed = 1;
  } else if (fired == kNone && (nslots == 0 || nslots > posted)) {
    counters.add(RHN_CNT_BAD_WQES);
    result = RHN_CQE_LOC_QP_OP_ERR;
    syndrome = RHN_SYN_BAD_WQE;
    nslots = consumed = 1;
  } else if (intake.verdict == TriggerIntake::kRefused) {
    result = intake.status;
    syndrome = intake.syndrome;
  } else if (cfg.fast_paths && fired == kNone && !had_trigger &&
             decode_plain_wqe(qp.tx_raw, nslots, 1u << 31, w)) {
    if (fast_post(qp, qpn, nslots)) return true;
    decoded = true;
  } else {
    const rhn_syndrome s = decode_send_wqe(qp.tx_raw, nslots, 1u << 31, w);
    decoded = s == RHN_SYN_NONE;
    if (s != RHN_SYN_NONE) {
      counters.add(RHN_CNT_BAD_WQES);
      result =
          s == RHN_SYN_LENGTH ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_LOC_QP_OP_ERR;
      syndrome = s;
    }
  }
  const OpInfo& info = op_info(w.opcode);
  const bool reads = result == RHN_CQE_SUCCESS && info.uses_read_ctx;
  if (result == RHN_CQE_SUCCESS) {
    // Waiting for earlier READ/atomics keeps the WQE fetched.
    if ((reads && qp.outstanding_reads >= qp.max_rd_atomic) ||
        ((w.flags & RHN_WQE_F_FENCE) && qp.outstanding_reads > 0) ||
        (reads && free_read_ctxs.empty())) {
      if (fired == kNone && !had_trigger) qp.prefetched_slot = qp.sq_fetch;
      if (reads && free_read_ctxs.empty()) wake_later(qpn, now + 10'000);
      return false;
    }
  }
  uint16_t dst_node = connected_qp(qp.type) ? qp.dest_node : w.dst_node;
  uint32_t dst_qpn = connected_qp(qp.type) ? qp.dest_qpn : w.dst_qpn;
  const OpFamily* family = info.family;
  const bool unsequenced = family && family->send_unsequenced;
  const bool local = family && family->execute_local;
  const bool own_stream = family && family->send_packet;
  if (result == RHN_CQE_SUCCESS && w.opcode != RHN_OP_NOP) {
    if (!family) {
      result = RHN_CQE_LOC_QP_OP_ERR;
      syndrome = RHN_SYN_BAD_OPCODE;
    } else if ((qp.type == RHN_QP_RAW_ETH && !unsequenced) ||
               qp.type == RHN_QP_XRC_RECV ||
               (qp.type == RHN_QP_XRC_SEND && w.opcode != RHN_OP_SEND &&
                w.opcode != RHN_OP_SEND_IMM)) {
      // The raw-frame QP carries raw frames and nothing else; an XRC
      // initiator SENDs only (queues.md, "XRC"), a target sends nothing.
      result = RHN_CQE_LOC_QP_OP_ERR;
      syndrome = RHN_SYN_BAD_OPCODE;
    } else {
      result = family->check(*this, qp, w, &syndrome);
    }
    // An area is reached only within a group the context is a member of
    // (Documentation/hardware/ownership.md: groups); the target checks its side
    // too.
    if (result == RHN_CQE_SUCCESS && (w.flags & RHN_WQE_F_AREA) &&
        !in_group(qp.context, RHN_AREA_KEY_GROUP(w.remote_key))) {
      counters.add(RHN_CNT_GROUP_VIOLATIONS);
      result = RHN_CQE_LOC_PROT_ERR;
      syndrome = RHN_SYN_BAD_GROUP;
    }
  } else if (result == RHN_CQE_SUCCESS && w.has_grh) {
    result = RHN_CQE_LOC_QP_OP_ERR;  // a NOP carries no GRH
    syndrome = RHN_SYN_BAD_WQE;
  }
  if (result == RHN_CQE_SUCCESS && !(w.flags & RHN_WQE_F_INLINE)) {
    const uint32_t need = reads ? RHN_ACCESS_LOCAL_WRITE : 0;
    for (uint32_t i = 0; i < w.num_sge && result == RHN_CQE_SUCCESS; i++) {
      const rhn_sge sge = wqe_sge(qp.tx_raw, i);
      if (sge.length == 0) continue;
      const rhn_syndrome s = check_key(sge.lkey, kNone, qp.pdn, need, sge.addr,
                                       sge.length, nullptr);
      if (s != RHN_SYN_NONE) {
        result = RHN_CQE_LOC_PROT_ERR;
        syndrome = s;
      }
    }
  }
  if (result == RHN_CQE_SUCCESS && (w.flags & RHN_WQE_F_STATUS_WORD)) {
    const rhn_syndrome s =
        check_key(w.status_lkey, kNone, qp.pdn, RHN_ACCESS_LOCAL_WRITE,
                  w.status_addr, sizeof(uint64_t), nullptr);
    if (s != RHN_SYN_NONE || (w.status_addr & 7)) {
      result = RHN_CQE_LOC_PROT_ERR;
      syndrome = s != RHN_SYN_NONE ? s : RHN_SYN_ALIGNMENT;
    }
  }
  // A fan-out WQE (a multicast list) is fetched again for each destination: one
  // message each, the WQE's slots going with the last.
  uint8_t fanout = 0;
  bool nobody = false;  // a fan-out with no destination: done at once
  if (result == RHN_CQE_SUCCESS && family && family->next_destination) {
    uint32_t count = 0;
    if (family->next_destination(*this, qp, w, qp.fanout_next, &dst_node,
                                 &dst_qpn, &count)) {
      nobody = count == 0;
      if (!nobody)
        fanout = qp.fanout_next + 1 < count ? kFanoutMember : kFanoutLast;
      w.keep_twin = true;
      if (!nobody && family->fanout_imm)
        w.imm_data = family->fanout_imm(*this, qp, w);
    } else {
      counters.add(RHN_CNT_BAD_WQES);
      result = RHN_CQE_LOC_QP_OP_ERR;
      syndrome = RHN_SYN_BAD_WQE;
    }
  }
  // A UD SEND to a switch group (verbs multicast): unsequenced, no peer.
  const bool to_group = qp.type == RHN_QP_UD && w.opcode != RHN_OP_NOP &&
                        dst_node >= RHN_NODE_MCAST_FIRST;
  Peer* peer = nullptr;
  if (result == RHN_CQE_SUCCESS && w.opcode != RHN_OP_NOP && !unsequenced &&
      !local && !own_stream && !nobody && !to_group) {
    peer = peer_for(dst_node);
    if (!peer) {
      result = RHN_CQE_LOC_QP_OP_ERR;  // beyond the fabric this NIC serves
      syndrome = RHN_SYN_BAD_QP;
    }
  }
  if (result == RHN_CQE_LOC_PROT_ERR) counters.add(RHN_CNT_LOCAL_PROT_ERRORS);

  const uint32_t idx = qp.inflight_tail++;
  Inflight& e = entry(qpn, idx);
  e = Inflight{};
  e.slot = slot;
  e.slots = static_cast<uint8_t>(fired == kNone ? consumed : nslots);
  e.trig = fired == kNone ? kNoTrigger : static_cast<uint16_t>(fired);
  e.has_chain = intake.has_chain;
  e.chain = intake.chain;
  e.opcode = fetched ? qp.tx_raw.bytes[0] : uint8_t{RHN_OP_NOP};
  e.wqe_flags = fetched ? qp.tx_raw.bytes[1] : 0;
  e.msn = qp.msn_next++;
  e.peer = dst_node;
  e.dst_qpn = dst_qpn;
  e.length = static_cast<uint32_t>(w.length);
  e.status_addr = w.status_addr;
  e.status_lkey = w.status_lkey;
  e.state = MsgState::kSending;
  e.fanout = fanout;
  e.fanout_imm = w.imm_data;
  // A DIFF PUSH compares every message it sends with the twin as it was
  // when posted; its last message's completion moves the twin.
  w.keep_twin = true;
  e.diff_twin = result == RHN_CQE_SUCCESS && w.xfer_mode == RHN_XFER_DIFF &&
                fanout != kFanoutMember && !(family && family->diff_twin_stays);
  if (fanout == kFanoutMember) {
    e.slots = 0;  // the WQE stays at sq_fetch for its next destination
    qp.fanout_next++;
  } else {
    if (fired == kNone)
      qp.sq_fetch += consumed;
    else
      trigger_started(*this, qpn);  // its table entry stays until it completes
    qp.fanout_next = 0;
  }
  if (result != RHN_CQE_SUCCESS) {
    // A WQE refused here still reports through its status word when the
    // WQE was well formed and the word is usable (aligned, writable through
    // its key); a malformed WQE's fields are not trusted.
    const bool usable =
        decoded && (w.flags & RHN_WQE_F_STATUS_WORD) && !(w.status_addr & 7) &&
        check_key(w.status_lkey, kNone, qp.pdn, RHN_ACCESS_LOCAL_WRITE,
                  w.status_addr, sizeof(uint64_t), nullptr) == RHN_SYN_NONE;
    if (!usable) e.wqe_flags &= static_cast<uint8_t>(~RHN_WQE_F_STATUS_WORD);
    finish_entry(qpn, e, result, syndrome);
    return true;
  }
  if (w.opcode == RHN_OP_NOP || nobody) {
    finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
    return true;
  }
  if (to_group) {
    // Out on the wire now, complete at once (UD is unreliable).
    uint8_t syn = RHN_SYN_NONE;
    const uint8_t st = modules_send_to_group(*this, qp, qpn, e, w, &syn);
    finish_entry(qpn, e, st, syn);
    return true;
  }
  if (qp.type == RHN_QP_UD && now < peer->dead_until) {
    // A datagram to a node whose channel just failed: it leaves into the
    // void (UD is unacknowledged); the next reliable packet probes again.
    counters.add(RHN_CNT_UD_DROPS);
    finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
    return true;
  }
  if (local) {
    // Done here, in order, with nothing sent.
    uint8_t syn = RHN_SYN_NONE;
    const uint8_t st = family->execute_local(*this, qp, qpn, w, &syn);
    finish_entry(qpn, e, st, syn);
    return true;
  }
  if (unsequenced) {
    // Out on the wire now, complete at once.
    const uint8_t st = family->send_unsequenced(*this, qp, w);
    if (st == RHN_CQE_LOC_PROT_ERR) counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    finish_entry(qpn, e, st,
                 st == RHN_CQE_SUCCESS ? RHN_SYN_NONE : RHN_SYN_DMA);
    return true;
  }
  if (reads) {
    e.read_ctx = free_read_ctxs.front();
    free_read_ctxs.pop();
    ReadCtx& rc = read_ctxs[e.read_ctx];
    rc.used = true;
    rc.num_sge = w.num_sge;
    for (uint32_t i = 0; i < w.num_sge; i++) rc.sge[i] = wqe_sge(qp.tx_raw, i);
    partial::prepare_read(w, rc);
    qp.outstanding_reads++;
  }
  qp.tx_active = true;
  qp.tx_entry = idx;
  qp.tx_offset = 0;
  qp.tx_peer = dst_node;
  qp.tx_dst_qpn = dst_qpn;
  return true;
}

void Engine::Impl::abort_tx(QpObj& qp) { qp.tx_active = false; }

rhn_op_hdr Engine::Impl::request_header(const QpObj& qp, uint32_t qpn,
                                        const Inflight& e) const {
  const DecodedWqe& w = qp.tx_wqe;
  const OpInfo& info = op_info(w.opcode);
  rhn_op_hdr op{};
  op.opcode = info.wire_op;
  op.flags = (qp.tx_offset == 0 ? RHN_WOP_F_FIRST : 0) |
             (info.has_imm ? RHN_WOP_F_IMM : 0) |
             ((w.flags & (RHN_WQE_F_SOLICITED | RHN_WQE_F_SIGNAL_REMOTE))
                  ? RHN_WOP_F_SOLICITED
                  : 0) |
             ((w.flags & RHN_WQE_F_AREA) ? RHN_WOP_F_AREA : 0) |
             ((w.flags & RHN_WQE_F_SIGNAL_REMOTE) ? RHN_WOP_F_SIGNAL : 0);
  op.qp_type = qp.type;
  op.dst_qpn = qp.tx_dst_qpn;
  op.src_qpn = qpn | (uint32_t{qp.incarnation} << RHN_WIRE_INCARNATION_SHIFT);
  op.msn = e.msn;
  op.rkey = w.remote_key;
  op.imm_data = w.imm_data;
  op.remote_addr = w.remote_addr + qp.tx_offset;
  op.msg_len = static_cast<uint32_t>(w.length);
  op.msg_offset = static_cast<uint32_t>(qp.tx_offset);
  return op;
}

Engine::Impl::TxResult Engine::Impl::send_packet(QpObj& qp, uint32_t qpn) {
  const DecodedWqe& w = qp.tx_wqe;
  const OpInfo& info = op_info(w.opcode);
  // A family with a stream of its own (a switch group's) sends there.
  if (info.family->send_packet) return info.family->send_packet(*this, qp, qpn);
  Inflight& e = entry(qpn, qp.tx_entry);
  if (e.state != MsgState::kSending) {
    abort_tx(qp);  // a NAK or a failure ended it meanwhile
    return TxResult::kAborted;
  }
  Peer& p = peers[qp.tx_peer];
  if (!can_send(p, qp.context)) {
    // The peer's window is full (its ACKs wake us), or send memory or
    // this context's share of it is (any freed packet wakes us).
    if (p.unacked_count >= cfg.channel_window) {
      wait_on(qpn, p.waiters);
    } else {
      if (context_over_quota(qp.context))
        counters.add(RHN_CNT_SEND_QUOTA_WAITS);
      wait_on(qpn, slot_waiters);
    }
    return TxResult::kBlocked;
  }
  const bool reads = info.awaits_response;
  const uint32_t slot = begin_data(qp.context);
  // The fields every request has; the family fills in its own and the
  // payload.
  rhn_op_hdr op = request_header(qp, qpn, e);
  PacketOut out{slots[slot].frame + RHN_DATA_HDR_LEN};
  if (!info.family->build_packet(*this, qp, w, qp.tx_offset, op, out)) {
    return_slot(slot);
    // Its source is on demand and not pinned yet: the QP waits, in order.
    if (pins.fault_mr != kNone && pin_local_fault(*this, qpn))
      return TxResult::kBlocked;
    counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    abort_tx(qp);
    finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    return TxResult::kAborted;
  }
  const bool last = out.last;
  if (last) op.flags |= RHN_WOP_F_LAST;
  // UD completes when the datagram has left (IB semantics): nothing waits
  // for the channel's acknowledgement, so a dead node holds nobody up.
  const bool ud = qp.type == RHN_QP_UD;
  const bool wants_ack =
      last && !reads && !ud &&
      ((w.flags & (RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD)) ||
       p.unacked_count + 1 >= cfg.channel_window / 2);
  const uint32_t serial = commit_data(p, slot, op, out.len, wants_ack, qpn,
                                      qp.gen, last && !reads && !ud);
  qp.tx_offset += out.advance;
  if (!last) return TxResult::kSent;
  e.last_serial = serial;
  e.state = reads ? MsgState::kAwaitResponse : MsgState::kAwaitAck;
  qp.tx_active = false;  // the message is out
  if (ud) finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
  return TxResult::kFinished;
}

void Engine::Impl::finish_entry(uint32_t qpn, Inflight& e, uint8_t result,
                                uint8_t syndrome) {
  QpObj& qp = qps[qpn];
  if (e.read_ctx != 0xffff) {
    release_read_ctx(e);
    qp.outstanding_reads--;
  }
  e.state = MsgState::kDone;
  e.status = result;
  e.syndrome = syndrome;
  if (e.quiet) qp.quiet_spoils++;  // maybe inside a run (retire_quiet_range)
  if (result == RHN_CQE_SUCCESS) qp.rnr_count = 0;
  if (const OpFamily* f = op_info(e.opcode).family; f && f->message_done)
    f->message_done(*this, qpn, e);
  complete_in_order(qpn);
}

void Engine::Impl::update_diff_twin(QpObj& qp, const Inflight& e) {
  // The WQE is still in its slots (they are released with this CQE).
  RawWqe raw;
  DecodedWqe w;
  uint32_t nslots = 0;
  if (!refetch_wqe(qp, e, raw, nslots) || nslots == 0 ||
      decode_send_wqe(raw, nslots, 1u << 31, w) != RHN_SYN_NONE ||
      w.xfer_mode != RHN_XFER_DIFF || w.num_sge != 1)
    return;  // overwritten by its software: the twin stays as it was
  TwinObj* t = twin_of(w.xfer.twin, qp.context);
  const uint64_t size = t ? uint64_t{t->pages} * RHN_TWIN_PAGE : 0;
  if (!t || w.xfer.twin_offset > size || w.length > size - w.xfer.twin_offset)
    return;  // freed meanwhile
  const rhn_sge sge = wqe_sge(raw, 0);
  sge_dma(&sge, 1, 0, twin_bytes(*t) + w.xfer.twin_offset, w.length, qp.pdn,
          false);
}

void Engine::Impl::release_read_ctx(Inflight& e) {
  if (e.read_ctx == 0xffff) return;
  read_ctxs[e.read_ctx].used = false;
  free_read_ctxs.push(e.read_ctx);
  e.read_ctx = 0xffff;
}

void Engine::Impl::complete_in_order(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  bool freed = false;
  bool to_error = false;
  while (qp.inflight_head != qp.inflight_tail) {
    Inflight& e = entry(qpn, qp.inflight_head);
    if (e.state != MsgState::kDone) break;
    if (e.fanout == kFanoutMember) {
      // One destination of a fan-out WQE: its WQE's CQE (with the last one)
      // reports the first failure.
      if (e.status != RHN_CQE_SUCCESS && qp.fanout_status == RHN_CQE_SUCCESS) {
        qp.fanout_status = e.status;
        qp.fanout_syndrome = e.syndrome;
      }
      if (local_error(e.status)) to_error = true;
      qp.inflight_head++;
      freed = true;
      continue;
    }
    if (e.fanout == kFanoutLast) {
      if (e.status == RHN_CQE_SUCCESS && qp.fanout_status != RHN_CQE_SUCCESS) {
        e.status = qp.fanout_status;
        e.syndrome = qp.fanout_syndrome;
      }
      qp.fanout_status = RHN_CQE_SUCCESS;
      qp.fanout_syndrome = RHN_SYN_NONE;
    }
    const bool err = e.status != RHN_CQE_SUCCESS;
    if (!err && e.diff_twin) update_diff_twin(qp, e);
    // The word before the CQE: software that sees the CQE sees the word,
    // and may clear it for its next operation without this one's store
    // coming after.
    if (e.wqe_flags & RHN_WQE_F_STATUS_WORD) write_status_word(qp, e);
    if (err || (e.wqe_flags & RHN_WQE_F_SIGNALED)) {
      rhn_cqe c{};
      c.qpn = qpn;
      c.byte_len = e.length;
      c.wqe_index = static_cast<uint16_t>(e.slot);
      c.vendor_err = e.syndrome;
      c.opcode = op_info(e.opcode).cqe_op;
      c.status = e.status;
      c.flags = RHN_CQE_F_SQ;
      c.ext_flags = e.ext_flags;
      if (e.ext_flags & RHN_CQE_X_FOUND) {  // what a probe found
        c.src_node = e.answer_node;
        c.src_qpn = e.answer_qpn;
        c.imm_data = static_cast<uint32_t>(e.answer_tag);
        c.vendor_err = static_cast<uint32_t>(e.answer_tag >> 32);
      }
      cq_push_send(qp.send_cqn, c, e);  // it may join a run
    }
    if (err) {
      counters.add(RHN_CNT_ERROR_CQES);
      // A triggered WQE the NIC had no room for (or a bad counter) leaves
      // its QP going on.
      if ((connected_qp(qp.type) || local_error(e.status)) &&
          !trigger_refusal(e.status, e.syndrome))
        to_error = true;
    } else if (e.has_chain) {
      trigger_chain(*this, qp.context, e.chain);  // the next link may fire
    }
    counters.add(RHN_CNT_COMPLETIONS);
    if (e.trig == kNoTrigger)
      qp.sq_complete = e.slot + e.slots;
    else
      trigger_retire(*this, e.trig);  // it freed no slot of the ring
    qp.inflight_head++;
    freed = true;
  }
  if (to_error && qp.state != RHN_QPS_ERR) qp_to_error(qpn);
  if (freed && qp.state != RHN_QPS_ERR) schedule(qpn);
}

void Engine::Impl::qp_to_error(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  qp.state = RHN_QPS_ERR;
  rxw_clear_target(qpn);
  unlink_waiter(qpn);
  cancel_responder_work(qpn, true);
  abort_tx(qp);
  qp.has_resend = false;
  qp.has_unanswered = false;
  qp.wake_at = 0;
  qp.prefetched_slot = kNone;
  // A fan-out WQE half expanded is flushed whole (it is still at
  // sq_fetch).
  qp.fanout_next = 0;
  // Outstanding messages complete as flushed (late ACKs find them done).
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    Inflight& e = entry(qpn, i);
    if (e.state == MsgState::kDone) continue;
    release_read_ctx(e);
    e.state = MsgState::kDone;
    e.status = RHN_CQE_WR_FLUSH_ERR;
    e.syndrome = RHN_SYN_FLUSHED;
  }
  qp.outstanding_reads = 0;
  complete_in_order(qpn);
  // Posts from now on must be kicked to be flushed. The request is
  // stored before flush_qp reads the record: a post that stored its
  // index too late for that read sees the request (queues.md).
  rq_ask_for_kicks(qp, true);
  if (!qp.sq_asks_kick) sq_ask_for_kicks(qp, true);  // the same for sends
  qp.flushing = true;
  flush_qp(qpn);
}

static_assert(sizeof(rhn_queue_record::nic_consumer) == sizeof(uint32_t) &&
                  RHN_RQ_RECORD_DOORBELL_WANTED > (2u << kMaxWqLog),
              "the request is one bit no RQ index of a ring reaches");

void Engine::Impl::rq_ask_for_kicks(QpObj& qp, bool ask) {
  if (!has_own_rq(qp)) return;
  if (ask && qp.type == RHN_QP_ENDPOINT) return;
  // RESET also gives an endpoint its tag index back: 0, as rq_consumer.
  uint32_t word = ask ? RHN_RQ_RECORD_DOORBELL_WANTED : 0;
  host_dma(qp.rq_record, RHN_OFFSETOF(rhn_queue_record, nic_consumer), &word,
           sizeof(word), true);
}

// Why this is race-free (queues.md, "Sends without doorbells"): we store
// the request, then read producer_index; a provider stores
// producer_index, fences, then loads the request. One of the two loads
// sees the other side's store: our read finds the WQE, or the post kicks.
// While anything is uncompleted on an RC, UC or UD QP we need no request:
// the transport completes it (an ACK, a response, a retry), which
// schedules the QP, whose next start_message reads the record again. Not
// so on an endpoint: an isend, a lock or a barrier completes only when the
// peers' software acts (posts the receive, releases, arrives), and it may
// be waiting for a post behind it, so an endpoint asks whenever it has
// taken all it knew of (Tag.IsendsBehindAnUnmatchedOne*).
// With an event index the word names the slot whose post must kick, so
// no kick needs to take it back; it is stored again only when the NIC
// goes idle at another index.
bool Engine::Impl::sq_idle_found_work(QpObj& qp) {
  if (qp.sq_asks_kick || qp.mp) return false;
  if (qp.inflight_head != qp.inflight_tail && qp.type != RHN_QP_ENDPOINT)
    return false;
  const auto at = static_cast<uint16_t>(qp.sq_producer);
  if (qp.sq_event == SqEvent::kOff) {
    sq_ask_for_kicks(qp, true);
  } else if (qp.sq_event == SqEvent::kUnset || qp.sq_event_at != at) {
    // The same index mod 2^16 names the same slot to the post's rule.
    qp.sq_event = SqEvent::kStored;
    qp.sq_event_at = at;
    uint32_t word = RHN_SQ_RECORD_EVENT | at;
    host_dma(qp.sq_record, RHN_OFFSETOF(rhn_queue_record, nic_consumer), &word,
             sizeof(word), true);
  } else {
    return false;  // asked at this index already: its post kicks
  }
  rhn_queue_record rec;
  counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
  if (!queue_dma(qp.sq_record_key, qp.sq_record, 0, &rec, sizeof(rec), false))
    return false;  // the kick that comes reads it again, and fails there
  qp.sq_producer = rec.producer_index;
  return qp.sq_fetch != qp.sq_producer;
}

static_assert(RHN_SQ_RECORD_DOORBELL_WANTED > (2u << kMaxWqLog),
              "the request is one bit no SQ index of a ring reaches");
static_assert((1u << kMaxWqLog) < RHN_SQ_RECORD_EVENT_INDEX + 1u &&
                  !(RHN_SQ_RECORD_EVENT_INDEX &
                    (RHN_SQ_RECORD_EVENT | RHN_SQ_RECORD_DOORBELL_WANTED)) &&
                  RHN_SQ_RECORD_EVENT != RHN_SQ_RECORD_DOORBELL_WANTED,
              "a post (at most a ring) cannot wrap the 16-bit event index, "
              "and the index shares no bit with the flags");

void Engine::Impl::sq_ask_for_kicks(QpObj& qp, bool ask) {
  if (qp.mp) return;  // its nic_consumer is the count of slots done
  qp.sq_asks_kick = ask;
  uint32_t word = ask ? RHN_SQ_RECORD_DOORBELL_WANTED : 0;
  host_dma(qp.sq_record, RHN_OFFSETOF(rhn_queue_record, nic_consumer), &word,
           sizeof(word), true);
}

void Engine::Impl::flush_qp(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  qp.flushing = false;
  // Every posted WQE completes with WR_FLUSH_ERR, as ibverbs expects.
  rhn_queue_record rec;
  if (host_dma(qp.sq_record, 0, &rec, sizeof(rec), false)) {
    const uint32_t depth = 1u << qp.sq_log;
    uint32_t budget = depth;
    while (qp.sq_fetch != rec.producer_index && budget--) {
      RawWqe raw;
      uint32_t n = 1;
      const uint32_t left = rec.producer_index - qp.sq_fetch;
      if (host_dma(qp.sq_ring,
                   uint64_t{qp.sq_fetch & (depth - 1)} * RHN_SQ_SLOT_SIZE,
                   raw.bytes, RHN_SQ_SLOT_SIZE, false)) {
        n = wqe_slot_count(raw.bytes);
        if (n == 0 || n > left) n = 1;
      }
      rhn_cqe c{};
      c.qpn = qpn;
      c.wqe_index = static_cast<uint16_t>(qp.sq_fetch);
      c.vendor_err = RHN_SYN_FLUSHED;
      c.opcode = op_info(raw.bytes[0]).cqe_op;
      c.status = RHN_CQE_WR_FLUSH_ERR;
      c.flags = RHN_CQE_F_SQ;
      cq_push(qp.send_cqn, c, false);
      counters.add(RHN_CNT_ERROR_CQES);
      qp.sq_fetch += n;
      qp.sq_complete = qp.sq_fetch;
    }
  }
  if (has_own_rq(qp) && host_dma(qp.rq_record, 0, &rec, sizeof(rec), false)) {
    uint32_t budget = 1u << qp.rq_log;
    while (qp.rq_consumer != rec.producer_index && budget--) {
      // Irecvs (ops/tag) complete as such; one the NIC already took out
      // of order has completed or will.
      rhn_recv_wqe w{};
      host_dma(
          qp.rq_ring,
          uint64_t{qp.rq_consumer & ((1u << qp.rq_log) - 1)} * RHN_RQ_WQE_SIZE,
          &w, sizeof(w), false);
      if (w.reserved0 & RHN_RQ_F_TAKEN) {
        qp.rq_consumer++;
        continue;
      }
      rhn_cqe c{};
      c.qpn = qpn;
      c.wqe_index = static_cast<uint16_t>(qp.rq_consumer);
      c.vendor_err = RHN_SYN_FLUSHED;
      c.opcode =
          (w.reserved0 & RHN_RQ_F_TAG) ? RHN_CQE_OP_TAG_RECV : RHN_CQE_OP_RECV;
      c.status = RHN_CQE_WR_FLUSH_ERR;
      cq_push(qp.recv_cqn, c, false);
      counters.add(RHN_CNT_ERROR_CQES);
      qp.rq_consumer++;
    }
    qp.rq_scan = qp.rq_consumer;
  }
  if (qp.mp) mp_store_consumer(qp);  // flushed slots are free too
}

void Engine::Impl::message_acked(uint32_t qpn, uint32_t gen, uint32_t serial,
                                 uint16_t peer) {
  if (qpn == RHN_WIRE_QPN_FIRMWARE) {
    fw_acked(gen);  // a firmware message: its tag rides in gen
    return;
  }
  if (qpn >= qps.size() || !qps[qpn].valid || qps[qpn].gen != gen) return;
  QpObj& qp = qps[qpn];
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    Inflight& e = entry(qpn, i);
    if (e.state == MsgState::kAwaitAck && e.last_serial == serial &&
        e.peer == peer) {
      finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
      return;
    }
  }
}

void Engine::Impl::handle_rnr(uint32_t qpn, uint32_t idx, Refusal why) {
  QpObj& qp = qps[qpn];
  Inflight& e = entry(qpn, idx);
  qp.quiet_spoils++;  // its messages go again (retire_quiet_range)
  counters.add(RHN_CNT_RNR_RETRIES);
  // BUSY (the responder had no receive context free) and PINNING (the
  // target host is pinning the pages) are retried like RNR but do not use
  // up the application's RNR retries.
  if (why == Refusal::kRnr) {
    if (qp.rnr_retry != 7 && qp.rnr_count >= qp.rnr_retry) {
      finish_entry(qpn, e, RHN_CQE_RNR_RETRY_EXC_ERR, RHN_SYN_RNR);
      return;
    }
    qp.rnr_count++;
  }
  // A pinning target says when its pages are in (RHN_FW_PIN_READY); the
  // timer only covers a target that kept no record of the request.
  const bool pinning = why == Refusal::kPinning;
  const uint64_t at =
      now + (pinning ? uint64_t{RHN_PIN_RETRY_US} * 1000
                     : (uint64_t{qp.min_rnr_timer} + 1) * 10'000);
  // RC: this message and every later one go again, in order (the
  // responder drops them until it sees this one). Endpoints: just this
  // one, and for an ordered-retry opcode (ISEND) the later ones of that
  // opcode to the same endpoint not answered yet (the responder refuses
  // them until this one comes back); after PINNING every later one to
  // that endpoint (the responder refuses them too).
  const bool ordered = op_info(e.opcode).ordered_retry || pinning;
  const uint32_t end =
      reliable_connected_qp(qp.type) || ordered ? qp.inflight_tail : idx + 1;
  for (uint32_t i = idx; i != end; i++) {
    Inflight& r = entry(qpn, i);
    if (r.state == MsgState::kDone) continue;
    if (!reliable_connected_qp(qp.type) && i != idx &&
        ((!pinning && r.opcode != e.opcode) || r.peer != e.peer ||
         r.dst_qpn != e.dst_qpn || r.answered))
      continue;
    // Pinning: what was answered already (a READ whose data flows) stays.
    if (pinning && i != idx && r.state == MsgState::kAwaitResponse) continue;
    if (qp.tx_active && qp.tx_entry == i) abort_tx(qp);
    r.state = MsgState::kResendPending;
    r.resend_at = at;
    r.pin_wait = pinning;
  }
  qp.has_resend = true;
  wake_later(qpn, at);
}

void Engine::Impl::handle_unanswered(uint32_t qpn, uint32_t idx) {
  // The target's NIC tells us what an IB target would keep to itself (no
  // QP there takes the request): we wait as an IB requester would before
  // its retries run out, without sending anything again, and fail then.
  // Until that time the application may destroy or reset the QP quietly,
  // which is what MPI and UCX do at finalize.
  QpObj& qp = qps[qpn];
  Inflight& e = entry(qpn, idx);
  if (qp.tx_active && qp.tx_entry == idx) abort_tx(qp);
  qp.quiet_spoils++;  // no longer plain (retire_quiet_range)
  e.state = MsgState::kUnanswered;
  e.resend_at = UINT64_MAX;
  if (qp.timeout) {
    e.resend_at = now + (uint64_t{4096} << qp.timeout) * (qp.retry_cnt + 1u);
    wake_later(qpn, e.resend_at);
  }
  qp.has_unanswered = true;
}

bool Engine::Impl::expire_unanswered(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  uint64_t next = UINT64_MAX;
  bool any = false;
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    Inflight& e = entry(qpn, i);
    if (e.state != MsgState::kUnanswered) continue;
    if (e.resend_at <= now) {
      // vendor_err keeps the real reason for whoever looks.
      finish_entry(qpn, e, RHN_CQE_RETRY_EXC_ERR, RHN_SYN_BAD_QP);
      return true;  // the QP is in error now: the rest are flushed
    }
    any = true;
    next = min(next, e.resend_at);
  }
  qp.has_unanswered = any;
  if (next != UINT64_MAX) wake_later(qpn, next);
  return false;
}

void Engine::Impl::handle_response(Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint32_t qpn = op.dst_qpn & RHN_WIRE_QPN_MASK;
  if (qpn == RHN_WIRE_QPN_FIRMWARE) {  // about one of the NIC's own
    fw_answer(p, pkt);
    return;
  }
  const OpFamily* answered = family_of_wire(op.opcode);
  if (answered && answered->on_nic_answer) {  // no WQE of ours asked
    answered->on_nic_answer(*this, p, pkt);
    return;
  }
  // An answer whose message is gone may still matter to its sender (a
  // receive waiting for data that will not come): its family decides.
  auto orphan = [&] {
    if (answered && answered->on_orphan_response)
      answered->on_orphan_response(*this, p, pkt);
  };
  if (qpn == 0 || qpn >= qps.size() || !qps[qpn].valid) {
    orphan();  // gone
    return;
  }
  QpObj& qp = qps[qpn];
  if ((op.dst_qpn >> RHN_WIRE_INCARNATION_SHIFT) != qp.incarnation) {
    // An answer to the QP's previous life (before a RESET).
    counters.add(RHN_CNT_STALE_PACKETS);
    orphan();
    return;
  }
  const uint16_t node = node_of(p);
  uint32_t idx = qp.inflight_head;
  for (; idx != qp.inflight_tail; idx++) {
    const Inflight& e = entry(qpn, idx);
    if (e.msn == op.msn && e.peer == node && e.state != MsgState::kDone) break;
  }
  if (idx == qp.inflight_tail) {  // flushed or finished meanwhile
    orphan();
    return;
  }
  Inflight& e = entry(qpn, idx);
  switch (op.opcode) {
    case RHN_WOP_NAK:
      // An ordered-retry message (ISEND) numbers its transmissions: a NAK
      // of an earlier one, delayed past the message's resend, is stale.
      if (op_info(e.opcode).ordered_retry &&
          (op.syndrome == RHN_SYN_RNR || op.syndrome == RHN_SYN_BUSY) &&
          op.imm_data != e.attempt)
        return;
      // A joining member of a shared region refuses updates until its
      // data is in (ops/share), and says when, as a pinning target does.
      if (op.syndrome == RHN_SYN_PINNING ||
          op.syndrome == RHN_SYN_SHARE_JOINING) {
        // Refused already and waiting to go again: nothing new.
        if (e.state != MsgState::kResendPending)
          handle_rnr(qpn, idx, Refusal::kPinning);
      } else if (op.syndrome == RHN_SYN_RNR || op.syndrome == RHN_SYN_BUSY) {
        handle_rnr(
            qpn, idx,
            op.syndrome == RHN_SYN_BUSY ? Refusal::kBusy : Refusal::kRnr);
      } else if (op.syndrome == RHN_SYN_BAD_QP &&
                 reliable_connected_qp(qp.type)) {
        handle_unanswered(qpn, idx);
      } else {
        if (qp.tx_active && qp.tx_entry == idx) abort_tx(qp);
        finish_entry(qpn, e, status_of_nak(op.syndrome), op.syndrome);
      }
      return;
    default: {
      // An answer: the family of the message it answers takes it.
      const OpFamily* family = family_of_wire(op.opcode);
      if (!family || !family->on_response ||
          family != op_info(e.opcode).family ||
          (e.state != MsgState::kAwaitResponse &&
           e.state != MsgState::kSending) ||
          (e.read_ctx == 0xffff && op_info(e.opcode).uses_read_ctx)) {
        counters.add(RHN_CNT_MALFORMED_PACKETS);
        finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
        return;
      }
      family->on_response(*this, p, qpn, e, pkt);
      return;
    }
  }
}

// ---- Services for the families (ops/family.h).

bool gather(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
            uint8_t* out, uint32_t len) {
  if (w.flags & RHN_WQE_F_INLINE) {
    memcpy(out, wqe_inline(qp.tx_raw, w).data() + offset, len);
    return true;
  }
  rhn_sge sges[RHN_WQE_MAX_SGES];
  for (uint32_t i = 0; i < w.num_sge; i++) sges[i] = wqe_sge(qp.tx_raw, i);
  return m.sge_dma(sges, w.num_sge, offset, out, len, qp.pdn, false);
}

bool scatter_answer(Impl& m, uint32_t qpn, Inflight& e, uint64_t offset,
                    Span<const uint8_t> data) {
  if (offset + data.size() > e.length) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return false;
  }
  // Into the local SGEs kept since the request.
  const ReadCtx& rc = m.read_ctxs[e.read_ctx];
  if (!m.sge_dma(rc.sge, rc.num_sge, offset, const_cast<uint8_t*>(data.data()),
                 data.size(), m.qps[qpn].pdn, true)) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    return false;
  }
  return true;
}

void Engine::Impl::wait_on(uint32_t qpn, WaitList& list) {
  QpObj& qp = qps[qpn];
  if (qp.waiting_on) return;
  qp.waiting_on = &list;
  qp.wait_prev = list.tail;
  qp.wait_next = kNone;
  if (list.tail != kNone)
    qps[list.tail].wait_next = qpn;
  else
    list.head = qpn;
  list.tail = qpn;
}

void Engine::Impl::unlink_waiter(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  if (!qp.waiting_on) return;
  WaitList& list = *qp.waiting_on;
  if (qp.wait_prev != kNone)
    qps[qp.wait_prev].wait_next = qp.wait_next;
  else
    list.head = qp.wait_next;
  if (qp.wait_next != kNone)
    qps[qp.wait_next].wait_prev = qp.wait_prev;
  else
    list.tail = qp.wait_prev;
  qp.waiting_on = nullptr;
  qp.wait_prev = qp.wait_next = kNone;
}

void Engine::Impl::wake_all(WaitList& list) {
  while (list.head != kNone) {
    const uint32_t q = list.head;
    unlink_waiter(q);
    schedule(q);
  }
}

bool Engine::Impl::gid_valid(uint32_t index) const {
  if (index >= gid_table.size()) return false;
  for (uint8_t b : gid_table[index])
    if (b) return true;
  return false;
}

namespace {

bool ipv4_mapped(const uint8_t* gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
  return memcmp(gid, kPrefix, sizeof(kPrefix)) == 0;
}

// RFC 791 header checksum over 20 bytes whose checksum field is zero.
uint16_t ipv4_checksum(const uint8_t* h) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t{h[i]} << 8 | h[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

uint8_t Engine::Impl::grh_net_flag(const uint8_t* h) {
  // An IPv4 header sits in the last 20 bytes (version 4, 20 bytes long,
  // checksum right); a GRH and an IPv6 header share version 6 and differ
  // in the next header: UDP for RoCE v2, IBA transport for v1.
  if (h[20] == 0x45 && ipv4_checksum(h + 20) == 0) return RHN_CQE_F_NET_IPV4;
  if ((h[0] >> 4) == 6 && h[6] == 17) return RHN_CQE_F_NET_IPV6;
  return 0;
}

void Engine::Impl::build_grh(const DecodedWqe& w, uint8_t* out) const {
  const uint8_t* sgid = gid_table[w.grh.sgid_index].data();
  const uint32_t paylen = static_cast<uint32_t>(w.length);
  const bool v2 = gid_types[w.grh.sgid_index] == RHN_GID_ROCE_V2;
  if (v2 && ipv4_mapped(sgid)) {
    // RoCE v2 over IPv4: the 20-byte header at the end of the 40.
    uint8_t* ip = out + 20;
    const uint32_t total = min<uint32_t>(20 + 8 + paylen, 0xffff);
    memset(out, 0, RHN_WIRE_GRH_LEN);
    ip[0] = 0x45;
    ip[1] = w.grh.traffic_class;
    ip[2] = static_cast<uint8_t>(total >> 8);
    ip[3] = static_cast<uint8_t>(total);
    ip[6] = 0x40;  // don't fragment
    ip[8] = w.grh.hop_limit;
    ip[9] = 17;  // UDP
    memcpy(ip + 12, sgid + 12, 4);
    memcpy(ip + 16, w.grh.dgid + 12, 4);
    const uint16_t csum = ipv4_checksum(ip);
    ip[10] = static_cast<uint8_t>(csum >> 8);
    ip[11] = static_cast<uint8_t>(csum);
    return;
  }
  const uint32_t vtf = (6u << 28) | (uint32_t{w.grh.traffic_class} << 20) |
                       (w.grh.flow_label & 0xfffffu);
  out[0] = static_cast<uint8_t>(vtf >> 24);
  out[1] = static_cast<uint8_t>(vtf >> 16);
  out[2] = static_cast<uint8_t>(vtf >> 8);
  out[3] = static_cast<uint8_t>(vtf);
  out[4] = static_cast<uint8_t>(paylen >> 8);
  out[5] = static_cast<uint8_t>(paylen);
  // Next header: UDP for RoCE v2's IPv6, IBA transport for a v1 GRH.
  out[6] = v2 ? 17 : 0x1b;
  out[7] = w.grh.hop_limit;
  memcpy(out + 8, sgid, 16);
  memcpy(out + 24, w.grh.dgid, 16);
}

}  // namespace rhinet::fw
