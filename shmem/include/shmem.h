/*
 * shmem.h: OpenSHMEM 1.5 on the RHiNET NIC (librhinet_shmem).
 *
 * What is implemented, and how each routine maps to the NIC:
 * Documentation/userlib/shmem.md. Routines of the specification that are
 * declared here but not implemented yet print a message naming themselves
 * and return an error (or end the program where the routine has no way to
 * return one); routines not declared here are not implemented.
 */
#ifndef RHINET_SHMEM_H
#define RHINET_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "RHiNET-NG OpenSHMEM (librhinet_shmem)"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

/* Teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED (this PE alone: no other
 * PE's memory is load/store accessible) and teams split from them. */
typedef struct rhinet_shmem_team* shmem_team_t;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD ((shmem_team_t)1)
#define SHMEM_TEAM_SHARED ((shmem_team_t)2)
typedef struct {
  int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS 1L

/* Contexts: SHMEM_CTX_DEFAULT and up to 32 more per PE (shmem_ctx_create
 * returns nonzero when they are all live). Each is its own completion
 * domain: shmem_ctx_quiet waits for that context's operations only. */
typedef struct rhinet_shmem_ctx* shmem_ctx_t;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)1)
#define SHMEM_CTX_SERIALIZED 1L
#define SHMEM_CTX_PRIVATE 2L
#define SHMEM_CTX_NOSTORE 4L

/* Library setup and query */
void shmem_init(void);
int shmem_init_thread(int requested, int* provided);
void shmem_query_thread(int* provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void* addr, int pe);
void* shmem_ptr(const void* dest, int pe);
void shmem_info_get_version(int* major, int* minor);
void shmem_info_get_name(char* name);

/* Teams */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team);
int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t* config);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t* config,
                             long config_mask, shmem_team_t* new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team,
                        const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team);
void shmem_team_destroy(shmem_team_t team);

/* Contexts */
int shmem_ctx_create(long options, shmem_ctx_t* ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team);
void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);

/* Symmetric heap */
void* shmem_malloc(size_t size);
void* shmem_malloc_with_hints(size_t size, long hints);
void* shmem_calloc(size_t count, size_t size);
void* shmem_align(size_t alignment, size_t size);
void* shmem_realloc(void* ptr, size_t size);
void shmem_free(void* ptr);

/* The standard RMA types: SHMEMI_RMA_TYPES(X) calls X(TYPENAME, TYPE). */
#define SHMEMI_RMA_TYPES(X)        \
  X(float, float)                  \
  X(double, double)                \
  X(longdouble, long double)       \
  X(char, char)                    \
  X(schar, signed char)            \
  X(short, short)                  \
  X(int, int)                      \
  X(long, long)                    \
  X(longlong, long long)           \
  X(uchar, unsigned char)          \
  X(ushort, unsigned short)        \
  X(uint, unsigned int)            \
  X(ulong, unsigned long)          \
  X(ulonglong, unsigned long long) \
  X(int8, int8_t)                  \
  X(int16, int16_t)                \
  X(int32, int32_t)                \
  X(int64, int64_t)                \
  X(uint8, uint8_t)                \
  X(uint16, uint16_t)              \
  X(uint32, uint32_t)              \
  X(uint64, uint64_t)              \
  X(size, size_t)                  \
  X(ptrdiff, ptrdiff_t)

/* The context forms: the same routines on a context, shmem_ctx_TYPE_... */
#define SHMEMI_DECLARE_CTX_RMA(N, T)                                         \
  void shmem_ctx_##N##_put(shmem_ctx_t ctx, T* dest, const T* source,        \
                           size_t nelems, int pe);                           \
  void shmem_ctx_##N##_get(shmem_ctx_t ctx, T* dest, const T* source,        \
                           size_t nelems, int pe);                           \
  void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T* dest, const T* source,    \
                               size_t nelems, int pe);                       \
  void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T* dest, const T* source,    \
                               size_t nelems, int pe);                       \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe);         \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe);             \
  void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T* dest, const T* source,       \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                            int pe);                                         \
  void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T* dest, const T* source,       \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                            int pe);                                         \
  void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T* dest, const T* source, \
                                  size_t nelems, uint64_t* sig_addr,         \
                                  uint64_t signal, int sig_op, int pe);      \
  void shmem_ctx_##N##_put_signal_nbi(                                       \
      shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,              \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);

/* Sized RMA: X(BITS, bytes) */
#define SHMEMI_RMA_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

