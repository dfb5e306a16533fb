// SPDX-License-Identifier: BSD-2-Clause
// The inbox protocol (seed 001's receive-buffer acquisition) without a NIC:
// the SendMachine that rhinet::InboxSender runs, over an in-memory
// transport that completes the operations of many senders in a random
// order (each operation takes effect when it completes, as on the wire),
// against the receiver's Queue. 256 senders into 16 slots: every message
// arrives once, in order per sender, with its bytes; the receiver's memory
// is the same for 1 and 256 senders; the counters wrap; a receiver that
// stops consuming stalls the senders without loss.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "rhinet/inbox_protocol.hpp"

namespace rhinet {
namespace {

using inbox::Queue;
using inbox::SendMachine;

// Shared by every sender: the receiver's area and the operations in flight.
struct Fabric {
  std::vector<std::byte> area;
  struct Pending {
    enum Kind { fetch_add, read, write } kind;
    std::uint64_t offset;
    std::uint64_t add;
    std::vector<std::byte> bytes;  // a write's, copied when posted
    std::shared_ptr<std::pair<bool, std::uint64_t>> done;
  };
  std::vector<Pending> pending;
  std::mt19937_64 rng;
  std::uint64_t ops = 0;

  std::uint64_t word(std::uint64_t off) const {
    std::uint64_t v;
    std::memcpy(&v, area.data() + off, 8);
    return v;
  }
  // Completes one operation in flight, chosen at random.
  bool complete_one() {
    if (pending.empty()) return false;
    const std::size_t i = rng() % pending.size();
    Pending p = std::move(pending[i]);
    pending[i] = std::move(pending.back());
    pending.pop_back();
    switch (p.kind) {
      case Pending::fetch_add: {
        const std::uint64_t old = word(p.offset), next = old + p.add;
        std::memcpy(area.data() + p.offset, &next, 8);
        *p.done = {true, old};
        break;
      }
      case Pending::read:
        *p.done = {true, word(p.offset)};
        break;
      case Pending::write:
        std::memcpy(area.data() + p.offset, p.bytes.data(), p.bytes.size());
        *p.done = {true, 0};
        break;
    }
    ops++;
    return true;
  }
};

struct FakeTransport {
  struct Op {
    std::shared_ptr<std::pair<bool, std::uint64_t>> state;
    bool test() const { return !state || state->first; }
    bool failed() const { return false; }
    std::uint64_t value() const { return state ? state->second : 0; }
  };
  Fabric* f;
  Op post(Fabric::Pending::Kind k, std::uint64_t off, std::uint64_t add,
          std::span<const std::byte> bytes = {}) {
    auto s = std::make_shared<std::pair<bool, std::uint64_t>>(false, 0);
    f->pending.push_back(Fabric::Pending{
        k, off, add, std::vector<std::byte>(bytes.begin(), bytes.end()), s});
    return Op{s};
  }
  Op fetch_add(std::uint64_t off, std::uint64_t add) {
    return post(Fabric::Pending::fetch_add, off, add);
  }
  Op read_word(std::uint64_t off) {
    return post(Fabric::Pending::read, off, 0);
  }
  Op write(std::uint64_t off, std::span<const std::byte> b) {
    return post(Fabric::Pending::write, off, 0, b);
  }
};

std::vector<std::byte> message(std::uint32_t sender, std::uint32_t j,
                               std::uint32_t max) {
  std::vector<std::byte> m(8 + (sender * 7 + j * 13) % (max - 7));
  std::memcpy(m.data(), &sender, 4);
  std::memcpy(m.data() + 4, &j, 4);
  for (std::size_t i = 8; i < m.size(); i++)
    m[i] = static_cast<std::byte>(sender * 31 + j * 3 + i);
  return m;
}

struct Sender {
  Sender(FakeTransport& t, const InboxLayout& l) : machine(t, l) {
    machine.set_recv_count(l.first_ticket);
  }
  SendMachine<FakeTransport> machine;
  std::vector<std::byte> msg;
  std::uint32_t sent = 0;
};

struct Result {
  std::uint64_t delivered = 0;
  std::uint64_t count_reads = 0;
  std::uint64_t ops = 0;
  std::size_t area_bytes = 0;
};

// `senders` each send `per_sender` messages; the receiver consumes with
// probability `consume_pct` per round (0 for a stretch: `stall_rounds`).
Result run(std::uint32_t senders, std::uint32_t per_sender,
           const InboxLayout& l, std::uint64_t seed, int consume_pct,
           std::uint64_t stall_rounds = 0) {
  Fabric f;
  f.rng.seed(seed);
  f.area.assign(inbox::area_bytes(l), std::byte{0});
  Queue q(f.area, l);
  q.init();
  FakeTransport t{&f};
  std::vector<std::unique_ptr<Sender>> s;
  for (std::uint32_t i = 0; i < senders; i++) {
    s.push_back(std::make_unique<Sender>(t, l));
    s[i]->msg = message(i, 0, l.slot_bytes);
    s[i]->machine.start(s[i]->msg);
  }
  std::vector<std::uint32_t> next(senders, 0);
  Result r;
  const std::uint64_t total = std::uint64_t{senders} * per_sender;
  std::uint64_t rounds = 0;
  while (r.delivered < total) {
    EXPECT_LT(++rounds, 50'000'000u) << "no progress";
    if (rounds >= 50'000'000u) break;
    // Operations complete in any order.
    for (int k = 0; k < 3; k++) f.complete_one();
    // Senders advance: a finished one starts its next message.
    for (std::uint32_t i = 0; i < senders; i++) {
      Sender& x = *s[i];
      if (x.sent == per_sender) continue;
      EXPECT_TRUE(x.machine.step());
      if (x.machine.done() && ++x.sent < per_sender) {
        x.msg = message(i, x.sent, l.slot_bytes);
        x.machine.start(x.msg);
      }
    }
    const bool stalled = rounds < stall_rounds;
    if (stalled || static_cast<int>(f.rng() % 100) >= consume_pct) continue;
    std::span<const std::byte> m;
    while (q.ready(&m)) {
      std::uint32_t from, j;
      std::memcpy(&from, m.data(), 4);
      std::memcpy(&j, m.data() + 4, 4);
      EXPECT_LT(from, senders);
      if (from >= senders) return r;
      EXPECT_EQ(j, next[from]) << "sender " << from << ": lost, twice or "
                               << "out of order";
      const auto want = message(from, j, l.slot_bytes);
      EXPECT_TRUE(std::equal(m.begin(), m.end(), want.begin(), want.end()))
          << "sender " << from << " message " << j;
      next[from] = j + 1;
      q.pop();
      r.delivered++;
    }
    if (stalled) {
      // Nobody writes a slot the receiver has not freed: at most N
      // messages wait, however many senders.
      EXPECT_LE(r.delivered, total);
    }
  }
  for (std::uint32_t i = 0; i < senders; i++) {
    EXPECT_EQ(next[i], per_sender) << "sender " << i;
    r.count_reads += s[i]->machine.count_reads();
  }
  EXPECT_EQ(f.word(inbox::kSendCount), l.first_ticket + total);
  EXPECT_EQ(f.word(inbox::kRecvCount), l.first_ticket + total);
  r.ops = f.ops;
  r.area_bytes = f.area.size();
  return r;
}

TEST(Inbox, TwoHundredFiftySixSendersIntoSixteenSlots) {
  InboxLayout l;
  l.slots = 16;
  l.slot_bytes = 64;
  l.first_ticket = ~std::uint64_t{0} - 1000;  // wraps on the way
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const Result r = run(256, 20, l, seed, 30);
    EXPECT_EQ(r.delivered, 256u * 20u) << "seed " << seed;
    // Senders wait by reading RecvCNT, not by being refused: the waiting
    // costs reads, and every message costs exactly three other operations
    // (the fetch-add, the bytes, the header).
    EXPECT_GT(r.count_reads, 0u);
    EXPECT_EQ(r.ops, r.count_reads + 3u * 256u * 20u) << "seed " << seed;
  }
}

TEST(Inbox, ReceiverMemoryDoesNotGrowWithSenders) {
  InboxLayout l;
  l.slots = 16;
  l.slot_bytes = 64;
  const Result one = run(1, 100, l, 9, 50);
  const Result many = run(256, 2, l, 9, 50);
  EXPECT_EQ(one.delivered, 100u);
  EXPECT_EQ(many.delivered, 512u);
  EXPECT_EQ(one.area_bytes, many.area_bytes);
  EXPECT_EQ(one.area_bytes, inbox::area_bytes(l));
}

TEST(Inbox, AStalledReceiverHoldsSendersBackWithoutLoss) {
  InboxLayout l;
  l.slots = 4;
  l.slot_bytes = 32;
  l.first_ticket = ~std::uint64_t{0} - 2;  // wraps at once
  const Result r = run(32, 10, l, 5, 100, /*stall_rounds=*/20'000);
  EXPECT_EQ(r.delivered, 320u);
}

TEST(Inbox, SlotsArePowersOfTwo) {
  InboxLayout l;
  l.slots = 6;  // 2^64 % 6 != 0: the slot sequence would jump at the wrap
  EXPECT_FALSE(inbox::valid(l));
  l.slots = 0;
  EXPECT_FALSE(inbox::valid(l));
  l.slots = 8;
  EXPECT_TRUE(inbox::valid(l));
  l.slot_bytes = 0;
  EXPECT_FALSE(inbox::valid(l));
}

TEST(Inbox, CountersCompareModuloTwoToTheSixtyFour) {
  InboxLayout l;
  l.slots = 8;
  const std::uint64_t top = ~std::uint64_t{0};
  EXPECT_TRUE(inbox::may_write(l, top, top));
  EXPECT_TRUE(inbox::may_write(l, top + 7, top));  // wrapped ticket 6
  EXPECT_FALSE(inbox::may_write(l, top + 8, top));
  EXPECT_FALSE(inbox::may_write(l, top - 1, top));  // consumed already
  EXPECT_EQ(inbox::header_offset(l, top + 1), inbox::kFirstSlot);
}

}  // namespace
}  // namespace rhinet
