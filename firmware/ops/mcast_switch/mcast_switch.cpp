// SPDX-License-Identifier: BSD-2-Clause
// Simultaneous multicast (through a switch group): one WQE, a PUSH by area to
// every endpoint of a switch group. The NIC sends each packet once, to the
// group's node ID, and the switch copies it to the members (the pattern the
// administrator registered there). Reliability is not the node channels':
// every (sender, group) pair is a stream of its own with its own serial
// numbers (Documentation/firmware/multicast.md):
//
//   sender                                 member
//   ------                                 ------
//   keeps packets [floor, next_seq)        delivers serial rx_expected only,
//   until every live member acked them     drops duplicates, acknowledges
//   repairs a lagging member by unicast    cumulatively (every 8th, the last
//   resends; retries run out: the member   of a message, a gap, a refusal)
//   is dead, its messages fail
//
// Member state (what each member acknowledged, and where each member's own
// stream to us is) lives in the group entry the kernel registered, so
// nothing here grows with traffic: a group has at most
// RHN_MCAST_SWITCH_MAX_MEMBERS members, a stream at most kMcastWindow
// packets in a shared, per-context-bounded packet memory.
#include "ops/mcast_switch/mcast_switch.h"

#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"

namespace rhinet::fw {

extern const OpFamily kRdmaFamily;

namespace {

constexpr uint16_t kNoMember = 0xffff;
// A member acknowledges at least every this many packets.
constexpr uint32_t kAckEvery = 8;
// Packets one repair resends to a member at most (go-back-N, bounded).
constexpr uint32_t kRepairBurst = 8;

bool session_before(uint16_t a, uint16_t b) {
  return static_cast<int16_t>(static_cast<uint16_t>(a - b)) < 0;
}

uint16_t member_index(const McastGroup& g, uint16_t node) {
  for (uint16_t i = 0; i < g.count; i++)
    if (g.members[i].node == node) return i;
  return kNoMember;
}

// The members this NIC's stream waits for: all but itself and the dead.
bool waited_for(const McastGroup& g, uint16_t i) {
  return i != g.self && !g.members[i].dead;
}

McastMsg* msg_of_serial(McastGroup& g, uint32_t seq) {
  for (uint32_t i = g.msg_head; i != g.msg_tail; i++) {
    McastMsg& msg = g.msgs[i % kMcastWindow];
    if (msg.qpn != kNone && !seq_before(seq, msg.first_seq) &&
        !seq_before(msg.last_seq, seq))
      return &msg;
  }
  return nullptr;
}

void fail_msg(McastMsg& msg, uint8_t status, uint8_t syndrome) {
  if (msg.status != RHN_CQE_SUCCESS) return;  // the first failure stays
  msg.status = status;
  msg.syndrome = syndrome;
}

// ---- The family (requester side) -----------------------------------------

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT) {
    *syndrome = RHN_SYN_BAD_OPCODE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // By area (the same address at every member), to a group, no QP.
  if (!(w.flags & RHN_WQE_F_AREA) || w.dst_qpn || w.has_grh) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  const McastGroup* g = mcast_group(m, w.dst_node);
  // A group the kernel gave this NIC no list for, or one whose list does
  // not name this node (its members would not take our stream).
  if (!g || g->self == kNoMember) {
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    *syndrome = RHN_SYN_NO_MCAST_GROUP;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  if (!m.in_group(qp.context, g->endpoint_group)) {
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    m.counters.add(RHN_CNT_GROUP_VIOLATIONS);
    *syndrome = RHN_SYN_BAD_GROUP;
    return RHN_CQE_LOC_PROT_ERR;
  }
  if (w.xfer_mode != RHN_XFER_BASIC) return partial::check(m, qp, w, syndrome);
  return RHN_CQE_SUCCESS;
}

// The packets are the WRITE family's (partial modes included); only the
// opcode and where they go differ (mcast_send_packet).
bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  return kRdmaFamily.build_packet(m, qp, w, offset, op, out);
}

Impl::TxResult send_packet(Impl& m, QpObj& qp, uint32_t qpn) {
  return mcast_send_packet(m, qp, qpn);
}

}  // namespace

