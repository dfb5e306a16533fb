/* Teams: split_strided (the even PEs), split_2d (rows of 2), my_pe, n_pes,
 * translate_pe, get_config, sync, and broadcast, reductions, fcollect and
 * alltoall on a split team, each checked; then destroy. */
#include <shmem.h>
#define PROGRAM "shmem_teams"
#include "check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* src = shmem_malloc(64 * sizeof(long));
  long* dst = shmem_malloc(64 * sizeof(long));
  CHECK(src && dst, "allocation");
  shmem_team_t even = SHMEM_TEAM_INVALID;
  shmem_team_config_t cfg = {.num_contexts = 2};
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg,
                                 SHMEM_TEAM_NUM_CONTEXTS, &even) == 0,
        "split_strided");
  if (me % 2) {
    CHECK(even == SHMEM_TEAM_INVALID, "odd PE %d got a team", me);
    CHECK(shmem_team_my_pe(even) == -1, "my_pe of no team");
  } else {
    const int size = (n + 1) / 2;
    CHECK(shmem_team_my_pe(even) == me / 2, "team my_pe %d",
          shmem_team_my_pe(even));
    CHECK(shmem_team_n_pes(even) == size, "team n_pes %d",
          shmem_team_n_pes(even));
    CHECK(shmem_team_translate_pe(even, 1, SHMEM_TEAM_WORLD) ==
              (size > 1 ? 2 : -1),
          "translate to world");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, even) == -1,
          "translate an odd PE");
    shmem_team_config_t got = {0};
    CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
              got.num_contexts == 2,
          "get_config %d", got.num_contexts);
    CHECK(shmem_team_sync(even) == 0, "team sync");
    /* Reduction: sum of the even world PEs' ranks. */
    for (int i = 0; i < 8; i++) src[i] = me + i;
    long want = 0;
    for (int pe = 0; pe < n; pe += 2) want += pe;
    CHECK(shmem_long_sum_reduce(even, dst, src, 8) == 0, "team sum");
    for (int i = 0; i < 8; i++)
      CHECK(dst[i] == want + (long)size * i, "team sum [%d] = %ld", i, dst[i]);
    /* Broadcast from team PE size-1. */
    CHECK(shmem_long_broadcast(even, dst, src, 8, size - 1) == 0,
          "team broadcast");
    for (int i = 0; i < 8; i++)
      CHECK(dst[i] == 2 * (size - 1) + i, "team broadcast [%d] = %ld", i,
            dst[i]);
    /* fcollect and alltoall inside the team. */
    src[0] = me;
    CHECK(shmem_long_fcollect(even, dst, src, 1) == 0, "team fcollect");
    for (int t = 0; t < size; t++)
      CHECK(dst[t] == 2 * t, "team fcollect [%d] = %ld", t, dst[t]);
    for (int t = 0; t < size; t++) src[t] = me * 10 + t;
    CHECK(shmem_long_alltoall(even, dst, src, 1) == 0, "team alltoall");
    for (int t = 0; t < size; t++)
      CHECK(dst[t] == 2 * t * 10 + me / 2, "team alltoall [%d] = %ld", t,
            dst[t]);
    shmem_team_destroy(even);
  }
  /* 2-D: rows of two PEs (x), columns (y). */
  shmem_team_t row = SHMEM_TEAM_INVALID, col = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0,
                            &col) == 0,
        "split_2d");
  CHECK(shmem_team_my_pe(row) == me % 2 && shmem_team_my_pe(col) == me / 2,
        "2-D place (%d, %d)", shmem_team_my_pe(row), shmem_team_my_pe(col));
  src[0] = me;
  CHECK(shmem_long_max_reduce(row, dst, src, 1) == 0, "row max");
  const int row_last = (me / 2) * 2 + 1 < n ? (me / 2) * 2 + 1 : me;
  CHECK(dst[0] == row_last, "row max %ld, want %d", dst[0], row_last);
  CHECK(shmem_long_min_reduce(col, dst, src, 1) == 0, "column min");
  CHECK(dst[0] == me % 2, "column min %ld", dst[0]);
  shmem_team_destroy(row);
  shmem_team_destroy(col);
  /* A split naming PEs beyond the parent is refused everywhere. */
  shmem_team_t bad = SHMEM_TEAM_WORLD;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0,
                                 &bad) != 0 &&
            bad == SHMEM_TEAM_INVALID,
        "a split past the parent was not refused");
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
