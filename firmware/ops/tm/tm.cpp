// SPDX-License-Identifier: BSD-2-Clause
// ops/tm: the standard ibverbs tag matching (IBV_SRQT_TM, as mlx5 offers
// it) on the matching engine of ops/tag. A TM SRQ's tag list is a list of
// posted entries like an endpoint's irecvs, owned by the SRQ (matching.h:
// any source, a masked tag, the oldest match wins); software edits it
// through the SRQ's operation ring (add, remove, sync), and those complete
// on the SRQ's CQ.
//
// A SEND arriving at an RC QP of the SRQ starts with ibverbs' header
// (struct rhn_tmh). EAGER data that matches lands in the entry's buffer
// past the header (one CQE: MATCH | DATA_VALID). A RNDV header that
// matches is taken whole (CQE: MATCH); this NIC asks the sender's NIC for
// the data (RHN_FW_TM_PULL), which streams it back as a READ answer that
// answers no WQE (RHN_WOP_TM_DATA); once it is in place (CQE: DATA_VALID)
// the sender's QP receives a FIN (RHN_FW_TM_FIN), as mlx5 hardware sends
// one. Everything else takes a receive WQE of the SRQ: unexpected tagged
// messages (counted: phase synchronisation, ibv_post_srq_ops(3)) and
// NO_TAG ones, headers included.
//
// Bounded: entries come from the matching engine's pool and count against
// its posted list and the context's share of it; a pull or FIN that finds
// no firmware message free, or is refused for room (BUSY, RNR), goes
// again after kRetryNs from a queue with room for every entry.
#include "ops/tm/tm.h"

#include "core/freestanding.h"
#include "ops/tag/matching.h"

