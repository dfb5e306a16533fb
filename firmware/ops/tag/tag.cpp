// SPDX-License-Identifier: BSD-2-Clause
// ops/tag: NIC matching, its protocol (the matching engine itself is in
// matching.cpp). An isend is one packet to the target
// endpoint carrying its tag (and its data when small: eager); the target
// NIC matches it against the endpoint's posted receives. Matched: eager
// data lands at once (DONE), a longer message is asked for (CTS) and its
// sender's NIC streams it (TAG_DATA), DONE after the last byte. Not
// matched: the header waits in the unexpected list (QUEUED); the irecv
// that later matches it asks for the data (CTS): the receiver pulls.
//
// Posted receives live in hash buckets by what they fix: source and tag
// (exact), tag only (any source, MPI_ANY_SOURCE), source only (a masked
// tag, MPI_ANY_TAG), and any source with a masked tag by the masked tag,
// one chain per distinct mask (TagWild: four masks an owner; receives
// with further masks wait in a list, walked). An arriving message looks
// at the first match of each and the oldest wins. Unexpected messages are
// chained the same way (by source and tag, by tag, by source) besides
// their arrival list, so an irecv looks in one chain; only an irecv with
// any source and a partial mask walks the arrival list. A chain holds only
// entries of one key, so walks do not grow with entries that have nothing
// in common with the message. Both lists are bounded; beyond them
// irecvs wait in the host's RQ and isends are refused and resent in
// order (refusal records), so overflow never drops or reorders.
#include "ops/tag/tag.h"

#include "core/freestanding.h"
#include "ops/partial/partial.h"
#include "ops/tag/matching.h"
#include "ops/tm/tm.h"

