/* Contexts: each is its own completion domain. Context B holds nbi puts
 * while context A's quiet (and the default context's) completes only A's;
 * B's quiet then completes B's and the data is right at the target. Fence
 * orders a context's data before its flag. A full table refuses more
 * contexts with a nonzero return; destroying one makes room. A team's
 * context numbers PEs in the team. AMOs on a context, typed and generic
 * waits on short and unsigned short. */
#include <shmem.h>
#include <shmemx.h>
#include <string.h>
#define PROGRAM "shmem_contexts"
#include "check.h"

enum { kPuts = 8, kChunk = 64 * 1024, kMaxContexts = 32 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  char* big_src = shmem_malloc(kPuts * kChunk);
  char* big_dst = shmem_malloc(kPuts * kChunk);
  long* small = shmem_calloc(4, sizeof(long));
  long* flag = shmem_calloc(1, sizeof(long));
  long* counter = shmem_calloc(2, sizeof(long));
  short* sw = shmem_calloc(4, sizeof(short));
  unsigned short* uw = shmem_calloc(4, sizeof(unsigned short));
  CHECK(big_src && big_dst && small && flag && counter && sw && uw,
        "allocation");
  for (int i = 0; i < kPuts * kChunk; i++) big_src[i] = (char)(me * 7 + i);

