// SPDX-License-Identifier: BSD-2-Clause
// Remote pin-down. An on-demand MR is memory its process has only
// mapped; the host pins pages when a peer first needs them:
// - the miss: a remote access that reaches a page not pinned yet is refused
//   with PINNING (a PD_REQ is held instead), and one RHN_EQE_PD_REQUEST asks
//   the host to pin the rest of the message's range. When the host answers
//   (RHN_ADMIN_PD_MAPPED) the waiting requesters hear RHN_FW_PIN_READY and
//   send again, or the held PD_REQs are answered;
// - PD_REQ / PD_REPLY pins and holds a range, PD_RELEASE lets it go (the
//   host counts holders: RHN_EQE_PD_REQUEST with HOLD, RHN_EQE_PD_RELEASE);
// - an endpoint's record keeps a source's later requests behind the one
//   refused, so pinning reorders nothing between two endpoints.
#include "ops/pindown/pindown.h"

#include "core/freestanding.h"
#include "ops/family.h"
#include "requester/wqe_decoder.h"

namespace rhinet::fw {
namespace {

// A record whose request never came back (its sender went away).
constexpr uint64_t kPinStaleNs = 10'000'000'000ull;
constexpr uint32_t kPinPageShift = 12;

uint32_t page_of(const MrObj& mr, uint64_t va) {
  return static_cast<uint32_t>((va >> kPinPageShift) -
                               (mr.iova >> kPinPageShift));
}

uint32_t key_of(const Impl& m, uint32_t mr_index) {
  return (mr_index << RHN_KEY_INDEX_SHIFT) | m.mrs[mr_index].variant;
}

uint64_t pages_word(uint32_t first, uint32_t count) {
  return first | (uint64_t{count} << 32);
}

bool present(Impl& m, uint32_t mr_index, uint32_t page) {
  const MrObj& mr = m.mrs[mr_index];
  const uint64_t va = ((mr.iova >> kPinPageShift) + page) << kPinPageShift;
  uint64_t bus_addr;
  return m.translate(mr_index, max(va, mr.iova), bus_addr) == Impl::Fault::kOk;
}

// A NAK outside the NAK memory: the request was refused (and remembered)
// once already while it waited.
void send_nak(Impl& m, uint16_t node, const rhn_op_hdr& req, uint8_t syn) {
  if (Peer* p = m.peer_for(node)) m.send_answer(*p, RHN_WOP_NAK, syn, req, {});
}

void tell_ready(Impl& m, const PinWaiter& w) {
  rhn_fw_pin_ready msg{};
  msg.qpn = w.op.src_qpn;
  // No room: the requester's timer sends it again instead.
  m.fw_post(w.node, RHN_FW_PIN_READY,
            {reinterpret_cast<const uint8_t*>(&msg), sizeof(msg)},
            FwOwner::kPin, 0, w.context);
}

void free_waiter(Impl& m, PinWaiter& w) {
  if (w.used) m.shares.give(w.context, kResPinWaiters);
  w = PinWaiter{};
  m.pins.waiters_used--;
}

// A free record for a request to `context`, within its share; a record
// whose request never came back is taken over.
PinWaiter* new_waiter(Impl& m, uint32_t context) {
  PinWaiter* free = nullptr;
  for (auto& w : m.pins.waiters) {
    if (w.used && w.run == kNone && m.now - w.since > kPinStaleNs)
      free_waiter(m, w);
    if (!w.used && !free) free = &w;
  }
  if (!free || !m.shares.take(context, kResPinWaiters)) return nullptr;
  m.pins.waiters_used++;
  return free;
}

// The pinned range of a PD_REQ is held one more time: the host counts it.
bool hold(Impl& m, uint32_t mr_index, const rhn_op_hdr& op, uint64_t va) {
  const MrObj& mr = m.mrs[mr_index];
  if (!mr.on_demand) return true;  // registered: pinned for its lifetime
  const uint32_t first = page_of(mr, va);
  const uint32_t count = page_of(mr, va + op.msg_len - 1) - first + 1;
  return m.async_event(RHN_EQE_PD_REQUEST, key_of(m, mr_index),
                       pages_word(first, count), RHN_EQE_F_PD_HOLD);
}

// The host refused (or the MR went): the send waiting for its source
// completes LOC_PROT_ERR with the host's syndrome, as a gather fault.
void fail_local(Impl& m, uint32_t qpn, uint8_t syn) {
  QpObj& qp = m.qps[qpn];
  if (!qp.tx_active) return;  // ended meanwhile (flushed, reset)
  Inflight& e = m.entry(qpn, qp.tx_entry);
  if (e.state != MsgState::kSending) return;
  m.counters.add(RHN_CNT_PIN_FAILED);
  m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
  m.abort_tx(qp);
  m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, syn);
}

// The host is done with a run (syn: NONE, NOT_PINNED, or BAD_KEY when
// its MR went away): its held PD_REQs are answered, refused requesters
// told to send again, or failed.
void finish_run(Impl& m, uint32_t run, uint8_t syn) {
  const uint32_t mr_index = m.pins.runs[run].mr_index;
  // Local senders go on from where they stopped, or fail.
  WaitList& senders = m.pins.runs[run].senders;
  if (syn == RHN_SYN_NONE) m.wake_all(senders);
  while (senders.head != kNone) {
    const uint32_t qpn = senders.head;
    m.unlink_waiter(qpn);
    fail_local(m, qpn, syn);
  }
  m.pins.runs[run] = PinRun{};
  for (auto& w : m.pins.waiters) {
    if (!w.used || w.run != run) continue;
    if (w.reply) {
      Peer* p = m.peer_for(w.node);
      // The MR is still there when syn is NONE (pin_mr_gone says BAD_KEY).
      if (syn == RHN_SYN_NONE && p) {
        if (hold(m, mr_index, w.op, w.va))
          m.respond(*p, RHN_WOP_PD_REPLY, RHN_SYN_NONE, w.op, {});
        else
          send_nak(m, w.node, w.op, RHN_SYN_BUSY);  // asks again later
      } else {
        if (syn == RHN_SYN_NOT_PINNED) m.counters.add(RHN_CNT_PIN_FAILED);
        send_nak(m, w.node, w.op, syn);
      }
      free_waiter(m, w);
      continue;
    }
    if (syn == RHN_SYN_NOT_PINNED) {
      // The refused message fails; its later ones go again.
      m.counters.add(RHN_CNT_PIN_FAILED);
      send_nak(m, w.node, w.op, syn);
    }
    tell_ready(m, w);
    if (w.orders && syn == RHN_SYN_NONE) {
      w.run = kNone;  // keeps the order until the message comes again
      w.since = m.now;
    } else {
      free_waiter(m, w);
    }
  }
}

uint32_t run_covering(const Impl& m, uint32_t mr_index, uint32_t page) {
  for (uint32_t i = 0; i < m.pins.runs.size(); i++) {
    const PinRun& run = m.pins.runs[i];
    if (run.used && run.mr_index == mr_index && page >= run.first &&
        page - run.first < run.count)
      return i;
  }
  return kNone;
}

// ---- Requester

uint8_t check(Impl&, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // A range (length in imm_data) and nothing else.
  if (w.imm_data == 0 || w.num_sge || w.inline_len || w.has_grh ||
      w.xfer_mode != RHN_XFER_BASIC ||
      (w.flags & (RHN_WQE_F_INLINE | RHN_WQE_F_SIGNAL_REMOTE))) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  return RHN_CQE_SUCCESS;
}

bool build_packet(Impl&, QpObj&, const DecodedWqe& w, uint64_t, rhn_op_hdr& op,
                  PacketOut& out) {
  op.msg_len = w.imm_data;
  op.imm_data = 0;
  out.last = true;
  return true;
}

void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  if (pkt.op.opcode != RHN_WOP_PD_REPLY || !pkt.payload.empty()) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

// ---- Responder

void on_request(Impl& m, Request& r) {
  if (r.qp.type != RHN_QP_ENDPOINT || !r.first || !r.last || !r.data.empty() ||
      r.op.msg_len == 0) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_BAD_WQE);
    return;
  }
  uint64_t va;
  uint32_t key, mr_index;
  // Any right to the range lets a peer ask for it to stay in memory.
  const rhn_syndrome syn =
      resolve_target(m, r, 0, r.op.msg_len, &va, &key, &mr_index);
  if (syn != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
    refuse(m, r, syn);
    return;
  }
  const MrObj& mr = m.mrs[mr_index];
  if (r.op.opcode == RHN_WOP_PD_RELEASE) {
    if (!mr.on_demand) return;  // registered: nothing to let go
    const uint32_t first = page_of(mr, va);
    const uint32_t count = page_of(mr, va + r.op.msg_len - 1) - first + 1;
    if (!m.async_event(RHN_EQE_PD_RELEASE, key, pages_word(first, count), 0))
      not_ready(m, r, RHN_SYN_BUSY);  // the host's queue is full: later
    return;
  }
  switch (pin_check(m, r, mr_index, va, r.op.msg_len)) {
    case PinCheck::kPresent:
      if (!hold(m, mr_index, r.op, va)) {
        not_ready(m, r, RHN_SYN_BUSY);
        return;
      }
      m.respond(r.peer, RHN_WOP_PD_REPLY, RHN_SYN_NONE, r.op, {});
      return;
    case PinCheck::kRefused:
    case PinCheck::kHeld:
      return;
  }
}

}  // namespace