#define SHMEMI_DECLARE_RMA(N, T)                                               \
  SHMEMI_DECLARE_CTX_RMA(N, T)                                                 \
  void shmem_##N##_put(T* dest, const T* source, size_t nelems, int pe);       \
  void shmem_##N##_get(T* dest, const T* source, size_t nelems, int pe);       \
  void shmem_##N##_put_nbi(T* dest, const T* source, size_t nelems, int pe);   \
  void shmem_##N##_get_nbi(T* dest, const T* source, size_t nelems, int pe);   \
  void shmem_##N##_p(T* dest, T value, int pe);                                \
  T shmem_##N##_g(const T* source, int pe);                                    \
  void shmem_##N##_iput(T* dest, const T* source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_##N##_iget(T* dest, const T* source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_##N##_put_signal(T* dest, const T* source, size_t nelems,         \
                              uint64_t* sig_addr, uint64_t signal, int sig_op, \
                              int pe);                                         \
  void shmem_##N##_put_signal_nbi(T* dest, const T* source, size_t nelems,     \
                                  uint64_t* sig_addr, uint64_t signal,         \
                                  int sig_op, int pe);                         \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source,       \
                            size_t nelems, int PE_root);
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_RMA)

#define SHMEMI_DECLARE_SIZED(BITS, BYTES)                                      \
  SHMEMI_DECLARE_CTX_SIZED(BITS)                                               \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe); \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe); \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems,    \
                             int pe);                                          \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems,    \
                             int pe);                                          \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst,         \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst,         \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_put##BITS##_signal(void* dest, const void* source, size_t nelems, \
                                uint64_t* sig_addr, uint64_t signal,           \
                                int sig_op, int pe);                           \
  void shmem_put##BITS##_signal_nbi(void* dest, const void* source,            \
                                    size_t nelems, uint64_t* sig_addr,         \
                                    uint64_t signal, int sig_op, int pe);
#define SHMEMI_DECLARE_CTX_SIZED(BITS)                                       \
  void shmem_ctx_put##BITS(shmem_ctx_t ctx, void* dest, const void* source,  \
                           size_t nelems, int pe);                           \
  void shmem_ctx_get##BITS(shmem_ctx_t ctx, void* dest, const void* source,  \
                           size_t nelems, int pe);                           \
  void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest,                \
                                 const void* source, size_t nelems, int pe); \
  void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest,                \
                                 const void* source, size_t nelems, int pe); \
  void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                            int pe);                                         \
  void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                            int pe);                                         \
  void shmem_ctx_put##BITS##_signal(                                         \
      shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,        \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);              \
  void shmem_ctx_put##BITS##_signal_nbi(                                     \
      shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,        \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_RMA_SIZES(SHMEMI_DECLARE_SIZED)

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_putmem_signal(void* dest, const void* source, size_t nelems,
                         uint64_t* sig_addr, uint64_t signal, int sig_op,
                         int pe);
void shmem_putmem_signal_nbi(void* dest, const void* source, size_t nelems,
                             uint64_t* sig_addr, uint64_t signal, int sig_op,
                             int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void* dest, const void* source,
                      size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void* dest, const void* source,
                      size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source,
                          size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source,
                          size_t nelems, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void* dest, const void* source,
                             size_t nelems, uint64_t* sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void* dest,
                                 const void* source, size_t nelems,
                                 uint64_t* sig_addr, uint64_t signal,
                                 int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t* sig_addr);
uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp,
                                 uint64_t cmp_value);

/* Ordering and completion */
void shmem_fence(void);
void shmem_quiet(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* Atomic memory operations. The standard AMO types: X(TYPENAME, TYPE). Each
 * is one NIC atomic on the 4- or 8-byte word (shmem.md, "AMOs"). */
#define SHMEMI_AMO_TYPES(X)        \
  X(int, int)                      \
  X(long, long)                    \
  X(longlong, long long)           \
  X(uint, unsigned int)            \
  X(ulong, unsigned long)          \
  X(ulonglong, unsigned long long) \
  X(int32, int32_t)                \
  X(int64, int64_t)                \
  X(uint32, uint32_t)              \
  X(uint64, uint64_t)              \
  X(size, size_t)                  \
  X(ptrdiff, ptrdiff_t)
#define SHMEMI_AMO_EXTENDED_TYPES(X) \
  SHMEMI_AMO_TYPES(X) X(float, float) X(double, double)
#define SHMEMI_AMO_BITWISE_TYPES(X) \
  X(uint, unsigned int)             \
  X(ulong, unsigned long)           \
  X(ulonglong, unsigned long long)  \
  X(int32, int32_t)                 \
  X(int64, int64_t)                 \
  X(uint32, uint32_t)               \
  X(uint64, uint64_t)

#define SHMEMI_DECLARE_AMO_EXTENDED(N, T)                               \
  SHMEMI_DECLARE_CTX_AMO_EXTENDED(N, T)                                 \
  T shmem_##N##_atomic_fetch(const T* source, int pe);                  \
  void shmem_##N##_atomic_fetch_nbi(T* fetch, const T* source, int pe); \
  void shmem_##N##_atomic_set(T* dest, T value, int pe);                \
  T shmem_##N##_atomic_swap(T* dest, T value, int pe);                  \
  void shmem_##N##_atomic_swap_nbi(T* fetch, T* dest, T value, int pe);
#define SHMEMI_DECLARE_CTX_AMO_EXTENDED(N, T)                                 \
  T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T* source, int pe);   \
  void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T* fetch,            \
                                        const T* source, int pe);             \
  void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T* dest, T value, int pe); \
  T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T* dest, T value, int pe);   \
  void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest,    \
                                       T value, int pe);
