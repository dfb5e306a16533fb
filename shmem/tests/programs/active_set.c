/* The active-set collectives on 4 PEs: the odd PEs (PE_start 1,
 * logPE_stride 1, PE_size 2) and, at the same time, the even ones (0, 1,
 * 2) run every routine, each set excluding the other's PEs: barrier
 * (orders a put to the partner), broadcast32/64 (the root's dest left
 * alone), collect32/64, fcollect32/64, alltoall32/64, alltoalls32/64 and
 * every shmem_TYPE_OP_to_all (the complex sums and products too); then
 * to_all on a set of 3 (PEs 1, 2, 3; PE
 * 0 is out) and on all 4. Every result is checked, and pSync is
 * SHMEM_SYNC_VALUE again after each call. */
#include <complex.h>
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_active_set"
#include "check.h"

static long pSync[SHMEM_SYNC_SIZE];
static long double pWrk[64];
static long flag;
enum { BIG = 3000 };
static int32_t s32[4 * BIG], d32[4 * BIG + 8];
static int64_t s64[4 * BIG], d64[4 * BIG + 8];

static void synced(const char* what) {
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
    CHECK(pSync[i] == SHMEM_SYNC_VALUE, "%s left pSync[%d] = %ld", what, i,
          pSync[i]);
}

/* The set's members are start + 2 k; this PE is member `me`. */
static int start, me;

#define FILL(a, n, v)                                      \
  do {                                                     \
    for (size_t i_ = 0; i_ < (size_t)(n); i_++) a[i_] = v; \
  } while (0)

