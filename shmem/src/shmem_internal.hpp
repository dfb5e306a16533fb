// What shmem.cc shares with the library's other files (collect.cc,
// teams.cc, locks.cc, wait.cc): the joined group, the heap, the error
// reporting. Defined at the end of shmem.cc.
#ifndef RHINET_SHMEM_INTERNAL_HPP
#define RHINET_SHMEM_INTERNAL_HPP

#include <shmem.h>

#include <cstddef>
#include <cstdint>
#include <rhinet/rhinet.hpp>
#include <span>
#include <vector>

namespace rhinet::shmem::internal {

// The group of the job; ends the PE when the library is not initialized.
Group& group(const char* routine);
// One line naming the routine, then the PE ends with status 1.
[[noreturn]] void die(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// One line naming the routine; returns -1 (for routines that return int).
int refuse(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The heap offset of a symmetric object, or the PE ends naming it.
std::size_t symmetric_offset(const char* routine, const void* p,
                             std::size_t bytes, const char* what);
bool in_heap(const void* p, std::size_t bytes);
// The heap's area (the same ID at every PE) and a registered scratch
// buffer of 1 MiB for operands that are not heap memory.
const Area& heap_area();
std::span<std::byte> scratch();
// The communicator of all PEs; ends the PE when the NIC has none.
Communicator& world(const char* routine);
// The PE ends on an error.
void complete(const char* routine, const Result<void>& r);
// Quiet, then the NIC barrier of all PEs (shmem_barrier_all).
void heap_barrier(const char* routine);

// A team as the collectives see it: its members' world PEs in team
// order, this PE's index, and the communicator the NIC runs its
// collectives on (the world's for SHMEM_TEAM_WORLD; none for a team of
// this PE alone, which needs none).
struct TeamView {
  std::span<const int> pes;
  int me = 0;
  Communicator* comm = nullptr;
};
// The team, or the PE ends naming the routine (SHMEM_TEAM_INVALID, a
// destroyed team, a pointer that is no team; with `collective`, the
// world's when the NIC has no collectives). Without `collective`, comm is
// left null for the world (queries need only the members).
TeamView team_view(const char* routine, shmem_team_t team,
                   bool collective = true);
// Quiet, then the team's barrier.
void team_barrier(const char* routine, const TeamView& team);

}  // namespace rhinet::shmem::internal

#endif  // RHINET_SHMEM_INTERNAL_HPP
