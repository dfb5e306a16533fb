// SPDX-License-Identifier: BSD-2-Clause
// Bounded containers for the engine: capacity fixed at construction, no
// allocation afterwards, like on-chip FIFOs and tables.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

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
  explicit Fifo(uint32_t capacity) {
    cap_ = 1;
    while (cap_ < capacity) cap_ <<= 1;
    buf_ = std::make_unique<T[]>(cap_);
  }
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

 private:
  std::unique_ptr<T[]> buf_;
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
  explicit MpscQueue(uint32_t capacity) {
    cap_ = 1;
    while (cap_ < capacity) cap_ <<= 1;
    cells_ = std::make_unique<Cell[]>(cap_);
    for (uint32_t i = 0; i < cap_; i++)
      cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  // Fills the claimed cell through fill(T&) so large payloads are written
  // in place. Returns false when full.
  template <typename Fill>
  bool push_with(Fill&& fill) {
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & (cap_ - 1)];
      uint64_t seq = c.seq.load(std::memory_order_acquire);
      auto diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1,
                                           std::memory_order_relaxed)) {
          fill(c.value);
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Consumer side: peek at the oldest element, then release it.
  T* peek() {
    Cell& c = cells_[dequeue_ & (cap_ - 1)];
    uint64_t seq = c.seq.load(std::memory_order_acquire);
    if (static_cast<int64_t>(seq) - static_cast<int64_t>(dequeue_ + 1) < 0)
      return nullptr;
    return &c.value;
  }
  void release() {
    Cell& c = cells_[dequeue_ & (cap_ - 1)];
    c.seq.store(dequeue_ + cap_, std::memory_order_release);
    dequeue_++;
  }

 private:
  struct Cell {
    std::atomic<uint64_t> seq;
    T value;
  };
  std::unique_ptr<Cell[]> cells_;
  uint32_t cap_ = 0;
  alignas(64) std::atomic<uint64_t> enqueue_{0};
  alignas(64) uint64_t dequeue_ = 0;
};

// Serial-number comparison for free-running 32-bit counters.
inline bool seq_before(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}

}  // namespace rhinet::fw
