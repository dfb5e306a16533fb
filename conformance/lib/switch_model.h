// SPDX-License-Identifier: BSD-2-Clause
// The switch a conformance target's nodes share, as T1 and T3 model it:
// every frame a node transmits is captured at its port, and with
// forwarding on delivered (on the next round, as a switch would) to the
// node its header names, or to every other node for a broadcast. Frames
// a case injects wait in the same queue.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "rhinet/hw.h"
#include "target.h"

namespace rhinet::conform {

// One node's port: what it transmitted since the case last looked.
struct SwitchPort {
  uint16_t node_id = 0;
  bool forwarding = true;
  std::vector<Frame> tx;

  std::vector<Frame> take() {
    std::vector<Frame> out;
    out.swap(tx);
    return out;
  }
};

template <typename Node>
struct SwitchModel {
  struct InFlight {
    Node* to;
    Frame frame;
  };
  std::vector<Node*> nodes;
  std::deque<InFlight> queue;

  void attach(Node* n) { nodes.push_back(n); }
  void detach(Node* n) {
    nodes.erase(std::remove(nodes.begin(), nodes.end(), n), nodes.end());
    std::erase_if(queue, [n](const InFlight& f) { return f.to == n; });
  }
  void inject(Node* to, const Frame& frame) { queue.push_back({to, frame}); }
  // A frame `from` transmitted (Node::port() is its SwitchPort).
  void transmit(Node* from, const uint8_t* frame, size_t len) {
    SwitchPort& p = from->port();
    p.tx.emplace_back(frame, frame + len);
    if (!p.forwarding || len < RHN_PKT_HDR_LEN) return;
    uint16_t dst;
    std::memcpy(&dst, frame + 4, sizeof(dst));
    for (Node* n : nodes) {
      const bool to_it =
          n->port().node_id == dst || (dst == RHN_NODE_BROADCAST && n != from);
      if (to_it) queue.push_back({n, Frame(frame, frame + len)});
    }
  }
  // Hands every queued frame to deliver(node, frame); true if any.
  template <typename Deliver>
  bool deliver(Deliver&& fn) {
    std::deque<InFlight> batch;
    batch.swap(queue);
    for (auto& f : batch) fn(f.to, f.frame);
    return !batch.empty();
  }
};

}  // namespace rhinet::conform
