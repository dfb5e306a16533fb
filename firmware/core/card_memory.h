// SPDX-License-Identifier: BSD-2-Clause
// On-card memory and the tables placed in it. The engine never allocates:
// at power-on it carves every table, sized by its configuration, out of
// one region (the soft core's on-card RAM; on the host, memory the host
// glue hands over), and keeps them until it is torn down. A device reset
// clears tables, it never places them again.
#pragma once

#include "core/freestanding.h"

namespace rhinet::fw {

// count Ts placed at power-on, never resized: an on-chip table. A view
// (copying it copies the reference, not the entries).
template <typename T>
class Table {
 public:
  constexpr Table() = default;
  constexpr Table(T* data, uint32_t count) : data_(data), size_(count) {}

  T* data() { return data_; }
  const T* data() const { return data_; }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  // Every entry set to v (a reset).
  void fill(const T& v) {
    for (T& e : *this) e = v;
  }

 private:
  T* data_ = nullptr;
  uint32_t size_ = 0;
};

// A bump allocator over on-card memory, used only while the engine comes
// out of power-on. When the region is too small, it gives out empty tables
// and says so (exhausted()); the engine then reports itself failed
// (RHN_STATUS_FATAL) instead of running on tables it does not have.
class CardMemory {
 public:
  CardMemory(void* base, size_t bytes)
      : next_(static_cast<uint8_t*>(base)), left_(bytes) {}
  CardMemory(const CardMemory&) = delete;
  CardMemory& operator=(const CardMemory&) = delete;

  // count value-initialized Ts (zeroed plain data, or their defaults).
  template <typename T>
  Table<T> table(size_t count) {
    static_assert(__has_trivial_destructor(T),
                  "tables are never destroyed one entry at a time");
    T* p = static_cast<T*>(take(count * sizeof(T), alignof(T)));
    if (!p) return {};
    for (size_t i = 0; i < count; i++) ::new (p + i) T();
    return {p, static_cast<uint32_t>(count)};
  }
  // count bytes, not initialized (twin memory: pages are cleared when a
  // user is given them, and untouched ones cost the host nothing).
  Table<uint8_t> bytes(size_t count, size_t align = 64) {
    auto* p = static_cast<uint8_t*>(take(count, align));
    if (!p) return {};
    return {p, static_cast<uint32_t>(count)};
  }
  // One object, constructed in place.
  template <typename T, typename... Args>
  T* object(Args&&... args) {
    void* p = take(sizeof(T), alignof(T));
    return p ? ::new (p) T(static_cast<Args&&>(args)...) : nullptr;
  }

  bool exhausted() const { return exhausted_; }
  size_t used() const { return used_; }

 protected:
  // More memory when the region runs out: nothing on a card (its RAM is
  // what it is); the host glue hands over another block.
  virtual bool refill(size_t /*at_least*/, void** /*base*/, size_t* /*bytes*/) {
    return false;
  }

 private:
  void* take(size_t bytes, size_t align) {
    for (;;) {
      const size_t pad =
          (align - reinterpret_cast<uintptr_t>(next_) % align) % align;
      if (pad + bytes <= left_) {
        uint8_t* p = next_ + pad;
        next_ = p + bytes;
        left_ -= pad + bytes;
        used_ += bytes;
        return p;
      }
      void* base = nullptr;
      size_t got = 0;
      if (!refill(bytes + align, &base, &got)) {
        exhausted_ = true;
        return nullptr;
      }
      next_ = static_cast<uint8_t*>(base);
      left_ = got;
    }
  }

  uint8_t* next_;
  size_t left_;
  size_t used_ = 0;
  bool exhausted_ = false;
};

}  // namespace rhinet::fw
