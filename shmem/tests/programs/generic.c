/* C11 type-generic RMA: shmem_put, shmem_get, shmem_p, shmem_g,
 * shmem_iput and shmem_fcollect pick the typed routine from the pointer;
 * each result checked (a wrong pick moves the wrong number of bytes). The
 * same names with a context first pick the context form; the AMOs'
 * generic names, plain and on a context; the reductions' generic names
 * (shmem_sum_reduce and the others) on integers, doubles and complex. */
#include <complex.h>
#include <shmem.h>
#include <stdint.h>
#define PROGRAM "shmem_generic"
#include "check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  double* d = shmem_calloc(8, sizeof(double));
  short* s = shmem_calloc(8, sizeof(short));
  int64_t* w = shmem_calloc(8, sizeof(int64_t));
  unsigned char* c = shmem_calloc(16, 1);
  CHECK(d && s && w && c, "allocation");
  const double dv[4] = {me + 0.25, me + 0.5, me + 0.75, me + 1.0};
  const short sv[3] = {(short)(me * 3), (short)(me * 3 + 1), (short)-me};
  shmem_put(d, dv, 4, right);
  shmem_put(s, sv, 3, right);
  shmem_p(w, (int64_t)me << 40, right);
  shmem_p(&c[15], (unsigned char)(200 + me), right);
  shmem_barrier_all();
  for (int i = 0; i < 4; i++)
    CHECK(d[i] == left + 0.25 * (i + 1), "double put [%d] = %g", i, d[i]);
  CHECK(d[4] == 0, "double put wrote past 4 elements");
  CHECK(s[0] == left * 3 && s[1] == left * 3 + 1 && s[2] == -left && s[3] == 0,
        "short put %d %d %d %d", s[0], s[1], s[2], s[3]);
  CHECK(w[0] == (int64_t)left << 40, "int64 p");
  CHECK(c[15] == 200 + left && c[14] == 0, "uchar p");
  CHECK(shmem_g(w, right) == (int64_t)me << 40, "int64 g");
  double back[4];
  shmem_get(back, d, 4, right);
  for (int i = 0; i < 4; i++)
    CHECK(back[i] == me + 0.25 * (i + 1), "double get [%d]", i);
  short strided[3] = {0};
  shmem_iget(strided, s, 1, 1, 3, right);
  CHECK(strided[0] == me * 3 && strided[2] == -me, "short iget");
  int64_t* all = shmem_calloc((size_t)n, sizeof(int64_t));
  w[1] = me;
  shmem_barrier_all();
  CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, all, &w[1], 1) == 0, "fcollect");
  for (int pe = 0; pe < n; pe++)
    CHECK(all[pe] == pe, "generic fcollect [%d] = %lld", pe,
          (long long)all[pe]);
  long* cnt = shmem_calloc(2, sizeof(long));
  CHECK(cnt, "allocation");
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(0, &ctx) == 0, "shmem_ctx_create");
  const double dv2[2] = {me + 10.5, me + 11.5};
  shmem_put(ctx, &d[5], dv2, 2, right);
  shmem_p(ctx, &s[5], (short)(me + 7), right);
  CHECK(shmem_atomic_fetch_add(ctx, &cnt[0], 2L, 0) % 2 == 0, "ctx fetch_add");
  shmem_atomic_inc(ctx, &cnt[1], 0);
  shmem_atomic_add(&cnt[1], 10L, 0);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  CHECK(d[5] == left + 10.5 && d[6] == left + 11.5 && d[7] == 0,
        "ctx double put %g %g %g", d[5], d[6], d[7]);
  CHECK(s[5] == left + 7 && s[6] == 0, "ctx short p %d %d", s[5], s[6]);
  CHECK(shmem_g(ctx, &s[5], right) == me + 7, "ctx short g");
  if (me == 0)
    CHECK(cnt[0] == 2L * n && cnt[1] == 11L * n, "generic AMOs %ld %ld", cnt[0],
          cnt[1]);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  long* lred = shmem_calloc(4, sizeof(long));
  unsigned int* ured = shmem_calloc(4, sizeof(unsigned int));
  double* dred = shmem_calloc(4, sizeof(double));
  double _Complex* zred = shmem_calloc(4, sizeof(double _Complex));
  CHECK(lred && ured && dred && zred, "allocation");
  lred[0] = me + 1;
  ured[0] = 1u << me;
  dred[0] = me * 0.5;
  zred[0] = me + 1.0 * I;
  shmem_barrier_all();
  CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, &lred[1], &lred[0], 1) == 0 &&
            lred[1] == (long)n * (n + 1) / 2,
        "generic long sum_reduce = %ld", lred[1]);
  CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, &lred[2], &lred[0], 1) == 0,
        "generic long prod_reduce");
  long fact = 1;
  for (int pe = 1; pe <= n; pe++) fact *= pe;
  CHECK(lred[2] == fact, "generic long prod = %ld, want %ld", lred[2], fact);
  CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, &ured[1], &ured[0], 1) == 0 &&
            ured[1] == (1u << n) - 1,
        "generic uint or_reduce = %#x", ured[1]);
  CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, &ured[2], &ured[0], 1) == 0 &&
            ured[2] == (n == 1 ? 1u : 0u),
        "generic uint and_reduce = %#x", ured[2]);
  CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, &dred[1], &dred[0], 1) == 0 &&
            dred[1] == (n - 1) * 0.5,
        "generic double max_reduce = %g", dred[1]);
  CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, &dred[2], &dred[0], 1) == 0 &&
            dred[2] == 0,
        "generic double min_reduce = %g", dred[2]);
  CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, &zred[1], &zred[0], 1) == 0 &&
            creal(zred[1]) == n * (n - 1) / 2.0 && cimag(zred[1]) == n,
        "generic complexd sum_reduce = %g%+gi", creal(zred[1]), cimag(zred[1]));
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
