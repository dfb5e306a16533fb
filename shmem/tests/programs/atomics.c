/* 64-bit AMOs from every PE on one counter at PE 0 and on every PE's
 * words: fetch_inc/inc/fetch_add/add sum exactly, fetch_inc's values are
 * all different, compare_swap elects one winner, swap/set/fetch, and the
 * bitwise ones. Then the same on 32-bit words (int, uint32, int32, float)
 * packed two to a 64-bit word, each word's neighbour checked untouched. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#define PROGRAM "shmem_atomics"
#include "check.h"

enum { kIters = 50 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* counter = shmem_calloc(1, sizeof(long));
  long* winner = shmem_calloc(1, sizeof(long));
  uint64_t* bits = shmem_calloc(1, sizeof(uint64_t));
  double* dword = shmem_calloc(1, sizeof(double));
  unsigned char* seen = calloc((size_t)n * kIters * 4, 1);
  CHECK(counter && winner && bits && dword && seen, "allocation");
  shmem_barrier_all();
  for (int i = 0; i < kIters; i++) {
    long v = shmem_long_atomic_fetch_inc(counter, 0);
    CHECK(v >= 0 && v < (long)n * kIters * 4, "fetch_inc returned %ld", v);
    shmem_long_atomic_inc(counter, 0);
    shmem_long_atomic_add(counter, 2, 0);
  }
  shmem_barrier_all();
  CHECK(shmem_long_atomic_fetch(counter, 0) == (long)n * kIters * 4,
        "counter %ld, want %ld", shmem_long_atomic_fetch(counter, 0),
        (long)n * kIters * 4);
  /* fetch_add's values: one per PE and iteration, none twice. */
  long* ticket = shmem_calloc(1, sizeof(long));
  long mine[kIters];
  for (int i = 0; i < kIters; i++)
    mine[i] = shmem_long_atomic_fetch_add(ticket, 1, 0);
  long* all = shmem_malloc((size_t)n * kIters * sizeof(long));
  shmem_barrier_all();
  shmem_long_put(all + (size_t)me * kIters, mine, kIters, 0);
  shmem_barrier_all();
  if (me == 0) {
    for (int i = 0; i < n * kIters; i++) {
      CHECK(all[i] >= 0 && all[i] < n * kIters, "ticket %ld", all[i]);
      CHECK(!seen[all[i]], "ticket %ld taken twice", all[i]);
      seen[all[i]] = 1;
    }
  }
  /* One compare_swap wins. */
  long old = shmem_long_atomic_compare_swap(winner, 0, me + 1, 0);
  shmem_barrier_all();
  long* wins = shmem_calloc(1, sizeof(long));
  if (old == 0) shmem_long_atomic_inc(wins, 0);
  shmem_barrier_all();
  if (me == 0) {
    CHECK(*wins == 1, "%ld compare_swap winners", *wins);
    CHECK(*winner >= 1 && *winner <= n, "winner %ld", *winner);
  }
  /* swap and set on the right neighbour, fetch back. */
  const int right = (me + 1) % n;
  shmem_barrier_all();
  shmem_uint64_atomic_set(bits, 0xf0f0u, right);
  shmem_barrier_all();
  CHECK(*bits == 0xf0f0u, "set: %llx", (unsigned long long)*bits);
  shmem_barrier_all();
  uint64_t before =
      shmem_uint64_atomic_swap(bits, 0x0ff0u | (uint64_t)me << 32, right);
  CHECK(before == 0xf0f0u, "swap returned %llx", (unsigned long long)before);
  shmem_barrier_all();
  const int left = (me + n - 1) % n;
  CHECK(*bits == (0x0ff0u | (uint64_t)left << 32), "swap left %llx",
        (unsigned long long)*bits);
  shmem_barrier_all();
  /* Bitwise on PE 0's word: every PE sets its own bit, then clears it. */
  if (me == 0) *bits = 0;
  shmem_barrier_all();
  shmem_uint64_atomic_or(bits, UINT64_C(1) << me, 0);
  shmem_barrier_all();
  CHECK(shmem_uint64_atomic_fetch(bits, 0) ==
            (n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1),
        "or: %llx", (unsigned long long)shmem_uint64_atomic_fetch(bits, 0));
  shmem_barrier_all();
  uint64_t b = shmem_uint64_atomic_fetch_and(bits, ~(UINT64_C(1) << me), 0);
  CHECK(b & (UINT64_C(1) << me), "fetch_and: my bit was clear");
  shmem_uint64_atomic_xor(bits, UINT64_C(1) << 63, 0);
  shmem_barrier_all();
  CHECK(shmem_uint64_atomic_fetch(bits, 0) == (n % 2 ? UINT64_C(1) << 63 : 0),
        "and/xor: %llx",
        (unsigned long long)shmem_uint64_atomic_fetch(bits, 0));
  /* 32-bit: int counter and its neighbour, in one 8-byte block. */
  int* ints = shmem_calloc(2, sizeof(int));
  uint32_t* u32 = shmem_calloc(4, sizeof(uint32_t));
  int32_t* i32 = shmem_calloc(2, sizeof(int32_t));
  float* fl = shmem_calloc(2, sizeof(float));
  CHECK(ints && u32 && i32 && fl && ticket && all, "allocation (32-bit)");
  if (me == 0) {
    ints[1] = 0x5a5a5a5a;
    u32[1] = 0xffffffffu; /* fetch_and clears bits of it */
    u32[3] = 0x6b6b6b6bu;
  }
  shmem_barrier_all();
  int iv_last = -1;
  for (int i = 0; i < kIters; i++) {
    int v = shmem_int_atomic_fetch_inc(ints, 0);
    CHECK(v > iv_last && v < n * kIters * 3, "int fetch_inc %d after %d", v,
          iv_last);
    iv_last = v;
    shmem_int_atomic_add(ints, 2, 0);
  }
  /* each PE's bit: or, and-clear, xor; a uint32 swap; an int32 cswap */
  uint32_t o = shmem_uint32_atomic_fetch_or(u32 + 2, 1u << me, 0);
  CHECK(!(o & (1u << me)), "uint32 fetch_or: my bit was set");
  shmem_uint32_atomic_and(u32 + 1, ~(1u << me), 0);
  uint32_t x = shmem_uint32_atomic_fetch_xor(u32 + 0, 1u << me, 0);
  CHECK(!(x & (1u << me)), "uint32 fetch_xor: my bit was set");
  uint32_t sw = shmem_uint32_atomic_swap(u32 + 3, (uint32_t)me + 1, 0);
  CHECK(sw == 0x6b6b6b6bu || (sw >= 1 && sw <= (uint32_t)n),
        "uint32 swap returned %x", sw);
  int32_t won = shmem_int32_atomic_compare_swap(i32, 0, -(me + 1), 0);
  CHECK(won == 0 || (won < 0 && won >= -n), "int32 compare_swap: %d", won);
  shmem_float_atomic_set(fl + (me % 2), 1.5f + (float)me, right);
  shmem_barrier_all();
  if (me == 0) {
    CHECK(shmem_int_atomic_fetch(ints, 0) == n * kIters * 3, "int counter %d",
          shmem_int_atomic_fetch(ints, 0));
    CHECK(ints[1] == 0x5a5a5a5a, "int counter's neighbour %x", ints[1]);
    const uint32_t mask = n >= 32 ? 0xffffffffu : (1u << n) - 1;
    CHECK(u32[0] == mask, "uint32 xor word %x", u32[0]);
    CHECK(u32[1] == ~mask, "uint32 and word %x", u32[1]);
    CHECK(u32[2] == mask, "uint32 or word %x", u32[2]);
    CHECK(u32[3] >= 1 && u32[3] <= (uint32_t)n, "uint32 swap word %x", u32[3]);
    CHECK(i32[0] < 0 && i32[0] >= -n && i32[1] == 0,
          "int32 compare_swap words %d %d", i32[0], i32[1]);
  }
  /* the float my left neighbour set; int32 fetch of a negative value */
  CHECK(shmem_float_atomic_fetch(fl + (left % 2), me) == 1.5f + (float)left,
        "float set/fetch: %g", (double)fl[left % 2]);
  CHECK(shmem_int32_atomic_fetch(i32, 0) < 0, "int32 fetch sign");
  uint32_t got = 0;
  shmem_uint32_atomic_fetch_nbi(&got, u32 + 2, 0);
  shmem_quiet();
  CHECK(got != 0, "uint32 fetch_nbi read 0");
  /* Extended type: double swap. */
  shmem_barrier_all();
  if (me == 0) shmem_double_atomic_set(dword, 2.5, right);
  shmem_barrier_all();
  if (me == 1 % n) CHECK(*dword == 2.5, "double set: %g", *dword);
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
