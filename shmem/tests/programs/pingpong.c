/* Ping-pong with shmem_long_p and shmem_long_wait_until between pairs of
 * PEs (0-1, 2-3, ...); an odd last PE sits out. */
#include <shmem.h>
#define PROGRAM "shmem_pingpong"
#include "check.h"

enum { kRounds = 200 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int peer = me ^ 1;
  long* ball = shmem_calloc(1, sizeof(long));
  CHECK(ball, "allocation");
  shmem_barrier_all();
  for (long r = 1; r <= kRounds && peer < n; r++) {
    if (me < peer) {
      shmem_long_p(ball, 2 * r - 1, peer);
      shmem_long_wait_until(ball, SHMEM_CMP_EQ, 2 * r);
    } else {
      shmem_long_wait_until(ball, SHMEM_CMP_GE, 2 * r - 1);
      CHECK(*ball == 2 * r - 1, "round %ld: ball %ld", r, *ball);
      shmem_long_p(ball, 2 * r, peer);
    }
  }
  CHECK(peer >= n || shmem_long_test(ball, SHMEM_CMP_GE, 2 * kRounds - 1),
        "test after the rounds: %ld", *ball);
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
