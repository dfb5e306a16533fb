// SPDX-License-Identifier: BSD-2-Clause
// The engine on a card (firmware/card/): CardRunner against a fake card,
// the rhn_card_* functions of rhinet/fw/card.h implemented here over a
// host-memory model, a register file, the FIFOs and an interrupt log.
// The soft-core image runs the same code on the real blocks (or their
// socket twin).
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "card/card_config.h"
#include "card/card_runner.h"
#include "card/rx_write_block.h"
#include "rhinet/hw.h"

namespace {

constexpr uint64_t kHostBase = 0x100000;

struct FakeCard {
  std::vector<uint8_t> host = std::vector<uint8_t>(1 << 20);
  std::map<uint32_t, uint64_t> regs;
  std::map<unsigned, uint64_t> counters;
  std::deque<rhn_card_doorbell> doorbells;
  bool doorbell_overflow = false;
  std::vector<std::vector<uint8_t>> tx, rx;
  std::vector<uint16_t> irqs;
  uint32_t mac_drops = 0;     // frames the MAC dropped, not yet taken
  uint32_t caps = 0;          // enum rhn_card_cap
  uint32_t rto_floor_us = 0;  // the hosting device's setting
  uint64_t now = 1'000'000;
  // The shell's firmware slot: what was staged where, and the commits.
  std::map<uint32_t, std::vector<uint8_t>> fw_staged;
  std::vector<std::pair<uint32_t, uint32_t>> fw_commits;
  uint32_t fw_verdict = RHN_FW_OK;
  // The receive placement block's calls (RHN_CARD_CAP_RX_WRITE).
  uint32_t rxw_flushes = 0, rxw_arms = 0, rxw_targets = 0;
  uint8_t* at(uint64_t bus, size_t len) {
    if (bus < kHostBase || bus + len > kHostBase + host.size()) return nullptr;
    return host.data() + (bus - kHostBase);
  }
  void reg_kick(uint32_t offset, uint64_t value, uint8_t size = 4) {
    doorbells.push_back({0, offset, value, size, RHN_CARD_DB_REG, 0, 0, 0, 0});
  }
};
FakeCard* g_card;

}  // namespace

