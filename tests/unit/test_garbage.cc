// SPDX-License-Identifier: BSD-2-Clause
// Garbage from the wire: random bytes, truncated headers, bad CRCs, lying
// lengths, and mutated real frames. The engine must never crash, must count
// what it drops, and must keep working for real traffic afterwards.
#include <cstring>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

// Header bytes implied by the packet type (wire.md).
size_t header_bytes(uint8_t type) {
  return type == RHN_PKT_DATA ? RHN_DATA_HDR_LEN : RHN_PKT_HDR_LEN;
}

// Builds a frame with valid CRCs from headers and payload. `op` is placed
// after the transport header whatever the type says (so a caller can build
// an inconsistent frame on purpose); payload_len counts only `payload`.
std::vector<uint8_t> seal(rhn_pkt_hdr h, const rhn_op_hdr* op,
                          const std::vector<uint8_t>& payload) {
  const size_t hlen = op ? RHN_DATA_HDR_LEN : RHN_PKT_HDR_LEN;
  h.payload_len = uint16_t(payload.size());
  h.payload_crc = payload.empty() ? 0 : crc32c(payload.data(), payload.size());
  h.hdr_crc = 0;
  std::vector<uint8_t> f(hlen + payload.size());
  std::memcpy(f.data(), &h, sizeof h);
  if (op) std::memcpy(f.data() + RHN_PKT_HDR_LEN, op, sizeof *op);
  if (!payload.empty())
    std::memcpy(f.data() + hlen, payload.data(), payload.size());
  const size_t covered = std::min(header_bytes(h.type), f.size());
  const uint32_t crc = crc32c(f.data(), covered);
  std::memcpy(f.data() + RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc), &crc, 4);
  return f;
}

// Recomputes both CRCs of a frame in place, trusting its length fields only
// as far as they fit.
void reseal(std::vector<uint8_t>& f) {
  if (f.size() < RHN_PKT_HDR_LEN) return;
  rhn_pkt_hdr h;
  std::memcpy(&h, f.data(), sizeof h);
  size_t hlen = header_bytes(h.type);
  if (hlen > f.size()) hlen = RHN_PKT_HDR_LEN;
  const size_t plen = std::min<size_t>(h.payload_len, f.size() - hlen);
  h.payload_crc = plen ? crc32c(f.data() + hlen, plen) : 0;
  h.hdr_crc = 0;
  std::memcpy(f.data(), &h, sizeof h);
  const uint32_t crc = crc32c(f.data(), hlen);
  std::memcpy(f.data() + RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc), &crc, 4);
}

rhn_pkt_hdr data_header(uint16_t dst, uint16_t src) {
  rhn_pkt_hdr h;
  std::memset(&h, 0, sizeof h);
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = RHN_PKT_DATA;
  h.dst_node = dst;
  h.src_node = src;
  h.seq = 1000;
  h.session = 7;
  h.flags = RHN_PKT_F_SYN;
  return h;
}

class Garbage : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterConfig cfg;
    cfg.nodes = 4;  // node 3 is the forger's identity; it sends nothing itself
    cfg.memory_bytes = 16u << 20;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
    p = make_rc_pair(*c, 0, 1);
    ASSERT_TRUE(p.ok);
    // Capture real frames as templates for mutation.
    c->fabric().tap = [this](size_t, std::span<const uint8_t> f) {
      if (captured.size() < 64) captured.emplace_back(f.begin(), f.end());
    };
    traffic_works(1);
    c->fabric().tap = nullptr;
  }

  // A SEND and a WRITE both succeed with correct data.
  void traffic_works(uint64_t seed) {
    Region src = make_region(*p.ctx_a, 6000, kAllAccess, 600 + seed);
    Region inbox = make_region(*p.ctx_b, 6000);
    Region dst = make_region(*p.ctx_b, 6000);
    ASSERT_TRUE(p.qp_b->post_recv(seed, {inbox.sge(0, 6000)}));
    ASSERT_TRUE(p.qp_a->post_send(send_wr(seed, {src.sge(0, 6000)})));
    ASSERT_TRUE(p.qp_a->post_send(rdma_wr(
        seed + 1, RHN_OP_WRITE, {src.sge(0, 6000)}, dst.va(), dst.key())));
    auto v = c->wait_cqes(*p.cq_a, 2);
    ASSERT_EQ(v.size(), 2u);
    for (const auto& x : v) EXPECT_TRUE(x.ok()) << describe(x);
    Completion r = wait_one(*c, *p.cq_b);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(inbox.buf.bytes(), src.buf.bytes());
    EXPECT_EQ(dst.buf.bytes(), src.buf.bytes());
  }

  // Injects frames into node 1 in batches that fit its receive FIFO.
  void inject(const std::vector<std::vector<uint8_t>>& frames) {
    size_t n = 0;
    for (const auto& f : frames) {
      c->node(1).engine->frame_arrived(f);
      if (++n % 64 == 0) c->run_for(100'000);
    }
    c->run_for(1'000'000);
  }

  uint64_t rejected(const CounterSnap& s) {
    return s.delta(RHN_CNT_MALFORMED_PACKETS) + s.delta(RHN_CNT_CRC_ERRORS) +
           s.delta(RHN_CNT_RX_DROPS);
  }

  std::unique_ptr<SimCluster> c;
  RcPair p;
  std::vector<std::vector<uint8_t>> captured;
};