namespace {

// The first page of [va, va + len) that is not pinned (past the range:
// all are).
uint32_t first_missing(Impl& m, uint32_t mr_index, uint64_t va, uint64_t len) {
  const MrObj& mr = m.mrs[mr_index];
  const uint32_t last = page_of(mr, va + len - 1);
  uint32_t missing = page_of(mr, va);
  while (missing <= last && present(m, mr_index, missing)) missing++;
  return missing;
}

// The run that pins from page `missing` to the one holding `end` - 1: the
// one under way, or a new one (one host event); kNone when there is no
// room or the host's queue is full (the caller asks again later).
uint32_t pin_run(Impl& m, uint32_t mr_index, uint32_t missing, uint64_t end) {
  const MrObj& mr = m.mrs[mr_index];
  end = min(end, mr.iova + mr.length);
  m.counters.add(RHN_CNT_PIN_HELD);
  uint32_t run = run_covering(m, mr_index, missing);
  if (run != kNone) return run;
  for (uint32_t i = 0; i < m.pins.runs.size() && run == kNone; i++)
    if (!m.pins.runs[i].used) run = i;
  const uint32_t count = page_of(mr, end - 1) - missing + 1;
  if (run == kNone ||
      !m.async_event(RHN_EQE_PD_REQUEST, key_of(m, mr_index),
                     pages_word(missing, count), RHN_EQE_F_PD_PIN))
    return kNone;
  m.pins.runs[run] = PinRun{true, mr_index, missing, count, {}};
  m.counters.add(RHN_CNT_PIN_EVENTS);
  return run;
}

}  // namespace

