// SPDX-License-Identifier: BSD-2-Clause
// The engine shell: registers, ingress FIFOs and the poll loop that runs
// every module for a bounded amount of work.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "ops/trigger/trigger.h"

namespace rhinet::fw {

namespace {
// Lost-doorbell words (Engine::Impl::eq_db_lost, cq_arm_lost): the bit
// that says the word holds one; for a CQ arm also "solicited only".
constexpr uint64_t kLostPending = 1ull << 32;
constexpr uint64_t kLostArmPending = 1;
constexpr uint64_t kLostArmSolicited = 2;
}  // namespace

Engine::Impl::Impl(const EngineConfig& config, HostBus& host_bus,
                   Wire& host_wire, CardMemory& mem)
    : cfg(config),
#if defined(RHN_FW_CARD)
      bus(host_bus),
#else
      counted_bus(host_bus, counters),
      bus(counted_bus),
#endif
      wire(host_wire),
      tlb(config.tlb_entries, counters, mem),
      kicks(config.kick_fifo_entries, mem),
      rx(config.rx_fifo_frames, mem),
      free_areas(config.max_areas, mem),
      free_read_ctxs(config.max_qps, mem),
      free_responder_reads(config.responder_reads, mem),
      free_read_bitmaps(config.responder_bitmaps, mem),
      ready(config.max_qps, mem),
      peer_ready(config.max_nodes, mem),
      fw_queue(config.fw_messages, mem),
      free_fw_msgs(config.fw_messages, mem),
      free_rx_ctxs(config.rx_contexts, mem) {
  inline_staging = mem.table<RawWqe>(cfg.db_pages);
  cq_published = mem.table<Atomic<uint32_t>>(cfg.max_cqs);
  run_cqes = mem.table<rhn_cqe>(cfg.max_cqs);
  open_runs = mem.table<uint32_t>(cfg.max_cqs);
  eq_db_lost = mem.table<Atomic<uint64_t>>(cfg.max_eqs);
  cq_arm_lost = mem.table<Atomic<uint64_t>>(cfg.max_cqs);
  cq_owner = mem.table<Atomic<uint32_t>>(cfg.max_cqs);
  raw_frame = mem.bytes(RHN_MAX_FRAME);
  contexts = mem.table<ContextObj>(cfg.db_pages);
  shares.place(cfg.db_pages, mem);
  pds = mem.table<PdObj>(cfg.max_pds);
  mrs = mem.table<MrObj>(cfg.max_mrs);
  eqs = mem.table<EqObj>(cfg.max_eqs);
  cqs = mem.table<CqObj>(cfg.max_cqs);
  srqs = mem.table<SrqObj>(cfg.max_srqs);
  qps = mem.table<QpObj>(cfg.max_qps);
  areas = mem.table<AreaObj>(cfg.max_areas);
  area_buckets =
      mem.table<uint32_t>(bit_ceil(max<uint32_t>(cfg.max_areas, 16)));
  // Twin memory is reserved, not touched: pages cost host memory only once
  // an allocation zeroes them.
  twin_pages = static_cast<uint32_t>(
      min<uint64_t>(cfg.twin_bytes / RHN_TWIN_PAGE, 1u << 24));
  twin_mem = mem.bytes(size_t{twin_pages} * RHN_TWIN_PAGE, RHN_TWIN_PAGE);
  twins = mem.table<TwinObj>(min<uint32_t>(cfg.max_twins, 0xffff));
  xfer_scratch = mem.bytes(kXferScratch);
  read_bitmaps = mem.bytes(size_t{cfg.responder_bitmaps} * RHN_WIRE_MTU);
  inflight = mem.table<Inflight>(size_t{cfg.max_qps} * cfg.max_inflight_per_qp);
  tx_templates = mem.table<TxTemplate>(cfg.max_qps);
  read_ctxs = mem.table<ReadCtx>(cfg.max_qps);
  responder_reads = mem.table<ResponderRead>(cfg.responder_reads);
  if (cfg.max_nodes > RHN_MAX_NODES) cfg.max_nodes = RHN_MAX_NODES;
  peers = mem.table<Peer>(cfg.max_nodes);
  slots = mem.table<SendSlot>(cfg.send_packet_slots);
  rx_ctxs = mem.table<RxContext>(cfg.rx_contexts);
  fw_msgs = mem.table<FwMessage>(cfg.fw_messages);
  modules_place(*this, mem);
  response_reserve = cfg.send_packet_slots / 8;
  // A context's share of send memory, but at least one window's worth
  // (small configurations), so one context can always fill a channel.
  const uint32_t request_slots = cfg.send_packet_slots - response_reserve;
  context_slot_quota = max<uint32_t>(
      min(cfg.channel_window, request_slots),
      uint32_t(uint64_t{request_slots} * cfg.context_slot_share / 256));
  rx_context_quota = max<uint32_t>(
      1, uint32_t(uint64_t{cfg.rx_contexts} * cfg.context_rx_share / 256));
  // Power-on epoch for our sessions: different from the last power-on's
  // (peers accept an older one only after the old stream went quiet).
  boot_session = cfg.boot_session
                     ? cfg.boot_session
                     : static_cast<uint16_t>((bus.now_ns() >> 20) * 37 + 1);
  if (mem.exhausted()) {
    // The configuration does not fit the card's memory: the engine stays
    // down and says so; the driver sees a failed device, not a wrong one.
    out_of_memory = true;
    status_reg.store(RHN_STATUS_FATAL);
    return;
  }
  for (uint32_t n = 0; n < cfg.max_nodes; n++)
    peers[n].tx_session = boot_session;
  reset();
}

void Engine::Impl::reset() {
  // Everything back to power-on state; the doorbell pages stay mapped.
  for (auto& c : contexts) c = ContextObj{};
  shares.reset();
  shares.set_limit(Res::kTxSlots, cfg.send_packet_slots - response_reserve,
                   context_slot_quota, cfg.account_share);
  shares.set_limit(Res::kRxContexts, cfg.rx_contexts, rx_context_quota,
                   cfg.account_share);
  shares.set_limit(
      Res::kAreas, cfg.max_areas,
      uint32_t(uint64_t{cfg.max_areas} * cfg.context_area_share / 256),
      cfg.account_share);
  for (auto& o : pds) o = PdObj{};
  for (auto& o : mrs) o = MrObj{};
  if (!++mr_epoch) mr_epoch = 1;
  rxw_flush();
  for (auto& o : eqs) o = EqObj{};
  for (auto& o : cqs) o = CqObj{};
  num_open_runs = 0;  // their runs are gone with them
  for (uint32_t i = 0; i < cfg.max_cqs; i++) {
    cq_published[i].store(0, MemOrder::kRelaxed);
    cq_arm_lost[i].store(0, MemOrder::kRelaxed);
    cq_owner[i].store(0, MemOrder::kRelaxed);
  }
  for (uint32_t i = 0; i < cfg.max_eqs; i++)
    eq_db_lost[i].store(0, MemOrder::kRelaxed);
  for (auto& o : srqs) o = SrqObj{};
  for (auto& o : qps) {
    const uint32_t gen = o.gen;
    const uint8_t incarnation = o.incarnation;
    o = QpObj{};
    o.gen = gen;
    o.incarnation = incarnation;
  }
  raw_qpn = kNone;
  next_qpn = RHN_QPN_GSI + 1;
  for (auto& g : gid_table) g.fill(0);
  gid_types.fill(RHN_GID_ROCE_V1);
  // A new secret for the keyed tables (all empty now): the clock, this
  // NIC's identity and power-on epoch, mixed with the previous secret.
  table_hash.reseed(bus.now_ns() ^ uint64_t{cfg.node_id} << 48 ^
                    uint64_t{boot_session} << 32 ^
                    reinterpret_cast<uintptr_t>(this));
  for (auto& o : areas) o = AreaObj{};
  for (uint32_t& head : area_buckets) head = kNone;
  free_areas.fill_indices(areas.size());
  for (auto& o : twins) {
    const uint16_t gen = o.gen;
    o = TwinObj{};
    o.gen = static_cast<uint16_t>(gen + 1);
  }
  for (auto& o : read_ctxs) o = ReadCtx{};
  free_read_ctxs.fill_indices(read_ctxs.size());
  for (auto& o : responder_reads) o = ResponderRead{};
  free_read_bitmaps.fill_indices(min<uint32_t>(cfg.responder_bitmaps, 0xffff));
  free_responder_reads.fill_indices(responder_reads.size());
  // Every channel starts a newer session than the one it had, so peers
  // see that we lost our state and never mistake it for an old stream.
  for (uint32_t n = 0; n < cfg.max_nodes; n++)
    reset_peer(peers[n], static_cast<uint16_t>(peers[n].tx_session + 1));
  busy_head = kNone;
  next_peer_deadline = UINT64_MAX;
  scan_head = kNone;  // every QP is gone
  scan_at = UINT64_MAX;
  cq_mod_at = UINT64_MAX;
  peer_ready.clear();
  slot_waiters = WaitList{};
  for (SendSlot& s : slots) {
    s.next = kNone;
    s.context = kNone;
  }
  free_slots.place(slots.data());
  free_slots.fill(slots.size());
  fw_reset();
  modules_reset(*this);
  rx_ctxs.fill(RxContext{});
  free_rx_ctxs.fill_indices(rx_ctxs.size());
  ready.clear();
  next_due = 0;
  tlb.invalidate_all();
  counters.reset();
  admin_consumer = admin_tail = admin_cq_producer = 0;
  // The driver starts its ring again at 0 after a reset; a rescan must not
  // take the tail (or CONTROL) written before it.
  admin_tail_written.store(0);
  control_written.store(0);
  contexts[0].valid = true;  // the kernel's context always exists
  // An administrative SET_LINK is engine state: the link is the cable's
  // again (no EQ exists to hear of it).
  link_up.store(carrier.load());
  link_reported = link_up.load();
  status_reg.store(RHN_STATUS_READY |
                   (link_up.load() ? RHN_STATUS_LINK_UP : 0));
  control.store(0);
}

uint64_t Engine::Impl::base_rto(const Peer& p) const {
  const uint64_t measured =
      (uint64_t{p.srtt_us} + 4 * uint64_t{p.rttvar_us}) * 1000;
  return clamp(measured, cfg.retransmit_timeout_ns,
               max(cfg.retransmit_timeout_ns, cfg.max_retransmit_timeout_ns));
}

uint64_t Engine::Impl::rto(const Peer& p) const {
  const uint32_t shift = min<uint32_t>(max(p.retries, p.backoff), 7);
  const uint64_t base = base_rto(p);
  return min(base << shift, max(base, cfg.max_backed_off_timeout_ns));
}

void Engine::Impl::rtt_sample(Peer& p, uint32_t sample_us) {
  // RFC 6298 section 2, gains 1/8 and 1/4.
  sample_us = max<uint32_t>(sample_us, 1);
  p.backoff = 0;
  if (!p.srtt_us) {
    p.srtt_us = sample_us;
    p.rttvar_us = sample_us / 2;
  } else {
    const uint32_t err =
        sample_us > p.srtt_us ? sample_us - p.srtt_us : p.srtt_us - sample_us;
    p.rttvar_us = p.rttvar_us - p.rttvar_us / 4 + err / 4;
    p.srtt_us = max<uint32_t>(p.srtt_us - p.srtt_us / 8 + sample_us / 8, 1);
  }
}

void Engine::Impl::schedule(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  if (qp.in_ready || qp.waiting_on) return;
  qp.in_ready = ready.push(qpn);
}

void Engine::Impl::report_link() {
  const bool up = link_up.load();
  if (up == link_reported) return;
  link_reported = up;
  uint32_t s = status_reg.load();
  status_reg.store(up ? (s | RHN_STATUS_LINK_UP) : (s & ~RHN_STATUS_LINK_UP));
  async_event(RHN_EQE_PORT_CHANGE, 0, up ? 1 : 0);
}

bool Engine::Impl::async_event(uint8_t type, uint32_t object, uint64_t data,
                               uint8_t flags) {
  for (uint32_t e = 0; e < eqs.size(); e++)
    if (eqs[e].valid)  // the async EQ is the first one created
      return eq_push(e, type, object, data, flags);
  return false;
}

bool Engine::Impl::drain_kicks() {
  bool did = false;
  for (uint32_t n = 0; n < 256; n++) {
    Kick* k = kicks.peek();
    if (!k) break;
    handle_kick(*k);
    kicks.release();
    did = true;
  }
  if (kick_overflow.exchange(false)) {
    // Lost kicks: look at every queue, as if each had been kicked; a
    // reset the host asked for (CONTROL reads RESET) happens.
    counters.add(RHN_CNT_KICK_OVERFLOWS);
    if (control.load() & RHN_CONTROL_RESET) {
      reset();
      return true;
    }
    take_lost_doorbells();
    did = true;
  }
  return did;
}

void Engine::Impl::take_lost_doorbells() {
  // Every kind of kick, without the kick: what it would have said is in
  // the registers' latest values, the lost-doorbell words and the queues'
  // indices in host memory. Each is safe to apply twice (a consumer index
  // only moves forward, an arm is one arm), as a kick still queued may
  // say it again.
  const uint32_t written = control_written.load();
  if (written != control.load() && !(written & RHN_CONTROL_RESET))
    apply_control(written);
  for (uint32_t e = 0; e < eqs.size(); e++) {
    if (!(eq_db_lost[e].load(MemOrder::kRelaxed) & kLostPending)) continue;
    const uint64_t v = eq_db_lost[e].exchange(0);
    if (eqs[e].valid)
      apply_eq_doorbell(e, static_cast<uint32_t>(v), v & RHN_EQ_DB_ARM);
  }
  for (uint32_t c = 0; c < cqs.size(); c++) {
    if (!(cq_arm_lost[c].load(MemOrder::kRelaxed) & kLostArmPending)) continue;
    const uint64_t v = cq_arm_lost[c].exchange(0);
    if (cqs[c].valid &&
        cq_owner[c].load(MemOrder::kRelaxed) == cqs[c].context + 1)
      cq_arm(c, v & kLostArmSolicited, static_cast<uint32_t>(v >> 32));
  }
  trigger_take_sums(*this);  // adds rung before the lost kicks
  // SRQs a family runs as if kicked: a tag-matching SRQ's list operations
  // (plain SRQs are read when a receive needs a WQE; kicking their family
  // hook would count a bad doorbell).
  for (uint32_t s = 0; s < srqs.size(); s++)
    if (srqs[s].valid && srqs[s].family != kNone)
      modules_srq_kick(*this, s, RHN_DB_SRQ_TM_OPS);
  for (uint32_t q = 0; q < qps.size(); q++)
    if (qps[q].valid) {
      if (qps[q].state == RHN_QPS_ERR) qps[q].flushing = true;
      modules_rq_kick(*this, q);
      schedule(q);
    }
  admin_tail = admin_tail_written.load();
  admin_process();
  report_link();
}

void Engine::Impl::apply_control(uint32_t value) {
  control.store(value);
  if (value & RHN_CONTROL_ENABLE) {
    const uint32_t log = admin_log_depth.load();
    const uint64_t sq = admin_sq_base.load(), cq = admin_cq_base.load();
    if (log >= 1 && log <= RHN_ADMIN_MAX_LOG_DEPTH && sq && cq &&
        !(sq & 0xfff) && !(cq & 0xfff))
      status_reg.fetch_or(RHN_STATUS_ADMIN_ON);
    else
      counters.add(RHN_CNT_BAD_ADMIN_CMDS);
  } else {
    status_reg.fetch_and(~RHN_STATUS_ADMIN_ON);
  }
}

void Engine::Impl::apply_eq_doorbell(uint32_t eqn, uint32_t ci, bool arm) {
  EqObj& eq = eqs[eqn];
  if (ci - eq.consumer <= eq.producer - eq.consumer) eq.consumer = ci;
  if (eq.deferred) eq_catch_up(eqn);
  if (arm) {
    eq.armed = true;
    // Entries the driver has not consumed yet: interrupt right away.
    if (eq.producer != eq.consumer &&
        (control.load() & RHN_CONTROL_INTR_ENABLE)) {
      eq.armed = false;
      bus.raise_msix(eq.vector);
    }
  }
}

void Engine::Impl::handle_kick(Kick& k) {
  switch (k.kind) {
    case KickKind::kControl:
      if (k.value & RHN_CONTROL_RESET) {
        reset();
        return;
      }
      apply_control(static_cast<uint32_t>(k.value));
      return;
    case KickKind::kAdmin:
      // The latest tail written: a kick still queued behind a rescan that
      // took a newer one never moves the tail back.
      admin_tail = admin_tail_written.load();
      admin_process();
      return;
    case KickKind::kEqDoorbell: {
      const uint32_t eqn = static_cast<uint32_t>(
          (k.value >> RHN_EQ_DB_EQN_SHIFT) & RHN_EQ_DB_EQN_MASK);
      if (eqn >= eqs.size() || !eqs[eqn].valid) {
        counters.add(RHN_CNT_BAD_DOORBELLS);
        return;
      }
      apply_eq_doorbell(eqn, static_cast<uint32_t>(k.value & RHN_EQ_DB_CI_MASK),
                        k.value & RHN_EQ_DB_ARM);
      return;
    }
    case KickKind::kLink:
      report_link();
      return;
    case KickKind::kTrigger:
      trigger_doorbell(*this, k.page, k.value);
      return;
    case KickKind::kTriggerSums:
      trigger_take_sums(*this);
      return;
    default:
      break;
  }
  // Queue kicks: the queue must belong to the context of the page written.
  const uint32_t qn = static_cast<uint32_t>(k.value) & RHN_DB_QN_MASK;
  const uint32_t ctx = k.page;
  switch (k.kind) {
    case KickKind::kSq:
    case KickKind::kRq: {
      if (qn >= qps.size() || !qps[qn].valid || qps[qn].context != ctx) {
        counters.add(RHN_CNT_BAD_DOORBELLS);
        return;
      }
      QpObj& qp = qps[qn];
      if (k.kind == KickKind::kSq && k.has_inline) take_inline(qp, k);
      if (k.kind == KickKind::kSq) sq_kicked(qp);
      if (qp.state == RHN_QPS_ERR) qp.flushing = true;  // flush new posts
      if (k.kind == KickKind::kRq) modules_rq_kick(*this, qn);  // irecvs
      schedule(qn);
      return;
    }
    case KickKind::kSrq:
      if (qn >= srqs.size() || !srqs[qn].valid || srqs[qn].context != ctx) {
        counters.add(RHN_CNT_BAD_DOORBELLS);
        return;
      }
      modules_srq_kick(*this, qn, k.value);
      return;
    case KickKind::kCqArm:
      if (qn >= cqs.size() || !cqs[qn].valid || cqs[qn].context != ctx) {
        counters.add(RHN_CNT_BAD_DOORBELLS);
        return;
      }
      cq_arm(qn, (k.value & RHN_DB_CQ_SOLICITED) != 0,
             static_cast<uint32_t>(k.value >> 32));
      return;
    default:
      return;
  }
}

void Engine::Impl::take_inline(QpObj& qp, const Kick& k) {
  // Doorbell-page WQE: use it if it is the next one to fetch.
  if (qp.state != RHN_QPS_RTS || qp.tx_active) return;
  uint16_t idx;
  memcpy(&idx, k.inline_wqe.bytes + 4, sizeof(idx));
  if (idx == static_cast<uint16_t>(qp.sq_fetch)) {
    copy_wqe(qp.tx_raw, k.inline_wqe);
    qp.prefetched_slot = qp.sq_fetch;
  }
}

bool Engine::Impl::lane_kick() {
  // Only when this SQ doorbell is the one event: another kick, a lost
  // one or a frame would come before the requester in the generic poll.
  if (kick_overflow.load(MemOrder::kRelaxed) || !kicks.holds_one() ||
      rx.peek() || (rx_source && rx_source->waiting()))
    return false;
  const Kick& k = *kicks.peek();
  const uint32_t qn = static_cast<uint32_t>(k.value) & RHN_DB_QN_MASK;
  if (k.kind != KickKind::kSq || qn >= qps.size()) return false;
  QpObj& qp = qps[qn];
  // A QP the kick would put on the ready list (handle_kick, schedule):
  // valid, of the page's context, sending, not queued or waiting.
  if (!qp.valid || qp.context != k.page || qp.state != RHN_QPS_RTS ||
      qp.in_ready || qp.waiting_on)
    return false;
  if (k.has_inline) take_inline(qp, k);
  sq_kicked(qp);
  kicks.release();
  requester_step(qn, 16);
  return true;
}

void Engine::Impl::wake_later(uint32_t qpn, uint64_t at) {
  // The earliest wins: whoever is woken early looks again and re-arms.
  if (qps[qpn].wake_at && qps[qpn].wake_at < at) return;
  qps[qpn].wake_at = at;
  if (at < next_rnr_wake) next_rnr_wake = at;
  if (at < next_qp_wake) next_qp_wake = at;
}

bool Engine::Impl::run_timers() {
  bool did = run_peers();
  if (now >= next_qp_wake) {
    if (now >= scan_at) did |= record_scan();
    if (now >= cq_mod_at) did |= cq_mod_expire();
    if (now >= next_rnr_wake) {
      // Rare (RNR waits): a scan of the QP table is fine here.
      next_rnr_wake = UINT64_MAX;
      for (uint32_t q = 0; q < qps.size(); q++) {
        QpObj& qp = qps[q];
        if (!qp.valid || !qp.wake_at) continue;
        if (qp.wake_at <= now) {
          qp.wake_at = 0;
          schedule(q);
          did = true;
        } else if (qp.wake_at < next_rnr_wake) {
          next_rnr_wake = qp.wake_at;
        }
      }
    }
    next_qp_wake = min(min(next_rnr_wake, scan_at), cq_mod_at);
  }
  return did;
}

uint64_t Engine::Impl::stages_due() {
  if (!peer_ready.empty() || !fw_queue.empty() || !ready.empty()) return 0;
  return min(min(next_peer_deadline, next_qp_wake), modules_due(*this));
}

// ---- Engine (public) ---------------------------------------------------

Engine::Engine(const EngineConfig& config, HostBus& bus, Wire& wire,
               CardMemory& mem)
    : impl_(mem.object<Impl>(config, bus, wire, mem)) {}

bool Engine::failed() const { return !impl_ || impl_->out_of_memory; }

uint64_t Engine::reg_read(uint32_t offset, unsigned size) {
  if (!impl_) return offset == RHN_REG_STATUS ? RHN_STATUS_FATAL : 0;
  Impl& m = *impl_;
  if (offset >= RHN_REG_COUNTERS &&
      offset < RHN_REG_COUNTERS + 8 * RHN_CNT_COUNT) {
    const uint64_t v = m.counters.get((offset - RHN_REG_COUNTERS) / 8);
    return (offset & 4) ? v >> 32 : (size == 8 ? v : v & 0xffffffffu);
  }
  uint64_t v = 0;
  switch (offset) {
    case RHN_REG_VERSION:
      v = RHN_VERSION;
      break;
    case RHN_REG_CAPS:
      // The stages' own, and what the families built in bring.
      v = RHN_CAP_RC | RHN_CAP_UD | RHN_CAP_ENDPOINT | RHN_CAP_SRQ |
          RHN_CAP_AREA | RHN_CAP_INLINE_DB | RHN_CAP_STATUS_WORD |
          RHN_CAP_RQ_RECORD_READ | RHN_CAP_SQ_DOORBELL_ON_REQUEST |
          RHN_CAP_XRC | RHN_CAP_SQ_EVENT_INDEX | RHN_CAP_CQE_RUNS |
          family_caps();
      break;
    case RHN_REG_NODE_ID:
      v = m.cfg.node_id;
      break;
    case RHN_REG_STATUS:
      v = m.status_reg.load();
      break;
    case RHN_REG_CONTROL:
      v = m.control.load();
      break;
    case RHN_REG_DB_PAGES:
      v = m.cfg.db_pages;
      break;
    case RHN_REG_MSIX_VECTORS:
      v = m.cfg.msix_vectors;
      break;
    case RHN_REG_MTU:
      v = RHN_WIRE_MTU;
      break;
    case RHN_REG_MAC_LO:
      v = m.cfg.mac[0] | (m.cfg.mac[1] << 8) | (m.cfg.mac[2] << 16) |
          (uint32_t{m.cfg.mac[3]} << 24);
      break;
    case RHN_REG_MAC_HI:
      v = m.cfg.mac[4] | (m.cfg.mac[5] << 8);
      break;
    case RHN_REG_ADMIN_SQ_BASE:
      v = m.admin_sq_base.load();
      break;
    case RHN_REG_ADMIN_SQ_BASE + 4:
      v = m.admin_sq_base.load() >> 32;
      break;
    case RHN_REG_ADMIN_CQ_BASE:
      v = m.admin_cq_base.load();
      break;
    case RHN_REG_ADMIN_CQ_BASE + 4:
      v = m.admin_cq_base.load() >> 32;
      break;
    case RHN_REG_ADMIN_LOG_DEPTH:
      v = m.admin_log_depth.load();
      break;
    default:
      v = 0;
      break;
  }
  return size == 8 ? v : v & 0xffffffffu;
}

namespace {
void write_half(Atomic<uint64_t>& reg, uint32_t offset_in_reg, uint64_t value,
                unsigned size) {
  if (size == 8) {
    reg.store(value);
  } else if (offset_in_reg == 0) {
    reg.store((reg.load() & ~0xffffffffull) | (value & 0xffffffffu));
  } else {
    reg.store((reg.load() & 0xffffffffull) | (value << 32));
  }
}
}  // namespace

void Engine::reg_write(uint32_t offset, uint64_t value, unsigned size) {
  if (failed()) return;
  Impl& m = *impl_;
  m.counters.add_bus_shared(RHN_CNT_MMIO_WRITES);
  KickKind kind;
  switch (offset) {
    case RHN_REG_CONTROL:
      kind = KickKind::kControl;
      break;
    case RHN_REG_ADMIN_SQ_TAIL:
      kind = KickKind::kAdmin;
      break;
    case RHN_REG_EQ_DOORBELL:
      kind = KickKind::kEqDoorbell;
      break;
    case RHN_REG_ADMIN_SQ_BASE:
    case RHN_REG_ADMIN_SQ_BASE + 4:
      write_half(m.admin_sq_base, offset - RHN_REG_ADMIN_SQ_BASE, value, size);
      return;
    case RHN_REG_ADMIN_CQ_BASE:
    case RHN_REG_ADMIN_CQ_BASE + 4:
      write_half(m.admin_cq_base, offset - RHN_REG_ADMIN_CQ_BASE, value, size);
      return;
    case RHN_REG_ADMIN_LOG_DEPTH:
      m.admin_log_depth.store(static_cast<uint32_t>(value));
      return;
    default:
      return;  // read-only or unknown: ignored
  }
  if (kind == KickKind::kEqDoorbell && size != 8) return;
  // A reset reads as pending (RESET set) from the write until it is done,
  // so a driver polling for RESET to clear never sees it done early.
  if (kind == KickKind::kControl && (value & RHN_CONTROL_RESET))
    m.control.fetch_or(RHN_CONTROL_RESET);
  if (kind == KickKind::kControl)
    m.control_written.store(static_cast<uint32_t>(value));
  if (kind == KickKind::kAdmin)
    m.admin_tail_written.store(static_cast<uint32_t>(value));
  if (!m.kicks.push_with([&](Kick& k) {
        k.kind = kind;
        k.has_inline = false;
        k.page = 0;
        k.value = value;
      })) {
    if (kind == KickKind::kEqDoorbell) m.keep_lost_eq_doorbell(value);
    m.kick_overflow.store(true);
  }
}

void Engine::doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                            unsigned size, uint16_t requester) {
  if (failed()) return;
  Impl& m = *impl_;
  if (page >= m.cfg.db_pages || offset >= RHN_DB_PAGE_SIZE) return;
  m.counters.add_bus_shared(RHN_CNT_MMIO_WRITES);
  if (rhn_db_in_inline_window(offset, size)) {
    memcpy(m.inline_staging[page].bytes + (offset - RHN_DB_INLINE_WQE), &value,
           size);
    return;
  }
  KickKind kind;
  switch (offset) {
    case RHN_DB_SQ:
      kind = KickKind::kSq;
      // Who rang: the host CPU, or a device posting by itself.
      m.counters.add_shared(requester ? RHN_CNT_PEER_DOORBELLS
                                      : RHN_CNT_HOST_DOORBELLS);
      break;
    case RHN_DB_RQ:
      kind = KickKind::kRq;
      m.counters.add_bus_shared(RHN_CNT_RQ_DOORBELLS);
      break;
    case RHN_DB_SRQ:
      kind = KickKind::kSrq;
      m.counters.add_bus_shared(RHN_CNT_SRQ_DOORBELLS);
      break;
    case RHN_DB_CQ_ARM:
      kind = KickKind::kCqArm;
      m.counters.add_bus_shared(RHN_CNT_CQ_ARM_DOORBELLS);
      break;
    case RHN_DB_TRIGGER:
      // One 8-byte store carries the handle and the addend together.
      if (size != 8) {
        m.counters.add_shared(RHN_CNT_TRIGGER_DROPPED_ADDS);
        return;
      }
      // Into the counter's pending sum, so that a full FIFO loses no
      // add: only a kick saying "sums pending" is queued, and that one
      // may be lost (the overflow's rescan takes the sums).
      switch (trigger_doorbell_sum(m, page, value)) {
        case TriggerDbAdd::kKickSums:
          kind = KickKind::kTriggerSums;
          break;
        case TriggerDbAdd::kViaFifo:
          kind = KickKind::kTrigger;
          break;
        default:
          return;
      }
      break;
    default:
      return;
  }
  const bool with_inline =
      kind == KickKind::kSq && (value & RHN_DB_SQ_INLINE) != 0;
  if (with_inline) m.counters.add_bus_shared(RHN_CNT_SQ_INLINE_DOORBELLS);
  if (kind == KickKind::kCqArm) {
    // Where the CQ stood when the arm was requested (see cq_arm).
    const uint32_t cqn = static_cast<uint32_t>(value) & RHN_DB_QN_MASK;
    value = (value & 0xffffffffu) |
            (cqn < m.cfg.max_cqs
                 ? uint64_t{m.cq_published[cqn].load(MemOrder::kAcquire)} << 32
                 : 0);
  }
  if (!m.kicks.push_with([&](Kick& k) {
        k.kind = kind;
        k.page = page;
        k.value = value;
        k.has_inline = with_inline;
        if (with_inline) copy_wqe(k.inline_wqe, m.inline_staging[page]);
      })) {
    if (kind == KickKind::kCqArm) m.keep_lost_cq_arm(page, value);
    m.kick_overflow.store(true);
  }
}

