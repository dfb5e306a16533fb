// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/host.h"

#include <algorithm>
#include <array>
#include <cstdlib>

namespace rhinet::sim {

// ---- SimMemory ------------------------------------------------------------

SimMemory::SimMemory(size_t bytes, uint64_t bus_base, uint64_t seed)
    : base_(bus_base),
      size_((bytes + kPageMask) & ~kPageMask),
      used_(size_ / kPageSize, false),
      free_count_(size_ / kPageSize),
      rng_(seed) {
  // calloc: the kernel hands out zero pages lazily, so eight 64 MiB nodes
  // cost only what the tests touch.
  arena_ = static_cast<uint8_t*>(std::calloc(size_, 1));
  if (arena_ == nullptr) std::abort();
}

SimMemory::~SimMemory() { std::free(arena_); }

bool SimMemory::contains(uint64_t bus, size_t len) const {
  if (bus < base_) return false;
  const uint64_t off = bus - base_;
  return off <= size_ && len <= size_ - off;
}

uint8_t* SimMemory::ptr(uint64_t bus, size_t len) {
  return contains(bus, len) ? arena_ + (bus - base_) : nullptr;
}

const uint8_t* SimMemory::ptr(uint64_t bus, size_t len) const {
  return contains(bus, len) ? arena_ + (bus - base_) : nullptr;
}

std::vector<uint64_t> SimMemory::alloc_pages(size_t count, bool contiguous) {
  std::vector<uint64_t> out;
  if (count == 0 || count > free_count_) return out;
  if (contiguous) {
    const uint64_t first = alloc_contiguous(count);
    if (first == 0) return out;
    for (size_t i = 0; i < count; ++i) out.push_back(first + i * kPageSize);
    return out;
  }
  out.reserve(count);
  const size_t n = used_.size();
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  for (size_t i = 0; i < count; ++i) {
    // Random start, then the next free page: scattered but bounded.
    size_t p = pick(rng_);
    while (used_[p]) p = (p + 1) % n;
    used_[p] = true;
    --free_count_;
    std::memset(arena_ + p * kPageSize, 0, kPageSize);
    out.push_back(base_ + p * kPageSize);
  }
  return out;
}

uint64_t SimMemory::alloc_contiguous(size_t count) {
  const size_t n = used_.size();
  size_t run = 0;
  // First fit from the top of memory, so scattered pages and contiguous runs
  // rarely compete.
  for (size_t i = n; i-- > 0;) {
    run = used_[i] ? 0 : run + 1;
    if (run == count) {
      for (size_t p = i; p < i + count; ++p) used_[p] = true;
      free_count_ -= count;
      std::memset(arena_ + i * kPageSize, 0, count * kPageSize);
      return base_ + i * kPageSize;
    }
  }
  return 0;
}

void SimMemory::free_pages(std::span<const uint64_t> pages) {
  for (uint64_t bus : pages) {
    if (!contains(bus, kPageSize)) continue;
    const size_t p = (bus - base_) / kPageSize;
    if (used_[p]) {
      used_[p] = false;
      ++free_count_;
    }
  }
}

void SimMemory::free_contiguous(uint64_t first, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bus = first + i * kPageSize;
    free_pages(std::span<const uint64_t>(&bus, 1));
  }
}

// ---- SimHostBus -------------------------------------------------------------

SimHostBus::SimHostBus(SimMemory& mem, SimClock& clock, unsigned msix_vectors)
    : mem_(mem), clock_(clock), msix_(msix_vectors, 0) {}

bool SimHostBus::dma_read(uint64_t bus_addr, void* dst, size_t len) {
  const uint8_t* src = mem_.ptr(bus_addr, len);
  if (src == nullptr || bus_addr == 0) {
    ++bus_errors_;
    return false;
  }
  std::memcpy(dst, src, len);
  if (mem_.observer) mem_.observer->access(bus_addr, len, true);
  read_bytes_ += len;
  return true;
}

bool SimHostBus::dma_write(uint64_t bus_addr, const void* src, size_t len) {
  uint8_t* dst = mem_.ptr(bus_addr, len);
  if (dst == nullptr || bus_addr == 0) {
    ++bus_errors_;
    return false;
  }
  std::memcpy(dst, src, len);
  if (between_passes) {
    between_passes(bus_addr, len);
    std::memcpy(dst, src, len);  // the second, overlapping pass
  }
  if (mem_.observer) mem_.observer->access(bus_addr, len, true);
  write_bytes_ += len;
  return true;
}

bool SimHostBus::dma_store_u64(uint64_t bus_addr, uint64_t value) {
  uint8_t* dst = mem_.ptr(bus_addr, sizeof(value));
  if (dst == nullptr || bus_addr == 0 || (bus_addr & 7)) {
    ++bus_errors_;
    return false;
  }
  std::memcpy(dst, &value, sizeof(value));
  if (mem_.observer) mem_.observer->access(bus_addr, sizeof(value), true);
  write_bytes_ += sizeof(value);
  return true;
}

bool SimHostBus::dma_write_publish(uint64_t bus_addr, const void* src,
                                   size_t len, size_t publish_at) {
  if (publish_at == 0 || publish_at >= len) return false;  // no body or word
  published_++;
  const bool ok =
      fw::HostBus::dma_write_publish(bus_addr, src, len, publish_at);
  if (after_publish) after_publish(bus_addr, len);
  return ok;
}

