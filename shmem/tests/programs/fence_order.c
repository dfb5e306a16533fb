/* shmem_fence and nothing else orders the data before a flag: each PE
 * sends its right neighbour, round after round, puts of varied sizes
 * (blocking and nbi from the heap, small ones that travel inline, a
 * strided one, one from static data and one from the stack, which goes
 * through the bounce buffer), then
 * shmem_fence, then the round's flag as a put, an atomic set or an atomic
 * add. The neighbour waits for the flag alone and checks that every byte
 * of the round is there, then tells the sender it may go on (the
 * destinations are reused by the next round). */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define PROGRAM "shmem_fence_order"
#define ROUNDS 120
#define BIG (96 * 1024)
#define MID 3000
#define STRIDED 100 /* longs, every third one at the target */

static unsigned char byte_of(int round, int pe, size_t i) {
  return (unsigned char)(round * 31 + pe * 7 + i * 13 + (i >> 8));
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  const int npes = shmem_n_pes();
  const int right = (me + 1) % npes;
  const int left = (me + npes - 1) % npes;

  unsigned char* big_src = shmem_malloc(2 * BIG);
  unsigned char* big_dst = shmem_malloc(BIG);
  unsigned char* mid_dst = shmem_malloc(MID);
  long* small_dst = shmem_malloc(4 * sizeof(long));
  long* str_src = shmem_malloc(STRIDED * sizeof(long));
  long* str_dst = shmem_malloc(3 * STRIDED * sizeof(long));
  long* flag = shmem_calloc(1, sizeof(long));
  long* go = shmem_calloc(1, sizeof(long));
  CHECK(big_src && big_dst && mid_dst && small_dst && str_src && str_dst &&
            flag && go,
        "shmem_malloc");
  static unsigned char static_src[MID]; /* program data: registered */
  unsigned char mid_src[MID];           /* the stack: bounce buffer */
  shmem_barrier_all();

  for (int r = 0; r < ROUNDS; r++) {
    /* Sender: round r's data to the right, fence, flag r + 1. Round r's
     * big source alternates between two halves: the nbi put of round
     * r - 1 may still be reading the other. */
    unsigned char* big = big_src + (r & 1) * BIG;
    for (size_t i = 0; i < BIG; i++) big[i] = byte_of(r, me, i);
    for (size_t i = 0; i < MID; i++) mid_src[i] = byte_of(r, me, i + 5);
    for (size_t i = 0; i < STRIDED; i++) str_src[i] = r * 1000 + me * 10 + i;
    const size_t big_len = BIG - (size_t)(r % 7) * 4096 - (size_t)r;
    if (r % 2)
      shmem_putmem_nbi(big_dst, big, big_len, right);
    else
      shmem_putmem(big_dst, big, big_len, right);
    memcpy(static_src, mid_src, MID);
    shmem_putmem(mid_dst, (r % 3) ? static_src : mid_src, MID - (size_t)r,
                 right);
    for (int k = 0; k < 4; k++)
      shmem_long_p(&small_dst[k], (long)r * 4 + k + me, right);
    shmem_long_iput(str_dst, str_src, 3, 1, STRIDED, right);
    shmem_fence();
    switch (r % 3) {
      case 0:
        shmem_long_p(flag, r + 1, right);
        break;
      case 1:
        shmem_long_atomic_set(flag, r + 1, right);
        break;
      default:
        shmem_long_atomic_add(flag, 1, right);
        break;
    }

    /* Receiver: round r from the left, seen through the flag alone. */
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, r + 1);
    for (size_t i = 0; i < big_len; i++)
      CHECK(big_dst[i] == byte_of(r, left, i),
            "round %d: big byte %zu of %zu is %u, want %u", r, i, big_len,
            big_dst[i], byte_of(r, left, i));
    for (size_t i = 0; i < MID - (size_t)r; i++)
      CHECK(mid_dst[i] == byte_of(r, left, i + 5),
            "round %d: mid byte %zu is %u, want %u", r, i, mid_dst[i],
            byte_of(r, left, i + 5));
    for (int k = 0; k < 4; k++)
      CHECK(small_dst[k] == (long)r * 4 + k + left,
            "round %d: small %d is %ld, want %ld", r, k, small_dst[k],
            (long)r * 4 + k + left);
    for (size_t i = 0; i < STRIDED; i++)
      CHECK(str_dst[3 * i] == r * 1000 + left * 10 + (long)i,
            "round %d: strided %zu is %ld, want %ld", r, i, str_dst[3 * i],
            r * 1000 + left * 10 + (long)i);
    /* The left PE may send round r + 1 now; wait for the right's word. */
    shmem_long_atomic_set(go, r + 1, left);
    shmem_long_wait_until(go, SHMEM_CMP_GE, r + 1);
  }
  shmem_barrier_all();
  PASS();
  shmem_finalize();
  return 0;
}