bool pin_range(Impl& m, uint32_t mr_index, uint64_t va, uint64_t len) {
  if (mr_index == kNone || len == 0 || !m.mrs[mr_index].on_demand) return true;
  const uint32_t missing = first_missing(m, mr_index, va, len);
  if (missing > page_of(m.mrs[mr_index], va + len - 1)) return true;
  pin_run(m, mr_index, missing, va + len);
  return false;
}

bool pin_local_targets(Impl& m, const QpObj& qp, const DecodedWqe& w) {
  if (w.flags & RHN_WQE_F_INLINE) return true;
  for (uint32_t i = 0; i < w.num_sge; i++) {
    const rhn_sge sge = wqe_sge(qp.tx_raw, i);
    uint32_t mr_index;
    // A bad key is the answer's placement to report, as it always was.
    if (!sge.length ||
        m.check_key(sge.lkey, kNone, qp.pdn, RHN_ACCESS_LOCAL_WRITE, sge.addr,
                    sge.length, &mr_index) != RHN_SYN_NONE ||
        !m.mrs[mr_index].on_demand)
      continue;
    const uint32_t missing = first_missing(m, mr_index, sge.addr, sge.length);
    if (missing > page_of(m.mrs[mr_index], sge.addr + sge.length - 1)) continue;
    // What a send's gather leaves (Impl::sge_dma): pin_local_fault waits.
    m.pins.fault_mr = mr_index;
    m.pins.fault_va = sge.addr;
    m.pins.fault_len = sge.length;
    return false;
  }
  return true;
}

bool pin_local_fault(Impl& m, uint32_t qpn) {
  const uint32_t mr_index = m.pins.fault_mr;
  m.pins.fault_mr = kNone;
  if (mr_index >= m.mrs.size() || !m.mrs[mr_index].valid ||
      !m.mrs[mr_index].on_demand || m.pins.fault_len == 0)
    return false;
  // Left by another gather (a family's own) only if no SGE of this WQE
  // names that MR: this send failed otherwise.
  const QpObj& qp = m.qps[qpn];
  bool ours = false;
  for (uint32_t i = 0;
       i < qp.tx_wqe.num_sge && !(qp.tx_wqe.flags & RHN_WQE_F_INLINE); i++)
    ours |= wqe_sge(qp.tx_raw, i).lkey >> RHN_KEY_INDEX_SHIFT == mr_index;
  if (!ours) return false;
  const uint64_t va = m.pins.fault_va, end = va + m.pins.fault_len;
  const uint32_t missing = first_missing(m, mr_index, va, end - va);
  if (missing > page_of(m.mrs[mr_index], end - 1)) return false;
  // One event for the rest of the SGE; no run: ask again after a while.
  const uint32_t run = pin_run(m, mr_index, missing, end);
  if (run == kNone)
    m.wake_later(qpn, m.now + RHN_PIN_RETRY_US * 1000ull);
  else
    m.wait_on(qpn, m.pins.runs[run].senders);
  return true;
}

