// SPDX-License-Identifier: BSD-2-Clause
// Collectives executed by the NICs: allreduce, reduce,
// broadcast and barrier over a communicator, a list of (node, endpoint)
// ranks every member posts with RHN_OP_COLLECTIVE.
//
// This NIC acts for all of the communicator's ranks on its node. The data
// moves in segments (at most one packet each) through a tree of the nodes:
// each segment goes up from the leaves to its root, combined at every node
// (the node's own ranks first, read by DMA straight from their send
// buffers, in rank order; then each child's partial as it arrives: the
// claim 5, the first arrival fills the buffer and later ones combine into
// it), and its result comes down again, written by DMA straight into every
// rank's receive buffer (zero copy). A segment moves on as soon as
// its inputs are in, so the segments of one collective pipeline.
// The tree: radix k over the nodes in the order of their first rank,
// rooted at the root rank's node (rank 0's for allreduce); radix 1 is a
// chain whose root turns with every segment, so every node sends and
// receives the same share in both directions, as a ring does.
// Segments, releases and ABORTs are firmware messages on the node
// channels (fwmsg/), which retransmit them; a NIC that has not reached the
// collective answers NOT_READY and the segment comes again later. A member
// that dies (its node, or its endpoint) fails the collective everywhere:
// the NIC that notices tells every node with an ABORT.
// In-switch mode (RHN_COLL_F_IN_SWITCH) replaces the tree: every node sends
// its partial UP to the fabric switch (RHN_PKT_COLL frames, repeated until
// the switch's DOWN brings the result; fabric/coll_reducer.h is the
// switch's side), so a segment crosses each link once each way and one
// hop. Failures still travel as ABORTs on the node channels.
// Keys are the users' choice and outlive jobs, so a communicator is a life
// of its key: the hash of its member list (new endpoints, new hash), as a
// QP's incarnation is. Every firmware message carries it (ABORT and READY
// in their payload, segments folded into the signature) and one of
// another life never acts on a communicator. A later rank joins only with
// the very list the communicator was made from.
#include "ops/coll/coll.h"

#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/coll/coll_detail.h"
#include "ops/coll/reduce.h"
#include "ops/family.h"