TEST_F(Garbage, CapturedFramesFollowTheWireContract) {
  ASSERT_FALSE(captured.empty());
  for (const auto& f : captured) {
    ASSERT_GE(f.size(), size_t(RHN_PKT_HDR_LEN));
    rhn_pkt_hdr h;
    std::memcpy(&h, f.data(), sizeof h);
    EXPECT_EQ(h.magic, RHN_WIRE_MAGIC);
    EXPECT_EQ(h.version, RHN_WIRE_VERSION);
    const size_t hlen = header_bytes(h.type);
    EXPECT_EQ(hlen + h.payload_len, f.size());
    EXPECT_LE(h.payload_len, RHN_WIRE_MTU);
    EXPECT_TRUE(h.type == RHN_PKT_DATA || h.type == RHN_PKT_ACK ||
                h.type == RHN_PKT_NAK);
    std::vector<uint8_t> g = f;
    std::memset(g.data() + RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc), 0, 4);
    EXPECT_EQ(h.hdr_crc, crc32c(g.data(), hlen))
        << "header CRC is not CRC32C of the headers";
    if (h.payload_len > 0) {
      EXPECT_EQ(h.payload_crc, crc32c(f.data() + hlen, h.payload_len));
    } else {
      EXPECT_EQ(h.payload_crc, 0u);
    }
  }
}

TEST_F(Garbage, RandomBytesAreCountedAsMalformed) {
  std::mt19937_64 rng(99);
  std::vector<std::vector<uint8_t>> frames;
  frames.push_back({});                                            // empty
  frames.push_back(std::vector<uint8_t>(RHN_MAX_FRAME + 100, 0));  // oversized
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> f(rng() % 300);
    for (auto& b : f) b = uint8_t(rng());
    if (f.size() >= 2) f[0] = 0x00;  // never the magic
    frames.push_back(std::move(f));
  }
  CounterSnap s(c->node(1));
  inject(frames);
  EXPECT_EQ(rejected(s), frames.size());
  EXPECT_GE(s.delta(RHN_CNT_MALFORMED_PACKETS),
            frames.size() - s.delta(RHN_CNT_RX_DROPS));
  traffic_works(10);
}

TEST_F(Garbage, TruncatedHeaders) {
  std::vector<std::vector<uint8_t>> frames;
  const auto& real = captured.front();
  for (size_t n : {1, 4, 6, 16, 31})
    frames.emplace_back(real.begin(), real.begin() + ptrdiff_t(n));
  // A DATA frame cut inside its operation header, resealed so only the
  // length is wrong.
  rhn_op_hdr op;
  std::memset(&op, 0, sizeof op);
  auto good = seal(data_header(1, 3), &op, {1, 2, 3});
  for (size_t n : {33, 50, 71}) {
    std::vector<uint8_t> f(good.begin(), good.begin() + ptrdiff_t(n));
    frames.push_back(f);
  }
  CounterSnap s(c->node(1));
  inject(frames);
  EXPECT_EQ(s.delta(RHN_CNT_MALFORMED_PACKETS) + s.delta(RHN_CNT_CRC_ERRORS),
            frames.size());
  EXPECT_GE(s.delta(RHN_CNT_MALFORMED_PACKETS), 5u);
  traffic_works(20);
}

