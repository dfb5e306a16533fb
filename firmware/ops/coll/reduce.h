// SPDX-License-Identifier: BSD-2-Clause
// The reductions a collective's segments are combined with (enum
// rhn_coll_reduce over enum rhn_coll_type), element by element. Header-only
// and free of engine state so the switch (fabric/) can combine segments with
// the same code.
#pragma once

#include <rhinet/hw.h>

#include "core/freestanding.h"

namespace rhinet::coll {

// Bytes per element, or 0 for no such type.
constexpr uint32_t type_size(uint8_t type) {
  switch (type) {
    case RHN_COLL_INT32:
    case RHN_COLL_UINT32:
    case RHN_COLL_FLOAT:
      return 4;
    case RHN_COLL_INT64:
    case RHN_COLL_UINT64:
    case RHN_COLL_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

constexpr bool is_float(uint8_t type) {
  return type == RHN_COLL_FLOAT || type == RHN_COLL_DOUBLE;
}

// The bitwise reductions take integer types only.
constexpr bool valid_reduce(uint8_t reduce, uint8_t type) {
  if (type_size(type) == 0 || reduce > RHN_COLL_BXOR) return false;
  return reduce <= RHN_COLL_MAX || !is_float(type);
}

namespace detail {

template <typename T>
T apply(uint8_t reduce, T a, T b) {
  switch (reduce) {
    case RHN_COLL_SUM:
      // Integers wrap (two's complement), as MPI_SUM does in practice.
      if constexpr (fw::kIsInteger<T>) {
        using U = typename fw::MakeUnsigned<T>::Type;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;
      }
    case RHN_COLL_MIN:
      return b < a ? b : a;
    case RHN_COLL_MAX:
      return a < b ? b : a;
    default:
      if constexpr (fw::kIsInteger<T>) {
        if (reduce == RHN_COLL_BAND) return a & b;
        if (reduce == RHN_COLL_BOR) return a | b;
        return a ^ b;
      } else {
        return a;
      }
  }
}

template <typename T>
void combine_as(uint8_t reduce, uint8_t* dst, const uint8_t* src,
                uint32_t len) {
  for (uint32_t off = 0; off + sizeof(T) <= len; off += sizeof(T)) {
    T a, b;
    memcpy(&a, dst + off, sizeof(T));
    memcpy(&b, src + off, sizeof(T));
    const T r = apply<T>(reduce, a, b);
    memcpy(dst + off, &r, sizeof(T));
  }
}

}  // namespace detail

// dst = dst (op) src over len bytes (a multiple of the type's size); the
// caller checked valid_reduce.
inline void combine(uint8_t reduce, uint8_t type, uint8_t* dst,
                    const uint8_t* src, uint32_t len) {
  switch (type) {
    case RHN_COLL_INT32:
      return detail::combine_as<int32_t>(reduce, dst, src, len);
    case RHN_COLL_UINT32:
      return detail::combine_as<uint32_t>(reduce, dst, src, len);
    case RHN_COLL_INT64:
      return detail::combine_as<int64_t>(reduce, dst, src, len);
    case RHN_COLL_UINT64:
      return detail::combine_as<uint64_t>(reduce, dst, src, len);
    case RHN_COLL_FLOAT:
      return detail::combine_as<float>(reduce, dst, src, len);
    case RHN_COLL_DOUBLE:
      return detail::combine_as<double>(reduce, dst, src, len);
    default:
      return;
  }
}

}  // namespace rhinet::coll
