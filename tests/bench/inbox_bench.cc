// SPDX-License-Identifier: BSD-2-Clause
// The many-to-one channel (rhinet::Inbox: a ticket by remote fetch-add, the
// slot written once RecvCNT shows it free; Documentation/userlib/inbox.md) on
// the simulator's engines: S senders (endpoints spread over up to 8 sender
// nodes) each send messages into one receiver's N slots at once, for S = 1 ..
// 256. The senders run the very SendMachine rhinet::InboxSender runs, over WQEs
// (FETCH_ADD, READ, WRITE) of their endpoints; the receiver consumes as the
// host would.
//
// Figures per S: the receiver's memory (the area: constant), messages per
// second of fabric time (the simulator's clock) and of this thread's wall
// time, RecvCNT reads per message (what waiting costs), RNR retries and
// dropped frames counted by the NICs (0: nobody is refused). Reference
// measured in the same run: the same senders WRITE the same messages into
// a region of their own at the receiver (one slot each, no flow control,
// receiver memory S x slot) -- the fabric's floor for this traffic. Then a
// model, printed up to 10^6 senders, of the receiver memory of this
// channel against a design with an RC QP and its receive buffers per peer
// (the usual eager path).
//
//   inbox_bench [--quick]
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_nodes.h"
#include "cluster_ep.h"
#include "rhinet/inbox_protocol.hpp"
#include "rhinet/sim/cluster.h"

using namespace rhinet;
using bench::Clock;
using bench::seconds_since;

namespace {

constexpr uint32_t kAccess = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                             RHN_ACCESS_REMOTE_READ | RHN_ACCESS_REMOTE_ATOMIC;
constexpr size_t kSenderBuf = 4096;
constexpr size_t kResult = 2048;  // fetch-add result and RecvCNT read land here

using Ep = bench::ClusterEp;

bool make_ep(sim::SimCluster& c, uint16_t node, size_t bytes, Ep* e) {
  return bench::make_cluster_ep(c, node, {.bytes = bytes, .access = kAccess},
                                e);
}

// One sender's transport: one operation in flight at a time (the
// machine's), completed from its CQ.
struct SimTransport {
  struct State {
    bool done = false, failed = false;
    uint64_t value = 0;
    const sim::SimClock* clock = nullptr;  // a pause: done at `due`
    uint64_t due = 0;
  };
  struct Op {
    std::shared_ptr<State> s;
    bool test() const {
      return !s || s->done || (s->clock && s->clock->now() >= s->due);
    }
    bool failed() const { return s && s->failed; }
    uint64_t value() const { return s ? s->value : 0; }
  };
  Ep* ep;
  const Ep* recv;
  const Ep* counters;  // the group's counter host (the receiver if none)
  std::shared_ptr<State> current;
  bool read_pending = false;
  uint64_t wr = 0;
  const sim::SimClock* clock = nullptr;

