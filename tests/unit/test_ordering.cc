// SPDX-License-Identifier: BSD-2-Clause
// The order in which a target NIC applies the messages of one endpoint
// (or QP) to its host memory (queues.md, "Ordering"): a later WRITE or
// atomic is visible only after every earlier WRITE and atomic of the same
// source to the same target has landed, whatever the wire lost, reordered
// or duplicated in between and whatever the transfer mode. A watch on the
// target's memory looks at the data at the moment the NIC stores the
// flag, as a program polling the flag would.
#include <cstring>
#include <functional>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kAreaId = 9;
constexpr size_t kAreaBytes = 1u << 20;
constexpr size_t kFlagAt = kAreaBytes - 64;  // the flag word's offset

// Runs `check` at the NIC's first store into [flag, flag + 8) of `area`
// after which the word holds `want`: what a program polling the flag
// would see of the rest. Software's own accesses are not looked at.
class FlagWatch : public MemoryObserver {
 public:
  FlagWatch(SimMemory& mem, const SimBuffer& area, size_t flag, uint64_t want,
            std::function<void()> check)
      : mem_(mem),
        area_(area),
        bus_(area.bus(flag)),
        flag_(flag),
        want_(want),
        check_(std::move(check)) {
    mem_.observer = this;
  }
  ~FlagWatch() { mem_.observer = nullptr; }
  FlagWatch(const FlagWatch&) = delete;
  FlagWatch& operator=(const FlagWatch&) = delete;
  void access(uint64_t bus, size_t len, bool nic) override {
    if (!nic || fired_ || bus >= bus_ + 8 || bus + len <= bus_) return;
    if (area_.load64(flag_) != want_) return;
    fired_ = true;
    check_();
  }
  bool fired() const { return fired_; }

 private:
  SimMemory& mem_;
  const SimBuffer& area_;
  uint64_t bus_;
  size_t flag_;
  uint64_t want_;
  std::function<void()> check_;
  bool fired_ = false;
};

