// SPDX-License-Identifier: BSD-2-Clause
#include "switch_core.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "rhinet/hw_wire.h"

namespace rhinet::fabric {

namespace {

uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// Header sanity a switch can afford: magic, version, a known type and a
// length that matches the header's payload_len. CRCs are the NICs' job.
bool well_formed(std::span<const uint8_t> f) {
  if (f.size() < RHN_PKT_HDR_LEN || f.size() > RHN_MAX_FRAME) return false;
  if (le16(&f[offsetof(rhn_pkt_hdr, magic)]) != RHN_WIRE_MAGIC) return false;
  if (f[offsetof(rhn_pkt_hdr, version)] != RHN_WIRE_VERSION) return false;
  const uint8_t type = f[offsetof(rhn_pkt_hdr, type)];
  size_t hdr_len;
  switch (type) {
    case RHN_PKT_DATA:
      hdr_len = RHN_DATA_HDR_LEN;
      break;
    case RHN_PKT_ACK:
    case RHN_PKT_NAK:
    case RHN_PKT_RAW:
    case RHN_PKT_MGMT:
    case RHN_PKT_COLL:
      hdr_len = RHN_PKT_HDR_LEN;
      break;
    default:
      return false;
  }
  const size_t payload = le16(&f[offsetof(rhn_pkt_hdr, payload_len)]);
  return f.size() == hdr_len + payload;
}

void put32(std::FILE* f, uint32_t v) { std::fwrite(&v, 4, 1, f); }

}  // namespace

Capture::~Capture() { close(); }

bool Capture::open(const std::string& path) {
  close();
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) return false;
  // pcap global header: magic, v2.4, tz 0, sigfigs 0, snaplen, LINKTYPE_USER0.
  put32(file_, 0xa1b2c3d4);
  const uint16_t ver[2] = {2, 4};
  std::fwrite(ver, 2, 2, file_);
  put32(file_, 0);
  put32(file_, 0);
  put32(file_, 65535);
  put32(file_, 147);
  return true;
}

void Capture::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