namespace rhinet::fw {
namespace {

using namespace matching;

constexpr uint64_t kRetryNs = 100'000;
// A firmware message's cookie: the entry's handle, and which message.
constexpr uint64_t kFinCookie = 1ull << 32;

uint64_t get_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

void put_be(uint8_t* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v >>= 8) p[i] = static_cast<uint8_t>(v);
}

// An entry added while software had not seen every unexpected message
// matches nothing until the counts agree again.
bool enabled(const TmSrq& s, const TagRecv& r) {
  return int32_t(static_cast<uint32_t>(r.seq) - s.synced_at) <= 0;
}

// ---- Entries by software's handle: a chain per (SRQ, handle) bucket.

Array<uint32_t, 2>& handle_chain(Impl& m, uint32_t srqn, uint16_t handle) {
  uint64_t h = (uint64_t{srqn} << 16 | handle) * 0x9e3779b97f4a7c15ull;
  return m.tags
      .tm_handle_buckets[static_cast<uint32_t>(h >> 32) & m.tags.bucket_mask];
}

void handle_link(Impl& m, uint32_t i) {
  auto& b = handle_chain(m, m.tags.recvs[i].srqn, m.tags.recvs[i].tm_handle);
  list_append(m.tags.recvs, b[0], b[1], i, &TagRecv::tm_prev,
              &TagRecv::tm_next);
}

void handle_unlink(Impl& m, uint32_t i) {
  auto& b = handle_chain(m, m.tags.recvs[i].srqn, m.tags.recvs[i].tm_handle);
  list_remove(m.tags.recvs, b[0], b[1], i, &TagRecv::tm_prev,
              &TagRecv::tm_next);
}

// The posted entry `handle` of the SRQ, or kNone.
uint32_t find_handle(Impl& m, uint32_t srqn, uint16_t handle) {
  for (uint32_t i = handle_chain(m, srqn, handle)[0]; i != kNone;
       i = m.tags.recvs[i].tm_next) {
    const TagRecv& r = m.tags.recvs[i];
    if (r.srqn == srqn && r.tm_handle == handle) return i;
  }
  return kNone;
}

// A posted entry leaves the SRQ's list (matched or removed).
void take_off_list(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  if (r.state != TagRecvState::kPosted) return;
  handle_unlink(m, i);
  unpost(m, i);
  m.tags.tm_srqs[r.srqn].tags--;
}

// ---- Completions.

// A TM_RECV CQE for a matched entry on its receiving QP's CQ.
void entry_cqe(Impl& m, const TagRecv& r, uint8_t status, uint8_t syndrome,
               uint8_t ext, uint32_t byte_len) {
  if (r.qpn >= m.qps.size() || !m.qps[r.qpn].valid ||
      m.qps[r.qpn].gen != r.qp_gen)
    return;
  rhn_cqe c{};
  c.qpn = r.qpn;
  c.byte_len = byte_len;
  c.src_qpn = r.app_ctx;
  c.src_node = r.peer_node;
  c.wqe_index = r.tm_handle;
  c.opcode = RHN_CQE_OP_TM_RECV;
  c.status = status;
  c.ext_flags = ext;
  if (status == RHN_CQE_SUCCESS || status == RHN_CQE_LOC_LEN_ERR ||
      status == RHN_CQE_TM_RNDV_INCOMPLETE) {
    c.imm_data = static_cast<uint32_t>(r.msg_tag);
    c.vendor_err = static_cast<uint32_t>(r.msg_tag >> 32);
  } else {
    c.vendor_err = syndrome;
    m.counters.add(RHN_CNT_ERROR_CQES);
  }
  m.counters.add(RHN_CNT_COMPLETIONS);
  m.cq_push(m.qps[r.qpn].recv_cqn, c, false);
}

// The entry ends in error (its read failed or its QP went away).
void fail_entry(Impl& m, uint32_t i, uint8_t status, uint8_t syndrome) {
  const TagRecv& r = m.tags.recvs[i];
  entry_cqe(m, r, status, syndrome, 0, r.received);
  recv_free(m, i);
}

void list_op_cqe(Impl& m, uint32_t srqn, uint32_t index, uint8_t opcode,
                 uint8_t status, uint8_t syndrome) {
  const TmSrq& s = m.tags.tm_srqs[srqn];
  rhn_cqe c{};
  c.qpn = srqn;
  c.wqe_index = static_cast<uint16_t>(index);
  c.opcode = opcode;
  c.status = status;
  c.vendor_err = syndrome;
  if (s.sw_unexpected != s.unexpected) c.ext_flags = RHN_CQE_X_TM_SYNC_REQ;
  if (status != RHN_CQE_SUCCESS) {
    m.counters.add(RHN_CNT_ERROR_CQES);
    m.counters.add(RHN_CNT_TM_OP_ERRORS);
  }
  m.counters.add(RHN_CNT_COMPLETIONS);
  m.cq_push(s.cqn, c, false);
}

// ---- Tag-list operations.

uint8_t add(Impl& m, uint32_t srqn, uint32_t index, const rhn_tm_op_wqe& w,
            uint8_t* syndrome) {
  const SrqObj& srq = m.srqs[srqn];
  TmSrq& s = m.tags.tm_srqs[srqn];
  if (w.num_sge > RHN_TM_MAX_SGES || w.handle >= s.max_tags) {
    m.counters.add(RHN_CNT_BAD_WQES);
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_TM_ERR;
  }
  if (w.num_sge && w.sge.length &&
      m.check_key(w.sge.lkey, kNone, srq.pdn, RHN_ACCESS_LOCAL_WRITE,
                  w.sge.addr, w.sge.length, nullptr) != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    *syndrome = RHN_SYN_BAD_KEY;
    return RHN_CQE_LOC_PROT_ERR;
  }
  if (find_handle(m, srqn, w.handle) != kNone) {  // software's mistake
    m.counters.add(RHN_CNT_BAD_WQES);
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_TM_ERR;
  }
  if (s.tags >= s.max_tags || !room_to_post(m, srq.context)) {
    *syndrome = RHN_SYN_BUSY;  // the list (or the context's share) is full
    return RHN_CQE_TM_ERR;
  }
  TagRecv r{};
  r.srqn = srqn;
  r.qpn = kNone;
  r.context = srq.context;
  r.pdn = srq.pdn;
  r.any_src = true;
  r.tag = w.tag;
  r.mask = w.mask;
  r.seq = index;  // posting order
  r.tm_handle = w.handle;
  if (w.num_sge) r.sge = w.sge;
  const uint32_t i = take_entry(m, r);
  post(m, i);
  handle_link(m, i);
  s.tags++;
  return RHN_CQE_SUCCESS;
}

void execute(Impl& m, uint32_t srqn, uint32_t index, const rhn_tm_op_wqe& w) {
  TmSrq& s = m.tags.tm_srqs[srqn];
  if (w.flags & RHN_TM_OP_F_SYNC) s.sw_unexpected = w.unexpected_cnt;
  if (s.sw_unexpected == s.unexpected) s.synced_at = index;
  uint8_t status = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
  uint8_t opcode = RHN_CQE_OP_TM_SYNC;
  if (w.flags & ~(RHN_TM_OP_F_SIGNALED | RHN_TM_OP_F_SYNC)) {
    m.counters.add(RHN_CNT_BAD_WQES);
    status = RHN_CQE_TM_ERR;
    syndrome = RHN_SYN_BAD_WQE;
  } else if (w.opcode == RHN_TM_OP_ADD) {
    opcode = RHN_CQE_OP_TM_ADD;
    status = add(m, srqn, index, w, &syndrome);
  } else if (w.opcode == RHN_TM_OP_DEL) {
    opcode = RHN_CQE_OP_TM_DEL;
    const uint32_t i = find_handle(m, srqn, w.handle);
    if (i == kNone) {
      status = RHN_CQE_TM_ERR;  // not in the list: it matched meanwhile
    } else {
      take_off_list(m, i);
      recv_free(m, i);
    }
  } else if (w.opcode != RHN_TM_OP_SYNC) {
    m.counters.add(RHN_CNT_BAD_WQES);
    status = RHN_CQE_TM_ERR;
    syndrome = RHN_SYN_BAD_OPCODE;
  }
  // A DEL always tells: software releases the entry on it.
  if ((w.flags & RHN_TM_OP_F_SIGNALED) || status != RHN_CQE_SUCCESS ||
      opcode == RHN_CQE_OP_TM_DEL)
    list_op_cqe(m, srqn, index, opcode, status, syndrome);
}

// ---- Rendezvous: the pull, and the FIN once the data is in place.

void retry_later(Impl& m, uint32_t i) {
  m.tags.tm_retries.push(
      {handle_of(i, m.tags.recvs[i].gen), m.now + kRetryNs});  // room: one
                                                               // per entry
}

void send_pull(Impl& m, uint32_t i) {
  TagRecv& e = m.tags.recvs[i];
  rhn_fw_tm_pull pull{};
  pull.qpn = e.peer_src;
  pull.src_qpn = e.qpn | uint32_t{m.qps[e.qpn].incarnation}
                             << RHN_WIRE_INCARNATION_SHIFT;
  pull.handle = handle_of(i, e.gen);
  pull.rkey = e.rv_rkey;
  pull.va = e.rv_va;
  pull.len = e.take;
  e.tm_step = TmStep::kPull;
  const auto* b = reinterpret_cast<const uint8_t*>(&pull);
  if (m.fw_post(e.peer_node, RHN_FW_TM_PULL, {b, sizeof(pull)}, FwOwner::kTm,
                pull.handle, e.context) == kNone)
    retry_later(m, i);
}

void send_fin(Impl& m, uint32_t i) {
  TagRecv& e = m.tags.recvs[i];
  rhn_fw_tm_fin fin{};
  fin.qpn = e.peer_src;
  fin.src_qpn = e.qpn | uint32_t{m.qps[e.qpn].incarnation}
                            << RHN_WIRE_INCARNATION_SHIFT;
  auto* t = reinterpret_cast<uint8_t*>(&fin.tmh);
  t[0] = RHN_TMH_FIN;
  put_be(t + 4, e.app_ctx, 4);
  put_be(t + 8, e.msg_tag, 8);
  e.tm_step = TmStep::kFin;
  const auto* b = reinterpret_cast<const uint8_t*>(&fin);
  if (m.fw_post(e.peer_node, RHN_FW_TM_FIN, {b, sizeof(fin)}, FwOwner::kTm,
                handle_of(i, e.gen) | kFinCookie, e.context) == kNone)
    retry_later(m, i);
}

// The QP a pull or FIN names at this NIC, checked like a request's target:
// an RC QP of that incarnation, receiving, connected to the asking one.
QpObj* named_qp(Impl& m, const Peer& p, uint32_t qpn_inc, uint32_t src) {
  const uint32_t qpn = qpn_inc & RHN_WIRE_QPN_MASK;
  if (qpn == 0 || qpn >= m.qps.size()) return nullptr;
  QpObj& qp = m.qps[qpn];
  if (!qp.valid || qp.type != RHN_QP_RC ||
      qp.incarnation != (qpn_inc >> RHN_WIRE_INCARNATION_SHIFT) ||
      qp.state < RHN_QPS_RTR || qp.state == RHN_QPS_ERR ||
      qp.dest_node != m.node_of(p) || qp.dest_qpn != (src & RHN_WIRE_QPN_MASK))
    return nullptr;
  return &qp;
}

}  // namespace

