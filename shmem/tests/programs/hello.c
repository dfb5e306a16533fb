/* Setup and query routines on every PE. */
#include <shmem.h>
#include <string.h>
#define PROGRAM "shmem_hello"
#include "check.h"

int main(void) {
  int local = 0, major = 0, minor = 0, provided = -1;
  char name[SHMEM_MAX_NAME_LEN];
  shmem_init_thread(SHMEM_THREAD_SINGLE, &provided);
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* heap = shmem_malloc(sizeof(long));
  CHECK(n >= 1 && me >= 0 && me < n, "PE %d of %d", me, n);
  CHECK(provided == SHMEM_THREAD_SINGLE, "provided %d", provided);
  shmem_info_get_version(&major, &minor);
  CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
  shmem_info_get_name(name);
  CHECK(strstr(name, "RHiNET") != NULL, "name '%s'", name);
  CHECK(heap != NULL, "shmem_malloc(8) returned NULL");
  for (int pe = 0; pe < n; pe++) {
    CHECK(shmem_pe_accessible(pe), "PE %d not accessible", pe);
    CHECK(shmem_addr_accessible(heap, pe), "heap not accessible at %d", pe);
    CHECK(!shmem_addr_accessible(&local, pe),
          "a stack variable is accessible at PE %d", pe);
  }
  CHECK(!shmem_pe_accessible(n) && !shmem_pe_accessible(-1),
        "PEs out of range accessible");
  CHECK(shmem_ptr(heap, me) == heap, "shmem_ptr to self");
  CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me &&
            shmem_team_n_pes(SHMEM_TEAM_WORLD) == n,
        "SHMEM_TEAM_WORLD");
  shmem_free(heap);
  printf("hello from PE %d of %d\n", me, n);
  PASS();
  shmem_finalize();
  return 0;
}