namespace rhinet::fw {

namespace {

using namespace matching;

// A refusal record nobody came back for (the sender went away) is taken
// over after this long.
constexpr uint64_t kRefusalStaleNs = 10'000'000'000ull;

// ---- Answers and completions.

// An answer to the isend (qp_type, the sender's src with incarnation,
// msn) from endpoint `qpn`. The caller made sure of send room.
void answer(Impl& m, Peer& p, uint32_t sender, uint32_t msn, uint32_t qpn,
            uint8_t wop, uint8_t syndrome, uint32_t kind, uint32_t handle,
            uint32_t take) {
  rhn_op_hdr op{};
  op.opcode = wop;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.syndrome = syndrome;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = sender;
  op.src_qpn = qpn;
  op.msn = msn;
  op.rkey = handle;
  op.imm_data = kind;
  op.msg_len = take;
  m.send_data(p, op, {}, false, kNone, 0, false);
}

void complete_recv(Impl& m, const TagRecv& r, uint8_t status,
                   uint8_t syndrome) {
  if (r.srqn != kNone) {  // a TM SRQ's entry: its own CQE (ops/tm)
    tm_complete(m, r, status, syndrome);
    return;
  }
  if (r.qpn >= m.qps.size() || !m.qps[r.qpn].valid ||
      m.qps[r.qpn].gen != r.qp_gen)
    return;
  rhn_cqe c{};
  c.qpn = r.qpn;
  c.byte_len = r.msg_len;
  c.src_qpn = r.peer_src & RHN_WIRE_QPN_MASK;
  c.src_node = r.peer_node;
  c.wqe_index = r.wqe_index;
  c.opcode = RHN_CQE_OP_TAG_RECV;
  c.status = status;
  if (status == RHN_CQE_SUCCESS || status == RHN_CQE_LOC_LEN_ERR) {
    c.imm_data = static_cast<uint32_t>(r.msg_tag);
    c.vendor_err = static_cast<uint32_t>(r.msg_tag >> 32);
  } else {
    c.vendor_err = syndrome;
  }
  if (status != RHN_CQE_SUCCESS) m.counters.add(RHN_CNT_ERROR_CQES);
  m.counters.add(RHN_CNT_COMPLETIONS);
  m.cq_push(m.qps[r.qpn].recv_cqn, c, false);
}

// The receive has all its bytes (or the sender gave up): complete it,
// free it, and let a waiting irecv of the endpoint take its place.
void finish_recv(Impl& m, uint32_t i, uint8_t status, uint8_t syndrome) {
  const uint32_t qpn = m.tags.recvs[i].qpn;
  complete_recv(m, m.tags.recvs[i], status, syndrome);
  recv_free(m, i);
  if (qpn < m.qps.size() && m.tags.endpoints[qpn].rq_stalled)
    tag_scan_rq(m, qpn);
}

void send_cts(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  Peer& p = m.peers[r.peer_node];
  if (!m.can_send(p, kNone)) {
    r.cts_owed = true;
    m.tags.cts_owed.push(i);  // room for every receive: never full
    return;
  }
  r.cts_owed = false;
  answer(m, p, r.peer_src, r.peer_msn, r.qpn, RHN_WOP_TAG_RESP, 0, RHN_TAG_CTS,
         handle_of(i, r.gen), r.take);
}

void match(Impl& m, uint32_t i, uint16_t node, uint32_t src, uint32_t msn,
           uint64_t tag, uint32_t length) {
  TagRecv& r = m.tags.recvs[i];
  r.state = TagRecvState::kMatched;
  r.peer_node = node;
  r.peer_src = src;
  r.peer_msn = msn;
  r.msg_tag = tag;
  r.msg_len = length;
  r.take = min(length, partial::receive_capacity(r));
  r.received = 0;
}

uint8_t length_status(const TagRecv& r) {
  return r.msg_len > r.take ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_SUCCESS;
}

// Refusal records: (endpoint, sender) pairs held back.
TagRefusal* find_refusal(Impl& m, uint32_t qpn, uint16_t node, uint32_t src) {
  if (!m.tags.refusals_used) return nullptr;
  for (auto& f : m.tags.refusals)
    if (f.used && f.qpn == qpn && f.node == node && f.src == src &&
        f.qp_gen == m.qps[qpn].gen)
      return &f;
  return nullptr;
}

TagRefusal* new_refusal(Impl& m) {
  for (auto& f : m.tags.refusals) {
    if (!f.used) {
      m.tags.refusals_used++;
      f.used = true;
      return &f;
    }
  }
  for (auto& f : m.tags.refusals)
    if (m.now - f.since > kRefusalStaleNs) return &f;
  return nullptr;
}

void drop_refusal(Impl& m, TagRefusal* f) {
  if (!f) return;
  *f = TagRefusal{};
  m.tags.refusals_used--;
}

// ---- Tag receives in the RQ: the NIC reads them in order; one taken out
// of order (it matched a queued message, or a message found it while it
// waited in the RQ, or it was cancelled there) is marked in its slot so
// the NIC passes over it later.

bool rq_read(Impl& m, QpObj& qp, uint32_t index, rhn_tag_recv_wqe& w) {
  return m.host_dma(qp.rq_ring,
                    uint64_t{index & ((1u << qp.rq_log) - 1)} * RHN_RQ_WQE_SIZE,
                    &w, sizeof(w), false);
}

void rq_mark_taken(Impl& m, QpObj& qp, uint32_t index, rhn_tag_recv_wqe& w) {
  w.flags |= RHN_RQ_F_TAKEN;
  const uint32_t flags = w.flags;
  m.host_dma(qp.rq_ring,
             uint64_t{index & ((1u << qp.rq_log) - 1)} * RHN_RQ_WQE_SIZE +
                 RHN_OFFSETOF(rhn_tag_recv_wqe, flags),
             const_cast<uint32_t*>(&flags), sizeof(flags), true);
}

TagRecv recv_of_wqe(const QpObj& qp, uint32_t qpn, uint32_t index,
                    const rhn_tag_recv_wqe& w) {
  TagRecv r{};
  r.qpn = qpn;
  r.qp_gen = qp.gen;
  r.context = qp.context;
  r.pdn = qp.pdn;
  r.wqe_index = static_cast<uint16_t>(index);
  r.seq = index;  // posting order (compared as a wrapping difference)
  r.any_src = (w.flags & RHN_TAG_F_ANY_SRC) != 0;
  r.src_node = w.src_node;
  r.src_qpn = w.src_qpn & RHN_WIRE_QPN_MASK;
  r.tag = w.tag;
  r.mask = w.mask;
  if (w.num_sge) r.sge = w.sge;
  r.xfer_mode =
      static_cast<uint8_t>((w.flags & RHN_TAG_XFER_MASK) >> RHN_TAG_XFER_SHIFT);
  switch (r.xfer_mode) {
    case RHN_XFER_STRIDE:
      r.xfer_block = w.xfer.stride.block;
      r.xfer_count = w.xfer.stride.count;
      r.xfer_stride = w.xfer.stride.stride;
      break;
    case RHN_XFER_BITMAP:
      r.xfer_block = w.xfer.bitmap.block;
      r.xfer_key = w.xfer.bitmap.lkey;
      r.xfer_addr = w.xfer.bitmap.addr;
      break;
    case RHN_XFER_TWIN:
      r.xfer_key = w.xfer.twin.handle;
      r.xfer_addr = w.xfer.twin.offset;
      break;
    default:
      break;
  }
  return r;
}

uint8_t check_recv_wqe(Impl& m, const TagRecv& r, const rhn_tag_recv_wqe& w,
                       uint8_t* syndrome) {
  if (w.num_sge > 1 || (w.flags & ~(RHN_RQ_F_TAG | RHN_TAG_F_ANY_SRC |
                                    RHN_TAG_XFER_MASK)) != 0) {
    m.counters.add(RHN_CNT_BAD_WQES);
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  const uint8_t status = partial::check_receive(m, r, syndrome);
  if (status != RHN_CQE_SUCCESS) return status;
  if (r.sge.length &&
      m.check_key(r.sge.lkey, kNone, r.pdn, RHN_ACCESS_LOCAL_WRITE, r.sge.addr,
                  r.sge.length, nullptr) != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    *syndrome = RHN_SYN_BAD_KEY;
    return RHN_CQE_LOC_PROT_ERR;
  }
  return RHN_CQE_SUCCESS;
}

// The oldest irecv still waiting in the RQ that takes this message.
bool match_resident(Impl& m, QpObj& qp, uint32_t qpn, uint16_t node,
                    uint32_t src_qpn, uint64_t tag, uint32_t* index,
                    rhn_tag_recv_wqe* w) {
  for (uint32_t k = qp.rq_consumer; k != qp.rq_scan; k++) {
    if (!rq_read(m, qp, k, *w)) return false;
    if (w->flags & RHN_RQ_F_TAKEN) continue;
    const TagRecv r = recv_of_wqe(qp, qpn, k, *w);
    if (source_matches(r, node, src_qpn) && tag_matches(r, tag)) {
      *index = k;
      return true;
    }
  }
  return false;
}

// No room for this isend: refused, and this sender's later isends to this
// endpoint with it, until it comes back.
void refuse_ordered(Impl& m, Request& r, TagRefusal* held) {
  if (!held) {
    held = new_refusal(m);
    if (held)
      *held = TagRefusal{true, r.node, r.qpn, r.qp.gen, r.src, r.op.msn, m.now};
  }
  m.counters.add(RHN_CNT_TAG_REFUSED);
  not_ready(m, r, RHN_SYN_BUSY);
}

// ---- Requester (the isend)

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // The data is streamed from one place after a CTS (inline data, or one
  // SGE).
  if (w.num_sge > 1 || (w.flags & (RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE))) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // A partial isend (the decoder let STRIDE, BITMAP and DIFF through): a
  // stride packs the message, and a bitmap's bits fit one READ bitmap
  // slot, which holds them while the data streams.
  if (w.xfer_mode == RHN_XFER_BASIC) return RHN_CQE_SUCCESS;
  if ((w.xfer_mode == RHN_XFER_STRIDE &&
       w.xfer.remote_stride != w.xfer.block) ||
      (w.xfer_mode == RHN_XFER_BITMAP &&
       (w.length + w.xfer.block - 1) / w.xfer.block > RHN_TAG_BITMAP_BLOCKS)) {
    *syndrome = RHN_SYN_BAD_XFER;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return partial::check(m, qp, w, syndrome);
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t,
                  rhn_op_hdr& op, PacketOut& out) {
  // One packet: the tag, the length, and the data if it is small; the
  // immediate numbers this transmission (NAKs echo it).
  const uint32_t qpn = static_cast<uint32_t>(&qp - m.qps.data());
  op.imm_data = ++m.entry(qpn, qp.tx_entry).attempt;
  op.rkey = 0;
  op.remote_addr = w.remote_addr;
  out.advance = static_cast<uint32_t>(w.length);
  out.last = true;
  if (w.length <= RHN_TAG_EAGER_MAX && w.xfer_mode == RHN_XFER_BASIC) {
    out.len = static_cast<uint32_t>(w.length);
    if (!gather(m, qp, w, 0, out.payload, out.len)) return false;
  }
  return true;
}

// The data of an isend whose CTS came: streamed by a READ-like stream
// (an SGE), or sent now (inline data). False: wait for room or a stream.
bool start_stream(Impl& m, uint32_t qpn, Inflight& e) {
  QpObj& qp = m.qps[qpn];
  Peer& p = m.peers[e.peer];
  RawWqe raw;
  DecodedWqe w;
  uint32_t nslots = 0;
  if (!m.fetch_wqe(qp, e.slot, raw, nslots) || nslots != e.slots ||
      decode_send_wqe(raw, nslots, 1u << 31, w) != RHN_SYN_NONE ||
      w.opcode != RHN_OP_ISEND) {
    m.counters.add(RHN_CNT_BAD_WQES);  // overwritten while the NIC owned it
    m.finish_entry(qpn, e, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
    return true;
  }
  const uint32_t take = min<uint32_t>(e.stream_len, w.length);
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_TAG_DATA;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = e.stream_dst;
  op.src_qpn = qpn | (uint32_t{qp.incarnation} << RHN_WIRE_INCARNATION_SHIFT);
  op.msn = e.msn;
  op.rkey = e.stream_key;
  op.msg_len = take;
  if (w.flags & RHN_WQE_F_INLINE) {
    if (!m.room_for_request(p)) return false;
    m.send_data(p, op, wqe_inline(raw, w).first(take), false, kNone, 0, false);
    return true;
  }
  if (m.free_responder_reads.empty() || !m.room_for_request(p)) return false;
  ResponderRead rr;
  rr.qp_type = RHN_QP_ENDPOINT;
  rr.node = e.peer;
  rr.requester_src = e.stream_dst;
  rr.responder_qpn = qpn;
  rr.responder_gen = qp.gen;
  rr.msn = e.msn;
  const rhn_sge sge = w.num_sge ? wqe_sge(raw, 0) : rhn_sge{};
  rr.key = sge.lkey;
  rr.pdn = qp.pdn;
  rr.va = sge.addr;
  rr.length = take;
  rr.wop = RHN_WOP_TAG_DATA;
  rr.stream_key = e.stream_key;
  switch (partial::start_send(m, qp, w, rr)) {
    case partial::SendStart::kWait:
      return false;
    case partial::SendStart::kFailed:
      // Its bitmap or twin went away: the receive is told (an empty last
      // packet with the syndrome), and the isend fails.
      {
        op.flags = RHN_WOP_F_LAST;
        op.syndrome = RHN_SYN_BAD_XFER;
        m.send_data(p, op, {}, false, kNone, 0, false);
        m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
        m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_XFER);
      }
      return true;
    case partial::SendStart::kStarted:
      break;
  }
  queue_stream(m, p, rr);
  return true;
}

void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  if (pkt.op.opcode != RHN_WOP_TAG_RESP) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  e.answered = true;
  switch (pkt.op.imm_data) {
    case RHN_TAG_DONE:
      m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
      return;
    case RHN_TAG_QUEUED:
      return;  // a receive will ask for it
    case RHN_TAG_CTS:
      if (e.stream_owed) return;  // a duplicate
      e.stream_key = pkt.op.rkey;
      e.stream_len = pkt.op.msg_len;
      e.stream_dst = pkt.op.src_qpn;
      if (!start_stream(m, qpn, e)) {
        e.stream_owed = true;
        m.tags.streams_owed.push({qpn, m.qps[qpn].gen, e.msn});
      }
      return;
    default:
      m.counters.add(RHN_CNT_MALFORMED_PACKETS);
      m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
  }
}

// ---- Local operations: iprobe and cancel (in SQ order, no message).

// The probe's operands: only the flags it knows, reserved bits clear.
rhn_syndrome decode_local(const RawWqe& raw, const DecodedWqe&) {
  rhn_send_wqe w;
  memcpy(&w, raw.bytes, sizeof(w));
  if ((w.u.tag.flags & ~uint32_t{RHN_TAG_F_ANY_SRC}) || w.u.tag.reserved)
    return RHN_SYN_BAD_WQE;
  return RHN_SYN_NONE;
}

uint8_t execute_local(Impl& m, QpObj& qp, uint32_t qpn, const DecodedWqe& w,
                      uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // The entry being executed is the newest; its CQE reports the result.
  Inflight& e = m.entry(qpn, qp.inflight_tail - 1);
  if (w.opcode == RHN_OP_IPROBE) {
    TagRecv probe{};
    probe.qpn = qpn;
    probe.any_src = (w.operands.tag.flags & RHN_TAG_F_ANY_SRC) != 0;
    probe.src_node = w.dst_node;
    probe.src_qpn = w.dst_qpn & RHN_WIRE_QPN_MASK;
    probe.tag = w.remote_addr;
    probe.mask = w.operands.tag.mask;
    const uint32_t i = match_unexpected(m, probe);
    if (i != kNone) {
      const TagMsg& g = m.tags.msgs[i];
      e.ext_flags = RHN_CQE_X_FOUND;
      e.length = g.length;
      e.answer_node = g.node;
      e.answer_qpn = g.src & RHN_WIRE_QPN_MASK;
      e.answer_tag = g.tag;
    }
    return RHN_CQE_SUCCESS;
  }
  // IRECV_CANCEL: a receive still in the posted list (rare: a scan).
  const uint16_t index = static_cast<uint16_t>(w.remote_key);
  for (uint32_t i = 0; i < m.tags.recvs.size(); i++) {
    TagRecv& r = m.tags.recvs[i];
    if (r.state != TagRecvState::kPosted || r.qpn != qpn ||
        r.qp_gen != qp.gen || r.wqe_index != index)
      continue;
    unpost(m, i);
    r.peer_node = 0;
    r.msg_len = 0;
    finish_recv(m, i, RHN_CQE_WR_FLUSH_ERR, RHN_SYN_FLUSHED);
    e.ext_flags = RHN_CQE_X_FOUND;
    return RHN_CQE_SUCCESS;
  }
  // ... or one still waiting in the RQ.
  for (uint32_t k = qp.rq_consumer; k != qp.rq_scan; k++) {
    rhn_tag_recv_wqe rw;
    if (static_cast<uint16_t>(k) != index || !rq_read(m, qp, k, rw) ||
        (rw.flags & RHN_RQ_F_TAKEN))
      continue;
    rq_mark_taken(m, qp, k, rw);
    complete_recv(m, recv_of_wqe(qp, qpn, k, rw), RHN_CQE_WR_FLUSH_ERR,
                  RHN_SYN_FLUSHED);
    e.ext_flags = RHN_CQE_X_FOUND;
    tag_scan_rq(m, qpn);  // the RQ head may move on
    break;
  }
  return RHN_CQE_SUCCESS;
}

// ---- Responder

// An isend arrives at its endpoint.
void tag_request(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  const bool eager = !r.data.empty() || op.msg_len == 0;
  if ((eager &&
       (r.data.size() != op.msg_len || op.msg_len > RHN_TAG_EAGER_MAX)) ||
      !(op.flags & RHN_WOP_F_FIRST) || !(op.flags & RHN_WOP_F_LAST)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    refuse(m, r, RHN_SYN_LENGTH);
    return;
  }
  TagRefusal* held = find_refusal(m, r.qpn, r.node, r.src);
  if (held && held->msn != op.msn) {
    // An earlier isend of this sender waits to be resent: this one goes
    // again after it.
    m.counters.add(RHN_CNT_TAG_REFUSED);
    not_ready(m, r, RHN_SYN_BUSY);
    return;
  }
  uint32_t i = match_posted(m, r.qpn, r.node, r.src_qpn, op.remote_addr);
  uint32_t rq_index;
  rhn_tag_recv_wqe w;
  if (i == kNone && match_resident(m, r.qp, r.qpn, r.node, r.src_qpn,
                                   op.remote_addr, &rq_index, &w)) {
    // Its receive waits in the RQ (the posted list was full).
    if (m.tags.free_recvs.empty()) {
      refuse_ordered(m, r, held);
      return;
    }
    i = take_entry(m, recv_of_wqe(r.qp, r.qpn, rq_index, w));
    rq_mark_taken(m, r.qp, rq_index, w);
  }
  if (i != kNone) {
    drop_refusal(m, held);
    m.counters.add(RHN_CNT_TAG_MATCHED_POSTED);
    unpost(m, i);
    match(m, i, r.node, r.src, op.msn, op.remote_addr, op.msg_len);
    TagRecv& rv = m.tags.recvs[i];
    if (!eager) {
      answer(m, r.peer, r.src, op.msn, r.qpn, RHN_WOP_TAG_RESP, 0, RHN_TAG_CTS,
             handle_of(i, rv.gen), rv.take);
      return;
    }
    uint8_t status = length_status(rv);
    if (!partial::place_message(m, rv, 0, r.data.first(rv.take))) {
      m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
      status = RHN_CQE_LOC_PROT_ERR;
    }
    answer(m, r.peer, r.src, op.msn, r.qpn, RHN_WOP_TAG_RESP, 0, RHN_TAG_DONE,
           0, 0);
    finish_recv(m, i, status, RHN_SYN_NONE);
    return;
  }
  if (m.tags.free_msgs.empty() || !m.shares.room(r.qp.context, kResTagMsgs)) {
    refuse_ordered(m, r, held);
    return;
  }
  drop_refusal(m, held);
  const uint32_t g_index = m.tags.free_msgs.front();
  m.tags.free_msgs.pop();
  m.shares.charge(r.qp.context, kResTagMsgs);
  TagMsg& g = m.tags.msgs[g_index];
  g = TagMsg{};
  g.used = true;
  g.node = r.node;
  g.qpn = r.qpn;
  g.qp_gen = r.qp.gen;
  g.context = r.qp.context;
  g.src = r.src;
  g.msn = op.msn;
  g.tag = op.remote_addr;
  g.length = op.msg_len;
  msg_link(m, g_index);
  m.counters.add(RHN_CNT_TAG_UNEXPECTED);
  answer(m, r.peer, r.src, op.msn, r.qpn, RHN_WOP_TAG_RESP, 0, RHN_TAG_QUEUED,
         0, 0);
}

// Data for a matched receive.
void tag_data(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  const uint32_t i = entry_of(m, op.rkey);
  TagRecv* rv = i != kNone ? &m.tags.recvs[i] : nullptr;
  if (!rv || rv->state != TagRecvState::kMatched || rv->srqn != kNone ||
      rv->qpn != r.qpn || rv->qp_gen != r.qp.gen || rv->peer_node != r.node ||
      rv->peer_src != r.src || rv->peer_msn != op.msn) {
    // The receive is gone (cancelled with its endpoint): the isend fails.
    refuse(m, r, RHN_SYN_FLUSHED);
    return;
  }
  if (op.syndrome != RHN_SYN_NONE) {  // the sender gave the message up
    finish_recv(m, i, RHN_CQE_REM_OP_ERR, op.syndrome);
    return;
  }
  // In order; a sparse isend's packets may skip what it did not select.
  const bool sparse = (op.flags & RHN_WOP_F_SPARSE) != 0;
  if ((sparse ? op.msg_offset < rv->received : op.msg_offset != rv->received) ||
      uint64_t{op.msg_offset} + r.data.size() > rv->take) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    refuse(m, r, RHN_SYN_LENGTH);
    finish_recv(m, i, RHN_CQE_REM_OP_ERR, RHN_SYN_LENGTH);
    return;
  }
  uint8_t status = RHN_CQE_SUCCESS;
  if (!partial::place_message(m, *rv, op.msg_offset, r.data)) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    status = RHN_CQE_LOC_PROT_ERR;
  }
  rv->received = op.msg_offset + static_cast<uint32_t>(r.data.size());
  if (status == RHN_CQE_SUCCESS && !(op.flags & RHN_WOP_F_LAST)) return;
  if (status == RHN_CQE_SUCCESS && !sparse && rv->received != rv->take) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    status = RHN_CQE_REM_OP_ERR;
  }
  if (status == RHN_CQE_SUCCESS) status = length_status(*rv);
  answer(m, r.peer, r.src, op.msn, r.qpn, RHN_WOP_TAG_RESP, 0, RHN_TAG_DONE, 0,
         0);
  finish_recv(m, i, status, RHN_SYN_NONE);
}