namespace rhinet::fw {

using namespace coll_detail;

namespace coll_detail {

void mark(NodeMask& m, uint32_t index) {
  m[index / 64] |= uint64_t{1} << (index % 64);
}
bool marked(const NodeMask& m, uint32_t index) {
  return (m[index / 64] >> (index % 64)) & 1;
}

CollMember* members_of(Impl& m, const CollComm& c) {
  return &m.coll.members[c.members];
}
uint16_t* nodes_of(Impl& m, const CollComm& c) {
  return &m.coll.nodes[c.nodes];
}
uint32_t comm_index(const Impl& m, const CollComm& c) {
  return static_cast<uint32_t>(&c - m.coll.comms.data());
}
uint32_t slot_index(const Impl& m, uint32_t seg) {
  return seg % m.cfg.coll.window;
}
CollSlot& slot_of(Impl& m, const CollComm& c, uint32_t seg) {
  return m.coll.slots[c.slots + slot_index(m, seg)];
}
uint8_t* bytes_of(Impl& m, const CollSlot& s) {
  return m.coll.buffers.data() + uint64_t{s.buf} * RHN_WIRE_MTU;
}
uint64_t cookie(const Impl& m, const CollComm& c, uint32_t slot,
                uint32_t dest) {
  return uint64_t{c.gen} << 32 | comm_index(m, c) << 16 | slot << 8 | dest;
}
// An ABORT's answer counts for the communicator that sent it, not for a
// later one in its slot (gen moves with every collective; this does not).
uint64_t abort_cookie(const Impl& m, const CollComm& c) {
  return uint64_t{c.incarnation} << 32 | comm_index(m, c) << 16 | kDestAbort;
}
// The life folded in: a segment of another life of the key is a mismatch,
// never a contribution.
uint32_t signature(const CollComm& c) {
  return rhn_coll_signature(c.op, c.reduce, c.type, c.radix, c.seg, c.root_rank,
                            c.nranks, c.length) ^
         c.life;
}
// The payload of ABORT and READY: which life they are about.
rhn_fw_coll_life life_of(const CollComm& c, uint16_t flags) {
  rhn_fw_coll_life l{};
  l.members = c.life;
  l.flags = flags;
  return l;
}
Span<const uint8_t> payload_of(const rhn_fw_coll_life& l) {
  return {reinterpret_cast<const uint8_t*>(&l), sizeof l};
}
bool has_up_phase(const CollComm& c) { return c.op != RHN_COLL_BCAST; }
// The switch combines the nodes' partials (one node alone needs nobody).
bool via_switch(const CollComm& c) {
  return c.radix == RHN_COLL_RADIX_SWITCH && c.nnodes > 1;
}
bool down_carries_data(const CollComm& c) {
  return c.op == RHN_COLL_ALLREDUCE || c.op == RHN_COLL_BCAST;
}
// Whether local rank `l` reads its send buffer / gets the result.
bool reads_send(const CollComm& c, uint16_t rank) {
  return c.op == RHN_COLL_ALLREDUCE || c.op == RHN_COLL_REDUCE ||
         (c.op == RHN_COLL_BCAST && rank == c.root_rank);
}
bool gets_result(const CollComm& c, uint16_t rank) {
  switch (c.op) {
    case RHN_COLL_ALLREDUCE:
      return true;
    case RHN_COLL_REDUCE:
      return rank == c.root_rank;
    case RHN_COLL_BCAST:
      return rank != c.root_rank;
    default:
      return false;
  }
}

uint16_t node_at(const CollComm& c, uint16_t v, uint16_t root) {
  return static_cast<uint16_t>((v + root) % c.nnodes);
}
uint16_t position(const CollComm& c, uint16_t index, uint16_t root) {
  return static_cast<uint16_t>((index + c.nnodes - root) % c.nnodes);
}

Topo topo(const CollComm& c, uint32_t seg, uint16_t index) {
  Topo t;
  if (via_switch(c)) {
    // Every node a leaf under the switch: its partial goes up, the result
    // comes down.
    t.v = 1;
    return t;
  }
  // An allreduce has no root of its own: segment s is reduced at node s
  // mod nodes, so every node's links carry the same share both ways.
  const bool turning = c.op == RHN_COLL_ALLREDUCE || c.op == RHN_COLL_BARRIER;
  t.root = turning ? static_cast<uint16_t>(seg % c.nnodes) : c.root;
  t.v = position(c, index, t.root);
  if (t.v > 0) t.parent = node_at(c, (t.v - 1) / c.radix, t.root);
  const uint32_t first = uint32_t{c.radix} * t.v + 1;
  t.first_child = static_cast<uint16_t>(min<uint32_t>(first, c.nnodes));
  t.children = static_cast<uint16_t>(
      first >= c.nnodes ? 0 : min<uint32_t>(c.radix, c.nnodes - first));
  t.all_children = t.children ? (1u << t.children) - 1 : 0;
  return t;
}

int node_index(Impl& m, const CollComm& c, uint16_t node) {
  const uint16_t* nodes = nodes_of(m, c);
  for (uint16_t i = 0; i < c.nnodes; i++)
    if (nodes[i] == node) return i;
  return -1;
}

bool has_local(const CollComm& c) {
  for (const CollLocal& l : c.local)
    if (l.qpn != kNone) return true;
  return false;
}

// The key's live communicator: one with local ranks left. One without
// (kept only to send its ABORTs) answers for nothing, so a new job can
// make the key's next life at once.
CollComm* find_comm(Impl& m, uint32_t key) {
  for (CollComm& c : m.coll.comms)
    if (c.valid && c.key == key && has_local(c)) return &c;
  return nullptr;
}

// The communicator of that life of the key, live or not.
CollComm* find_life(Impl& m, uint32_t key, uint32_t life) {
  for (CollComm& c : m.coll.comms)
    if (c.valid && c.key == key && c.life == life) return &c;
  return nullptr;
}

bool expired(const Impl& m, uint64_t at) {
  return m.now - at > kCollRememberNs;
}

void update_deadline(Impl& m, uint64_t at) {
  m.coll.next_deadline = min(m.coll.next_deadline, at);
}

// A segment refused for now (a peer NIC NOT_READY, the switch BUSY): again
// later, 20 us doubling to 1 ms.
void back_off(Impl& m, CollSlot& s) {
  m.counters.add(RHN_CNT_COLL_RETRIES);
  s.retry_at =
      m.now + min(kRetryMaxNs, kRetryFirstNs << min<uint8_t>(s.retries, 10));
  if (s.retries < 255) s.retries++;
  update_deadline(m, s.retry_at);
}

// ---- Completing the local ranks' WQEs.

// A posted local rank's WQE, unless its endpoint or the WQE went meanwhile
// (destroyed, flushed).
Inflight* rank_entry(Impl& m, const CollLocal& l) {
  if (l.qpn >= m.qps.size()) return nullptr;
  const QpObj& qp = m.qps[l.qpn];
  if (!qp.valid || qp.gen != l.qp_gen) return nullptr;
  Inflight& e = m.entry(l.qpn, l.entry);
  if (e.msn != l.msn || e.opcode != RHN_OP_COLLECTIVE ||
      e.state == MsgState::kDone)
    return nullptr;
  return &e;
}

void complete_rank(Impl& m, CollLocal& l, uint8_t syndrome) {
  if (!l.posted) return;
  l.posted = false;
  m.counters.add(RHN_CNT_COLL_DONE);
  Inflight* ep = rank_entry(m, l);
  if (!ep) return;
  Inflight& e = *ep;
  if (syndrome != RHN_SYN_NONE) m.counters.add(RHN_CNT_COLL_ERRORS);
  const uint8_t status = syndrome == RHN_SYN_NONE ? uint8_t{RHN_CQE_SUCCESS}
                         : syndrome == RHN_SYN_DMA
                             ? uint8_t{RHN_CQE_LOC_PROT_ERR}
                             : uint8_t{RHN_CQE_REM_OP_ERR};
  m.finish_entry(l.qpn, e, status, syndrome);
}

void clear_slots(Impl& m, CollComm& c) {
  for (uint32_t i = 0; i < m.cfg.coll.window; i++) {
    CollSlot& s = m.coll.slots[c.slots + i];
    const uint32_t buf = s.buf;
    s = CollSlot{};
    s.buf = buf;
  }
}

// The collective is over at this node: every local rank's WQE completes.
// The next one may start.
void end_collective(Impl& m, CollComm& c) {
  for (CollLocal& l : c.local) complete_rank(m, l, c.failed);
  clear_slots(m, c);
  c.active = false;
  c.failed = RHN_SYN_NONE;
  c.posted = 0;
  c.seq++;
  c.gen++;
  m.wake_all(c.waiters);
}

// A failed collective ends once every local rank has posted it (each
// completes with the error as it does).
void end_if_all_failed(Impl& m, CollComm& c) {
  if (!c.active || c.failed == RHN_SYN_NONE) return;
  for (const CollLocal& l : c.local)
    if (l.qpn != kNone && l.posts == c.seq) return;
  end_collective(m, c);
}

void release_comm(Impl& m, CollComm& c) {
  c.valid = false;
  m.coll.used--;
  m.shares.give(c.context, kResCollComms);
  m.wake_all(c.waiters);
}

// A communicator whose local ranks are all gone goes once its ABORTs are
// sent and acknowledged.
void release_if_done(Impl& m, CollComm& c) {
  if (c.valid && !has_local(c) && !c.aborting && c.aborts_out == 0)
    release_comm(m, c);
}

// ABORT `seq` to every other node, but those whose member endpoint is gone
// (they fail everything of this life already and may have forgotten it).
void begin_aborts(CollComm& c, uint32_t seq, uint8_t syndrome) {
  c.abort_seq = seq;
  c.abort_syn = syndrome;
  c.abort_next = 0;
  c.aborting = false;
  for (uint32_t i = 0; i < c.nnodes; i++)
    c.aborting |= i != c.self && !marked(c.gone, i);
}

// The collective fails here; with tell, every other node hears ABORT.
// Local ranks that posted complete now, the others when they post.
void fail_collective(Impl& m, CollComm& c, uint8_t syndrome, bool tell) {
  if (!c.active) return;
  if (c.failed != RHN_SYN_NONE) {
    // Failed already; a local rank that posted it since may be the last.
    end_if_all_failed(m, c);
    return;
  }
  c.failed = syndrome;
  c.gen++;  // answers to its messages are history
  clear_slots(m, c);
  for (CollLocal& l : c.local) complete_rank(m, l, syndrome);
  if (tell) begin_aborts(c, c.seq, syndrome);
  end_if_all_failed(m, c);
}

// READY to the nodes in `who` (those sent leave the mask; the rest wait
// for room).
bool tell_ready(Impl& m, CollComm& c, NodeMask& who) {
  bool did = false;
  for (uint32_t w = 0; w < who.size(); w++) {
    while (who[w]) {
      const uint32_t i =
          w * 64 + static_cast<uint32_t>(__builtin_ctzll(who[w]));
      if (i >= c.nnodes) {
        who[w] = 0;
        break;
      }
      const rhn_fw_coll_life life = life_of(c, 0);
      if (m.fw_send_now(nodes_of(m, c)[i], RHN_FW_COLL_READY, c.key,
                        uint64_t{c.seq} << 32, 0, payload_of(life),
                        FwOwner::kColl, cookie(m, c, 0, kDestReady),
                        c.context) == kNone)
        return did;
      who[w] &= who[w] - 1;
      did = true;
    }
  }
  return did;
}

bool any(const NodeMask& who) {
  for (uint64_t w : who)
    if (w) return true;
  return false;
}

bool send_aborts(Impl& m, CollComm& c) {
  bool did = false;
  // A communicator that lost a local endpoint fails from abort_seq on:
  // the others need not wait for any later collective of it either.
  const rhn_fw_coll_life life =
      life_of(c, c.broken ? uint16_t{RHN_FW_COLL_F_GONE} : uint16_t{0});
  while (c.abort_next < c.nnodes) {
    const uint16_t i = static_cast<uint16_t>(c.abort_next);
    if (i == c.self || marked(c.gone, i)) {
      c.abort_next++;
      continue;
    }
    const uint32_t h = m.fw_send_now(
        nodes_of(m, c)[i], RHN_FW_COLL_ABORT, c.key,
        uint64_t{c.abort_seq} << 32, c.abort_syn, payload_of(life),
        FwOwner::kColl, abort_cookie(m, c), c.context);
    if (h == kNone) break;  // no room now: the next run goes on
    c.aborts_out++;
    c.abort_next++;
    did = true;
  }
  if (c.abort_next >= c.nnodes) {
    c.aborting = false;
    release_if_done(m, c);
  }
  return did;
}

// ---- The WQE.

bool same_params(const CollComm& c, const rhn_wqe_coll& x, uint8_t radix,
                 uint32_t seg) {
  return c.op == x.op && c.reduce == x.reduce && c.type == x.type &&
         c.radix == radix && c.root_rank == x.root && c.length == x.length &&
         c.seg == seg;
}

uint8_t effective_radix(const rhn_wqe_coll& x, uint16_t nnodes) {
  if (x.flags & RHN_COLL_F_IN_SWITCH) return RHN_COLL_RADIX_SWITCH;
  if (x.radix) return x.radix;
  if (x.length >= kChainFromBytes && nnodes > 2) return 1;
  if (x.op == RHN_COLL_ALLREDUCE || x.op == RHN_COLL_BARRIER)
    return static_cast<uint8_t>(
        clamp<uint32_t>(nnodes - 1u, 1, RHN_COLL_MAX_RADIX));
  return kTreeRadix;
}

uint32_t effective_seg(const rhn_wqe_coll& x, uint16_t nnodes) {
  if (x.seg_size) return x.seg_size;
  if (x.op != RHN_COLL_ALLREDUCE) return RHN_WIRE_MTU;
  const uint32_t share = (x.length + 4u * nnodes - 1) / (4u * nnodes);
  const uint32_t rounded =
      (share + kSegQuantum - 1) / kSegQuantum * kSegQuantum;
  return clamp<uint32_t>(rounded, kSegQuantum, RHN_WIRE_MTU);
}

void start_collective(Impl& m, CollComm& c, const rhn_wqe_coll& x) {
  c.active = true;
  c.failed = RHN_SYN_NONE;
  c.op = x.op;
  c.reduce = x.reduce;
  c.type = x.type;
  c.radix = effective_radix(x, c.nnodes);
  c.root_rank = x.root;
  c.root = 0;
  if (x.op == RHN_COLL_REDUCE || x.op == RHN_COLL_BCAST) {
    const int r = node_index(m, c, members_of(m, c)[x.root].node);
    c.root = static_cast<uint16_t>(r < 0 ? 0 : r);
  }
  c.length = x.length;
  c.seg = effective_seg(x, c.nnodes);
  c.nsegs = x.length ? (x.length + c.seg - 1) / c.seg : 1;
  c.base = 0;
  c.posted = 0;
  c.gen++;
  c.last_progress = m.now;
  c.probing = 0;
  clear_slots(m, c);
  if (c.abort_early && c.abort_seq == c.seq) {
    c.abort_early = false;
    c.failed = c.abort_syn;  // every local rank fails as it posts
  }
  // A member elsewhere is gone: nothing from then on can complete (its
  // node told every node, so none waits for this one).
  if (c.lost && static_cast<int32_t>(c.seq - c.lost_from) >= 0)
    c.failed = RHN_SYN_MEMBER_LOST;
}

// Reads the WQE's member list (nranks entries) into the scratch buffer.
// RHN_SYN_DMA: it could not be read; RHN_SYN_BAD_WQE: reserved bits set or
// a node out of range.
uint8_t read_list(Impl& m, const QpObj& qp, const rhn_wqe_coll& x) {
  static_assert(sizeof(rhn_mcast_dest) == 8);
  static_assert(RHN_COLL_MAX_RANKS * sizeof(rhn_mcast_dest) <= RHN_WIRE_MTU);
  const uint32_t len = x.nranks * 8u;
  const rhn_sge sge{x.members_addr, len, x.members_lkey};
  if (!m.sge_dma(&sge, 1, 0, m.coll.scratch.data(), len, qp.pdn, false))
    return RHN_SYN_DMA;
  for (uint32_t r = 0; r < x.nranks; r++) {
    rhn_mcast_dest d;
    memcpy(&d, m.coll.scratch.data() + r * 8u, 8);
    if (d.reserved || d.node >= m.cfg.max_nodes) return RHN_SYN_BAD_WQE;
  }
  return RHN_SYN_NONE;
}

CollMember listed(const Impl& m, uint32_t rank) {
  rhn_mcast_dest d;
  memcpy(&d, m.coll.scratch.data() + rank * 8u, 8);
  return {d.node, d.qpn & RHN_WIRE_QPN_MASK};
}

// The list read (read_list) is the one the communicator was made from.
bool same_list(Impl& m, const CollComm& c) {
  const CollMember* list = members_of(m, c);
  for (uint32_t r = 0; r < c.nranks; r++) {
    const CollMember d = listed(m, r);
    if (d.node != list[r].node || d.qpn != list[r].qpn) return false;
  }
  return true;
}

// What came before any local rank posted on the key (an ABORT, a refused
// sender), for this life of it and not too long ago, applies now.
void apply_remembered(Impl& m, CollComm& c) {
  for (auto& e : m.coll.early_refused) {
    if (!e.valid || e.key != c.key) continue;
    e.valid = false;
    if (expired(m, e.at)) continue;
    // A segment carries no life: a sender of another one hears a READY it
    // ignores.
    const int i = node_index(m, c, e.node);
    if (i >= 0) mark(c.tell_start, static_cast<uint32_t>(i));
  }
  for (auto& e : m.coll.early_aborts) {
    if (!e.valid || e.key != c.key) continue;
    if (expired(m, e.at)) {
      e.valid = false;
      continue;
    }
    if (e.life != c.life) continue;  // another job's: it may still come
    e.valid = false;
    const int i = node_index(m, c, e.node);
    if (i < 0) continue;
    if (e.gone) {
      mark(c.gone, static_cast<uint32_t>(i));
      if (!c.lost || static_cast<int32_t>(e.seq - c.lost_from) < 0) {
        c.lost = true;
        c.lost_from = e.seq;
      }
    } else {
      c.abort_early = true;
      c.abort_seq = e.seq;
      c.abort_syn = e.syndrome;
    }
  }
}

// The key's live communicator, or one made from the WQE's member list
// (*made). Null: *syndrome says why.
CollComm* comm_for(Impl& m, const QpObj& qp, uint32_t qpn,
                   const rhn_wqe_coll& x, uint32_t key, uint8_t* syndrome,
                   bool* made) {
  if (CollComm* c = find_comm(m, key)) {
    // Only the endpoint its list names at that rank joins it, whatever
    // its context; the whole list is compared at the rank's turn.
    if (c->nranks != x.nranks || x.rank >= c->nranks ||
        members_of(m, *c)[x.rank].node != m.cfg.node_id ||
        members_of(m, *c)[x.rank].qpn != qpn) {
      *syndrome = RHN_SYN_COLL_MISMATCH;
      return nullptr;
    }
    return c;
  }
  CollComm* c = nullptr;
  for (CollComm& f : m.coll.comms)
    if (!f.valid) {
      c = &f;
      break;
    }
  if (!c || !m.shares.room(qp.context, kResCollComms)) {
    *syndrome = RHN_SYN_COLL_NO_ROOM;
    return nullptr;
  }
  *syndrome = read_list(m, qp, x);
  if (*syndrome != RHN_SYN_NONE) return nullptr;
  if (listed(m, x.rank).node != m.cfg.node_id || listed(m, x.rank).qpn != qpn) {
    *syndrome = RHN_SYN_BAD_WQE;  // the list does not name this endpoint
    return nullptr;
  }
  const uint32_t members = c->members, nodes = c->nodes, slots = c->slots;
  const uint32_t gen = c->gen, incarnation = c->incarnation;
  *c = CollComm{};
  c->members = members;
  c->nodes = nodes;
  c->slots = slots;
  c->gen = gen + 1;
  c->incarnation = incarnation + 1;
  c->key = key;
  c->context = qp.context;
  c->nranks = x.nranks;
  CollMember* list = members_of(m, *c);
  uint16_t* ids = nodes_of(m, *c);
  uint32_t life = RHN_COLL_MEMBERS_HASH_INIT;
  for (uint32_t r = 0; r < x.nranks; r++) {
    list[r] = listed(m, r);
    life = rhn_coll_members_hash_add(life, list[r].node, list[r].qpn);
    if (node_index(m, *c, list[r].node) < 0) ids[c->nnodes++] = list[r].node;
    if (list[r].node != m.cfg.node_id) continue;
    if (c->nlocal == RHN_COLL_MAX_LOCAL) {
      *syndrome = RHN_SYN_BAD_WQE;
      return nullptr;
    }
    CollLocal& l = c->local[c->nlocal++];
    l.qpn = list[r].qpn;
    l.rank = static_cast<uint16_t>(r);
    // The endpoints it was made for, by incarnation.
    if (l.qpn < m.qps.size() && m.qps[l.qpn].valid) l.qp_gen = m.qps[l.qpn].gen;
  }
  c->life = life;
  c->self = static_cast<uint16_t>(node_index(m, *c, m.cfg.node_id));
  c->nodes_hash = rhn_coll_nodes_hash(ids, c->nnodes);
  apply_remembered(m, *c);
  c->valid = true;
  m.coll.used++;
  m.shares.charge(c->context, kResCollComms);
  clear_slots(m, *c);
  *made = true;
  return c;
}

// The WQE's shape: the description in the last of two slots and no data
// of its own (the buffers are the description's).
rhn_syndrome coll_decode(const RawWqe& raw, const DecodedWqe& out) {
  rhn_send_wqe w;
  memcpy(&w, raw.bytes, sizeof(w));
  if (out.slots != 2 || w.num_sge ||
      (w.flags & (RHN_WQE_F_INLINE | RHN_WQE_F_AREA | RHN_WQE_F_GRH |
                  RHN_WQE_F_SIGNAL_REMOTE)))
    return RHN_SYN_BAD_WQE;
  return RHN_SYN_NONE;
}

uint8_t coll_check(Impl& m, const QpObj& qp, const DecodedWqe& w,
                   uint8_t* syndrome) {
  const rhn_wqe_coll x = family_slot<rhn_wqe_coll>(w);
  auto refuse = [&](uint8_t status, uint8_t syn) {
    m.counters.add(RHN_CNT_COLL_ERRORS);
    *syndrome = syn;
    return status;
  };
  if (qp.type != RHN_QP_ENDPOINT)
    return refuse(RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_QP);
  bool reserved = false;
  for (uint8_t b : x.reserved) reserved |= b != 0;
  const uint32_t size = coll::type_size(x.type);
  const bool barrier = x.op == RHN_COLL_BARRIER;
  const bool reduces = x.op == RHN_COLL_ALLREDUCE || x.op == RHN_COLL_REDUCE;
  const bool rooted = x.op == RHN_COLL_REDUCE || x.op == RHN_COLL_BCAST;
  const bool in_switch = x.flags & RHN_COLL_F_IN_SWITCH;
  if ((x.flags & ~uint32_t{RHN_COLL_F_IN_SWITCH}) ||
      (in_switch && (x.radix || (x.op != RHN_COLL_ALLREDUCE && !barrier))))
    return refuse(RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
  if (reserved || x.op < RHN_COLL_ALLREDUCE || x.op > RHN_COLL_BARRIER ||
      x.nranks == 0 || x.nranks > RHN_COLL_MAX_RANKS || x.rank >= x.nranks ||
      (rooted && x.root >= x.nranks) || x.radix > RHN_COLL_MAX_RADIX ||
      (barrier && x.length) || (!barrier && size == 0) ||
      (reduces && !coll::valid_reduce(x.reduce, x.type)) ||
      (size && x.length % size) ||
      (x.seg_size &&
       (x.seg_size > RHN_WIRE_MTU || size == 0 || x.seg_size % size)))
    return refuse(RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
  if (!m.in_group(qp.context, RHN_AREA_KEY_GROUP(w.remote_key))) {
    m.counters.add(RHN_CNT_GROUP_VIOLATIONS);
    return refuse(RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP);
  }
  // The keys, for what this rank's part touches.
  const bool reads = reduces || (x.op == RHN_COLL_BCAST && x.rank == x.root);
  const bool writes = x.op == RHN_COLL_ALLREDUCE ||
                      (x.op == RHN_COLL_REDUCE && x.rank == x.root) ||
                      (x.op == RHN_COLL_BCAST && x.rank != x.root);
  rhn_syndrome s = m.check_key(x.members_lkey, kNone, qp.pdn, 0, x.members_addr,
                               uint64_t{x.nranks} * 8, nullptr);
  if (s == RHN_SYN_NONE && reads && x.length)
    s = m.check_key(x.send_lkey, kNone, qp.pdn, 0, x.send_addr, x.length,
                    nullptr);
  if (s == RHN_SYN_NONE && writes && x.length)
    s = m.check_key(x.recv_lkey, kNone, qp.pdn, RHN_ACCESS_LOCAL_WRITE,
                    x.recv_addr, x.length, nullptr);
  if (s != RHN_SYN_NONE) return refuse(RHN_CQE_LOC_PROT_ERR, s);
  return RHN_CQE_SUCCESS;
}

// The requester hands the WQE over: this rank joins the communicator's
// collective; its CQE comes when the collective is done here.
Impl::TxResult coll_send_packet(Impl& m, QpObj& qp, uint32_t qpn) {
  Inflight& e = m.entry(qpn, qp.tx_entry);
  const DecodedWqe& w = qp.tx_wqe;
  const rhn_wqe_coll x = family_slot<rhn_wqe_coll>(w);
  auto fail_now = [&](uint8_t status, uint8_t syn) {
    m.counters.add(RHN_CNT_COLL_ERRORS);
    m.abort_tx(qp);
    m.finish_entry(qpn, e, status, syn);
    return Impl::TxResult::kAborted;
  };
  uint8_t syn = RHN_SYN_NONE;
  bool made = false;
  CollComm* c = comm_for(m, qp, qpn, x, w.remote_key, &syn, &made);
  if (!c) {
    // A bad list is the WQE's fault (the endpoint goes to error, as for
    // any bad WQE); a disagreement or a full table is not.
    const uint8_t status = syn == RHN_SYN_DMA            ? RHN_CQE_LOC_PROT_ERR
                           : syn == RHN_SYN_BAD_WQE      ? RHN_CQE_LOC_QP_OP_ERR
                           : syn == RHN_SYN_COLL_NO_ROOM ? RHN_CQE_GENERAL_ERR
                                                         : RHN_CQE_REM_OP_ERR;
    return fail_now(status, syn);
  }
  CollLocal* l = nullptr;
  for (CollLocal& k : c->local)
    if (k.qpn == qpn && k.rank == x.rank) l = &k;
  // An endpoint made after the communicator, under a number its list
  // names, is not the rank it was made for.
  if (!l || l->qp_gen != qp.gen)
    return fail_now(RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH);
  if (c->broken) {
    // The others may be waiting for this node in it: they hear ABORT.
    begin_aborts(*c, l->posts, RHN_SYN_MEMBER_LOST);
    l->posts++;
    return fail_now(RHN_CQE_REM_OP_ERR, RHN_SYN_MEMBER_LOST);
  }
  if (l->posts != c->seq) {
    // Its previous collective is not over here yet: this one waits.
    m.wait_on(qpn, c->waiters);
    return Impl::TxResult::kBlocked;
  }
  if (!made) {
    // A later post is checked against the list the communicator was made
    // from, entry by entry (queues.md): whoever posted first must not
    // decide who the others are.
    const uint8_t read = read_list(m, qp, x);
    if (read == RHN_SYN_DMA) return fail_now(RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
    if (read != RHN_SYN_NONE)
      return fail_now(RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE);
    if (!same_list(m, *c)) {
      // The ranks disagree on who they are: this collective fails at
      // every rank, as for any other disagreement.
      l->posts++;
      if (!c->active) start_collective(m, *c, x);
      fail_collective(m, *c, RHN_SYN_COLL_MISMATCH, true);
      return fail_now(RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH);
    }
  }
  if (!c->active) {
    start_collective(m, *c, x);
  } else if (!same_params(*c, x, effective_radix(x, c->nnodes),
                          effective_seg(x, c->nnodes))) {
    // The ranks disagree: it fails everywhere.
    l->posts++;
    fail_collective(m, *c, RHN_SYN_COLL_MISMATCH, true);
    return fail_now(RHN_CQE_REM_OP_ERR, RHN_SYN_COLL_MISMATCH);
  }
  l->posted = true;
  l->entry = qp.tx_entry;
  l->msn = e.msn;
  l->pdn = qp.pdn;
  l->send = {x.send_addr, x.length, x.send_lkey};
  l->recv = {x.recv_addr, x.length, x.recv_lkey};
  l->posts++;
  c->posted++;
  e.state = MsgState::kAwaitResponse;
  e.peer = static_cast<uint16_t>(m.cfg.node_id);
  e.length = x.length;   // the CQE's byte_len and the status word's
  qp.tx_active = false;  // the NIC has it; the QP's next WQE may go
  if (c->failed != RHN_SYN_NONE) {
    complete_rank(m, *l, c->failed);
    end_if_all_failed(m, *c);
  }
  m.coll.next_deadline = m.now;  // progress() looks at it next
  return Impl::TxResult::kFinished;
}

}  // namespace coll_detail

extern const OpFamily kCollFamily = {
    .name = "coll",
    .decode = coll_decode,
    .check = coll_check,
    .send_packet = coll_send_packet,
};

// ---- The engine's side.

void coll_place(Impl& m, CardMemory& mem) {
  CollTables& t = m.coll;
  // A message's cookie holds the communicator in 16 bits and the slot in 8.
  const uint32_t comms = clamp<uint32_t>(m.cfg.coll.comms, 1, 0xffff);
  const uint32_t window = clamp<uint32_t>(m.cfg.coll.window, 1, 256);
  m.cfg.coll.window = window;
  m.cfg.coll.comms = comms;
  t.comms = mem.table<CollComm>(comms);
  t.members = mem.table<CollMember>(size_t{comms} * RHN_COLL_MAX_RANKS);
  t.nodes = mem.table<uint16_t>(size_t{comms} * RHN_COLL_MAX_RANKS);
  t.slots = mem.table<CollSlot>(size_t{comms} * window);
  t.buffers = mem.bytes(size_t{comms} * window * RHN_WIRE_MTU);
  t.scratch = mem.bytes(RHN_WIRE_MTU);
  t.frame = mem.bytes(RHN_MAX_FRAME);
}

void coll_reset(Impl& m) {
  CollTables& t = m.coll;
  const uint32_t comms = t.comms.size();
  const uint32_t window = m.cfg.coll.window;
  t.comms.fill(CollComm{});
  t.members.fill(CollMember{});
  t.nodes.fill(0);
  t.slots.fill(CollSlot{});
  for (uint32_t i = 0; i < comms; i++) {
    t.comms[i].members = i * RHN_COLL_MAX_RANKS;
    t.comms[i].nodes = i * RHN_COLL_MAX_RANKS;
    t.comms[i].slots = i * window;
    for (uint32_t k = 0; k < window; k++)
      t.slots[i * window + k].buf = i * window + k;
  }
  t.early_aborts = {};
  t.early_next = 0;
  t.early_refused = {};
  t.refused_next = 0;
  t.used = 0;
  m.shares.set_limit(
      kResCollComms, m.cfg.coll.comms,
      max<uint32_t>(1, m.cfg.coll.comms * m.cfg.coll.context_share / 256),
      m.cfg.account_share);
  t.switch_path = Peer{};
  t.next_deadline = UINT64_MAX;
}

void coll_qp_gone(Impl& m, uint32_t qpn) {
  for (CollComm& c : m.coll.comms) {
    if (!c.valid) continue;
    bool hit = false, left = false;
    for (CollLocal& l : c.local) {
      if (l.qpn == kNone) continue;
      if (l.qpn == qpn) {
        l.posted = false;  // its WQEs go with it
        l.qpn = kNone;
        hit = true;
      } else {
        left = true;
      }
    }
    if (!hit) continue;
    // Without this rank the communicator cannot complete anything again:
    // the collective under way (or the next one, which others may be in
    // already, waiting silently for this node) and every later one fail.
    // The others hear one ABORT, marked GONE and carrying this life, so
    // it never touches a later job's communicator of the key, and those
    // whose own member went already need none (so a normal teardown, one
    // process after the other, sends one ABORT in all, to a node that
    // still has this life).
    const uint32_t from = c.seq;
    c.broken = true;
    if (c.active) fail_collective(m, c, RHN_SYN_MEMBER_LOST, false);
    begin_aborts(c, from, RHN_SYN_MEMBER_LOST);
    if (!left) release_if_done(m, c);
  }
}

void coll_node_failed(Impl& m, uint16_t node) {
  for (CollComm& c : m.coll.comms)
    if (c.valid && c.active && c.failed == RHN_SYN_NONE &&
        node_index(m, c, node) >= 0)
      fail_collective(m, c, RHN_SYN_MEMBER_LOST, true);
}

void coll_fw_done(Impl& m, uint64_t ck, uint8_t syndrome) {
  const uint32_t gen = static_cast<uint32_t>(ck >> 32);
  const uint32_t ci = (ck >> 16) & 0xffff;
  const uint32_t si = (ck >> 8) & 0xff;
  const uint32_t dest = ck & 0xff;
  if (ci >= m.coll.comms.size()) return;
  CollComm& c = m.coll.comms[ci];
  if (!c.valid) return;
  if (dest == kDestAbort) {
    if (c.incarnation != gen) return;  // an earlier communicator's
    if (c.aborts_out) c.aborts_out--;
    // A communicator kept only to tell the others goes when it has.
    release_if_done(m, c);
    return;
  }
  if (c.gen != gen) return;  // about a collective that is over
  if (dest == kDestProbe) {
    if (c.probing) c.probing--;
    if (syndrome == RHN_SYN_RETRY_EXCEEDED)
      fail_collective(m, c, RHN_SYN_MEMBER_LOST, true);
    return;
  }
  if (si >= m.cfg.coll.window || dest >= 32) return;
  CollSlot& s = m.coll.slots[c.slots + si];
  const uint32_t bit = 1u << dest;
  if (!(s.busy & bit)) return;
  s.busy &= ~bit;
  if (syndrome == RHN_SYN_NONE) {
    c.last_progress = m.now;
    s.retries = 0;
    m.coll.next_deadline = m.now;
    return;
  }
  if (syndrome == RHN_SYN_COLL_NOT_READY) {
    // That NIC has not reached the collective (or the segment): again
    // later, backing off.
    s.todo |= bit;
    back_off(m, s);
    return;
  }
  fail_collective(m, c,
                  syndrome == RHN_SYN_RETRY_EXCEEDED
                      ? uint8_t{RHN_SYN_MEMBER_LOST}
                      : syndrome,
                  true);
}

namespace {

// The turn's work, out of line: every poll asks each family, mostly
// nothing is due, and the test alone costs less than this function's
// set-up (the registers its loops save and restore).
[[gnu::noinline]] bool run_comms(Impl& m, uint32_t budget) {
  m.coll.next_deadline = UINT64_MAX;
  bool did = false;
  for (CollComm& c : m.coll.comms) {
    if (!budget) {
      m.coll.next_deadline = m.now;
      break;
    }
    if (!c.valid || (!c.active && !c.aborting)) continue;
    if (progress(m, c)) {
      did = true;
      budget--;
    }
  }
  if (did) m.coll.next_deadline = m.now;
  return did;
}

}  // namespace

bool coll_run(Impl& m, uint32_t budget) {
  if (m.now < coll_due(m)) return false;
  return run_comms(m, budget);
}

}  // namespace rhinet::fw
