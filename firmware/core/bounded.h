// SPDX-License-Identifier: BSD-2-Clause
// Bounded containers for the engine: capacity fixed at construction, no
// allocation afterwards, like on-chip FIFOs and tables.
#pragma once

#include "core/card_memory.h"

namespace rhinet::fw {

// No index: the end of a list, an empty slot.
constexpr uint32_t kNone = 0xffffffffu;

// A list of QPs waiting for something (a peer's window, send memory).
struct WaitList {
  uint32_t head = kNone, tail = kNone;
};

// Single-threaded ring FIFO (capacity rounded up to a power of two).
template <typename T>
class Fifo {
 public:
  Fifo() = default;  // no room until placed
  Fifo(uint32_t capacity, CardMemory& mem)
      : buf_(mem.table<T>(bit_ceil(capacity))), cap_(buf_.size()) {}
  bool empty() const { return head_ == tail_; }
  bool full() const { return tail_ - head_ == cap_; }
  uint32_t size() const { return tail_ - head_; }
  uint32_t capacity() const { return cap_; }
  bool push(const T& v) {
    if (full()) return false;
    buf_[tail_++ & (cap_ - 1)] = v;
    return true;
  }
  T& front() { return buf_[head_ & (cap_ - 1)]; }
  const T& front() const { return buf_[head_ & (cap_ - 1)]; }
  T& at(uint32_t i) { return buf_[(head_ + i) & (cap_ - 1)]; }
  void pop() { head_++; }
  void clear() { head_ = tail_ = 0; }
  // Holds 0..n-1 (at most its capacity), oldest first: a free list whose
  // every entry is free again.
  void fill_indices(uint32_t n) {
    clear();
    for (uint32_t i = 0; i < n && i < cap_; i++) push(static_cast<T>(i));
  }

 private:
  Table<T> buf_;
  uint32_t cap_ = 0;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
};

// Bounded multi-producer single-consumer queue (D. Vyukov's design): each
// cell carries a sequence number telling producers and the consumer whose
// turn it is. Producers are host threads (vCPUs, the wire); the consumer is
// the engine thread.
template <typename T>
class MpscQueue {
 public:
  MpscQueue(uint32_t capacity, CardMemory& mem)
      : cells_(mem.table<Cell>(bit_ceil(capacity))), cap_(cells_.size()) {
    for (uint32_t i = 0; i < cap_; i++)
      cells_[i].seq.store(i, MemOrder::kRelaxed);
  }

  // Fills the claimed cell through fill(T&) so large payloads are written
  // in place. Returns false when full.
  template <typename Fill>
  bool push_with(Fill&& fill) {
    uint32_t pos = enqueue_.load(MemOrder::kRelaxed);
    for (;;) {
      Cell& c = cells_[pos & (cap_ - 1)];
      uint32_t seq = c.seq.load(MemOrder::kAcquire);
      // Positions wrap at 2^32; the signed difference still orders them.
      const auto diff = static_cast<int32_t>(seq - pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, MemOrder::kRelaxed)) {
          fill(c.value);
          c.seq.store(pos + 1, MemOrder::kRelease);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueue_.load(MemOrder::kRelaxed);
      }
    }
  }

  // Consumer side: peek at the oldest element, then release it.
  T* peek() {
    Cell& c = cells_[dequeue_ & (cap_ - 1)];
    uint32_t seq = c.seq.load(MemOrder::kAcquire);
    if (static_cast<int32_t>(seq - (dequeue_ + 1)) < 0) return nullptr;
    return &c.value;
  }
  // The oldest element is there and none behind it (yet).
  bool holds_one() {
    if (!peek()) return false;
    const Cell& c = cells_[(dequeue_ + 1) & (cap_ - 1)];
    return static_cast<int32_t>(c.seq.load(MemOrder::kAcquire) -
                                (dequeue_ + 2)) < 0;
  }
  void release() {
    Cell& c = cells_[dequeue_ & (cap_ - 1)];
    c.seq.store(dequeue_ + cap_, MemOrder::kRelease);
    dequeue_++;
  }

 private:
  struct Cell {
    Atomic<uint32_t> seq;
    T value;
  };
  Table<Cell> cells_;
  uint32_t cap_ = 0;
  alignas(64) Atomic<uint32_t> enqueue_{0};
  alignas(64) uint32_t dequeue_ = 0;
};

// Serial-number comparison for free-running 32-bit counters.
inline bool seq_before(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}

}  // namespace rhinet::fw
