/* broadcast (bytes, odd lengths, typed) and sum/min/max reductions on
 * SHMEM_TEAM_WORLD, each checked; what the NIC cannot reduce (short, a
 * product) is combined on the PEs. Complex sums (the NIC's, over the
 * parts) and products (combined on the PEs). */
#include <complex.h>
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_collectives"
#include "check.h"

int main(void) {
  static const size_t lengths[] = {1, 3, 4, 7, 4096, 10003};
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  unsigned char* src = shmem_malloc(10003);
  unsigned char* dst = shmem_malloc(10003 + 8);
  CHECK(src && dst, "allocation");
  for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
    const size_t len = lengths[l];
    const int root = (int)(l % (size_t)n);
    for (size_t i = 0; i < len; i++) src[i] = (unsigned char)(me * 13 + i);
    memset(dst, 0xab, len + 8);
    shmem_barrier_all();
    CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, len, root) == 0,
          "broadcastmem %zu", len);
    for (size_t i = 0; i < len; i++)
      CHECK(dst[i] == (unsigned char)(root * 13 + i),
            "broadcast %zu bytes from %d: [%zu] = %u", len, root, i, dst[i]);
    for (size_t i = len; i < len + 8; i++)
      CHECK(dst[i] == 0xab, "broadcast %zu wrote past the end", len);
    shmem_barrier_all();
  }
  long* lsrc = shmem_malloc(100 * sizeof(long));
  long* ldst = shmem_malloc(100 * sizeof(long));
  double* dsrc = shmem_malloc(100 * sizeof(double));
  double* ddst = shmem_malloc(100 * sizeof(double));
  int* isrc = shmem_malloc(100 * sizeof(int));
  int* idst = shmem_malloc(100 * sizeof(int));
  short* ssrc = shmem_calloc(4, sizeof(short));
  short* sdst = shmem_calloc(4, sizeof(short));
  for (int i = 0; i < 100; i++) {
    lsrc[i] = (long)me * 1000 + i;
    dsrc[i] = me * 0.5 + i;
    isrc[i] = (me % 2 ? -1 : 1) * (me + i);
  }
  shmem_barrier_all();
  CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, ldst, lsrc, 100, n - 1) == 0,
        "long_broadcast");
  for (int i = 0; i < 100; i++)
    CHECK(ldst[i] == (long)(n - 1) * 1000 + i, "long_broadcast [%d]", i);
  CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 100) == 0, "sum");
  for (int i = 0; i < 100; i++)
    CHECK(ldst[i] == 1000L * n * (n - 1) / 2 + (long)n * i,
          "long sum [%d] = %ld", i, ldst[i]);
  CHECK(shmem_double_max_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, 100) == 0, "max");
  for (int i = 0; i < 100; i++)
    CHECK(ddst[i] == (n - 1) * 0.5 + i, "double max [%d] = %g", i, ddst[i]);
  CHECK(shmem_int_min_reduce(SHMEM_TEAM_WORLD, idst, isrc, 100) == 0, "min");
  for (int i = 0; i < 100; i++) {
    int want = isrc[i];
    for (int pe = 0; pe < n; pe++) {
      int v = (pe % 2 ? -1 : 1) * (pe + i);
      if (v < want) want = v;
    }
    CHECK(idst[i] == want, "int min [%d] = %d, want %d", i, idst[i], want);
  }
  /* In place. */
  CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, lsrc, lsrc, 100) == 0,
        "in place");
  CHECK(lsrc[7] == 1000L * n * (n - 1) / 2 + 7L * n, "in place sum");
  /* The NIC has no 16-bit reduction and no product: gathered to every PE
   * and combined there. */
  for (int i = 0; i < 4; i++) {
    ssrc[i] = (short)(me * 1000 + i);
    lsrc[i] = me + 1 + i;
  }
  CHECK(shmem_short_sum_reduce(SHMEM_TEAM_WORLD, sdst, ssrc, 4) == 0,
        "short sum");
  for (int i = 0; i < 4; i++)
    CHECK(sdst[i] == (short)(1000 * n * (n - 1) / 2 + n * i),
          "short sum [%d] = %d", i, sdst[i]);
  CHECK(shmem_long_prod_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 4) == 0,
        "long prod");
  for (int i = 0; i < 4; i++) {
    long want = 1;
    for (int pe = 0; pe < n; pe++) want *= pe + 1 + i;
    CHECK(ldst[i] == want, "long prod [%d] = %ld, want %ld", i, ldst[i], want);
  }
  /* Complex: small whole parts, so every sum and product is exact. */
  double _Complex* zsrc = shmem_malloc(5 * sizeof(double _Complex));
  double _Complex* zdst = shmem_malloc(6 * sizeof(double _Complex));
  float _Complex* fsrc = shmem_malloc(3 * sizeof(float _Complex));
  float _Complex* fdst = shmem_malloc(4 * sizeof(float _Complex));
  CHECK(zsrc && zdst && fsrc && fdst, "allocation");
  for (int i = 0; i < 5; i++) zsrc[i] = (me + i) + (2.0 * me - i) * I;
  for (int i = 0; i < 3; i++) fsrc[i] = (1.0f + i) + (float)(me % 2) * I;
  zdst[5] = -9;
  fdst[3] = -9;
  CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, zdst, zsrc, 5) == 0,
        "complexd sum");
  for (int i = 0; i < 5; i++) {
    const double re = n * (n - 1) / 2.0 + (double)n * i;
    const double im = (double)n * (n - 1) - (double)n * i;
    CHECK(creal(zdst[i]) == re && cimag(zdst[i]) == im,
          "complexd sum [%d] = %g%+gi, want %g%+gi", i, creal(zdst[i]),
          cimag(zdst[i]), re, im);
  }
  CHECK(zdst[5] == -9, "complexd sum wrote past 5 elements");
  CHECK(shmem_complexf_prod_reduce(SHMEM_TEAM_WORLD, fdst, fsrc, 3) == 0,
        "complexf prod");
  for (int i = 0; i < 3; i++) {
    float _Complex want = 1;
    for (int pe = 0; pe < n; pe++) want *= (1.0f + i) + (float)(pe % 2) * I;
    CHECK(fdst[i] == want, "complexf prod [%d] = %g%+gi, want %g%+gi", i,
          crealf(fdst[i]), cimagf(fdst[i]), crealf(want), cimagf(want));
  }
  CHECK(fdst[3] == -9, "complexf prod wrote past 3 elements");
  CHECK(shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, zsrc, zsrc, 5) == 0,
        "complexd prod in place");
  for (int i = 0; i < 5; i++) {
    double _Complex want = 1;
    for (int pe = 0; pe < n; pe++) want *= (pe + i) + (2.0 * pe - i) * I;
    CHECK(zsrc[i] == want, "complexd prod [%d] = %g%+gi, want %g%+gi", i,
          creal(zsrc[i]), cimag(zsrc[i]), creal(want), cimag(want));
  }
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
