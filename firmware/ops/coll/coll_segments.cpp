// SPDX-License-Identifier: BSD-2-Clause
// ops/coll's segments: a segment's buffer filled and combined, moved up
// and down the tree (or to the switch), written to the local ranks; the
// progress and liveness of a collective; and the firmware messages
// between the NICs (segments, ABORT, READY). The tree and the WQE are in
// coll.cpp, what comes from the switch in coll_switch.cpp.
#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/coll/coll.h"
#include "ops/coll/coll_detail.h"
#include "ops/coll/reduce.h"
#include "ops/family.h"

namespace rhinet::fw {

using namespace coll_detail;

namespace coll_detail {

// ---- Segments.

void open_slot(const CollComm& c, CollSlot& s, uint32_t seg) {
  const uint32_t buf = s.buf;
  s = CollSlot{};
  s.buf = buf;
  s.used = true;
  s.seg = seg;
  const uint64_t off = uint64_t{seg} * c.seg;
  s.len = static_cast<uint32_t>(
      min<uint64_t>(c.seg, c.length > off ? c.length - off : 0));
}

// Adds `data` (the slot's length) into the slot: the first contribution
// fills it.
void contribute(const CollComm& c, CollSlot& s, uint8_t* buf,
                const uint8_t* data) {
  if (!s.filled)
    memcpy(buf, data, s.len);
  else
    coll::combine(c.reduce, c.type, buf, data, s.len);
  s.filled = true;
}

// The local ranks' operands of the segment, in rank order, read by DMA from
// their own buffers. False: a buffer could not be read.
bool read_local(Impl& m, CollComm& c, CollSlot& s) {
  const uint64_t off = uint64_t{s.seg} * c.seg;
  uint8_t* buf = bytes_of(m, s);
  for (CollLocal& l : c.local) {
    if (l.qpn == kNone || !reads_send(c, l.rank) || s.len == 0) continue;
    uint8_t* into = s.filled ? m.coll.scratch.data() : buf;
    if (!m.sge_dma(&l.send, 1, off, into, s.len, l.pdn, false)) return false;
    if (s.filled && c.op != RHN_COLL_BCAST)
      coll::combine(c.reduce, c.type, buf, into, s.len);
    s.filled = true;
  }
  return true;
}

bool write_results(Impl& m, CollComm& c, CollSlot& s) {
  const uint64_t off = uint64_t{s.seg} * c.seg;
  uint8_t* buf = bytes_of(m, s);
  for (CollLocal& l : c.local) {
    if (l.qpn == kNone || !gets_result(c, l.rank) || s.len == 0) continue;
    if (!m.sge_dma(&l.recv, 1, off, buf, s.len, l.pdn, true)) return false;
  }
  return true;
}

// An RHN_PKT_COLL frame about segment `seg` of collective `seq` to the
// switch.
void send_switch_frame(Impl& m, const CollComm& c, uint32_t seq, uint32_t seg,
                       uint8_t kind, Span<const uint8_t> data) {
  uint8_t* frame = m.coll.frame.data();
  rhn_coll_frame f{};
  f.key = c.key;
  f.seq = seq;
  f.seg = seg;
  f.signature = signature(c);
  f.members = c.nodes_hash;
  f.nnodes = c.nnodes;
  f.kind = kind;
  f.reduce = c.reduce;
  f.type = c.type;
  memcpy(frame + RHN_PKT_HDR_LEN, &f, sizeof f);
  if (!data.empty())
    memcpy(frame + RHN_PKT_HDR_LEN + sizeof f, data.data(), data.size());
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_COLL;
  h.dst_node = RHN_NODE_BROADCAST;  // the switch takes it
  h.src_node = m.cfg.node_id;
  h.payload_len = static_cast<uint16_t>(sizeof f + data.size());
  const size_t len = seal_packet(
      frame, h, nullptr, crc32c(0, frame + RHN_PKT_HDR_LEN, h.payload_len));
  m.counters.add(RHN_CNT_COLL_SWITCH_FRAMES);
  m.transmit(RHN_NODE_BROADCAST, {frame, len});
}

// In-switch mode: the partial goes (again) to the switch when due. Unanswered
// it goes again after a timeout from the measured round trip to the switch
// (as the channels' is, at least retransmit_timeout_ns), doubling; a switch
// that never answers fails the collective.
bool send_switch_up(Impl& m, CollComm& c, CollSlot& s) {
  if (!(s.todo & (1u << kCollParent))) return false;
  if (m.now < s.retry_at) {
    update_deadline(m, s.retry_at);
    return false;
  }
  if (s.unanswered > m.cfg.max_retries) {
    fail_collective(m, c, RHN_SYN_COLL_NO_SWITCH, true);
    return true;
  }
  if (s.unanswered) m.counters.add(RHN_CNT_COLL_RETRIES);
  send_switch_frame(m, c, c.seq, s.seg, RHN_COLL_FRAME_UP,
                    {bytes_of(m, s), s.len});
  const uint64_t rto =
      min(m.cfg.max_retransmit_timeout_ns,
          m.rto(m.coll.switch_path) << min<uint8_t>(s.unanswered, 16));
  if (s.unanswered < 255) s.unanswered++;
  s.sent_at = m.now;
  s.retry_at = m.now + rto;
  update_deadline(m, s.retry_at);
  return true;
}

// Hands the slot's due messages to fwmsg/.
bool send_due(Impl& m, CollComm& c, CollSlot& s, const Topo& t) {
  if (via_switch(c)) return send_switch_up(m, c, s);
  if (!s.todo || m.now < s.retry_at) {
    if (s.todo) update_deadline(m, s.retry_at);
    return false;
  }
  bool did = false;
  const uint32_t si = slot_index(m, s.seg);
  const uint64_t addr = uint64_t{c.seq} << 32 | s.seg;
  for (uint32_t bit = 0; bit < 32 && s.todo; bit++) {
    if (!(s.todo & (1u << bit))) continue;
    const bool up = bit == kCollParent;
    const uint16_t index =
        up ? t.parent
           : node_at(c, static_cast<uint16_t>(t.first_child + bit), t.root);
    const bool data = up || down_carries_data(c);
    const Span<const uint8_t> payload{bytes_of(m, s), data ? s.len : 0};
    const uint32_t h = m.fw_send_now(
        nodes_of(m, c)[index], up ? RHN_FW_COLL_UP : RHN_FW_COLL_DOWN, c.key,
        addr, signature(c), payload, FwOwner::kColl, cookie(m, c, si, bit),
        c.context);
    // The node's window is full (on its ACKs), or the collectives' or the
    // user's share of the firmware messages is held (as they end).
    if (h == kNone) break;
    s.todo &= ~(1u << bit);
    s.busy |= 1u << bit;
    did = true;
  }
  return did;
}

// Moves one segment on as far as its inputs allow.
bool step_slot(Impl& m, CollComm& c, CollSlot& s) {
  const Topo t = topo(c, s.seg, c.self);
  const bool all_posted = c.posted == c.nlocal;
  bool did = false;
  if (has_up_phase(c)) {
    if (!s.local_in && all_posted) {
      if (!read_local(m, c, s)) {
        fail_collective(m, c, RHN_SYN_DMA, true);
        return true;
      }
      s.local_in = true;
      did = true;
    }
    if (s.local_in && s.children_in == t.all_children && !s.up_sent) {
      // Complete below this node: the root has the result, the others
      // pass it up.
      s.up_sent = true;
      if (t.v == 0)
        s.down_in = true;
      else
        s.todo |= 1u << kCollParent;
      did = true;
    }
  } else if (t.v == 0 && !s.down_in && all_posted) {
    // A broadcast starts at its root with the root rank's data.
    if (!read_local(m, c, s)) {
      fail_collective(m, c, RHN_SYN_DMA, true);
      return true;
    }
    s.down_in = true;
    did = true;
  }
  if (s.down_in && !s.written && all_posted) {
    if (!write_results(m, c, s)) {
      fail_collective(m, c, RHN_SYN_DMA, true);
      return true;
    }
    s.written = true;
    s.todo |= t.all_children;
    m.counters.add(RHN_CNT_COLL_SEGMENTS);
    did = true;
  }
  did |= send_due(m, c, s, t);
  return did;
}

bool slot_done(const CollSlot& s) {
  return s.written && s.todo == 0 && s.busy == 0;
}

// While the collective waits on other nodes, checks now and then that
// they still answer (a dead node fails it instead of hanging it).
bool probe(Impl& m, CollComm& c) {
  if (c.probing || m.now < c.last_progress + m.cfg.sync_probe_ns) {
    if (!c.probing) update_deadline(m, c.last_progress + m.cfg.sync_probe_ns);
    return false;
  }
  const CollSlot& s = slot_of(m, c, c.base);
  const Topo t = topo(c, c.base, c.self);
  uint32_t want = 0;  // by node index, at most the radix and the parent
  uint16_t list[RHN_COLL_MAX_RADIX + 1];
  if (via_switch(c)) {
    // Any node may be the one the switch waits for: the next few in turn.
    for (uint32_t k = 0; k < c.nnodes && want < RHN_COLL_MAX_RADIX + 1; k++) {
      const uint16_t i = static_cast<uint16_t>(c.probe_next++ % c.nnodes);
      if (i != c.self) list[want++] = i;
    }
  } else {
    if (t.v > 0) list[want++] = t.parent;
    for (uint16_t j = 0; j < t.children; j++)
      if (!s.used || !(s.children_in & (1u << j)))
        list[want++] =
            node_at(c, static_cast<uint16_t>(t.first_child + j), t.root);
  }
  bool did = false;
  for (uint32_t i = 0; i < want; i++) {
    if (m.fw_post(nodes_of(m, c)[list[i]], RHN_FW_PING, {}, FwOwner::kColl,
                  cookie(m, c, 0, kDestProbe), 0) == kNone)
      break;
    c.probing++;
    did = true;
  }
  c.last_progress = m.now;
  return did;
}

// The local ranks' status words say how far the collective is (the
// execution state, readable while it runs).
void report_progress(Impl& m, const CollComm& c) {
  const uint32_t bytes =
      static_cast<uint32_t>(min<uint64_t>(uint64_t{c.base} * c.seg, c.length));
  for (const CollLocal& l : c.local) {
    const Inflight* e = l.posted ? rank_entry(m, l) : nullptr;
    if (e && (e->wqe_flags & RHN_WQE_F_STATUS_WORD))
      m.write_status_progress(m.qps[l.qpn], *e, bytes);
  }
}

bool progress(Impl& m, CollComm& c) {
  bool did = false;
  if (c.aborting) did |= send_aborts(m, c);
  if (!c.active || c.failed != RHN_SYN_NONE) return did;
  if (any(c.tell_start)) did |= tell_ready(m, c, c.tell_start);
  const uint32_t window = m.cfg.coll.window;
  for (uint32_t seg = c.base; seg < c.nsegs && seg < c.base + window; seg++) {
    CollSlot& s = slot_of(m, c, seg);
    if (!s.used) open_slot(c, s, seg);
    did |= step_slot(m, c, s);
    if (!c.active || c.failed != RHN_SYN_NONE) return true;
  }
  const uint32_t base_was = c.base;
  while (c.base < c.nsegs) {
    CollSlot& s = slot_of(m, c, c.base);
    if (!s.used || s.seg != c.base || !slot_done(s)) break;
    s.used = false;
    c.base++;
    c.last_progress = m.now;
    did = true;
    // Buffers are free again: senders refused for want of one may send.
    for (uint32_t w = 0; w < c.tell_window.size(); w++) {
      c.tell_start[w] |= c.tell_window[w];
      c.tell_window[w] = 0;
    }
  }
  if (c.base >= c.nsegs) {
    end_collective(m, c);
    return true;
  }
  if (c.base != base_was) report_progress(m, c);
  did |= probe(m, c);
  return did;
}
// The life an ABORT or a READY is about; false: a malformed payload.
bool life_in(Impl& m, const Packet& pkt, rhn_fw_coll_life* life) {
  if (pkt.payload.size() != sizeof *life) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return false;
  }
  memcpy(life, pkt.payload.data(), sizeof *life);
  return true;
}

// RHN_FW_COLL_ABORT: the collective `seq` of that life failed at the
// sender's node (GONE: and every later one).
void receive_abort(Impl& m, uint16_t from, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  rhn_fw_coll_life life;
  if (!life_in(m, pkt, &life)) return;
  const uint32_t key = op.imm_data;
  const uint32_t seq = static_cast<uint32_t>(op.remote_addr >> 32);
  const bool gone = life.flags & RHN_FW_COLL_F_GONE;
  const uint8_t why = op.msg_offset ? static_cast<uint8_t>(op.msg_offset)
                                    : uint8_t{RHN_SYN_MEMBER_LOST};
  CollComm* cp = find_life(m, key, life.members);
  if (!cp) {
    if (find_comm(m, key)) {
      // The key's communicator here is another life (an earlier job's
      // ABORT come late, or another job's): nothing of it applies.
      m.counters.add(RHN_CNT_STALE_PACKETS);
      return;
    }
    // No rank of this node has posted on it yet (or none is left): kept,
    // for that life only, for a while.
    auto& e =
        m.coll.early_aborts[m.coll.early_next++ % m.coll.early_aborts.size()];
    e = {true, key, seq, life.members, from, why, gone, m.now};
    return;
  }
  CollComm& c = *cp;
  const int x = node_index(m, c, from);
  if (x < 0) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    return;
  }
  if (gone) {
    mark(c.gone, static_cast<uint32_t>(x));  // it needs no ABORT from here
    if (!c.lost || static_cast<int32_t>(seq - c.lost_from) < 0) {
      c.lost = true;
      c.lost_from = seq;
    }
  }
  if (!has_local(c)) return;  // kept only to send its own ABORTs
  const int32_t ahead = static_cast<int32_t>(seq - c.seq);
  if (c.active && (ahead == 0 || (gone && ahead < 0))) {
    fail_collective(m, c, why, false);
  } else if (ahead >= 0 && !gone) {
    c.abort_early = true;  // it fails here when it starts
    c.abort_seq = seq;
    c.abort_syn = why;
  }
}

}  // namespace coll_detail

