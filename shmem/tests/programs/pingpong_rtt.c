/* What sleeping costs a ping-pong: PEs 0 and 1 bounce a long with
 * shmem_long_p and shmem_long_wait_until; PE 0 prints the round-trip time
 * (mean, median, 90th percentile) and what the two PEs' waits did
 * (sleeps, wake-ups by the NIC, slices that ran out). Run with and without
 * SHMEM_WAIT_SPIN_US=never, on one node and on two (vm_shmem prints the
 * figures; timings are not judged: the emulated NIC's speed varies).
 *   pingpong_rtt [ROUNDS]   (2 PEs; others sit out) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#define PROGRAM "shmem_pingpong_rtt"
#include "check.h"

enum { kWarmup = 50, kMaxRounds = 100000 };

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const long rounds = argc > 1 ? atol(argv[1]) : 1000;
  CHECK(n >= 2, "needs 2 PEs, has %d", n);
  CHECK(rounds >= 1 && rounds <= kMaxRounds, "rounds %ld (1 to %d)", rounds,
        kMaxRounds);
  long* ball = shmem_calloc(1, sizeof(long));
  uint64_t* stats = shmem_calloc(3, sizeof(uint64_t)); /* PE 1's, for PE 0 */
  double* rtt = malloc((size_t)rounds * sizeof(double));
  CHECK(ball && stats && rtt, "allocation");
  shmem_barrier_all();
  struct shmemx_wait_stats before = {0}, after = {0};
  long r = 1;
  double t0 = 0;
  for (long k = 0; k < kWarmup + rounds && me < 2; k++, r++) {
    if (k == kWarmup) shmemx_get_wait_stats_ext(&before, sizeof(before));
    if (me == 0) {
      t0 = now_us();
      shmem_long_p(ball, 2 * r - 1, 1);
      shmem_long_wait_until(ball, SHMEM_CMP_EQ, 2 * r);
      if (k >= kWarmup) rtt[k - kWarmup] = now_us() - t0;
    } else {
      shmem_long_wait_until(ball, SHMEM_CMP_GE, 2 * r - 1);
      CHECK(*ball == 2 * r - 1, "round %ld: ball %ld", r, *ball);
      shmem_long_p(ball, 2 * r, 0);
    }
  }
  if (me < 2) shmemx_get_wait_stats_ext(&after, sizeof(after));
  if (me == 1) {
    const uint64_t mine[3] = {after.sleeps - before.sleeps,
                              after.wakeups - before.wakeups,
                              after.timeouts - before.timeouts};
    shmem_putmem(stats, mine, sizeof(mine), 0);
    shmem_quiet();
  }
  shmem_barrier_all();
  if (me == 0) {
    double sum = 0;
    for (long k = 0; k < rounds; k++) sum += rtt[k];
    qsort(rtt, (size_t)rounds, sizeof(double), by_value);
    const char* spin = getenv("SHMEM_WAIT_SPIN_US");
    printf(
        "%s: PEs on %s, SHMEM_WAIT_SPIN_US=%s: %ld round trips: "
        "mean %.1f us, median %.1f us, p90 %.1f us; waits slept "
        "%llu + %llu times (PE 0 + PE 1), woken by the NIC %llu + %llu, "
        "slices ran out %llu + %llu\n",
        PROGRAM,
        shmemx_pe_node(0) == shmemx_pe_node(1) ? "one node" : "two nodes",
        spin ? spin : "(unset: 100)", rounds, sum / rounds, rtt[rounds / 2],
        rtt[rounds * 9 / 10],
        (unsigned long long)(after.sleeps - before.sleeps),
        (unsigned long long)stats[0],
        (unsigned long long)(after.wakeups - before.wakeups),
        (unsigned long long)stats[1],
        (unsigned long long)(after.timeouts - before.timeouts),
        (unsigned long long)stats[2]);
  }
  free(rtt);
  PASS();
  shmem_finalize();
  return 0;
}