TEST_F(Garbage, BadCrcs) {
  rhn_op_hdr op;
  std::memset(&op, 0, sizeof op);
  op.opcode = RHN_WOP_WRITE;
  std::vector<std::vector<uint8_t>> frames;
  auto f1 = seal(data_header(1, 3), &op, std::vector<uint8_t>(100, 0xab));
  f1[RHN_OFFSETOF(rhn_pkt_hdr, hdr_crc)] ^= 1;  // header CRC wrong
  frames.push_back(f1);
  auto f2 = seal(data_header(1, 3), &op, std::vector<uint8_t>(100, 0xab));
  f2.back() ^= 0x80;  // payload no longer matches its CRC
  frames.push_back(f2);
  // Real frames with one bit flipped anywhere.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 40; ++i) {
    std::vector<uint8_t> f = captured[size_t(i) % captured.size()];
    const size_t bit = rng() % (f.size() * 8);
    f[bit / 8] ^= uint8_t(1u << (bit % 8));
    frames.push_back(std::move(f));
  }
  CounterSnap s(c->node(1));
  inject(frames);
  EXPECT_GE(s.delta(RHN_CNT_CRC_ERRORS), 2u);
  EXPECT_EQ(s.delta(RHN_CNT_MALFORMED_PACKETS) + s.delta(RHN_CNT_CRC_ERRORS),
            frames.size());
  traffic_works(30);
}

TEST_F(Garbage, LyingLengthsWithValidCrcs) {
  rhn_op_hdr op;
  std::memset(&op, 0, sizeof op);
  op.opcode = RHN_WOP_SEND;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  std::vector<std::vector<uint8_t>> frames;
  // payload_len larger than the frame.
  auto f = seal(data_header(1, 3), &op, std::vector<uint8_t>(64, 1));
  rhn_pkt_hdr h;
  std::memcpy(&h, f.data(), sizeof h);
  h.payload_len = 2000;
  std::memcpy(f.data(), &h, sizeof h);
  reseal(f);
  frames.push_back(f);
  // payload_len smaller than the frame (trailing junk).
  f = seal(data_header(1, 3), &op, std::vector<uint8_t>(64, 1));
  f.resize(f.size() + 10, 0xee);
  frames.push_back(f);
  // A DATA frame without its operation header.
  frames.push_back(seal(data_header(1, 3), nullptr, {}));
  // An ACK followed by 40 bytes its payload_len does not account for.
  rhn_pkt_hdr ack = data_header(1, 3);
  ack.type = RHN_PKT_ACK;
  ack.flags = 0;
  frames.push_back(seal(ack, &op, {}));
  // An ACK that claims a payload.
  frames.push_back(seal(ack, nullptr, std::vector<uint8_t>(8, 3)));
  // Payload beyond the MTU and a GRH.
  f = seal(data_header(1, 3), &op,
           std::vector<uint8_t>(RHN_WIRE_MTU + RHN_WIRE_GRH_LEN + 8, 2));
  frames.push_back(f);
  // Unknown packet type, wrong magic, wrong version.
  rhn_pkt_hdr odd = data_header(1, 3);
  odd.type = 0x77;
  frames.push_back(seal(odd, nullptr, {}));
  odd = data_header(1, 3);
  odd.magic = 0x1234;
  frames.push_back(seal(odd, &op, {}));
  odd = data_header(1, 3);
  odd.version = 9;
  frames.push_back(seal(odd, &op, {}));
  CounterSnap s(c->node(1));
  inject(frames);
  EXPECT_EQ(s.delta(RHN_CNT_MALFORMED_PACKETS), frames.size());
  EXPECT_EQ(s.delta(RHN_CNT_RX_PACKETS), 0u)
      << "a malformed frame was accepted";
  traffic_works(40);
}

TEST_F(Garbage, MutatedRealFramesFromAForgedNode) {
  // Real frames with random bytes changed, then resealed so they pass the CRC
  // checks and reach the deeper parsers; they claim to come from node 3.
  std::mt19937_64 rng(1234);
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> f = captured[rng() % captured.size()];
    const int edits = 1 + int(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const size_t pos =
          rng() % std::min<size_t>(f.size(), RHN_DATA_HDR_LEN + 16);
      if (pos == 2 || pos == 3) continue;  // keep version and type: go deep
      f[pos] = uint8_t(rng());
    }
    f[4] = 1;  // to node 1
    f[5] = 0;
    f[6] = 3;  // from node 3
    f[7] = 0;
    reseal(f);
    frames.push_back(std::move(f));
  }
  inject(frames);
  // Still alive, and the real channel between 0 and 1 still works.
  traffic_works(50);
  traffic_works(60);
}

}  // namespace
}  // namespace rhinet::test