namespace {

// Request r, which reaches MR mr_index at va, waits for pages [missing,
// the one holding end - 1): refused PINNING (a PD_REQ held) and recorded,
// so that its requester hears PIN_READY when they are in. No run: no
// record; the requester sends again after RHN_PIN_RETRY_US.
PinCheck wait_for_pins(Impl& m, Request& r, uint32_t mr_index, uint64_t va,
                       uint32_t missing, uint64_t end) {
  const uint32_t run = pin_run(m, mr_index, missing, end);
  PinWaiter* w = run == kNone ? nullptr : new_waiter(m, r.qp.context);
  if (w) {
    w->used = true;
    w->reply = r.op.opcode == RHN_WOP_PD_REQ;
    w->orders = !w->reply && r.qp.type == RHN_QP_ENDPOINT;
    w->node = r.node;
    w->run = run;
    w->qpn = r.qpn;
    w->context = r.qp.context;
    w->since = m.now;
    w->op = r.op;
    w->va = va;
    if (w->reply) return PinCheck::kHeld;  // answered when the run is done
  }
  not_ready(m, r, RHN_SYN_PINNING);
  return PinCheck::kRefused;
}

}  // namespace

PinCheck pin_check(Impl& m, Request& r, uint32_t mr_index, uint64_t va,
                   uint64_t len) {
  if (mr_index == kNone || len == 0 || !m.mrs[mr_index].on_demand)
    return PinCheck::kPresent;
  const uint32_t missing = first_missing(m, mr_index, va, len);
  if (missing > page_of(m.mrs[mr_index], va + len - 1))
    return PinCheck::kPresent;
  // The rest of the message from there: a first touch is one event.
  uint64_t end = va + len;
  if (r.op.msg_len > r.op.msg_offset)
    end = max(end, va + (r.op.msg_len - r.op.msg_offset));
  return wait_for_pins(m, r, mr_index, va, missing, end);
}

bool pin_receive(Impl& m, Request& r, const RxContext& ctx, uint64_t len) {
  uint64_t offset = ctx.length;  // where the message starts landing
  for (uint32_t i = 0; i < ctx.num_sge && len; i++) {
    const rhn_sge& sge = ctx.sge[i];
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const uint64_t take = min<uint64_t>(sge.length - offset, len);
    const uint64_t va = sge.addr + offset;
    const uint32_t mr_index = sge.lkey >> RHN_KEY_INDEX_SHIFT;
    len -= take;
    offset = 0;
    if (mr_index >= m.mrs.size() || !m.mrs[mr_index].on_demand) continue;
    const uint32_t missing = first_missing(m, mr_index, va, take);
    if (missing > page_of(m.mrs[mr_index], va + take - 1)) continue;
    // One event for this SGE's part of the message; a later SGE's
    // missing pages are found when the message comes again.
    if (r.qp.type == RHN_QP_UD)
      pin_run(m, mr_index, missing, va + take);  // a datagram is not resent
    else
      wait_for_pins(m, r, mr_index, va, missing, va + take);
    return false;
  }
  return true;
}

void pin_place(Impl& m, CardMemory& mem) {
  m.pins.runs = mem.table<PinRun>(max<uint32_t>(m.cfg.pin.runs, 1));
  m.pins.waiters = mem.table<PinWaiter>(max<uint32_t>(m.cfg.pin.waiters, 1));
}

void pin_reset(Impl& m) {
  m.pins.runs.fill(PinRun{});
  m.pins.waiters.fill(PinWaiter{});
  m.pins.waiters_used = 0;
  m.pins.context_quota =
      max<uint32_t>(1, static_cast<uint32_t>(uint64_t{m.cfg.pin.waiters} *
                                             m.cfg.pin.context_share / 256));
  m.shares.set_limit(kResPinWaiters, m.cfg.pin.waiters, m.pins.context_quota,
                     m.cfg.account_share);
}

