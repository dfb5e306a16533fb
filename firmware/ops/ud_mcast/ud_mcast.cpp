// SPDX-License-Identifier: BSD-2-Clause
// Verbs UD multicast (ibv_attach_mcast): a bounded attach table of (MGID,
// QP) entries charged to the QPs' contexts; this node's switch port joins
// the MGID's hashed group (rhn_mgid_group) by management frames the NIC
// alone emits, on its kernel's admin command, and sends again until the
// switch answers with the membership it wants. UD SENDs to a group leave
// unsequenced (UD is unreliable); a datagram to a group is delivered to
// every QP of this node attached to the GRH's destination GID whose Q_Key
// matches, each taking a receive WQE. See "Verbs UD multicast" in
// Documentation/hardware/queues.md.
#include "ops/ud_mcast/ud_mcast.h"

#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw {

extern const OpFamily kSendFamily;

namespace {

UdJoin& join_of(UdMcastTables& t, uint16_t group) {
  return t.joins[group - RHN_NODE_MCAST_UD_FIRST];
}

bool is_ud_group(uint16_t id) {
  return id >= RHN_NODE_MCAST_UD_FIRST && id < RHN_NODE_BROADCAST;
}

// The destination GID of a UD packet's 40-byte network header: a GRH's or
// an IPv6 header's, or an IPv4 header's address as an IPv4-mapped GID.
void header_dgid(const uint8_t* h, uint8_t* gid) {
  if (Engine::Impl::grh_net_flag(h) == RHN_CQE_F_NET_IPV4) {
    memset(gid, 0, 10);
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, h + 36, 4);
    return;
  }
  memcpy(gid, h + 24, 16);
}

}  // namespace

void ud_mcast_place(Impl& m, CardMemory& mem) {
  UdMcastTables& t = m.ud_mcast;
  t.attaches = mem.table<UdAttach>(max<uint32_t>(m.cfg.ud_mcast.attach, 1));
  t.joins = mem.table<UdJoin>(RHN_MCAST_UD_GROUPS);
}

void ud_mcast_reset(Impl& m) {
  UdMcastTables& t = m.ud_mcast;
  t.attaches.fill(UdAttach{});
  t.used = 0;
  t.context_quota =
      max<uint32_t>(1, uint32_t(uint64_t{t.attaches.size()} *
                                m.cfg.ud_mcast.context_share / 256));
  m.shares.set_limit(kResMcastAttaches, uint32_t(t.attaches.size()),
                     t.context_quota, m.cfg.account_share);
  t.unsettled = 0;
  t.wanted = 0;
  t.next_resend = UINT64_MAX;
  t.next_refresh = UINT64_MAX;
  // The switch may still list this port in groups of the previous life:
  // leave them (a reset NIC has no attach entries).
  for (UdJoin& j : t.joins) {
    const bool was_member = j.want || !j.settled;
    j = UdJoin{};
    if (was_member) {
      j.settled = false;
      j.resend_at = m.now;
      t.unsettled++;
      t.next_resend = m.now;
    }
  }
}

namespace {

void send_mgmt(Engine::Impl& m, uint16_t group, bool join) {
  alignas(8) uint8_t frame[RHN_PKT_HDR_LEN + sizeof(rhn_mgmt_msg)];
  rhn_mgmt_msg msg{};
  msg.op = join ? RHN_MGMT_JOIN : RHN_MGMT_LEAVE;
  msg.group = group;
  msg.cookie = ++m.ud_mcast.cookie;
  memcpy(frame + RHN_PKT_HDR_LEN, &msg, sizeof msg);
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_MGMT;
  h.dst_node = RHN_NODE_BROADCAST;  // the switch takes it
  h.src_node = m.cfg.node_id;
  h.payload_len = sizeof msg;
  const size_t len =
      seal_packet(frame, h, nullptr, crc32c(0, &msg, sizeof msg));
  m.counters.add(RHN_CNT_MCAST_MGMT_SENT);
  m.transmit(RHN_NODE_BROADCAST, {frame, len});
}

// The group's membership changed or must be confirmed: send now, and
// again until answered.
void unsettle(Engine::Impl& m, uint16_t group) {
  UdMcastTables& t = m.ud_mcast;
  UdJoin& j = join_of(t, group);
  if (j.settled) t.unsettled++;
  j.settled = false;
  j.backoff = 0;
  send_mgmt(m, group, j.want);
  j.resend_at = m.now + m.cfg.ud_mcast.join_retry_ns;
  t.next_resend = min(t.next_resend, j.resend_at);
}

void set_want(Engine::Impl& m, uint16_t group, bool want) {
  UdMcastTables& t = m.ud_mcast;
  UdJoin& j = join_of(t, group);
  if (j.want == want) return;
  j.want = want;
  if (want) {
    if (t.wanted++ == 0 && m.cfg.ud_mcast.join_refresh_ns)
      t.next_refresh = m.now + m.cfg.ud_mcast.join_refresh_ns;
  } else if (--t.wanted == 0) {
    t.next_refresh = UINT64_MAX;
  }
  unsettle(m, group);
}

void remove_entry(Engine::Impl& m, UdAttach& a) {
  UdMcastTables& t = m.ud_mcast;
  a.used = false;
  t.used--;
  m.shares.give(a.context, kResMcastAttaches);
  UdJoin& j = join_of(t, a.group);
  if (--j.refs == 0) set_want(m, a.group, false);  // the last one: leave
}

}  // namespace

