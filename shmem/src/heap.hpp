// The symmetric heap's allocator: offsets into one region, no memory of its
// own. Every PE makes the same calls in the same order (the allocation
// routines are collective), so a deterministic allocator gives every PE the
// same offsets and a local address names the same object everywhere.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace rhinet::shmem {

class HeapAllocator {
 public:
  // Smallest alignment of every block: enough for any scalar type and for
  // the NIC's 8-byte atomics, and a cache line so PEs' blocks do not share.
  static constexpr std::size_t kMinAlign = 64;

  explicit HeapAllocator(std::size_t bytes);

  // An offset aligned to `align` (a power of two; at least kMinAlign is
  // used) with `bytes` free bytes, or nothing (no room, bytes == 0, or
  // align not a power of two).
  std::optional<std::size_t> allocate(std::size_t bytes,
                                      std::size_t align = kMinAlign);
  // False when `offset` is not the start of a live block.
  bool release(std::size_t offset);
  // Grows or shrinks the block at `offset` where it stands when the bytes
  // after it are free; nothing when it cannot (then the caller allocates,
  // copies and releases) or `offset` is no live block.
  bool resize_in_place(std::size_t offset, std::size_t bytes);

  std::optional<std::size_t> block_size(std::size_t offset) const;
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes_in_use() const;
  std::size_t free_blocks() const { return free_.size(); }
  std::size_t live_blocks() const { return used_.size(); }

 private:
  void insert_free(std::size_t offset, std::size_t bytes);

  std::size_t capacity_;
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes, coalesced
  std::map<std::size_t, std::size_t> used_;  // offset -> bytes
};

// SHMEM_SYMMETRIC_SIZE's syntax: a number with an optional K, M, G or T
// (powers of 1024; either case). An error names the text when malformed.
struct ParsedSize {
  std::size_t bytes = 0;
  std::string error;
};
ParsedSize parse_size(const char* text);

}  // namespace rhinet::shmem
