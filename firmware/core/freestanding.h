// SPDX-License-Identifier: BSD-2-Clause
// The few pieces of a C++ library the engine uses, carried here: the soft
// core's toolchain has no C++ headers at all, so the engine includes only
// C headers and this file. The host build uses the same code, so the host
// tests cover what the soft core runs
// (Documentation/firmware/soft-core-build.md).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if __has_include(<new>)
#include <new>
#else
// Placement new, the one form of new the engine uses (tables are placed
// in on-card memory, never allocated).
inline void* operator new(size_t, void* where) noexcept { return where; }
inline void* operator new[](size_t, void* where) noexcept { return where; }
#endif

#if __has_include(<initializer_list>)
#include <initializer_list>
#else
namespace std {
// The compiler builds braced lists as this type; its layout is the ABI's.
template <typename E>
class initializer_list {
 public:
  constexpr initializer_list() noexcept = default;
  constexpr size_t size() const noexcept { return len_; }
  constexpr const E* begin() const noexcept { return array_; }
  constexpr const E* end() const noexcept { return array_ + len_; }

 private:
  constexpr initializer_list(const E* array, size_t len)
      : array_(array), len_(len) {}
  const E* array_ = nullptr;
  size_t len_ = 0;
};
}  // namespace std
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the contract is little-endian and the engine decodes it in "
              "place; a big-endian port needs byte swaps in the codecs");

namespace rhinet::fw {

// ---- Copies

// memcpy for a small object whose ends and size are 4-byte aligned (WQE
// slots, SGEs, headers in frames), word by word; otherwise memcpy. On the
// soft core a memcpy call costs more than copying a few words.
inline void copy_small(void* dst, const void* src, size_t n) {
  using Word = uint32_t __attribute__((may_alias));
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) |
       n) &
      3) {
    memcpy(dst, src, n);
    return;
  }
  auto* d = static_cast<Word*>(dst);
  const auto* w = static_cast<const Word*>(src);
  // Four words a round: a WQE slot in 4 rounds, not 16 of a load, a
  // store and the loop's three instructions.
#pragma GCC unroll 4
  for (size_t i = 0; i < n / 4; i++) d[i] = w[i];
}

// A field of a structure laid out in an 8-byte aligned buffer (a frame in
// the receive FIFO, a WQE's slots), read in place at its offset: one load,
// where copying the structure out first costs a word per word of it. The
// builtin, because a freestanding build would call memcpy for memcpy.
template <typename T>
inline T field_at(const uint8_t* aligned8, size_t offset) {
  T v;
  __builtin_memcpy(
      &v,
      static_cast<const uint8_t*>(__builtin_assume_aligned(aligned8, 8)) +
          offset,
      sizeof v);
  return v;
}

// Stores a field of a frame whose base is 8-byte aligned with one store
// (field_at's counterpart).
template <typename T>
inline void put_field(uint8_t* aligned8, size_t offset, T v) {
  __builtin_memcpy(
      static_cast<uint8_t*>(__builtin_assume_aligned(aligned8, 8)) + offset, &v,
      sizeof v);
}

// ---- Values

