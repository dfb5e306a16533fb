/* wait_until_all/any/some, their _vector forms and test_all/any/some: PE 0
 * waits on words the others set one at a time by put. */
#include <shmem.h>
#include <stdint.h>
#define PROGRAM "shmem_wait_set"
#include "check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* flags = shmem_calloc((size_t)n, sizeof(long));
  long* go = shmem_calloc(1, sizeof(long));
  CHECK(flags && go, "allocation");
  size_t idx[64];
  int status[64] = {0};
  if (me == 0) {
    /* Nothing set yet: the tests say so. */
    CHECK(shmem_long_test_any(flags + 1, (size_t)n - 1, NULL, SHMEM_CMP_NE,
                              0) == SIZE_MAX,
          "test_any before any put");
    CHECK(shmem_long_test_all(flags + 1, (size_t)n - 1, NULL, SHMEM_CMP_NE,
                              0) == 0,
          "test_all before any put");
    CHECK(shmem_long_test_some(flags + 1, (size_t)n - 1, idx, NULL,
                               SHMEM_CMP_NE, 0) == 0,
          "test_some before");
    /* Excluded by status, or no words: any returns SIZE_MAX at once. */
    for (int i = 0; i < n; i++) status[i] = 1;
    CHECK(shmem_long_wait_until_any(flags, (size_t)n, status, SHMEM_CMP_EQ,
                                    7) == SIZE_MAX,
          "all excluded");
    for (int i = 0; i < n; i++) status[i] = 0;
    status[0] = 1; /* PE 0's own word is never set */
    /* Let PE n-1 go first; any must find it. */
    shmem_long_p(go, 1, n - 1);
    size_t first =
        shmem_long_wait_until_any(flags, (size_t)n, status, SHMEM_CMP_NE, 0);
    CHECK(first == (size_t)n - 1, "wait_until_any = %zu", first);
    CHECK(flags[n - 1] == n - 1 + 100, "flag %d = %ld", n - 1, flags[n - 1]);
    /* some: at least that one. */
    size_t k = shmem_long_wait_until_some(flags, (size_t)n, idx, status,
                                          SHMEM_CMP_NE, 0);
    CHECK(k >= 1 && idx[k - 1] == (size_t)n - 1, "wait_until_some %zu", k);
    /* Now the others. */
    for (int pe = 1; pe < n - 1; pe++) shmem_long_p(go, 1, pe);
    shmem_long_wait_until_all(flags, (size_t)n, status, SHMEM_CMP_NE, 0);
    for (int pe = 1; pe < n; pe++)
      CHECK(flags[pe] == pe + 100, "flag %d = %ld", pe, flags[pe]);
    CHECK(shmem_long_test_all(flags, (size_t)n, status, SHMEM_CMP_GE, 101) == 1,
          "test_all after");
    /* Vector forms: flags[pe] == pe + 100 each. */
    long want[64];
    for (int i = 0; i < n; i++) want[i] = i + 100;
    shmem_long_wait_until_all_vector(flags, (size_t)n, status, SHMEM_CMP_EQ,
                                     want);
    CHECK(shmem_long_test_some_vector(flags, (size_t)n, idx, status,
                                      SHMEM_CMP_EQ, want) == (size_t)n - 1,
          "test_some_vector");
    want[1] = 5;
    CHECK(shmem_long_test_all_vector(flags, (size_t)n, status, SHMEM_CMP_EQ,
                                     want) == 0,
          "test_all_vector mismatch");
    const size_t eq =
        shmem_long_test_any_vector(flags, (size_t)n, NULL, SHMEM_CMP_EQ, want);
    CHECK(eq >= 2 && eq < (size_t)n, "test_any_vector = %zu", eq);
    const size_t ne = shmem_long_wait_until_any_vector(flags, (size_t)n, status,
                                                       SHMEM_CMP_NE, want);
    CHECK(ne == 1, "wait_until_any_vector = %zu (want 1)", ne);
  } else {
    shmem_long_wait_until(go, SHMEM_CMP_EQ, 1);
    shmem_long_p(&flags[me], me + 100, 0);
    shmem_quiet();
  }
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
