/* shmem_barrier_all orders: every PE adds to every PE's counter, then the
 * barrier; after it each PE must see all adds (the barrier completes the
 * AMOs first). Many rounds, and shmem_sync_all between. */
#include <shmem.h>
#define PROGRAM "shmem_barrier"
#include "check.h"

enum { kRounds = 30 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* count = shmem_calloc(1, sizeof(long));
  long* stamp = shmem_calloc((size_t)n, sizeof(long));
  CHECK(count && stamp, "allocation");
  shmem_barrier_all();
  for (long r = 1; r <= kRounds; r++) {
    for (int pe = 0; pe < n; pe++) {
      shmem_long_atomic_add(count, 1, pe);
      shmem_long_p(&stamp[me], r, pe);
    }
    shmem_barrier_all();
    CHECK(*count == r * n, "round %ld: count %ld, want %ld", r, *count, r * n);
    for (int pe = 0; pe < n; pe++)
      CHECK(stamp[pe] == r, "round %ld: PE %d's stamp %ld", r, pe, stamp[pe]);
    shmem_sync_all();
  }
  PASS();
  shmem_finalize();
  return 0;
}