void Engine::Impl::keep_lost_eq_doorbell(uint64_t value) {
  // The latest consumer index; an arm stays asked for until taken.
  const uint32_t eqn = static_cast<uint32_t>((value >> RHN_EQ_DB_EQN_SHIFT) &
                                             RHN_EQ_DB_EQN_MASK);
  if (eqn >= eq_db_lost.size()) return;  // counted as bad by no one: no EQ
  Atomic<uint64_t>& w = eq_db_lost[eqn];
  uint64_t old = w.load();
  uint64_t next;
  do {
    next = (value & (RHN_EQ_DB_CI_MASK | RHN_EQ_DB_ARM)) | kLostPending |
           ((old & kLostPending) ? (old & RHN_EQ_DB_ARM) : 0);
  } while (!w.compare_exchange_weak(old, next));
}

void Engine::Impl::keep_lost_cq_arm(uint32_t page, uint64_t value) {
  // Only the owner's page may leave an arm here, so a foreign flood cannot
  // replace it. Arms kept together: the earliest request (an event for
  // anything added since), and "solicited only" only if every one was.
  const uint32_t cqn = static_cast<uint32_t>(value) & RHN_DB_QN_MASK;
  if (cqn >= cq_arm_lost.size() ||
      cq_owner[cqn].load(MemOrder::kRelaxed) != page + 1)
    return;
  const bool solicited = (value & RHN_DB_CQ_SOLICITED) != 0;
  Atomic<uint64_t>& w = cq_arm_lost[cqn];
  uint64_t old = w.load();
  uint64_t next;
  do {
    if (old & kLostArmPending)
      next = solicited ? old : old & ~kLostArmSolicited;
    else
      next = (value & ~0xffffffffull) | kLostArmPending |
             (solicited ? kLostArmSolicited : 0);
  } while (!w.compare_exchange_weak(old, next));
}

