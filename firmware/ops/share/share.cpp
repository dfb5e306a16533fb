// SPDX-License-Identifier: BSD-2-Clause
// Shared regions: SUBSCRIBE, UNSUBSCRIBE and SHARE_UPDATE.
//
// A region is a range of an area, named by its home endpoint and the area
// key. Every member's NIC keeps a record of it with the directory (the
// members, home included); updates fan out to that directory as WRITEs
// (the requester's per-destination expansion, as a multicast list's). The join
// is run by the home's NIC with firmware messages:
//
//   newcomer --SHARE_REQ(SUBSCRIBE)--> home
//   home --ADD--> each member; member adds the newcomer, --ADDED(k)--> home
//     (k: the first of its update numbers that goes to the newcomer)
//   home waits until every member's updates below k have landed at it,
//   home --JOINED(directory, per member the last update landed)--> newcomer
//   home --SHARE_DATA (the region's bytes, after JOINED's ACK)--> newcomer
//
// The join race: an update that reaches the newcomer before its data
// is refused (NAK SHARE_JOINING) and comes again once the data is in (the
// newcomer sends SHARE_RESEND; the sender resends that message and its
// later ones to the newcomer, in order, as after PINNING). Exactly once:
// every update carries its sender's number; the newcomer applies from a
// member only numbers above the one JOINED gave for it. Those at or below
// landed at the home before the data was read, so the data holds them;
// those above are applied on top of the data in the sender's order. (The
// data is read after JOINED left, so it may also hold some of the later
// ones: applying them again writes the same bytes, since an update that
// reached the newcomer completes at its sender only when the newcomer has
// taken it, and a later write of those bytes by anyone waits for that in
// a correctly synchronised program.)
//
// Tables are bounded (EngineConfig::share.regions, a context's share of
// them); nothing is allocated after power-on. Described in
// Documentation/hardware/queues.md "Shared regions".
#include "ops/share/share.h"

#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"
#include "ops/share/share_detail.h"