  sim::SendWr base(uint8_t opcode, uint64_t offset, const Ep* to) {
    sim::SendWr w;
    w.wr_id = ++wr;
    w.opcode = opcode;
    w.flags = RHN_WQE_F_SIGNALED;
    w.dst_node = to->node;
    w.dst_qpn = to->qp->qpn();
    w.remote_addr = to->buf.va() + offset;
    w.remote_key = to->mr.key;
    return w;
  }
  Op post(const sim::SendWr& w, bool reads) {
    current = std::make_shared<State>();
    read_pending = reads;
    if (!ep->qp->post_send(w)) current->done = current->failed = true;
    return Op{current};
  }
  Op fetch_add(uint64_t offset, uint64_t add) {
    sim::SendWr w = base(RHN_OP_FETCH_ADD, offset, counters);
    w.sges = {{ep->buf.va() + kResult, 8, ep->mr.key}};
    w.compare_add = add;
    return post(w, true);
  }
  Op read_word(uint64_t offset) {
    sim::SendWr w = base(RHN_OP_READ, offset, counters);
    w.sges = {{ep->buf.va() + kResult, 8, ep->mr.key}};
    return post(w, true);
  }
  Op write(uint64_t offset, std::span<const std::byte> bytes) {
    sim::SendWr w = base(RHN_OP_WRITE, offset, recv);
    if (bytes.size() <= 16) {
      w.flags |= RHN_WQE_F_INLINE;
      w.inline_data.resize(bytes.size());
      std::memcpy(w.inline_data.data(), bytes.data(), bytes.size());
    } else {
      ep->buf.write(0, bytes.data(), bytes.size());
      w.sges = {{ep->buf.va(), uint32_t(bytes.size()), ep->mr.key}};
    }
    return post(w, false);
  }
  // A slot turn: about a message's time through the receiver's NIC at
  // this fabric's pace (inbox_bench's own figure for 256 senders); the
  // read that follows the pause takes a round trip, which the pause need
  // not wait for too.
  static constexpr uint64_t kSlotTurnNs = 1300;
  static constexpr uint64_t kReadRoundTripNs = 10'000;
  Op pause(uint64_t slots) {
    auto st = std::make_shared<State>();
    st->clock = clock;
    const uint64_t wait = kSlotTurnNs * std::min<uint64_t>(slots, 1000);
    st->due =
        clock->now() + (wait > kReadRoundTripNs ? wait - kReadRoundTripNs : 0);
    return Op{st};
  }
  // Takes the CQ's completions: false on an error completion.
  bool poll() {
    sim::Completion x;
    while (ep->cq->poll_one(&x)) {
      if (!current || x.wr_id != wr) continue;
      current->done = true;
      current->failed = !x.ok();
      if (read_pending) current->value = ep->buf.load64(kResult);
      if (!x.ok()) return false;
    }
    return true;
  }
};

struct Sender {
  Ep ep;
  std::unique_ptr<SimTransport> t;
  std::unique_ptr<inbox::SendMachine<SimTransport>> m;
  std::vector<std::byte> msg;
  uint32_t sent = 0;
};

std::vector<std::byte> message(uint32_t s, uint32_t j, uint32_t bytes) {
  std::vector<std::byte> m(bytes);
  std::memcpy(m.data(), &s, 4);
  std::memcpy(m.data() + 4, &j, 4);
  for (size_t i = 8; i < m.size(); i++)
    m[i] = static_cast<std::byte>(s * 31 + j * 7 + i);
  return m;
}

struct Figures {
  bool ok = false;
  double msgs_per_s_fabric = 0, msgs_per_s_wall = 0, reads_per_msg = 0;
  double recv_packets_per_msg = 0;  // frames the receiver's NIC took in
  uint64_t rnr = 0, drops = 0;
  size_t receiver_bytes = 0;
};

uint64_t sum_counter(sim::SimCluster& c, unsigned index) {
  uint64_t s = 0;
  for (size_t i = 0; i < c.size(); i++) s += c.node(i).counter(index);
  return s;
}

// S senders x K messages of `bytes` into N slots (inbox), or each sender
// into a slot of its own at the receiver with no flow control (floor).
// groups > 0: the counters away from the receiver, in that many counter
// groups, each group's counters on a node of its own (InboxPlacement).
Figures run(uint32_t senders, uint32_t k, uint32_t slots, uint32_t bytes,
            bool floor, uint32_t groups = 0) {
  Figures f;
  const uint32_t sender_nodes = senders < 8 ? senders : 8;
  sim::ClusterConfig cfg;
  cfg.nodes = 1 + sender_nodes + groups;
  cfg.memory_bytes = 256u << 20;
  cfg.hop_delay_ns = 5000;
  sim::SimCluster c(cfg);
  if (!c.all_up()) return f;
  InboxLayout l;
  l.slots = slots;
  l.slot_bytes = bytes;
  l.first_ticket = ~uint64_t{0} - 100;  // the counters wrap on the way
  l.groups = groups ? groups : 1;
  const size_t area =
      floor ? size_t{senders} * ((bytes + 63) / 64 * 64) : inbox::area_bytes(l);
  Ep recv;
  // Past the area: where the receiver's own fetch-add results land.
  if (!make_ep(c, 0, (area + 128 + 4095) / 4096 * 4096, &recv)) return f;
  f.receiver_bytes = area;
  std::vector<std::byte> shadow(area);
  inbox::Queue q(shadow, l, groups == 0);
  if (!floor) {
    q.init();
    recv.buf.write(0, shadow.data(), shadow.size());
  }
  std::vector<Ep> hosts(groups);
  for (uint32_t g = 0; g < groups; g++) {
    if (!make_ep(c, uint16_t(1 + sender_nodes + g), 4096, &hosts[g])) return f;
    std::vector<std::byte> block(inbox::counter_bytes(l));
    inbox::init_counters(block, l);
    hosts[g].buf.write(0, block.data(), block.size());
  }
  uint64_t recv_wr = 0, recv_done = 0;
  std::vector<Sender> s(senders);
  for (uint32_t i = 0; i < senders; i++) {
    if (!make_ep(c, uint16_t(1 + i % sender_nodes), kSenderBuf, &s[i].ep))
      return f;
    const uint32_t g = i % l.groups;
    s[i].t = std::make_unique<SimTransport>(
        SimTransport{&s[i].ep, &recv, groups ? &hosts[g] : &recv, nullptr,
                     false, 0, &c.clock()});
    s[i].m = std::make_unique<inbox::SendMachine<SimTransport>>(*s[i].t, l, g);
    s[i].m->set_recv_count(l.first_ticket);
  }
  const uint64_t rnr0 = sum_counter(c, RHN_CNT_RNR_RETRIES);
  const uint64_t drop0 = sum_counter(c, RHN_CNT_RX_DROPS);
  const uint64_t rx0 = c.node(0).counter(RHN_CNT_RX_PACKETS);
  const uint64_t t0 = c.clock().now();
  const auto w0 = Clock::now();
  const uint64_t total = uint64_t{senders} * k;
  uint64_t delivered = 0, reads = 0;
  std::vector<uint32_t> next(senders, 0);
  auto start = [&](Sender& x, uint32_t i) {
    x.msg = message(i, x.sent, bytes);
    if (floor)
      x.t->write(uint64_t{i} * ((bytes + 63) / 64 * 64), x.msg);
    else
      x.m->start(x.msg);
  };
  for (uint32_t i = 0; i < senders; i++) start(s[i], i);
  const uint64_t deadline = t0 + 60'000'000'000ull;
  while (delivered < total && c.clock().now() < deadline) {
    c.tick();
    for (uint32_t i = 0; i < senders; i++) {
      Sender& x = s[i];
      if (x.sent == k) continue;
      if (!x.t->poll()) {
        std::fprintf(stderr, "sender %u: error completion\n", i);
        return f;
      }
      if (floor) {
        if (!x.t->current->done) continue;
        delivered++;  // its own slot: in once the WRITE completed
        if (++x.sent < k) start(x, i);
        continue;
      }
      if (!x.m->step()) {
        std::fprintf(stderr, "sender %u: an operation failed\n", i);
        return f;
      }
      if (x.m->done() && ++x.sent < k) start(x, i);
    }
    if (floor) continue;
    // The receiver's host: its memory as the NICs left it.
    recv.buf.read(0, shadow.data(), shadow.size());
    std::span<const std::byte> m;
    bool took = false;
    while (q.ready(&m)) {
      uint32_t from, j;
      std::memcpy(&from, m.data(), 4);
      std::memcpy(&j, m.data() + 4, 4);
      if (from >= senders || j != next[from] || m.size() != bytes ||
          !std::equal(m.begin(), m.end(), message(from, j, bytes).begin())) {
        std::fprintf(stderr, "message %" PRIu64 " wrong (sender %u, #%u)\n",
                     delivered, from, j);
        return f;
      }
      next[from]++;
      const uint32_t g = q.group();
      q.pop();
      if (groups) {
        // RecvCNT at the group's counter host: a fetch-add of one.
        sim::SendWr w;
        w.wr_id = ++recv_wr;
        w.opcode = RHN_OP_FETCH_ADD;
        w.flags = RHN_WQE_F_SIGNALED;
        w.dst_node = hosts[g].node;
        w.dst_qpn = hosts[g].qp->qpn();
        w.remote_addr =
            hosts[g].buf.va() + inbox::counter_offset(g) + inbox::kRecvCount;
        w.remote_key = hosts[g].mr.key;
        w.sges = {{recv.buf.va() + area + 64, 8, recv.mr.key}};
        w.compare_add = 1;
        if (!recv.qp->post_send(w)) {
          std::fprintf(stderr, "receiver: RecvCNT update not posted\n");
          return f;
        }
      }
      delivered++;
      took = true;
    }
    if (took) recv.buf.write(0, shadow.data(), shadow.size());
    sim::Completion x;
    while (recv.cq->poll_one(&x)) {
      if (!x.ok()) {
        std::fprintf(stderr, "receiver: RecvCNT update failed\n");
        return f;
      }
      recv_done++;
    }
  }
  if (delivered < total) {
    std::fprintf(stderr, "%" PRIu64 " of %" PRIu64 " messages in 60 s\n",
                 delivered, total);
    return f;
  }
  for (auto& x : s) reads += floor ? 0 : x.m->count_reads();
  const double fabric_s = double(c.clock().now() - t0) * 1e-9;
  f.msgs_per_s_fabric = double(total) / fabric_s;
  f.msgs_per_s_wall = double(total) / seconds_since(w0);
  f.reads_per_msg = double(reads) / double(total);
  f.recv_packets_per_msg =
      double(c.node(0).counter(RHN_CNT_RX_PACKETS) - rx0) / double(total);
  f.rnr = sum_counter(c, RHN_CNT_RNR_RETRIES) - rnr0;
  f.drops = sum_counter(c, RHN_CNT_RX_DROPS) - drop0;
  f.ok = true;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const uint32_t slots = 16, bytes = 64;
  const uint32_t per_sender = quick ? 4 : 16;
  std::printf(
      "inbox_bench: %u slots of %u bytes, %u messages per sender, "
      "5 us per hop\n\n",
      slots, bytes, per_sender);
  std::printf("%8s %14s %12s %12s %10s %5s %6s %14s %12s\n", "senders",
              "recv memory", "msg/s fabric", "msg/s wall", "reads/msg", "rnr",
              "drops", "floor memory", "floor msg/s");
  const std::vector<uint32_t> sizes =
      quick ? std::vector<uint32_t>{1, 16}
            : std::vector<uint32_t>{1, 4, 16, 64, 256};
  bool all_ok = true;
  for (uint32_t n : sizes) {
    const Figures in = run(n, per_sender, slots, bytes, false);
    const Figures fl = run(n, per_sender, slots, bytes, true);
    all_ok &= in.ok && fl.ok && in.rnr == 0;
    std::printf("%8u %12zu B %12.0f %12.0f %10.2f %5" PRIu64 " %6" PRIu64
                " %12zu B %12.0f\n",
                n, in.receiver_bytes, in.msgs_per_s_fabric, in.msgs_per_s_wall,
                in.reads_per_msg, in.rnr, in.drops, fl.receiver_bytes,
                fl.msgs_per_s_fabric);
  }
  // The counters away from the receiver, on one node and split over four;
  // what reaches the receiver's NIC per message.
  const uint32_t many = quick ? 16 : 256;
  std::printf(
      "\n%u senders, counters away from the receiver:\n%24s %12s "
      "%12s %18s\n",
      many, "counters", "msg/s fabric", "reads/msg", "recv NIC pkts/msg");
  for (uint32_t groups : {0u, 1u, 4u}) {
    const Figures x = run(many, per_sender, slots, bytes, false, groups);
    all_ok &= x.ok && x.rnr == 0;
    const std::string where =
        groups == 0 ? "at the receiver"
                    : std::to_string(groups) + " group(s) elsewhere";
    std::printf("%24s %12.0f %12.2f %18.2f\n", where.c_str(),
                x.msgs_per_s_fabric, x.reads_per_msg, x.recv_packets_per_msg);
  }
  // The model: receiver memory against the number of senders. An RC QP per
  // peer holds its context and rings (a QPC of 256 B, a 16-entry receive
  // ring of 64 B WQEs: 1 KiB, a 16-entry CQ share of 32 B: 512 B) and
  // receive buffers (16 x slot for eager messages) per peer; the inbox
  // holds N slots and two counters whatever the number of senders.
  InboxLayout l;
  l.slots = slots;
  l.slot_bytes = bytes;
  const double per_peer_rc = 256 + 1024 + 512 + 16.0 * bytes;
  std::printf("\nmodel: receiver memory (bytes)\n%10s %16s %16s\n", "senders",
              "inbox", "RC per peer");
  for (double n = 1; n <= 1e6; n *= 10)
    std::printf("%10.0f %16" PRIu64 " %16.0f\n", n, inbox::area_bytes(l),
                n * per_peer_rc);
  return all_ok ? 0 : 1;
}
