// SPDX-License-Identifier: BSD-2-Clause
// Many producer lanes on one SQ (Documentation/hardware/queues.md, "Many
// producers on one queue"), played store by store against two real
// engines: the scenario of test_mprod and of modes_bench. 32 lanes (a
// device's threads) SEND (lane, sequence) to a peer that checks each
// lane's messages arrive exactly once and in order. How the lanes post is
// the PostMode; a MemoryMap on the sending node counts every access by
// who made it (NIC, lanes, CPU agent) and where it landed (host RAM or
// device memory).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rhinet/sim/cluster.h"

namespace rhinet::sim {

enum class PostMode : uint8_t {
  // Lanes write WQEs and the record in device memory and ring the
  // doorbell themselves, with the device's requester ID.
  kDevice,
  // Lanes write WQEs and the record in device memory and a request word
  // into host RAM; a CPU agent polls that word and rings for them.
  kCpuDoorbell,
  // Lanes write descriptors into a host-RAM ring; a CPU proxy builds WQEs
  // in a host-RAM SQ, rings, polls the CQ and writes completions back
  // into device memory.
  kProxy,
  // No lanes: one CPU producer posts the same messages on an ordinary QP
  // in host RAM (the reference).
  kHostOnly,
};

const char* post_mode_name(PostMode m);

// Who made an access, and where it landed.
enum class Actor : uint8_t { kNic, kLane, kCpu, kOther, kCount };
// kHostTable: host RAM holding the translation tables of the regions
// marked (the NIC reads them on a TLB miss, not per message).
enum class Place : uint8_t { kHostRam, kHostTable, kDeviceMemory, kCount };

struct AccessCounts {
  static constexpr size_t kActors = size_t(Actor::kCount);
  static constexpr size_t kPlaces = size_t(Place::kCount);
  uint64_t n[kActors][kPlaces] = {};
  uint64_t& at(Actor a, Place p) { return n[size_t(a)][size_t(p)]; }
  uint64_t get(Actor a, Place p) const { return n[size_t(a)][size_t(p)]; }
  uint64_t to(Place p) const;  // by anyone
  uint64_t to_host() const {
    return to(Place::kHostRam) + to(Place::kHostTable);
  }
  uint64_t total() const { return to_host() + to(Place::kDeviceMemory); }
};

// Splits one node's memory into host RAM (every page, at first) and device
// memory (the pages of the buffers marked), and counts accesses. Software
// accesses are charged to `actor`; a step that only waited (a poll that
// found nothing) is charged to `idle` instead, so the figures per message
// do not depend on how often the scheduler let a poller spin.
class MemoryMap final : public MemoryObserver {
 public:
  explicit MemoryMap(SimMemory& mem);
  ~MemoryMap();
  MemoryMap(const MemoryMap&) = delete;
  MemoryMap& operator=(const MemoryMap&) = delete;

  void mark_device(const SimBuffer& buf);
  void mark_table(const SimMr& mr);
  Place place(uint64_t bus_addr) const;
  void access(uint64_t bus_addr, size_t len, bool nic) override;

  // Brackets one software step of `who`: its accesses go to `busy`, or to
  // `idle` when the step changed nothing.
  void begin(Actor who);
  // Returns the step's accesses.
  uint64_t end(bool moved);

  AccessCounts busy, idle;
  bool counting = false;

 private:
  SimMemory& mem_;
  std::vector<Place> page_place_;
  Actor actor_ = Actor::kOther;
  AccessCounts step_;  // the current step's
};

struct MpConfig {
  uint64_t seed = 1;
  uint32_t lanes = 32;
  uint32_t per_lane = 1000;
  double drop = 0;   // a doorbell is lost
  double dup = 0;    // a doorbell is written twice (the copy late)
  double delay = 0;  // a doorbell arrives late, after later ones
  uint8_t sq_log = 10;
  uint8_t type = RHN_QP_RC;   // or RHN_QP_ENDPOINT
  uint32_t max_burst = 4000;  // reservations between two quiet periods
  PostMode mode = PostMode::kDevice;
  // The lanes' doorbells in kDevice mode: the device's PCIe requester ID
  // (0 would be the host CPU's).
  uint16_t device_requester = 0;
  // Simulated time: a software access costs access_ns. Lanes run one
  // access at a time here; with parallel_lanes a lane's access costs
  // access_ns / lanes of shared time (the lanes run at once on a device),
  // without it access_ns (test_mprod's schedule). A CPU agent's step costs
  // access_ns per access it made.
  uint32_t access_ns = 10;
  bool parallel_lanes = false;
};

struct MpResult {
  uint64_t delivered = 0;
  uint64_t batch_rings = 0;      // doorbells for a slot = 31 mod 32
  uint64_t tail_rings = 0;       // doorbells of the last publisher
  uint64_t mid_burst_tails = 0;  // of them, while lanes kept going
  uint64_t doorbells_in = 0;     // doorbells the NIC received
  uint64_t dropped = 0;
  uint64_t recovered = 0;  // RHN_CNT_SQ_RECOVERED
  uint64_t bursts = 0;
  uint64_t virtual_ns = 0;  // simulated time of the run
  uint64_t wall_ns = 0;
  // The sending engine's SQ doorbell counters over the run.
  uint64_t host_doorbells = 0;   // RHN_CNT_HOST_DOORBELLS
  uint64_t peer_doorbells = 0;   // RHN_CNT_PEER_DOORBELLS
  uint64_t cpu_completions = 0;  // CQEs the CPU took (proxy, host_only)
  AccessCounts busy, idle;       // on the sending node, over the run
};

// The doorbell rule's cost in a run of the lanes: one per 32 slots, plus
// the tail of each burst (and the rare moment all lanes published at
// once). Empty when it holds, else what broke it.
std::string check_batching(const MpResult& r);

// One producer's state machine: each step is one access to shared memory.
struct Lane {
  enum Step : uint8_t {
    kReserve,
    kRoom,
    kWrite,
    kPublish,
    kTail,
    kRing,
    kIdle
  };
  Step step = kReserve;
  uint32_t id = 0;
  uint64_t seq = 0;  // next message of this lane
  uint64_t t = 0;    // ticket = slot
  uint32_t word = 0;
  bool ring_tail = false;
  std::vector<uint8_t> wqe;
};

class MpHarness {
 public:
  explicit MpHarness(const MpConfig& cfg);
  ~MpHarness();
  MpHarness(const MpHarness&) = delete;
  MpHarness& operator=(const MpHarness&) = delete;