extern const OpFamily kMcastSwitchFamily = {
    .name = "mcast_switch",
    .check = check,
    .build_packet = build_packet,
    .send_packet = send_packet,
};

// ---- Tables ---------------------------------------------------------------

void mcast_place(Impl& m, CardMemory& mem) {
  McastTables& t = m.switch_mcast;
  const uint32_t frames = max<uint32_t>(m.cfg.mcast_switch.frames, 1);
  t.groups = mem.table<McastGroup>(max<uint32_t>(m.cfg.mcast_switch.groups, 1));
  t.frames = mem.table<McastFrame>(frames);
  t.free_frames = Fifo<uint32_t>(frames, mem);
}

void mcast_reset(Impl& m) {
  McastTables& t = m.switch_mcast;
  t.groups.fill(McastGroup{});
  const uint32_t frames = t.frames.size();
  for (McastFrame& f : t.frames) f.context = kNone;
  t.free_frames.fill_indices(frames);
  // A context may hold its share of the packet memory, but at least one
  // window's worth (small configurations).
  t.context_quota = max<uint32_t>(
      min(kMcastWindow, frames),
      uint32_t(uint64_t{frames} * m.cfg.mcast_switch.context_share / 256));
  m.shares.set_limit(kResMcastFrames, frames, t.context_quota,
                     m.cfg.account_share);
  t.frame_waiters = WaitList{};
  t.next_repair = UINT64_MAX;
}

McastGroup* mcast_group(Impl& m, uint16_t id) {
  if (id < RHN_NODE_MCAST_FIRST || id >= RHN_NODE_BROADCAST) return nullptr;
  for (McastGroup& g : m.switch_mcast.groups)  // a handful of entries
    if (g.valid && g.id == id) return &g;
  return nullptr;
}

namespace {

void release_frame(Impl& m, uint32_t f) {
  McastFrame& fr = m.switch_mcast.frames[f];
  m.shares.give(fr.context, kResMcastFrames);
  fr.context = kNone;
  m.switch_mcast.free_frames.push(f);
}

uint64_t repair_delay(const Impl& m, const McastMember& mb) {
  const uint64_t d = m.cfg.retransmit_timeout_ns
                     << min<uint32_t>(mb.retries, 5);
  return min(d,
             max(m.cfg.retransmit_timeout_ns, m.cfg.max_retransmit_timeout_ns));
}

void arm_repair(Impl& m, McastGroup& g, McastMember& mb) {
  mb.repair_at = m.now + repair_delay(m, mb);
  g.next_repair = min(g.next_repair, mb.repair_at);
  m.switch_mcast.next_repair = min(m.switch_mcast.next_repair, mb.repair_at);
}

// Whether the QP is still sending the message (its later packets will
// come): a message abandoned half-way (QP in error, destroyed, a local
// fault) retires once its packets are acknowledged, completing nothing.
bool still_sending(const Impl& m, const McastMsg& msg) {
  const QpObj& qp = m.qps[msg.qpn];
  return qp.valid && qp.gen == msg.qp_gen && qp.tx_active &&
         qp.tx_entry == msg.entry;
}

}  // namespace

