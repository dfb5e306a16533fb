// SPDX-License-Identifier: BSD-2-Clause
#include "wait_spin.hpp"

#include "rhinet/bootstrap.hpp"

namespace rhinet::shmem {

// The grammar is userlib's (RHINET_SPIN_US takes the same values).
ParsedSpin parse_wait_spin(const char* text) {
  auto spin = rhinet::parse_spin(text);
  if (!spin) return {{}, spin.error().message()};
  return {*spin, {}};
}

}  // namespace rhinet::shmem
