/* shmem_set_lock / shmem_clear_lock: every PE adds to a counter at PE 0 by
 * get, then put (not atomic) under the lock; the sum must be exact. Then
 * shmem_test_lock: refused while another PE holds the lock. */
#include <shmem.h>
#define PROGRAM "shmem_locks"
#include "check.h"

int main(void) {
  enum { ROUNDS = 50 };
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* lock = shmem_calloc(1, sizeof(long));
  long* lock2 = shmem_calloc(1, sizeof(long));
  long* counter = shmem_calloc(1, sizeof(long));
  long* held = shmem_calloc(1, sizeof(long));
  CHECK(lock && lock2 && counter && held, "allocation");
  for (int r = 0; r < ROUNDS; r++) {
    shmem_set_lock(lock);
    const long v = shmem_long_g(counter, 0);
    shmem_long_p(counter, v + 1, 0);
    shmem_clear_lock(lock);
  }
  shmem_barrier_all();
  if (me == 0)
    CHECK(*counter == (long)n * ROUNDS, "counter %ld, want %ld", *counter,
          (long)n * ROUNDS);
  /* PE 0 holds lock2; the others' test_lock must fail until it clears. */
  if (me == 0) CHECK(shmem_test_lock(lock2) == 0, "test_lock of a free lock");
  shmem_barrier_all();
  if (me != 0) CHECK(shmem_test_lock(lock2) == 1, "test_lock of a held lock");
  shmem_barrier_all();
  if (me == 0) shmem_clear_lock(lock2);
  shmem_barrier_all();
  /* Free again: each PE in turn takes and clears it with test_lock. */
  for (int pe = 0; pe < n; pe++) {
    if (pe == me) {
      CHECK(shmem_test_lock(lock2) == 0, "test_lock after the clear");
      shmem_clear_lock(lock2);
    }
    shmem_barrier_all();
  }
  PASS();
  shmem_finalize();
  return 0;
}
