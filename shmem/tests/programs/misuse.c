/* What the library refuses, one case per run (argv[1]); each must end the
 * PE with a message naming the routine (the test checks the message). */
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_misuse"
#include "check.h"

static long active_sync[SHMEM_BARRIER_SYNC_SIZE];

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  /* Stack memory is not symmetric (globals and statics are). */
  long local_var = 0;
  long* heap = NULL;
  shmem_init();
  heap = shmem_calloc(2, sizeof(long));
  shmem_barrier_all();
  /* a 32-bit AMO on a word that is not 4-byte aligned */
  if (!strcmp(what, "int-amo"))
    shmem_int_atomic_inc((int*)((char*)heap + 2), 0);
  if (!strcmp(what, "stack")) shmem_long_p(&local_var, 1, 0);
  if (!strcmp(what, "pe")) shmem_long_p(heap, 1, shmem_n_pes());
  if (!strcmp(what, "team")) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes() + 1,
                                 NULL, 0, &t) != 0)
      shmem_global_exit(3);
  }
  if (!strcmp(what, "lock")) shmem_set_lock(&local_var);
  if (!strcmp(what, "destroyed")) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0,
                                 &t) != 0)
      shmem_global_exit(5);
    shmem_team_destroy(t);
    (void)shmem_long_sum_reduce(t, heap, heap, 1);
  }
  if (!strcmp(what, "ctx-destroyed")) {
    shmem_ctx_t ctx;
    if (shmem_ctx_create(0, &ctx) != 0) shmem_global_exit(6);
    shmem_ctx_destroy(ctx);
    shmem_ctx_long_p(ctx, heap, 1, 0);
  }
  if (!strcmp(what, "ctx-team-pe")) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    shmem_ctx_t ctx;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0,
                                 &t) != 0 ||
        shmem_team_create_ctx(t, 0, &ctx) != 0)
      shmem_global_exit(7);
    shmem_ctx_long_p(ctx, heap, 1, shmem_team_n_pes(t));
  }
  /* Active sets: PE 0 outside its set, a negative stride, no PEs. */
  if (!strcmp(what, "active-pe")) shmem_barrier(1, 0, 1, active_sync);
  if (!strcmp(what, "active-stride")) shmem_barrier(0, -1, 2, active_sync);
  if (!strcmp(what, "active-size")) shmem_barrier(0, 0, 0, active_sync);
  if (!strcmp(what, "heap")) {
    void* p = shmem_malloc((size_t)1 << 40);
    shmem_global_exit(p == NULL ? 4 : 0);
  }
  shmem_finalize();
  return 0;
}
