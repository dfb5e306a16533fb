/* Nonblocking puts and gets completed by shmem_quiet: many _nbi puts to
 * every other PE, quiet, then a flag; the target checks the data once the
 * flag is there. get_nbi into the heap, checked after quiet. */
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_nbi_quiet"
#include "check.h"

enum { kChunks = 32, kChunk = 2048 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* data = shmem_malloc((size_t)n * kChunks * kChunk);
  long* src = shmem_malloc(kChunks * kChunk);
  long* flags = shmem_calloc((size_t)n, sizeof(long));
  long* back = shmem_malloc(kChunks * kChunk);
  CHECK(data && src && flags && back, "allocation");
  const size_t per = kChunk / sizeof(long);
  for (size_t i = 0; i < kChunks * per; i++) src[i] = me * 1000000L + (long)i;
  shmem_barrier_all();
  for (int pe = 0; pe < n; pe++) {
    long* at = data + (size_t)me * kChunks * per;
    for (int c = 0; c < kChunks; c++)
      shmem_long_put_nbi(at + c * per, src + c * per, per, pe);
  }
  shmem_quiet();
  for (int pe = 0; pe < n; pe++) shmem_long_atomic_set(&flags[me], 1, pe);
  for (int pe = 0; pe < n; pe++) {
    shmem_long_wait_until(&flags[pe], SHMEM_CMP_EQ, 1);
    const long* got = data + (size_t)pe * kChunks * per;
    for (size_t i = 0; i < kChunks * per; i++)
      CHECK(got[i] == pe * 1000000L + (long)i,
            "data from PE %d [%zu] = %ld after its flag", pe, i, got[i]);
  }
  const int left = (me + n - 1) % n;
  memset(back, 0, kChunks * kChunk);
  for (int c = 0; c < kChunks; c++)
    shmem_long_get_nbi(back + c * per, src + c * per, per, left);
  shmem_quiet();
  for (size_t i = 0; i < kChunks * per; i++)
    CHECK(back[i] == left * 1000000L + (long)i, "get_nbi [%zu] = %ld", i,
          back[i]);
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
