/* Waits that sleep (Documentation/userlib/shmem.md, "Waiting on memory"):
 * a PE waits seconds for words another PE writes late, and must have
 * slept on the NIC's watch and been woken by it, its 200 ms slices that
 * ran out counted apart (shmemx_get_wait_stats_ext),
 * and must see the right values. Three waits, each by half of the PEs:
 * wait_until for a put from its neighbour (me ^ 1), wait_until_any for
 * an atomic set from the PE two further on, signal_wait_until for a put
 * with signal from the PE two before. Four PEs (two waiting per wait). */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime under -std=c11 */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <time.h>
#define PROGRAM "shmem_wait_sleep"
#include "check.h"

enum { kWords = 4, kData = 256 };

/* How long a writer waits before it writes: long enough that the waiter
 * spun its ~100 us and went to sleep, whatever the emulation's speed. */
static void late(void) {
  const struct timespec t = {1, 500000000};
  nanosleep(&t, NULL);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The wait stats before, and the check after one wait of this PE. */
static struct shmemx_wait_stats stats(void) {
  struct shmemx_wait_stats s;
  uint64_t sleeps = 0, wakeups = 0;
  shmemx_get_wait_stats_ext(&s, sizeof(s));
  shmemx_get_wait_stats(&sleeps, &wakeups);
  CHECK(sleeps == s.sleeps && wakeups == s.wakeups,
        "the two stats calls disagree: %llu/%llu and %llu/%llu",
        (unsigned long long)sleeps, (unsigned long long)s.sleeps,
        (unsigned long long)wakeups, (unsigned long long)s.wakeups);
  return s;
}
static void check_slept(const char* what, struct shmemx_wait_stats before,
                        double t0) {
  const struct shmemx_wait_stats after = stats();
  const unsigned long long sleeps = after.sleeps - before.sleeps,
                           wakeups = after.wakeups - before.wakeups,
                           timeouts = after.timeouts - before.timeouts;
  printf(
      "%s: PE %d: %s waited %.2f s: slept %llu times, woken %llu times, "
      "%llu slices ran out\n",
      PROGRAM, shmem_my_pe(), what, now_s() - t0, sleeps, wakeups, timeouts);
  CHECK(sleeps >= 1, "%s: did not sleep", what);
  CHECK(wakeups >= 1, "%s: no wake-up by the NIC (slept %llu times)", what,
        sleeps);
  /* Each sleep ended by the NIC or by its slice (or by a signal). */
  CHECK(wakeups + timeouts <= sleeps,
        "%s: %llu wake-ups and %llu timeouts for %llu sleeps", what, wakeups,
        timeouts, sleeps);
  /* 1.5 s of 200 ms slices: several ran out before the put came (a wait
   * that slept through only one slice and missed them would say 0). */
  CHECK(timeouts >= 2, "%s: %llu slices ran out in a 1.5 s wait", what,
        timeouts);
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n == 4, "needs 4 PEs, has %d", n);
  long* flag = shmem_calloc(1, sizeof(long));
  long* words = shmem_calloc(kWords, sizeof(long));
  uint64_t* sig = shmem_calloc(1, sizeof(uint64_t));
  char* data = shmem_calloc(kData, 1);
  CHECK(flag && words && sig && data, "allocation");
  const struct shmemx_wait_stats s0 = stats();
  CHECK(s0.sleeps == 0 && s0.wakeups == 0 && s0.timeouts == 0,
        "stats before any wait: %llu %llu %llu", (unsigned long long)s0.sleeps,
        (unsigned long long)s0.wakeups, (unsigned long long)s0.timeouts);
  shmem_barrier_all();

  /* 1. wait_until: the even PEs wait for a put of their odd neighbour. */
  if (me % 2 == 0) {
    const struct shmemx_wait_stats before = stats();
    const double t0 = now_s();
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 4200 + me);
    CHECK(*flag == 4200 + me, "flag %ld", *flag);
    check_slept("wait_until", before, t0);
  } else {
    late();
    shmem_long_p(flag, 4200 + (me ^ 1), me ^ 1);
  }
  shmem_barrier_all();

  /* 2. wait_until_any: PEs 0 and 1 wait for an atomic set of word 2 by the
   * PE two further on (another node when there are two PEs per node). */
  if (me < 2) {
    const struct shmemx_wait_stats before = stats();
    const double t0 = now_s();
    const size_t i =
        shmem_long_wait_until_any(words, kWords, NULL, SHMEM_CMP_NE, 0);
    CHECK(i == 2, "index %zu", i);
    CHECK(words[2] == 770 + me, "word %ld", words[2]);
    check_slept("wait_until_any", before, t0);
  } else {
    late();
    shmem_long_atomic_set(&words[2], 770 + (me - 2), me - 2);
  }
  shmem_barrier_all();

  /* 3. signal_wait_until: PEs 2 and 3 wait for a put with signal from
   * the PE two before; the data is there with the signal. */
  if (me >= 2) {
    const struct shmemx_wait_stats before = stats();
    const double t0 = now_s();
    const uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 9);
    CHECK(v == 9, "signal %llu", (unsigned long long)v);
    for (int k = 0; k < kData; k++)
      CHECK(data[k] == (char)(k + me), "byte %d: %d", k, data[k]);
    check_slept("signal_wait_until", before, t0);
  } else {
    char src[kData];
    for (int k = 0; k < kData; k++) src[k] = (char)(k + me + 2);
    late();
    shmem_putmem_signal(data, src, kData, sig, 9, SHMEM_SIGNAL_SET, me + 2);
    shmem_quiet();
  }
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
