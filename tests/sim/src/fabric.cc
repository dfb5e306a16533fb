// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/fabric.h"

#include <algorithm>
#include <cstring>

#include "rhinet/hw.h"

namespace rhinet::sim {

class SimSwitch::PortWire : public fw::Wire {
 public:
  PortWire(SimSwitch& sw, size_t port) : sw_(sw), port_(port) {}
  void transmit(std::span<const uint8_t> frame) override {
    sw_.transmit(port_, frame);
  }

 private:
  SimSwitch& sw_;
  size_t port_;
};

SimSwitch::SimSwitch(SimClock& clock, size_t ports, uint64_t seed)
    : clock_(clock), ports_(ports), rng_(seed) {
  for (size_t i = 0; i < ports; ++i)
    ports_[i].wire = std::make_unique<PortWire>(*this, i);
}

SimSwitch::~SimSwitch() = default;

fw::Wire& SimSwitch::wire(size_t port) { return *ports_.at(port).wire; }

void SimSwitch::clear_faults() {
  global_ = FaultConfig{};
  for (auto& p : ports_) p.faults.reset();
}

bool SimSwitch::chance(double p) {
  if (p <= 0.0) return false;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p;
}

const FaultConfig& SimSwitch::faults_for(size_t src, size_t dst) const {
  if (ports_[dst].faults) return *ports_[dst].faults;
  if (ports_[src].faults) return *ports_[src].faults;
  return global_;
}

void SimSwitch::transmit(size_t src, std::span<const uint8_t> frame) {
  ++counters_.transmitted;
  if (tap) tap(src, frame);
  if (drop && drop(src, frame)) {
    ++counters_.lost;
    return;
  }
  if (frame.size() < RHN_PKT_HDR_LEN) {
    ++counters_.unroutable;
    return;
  }
  if (frame[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_MGMT) {
    manage(src, frame);
    return;
  }
  // The sender's link into the switch.
  uint64_t at = clock_.now();
  if (ps_per_byte_) {
    Port& in = ports_[src];
    at = std::max(at, in.in_free) + frame.size() * ps_per_byte_ / 1000;
    in.in_free = at;
  }
  if (frame[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_COLL) {
    // For the switch's reducer, halfway through the hop. The link in has
    // the port's faults.
    const FaultConfig& f = faults_for(src, src);
    if (!ports_[src].link_up || !coll_enabled_) {
      ++counters_.link_drops;
      return;
    }
    if (chance(f.loss)) {
      ++counters_.lost;
      return;
    }
    Queued q{src, std::vector<uint8_t>(frame.begin(), frame.end())};
    q.to_switch = true;
    q.src = src;
    queue_.emplace(Key{at + hop_delay_ns_ / 2, order_++}, std::move(q));
    return;
  }
  // dst_node: bytes 4..5, little-endian.
  const uint16_t dst = uint16_t(frame[4] | (frame[5] << 8));
  if (dst == RHN_NODE_BROADCAST) {
    for (size_t d = 0; d < ports_.size(); ++d)
      if (d != src) route(src, d, frame, at);
    return;
  }
  if (fabric::GroupTable::is_group(dst)) {
    if (!groups_.for_each_egress(dst, unsigned(src),
                                 [&](unsigned d) { route(src, d, frame, at); }))
      ++counters_.unroutable;
    return;
  }
  if (dst >= ports_.size()) {
    ++counters_.unroutable;
    return;
  }
  route(src, dst, frame, at);
}

void SimSwitch::manage(size_t src, std::span<const uint8_t> frame) {
  // The link into the switch has the port's faults too: a management
  // frame may be lost before the switch sees it.
  const FaultConfig& f = faults_for(src, src);
  if (!ports_[src].link_up) {
    ++counters_.link_drops;
    return;
  }
  if (chance(f.loss)) {
    ++counters_.lost;
    return;
  }
  std::array<uint8_t, fabric::kMgmtFrameLen> answer;
  switch (groups_.manage(frame, unsigned(src), answer)) {
    case fabric::MgmtVerdict::kMalformed:
      ++counters_.unroutable;
      return;
    case fabric::MgmtVerdict::kRefused:
      ++counters_.mgmt_refused;
      break;
    case fabric::MgmtVerdict::kApplied:
      ++counters_.mgmt_applied;
      break;
  }
  route(src, src, answer, clock_.now());  // back out where it came in
}

void SimSwitch::route(size_t src, size_t dst, std::span<const uint8_t> frame,
                      uint64_t at, uint64_t hop) {
  if (!ports_[src].link_up || !ports_[dst].link_up) {
    ++counters_.link_drops;
    return;
  }
  const FaultConfig& f = faults_for(src, dst);
  if (chance(f.loss)) {
    ++counters_.lost;
    return;
  }
  const int copies = chance(f.duplicate) ? 2 : 1;
  if (copies == 2) ++counters_.duplicated;
  for (int c = 0; c < copies; ++c) {
    Queued q{dst, std::vector<uint8_t>(frame.begin(), frame.end())};
    if (chance(f.corrupt)) {
      const size_t bit = std::uniform_int_distribution<size_t>(
          0, q.frame.size() * 8 - 1)(rng_);
      q.frame[bit / 8] ^= uint8_t(1u << (bit % 8));
      ++counters_.corrupted;
    }
    uint64_t extra = 0;
    // A held-back frame is overtaken by whatever follows it.
    if (chance(f.reorder)) {
      extra += f.reorder_delay_ns;
      ++counters_.reordered;
    }
    // The duplicate trails the original a little.
    if (c == 1) extra += hop + 1;
    if (ps_per_byte_) {
      // Its turn on the link out comes when it is in the switch.
      q.in_switch = true;
      q.extra_ns = extra;
      q.hop_ns = hop;
      queue_.emplace(Key{at, order_++}, std::move(q));
      continue;
    }
    queue_.emplace(Key{at + hop + extra, order_++}, std::move(q));
  }
}

bool SimSwitch::deliver() {
  bool any = false;
  const uint64_t now = clock_.now();
  if (now >= coll_deadline_) {  // the reducer's stale segments
    coll_.tick(now);
    coll_deadline_ = coll_.next_deadline_ns();
  }
  // Bounded: only frames already queued and due; frames the engines emit in
  // response are queued with a later due time or picked up next call.
  size_t budget = queue_.size();
  while (budget-- > 0 && !queue_.empty()) {
    auto it = queue_.begin();
    if (it->first.due > now) break;
    Queued q = std::move(it->second);
    queue_.erase(it);
    if (q.to_switch) {
      ++counters_.coll_frames;
      const uint64_t hop = hop_delay_ns_ - hop_delay_ns_ / 2;
      coll_.ingress(unsigned(q.src), q.frame, now,
                    [&](unsigned port, std::span<const uint8_t> f) {
                      route(port, port, f, now, hop);
                    });
      coll_deadline_ = coll_.next_deadline_ns();
      any = true;
      continue;
    }
    Port& p = ports_[q.dst];
    if (q.in_switch) {
      // The link out to the destination, one frame at a time, in the
      // order frames reached the switch.
      const uint64_t done =
          std::max(now, p.out_free) + q.frame.size() * ps_per_byte_ / 1000;
      p.out_free = done;
      q.in_switch = false;
      const uint64_t due = done + q.hop_ns + q.extra_ns;
      queue_.emplace(Key{due, order_++}, std::move(q));
      continue;
    }
    if (!p.link_up) {
      ++counters_.link_drops;
      continue;
    }
    if (p.engine == nullptr) {
      ++counters_.unroutable;
      continue;
    }
    ++counters_.delivered;
    if (!p.engine->frame_arrived(q.frame)) ++counters_.rx_refused;
    any = true;
  }
  return any;
}

uint64_t SimSwitch::next_delivery_ns() const {
  return queue_.empty() ? UINT64_MAX : queue_.begin()->first.due;
}

}  // namespace rhinet::sim
