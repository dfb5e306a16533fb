// SPDX-License-Identifier: BSD-2-Clause
// Memory barriers between the CPU and the NIC, per architecture, with the
// semantics rdma-core's providers use (its util/udma_barrier.h): what a
// C++ fence gives is not enough on every CPU (on arm64 a release fence
// orders the inner-shareable domain only, a device sits outside it).
// Self-contained, so tests can compile it for other architectures.
#pragma once

namespace rhinet {

// Host-memory writes (WQEs, doorbell records) become visible to the NIC
// before anything written after this (the doorbell).
inline void to_device_barrier() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("" ::: "memory");  // stores are not reordered with stores
#elif defined(__aarch64__)
  asm volatile("dsb st" ::: "memory");
#elif defined(__powerpc64__) || defined(__powerpc__)
  asm volatile("sync" ::: "memory");
#else
  __sync_synchronize();
#endif
}

// A NIC-written word (an owner bit) is read before the rest of its entry.
inline void from_device_barrier() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("lfence" ::: "memory");
#elif defined(__aarch64__)
  asm volatile("dsb ld" ::: "memory");
#elif defined(__powerpc64__) || defined(__powerpc__)
  asm volatile("lwsync" ::: "memory");
#else
  __sync_synchronize();
#endif
}

}  // namespace rhinet