static void test_collectives(void) {
  const size_t small = 5, sizes[] = {small, BIG};
  for (int s = 0; s < 2; s++) {
    const size_t k = sizes[s];
    /* broadcast from member 1, then from member 0 */
    FILL(s32, k, (int32_t)(start * 1000 + me * 100 + (int)i_));
    FILL(d32, k + 8, -7);
    shmem_broadcast32(d32, s32, k, 1, start, 1, 2, pSync);
    synced("broadcast32");
    for (size_t i = 0; i < k + 8; i++)
      CHECK(d32[i] == (me == 1 || i >= k ? -7 : start * 1000 + 100 + (int)i),
            "broadcast32 %zu: [%zu] = %d", k, i, d32[i]);
    shmem_barrier(start, 1, 2, pSync);
    FILL(s64, k, (int64_t)start * 1000000 + me * 1000 + (int64_t)i_);
    FILL(d64, k + 8, -7);
    shmem_broadcast64(d64, s64, k, 0, start, 1, 2, pSync);
    synced("broadcast64");
    for (size_t i = 0; i < k + 8; i++)
      CHECK(d64[i] == (me == 0 || i >= k ? -7 : start * 1000000L + (long)i),
            "broadcast64 %zu: [%zu] = %ld", k, i, (long)d64[i]);
    shmem_barrier(start, 1, 2, pSync);
    /* fcollect: k each */
    FILL(s32, k, (int32_t)(start * 1000 + me * 100 + (int)i_));
    FILL(d32, 2 * k + 8, -7);
    shmem_fcollect32(d32, s32, k, start, 1, 2, pSync);
    synced("fcollect32");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < k; i++)
        CHECK(d32[m * k + i] == start * 1000 + m * 100 + (int)i,
              "fcollect32 %zu: [%d][%zu] = %d", k, m, i, d32[m * k + i]);
    CHECK(d32[2 * k] == -7, "fcollect32 wrote past the end");
    FILL(s64, k, (int64_t)start * 1000000 + me * 1000 + (int64_t)i_);
    FILL(d64, 2 * k + 8, -7);
    shmem_fcollect64(d64, s64, k, start, 1, 2, pSync);
    synced("fcollect64");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < k; i++)
        CHECK(d64[m * k + i] == start * 1000000L + m * 1000 + (long)i,
              "fcollect64 %zu: [%d][%zu]", k, m, i);
    CHECK(d64[2 * k] == -7, "fcollect64 wrote past the end");
    /* collect: member m gives k + 3 m */
    const size_t mine = k + 3 * (size_t)me, total = 2 * k + 3;
    FILL(s32, mine, (int32_t)(start * 1000 + me * 100 + (int)i_));
    FILL(d32, total + 8, -7);
    shmem_collect32(d32, s32, mine, start, 1, 2, pSync);
    synced("collect32");
    for (size_t i = 0; i < total; i++) {
      const int m = i < k ? 0 : 1;
      const int at = (int)(i - (m ? k : 0));
      CHECK(d32[i] == start * 1000 + m * 100 + at, "collect32: [%zu] = %d", i,
            d32[i]);
    }
    CHECK(d32[total] == -7, "collect32 wrote past the end");
    FILL(s64, mine, (int64_t)start * 1000000 + me * 1000 + (int64_t)i_);
    FILL(d64, total + 8, -7);
    shmem_collect64(d64, s64, mine, start, 1, 2, pSync);
    synced("collect64");
    for (size_t i = 0; i < total; i++) {
      const int m = i < k ? 0 : 1;
      const long at = (long)(i - (m ? k : 0));
      CHECK(d64[i] == start * 1000000L + m * 1000 + at, "collect64: [%zu]", i);
    }
    CHECK(d64[total] == -7, "collect64 wrote past the end");
    /* alltoall: block j (k elements) to member j */
    FILL(s32, 2 * k, (int32_t)(start * 100000 + me * 10000 + (int)i_));
    FILL(d32, 2 * k + 8, -7);
    shmem_alltoall32(d32, s32, k, start, 1, 2, pSync);
    synced("alltoall32");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < k; i++)
        CHECK(d32[m * k + i] == start * 100000 + m * 10000 + (int)(me * k + i),
              "alltoall32 %zu: [%d][%zu] = %d", k, m, i, d32[m * k + i]);
    CHECK(d32[2 * k] == -7, "alltoall32 wrote past the end");
    FILL(s64, 2 * k, (int64_t)start * 1000000 + me * 100000 + (int64_t)i_);
    FILL(d64, 2 * k + 8, -7);
    shmem_alltoall64(d64, s64, k, start, 1, 2, pSync);
    synced("alltoall64");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < k; i++)
        CHECK(d64[m * k + i] ==
                  start * 1000000L + m * 100000L + (long)(me * k + i),
              "alltoall64 %zu: [%d][%zu]", k, m, i);
    /* alltoalls: source 3 apart, dest 2 apart; k / 2 + 1 elements */
    const size_t e = k / 2 + 1;
    FILL(s32, 3 * 2 * e, (int32_t)(start * 100000 + me * 10000 + (int)i_));
    FILL(d32, 2 * 2 * e + 8, -7);
    shmem_alltoalls32(d32, s32, 2, 3, e, start, 1, 2, pSync);
    synced("alltoalls32");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < e; i++) {
        CHECK(d32[2 * (m * e + i)] ==
                  start * 100000 + m * 10000 + (int)(3 * (me * e + i)),
              "alltoalls32 %zu: [%d][%zu] = %d", e, m, i, d32[2 * (m * e + i)]);
        CHECK(d32[2 * (m * e + i) + 1] == -7, "alltoalls32 wrote a gap");
      }
    FILL(s64, 3 * 2 * e, (int64_t)start * 1000000 + me * 100000 + (int64_t)i_);
    FILL(d64, 2 * 2 * e + 8, -7);
    shmem_alltoalls64(d64, s64, 2, 3, e, start, 1, 2, pSync);
    synced("alltoalls64");
    for (int m = 0; m < 2; m++)
      for (size_t i = 0; i < e; i++) {
        CHECK(d64[2 * (m * e + i)] ==
                  start * 1000000L + m * 100000L + (long)(3 * (me * e + i)),
              "alltoalls64 %zu: [%d][%zu]", e, m, i);
        CHECK(d64[2 * (m * e + i) + 1] == -7, "alltoalls64 wrote a gap");
      }
    shmem_barrier(start, 1, 2, pSync);
    synced("barrier");
  }
}

/* One to_all on the set (PE_start ps, logPE_stride 1 or 0, PE_size psz,
 * this PE member pm): member m's element i is VALUE(m, i); the result is
 * every member's combined by OP. */
