// SPDX-License-Identifier: BSD-2-Clause
// Tag matching against a reference model: one receiving endpoint and a few
// senders run a script of irecvs, isends, iprobes and cancels, each allowed
// to settle before the next, so the NIC sees them in the order the model
// does; at the end every irecv must hold exactly the message the model
// gave it, every isend must have completed when (and only when) delivered.
// The unit tests drive it from a seeded generator, the fuzz target from
// its input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace rhinet::sim {

struct TagScript {
  uint32_t recvs = 4096, msgs = 4096;  // the NIC's list capacities
  int senders = 2;     // 1..7; 1 when a list holds fewer than 64 entries
  bool lossy = false;  // loss, duplication, reordering
  uint64_t fabric_seed = 1;
  int steps = 220;
};

struct TagScenarioStats {
  size_t receives = 0;  // irecvs the model completed
  size_t probes = 0, probes_found = 0, cancels_found = 0;
};

// Runs the script, drawing every choice from `next`. Returns "" when the
// NIC did what the model says, else what went wrong (with the script's
// log).
std::string run_tag_scenario(const TagScript& script,
                             const std::function<uint64_t()>& next,
                             TagScenarioStats* stats = nullptr);

}  // namespace rhinet::sim