SHMEMI_AMO_EXTENDED_TYPES(SHMEMI_DECLARE_AMO_EXTENDED)

#define SHMEMI_DECLARE_AMO(N, T)                                               \
  SHMEMI_DECLARE_CTX_AMO(N, T)                                                 \
  T shmem_##N##_atomic_compare_swap(T* dest, T cond, T value, int pe);         \
  void shmem_##N##_atomic_compare_swap_nbi(T* fetch, T* dest, T cond, T value, \
                                           int pe);                            \
  T shmem_##N##_atomic_fetch_inc(T* dest, int pe);                             \
  void shmem_##N##_atomic_fetch_inc_nbi(T* fetch, T* dest, int pe);            \
  void shmem_##N##_atomic_inc(T* dest, int pe);                                \
  T shmem_##N##_atomic_fetch_add(T* dest, T value, int pe);                    \
  void shmem_##N##_atomic_fetch_add_nbi(T* fetch, T* dest, T value, int pe);   \
  void shmem_##N##_atomic_add(T* dest, T value, int pe);
#define SHMEMI_DECLARE_CTX_AMO(N, T)                                      \
  T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T* dest, T cond, \
                                        T value, int pe);                 \
  void shmem_ctx_##N##_atomic_compare_swap_nbi(                           \
      shmem_ctx_t ctx, T* fetch, T* dest, T cond, T value, int pe);       \
  T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T* dest, int pe);   \
  void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T* fetch,    \
                                            T* dest, int pe);             \
  void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T* dest, int pe);      \
  T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T* dest, T value,   \
                                     int pe);                             \
  void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T* fetch,    \
                                            T* dest, T value, int pe);    \
  void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T* dest, T value, int pe);
SHMEMI_AMO_TYPES(SHMEMI_DECLARE_AMO)

#define SHMEMI_DECLARE_AMO_BITWISE(N, T)                    \
  SHMEMI_DECLARE_CTX_AMO_BITWISE(N, T)                      \
  T shmem_##N##_atomic_fetch_and(T* dest, T value, int pe); \
  void shmem_##N##_atomic_and(T* dest, T value, int pe);    \
  T shmem_##N##_atomic_fetch_or(T* dest, T value, int pe);  \
  void shmem_##N##_atomic_or(T* dest, T value, int pe);     \
  T shmem_##N##_atomic_fetch_xor(T* dest, T value, int pe); \
  void shmem_##N##_atomic_xor(T* dest, T value, int pe);
#define SHMEMI_DECLARE_CTX_AMO_BITWISE(N, T)                                  \
  T shmem_ctx_##N##_atomic_fetch_and(shmem_ctx_t ctx, T* dest, T value,       \
                                     int pe);                                 \
  void shmem_ctx_##N##_atomic_and(shmem_ctx_t ctx, T* dest, T value, int pe); \
  T shmem_ctx_##N##_atomic_fetch_or(shmem_ctx_t ctx, T* dest, T value,        \
                                    int pe);                                  \
  void shmem_ctx_##N##_atomic_or(shmem_ctx_t ctx, T* dest, T value, int pe);  \
  T shmem_ctx_##N##_atomic_fetch_xor(shmem_ctx_t ctx, T* dest, T value,       \
                                     int pe);                                 \
  void shmem_ctx_##N##_atomic_xor(shmem_ctx_t ctx, T* dest, T value, int pe);
SHMEMI_AMO_BITWISE_TYPES(SHMEMI_DECLARE_AMO_BITWISE)

/* Collectives (on SHMEM_TEAM_WORLD over the NIC's collectives;
 * SHMEM_TEAM_SHARED is this PE alone). */
void shmem_barrier_all(void);
void shmem_sync_all(void);
int shmem_team_sync(shmem_team_t team);
int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source,
                       size_t nelems, int PE_root);

