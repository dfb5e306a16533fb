// librhinet_shmem's internals shared by its files: the state and error
// paths (shmem.cc) and the AMOs' NIC operations (amo.cc). Nothing here is
// exported (librhinet_shmem.map).
#ifndef RHINET_SHMEM_INTERNAL_HPP
#define RHINET_SHMEM_INTERNAL_HPP

#include <shmemx.h>

#include <cstddef>
#include <cstdint>
#include <rhinet/rhinet.hpp>

namespace rhinet::shmem::internal {

// Area ID of the symmetric heap on every PE.
inline constexpr std::uint32_t kHeapArea = SHMEMX_HEAP_AREA_ID;

// ---- shmem.cc
// Ends this PE (and, through oshrun, the job) after a message naming the
// routine: RMA and AMO routines have no error return in the specification.
[[noreturn]] void die(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The group, once shmem_init has run (otherwise die).
rhinet::Group& group(const char* routine);
void check_pe(const char* routine, int pe);
// The heap offset of a symmetric object of `bytes` bytes (otherwise die).
std::size_t symmetric_offset(const char* routine, const void* p,
                             std::size_t bytes, const char* what);
// Waits for `r`; dies with its error.
void complete(const char* routine, rhinet::Request& r);

// ---- amo.cc
// The heap offset of the AMO word `dest` of `bytes` (4 or 8) bytes at PE
// `pe`, checked: a symmetric, aligned word of a PE of the job.
std::size_t amo_offset(const char* routine, const void* dest, std::size_t bytes,
                       int pe);
// A put-with-signal's signal: adds `signal` to the 64-bit word, or sets it.
void signal_update(const char* routine, std::uint64_t* sig_addr,
                   std::uint64_t signal, bool add, int pe);

}  // namespace rhinet::shmem::internal

#endif  // RHINET_SHMEM_INTERNAL_HPP