// The floor moves to the oldest serial a live member still lacks: packets
// below it are freed, messages whose last packet is below it complete.
static void advance(Impl& m, McastGroup& g) {
  uint32_t floor = g.next_seq;
  for (uint16_t i = 0; i < g.count; i++)
    if (waited_for(g, i) && seq_before(g.members[i].acked, floor))
      floor = g.members[i].acked;
  bool freed = false;
  for (; g.floor != floor; g.floor++) {
    uint32_t& f = g.frames[g.floor % kMcastWindow];
    if (f != kNone) release_frame(m, f);
    f = kNone;
    freed = true;
  }
  // Messages complete in any order (another QP's message may still be
  // sending at the head); the ring's head moves over finished ones.
  for (uint32_t i = g.msg_head; i != g.msg_tail; i++) {
    McastMsg& msg = g.msgs[i % kMcastWindow];
    if (msg.qpn == kNone || !seq_before(msg.last_seq, g.floor)) continue;
    if (!msg.sealed && still_sending(m, msg)) continue;
    const uint32_t qpn = msg.qpn;
    msg.qpn = kNone;
    QpObj& qp = m.qps[qpn];
    if (!msg.sealed || !qp.valid || qp.gen != msg.qp_gen) continue;
    Inflight& e = m.entry(qpn, msg.entry);
    if (e.msn == msg.msn && e.state == MsgState::kAwaitAck && e.peer == g.id)
      m.finish_entry(qpn, e, msg.status, msg.syndrome);
  }
  while (g.msg_head != g.msg_tail &&
         g.msgs[g.msg_head % kMcastWindow].qpn == kNone)
    g.msg_head++;
  if (freed) {
    m.wake_all(g.waiters);
    m.wake_all(m.switch_mcast.frame_waiters);
  }
}

// ---- Admin ----------------------------------------------------------------

rhn_admin_status mcast_set_group(Impl& m, const rhn_admin_mcast_group& c,
                                 uint32_t& detail) {
  // The administrator's sub-range: the rest is verbs UD multicast's,
  // whose groups are hashed MGIDs (hw_wire.h).
  if (c.group < RHN_NODE_MCAST_FIRST || c.group >= RHN_NODE_MCAST_UD_FIRST ||
      c.reserved)
    return detail = 1, RHN_ADMIN_BAD_PARAM;
  if (c.count > RHN_MCAST_SWITCH_MAX_MEMBERS)
    return detail = 2, RHN_ADMIN_BAD_PARAM;
  rhn_mcast_dest list[RHN_MCAST_SWITCH_MAX_MEMBERS];
  if (c.count &&
      !m.bus.dma_read(c.list_addr, list, c.count * sizeof(rhn_mcast_dest)))
    return RHN_ADMIN_DMA_ERROR;
  for (uint32_t i = 0; i < c.count; i++) {
    if (list[i].reserved || list[i].node >= m.cfg.max_nodes ||
        list[i].node >= RHN_MAX_NODES)
      return detail = 3, RHN_ADMIN_BAD_PARAM;
    for (uint32_t j = 0; j < i; j++)
      if (list[j].node == list[i].node) return detail = 3, RHN_ADMIN_BAD_PARAM;
  }
  McastGroup* g = mcast_group(m, c.group);
  // Multicasts of ours still outstanding keep the list they started with.
  if (g && (g->msg_head != g->msg_tail || g->floor != g->next_seq))
    return RHN_ADMIN_BUSY;
  if (c.count == 0) {
    if (!g) return RHN_ADMIN_BAD_HANDLE;
    g->valid = false;
    m.wake_all(g->waiters);  // they find no group and fail
    return RHN_ADMIN_OK;
  }
  uint16_t session = static_cast<uint16_t>(m.boot_session * 31 + c.group);
  if (g) {
    session = static_cast<uint16_t>(g->session + 1);  // newer: members follow
  } else {
    for (McastGroup& f : m.switch_mcast.groups)
      if (!f.valid) {
        g = &f;
        break;
      }
    if (!g) return RHN_ADMIN_NO_RESOURCES;
  }
  m.wake_all(g->waiters);
  *g = McastGroup{};
  g->valid = true;
  g->id = c.group;
  g->endpoint_group = c.endpoint_group;
  g->count = c.count;
  g->session = session;
  for (uint32_t i = 0; i < c.count; i++) {
    g->members[i].node = list[i].node;
    g->members[i].qpn = list[i].qpn & RHN_WIRE_QPN_MASK;
    if (list[i].node == m.cfg.node_id) g->self = static_cast<uint16_t>(i);
  }
  for (uint32_t& f : g->frames) f = kNone;
  for (McastMsg& msg : g->msgs) msg.qpn = kNone;
  return RHN_ADMIN_OK;
}