// ---- The stages' entry points.

void tm_run_ops(Impl& m, uint32_t srqn) {
  TmSrq& s = m.tags.tm_srqs[srqn];
  if (!s.active) {
    m.counters.add(RHN_CNT_BAD_DOORBELLS);
    return;
  }
  rhn_queue_record rec;
  m.counters.add_bus(RHN_CNT_QUEUE_RECORD_READS, 1);
  if (!m.host_dma(s.ops_record, 0, &rec, sizeof(rec), false)) return;
  const uint32_t depth = 1u << s.ops_log;
  if (rec.producer_index - s.ops_consumer > depth) {
    m.counters.add(RHN_CNT_BAD_WQES);  // a producer beyond the ring
    return;
  }
  const uint32_t before = s.ops_consumer;
  while (s.ops_consumer != rec.producer_index) {
    const uint32_t index = s.ops_consumer;
    rhn_tm_op_wqe w;
    if (!m.host_dma(s.ops_ring,
                    uint64_t{index & (depth - 1)} * RHN_TM_OP_WQE_SIZE, &w,
                    sizeof(w), false))
      break;
    s.ops_consumer++;
    execute(m, srqn, index, w);
  }
  // Software reuses the slots the NIC has executed.
  if (s.ops_consumer != before) {
    uint32_t consumer = s.ops_consumer;
    m.host_dma(s.ops_record, RHN_OFFSETOF(rhn_queue_record, nic_consumer),
               &consumer, sizeof(consumer), true);
  }
}

