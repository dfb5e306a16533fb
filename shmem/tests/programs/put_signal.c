/* shmem_put_signal: data and a signal word together; the target waits on
 * the signal and then finds the data (ADD from every PE, then SET). */
#include <shmem.h>
#include <stdint.h>
#define PROGRAM "shmem_put_signal"
#include "check.h"

enum { kLongs = 4096 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* slots = shmem_malloc((size_t)n * kLongs * sizeof(long));
  uint64_t* sig = shmem_calloc(2, sizeof(uint64_t));
  long src[kLongs];
  CHECK(slots && sig, "allocation");
  for (int i = 0; i < kLongs; i++) src[i] = me * 77777L + i;
  shmem_barrier_all();
  for (int pe = 0; pe < n; pe++)
    shmem_long_put_signal(slots + (size_t)me * kLongs, src, kLongs, &sig[0], 1,
                          SHMEM_SIGNAL_ADD, pe);
  uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, (uint64_t)n);
  CHECK(got == (uint64_t)n, "signal %llu", (unsigned long long)got);
  for (int pe = 0; pe < n; pe++)
    for (int i = 0; i < kLongs; i++)
      CHECK(slots[(size_t)pe * kLongs + i] == pe * 77777L + i,
            "data from PE %d [%d] after the signal", pe, i);
  const int right = (me + 1) % n;
  shmem_barrier_all();
  shmem_putmem_signal_nbi(slots, src, 64, &sig[1], 1000 + me, SHMEM_SIGNAL_SET,
                          right);
  shmem_quiet();
  const int left = (me + n - 1) % n;
  shmem_signal_wait_until(&sig[1], SHMEM_CMP_NE, 0);
  CHECK(shmem_signal_fetch(&sig[1]) == (uint64_t)(1000 + left), "SET %llu",
        (unsigned long long)shmem_signal_fetch(&sig[1]));
  CHECK(slots[0] == left * 77777L, "data with SET");
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