void on_request(Impl& m, Request& r) {
  if (r.qp.type != RHN_QP_ENDPOINT) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_BAD_OPCODE);
    return;
  }
  if (r.op.opcode == RHN_WOP_TAG)
    tag_request(m, r);
  else
    tag_data(m, r);
}

// A CTS for an isend that is gone (its endpoint destroyed, reset or in
// error): the receive waiting for its data is told, so it completes.
void on_orphan_response(Impl& m, Peer& p, const Packet& pkt) {
  const rhn_op_hdr& cts = pkt.op;
  if (cts.opcode != RHN_WOP_TAG_RESP || cts.imm_data != RHN_TAG_CTS ||
      !m.room_for_request(p))
    return;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_TAG_DATA;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.syndrome = RHN_SYN_FLUSHED;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = cts.src_qpn;
  op.src_qpn = cts.dst_qpn;
  op.msn = cts.msn;
  op.rkey = cts.rkey;
  m.send_data(p, op, {}, false, kNone, 0, false);
}

// A refusal needs a record, unless every record is taken: then the isend
// is not accepted at all (as if lost), which keeps order at the cost of
// the channel.
bool has_room(const Impl& m, const Peer&, const rhn_op_hdr& op) {
  return op.opcode != RHN_WOP_TAG ||
         m.tags.refusals_used < m.tags.refusals.size();
}

}  // namespace