/* Reductions: the bitwise ones on SHMEMI_REDUCE_BITWISE_TYPES, sum, prod,
 * min and max on the RMA types. The NIC reduces 32- and 64-bit integers,
 * float and double (not prod); the other types and prod are gathered to
 * every member and combined there. */
#define SHMEMI_REDUCE_BITWISE_TYPES(X) \
  X(uchar, unsigned char)              \
  X(ushort, unsigned short)            \
  X(uint, unsigned int)                \
  X(ulong, unsigned long)              \
  X(ulonglong, unsigned long long)     \
  X(int8, int8_t)                      \
  X(int16, int16_t)                    \
  X(int32, int32_t)                    \
  X(int64, int64_t)                    \
  X(uint8, uint8_t)                    \
  X(uint16, uint16_t)                  \
  X(uint32, uint32_t)                  \
  X(uint64, uint64_t)                  \
  X(size, size_t)
#define SHMEMI_DECLARE_REDUCE(N, T, OP)                                      \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, \
                                size_t nreduce);
#define SHMEMI_DECLARE_REDUCE_AND(N, T) SHMEMI_DECLARE_REDUCE(N, T, and)
#define SHMEMI_DECLARE_REDUCE_OR(N, T) SHMEMI_DECLARE_REDUCE(N, T, or)
#define SHMEMI_DECLARE_REDUCE_XOR(N, T) SHMEMI_DECLARE_REDUCE(N, T, xor)
#define SHMEMI_DECLARE_REDUCE_MIN(N, T) SHMEMI_DECLARE_REDUCE(N, T, min)
#define SHMEMI_DECLARE_REDUCE_MAX(N, T) SHMEMI_DECLARE_REDUCE(N, T, max)
#define SHMEMI_DECLARE_REDUCE_SUM(N, T) SHMEMI_DECLARE_REDUCE(N, T, sum)
#define SHMEMI_DECLARE_REDUCE_PROD(N, T) SHMEMI_DECLARE_REDUCE(N, T, prod)
SHMEMI_REDUCE_BITWISE_TYPES(SHMEMI_DECLARE_REDUCE_AND)
SHMEMI_REDUCE_BITWISE_TYPES(SHMEMI_DECLARE_REDUCE_OR)
SHMEMI_REDUCE_BITWISE_TYPES(SHMEMI_DECLARE_REDUCE_XOR)
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_REDUCE_MIN)
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_REDUCE_MAX)
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_REDUCE_SUM)
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_REDUCE_PROD)
/* Sums and products of complex numbers (C's _Complex; C++ compilers take
 * it as an extension with the same layout: real part, then imaginary). A
 * sum is the NIC's allreduce of the parts; a product is gathered. */
#define SHMEMI_COMPLEX_TYPES(X) \
  X(complexf, float _Complex)   \
  X(complexd, double _Complex)
SHMEMI_COMPLEX_TYPES(SHMEMI_DECLARE_REDUCE_SUM)
SHMEMI_COMPLEX_TYPES(SHMEMI_DECLARE_REDUCE_PROD)

/* collect, fcollect, alltoall(s) on a team: PUSHes into the members' heaps
 * and the team's NIC barrier. dest and source are symmetric. */
int shmem_collectmem(shmem_team_t team, void* dest, const void* source,
                     size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source,
                      size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source,
                      size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
#define SHMEMI_DECLARE_COLLECT(N, T)                                     \
  int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source,   \
                          size_t nelems);                                \
  int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source,  \
                           size_t nelems);                               \
  int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source,  \
                           size_t nelems);                               \
  int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source, \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
SHMEMI_RMA_TYPES(SHMEMI_DECLARE_COLLECT)

/* The active-set collectives (deprecated in 1.5, still part of it): the
 * PEs PE_start, PE_start + 2^logPE_stride, ... (PE_size of them) take
 * part, and only they call. pSync is a symmetric array of the routine's
 * SHMEM_*_SYNC_SIZE longs, every element SHMEM_SYNC_VALUE on every member
 * when the call begins, and not in use by another collective; it is
 * SHMEM_SYNC_VALUE again when the call returns. pWrk is not used. A PE
 * outside its active set, a negative stride or a size below 1 ends the PE
 * with a message naming the routine (shmem.md, "Active sets"). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 4
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
#define SHMEMI_DECLARE_ACTIVE_SET(BITS)                                     \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, \
                             int PE_root, int PE_start, int logPE_stride,   \
                             int PE_size, long* pSync);                     \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems,   \
                           int PE_start, int logPE_stride, int PE_size,     \
                           long* pSync);                                    \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems,  \
                            int PE_start, int logPE_stride, int PE_size,    \
                            long* pSync);                                   \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems,  \
                            int PE_start, int logPE_stride, int PE_size,    \
                            long* pSync);                                   \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, \
                             ptrdiff_t sst, size_t nelems, int PE_start,    \
                             int logPE_stride, int PE_size, long* pSync);
SHMEMI_DECLARE_ACTIVE_SET(32)
SHMEMI_DECLARE_ACTIVE_SET(64)
/* shmem_TYPE_OP_to_all: and, or, xor on the bitwise types; min, max, sum,
 * prod on the others; sum and prod on the complex types. */