void Engine::doorbells_lost() {
  if (!failed()) impl_->kick_overflow.store(true);
}

void Engine::trigger_sums_pending() {
  if (failed()) return;
  Impl& m = *impl_;
  if (!m.kicks.push_with([&](Kick& k) {
        k.kind = KickKind::kTriggerSums;
        k.has_inline = false;
        k.page = 0;
        k.value = 0;
      }))
    m.kick_overflow.store(true);
}

void Engine::doorbell_inline(uint32_t page, const void* wqe, size_t len) {
  if (failed()) return;
  Impl& m = *impl_;
  if (page >= m.cfg.db_pages) return;
  // The whole window arrives; only the WQE's slots are ever read from the
  // staging buffer (doorbell_write copies as many), so only they are kept.
  if (len >= RHN_SQ_SLOT_SIZE)
    len = min<size_t>(len, wqe_copy_bytes(static_cast<const uint8_t*>(wqe)));
  copy_small(m.inline_staging[page].bytes, wqe,
             min<size_t>(len, RHN_DB_INLINE_WQE_SIZE));
}

void Engine::frames_dropped(uint64_t n) {
  if (n && !failed()) impl_->counters.add_shared(RHN_CNT_RX_DROPS, n);
}

void Engine::attach_rx(RxSource& src) {
  if (!impl_) return;
  Impl& m = *impl_;
  m.rx_source = &src;
  m.rx_write =
      m.cfg.rx_write && m.cfg.mac_crc && m.cfg.dma_region && m.cfg.fast_paths;
  m.rxw_flush();
}

