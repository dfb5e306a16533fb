// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/fabric.h"

#include <algorithm>
#include <cstring>

#include "rhinet/hw.h"

namespace rhinet::sim {

class SimSwitch::PortWire final : public fw::Wire {
 public:
  PortWire(SimSwitch& sw, size_t port) : sw_(sw), port_(port) {}
  void transmit(rhinet::fw::Span<const uint8_t> frame) override {
    sw_.transmit(port_, frame);
  }
  // The simulated card's transmit assembler does what Wire's default does
  // (the payload's read through the host bus, then transmit), counted.
  bool assemble(fw::HostBus& bus, const fw::TxGather& g) override {
    ++sw_.counters_.assembled;
    if (sw_.failing_assemblies) {
      --sw_.failing_assemblies;
      return false;
    }
    return fw::Wire::assemble(bus, g);
  }

 private:
  SimSwitch& sw_;
  size_t port_;
};

SimSwitch::SimSwitch(SimClock& clock, size_t ports, uint64_t seed)
    : clock_(clock),
      ports_(ports),
      injector_(seed),
      // The switch's own fault injector stays off: faults are the links'.
      core_(unsigned(ports), seed,
            [this](unsigned out, std::span<const uint8_t> f) {
              route(in_.for_switch ? out : in_.port, out, f, in_.at, in_.hop);
            }) {
  for (size_t i = 0; i < ports; ++i)
    ports_[i].wire = std::make_unique<PortWire>(*this, i);
}

SimSwitch::~SimSwitch() = default;

fw::Wire& SimSwitch::wire(size_t port) { return *ports_.at(port).wire; }

void SimSwitch::clear_faults() {
  global_ = FaultConfig{};
  for (auto& p : ports_) p.faults.reset();
}

const FaultConfig& SimSwitch::faults_for(size_t src, size_t dst) const {
  if (ports_[dst].faults) return *ports_[dst].faults;
  if (ports_[src].faults) return *ports_[src].faults;
  return global_;
}

SwitchCounters SimSwitch::counters() const {
  SwitchCounters c = counters_;
  for (unsigned i = 0; i < core_.ports(); i++) {
    const fabric::PortCounters& p = core_.counters(i);
    c.unroutable += p.unroutable;
    c.malformed += p.malformed;
    c.spoofed += p.spoofed;
    c.mgmt_applied += p.mgmt_applied;
    c.mgmt_refused += p.mgmt_refused;
  }
  return c;
}

void SimSwitch::transmit(size_t src, std::span<const uint8_t> frame) {
  ++counters_.transmitted;
  if (tap) tap(src, frame);
  if (drop && drop(src, frame)) {
    ++counters_.lost;
    return;
  }
  // The sender's link into the switch.
  uint64_t at = clock_.now();
  if (ps_per_byte_) {
    Port& in = ports_[src];
    at = std::max(at, in.in_free) + frame.size() * ps_per_byte_ / 1000;
    in.in_free = at;
  }
  const uint8_t type = frame.size() > offsetof(rhn_pkt_hdr, type)
                           ? frame[offsetof(rhn_pkt_hdr, type)]
                           : 0;
  if (type == RHN_PKT_MGMT || type == RHN_PKT_COLL) {
    // For the switch itself: it takes the frame halfway through the hop,
    // and its answers spend the other half.
    route(src, src, frame, at, hop_delay_ns_ / 2, true);
    return;
  }
  enter({src, at, hop_delay_ns_, false}, frame);
}

void SimSwitch::enter(const Ingress& in, std::span<const uint8_t> frame) {
  in_ = in;
  core_.ingress(unsigned(in.port), frame, in.at);
}

void SimSwitch::route(size_t src, size_t dst, std::span<const uint8_t> frame,
                      uint64_t at, uint64_t hop, bool to_switch) {
  if (!ports_[src].link_up || !ports_[dst].link_up) {
    ++counters_.link_drops;
    return;
  }
  const FaultConfig& f = faults_for(src, dst);
  // A frame for the switch itself is not forwarded: it can only be lost.
  const fabric::FaultVerdict v =
      to_switch ? fabric::FaultVerdict{injector_.lose(f) ? 0u : 1u}
                : injector_.decide(f, frame.size());
  if (v.lost()) {
    ++counters_.lost;
    return;
  }
  if (to_switch) {
    Queued q{dst, std::vector<uint8_t>(frame.begin(), frame.end())};
    q.to_switch = true;
    queue_.emplace(Key{at + hop, order_++}, std::move(q));
    return;
  }
  if (v.copies == 2) ++counters_.duplicated;
  for (unsigned c = 0; c < v.copies; ++c) {
    Queued q{dst, std::vector<uint8_t>(frame.begin(), frame.end())};
    if (v.copy[c].corrupt) {
      fabric::FaultInjector::corrupt(v.copy[c], q.frame);
      ++counters_.corrupted;
    }
    uint64_t extra = 0;
    // A held-back frame is overtaken by whatever follows it.
    if (v.copy[c].reorder) {
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
  if (now >= core_.next_deadline_ns()) core_.tick(now);  // stale segments
  // Bounded: only frames already queued and due; frames the engines emit in
  // response are queued with a later due time or picked up next call.
  size_t budget = queue_.size();
  while (budget-- > 0 && !queue_.empty()) {
    auto it = queue_.begin();
    if (it->first.due > now) break;
    Queued q = std::move(it->second);
    queue_.erase(it);
    if (q.to_switch) {
      if (q.frame[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_COLL)
        ++counters_.coll_frames;
      enter({q.dst, now, hop_delay_ns_ - hop_delay_ns_ / 2, true}, q.frame);
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
    if (p.rx) {
      // An empty frame is no FIFO entry: frame_arrived counts it.
      if (q.frame.empty()) {
        p.engine->frame_arrived(q.frame);
      } else if (!p.rx->arrive(q.frame)) {
        p.engine->frames_dropped(1);
        ++counters_.rx_refused;
      }
    } else if (!p.engine->frame_arrived(q.frame)) {
      ++counters_.rx_refused;
    }
    any = true;
  }
  return any;
}

uint64_t SimSwitch::next_delivery_ns() const {
  return queue_.empty() ? UINT64_MAX : queue_.begin()->first.due;
}

}  // namespace rhinet::sim
