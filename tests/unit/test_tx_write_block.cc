// SPDX-License-Identifier: BSD-2-Clause
// The transmit block for plain WRITEs (RHN_CARD_CAP_TX_WRITE), its
// reference model firmware/card/tx_write_block.h on its own: a host's SQ
// ring and record in a region, the core's grants and arms written by
// hand. It takes a run of plain WRITEs (inline, one SGE, empty) and
// hands the kick over at the first WQE it must not take, with the QP's
// indexes as they stand after the ones it took: a non-plain WQE in the
// middle of a run, a bad lkey, an SGE out of the key's bounds, a
// producer index beyond the ring, the in-flight or slot credit, the slot
// FIFO or the channel's window run out, a failed gather. Every WQE it
// takes is one the core's fast decode takes, with the same fields.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "card/tx_write_block.h"
#include "requester/wqe_decoder.h"
#include "rhinet/hw.h"

namespace rhinet::test {
namespace {

using Block = fw::card::TxWriteBlock<8, 16, 8, 8>;

constexpr uint64_t kIova = 0x10000;  // the one region's first VA
constexpr uint32_t kPages = 16;      // 64 KiB of host memory
constexpr uint64_t kRing = kIova;    // 16 slots of 64 bytes
constexpr uint64_t kRecord = kIova + 0x1000;
constexpr uint64_t kData = kIova + 0x2000;  // the lkey's bytes, 8 KiB
constexpr uint32_t kLkey = 0x1234'0001;
constexpr uint32_t kQpn = 5;
constexpr uint16_t kPeer = 3;

// Host memory behind one region (region DMA: a page outside it faults),
// the frames the MAC got and the gathers that fail on purpose.
struct Port {
  std::vector<uint8_t> host = std::vector<uint8_t>(kPages << 12);
  std::vector<std::vector<uint8_t>> frames;
  bool fail_gather = false;
  uint32_t reads = 0;

  bool read(const rhn_card_region& r, uint64_t va, void* buf, size_t len) {
    reads++;
    if (va < r.iova || va + len > r.iova + (uint64_t{r.num_pages} << 12))
      return false;
    memcpy(buf, host.data() + (va - kIova), len);
    return true;
  }
  bool assemble(uint8_t* frame, uint32_t hdr_len, const rhn_card_region& r,
                uint64_t va, uint32_t len) {
    if (fail_gather || !read(r, va, frame + hdr_len, len)) return false;
    send(frame, hdr_len + len);
    return true;
  }
  void send(const uint8_t* frame, size_t len) {
    frames.emplace_back(frame, frame + len);
  }
};

rhn_card_region region() {
  rhn_card_region r{};
  r.iova = kIova;
  r.num_pages = kPages;
  r.levels = 1;
  r.page_shift = 12;
  return r;
}

struct Fixture {
  Port port;
  Block block;
  uint8_t frames[8][RHN_DATA_HDR_LEN + RHN_WIRE_MTU] = {};
  uint32_t posted = 0;