extern "C" {
rhn_card_status rhn_card_dma_read(uint64_t bus, void* dst, size_t len) {
  const uint8_t* p = g_card->at(bus, len);
  if (!p) return RHN_CARD_BUS_ERROR;
  memcpy(dst, p, len);
  return RHN_CARD_OK;
}
rhn_card_status rhn_card_dma_write(uint64_t bus, const void* src, size_t len) {
  uint8_t* p = g_card->at(bus, len);
  if (!p) return RHN_CARD_BUS_ERROR;
  memcpy(p, src, len);
  return RHN_CARD_OK;
}
rhn_card_status rhn_card_dma_publish(uint64_t bus, const void* src, size_t len,
                                     size_t) {
  return rhn_card_dma_write(bus, src, len);
}
rhn_card_status rhn_card_dma_store_u64(uint64_t bus, uint64_t value) {
  if (bus & 7) return RHN_CARD_MISALIGNED;
  return rhn_card_dma_write(bus, &value, 8);
}
bool rhn_card_doorbell_pop(rhn_card_doorbell* out) {
  if (g_card->doorbells.empty()) return false;
  *out = g_card->doorbells.front();
  g_card->doorbells.pop_front();
  return true;
}
const void* rhn_card_doorbell_inline(const rhn_card_doorbell*) {
  return nullptr;
}
bool rhn_card_doorbell_overflowed(void) {
  const bool was = g_card->doorbell_overflow;
  g_card->doorbell_overflow = false;
  return was;
}
void rhn_card_reg_set(uint32_t offset, uint64_t value) {
  g_card->regs[offset] = value;
}
uint64_t rhn_card_reg_get(uint32_t offset) { return g_card->regs[offset]; }
void rhn_card_counter_add(unsigned int index, uint64_t n) {
  g_card->counters[index] += n;
}
void rhn_card_counters_clear(void) { g_card->counters.clear(); }
bool rhn_card_wire_tx(const void* frame, size_t len) {
  const auto* p = static_cast<const uint8_t*>(frame);
  g_card->tx.emplace_back(p, p + len);
  return true;
}
size_t rhn_card_wire_rx_peek(const uint8_t** frame) {
  if (g_card->rx.empty()) return 0;
  *frame = g_card->rx.front().data();
  return g_card->rx.front().size();
}
void rhn_card_wire_rx_pop(void) { g_card->rx.erase(g_card->rx.begin()); }
uint32_t rhn_card_wire_rx_dropped(void) {
  const uint32_t n = g_card->mac_drops;
  g_card->mac_drops = 0;
  return n;
}
bool rhn_card_link_up(void) { return true; }
void rhn_card_irq(uint16_t vector) { g_card->irqs.push_back(vector); }
uint64_t rhn_card_now_ns(void) { return g_card->now += 1000; }
void rhn_card_wait(uint64_t) {}
void rhn_card_start(uint32_t, uint32_t) {}
void rhn_card_cq_produced(uint32_t, uint32_t) {}
uint32_t rhn_card_caps() { return g_card->caps; }
uint32_t rhn_card_fw_stage(uint32_t offset, const void* data, uint32_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  g_card->fw_staged[offset].assign(p, p + len);
  return g_card->fw_verdict;
}
uint32_t rhn_card_fw_commit(uint32_t length, uint32_t flags) {
  g_card->fw_commits.emplace_back(length, flags);
  return g_card->fw_verdict;
}
// No region DMA block (no RHN_CARD_CAP_DMA_REGION): never called.
rhn_card_status rhn_card_dma_region(const rhn_card_region*, uint64_t, void*,
                                    size_t, bool) {
  return RHN_CARD_BUS_ERROR;
}

// No transmit assembler (no RHN_CARD_CAP_TX_ASSEMBLER): never called.
rhn_card_status rhn_card_tx_assemble(void*, uint32_t, const rhn_card_region*,
                                     uint64_t, uint32_t, uint32_t) {
  return RHN_CARD_BUS_ERROR;
}

// No trigger sums block (no RHN_CARD_CAP_TRIGGER_SUMS): never called.
uint64_t rhn_card_trigger_set(uint32_t, uint16_t, uint32_t) { return 0; }
uint64_t rhn_card_trigger_take(uint32_t) { return 0; }
uint32_t rhn_card_trigger_next(void) { return UINT32_MAX; }

// The receive placement block: its calls counted; it places nothing.
void rhn_card_rxw_set_target(uint32_t, const rhn_card_rxw_target*) {
  g_card->rxw_targets++;
}
bool rhn_card_rxw_arm(uint16_t, uint16_t, uint32_t) {
  g_card->rxw_arms++;
  return true;
}
void rhn_card_rxw_disarm(uint16_t) {}
void rhn_card_rxw_flush(void) { g_card->rxw_flushes++; }
bool rhn_card_wire_rx_placed(void) { return false; }

// The transmit block for plain WRITEs: no model behind it; it takes no
// kick, so the engine posts every WQE itself.
void rhn_card_txw_set_qp(uint32_t, const rhn_card_txw_qp*, rhn_card_txw_qp*) {}
void rhn_card_txw_grant(uint32_t, uint32_t, uint32_t) {}
void rhn_card_txw_set_channel(uint16_t, const rhn_card_txw_channel*) {}
bool rhn_card_txw_slot_push(uint32_t, void*) { return false; }
uint32_t rhn_card_txw_slot_push_n(const uint32_t*, void* const*, uint32_t) {
  return 0;
}
bool rhn_card_txw_slot_back(uint32_t*) { return false; }
uint32_t rhn_card_txw_record_pop(rhn_card_txw_record*, uint32_t) { return 0; }
void rhn_card_txw_flush(void) {}
bool rhn_card_txw_kick(uint32_t) { return false; }

void rhn_card_get_identity(rhn_card_identity* out) {
  out->node_id = 7;
  const uint8_t mac[6] = {0x02, 0x52, 0x4e, 0x00, 0x00, 0x07};
  memcpy(out->mac, mac, sizeof(mac));
  out->entropy = 12345;
}
void rhn_card_get_settings(rhn_card_settings* out) {
  *out = {g_card->rto_floor_us, 0};
}
}

