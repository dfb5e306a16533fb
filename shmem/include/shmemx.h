/*
 * shmemx.h: RHiNET extensions to OpenSHMEM (librhinet_shmem).
 * Documentation/userlib/shmem.md describes each.
 */
#ifndef RHINET_SHMEMX_H
#define RHINET_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the symmetric heap: its size (SHMEM_SYMMETRIC_SIZE) and the
 * bytes live blocks take now. */
size_t shmemx_heap_size(void);
size_t shmemx_heap_in_use(void);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_SHMEMX_H */
