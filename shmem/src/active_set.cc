// The active-set collectives (Documentation/userlib/shmem.md, "Active
// sets"): shmem_barrier, shmem_broadcast32/64, collect, fcollect,
// alltoall(s) and shmem_TYPE_OP_to_all on the PEs PE_start,
// PE_start + 2^logPE_stride, ... (PE_size of them). Each distinct set gets
// a NIC communicator the first time it is used, kept for the rest of the
// job, and the team routines' code then runs on it.
//
// What that relies on, from the specification: every member calls the
// same collectives on a set in the same order, so all members meet a set
// for the first time in the same call and their caches agree without
// talking; pSync is symmetric, SHMEM_SYNC_VALUE on every member when the
// call begins and used by no other collective meanwhile, so the set's
// first member may write the new communicator's ID into the others'
// pSync[0] (each puts SHMEM_SYNC_VALUE back once it has read it).
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "reduce.hpp"
#include "shmem_internal.hpp"

using namespace rhinet::shmem::internal;

namespace {

// Communicator IDs of the active sets: 0x4000 + PE 0's counter modulo
// 4096, away from the world's (0x5348) and the split teams' (0x8000 up).
// Every set takes a number once, so two sets share an ID only after 4096
// distinct sets (documented).
constexpr std::uint16_t kFirstSetId = 0x4000;
constexpr std::uint64_t kSetIds = 0x1000;

struct ActiveSet {
  std::vector<int> pes;  // world PEs in set order
  std::optional<rhinet::Communicator> comm;
};

using SetKey = std::tuple<int, int, int>;  // start, log stride, size

std::map<SetKey, std::unique_ptr<ActiveSet>>& sets() {
  static std::map<SetKey, std::unique_ptr<ActiveSet>> s;
  return s;
}

// The ID of a set this PE is the first member of: a number from PE 0's
// counter, written into each other member's pSync[0].
std::uint16_t lead(const char* routine, const std::vector<int>& pes,
                   const Symmetric& sync) {
  auto& g = group(routine);
  auto taken = g.fetch_add(0, kLibraryArea, kLibraryCounterOffset, 1);
  complete(routine, taken);
  const auto id =
      static_cast<std::uint16_t>(kFirstSetId + taken.value() % kSetIds);
  const long word = id;
  std::vector<rhinet::Request> puts;
  for (std::size_t i = 1; i < pes.size(); i++)
    puts.push_back(
        g.push(static_cast<std::uint32_t>(pes[i]), sync.area->id(), sync.offset,
               {reinterpret_cast<const std::byte*>(&word), sizeof word},
               {.inline_data = true}));
  for (auto& p : puts) complete(routine, p);
  return id;
}

// The ID the set's first member wrote into this PE's pSync[0].
std::uint16_t follow(long* pSync) {
  long word;
  while ((word = __atomic_load_n(pSync, __ATOMIC_ACQUIRE)) == SHMEM_SYNC_VALUE)
    sched_yield();
  __atomic_store_n(pSync, SHMEM_SYNC_VALUE, __ATOMIC_RELEASE);
  return static_cast<std::uint16_t>(word);
}

// The set as a team view, checked; this PE must be one of its members.
TeamView active_set(const char* routine, int start, int log_stride, int size,
                    long* pSync) {
  const int npes = shmem_n_pes();
  if (log_stride < 0 || log_stride > 30)
    die(routine, "logPE_stride %d is not a stride (0 to 30)", log_stride);
  if (size < 1)
    die(routine, "PE_size %d: an active set has 1 PE or more", size);
  const long stride = 1L << log_stride;
  const long last = start + stride * (size - 1);
  if (start < 0 || start >= npes || last >= npes)
    die(routine,
        "PE_start %d, logPE_stride %d, PE_size %d name PEs that are not PEs "
        "of this program (0 to %d)",
        start, log_stride, size, npes - 1);
  const int me = shmem_my_pe();
  const long at = me - start;
  if (at < 0 || at % stride || at / stride >= size)
    die(routine,
        "PE %d is not in the active set PE_start %d, logPE_stride %d, "
        "PE_size %d (PEs %d to %ld, %ld apart)",
        me, start, log_stride, size, start, last, stride);
  if (!pSync) die(routine, "pSync is NULL");
  const Symmetric sync = symmetric(routine, pSync, sizeof(long), "pSync");
  // All PEs: the world's own communicator.
  if (size == npes) return team_view(routine, SHMEM_TEAM_WORLD);
  auto& entry = sets()[{start, log_stride, size}];
  if (!entry) {
    auto set = std::make_unique<ActiveSet>();
    for (int i = 0; i < size; i++)
      set->pes.push_back(static_cast<int>(start + stride * i));
    if (size > 1) {
      world(routine);  // ends the PE when the NIC has no collectives
      const std::uint16_t id =
          at == 0 ? lead(routine, set->pes, sync) : follow(pSync);
      std::vector<std::uint32_t> ranks(set->pes.begin(), set->pes.end());
      auto comm =
          rhinet::Communicator::create(group(routine), ranks, {.id = id});
      if (!comm)
        die(routine, "cannot create the active set's NIC communicator: %s",
            comm.error().to_string().c_str());
      set->comm.emplace(std::move(*comm));
    }
    entry = std::move(set);
  }
  return {entry->pes, static_cast<int>(at / stride),
          entry->comm ? &*entry->comm : nullptr};
}

// The active-set routines return nothing: an error the team code reports
// (its message printed) ends the PE.
void check(int rc) {
  if (rc) {
    std::fflush(nullptr);
    _exit(1);
  }
}

void broadcast(const char* routine, void* dest, const void* source,
               std::size_t bytes, int root, int start, int log_stride, int size,
               long* pSync) {
  const auto view = active_set(routine, start, log_stride, size, pSync);
  check(broadcast_on(routine, view, dest, source, bytes, root, false));
}

void collect(const char* routine, void* dest, const void* source,
             std::size_t bytes, bool fixed, int start, int log_stride, int size,
             long* pSync) {
  const auto view = active_set(routine, start, log_stride, size, pSync);
  check(collect_on(routine, view, dest, source, bytes, fixed));
}

void alltoall(const char* routine, void* dest, const void* source,
              std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems,
              std::size_t elem, int start, int log_stride, int size,
              long* pSync) {
  const auto view = active_set(routine, start, log_stride, size, pSync);
  check(alltoall_on(routine, view, dest, source, dst, sst, nelems, elem));
}

template <typename T>
void to_all(const char* routine, T* dest, const T* source, int nreduce,
            int start, int log_stride, int size, long* pSync, ReduceOp op) {
  const auto view = active_set(routine, start, log_stride, size, pSync);
  if (nreduce < 0) die(routine, "nreduce %d is negative", nreduce);
  check(reduce_on(routine, view, dest, source,
                  static_cast<std::size_t>(nreduce), op));
}

}  // namespace

