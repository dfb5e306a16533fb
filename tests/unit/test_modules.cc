// SPDX-License-Identifier: BSD-2-Clause
// Engine modules on their own, without an engine around them: the CRC32C
// of the wire, the packet codec and the TLB.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/counters.h"
#include "core/crc32c.h"
#include "translation/tlb.h"
#include "transport/packet.h"

namespace rhinet::fw {
namespace {

uint32_t bitwise_crc32c(const uint8_t* p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? 0x82f63b78u : 0);
  }
  return ~c;
}

TEST(Crc32c, KnownVector) { EXPECT_EQ(crc32c(0, "123456789", 9), 0xe3069283u); }

TEST(Crc32c, MatchesBitwiseReferenceAtEveryBlockBoundary) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(9010);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n :
       {0, 1, 7, 8, 255, 767, 768, 769, 1536, 4095, 4096, 4168, 8999})
    for (size_t off : {0, 1, 5}) {
      ASSERT_LE(off + n, buf.size());
      EXPECT_EQ(crc32c(0, buf.data() + off, n),
                bitwise_crc32c(buf.data() + off, n))
          << "n=" << n << " off=" << off;
    }
}

// Long buffers take the carry-less-multiply folding where the CPU has it:
// around its 256-byte turns and its 512-byte threshold, at odd offsets,
// and continued from any state.
TEST(Crc32c, FoldingMatchesBitwiseReferenceAroundItsBoundaries) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(20000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n : {511, 512, 513, 575, 576, 767, 768, 1023, 1024, 1025, 4096,
                   4168, 9000, 16383, 16384})
    for (size_t off : {0, 1, 3, 8, 63}) {
      EXPECT_EQ(crc32c(0, buf.data() + off, n),
                bitwise_crc32c(buf.data() + off, n))
          << "n=" << n << " off=" << off;
    }
  for (int i = 0; i < 300; i++) {
    const size_t n = rng() % 19000, off = rng() % 64, cut = n ? rng() % n : 0;
    const uint32_t want = bitwise_crc32c(buf.data() + off, n);
    ASSERT_EQ(crc32c(0, buf.data() + off, n), want) << "n=" << n;
    ASSERT_EQ(crc32c(crc32c(0, buf.data() + off, cut), buf.data() + off + cut,
                     n - cut),
              want)
        << "n=" << n << " cut=" << cut;
  }
}

TEST(Crc32c, ContinuesAcrossCalls) {
  std::vector<uint8_t> buf(5000, 0xa5);
  const uint32_t whole = crc32c(0, buf.data(), buf.size());
  EXPECT_EQ(crc32c(crc32c(0, buf.data(), 1234), buf.data() + 1234, 3766),
            whole);
}

TEST(PacketCodec, SealThenParseRoundTripsAndCatchesEveryBitFlip) {
  alignas(8) uint8_t frame[RHN_MAX_FRAME] = {};
  rhn_pkt_hdr h{};
  h.type = RHN_PKT_DATA;
  h.dst_node = 3;
  h.src_node = 9;
  h.seq = 77;
  h.payload_len = 40;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_WRITE;
  op.remote_addr = 0x1234;
  for (int i = 0; i < 40; i++) frame[RHN_DATA_HDR_LEN + i] = uint8_t(i);
  const size_t len =
      seal_packet(frame, h, &op, crc32c(0, frame + RHN_DATA_HDR_LEN, 40));
  ASSERT_EQ(len, RHN_DATA_HDR_LEN + 40u);
  Packet pkt;
  ASSERT_EQ(parse_packet({frame, len}, pkt), ParseStatus::kOk);
  EXPECT_EQ(pkt.hdr.seq, 77u);
  EXPECT_EQ(pkt.op.remote_addr, 0x1234u);
  EXPECT_EQ(pkt.payload.size(), 40u);
  for (size_t bit = 0; bit < len * 8; bit++) {
    frame[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_NE(parse_packet({frame, len}, pkt), ParseStatus::kOk) << bit;
    frame[bit / 8] ^= uint8_t(1u << (bit % 8));
  }
  EXPECT_EQ(parse_packet({frame, len - 1}, pkt), ParseStatus::kMalformed);
}

TEST(Tlb, HitsMissesEvictionAndInvalidation) {
  Counters c;
  alignas(64) uint8_t on_card[4096];
  CardMemory mem(on_card, sizeof on_card);
  Tlb tlb(16, c, mem);
  ASSERT_FALSE(mem.exhausted());
  uint64_t bus = 0;
  EXPECT_FALSE(tlb.lookup(1, 5, bus));
  tlb.insert(1, 5, 0x5000);
  ASSERT_TRUE(tlb.lookup(1, 5, bus));
  EXPECT_EQ(bus, 0x5000u);
  EXPECT_FALSE(tlb.lookup(2, 5, bus));  // another region, same page
  // 16 entries, 4 ways: filling far more pages evicts the early ones.
  for (uint64_t v = 100; v < 200; v++) tlb.insert(1, v, v << 12);
  EXPECT_FALSE(tlb.lookup(1, 5, bus));
  EXPECT_TRUE(tlb.lookup(1, 199, bus));
  tlb.invalidate_region(1);
  EXPECT_FALSE(tlb.lookup(1, 199, bus));
  EXPECT_EQ(c.get(RHN_CNT_TLB_HITS), 2u);
  EXPECT_EQ(c.get(RHN_CNT_TLB_MISSES), 4u);
  EXPECT_EQ(c.get(RHN_CNT_TLB_INVALIDATIONS), 16u);
}

}  // namespace
}  // namespace rhinet::fw