void coll_receive(Impl& m, Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint16_t from = m.node_of(p);
  if (op.rkey == RHN_FW_COLL_ABORT) {
    receive_abort(m, from, pkt);
    return;
  }
  const uint32_t seq = static_cast<uint32_t>(op.remote_addr >> 32);
  const uint32_t seg = static_cast<uint32_t>(op.remote_addr);
  const bool is_ready = op.rkey == RHN_FW_COLL_READY;
  CollComm* cp = find_comm(m, op.imm_data);
  auto nak = [&](rhn_syndrome why) { m.respond(p, RHN_WOP_NAK, why, op, {}); };
  if (!cp) {
    // No rank of this node has posted on it yet (or none is left). The
    // sender is told READY when one does.
    if (is_ready) return;
    nak(RHN_SYN_COLL_NOT_READY);
    bool known = false;
    for (auto& e : m.coll.early_refused)
      if (e.valid && e.key == op.imm_data && e.node == from) {
        e.at = m.now;
        known = true;
      }
    if (!known)
      m.coll.early_refused[m.coll.refused_next++ %
                           m.coll.early_refused.size()] = {true, op.imm_data,
                                                           from, m.now};
    return;
  }
  CollComm& c = *cp;
  if (is_ready) {
    rhn_fw_coll_life life;
    if (!life_in(m, pkt, &life)) return;
    if (life.members != c.life) {
      m.counters.add(RHN_CNT_STALE_PACKETS);  // another life's
      return;
    }
  }
  const int x = node_index(m, c, from);
  if (x < 0) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    nak(RHN_SYN_COLL_MISMATCH);
    return;
  }
  const int32_t ahead = static_cast<int32_t>(seq - c.seq);
  if (is_ready) {
    // Its refused segments go again now, not at their back-off time.
    if (ahead == 0 && c.active && c.failed == RHN_SYN_NONE) {
      for (uint32_t i = 0; i < m.cfg.coll.window; i++) {
        CollSlot& s = m.coll.slots[c.slots + i];
        if (s.used && s.todo) s.retry_at = 0;
      }
      m.coll.next_deadline = m.now;
    }
    return;
  }
  if (c.broken) {
    nak(RHN_SYN_MEMBER_LOST);
    return;
  }
  if (ahead < 0) return;  // a collective over here: a late copy
  if (ahead > 0 || !c.active) {
    if (c.abort_early && c.abort_seq == seq) return;  // failed already
    nak(RHN_SYN_COLL_NOT_READY);
    mark(c.tell_start, static_cast<uint32_t>(x));
    return;
  }
  if (c.failed != RHN_SYN_NONE) return;
  if (op.msg_offset != signature(c) || seg >= c.nsegs) {
    fail_collective(m, c, RHN_SYN_COLL_MISMATCH, true);
    nak(RHN_SYN_COLL_MISMATCH);
    return;
  }
  if (seg < c.base) return;  // done here: a late copy
  if (seg >= c.base + m.cfg.coll.window) {
    nak(RHN_SYN_COLL_NOT_READY);  // no buffer for it yet
    mark(c.tell_window, static_cast<uint32_t>(x));
    return;
  }
  CollSlot& s = slot_of(m, c, seg);
  if (!s.used) open_slot(c, s, seg);
  if (s.seg != seg) {  // its buffer still holds an older segment
    nak(RHN_SYN_COLL_NOT_READY);
    mark(c.tell_window, static_cast<uint32_t>(x));
    return;
  }
  const Topo t = topo(c, seg, c.self);
  const uint16_t xv = position(c, static_cast<uint16_t>(x), t.root);
  const bool up = op.rkey == RHN_FW_COLL_UP;
  const bool data = up || down_carries_data(c);
  bool from_ok;
  uint32_t bit = 0;
  if (up) {
    from_ok = xv > 0 && (xv - 1) / c.radix == t.v && t.children &&
              xv >= t.first_child && xv < t.first_child + t.children;
    if (from_ok) bit = 1u << (xv - t.first_child);
  } else {
    from_ok = t.v > 0 && static_cast<uint16_t>(x) == t.parent;
  }
  if (!from_ok || pkt.payload.size() != (data ? s.len : 0) ||
      (up && !has_up_phase(c))) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    fail_collective(m, c, RHN_SYN_COLL_MISMATCH, true);
    nak(RHN_SYN_COLL_MISMATCH);
    return;
  }
  uint8_t* buf = bytes_of(m, s);
  if (up) {
    if (s.children_in & bit) return;  // a copy
    contribute(c, s, buf, pkt.payload.data());
    s.children_in |= bit;
  } else {
    if (s.down_in) return;
    if (data) memcpy(buf, pkt.payload.data(), s.len);
    s.down_in = true;
  }
  m.counters.add(RHN_CNT_COLL_SEGMENTS);
  c.last_progress = m.now;
  m.coll.next_deadline = m.now;
}
}  // namespace rhinet::fw