namespace rhinet::fw::card {
namespace {

class Card : public ::testing::Test {
 protected:
  static constexpr uint64_t kSq = kHostBase, kCq = kHostBase + 0x1000,
                            kOut = kHostBase + 0x2000;
  void SetUp() override { g_card = &fake; }
  void TearDown() override { g_card = nullptr; }
  // The admin rings in the register file, and the kick that enables them.
  void enable_admin(uint32_t control) {
    fake.regs[RHN_REG_ADMIN_SQ_BASE] = kSq;
    fake.regs[RHN_REG_ADMIN_CQ_BASE] = kCq;
    fake.regs[RHN_REG_ADMIN_LOG_DEPTH] = 4;
    fake.reg_kick(RHN_REG_CONTROL, control);
  }
  // The first command of the ring, run; its completion.
  rhn_admin_cpl run_admin(CardRunner& runner, const rhn_admin_cmd& cmd) {
    memcpy(fake.at(kSq, sizeof(cmd)), &cmd, sizeof(cmd));
    fake.reg_kick(RHN_REG_ADMIN_SQ_TAIL, 1);
    for (int i = 0; i < 4; i++) runner.step();
    rhn_admin_cpl cpl;
    memcpy(&cpl, fake.at(kCq, sizeof(cpl)), sizeof(cpl));
    return cpl;
  }
  // QUERY_COUNTERS as the first command: the counters at kOut.
  rhn_admin_cpl query_counters(CardRunner& runner) {
    rhn_admin_cmd cmd{};
    cmd.hdr.opcode = RHN_ADMIN_QUERY_COUNTERS;
    cmd.hdr.cmd_id = 7;
    cmd.u.query.out_addr = kOut;
    cmd.u.query.out_len = RHN_CNT_COUNT * sizeof(uint64_t);
    return run_admin(runner, cmd);
  }
  FakeCard fake;
};

TEST_F(Card, TheCardConfigurationFitsItsMemoryAndTheRegistersAreMirrored) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  ASSERT_FALSE(runner.failed());
  ASSERT_FALSE(mem.exhausted());
  std::printf("card configuration: %zu of %zu bytes of card RAM placed\n",
              mem.used(), kCardTableBytes);
  EXPECT_EQ(fake.regs[RHN_REG_VERSION], uint64_t{RHN_VERSION});
  EXPECT_EQ(fake.regs[RHN_REG_NODE_ID], 7u);  // from the identity block
  EXPECT_EQ(fake.regs[RHN_REG_MAC_HI], 0x0700u);
  EXPECT_EQ(fake.regs[RHN_REG_DB_PAGES], card_config().db_pages);
  EXPECT_NE(fake.regs[RHN_REG_CAPS] & RHN_CAP_RC, 0u);
  EXPECT_EQ(fake.regs[RHN_REG_STATUS],
            uint64_t{RHN_STATUS_READY | RHN_STATUS_LINK_UP});
  EXPECT_FALSE(runner.step());  // nothing to do
}

TEST_F(Card, TooLittleMemoryLeavesTheDeviceFailedAndSaysSo) {
  std::vector<uint64_t> ram(1 << 14);  // 128 KiB
  CardMemory mem(ram.data(), ram.size() * 8);
  CardRunner runner(card_config(), mem);
  EXPECT_TRUE(mem.exhausted());
  EXPECT_TRUE(runner.failed());
  EXPECT_EQ(fake.regs[RHN_REG_STATUS], uint64_t{RHN_STATUS_FATAL});
  fake.reg_kick(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
  EXPECT_FALSE(runner.step());  // a failed engine takes nothing
  EXPECT_TRUE(fake.tx.empty());
}

// The admin ring's registers are stored by the host into the register
// file without a kick; the runner hands them to the engine with the kick
// that uses them. A QUERY_DEVICE then completes in host memory.
TEST_F(Card, AnAdminCommandRunsWithTheRingsTheHostStoredInTheRegisterFile) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  ASSERT_FALSE(runner.failed());
  enable_admin(RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE);
  EXPECT_TRUE(runner.step());
  EXPECT_NE(fake.regs[RHN_REG_STATUS] & RHN_STATUS_ADMIN_ON, 0u);

  rhn_admin_cmd cmd{};
  cmd.hdr.opcode = RHN_ADMIN_QUERY_DEVICE;
  cmd.hdr.cmd_id = 0x1234;
  cmd.u.query.out_addr = kOut;
  cmd.u.query.out_len = sizeof(rhn_device_attr);
  const rhn_admin_cpl cpl = run_admin(runner, cmd);
  EXPECT_EQ(cpl.owner & 1, 1);
  EXPECT_EQ(cpl.cmd_id, 0x1234);
  EXPECT_EQ(cpl.status, RHN_ADMIN_OK);
  rhn_device_attr attr;
  memcpy(&attr, fake.at(kOut, sizeof(attr)), sizeof(attr));
  EXPECT_EQ(attr.max_cqs, card_config().max_cqs);
  EXPECT_EQ(attr.max_pds, card_config().max_pds);
  ASSERT_FALSE(fake.irqs.empty());
  EXPECT_EQ(fake.irqs.back(), RHN_MSIX_ADMIN);
}

TEST_F(Card, TheLinkEntryOfTheDoorbellFifoReachesTheStatusRegister) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  fake.doorbells.push_back({0, 0, 0, 4, RHN_CARD_DB_LINK, 0, 0, 0, 0});
  runner.step();
  EXPECT_EQ(fake.regs[RHN_REG_STATUS] & RHN_STATUS_LINK_UP, 0u);
  fake.doorbells.push_back({0, 0, 1, 4, RHN_CARD_DB_LINK, 0, 0, 0, 0});
  runner.step();
  EXPECT_NE(fake.regs[RHN_REG_STATUS] & RHN_STATUS_LINK_UP, 0u);
}

