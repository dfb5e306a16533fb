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

// The post modes of modes_bench (issue 37), small: who touches what.
MpResult run_mode(PostMode mode, uint16_t requester = 0x0300) {
  MpConfig cfg = lanes(9, 100, 0, 0, 0);
  cfg.mode = mode;
  cfg.device_requester = requester;
  cfg.parallel_lanes = true;
  const MpResult r = run_lanes(cfg);
  EXPECT_EQ(r.delivered, uint64_t{cfg.lanes} * cfg.per_lane);
  EXPECT_EQ(r.recovered, 0u);
  return r;
}

TEST(PostModes, DeviceLanesTouchNoHostRam) {
  const MpResult r = run_mode(PostMode::kDevice);
  EXPECT_EQ(r.host_doorbells, 0u);
  EXPECT_EQ(r.peer_doorbells, r.doorbells_in);
  EXPECT_GT(r.peer_doorbells, 0u);
  EXPECT_EQ(check_batching(r), "");
  for (Actor a : {Actor::kNic, Actor::kLane, Actor::kCpu})
    EXPECT_EQ(r.busy.get(a, Place::kHostRam) + r.idle.get(a, Place::kHostRam),
              0u);
  // The WQEs were written and fetched in device memory: 8 stores each, at
  // least one DMA read each.
  EXPECT_GE(r.busy.get(Actor::kLane, Place::kDeviceMemory), 8 * r.delivered);
  EXPECT_GE(r.busy.get(Actor::kNic, Place::kDeviceMemory), r.delivered);
}

TEST(PostModes, RequesterPicksTheDoorbellCounter) {
  // The same lanes ringing with the host CPU's requester ID (0).
  const MpResult r = run_mode(PostMode::kDevice, 0);
  EXPECT_EQ(r.peer_doorbells, 0u);
  EXPECT_EQ(r.host_doorbells, r.doorbells_in);
}

TEST(PostModes, CpuRingsForTheLanes) {
  const MpResult r = run_mode(PostMode::kCpuDoorbell);
  EXPECT_EQ(r.peer_doorbells, 0u);
  EXPECT_EQ(r.host_doorbells, r.doorbells_in);
  // One request word in host RAM per doorbell the lanes asked for.
  EXPECT_EQ(r.busy.get(Actor::kLane, Place::kHostRam),
            r.batch_rings + r.tail_rings);
  EXPECT_EQ(r.busy.get(Actor::kNic, Place::kHostRam), 0u);
}

TEST(PostModes, ProxyTakesDescriptorsFromHostRam) {
  const MpResult r = run_mode(PostMode::kProxy);
  EXPECT_EQ(r.peer_doorbells, 0u);
  EXPECT_GT(r.host_doorbells, 0u);
  // Two words and the full flag per message, into host RAM; the queues
  // are host RAM too, so the NIC never reaches device memory.
  EXPECT_EQ(r.busy.get(Actor::kLane, Place::kHostRam), 3 * r.delivered);
  EXPECT_EQ(r.busy.get(Actor::kNic, Place::kDeviceMemory), 0u);
  EXPECT_GT(r.busy.get(Actor::kCpu, Place::kDeviceMemory), 0u);
  EXPECT_GT(r.cpu_completions, 0u);
}

}  // namespace
}  // namespace rhinet::test