#define SHMEMI_TO_ALL_BITWISE_TYPES(X) \
  X(short, short)                      \
  X(int, int)                          \
  X(long, long)                        \
  X(longlong, long long)
#define SHMEMI_TO_ALL_TYPES(X)   \
  SHMEMI_TO_ALL_BITWISE_TYPES(X) \
  X(float, float)                \
  X(double, double)              \
  X(longdouble, long double)
#define SHMEMI_DECLARE_TO_ALL(N, T, OP)                                       \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce,       \
                                 int PE_start, int logPE_stride, int PE_size, \
                                 T* pWrk, long* pSync);
#define SHMEMI_DECLARE_TO_ALL_BITWISE(N, T) \
  SHMEMI_DECLARE_TO_ALL(N, T, and)          \
  SHMEMI_DECLARE_TO_ALL(N, T, or)           \
  SHMEMI_DECLARE_TO_ALL(N, T, xor)
#define SHMEMI_DECLARE_TO_ALL_ARITH(N, T) \
  SHMEMI_DECLARE_TO_ALL(N, T, min)        \
  SHMEMI_DECLARE_TO_ALL(N, T, max)        \
  SHMEMI_DECLARE_TO_ALL(N, T, sum)        \
  SHMEMI_DECLARE_TO_ALL(N, T, prod)
#define SHMEMI_DECLARE_TO_ALL_COMPLEX(N, T) \
  SHMEMI_DECLARE_TO_ALL(N, T, sum)          \
  SHMEMI_DECLARE_TO_ALL(N, T, prod)
SHMEMI_TO_ALL_BITWISE_TYPES(SHMEMI_DECLARE_TO_ALL_BITWISE)
SHMEMI_TO_ALL_TYPES(SHMEMI_DECLARE_TO_ALL_ARITH)
SHMEMI_COMPLEX_TYPES(SHMEMI_DECLARE_TO_ALL_COMPLEX)

/* Waiting on words: the point-to-point synchronization types (the AMO
 * types and short, unsigned short). */
#define SHMEMI_WAIT_TYPES(X) \
  X(short, short)            \
  X(ushort, unsigned short)  \
  SHMEMI_AMO_TYPES(X)
#define SHMEMI_DECLARE_WAIT(N, T)                                              \
  void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value);                  \
  int shmem_##N##_test(T* ivar, int cmp, T cmp_value);                         \
  void shmem_##N##_wait_until_all(T* ivars, size_t nelems, const int* status,  \
                                  int cmp, T cmp_value);                       \
  size_t shmem_##N##_wait_until_any(T* ivars, size_t nelems,                   \
                                    const int* status, int cmp, T cmp_value);  \
  size_t shmem_##N##_wait_until_some(T* ivars, size_t nelems, size_t* indices, \
                                     const int* status, int cmp, T cmp_value); \
  void shmem_##N##_wait_until_all_vector(                                      \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);     \
  size_t shmem_##N##_wait_until_any_vector(                                    \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);     \
  size_t shmem_##N##_wait_until_some_vector(                                   \
      T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,    \
      T* cmp_values);                                                          \
  int shmem_##N##_test_all(T* ivars, size_t nelems, const int* status,         \
                           int cmp, T cmp_value);                              \
  size_t shmem_##N##_test_any(T* ivars, size_t nelems, const int* status,      \
                              int cmp, T cmp_value);                           \
  size_t shmem_##N##_test_some(T* ivars, size_t nelems, size_t* indices,       \
                               const int* status, int cmp, T cmp_value);       \
  int shmem_##N##_test_all_vector(T* ivars, size_t nelems, const int* status,  \
                                  int cmp, T* cmp_values);                     \
  size_t shmem_##N##_test_any_vector(                                          \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);     \
  size_t shmem_##N##_test_some_vector(T* ivars, size_t nelems,                 \
                                      size_t* indices, const int* status,      \
                                      int cmp, T* cmp_values);
SHMEMI_WAIT_TYPES(SHMEMI_DECLARE_WAIT)

