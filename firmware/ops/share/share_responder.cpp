// SPDX-License-Identifier: BSD-2-Clause
// Shared regions at the responder: the home's SUBSCRIBE and UNSUBSCRIBE,
// a member's updates, and the directory's firmware messages. The
// requester side and the engine hooks are in share.cpp.
#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"
#include "ops/share/share.h"
#include "ops/share/share_detail.h"

namespace rhinet::fw {

using namespace share_detail;

namespace share_detail {

// ---- Responder

void home_subscribe(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  const uint32_t len = op.msg_len;
  if (!r.first || !r.last || len == 0 || len > RHN_SHARE_MAX_BYTES) {
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    refuse(m, r, RHN_SYN_LENGTH);
    return;
  }
  uint64_t va;
  uint32_t key, mr_index;
  const rhn_syndrome syn =
      resolve_target(m, r, RHN_ACCESS_REMOTE_READ, len, &va, &key, &mr_index);
  if (syn != RHN_SYN_NONE) {
    m.counters.add(RHN_CNT_REMOTE_ACCESS_ERRORS);
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    refuse(m, r, syn);
    return;
  }
  ShareRegion* h = find_region(m, r.qpn, op.rkey);
  if (h && (!h->home || h->offset != op.remote_addr || h->length != len ||
            member_index(*h, r.node, r.src) >= 0)) {
    // Not the home of it (a member), another range, or in it already.
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    refuse(m, r,
           h->home && member_index(*h, r.node, r.src) < 0
               ? RHN_SYN_BOUNDS
               : RHN_SYN_NOT_SUBSCRIBED);
    return;
  }
  if (h && h->join_active) {
    not_ready(m, r, RHN_SYN_BUSY);  // one join at a time: sent again later
    return;
  }
  ShareRegion shell;  // what answer_failure needs before there is a record
  shell.qpn = r.qpn;
  shell.join_node = r.node;
  shell.join_src = r.src;
  shell.join_msn = op.msn;
  if (!h) {
    h = new_region(m, r.qpn, op.rkey, ShareState::kReady);
    if (!h) {  // the home's table, or its process's share of it, is full
      m.counters.add(RHN_CNT_SHARE_ERRORS);
      answer_failure(m, shell, RHN_SYN_BUSY);
      return;
    }
    h->home = true;
    h->home_node = m.cfg.node_id;
    h->home_src = src_of(m, r.qpn);
    h->offset = op.remote_addr;
    h->length = len;
    h->members = 1;
    h->dir[0].node = m.cfg.node_id;
    h->dir[0].src = h->home_src;
  }
  if (h->members >= RHN_SHARE_MAX_MEMBERS) {
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    answer_failure(m, shell, RHN_SYN_BUSY);
    return;
  }
  // The newcomer is a member from now on: the home's own updates go to
  // it (it refuses them until its data is in).
  ShareMember& nm = h->dir[h->members++];
  nm = ShareMember{};
  nm.node = r.node;
  nm.src = r.src;
  h->join_active = true;
  h->join_node = r.node;
  h->join_src = r.src;
  h->join_msn = op.msn;
  h->join_deadline = m.now + m.cfg.share.join_timeout_ns;
  for (uint32_t i = 0; i < h->members; i++) {
    ShareMember& mb = h->dir[i];
    mb.wait_seq = 0;
    if (is_self(m, *h, mb) || (mb.node == r.node && mb.src == r.src)) continue;
    mb.add_pending = true;
    send_add(m, *h, mb);
  }
  arm_probe(m);
  try_finish_join(m, *h);
}

void home_unsubscribe(Impl& m, Request& r) {
  ShareRegion* h = find_region(m, r.qpn, r.op.rkey);
  const int i = h && h->home ? member_index(*h, r.node, r.src) : -1;
  if (i < 0) {
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    refuse(m, r, RHN_SYN_NOT_SUBSCRIBED);
    return;
  }
  if (h->join_active && r.node == h->join_node && r.src == h->join_src) {
    not_ready(m, r, RHN_SYN_BUSY);  // after its own join
    return;
  }
  home_remove(m, *h, static_cast<uint32_t>(i));
}

// An update at a member: refused while joining, taken once and in order.
void member_update(Impl& m, Request& r) {
  const rhn_op_hdr& op = r.op;
  if (!r.first && m.nak_remembered(r.peer, r.src, op.msn)) return;  // NAKed
  ShareRegion* s = find_region(m, r.qpn, op.rkey);
  if (!s || s->state == ShareState::kLost) {
    // Not (or no longer) in the region: a sender that has not heard yet.
    if (r.first) m.counters.add(RHN_CNT_SHARE_SKIPPED);
    return;
  }
  if (s->state == ShareState::kJoining) {
    if (r.first) {
      bool known = false;
      for (uint32_t k = 0; k < s->refused_count; k++)
        known |= s->refused[k].node == r.node && s->refused[k].src == r.src;
      if (!known && s->refused_count < RHN_SHARE_MAX_MEMBERS)
        s->refused[s->refused_count++] = {r.node, r.src, op.msn};
      m.counters.add(RHN_CNT_SHARE_REFUSALS);
    }
    refuse(m, r, RHN_SYN_SHARE_JOINING);
    return;
  }
  const int i = member_index(*s, r.node, r.src);
  if (i < 0) {
    if (r.first) m.counters.add(RHN_CNT_SHARE_SKIPPED);
    return;  // a member that has left: its last updates are dropped
  }
  ShareMember& mb = s->dir[i];
  if (r.first) {
    // After a refusal, that sender's refused update comes first.
    if (mb.refused && op.msn != mb.refused_msn) {
      m.counters.add(RHN_CNT_SHARE_REFUSALS);
      refuse(m, r, RHN_SYN_SHARE_JOINING);
      return;
    }
    mb.refused = false;
    mb.cur_msn = op.msn;
    mb.cur_accept = op.imm_data > mb.seq;
    if (!mb.cur_accept) {  // in the data we joined with (or a repeat)
      m.counters.add(RHN_CNT_SHARE_SKIPPED);
      return;
    }
    mb.seq = op.imm_data;
  } else if (op.msn != mb.cur_msn || !mb.cur_accept) {
    return;
  }
  // Inside the region, whatever the sender checked.
  uint64_t extent = 0;
  if (partial::write_extent(op, r.data, &extent) == RHN_SYN_NONE) {
    if (r.first && op.msg_len > op.msg_offset &&
        !(op.flags & (RHN_WOP_F_RUNS | RHN_WOP_F_STRIDED)))
      extent = max<uint64_t>(extent, op.msg_len - op.msg_offset);
    if (op.remote_addr < s->offset || op.remote_addr - s->offset > s->length ||
        extent > s->length - (op.remote_addr - s->offset)) {
      mb.cur_accept = false;
      m.counters.add(RHN_CNT_SHARE_ERRORS);
      refuse(m, r, RHN_SYN_BOUNDS);
      return;
    }
  }
  // Then it is a WRITE by area (ops/rdma): checks, placement, refusals.
  rhn_op_hdr write = op;
  write.opcode = RHN_WOP_WRITE;
  write.flags &= static_cast<uint8_t>(~(RHN_WOP_F_IMM | RHN_WOP_F_SIGNAL));
  Request wr{r.peer, r.qp,  r.qpn,     write,   r.data,
             r.node, r.src, r.src_qpn, r.first, r.last};
  kRdmaFamily.on_request(m, wr);
  if (!r.last) return;
  mb.landed = mb.seq;
  m.counters.add(RHN_CNT_SHARE_UPDATES);
  if (s->home && s->join_active) try_finish_join(m, *s);
}

void on_request(Impl& m, Request& r) {
  if (r.qp.type != RHN_QP_ENDPOINT) {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_BAD_OPCODE);
    return;
  }
  if (r.op.opcode == RHN_WOP_SHARE_UPDATE) {
    member_update(m, r);
  } else if (r.op.opcode == RHN_WOP_SHARE_REQ &&
             r.op.imm_data == RHN_SHARE_REQ_SUBSCRIBE) {
    home_subscribe(m, r);
  } else if (r.op.opcode == RHN_WOP_SHARE_REQ &&
             r.op.imm_data == RHN_SHARE_REQ_UNSUBSCRIBE) {
    home_unsubscribe(m, r);
  } else {
    m.counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
    refuse(m, r, RHN_SYN_BAD_OPCODE);
  }
}

// ---- Firmware messages

ShareRegion* region_for(Impl& m, const rhn_fw_share& f) {
  const uint32_t qpn = f.qpn & RHN_WIRE_QPN_MASK;
  ShareRegion* r = find_region(m, qpn, f.area_key);
  if (!r || (f.qpn >> RHN_WIRE_INCARNATION_SHIFT) != m.qps[qpn].incarnation)
    return nullptr;
  return r;
}

// Home -> member: add the newcomer, then say from which update on it
// gets them.
void on_add(Impl& m, uint16_t from, const rhn_fw_share& f) {
  ShareRegion* r = region_for(m, f);
  const bool here =
      r && !r->home && r->home_node == from &&
      (r->home_src & RHN_WIRE_QPN_MASK) == (f.home_qpn & RHN_WIRE_QPN_MASK);
  rhn_fw_share a = f;
  a.qpn = f.home_qpn;
  a.from_qpn = f.qpn;
  a.flags = here ? 0 : RHN_FW_SHARE_F_NOT_MEMBER;
  if (here) {
    if (member_index(*r, f.member_node, f.member_qpn) < 0 &&
        r->members < RHN_SHARE_MAX_MEMBERS) {
      ShareMember& mb = r->dir[r->members++];
      mb = ShareMember{};
      mb.node = f.member_node;
      mb.src = f.member_qpn;
    }
    // An update being sent now went without it: the next one is the
    // first it gets.
    a.seq = r->next_seq + 1;
  }
  // No slot: the home's join fails at its deadline.
  if (!post(m, from, RHN_FW_SHARE_ADDED, &a, sizeof(a),
            cookie_of(Msg::kOther, 0, 0, from), here ? r->context : 0))
    m.counters.add(RHN_CNT_SHARE_ERRORS);
}

void on_added(Impl& m, uint16_t from, const rhn_fw_share& f) {
  ShareRegion* h = region_for(m, f);
  if (!h || !h->home || !h->join_active || f.member_node != h->join_node ||
      f.member_qpn != h->join_src)
    return;  // an answer to a join that ended
  const int i = member_index(*h, from, f.from_qpn);
  if (i < 0) return;
  ShareMember& mb = h->dir[i];
  mb.add_pending = false;
  if (f.flags & RHN_FW_SHARE_F_NOT_MEMBER) {
    home_remove(m, *h, static_cast<uint32_t>(i));  // it left meanwhile
    return;
  }
  mb.wait_seq = f.seq ? f.seq - 1 : 0;
  try_finish_join(m, *h);
}

void on_joined(Impl& m, uint16_t from, Span<const uint8_t> payload) {
  rhn_fw_share_joined j{};
  const size_t head = offsetof(rhn_fw_share_joined, members);
  if (payload.size() < head) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&j, payload.data(), min(payload.size(), sizeof(j)));
  if (j.count > RHN_SHARE_MAX_MEMBERS ||
      payload.size() != head + size_t{j.count} * sizeof(rhn_share_member)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  const uint32_t qpn = j.qpn & RHN_WIRE_QPN_MASK;
  ShareRegion* r = find_region(m, qpn, j.area_key);
  if (!r || r->state != ShareState::kJoining || r->home_node != from ||
      (r->home_src & RHN_WIRE_QPN_MASK) != (j.home_qpn & RHN_WIRE_QPN_MASK))
    return;  // gone meanwhile: the data finds no SUBSCRIBE either
  r->home_src = j.home_qpn;
  r->members = static_cast<uint8_t>(j.count);
  for (uint32_t i = 0; i < j.count; i++) {
    ShareMember& mb = r->dir[i];
    mb = ShareMember{};
    mb.node = j.members[i].node;
    mb.src = j.members[i].qpn;
    mb.seq = mb.landed = j.members[i].seq;
  }
  r->have_directory = true;
}

void on_remove(Impl& m, uint16_t from, const rhn_fw_share& f) {
  ShareRegion* r = region_for(m, f);
  if (!r) return;
  if (r->home) {  // a member left without an UNSUBSCRIBE
    const int i = f.member_node == from
                      ? member_index(*r, f.member_node, f.member_qpn)
                      : -1;
    if (i < 0) return;
    if (r->join_active && f.member_node == r->join_node &&
        f.member_qpn == r->join_src) {
      r->join_active = false;  // the newcomer itself: nobody to answer
      home_remove(m, *r, static_cast<uint32_t>(i));
      end_join(*r);
      return;
    }
    home_remove(m, *r, static_cast<uint32_t>(i));
    return;
  }
  if (from != r->home_node) return;
  if (f.flags & RHN_FW_SHARE_F_GONE) {
    m.counters.add(RHN_CNT_SHARE_ERRORS);
    if (r->state == ShareState::kJoining)
      fail_subscribe(m, *r, RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST);
    else
      r->state = ShareState::kLost;
    return;
  }
  const int i = member_index(*r, f.member_node, f.member_qpn);
  if (i >= 0) drop_member(*r, static_cast<uint32_t>(i));
}

}  // namespace share_detail

}  // namespace rhinet::fw