void tm_srq_gone(Impl& m, uint32_t srqn) {
  // Rare: a scan. Its QPs are gone, and with them every matched entry.
  for (uint32_t i = 0; i < m.tags.recvs.size(); i++) {
    if (m.tags.recvs[i].state == TagRecvState::kFree ||
        m.tags.recvs[i].srqn != srqn)
      continue;
    take_off_list(m, i);
    recv_free(m, i);
  }
  m.tags.tm_srqs[srqn].wild = TagWild{};
}

SrqLanding tm_land(Impl& m, Request& r, RxContext& rx) {
  QpObj& qp = r.qp;
  const uint32_t qpn = r.qpn;
  const uint16_t node = r.node;
  const uint32_t src = r.src;
  const rhn_op_hdr& op = r.op;
  const Span<const uint8_t> first = r.data;
  TmSrq& s = m.tags.tm_srqs[qp.srqn];
  const uint8_t tmh_op =
      first.size() >= sizeof(rhn_tmh) ? first[0] : uint8_t{RHN_TMH_NO_TAG};
  if (tmh_op != RHN_TMH_EAGER && tmh_op != RHN_TMH_RNDV) {
    // Not for matching (NO_TAG, a FIN, no header): a receive WQE.
    if (!m.take_recv_wqe(qp, qpn, rx)) return SrqLanding::kNoReceive;
    rx.cqe_op = RHN_CQE_OP_TM_NO_TAG;
    return SrqLanding::kReceive;
  }
  const uint64_t tag = get_be(first.data() + 8, 8);
  uint32_t i = match_posted(m, qp.srqn | kSrqOwner, kAnyNode, kAnyQpn, tag);
  // The oldest match is disabled: so is every later one.
  if (i != kNone && !enabled(s, m.tags.recvs[i])) i = kNone;
  if (i == kNone) {
    if (!m.take_recv_wqe(qp, qpn, rx)) return SrqLanding::kNoReceive;
    rx.cqe_op = RHN_CQE_OP_TM_UNEXPECTED;
    s.unexpected++;
    m.counters.add(RHN_CNT_TM_UNEXPECTED);
    return SrqLanding::kReceive;
  }
  take_off_list(m, i);
  TagRecv& e = m.tags.recvs[i];
  e.qpn = qpn;
  e.qp_gen = qp.gen;
  e.peer_node = node;
  e.peer_src = src;
  e.peer_msn = op.msn;
  e.msg_tag = tag;
  e.app_ctx = static_cast<uint32_t>(get_be(first.data() + 4, 4));
  m.counters.add(RHN_CNT_TM_EXPECTED);
  // A rendezvous header the NIC executes: one packet, both headers, at
  // most RHN_TM_MAX_RNDV_HDR bytes. Others are software's (the entry's
  // buffer gets what follows the tmh, as for eager data).
  constexpr uint32_t kHeaders = sizeof(rhn_tmh) + sizeof(rhn_rvh);
  if (tmh_op == RHN_TMH_RNDV && (op.flags & RHN_WOP_F_LAST) &&
      first.size() >= kHeaders && op.msg_len <= RHN_TM_MAX_RNDV_HDR) {
    const uint8_t* rvh = first.data() + sizeof(rhn_tmh);
    e.rv_va = get_be(rvh, 8);
    e.rv_rkey = static_cast<uint32_t>(get_be(rvh + 8, 4));
    e.msg_len = static_cast<uint32_t>(get_be(rvh + 12, 4));
    e.take = min(e.msg_len, e.sge.length);
    e.received = 0;
    m.counters.add(RHN_CNT_TM_RNDV_READS);
    entry_cqe(m, e, RHN_CQE_SUCCESS, RHN_SYN_NONE, RHN_CQE_X_TM_MATCH, e.take);
    send_pull(m, i);
    return SrqLanding::kConsumed;
  }
  e.tm_step = TmStep::kEager;
  e.tm_sw_rndv = tmh_op == RHN_TMH_RNDV;
  rx.qpn = qpn;
  rx.qp_gen = qp.gen;
  rx.wqe_index = e.tm_handle;
  rx.from_srq = false;
  rx.status = RHN_CQE_SUCCESS;
  rx.num_sge = e.sge.length ? 1 : 0;
  rx.sge[0] = e.sge;
  rx.capacity = e.sge.length;
  rx.length = 0;
  rx.pdn = e.pdn;
  rx.drop = sizeof(rhn_tmh);
  rx.list_entry = handle_of(i, e.gen);
  rx.cqe_op = RHN_CQE_OP_TM_RECV;
  return SrqLanding::kReceive;
}

