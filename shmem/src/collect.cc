// collect, fcollect and alltoall(s) on a team (Documentation/userlib/
// shmem.md, "Collectives"): userlib's Communicator::allgather and alltoall,
// PUSHes into the members' heap areas and the team's NIC barrier.
#include <cstring>
#include <vector>

#include "shmem_internal.hpp"

using namespace rhinet::shmem::internal;

namespace {

std::span<const std::byte> bytes_of(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

}  // namespace

namespace rhinet::shmem::internal {

int collect_on(const char* routine, const TeamView& view, void* dest,
               const void* source, std::size_t bytes, bool fixed) {
  const std::size_t n = view.pes.size();
  if (!view.comm) {
    if (bytes && dest != source) std::memmove(dest, source, bytes);
    return 0;
  }
  std::size_t before = view.me * bytes, total = n * bytes;
  if (fixed) {
    // No member PUSHes into a dest another still reads: its last
    // collective's result until it enters this one.
    auto r = view.comm->barrier();
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
  } else {
    // Each member's size into its slot, summed: everyone learns them all,
    // and, as the NIC completes it only once every member joined, no
    // member PUSHes into a dest another still reads.
    auto sizes = scratch().first(n * sizeof(std::uint64_t));
    auto* s = reinterpret_cast<std::uint64_t*>(sizes.data());
    std::fill(s, s + n, 0);
    s[view.me] = bytes;
    auto r = view.comm->allreduce<std::uint64_t>({s, n}, {s, n},
                                                 rhinet::Reduce::sum);
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
    before = total = 0;
    for (std::size_t i = 0; i < n; i++) {
      if (static_cast<int>(i) < view.me) before += s[i];
      total += s[i];
    }
  }
  const Symmetric to = symmetric(routine, dest, total, "dest");
  if (bytes) symmetric(routine, source, bytes, "source");
  auto r = view.comm->allgather(bytes_of(source, bytes), *to.area,
                                to.offset + before);
  if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
  return 0;
}

int alltoall_on(const char* routine, const TeamView& view, void* dest,
                const void* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t nelems, std::size_t elem) {
  const std::size_t n = view.pes.size();
  if (dst < 1 || sst < 1)
    return refuse(routine,
                  "strides must be at least 1 element (dst %td, "
                  "sst %td)",
                  dst, sst);
  const auto ud = static_cast<std::size_t>(dst),
             us = static_cast<std::size_t>(sst);
  const std::size_t block = nelems * elem;
  if (!nelems) {
    team_barrier(routine, view);
    return 0;
  }
  const Symmetric to =
      symmetric(routine, dest, ((n * nelems - 1) * ud + 1) * elem, "dest");
  const std::size_t at = to.offset;
  symmetric(routine, source, ((n * nelems - 1) * us + 1) * elem, "source");
  if (!view.comm) {
    for (std::size_t i = 0; i < nelems; i++)
      std::memmove(static_cast<std::byte*>(dest) + i * ud * elem,
                   static_cast<const std::byte*>(source) + i * us * elem, elem);
    return 0;
  }
  // As in collect: every member has entered before any PUSHes.
  if (auto r = view.comm->barrier(); !r)
    return refuse(routine, "%s", r.error().to_string().c_str());
  if (dst == 1 && sst == 1) {
    auto r = view.comm->alltoall(bytes_of(source, n * block), *to.area,
                                 at + view.me * block);
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
    return 0;
  }
  // Strided: one PUSH per member in the NIC's stride mode.
  auto& g = group(routine);
  const auto opts =
      rhinet::XferOptions::strided({.block = static_cast<std::uint32_t>(elem),
                                    .count = static_cast<std::uint32_t>(nelems),
                                    .local_stride = us * elem,
                                    .remote_stride = ud * elem});
  const std::size_t span = ((nelems - 1) * us + 1) * elem;
  const std::size_t remote = at + view.me * nelems * ud * elem;
  std::vector<rhinet::Request> pushes;
  for (std::size_t j = 0; j < n; j++) {
    const auto* from =
        static_cast<const std::byte*>(source) + j * nelems * us * elem;
    if (static_cast<int>(j) == view.me) {
      for (std::size_t i = 0; i < nelems; i++)
        std::memmove(
            static_cast<std::byte*>(dest) + (remote - at) + i * ud * elem,
            from + i * us * elem, elem);
      continue;
    }
    pushes.push_back(g.push(static_cast<std::uint32_t>(view.pes[j]),
                            to.area->id(), remote, {from, span}, opts));
  }
  for (auto& p : pushes)
    if (auto done = p.wait(); !done)
      return refuse(routine, "%s", done.error().to_string().c_str());
  auto r = view.comm->barrier();
  if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
  return 0;
}

}  // namespace rhinet::shmem::internal

namespace {

int collect(const char* routine, shmem_team_t team, void* dest,
            const void* source, std::size_t bytes, bool fixed) {
  return collect_on(routine, team_view(routine, team), dest, source, bytes,
                    fixed);
}

int alltoall(const char* routine, shmem_team_t team, void* dest,
             const void* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
             std::size_t nelems, std::size_t elem) {
  return alltoall_on(routine, team_view(routine, team), dest, source, dst, sst,
                     nelems, elem);
}

}  // namespace

extern "C" {

int shmem_collectmem(shmem_team_t team, void* dest, const void* source,
                     size_t nelems) {
  return collect("shmem_collectmem", team, dest, source, nelems, false);
}

int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source,
                      size_t nelems) {
  return collect("shmem_fcollectmem", team, dest, source, nelems, true);
}

int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source,
                      size_t nelems) {
  return alltoall("shmem_alltoallmem", team, dest, source, 1, 1, nelems, 1);
}

int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {
  return alltoall("shmem_alltoallsmem", team, dest, source, dst, sst, nelems,
                  1);
}

#define RHINET_SHMEM_COLLECT(N, T)                                             \
  int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source,         \
                          size_t nelems) {                                     \
    return collect("shmem_" #N "_collect", team, dest, source,                 \
                   nelems * sizeof(T), false);                                 \
  }                                                                            \
  int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source,        \
                           size_t nelems) {                                    \
    return collect("shmem_" #N "_fcollect", team, dest, source,                \
                   nelems * sizeof(T), true);                                  \
  }                                                                            \
  int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source,        \
                           size_t nelems) {                                    \
    return alltoall("shmem_" #N "_alltoall", team, dest, source, 1, 1, nelems, \
                    sizeof(T));                                                \
  }                                                                            \
  int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source,       \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {     \
    return alltoall("shmem_" #N "_alltoalls", team, dest, source, dst, sst,    \
                    nelems, sizeof(T));                                        \
  }
SHMEMI_RMA_TYPES(RHINET_SHMEM_COLLECT)

}  // extern "C"