rhn_admin_status ud_mcast_attach(Impl& m, uint32_t ctx,
                                 const rhn_admin_mcast_attach& c, bool attach,
                                 uint32_t& detail) {
  UdMcastTables& t = m.ud_mcast;
  const uint32_t qpn = c.qpn;
  if (qpn == 0 || qpn >= m.qps.size() || !m.qps[qpn].valid ||
      m.qps[qpn].context != ctx)
    return detail = 1, RHN_ADMIN_BAD_HANDLE;
  if (m.qps[qpn].type != RHN_QP_UD) return detail = 2, RHN_ADMIN_BAD_PARAM;
  if (c.reserved || !rhn_gid_is_mcast(c.mgid))
    return detail = 3, RHN_ADMIN_BAD_PARAM;
  UdAttach* found = nullptr;
  UdAttach* free_entry = nullptr;
  for (UdAttach& a : t.attaches) {
    if (!a.used) {
      if (!free_entry) free_entry = &a;
      continue;
    }
    if (a.qpn == qpn && memcmp(a.mgid, c.mgid, 16) == 0) found = &a;
  }
  if (!attach) {
    if (!found) return detail = 4, RHN_ADMIN_BAD_HANDLE;
    remove_entry(m, *found);
    return RHN_ADMIN_OK;
  }
  if (found) return RHN_ADMIN_OK;  // attached already: one entry
  if (!free_entry || !m.shares.room(ctx, kResMcastAttaches))
    return detail = free_entry ? 6 : 5, RHN_ADMIN_NO_RESOURCES;
  UdAttach& a = *free_entry;
  a.used = true;
  a.qpn = qpn;
  a.context = ctx;
  memcpy(a.mgid, c.mgid, 16);
  a.group = rhn_mgid_group(c.mgid);
  t.used++;
  m.shares.charge(ctx, kResMcastAttaches);
  m.counters.add(RHN_CNT_MCAST_ATTACHES);
  if (join_of(t, a.group).refs++ == 0) set_want(m, a.group, true);
  return RHN_ADMIN_OK;
}

void ud_mcast_qp_gone(Impl& m, uint32_t qpn) {
  if (!m.ud_mcast.used) return;
  for (UdAttach& a : m.ud_mcast.attaches)
    if (a.used && a.qpn == qpn) remove_entry(m, a);
}

namespace {

// The turn's work, out of line: every poll asks each family, mostly
// nothing is due, and the test alone costs less than this function's
// set-up (the registers its loops save and restore).
[[gnu::noinline]] bool refresh_and_resend(Impl& m) {
  UdMcastTables& t = m.ud_mcast;
  bool did = false;
  if (m.now >= t.next_refresh) {
    // Soft state: the switch may have been restarted and forgotten us.
    for (uint32_t i = 0; i < t.joins.size(); i++)
      if (t.joins[i].want && t.joins[i].settled)
        unsettle(m, uint16_t(RHN_NODE_MCAST_UD_FIRST + i));
    t.next_refresh = m.now + m.cfg.ud_mcast.join_refresh_ns;
    did = true;
  }
  if (m.now < t.next_resend) return did;
  t.next_resend = UINT64_MAX;
  if (!t.unsettled) return did;
  for (uint32_t i = 0; i < t.joins.size(); i++) {
    UdJoin& j = t.joins[i];
    if (j.settled) continue;
    if (j.resend_at <= m.now) {
      send_mgmt(m, uint16_t(RHN_NODE_MCAST_UD_FIRST + i), j.want);
      if (j.backoff < 6) j.backoff++;
      j.resend_at = m.now + (m.cfg.ud_mcast.join_retry_ns << j.backoff);
      did = true;
    }
    t.next_resend = min(t.next_resend, j.resend_at);
  }
  return did;
}

}  // namespace

bool ud_mcast_run(Impl& m) {
  if (m.now < ud_mcast_next_deadline(m)) return false;
  return refresh_and_resend(m);
}

