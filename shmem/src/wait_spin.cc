// SPDX-License-Identifier: BSD-2-Clause
#include "wait_spin.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace rhinet::shmem {

ParsedSpin parse_wait_spin(const char* text) {
  const auto bad = [&](const char* why) {
    char msg[160];
    std::snprintf(
        msg, sizeof msg, "'%.40s' %s (0 to %lld microseconds, or never)",
        text ? text : "", why, static_cast<long long>(kMaxWaitSpin.count()));
    return ParsedSpin{{}, msg};
  };
  if (!text || !*text) return bad("is empty");
  if (std::strcmp(text, "never") == 0)
    return {std::chrono::microseconds{-1}, {}};
  std::int64_t n = 0;
  for (const char* p = text; *p; p++) {
    if (*p < '0' || *p > '9') return bad("is not a number of microseconds");
    n = n * 10 + (*p - '0');
    if (n > kMaxWaitSpin.count()) return bad("is too long");
  }
  return {std::chrono::microseconds{n}, {}};
}

}  // namespace rhinet::shmem