void tm_placed(Impl& m, RxContext& rx) {
  const uint32_t i = entry_of(m, rx.list_entry);
  if (i == kNone) return;  // flushed with its QP meanwhile
  TagRecv& e = m.tags.recvs[i];
  if (e.srqn == kNone || e.tm_step != TmStep::kEager) return;
  uint8_t status = rx.status;
  if (status == RHN_CQE_SUCCESS && e.tm_sw_rndv)
    status = RHN_CQE_TM_RNDV_INCOMPLETE;
  // (A message longer than the buffer is refused before a byte lands.)
  const bool placed =
      status == RHN_CQE_SUCCESS || status == RHN_CQE_TM_RNDV_INCOMPLETE;
  entry_cqe(m, e, status,
            rx.status == RHN_CQE_SUCCESS ? RHN_SYN_NONE : RHN_SYN_BAD_WQE,
            placed ? RHN_CQE_X_TM_MATCH | RHN_CQE_X_TM_DATA_VALID
                   : RHN_CQE_X_TM_MATCH,
            rx.length);
  recv_free(m, i);
}

void tm_complete(Impl& m, const TagRecv& r, uint8_t status, uint8_t syndrome) {
  // A posted entry owes software nothing (it removes it), nor one whose
  // data CQE is written (only its FIN was left).
  if (r.state != TagRecvState::kMatched || r.tm_step == TmStep::kFin) return;
  entry_cqe(m, r, status, syndrome, 0, r.received);
}

