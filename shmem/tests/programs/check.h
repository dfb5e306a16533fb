/* The test programs' check: a mismatch prints what and where, and the PE
 * exits nonzero (oshrun then stops the others and exits with it). */
#ifndef SHMEM_TEST_CHECK_H
#define SHMEM_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s: PE %d: FAIL %s:%d: ", PROGRAM, shmem_my_pe(), \
              __FILE__, __LINE__);                                       \
      fprintf(stderr, __VA_ARGS__);                                      \
      fputc('\n', stderr);                                               \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

#define PASS()                                                              \
  do {                                                                      \
    printf("%s: PE %d of %d: ok\n", PROGRAM, shmem_my_pe(), shmem_n_pes()); \
    fflush(stdout);                                                         \
  } while (0)
#endif
