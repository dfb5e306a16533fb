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
  // First the WQE a doorbell brought (the block reads the producer
  // index with it), then what that index shows, within the budget; a
  // QP woken without a doorbell (by its ACKs, or its budget) has what
  // the core's copy of the index shows.
  uint32_t want = qp.txw_kicked ? 1 : qp.sq_producer - qp.sq_fetch;
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

  // The send slots fast_post could take one after another now.
  uint32_t granted = 0;
  while (granted < credit && free_slots.size() > response_reserve &&
         shares.room(qp.context, Res::kTxSlots)) {
    const uint32_t slot = take_slot(qp.context);
    tx_sink->slot_push(slot, slots[slot].frame);
    granted++;
  }
  if (!granted) return 0;

  rhn_card_txw_qp q{};
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
  q.sq_producer = qp.sq_producer;
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
  const uint32_t taken = txw_take();
  // The slots it did not use go back where take_slot found them; no one
  // waited for a slot meanwhile, so no one is woken.
  uint32_t slot;
  while (tx_sink->slot_back(&slot)) {
    shares.give(qp.context, Res::kTxSlots);
    slots[slot].context = kNone;
    free_slots.push(slot);
  }
  return taken;
}

uint32_t Engine::Impl::txw_take() {
  const bool quiet_family = !op_info(RHN_OP_WRITE).family->message_done;
  uint32_t n = 0, packets = 0, bytes = 0;
  // The records in one read of the block's FIFO for up to kBatch of
  // them (a kick's run; one card access instead of one each).
  constexpr uint32_t kBatch = 16;
  rhn_card_txw_record batch[kBatch];
  for (uint32_t got = kBatch; got == kBatch;) {
    got = tx_sink->record_pop(batch, kBatch);
    n += got;
    for (uint32_t i = 0; i < got; i++) {
      const rhn_card_txw_record& r = batch[i];
      QpObj& qp = qps[r.qpn];
      Peer& p = peers[qp.dest_node];
      const uint32_t idx = qp.inflight_tail++;
      const bool quiet = !(r.wqe_flags & RHN_WQE_F_SIGNALED) && quiet_family;
      // The hot words fast_post writes; the rest as a blank entry has them.
      Inflight& e = entry(r.qpn, idx);
      e = Inflight{.slot = r.wqe_slot,
                   .slots = 1,
                   .opcode = RHN_OP_WRITE,
                   .wqe_flags = r.wqe_flags,
                   .state = MsgState::kAwaitAck,
                   .peer = qp.dest_node,
                   .msn = r.msn,
                   .last_serial = p.tx_next,
                   .length = r.length,
                   .dst_qpn = qp.dest_qpn,
                   .quiet = quiet};
      qp.msn_next = r.msn + 1;
      qp.sq_fetch = r.wqe_slot + 1;
      // The block read the record: the core's copy is not behind it.
      if (seq_before(qp.sq_producer, qp.sq_fetch)) qp.sq_producer = qp.sq_fetch;
      qp.fanout_next = 0;
      qp.tx_entry = idx;
      qp.tx_peer = qp.dest_node;
      qp.tx_dst_qpn = qp.dest_qpn;
      if (r.failed) {
        // As fast_post after a failed gather.
        qp.tx_offset = 0;
        return_slot(r.send_slot);
        counters.add(RHN_CNT_DMA_ERRORS);
        counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
        finish_entry(r.qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
        continue;
      }
      SendSlot& s = slots[r.send_slot];
      s.len = static_cast<uint16_t>(RHN_DATA_HDR_LEN + r.length);
      data_sent(p, r.send_slot, r.qpn, qp.gen,
                quiet ? kCompletesQuiet : kCompletes);
      packets++;
      bytes += s.len;
      qp.tx_offset = r.length;
      qp.tx_active = false;
    }
  }
  if (packets) {
    counters.add(RHN_CNT_TX_PACKETS, packets);
    counters.add(RHN_CNT_TX_BYTES, bytes);
  }
  return n;
}

}  // namespace rhinet::fw
