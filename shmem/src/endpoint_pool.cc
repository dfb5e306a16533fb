#include "endpoint_pool.hpp"

#include <cstdio>

namespace rhinet::shmem {

EndpointPool::EndpointPool(std::size_t count)
    : count_(count < kMaxEndpoints ? count : kMaxEndpoints) {}

std::optional<std::size_t> EndpointPool::take() {
  for (std::size_t i = 0; i < count_; i++) {
    if (taken_[i]) continue;
    taken_[i] = true;
    return i;
  }
  return std::nullopt;
}

bool EndpointPool::give(std::size_t index) {
  if (index >= count_ || !taken_[index]) return false;
  taken_[index] = false;
  return true;
}

std::size_t EndpointPool::free() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count_; i++) n += !taken_[i];
  return n;
}

ParsedCount parse_endpoint_count(const char* text) {
  const auto bad = [&](const char* why) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "'%.40s' %s (0 to %zu endpoints)", text, why,
                  EndpointPool::kMaxEndpoints);
    return ParsedCount{0, msg};
  };
  if (!text || !*text) return bad("is empty");
  std::size_t n = 0;
  for (const char* p = text; *p; p++) {
    if (*p < '0' || *p > '9') return bad("is not a count");
    n = n * 10 + static_cast<std::size_t>(*p - '0');
    if (n > EndpointPool::kMaxEndpoints) return bad("is too many");
  }
  return {n, {}};
}

}  // namespace rhinet::shmem