void Engine::attach_tx(TxSink& sink) {
  if (!impl_) return;
  Impl& m = *impl_;
  m.tx_sink = &sink;
  m.tx_write = m.cfg.tx_write && m.cfg.mac_crc && m.cfg.dma_region &&
               m.cfg.tx_assembler && m.cfg.fast_paths;
}

bool Engine::frame_arrived(Span<const uint8_t> frame) {
  if (failed()) return false;
  Impl& m = *impl_;
  if (frame.empty() || frame.size() > sizeof(RxFrame::data)) {
    m.counters.add_shared(RHN_CNT_MALFORMED_PACKETS);
    return true;  // consumed: it can never be valid
  }
  if (!m.link_up.load()) return false;
  const bool ok = m.rx.push_with([&](RxFrame& f) {
    f.len = static_cast<uint16_t>(frame.size());
    memcpy(f.data, frame.data(), frame.size());
  });
  if (!ok) m.counters.add_shared(RHN_CNT_RX_DROPS);
  return ok;
}

bool Engine::Impl::take_in_place(uint32_t budget) {
  uint32_t n = 0;
  for (; n < budget; n++) {
    const uint8_t* frame = nullptr;
    const size_t len = rx_source->peek(&frame);
    if (!len) break;
    // What frame_arrived checks before it queues a frame.
    if (len > sizeof(RxFrame::data))
      counters.add(RHN_CNT_MALFORMED_PACKETS);
    else if (link_up.load(MemOrder::kRelaxed))
      receive_frame({frame, len});
    rx_source->pop();
  }
  return n != 0;
}