// ---- Sender ---------------------------------------------------------------

Engine::Impl::Impl::TxResult mcast_send_packet(Impl& m, QpObj& qp,
                                               uint32_t qpn) {
  Inflight& e = m.entry(qpn, qp.tx_entry);
  if (e.state != MsgState::kSending) {
    m.abort_tx(qp);  // a failure ended it meanwhile
    return Impl::TxResult::kAborted;
  }
  const DecodedWqe& w = qp.tx_wqe;
  McastGroup* g = mcast_group(m, qp.tx_peer);
  if (!g || g->self == kNoMember) {  // the kernel removed it meanwhile
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    m.abort_tx(qp);
    m.finish_entry(qpn, e, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_NO_MCAST_GROUP);
    return Impl::TxResult::kAborted;
  }
  const bool first = qp.tx_offset == 0;
  // Room: the stream's window (and a message record for a new message),
  // then packet memory within the context's share.
  if (g->next_seq - g->floor >= kMcastWindow ||
      (first && g->msg_tail - g->msg_head >= kMcastWindow)) {
    m.counters.add(RHN_CNT_MCAST_WAITS);
    m.wait_on(qpn, g->waiters);
    return Impl::TxResult::kBlocked;
  }
  if (m.switch_mcast.free_frames.empty() ||
      !m.shares.room(qp.context, kResMcastFrames)) {
    m.counters.add(RHN_CNT_MCAST_WAITS);
    m.wait_on(qpn, m.switch_mcast.frame_waiters);
    return Impl::TxResult::kBlocked;
  }
  const uint32_t f = m.switch_mcast.free_frames.front();
  m.switch_mcast.free_frames.pop();
  McastFrame& fr = m.switch_mcast.frames[f];
  fr.context = qp.context;
  m.shares.charge(qp.context, kResMcastFrames);

  rhn_op_hdr op = m.request_header(qp, qpn, e);
  PacketOut out{fr.frame + RHN_DATA_HDR_LEN};
  if (!build_packet(m, qp, w, qp.tx_offset, op, out)) {
    release_frame(m, f);
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    m.abort_tx(qp);
    m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    // Its packets already out retire with the floor (still_sending).
    advance(m, *g);
    return Impl::TxResult::kAborted;
  }
  const uint32_t seq = g->next_seq++;
  McastMsg* msg = nullptr;
  if (first) {
    msg = &g->msgs[g->msg_tail++ % kMcastWindow];
    *msg = McastMsg{};
    msg->qpn = qpn;
    msg->qp_gen = qp.gen;
    msg->entry = qp.tx_entry;
    msg->msn = e.msn;
    msg->first_seq = seq;
    // After a member died every message fails (the group is broken
    // until the kernel sets it again); the others still get the data.
    if (g->member_lost)
      fail_msg(*msg, RHN_CQE_RETRY_EXC_ERR, RHN_SYN_MEMBER_LOST);
  } else {
    for (uint32_t i = g->msg_tail; i-- != g->msg_head;) {
      McastMsg& c = g->msgs[i % kMcastWindow];
      if (c.qpn == qpn && c.qp_gen == qp.gen && c.entry == qp.tx_entry) {
        msg = &c;
        break;
      }
    }
  }
  if (out.last) op.flags |= RHN_WOP_F_LAST;
  op.opcode = RHN_WOP_MCAST_DATA;
  op.dst_qpn = g->id;
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = g->id;
  h.src_node = m.cfg.node_id;
  h.seq = seq;
  h.session = g->session;
  h.ack_seq = g->floor;
  h.payload_len = static_cast<uint16_t>(out.len);
  const uint32_t pcrc =
      out.len ? crc32c(0, fr.frame + RHN_DATA_HDR_LEN, out.len) : 0;
  fr.len = static_cast<uint16_t>(seal_packet(fr.frame, h, &op, pcrc));
  g->frames[seq % kMcastWindow] = f;
  if (msg) {
    msg->last_seq = seq;
    msg->sealed = out.last;
  }
  m.counters.add(RHN_CNT_MCAST_SWITCH_PACKETS);
  m.transmit(g->id, {fr.frame, fr.len});
  // Members that were up to date are now waited for: their repair timer
  // starts.
  for (uint16_t i = 0; i < g->count; i++) {
    McastMember& mb = g->members[i];
    if (waited_for(*g, i) && mb.acked == seq) arm_repair(m, *g, mb);
  }
  qp.tx_offset += out.advance;
  if (!out.last) return Impl::TxResult::kSent;
  e.state = MsgState::kAwaitAck;
  qp.tx_active = false;  // the message is out
  advance(m, *g);        // nobody to wait for (a group of one): done now
  return Impl::TxResult::kFinished;
}

