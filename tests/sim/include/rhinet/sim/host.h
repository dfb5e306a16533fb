// SPDX-License-Identifier: BSD-2-Clause
// Simulated host side of one node: virtual clock, physical memory with a page
// allocator, the HostBus the engine DMAs through, and a per-process I/O
// virtual address space whose pages are deliberately scattered so that the
// engine's VP translation is really exercised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "rhinet/fw/engine.h"

namespace rhinet::sim {

inline constexpr unsigned kPageShift = 12;
inline constexpr uint64_t kPageSize = 1ull << kPageShift;
inline constexpr uint64_t kPageMask = kPageSize - 1;

// Virtual nanoseconds shared by every node of a simulation.
class SimClock {
 public:
  uint64_t now() const { return now_; }
  void advance(uint64_t ns) { now_ += ns; }
  void advance_to(uint64_t t) {
    if (t > now_) now_ = t;
  }

 private:
  // Start well above zero so a zero timestamp is never a valid time.
  uint64_t now_ = 1'000'000;
};

// Sees every access to one SimMemory: the engine's DMA (nic) and
// software's loads and stores through SimBuffer. Benchmarks count bus
// transactions with it (who touched which memory).
class MemoryObserver {
 public:
  virtual void access(uint64_t bus_addr, size_t len, bool nic) = 0;

 protected:
  ~MemoryObserver() = default;
};

// A flat arena of "physical" host memory mapped at a non-zero bus base, so
// bus address 0 and everything outside the arena are bus errors.
class SimMemory {
 public:
  static constexpr uint64_t kDefaultBusBase = 0x1'0000'0000ull;
  static constexpr size_t kDefaultBytes = 64u << 20;

  explicit SimMemory(size_t bytes = kDefaultBytes,
                     uint64_t bus_base = kDefaultBusBase, uint64_t seed = 1);
  ~SimMemory();
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  uint64_t bus_base() const { return base_; }
  size_t size() const { return size_; }
  bool contains(uint64_t bus, size_t len) const;
  // Host pointer for [bus, bus + len), nullptr if any byte is outside.
  uint8_t* ptr(uint64_t bus, size_t len = 1);
  const uint8_t* ptr(uint64_t bus, size_t len = 1) const;

  // 4 KiB page allocator. Non-contiguous allocations come back as pages
  // picked at random (seeded), in no particular order. Returns an empty
  // vector when memory is exhausted. Pages are zeroed.
  std::vector<uint64_t> alloc_pages(size_t count, bool contiguous = false);
  // Contiguous run; returns the bus address of the first page or 0.
  uint64_t alloc_contiguous(size_t count);
  void free_pages(std::span<const uint64_t> pages);
  void free_contiguous(uint64_t first, size_t count);
  size_t free_page_count() const { return free_count_; }
  size_t page_count() const { return used_.size(); }
  // Told of every access when set (not owned).
  MemoryObserver* observer = nullptr;

 private:
  uint8_t* arena_ = nullptr;
  uint64_t base_;
  size_t size_;
  std::vector<bool> used_;
  size_t free_count_;
  std::mt19937_64 rng_;
};

// The engine's view of the host: DMA goes to SimMemory, MSI-X is recorded.
class SimHostBus : public fw::HostBus {
 public:
  SimHostBus(SimMemory& mem, SimClock& clock, unsigned msix_vectors = 64);

  bool dma_read(uint64_t bus_addr, void* dst, size_t len) override;
  // Stores like a host memcpy can: a write of more than 8 bytes, or of
  // 8..15, in two overlapping passes, with `between_passes` (when set)
  // called in between, as if software ran there (a test's race).
  bool dma_write(uint64_t bus_addr, const void* src, size_t len) override;
  // One 8-byte store: nothing runs in the middle of it.
  bool dma_store_u64(uint64_t bus_addr, uint64_t value) override;
  std::function<void(uint64_t bus_addr, size_t len)> between_passes;
  // Checks the ordering contract: the owner word goes last, and only
  // after a body that is already in memory.
  bool dma_write_publish(uint64_t bus_addr, const void* src, size_t len,
                         size_t publish_at) override;
  // Called after each entry published (a CQE, EQE, admin completion), as
  // if software polled it at once (a test looks at what it would see).
  std::function<void(uint64_t bus_addr, size_t len)> after_publish;
  void raise_msix(uint16_t vector) override;
  uint64_t now_ns() override { return clock_.now(); }
  // Entries written through dma_write_publish.
  uint64_t published() const { return published_; }