// Frames from the receive FIFO reach the engine and are popped; garbage
// is counted, not fatal.
TEST_F(Card, FramesFromTheReceiveFifoAreTakenAndGarbageIsHarmless) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  fake.rx.push_back(std::vector<uint8_t>(60, 0xee));
  fake.rx.push_back(std::vector<uint8_t>(1, 0));
  EXPECT_TRUE(runner.step());
  EXPECT_TRUE(fake.rx.empty());
  EXPECT_TRUE(fake.tx.empty());
  EXPECT_FALSE(runner.failed());
}

// With a receive FIFO the core reads in place (RHN_CARD_CAP_RX_IN_PLACE)
// the engine takes the frames from it itself, with the same outcome:
// the FIFO emptied, garbage counted as without the block.
TEST_F(Card, FramesReadInPlaceCountAsFramesCopied) {
  uint64_t counted[2][RHN_CNT_COUNT];
  for (int in_place = 0; in_place < 2; in_place++) {
    fake.caps = in_place ? RHN_CARD_CAP_RX_IN_PLACE : 0;
    std::vector<uint64_t> ram(kCardTableBytes / 8);
    CardMemory mem(ram.data(), kCardTableBytes);
    CardRunner runner(card_config(), mem);
    enable_admin(RHN_CONTROL_ENABLE);
    runner.step();
    fake.rx.push_back(std::vector<uint8_t>(60, 0xee));
    fake.rx.push_back(std::vector<uint8_t>(RHN_MAX_FRAME + 65, 0));
    fake.rx.push_back(std::vector<uint8_t>(72, 0x11));
    EXPECT_TRUE(runner.step());
    EXPECT_TRUE(fake.rx.empty());
    EXPECT_TRUE(fake.tx.empty());
    EXPECT_EQ(query_counters(runner).status, RHN_ADMIN_OK);
    memcpy(counted[in_place], fake.at(kOut, sizeof counted[0]),
           sizeof counted[0]);
    memset(fake.at(kSq, 0x3000), 0, 0x3000);  // the next run's rings afresh
  }
  for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
    EXPECT_EQ(counted[0][i], counted[1][i]) << "counter " << i;
  EXPECT_EQ(counted[1][RHN_CNT_MALFORMED_PACKETS], 3u);
}

