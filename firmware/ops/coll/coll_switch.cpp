// SPDX-License-Identifier: BSD-2-Clause
// ops/coll in in-switch mode: the switch's RHN_PKT_COLL frames (its
// reduced segments and its answers). Sending to the switch is in
// coll_segments.cpp.
#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/coll/coll.h"
#include "ops/coll/coll_detail.h"
#include "ops/coll/reduce.h"
#include "ops/family.h"

namespace rhinet::fw {

using namespace coll_detail;

void coll_switch_receive(Impl& m, const Packet& pkt) {
  rhn_coll_frame f;
  if (pkt.payload.size() < sizeof f) {
    m.counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  memcpy(&f, pkt.payload.data(), sizeof f);
  const Span<const uint8_t> data = pkt.payload.subspan(sizeof f);
  CollComm* cp = find_comm(m, f.key);
  if (!cp || !via_switch(*cp) || f.members != cp->nodes_hash) {
    m.counters.add(RHN_CNT_STALE_PACKETS);  // a communicator gone from here
    return;
  }
  CollComm& c = *cp;
  const int32_t ahead = static_cast<int32_t>(f.seq - c.seq);
  if (f.kind == RHN_COLL_FRAME_DOWN && ahead < 0) {
    // A result this node had (its ACK was lost): the switch may free it.
    send_switch_frame(m, c, f.seq, f.seg, RHN_COLL_FRAME_ACK, {});
    return;
  }
  if (ahead != 0 || !c.active || c.failed != RHN_SYN_NONE || f.seg < c.base ||
      f.seg >= c.base + m.cfg.coll.window) {
    m.counters.add(RHN_CNT_STALE_PACKETS);
    return;
  }
  CollSlot& s = slot_of(m, c, f.seg);
  if (!s.used || s.seg != f.seg || !s.up_sent) {
    m.counters.add(RHN_CNT_STALE_PACKETS);
    return;
  }
  const uint32_t up = 1u << kCollParent;
  // HELD and BUSY answer at once: with one UP out since the last answer,
  // a clean sample of the round trip (a DOWN may have waited for others).
  if ((f.kind == RHN_COLL_FRAME_HELD || f.kind == RHN_COLL_FRAME_BUSY) &&
      (s.todo & up) && s.unanswered == 1)
    m.rtt_sample(m.coll.switch_path,
                 static_cast<uint32_t>(
                     min<uint64_t>((m.now - s.sent_at) / 1000, UINT32_MAX)));
  switch (f.kind) {
    case RHN_COLL_FRAME_DOWN:
      send_switch_frame(m, c, f.seq, f.seg, RHN_COLL_FRAME_ACK, {});
      if (s.down_in) return;  // a repeat
      if (f.status != RHN_SYN_NONE) {
        fail_collective(m, c, RHN_SYN_COLL_MISMATCH, true);
        return;
      }
      if (f.signature != signature(c) || data.size() != s.len) {
        m.counters.add(RHN_CNT_MALFORMED_PACKETS);
        fail_collective(m, c, RHN_SYN_COLL_MISMATCH, true);
        return;
      }
      memcpy(bytes_of(m, s), data.data(), s.len);
      s.down_in = true;
      s.todo &= ~up;
      m.counters.add(RHN_CNT_COLL_SEGMENTS);
      c.last_progress = m.now;
      m.coll.next_deadline = m.now;
      return;
    case RHN_COLL_FRAME_HELD:
      // The switch has it and waits for other nodes: only a slow
      // reminder now, in case the switch loses it.
      if (!(s.todo & up)) return;
      s.unanswered = 0;
      s.retry_at = m.now + m.cfg.sync_probe_ns;
      update_deadline(m, s.retry_at);
      return;
    case RHN_COLL_FRAME_BUSY:
      // No buffer in the switch now: again soon, backing off.
      if (!(s.todo & up)) return;
      s.unanswered = 0;
      back_off(m, s);
      return;
    default:
      m.counters.add(RHN_CNT_MALFORMED_PACKETS);
      return;
  }
}
}  // namespace rhinet::fw
