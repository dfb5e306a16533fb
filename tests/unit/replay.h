// SPDX-License-Identifier: BSD-2-Clause
// Capture and replay of an earlier life's messages into live channels.
// Recorder keeps every DATA frame the switch sees; Injector puts recorded
// operations back on the wire as a late retransmission or a confused peer
// would: only the transport header is the live channel's (session, serial
// number, piggybacked ACK, CRCs), the operation header and payload are the
// recorded ones. Each replay takes the place of a firmware PING that the
// sending node's kernel asks its NIC for (RHN_ADMIN_PROBE_NODE), so it
// holds a serial number of its own and the live traffic loses nothing.
#pragma once

#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "core/crc32c.h"
#include "test_helpers.h"
#include "transport/packet.h"

namespace rhinet::test::replay {

struct Frame {
  uint16_t src = 0, dst = 0;
  std::vector<uint8_t> bytes;
};

inline bool is_data(std::span<const uint8_t> f) {
  return f.size() >= RHN_DATA_HDR_LEN &&
         f[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_DATA;
}
inline rhn_pkt_hdr pkt_of(std::span<const uint8_t> f) {
  rhn_pkt_hdr h{};
  std::memcpy(&h, f.data(), sizeof h);
  return h;
}
inline rhn_op_hdr op_of(std::span<const uint8_t> f) {
  rhn_op_hdr op{};
  std::memcpy(&op, f.data() + RHN_PKT_HDR_LEN, sizeof op);
  return op;
}
// The firmware message kind (RHN_WOP_FW's rkey), 0 for other frames.
inline uint32_t fw_kind(std::span<const uint8_t> f) {
  if (!is_data(f)) return 0;
  const rhn_op_hdr op = op_of(f);
  return op.opcode == RHN_WOP_FW ? op.rkey : 0;
}

// `old`'s operation (header and payload) in the transport header of
// `carrier`, a frame of the live channel.
inline std::vector<uint8_t> in_place_of(std::span<const uint8_t> carrier,
                                        std::span<const uint8_t> old) {
  rhn_pkt_hdr h = pkt_of(carrier);
  const rhn_pkt_hdr was = pkt_of(old);
  const rhn_op_hdr op = op_of(old);
  std::vector<uint8_t> f(RHN_DATA_HDR_LEN + was.payload_len);
  std::memcpy(f.data() + RHN_DATA_HDR_LEN, old.data() + RHN_DATA_HDR_LEN,
              was.payload_len);
  h.payload_len = was.payload_len;
  fw::seal_packet(f.data(), h, &op,
                  was.payload_len ? fw::crc32c(0, f.data() + RHN_DATA_HDR_LEN,
                                               was.payload_len)
                                  : 0);
  return f;
}

// Every DATA frame on the wire while it lives (or until stop()).
class Recorder {
 public:
  explicit Recorder(SimCluster& c) : c_(c) {
    c_.fabric().tap = [this](size_t port, std::span<const uint8_t> f) {
      if (!is_data(f)) return;
      frames.push_back({uint16_t(port), pkt_of(f).dst_node,
                        std::vector<uint8_t>(f.begin(), f.end())});
    };
  }
  ~Recorder() { stop(); }
  void stop() { c_.fabric().tap = nullptr; }
  // The recorded frames that are operations `ops` (wire opcodes) or
  // firmware messages of `kinds`, in the order they were sent, each once
  // (a retransmission is the same frame again).
  std::vector<Frame> select(const std::vector<uint8_t>& ops,
                            const std::vector<uint32_t>& kinds = {}) const {
    std::vector<Frame> out;
    std::map<std::tuple<uint16_t, uint16_t, uint16_t, uint32_t>, bool> seen;
    for (const Frame& fr : frames) {
      const rhn_op_hdr op = op_of(fr.bytes);
      bool want = false;
      for (uint8_t o : ops) want |= op.opcode == o && o != RHN_WOP_FW;
      for (uint32_t k : kinds) want |= fw_kind(fr.bytes) == k;
      if (!want) continue;
      const rhn_pkt_hdr h = pkt_of(fr.bytes);
      if (seen[{fr.src, fr.dst, h.session, h.seq}]) continue;
      seen[{fr.src, fr.dst, h.session, h.seq}] = true;
      out.push_back(fr);
    }
    return out;
  }
  std::vector<Frame> frames;

 private:
  SimCluster& c_;
};

// Puts frames back on the live channels of their node pairs, in order.
class Injector {
 public:
  explicit Injector(SimCluster& c) : c_(c) {
    c_.fabric().drop = [this](size_t port, std::span<const uint8_t> f) {
      if (fw_kind(f) != RHN_FW_PING) return false;
      const rhn_pkt_hdr h = pkt_of(f);
      // A PING that carried a replay and is sent again (lost, or refused
      // out of order): the replay goes again in its place, as the sender's
      // retransmission would.
      auto again = sent_.find({uint16_t(port), h.dst_node, h.session, h.seq});
      std::vector<uint8_t> out;
      if (again != sent_.end()) {
        out = in_place_of(f, again->second);
      } else {
        auto q = pending_.find({uint16_t(port), h.dst_node});
        if (q == pending_.end() || q->second.empty()) return false;
        sent_[{uint16_t(port), h.dst_node, h.session, h.seq}] =
            q->second.front();
        out = in_place_of(f, q->second.front());
        q->second.pop_front();
        injected++;
      }
      c_.fabric().wire(port).transmit(out);
      return true;
    };
  }
  ~Injector() { c_.fabric().drop = nullptr; }
  void add(const std::vector<Frame>& frames) {
    for (const Frame& fr : frames)
      pending_[{fr.src, fr.dst}].push_back(fr.bytes);
  }
  size_t pending() const {
    size_t n = 0;
    for (const auto& [k, q] : pending_) n += q.size();
    return n;
  }
  // Asks the senders for PINGs until every queued frame has gone out.
  bool run(uint64_t timeout_ns = 500'000'000) {
    const uint64_t end = c_.clock().now() + timeout_ns;
    while (pending() != 0 && c_.clock().now() < end) {
      for (const auto& [k, q] : pending_)
        for (size_t i = 0; i < std::min<size_t>(q.size(), 4); i++)
          c_.node(k.first).driver->exec_handle(RHN_ADMIN_PROBE_NODE, 0,
                                               k.second);
      c_.run_for(300'000);
    }
    return pending() == 0;
  }
  size_t injected = 0;

 private:
  SimCluster& c_;
  std::map<std::pair<uint16_t, uint16_t>, std::deque<std::vector<uint8_t>>>
      pending_;
  std::map<std::tuple<uint16_t, uint16_t, uint16_t, uint32_t>,
           std::vector<uint8_t>>
      sent_;
};

// The sum over every node of counter `idx`.
inline uint64_t total(SimCluster& c, unsigned idx) {
  uint64_t n = 0;
  for (size_t i = 0; i < c.size(); i++) n += c.node(i).counter(idx);
  return n;
}

}  // namespace rhinet::test::replay
