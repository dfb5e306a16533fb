// Reductions on a team or an active set (shmem.cc's shmem_TYPE_OP_reduce,
// active_set.cc's shmem_TYPE_OP_to_all): the NIC's allreduce where the NIC
// has the element type and the operation, else every member's operand
// gathered into every member's library scratch area and combined there.
#ifndef RHINET_SHMEM_REDUCE_HPP
#define RHINET_SHMEM_REDUCE_HPP

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "shmem_internal.hpp"

namespace rhinet::shmem::internal {

enum class ReduceOp { band, bor, bxor, min, max, sum, prod };

template <typename T>
constexpr bool nic_reducible =
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

// The fixed-width type the NIC reduces for T (long long and long are both
// 64-bit); T itself when there is none (char, short, long double).
template <typename T>
auto nic_type() {
  if constexpr (std::is_floating_point_v<T>)
    return T{};
  else if constexpr (sizeof(T) == 4 && std::is_signed_v<T>)
    return std::int32_t{};
  else if constexpr (sizeof(T) == 4)
    return std::uint32_t{};
  else if constexpr (sizeof(T) == 8 && std::is_signed_v<T>)
    return std::int64_t{};
  else if constexpr (sizeof(T) == 8)
    return std::uint64_t{};
  else
    return T{};
}

template <typename T>
constexpr bool is_complex = false;
template <typename R>
constexpr bool is_complex<std::complex<R>> = true;

// a OP b. Integer sums and products wrap (computed unsigned, so that no
// promotion of a narrow type overflows). Complex numbers have only sum
// and product.
template <typename T>
T combine(ReduceOp op, T a, T b) {
  if constexpr (is_complex<T>) {
    return op == ReduceOp::prod ? a * b : a + b;
  } else if constexpr (std::is_integral_v<T>) {
    using W = unsigned long long;
    switch (op) {
      case ReduceOp::band:
        return static_cast<T>(a & b);
      case ReduceOp::bor:
        return static_cast<T>(a | b);
      case ReduceOp::bxor:
        return static_cast<T>(a ^ b);
      case ReduceOp::sum:
        return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
      case ReduceOp::prod:
        return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
      default:
        break;
    }
  } else {
    if (op == ReduceOp::sum) return a + b;
    if (op == ReduceOp::prod) return a * b;
  }
  if constexpr (!is_complex<T>)
    return op == ReduceOp::min ? std::min(a, b) : std::max(a, b);
}

constexpr Reduce nic_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::band:
      return Reduce::band;
    case ReduceOp::bor:
      return Reduce::bor;
    case ReduceOp::bxor:
      return Reduce::bxor;
    case ReduceOp::min:
      return Reduce::min;
    case ReduceOp::max:
      return Reduce::max;
    default:
      return Reduce::sum;
  }
}

// What the NIC cannot do: in chunks that fit the scratch area once per
// member, each member's chunk into every member's scratch (the gather
// ends with the team's barrier), then combined in member order, so every
// member computes the same result. The barrier before each gather keeps a
// fast member from overwriting a scratch area its owner still reads.
template <typename T>
int gather_reduce(const char* routine, const TeamView& view, T* dest,
                  const T* source, std::size_t n, ReduceOp op) {
  const std::size_t members = view.pes.size();
  const std::size_t per_chunk =
      library_scratch().size() / (members * sizeof(T));
  if (!per_chunk)
    return refuse(routine,
                  "%zu members' elements of %zu bytes do not fit the "
                  "library's scratch area",
                  members, sizeof(T));
  const auto* rows = reinterpret_cast<const T*>(library_scratch().data());
  for (std::size_t first = 0; first < n; first += per_chunk) {
    const std::size_t m = std::min(per_chunk, n - first);
    if (auto r = view.comm->barrier(); !r)
      return refuse(routine, "%s", r.error().to_string().c_str());
    auto r = view.comm->allgather(
        {reinterpret_cast<const std::byte*>(source + first), m * sizeof(T)},
        library_area(), library_scratch_offset() + view.me * m * sizeof(T));
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
    for (std::size_t i = 0; i < m; i++) {
      T acc = rows[i];
      for (std::size_t j = 1; j < members; j++)
        acc = combine(op, acc, rows[j * m + i]);
      dest[first + i] = acc;
    }
  }
  return 0;
}

// dest[i] = source[i] of every member combined by `op`, on every member;
// dest may be source. 0, or -1 with a message naming the routine.
template <typename T>
int reduce_on(const char* routine, const TeamView& view, T* dest,
              const T* source, std::size_t n, ReduceOp op) {
  // A complex sum is the sum of the real parts and of the imaginary ones:
  // the NIC's, over twice as many floats or doubles.
  if constexpr (is_complex<T>) {
    using R = typename T::value_type;
    if (op == ReduceOp::sum)
      return reduce_on(routine, view, reinterpret_cast<R*>(dest),
                       reinterpret_cast<const R*>(source), 2 * n, op);
  }
  using N = decltype(nic_type<T>());
  if (!view.comm) {
    if (n && dest != source) std::memmove(dest, source, n * sizeof(T));
    return 0;
  }
  if (!n) return 0;
  symmetric(routine, dest, n * sizeof(T), "dest");
  symmetric(routine, source, n * sizeof(T), "source");
  if constexpr (nic_reducible<N>) {
    if (op != ReduceOp::prod) {
      auto r =
          view.comm->allreduce<N>({reinterpret_cast<const N*>(source), n},
                                  {reinterpret_cast<N*>(dest), n}, nic_op(op));
      if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
      return 0;
    }
  }
  return gather_reduce(routine, view, dest, source, n, op);
}

}  // namespace rhinet::shmem::internal

#endif  // RHINET_SHMEM_REDUCE_HPP