namespace rhinet::fw {

using namespace share_detail;

namespace share_detail {

uint64_t cookie_of(Msg kind, uint32_t region, uint16_t gen, uint16_t node) {
  return uint64_t{static_cast<uint8_t>(kind)} << 56 | uint64_t{node} << 40 |
         uint64_t{gen} << 24 | (region & 0xffffff);
}

uint32_t share_of(uint32_t total, uint32_t share) {
  return max<uint32_t>(
      1,
      static_cast<uint32_t>(uint64_t{total} * min<uint32_t>(share, 256) / 256));
}

uint32_t src_of(const Impl& m, uint32_t qpn) {
  return qpn | uint32_t{m.qps[qpn].incarnation} << RHN_WIRE_INCARNATION_SHIFT;
}

uint32_t qpn_of(const Impl& m, const QpObj& qp) {
  return static_cast<uint32_t>(&qp - m.qps.data());
}

uint32_t index_of(const Impl& m, const ShareRegion& r) {
  return static_cast<uint32_t>(&r - m.share.regions.data());
}

// The record of endpoint `qpn` for `area_key` (any state but free).
ShareRegion* find_region(Impl& m, uint32_t qpn, uint32_t area_key) {
  if (qpn == 0 || qpn >= m.qps.size() || !m.qps[qpn].valid) return nullptr;
  for (auto& r : m.share.regions)
    if (r.state != ShareState::kFree && r.qpn == qpn &&
        r.area_key == area_key && r.qp_gen == m.qps[qpn].gen)
      return &r;
  return nullptr;
}

// A free record charged to the endpoint's context, within its share.
ShareRegion* new_region(Impl& m, uint32_t qpn, uint32_t area_key,
                        ShareState state) {
  ShareTables& t = m.share;
  const QpObj& qp = m.qps[qpn];
  if (!m.shares.room(qp.context, kResShareRegions)) return nullptr;
  for (auto& r : t.regions) {
    if (r.state != ShareState::kFree) continue;
    const uint16_t gen = static_cast<uint16_t>(r.gen + 1);
    r = ShareRegion{};
    r.gen = gen;
    r.state = state;
    r.qpn = qpn;
    r.qp_gen = qp.gen;
    r.context = qp.context;
    r.area_key = area_key;
    m.shares.charge(qp.context, kResShareRegions);
    t.used++;
    return &r;
  }
  return nullptr;
}

void free_region(Impl& m, ShareRegion& r) {
  ShareTables& t = m.share;
  if (r.state == ShareState::kFree) return;
  m.shares.give(r.context, kResShareRegions);
  t.used--;
  const uint16_t gen = r.gen;
  r = ShareRegion{};
  r.gen = gen;
}

int member_index(const ShareRegion& r, uint16_t node, uint32_t src) {
  for (uint32_t i = 0; i < r.members; i++)
    if (r.dir[i].node == node && r.dir[i].src == src)
      return static_cast<int>(i);
  return -1;
}

void drop_member(ShareRegion& r, uint32_t i) {
  r.dir[i] = r.dir[r.members - 1];
  r.dir[r.members - 1] = ShareMember{};
  r.members--;
}

bool is_self(const Impl& m, const ShareRegion& r, const ShareMember& mb) {
  return mb.node == m.cfg.node_id && mb.src == src_of(m, r.qpn);
}

void arm_probe(Impl& m) {
  m.share.next_probe = min(m.share.next_probe, m.now + m.cfg.sync_probe_ns);
}

// `context`: on whose behalf (its firmware-message share; 0: a probe).
bool post(Impl& m, uint16_t node, uint32_t kind, const void* msg, size_t len,
          uint64_t cookie, uint32_t context) {
  return m.fw_post(node, kind, {static_cast<const uint8_t*>(msg), len},
                   FwOwner::kShare, cookie, context) != kNone;
}

rhn_fw_share message(const ShareRegion& r, uint32_t to_qpn,
                     uint16_t member_node, uint32_t member_src) {
  rhn_fw_share f{};
  f.area_key = r.area_key;
  f.qpn = to_qpn;
  f.home_qpn = r.home_src;
  f.home_node = r.home_node;
  f.member_node = member_node;
  f.member_qpn = member_src;
  return f;
}

// ---- Newcomer

// Our SUBSCRIBE waiting for region `r`'s data ends with `syndrome` (its
// record goes with it, message_done).
void fail_subscribe(Impl& m, ShareRegion& r, uint8_t status, uint8_t syndrome) {
  const uint32_t qpn = r.qpn;
  QpObj& qp = m.qps[qpn];
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    Inflight& e = m.entry(qpn, i);
    if (e.opcode != RHN_OP_SUBSCRIBE || e.msn != r.subscribe_msn ||
        e.state == MsgState::kDone)
      continue;
    if (qp.tx_active && qp.tx_entry == i) m.abort_tx(qp);
    m.finish_entry(qpn, e, status, syndrome);
    return;
  }
  m.counters.add(RHN_CNT_SHARE_ERRORS);
  free_region(m, r);  // no SUBSCRIBE left to finish
}

// The data is in: updates are taken from now on, the refused ones first.
void become_ready(Impl& m, ShareRegion& r) {
  r.state = ShareState::kReady;
  for (uint32_t k = 0; k < r.refused_count; k++) {
    const ShareRefused& f = r.refused[k];
    const int i = member_index(r, f.node, f.src);
    if (i >= 0) {
      r.dir[i].refused = true;
      r.dir[i].refused_msn = f.msn;
    }
    rhn_fw_pin_ready msg{};
    msg.qpn = f.src;
    // No message slot: the sender's timer sends it again instead.
    post(m, f.node, RHN_FW_SHARE_RESEND, &msg, sizeof(msg),
         cookie_of(Msg::kOther, index_of(m, r), r.gen, f.node), r.context);
  }
  r.refused_count = 0;
  m.counters.add(RHN_CNT_SHARE_JOINS);
}

// ---- Home

// The home's answer that a join failed (no data).
bool answer_failure(Impl& m, const ShareRegion& h, uint8_t syndrome) {
  Peer* p = m.peer_for(h.join_node);
  if (!p) return true;
  if (!m.can_send(*p, kNone)) return false;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_SHARE_DATA;
  op.flags = RHN_WOP_F_LAST;
  op.syndrome = syndrome;
  op.qp_type = RHN_QP_ENDPOINT;
  op.dst_qpn = h.join_src;
  op.src_qpn = src_of(m, h.qpn);
  op.msn = h.join_msn;
  m.send_data(*p, op, {}, false, kNone, 0, false);
  return true;
}

void end_join(ShareRegion& h) {
  h.join_active = h.joined_owed = h.joined_sent = h.stream_owed = false;
  h.fail_owed = 0;
  for (uint32_t i = 0; i < h.members; i++)
    h.dir[i].add_pending = h.dir[i].add_owed = false;
}

// Member i leaves the home's directory; the others are told.
void home_remove(Impl& m, ShareRegion& h, uint32_t i) {
  const ShareMember gone = h.dir[i];
  drop_member(h, i);
  for (uint32_t j = 0; j < h.members; j++) {
    const ShareMember& mb = h.dir[j];
    if (is_self(m, h, mb)) continue;
    const rhn_fw_share f = message(h, mb.src, gone.node, gone.src);
    // No slot: that member keeps sending to the one gone, which drops
    // the updates of a region it is not in.
    if (!post(m, mb.node, RHN_FW_SHARE_REMOVE, &f, sizeof(f),
              cookie_of(Msg::kOther, index_of(m, h), h.gen, mb.node),
              h.context))
      m.counters.add(RHN_CNT_SHARE_ERRORS);
  }
  if (!h.join_active) return;
  if (gone.node == h.join_node && gone.src == h.join_src) {
    end_join(h);  // the newcomer itself: nothing to answer
    return;
  }
  try_finish_join(m, h);
}

// The join fails: the newcomer leaves the directory (the members that
// added it are told) and gets the answer when there is room.
void abort_join(Impl& m, ShareRegion& h, uint8_t syndrome) {
  m.counters.add(RHN_CNT_SHARE_ERRORS);
  const uint16_t node = h.join_node;
  const uint32_t src = h.join_src;
  const int i = member_index(h, node, src);
  h.join_active = false;  // home_remove must not take it as the newcomer
  if (i >= 0) home_remove(m, h, static_cast<uint32_t>(i));
  h.join_active = true;
  if (answer_failure(m, h, syndrome)) {
    end_join(h);
  } else {
    h.fail_owed = syndrome;  // share_run answers it
    h.joined_owed = h.joined_sent = h.stream_owed = false;
  }
}

bool send_add(Impl& m, ShareRegion& h, ShareMember& mb) {
  const rhn_fw_share f = message(h, mb.src, h.join_node, h.join_src);
  mb.add_owed =
      !post(m, mb.node, RHN_FW_SHARE_ADD, &f, sizeof(f),
            cookie_of(Msg::kAdd, index_of(m, h), h.gen, mb.node), h.context);
  return !mb.add_owed;
}

void send_joined(Impl& m, ShareRegion& h) {
  rhn_fw_share_joined j{};
  j.area_key = h.area_key;
  j.qpn = h.join_src;
  j.home_qpn = h.home_src;
  j.home_node = h.home_node;
  uint16_t n = 0;
  for (uint32_t i = 0; i < h.members; i++) {
    const ShareMember& mb = h.dir[i];
    if (mb.node == h.join_node && mb.src == h.join_src) continue;
    rhn_share_member& out = j.members[n++];
    out.node = mb.node;
    out.qpn = mb.src;
    // The home's own updates are in its memory when they are posted.
    out.seq = is_self(m, h, mb) ? h.next_seq : mb.landed;
  }
  j.count = n;
  const size_t len = offsetof(rhn_fw_share_joined, members) +
                     size_t{n} * sizeof(rhn_share_member);
  h.joined_owed = !post(
      m, h.join_node, RHN_FW_SHARE_JOINED, &j, len,
      cookie_of(Msg::kJoined, index_of(m, h), h.gen, h.join_node), h.context);
  h.joined_sent = !h.joined_owed;
}

// Every member has added the newcomer and its earlier updates are here:
// the directory goes to the newcomer, the data after it.
void try_finish_join(Impl& m, ShareRegion& h) {
  if (!h.join_active || h.joined_sent || h.fail_owed || h.stream_owed) return;
  for (uint32_t i = 0; i < h.members; i++) {
    const ShareMember& mb = h.dir[i];
    if (mb.add_pending || mb.add_owed || mb.landed < mb.wait_seq) return;
  }
  send_joined(m, h);
}

// JOINED has arrived: the region's bytes follow, as a READ's answer.
void start_stream(Impl& m, ShareRegion& h) {
  if (m.free_responder_reads.empty()) {
    h.stream_owed = true;  // share_run tries again
    return;
  }
  h.stream_owed = false;
  const QpObj& qp = m.qps[h.qpn];
  const AreaObj* a = m.find_area(qp.context, h.area_key);
  Peer* p = m.peer_for(h.join_node);
  if (!a || !p || h.offset > a->length || h.length > a->length - h.offset) {
    abort_join(m, h, RHN_SYN_BAD_AREA);  // the area went away meanwhile
    return;
  }
  ResponderRead rr;
  rr.qp_type = RHN_QP_ENDPOINT;
  rr.node = h.join_node;
  rr.requester_src = h.join_src;
  rr.responder_qpn = h.qpn;
  rr.responder_gen = qp.gen;
  rr.msn = h.join_msn;
  rr.key = (a->mr_index << RHN_KEY_INDEX_SHIFT) | m.mrs[a->mr_index].variant;
  rr.pdn = qp.pdn;
  rr.va = a->iova + h.offset;
  rr.length = static_cast<uint32_t>(h.length);
  rr.wop = RHN_WOP_SHARE_DATA;
  queue_stream(m, *p, rr);
  end_join(h);
}

// ---- Requester

uint8_t fail(Impl& m, uint8_t* syndrome, uint8_t status, uint8_t syn) {
  m.counters.add(RHN_CNT_SHARE_ERRORS);
  *syndrome = syn;
  return status;
}

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  if (qp.type != RHN_QP_ENDPOINT)
    return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE);
  // By area only (the same place at every member); no signal, no GRH.
  if (!(w.flags & RHN_WQE_F_AREA) || w.has_grh ||
      (w.flags & (RHN_WQE_F_SIGNAL_REMOTE | RHN_WQE_F_SOLICITED)))
    return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
  // A region is reached only within a group the process is in
  // (Documentation/hardware/ownership.md: groups).
  if (!m.in_group(qp.context, RHN_AREA_KEY_GROUP(w.remote_key))) {
    m.counters.add(RHN_CNT_GROUP_VIOLATIONS);
    return fail(m, syndrome, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP);
  }
  const uint32_t qpn = qpn_of(m, qp);
  ShareRegion* r = find_region(m, qpn, w.remote_key);
  switch (w.opcode) {
    case RHN_OP_SUBSCRIBE: {
      if ((w.flags & RHN_WQE_F_INLINE) || w.num_sge != 1 || w.imm_data)
        return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
      if (w.length == 0 || w.length > RHN_SHARE_MAX_BYTES)
        return fail(m, syndrome, RHN_CQE_LOC_LEN_ERR, RHN_SYN_LENGTH);
      // The SGE is this endpoint's copy: the area's own bytes, where the
      // members' updates land.
      const AreaObj* a = m.find_area(qp.context, w.remote_key);
      if (!a) return fail(m, syndrome, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_AREA);
      const rhn_sge sge = wqe_sge(qp.tx_raw, 0);
      if (w.remote_addr > a->length || w.length > a->length - w.remote_addr ||
          sge.addr != a->iova + w.remote_addr ||
          (sge.lkey >> RHN_KEY_INDEX_SHIFT) != a->mr_index)
        return fail(m, syndrome, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BOUNDS);
      if (r)  // in it (or joining) already
        return fail(m, syndrome, RHN_CQE_REM_INV_REQ_ERR,
                    RHN_SYN_NOT_SUBSCRIBED);
      if (!m.shares.room(qp.context, kResShareRegions) ||
          m.share.used >= m.share.regions.size())
        return fail(m, syndrome, RHN_CQE_GENERAL_ERR, RHN_SYN_BUSY);
      if (w.xfer_mode == RHN_XFER_TWIN) {
        const uint8_t st = partial::check(m, qp, w, syndrome);
        if (st != RHN_CQE_SUCCESS) m.counters.add(RHN_CNT_SHARE_ERRORS);
        return st;
      }
      return RHN_CQE_SUCCESS;
    }
    case RHN_OP_UNSUBSCRIBE:
      if (w.num_sge || w.inline_len || w.imm_data)
        return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
      if (!r || r->home || r->state == ShareState::kJoining ||
          w.dst_node != r->home_node ||
          w.dst_qpn != (r->home_src & RHN_WIRE_QPN_MASK))
        return fail(m, syndrome, RHN_CQE_REM_INV_REQ_ERR,
                    RHN_SYN_NOT_SUBSCRIBED);
      return RHN_CQE_SUCCESS;
    case RHN_OP_SHARE_UPDATE: {
      if (w.dst_node || w.dst_qpn)
        return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
      if (r && r->state == ShareState::kLost)
        return fail(m, syndrome, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST);
      if (!r || r->state != ShareState::kReady)
        return fail(m, syndrome, RHN_CQE_REM_INV_REQ_ERR,
                    RHN_SYN_NOT_SUBSCRIBED);
      // Inside the region: what the blocks of a STRIDE span, else the
      // message.
      uint64_t extent = w.length;
      if (w.xfer_mode == RHN_XFER_STRIDE && w.xfer.count)
        extent =
            (uint64_t{w.xfer.count} - 1) * w.xfer.remote_stride + w.xfer.block;
      if (w.remote_addr < r->offset || w.remote_addr - r->offset > r->length ||
          extent > r->length - (w.remote_addr - r->offset))
        return fail(m, syndrome, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BOUNDS);
      if (w.xfer_mode != RHN_XFER_BASIC) {
        const uint8_t st = partial::check(m, qp, w, syndrome);
        if (st != RHN_CQE_SUCCESS) m.counters.add(RHN_CNT_SHARE_ERRORS);
        return st;
      }
      return RHN_CQE_SUCCESS;
    }
    default:
      return fail(m, syndrome, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE);
  }
}

