// SPDX-License-Identifier: BSD-2-Clause
// SHMEM_WAIT_SPIN_US: how long the waits (wait_until and friends, wait.cc)
// spin on the words before they sleep on the NIC's watch of their area,
// or "never" to never sleep. Parsed at shmem_init; no NIC here.
#ifndef RHINET_SHMEM_WAIT_SPIN_HPP
#define RHINET_SHMEM_WAIT_SPIN_HPP

#include <chrono>
#include <string>

#include "rhinet/types.hpp"

namespace rhinet::shmem {

// The budget when the variable is unset: about a put's round trip between
// two PEs of one node, so that a word set at once costs no system call.
inline constexpr std::chrono::microseconds kDefaultWaitSpin{100};
// The largest budget taken: userlib's.
inline constexpr std::chrono::microseconds kMaxWaitSpin = rhinet::max_spin;

// SHMEM_WAIT_SPIN_US's value: decimal microseconds 0..kMaxWaitSpin, or
// "never" (spin = negative: the waits never sleep; they spin, yield and
// nap as on a NIC without watches), as userlib's RHINET_SPIN_US
// (rhinet::parse_spin reads both). error is empty when it parsed, else
// says why (without the variable's name, which the caller puts first).
struct ParsedSpin {
  std::chrono::microseconds spin{0};
  std::string error;
};
ParsedSpin parse_wait_spin(const char* text);

}  // namespace rhinet::shmem

#endif  // RHINET_SHMEM_WAIT_SPIN_HPP
