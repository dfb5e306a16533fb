// SPDX-License-Identifier: BSD-2-Clause
#include "fault_injector.h"

namespace rhinet::fabric {

bool FaultInjector::chance(double p) {
  if (p <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
}

FaultVerdict FaultInjector::decide(const FaultSpec& f, size_t frame_size) {
  FaultVerdict v;
  if (lose(f)) {
    v.copies = 0;
    return v;
  }
  v.copies = chance(f.duplicate) ? 2 : 1;
  for (unsigned i = 0; i < v.copies; i++) {
    FaultVerdict::Copy& c = v.copy[i];
    if (chance(f.corrupt)) {
      c.corrupt = true;
      c.bit =
          std::uniform_int_distribution<size_t>(0, frame_size * 8 - 1)(rng_);
    }
    c.reorder = chance(f.reorder);
  }
  return v;
}

}  // namespace rhinet::fabric