void ud_mcast_mgmt(Impl& m, const Packet& pkt) {
  rhn_mgmt_msg a;
  if (pkt.payload.size() != sizeof a || pkt.hdr.dst_node != m.cfg.node_id ||
      pkt.hdr.src_node != RHN_NODE_BROADCAST) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&a, pkt.payload.data(), sizeof a);
  if (a.op != RHN_MGMT_ANSWER || !is_ud_group(a.group)) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  UdMcastTables& t = m.ud_mcast;
  UdJoin& j = join_of(t, a.group);
  if (a.status != RHN_MGMT_OK) {
    // A switch that does not take UD joins: give up on this group (its
    // datagrams do not come), counted.
    m.counters.add(RHN_CNT_MCAST_ERRORS);
    if (!j.settled) t.unsettled--;
    j.settled = true;
    return;
  }
  if ((a.member != 0) == j.want) {
    if (!j.settled) {
      j.settled = true;
      t.unsettled--;
      m.counters.add(RHN_CNT_MCAST_MGMT_ANSWERS);
    }
    return;
  }
  // The switch holds the other state (an answer to an older request, or a
  // request of ours overtaken by an older one): say it again.
  if (j.settled) unsettle(m, a.group);
}

uint8_t ud_mcast_send(Impl& m, QpObj& qp, uint32_t qpn, Inflight& e,
                      const DecodedWqe& w, uint8_t* syndrome) {
  // Only the UD sub-range: the administrator's groups are simultaneous
  // multicast's, broadcast reaches no QP.
  const uint16_t group = e.peer;
  if (!is_ud_group(group)) {
    *syndrome = RHN_SYN_BAD_QP;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  // Receivers filter by the GRH's destination GID.
  if (!w.has_grh) {
    *syndrome = RHN_SYN_BAD_WQE;
    return RHN_CQE_LOC_QP_OP_ERR;
  }
  qp.tx_offset = 0;
  qp.tx_dst_qpn = RHN_WIRE_QPN_MASK;  // IB's multicast QPN
  rhn_op_hdr op = m.request_header(qp, qpn, e);
  uint8_t* frame = m.raw_frame.data();
  PacketOut out{frame + RHN_DATA_HDR_LEN};
  if (!kSendFamily.build_packet(m, qp, w, 0, op, out)) {
    *syndrome = RHN_SYN_DMA;
    m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
    return RHN_CQE_LOC_PROT_ERR;
  }
  op.flags |= RHN_WOP_F_LAST;
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = group;
  h.src_node = m.cfg.node_id;
  h.payload_len = static_cast<uint16_t>(out.len);
  const size_t len =
      seal_packet(frame, h, &op, out.len ? crc32c(0, out.payload, out.len) : 0);
  m.transmit(group, {frame, len});
  // The switch sends nothing back where it came from: QPs of this node
  // attached to the group get their copy here (IB multicast loopback).
  if (join_of(m.ud_mcast, group).refs && m.link_up.load(MemOrder::kRelaxed) &&
      !m.rx.push_with([&](RxFrame& f) {
        f.len = static_cast<uint16_t>(len);
        memcpy(f.data, frame, len);
      }))
    m.counters.add(RHN_CNT_RX_DROPS);
  return RHN_CQE_SUCCESS;
}

void ud_mcast_receive(Impl& m, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  const uint16_t group = pkt.hdr.dst_node;
  const uint16_t node = pkt.hdr.src_node;
  const uint32_t wanted = RHN_WOP_F_FIRST | RHN_WOP_F_LAST | RHN_WOP_F_GRH;
  if (op.opcode != RHN_WOP_SEND || op.qp_type != RHN_QP_UD ||
      (op.flags & wanted) != wanted || pkt.payload.size() < RHN_WIRE_GRH_LEN ||
      (op.dst_qpn & RHN_WIRE_QPN_MASK) != RHN_WIRE_QPN_MASK) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  Peer* p = m.peer_for(node);
  if (!p || join_of(m.ud_mcast, group).refs == 0) {
    m.counters.add(RHN_CNT_UD_MCAST_FILTERED);
    return;
  }
  uint8_t dgid[16];
  header_dgid(pkt.payload.data(), dgid);
  bool any = false;
  for (UdAttach& a : m.ud_mcast.attaches) {
    if (!a.used || a.group != group || memcmp(a.mgid, dgid, 16) != 0) continue;
    QpObj& qp = m.qps[a.qpn];
    if (!qp.valid || qp.state < RHN_QPS_RTR || qp.state == RHN_QPS_ERR)
      continue;
    any = true;
    m.counters.add(RHN_CNT_UD_MCAST_DELIVERED);
    // The Q_Key check, the receive WQE (none: dropped, counted) and the
    // CQE are a unicast UD SEND's.
    Request r{*p,          qp,   a.qpn,      op,
              pkt.payload, node, op.src_qpn, op.src_qpn & RHN_WIRE_QPN_MASK,
              true,        true};
    kSendFamily.on_request(m, r);
  }
  if (!any) m.counters.add(RHN_CNT_UD_MCAST_FILTERED);
}

}  // namespace rhinet::fw