extern const OpFamily kTagFamily = {
    .name = "tag",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = has_room,
    .on_request = on_request,
    .on_orphan_response = on_orphan_response,
    .diff_twin_stays = true,
};

// IPROBE and IRECV_CANCEL: the same folder, executed locally.
extern const OpFamily kTagLocalFamily = {
    .name = "tag-local",
    .decode = decode_local,
    .check = [](Impl&, const QpObj& qp, const DecodedWqe&,
                uint8_t* syndrome) -> uint8_t {
      if (qp.type == RHN_QP_ENDPOINT) return RHN_CQE_SUCCESS;
      *syndrome = RHN_SYN_BAD_OPCODE;
      return RHN_CQE_LOC_QP_OP_ERR;
    },
    .send_unsequenced = nullptr,
    .execute_local = execute_local,
    .build_packet = nullptr,
    .on_response = nullptr,
    .has_room = nullptr,
    .on_request = nullptr,
};

// ---- The stages' entry points.

void tag_place(Impl& m, CardMemory& mem) {
  TagTables& t = m.tags;
  const EngineConfig& c = m.cfg;
  // Entries for the posted list and for receives in progress: an irecv
  // that matches a queued message needs no place in the posted list, only
  // an entry, and receives in progress finish without help, so a full
  // posted list never blocks the irecv that would drain the queue.
  const uint32_t entries = c.tag.recvs + c.tag.msgs;
  t.recvs = mem.table<TagRecv>(entries);
  t.free_recvs = Fifo<uint32_t>(entries, mem);
  t.msgs = mem.table<TagMsg>(c.tag.msgs);
  t.free_msgs = Fifo<uint32_t>(c.tag.msgs, mem);
  uint32_t buckets = 16;
  while (buckets < max(c.tag.recvs, c.tag.msgs)) buckets <<= 1;
  t.bucket_mask = buckets - 1;
  t.recv_buckets = mem.table<Array<uint32_t, 2>>(buckets);
  t.msg_buckets = mem.table<Array<uint32_t, 2>>(buckets);
  t.msg_tag_buckets = mem.table<Array<uint32_t, 2>>(buckets);
  t.msg_src_buckets = mem.table<Array<uint32_t, 2>>(buckets);
  t.tm_handle_buckets = mem.table<Array<uint32_t, 2>>(buckets);
  t.refusals = mem.table<TagRefusal>(max<uint32_t>(c.tag.refusals, 1));
  t.cts_owed = Fifo<uint32_t>(entries, mem);
  t.streams_owed = Fifo<TagOwedStream>(c.max_qps * c.max_inflight_per_qp, mem);
  t.tm_retries = Fifo<TmRetry>(entries, mem);
  t.endpoints = mem.table<TagEndpoint>(c.max_qps);
  t.tm_srqs = mem.table<TmSrq>(c.max_srqs);
}