  // Sets up the QPs and memory; false (see error()) if anything is refused.
  bool setup();
  // Runs every lane's messages through; false (see error()) on the first
  // broken rule: a message lost, repeated or out of its lane's order, a
  // completion in error, or no progress.
  bool run(MpResult& r);
  const std::string& error() const { return error_; }
  const MemoryMap& memory_map() const { return *map_; }

 private:
  static constexpr uint32_t kRecvLog = 10;
  static constexpr uint32_t kRecvs = 1u << kRecvLog;
  static constexpr uint32_t kMsg = 16;  // lane, magic, sequence
  static constexpr uint32_t kMagic = 0x4d50524f;
  static constexpr uint32_t kQkey = 0x1111;
  // The proxy's descriptor ring in host RAM: lane|magic, sequence, and the
  // ticket + 1 that says the slot is full (written last).
  static constexpr uint32_t kProxyLog = 10;
  static constexpr uint32_t kProxySlot = 24;
  // The CPU agents' batch: a proxy rings once per this many WQEs and asks
  // for a completion as often; the reference posts lists of this length.
  static constexpr uint32_t kCpuBatch = RHN_MP_DB_BATCH;

  bool lanes_post() const { return cfg_.mode != PostMode::kHostOnly; }
  bool has_agent() const { return cfg_.mode != PostMode::kDevice; }
  // The lanes write WQEs and the record of a multi-producer SQ.
  bool lanes_write_sq_record() const;
  bool run_lanes(MpResult& r);
  bool run_host_only(MpResult& r);
  void reserve(Lane& l);
  bool lane_step(Lane& l, MpResult& r);
  bool proxy_lane_step(Lane& l);
  // One step of the CPU agent, its time charged to the clock.
  bool agent_step(MpResult& r);
  void charge_lane_step();
  bool cpu_doorbell_step(MpResult& r);
  bool proxy_step(MpResult& r);
  bool host_only_step(MpResult& r);
  bool proxy_poll_cq(MpResult& r);
  SendWr message_wr(uint32_t lane, uint64_t seq) const;
  bool post_message(uint32_t lane, uint64_t seq, uint64_t index);
  void ring(MpResult& r, uint16_t requester);
  void doorbell(MpResult& r, uint16_t requester);
  void deliver_late(bool all, MpResult& r);
  bool drain(MpResult& r);
  bool fail(std::string msg);

  MpConfig cfg_;
  std::mt19937_64 rng_;
  std::unique_ptr<SimCluster> c_;
  std::unique_ptr<MemoryMap> map_;
  std::unique_ptr<SimContext> ctx_a_, ctx_b_;
  std::unique_ptr<SimCq> cq_a_, cq_b_;
  std::unique_ptr<SimQp> qa_, qb_;
  SimBuffer rbuf_;
  SimMr rmr_;
  uint32_t depth_ = 0;
  size_t rec_ = 0;
  uint64_t reserve_ = 0;  // the producers' reservation counter
  uint64_t burst_left_ = 0;
  std::vector<Lane> lanes_;
  std::vector<uint64_t> next_;
  struct Late {
    uint64_t due;
    uint16_t requester;
  };
  std::deque<Late> late_;  // late doorbells
  std::string error_;
  uint64_t lane_ps_ = 0;  // lanes' time not yet on the clock

  // kCpuDoorbell: the lanes' request word in host RAM (ticket + 1 of the
  // last lane that asked), and what the agent saw last.
  SimBuffer request_;
  uint64_t request_seen_ = 0;
  // kProxy: the descriptor ring (host RAM), the words the proxy writes
  // back (device memory: its ring consumer, messages completed).
  SimBuffer proxy_ring_;
  SimBuffer proxy_back_;
  uint64_t proxy_head_ = 0;      // next descriptor the proxy takes
  uint64_t proxy_unkicked_ = 0;  // WQEs written since its last doorbell
  uint64_t proxy_posted_ = 0;
  // kHostOnly: messages posted so far.
  uint64_t host_posted_ = 0;
};

}  // namespace rhinet::sim