// An update's destinations: the directory without this endpoint, taken
// when its first destination is (a member added later gets the updates
// numbered after it, ADDED says which).
bool next_destination(Impl& m, QpObj& qp, const DecodedWqe& w, uint32_t index,
                      uint16_t* node, uint32_t* qpn, uint32_t* count) {
  if (w.opcode != RHN_OP_SHARE_UPDATE) {  // to the home, one message
    *node = w.dst_node;
    *qpn = w.dst_qpn;
    *count = 1;
    return index == 0;
  }
  ShareRegion* r = find_region(m, qpn_of(m, qp), w.remote_key);
  if (!r) return false;
  if (index == 0) {
    r->fanout_count = 0;
    for (uint32_t i = 0; i < r->members; i++) {
      if (is_self(m, *r, r->dir[i])) continue;
      r->fanout[r->fanout_count++] = {r->dir[i].node, r->dir[i].src, 0};
    }
    r->fanout_seq = ++r->next_seq;
  }
  *count = r->fanout_count;
  if (r->fanout_count == 0) return true;  // alone: nothing to send
  if (index >= r->fanout_count) return false;
  *node = r->fanout[index].node;
  *qpn = r->fanout[index].src & RHN_WIRE_QPN_MASK;
  return true;
}

uint32_t fanout_imm(Impl& m, QpObj& qp, const DecodedWqe& w) {
  if (w.opcode != RHN_OP_SHARE_UPDATE) return w.imm_data;
  const ShareRegion* r = find_region(m, qpn_of(m, qp), w.remote_key);
  return r ? r->fanout_seq : 0;
}

bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  const uint32_t qpn = qpn_of(m, qp);
  switch (w.opcode) {
    case RHN_OP_SUBSCRIBE: {
      // The record exists from the first transmission on, so an update
      // that overtakes the data finds it joining. A resend (BUSY: the
      // home runs another join) finds it already.
      ShareRegion* r = find_region(m, qpn, w.remote_key);
      if (!r) r = new_region(m, qpn, w.remote_key, ShareState::kJoining);
      if (!r || r->state != ShareState::kJoining) return false;
      r->home_node = w.dst_node;
      r->home_src = w.dst_qpn;
      r->offset = w.remote_addr;
      r->length = w.length;
      r->subscribe_msn = op.msn;
      r->join_deadline = m.now + m.cfg.share.join_timeout_ns;
      arm_probe(m);
      op.imm_data = RHN_SHARE_REQ_SUBSCRIBE;
      op.remote_addr = w.remote_addr;
      op.msg_len = static_cast<uint32_t>(w.length);
      op.msg_offset = 0;
      out.len = 0;
      out.advance = static_cast<uint32_t>(w.length - offset);
      out.last = true;
      return true;
    }
    case RHN_OP_UNSUBSCRIBE:
      // Out of the region at once: what still arrives is dropped.
      if (ShareRegion* r = find_region(m, qpn, w.remote_key);
          r && !r->home && r->state != ShareState::kJoining)
        free_region(m, *r);
      op.imm_data = RHN_SHARE_REQ_UNSUBSCRIBE;
      op.msg_len = 0;
      out.len = out.advance = 0;
      out.last = true;
      return true;
    default:  // SHARE_UPDATE: a WRITE's packets, numbered in imm_data
      return kRdmaFamily.build_packet(m, qp, w, offset, op, out);
  }
}