  rhn_card_txw_qp qp() const {
    rhn_card_txw_qp q{};
    q.sq_ring = region();
    q.sq_ring_va = kRing;
    q.sq_record = region();
    q.sq_record_va = kRecord;
    q.key_region = region();
    q.key_iova = kData;
    q.key_length = 8192;
    q.lkey = kLkey;
    q.sq_room = 16;
    q.msn_next = 100;
    q.inflight_credit = 8;
    q.slot_credit = 8;
    q.hdr[0] = RHN_WIRE_MAGIC | uint32_t{RHN_WIRE_VERSION} << 16 |
               uint32_t{RHN_PKT_DATA} << 24;
    q.hdr[1] = kPeer | 1u << 16;
    q.hdr[2] = uint32_t{RHN_QP_RC} << 24;
    q.hdr[3] = 77;
    q.hdr[4] = kQpn;
    q.peer_node = kPeer;
    q.sq_log = 4;
    return q;
  }
  rhn_card_txw_channel channel() const {
    rhn_card_txw_channel c{};
    c.tx_next = 1000;
    c.window = 16;
    c.session = 7;
    c.ack_valid = 1;
    c.ack_seq = 55;
    c.ack_session = 9;
    return c;
  }
  // Armed as the core arms it, with `slots` send slots in the FIFO.
  void arm(const rhn_card_txw_qp& q, const rhn_card_txw_channel& c,
           uint32_t slots = 8) {
    block.set_qp(kQpn, &q, nullptr);
    block.set_channel(kPeer, &c);
    for (uint32_t i = 0; i < slots; i++)
      ASSERT_TRUE(block.slot_push(i, frames[i]));
  }
  // A WQE into the ring's next slot and the record's producer index on.
  rhn_send_wqe& post(uint8_t opcode = RHN_OP_WRITE, uint8_t flags = 0,
                     uint32_t len = 8, uint64_t addr = kData) {
    auto* w = reinterpret_cast<rhn_send_wqe*>(
        port.host.data() + (kRing - kIova) + (posted % 16) * RHN_SQ_SLOT_SIZE);
    memset(w, 0, RHN_SQ_SLOT_SIZE);
    w->opcode = opcode;
    w->flags = flags;
    w->remote_key = 0xabcd;
    w->remote_addr = 0x5000 + 8 * posted;
    w->imm_data = 0x42;
    w->wqe_index = static_cast<uint16_t>(posted);
    if (flags & RHN_WQE_F_INLINE) {
      w->num_sge = static_cast<uint16_t>(len);
      for (uint32_t i = 0; i < len; i++) w->d.inline_data[i] = uint8_t(i + 1);
    } else {
      w->num_sge = 1;
      w->d.sge.addr = addr;
      w->d.sge.length = len;
      w->d.sge.lkey = kLkey;
    }
    posted++;
    const rhn_queue_record rec{posted, 0};
    memcpy(port.host.data() + (kRecord - kIova), &rec, sizeof rec);
    return *w;
  }
  std::vector<rhn_card_txw_record> records() {
    std::vector<rhn_card_txw_record> v;
    rhn_card_txw_record r;
    while (block.record_pop(&r, 1)) v.push_back(r);
    return v;
  }
  // What the core reads back when it disarms.
  rhn_card_txw_qp disarm() {
    rhn_card_txw_qp left{};
    block.set_qp(kQpn, nullptr, &left);
    return left;
  }
};

template <class T>
T field(const std::vector<uint8_t>& f, size_t off) {
  T v;
  memcpy(&v, f.data() + off, sizeof v);
  return v;
}
constexpr size_t kOp = RHN_PKT_HDR_LEN;

TEST(TxWriteBlock, SendsARunOfPlainWritesAndRecordsEach) {
  Fixture x;
  x.arm(x.qp(), x.channel());
  for (int i = 0; i < 5; i++) x.port.host[0x2000 + i] = uint8_t(0xa0 + i);
  x.post(RHN_OP_WRITE, 0, 5);  // one SGE
  x.post(RHN_OP_WRITE, RHN_WQE_F_INLINE | RHN_WQE_F_SOLICITED, 12);
  x.post(RHN_OP_WRITE, RHN_WQE_F_SIGNALED, 0);  // empty
  ASSERT_TRUE(x.block.kick(kQpn, x.port));
  EXPECT_TRUE(x.block.armed(kQpn));
  ASSERT_EQ(x.port.frames.size(), 3u);
  const auto r = x.records();
  ASSERT_EQ(r.size(), 3u);
  for (uint32_t i = 0; i < 3; i++) {
    const auto& f = x.port.frames[i];
    EXPECT_EQ(field<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, seq)), 1000 + i);
    EXPECT_EQ(field<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, session)), 7);
    EXPECT_EQ(field<uint32_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_seq)), 55u);
    EXPECT_EQ(field<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, ack_session)), 9);
    EXPECT_EQ(field<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, src_node)), 1);
    EXPECT_EQ(field<uint16_t>(f, RHN_OFFSETOF(rhn_pkt_hdr, dst_node)), kPeer);
    EXPECT_EQ(f[kOp + RHN_OFFSETOF(rhn_op_hdr, opcode)], RHN_WOP_WRITE);
    EXPECT_EQ(f[kOp + RHN_OFFSETOF(rhn_op_hdr, qp_type)], RHN_QP_RC);
    EXPECT_EQ(field<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, msn)), 100 + i);
    EXPECT_EQ(field<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, rkey)),
              0xabcdu);
    EXPECT_EQ(field<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr)),
              0x5000u + 8 * i);
    EXPECT_EQ(f.size(), RHN_DATA_HDR_LEN + r[i].length);
    EXPECT_EQ(r[i].qpn, kQpn);
    EXPECT_EQ(r[i].wqe_slot, i);
    EXPECT_EQ(r[i].serial, 1000 + i);
    EXPECT_EQ(r[i].msn, 100 + i);
    EXPECT_EQ(r[i].send_slot, i);
    EXPECT_EQ(r[i].ack_valid, 1);
    EXPECT_EQ(r[i].ack_seq, 55u);
    EXPECT_EQ(r[i].failed, 0);
  }
  EXPECT_EQ(r[0].length, 5u);
  EXPECT_EQ(r[1].length, 12u);
  EXPECT_EQ(r[2].length, 0u);
  // The payloads: gathered through the key's region, copied from the WQE.
  EXPECT_EQ(x.port.frames[0][RHN_DATA_HDR_LEN + 4], 0xa4);
  EXPECT_EQ(x.port.frames[1][RHN_DATA_HDR_LEN + 11], 12);
  // Solicited and signalled as the WQE says; ACK_REQ for the signalled.
  const uint8_t op_flags1 =
      x.port.frames[1][kOp + RHN_OFFSETOF(rhn_op_hdr, flags)];
  EXPECT_EQ(op_flags1, RHN_WOP_F_FIRST | RHN_WOP_F_LAST | RHN_WOP_F_SOLICITED);
  auto pkt_flags = [&](size_t i) {
    return field<uint16_t>(x.port.frames[i], RHN_OFFSETOF(rhn_pkt_hdr, flags));
  };
  EXPECT_EQ(pkt_flags(0), RHN_PKT_F_ACK_VALID);
  EXPECT_EQ(pkt_flags(2), RHN_PKT_F_ACK_VALID | RHN_PKT_F_ACK_REQ);
  // The channel moved on; the QP's indexes and credits too.
  EXPECT_EQ(x.block.channel(kPeer)->tx_next, 1003u);
  EXPECT_EQ(x.block.channel(kPeer)->unacked, 3u);
  const rhn_card_txw_qp left = x.disarm();
  EXPECT_EQ(left.sq_fetch, 3u);
  EXPECT_EQ(left.sq_producer, 3u);  // what it read, for the core's copy
  EXPECT_EQ(left.msn_next, 103u);
  EXPECT_EQ(left.inflight_credit, 5u);
  EXPECT_EQ(left.slot_credit, 5u);
  EXPECT_FALSE(x.block.armed(kQpn));
  // A kick for a QP not armed is the core's, and the block reads nothing.
  const uint32_t reads = x.port.reads;
  x.post();
  EXPECT_FALSE(x.block.kick(kQpn, x.port));
  EXPECT_EQ(x.port.reads, reads);
}

