/* Blocking RMA with checked data: putmem/getmem from the heap and from
 * private memory (stack, malloc), sizes from 1 byte to past the bounce
 * buffer; typed put/get, _p/_g, and strided iput/iget. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#define PROGRAM "shmem_put_get"
#include "check.h"

static unsigned char pattern(int pe, size_t i) {
  return (unsigned char)(pe * 31 + i * 7 + (i >> 8));
}

int main(void) {
  static const size_t sizes[] = {1, 8, 100, 4096, 65536 + 3, 1536 * 1024};
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t max = 1536 * 1024;
  unsigned char* dst = shmem_malloc(max);
  unsigned char* src = shmem_malloc(max);
  unsigned char* priv = malloc(max);
  CHECK(dst && src && priv, "allocation");
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    const size_t len = sizes[s];
    for (int from_heap = 0; from_heap < 2; from_heap++) {
      unsigned char* from = from_heap ? src : priv;
      for (size_t i = 0; i < len; i++) from[i] = pattern(me, i);
      memset(dst, 0xee, max);
      shmem_barrier_all();
      shmem_putmem(dst, from, len, right);
      shmem_barrier_all();
      for (size_t i = 0; i < len; i++)
        CHECK(dst[i] == pattern(left, i),
              "putmem %zu bytes from %s: byte %zu is %u, want %u", len,
              from_heap ? "heap" : "private memory", i, dst[i],
              pattern(left, i));
      CHECK(len == max || dst[len] == 0xee, "putmem wrote past %zu", len);
      /* Get the left PE's source back, into heap and private memory. */
      unsigned char* into = from_heap ? dst : priv;
      for (size_t i = 0; i < len; i++) src[i] = pattern(me, i);
      shmem_barrier_all();
      memset(into, 0, len);
      shmem_getmem(into, src, len, left);
      for (size_t i = 0; i < len; i++)
        CHECK(into[i] == pattern(left, i),
              "getmem %zu bytes into %s: byte %zu is %u, want %u", len,
              from_heap ? "heap" : "private memory", i, into[i],
              pattern(left, i));
      shmem_barrier_all();
    }
  }
  /* Typed: doubles and ints, and single elements. */
  double* d = shmem_calloc(64, sizeof(double));
  int* iv = shmem_calloc(64, sizeof(int));
  CHECK(d && iv, "calloc");
  for (int i = 0; i < 64; i++) CHECK(d[i] == 0 && iv[i] == 0, "calloc zero");
  double dsrc[64];
  int isrc[64];
  for (int i = 0; i < 64; i++) {
    dsrc[i] = me + i / 8.0;
    isrc[i] = -me * 1000 - i;
  }
  shmem_barrier_all();
  shmem_double_put(d, dsrc, 64, right);
  shmem_int_put(iv, isrc, 64, right);
  shmem_barrier_all();
  for (int i = 0; i < 64; i++) {
    CHECK(d[i] == left + i / 8.0, "double_put [%d] = %g", i, d[i]);
    CHECK(iv[i] == -left * 1000 - i, "int_put [%d] = %d", i, iv[i]);
  }
  CHECK(shmem_double_g(&d[5], right) == me + 5 / 8.0, "double_g");
  long* one = shmem_malloc(sizeof(long));
  *one = -1;
  shmem_barrier_all();
  shmem_long_p(one, 1000 + me, right);
  shmem_barrier_all();
  CHECK(*one == 1000 + left, "long_p: %ld", *one);
  CHECK(shmem_long_g(one, left) == 1000 + (left + n - 1) % n, "long_g");
  /* Strided: every third int of the source into every second of dest. */
  int* sdst = shmem_calloc(600, sizeof(int));
  int* ssrc = shmem_malloc(600 * sizeof(int));
  int priv_src[600], priv_dst[600];
  for (int i = 0; i < 600; i++) ssrc[i] = priv_src[i] = me * 100000 + i;
  shmem_barrier_all();
  shmem_int_iput(sdst, ssrc, 2, 3, 200, right);
  shmem_barrier_all();
  for (int i = 0; i < 400; i++)
    CHECK(sdst[i] == (i % 2 ? 0 : left * 100000 + (i / 2) * 3),
          "iput from heap [%d] = %d", i, sdst[i]);
  shmem_barrier_all();
  memset(sdst, 0, 600 * sizeof(int));
  shmem_barrier_all();
  shmem_int_iput(sdst, priv_src, 3, 2, 200, right);
  shmem_barrier_all();
  for (int i = 0; i < 600; i++)
    CHECK(sdst[i] == (i % 3 ? 0 : left * 100000 + (i / 3) * 2),
          "iput from private memory [%d] = %d", i, sdst[i]);
  memset(priv_dst, 0, sizeof priv_dst);
  shmem_int_iget(priv_dst, ssrc, 2, 3, 150, left);
  for (int i = 0; i < 300; i++)
    CHECK(priv_dst[i] == (i % 2 ? 0 : left * 100000 + (i / 2) * 3),
          "iget into private memory [%d] = %d", i, priv_dst[i]);
  shmem_barrier_all();
  shmem_free(sdst);
  shmem_free(ssrc);
  shmem_free(one);
  shmem_free(d);
  shmem_free(iv);
  shmem_free(dst);
  shmem_free(src);
  free(priv);
  PASS();
  shmem_finalize();
  return 0;
}
