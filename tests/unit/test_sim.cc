// SPDX-License-Identifier: BSD-2-Clause
// Self-tests of the simulated host and fabric (independent of engine
// behaviour): memory and address spaces, CRC32C, and switch routing and
// fault injection.
#include "fabric_frames.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

TEST(SimHost, MemoryHasBusErrorsOutsideTheArena) {
  SimClock clock;
  SimMemory mem(1u << 20);
  SimHostBus bus(mem, clock);
  uint8_t b[16] = {};
  EXPECT_FALSE(bus.dma_read(0, b, 8));
  EXPECT_FALSE(bus.dma_write(mem.bus_base() - 8, b, 8));
  EXPECT_FALSE(bus.dma_read(mem.bus_base() + mem.size() - 4, b, 8));
  EXPECT_TRUE(bus.dma_write(mem.bus_base() + 100, b, 16));
  EXPECT_EQ(bus.bus_errors(), 3u);
  bus.raise_msix(3);
  bus.raise_msix(3);
  EXPECT_EQ(bus.msix_count(3), 2u);
  EXPECT_EQ(bus.now_ns(), clock.now());
}

TEST(SimHost, BuffersAreScatteredAndTranslated) {
  SimMemory mem(8u << 20, SimMemory::kDefaultBusBase, 7);
  SimAddressSpace as(mem, 0x7f12'3456'7000ull);
  SimBuffer b = as.alloc(10 * kPageSize, 0x123);
  ASSERT_TRUE(b.valid());
  EXPECT_EQ(b.pages().size(), 11u);
  EXPECT_EQ(b.va() & kPageMask, 0x123u);
  EXPECT_FALSE(mem.contains(b.va(), 1))
      << "VAs must not look like bus addresses";
  int contiguous = 0;
  for (size_t i = 1; i < b.pages().size(); ++i)
    contiguous += b.pages()[i] == b.pages()[i - 1] + kPageSize;
  EXPECT_LT(contiguous, 5) << "pages should be scattered";
  b.fill_pattern(3);
  EXPECT_EQ(b.bytes(), SimBuffer::pattern(3, b.size()));
  // Byte 4096 - 0x123 is the first byte of the second page.
  EXPECT_EQ(b.bus(kPageSize - 0x123), b.pages()[1]);
  EXPECT_EQ(*mem.ptr(b.bus(5000)), SimBuffer::pattern(3, b.size())[5000]);
  const size_t before = mem.free_page_count();
  { SimBuffer gone = std::move(b); }
  EXPECT_EQ(mem.free_page_count(), before + 11);
  SimBuffer phys = as.alloc_physical(3 * kPageSize);
  ASSERT_TRUE(phys.valid());
  EXPECT_EQ(phys.pages()[2], phys.pages()[0] + 2 * kPageSize);
  EXPECT_EQ(phys.va(), phys.pages()[0]);
}

TEST(SimHost, Crc32cKnownAnswer) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(s, 9), 0xe3069283u);
  EXPECT_EQ(crc32c(s + 4, 5, crc32c(s, 4)), 0xe3069283u);
}

// The simulator's links around the real switch: the switch routes (and
// drops what it would drop), the links delay and fault what it sends out.
TEST(SimFabric, RoutesByDestinationAndAppliesFaults) {
  SimClock clock;
  SimSwitch sw(clock, 3, 42);
  auto raw = [](uint16_t src, uint16_t dst) {
    return fabric_frame(src, dst, RHN_PKT_RAW, 32, 0x5a);
  };
  std::vector<std::pair<size_t, std::vector<uint8_t>>> seen;
  sw.tap = [&](size_t src, std::span<const uint8_t> f) {
    seen.emplace_back(src, std::vector<uint8_t>(f.begin(), f.end()));
  };
  sw.wire(0).transmit(raw(0, 2));
  sw.wire(1).transmit(raw(1, RHN_NODE_BROADCAST));
  sw.wire(1).transmit(raw(1, 9));                   // no such node
  sw.wire(1).transmit(std::vector<uint8_t>(5, 0));  // too short
  sw.wire(1).transmit(raw(2, 0));                   // node 2 is not on port 1
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(sw.counters().transmitted, 5u);
  EXPECT_EQ(sw.counters().unroutable, 1u);
  EXPECT_EQ(sw.counters().malformed, 1u);
  EXPECT_EQ(sw.counters().spoofed, 1u);
  EXPECT_EQ(sw.queued(), 3u);  // one unicast + broadcast to two ports
  EXPECT_EQ(sw.next_delivery_ns(), clock.now() + 500);

  const std::vector<uint8_t> frame = raw(0, 2);
  FaultConfig lossy;
  lossy.loss = 1.0;
  sw.set_port_faults(2, lossy);
  sw.wire(0).transmit(frame);
  EXPECT_EQ(sw.counters().lost, 1u);
  sw.clear_faults();
  sw.set_link(2, false);
  sw.wire(0).transmit(frame);
  EXPECT_EQ(sw.counters().link_drops, 1u);
  sw.set_link(2, true);
  FaultConfig dup;
  dup.duplicate = 1.0;
  dup.corrupt = 1.0;
  sw.set_faults(dup);
  sw.wire(0).transmit(frame);
  EXPECT_EQ(sw.counters().duplicated, 1u);
  EXPECT_EQ(sw.counters().corrupted, 2u);
  EXPECT_EQ(sw.queued(), 5u);
  // No engines attached: each copy is counted when it is due.
  clock.advance(1'000'000);
  sw.deliver();
  EXPECT_EQ(sw.queued(), 0u);
  EXPECT_EQ(sw.counters().unroutable, 6u);
  EXPECT_EQ(sw.counters().delivered, 0u);
}

}  // namespace
}  // namespace rhinet::test
