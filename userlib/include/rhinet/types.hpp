// SPDX-License-Identifier: BSD-2-Clause
// Small vocabulary shared by the rhinet headers.
#ifndef RHINET_TYPES_HPP
#define RHINET_TYPES_HPP

#include <chrono>
#include <cstdint>

namespace rhinet {

// A timeout that never expires.
inline constexpr std::chrono::milliseconds forever =
    std::chrono::milliseconds::max();

// Largest group the bootstrap accepts.
inline constexpr std::uint32_t max_ranks = 65536;

// Where a rank is on the fabric: its NIC's node ID and its endpoint there
// (the endpoint stands for the process on that node).
struct Peer {
  std::uint32_t node_id = 0;
  std::uint32_t endpoint_id = 0;
  friend bool operator==(const Peer&, const Peer&) = default;
};

// A spin budget that never sleeps (spin, yield, then nap 50 us).
inline constexpr std::chrono::microseconds never_sleep{-1};
// The longest spin budget parse_spin takes: beyond a second a wait is a
// busy wait, which never_sleep says better.
inline constexpr std::chrono::microseconds max_spin{1000000};
// How long a wait spins on memory before it sleeps until the NIC
// interrupts, unless BootstrapOptions::spin or RHINET_SPIN_US say otherwise
// (Documentation/userlib/reference.md, "Waiting"). Waits do not sleep by
// default: with a 50 us budget two ranks on one emulated node saved CPU on
// long waits but lost on short ones (a ping-pong 1.4-3x slower), and no
// budget has been measured yet that loses nowhere.
inline constexpr std::chrono::microseconds default_spin = never_sleep;

// What the waits of one Group did (Group::wait_stats): each count grows
// by one per occurrence.
struct WaitStats {
  std::uint64_t waits = 0;    // waits that found the operation(s) not done
  std::uint64_t sleeps = 0;   // times a wait slept after its spin budget
  std::uint64_t wakeups = 0;  // sleeps ended by the NIC's interrupt
  // Sleeps saved by the look after arming: what they waited for had
  // completed between the last look and the arming.
  std::uint64_t rechecks = 0;
};

// How long Group::wait_for_area spins on memory before it arms the NIC's
// watch of the area and sleeps (Documentation/userlib/reference.md,
// "Waiting on memory").
inline constexpr std::chrono::microseconds default_area_spin{100};

// What the waits of Group::wait_for_area did (Group::area_wait_stats):
// each count grows by one per occurrence.
struct AreaWaitStats {
  std::uint64_t waits = 0;    // waits whose condition was not met at once
  std::uint64_t arms = 0;     // watches armed (WATCH operations posted)
  std::uint64_t sleeps = 0;   // sleeps (each slice one) after the spin
  std::uint64_t wakeups = 0;  // sleeps ended by the NIC's interrupt
  std::uint64_t fired = 0;    // watch firings seen (a write landed)
  // Sleeps saved by the look after arming: the write had landed between
  // the last look and the arming (the watch could not see it).
  std::uint64_t rechecks = 0;
  // Waits that looked at memory without a watch: never_sleep, or a
  // device without watches (spin, yield, then nap 50 us).
  std::uint64_t polled = 0;
  // Sleeps that ended because their time ran out (a slice of at most
  // 200 ms, or the wait's timeout), not by the NIC: sleeps = wakeups +
  // timeouts + sleeps a signal interrupted. A wait for a store of this
  // process's own CPU (which fires no watch) ends on one of these.
  std::uint64_t timeouts = 0;
};

}  // namespace rhinet

#endif  // RHINET_TYPES_HPP