// The half-window rule: ACK_REQ when the unacknowledged count reaches it.
TEST(TxWriteBlock, AsksForAnAckAtHalfTheWindow) {
  Fixture x;
  rhn_card_txw_channel c = x.channel();
  c.unacked = 6;  // window 16: the 8th unacknowledged packet asks
  c.ack_valid = 0;
  x.arm(x.qp(), c);
  x.post();
  x.post();
  ASSERT_TRUE(x.block.kick(kQpn, x.port));
  ASSERT_EQ(x.port.frames.size(), 2u);
  auto flags = [&](size_t i) {
    return field<uint16_t>(x.port.frames[i], RHN_OFFSETOF(rhn_pkt_hdr, flags));
  };
  EXPECT_EQ(flags(0), 0);
  EXPECT_EQ(flags(1), RHN_PKT_F_ACK_REQ);
  // No acknowledgement to carry: its fields are 0.
  EXPECT_EQ(
      field<uint32_t>(x.port.frames[0], RHN_OFFSETOF(rhn_pkt_hdr, ack_seq)),
      0u);
}

// What the block must not take: it takes the WQEs before it, stops at it
// (no frame, no record, sq_fetch on it) and hands the kick to the core.
struct Miss {
  const char* what;
  void (*setup)(Fixture& x, rhn_card_txw_qp& q, rhn_card_txw_channel& c);
};

