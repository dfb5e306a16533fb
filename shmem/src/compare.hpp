// The SHMEM_CMP_ comparison of the point-to-point synchronization routines
// (wait_until, test and their set forms, signal_wait_until): one place, so
// that every wait reads a comparison the same way.
#pragma once

#include <shmem.h>

#include <optional>

namespace rhinet::shmem {

// `value` compared with `against` by `cmp` (SHMEM_CMP_EQ .. SHMEM_CMP_LE);
// nothing when cmp is none of them (the caller names the routine).
template <typename T>
constexpr std::optional<bool> compare(T value, int cmp, T against) {
  switch (cmp) {
    case SHMEM_CMP_EQ:
      return value == against;
    case SHMEM_CMP_NE:
      return value != against;
    case SHMEM_CMP_GT:
      return value > against;
    case SHMEM_CMP_GE:
      return value >= against;
    case SHMEM_CMP_LT:
      return value < against;
    case SHMEM_CMP_LE:
      return value <= against;
    default:
      return std::nullopt;
  }
}

}  // namespace rhinet::shmem