void tag_reset(Impl& m) {
  TagTables& t = m.tags;
  t.recvs.fill(TagRecv{});
  t.posted = 0;
  t.msgs.fill(TagMsg{});
  t.free_recvs.fill_indices(t.recvs.size());
  t.free_msgs.fill_indices(t.msgs.size());
  const Array<uint32_t, 2> empty{kNone, kNone};
  t.recv_buckets.fill(empty);
  t.msg_buckets.fill(empty);
  t.msg_tag_buckets.fill(empty);
  t.msg_src_buckets.fill(empty);
  t.refusals.fill(TagRefusal{});
  t.refusals_used = 0;
  t.recv_quota = max<uint32_t>(
      1, uint32_t(uint64_t{m.cfg.tag.recvs} * m.cfg.tag.context_share / 256));
  t.msg_quota = max<uint32_t>(
      1, uint32_t(uint64_t{m.cfg.tag.msgs} * m.cfg.tag.context_share / 256));
  m.shares.set_limit(kResTagRecvs, m.cfg.tag.recvs, t.recv_quota,
                     m.cfg.account_share);
  m.shares.set_limit(kResTagMsgs, m.cfg.tag.msgs, t.msg_quota,
                     m.cfg.account_share);
  t.cts_owed.clear();
  t.streams_owed.clear();
  t.rq_retry = false;
  t.tm_handle_buckets.fill(empty);
  t.endpoints.fill(TagEndpoint{});
  t.tm_srqs.fill(TmSrq{});
  t.tm_retries.clear();
}