void SimHostBus::raise_msix(uint16_t vector) {
  if (vector < msix_.size())
    ++msix_[vector];
  else
    ++msix_out_of_range_;
}

uint64_t SimHostBus::msix_count(uint16_t vector) const {
  return vector < msix_.size() ? msix_[vector] : 0;
}

uint64_t SimHostBus::msix_total() const {
  uint64_t sum = msix_out_of_range_;
  for (uint64_t c : msix_) sum += c;
  return sum;
}

// ---- SimBuffer --------------------------------------------------------------

SimBuffer::SimBuffer(SimMemory* mem, uint64_t va, size_t length,
                     std::vector<uint64_t> pages, bool physical)
    : mem_(mem),
      va_(va),
      length_(length),
      pages_(std::move(pages)),
      physical_(physical) {}

SimBuffer::~SimBuffer() { release(); }

SimBuffer::SimBuffer(SimBuffer&& other) noexcept { *this = std::move(other); }

SimBuffer& SimBuffer::operator=(SimBuffer&& other) noexcept {
  if (this != &other) {
    release();
    mem_ = other.mem_;
    va_ = other.va_;
    length_ = other.length_;
    pages_ = std::move(other.pages_);
    physical_ = other.physical_;
    other.mem_ = nullptr;
    other.pages_.clear();
    other.length_ = 0;
  }
  return *this;
}

void SimBuffer::release() {
  if (mem_ != nullptr) mem_->free_pages(pages_);
  mem_ = nullptr;
  pages_.clear();
}

uint64_t SimBuffer::bus(size_t offset) const {
  const uint64_t a = (va_ & kPageMask) + offset;
  return pages_.at(a >> kPageShift) + (a & kPageMask);
}

void SimBuffer::write(size_t offset, const void* src, size_t len) {
  const auto* s = static_cast<const uint8_t*>(src);
  while (len > 0) {
    const uint64_t b = bus(offset);
    const size_t chunk = std::min<size_t>(len, kPageSize - (b & kPageMask));
    std::memcpy(mem_->ptr(b, chunk), s, chunk);
    if (mem_->observer) mem_->observer->access(b, chunk, false);
    s += chunk;
    offset += chunk;
    len -= chunk;
  }
}

void SimBuffer::read(size_t offset, void* dst, size_t len) const {
  auto* d = static_cast<uint8_t*>(dst);
  while (len > 0) {
    const uint64_t b = bus(offset);
    const size_t chunk = std::min<size_t>(len, kPageSize - (b & kPageMask));
    std::memcpy(d, mem_->ptr(b, chunk), chunk);
    if (mem_->observer) mem_->observer->access(b, chunk, false);
    d += chunk;
    offset += chunk;
    len -= chunk;
  }
}

std::vector<uint8_t> SimBuffer::bytes(size_t offset, size_t len) const {
  std::vector<uint8_t> out(len);
  read(offset, out.data(), len);
  return out;
}

void SimBuffer::fill(uint8_t value) {
  std::vector<uint8_t> v(length_, value);
  write(0, v.data(), v.size());
}

std::vector<uint8_t> SimBuffer::pattern(uint64_t seed, size_t len) {
  std::vector<uint8_t> out(len);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 1);
  size_t i = 0;
  while (i < len) {
    uint64_t r = rng();
    for (int k = 0; k < 8 && i < len; ++k, ++i) out[i] = uint8_t(r >> (8 * k));
  }
  return out;
}

void SimBuffer::fill_pattern(uint64_t seed) {
  const auto p = pattern(seed, length_);
  write(0, p.data(), p.size());
}

uint64_t SimBuffer::load64(size_t offset) const {
  uint64_t v = 0;
  read(offset, &v, sizeof v);
  return v;
}

void SimBuffer::store64(size_t offset, uint64_t v) {
  write(offset, &v, sizeof v);
}

// ---- SimAddressSpace -------------------------------------------------------

SimAddressSpace::SimAddressSpace(SimMemory& mem, uint64_t va_base)
    : mem_(mem), next_va_(va_base & ~kPageMask) {}

SimBuffer SimAddressSpace::alloc(size_t length, size_t page_offset) {
  page_offset &= kPageMask;
  const size_t span = page_offset + std::max<size_t>(length, 1);
  const size_t npages = (span + kPageMask) >> kPageShift;
  auto pages = mem_.alloc_pages(npages, false);
  if (pages.empty()) return SimBuffer();
  const uint64_t va = next_va_ + page_offset;
  // Leave an unmapped guard page between buffers.
  next_va_ += (npages + 1) * kPageSize;
  return SimBuffer(&mem_, va, length, std::move(pages), false);
}

SimBuffer SimAddressSpace::alloc_physical(size_t length) {
  const size_t npages = (std::max<size_t>(length, 1) + kPageMask) >> kPageShift;
  auto pages = mem_.alloc_pages(npages, true);
  if (pages.empty()) return SimBuffer();
  const uint64_t first = pages.front();
  return SimBuffer(&mem_, first, length, std::move(pages), true);
}

// ---- CRC32C ----------------------------------------------------------------

uint32_t crc32c(const void* data, size_t len, uint32_t crc) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < len; ++i)
    crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace rhinet::sim
