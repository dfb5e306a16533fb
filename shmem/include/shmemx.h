/*
 * shmemx.h: RHiNET extensions to OpenSHMEM (librhinet_shmem).
 * Documentation/userlib/shmem.md describes each.
 */
#ifndef RHINET_SHMEMX_H
#define RHINET_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the symmetric heap: its size (SHMEM_SYMMETRIC_SIZE) and the
 * bytes live blocks take now. */
size_t shmemx_heap_size(void);
size_t shmemx_heap_in_use(void);

/* For programs that mix OpenSHMEM with userlib's C++ calls on the same
 * PEs: the userlib rhinet::Group this PE joined (cast the pointer), the
 * symmetric heap's start in this PE, and the heap's area ID in the group
 * (a symmetric object's area offset is its address minus the heap's
 * start). Valid between shmem_init and shmem_finalize. */
/* Operations issued on `ctx` (SHMEM_CTX_DEFAULT or a created context)
 * since its last quiet that it holds to wait for at its next quiet: puts
 * and gets that did not complete before returning, non-fetching AMOs.
 * Another context's quiet leaves this count alone. */
size_t shmemx_ctx_pending(shmem_ctx_t ctx);
/* Of those, the ones the NIC has not completed yet (each one's status
 * word is read). */
size_t shmemx_ctx_in_flight(shmem_ctx_t ctx);
/* The NIC endpoints a PE may make for contexts (SHMEM_CONTEXT_ENDPOINTS,
 * default 4; each is made when a context first needs it), and which of
 * them `ctx` posts on: 0 to that count - 1, or
 * -1 when it posts on the PE's default endpoint, shared with
 * SHMEM_CTX_DEFAULT (the default context itself, and a context created
 * while every endpoint of the pool was taken). */
int shmemx_context_endpoints(void);
int shmemx_ctx_endpoint(shmem_ctx_t ctx);
/* The NIC node PE `pe` runs on (its node ID), -1 for a PE that is not
 * one of the program's. PEs on one node share its NIC. */
int shmemx_pe_node(int pe);

/* What this PE's waits (shmem_TYPE_wait_until and the set forms,
 * shmem_signal_wait_until) did since shmem_init: how many times they slept
 * on the NIC's watch of the words' area after spinning about 100 us, and
 * how many of those sleeps the NIC's interrupt ended (a put or an atomic
 * landed there). Either pointer may be NULL. Both stay 0 on a NIC without
 * watches, whose waits back off instead. */
void shmemx_get_wait_stats(uint64_t* sleeps, uint64_t* wakeups);
/* All that those waits counted since shmem_init. Each sleep lasts at most
 * 200 ms (a store of the PE's own CPU fires no watch), so a long wait
 * sleeps several times: sleeps = wakeups + timeouts (+ sleeps a signal
 * interrupted). Fields are only ever added at the end:
 * shmemx_get_wait_stats_ext fills the first `size` bytes of *stats (pass
 * sizeof(struct shmemx_wait_stats)), so a program built with an older
 * shmemx.h gets the fields it knows. */
struct shmemx_wait_stats {
  uint64_t waits;    /* waits that found the words not yet as asked */
  uint64_t sleeps;   /* sleeps on the watch after the spin */
  uint64_t wakeups;  /* sleeps the NIC's interrupt ended */
  uint64_t timeouts; /* sleeps that ran out (200 ms), not ended by the NIC */
  uint64_t arms;     /* watches armed */
  uint64_t fired;    /* watch firings seen (a put or an AMO landed) */
  uint64_t rechecks; /* waits the look after arming ended, unslept */
};
void shmemx_get_wait_stats_ext(struct shmemx_wait_stats* stats, size_t size);

#define SHMEMX_HEAP_AREA_ID 0x5348
void* shmemx_rhinet_group(void);
void* shmemx_heap_base(void);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_SHMEMX_H */
