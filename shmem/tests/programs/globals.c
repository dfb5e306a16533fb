/* Global and static variables are symmetric (the program's data segment):
 * puts, gets, AMOs, strided puts, a lock and collectives whose remote side
 * is a global (.data or .bss) or a static array, from every PE, each
 * result checked; also a global as the local side of a transfer larger
 * than inline (PUSHed from the registered segment as it is). */
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_globals"
#include "check.h"

enum { kIters = 25, kMaxPes = 16, kBig = 4096 };

long counter;                   /* .bss, global */
long initialized = 7;           /* .data, global */
long lock_word;                 /* a lock in the data segment */
long locked_total;              /* changed only under lock_word */
static int ints[kMaxPes];       /* static array */
static long sync_like[kMaxPes]; /* what pSync arrays are: a static target */
static long big[kBig];          /* larger than any inline put */
static long strided_to[2 * kMaxPes];
static long sum_src, sum_dest;
static long gathered[kMaxPes];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  CHECK(n <= kMaxPes, "at most %d PEs", kMaxPes);
  long local_var = 0;
  CHECK(shmem_addr_accessible(&counter, right) &&
            shmem_addr_accessible(&ints[3], right) &&
            shmem_addr_accessible(&initialized, right),
        "a global is not accessible");
  CHECK(!shmem_addr_accessible(&local_var, right),
        "a local variable is accessible");
  CHECK(shmem_ptr(&counter, me) == &counter, "shmem_ptr of a global");

  /* p and g: every PE writes its slot of the static array at every PE,
   * then reads the .data global of its right neighbour. */
  initialized = 1000 + me;
  for (int pe = 0; pe < n; pe++) shmem_int_p(&ints[me], 100 + me, pe);
  shmem_barrier_all();
  for (int j = 0; j < n; j++)
    CHECK(ints[j] == 100 + j, "ints[%d] = %d, want %d", j, ints[j], 100 + j);
  long got = shmem_long_g(&initialized, right);
  CHECK(got == 1000 + right, "initialized at PE %d: %ld", right, got);

  /* AMOs on a .bss global at PE 0 from every PE. */
  for (int i = 0; i < kIters; i++) {
    shmem_long_atomic_add(&counter, 1, 0);
    (void)shmem_long_atomic_fetch_inc(&counter, 0);
  }
  shmem_barrier_all();
  got = shmem_long_atomic_fetch(&counter, 0);
  CHECK(got == 2L * n * kIters, "counter %ld, want %ld", got, 2L * n * kIters);

  /* The pSync-like static array: a put of the whole array into the left
   * neighbour's, a swap in the right's, one compare_swap winner at PE 0. */
  long mine[kMaxPes];
  for (int j = 0; j < n; j++) mine[j] = me * 100 + j;
  shmem_long_put(sync_like, mine, (size_t)n, left);
  shmem_barrier_all();
  for (int j = 0; j < n; j++)
    CHECK(sync_like[j] == right * 100 + j, "sync_like[%d] = %ld, want %d", j,
          sync_like[j], right * 100 + j);
  shmem_barrier_all();
  long back[kMaxPes];
  shmem_long_get(back, sync_like, (size_t)n, right);
  for (int j = 0; j < n; j++)
    CHECK(back[j] == ((right + 1) % n) * 100 + j, "got back[%d] = %ld", j,
          back[j]);
  shmem_barrier_all();
  long old = shmem_long_atomic_swap(&sync_like[me], -1 - me, right);
  CHECK(old == ((right + 1) % n) * 100 + me, "swap returned %ld, want %d", old,
        ((right + 1) % n) * 100 + me);
  shmem_barrier_all();
  CHECK(sync_like[left] == -1 - left, "swapped word %ld", sync_like[left]);
  shmem_barrier_all();
  if (me == 0) sync_like[n - 1] = 0;
  shmem_barrier_all();
  long won = shmem_long_atomic_compare_swap(&sync_like[n - 1], 0, me + 1, 0);
  shmem_barrier_all();
  long winner = shmem_long_g(&sync_like[n - 1], 0);
  CHECK(winner >= 1 && winner <= n, "compare_swap winner %ld", winner);
  CHECK((won == 0) == (winner == me + 1), "PE %d: returned %ld, winner %ld", me,
        won, winner);

  /* A global as the local side, larger than inline: PUSHed from the
   * segment to the right neighbour's big array, pulled back. */
  for (int i = 0; i < kBig; i++) big[i] = (long)me << 32 | i;
  shmem_barrier_all();
  long* heap = shmem_malloc(kBig * sizeof(long));
  CHECK(heap, "allocation");
  shmem_long_put(heap, big, kBig, right);
  shmem_barrier_all();
  for (int i = 0; i < kBig; i++)
    CHECK(heap[i] == ((long)left << 32 | i), "heap[%d] = %lx", i, heap[i]);
  shmem_long_get(big, heap, kBig, left);
  for (int i = 0; i < kBig; i++)
    CHECK(big[i] == ((long)((left + n - 1) % n) << 32 | i), "big[%d] = %lx", i,
          big[i]);
  shmem_barrier_all();

  /* Strided: every second word of the right neighbour's static array. */
  long pattern[kMaxPes];
  for (int j = 0; j < n; j++) pattern[j] = me * 10 + j + 1;
  shmem_long_iput(strided_to, pattern, 2, 1, (size_t)n, right);
  shmem_barrier_all();
  for (int j = 0; j < n; j++) {
    CHECK(strided_to[2 * j] == left * 10 + j + 1, "strided_to[%d] = %ld", 2 * j,
          strided_to[2 * j]);
    CHECK(strided_to[2 * j + 1] == 0, "strided_to[%d] touched", 2 * j + 1);
  }

  /* A lock that is a global, guarding a non-atomic update at PE 0. */
  for (int i = 0; i < kIters; i++) {
    shmem_set_lock(&lock_word);
    long v = shmem_long_g(&locked_total, 0);
    shmem_long_p(&locked_total, v + 1, 0);
    shmem_quiet();
    shmem_clear_lock(&lock_word);
  }
  shmem_barrier_all();
  got = shmem_long_g(&locked_total, 0);
  CHECK(got == (long)n * kIters, "locked_total %ld, want %ld", got,
        (long)n * kIters);

  /* Collectives on statics. */
  sum_src = me + 1;
  shmem_barrier_all();
  CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum_dest, &sum_src, 1) == 0,
        "sum_reduce");
  CHECK(sum_dest == (long)n * (n + 1) / 2, "sum %ld", sum_dest);
  CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, gathered, &initialized, 1) == 0,
        "fcollect");
  for (int j = 0; j < n; j++)
    CHECK(gathered[j] == 1000 + j, "gathered[%d] = %ld", j, gathered[j]);

  shmem_free(heap);
  PASS();
  shmem_finalize();
  return 0;
}
