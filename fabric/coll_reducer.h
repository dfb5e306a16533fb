// SPDX-License-Identifier: BSD-2-Clause
// In-switch reduction of collectives (RHN_COLL_F_IN_SWITCH, frames
// RHN_PKT_COLL: hw_wire.h). Each node's NIC sends its partial of a segment
// (its own ranks already combined) UP to the switch; the switch combines
// the partials of all the communicator's nodes in a bounded table of
// segment buffers (the first fills one, later ones combine into it, with
// the NICs' own reductions: firmware/ops/coll/reduce.h) and sends the
// result DOWN to every contributor. No fabric manager sets anything up:
// a segment's buffer exists from its first UP until every contributor
// acknowledged the result, or the stale time passed without a frame about
// it (incomplete) or since its completion (complete: repeats and ACKs do
// not extend a result's life).
//
// A contributor is the node wired to the port its partial came in on,
// never what the frame's src_node claims: a frame naming another node is
// dropped (counted malformed), so no port adds, acknowledges or hears a
// result in another node's name. (`members` is a hash the switch cannot
// check: a node that knows a communicator's parameters can still join it
// in its own name; its members then see a wrong count or result.)
//
// Part of SwitchCore, which the socket program and the simulator's switch
// both drive, as GroupTable is for multicast patterns.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "ops/coll/reduce.h"
#include "rhinet/hw_wire.h"

namespace rhinet::fabric {

struct CollReducerCounters {
  uint64_t ups = 0;         // partials taken (first copies)
  uint64_t repeats = 0;     // UPs of a partial already held or done
  uint64_t results = 0;     // segments complete
  uint64_t downs = 0;       // DOWN frames sent (repeats included)
  uint64_t busy = 0;        // BUSY answers: no buffer
  uint64_t evicted = 0;     // incomplete segments given up for a lower one
  uint64_t mismatches = 0;  // partials that disagree
  uint64_t stale = 0;       // segments freed for silence or left behind
  uint64_t over_share = 0;  // BUSY: the port opened its share already
  uint64_t stalled = 0;     // waited kStallNs: given to another segment
  uint64_t malformed = 0;   // dropped: bad CRC, size, kind or values, or
                            // a src_node not the port's node
};

constexpr size_t kCollFrameMax =
    RHN_PKT_HDR_LEN + sizeof(rhn_coll_frame) + RHN_WIRE_MTU;

class CollReducer {
 public:
  static constexpr uint32_t kDefaultSlots = 256;
  // An incomplete segment nobody sent a frame about for this long is
  // dropped: a member died (its NICs fail the collective by themselves).
  // NICs repeat an UP held here every few tens of milliseconds, far more
  // often. A complete one is dropped this long after its last partial
  // whatever comes about it (a contributor that never acknowledges, or
  // asks for the result again and again): a NIC that has not had its
  // DOWN by then has given up (max_retries).
  static constexpr uint64_t kDefaultStaleNs = 2'000'000'000;
  // The table is shared by every job on the fabric, so no port may starve
  // the others of it: a port opens at most kPortShare/256 of the buffers
  // (those it was first to contribute to, complete or not), and a buffer
  // that has waited kStallNs for its next partial, or whose result nobody
  // acknowledged for kStallNs (a member that never posts, or a job
  // holding buffers on purpose: reminders and repeats do not count), goes
  // to the first segment that needs one.
  static constexpr uint32_t kPortShare = 64;
  static constexpr uint64_t kStallNs = 1'000'000'000;

  explicit CollReducer(uint32_t slots = kDefaultSlots,
                       uint64_t stale_ns = kDefaultStaleNs,
                       uint64_t stall_ns = kStallNs)
      : slots_(slots ? slots : 1),
        stale_ns_(stale_ns),
        stall_ns_(stall_ns),
        port_quota_(std::max<uint32_t>(
            1, uint32_t(uint64_t{slots_.size()} * kPortShare / 256))) {}