/* Locks: a symmetric long, 0 before first use, names a NIC lock. */
void shmem_set_lock(long* lock);
void shmem_clear_lock(long* lock);
int shmem_test_lock(long* lock);

#ifdef __cplusplus
}
#endif

/* C11 type-generic names: shmem_put(dest, source, nelems, pe) and the
 * rest pick the typed routine from dest's (get, g: source's) element type;
 * shmem_put(ctx, dest, source, nelems, pe) and the other RMA and AMO names
 * with a context first pick the context form. One entry per distinct C
 * type: int64_t, size_t and the like are typedefs of these. */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && \
    __STDC_VERSION__ >= 201112L
/* clang-format off */
/* The typed routine P##TYPE_##OP for X's type; P is shmem_ or shmem_ctx_. */
#define SHMEMI_GENERIC_INTEGERS(P, OP) \
  int: P##int_##OP,                    \
  long: P##long_##OP,                  \
  long long: P##longlong_##OP,         \
  unsigned int: P##uint_##OP,          \
  unsigned long: P##ulong_##OP,        \
  unsigned long long: P##ulonglong_##OP
#define SHMEMI_GENERIC_RMA_LIST(P, OP)               \
  float: P##float_##OP,                              \
  double: P##double_##OP,                            \
  long double: P##longdouble_##OP,                   \
  char: P##char_##OP,                                \
  signed char: P##schar_##OP,                        \
  short: P##short_##OP,                              \
  unsigned char: P##uchar_##OP,                      \
  unsigned short: P##ushort_##OP,                    \
  SHMEMI_GENERIC_INTEGERS(P, OP)
#define SHMEMI_GENERIC_RMA(X, P, OP)                 \
  _Generic((X), SHMEMI_GENERIC_RMA_LIST(P, OP))
/* Reductions: and, or, xor on the bitwise types (int8_t ... int64_t are
 * signed char, short, int and long); sum and prod also on complex. */