void tm_pull(Impl& m, Peer& p, const Packet& pkt) {
  rhn_fw_tm_pull q;
  if (pkt.payload.size() != sizeof(q)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.respond(p, RHN_WOP_NAK, RHN_SYN_LENGTH, pkt.op, {});
    return;
  }
  memcpy(&q, pkt.payload.data(), sizeof(q));
  QpObj* qp = named_qp(m, p, q.qpn, q.src_qpn);
  rhn_syndrome syn = RHN_SYN_NONE;
  if (!qp) {
    m.counters.add(RHN_CNT_NO_QP_REQUESTS);
    syn = RHN_SYN_BAD_QP;
  } else if (q.len && !(qp->access & RHN_ACCESS_REMOTE_READ)) {
    syn = RHN_SYN_ACCESS_RIGHTS;
  } else if (q.len) {
    // Checked as a READ through that QP; each chunk again as it goes.
    uint32_t mr_index = kNone;
    syn = m.check_key(q.rkey, kNone, qp->pdn, RHN_ACCESS_REMOTE_READ, q.va,
                      q.len, &mr_index, q.qpn & RHN_WIRE_QPN_MASK);
    // On-demand memory not pinned yet: pinned now, the pull comes again.
    if (syn == RHN_SYN_NONE && !pin_range(m, mr_index, q.va, q.len))
      syn = RHN_SYN_BUSY;
  }
  if (syn == RHN_SYN_NONE && m.free_responder_reads.empty())
    syn = RHN_SYN_BUSY;  // asked again later
  if (syn != RHN_SYN_NONE) {
    if (syn != RHN_SYN_BAD_QP && syn != RHN_SYN_BUSY)
      m.counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
    m.respond(p, RHN_WOP_NAK, syn, pkt.op, {});
    return;
  }
  ResponderRead rr;
  rr.qp_type = RHN_QP_RC;
  rr.node = m.node_of(p);
  rr.requester_src = q.src_qpn;
  rr.responder_qpn = q.qpn & RHN_WIRE_QPN_MASK;
  rr.responder_gen = qp->gen;
  rr.msn = q.handle;
  rr.key = q.rkey;
  rr.pdn = qp->pdn;
  rr.va = q.va;
  rr.length = q.len;
  rr.wop = RHN_WOP_TM_DATA;
  rr.stream_key = q.handle;
  queue_stream(m, p, rr);
}

void tm_data(Impl& m, Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint32_t i = entry_of(m, op.rkey);
  TagRecv* e = i != kNone ? &m.tags.recvs[i] : nullptr;
  const uint32_t qpn = op.dst_qpn & RHN_WIRE_QPN_MASK;
  if (!e || e->srqn == kNone ||
      (e->tm_step != TmStep::kPull && e->tm_step != TmStep::kPulling) ||
      e->qpn != qpn || !m.qps[qpn].valid || m.qps[qpn].gen != e->qp_gen ||
      (op.dst_qpn >> RHN_WIRE_INCARNATION_SHIFT) != m.qps[qpn].incarnation ||
      e->peer_node != m.node_of(p) || e->peer_src != op.src_qpn) {
    m.counters.add(RHN_CNT_STALE_PACKETS);  // its entry went (with its QP)
    return;
  }
  if (op.syndrome != RHN_SYN_NONE) {  // the read failed at the sender
    fail_entry(m, i, status_of_nak(op.syndrome), op.syndrome);
    return;
  }
  if (op.msg_offset != e->received ||
      uint64_t{op.msg_offset} + pkt.payload.size() > e->take) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    fail_entry(m, i, RHN_CQE_REM_OP_ERR, RHN_SYN_LENGTH);
    return;
  }
  if (!pkt.payload.empty() &&
      !m.sge_dma(&e->sge, 1, op.msg_offset,
                 const_cast<uint8_t*>(pkt.payload.data()), pkt.payload.size(),
                 e->pdn, true)) {
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    fail_entry(m, i, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    return;
  }
  e->received += static_cast<uint32_t>(pkt.payload.size());
  if (!(op.flags & RHN_WOP_F_LAST)) return;
  if (e->received != e->take) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    fail_entry(m, i, RHN_CQE_REM_OP_ERR, RHN_SYN_LENGTH);
    return;
  }
  entry_cqe(m, *e, e->msg_len > e->take ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_SUCCESS,
            RHN_SYN_NONE, RHN_CQE_X_TM_DATA_VALID, e->received);
  send_fin(m, i);
}

