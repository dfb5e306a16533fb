// librhinet_shmem: the atomic memory operations (Documentation/userlib/
// shmem.md, "AMOs"). Every AMO is one operation of the NIC's atomic family
// (userlib's Group::atomic) on the 4- or 8-byte word: fetch, set, swap,
// compare_swap, fetch_add/add/inc, and/or/xor, fetching or not. They are
// atomic against each other, from every PE, because the target's NIC
// serializes them; not against the target's own loads and stores.
#include <shmem.h>

#include <bit>
#include <cstdint>
#include <rhinet/rhinet.hpp>
#include <type_traits>

#include "shmem_internal.hpp"

namespace rhinet::shmem::internal {

Symmetric amo_word(const char* routine, const void* dest, std::size_t bytes,
                   int pe) {
  group(routine);
  check_pe(routine, pe);
  if (bytes != 4 && bytes != 8)
    die(routine,
        "the NIC's atomics work on 4- and 8-byte words: no %zu-byte atomics",
        bytes);
  const Symmetric word = symmetric(routine, dest, bytes, "dest");
  if (word.offset % bytes)
    die(routine, "dest %p is not %zu-byte aligned", dest, bytes);
  return word;
}

namespace {

// One NIC atomic on the `bytes`-byte word `dest` of world PE `pe`, on
// context `c`. Fetching: it completes here and returns the old word. Not
// fetching: it goes on without waiting (the context's quiet and the
// barriers wait for it) and returns 0.
std::uint64_t atomic_on(const char* routine, Context& c, const void* dest,
                        std::size_t bytes, rhinet::AtomicOp op,
                        std::uint64_t operand, int pe, bool fetch,
                        std::uint64_t desired = 0) {
  const Symmetric word = amo_word(routine, dest, bytes, pe);
  auto r = nic_of(routine, c)
               .atomic(static_cast<std::uint32_t>(pe), word.area->id(),
                       word.offset, op, bytes, operand, desired, fetch);
  if (!fetch) {
    // Its errors (none are expected once the checks above passed) end
    // the PE at the context's next quiet or a barrier.
    track(c, std::move(r));
    return 0;
  }
  complete(routine, r);
  return r.value();
}

// As atomic_on, with the context's handle and a PE of its team.
std::uint64_t nic_atomic(const char* routine, shmem_ctx_t ctx, const void* dest,
                         std::size_t bytes, rhinet::AtomicOp op,
                         std::uint64_t operand, int team_pe, bool fetch = true,
                         std::uint64_t desired = 0) {
  Context& c = context(routine, ctx);
  return atomic_on(routine, c, dest, bytes, op, operand,
                   world_pe(routine, c, team_pe), fetch, desired);
}

// A value's bits in its width, and back (float and double included).
template <typename T>
using Word = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <typename T>
std::uint64_t bits_of(T v) {
  return std::bit_cast<Word<T>>(v);
}

template <typename T>
T from_bits(std::uint64_t v) {
  return std::bit_cast<T>(static_cast<Word<T>>(v));
}

template <typename T>
T amo_fetch(const char* routine, shmem_ctx_t ctx, const T* source, int pe) {
  return from_bits<T>(nic_atomic(routine, ctx, source, sizeof(T),
                                 rhinet::AtomicOp::fetch, 0, pe));
}

template <typename T>
T amo_swap(const char* routine, shmem_ctx_t ctx, T* dest, T value, int pe,
           bool fetch = true) {
  return from_bits<T>(nic_atomic(routine, ctx, dest, sizeof(T),
                                 rhinet::AtomicOp::swap, bits_of(value), pe,
                                 fetch));
}

template <typename T>
T amo_compare_swap(const char* routine, shmem_ctx_t ctx, T* dest, T cond,
                   T value, int pe) {
  return from_bits<T>(nic_atomic(routine, ctx, dest, sizeof(T),
                                 rhinet::AtomicOp::compare_swap, bits_of(cond),
                                 pe, true, bits_of(value)));
}

template <typename T>
T amo_fetch_add(const char* routine, shmem_ctx_t ctx, T* dest, T value, int pe,
                bool fetch = true) {
  return from_bits<T>(nic_atomic(routine, ctx, dest, sizeof(T),
                                 rhinet::AtomicOp::fetch_add, bits_of(value),
                                 pe, fetch));
}

template <typename T>
T amo_bitwise(const char* routine, shmem_ctx_t ctx, T* dest, T value, int pe,
              rhinet::AtomicOp op, bool fetch) {
  return from_bits<T>(
      nic_atomic(routine, ctx, dest, sizeof(T), op, bits_of(value), pe, fetch));
}

}  // namespace

void signal_update(const char* routine, Context& c, std::uint64_t* sig_addr,
                   std::uint64_t signal, bool add, int pe) {
  // Waited for: the signal is the last thing put_signal does.
  atomic_on(routine, c, sig_addr, 8,
            add ? rhinet::AtomicOp::fetch_add : rhinet::AtomicOp::swap, signal,
            pe, true);
}

}  // namespace rhinet::shmem::internal