  uint64_t msix_count(uint16_t vector) const;
  uint64_t msix_total() const;
  uint64_t bus_errors() const { return bus_errors_; }
  uint64_t dma_read_bytes() const { return read_bytes_; }
  uint64_t dma_write_bytes() const { return write_bytes_; }

 private:
  SimMemory& mem_;
  SimClock& clock_;
  std::vector<uint64_t> msix_;
  uint64_t msix_out_of_range_ = 0;
  uint64_t bus_errors_ = 0;
  uint64_t read_bytes_ = 0;
  uint64_t write_bytes_ = 0;
  uint64_t published_ = 0;
};

// A buffer of one simulated process: a range of I/O virtual addresses backed
// by pinned physical pages (scattered unless allocated as physical). Move-only;
// frees its pages on destruction.
class SimBuffer {
 public:
  SimBuffer() = default;
  SimBuffer(SimMemory* mem, uint64_t va, size_t length,
            std::vector<uint64_t> pages, bool physical);
  ~SimBuffer();
  SimBuffer(SimBuffer&& other) noexcept;
  SimBuffer& operator=(SimBuffer&& other) noexcept;
  SimBuffer(const SimBuffer&) = delete;
  SimBuffer& operator=(const SimBuffer&) = delete;

  bool valid() const { return mem_ != nullptr; }
  // First byte's I/O virtual address (for a physical buffer: bus address).
  uint64_t va(size_t offset = 0) const { return va_ + offset; }
  size_t size() const { return length_; }
  bool physical() const { return physical_; }
  // Bus addresses of the pages covering [va & ~0xfff, va + size).
  const std::vector<uint64_t>& pages() const { return pages_; }
  // Bus address of byte `offset` (translated page by page).
  uint64_t bus(size_t offset) const;

  void write(size_t offset, const void* src, size_t len);
  void read(size_t offset, void* dst, size_t len) const;
  std::vector<uint8_t> bytes(size_t offset, size_t len) const;
  std::vector<uint8_t> bytes() const { return bytes(0, length_); }
  void fill(uint8_t value);
  // Deterministic pattern derived from seed, so two sides can compare.
  void fill_pattern(uint64_t seed);
  static std::vector<uint8_t> pattern(uint64_t seed, size_t len);
  uint64_t load64(size_t offset) const;
  void store64(size_t offset, uint64_t v);

 private:
  void release();
  SimMemory* mem_ = nullptr;
  uint64_t va_ = 0;
  size_t length_ = 0;
  std::vector<uint64_t> pages_;
  bool physical_ = false;
};

// I/O virtual addresses of one simulated process (or of all processes of one
// node: allocations never overlap). VAs are unrelated to bus addresses.
class SimAddressSpace {
 public:
  SimAddressSpace(SimMemory& mem, uint64_t va_base);
  // `page_offset` places the first byte inside its page (tests sub-page
  // starts). Returns an invalid buffer when memory is exhausted.
  SimBuffer alloc(size_t length, size_t page_offset = 0);
  // Physically contiguous buffer whose "VA" is its bus address (kernel
  // context objects with RHN_LKEY_PHYSICAL).
  SimBuffer alloc_physical(size_t length);
  SimMemory& memory() { return mem_; }

 private:
  SimMemory& mem_;
  uint64_t next_va_;
};

// CRC32C (Castagnoli), as used by the wire format.
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

}  // namespace rhinet::sim