uint8_t status_of_failure(uint8_t syndrome) {
  return syndrome == RHN_SYN_BUSY ? uint8_t{RHN_CQE_GENERAL_ERR}
                                  : status_of_nak(syndrome);
}

// SHARE_DATA for our SUBSCRIBE: into its SGE (and twin); the last packet
// makes the region ready.
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt) {
  ShareRegion* r = nullptr;
  for (auto& x : m.share.regions)
    if (x.state == ShareState::kJoining && x.qpn == qpn &&
        x.subscribe_msn == e.msn)
      r = &x;
  if (pkt.op.opcode != RHN_WOP_SHARE_DATA || !r) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  const bool last = pkt.op.flags & RHN_WOP_F_LAST;
  if (last && pkt.op.syndrome != RHN_SYN_NONE) {
    m.finish_entry(qpn, e, status_of_failure(pkt.op.syndrome), pkt.op.syndrome);
    return;
  }
  const bool placed =
      m.read_ctxs[e.read_ctx].xfer_mode == RHN_XFER_BASIC
          ? scatter_answer(m, qpn, e, pkt.op.msg_offset, pkt.payload)
          : partial::place_answer(m, qpn, e, pkt.op.msg_offset, pkt.payload);
  if (!placed || !last) return;
  if (!r->have_directory) {  // the data before JOINED: the home broke it
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
    return;
  }
  become_ready(m, *r);
  m.finish_entry(qpn, e, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

// A SUBSCRIBE that failed takes its record with it.
void message_done(Impl& m, uint32_t qpn, const Inflight& e) {
  if (e.opcode != RHN_OP_SUBSCRIBE || e.status == RHN_CQE_SUCCESS) return;
  for (auto& r : m.share.regions)
    if (r.state == ShareState::kJoining && r.qpn == qpn &&
        r.subscribe_msn == e.msn) {
      m.counters.add(RHN_CNT_SHARE_ERRORS);
      free_region(m, r);
    }
}
}  // namespace share_detail

// ---- Engine hooks

void share_place(Impl& m, CardMemory& mem) {
  m.share.regions =
      mem.table<ShareRegion>(max<uint32_t>(m.cfg.share.regions, 1));
}

void share_reset(Impl& m) {
  ShareTables& t = m.share;
  t.regions.fill(ShareRegion{});
  t.quota = share_of(m.cfg.share.regions, m.cfg.share.context_share);
  m.shares.set_limit(kResShareRegions, m.cfg.share.regions, t.quota,
                     m.cfg.account_share);
  t.used = 0;
  t.next_probe = UINT64_MAX;
}

void share_fw_receive(Impl& m, Peer& p, const Packet& pkt) {
  const uint16_t from = m.node_of(p);
  if (pkt.op.rkey == RHN_FW_SHARE_JOINED) {
    on_joined(m, from, pkt.payload);
    return;
  }
  rhn_fw_share f;
  if (pkt.payload.size() != sizeof(f)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&f, pkt.payload.data(), sizeof(f));
  switch (pkt.op.rkey) {
    case RHN_FW_SHARE_ADD:
      on_add(m, from, f);
      return;
    case RHN_FW_SHARE_ADDED:
      on_added(m, from, f);
      return;
    default:
      on_remove(m, from, f);
      return;
  }
}

void share_fw_done(Impl& m, uint64_t cookie, uint8_t syndrome) {
  const auto kind = static_cast<Msg>(cookie >> 56);
  const auto node = static_cast<uint16_t>(cookie >> 40);
  const auto gen = static_cast<uint16_t>(cookie >> 24);
  const uint32_t index = cookie & 0xffffff;
  if (kind != Msg::kAdd && kind != Msg::kJoined) return;
  if (index >= m.share.regions.size()) return;
  ShareRegion& h = m.share.regions[index];
  if (h.state == ShareState::kFree || h.gen != gen || !h.home || !h.join_active)
    return;
  if (kind == Msg::kJoined) {
    if (syndrome == RHN_SYN_NONE && h.joined_sent)
      start_stream(m, h);  // the directory is there: the data follows
    else if (syndrome != RHN_SYN_NONE)
      abort_join(m, h, RHN_SYN_MEMBER_LOST);
    return;
  }
  if (syndrome == RHN_SYN_NONE) return;  // its ADDED follows
  // That NIC will not add the newcomer (gone, or it refused the message):
  // its members on it leave the region.
  for (uint32_t i = h.members; i-- > 0;)
    if (h.dir[i].node == node && h.dir[i].add_pending && h.join_active)
      home_remove(m, h, i);
}

void share_qp_gone(Impl& m, uint32_t qpn) {
  for (auto& r : m.share.regions) {
    if (r.state == ShareState::kFree || r.qpn != qpn) continue;
    if (r.home) {
      // The region ends: every member is told, a newcomer is answered.
      if (r.join_active && !r.fail_owed)
        answer_failure(m, r, RHN_SYN_MEMBER_LOST);
      for (uint32_t i = 0; i < r.members; i++) {
        const ShareMember& mb = r.dir[i];
        if (is_self(m, r, mb)) continue;
        rhn_fw_share f = message(r, mb.src, mb.node, mb.src);
        f.flags = RHN_FW_SHARE_F_GONE;
        post(m, mb.node, RHN_FW_SHARE_REMOVE, &f, sizeof(f),
             cookie_of(Msg::kOther, 0, 0, mb.node), r.context);
      }
    } else if (r.state != ShareState::kLost) {
      // A member gone without an UNSUBSCRIBE: the home removes it.
      const rhn_fw_share f =
          message(r, r.home_src, m.cfg.node_id, src_of(m, qpn));
      post(m, r.home_node, RHN_FW_SHARE_REMOVE, &f, sizeof(f),
           cookie_of(Msg::kOther, 0, 0, r.home_node), r.context);
    }
    free_region(m, r);
  }
}

void share_node_failed(Impl& m, uint16_t node) {
  for (auto& r : m.share.regions) {
    if (r.state == ShareState::kFree) continue;
    if (!r.home && r.home_node == node) {
      m.counters.add(RHN_CNT_SHARE_ERRORS);
      if (r.state == ShareState::kJoining)
        fail_subscribe(m, r, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST);
      else
        r.state = ShareState::kLost;
      continue;
    }
    for (uint32_t i = r.members; i-- > 0;) {
      if (r.dir[i].node != node) continue;
      if (!r.home) {
        drop_member(r, i);
      } else if (r.join_active && r.join_node == node &&
                 r.dir[i].src == r.join_src) {
        r.join_active = false;  // the newcomer died: nobody to answer
        home_remove(m, r, i);
        end_join(r);
      } else {
        home_remove(m, r, i);  // the others are told
      }
    }
    uint32_t kept = 0;
    for (uint32_t k = 0; k < r.refused_count; k++)
      if (r.refused[k].node != node) r.refused[kept++] = r.refused[k];
    r.refused_count = static_cast<uint8_t>(kept);
  }
}

bool share_run(Impl& m, uint32_t budget) {
  if (m.now < share_next_deadline(m) || budget == 0) return false;
  bool waiting = false;
  for (auto& r : m.share.regions) {
    if (r.state == ShareState::kJoining) {
      waiting = true;
      if (m.now >= r.join_deadline) {
        fail_subscribe(m, r, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST);
        continue;
      }
      // A home that died is found by its channel only if we send to it.
      post(m, r.home_node, RHN_FW_PING, nullptr, 0,
           cookie_of(Msg::kProbe, 0, 0, r.home_node), 0);
      continue;
    }
    if (!r.home || !r.join_active) continue;
    waiting = true;
    if (r.fail_owed) {
      if (answer_failure(m, r, r.fail_owed)) end_join(r);
      continue;
    }
    if (m.now >= r.join_deadline) {
      abort_join(m, r, RHN_SYN_MEMBER_LOST);
      continue;
    }
    for (uint32_t i = 0; i < r.members; i++) {
      ShareMember& mb = r.dir[i];
      if (mb.add_owed) send_add(m, r, mb);
      if (mb.add_pending)
        post(m, mb.node, RHN_FW_PING, nullptr, 0,
             cookie_of(Msg::kProbe, 0, 0, mb.node), 0);
    }
    post(m, r.join_node, RHN_FW_PING, nullptr, 0,
         cookie_of(Msg::kProbe, 0, 0, r.join_node), 0);
    if (r.joined_owed) send_joined(m, r);
    if (r.stream_owed) start_stream(m, r);
    try_finish_join(m, r);
  }
  m.share.next_probe = waiting ? m.now + m.cfg.sync_probe_ns : UINT64_MAX;
  return true;
}

extern const OpFamily kShareFamily = {
    .name = "share",
    .check = check,
    .build_packet = build_packet,
    .on_response = on_response,
    .on_request = on_request,
    .next_destination = next_destination,
    .fanout_imm = fanout_imm,
    .message_done = message_done,
};

}  // namespace rhinet::fw