void Capture::record(std::span<const uint8_t> frame, uint64_t now_ns) {
  if (!file_) return;
  put32(file_, uint32_t(now_ns / 1'000'000'000));
  put32(file_, uint32_t(now_ns / 1000 % 1'000'000));
  put32(file_, uint32_t(frame.size()));
  put32(file_, uint32_t(frame.size()));
  std::fwrite(frame.data(), 1, frame.size(), file_);
  std::fflush(file_);
}

SwitchCore::SwitchCore(unsigned ports, uint64_t seed, Egress egress,
                       uint32_t coll_slots)
    : ports_(ports),
      node_port_(RHN_MAX_NODES, -1),
      port_node_(ports, -1),
      coll_(coll_slots),
      reduces_(coll_slots != 0),
      seed_(seed),
      egress_(std::move(egress)) {
  // Node i is wired to port i (run-cluster's node ID = port) until the
  // administrator wires another (map_node).
  for (unsigned i = 0; i < ports && i < RHN_MAX_NODES; i++)
    node_port_[i] = port_node_[i] = int32_t(i);
  reseed(seed);
  scratch_.reserve(RHN_MAX_FRAME);
}

void SwitchCore::reseed(uint64_t seed) {
  seed_ = seed;
  for (size_t i = 0; i < ports_.size(); i++)
    ports_[i].injector.seed(seed * 0x9e3779b97f4a7c15ull + i);
}

void SwitchCore::set_fault(int port, const FaultSpec& spec) {
  for (size_t i = 0; i < ports_.size(); i++)
    if (port < 0 || size_t(port) == i) ports_[i].fault = spec;
}

void SwitchCore::set_link(unsigned port, bool up, uint64_t down_ns,
                          uint64_t now_ns) {
  Port& p = ports_[port];
  p.up = up;
  p.up_at_ns = (!up && down_ns) ? now_ns + down_ns : 0;
  if (!up) p.holding = false;  // a held frame dies with the link
}

bool SwitchCore::set_group(uint16_t group,
                           const std::vector<unsigned>& members) {
  return groups_.set(group, members, unsigned(ports_.size()));
}

void SwitchCore::port_reconnected(unsigned port) {
  if (port < ports_.size()) groups_.leave_all(port);
}

bool SwitchCore::map_node(uint16_t node, unsigned port) {
  if (node >= RHN_MAX_NODES || port >= ports_.size()) return false;
  // One node per port and one port per node, or a port could speak for
  // two nodes.
  if (port_node_[port] >= 0) node_port_[size_t(port_node_[port])] = -1;
  if (node_port_[node] >= 0) port_node_[size_t(node_port_[node])] = -1;
  node_port_[node] = int32_t(port);
  port_node_[port] = node;
  return true;
}

void SwitchCore::ingress(unsigned port, std::span<const uint8_t> frame,
                         uint64_t now_ns) {
  Port& in = ports_[port];
  capture_.record(frame, now_ns);
  in.cnt.rx_frames++;
  in.cnt.rx_bytes += frame.size();
  if (!well_formed(frame)) {
    in.cnt.malformed++;
    return;
  }
  if (!in.up) {
    in.cnt.link_down_drops++;
    return;
  }
  const uint16_t src = le16(&frame[offsetof(rhn_pkt_hdr, src_node)]);
  const uint16_t dst = le16(&frame[offsetof(rhn_pkt_hdr, dst_node)]);
  // A port speaks for the node wired to it only: a frame claiming another
  // (to be answered, reduced or acknowledged in its name) is dropped.
  if (int32_t(src) != port_node_[port]) {
    in.cnt.spoofed++;
    return;
  }
  if (frame[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_MGMT) {
    // For the switch itself, never forwarded: a join or leave of this
    // port only (GroupTable::manage), answered on this port.
    std::array<uint8_t, kMgmtFrameLen> answer;
    switch (groups_.manage(frame, port, answer)) {
      case MgmtVerdict::kMalformed:
        in.cnt.malformed++;
        return;
      case MgmtVerdict::kRefused:
        in.cnt.mgmt_refused++;
        break;
      case MgmtVerdict::kApplied:
        in.cnt.mgmt_applied++;
        break;
    }
    egress(port, answer, now_ns);
    return;
  }
  if (frame[offsetof(rhn_pkt_hdr, type)] == RHN_PKT_COLL) {
    // For the switch too: a collective's partial, combined here; the
    // results and answers go back out on the contributors' ports.
    if (!reduces_) {
      in.cnt.unroutable++;
      return;
    }
    coll_.ingress(port, src, frame, now_ns,
                  [&](unsigned out, std::span<const uint8_t> f) {
                    egress(out, f, now_ns);
                  });
    return;
  }

  if (dst == RHN_NODE_BROADCAST) {
    for (unsigned out = 0; out < ports_.size(); out++)
      if (out != port) egress(out, frame, now_ns);
    return;
  }
  if (dst >= RHN_NODE_MCAST_FIRST) {
    if (!groups_.for_each_egress(
            dst, port, [&](unsigned out) { egress(out, frame, now_ns); }))
      in.cnt.unroutable++;
    return;
  }
  const int32_t out = node_port_[dst];
  if (out < 0 || unsigned(out) == port) {
    in.cnt.unroutable++;
    return;
  }
  egress(unsigned(out), frame, now_ns);
}

void SwitchCore::egress(unsigned port, std::span<const uint8_t> frame,
                        uint64_t now_ns) {
  Port& p = ports_[port];
  if (!p.up) {
    p.cnt.link_down_drops++;
    return;
  }
  const FaultVerdict v = p.injector.decide(p.fault, frame.size());
  if (v.lost()) {
    p.cnt.loss_drops++;
    return;
  }
  if (v.copies == 2) p.cnt.duplicated++;
  // A reordered copy is held back until the next frame (or its hold time):
  // one at a time, so a copy drawn to be reordered while one is held goes
  // out in order.
  const bool was_holding = p.holding;
  for (unsigned i = 0; i < v.copies; i++) {
    std::span<const uint8_t> out = frame;
    if (v.copy[i].corrupt) {
      scratch_.assign(frame.begin(), frame.end());
      FaultInjector::corrupt(v.copy[i], scratch_);
      out = scratch_;
      p.cnt.corrupted++;
    }
    if (v.copy[i].reorder && !p.holding) {
      p.held.assign(out.begin(), out.end());
      p.holding = true;
      p.held_until_ns = now_ns + kReorderHoldNs;
      p.cnt.reordered++;
      continue;
    }
    deliver(port, out);
  }
  if (was_holding) {  // the held frame goes out after its successor
    p.holding = false;
    deliver(port, p.held);
  }
}

void SwitchCore::deliver(unsigned port, std::span<const uint8_t> frame) {
  ports_[port].cnt.tx_frames++;
  ports_[port].cnt.tx_bytes += frame.size();
  egress_(port, frame);
}

void SwitchCore::tick(uint64_t now_ns) {
  coll_.tick(now_ns);
  for (unsigned i = 0; i < ports_.size(); i++) {
    Port& p = ports_[i];
    if (!p.up && p.up_at_ns && now_ns >= p.up_at_ns) {
      p.up = true;
      p.up_at_ns = 0;
    }
    if (p.holding && now_ns >= p.held_until_ns) {
      p.holding = false;
      deliver(i, p.held);
    }
  }
}

uint64_t SwitchCore::next_deadline_ns() const {
  uint64_t next = coll_.next_deadline_ns();
  for (const Port& p : ports_) {
    if (!p.up && p.up_at_ns) next = std::min(next, p.up_at_ns);
    if (p.holding) next = std::min(next, p.held_until_ns);
  }
  return next;
}

std::string SwitchCore::stats_text() const {
  std::ostringstream os;
  for (size_t i = 0; i < ports_.size(); i++) {
    const PortCounters& c = ports_[i].cnt;
    os << "port " << i << " link=" << (ports_[i].up ? "up" : "down")
       << " rx_frames=" << c.rx_frames << " rx_bytes=" << c.rx_bytes
       << " tx_frames=" << c.tx_frames << " tx_bytes=" << c.tx_bytes
       << " malformed=" << c.malformed << " unroutable=" << c.unroutable
       << " link_down_drops=" << c.link_down_drops
       << " loss_drops=" << c.loss_drops << " duplicated=" << c.duplicated
       << " reordered=" << c.reordered << " corrupted=" << c.corrupted
       << " overflow_drops=" << c.overflow_drops
       << " mgmt_applied=" << c.mgmt_applied
       << " mgmt_refused=" << c.mgmt_refused << " spoofed=" << c.spoofed
       << "\n";
  }
  os << coll_.stats_text();
  return os.str();
}

}  // namespace rhinet::fabric
