// SPDX-License-Identifier: BSD-2-Clause
// Many producers on one SQ (Documentation/hardware/queues.md, "Many
// producers on one queue"): 32 producer lanes share one multi-producer RC
// QP and follow the contract's protocol store by store (reserve, room,
// the WQE's eight 8-byte words, publish in turn, the doorbell rule),
// interleaved by a seeded scheduler with the two engines. Every lane
// SENDs (lane, sequence); the peer checks each lane's messages arrive
// exactly once and in order. Doorbells are dropped, duplicated and
// delivered late; the NIC's record scan must recover the dropped ones,
// and must find nothing when none is dropped. The harness is shared with
// tests/bench/modes_bench (rhinet/sim/mprod.h).
#include <gtest/gtest.h>

#include <cstdio>

#include "rhinet/sim/mprod.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

MpResult run_lanes(const MpConfig& cfg) {
  MpResult r;
  MpHarness h(cfg);
  if (!h.setup()) {
    ADD_FAILURE() << h.error();
    return r;
  }
  EXPECT_TRUE(h.run(r)) << h.error();
  std::printf(
      "mprod: %lu delivered in %lu bursts, doorbells %lu batch + %lu tail "
      "(%lu mid-burst) = %.5f per WQE, %lu dropped, %lu received by the "
      "NIC, %lu slots recovered, %.1f ms virtual\n",
      (unsigned long)r.delivered, (unsigned long)r.bursts,
      (unsigned long)r.batch_rings, (unsigned long)r.tail_rings,
      (unsigned long)r.mid_burst_tails,
      double(r.batch_rings + r.tail_rings) /
          double(r.delivered ? r.delivered : 1),
      (unsigned long)r.dropped, (unsigned long)r.doorbells_in,
      (unsigned long)r.recovered, double(r.virtual_ns) / 1e6);
  return r;
}

// 32 lanes, `per_lane` messages each, doorbells lost, duplicated (the
// copy late) and late with these probabilities.
MpConfig lanes(uint64_t seed, uint32_t per_lane, double drop, double dup,
               double delay) {
  return MpConfig{.seed = seed,
                  .per_lane = per_lane,
                  .drop = drop,
                  .dup = dup,
                  .delay = delay};
}

// What every run must show: each message in (exactly once and in its
// lane's order: drain() checks each), the doorbells batched.
MpResult run_checked(const MpConfig& cfg) {
  const MpResult r = run_lanes(cfg);
  EXPECT_EQ(r.delivered, uint64_t{cfg.lanes} * cfg.per_lane);
  EXPECT_EQ(check_batching(r), "");
  return r;
}

TEST(MultiProducer, LanesWithoutLossNeedNoRecovery) {
  // Duplicated and late (reordered) doorbells, none lost: everything
  // arrives in order and the scan never takes work it was not owed.
  const MpResult r = run_checked(lanes(11, 3000, 0, 0.1, 0.1));
  EXPECT_EQ(r.recovered, 0u);
}

TEST(MultiProducer, MillionMessagesWithLostDoorbells) {
  // 10^6 messages from 32 lanes, 10 % of doorbells lost, others
  // duplicated or late: exactly once, in each lane's order; the lost
  // tails are found by the record scan.
  const MpResult r = run_checked(lanes(37, 31250, 0.1, 0.05, 0.05));
  EXPECT_EQ(r.delivered, 1'000'000u);
  EXPECT_GT(r.dropped, 0u);
  EXPECT_GT(r.recovered, 0u);
}

TEST(MultiProducer, LanesOnOneEndpoint) {
  // The same protocol on an endpoint's SQ (destination in every WQE).
  MpConfig cfg = lanes(3, 2000, 0.1, 0.05, 0.05);
  cfg.type = RHN_QP_ENDPOINT;
  run_checked(cfg);
}

TEST(MultiProducer, SmallRingWaitsForRoom) {
  // A 64-slot ring (the smallest the default batch allows): producers
  // wait for nic_consumer, never overwrite a WQE the NIC still needs.
  MpConfig cfg = lanes(5, 500, 0.1, 0, 0);
  cfg.sq_log = 6;
  run_checked(cfg);
}

}  // namespace
}  // namespace rhinet::test