rhn_admin_status pin_mapped(Impl& m, uint32_t context,
                            const rhn_admin_pd_mapped& c) {
  const uint32_t idx = c.key >> RHN_KEY_INDEX_SHIFT;
  if (idx == 0 || idx >= m.mrs.size() || !m.mrs[idx].valid ||
      !m.mrs[idx].on_demand || m.mrs[idx].context != context ||
      m.mrs[idx].variant != (c.key & RHN_KEY_VARIANT_MASK))
    return RHN_ADMIN_BAD_HANDLE;
  if ((c.status != RHN_SYN_NONE && c.status != RHN_SYN_NOT_PINNED) ||
      c.num_pages == 0 || c.first_page >= m.mrs[idx].num_pages ||
      c.num_pages > m.mrs[idx].num_pages - c.first_page)
    return RHN_ADMIN_BAD_PARAM;
  // Leaf entries went from invalid to valid: no translation was cached.
  for (uint32_t i = 0; i < m.pins.runs.size(); i++) {
    const PinRun& run = m.pins.runs[i];
    if (run.used && run.mr_index == idx &&
        run.first < c.first_page + c.num_pages &&
        c.first_page < run.first + run.count)
      finish_run(m, i, c.status);
  }
  return RHN_ADMIN_OK;
}

void pin_mr_gone(Impl& m, uint32_t mr_index) {
  for (uint32_t i = 0; i < m.pins.runs.size(); i++)
    if (m.pins.runs[i].used && m.pins.runs[i].mr_index == mr_index)
      finish_run(m, i, RHN_SYN_BAD_KEY);
}

void pin_qp_gone(Impl& m, uint32_t qpn) {
  if (!m.pins.waiters_used) return;
  for (auto& w : m.pins.waiters) {
    if (!w.used || w.qpn != qpn) continue;
    if (w.reply)
      send_nak(m, w.node, w.op, RHN_SYN_BAD_QP);
    else if (w.run != kNone)
      tell_ready(m, w);  // sent again, it finds no QP
    free_waiter(m, w);
  }
}

void pin_node_failed(Impl& m, uint16_t node) {
  if (!m.pins.waiters_used) return;
  for (auto& w : m.pins.waiters)
    if (w.used && w.node == node) free_waiter(m, w);
}

bool pin_holds_back(Impl& m, Peer& p, uint32_t qpn, const rhn_op_hdr& op) {
  const uint16_t node = m.node_of(p);
  for (auto& w : m.pins.waiters) {
    if (!w.used || !w.orders || w.qpn != qpn || w.node != node ||
        w.op.src_qpn != op.src_qpn)
      continue;
    const bool first = op.flags & RHN_WOP_F_FIRST;
    if (op.msn == w.op.msn && first && w.run == kNone) {
      free_waiter(m, w);  // it came again once its pages were in
      return false;
    }
    // Still pinning, or a later message: refused (its later packets are
    // dropped by the NAK memory) and sent again in order.
    if (first) {
      m.counters.add(RHN_CNT_PIN_HELD);
      m.counters.add(RHN_CNT_RNR_NAKS_SENT);
      m.respond(p, RHN_WOP_NAK, RHN_SYN_PINNING, op, {});
    }
    return true;
  }
  return false;
}

void pin_ready(Impl& m, Peer& p, Span<const uint8_t> payload) {
  rhn_fw_pin_ready msg;
  if (payload.size() != sizeof(msg)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&msg, payload.data(), sizeof(msg));
  const uint32_t qpn = msg.qpn & RHN_WIRE_QPN_MASK;
  if (qpn == 0 || qpn >= m.qps.size() || !m.qps[qpn].valid ||
      (msg.qpn >> RHN_WIRE_INCARNATION_SHIFT) != m.qps[qpn].incarnation)
    return;  // gone or reset meanwhile
  QpObj& qp = m.qps[qpn];
  const uint16_t node = m.node_of(p);
  bool any = false;
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    Inflight& e = m.entry(qpn, i);
    if (e.state != MsgState::kResendPending || !e.pin_wait || e.peer != node)
      continue;
    e.resend_at = m.now;
    any = true;
  }
  if (!any) return;
  qp.has_resend = true;
  m.wake_later(qpn, m.now);
}

extern const OpFamily kPinFamily = {
    .name = "pindown",
    .check = check,
    .send_unsequenced = nullptr,
    .execute_local = nullptr,
    .build_packet = build_packet,
    .on_response = on_response,
    .has_room = nullptr,
    .on_request = on_request,
};

}  // namespace rhinet::fw