// The card runner hands the engine the receive placement block only
// with what it needs (the MAC's CRCs, region DMA, the FIFO read in
// place): the engine then clears the block's targets at power-on and at
// every admin command (any key or QP may change); without one of them
// the block is never called.
TEST_F(Card, ThePlacementBlockIsClearedAtEveryAdminCommandWhenUsed) {
  constexpr uint32_t kNeeded =
      RHN_CARD_CAP_MAC_CRC | RHN_CARD_CAP_DMA_REGION | RHN_CARD_CAP_RX_IN_PLACE;
  const uint32_t runs[] = {
      kNeeded | RHN_CARD_CAP_RX_WRITE, kNeeded,
      RHN_CARD_CAP_RX_WRITE | RHN_CARD_CAP_MAC_CRC | RHN_CARD_CAP_DMA_REGION};
  for (uint32_t caps : runs) {
    fake = FakeCard{};
    fake.caps = caps;
    std::vector<uint64_t> ram(kCardTableBytes / 8);
    CardMemory mem(ram.data(), kCardTableBytes);
    CardRunner runner(card_config(), mem);
    EXPECT_EQ(runner.config().rx_write, (caps & RHN_CARD_CAP_RX_WRITE) != 0);
    enable_admin(RHN_CONTROL_ENABLE);
    runner.step();
    const uint32_t at_start = fake.rxw_flushes;
    EXPECT_EQ(query_counters(runner).status, RHN_ADMIN_OK);
    if (caps == (kNeeded | RHN_CARD_CAP_RX_WRITE)) {
      EXPECT_GE(at_start, 1u);
      EXPECT_EQ(fake.rxw_flushes, at_start + 1) << "caps " << caps;
    } else {
      EXPECT_EQ(fake.rxw_flushes, 0u) << "caps " << caps;
    }
    EXPECT_EQ(fake.rxw_arms, 0u);  // no channel has spoken yet
  }
}

// The block's reference model (card/rx_write_block.h) on its own: it
// places only an armed channel's next serial for a QP with a target and
// the key and bounds the core wrote; anything else goes to the core
// whole and disarms the channel, which takes no arm while a frame of it
// waits; a flush or a target cleared makes what was placed before it
// not current (the core then checks those frames itself).
struct Wrote {
  uint64_t va = 0;
  size_t len = 0;
  int calls = 0;
};

std::vector<uint64_t> write_frame(uint16_t src, uint16_t dst, uint16_t session,
                                  uint32_t seq, uint32_t dst_qpn,
                                  uint32_t src_qpn, uint32_t rkey, uint64_t va,
                                  uint16_t payload) {
  std::vector<uint64_t> words((RHN_DATA_HDR_LEN + payload + 7) / 8);
  auto* f = reinterpret_cast<uint8_t*>(words.data());
  rhn_pkt_hdr h{};
  h.magic = RHN_WIRE_MAGIC;
  h.version = RHN_WIRE_VERSION;
  h.type = RHN_PKT_DATA;
  h.src_node = src;
  h.dst_node = dst;
  h.session = session;
  h.seq = seq;
  h.payload_len = payload;
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_WRITE;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.qp_type = RHN_QP_RC;
  op.dst_qpn = dst_qpn;
  op.src_qpn = src_qpn;
  op.rkey = rkey;
  op.remote_addr = va;
  op.msg_len = payload;
  memcpy(f, &h, sizeof h);
  memcpy(f + RHN_PKT_HDR_LEN, &op, sizeof op);
  return words;
}

