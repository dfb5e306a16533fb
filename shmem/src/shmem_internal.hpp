// librhinet_shmem's internals shared by its files: the state and error
// paths (shmem.cc), the AMOs' NIC operations (amo.cc), the collectives,
// teams, locks and waits (collect.cc, teams.cc, locks.cc, wait.cc).
// Nothing here is exported (librhinet_shmem.map).
#ifndef RHINET_SHMEM_INTERNAL_HPP
#define RHINET_SHMEM_INTERNAL_HPP

#include <shmem.h>
#include <shmemx.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <rhinet/rhinet.hpp>
#include <span>
#include <vector>

#include "compare.hpp"

namespace rhinet::shmem::internal {

// Area ID of the symmetric heap on every PE.
inline constexpr std::uint32_t kHeapArea = SHMEMX_HEAP_AREA_ID;
// Area ID of the program's writable data (.data, .bss) on every PE.
inline constexpr std::uint32_t kDataArea = 0x5344;
// Area ID of the library's own symmetric memory on every PE: a counter
// (PE 0's numbers the active sets' communicators, active_set.cc), then the
// scratch the gathered reductions combine in (reduce.hpp).
inline constexpr std::uint32_t kLibraryArea = 0x534c;
inline constexpr std::size_t kLibraryCounterOffset = 0;

// A symmetric object as a remote operation names it: the area holding it
// (the heap or the program's data, the same ID on every PE) and its offset
// there, the same on every PE.
struct Symmetric {
  const Area* area = nullptr;
  std::size_t offset = 0;
};

// ---- shmem.cc
// The group of the job; ends the PE when the library is not initialized.
Group& group(const char* routine);
// One line naming the routine, then the PE ends with status 1 (RMA and
// AMO routines have no error return in the specification).
[[noreturn]] void die(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// One line naming the routine; returns -1 (for routines that return int).
int refuse(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
void check_pe(const char* routine, int pe);
// Where a symmetric object of `bytes` bytes lies, or the PE ends naming it.
Symmetric symmetric(const char* routine, const void* p, std::size_t bytes,
                    const char* what);
// Inside one of the library's areas (heap, program data): registered
// memory, so it can be the local side of a PUSH or PULL as it is.
bool registered(const void* p, std::size_t bytes);
// A registered scratch buffer of 1 MiB for operands that are not in the
// library's areas.
std::span<std::byte> scratch();
// How long a wait spins before it sleeps on the NIC's watch
// (SHMEM_WAIT_SPIN_US); negative: it never sleeps.
std::chrono::microseconds wait_spin();
// The communicator of all PEs; ends the PE when the NIC has none.
Communicator& world(const char* routine);
// Waits for `r`; the PE ends on its error.
void complete(const char* routine, rhinet::Request& r);
// The PE ends on an error.
void complete(const char* routine, const Result<void>& r);
// Every context's quiet, then the NIC barrier of all PEs
// (shmem_barrier_all).
void heap_barrier(const char* routine);
// The library's area (kLibraryArea) and, inside it, the gather scratch
// and its offset in the area.
const Area& library_area();
std::span<std::byte> library_scratch();
std::size_t library_scratch_offset();

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

// Drops the active sets' communicators (shmem_finalize, before the group
// goes; active_set.cc).
void forget_active_sets();

// The collectives on a team's view, for the team routines and the
// active-set ones; 0, or -1 with a message naming the routine.
// broadcast: member `root`'s source into every member's dest, the root's
// own dest too when `root_dest` (the team form; the active-set form leaves
// it alone).
int broadcast_on(const char* routine, const TeamView& view, void* dest,
                 const void* source, std::size_t bytes, int root,
                 bool root_dest);
// Every member's `bytes` in member order into every member's dest;
// `fixed`: every member gives the same number (fcollect).
int collect_on(const char* routine, const TeamView& view, void* dest,
               const void* source, std::size_t bytes, bool fixed);
// Block j of source (nelems elements of `elem` bytes, sst apart) to member
// j's dest at this member's place (dst apart there).
int alltoall_on(const char* routine, const TeamView& view, void* dest,
                const void* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t nelems, std::size_t elem);

// ---- contexts (shmem.cc)
// A context is its own completion domain: the requests it posted and has
// not seen complete, kept here instead of detached into the group, so that
// shmem_ctx_quiet waits for its own and no other context's. A created
// context posts on an endpoint of the PE's pool (shmem_init's, see
// SHMEM_CONTEXT_ENDPOINTS) while one is free, so the NIC does not queue
// its work behind another context's; else, like SHMEM_CTX_DEFAULT, on the
// group's endpoint.
struct Context {
  struct Pending {
    rhinet::Request request;
  };
  shmem_team_t team = SHMEM_TEAM_WORLD;
  // The pool's endpoint the context posts on (an added endpoint of the
  // group, userlib Group::add_endpoint) and its index there; null and -1
  // when it posts on the group's own.
  rhinet::Group* nic = nullptr;
  int endpoint = -1;
  long options = 0;
  unsigned long owner = 0;  // the creating thread (SHMEM_CTX_PRIVATE)
  std::vector<Pending> pending;
};
// The live context `ctx`, or the PE ends naming the routine (an invalid,
// destroyed or foreign handle, a private context used by another thread).
Context& context(const char* routine, shmem_ctx_t ctx);
// The Group the context's operations are posted on.
Group& nic_of(const char* routine, Context& c);
// `pe` of the context's team as a world PE, checked.
int world_pe(const char* routine, const Context& c, int pe);
// Keeps `r` (in flight) with the context until its quiet.
void track(Context& c, rhinet::Request&& r);
// Waits for the context's requests; the PE ends on the first error.
void quiet(const char* routine, Context& c);
// Every context's quiet, then the group's (what barriers and locks need).
void quiet_all(const char* routine);

// ---- waits (wait.cc)
// The word `ivar` (read with an acquire load) compared with `value` by
// `cmp`; an unknown cmp ends the PE naming the routine.
template <typename T>
bool satisfied(const char* routine, const T* ivar, int cmp, T value) {
  const auto met = rhinet::shmem::compare(
      __atomic_load_n(ivar, __ATOMIC_ACQUIRE), cmp, value);
  if (!met)
    die(routine, "cmp %d is not one of SHMEM_CMP_EQ .. SHMEM_CMP_LE", cmp);
  return *met;
}

// ---- the two forms of each RMA, AMO and put-with-signal routine
// The *_FORM(..., F) macros of shmem.cc and amo.cc write one routine in
// form F: `plain` (shmem_..., on SHMEM_CTX_DEFAULT) or `ctx` (shmem_ctx_...,
// with a leading context parameter).
#define RHINET_NAME(F, x) RHINET_NAME_##F(x)
#define RHINET_NAME_plain(x) shmem_##x
#define RHINET_NAME_ctx(x) shmem_ctx_##x
#define RHINET_NAME_STR(F, x, tail) RHINET_NAME_STR_##F(x, tail)
#define RHINET_NAME_STR_plain(x, tail) "shmem_" #x tail
#define RHINET_NAME_STR_ctx(x, tail) "shmem_ctx_" #x tail
#define RHINET_CTX_PARAM(F) RHINET_CTX_PARAM_##F
#define RHINET_CTX_PARAM_plain
#define RHINET_CTX_PARAM_ctx shmem_ctx_t ctx,
#define RHINET_CTX_ARG(F) RHINET_CTX_ARG_##F
#define RHINET_CTX_ARG_plain SHMEM_CTX_DEFAULT
#define RHINET_CTX_ARG_ctx ctx
// Both forms of a FORM(A, B, F) macro, for the type lists' X(A, B).
#define RHINET_BOTH_FORMS(FORM, A, B) FORM(A, B, plain) FORM(A, B, ctx)

// ---- amo.cc
// Where the AMO word `dest` of `bytes` (4 or 8) bytes at PE
// `pe`, checked: a symmetric, aligned word of a PE of the job.
Symmetric amo_word(const char* routine, const void* dest, std::size_t bytes,
                   int pe);
// A put-with-signal's signal: adds `signal` to the 64-bit word at world PE
// `pe`, or sets it; waited for.
void signal_update(const char* routine, Context& c, std::uint64_t* sig_addr,
                   std::uint64_t signal, bool add, int pe);

}  // namespace rhinet::shmem::internal

#endif  // RHINET_SHMEM_INTERNAL_HPP
