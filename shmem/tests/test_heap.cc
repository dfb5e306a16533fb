// The symmetric heap's allocator and SHMEM_SYMMETRIC_SIZE's parser, with no
// NIC: offsets are deterministic, aligned, never overlap, free space
// coalesces, and bad requests are refused rather than served.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "heap.hpp"

using rhinet::shmem::HeapAllocator;
using rhinet::shmem::parse_size;

TEST(ShmemHeap, FirstBlocksAreLaidOutInOrderAndAligned) {
  HeapAllocator heap(1 << 20);
  auto a = heap.allocate(1);
  auto b = heap.allocate(100);
  auto c = heap.allocate(64);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 64u);
  EXPECT_EQ(*c, 64u + 128u);
  EXPECT_EQ(heap.bytes_in_use(), 64u + 128u + 64u);
}

TEST(ShmemHeap, SameCallsGiveSameOffsets) {
  // Two PEs' allocators fed the same sequence agree at every step.
  HeapAllocator pe0(8 << 20), pe1(8 << 20);
  std::mt19937 rng(7);
  std::vector<std::size_t> live;
  for (int i = 0; i < 2000; i++) {
    if (!live.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % live.size();
      EXPECT_TRUE(pe0.release(live[k]));
      EXPECT_TRUE(pe1.release(live[k]));
      live.erase(live.begin() + static_cast<long>(k));
      continue;
    }
    const std::size_t bytes = 1 + rng() % 20000;
    const std::size_t align = std::size_t{1} << (rng() % 13);
    auto x = pe0.allocate(bytes, align), y = pe1.allocate(bytes, align);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) continue;
    EXPECT_EQ(*x, *y);
    EXPECT_EQ(*x % std::max(align, HeapAllocator::kMinAlign), 0u);
    live.push_back(*x);
  }
}

TEST(ShmemHeap, BlocksNeverOverlap) {
  HeapAllocator heap(4 << 20);
  std::mt19937 rng(11);
  std::map<std::size_t, std::size_t> live;  // offset -> bytes asked
  for (int i = 0; i < 3000; i++) {
    if (!live.empty() && rng() % 2 == 0) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(heap.release(it->first));
      live.erase(it);
      continue;
    }
    const std::size_t bytes = 1 + rng() % 50000;
    auto at = heap.allocate(bytes, std::size_t{1} << (rng() % 10));
    if (!at) continue;
    ASSERT_LE(*at + bytes, heap.capacity());
    auto next = live.lower_bound(*at);
    if (next != live.end()) {
      EXPECT_LE(*at + bytes, next->first);
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      EXPECT_LE(prev->first + prev->second, *at);
    }
    live.emplace(*at, bytes);
  }
}

TEST(ShmemHeap, FreedSpaceCoalescesIntoOneBlock) {
  HeapAllocator heap(1 << 16);
  std::vector<std::size_t> blocks;
  while (auto at = heap.allocate(1000)) blocks.push_back(*at);
  EXPECT_FALSE(heap.allocate(1000));
  // Free in an order that leaves holes on both sides of most releases.
  for (std::size_t i = 0; i < blocks.size(); i += 2)
    EXPECT_TRUE(heap.release(blocks[i]));
  for (std::size_t i = 1; i < blocks.size(); i += 2)
    EXPECT_TRUE(heap.release(blocks[i]));
  EXPECT_EQ(heap.free_blocks(), 1u);
  EXPECT_EQ(heap.bytes_in_use(), 0u);
  auto whole = heap.allocate(heap.capacity());
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole, 0u);
}

TEST(ShmemHeap, RefusesWhatItCannotServe) {
  HeapAllocator heap(1 << 16);
  EXPECT_FALSE(heap.allocate(0));
  EXPECT_FALSE(heap.allocate((1 << 16) + 1));
  EXPECT_FALSE(heap.allocate(8, 3));  // not a power of two
  EXPECT_FALSE(heap.allocate(8, 0));
  auto a = heap.allocate(100);
  ASSERT_TRUE(a);
  EXPECT_FALSE(heap.release(*a + 64));  // not the start of a block
  EXPECT_TRUE(heap.release(*a));
  EXPECT_FALSE(heap.release(*a));  // twice
  EXPECT_FALSE(heap.resize_in_place(*a, 10));
  HeapAllocator none(10);  // below one block
  EXPECT_EQ(none.capacity(), 0u);
  EXPECT_FALSE(none.allocate(1));
}

TEST(ShmemHeap, LargeAlignmentLeavesTheGapFree) {
  HeapAllocator heap(1 << 20);
  auto small = heap.allocate(10);
  auto aligned = heap.allocate(10, 4096);
  ASSERT_TRUE(small && aligned);
  EXPECT_EQ(*aligned, 4096u);
  auto gap = heap.allocate(1000);  // fits between the two
  ASSERT_TRUE(gap);
  EXPECT_EQ(*gap, 64u);
}

TEST(ShmemHeap, ResizeInPlaceGrowsIntoFreeSpaceOnly) {
  HeapAllocator heap(1 << 16);
  auto a = heap.allocate(100);
  auto b = heap.allocate(100);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(heap.resize_in_place(*a, 1000));  // b is in the way
  EXPECT_TRUE(heap.resize_in_place(*b, 5000));
  EXPECT_EQ(heap.block_size(*b), 5056u);
  EXPECT_TRUE(heap.resize_in_place(*b, 64));  // shrink frees the rest
  EXPECT_EQ(heap.block_size(*b), 64u);
  auto c = heap.allocate(4000);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, *b + 64);
  EXPECT_FALSE(heap.resize_in_place(*b, 1 << 20));
}

TEST(ShmemHeapSize, ParsesSuffixes) {
  EXPECT_EQ(parse_size("4096").bytes, 4096u);
  EXPECT_EQ(parse_size("64M").bytes, 64u << 20);
  EXPECT_EQ(parse_size("64m").bytes, 64u << 20);
  EXPECT_EQ(parse_size("2G").bytes, std::size_t{2} << 30);
  EXPECT_EQ(parse_size("512KB").bytes, 512u << 10);
  EXPECT_TRUE(parse_size("1T").error.empty());
}

TEST(ShmemHeapSize, NamesWhatIsWrong) {
  for (const char* bad : {"", "M", "-5", "12Q", "3MiB", " 4", "0", "0M",
                          "99999999999999999999", "20000000000T"}) {
    auto p = parse_size(bad);
    EXPECT_FALSE(p.error.empty()) << bad;
    EXPECT_NE(p.error.find(std::string("'") + bad + "'"), std::string::npos)
        << p.error;
  }
  EXPECT_FALSE(parse_size(nullptr).error.empty());
}