bool Engine::poll() {
  if (failed()) return false;
  Impl& m = *impl_;
  m.now = m.bus.now_ns();
  // Each stage below is asked only when it has something to do: most
  // polls find most of them idle, and entering one costs more than the
  // test (a kick or overflow that comes after it is seen next poll).
  // Only kicks and frames arrive from outside; everything else the stages
  // wait for was set up by an earlier poll. The first poll to find nothing
  // to do notes in next_due when the first of it is due (a poll that did
  // work leaves it 0, so a busy engine never computes it): until then an
  // idle poll is these three tests.
  const bool kicked = m.kicks.peek() || m.kick_overflow.load();
  const bool quiet = m.now < m.next_due;
  if (!kicked && quiet && !m.rx.peek() &&
      !(m.rx_source && m.rx_source->waiting()))
    return false;
  // The lanes (Documentation/firmware/instruction-counts.md): with every
  // stage idle, an SQ doorbell that is the only event goes straight to
  // its QP's requester step, which is all the generic poll would do for
  // it (queue the QP, find every other stage idle, run the QP); and a
  // poll whose only work was frames the fast path took skips the
  // families, which had nothing due and were given nothing.
  if (kicked && quiet && m.cfg.fast_paths && m.lane_kick()) {
    m.next_due = 0;
    if (m.num_open_runs) m.cq_runs_close_all();  // a run never waits
    return true;
  }
  m.lane_only = quiet && !kicked && m.cfg.fast_paths;
  bool did = kicked && m.drain_kicks();
  for (uint32_t n = 0; n < 64; n++) {
    RxFrame* f = m.rx.peek();
    if (!f) break;
    m.receive_frame({f->data, f->len});
    m.rx.release();
    did = true;
  }
  if (m.rx_source && m.rx_source->waiting())
    did |= m.rx_write ? m.take_placed(64) : m.take_in_place(64);
  // Work classes, each with a bounded turn: the driver's kicks, arriving
  // frames, the peers (resends, READ streams, timers), the NIC's own
  // messages, then the QPs' send queues, round robin.
  if (!m.peer_ready.empty() || m.now >= m.next_peer_deadline ||
      m.now >= m.next_qp_wake) {
    m.lane_only = false;
    did |= m.run_timers();
  }
  // The families, in the registry's order: those whose turn posts
  // firmware messages before fw_run, so what they post leaves now.
  if (!m.lane_only) did |= modules_run(m, true, 16);
  if (!m.fw_queue.empty()) {
    m.lane_only = false;
    did |= m.fw_run(16);
  }
  if (!m.lane_only) did |= modules_run(m, false, 16);
  if (!m.ready.empty()) did |= m.requester_run(64);
  // The pass's runs are written now: none waits for a later completion
  // or a timer (queues.md, "Runs").
  if (m.num_open_runs) m.cq_runs_close_all();
  m.next_due = did ? 0 : m.stages_due();
  return did;
}

uint64_t Engine::next_deadline_ns() const {
  if (failed()) return UINT64_MAX;
  const Impl& m = *impl_;
  // Peers with work to do now are served by the next poll.
  const uint64_t t = m.peer_ready.empty() ? m.next_peer_deadline : m.now;
  return min({t, m.next_qp_wake, modules_next_deadline(m)});
}

void Engine::set_link_up(bool up) {
  if (failed()) return;
  Impl& m = *impl_;
  m.carrier.store(up);
  m.link_up.store(up);
  if (!m.kicks.push_with([&](Kick& k) {
        k.kind = KickKind::kLink;
        k.has_inline = false;
        k.value = up;
      }))
    m.kick_overflow.store(true);
}

uint64_t Engine::counter(unsigned index) const {
  return impl_ ? impl_->counters.get(index) : 0;
}

}  // namespace rhinet::fw
