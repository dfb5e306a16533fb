// SPDX-License-Identifier: BSD-2-Clause
// One API, three ways to post (issue 37): what each costs on the bus, in
// the simulator with the real engines (a program, not a test). 32 device
// lanes SEND the same messages (lane, sequence) to a peer, which checks
// every one arrives exactly once and in its lane's order
// (rhinet/sim/mprod.h, the harness test_mprod uses):
//   - device: the lanes write WQEs, the record and the doorbell themselves
//     (queues in device memory, doorbells with the device's requester ID);
//   - cpu_doorbell: the lanes write WQEs and the record in device memory
//     and a request word in host RAM; a CPU agent polls that word and
//     rings the doorbell;
//   - proxy: the lanes write descriptors into a host-RAM ring; a CPU proxy
//     builds WQEs in a host-RAM SQ, rings once per 32 or when its ring
//     runs dry, polls the CQ and writes completions back into device
//     memory;
//   - host_only (the reference, same run): one CPU producer posts the same
//     messages on an ordinary QP in host RAM, lists of 32, one doorbell
//     each.
// Per message, on the sending node: bus transactions by who made them and
// where they landed (the NIC's DMA, the lanes', the CPU's; host RAM or
// device memory), polls that found nothing (apart), SQ doorbells by
// requester (the engine's HOST_DOORBELLS / PEER_DOORBELLS), and the
// message rate in simulated time (each software access 10 ns, an engine
// step that worked 50 ns) and in wall time (the simulator's own speed).
// Then device and cpu_doorbell again with 10 % of doorbells lost (and
// others duplicated or late): the NIC's record scan recovers them
// (SQ_RECOVERED).
//
//   modes_bench [--quick] [--per-lane N] [--seed S]
//
// --quick (modes_bench_quick, label unit) runs fewer messages and fails on
// anything wrong: a message lost, repeated or out of order, device mode
// touching host RAM or ringing as the host, more than one doorbell per 32
// WQEs in device mode, no recovery of lost doorbells. It never checks a
// speed figure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rhinet/sim/mprod.h"

using namespace rhinet::sim;