namespace rhinet::shmem::internal {

void forget_active_sets() { sets().clear(); }

}  // namespace rhinet::shmem::internal

extern "C" {

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  const char* routine = "shmem_barrier";
  team_barrier(routine,
               active_set(routine, PE_start, logPE_stride, PE_size, pSync));
}

#define RHINET_SHMEM_ACTIVE_SET(BITS)                                       \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, \
                             int PE_root, int PE_start, int logPE_stride,   \
                             int PE_size, long* pSync) {                    \
    broadcast("shmem_broadcast" #BITS, dest, source, nelems*(BITS / 8),     \
              PE_root, PE_start, logPE_stride, PE_size, pSync);             \
  }                                                                         \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems,   \
                           int PE_start, int logPE_stride, int PE_size,     \
                           long* pSync) {                                   \
    collect("shmem_collect" #BITS, dest, source, nelems*(BITS / 8), false,  \
            PE_start, logPE_stride, PE_size, pSync);                        \
  }                                                                         \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems,  \
                            int PE_start, int logPE_stride, int PE_size,    \
                            long* pSync) {                                  \
    collect("shmem_fcollect" #BITS, dest, source, nelems*(BITS / 8), true,  \
            PE_start, logPE_stride, PE_size, pSync);                        \
  }                                                                         \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems,  \
                            int PE_start, int logPE_stride, int PE_size,    \
                            long* pSync) {                                  \
    alltoall("shmem_alltoall" #BITS, dest, source, 1, 1, nelems, BITS / 8,  \
             PE_start, logPE_stride, PE_size, pSync);                       \
  }                                                                         \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, \
                             ptrdiff_t sst, size_t nelems, int PE_start,    \
                             int logPE_stride, int PE_size, long* pSync) {  \
    alltoall("shmem_alltoalls" #BITS, dest, source, dst, sst, nelems,       \
             BITS / 8, PE_start, logPE_stride, PE_size, pSync);             \
  }
RHINET_SHMEM_ACTIVE_SET(32)
RHINET_SHMEM_ACTIVE_SET(64)

#define RHINET_SHMEM_TO_ALL(N, T, OP, ROP)                                    \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce,       \
                                 int PE_start, int logPE_stride, int PE_size, \
                                 T*, long* pSync) {                           \
    to_all("shmem_" #N "_" #OP "_to_all", dest, source, nreduce, PE_start,    \
           logPE_stride, PE_size, pSync, ReduceOp::ROP);                      \
  }
#define RHINET_SHMEM_TO_ALL_BITWISE(N, T) \
  RHINET_SHMEM_TO_ALL(N, T, and, band)    \
  RHINET_SHMEM_TO_ALL(N, T, or, bor)      \
  RHINET_SHMEM_TO_ALL(N, T, xor, bxor)
#define RHINET_SHMEM_TO_ALL_ARITH(N, T) \
  RHINET_SHMEM_TO_ALL(N, T, min, min)   \
  RHINET_SHMEM_TO_ALL(N, T, max, max)   \
  RHINET_SHMEM_TO_ALL(N, T, sum, sum)   \
  RHINET_SHMEM_TO_ALL(N, T, prod, prod)
SHMEMI_TO_ALL_BITWISE_TYPES(RHINET_SHMEM_TO_ALL_BITWISE)
SHMEMI_TO_ALL_TYPES(RHINET_SHMEM_TO_ALL_ARITH)

// The complex ones: C's _Complex has std::complex's layout.
#define RHINET_SHMEM_TO_ALL_COMPLEX(N, T, R, OP)                              \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce,       \
                                 int PE_start, int logPE_stride, int PE_size, \
                                 T*, long* pSync) {                           \
    to_all("shmem_" #N "_" #OP "_to_all",                                     \
           reinterpret_cast<std::complex<R>*>(dest),                          \
           reinterpret_cast<const std::complex<R>*>(source), nreduce,         \
           PE_start, logPE_stride, PE_size, pSync, ReduceOp::OP);             \
  }
RHINET_SHMEM_TO_ALL_COMPLEX(complexf, float _Complex, float, sum)
RHINET_SHMEM_TO_ALL_COMPLEX(complexf, float _Complex, float, prod)
RHINET_SHMEM_TO_ALL_COMPLEX(complexd, double _Complex, double, sum)
RHINET_SHMEM_TO_ALL_COMPLEX(complexd, double _Complex, double, prod)

}  // extern "C"
