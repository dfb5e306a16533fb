// Host-side logic of contexts and waits, with no NIC: the bounded context
// table (exhaustion, reuse, stale handles told apart), the pool of context
// endpoints and SHMEM_CONTEXT_ENDPOINTS's parser, SHMEM_WAIT_SPIN_US's
// parser, and the one SHMEM_CMP_ comparison every wait and test uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "compare.hpp"
#include "ctx_table.hpp"
#include "endpoint_pool.hpp"
#include "wait_spin.hpp"

using rhinet::shmem::compare;
using rhinet::shmem::ContextTable;
using rhinet::shmem::EndpointPool;
using rhinet::shmem::parse_endpoint_count;
using rhinet::shmem::parse_wait_spin;

TEST(ShmemContextTable, HandlesAreDistinctAndNeverTheReservedValues) {
  ContextTable t;
  std::set<std::uintptr_t> seen;
  for (std::size_t i = 0; i < ContextTable::kCapacity; i++) {
    auto h = t.create();
    ASSERT_TRUE(h);
    EXPECT_GE(*h, ContextTable::kFirstHandle);  // not INVALID nor DEFAULT
    EXPECT_TRUE(seen.insert(*h).second);
    EXPECT_EQ(t.find(*h).found, ContextTable::Found::live);
  }
  EXPECT_EQ(t.live(), ContextTable::kCapacity);
}

TEST(ShmemContextTable, FullTableRefusesUntilOneIsDestroyed) {
  ContextTable t;
  std::vector<std::uintptr_t> h;
  while (auto n = t.create()) h.push_back(*n);
  ASSERT_EQ(h.size(), ContextTable::kCapacity);
  EXPECT_FALSE(t.create());
  EXPECT_FALSE(t.create());
  ASSERT_TRUE(t.destroy(h[5]));
  auto again = t.create();
  ASSERT_TRUE(again);
  EXPECT_NE(*again, h[5]);  // same slot, new generation
  EXPECT_EQ(t.find(*again).slot, t.find(h[5]).slot);
  EXPECT_FALSE(t.create());
}

TEST(ShmemContextTable, DestroyedHandleStaysStaleAfterItsSlotIsReused) {
  ContextTable t;
  auto a = t.create();
  ASSERT_TRUE(a);
  EXPECT_TRUE(t.destroy(*a));
  EXPECT_EQ(t.find(*a).found, ContextTable::Found::destroyed);
  EXPECT_FALSE(t.destroy(*a));  // twice: refused
  auto b = t.create();
  ASSERT_TRUE(b);
  EXPECT_EQ(t.find(*a).found, ContextTable::Found::destroyed);
  EXPECT_EQ(t.find(*b).found, ContextTable::Found::live);
  EXPECT_EQ(t.live(), 1u);
}

TEST(ShmemContextTable, ValuesNeverHandedOutAreUnknown) {
  ContextTable t;
  auto a = t.create();
  ASSERT_TRUE(a);
  for (std::uintptr_t v :
       {std::uintptr_t{0}, std::uintptr_t{1}, std::uintptr_t{0xff},
        *a + (1u << 8), *a + 1, std::uintptr_t{0xdead0000}})
    EXPECT_EQ(t.find(v).found, ContextTable::Found::unknown) << v;
  EXPECT_FALSE(t.destroy(0));
  EXPECT_EQ(t.live(), 1u);
}

TEST(ShmemCompare, EveryComparisonBothWays) {
  EXPECT_EQ(compare(3, SHMEM_CMP_EQ, 3), true);
  EXPECT_EQ(compare(3, SHMEM_CMP_EQ, 4), false);
  EXPECT_EQ(compare(3, SHMEM_CMP_NE, 4), true);
  EXPECT_EQ(compare(3, SHMEM_CMP_NE, 3), false);
  EXPECT_EQ(compare(5, SHMEM_CMP_GT, 4), true);
  EXPECT_EQ(compare(4, SHMEM_CMP_GT, 4), false);
  EXPECT_EQ(compare(4, SHMEM_CMP_GE, 4), true);
  EXPECT_EQ(compare(3, SHMEM_CMP_GE, 4), false);
  EXPECT_EQ(compare(3, SHMEM_CMP_LT, 4), true);
  EXPECT_EQ(compare(4, SHMEM_CMP_LT, 4), false);
  EXPECT_EQ(compare(4, SHMEM_CMP_LE, 4), true);
  EXPECT_EQ(compare(5, SHMEM_CMP_LE, 4), false);
}

TEST(ShmemCompare, TypesKeepTheirSignedness) {
  // short and unsigned short (the wait types this library added) compare
  // as themselves, not as their int promotion's bits.
  const short neg = -1;
  const unsigned short big = 0xffff;
  EXPECT_EQ(compare<short>(neg, SHMEM_CMP_LT, 0), true);
  EXPECT_EQ(compare<unsigned short>(big, SHMEM_CMP_GT, 0), true);
  EXPECT_EQ(compare<std::uint64_t>(~0ull, SHMEM_CMP_GT, 1), true);
}