namespace {

// Sends the packets from the member's first missing one again, to it alone
// (its own node as the destination, the floor brought up to date).
void repair(Impl& m, McastGroup& g, McastMember& mb) {
  const uint32_t n = min(g.next_seq - mb.acked, kRepairBurst);
  for (uint32_t k = 0; k < n; k++) {
    const uint32_t f = g.frames[(mb.acked + k) % kMcastWindow];
    if (f == kNone) break;
    McastFrame& fr = m.switch_mcast.frames[f];
    rhn_pkt_hdr h;
    memcpy(&h, fr.frame, sizeof(h));
    h.dst_node = mb.node;
    h.ack_seq = g.floor;
    memcpy(fr.frame, &h, sizeof(h));
    reseal_header(fr.frame);
    m.counters.add(RHN_CNT_MCAST_REPAIRS);
    m.transmit(mb.node, {fr.frame, fr.len});
  }
}

void member_died(Impl& m, McastGroup& g, McastMember& mb) {
  mb.dead = true;
  mb.repair_at = UINT64_MAX;
  g.member_lost = true;
  m.counters.add(RHN_CNT_MCAST_MEMBERS_LOST);
  // Every message it has not acknowledged whole fails; the others still
  // complete once the live members have it.
  for (uint32_t i = g.msg_head; i != g.msg_tail; i++) {
    McastMsg& msg = g.msgs[i % kMcastWindow];
    if (msg.qpn != kNone &&
        (!msg.sealed || !seq_before(msg.last_seq, mb.acked)))
      fail_msg(msg, RHN_CQE_RETRY_EXC_ERR, RHN_SYN_MEMBER_LOST);
  }
  advance(m, g);
}

}  // namespace

bool mcast_run(Impl& m) {
  if (m.now < mcast_next_deadline(m)) return false;
  bool did = false;
  uint64_t next = UINT64_MAX;
  for (McastGroup& g : m.switch_mcast.groups) {
    if (!g.valid) continue;
    if (g.next_repair > m.now) {
      next = min(next, g.next_repair);
      continue;
    }
    uint64_t group_next = UINT64_MAX;
    for (uint16_t i = 0; i < g.count; i++) {
      McastMember& mb = g.members[i];
      if (!waited_for(g, i) || mb.acked == g.next_seq) continue;
      if (mb.repair_at > m.now) {
        group_next = min(group_next, mb.repair_at);
        continue;
      }
      did = true;
      if (mb.retries >= m.cfg.max_retries) {
        member_died(m, g, mb);
        continue;
      }
      mb.retries++;
      repair(m, g, mb);
      mb.repair_at = m.now + repair_delay(m, mb);
      group_next = min(group_next, mb.repair_at);
    }
    g.next_repair = group_next;
    next = min(next, group_next);
  }
  m.switch_mcast.next_repair = next;
  return did;
}

// ---- Both sides: frames of the streams --------------------------------------

