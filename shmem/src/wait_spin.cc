// SPDX-License-Identifier: BSD-2-Clause
#include "wait_spin.hpp"

#include "rhinet/bootstrap.hpp"

namespace rhinet::shmem {

// The grammar is userlib's (RHINET_SPIN_US takes the same values).
static_assert(kMaxWaitSpin == std::chrono::microseconds{1000000},
              "rhinet::parse_spin's largest budget");

ParsedSpin parse_wait_spin(const char* text) {
  auto spin = rhinet::parse_spin(text);
  if (!spin) return {{}, spin.error().message()};
  return {*spin, {}};
}

}  // namespace rhinet::shmem
