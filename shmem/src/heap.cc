#include "heap.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace rhinet::shmem {

namespace {

constexpr std::size_t round_up(std::size_t x, std::size_t align) {
  return (x + align - 1) & ~(align - 1);
}

constexpr bool power_of_two(std::size_t x) { return x && !(x & (x - 1)); }

}  // namespace

HeapAllocator::HeapAllocator(std::size_t bytes)
    : capacity_(bytes & ~(kMinAlign - 1)) {
  if (capacity_) free_.emplace(0, capacity_);
}

std::optional<std::size_t> HeapAllocator::allocate(std::size_t bytes,
                                                   std::size_t align) {
  if (!bytes || !power_of_two(align) || bytes > capacity_) return {};
  if (align < kMinAlign) align = kMinAlign;
  const std::size_t need = round_up(bytes, kMinAlign);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const std::size_t start = it->first, len = it->second;
    const std::size_t at = round_up(start, align);
    if (at - start > len || len - (at - start) < need) continue;
    free_.erase(it);
    if (at > start) free_.emplace(start, at - start);
    if (at + need < start + len)
      free_.emplace(at + need, start + len - (at + need));
    used_.emplace(at, need);
    return at;
  }
  return {};
}

void HeapAllocator::insert_free(std::size_t offset, std::size_t bytes) {
  auto [it, inserted] = free_.emplace(offset, bytes);
  (void)inserted;
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

bool HeapAllocator::release(std::size_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) return false;
  const std::size_t bytes = it->second;
  used_.erase(it);
  insert_free(offset, bytes);
  return true;
}

bool HeapAllocator::resize_in_place(std::size_t offset, std::size_t bytes) {
  auto it = used_.find(offset);
  if (it == used_.end() || !bytes || bytes > capacity_) return false;
  const std::size_t need = round_up(bytes, kMinAlign), have = it->second;
  if (need == have) return true;
  if (need < have) {
    it->second = need;
    insert_free(offset + need, have - need);
    return true;
  }
  auto next = free_.find(offset + have);
  if (next == free_.end() || have + next->second < need) return false;
  const std::size_t rest = have + next->second - need;
  free_.erase(next);
  if (rest) free_.emplace(offset + need, rest);
  it->second = need;
  return true;
}

std::optional<std::size_t> HeapAllocator::block_size(std::size_t offset) const {
  auto it = used_.find(offset);
  if (it == used_.end()) return {};
  return it->second;
}

std::size_t HeapAllocator::bytes_in_use() const {
  std::size_t sum = 0;
  for (const auto& [offset, bytes] : used_) sum += bytes;
  return sum;
}

ParsedSize parse_size(const char* text) {
  ParsedSize out;
  const std::string shown = text ? text : "";
  if (!text || !std::isdigit(static_cast<unsigned char>(*text))) {
    out.error = "'" + shown + "' is not a size (digits, then K, M, G or T)";
    return out;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text, &end, 10);
  unsigned shift = 0;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    default:
      out.error = "'" + shown + "' is not a size (digits, then K, M, G or T)";
      return out;
  }
  if (shift && end[1] != '\0' &&
      !((end[1] == 'b' || end[1] == 'B') && end[2] == '\0')) {
    out.error = "'" + shown + "' is not a size (digits, then K, M, G or T)";
    return out;
  }
  if (errno == ERANGE ||
      n > (std::numeric_limits<std::size_t>::max() >> shift)) {
    out.error = "'" + shown + "' is too large";
    return out;
  }
  out.bytes = static_cast<std::size_t>(n) << shift;
  if (!out.bytes) out.error = "'" + shown + "' is zero bytes";
  return out;
}

}  // namespace rhinet::shmem