class Ordering : public ::testing::Test {
 protected:
  // Node 1's endpoint sends to node 0's; node 0's endpoint has area
  // kAreaId over a MiB that starts zeroed.
  void start(uint64_t lossy_seed = 0) {
    ClusterConfig cfg;
    cfg.nodes = 2;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    if (lossy_seed) make_lossy(*c, lossy_seed);
    for (uint16_t n = 0; n < 2; n++) {
      eps.push_back(make_datagram_node(
          *c, n, RHN_QP_ENDPOINT, 0,
          {.cq_log_depth = 10, .sq_log_depth = 8, .buf_bytes = kAreaBytes}));
      ASSERT_TRUE(eps.back().qp);
    }
    ASSERT_TRUE(
        eps[0]
            .ctx
            ->register_area(kAreaId, eps[0].buf.mr, eps[0].buf.va(), kAreaBytes)
            .ok());
  }
  SimBuffer& target() { return eps[0].buf.buf; }
  // A PUSH of `len` bytes at `at` of the sender's buffer to `offset`.
  SendWr push(uint64_t id, size_t at, size_t len, uint64_t offset) {
    SendWr wr = rdma_wr(id, RHN_OP_WRITE, {eps[1].buf.sge(at, len)}, offset,
                        kAreaId, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.dst_node = 0;
    wr.dst_qpn = eps[0].qp->qpn();
    return wr;
  }
  // The 8-byte flag `v` at `offset`, inline (as a small put is).
  SendWr flag_put(uint64_t id, uint64_t v, uint64_t offset = kFlagAt) {
    SendWr wr = push(id, 0, 0, offset);
    wr.sges.clear();
    wr.flags |= RHN_WQE_F_INLINE;
    wr.inline_data.resize(8);
    std::memcpy(wr.inline_data.data(), &v, 8);
    return wr;
  }
  // A non-fetching atomic `aop` with `operand` on the word at `offset`.
  SendWr amo(uint64_t id, uint32_t aop, uint64_t operand,
             uint64_t offset = kFlagAt) {
    SendWr wr = rdma_wr(id, RHN_OP_ATOMIC_EXT, {}, offset, kAreaId,
                        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
    wr.imm_data = aop | RHN_AOP_F_NO_FETCH;
    wr.compare_add = operand;
    wr.dst_node = 0;
    wr.dst_qpn = eps[0].qp->qpn();
    return wr;
  }
  // Posts every request back to back (none waits for another) and waits
  // for all their completions, each a success.
  void run_all(const std::vector<SendWr>& wrs) {
    for (const SendWr& wr : wrs) ASSERT_TRUE(eps[1].qp->post_send(wr));
    const auto done = c->wait_cqes(*eps[1].cq, wrs.size(), 2'000'000'000);
    ASSERT_EQ(done.size(), wrs.size()) << describe(done);
    for (const Completion& d : done) EXPECT_TRUE(d.ok()) << describe(d);
  }
  // Fills the sender's buffer [at, at + len) with the pattern of `seed`.
  std::vector<uint8_t> source(size_t at, size_t len, uint64_t seed) {
    std::vector<uint8_t> v = pattern(seed, len);
    eps[1].buf.buf.write(at, v.data(), len);
    return v;
  }
  std::unique_ptr<SimCluster> c;
  std::vector<DatagramNode> eps;
};

// The watch itself: a flag posted before the data lands without it, and
// the watch says so (a check that cannot see a misorder proves nothing).
TEST_F(Ordering, TheWatchSeesAFlagPostedBeforeTheData) {
  start();
  constexpr size_t kLen = 50000;
  const auto data = source(0, kLen, 5);
  bool data_there = true;
  FlagWatch w(c->node(0).memory, target(), kFlagAt, 1,
              [&] { data_there = target().bytes(0, kLen) == data; });
  run_all({flag_put(1, 1), push(2, 0, kLen, 0)});
  EXPECT_TRUE(w.fired());
  EXPECT_FALSE(data_there);
  EXPECT_EQ(target().bytes(0, kLen), data);
}

// A WRITE of many packets and then a small inline one (the flag): when
// the flag lands, every byte of the large one is in place, on a clean
// wire and on lossy ones (lost, reordered, duplicated frames resent in
// the middle of either message).
TEST_F(Ordering, LargeWriteThenSmallFlagOnCleanAndLossyWires) {
  for (uint64_t seed : {0ull, 11ull, 12ull, 13ull, 14ull}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    eps.clear();
    c.reset();
    start(seed);
    constexpr size_t kLen = 256 * 1024 + 100;
    const auto data = source(0, kLen, 40 + seed);
    bool data_there = false;
    FlagWatch w(c->node(0).memory, target(), kFlagAt, 1,
                [&] { data_there = target().bytes(0, kLen) == data; });
    CounterSnap rx(c->node(0));
    CounterSnap tx(c->node(1));
    run_all({push(1, 0, kLen, 0), flag_put(2, 1)});
    EXPECT_TRUE(w.fired());
    EXPECT_TRUE(data_there);
    EXPECT_EQ(target().bytes(0, kLen), data);
    // The lossy wires really resent: the order was kept through that.
    if (seed) {
      EXPECT_GT(tx.delta(RHN_CNT_RETRANSMITS) + rx.delta(RHN_CNT_DUPLICATES),
                0u);
    }
  }
}

// The flag's first transmission is lost on purpose after the data went
// out, and the data's last packet too: whatever comes back first, the
// flag is applied after the data.
TEST_F(Ordering, FlagLostAndResentAfterTheDataStillLandsLast) {
  start();
  constexpr size_t kLen = 20000;
  const auto data = source(0, kLen, 7);
  int dropped_data = 0, dropped_flag = 0;
  c->fabric().drop = [&](size_t, std::span<const uint8_t> f) {
    const auto o = op_frame(f);
    if (!o || o->op.opcode != RHN_WOP_WRITE) return false;
    if (o->op.msg_len == kLen && (o->op.flags & RHN_WOP_F_LAST) &&
        !dropped_data)
      return ++dropped_data == 1;
    if (o->op.msg_len == 8 && !dropped_flag) return ++dropped_flag == 1;
    return false;
  };
  bool data_there = false;
  FlagWatch w(c->node(0).memory, target(), kFlagAt, 0x77,
              [&] { data_there = target().bytes(0, kLen) == data; });
  run_all({push(1, 0, kLen, 0), flag_put(2, 0x77)});
  EXPECT_EQ(dropped_data, 1);
  EXPECT_EQ(dropped_flag, 1);
  EXPECT_TRUE(w.fired());
  EXPECT_TRUE(data_there);
}

// A WRITE and then an atomic on the word right after its last byte (the
// same cache line): the atomic reads host memory after the WRITE landed.
TEST_F(Ordering, AtomicAfterWriteOnTheNeighbouringWord) {
  start(21);
  constexpr size_t kLen = kFlagAt;  // up to the flag word
  const auto data = source(0, kLen, 8);
  bool data_there = false;
  FlagWatch w(c->node(0).memory, target(), kFlagAt, 5,
              [&] { data_there = target().bytes(0, kLen) == data; });
  run_all({push(1, 0, kLen, 0), amo(2, RHN_AOP_ADD, 5)});
  EXPECT_TRUE(w.fired());
  EXPECT_TRUE(data_there);
}

// An atomic and then a WRITE (the flag): the atomic's result is there
// when the flag lands.
TEST_F(Ordering, WriteAfterAtomic) {
  start(22);
  target().store64(128, 40);
  bool sum_there = false;
  FlagWatch w(c->node(0).memory, target(), kFlagAt, 9,
              [&] { sum_there = target().load64(128) == 42; });
  run_all({amo(1, RHN_AOP_ADD, 2, 128), flag_put(2, 9)});
  EXPECT_TRUE(w.fired());
  EXPECT_TRUE(sum_there);
}

// Strided and bitmap PUSHes and then a plain flag: the partial modes'
// blocks are all placed before the flag.
TEST_F(Ordering, StridedAndBitmapPushesThenAPlainFlag) {
  start(23);
  // 300 blocks of 24 bytes, 64 apart at the source, 40 apart at the
  // target from offset 0.
  source(0, 300 * 64, 9);
  SendWr strided = push(1, 0, 299 * 64 + 24, 0);
  strided.xfer_mode = RHN_XFER_STRIDE;
  strided.xfer.block = 24;
  strided.xfer.count = 300;
  strided.xfer.local_stride = 64;
  strided.xfer.remote_stride = 40;
  std::vector<uint8_t> want_strided(299 * 40 + 24, 0);
  const auto src = eps[1].buf.buf.bytes(0, 300 * 64);
  for (size_t i = 0; i < 300; i++)
    std::memcpy(want_strided.data() + i * 40, src.data() + i * 64, 24);
  // A bitmap PUSH of 64 KiB in 256-byte units, every third unit, from
  // offset 128 KiB of both sides.
  constexpr size_t kAt = 128 * 1024, kLen = 64 * 1024, kUnit = 256;
  const auto bytes = source(kAt, kLen, 10);
  std::vector<uint8_t> bits(kLen / kUnit / 8, 0);
  std::vector<uint8_t> want_bitmap(kLen, 0);
  for (size_t u = 0; u < kLen / kUnit; u += 3) {
    bits[u / 8] |= uint8_t(1u << (u % 8));
    std::memcpy(want_bitmap.data() + u * kUnit, bytes.data() + u * kUnit,
                kUnit);
  }
  constexpr size_t kBitsAt = 512 * 1024;
  eps[1].buf.buf.write(kBitsAt, bits.data(), bits.size());
  SendWr bitmap = push(2, kAt, kLen, kAt);
  bitmap.xfer_mode = RHN_XFER_BITMAP;
  bitmap.xfer.bitmap_addr = eps[1].buf.va(kBitsAt);
  bitmap.xfer.bitmap_lkey = eps[1].buf.key();
  bitmap.xfer.block = kUnit;
  bool both_there = false;
  FlagWatch w(c->node(0).memory, target(), kFlagAt, 3, [&] {
    both_there = target().bytes(0, want_strided.size()) == want_strided &&
                 target().bytes(kAt, kLen) == want_bitmap;
  });
  run_all({strided, bitmap, flag_put(3, 3)});
  EXPECT_TRUE(w.fired());
  EXPECT_TRUE(both_there);
  EXPECT_EQ(target().bytes(kAt, kLen), want_bitmap);
}

// Many rounds of the shape a shmem program has: a few puts of varied
// sizes, then the flag as an atomic add; the flag's value says how many
// rounds' data must be in place.
TEST_F(Ordering, RoundsOfPutsThenAnAtomicFlag) {
  start(24);
  constexpr size_t kSizes[] = {8, 100, 4096, 9000, 70000};
  constexpr size_t kSlot = 80 * 1024;
  constexpr int kRounds = 12;
  std::vector<SendWr> wrs;
  std::vector<std::vector<uint8_t>> want(kRounds);
  uint64_t id = 1;
  for (int r = 0; r < kRounds; r++) {
    // Each round puts its size's bytes into slot r % 8 of the target,
    // from the sender's slot r % 8 (rounds that share a slot carry the
    // same pattern, so an earlier round's bytes are the later's too).
    const size_t len = kSizes[r % 5];
    const size_t at = size_t(r % 8) * kSlot;
    want[r] = source(at, len, 100 + uint64_t(r % 8));
    wrs.push_back(push(id++, at, len, at));
  }
  int checked = 0;
  bool all_there = true;
  // The flag counts the rounds: checked when it reaches the last.
  FlagWatch w(c->node(0).memory, target(), kFlagAt, kRounds, [&] {
    for (int r = 0; r < kRounds; r++) {
      const size_t at = size_t(r % 8) * kSlot;
      all_there &= target().bytes(at, want[r].size()) == want[r];
      checked++;
    }
  });
  // The flag atomics go between the rounds' puts, one after each.
  std::vector<SendWr> mixed;
  for (size_t i = 0; i < wrs.size(); i++) {
    mixed.push_back(wrs[i]);
    mixed.push_back(amo(id++, RHN_AOP_ADD, 1));
  }
  run_all(mixed);
  EXPECT_TRUE(w.fired());
  EXPECT_EQ(checked, kRounds);
  EXPECT_TRUE(all_there);
}

// An RC QP on a card with every block (region DMA, MAC CRCs, transmit
// assembler, the transmit and receive blocks for plain WRITEs), fast
// paths on, over a lossy wire: plain WRITEs the receive block places
// between WRITEs by area and atomics the core executes, and a plain
// flag WRITE after each round. Every time the flag changes, the rounds
// it names are all in place: the block never places a later frame ahead
// of the core's writes of an earlier one.
TEST(OrderingRc, BlockPlacedAndCorePlacedWritesInPostingOrder) {
  for (uint64_t seed : {31ull, 32ull}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ClusterConfig cfg;
    cfg.nodes = 2;
    cfg.engine.fast_paths = true;
    cfg.engine.dma_region = true;
    cfg.engine.mac_crc = true;
    cfg.engine.tx_assembler = true;
    cfg.engine.rx_write = true;
    cfg.engine.tx_write = true;
    cfg.rx_in_place = true;
    SimCluster c(cfg);
    ASSERT_TRUE(c.all_up());
    RcPair p = make_rc_pair(c, 0, 1);
    ASSERT_TRUE(p.ok);
    constexpr int kRounds = 24;
    constexpr size_t kSlot = 4096, kFlag = kRounds * kSlot;
    Region src = make_region(*p.ctx_a, kRounds * kSlot, kAllAccess, 0, 0);
    Region dst = make_region(*p.ctx_b, kRounds * kSlot + 64, kAllAccess, 0, 0);
    ASSERT_TRUE(
        p.ctx_b->register_area(kAreaId, dst.mr, dst.va(), dst.buf.size()).ok());
    Region flags = make_region(*p.ctx_a, 8 * kRounds, kAllAccess, 0, 0);
    make_lossy(c, seed);
    // Round r's slot: 8 bytes by a plain WRITE, 3000 by area, a counter
    // the atomic adds r + 1 to at 3008; the flag then says r + 1.
    std::vector<std::vector<uint8_t>> want(kRounds);
    for (int r = 0; r < kRounds; r++) {
      want[r] = pattern(200 + uint64_t(r), 3008);
      src.buf.write(size_t(r) * kSlot, want[r].data(), want[r].size());
      const uint64_t v = uint64_t(r) + 1;
      flags.buf.write(8 * size_t(r), &v, 8);
    }
    int checks = 0, bad = 0;
    uint64_t last = 0;
    auto round_there = [&](int r) {
      const size_t at = size_t(r) * kSlot;
      return dst.buf.bytes(at, 3008) == want[r] &&
             dst.buf.load64(at + 3008) == uint64_t(r) + 1;
    };
    struct Watch : MemoryObserver {
      std::function<void(uint64_t, size_t)> f;
      void access(uint64_t bus, size_t len, bool nic) override {
        if (nic) f(bus, len);
      }
    } watch;
    const uint64_t flag_bus = dst.buf.bus(kFlag);
    watch.f = [&](uint64_t bus, size_t len) {
      if (bus >= flag_bus + 8 || bus + len <= flag_bus) return;
      const uint64_t now = dst.buf.load64(kFlag);
      if (now == last) return;
      last = now;
      for (int r = 0; r < int(now); r++) {
        checks++;
        bad += !round_there(r);
      }
    };
    c.node(1).memory.observer = &watch;
    for (int r = 0; r < kRounds; r++) {
      const size_t at = size_t(r) * kSlot;
      ASSERT_TRUE(
          p.qp_a->post_send(rdma_wr(10 * r + 1, RHN_OP_WRITE, {src.sge(at, 8)},
                                    dst.va(at), dst.key(), 0)));
      ASSERT_TRUE(p.qp_a->post_send(rdma_wr(10 * r + 2, RHN_OP_WRITE,
                                            {src.sge(at + 8, 3000)}, at + 8,
                                            kAreaId, RHN_WQE_F_AREA)));
      SendWr add = rdma_wr(10 * r + 3, RHN_OP_ATOMIC_EXT, {}, dst.va(at + 3008),
                           dst.key(), 0);
      add.imm_data = RHN_AOP_ADD | RHN_AOP_F_NO_FETCH;
      add.compare_add = uint64_t(r) + 1;
      ASSERT_TRUE(p.qp_a->post_send(add));
      ASSERT_TRUE(p.qp_a->post_send(
          rdma_wr(10 * r + 4, RHN_OP_WRITE, {flags.sge(8 * size_t(r), 8)},
                  dst.va(kFlag), dst.key(),
                  r == kRounds - 1 ? RHN_WQE_F_SIGNALED : 0)));
      // Now and then the SQ drains, so the receive block gets armed
      // between rounds as well as in the middle of them.
      if (r % 6 == 5 && r != kRounds - 1) {
        SendWr mark = rdma_wr(10 * r + 5, RHN_OP_WRITE, {flags.sge(0, 8)},
                              dst.va(kFlag + 8), dst.key());
        ASSERT_TRUE(p.qp_a->post_send(mark));
        const auto v = c.wait_cqes(*p.cq_a, 1, 2'000'000'000);
        ASSERT_EQ(v.size(), 1u) << describe(v);
        ASSERT_TRUE(v[0].ok()) << describe(v[0]);
      }
    }
    const auto done = c.wait_cqes(*p.cq_a, 1, 2'000'000'000);
    c.node(1).memory.observer = nullptr;
    ASSERT_EQ(done.size(), 1u);
    EXPECT_TRUE(done[0].ok()) << describe(done[0]);
    EXPECT_EQ(last, uint64_t(kRounds));
    EXPECT_GE(checks, kRounds);
    EXPECT_EQ(bad, 0);
    EXPECT_GT(c.node(1).rx_fifo->placed_frames, 0u);
  }
}

}  // namespace
}  // namespace rhinet::test