void tm_fin(Impl& m, Peer& p, const Packet& pkt) {
  rhn_fw_tm_fin f;
  if (pkt.payload.size() != sizeof(f)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.respond(p, RHN_WOP_NAK, RHN_SYN_LENGTH, pkt.op, {});
    return;
  }
  memcpy(&f, pkt.payload.data(), sizeof(f));
  QpObj* qp = named_qp(m, p, f.qpn, f.src_qpn);
  if (!qp) {
    m.counters.add(RHN_CNT_NO_QP_REQUESTS);
    m.respond(p, RHN_WOP_NAK, RHN_SYN_BAD_QP, pkt.op, {});
    return;
  }
  // As if the receiving QP had sent the header: a receive WQE takes it.
  const uint32_t qpn = f.qpn & RHN_WIRE_QPN_MASK;
  RxContext ctx;
  if (!m.take_recv_wqe(*qp, qpn, ctx)) {
    m.counters.add(RHN_CNT_RNR_NAKS_SENT);
    m.respond(p, RHN_WOP_NAK, RHN_SYN_RNR, pkt.op, {});
    return;
  }
  if (ctx.status == RHN_CQE_SUCCESS) {
    if (ctx.capacity < sizeof(f.tmh)) {
      ctx.status = RHN_CQE_LOC_LEN_ERR;
    } else if (!m.sge_dma(ctx.sge, ctx.num_sge, 0,
                          reinterpret_cast<uint8_t*>(&f.tmh), sizeof(f.tmh),
                          ctx.pdn, true)) {
      m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
      ctx.status = RHN_CQE_LOC_PROT_ERR;
    } else {
      ctx.length = sizeof(f.tmh);
    }
  }
  const bool tm = qp->srqn != kNone && m.tags.tm_srqs[qp->srqn].active;
  m.complete_receive(ctx, m.node_of(p), f.src_qpn & RHN_WIRE_QPN_MASK,
                     tm ? RHN_CQE_OP_TM_NO_TAG : RHN_CQE_OP_RECV, 0, 0);
}

void tm_fw_done(Impl& m, uint64_t cookie, uint8_t syndrome) {
  const uint32_t i = entry_of(m, static_cast<uint32_t>(cookie));
  if (i == kNone) return;  // gone with its QP
  TagRecv& e = m.tags.recvs[i];
  if (e.srqn == kNone) return;
  const bool again = syndrome == RHN_SYN_BUSY || syndrome == RHN_SYN_RNR;
  if (cookie & kFinCookie) {
    if (e.tm_step != TmStep::kFin) return;
    if (again)
      retry_later(m, i);
    else
      recv_free(m, i);  // delivered, or nobody left to take it
    return;
  }
  if (e.tm_step != TmStep::kPull) return;  // its data came first
  if (syndrome == RHN_SYN_NONE)
    e.tm_step = TmStep::kPulling;
  else if (again)
    retry_later(m, i);
  else
    fail_entry(m, i, status_of_nak(syndrome), syndrome);
}

namespace {

// The turn's work, out of line: every poll asks each family, mostly
// nothing is due, and the test alone costs less than this function's
// set-up (the registers its loops save and restore).
[[gnu::noinline]] bool run_retries(Impl& m, uint32_t budget) {
  bool did = false;
  for (; budget && !m.tags.tm_retries.empty() &&
         m.tags.tm_retries.front().at <= m.now;
       budget--) {
    const uint32_t i = entry_of(m, m.tags.tm_retries.front().entry);
    m.tags.tm_retries.pop();
    did = true;
    if (i == kNone || m.tags.recvs[i].srqn == kNone) continue;
    if (m.tags.recvs[i].tm_step == TmStep::kPull)
      send_pull(m, i);
    else if (m.tags.recvs[i].tm_step == TmStep::kFin)
      send_fin(m, i);
  }
  return did;
}

}  // namespace

bool tm_run(Impl& m, uint32_t budget) {
  if (m.now < tm_next_retry(m)) return false;
  return run_retries(m, budget);
}

extern const OpFamily kTmFamily = {
    .name = "tm",
    .check = nullptr,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = nullptr,
    .on_response = nullptr,
    .has_room = nullptr,
    .on_request = nullptr,
    .on_orphan_response = nullptr,
    .on_nic_answer = [](Impl& m, Peer& p,
                        const Packet& pkt) { tm_data(m, p, pkt); },
};

}  // namespace rhinet::fw