#define ARITH(a, b, OP)                             \
  (!strcmp(#OP, "sum")    ? (a) + (b)               \
   : !strcmp(#OP, "prod") ? (a) * (b)               \
   : !strcmp(#OP, "min")  ? ((a) < (b) ? (a) : (b)) \
                          : ((a) > (b) ? (a) : (b)))
#define BITS(a, b, OP)                \
  (!strcmp(#OP, "and")  ? ((a) & (b)) \
   : !strcmp(#OP, "or") ? ((a) | (b)) \
                        : ((a) ^ (b)))
#define TO_ALL(N, T, OP, COMBINE, VALUE, NR, PS, LOG, PSZ, PM)            \
  do {                                                                    \
    T* src_ = (T*)shmem_malloc((NR) * sizeof(T));                         \
    T* dst_ = (T*)shmem_malloc((NR + 1) * sizeof(T));                     \
    CHECK(src_&& dst_, "allocation");                                     \
    if ((PM) >= 0) {                                                      \
      for (int i = 0; i < (NR); i++) src_[i] = (T)(VALUE((PM), i));       \
      dst_[NR] = (T)-9;                                                   \
      shmem_##N##_##OP##_to_all(dst_, src_, NR, PS, LOG, PSZ, (T*)pWrk,   \
                                pSync);                                   \
      synced("shmem_" #N "_" #OP "_to_all");                              \
      for (int i = 0; i < (NR); i++) {                                    \
        T want_ = (T)(VALUE(0, i));                                       \
        for (int m = 1; m < (PSZ); m++)                                   \
          want_ = (T)COMBINE(want_, (T)(VALUE(m, i)), OP);                \
        CHECK(dst_[i] == want_,                                           \
              "shmem_" #N "_" #OP                                         \
              "_to_all [%d] = %g, "                                       \
              "want %g",                                                  \
              i, (double)dst_[i], (double)want_);                         \
      }                                                                   \
      CHECK(dst_[NR] == (T)-9, "shmem_" #N "_" #OP "_to_all wrote past"); \
    }                                                                     \
    shmem_barrier_all();                                                  \
    shmem_free(dst_);                                                     \
    shmem_free(src_);                                                     \
  } while (0)
/* Complex numbers have no order: only sum and product. */
#define CARITH(a, b, OP) (!strcmp(#OP, "sum") ? (a) + (b) : (a) * (b))
#define AVAL(m, i) ((m) + 1 + (i) % 3)
#define CVAL(m, i) ((m) + 1 + (i) % 3 + ((m) - (i) % 2) * I)
#define BVAL(m, i) ((((m) + 1) * 0x11) ^ (i))
#define ON_PAIR(N, T, OP, C, V) TO_ALL(N, T, OP, C, V, 9, start, 1, 2, me)
#define PAIR_BITWISE(N, T)        \
  ON_PAIR(N, T, and, BITS, BVAL); \
  ON_PAIR(N, T, or, BITS, BVAL);  \
  ON_PAIR(N, T, xor, BITS, BVAL)
#define PAIR_ARITH(N, T)           \
  ON_PAIR(N, T, min, ARITH, AVAL); \
  ON_PAIR(N, T, max, ARITH, AVAL); \
  ON_PAIR(N, T, sum, ARITH, AVAL); \
  ON_PAIR(N, T, prod, ARITH, AVAL)

int main(void) {
  shmem_init();
  const int pe = shmem_my_pe();
  CHECK(shmem_n_pes() == 4, "run with 4 PEs, not %d", shmem_n_pes());
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  start = pe % 2;
  me = pe / 2;
  shmem_barrier_all();
  /* The barrier completes this PE's put before the partner reads it. */
  shmem_long_p(&flag, 100 + pe, start + 2 * (1 - me));
  shmem_barrier(start, 1, 2, pSync);
  synced("barrier");
  CHECK(flag == 100 + start + 2 * (1 - me), "after the barrier flag = %ld",
        flag);
  shmem_barrier(start, 1, 2, pSync);
  test_collectives();
  shmem_barrier_all();
  PAIR_BITWISE(short, short);
  PAIR_BITWISE(int, int);
  PAIR_BITWISE(long, long);
  PAIR_BITWISE(longlong, long long);
  PAIR_ARITH(short, short);
  PAIR_ARITH(int, int);
  PAIR_ARITH(long, long);
  PAIR_ARITH(longlong, long long);
  PAIR_ARITH(float, float);
  PAIR_ARITH(double, double);
  PAIR_ARITH(longdouble, long double);
  ON_PAIR(complexf, float _Complex, sum, CARITH, CVAL);
  ON_PAIR(complexf, float _Complex, prod, CARITH, CVAL);
  ON_PAIR(complexd, double _Complex, sum, CARITH, CVAL);
  ON_PAIR(complexd, double _Complex, prod, CARITH, CVAL);
  /* Chunked: more long doubles than the library's scratch holds at once. */
  TO_ALL(longdouble, long double, sum, ARITH, AVAL, 20000, start, 1, 2, me);
  /* PEs 1, 2, 3 (PE 0 is out), then all four. */
  TO_ALL(long, long, sum, ARITH, AVAL, 9, 1, 0, 3, pe - 1);
  TO_ALL(int, int, prod, ARITH, AVAL, 9, 1, 0, 3, pe - 1);
  TO_ALL(double, double, max, ARITH, AVAL, 9, 0, 0, 4, pe);
  TO_ALL(short, short, xor, BITS, BVAL, 9, 0, 0, 4, pe);
  TO_ALL(complexd, double _Complex, prod, CARITH, CVAL, 9, 1, 0, 3, pe - 1);
  PASS();
  shmem_finalize();
  return 0;
}
