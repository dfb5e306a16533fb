/* Written as a user of the OpenSHMEM 1.5 specification would, using only
 * shmem.h: a token travels a ring of PEs several times on a private
 * context (data put, fence, then a signal the next PE waits on), every PE
 * adds its number; then each PE gets its left neighbour's history with a
 * blocking get on another context and checks it. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LAPS 3

static void fail(const char* what, long got, long want) {
  fprintf(stderr, "shmem_ring: PE %d: FAIL %s: got %ld, want %ld\n",
          shmem_my_pe(), what, got, want);
  shmem_global_exit(1);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe();
  int npes = shmem_n_pes();
  int next = (me + 1) % npes;
  int prev = (me + npes - 1) % npes;

  long* token = shmem_malloc(sizeof(long));
  uint64_t* arrived = shmem_calloc(1, sizeof(uint64_t));
  long* history = shmem_calloc(LAPS, sizeof(long));
  if (!token || !arrived || !history) fail("shmem_malloc", 0, 1);
  *token = 0;

  shmem_ctx_t ring_ctx, check_ctx;
  if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ring_ctx) != 0)
    ring_ctx = SHMEM_CTX_DEFAULT; /* allowed: fall back to the default */
  if (shmem_ctx_create(0, &check_ctx) != 0) check_ctx = SHMEM_CTX_DEFAULT;
  shmem_barrier_all();

  for (int lap = 0; lap < LAPS; lap++) {
    if (!(me == 0 && lap == 0)) {
      /* The token of lap `lap` arrives as signal lap + 1 (PE 0 first
       * waits for the last PE's lap - 1 token). */
      uint64_t want = (uint64_t)lap + (me == 0 ? 0 : 1);
      shmem_uint64_wait_until(arrived, SHMEM_CMP_GE, want);
    }
    long value = *token + me;
    history[lap] = value;
    shmem_ctx_long_put_nbi(ring_ctx, token, &value, 1, next);
    shmem_ctx_fence(ring_ctx);
    shmem_ctx_uint64_atomic_add(ring_ctx, arrived, 1, next);
    shmem_ctx_quiet(ring_ctx); /* value is a local: complete before reuse */
  }
  if (me == 0) {
    shmem_uint64_wait_until(arrived, SHMEM_CMP_GE, LAPS);
    long per_lap = (long)npes * (npes - 1) / 2;
    long expect = per_lap * LAPS;
    if (*token != expect) fail("token after the laps", *token, expect);
  }
  shmem_barrier_all();

  /* Each value sent is the one received plus the sender's number: PE
   * me's lap-L value is its left neighbour's lap-L value plus me; PE 0
   * starts from 0 and then takes the last PE's value of the lap before. */
  long theirs[LAPS];
  shmem_ctx_long_get(check_ctx, theirs, history, LAPS, prev);
  for (int lap = 0; lap < LAPS; lap++) {
    long want;
    if (me != 0)
      want = theirs[lap] + me;
    else
      want = lap == 0 ? 0 : theirs[lap - 1];
    if (history[lap] != want) fail("the value sent", history[lap], want);
  }

  if (ring_ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ring_ctx);
  if (check_ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(check_ctx);
  shmem_barrier_all();
  printf("shmem_ring: PE %d of %d: ok\n", me, npes);
  shmem_free(history);
  shmem_free(arrived);
  shmem_free(token);
  shmem_finalize();
  return 0;
}