using namespace rhinet::shmem::internal;
using rhinet::AtomicOp;

extern "C" {

// Each AMO in its plain form and its context form (RHINET_NAME and the
// rest: shmem_internal.hpp).
#define RHINET_SHMEM_AMO_EXTENDED_FORM(N, T, F)                               \
  T RHINET_NAME(F, N##_atomic_fetch)(RHINET_CTX_PARAM(F) const T* source,     \
                                     int pe) {                                \
    return amo_fetch(RHINET_NAME_STR(F, N, "_atomic_fetch"),                  \
                     RHINET_CTX_ARG(F), source, pe);                          \
  }                                                                           \
  void RHINET_NAME(F, N##_atomic_fetch_nbi)(RHINET_CTX_PARAM(F) T * fetch,    \
                                            const T* source, int pe) {        \
    *fetch = amo_fetch(RHINET_NAME_STR(F, N, "_atomic_fetch_nbi"),            \
                       RHINET_CTX_ARG(F), source, pe);                        \
  }                                                                           \
  void RHINET_NAME(F, N##_atomic_set)(RHINET_CTX_PARAM(F) T * dest, T value,  \
                                      int pe) {                               \
    (void)amo_swap(RHINET_NAME_STR(F, N, "_atomic_set"), RHINET_CTX_ARG(F),   \
                   dest, value, pe, false);                                   \
  }                                                                           \
  T RHINET_NAME(F, N##_atomic_swap)(RHINET_CTX_PARAM(F) T * dest, T value,    \
                                    int pe) {                                 \
    return amo_swap(RHINET_NAME_STR(F, N, "_atomic_swap"), RHINET_CTX_ARG(F), \
                    dest, value, pe);                                         \
  }                                                                           \
  void RHINET_NAME(F, N##_atomic_swap_nbi)(RHINET_CTX_PARAM(F) T * fetch,     \
                                           T * dest, T value, int pe) {       \
    *fetch = amo_swap(RHINET_NAME_STR(F, N, "_atomic_swap_nbi"),              \
                      RHINET_CTX_ARG(F), dest, value, pe);                    \
  }

#define RHINET_SHMEM_AMO_FORM(N, T, F)                                         \
  T RHINET_NAME(F, N##_atomic_compare_swap)(RHINET_CTX_PARAM(F) T * dest,      \
                                            T cond, T value, int pe) {         \
    return amo_compare_swap(RHINET_NAME_STR(F, N, "_atomic_compare_swap"),     \
                            RHINET_CTX_ARG(F), dest, cond, value, pe);         \
  }                                                                            \
  void RHINET_NAME(F, N##_atomic_compare_swap_nbi)(                            \
      RHINET_CTX_PARAM(F) T * fetch, T * dest, T cond, T value, int pe) {      \
    *fetch =                                                                   \
        amo_compare_swap(RHINET_NAME_STR(F, N, "_atomic_compare_swap_nbi"),    \
                         RHINET_CTX_ARG(F), dest, cond, value, pe);            \
  }                                                                            \
  T RHINET_NAME(F, N##_atomic_fetch_inc)(RHINET_CTX_PARAM(F) T * dest,         \
                                         int pe) {                             \
    return amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_fetch_inc"),           \
                         RHINET_CTX_ARG(F), dest, static_cast<T>(1), pe);      \
  }                                                                            \
  void RHINET_NAME(F, N##_atomic_fetch_inc_nbi)(RHINET_CTX_PARAM(F) T * fetch, \
                                                T * dest, int pe) {            \
    *fetch = amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_fetch_inc_nbi"),     \
                           RHINET_CTX_ARG(F), dest, static_cast<T>(1), pe);    \
  }                                                                            \
  void RHINET_NAME(F, N##_atomic_inc)(RHINET_CTX_PARAM(F) T * dest, int pe) {  \
    (void)amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_inc"),                  \
                        RHINET_CTX_ARG(F), dest, static_cast<T>(1), pe,        \
                        false);                                                \
  }                                                                            \
  T RHINET_NAME(F, N##_atomic_fetch_add)(RHINET_CTX_PARAM(F) T * dest,         \
                                         T value, int pe) {                    \
    return amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_fetch_add"),           \
                         RHINET_CTX_ARG(F), dest, value, pe);                  \
  }                                                                            \
  void RHINET_NAME(F, N##_atomic_fetch_add_nbi)(RHINET_CTX_PARAM(F) T * fetch, \
                                                T * dest, T value, int pe) {   \
    *fetch = amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_fetch_add_nbi"),     \
                           RHINET_CTX_ARG(F), dest, value, pe);                \
  }                                                                            \
  void RHINET_NAME(F, N##_atomic_add)(RHINET_CTX_PARAM(F) T * dest, T value,   \
                                      int pe) {                                \
    (void)amo_fetch_add(RHINET_NAME_STR(F, N, "_atomic_add"),                  \
                        RHINET_CTX_ARG(F), dest, value, pe, false);            \
  }

#define RHINET_SHMEM_AMO_BIT_OP(N, T, OP, F)                                  \
  T RHINET_NAME(F, N##_atomic_fetch_##OP)(RHINET_CTX_PARAM(F) T * dest,       \
                                          T value, int pe) {                  \
    return amo_bitwise(RHINET_NAME_STR(F, N, "_atomic_fetch_" #OP),           \
                       RHINET_CTX_ARG(F), dest, value, pe,                    \
                       AtomicOp::fetch_##OP, true);                           \
  }                                                                           \
  void RHINET_NAME(F, N##_atomic_##OP)(RHINET_CTX_PARAM(F) T * dest, T value, \
                                       int pe) {                              \
    (void)amo_bitwise(RHINET_NAME_STR(F, N, "_atomic_" #OP),                  \
                      RHINET_CTX_ARG(F), dest, value, pe,                     \
                      AtomicOp::fetch_##OP, false);                           \
  }
#define RHINET_SHMEM_AMO_BITWISE_FORM(N, T, F) \
  RHINET_SHMEM_AMO_BIT_OP(N, T, and, F)        \
  RHINET_SHMEM_AMO_BIT_OP(N, T, or, F)         \
  RHINET_SHMEM_AMO_BIT_OP(N, T, xor, F)

#define RHINET_SHMEM_AMO_EXTENDED(N, T) \
  RHINET_BOTH_FORMS(RHINET_SHMEM_AMO_EXTENDED_FORM, N, T)
#define RHINET_SHMEM_AMO(N, T) RHINET_BOTH_FORMS(RHINET_SHMEM_AMO_FORM, N, T)
#define RHINET_SHMEM_AMO_BITWISE(N, T) \
  RHINET_BOTH_FORMS(RHINET_SHMEM_AMO_BITWISE_FORM, N, T)
SHMEMI_AMO_EXTENDED_TYPES(RHINET_SHMEM_AMO_EXTENDED)
SHMEMI_AMO_TYPES(RHINET_SHMEM_AMO)
SHMEMI_AMO_BITWISE_TYPES(RHINET_SHMEM_AMO_BITWISE)

}  // extern "C"