namespace {

void send_mcast_ack(Impl& m, const McastGroup& g, const McastMember& from,
                    bool gap) {
  alignas(8) uint8_t frame[RHN_DATA_HDR_LEN];
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = from.node;
  h.src_node = m.cfg.node_id;
  h.session = from.rx_session;
  h.ack_seq = from.rx_expected;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_MCAST_ACK;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.dst_qpn = g.id;
  op.syndrome = from.rx_error;
  op.msn = from.rx_error_seq;
  op.imm_data = gap ? RHN_MCAST_ACK_GAP : 0;
  seal_packet(frame, h, &op, 0);
  m.transmit(from.node, {frame, sizeof(frame)});
}

enum class Landing : uint8_t { kPlaced, kRefused, kNotNow };

// The packet as a WRITE by area into this node's member endpoint.
Landing place(Impl& m, McastGroup& g, Peer& p, const Packet& pkt,
              uint8_t* syndrome) {
  const rhn_op_hdr& op = pkt.op;
  const uint32_t qpn = g.members[g.self].qpn;
  QpObj* qp =
      qpn && qpn < m.qps.size() && m.qps[qpn].valid ? &m.qps[qpn] : nullptr;
  if (!qp || qp->type != RHN_QP_ENDPOINT || qp->state < RHN_QPS_RTR ||
      qp->state == RHN_QPS_ERR) {
    m.counters.add(RHN_CNT_NO_QP_REQUESTS);
    *syndrome = RHN_SYN_BAD_QP;
    return Landing::kRefused;
  }
  if (!(op.flags & RHN_WOP_F_AREA)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    *syndrome = RHN_SYN_BAD_OPCODE;
    return Landing::kRefused;
  }
  const uint32_t src = op.src_qpn;
  Request r{p,
            *qp,
            qpn,
            op,
            pkt.payload,
            m.node_of(p),
            src,
            src & RHN_WIRE_QPN_MASK,
            (op.flags & RHN_WOP_F_FIRST) != 0,
            (op.flags & RHN_WOP_F_LAST) != 0};
  uint64_t extent;
  const rhn_syndrome shape = partial::write_extent(op, pkt.payload, &extent);
  if (shape != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    *syndrome = shape;
    return Landing::kRefused;
  }
  // As for a WRITE, the first packet of a plain or bitmap message answers
  // for the whole message: one reaching past the area fails before a byte
  // lands.
  if (r.first && op.msg_len > op.msg_offset &&
      !(op.flags & (RHN_WOP_F_RUNS | RHN_WOP_F_STRIDED)))
    extent = max<uint64_t>(extent, op.msg_len - op.msg_offset);
  uint64_t va;
  uint32_t key, mr_index;
  const rhn_syndrome syn = resolve_target(m, r, RHN_ACCESS_REMOTE_WRITE, extent,
                                          &va, &key, &mr_index);
  if (syn != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
    *syndrome = syn;
    return Landing::kRefused;
  }
  // Pages pinned on demand that are not yet: not taken now; the host is
  // asked to pin them and the sender's repair brings the packet again.
  if (mr_index != kNone && !pin_range(m, mr_index, va, extent))
    return Landing::kNotNow;
  if (!partial::place_write(m, op, pkt.payload, mr_index, va)) {
    *syndrome = RHN_SYN_DMA;
    return Landing::kRefused;
  }
  if (r.last && (op.flags & RHN_WOP_F_SIGNAL)) deliver_signal(m, r);
  if (r.last) area_landed(m, r, op.msg_len);
  return Landing::kPlaced;
}

void receive_data(Impl& m, McastGroup& g, McastMember& mb, Peer& p,
                  const Packet& pkt) {
  const rhn_pkt_hdr& h = pkt.hdr;
  if (!mb.rx_synced || h.session != mb.rx_session) {
    if (mb.rx_synced && session_before(h.session, mb.rx_session)) {
      m.counters.add(RHN_CNT_STALE_PACKETS);  // a stream left behind
      return;
    }
    // A new stream (first contact, or the group set again at the
    // sender): it starts at the sender's floor.
    mb.rx_synced = true;
    mb.rx_session = h.session;
    mb.rx_expected = h.ack_seq;
    mb.rx_error = RHN_SYN_NONE;
    mb.rx_gap_told = false;
  }
  const uint32_t floor = h.ack_seq;
  // A refusal the sender has taken into account (the floor passed it).
  if (mb.rx_error != RHN_SYN_NONE && seq_before(mb.rx_error_seq, floor))
    mb.rx_error = RHN_SYN_NONE;
  // The sender counts on us for serials below its floor: we lost our state
  // (restarted) since; what we missed is gone.
  if (seq_before(mb.rx_expected, floor)) mb.rx_expected = floor;
  if (h.seq != mb.rx_expected) {
    if (seq_before(h.seq, mb.rx_expected)) {
      m.counters.add(RHN_CNT_MCAST_DUPLICATES);
      send_mcast_ack(m, g, mb, false);  // stop the repairs
    } else {
      m.counters.add(RHN_CNT_OUT_OF_ORDER);
      if (!mb.rx_gap_told) {
        mb.rx_gap_told = true;
        send_mcast_ack(m, g, mb, true);
      }
    }
    return;
  }
  uint8_t syndrome = RHN_SYN_NONE;
  const Landing l = place(m, g, p, pkt, &syndrome);
  if (l == Landing::kNotNow) return;
  if (l == Landing::kRefused) {
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    // One refusal reported at a time: a second waits (not taken, as if
    // lost) until the floor shows the sender heard of the first.
    if (mb.rx_error != RHN_SYN_NONE) return;
    mb.rx_error = syndrome;
    mb.rx_error_seq = h.seq;
  }
  mb.rx_expected++;
  mb.rx_gap_told = false;
  if ((pkt.op.flags & RHN_WOP_F_LAST) || l == Landing::kRefused ||
      mb.rx_expected % kAckEvery == 0)
    send_mcast_ack(m, g, mb, false);
}

void receive_ack(Impl& m, McastGroup& g, McastMember& mb, const Packet& pkt) {
  const rhn_pkt_hdr& h = pkt.hdr;
  if (h.session != g.session) {
    m.counters.add(RHN_CNT_STALE_PACKETS);
    return;
  }
  if (mb.dead) return;
  const uint32_t ack = h.ack_seq;
  if (seq_before(g.next_seq, ack)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  // A refusal counts before the acknowledgement that passes it.
  if (pkt.op.syndrome != RHN_SYN_NONE && !seq_before(pkt.op.msn, g.floor) &&
      seq_before(pkt.op.msn, ack)) {
    if (McastMsg* msg = msg_of_serial(g, pkt.op.msn))
      fail_msg(*msg, status_of_nak(pkt.op.syndrome), pkt.op.syndrome);
  }
  if (seq_before(mb.acked, ack)) {
    mb.acked = ack;
    mb.retries = 0;
    mb.gap_repaired = false;
    if (ack == g.next_seq)
      mb.repair_at = UINT64_MAX;
    else
      arm_repair(m, g, mb);
    advance(m, g);
  }
  // It saw a gap: repair now rather than at its timer (once per gap).
  if ((pkt.op.imm_data & RHN_MCAST_ACK_GAP) && mb.acked != g.next_seq &&
      !mb.gap_repaired) {
    mb.gap_repaired = true;
    repair(m, g, mb);
  }
}

}  // namespace

void mcast_receive(Impl& m, const Packet& pkt) {
  const rhn_pkt_hdr& h = pkt.hdr;
  McastGroup* g = mcast_group(m, static_cast<uint16_t>(pkt.op.dst_qpn));
  Peer* p = m.peer_for(h.src_node);
  const uint16_t i = g ? member_index(*g, h.src_node) : kNoMember;
  // A group, a sender or (for data) a membership of ours the kernel did
  // not register: the administrator's switch pattern and the lists the
  // NICs were given disagree.
  if (!g || !p || i == kNoMember || i == g->self ||
      (pkt.op.opcode == RHN_WOP_MCAST_DATA && g->self == kNoMember)) {
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    return;
  }
  if (pkt.op.opcode == RHN_WOP_MCAST_DATA)
    receive_data(m, *g, g->members[i], *p, pkt);
  else
    receive_ack(m, *g, g->members[i], pkt);
}

}  // namespace rhinet::fw
