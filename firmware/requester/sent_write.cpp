// SPDX-License-Identifier: BSD-2-Clause
// The transmit block for plain WRITEs (EngineConfig::tx_write,
// RHN_CARD_CAP_TX_WRITE; Documentation/hardware/soft-core.md): the
// core's side. The block fetches a QP's WQEs, takes the one-packet RC
// WRITEs fast_post would take, builds and sends their frames in send
// slots the core granted, and queues a record of each; the core makes
// the in-flight entry and links the slot into the channel from the
// record, as fast_post does after the frame left.
//
// The core arms the QP and its channel for one kick and disarms them
// after it (taking back the credits and slots left): so no entry of the
// block outlives the kick it was written for, and every change of the
// core's state between kicks (an admin command, a key deregistered, the
// QP moved to error or given a resend, the channel reset or resent, the
// link gone) is seen by the next arm as it is by fast_post.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"
#include "ops/trigger/trigger.h"
#include "transport/channel_inline.h"

namespace rhinet::fw {

uint32_t Engine::Impl::txw_run(QpObj& qp, uint32_t qpn, uint32_t budget) {
  // Nothing new for the block: the QP woken by its ACKs with no doorbell
  // since and nothing the core knows of (the commonest wake-up, first).
  if (!qp.txw_kicked && qp.sq_producer == qp.sq_fetch) return 0;
  // What fast_post asks of the QP, and what only the core knows: a
  // resend, a fired trigger, a WQE kept fetched, many producers.
  if (qp.type != RHN_QP_RC || qp.state != RHN_QPS_RTS || qp.tx_active ||
      qp.has_resend || qp.mp || qp.prefetched_slot != kNone ||
      trigger_fired(*this, qpn) != kNone || qp.dest_node >= cfg.max_nodes ||
      qp.dest_node == cfg.node_id || !link_up.load(MemOrder::kRelaxed))
    return 0;
  // A family that claims plain WRITEs: not the block's.
  const OpInfo& info = op_info(RHN_OP_WRITE);
  const OpFamily* family = info.family;
  if (!family || info.has_imm || info.awaits_response || info.uses_read_ctx ||
      family->send_packet || family->execute_local ||
      family->send_unsequenced || family->next_destination)
    return 0;
  // The lkey fast_post last checked for this QP, in this key epoch, a
  // plain MR with a table; the ring and record through regions kept.
  const KeyCache& k = qp.tx_key;
  const DmaRegion* key_region = k.region_of(k.mr_index, mr_epoch);
  const DmaRegion* ring = qp.sq_ring_key.region_of(
      qp.sq_ring.lkey >> RHN_KEY_INDEX_SHIFT, mr_epoch);
  const DmaRegion* record = qp.sq_record_key.region_of(
      qp.sq_record.lkey >> RHN_KEY_INDEX_SHIFT, mr_epoch);
  if (!key_region || mrs[k.mr_index].on_twin || !ring || !record ||
      qp.sq_ring.lkey == RHN_LKEY_PHYSICAL ||
      qp.sq_record.lkey == RHN_LKEY_PHYSICAL)
    return 0;
  // After a doorbell, as many WQEs as the last step took (the block
  // reads the producer index with them), then what that index shows,
  // within the budget; a QP woken without a doorbell (by its ACKs, or
  // its budget) has what the core's copy of the index shows.
  uint32_t want = qp.txw_kicked ? qp.txw_guess : qp.sq_producer - qp.sq_fetch;
  qp.txw_kicked = false;
  uint32_t taken = 0;
  while (want && taken < budget) {
    const uint32_t ask = min(want, budget - taken);
    const uint32_t got = txw_kick(qp, qpn, ask, *ring, *record, *key_region);
    taken += got;
    // Stopped short (a WQE, the window, a failure): the core's now.
    if (got < ask || qp.state != RHN_QPS_RTS) break;
    want = qp.sq_producer - qp.sq_fetch;
  }
  qp.txw_guess = static_cast<uint8_t>(clamp<uint32_t>(taken, 1, 255));
  return taken;
}

uint32_t Engine::Impl::txw_kick(QpObj& qp, uint32_t qpn, uint32_t want,
                                const DmaRegion& ring, const DmaRegion& record,
                                const DmaRegion& key_region) {
  const KeyCache& k = qp.tx_key;
  Peer& p = peers[qp.dest_node];
  const uint32_t in_flight = qp.inflight_tail - qp.inflight_head;
  if (p.tx_syn || in_flight >= cfg.max_inflight_per_qp) return 0;
  const uint32_t credit = min(cfg.max_inflight_per_qp - in_flight, want);

  // The send slots fast_post could take one after another now, handed
  // to the block's FIFO a batch at a time (one card access each).
  constexpr uint32_t kBatch = 16;
  uint32_t batch_slot[kBatch];
  void* batch_frame[kBatch];
  // As many as take_slot would give one after another: the send memory
  // above the responses' reserve and the context's share, counted once.
  const uint32_t context = qp.context;
  uint32_t avail = min(credit, shares.room_n(context, Res::kTxSlots));
  const uint32_t free_n = free_slots.size();
  avail = free_n > response_reserve ? min(avail, free_n - response_reserve) : 0;
  uint32_t granted = 0;
  bool full = false;
  while (!full && granted < avail) {
    const uint32_t n = min(kBatch, avail - granted);
    // Down the free list's links: n <= its size (avail above).
    uint32_t slot = free_slots.front();
    for (uint32_t i = 0; i < n; i++) {
      SendSlot& s = slots[slot];
      batch_slot[i] = slot;
      batch_frame[i] = s.frame;
      slot = s.next;
      s.context = context;
      s.next = kNone;
    }
    free_slots.took(slot, n);
    shares.charge(qp.context, Res::kTxSlots, n);
    const uint32_t pushed = tx_sink->slot_push_n(batch_slot, batch_frame, n);
    granted += pushed;
    // The FIFO full: what it did not take goes back where it came from.
    full = pushed < n;
    for (uint32_t i = pushed; i < n; i++) {
      shares.give(qp.context, Res::kTxSlots);
      slots[batch_slot[i]].context = kNone;
      free_slots.push(batch_slot[i]);
    }
  }
  if (!granted) return 0;

  // Every field stored once (no blank entry cleared first: a kick's
  // fixed cost); the entry has no padding (card.h asserts its layout).
  rhn_card_txw_qp q;
  q.sq_ring = card_region(ring);
  q.sq_ring_va = qp.sq_ring.addr;
  q.sq_record = card_region(record);
  q.sq_record_va = qp.sq_record.addr;
  q.key_region = card_region(key_region);
  q.key_iova = k.iova;
  q.key_length = k.length;
  q.lkey = k.key;
  q.sq_fetch = qp.sq_fetch;
  q.sq_room = (1u << qp.sq_log) - (qp.sq_fetch - qp.sq_complete);
  q.msn_next = qp.msn_next;
  q.inflight_credit = credit;
  q.slot_credit = granted;
  const TxTemplate& t = tx_template(qp, qpn);
  q.hdr[0] = t.magic_type;
  q.hdr[1] = t.nodes;
  q.hdr[2] = t.op_base;
  q.hdr[3] = t.dst_qpn;
  q.hdr[4] = t.src_qpn;
  q.peer_node = qp.dest_node;
  q.sq_log = qp.sq_log;
  q.reserved = 0;
  q.sq_producer = qp.sq_producer;
  q.reserved1 = 0;
  rhn_card_txw_channel c{};
  c.tx_next = p.tx_next;
  c.unacked = p.unacked_count;
  c.window = cfg.channel_window;
  c.session = p.tx_session;
  if (p.rx_synced) {
    c.ack_valid = 1;
    c.ack_seq = p.rx_expected;
    c.ack_session = p.rx_session;
  }
  tx_sink->set_channel(qp.dest_node, &c);
  tx_sink->set_qp(qpn, &q, nullptr);
  tx_sink->kick(qpn);
  rhn_card_txw_qp left;
  tx_sink->set_qp(qpn, nullptr, &left);
  // The producer index the block read is the one the core would read.
  if (seq_before(qp.sq_producer, left.sq_producer))
    qp.sq_producer = left.sq_producer;
  tx_sink->set_channel(qp.dest_node, nullptr);
  const uint32_t taken = txw_take(granted);
  // The slots it did not use go back where take_slot found them; no one
  // waited for a slot meanwhile, so no one is woken. The FIFO held the
  // granted slots only and each record used one (a failed one too): when
  // every slot has a record, none is left to ask for.
  uint32_t slot;
  while (taken < granted && tx_sink->slot_back(&slot)) {
    shares.give(qp.context, Res::kTxSlots);
    slots[slot].context = kNone;
    free_slots.push(slot);
  }
  return taken;
}

// The hot words fast_post writes; the rest as a blank entry has them.
static inline void txw_entry(Inflight& e, const rhn_card_txw_record& r,
                             uint16_t peer, uint32_t dst_qpn, uint32_t serial,
                             bool quiet) {
  e = Inflight{.slot = r.wqe_slot,
               .slots = 1,
               .opcode = RHN_OP_WRITE,
               .wqe_flags = r.wqe_flags,
               .state = MsgState::kAwaitAck,
               .peer = peer,
               .msn = r.msn,
               .last_serial = serial,
               .length = r.length,
               .dst_qpn = dst_qpn,
               .quiet = quiet};
}

// The same over an entry whose last message was a quiet one: only the
// words a quiet message may have changed (fast_post's, the state and
// status, a resend's) are stored. The others (a READ's context, a
// trigger, a chain, the families' fields) are written only where an
// entry is made blank first (start_message, park_consumed) and by the
// families of messages that are never quiet, so a quiet message left
// them as a blank entry has them.
static inline void txw_entry_over_quiet(Inflight& e,
                                        const rhn_card_txw_record& r,
                                        uint16_t peer, uint32_t dst_qpn,
                                        uint32_t serial, bool quiet) {
  e.slot = r.wqe_slot;
  e.slots = 1;
  e.opcode = RHN_OP_WRITE;
  e.wqe_flags = r.wqe_flags;
  e.state = MsgState::kAwaitAck;
  e.status = RHN_CQE_SUCCESS;
  e.syndrome = RHN_SYN_NONE;
  e.peer = peer;
  e.msn = r.msn;
  e.last_serial = serial;
  e.length = r.length;
  e.resend_at = 0;
  e.status_addr = 0;
  e.status_lkey = 0;
  e.dst_qpn = dst_qpn;
  e.answered = false;
  e.quiet = quiet;
  e.pin_wait = false;
  e.fanout_imm = 0;
}

// What the QP keeps of its newest message, as fast_post leaves it.
static inline void txw_qp_after(QpObj& qp, const rhn_card_txw_record& last,
                                uint32_t entry_idx) {
  qp.msn_next = last.msn + 1;
  qp.sq_fetch = last.wqe_slot + 1;
  // The block read the record: the core's copy is not behind it.
  if (seq_before(qp.sq_producer, qp.sq_fetch)) qp.sq_producer = qp.sq_fetch;
  qp.fanout_next = 0;
  qp.tx_entry = entry_idx;
  qp.tx_peer = qp.dest_node;
  qp.tx_dst_qpn = qp.dest_qpn;
}

// The quiet run of the n records from r on, in the first one's slot. A
// run of one packet is retired as any other packet.
static inline void note_quiet_run(SendSlot* sl, const rhn_card_txw_record* r,
                                  uint32_t n, uint16_t spoils) {
  if (n < 2) return;
  SendSlot& first = sl[r[0].send_slot];
  first.completes_message = kCompletesQuietRun;
  first.quiet_run = static_cast<uint8_t>(n);
  first.run_last = r[n - 1].send_slot;
  first.run_spoils = spoils;
}

inline uint32_t Engine::Impl::txw_take_run(const rhn_card_txw_record* r,
                                           uint32_t avail, bool quiet_family,
                                           uint32_t& bytes_out) {
  // What data_sent does for each packet, once for the run where it holds
  // for all of them: the QP, its peer and its entry ring looked up once,
  // the slots linked as one chain, the channel's counts, timers and the
  // QP's copies moved once, after the last.
  const uint32_t qpn = r[0].qpn;
  QpObj& qp = qps[qpn];
  Peer& p = peers[qp.dest_node];
  const uint32_t gen = qp.gen;
  const uint32_t first_idx = qp.inflight_tail;
  const uint32_t ring = cfg.max_inflight_per_qp;
  Inflight* const base = &inflight[size_t{qpn} * ring];
  Inflight* const end = base + ring;
  Inflight* e = base + first_idx % ring;
  const uint32_t first_seq = p.tx_next;
  // Kept in registers: the stores below could be to any of them.
  const uint16_t peer = qp.dest_node;
  const uint32_t dst_qpn = qp.dest_qpn;
  SendSlot* const sl = slots.data();
  const uint32_t tail = p.unacked_tail;
  SendSlot* prev = tail != kNone ? &sl[tail] : nullptr;
  uint32_t bytes = 0;
  // The quiet packets among them in runs, each noted in its first slot
  // (a signaled message ends one): an ACK that covers a run retires it
  // at once.
  const uint16_t spoils = qp.quiet_spoils;
  uint32_t run_n = 0;  // the quiet records that end at r[k - 1]
  // The run: r[0] and the sent records after it of the same QP.
  uint32_t k = 0;
  for (; k < avail; k++) {
    const rhn_card_txw_record& rj = r[k];
    if (k && (rj.qpn != qpn || rj.failed)) break;
    const bool quiet = !(rj.wqe_flags & RHN_WQE_F_SIGNALED) && quiet_family;
    const uint32_t serial = first_seq + k;
    if (e->quiet)
      txw_entry_over_quiet(*e, rj, peer, dst_qpn, serial, quiet);
    else
      txw_entry(*e, rj, peer, dst_qpn, serial, quiet);
    if (++e == end) e = base;
    const uint32_t id = rj.send_slot;
    SendSlot& s = sl[id];
    const auto len = static_cast<uint16_t>(RHN_DATA_HDR_LEN + rj.length);
    s.len = len;
    s.serial = serial;
    s.qpn = qpn;
    s.qp_gen = gen;
    s.completes_message = quiet ? kCompletesQuiet : kCompletes;
    s.next = kNone;
    if (quiet) {
      run_n++;
    } else if (run_n) {
      note_quiet_run(sl, r + k - run_n, run_n, spoils);
      run_n = 0;
    }
    if (prev)
      prev->next = id;
    else
      p.unacked_head = id;
    prev = &s;
    bytes += len;
  }
  if (run_n) note_quiet_run(sl, r + k - run_n, run_n, spoils);
  p.unacked_tail = r[k - 1].send_slot;
  p.tx_next = first_seq + k;
  if (p.rx_synced) {
    // The packets carried our receive state: no separate ACK is owed.
    p.rx_unacked = 0;
    p.ack_deadline = 0;
  }
  if (!p.timing) {
    p.timing = true;
    p.timed_at_us = low32_div1000(now);
    p.timed_seq = first_seq;
  }
  const uint32_t was = p.unacked_count;
  p.unacked_count = was + k;
  if (!was) {
    p.rto_deadline = now + rto(p);
    peer_timer(p, p.rto_deadline);
  }
  const rhn_card_txw_record& last = r[k - 1];
  qp.inflight_tail = first_idx + k;
  txw_qp_after(qp, last, first_idx + k - 1);
  qp.tx_offset = last.length;
  qp.tx_active = false;
  bytes_out += bytes;
  return k;
}

uint32_t Engine::Impl::txw_take(uint32_t granted) {
  const bool quiet_family = !op_info(RHN_OP_WRITE).family->message_done;
  uint32_t n = 0, packets = 0, bytes = 0;
  // The records in one read of the block's FIFO for up to kBatch of
  // them (a kick's run; one card access instead of one each).
  constexpr uint32_t kBatch = 16;
  static_assert(kBatch <= 255, "a run's length is kept in a byte");
  rhn_card_txw_record batch[kBatch];
  // Each record used one of the slots granted: with a record for every
  // one, the FIFO holds no more (no read that would find it empty).
  for (uint32_t got = kBatch; got == kBatch && n < granted;) {
    got = tx_sink->record_pop(batch, min(kBatch, granted - n));
    n += got;
    for (uint32_t i = 0; i < got;) {
      const rhn_card_txw_record& r = batch[i];
      if (r.failed) {
        txw_take_failed(r, quiet_family);
        i++;
        continue;
      }
      // It and the sent records that follow of the same QP: one run.
      const uint32_t k = txw_take_run(&batch[i], got - i, quiet_family, bytes);
      packets += k;
      i += k;
    }
  }
  if (packets) {
    counters.add(RHN_CNT_TX_PACKETS, packets);
    counters.add(RHN_CNT_TX_BYTES, bytes);
  }
  return n;
}

void Engine::Impl::txw_take_failed(const rhn_card_txw_record& r,
                                   bool quiet_family) {
  // As fast_post after a failed gather: no serial taken, the WQE failed.
  QpObj& qp = qps[r.qpn];
  Peer& p = peers[qp.dest_node];
  const uint32_t idx = qp.inflight_tail++;
  const bool quiet = !(r.wqe_flags & RHN_WQE_F_SIGNALED) && quiet_family;
  Inflight& e = entry(r.qpn, idx);
  txw_entry(e, r, qp.dest_node, qp.dest_qpn, p.tx_next, quiet);
  txw_qp_after(qp, r, idx);
  qp.tx_offset = 0;
  return_slot(r.send_slot);
  counters.add(RHN_CNT_DMA_ERRORS);
  counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
  finish_entry(r.qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
}

}  // namespace rhinet::fw