template <typename T>
constexpr T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
constexpr T max(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
constexpr T min(std::initializer_list<T> list) {
  T m = *list.begin();
  for (const T& v : list) m = v < m ? v : m;
  return m;
}
template <typename T>
constexpr T clamp(T v, T lo, T hi) {
  return v < lo ? lo : hi < v ? hi : v;
}

template <typename T>
struct RemoveReference {
  using Type = T;
};
template <typename T>
struct RemoveReference<T&> {
  using Type = T;
};
template <typename T>
struct RemoveReference<T&&> {
  using Type = T;
};

template <typename T>
constexpr typename RemoveReference<T>::Type&& move(T&& v) noexcept {
  return static_cast<typename RemoveReference<T>::Type&&>(v);
}

template <typename It, typename T>
constexpr void fill(It first, It last, const T& value) {
  for (; first != last; ++first) *first = value;
}

template <typename It, typename T>
constexpr It find(It first, It last, const T& value) {
  for (; first != last; ++first)
    if (*first == value) break;
  return first;
}

template <typename T, size_t N>
constexpr size_t array_size(const T (&)[N]) {
  return N;
}

template <typename A, typename B>
struct Pair {
  A first;
  B second;
};

// Integer traits for the reductions (ops/coll): which types are integers,
// and the unsigned type of the same width.
template <typename T>
inline constexpr bool kIsInteger = T(3) / T(2) == T(1);

template <typename T>
struct MakeUnsigned;
template <>
struct MakeUnsigned<int8_t> {
  using Type = uint8_t;
};
template <>
struct MakeUnsigned<int16_t> {
  using Type = uint16_t;
};
template <>
struct MakeUnsigned<int32_t> {
  using Type = uint32_t;
};
template <>
struct MakeUnsigned<int64_t> {
  using Type = uint64_t;
};
template <>
struct MakeUnsigned<uint8_t> {
  using Type = uint8_t;
};
template <>
struct MakeUnsigned<uint16_t> {
  using Type = uint16_t;
};
template <>
struct MakeUnsigned<uint32_t> {
  using Type = uint32_t;
};
template <>
struct MakeUnsigned<uint64_t> {
  using Type = uint64_t;
};

// Compile-time index lists (unrolled dispatch over constant tables).
template <size_t... I>
struct IndexList {};
template <size_t N, size_t... I>
struct MakeIndexList : MakeIndexList<N - 1, N - 1, I...> {};
template <size_t... I>
struct MakeIndexList<0, I...> {
  using Type = IndexList<I...>;
};
template <size_t N>
using IndexListOf = typename MakeIndexList<N>::Type;

// ---- Bits

constexpr uint64_t rotl(uint64_t v, unsigned n) {
  return n % 64 ? v << (n % 64) | v >> (64 - n % 64) : v;
}
constexpr unsigned popcount(uint64_t v) {
  return static_cast<unsigned>(__builtin_popcountll(v));
}
// The smallest power of two not below v (v at most 2^31).
constexpr uint32_t bit_ceil(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The low 32 bits of n / 1000 (nanoseconds to microseconds) with 32-bit
// multiplies and one 32-bit divide: rv32 has no 64-bit divide, and
// libgcc's takes about 50 instructions. 2^32 = 1000 * 4294967 + 296, so
// n = a * 2^32 + b is 1000 * 4294967 * a + (296 * a + b): the quotient
// is 4294967 * a plus that of the smaller second part, and so on until
// it fits 32 bits (two or three rounds for any clock).
constexpr uint32_t low32_div1000(uint64_t n) {
  constexpr uint32_t kQ = 4294967, kR = 296;
  uint32_t q = 0;
  while (n >> 32) {
    const auto a = static_cast<uint32_t>(n >> 32);
    q += a * kQ;
    n = uint64_t{a} * kR + static_cast<uint32_t>(n);
  }
  return q + static_cast<uint32_t>(n) / 1000;
}

// ---- Views and fixed arrays

// From converts to To without a cast.
template <typename From, typename To>
concept ConvertsTo = requires(From from, void (*take)(To)) {
  take(from);
};

// A view of count Ts that it does not own (a frame, a payload, a table).
template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t count) : data_(data), size_(count) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}
  // Any contiguous container with data() and size() (Array, Table, and
  // on the host the standard library's).
  template <typename C>
  requires requires(C&& c) {
    { c.data() } -> ConvertsTo<T*>;
    c.size();
  }
  constexpr Span(C&& c) : data_(c.data()), size_(c.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr size_t size_bytes() const { return size_ * sizeof(T); }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  constexpr T& front() const { return data_[0]; }
  constexpr Span first(size_t n) const { return {data_, n}; }
  constexpr Span subspan(size_t offset) const {
    return {data_ + offset, size_ - offset};
  }
  constexpr Span subspan(size_t offset, size_t n) const {
    return {data_ + offset, n};
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// A fixed array that is a value (copies, compares), like a register file.
template <typename T, size_t N>
struct Array {
  T elems[N];

  constexpr T* data() { return elems; }
  constexpr const T* data() const { return elems; }
  static constexpr size_t size() { return N; }
  constexpr T& operator[](size_t i) { return elems[i]; }
  constexpr const T& operator[](size_t i) const { return elems[i]; }
  constexpr T* begin() { return elems; }
  constexpr T* end() { return elems + N; }
  constexpr const T* begin() const { return elems; }
  constexpr const T* end() const { return elems + N; }
  constexpr void fill(const T& v) {
    for (T& e : elems) e = v;
  }
  friend constexpr bool operator==(const Array& a, const Array& b) {
    for (size_t i = 0; i < N; i++)
      if (!(a.elems[i] == b.elems[i])) return false;
    return true;
  }
};

// ---- Atomics

// Registers, counters and the ingress FIFOs are touched by host threads
// (vCPUs, the wire) on the host; on the soft core the engine is the only
// thread and the card's FIFOs stand between it and the host, so plain
// accesses serve (and 8-byte atomics, which rv32 lacks, are never needed).
enum class MemOrder : int {
  kRelaxed = __ATOMIC_RELAXED,
  kAcquire = __ATOMIC_ACQUIRE,
  kRelease = __ATOMIC_RELEASE,
  kSeqCst = __ATOMIC_SEQ_CST,
};

#if defined(RHN_FW_SOLE_THREAD)
template <typename T>
class Atomic {
 public:
  constexpr Atomic() = default;
  constexpr Atomic(T v) : v_(v) {}
  T load(MemOrder = MemOrder::kSeqCst) const { return v_; }
  void store(T v, MemOrder = MemOrder::kSeqCst) { v_ = v; }
  T fetch_add(T n, MemOrder = MemOrder::kSeqCst) {
    const T old = v_;
    v_ = old + n;
    return old;
  }
  T fetch_or(T n, MemOrder = MemOrder::kSeqCst) {
    const T old = v_;
    v_ = old | n;
    return old;
  }
  T fetch_and(T n, MemOrder = MemOrder::kSeqCst) {
    const T old = v_;
    v_ = old & n;
    return old;
  }
  T exchange(T v, MemOrder = MemOrder::kSeqCst) {
    const T old = v_;
    v_ = v;
    return old;
  }
  bool compare_exchange_weak(T& expected, T desired,
                             MemOrder = MemOrder::kSeqCst) {
    if (v_ != expected) {
      expected = v_;
      return false;
    }
    v_ = desired;
    return true;
  }

 private:
  T v_{};
};

inline void thread_fence(MemOrder) {}
#else
template <typename T>
class Atomic {
 public:
  constexpr Atomic() = default;
  constexpr Atomic(T v) : v_(v) {}
  T load(MemOrder o = MemOrder::kSeqCst) const {
    return __atomic_load_n(&v_, static_cast<int>(o));
  }
  void store(T v, MemOrder o = MemOrder::kSeqCst) {
    __atomic_store_n(&v_, v, static_cast<int>(o));
  }
  T fetch_add(T n, MemOrder o = MemOrder::kSeqCst) {
    return __atomic_fetch_add(&v_, n, static_cast<int>(o));
  }
  T fetch_or(T n, MemOrder o = MemOrder::kSeqCst) {
    return __atomic_fetch_or(&v_, n, static_cast<int>(o));
  }
  T fetch_and(T n, MemOrder o = MemOrder::kSeqCst) {
    return __atomic_fetch_and(&v_, n, static_cast<int>(o));
  }
  T exchange(T v, MemOrder o = MemOrder::kSeqCst) {
    return __atomic_exchange_n(&v_, v, static_cast<int>(o));
  }
  bool compare_exchange_weak(T& expected, T desired,
                             MemOrder o = MemOrder::kSeqCst) {
    return __atomic_compare_exchange_n(&v_, &expected, desired, true,
                                       static_cast<int>(o), __ATOMIC_RELAXED);
  }

 private:
  T v_{};
};

inline void thread_fence(MemOrder o) {
  __atomic_thread_fence(static_cast<int>(o));
}
#endif

}  // namespace rhinet::fw