void tag_scan_rq(Impl& m, uint32_t qpn) {
  QpObj& qp = m.qps[qpn];
  if (qp.type != RHN_QP_ENDPOINT || qp.srqn != kNone || !qp.valid ||
      qp.state < RHN_QPS_INIT || qp.state == RHN_QPS_ERR)
    return;
  bool& stalled = m.tags.endpoints[qpn].rq_stalled;
  stalled = false;
  // Plain receives (datagrams) are consumed by the SEND path: the scan
  // starts after them, never behind the consumer.
  if (int32_t(qp.rq_scan - qp.rq_consumer) < 0) qp.rq_scan = qp.rq_consumer;
  // Irecvs the NIC has not seen yet: each takes the oldest queued message
  // it matches at once, out of RQ order, or waits in the RQ.
  for (;;) {
    if (qp.rq_scan == qp.rq_producer) {
      rhn_queue_record rec;
      m.counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
      if (!m.host_dma(qp.rq_record, 0, &rec, sizeof(rec), false)) break;
      if (rec.producer_index - qp.rq_consumer > (1u << qp.rq_log)) {
        m.counters.add(RHN_CNT_BAD_WQES);
        break;
      }
      qp.rq_producer = rec.producer_index;
      if (qp.rq_scan == qp.rq_producer) break;
    }
    const uint32_t index = qp.rq_scan;
    rhn_tag_recv_wqe w;
    if (!rq_read(m, qp, index, w) || !(w.flags & RHN_RQ_F_TAG))
      break;  // a plain receive is next: it is the SENDs'
    TagRecv want = recv_of_wqe(qp, qpn, index, w);
    uint8_t syndrome = RHN_SYN_NONE;
    const uint8_t status = check_recv_wqe(m, want, w, &syndrome);
    if (status != RHN_CQE_SUCCESS) {
      complete_recv(m, want, status, syndrome);
      rq_mark_taken(m, qp, index, w);
      qp.rq_scan++;
      continue;
    }
    const uint32_t g_index = match_unexpected(m, want);
    if (g_index != kNone) {
      if (m.tags.free_recvs.empty()) {  // receives in progress hold them all
        stalled = true;
        m.tags.rq_retry = true;
        break;
      }
      const uint32_t i = take_entry(m, want);
      rq_mark_taken(m, qp, index, w);
      const TagMsg g = m.tags.msgs[g_index];
      msg_unlink(m, g_index);
      msg_free(m, g_index);
      m.counters.add(RHN_CNT_TAG_MATCHED_UNEXPECTED);
      match(m, i, g.node, g.src, g.msn, g.tag, g.length);
      send_cts(m, i);
    }
    qp.rq_scan++;
  }
  // The oldest waiting irecvs move into the posted list while it has
  // room; the others stay in the RQ, where arriving messages look for
  // them too (overflow: slower, as exact).
  const uint32_t consumer_before = qp.rq_consumer;
  while (qp.rq_consumer != qp.rq_scan) {
    const uint32_t index = qp.rq_consumer;
    rhn_tag_recv_wqe w;
    if (!rq_read(m, qp, index, w)) break;
    if (w.flags & RHN_RQ_F_TAKEN) {
      qp.rq_consumer++;
      continue;
    }
    if (!room_to_post(m, qp.context)) {
      if (!stalled) m.counters.add(RHN_CNT_TAG_RECV_WAITS);
      stalled = true;
      m.tags.rq_retry = true;
      break;
    }
    post(m, take_entry(m, recv_of_wqe(qp, qpn, index, w)));
    qp.rq_consumer++;
  }
  // Software reuses the slots the NIC has read past (queues.md).
  if (qp.rq_consumer != consumer_before) {
    uint32_t consumer = qp.rq_consumer;
    m.host_dma(qp.rq_record, RHN_OFFSETOF(rhn_queue_record, nic_consumer),
               &consumer, sizeof(consumer), true);
  }
}