  // A frame of type RHN_PKT_COLL that entered on `port`, where `node` is
  // wired (the contributor, whatever the frame says); answers leave
  // through out(port, frame).
  template <typename Out>
  void ingress(unsigned port, uint16_t node, std::span<const uint8_t> frame,
               uint64_t now, Out out) {
    rhn_coll_frame f;
    std::span<const uint8_t> data;
    if (!parse(frame, node, f, data)) {
      counters_.malformed++;
      return;
    }
    if (f.kind == RHN_COLL_FRAME_ACK) {
      // No refresh: a result's life runs from its completion.
      if (Slot* s = find(f.key, f.seq, f.seg)) acknowledge(*s, node);
      return;
    }
    leave_older(f.key, f.seq, node);
    Slot* s = find(f.key, f.seq, f.seg);
    if (!s) {
      s = take_slot(f, port, now, out);
      if (!s) {
        counters_.busy++;
        answer(port, node, f, RHN_COLL_FRAME_BUSY, 0, {}, out);
        return;
      }
      open(*s, f, uint16_t(data.size()), uint16_t(port));
    }
    // A complete segment's repeats get the DOWN again but do not keep it:
    // its life and stall time run from its completion.
    if (!s->complete) s->last_ns = now;
    if (Contributor* c = contributor(*s, node)) {
      counters_.repeats++;
      c->port = uint16_t(port);
      if (s->complete)
        send_down(*s, *c, out);
      else
        answer(port, node, f, RHN_COLL_FRAME_HELD, 0, {}, out);
      return;
    }
    if (s->complete || s->count == s->head.nnodes ||
        !agrees(*s, f, data.size())) {
      // More nodes than it names, or different parameters.
      counters_.mismatches++;
      if (s->complete) {  // the others are through: only this one hears
        answer(port, node, f, RHN_COLL_FRAME_DOWN, RHN_SYN_COLL_MISMATCH, {},
               out);
        return;
      }
      s->who[s->count++] = {node, uint16_t(port), false};
      s->progress_ns = now;
      fail(*s, out);  // every contributor learns it
      return;
    }
    counters_.ups++;
    if (s->count == 0 || data.empty())
      std::memcpy(s->bytes.data(), data.data(), data.size());
    else
      coll::combine(s->head.reduce, s->head.type, s->bytes.data(), data.data(),
                    data.size());
    s->who[s->count++] = {node, uint16_t(port), false};
    s->progress_ns = now;
    if (s->count < s->head.nnodes) {
      answer(port, node, f, RHN_COLL_FRAME_HELD, 0, {}, out);
      return;
    }
    s->complete = true;
    counters_.results++;
    for (uint32_t i = 0; i < s->count; i++) send_down(*s, s->who[i], out);
  }

  // A frame from node i on port i (the default wiring).
  template <typename Out>
  void ingress(unsigned port, std::span<const uint8_t> frame, uint64_t now,
               Out out) {
    ingress(port, uint16_t(port), frame, now, out);
  }

  // Frees incomplete segments nothing was heard about for the stale time,
  // and complete ones the stale time after their completion.
  void tick(uint64_t now) {
    for (Slot& s : slots_)
      if (s.used && now >= s.last_ns + stale_ns_) {
        s.used = false;
        counters_.stale++;
      }
  }
  uint64_t next_deadline_ns() const {
    uint64_t next = UINT64_MAX;
    for (const Slot& s : slots_)
      if (s.used && s.last_ns + stale_ns_ < next) next = s.last_ns + stale_ns_;
    return next;
  }

  uint32_t slots_in_use() const {
    uint32_t n = 0;
    for (const Slot& s : slots_) n += s.used;
    return n;
  }
  uint32_t slots() const { return uint32_t(slots_.size()); }
  const CollReducerCounters& counters() const { return counters_; }
  std::string stats_text() const {
    const CollReducerCounters& c = counters_;
    std::ostringstream os;
    os << "coll slots=" << slots() << " in_use=" << slots_in_use()
       << " ups=" << c.ups << " repeats=" << c.repeats
       << " results=" << c.results << " downs=" << c.downs << " busy=" << c.busy
       << " evicted=" << c.evicted << " mismatches=" << c.mismatches
       << " stale=" << c.stale << " over_share=" << c.over_share
       << " stalled=" << c.stalled << " malformed=" << c.malformed << "\n";
    return os.str();
  }

 private:
  struct Contributor {
    uint16_t node = 0;
    uint16_t port = 0;
    bool acked = false;
  };
  struct Slot {
    bool used = false;
    bool complete = false;
    uint8_t status = 0;  // a complete slot's: 0 or RHN_SYN_COLL_MISMATCH
    // Its first partial's header: the segment (key, seq, seg), what every
    // partial must agree with, and what the answers about it carry.
    rhn_coll_frame head{};
    uint16_t len = 0;
    uint16_t count = 0;        // contributors so far
    uint64_t last_ns = 0;      // any frame about it; complete: completion
    uint64_t progress_ns = 0;  // its last new partial
    uint16_t opener = 0;       // the port of its first partial
    std::array<Contributor, RHN_COLL_MAX_RANKS> who;
    std::array<uint8_t, RHN_WIRE_MTU> bytes;
  };

