// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes tag matching as a whole: the input chooses the NIC's list
// capacities (1 .. 10 000, so the overflow paths are taken), the number of
// senders, a lossy fabric or not, and then every step of a script of
// irecvs (tags, masks, wildcard sources, buffer sizes), isends (eager and
// rendezvous lengths), iprobes and cancels, run on simulated nodes
// (rhinet/sim/tag_scenario.h). Any difference from the reference model --
// a receive that gets another message, a lost or duplicated completion, an
// isend completing undelivered -- aborts with the script that caused it.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rhinet/sim/tag_scenario.h"

namespace {

// Capacities worth trying: the smallest ones force every overflow path.
constexpr uint32_t kCapacities[] = {1, 2, 3, 8, 64, 10'000};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  rhinet::sim::TagScript s;
  s.recvs = kCapacities[data[0] % std::size(kCapacities)];
  s.msgs = kCapacities[(data[0] / 8) % std::size(kCapacities)];
  s.senders = 1 + data[1] % 3;
  s.lossy = data[2] & 1;
  s.fabric_seed = data[3];
  // Four draws a step, one byte each (a step may take up to three more);
  // short scripts keep a bounded run at many executions (a lossy step
  // settles for 40 ms of simulated time).
  s.steps = int(std::min<size_t>((size - 4) / 4, s.lossy ? 12 : 32));
  size_t at = 4;
  auto next = [&]() -> uint64_t { return at < size ? data[at++] : 0; };
  const std::string err = rhinet::sim::run_tag_scenario(s, next);
  if (!err.empty()) {
    std::fprintf(stderr, "fuzz_tag: recvs %u msgs %u senders %d lossy %d\n%s",
                 s.recvs, s.msgs, s.senders, int(s.lossy), err.c_str());
    std::abort();
  }
  return 0;
}