  shmem_ctx_t a = SHMEM_CTX_INVALID, b = SHMEM_CTX_INVALID;
  CHECK(shmem_ctx_create(0, &a) == 0 && a != SHMEM_CTX_INVALID, "create a");
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &b) == 0,
        "create b");
  CHECK(a != b && a != SHMEM_CTX_DEFAULT, "distinct handles");
  shmem_team_t t = SHMEM_TEAM_INVALID;
  CHECK(shmem_ctx_get_team(a, &t) == 0 && t == SHMEM_TEAM_WORLD, "a's team");
  CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD,
        "default's team");
  shmem_barrier_all();

  /* B: kPuts heap-to-heap nbi puts, not waited for. */
  for (int c = 0; c < kPuts; c++)
    shmem_ctx_putmem_nbi(b, big_dst + c * kChunk, big_src + c * kChunk, kChunk,
                         right);
  CHECK(shmemx_ctx_pending(b) == kPuts, "b holds %zu, want %d",
        shmemx_ctx_pending(b), kPuts);
  /* A: two small puts (inline: held until A's quiet). */
  shmem_ctx_long_p(a, &small[0], 100 + me, right);
  shmem_ctx_long_p(a, &small[1], 200 + me, right);
  CHECK(shmemx_ctx_pending(a) == 2, "a holds %zu, want 2",
        shmemx_ctx_pending(a));
  shmem_ctx_quiet(a);
  CHECK(shmemx_ctx_pending(a) == 0, "a's quiet left %zu",
        shmemx_ctx_pending(a));
  /* A's quiet did not take B's operations; nor does the default's. */
  CHECK(shmemx_ctx_pending(b) == kPuts, "a's quiet touched b: %zu",
        shmemx_ctx_pending(b));
  shmem_quiet();
  CHECK(shmemx_ctx_pending(b) == kPuts, "shmem_quiet touched b: %zu",
        shmemx_ctx_pending(b));
  shmem_ctx_quiet(b);
  CHECK(shmemx_ctx_pending(b) == 0, "b's quiet left %zu",
        shmemx_ctx_pending(b));
  shmem_barrier_all();
  for (int i = 0; i < kPuts * kChunk; i++)
    CHECK(big_dst[i] == (char)(left * 7 + i), "byte %d from PE %d", i, left);
  CHECK(small[0] == 100 + left && small[1] == 200 + left, "small %ld %ld",
        small[0], small[1]);
  shmem_barrier_all();

  /* Fence on a context: the data before the flag, over several rounds. */
  for (long round = 1; round <= 4; round++) {
    memset(big_src, (int)(round + me), kChunk);
    shmem_ctx_putmem_nbi(a, big_dst, big_src, kChunk, right);
    shmem_ctx_fence(a);
    shmem_ctx_long_p(a, flag, round, right);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
    for (int i = 0; i < kChunk; i++)
      CHECK(big_dst[i] == (char)(round + left), "round %ld byte %d: %d", round,
            i, big_dst[i]);
    shmem_ctx_quiet(a);
    shmem_barrier_all();
  }

  /* AMOs on contexts: fetching on A, non-fetching on B, at PE 0. */
  long before = shmem_ctx_long_atomic_fetch_add(a, &counter[0], 1, 0);
  CHECK(before >= 0 && before < n, "fetch_add saw %ld", before);
  shmem_ctx_long_atomic_add(b, &counter[1], 10, 0);
  CHECK(shmemx_ctx_pending(b) == 1, "b's add held %zu", shmemx_ctx_pending(b));
  shmem_ctx_quiet(b);
  shmem_barrier_all();
  if (me == 0)
    CHECK(counter[0] == n && counter[1] == 10L * n, "counters %ld %ld",
          counter[0], counter[1]);
  shmem_barrier_all(); /* PE 0 has read them before the next adds */
  /* The generic names. */
  (void)shmem_atomic_fetch_add(&counter[0], 1L, 0);
  shmem_barrier_all();
  if (me == 0) shmem_wait_until(&counter[0], SHMEM_CMP_EQ, 2L * n);
  shmem_barrier_all();

  /* short and unsigned short waits: PE left writes my words. */
  shmem_ctx_short_p(a, &sw[me % 4], (short)-5, right);
  shmem_ctx_ushort_p(a, &uw[1], (unsigned short)60000, right);
  shmem_ctx_ushort_p(a, &uw[2], (unsigned short)60001, right);
  shmem_ctx_quiet(a);
  shmem_short_wait_until(&sw[left % 4], SHMEM_CMP_LT, 0);
  CHECK(shmem_test(&sw[left % 4], SHMEM_CMP_EQ, (short)-5) == 1, "short");
  int status[4] = {1, 0, 0, 1};
  shmem_ushort_wait_until_all(uw, 4, status, SHMEM_CMP_GE, 60000);
  size_t idx[4];
  CHECK(shmem_wait_until_some(uw, 4, idx, status, SHMEM_CMP_GT,
                              (unsigned short)60000) == 1 &&
            idx[0] == 2,
        "ushort some");
  shmem_barrier_all();

  /* A full table: 30 more besides a and b, then a nonzero return. */
  shmem_ctx_t more[kMaxContexts];
  int made = 0;
  for (;;) {
    shmem_ctx_t c = SHMEM_CTX_DEFAULT;
    if (shmem_ctx_create(0, &c) != 0) {
      CHECK(c == SHMEM_CTX_INVALID, "failed create left a handle");
      break;
    }
    CHECK(made < kMaxContexts, "more contexts than the table holds");
    more[made++] = c;
  }
  CHECK(made == kMaxContexts - 2, "made %d more, want %d", made,
        kMaxContexts - 2);
  shmem_ctx_destroy(more[3]);
  CHECK(shmem_ctx_create(0, &more[3]) == 0, "room after destroy");
  shmem_ctx_t extra;
  CHECK(shmem_ctx_create(0, &extra) != 0, "full again");
  CHECK(shmem_ctx_create(0x100, &extra) != 0, "unknown option accepted");
  for (int i = 0; i < made; i++) shmem_ctx_destroy(more[i]);
  shmem_ctx_destroy(SHMEM_CTX_INVALID); /* no operation */

  /* A team's context: PEs numbered in the team (the even world PEs). */
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0,
                                 &evens) == 0,
        "split");
  if (me % 2 == 0) {
    shmem_ctx_t tc;
    CHECK(shmem_team_create_ctx(evens, 0, &tc) == 0, "team ctx");
    CHECK(shmem_ctx_get_team(tc, &t) == 0 && t == evens, "team ctx's team");
    const int tme = shmem_team_my_pe(evens), tn = shmem_team_n_pes(evens);
    CHECK(shmem_team_ptr(evens, small, tme) == small, "team_ptr self");
    if (tn > 1)
      CHECK(shmem_team_ptr(evens, small, (tme + 1) % tn) == NULL,
            "team_ptr other");
    /* team PE (tme + 1) % tn is world PE 2 * that */
    shmem_ctx_long_p(tc, &small[2], 1000 + me, (tme + 1) % tn);
    shmem_ctx_destroy(tc); /* its implicit quiet */
  }
  shmem_barrier_all();
  if (me % 2 == 0) {
    const int tn = shmem_team_n_pes(evens);
    const int from = 2 * ((shmem_team_my_pe(evens) + tn - 1) % tn);
    CHECK(small[2] == 1000 + from, "team ctx put: %ld, want %d", small[2],
          1000 + from);
  }
  shmem_team_destroy(evens);

  /* Destroy completes what the context holds. */
  memset(big_src, 0x5a, kChunk);
  shmem_ctx_putmem_nbi(a, big_dst, big_src, kChunk, right);
  shmem_ctx_destroy(a);
  shmem_ctx_destroy(b);
  shmem_barrier_all();
  for (int i = 0; i < kChunk; i++)
    CHECK(big_dst[i] == 0x5a, "after destroy byte %d", i);
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