TEST(RxWriteBlockModel, PlacesOnlyWhatTheCoreArmedAndForgetsOnFlush) {
  RxWriteBlock<4, 8> block;
  block.node_id = 1;
  Wrote wrote;
  auto place = [&wrote](const rhn_card_region&, uint64_t va, const uint8_t*,
                        size_t len) {
    wrote = {va, len, wrote.calls + 1};
    return true;
  };
  auto arrive = [&](const std::vector<uint64_t>& w) {
    const auto* f = reinterpret_cast<const uint8_t*>(w.data());
    rhn_pkt_hdr h;
    memcpy(&h, f, sizeof h);
    return block.arrive(f, RHN_DATA_HDR_LEN + h.payload_len, place);
  };
  rhn_card_rxw_target t{};
  t.region = {0x1000, 0x40000, 4, 1, 12, 0};
  t.iova = 0x40000;
  t.length = 0x4000;
  t.rkey = 0x77;
  t.peer_qpn = 5;
  t.peer_node = 2;
  auto frame = [](uint32_t seq, uint32_t rkey = 0x77, uint64_t va = 0x40010,
                  uint16_t len = 8) {
    return write_frame(2, 1, 9, seq, 3, 5, rkey, va, len);
  };
  // Nothing armed: handed over, and the channel waits for the core.
  auto v = arrive(frame(0));
  EXPECT_FALSE(v.placed);
  EXPECT_FALSE(block.arm(2, 9, 1));  // that frame still waits
  block.popped(v);
  EXPECT_TRUE(block.arm(2, 9, 1));
  // Armed, no target yet.
  v = arrive(frame(1));
  EXPECT_FALSE(v.placed);
  EXPECT_FALSE(block.armed(2));
  block.popped(v);
  block.target(3, &t);
  ASSERT_TRUE(block.arm(2, 9, 2));
  v = arrive(frame(2));
  EXPECT_TRUE(block.current(v));
  EXPECT_EQ(wrote.calls, 1);
  EXPECT_EQ(wrote.va, 0x40010u);
  EXPECT_EQ(wrote.len, 8u);
  block.popped(v);
  // A duplicate, a gap, a wrong key, out of bounds: none placed, each
  // disarms the channel.
  const std::vector<uint64_t> refused[] = {frame(2), frame(4), frame(3, 0x78),
                                           frame(3, 0x77, 0x43ffc)};
  for (const auto& w : refused) {
    ASSERT_TRUE(block.arm(2, 9, 3));
    v = arrive(w);
    EXPECT_FALSE(v.placed);
    EXPECT_FALSE(block.armed(2));
    block.popped(v);
  }
  EXPECT_EQ(wrote.calls, 1);
  // Placed before a flush or a cleared target: no longer current.
  ASSERT_TRUE(block.arm(2, 9, 3));
  v = arrive(frame(3));
  EXPECT_TRUE(block.current(v));
  block.flush();
  EXPECT_FALSE(block.current(v));
  block.popped(v);
  v = arrive(frame(4));  // the target went with the flush
  EXPECT_FALSE(v.placed);
  block.popped(v);
  block.target(3, &t);
  ASSERT_TRUE(block.arm(2, 9, 5));
  v = arrive(frame(5));
  EXPECT_TRUE(block.current(v));
  block.target(3, nullptr);
  EXPECT_FALSE(block.current(v));
  // Frames from a node beyond the table, and non-DATA frames, leave every
  // channel alone.
  EXPECT_FALSE(arrive(write_frame(9, 1, 9, 6, 3, 5, 0x77, 0x40010, 8)).placed);
}

// Frames the card's MAC dropped (its buffer full) are counted by the
// engine, so QUERY_COUNTERS (the driver's hw_counters) shows them.
TEST_F(Card, FramesTheMacDroppedShowInTheCountersTheHostQueries) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  enable_admin(RHN_CONTROL_ENABLE);
  runner.step();
  fake.mac_drops = 5;
  EXPECT_TRUE(runner.step());
  EXPECT_EQ(fake.mac_drops, 0u);

  const rhn_admin_cpl cpl = query_counters(runner);
  ASSERT_EQ(cpl.owner & 1, 1);
  EXPECT_EQ(cpl.status, RHN_ADMIN_OK);
  uint64_t drops;
  memcpy(&drops, fake.at(kOut + RHN_CNT_RX_DROPS * 8, 8), 8);
  EXPECT_EQ(drops, 5u);
}