void tag_cancel_qp(Impl& m, uint32_t qpn, bool flush) {
  for (uint32_t i = 0; i < m.tags.recvs.size(); i++) {
    TagRecv& r = m.tags.recvs[i];
    if (r.state == TagRecvState::kFree || r.qpn != qpn) continue;
    unpost(m, i);
    // A matched receive's data may still come: it is refused then, and
    // its isend fails.
    if (flush) complete_recv(m, r, RHN_CQE_WR_FLUSH_ERR, RHN_SYN_FLUSHED);
    recv_free(m, i);
  }
  TagEndpoint& ep = m.tags.endpoints[qpn];
  // The senders of queued messages learn that nobody will take them.
  while (ep.unx_head != kNone) {
    const uint32_t g_index = ep.unx_head;
    const TagMsg g = m.tags.msgs[g_index];
    msg_unlink(m, g_index);
    msg_free(m, g_index);
    Peer& p = m.peers[g.node];
    if (m.can_send(p, kNone)) {
      rhn_op_hdr req{};
      req.qp_type = RHN_QP_ENDPOINT;
      req.dst_qpn = qpn;
      req.src_qpn = g.src;
      req.msn = g.msn;
      m.respond(p, RHN_WOP_NAK, RHN_SYN_FLUSHED, req, {});
    }
  }
  for (auto& f : m.tags.refusals)
    if (f.used && f.qpn == qpn) drop_refusal(m, &f);
  ep.wild = TagWild{};
  ep.rq_stalled = false;
}