TEST(TxWriteBlock, HandsTheKickOverAtTheFirstWqeItDoesNotTake) {
  const Miss misses[] = {
      {"SEND", [](Fixture& x, auto&, auto&) { x.post(RHN_OP_SEND); }},
      {"WRITE_IMM", [](Fixture& x, auto&, auto&) { x.post(RHN_OP_WRITE_IMM); }},
      {"READ", [](Fixture& x, auto&, auto&) { x.post(RHN_OP_READ); }},
      {"fence",
       [](Fixture& x, auto&, auto&) { x.post(RHN_OP_WRITE, RHN_WQE_F_FENCE); }},
      {"two slots",
       [](Fixture& x, auto&, auto&) {
         x.post(RHN_OP_WRITE, RHN_WQE_F_INLINE, 16).ext_units = 1;
       }},
      {"two SGEs", [](Fixture& x, auto&, auto&) { x.post().num_sge = 2; }},
      {"inline too long",
       [](Fixture& x, auto&, auto&) {
         x.post(RHN_OP_WRITE, RHN_WQE_F_INLINE, 16).num_sge = 17;
       }},
      {"longer than an MTU",
       [](Fixture& x, auto&, auto&) { x.post(RHN_OP_WRITE, 0, 4097); }},
      {"bad lkey",
       [](Fixture& x, auto&, auto&) { x.post().d.sge.lkey ^= 0x100; }},
      {"SGE before the key",
       [](Fixture& x, auto&, auto&) { x.post(RHN_OP_WRITE, 0, 8, kData - 8); }},
      {"SGE past the key",
       [](Fixture& x, auto&, auto&) {
         x.post(RHN_OP_WRITE, 0, 16, kData + 8192 - 8);
       }},
      {"trigger slot", [](Fixture& x, auto&, auto&) { x.post().xflags = 1; }},
      {"in-flight credit",
       [](Fixture& x, rhn_card_txw_qp& q, auto&) {
         q.inflight_credit = 1;
         x.post();
       }},
      {"slot credit",
       [](Fixture& x, rhn_card_txw_qp& q, auto&) {
         q.slot_credit = 1;
         x.post();
       }},
      {"window",
       [](Fixture& x, auto&, rhn_card_txw_channel& c) {
         c.unacked = c.window - 1;
         x.post();
       }},
  };
  for (const Miss& m : misses) {
    Fixture x;
    rhn_card_txw_qp q = x.qp();
    rhn_card_txw_channel c = x.channel();
    x.post();  // a plain WRITE first: taken
    m.setup(x, q, c);
    x.post();  // and one after: left to the core
    x.arm(q, c);
    EXPECT_FALSE(x.block.kick(kQpn, x.port)) << m.what;
    EXPECT_FALSE(x.block.armed(kQpn)) << m.what;
    EXPECT_EQ(x.port.frames.size(), 1u) << m.what;
    const auto r = x.records();
    ASSERT_EQ(r.size(), 1u) << m.what;
    EXPECT_EQ(r[0].wqe_slot, 0u) << m.what;
    const rhn_card_txw_qp left = x.disarm();
    EXPECT_EQ(left.sq_fetch, 1u) << m.what;
    EXPECT_EQ(left.msn_next, 101u) << m.what;
    EXPECT_EQ(x.block.channel(kPeer)->tx_next, c.tx_next + 1) << m.what;
    // The slots it did not use are the core's to take back.
    uint32_t slot, back = 0;
    while (x.block.slot_back(&slot)) back++;
    EXPECT_EQ(back, 7u) << m.what;
  }
}

