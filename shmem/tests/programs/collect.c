/* collect (sizes differing per PE), fcollect, alltoall and alltoalls on
 * SHMEM_TEAM_WORLD, each result checked element by element; and two
 * collectives into one dest back to back while PE 0 is slow to read the
 * first result (no PE may write into it before PE 0 enters the second). */
#define _POSIX_C_SOURCE 199309L
#include <shmem.h>
#include <string.h>
#include <time.h>
#define PROGRAM "shmem_collect"
#include "check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  enum { MAX = 3000 };
  long* src = shmem_malloc(MAX * 4 * sizeof(long));
  long* dst = shmem_malloc((MAX * 4 * 4 + 8) * sizeof(long));
  CHECK(src && dst, "allocation");
  /* fcollect: small (inline PUSHes) and large. */
  static const size_t counts[] = {1, 3, 1000};
  for (size_t c = 0; c < 3; c++) {
    const size_t k = counts[c];
    for (size_t i = 0; i < k; i++) src[i] = me * 100000L + (long)i;
    for (size_t i = 0; i < k * n + 8; i++) dst[i] = -1;
    shmem_barrier_all();
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, k) == 0,
          "fcollect %zu", k);
    for (int pe = 0; pe < n; pe++)
      for (size_t i = 0; i < k; i++)
        CHECK(dst[pe * k + i] == pe * 100000L + (long)i,
              "fcollect %zu: [%d][%zu] = %ld", k, pe, i, dst[pe * k + i]);
    CHECK(dst[k * n] == -1, "fcollect %zu wrote past the end", k);
  }
  /* collect: PE p gives p * 700 + 1 elements. */
  const size_t mine = (size_t)me * 700 + 1;
  for (size_t i = 0; i < mine; i++) src[i] = me * 100000L + (long)i;
  size_t total = 0;
  for (int pe = 0; pe < n; pe++) total += (size_t)pe * 700 + 1;
  for (size_t i = 0; i < total + 8; i++) dst[i] = -1;
  shmem_barrier_all();
  CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, mine) == 0, "collect");
  size_t at = 0;
  for (int pe = 0; pe < n; pe++)
    for (size_t i = 0; i < (size_t)pe * 700 + 1; i++, at++)
      CHECK(dst[at] == pe * 100000L + (long)i, "collect: [%zu] = %ld", at,
            dst[at]);
  CHECK(dst[total] == -1, "collect wrote past the end");
  /* collectmem of odd byte counts. */
  unsigned char* bsrc = (unsigned char*)src;
  unsigned char* bdst = (unsigned char*)dst;
  for (int i = 0; i < me + 1; i++) bsrc[i] = (unsigned char)(me * 16 + i);
  shmem_barrier_all();
  CHECK(shmem_collectmem(SHMEM_TEAM_WORLD, bdst, bsrc, (size_t)me + 1) == 0,
        "collectmem");
  at = 0;
  for (int pe = 0; pe < n; pe++)
    for (int i = 0; i < pe + 1; i++, at++)
      CHECK(bdst[at] == (unsigned char)(pe * 16 + i), "collectmem [%zu]", at);
  /* alltoall: block j of PE p holds p * 1000 + j * 10 + i. */
  const size_t k = 500;
  for (int j = 0; j < n; j++)
    for (size_t i = 0; i < k; i++)
      src[j * k + i] = me * 1000L + j * 10 + (long)i;
  for (size_t i = 0; i < k * n; i++) dst[i] = -1;
  shmem_barrier_all();
  CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, k) == 0, "alltoall");
  for (int pe = 0; pe < n; pe++)
    for (size_t i = 0; i < k; i++)
      CHECK(dst[pe * k + i] == pe * 1000L + me * 10 + (long)i,
            "alltoall: from %d [%zu] = %ld", pe, i, dst[pe * k + i]);
  /* alltoalls: dst stride 3, sst stride 2, 5 elements per PE. */
  const size_t e = 5;
  for (size_t i = 0; i < n * e * 2; i++) src[i] = -2;
  for (int j = 0; j < n; j++)
    for (size_t i = 0; i < e; i++)
      src[2 * (j * e + i)] = me * 1000L + j * 10 + (long)i;
  for (size_t i = 0; i < n * e * 3; i++) dst[i] = -1;
  shmem_barrier_all();
  CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 3, 2, e) == 0,
        "alltoalls");
  for (int pe = 0; pe < n; pe++)
    for (size_t i = 0; i < e; i++) {
      CHECK(dst[3 * (pe * e + i)] == pe * 1000L + me * 10 + (long)i,
            "alltoalls: from %d [%zu] = %ld", pe, i, dst[3 * (pe * e + i)]);
      CHECK(dst[3 * (pe * e + i) + 1] == -1, "alltoalls wrote between");
    }
  /* Back to back into one dest: fcollect, PE 0 reads its result late,
   * then alltoall (other values) into the same dest. */
  for (int round = 0; round < 3; round++) {
    src[0] = me + 1000L * round;
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "fcollect");
    if (me == 0) {
      const struct timespec nap = {0, 200 * 1000 * 1000};
      nanosleep(&nap, NULL);
    }
    for (int pe = 0; pe < n; pe++)
      CHECK(dst[pe] == pe + 1000L * round,
            "back to back: fcollect result [%d] = %ld overwritten", pe,
            dst[pe]);
    for (int j = 0; j < n; j++) src[j] = -(me * 100L + j) - 1;
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "alltoall");
    for (int pe = 0; pe < n; pe++)
      CHECK(dst[pe] == -(pe * 100L + me) - 1, "back to back: alltoall [%d]",
            pe);
  }
  /* Bad strides are refused. */
  CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 0, 1, e) != 0,
        "a zero stride was not refused");
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