void tag_node_failed(Impl& m, uint16_t node, bool restarted) {
  // Receives waiting for data from that node get none.
  for (uint32_t i = 0; i < m.tags.recvs.size(); i++) {
    TagRecv& r = m.tags.recvs[i];
    // (A TM message landing through a receive context ends with it.)
    if (r.state == TagRecvState::kMatched && r.peer_node == node &&
        r.tm_step != TmStep::kEager)
      finish_recv(m, i, RHN_CQE_REM_OP_ERR, RHN_SYN_RETRY_EXCEEDED);
  }
  // Its queued isends are its former life's.
  for (uint32_t i = 0; restarted && i < m.tags.msgs.size(); i++) {
    if (!m.tags.msgs[i].used || m.tags.msgs[i].node != node) continue;
    msg_unlink(m, i);
    msg_free(m, i);
  }
  for (auto& f : m.tags.refusals)
    if (f.used && f.node == node) drop_refusal(m, &f);
}

namespace {

// The turn's work, out of line: every poll asks each family, mostly
// nothing is due, and the test alone costs less than this function's
// set-up (the registers its loops save and restore).
[[gnu::noinline]] bool serve_owed(Impl& m, uint32_t budget) {
  bool did = false;
  // CTSs that found no send room.
  for (uint32_t n = m.tags.cts_owed.size(); n && budget; n--, budget--) {
    const uint32_t i = m.tags.cts_owed.front();
    TagRecv& r = m.tags.recvs[i];
    if (r.state != TagRecvState::kMatched || !r.cts_owed) {
      m.tags.cts_owed.pop();
      continue;
    }
    if (!m.can_send(m.peers[r.peer_node], kNone)) break;
    m.tags.cts_owed.pop();
    send_cts(m, i);
    did = true;
  }
  // Streams that found no READ stream free.
  for (uint32_t n = m.tags.streams_owed.size(); n && budget; n--, budget--) {
    const TagOwedStream s = m.tags.streams_owed.front();
    QpObj& qp = m.qps[s.qpn];
    Inflight* e = nullptr;
    if (qp.valid && qp.gen == s.qp_gen)
      for (uint32_t k = qp.inflight_head; k != qp.inflight_tail; k++)
        if (m.entry(s.qpn, k).msn == s.msn &&
            m.entry(s.qpn, k).state == MsgState::kAwaitResponse)
          e = &m.entry(s.qpn, k);
    if (!e || !e->stream_owed) {
      m.tags.streams_owed.pop();
      continue;
    }
    if (!start_stream(m, s.qpn, *e)) break;
    e->stream_owed = false;
    m.tags.streams_owed.pop();
    did = true;
  }
  // Irecvs waiting in RQs for room in the posted list (a scan: rare).
  if (m.tags.rq_retry && m.tags.room_freed) {
    m.tags.rq_retry = false;
    m.tags.room_freed = false;
    for (uint32_t q = 0; q < m.qps.size(); q++)
      if (m.qps[q].valid && m.tags.endpoints[q].rq_stalled) tag_scan_rq(m, q);
    did = true;
  }
  return did;
}

}  // namespace

bool tag_run(Impl& m, uint32_t budget) {
  if (!tag_owes(m)) return false;
  return serve_owed(m, budget);
}

}  // namespace rhinet::fw