// The hosting device's rto-floor-us replaces the build's floor; 0 keeps it.
// A firmware image goes to the shell, not the core: FW_DOWNLOAD's bytes
// reach rhn_card_fw_stage at their offsets, FW_COMMIT reaches
// rhn_card_fw_commit, and the shell's refusal comes back as the detail.
TEST_F(Card, FirmwareChunksAndTheCommitReachTheShellWithItsVerdictBack) {
  std::vector<uint64_t> ram(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  ASSERT_FALSE(runner.failed());
  enable_admin(RHN_CONTROL_ENABLE);
  runner.step();

  constexpr uint32_t kLen = 1000;  // more than one of the engine's pieces
  for (uint32_t i = 0; i < kLen; i++) fake.at(kOut, kLen)[i] = uint8_t(i * 7);
  rhn_admin_cmd cmd{};
  cmd.hdr.opcode = RHN_ADMIN_FW_DOWNLOAD;
  cmd.u.fw_download.addr = kOut;
  cmd.u.fw_download.offset = 4096;
  cmd.u.fw_download.length = kLen;
  EXPECT_EQ(run_admin(runner, cmd).status, RHN_ADMIN_OK);
  std::vector<uint8_t> got(kLen);
  for (const auto& [off, bytes] : fake.fw_staged) {
    ASSERT_GE(off, 4096u);
    ASSERT_LE(off - 4096 + bytes.size(), kLen);
    memcpy(got.data() + (off - 4096), bytes.data(), bytes.size());
  }
  EXPECT_EQ(0, memcmp(got.data(), fake.at(kOut, kLen), kLen));

  // The ring's next slot: a commit the shell refuses.
  fake.fw_verdict = RHN_FW_BAD_IMAGE;
  rhn_admin_cmd commit{};
  commit.hdr.opcode = RHN_ADMIN_FW_COMMIT;
  commit.hdr.cmd_id = 2;
  commit.u.fw_commit.length = 5096;
  commit.u.fw_commit.flags = RHN_FW_COMMIT_ACTIVATE;
  memcpy(fake.at(kSq + sizeof(commit), sizeof(commit)), &commit,
         sizeof(commit));
  fake.reg_kick(RHN_REG_ADMIN_SQ_TAIL, 2);
  for (int i = 0; i < 4; i++) runner.step();
  rhn_admin_cpl cpl;
  memcpy(&cpl, fake.at(kCq + sizeof(cpl), sizeof(cpl)), sizeof(cpl));
  EXPECT_EQ(cpl.cmd_id, 2);
  EXPECT_EQ(cpl.status, RHN_ADMIN_BAD_PARAM);
  EXPECT_EQ(cpl.detail, uint32_t{RHN_FW_BAD_IMAGE});
  ASSERT_EQ(fake.fw_commits.size(), 1u);
  EXPECT_EQ(fake.fw_commits[0],
            std::make_pair(5096u, uint32_t{RHN_FW_COMMIT_ACTIVATE}));
}

// The engine uses the transmit block only on a card that reports it (and
// the blocks it needs, which the engine checks itself).
TEST_F(Card, TheTransmitBlockIsUsedWhenTheCardReportsIt) {
  std::vector<uint64_t> ram(kCardTableBytes / 8), ram2(kCardTableBytes / 8);
  fake.caps = RHN_CARD_CAP_MAC_CRC | RHN_CARD_CAP_DMA_REGION |
              RHN_CARD_CAP_TX_ASSEMBLER;
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner without(card_config(), mem);
  EXPECT_FALSE(without.config().tx_write);
  fake.caps |= RHN_CARD_CAP_TX_WRITE;
  CardMemory mem2(ram2.data(), kCardTableBytes);
  CardRunner with(card_config(), mem2);
  EXPECT_TRUE(with.config().tx_write);
  EXPECT_TRUE(with.config().mac_crc && with.config().dma_region &&
              with.config().tx_assembler);
}

TEST_F(Card, TheDevicesRetransmissionFloorReachesTheEngine) {
  std::vector<uint64_t> ram(kCardTableBytes / 8), ram2(kCardTableBytes / 8);
  CardMemory mem(ram.data(), kCardTableBytes);
  CardRunner runner(card_config(), mem);
  EXPECT_EQ(runner.config().retransmit_timeout_ns,
            card_config().retransmit_timeout_ns);
  fake.rto_floor_us = 10000;
  CardMemory mem2(ram2.data(), kCardTableBytes);
  CardRunner runner2(card_config(), mem2);
  EXPECT_EQ(runner2.config().retransmit_timeout_ns, 10'000'000u);
}

}  // namespace
}  // namespace rhinet::fw::card