TEST(TxWriteBlock, RunsOutOfSlotsAndTakesNothingPastTheRing) {
  {  // an empty slot FIFO: nothing sent
    Fixture x;
    x.post();
    x.arm(x.qp(), x.channel(), 0);
    EXPECT_FALSE(x.block.kick(kQpn, x.port));
    EXPECT_TRUE(x.port.frames.empty());
    EXPECT_EQ(x.block.records_queued(), 0u);
  }
  {  // a producer index beyond the ring's room: the core's to refuse
    Fixture x;
    rhn_card_txw_qp q = x.qp();
    q.sq_room = 2;
    for (int i = 0; i < 3; i++) x.post();
    x.arm(q, x.channel());
    EXPECT_FALSE(x.block.kick(kQpn, x.port));
    EXPECT_TRUE(x.port.frames.empty());
    EXPECT_EQ(x.disarm().sq_fetch, 0u);
  }
  {  // the channel not armed (in SYN, link down): the QP's WQEs stay
    Fixture x;
    x.post();
    const rhn_card_txw_qp q = x.qp();
    x.block.set_qp(kQpn, &q, nullptr);
    x.block.slot_push(0, x.frames[0]);
    EXPECT_FALSE(x.block.kick(kQpn, x.port));
    EXPECT_TRUE(x.port.frames.empty());
  }
  {  // flush (an admin command): every QP's kick is the core's again
    Fixture x;
    x.post();
    x.arm(x.qp(), x.channel());
    x.block.flush();
    EXPECT_FALSE(x.block.armed(kQpn));
    EXPECT_FALSE(x.block.kick(kQpn, x.port));
    EXPECT_TRUE(x.port.frames.empty());
  }
}

// A gather that fails: a record marked failed, no frame, the serial not
// taken, and the block stops (the core fails the WQE and the QP).
TEST(TxWriteBlock, AFailedGatherIsARecordMarkedFailedAndNoFrame) {
  Fixture x;
  x.post();
  x.post();
  x.arm(x.qp(), x.channel());
  x.port.fail_gather = true;
  EXPECT_FALSE(x.block.kick(kQpn, x.port));
  EXPECT_TRUE(x.port.frames.empty());
  const auto r = x.records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].failed, 1);
  EXPECT_EQ(r[0].serial, 1000u);
  EXPECT_EQ(x.block.channel(kPeer)->tx_next, 1000u);
  EXPECT_EQ(x.block.channel(kPeer)->unacked, 0u);
  EXPECT_EQ(x.disarm().sq_fetch, 1u);
}

// Every WQE the block takes is one the core's fast decode takes as a
// plain one-packet WRITE, with the fields the block put on the wire: the
// block never sends what the core would have refused or sent otherwise.
TEST(TxWriteBlock, TakesOnlyWhatTheCoresFastDecodeTakesTheSameWay) {
  std::mt19937 rng(35);
  uint32_t taken = 0, refused = 0;
  for (int round = 0; round < 3000; round++) {
    Fixture x;
    rhn_send_wqe& w = x.post(RHN_OP_WRITE, 0, 8);
    auto* b = reinterpret_cast<uint8_t*>(&w);
    // A few bytes of the header and the first SGE changed at random.
    for (int k = rng() % 3; k >= 0; k--) {
      const size_t at = rng() % RHN_SQ_SLOT_SIZE;
      b[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << rng() % 8));
    }
    fw::RawWqe raw;
    memcpy(raw.bytes, b, RHN_SQ_SLOT_SIZE);
    x.arm(x.qp(), x.channel());
    if (!x.block.kick(kQpn, x.port)) {
      refused++;
      continue;
    }
    taken++;
    fw::DecodedWqe d;
    ASSERT_TRUE(fw::decode_plain_wqe(raw, 1, 1u << 31, d)) << round;
    EXPECT_EQ(d.opcode, RHN_OP_WRITE) << round;
    EXPECT_EQ(d.flags & ~(RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED |
                          RHN_WQE_F_INLINE),
              0)
        << round;
    EXPECT_LE(d.length, RHN_WIRE_MTU) << round;
    ASSERT_EQ(x.port.frames.size(), 1u);
    const auto& f = x.port.frames[0];
    EXPECT_EQ(f.size(), RHN_DATA_HDR_LEN + d.length) << round;
    EXPECT_EQ(field<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, rkey)),
              d.remote_key);
    EXPECT_EQ(field<uint64_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, remote_addr)),
              d.remote_addr);
    EXPECT_EQ(field<uint32_t>(f, kOp + RHN_OFFSETOF(rhn_op_hdr, imm_data)),
              d.imm_data);
  }
  // Both kinds were seen.
  EXPECT_GT(taken, 100u);
  EXPECT_GT(refused, 100u);
}

}  // namespace
}  // namespace rhinet::test