  static uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

  // The switch acts on these frames, so it checks them whole, and that
  // they come from the node wired to their port.
  static bool parse(std::span<const uint8_t> frame, uint16_t node,
                    rhn_coll_frame& f, std::span<const uint8_t>& data) {
    constexpr size_t kHead = RHN_PKT_HDR_LEN + sizeof(rhn_coll_frame);
    if (frame.size() < kHead || frame.size() > kCollFrameMax) return false;
    rhn_pkt_hdr h;
    std::memcpy(&h, frame.data(), sizeof h);
    if (h.magic != RHN_WIRE_MAGIC || h.version != RHN_WIRE_VERSION ||
        h.type != RHN_PKT_COLL || h.dst_node != RHN_NODE_BROADCAST ||
        h.src_node != node || h.payload_len != frame.size() - RHN_PKT_HDR_LEN)
      return false;
    if (header_crc(frame.data()) != h.hdr_crc ||
        fw::crc32c(0, frame.data() + RHN_PKT_HDR_LEN, h.payload_len) !=
            h.payload_crc)
      return false;
    std::memcpy(&f, frame.data() + RHN_PKT_HDR_LEN, sizeof f);
    data = frame.subspan(kHead);
    bool reserved = f.status != 0;
    for (uint8_t b : f.reserved) reserved |= b != 0;
    if (reserved || f.nnodes == 0 || f.nnodes > RHN_COLL_MAX_RANKS)
      return false;
    if (f.kind == RHN_COLL_FRAME_ACK) {
      if (!data.empty()) return false;
    } else if (f.kind == RHN_COLL_FRAME_UP) {
      const uint32_t size = coll::type_size(f.type);
      if (!data.empty() && (size == 0 || data.size() % size ||
                            !coll::valid_reduce(f.reduce, f.type)))
        return false;
    } else {
      return false;
    }
    return true;
  }

  static uint32_t header_crc(const uint8_t* frame) {
    uint8_t h[RHN_PKT_HDR_LEN];
    std::memcpy(h, frame, sizeof h);
    std::memset(h + offsetof(rhn_pkt_hdr, hdr_crc), 0, 4);
    return fw::crc32c(0, h, sizeof h);
  }

  Slot* find(uint32_t key, uint32_t seq, uint32_t seg) {
    for (Slot& s : slots_)
      if (s.used && s.head.key == key && s.head.seq == seq && s.head.seg == seg)
        return &s;
    return nullptr;
  }
  static Contributor* contributor(Slot& s, uint16_t node) {
    for (uint32_t i = 0; i < s.count; i++)
      if (s.who[i].node == node) return &s.who[i];
    return nullptr;
  }
  void acknowledge(Slot& s, uint16_t node) {
    Contributor* c = contributor(s, node);
    if (!s.complete || !c) return;
    c->acked = true;
    for (uint32_t i = 0; i < s.count; i++)
      if (!s.who[i].acked) return;
    s.used = false;
  }
  // A node's UP of a later collective of `key` says it has every earlier
  // one's results: those count as acknowledged, and an incomplete earlier
  // segment it is part of (a late copy's leftovers) is dropped.
  void leave_older(uint32_t key, uint32_t seq, uint16_t node) {
    for (Slot& s : slots_) {
      if (!s.used || s.head.key != key || int32_t(seq - s.head.seq) <= 0 ||
          !contributor(s, node))
        continue;
      if (s.complete) {
        acknowledge(s, node);
      } else {
        s.used = false;
        counters_.stale++;
      }
    }
  }