TEST(ShmemCompare, UnknownComparisonIsNoAnswer) {
  EXPECT_FALSE(compare(1, 6, 1).has_value());
  EXPECT_FALSE(compare(1, -1, 1).has_value());
}

TEST(ShmemEndpointPool, TakesEachEndpointOnceThenNone) {
  EndpointPool p(3);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.free(), 3u);
  std::set<std::size_t> got;
  for (int i = 0; i < 3; i++) {
    auto e = p.take();
    ASSERT_TRUE(e);
    EXPECT_LT(*e, 3u);
    EXPECT_TRUE(got.insert(*e).second);  // never one that is taken
  }
  EXPECT_EQ(p.free(), 0u);
  EXPECT_FALSE(p.take());  // exhausted: the context shares the default
  EXPECT_FALSE(p.take());
}

TEST(ShmemEndpointPool, GivenBackEndpointIsTakenAgain) {
  EndpointPool p(4);
  for (int i = 0; i < 4; i++) ASSERT_TRUE(p.take());
  ASSERT_TRUE(p.give(2));
  EXPECT_EQ(p.free(), 1u);
  auto again = p.take();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 2u);
  EXPECT_FALSE(p.take());
  // Many create/destroy cycles neither leak nor grow the pool.
  for (int cycle = 0; cycle < 1000; cycle++) {
    ASSERT_TRUE(p.give(static_cast<std::size_t>(cycle % 4)));
    auto e = p.take();
    ASSERT_TRUE(e);
    EXPECT_EQ(*e, static_cast<std::size_t>(cycle % 4));
  }
  EXPECT_EQ(p.free(), 0u);
}

TEST(ShmemEndpointPool, GiveRefusesFreeAndForeignIndices) {
  EndpointPool p(2);
  EXPECT_FALSE(p.give(0));  // free already
  auto e = p.take();
  ASSERT_TRUE(e);
  EXPECT_TRUE(p.give(*e));
  EXPECT_FALSE(p.give(*e));  // twice
  EXPECT_FALSE(p.give(2));   // past the pool
  EXPECT_FALSE(p.give(EndpointPool::kMaxEndpoints + 5));
  EXPECT_EQ(p.free(), 2u);
}

TEST(ShmemEndpointPool, EmptyPoolHasNothingToTake) {
  EndpointPool none(0);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_FALSE(none.take());
  EXPECT_FALSE(none.give(0));
  EndpointPool defaulted;
  EXPECT_FALSE(defaulted.take());
}

TEST(ShmemEndpointPool, CountParsesDecimalsUpToTheBound) {
  EXPECT_EQ(parse_endpoint_count("0").count, 0u);
  EXPECT_TRUE(parse_endpoint_count("0").error.empty());
  EXPECT_EQ(parse_endpoint_count("4").count, 4u);
  EXPECT_EQ(parse_endpoint_count("32").count, EndpointPool::kMaxEndpoints);
  EXPECT_TRUE(parse_endpoint_count("32").error.empty());
}

TEST(ShmemEndpointPool, CountRefusesWhatIsNoCount) {
  for (const char* bad :
       {"", "-1", "4x", " 4", "four", "33", "99999999999999999999999", "0x4"}) {
    const auto r = parse_endpoint_count(bad);
    EXPECT_FALSE(r.error.empty()) << bad;
    EXPECT_NE(r.error.find("0 to 32"), std::string::npos) << r.error;
  }
  EXPECT_NE(parse_endpoint_count("33").error.find("too many"),
            std::string::npos);
  EXPECT_NE(parse_endpoint_count("x").error.find("'x' is not a count"),
            std::string::npos);
  EXPECT_FALSE(parse_endpoint_count(nullptr).error.empty());
}

TEST(ShmemWaitSpin, ParsesMicrosecondsAndNever) {
  using std::chrono::microseconds;
  EXPECT_EQ(parse_wait_spin("0").spin, microseconds(0));
  EXPECT_TRUE(parse_wait_spin("0").error.empty());
  EXPECT_EQ(parse_wait_spin("250").spin, microseconds(250));
  EXPECT_EQ(parse_wait_spin("1000000").spin, rhinet::shmem::kMaxWaitSpin);
  EXPECT_TRUE(parse_wait_spin("1000000").error.empty());
  // never: a negative budget, which the waits take as "never sleep".
  EXPECT_LT(parse_wait_spin("never").spin.count(), 0);
  EXPECT_TRUE(parse_wait_spin("never").error.empty());
}

TEST(ShmemWaitSpin, RefusesWhatIsNoBudget) {
  for (const char* bad : {"", "-1", "100us", " 5", "Never", "1000001",
                          "99999999999999999999999", "0x10", "never "}) {
    const auto r = parse_wait_spin(bad);
    EXPECT_FALSE(r.error.empty()) << bad;
    EXPECT_NE(r.error.find("0 to 1000000 microseconds, or never"),
              std::string::npos)
        << r.error;
  }
  EXPECT_NE(parse_wait_spin("1000001").error.find("too long"),
            std::string::npos);
  EXPECT_NE(
      parse_wait_spin("x").error.find("'x' is not a number of microseconds"),
      std::string::npos);
  EXPECT_FALSE(parse_wait_spin(nullptr).error.empty());
}