#define SHMEMI_GENERIC_REDUCE_BITWISE(X, OP)         \
  _Generic((X), unsigned char: shmem_uchar_##OP,     \
           unsigned short: shmem_ushort_##OP,        \
           unsigned int: shmem_uint_##OP,            \
           unsigned long: shmem_ulong_##OP,          \
           unsigned long long: shmem_ulonglong_##OP, \
           signed char: shmem_int8_##OP,             \
           short: shmem_int16_##OP,                  \
           int: shmem_int32_##OP,                    \
           long: shmem_int64_##OP)
#define SHMEMI_GENERIC_REDUCE_ARITH(X, OP) SHMEMI_GENERIC_RMA(X, shmem_, OP)
#define SHMEMI_GENERIC_REDUCE_COMPLEX(X, OP)         \
  _Generic((X), float _Complex: shmem_complexf_##OP, \
           double _Complex: shmem_complexd_##OP,     \
           SHMEMI_GENERIC_RMA_LIST(shmem_, OP))
#define SHMEMI_GENERIC_AMO(X, P, OP) \
  _Generic((X), SHMEMI_GENERIC_INTEGERS(P, OP))
#define SHMEMI_GENERIC_AMO_EXTENDED(X, P, OP)        \
  _Generic((X), float: P##float_##OP,                \
           double: P##double_##OP,                   \
           SHMEMI_GENERIC_INTEGERS(P, OP))
#define SHMEMI_GENERIC_AMO_BITWISE(X, P, OP)         \
  _Generic((X), int: P##int32_##OP,                  \
           long: P##int64_##OP,                      \
           unsigned int: P##uint_##OP,               \
           unsigned long: P##ulong_##OP,             \
           unsigned long long: P##ulonglong_##OP)
#define SHMEMI_GENERIC_WAIT(X, OP)                   \
  _Generic((X), short: shmem_short_##OP,             \
           unsigned short: shmem_ushort_##OP,        \
           SHMEMI_GENERIC_INTEGERS(shmem_, OP))
#define SHMEMI_GENERIC(X, OP) SHMEMI_GENERIC_RMA(X, shmem_, OP)

/* A routine with a context form takes one more argument, the context,
 * first: the argument count picks SHMEMI_<name>_<count>. */
#define SHMEMI_ARGC(...) SHMEMI_ARGC_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define SHMEMI_ARGC_(a1, a2, a3, a4, a5, a6, a7, a8, a9, N, ...) N
#define SHMEMI_CAT(a, b) SHMEMI_CAT_(a, b)
#define SHMEMI_CAT_(a, b) a##b
#define SHMEMI_BY_ARGC(NAME, ...) \
  SHMEMI_CAT(NAME, SHMEMI_ARGC(__VA_ARGS__))(__VA_ARGS__)
/* Plain with N arguments, the type from the first; context with N + 1. */
#define SHMEMI_FORMS(KIND, OP, X, ...) KIND(*(X), shmem_, OP)(X, __VA_ARGS__)
#define SHMEMI_CTX_FORMS(KIND, OP, C, X, ...) \
  KIND(*(X), shmem_ctx_, OP)(C, X, __VA_ARGS__)
#define shmem_put(...) SHMEMI_BY_ARGC(SHMEMI_put_, __VA_ARGS__)
#define SHMEMI_put_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, put, __VA_ARGS__)
#define SHMEMI_put_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, put, __VA_ARGS__)
#define shmem_get(...) SHMEMI_BY_ARGC(SHMEMI_get_, __VA_ARGS__)
#define SHMEMI_get_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, get, __VA_ARGS__)
#define SHMEMI_get_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, get, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEMI_BY_ARGC(SHMEMI_put_nbi_, __VA_ARGS__)
#define SHMEMI_put_nbi_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, put_nbi, __VA_ARGS__)
#define SHMEMI_put_nbi_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEMI_BY_ARGC(SHMEMI_get_nbi_, __VA_ARGS__)
#define SHMEMI_get_nbi_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, get_nbi, __VA_ARGS__)
#define SHMEMI_get_nbi_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEMI_BY_ARGC(SHMEMI_p_, __VA_ARGS__)
#define SHMEMI_p_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, p, __VA_ARGS__)
#define SHMEMI_p_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, p, __VA_ARGS__)
#define shmem_g(...) SHMEMI_BY_ARGC(SHMEMI_g_, __VA_ARGS__)
#define SHMEMI_g_2(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, g, __VA_ARGS__)
#define SHMEMI_g_3(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, g, __VA_ARGS__)
#define shmem_iput(...) SHMEMI_BY_ARGC(SHMEMI_iput_, __VA_ARGS__)
#define SHMEMI_iput_6(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, iput, __VA_ARGS__)
#define SHMEMI_iput_7(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEMI_BY_ARGC(SHMEMI_iget_, __VA_ARGS__)
#define SHMEMI_iget_6(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, iget, __VA_ARGS__)
#define SHMEMI_iget_7(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, iget, __VA_ARGS__)
#define shmem_put_signal(...) SHMEMI_BY_ARGC(SHMEMI_put_signal_, __VA_ARGS__)
#define SHMEMI_put_signal_7(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, put_signal, __VA_ARGS__)
#define SHMEMI_put_signal_8(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEMI_BY_ARGC(SHMEMI_put_signal_nbi_, __VA_ARGS__)
#define SHMEMI_put_signal_nbi_7(...) SHMEMI_FORMS(SHMEMI_GENERIC_RMA, put_signal_nbi, __VA_ARGS__)
#define SHMEMI_put_signal_nbi_8(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_RMA, put_signal_nbi, __VA_ARGS__)
#define shmem_atomic_fetch(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_2(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_fetch, __VA_ARGS__)
#define SHMEMI_atomic_fetch_3(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_nbi_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_nbi_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_fetch_nbi, __VA_ARGS__)
#define SHMEMI_atomic_fetch_nbi_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEMI_BY_ARGC(SHMEMI_atomic_set_, __VA_ARGS__)
#define SHMEMI_atomic_set_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_set, __VA_ARGS__)
#define SHMEMI_atomic_set_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEMI_BY_ARGC(SHMEMI_atomic_swap_, __VA_ARGS__)
#define SHMEMI_atomic_swap_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_swap, __VA_ARGS__)
#define SHMEMI_atomic_swap_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_swap, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEMI_BY_ARGC(SHMEMI_atomic_swap_nbi_, __VA_ARGS__)
#define SHMEMI_atomic_swap_nbi_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_swap_nbi, __VA_ARGS__)
#define SHMEMI_atomic_swap_nbi_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_EXTENDED, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEMI_BY_ARGC(SHMEMI_atomic_compare_swap_, __VA_ARGS__)
#define SHMEMI_atomic_compare_swap_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_compare_swap, __VA_ARGS__)
#define SHMEMI_atomic_compare_swap_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEMI_BY_ARGC(SHMEMI_atomic_compare_swap_nbi_, __VA_ARGS__)
#define SHMEMI_atomic_compare_swap_nbi_5(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_compare_swap_nbi, __VA_ARGS__)
#define SHMEMI_atomic_compare_swap_nbi_6(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_inc_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_inc_2(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_inc, __VA_ARGS__)
#define SHMEMI_atomic_fetch_inc_3(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_inc_nbi_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_inc_nbi_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_inc_nbi, __VA_ARGS__)
#define SHMEMI_atomic_fetch_inc_nbi_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEMI_BY_ARGC(SHMEMI_atomic_inc_, __VA_ARGS__)
#define SHMEMI_atomic_inc_2(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_inc, __VA_ARGS__)
#define SHMEMI_atomic_inc_3(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_add_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_add_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_add, __VA_ARGS__)
#define SHMEMI_atomic_fetch_add_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_add_nbi_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_add_nbi_4(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_add_nbi, __VA_ARGS__)
#define SHMEMI_atomic_fetch_add_nbi_5(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEMI_BY_ARGC(SHMEMI_atomic_add_, __VA_ARGS__)
#define SHMEMI_atomic_add_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO, atomic_add, __VA_ARGS__)
#define SHMEMI_atomic_add_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_and_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_and_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_and, __VA_ARGS__)
#define SHMEMI_atomic_fetch_and_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEMI_BY_ARGC(SHMEMI_atomic_and_, __VA_ARGS__)
#define SHMEMI_atomic_and_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_and, __VA_ARGS__)
#define SHMEMI_atomic_and_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_or_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_or_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_or, __VA_ARGS__)
#define SHMEMI_atomic_fetch_or_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEMI_BY_ARGC(SHMEMI_atomic_or_, __VA_ARGS__)
#define SHMEMI_atomic_or_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_or, __VA_ARGS__)
#define SHMEMI_atomic_or_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEMI_BY_ARGC(SHMEMI_atomic_fetch_xor_, __VA_ARGS__)
#define SHMEMI_atomic_fetch_xor_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_xor, __VA_ARGS__)
#define SHMEMI_atomic_fetch_xor_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEMI_BY_ARGC(SHMEMI_atomic_xor_, __VA_ARGS__)
#define SHMEMI_atomic_xor_3(...) SHMEMI_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_xor, __VA_ARGS__)
#define SHMEMI_atomic_xor_4(...) SHMEMI_CTX_FORMS(SHMEMI_GENERIC_AMO_BITWISE, atomic_xor, __VA_ARGS__)
/* clang-format on */
#define shmem_collect(team, dest, source, nelems) \
  SHMEMI_GENERIC(*(dest), collect)(team, dest, source, nelems)
#define shmem_fcollect(team, dest, source, nelems) \
  SHMEMI_GENERIC(*(dest), fcollect)(team, dest, source, nelems)
#define shmem_alltoall(team, dest, source, nelems) \
  SHMEMI_GENERIC(*(dest), alltoall)(team, dest, source, nelems)
#define shmem_broadcast(team, dest, source, nelems, root) \
  SHMEMI_GENERIC(*(dest), broadcast)(team, dest, source, nelems, root)
/* shmem_OP_reduce(team, dest, source, nreduce): KIND picks by dest's type. */
#define SHMEMI_REDUCE(KIND, OP, team, dest, source, nreduce) \
  KIND(*(dest), OP##_reduce)(team, dest, source, nreduce)
#define shmem_and_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_BITWISE, and, __VA_ARGS__)
#define shmem_or_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_BITWISE, or, __VA_ARGS__)
#define shmem_xor_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_BITWISE, xor, __VA_ARGS__)
#define shmem_min_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_ARITH, min, __VA_ARGS__)
#define shmem_max_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_ARITH, max, __VA_ARGS__)
#define shmem_sum_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_COMPLEX, sum, __VA_ARGS__)
#define shmem_prod_reduce(...) \
  SHMEMI_REDUCE(SHMEMI_GENERIC_REDUCE_COMPLEX, prod, __VA_ARGS__)

/* The waits by type (they have no context form). */
#define shmem_wait_until(ivar, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivar), wait_until)(ivar, cmp, value)
#define shmem_test(ivar, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivar), test)(ivar, cmp, value)
#define shmem_wait_until_all(ivars, n, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), wait_until_all)(ivars, n, status, cmp, value)
#define shmem_wait_until_any(ivars, n, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), wait_until_any)(ivars, n, status, cmp, value)
#define shmem_wait_until_some(ivars, n, indices, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), wait_until_some)                     \
  (ivars, n, indices, status, cmp, value)
#define shmem_test_all(ivars, n, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), test_all)(ivars, n, status, cmp, value)
#define shmem_test_any(ivars, n, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), test_any)(ivars, n, status, cmp, value)
#define shmem_test_some(ivars, n, indices, status, cmp, value) \
  SHMEMI_GENERIC_WAIT(*(ivars), test_some)                     \
  (ivars, n, indices, status, cmp, value)
#endif

#endif /* RHINET_SHMEM_H */