  // The order in which segments get buffers when they are short: by key,
  // then collective number, then segment.
  static bool lower(uint32_t key, uint32_t seq, uint32_t seg, const Slot& s) {
    const rhn_coll_frame& h = s.head;
    if (key != h.key) return key < h.key;
    if (seq != h.seq) return int32_t(seq - h.seq) < 0;
    return seg < h.seg;
  }
  // A buffer for f's segment from `port`: none when the port opened its
  // share already (complete buffers count: a result never acknowledged
  // holds its buffer as surely); else a free one, or the longest-stalled
  // one (no new partial, or its result unacknowledged, for the stall
  // time), or the one of the highest incomplete segment above f's (the
  // incomplete one's contributors hear BUSY), or none.
  template <typename Out>
  Slot* take_slot(const rhn_coll_frame& f, unsigned port, uint64_t now,
                  Out& out) {
    uint32_t opened = 0;
    Slot *free = nullptr, *stalled = nullptr, *victim = nullptr;
    for (Slot& s : slots_) {
      if (!s.used) {
        if (!free) free = &s;
        continue;
      }
      opened += s.opener == port;
      if (now >= s.progress_ns + stall_ns_ &&
          (!stalled || s.progress_ns < stalled->progress_ns))
        stalled = &s;
      if (s.complete) continue;  // done work: for waiting segments only
      if (lower(f.key, f.seq, f.seg, s) &&
          (!victim ||
           lower(victim->head.key, victim->head.seq, victim->head.seg, s)))
        victim = &s;
    }
    if (opened >= port_quota_) {
      counters_.over_share++;
      return nullptr;
    }
    if (free) return free;
    if (stalled) {
      counters_.stalled++;
      victim = stalled;
    }
    if (!victim) return nullptr;
    counters_.evicted++;
    // A complete one's contributors have had its DOWN, or gave up on it
    // (their retries are shorter than the stall time): nothing to tell.
    for (uint32_t i = 0; i < victim->count && !victim->complete; i++) {
      counters_.busy++;
      answer(victim->who[i].port, victim->who[i].node, victim->head,
             RHN_COLL_FRAME_BUSY, 0, {}, out);
    }
    victim->used = false;
    return victim;
  }
  static void open(Slot& s, const rhn_coll_frame& f, uint16_t len,
                   uint16_t opener) {
    s.used = true;
    s.opener = opener;
    s.complete = false;
    s.status = 0;
    s.head = f;
    s.len = len;
    s.count = 0;
  }
  static bool agrees(const Slot& s, const rhn_coll_frame& f, size_t len) {
    const rhn_coll_frame& h = s.head;
    return h.signature == f.signature && h.members == f.members &&
           h.nnodes == f.nnodes && h.reduce == f.reduce && h.type == f.type &&
           s.len == len;
  }
  template <typename Out>
  void fail(Slot& s, Out& out) {
    s.complete = true;
    s.status = RHN_SYN_COLL_MISMATCH;
    for (uint32_t i = 0; i < s.count; i++) send_down(s, s.who[i], out);
  }
  template <typename Out>
  void send_down(Slot& s, const Contributor& c, Out& out) {
    counters_.downs++;
    answer(c.port, c.node, s.head, RHN_COLL_FRAME_DOWN, s.status,
           s.status ? std::span<const uint8_t>{}
                    : std::span<const uint8_t>{s.bytes.data(), s.len},
           out);
  }
  template <typename Out>
  void answer(unsigned port, uint16_t node, rhn_coll_frame f, uint8_t kind,
              uint8_t status, std::span<const uint8_t> data, Out& out) {
    f.kind = kind;
    f.status = status;
    std::memset(f.reserved, 0, sizeof f.reserved);
    uint8_t* p = frame_.data();
    std::memcpy(p + RHN_PKT_HDR_LEN, &f, sizeof f);
    if (!data.empty())
      std::memcpy(p + RHN_PKT_HDR_LEN + sizeof f, data.data(), data.size());
    const uint16_t payload = uint16_t(sizeof f + data.size());
    rhn_pkt_hdr h{};
    h.magic = RHN_WIRE_MAGIC;
    h.version = RHN_WIRE_VERSION;
    h.type = RHN_PKT_COLL;
    h.dst_node = node;
    h.src_node = RHN_NODE_BROADCAST;  // the switch
    h.payload_len = payload;
    h.payload_crc = fw::crc32c(0, p + RHN_PKT_HDR_LEN, payload);
    std::memcpy(p, &h, sizeof h);
    h.hdr_crc = header_crc(p);
    std::memcpy(p, &h, sizeof h);
    out(port, std::span<const uint8_t>(p, size_t{RHN_PKT_HDR_LEN} + payload));
  }

  std::vector<Slot> slots_;
  uint64_t stale_ns_;
  uint64_t stall_ns_;
  uint32_t port_quota_;
  CollReducerCounters counters_;
  std::array<uint8_t, kCollFrameMax> frame_{};
};

}  // namespace rhinet::fabric