namespace {

// A PCIe requester ID that is not the host CPU's (0): the device's.
constexpr uint16_t kDeviceRequester = 0x0300;

struct Run {
  PostMode mode;
  MpResult r;
  bool ok = false;
};

int failures = 0;

// Translation-table reads a run may take: a TLB miss for each of the
// queues' pages (17 for the SQ and its record, 17 for the CQ) and a few
// more for conflicts in the 4-way TLB; they do not grow with the messages.
constexpr uint64_t kTableReadBound = 64;

void check(bool ok, const char* mode, const std::string& what) {
  if (ok) return;
  std::printf("FAIL %s: %s\n", mode, what.c_str());
  failures++;
}

Run run_mode(PostMode mode, uint32_t per_lane, uint64_t seed, double drop) {
  MpConfig cfg;
  cfg.seed = seed;
  cfg.per_lane = per_lane;
  cfg.mode = mode;
  cfg.device_requester = kDeviceRequester;
  cfg.drop = drop;
  cfg.parallel_lanes = true;
  // With losses, short bursts: many tail doorbells, whose loss only the
  // record scan repairs (a lost batch doorbell is covered by the next).
  if (drop > 0) cfg.max_burst = 64;
  // With losses, also duplicates and late doorbells (test_mprod's mix).
  cfg.dup = drop > 0 ? 0.05 : 0;
  cfg.delay = drop > 0 ? 0.05 : 0;
  Run run{mode, {}, false};
  MpHarness h(cfg);
  run.ok = h.setup() && h.run(run.r);
  const uint64_t total = uint64_t{cfg.lanes} * per_lane;
  check(run.ok, post_mode_name(mode), h.error());
  check(run.r.delivered == total, post_mode_name(mode),
        std::to_string(run.r.delivered) + " of " + std::to_string(total) +
            " messages delivered");
  return run;
}

double per(uint64_t n, const MpResult& r) {
  return r.delivered ? double(n) / double(r.delivered) : 0;
}

void print_transactions(const std::vector<Run>& runs) {
  std::printf(
      "\nbus transactions per message on the sending node (8-byte stores, "
      "reads and DMA bursts each count one):\n");
  std::printf("%-13s %9s %10s %10s %10s %10s %10s %10s %10s %10s %8s\n", "mode",
              "messages", "NIC<>host", "NIC<>dev", "dev>host", "dev>dev",
              "CPU>host", "CPU>dev", "host RAM", "idle", "tables");
  for (const Run& run : runs) {
    const MpResult& r = run.r;
    const AccessCounts& b = r.busy;
    std::printf(
        "%-13s %9lu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f "
        "%10.3f %8lu\n",
        post_mode_name(run.mode), (unsigned long)r.delivered,
        per(b.get(Actor::kNic, Place::kHostRam), r),
        per(b.get(Actor::kNic, Place::kDeviceMemory), r),
        per(b.get(Actor::kLane, Place::kHostRam), r),
        per(b.get(Actor::kLane, Place::kDeviceMemory), r),
        per(b.get(Actor::kCpu, Place::kHostRam), r),
        per(b.get(Actor::kCpu, Place::kDeviceMemory), r), per(b.to_host(), r),
        per(r.idle.total(), r),
        (unsigned long)b.get(Actor::kNic, Place::kHostTable));
  }
  std::printf(
      "  (NIC<>host/dev: the engine's DMA into host RAM / device memory; "
      "dev>host/dev: the lanes' loads and stores; CPU>host/dev: the CPU "
      "agent's; host RAM: by anyone, tables included; idle: polls that "
      "found nothing, by lanes or CPU, in no other column; tables: the "
      "NIC's reads of the queues' translation tables in host RAM on a TLB "
      "miss, in the whole run)\n");
}

void print_rates(const std::vector<Run>& runs, const Run& ref) {
  std::printf("\ndoorbells and rate:\n");
  std::printf("%-13s %10s %10s %10s %12s %10s %12s %10s\n", "mode", "DB host",
              "DB device", "DB / WQE", "sim Mmsg/s", "x ref", "wall Mmsg/s",
              "x ref");
  const double ref_sim =
      double(ref.r.delivered) * 1e3 / double(ref.r.virtual_ns);
  const double ref_wall = double(ref.r.delivered) * 1e3 / double(ref.r.wall_ns);
  for (const Run& run : runs) {
    const double sim = double(run.r.delivered) * 1e3 / double(run.r.virtual_ns);
    const double wall = double(run.r.delivered) * 1e3 / double(run.r.wall_ns);
    std::printf("%-13s %10.5f %10.5f %10.5f %12.3f %10.2f %12.3f %10.2f\n",
                post_mode_name(run.mode), per(run.r.host_doorbells, run.r),
                per(run.r.peer_doorbells, run.r),
                per(run.r.host_doorbells + run.r.peer_doorbells, run.r), sim,
                sim / ref_sim, wall, wall / ref_wall);
  }
  std::printf(
      "  (DB host / device: SQ doorbells per message the engine counted as "
      "the host CPU's / another requester's; rates per second of simulated "
      "time and of this process's wall time, against host_only of this "
      "run)\n");
}

// Issue 37's goals for device mode, and the agents' doorbells.
void check_modes(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    const char* name = post_mode_name(run.mode);
    const MpResult& r = run.r;
    const AccessCounts& b = r.busy;
    const AccessCounts& i = r.idle;
    switch (run.mode) {
      case PostMode::kDevice:
        check(r.host_doorbells == 0, name,
              std::to_string(r.host_doorbells) + " doorbells from the host");
        check(r.peer_doorbells == r.doorbells_in, name,
              "the engine counted " + std::to_string(r.peer_doorbells) +
                  " device doorbells, the lanes rang " +
                  std::to_string(r.doorbells_in));
        check(b.get(Actor::kNic, Place::kHostRam) == 0, name,
              "the NIC touched host RAM beyond the translation tables");
        check(b.get(Actor::kLane, Place::kHostRam) +
                      i.get(Actor::kLane, Place::kHostRam) ==
                  0,
              name, "the lanes touched host RAM");
        check(b.get(Actor::kCpu, Place::kHostRam) +
                      b.get(Actor::kCpu, Place::kDeviceMemory) +
                      i.get(Actor::kCpu, Place::kHostRam) +
                      i.get(Actor::kCpu, Place::kDeviceMemory) ==
                  0,
              name, "the CPU took part");
        // A TLB miss per page, not per message.
        check(b.get(Actor::kNic, Place::kHostTable) <= kTableReadBound, name,
              std::to_string(b.get(Actor::kNic, Place::kHostTable)) +
                  " translation-table reads");
        check(check_batching(r).empty(), name, check_batching(r));
        break;
      case PostMode::kCpuDoorbell:
        check(r.peer_doorbells == 0 && r.host_doorbells == r.doorbells_in, name,
              "doorbells not all the CPU's");
        check(b.get(Actor::kNic, Place::kHostRam) == 0, name,
              "the NIC read host RAM");
        check(b.get(Actor::kLane, Place::kHostRam) > 0, name,
              "no request word in host RAM");
        break;
      case PostMode::kProxy:
      case PostMode::kHostOnly:
        check(r.peer_doorbells == 0 && r.host_doorbells > 0, name,
              "doorbells not the CPU's");
        check(b.get(Actor::kNic, Place::kDeviceMemory) == 0, name,
              "the NIC touched device memory");
        check(run.mode == PostMode::kProxy ||
                  r.host_doorbells == (r.delivered + 31) / 32,
              name, "not one doorbell per list of 32");
        break;
    }
    check(r.dropped == 0 && r.recovered == 0, name,
          "recovered " + std::to_string(r.recovered) + " with nothing lost");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  uint32_t per_lane = 3125;  // 100 000 messages from 32 lanes
  uint64_t seed = 37;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      per_lane = 200;
    } else if (!std::strcmp(argv[i], "--per-lane") && i + 1 < argc) {
      per_lane = uint32_t(std::strtoul(argv[++i], nullptr, 0));
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr,
                   "usage: modes_bench [--quick] [--per-lane N] [--seed S]\n");
      return 2;
    }
  }
  if (per_lane == 0) {
    std::fprintf(stderr, "modes_bench: --per-lane must be at least 1\n");
    return 2;
  }
  std::printf("modes_bench: 32 lanes x %u messages of 16 bytes, seed %lu%s\n",
              per_lane, (unsigned long)seed, quick ? " (quick)" : "");
  std::vector<Run> runs;
  for (PostMode m : {PostMode::kDevice, PostMode::kCpuDoorbell,
                     PostMode::kProxy, PostMode::kHostOnly})
    runs.push_back(run_mode(m, per_lane, seed, 0));
  print_transactions(runs);
  print_rates(runs, runs.back());
  check_modes(runs);

  std::printf("\n10 %% of doorbells lost, 5 %% duplicated, 5 %% late:\n");
  std::printf("%-13s %9s %9s %9s %10s %12s\n", "mode", "messages", "rung",
              "lost", "recovered", "DB / WQE");
  for (PostMode m : {PostMode::kDevice, PostMode::kCpuDoorbell}) {
    const Run run = run_mode(m, per_lane, seed + 1, 0.1);
    const MpResult& r = run.r;
    std::printf("%-13s %9lu %9lu %9lu %10lu %12.5f\n", post_mode_name(m),
                (unsigned long)r.delivered,
                (unsigned long)(r.batch_rings + r.tail_rings),
                (unsigned long)r.dropped, (unsigned long)r.recovered,
                per(r.host_doorbells + r.peer_doorbells, r));
    check(r.dropped > 0 && r.recovered > 0, post_mode_name(m),
          "no doorbell lost, or none recovered");
  }
  std::printf(
      "  (recovered: RHN_CNT_SQ_RECOVERED, slots the NIC's record "
      "scan found published but never rung for)\n");
  if (failures) {
    std::printf("modes_bench: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("modes_bench: every message delivered once, in lane order\n");
  return 0;
}
