// SPDX-License-Identifier: BSD-2-Clause
// The receive-buffer acquisition protocol of seed 001 (remote atomics for
// memory-saving communication), independent of how its operations travel:
// rhinet::Inbox and rhinet::InboxSender run it over the NIC, the unit tests
// over an in-memory transport that completes operations in any order.
//
// The receiver's area holds two counters and a queue of N slots:
//
//   SendCNT   tickets handed out; a sender takes one with a remote fetch-add
//   RecvCNT   messages the receiver has consumed; only the receiver writes
//   slot[t % N]  the message with ticket t: a header and the bytes
//
// A sender with ticket t writes slot[t % N] only once t < RecvCNT + N (the
// slot's previous message, ticket t - N, is consumed); until then it reads
// RecvCNT again. The receiver takes slots in ticket order. So the receiver's
// memory is N slots whatever the number of senders, no message is dropped,
// and nobody is refused and retried: a sender waits on a counter instead.
// Counters are compared modulo 2^64 (t - RecvCNT < N), so they may wrap.
#ifndef RHINET_INBOX_PROTOCOL_HPP
#define RHINET_INBOX_PROTOCOL_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace rhinet {

struct InboxLayout {
  // N: messages that can wait at the receiver; a power of two, so that
  // ticket % N stays the same slot sequence when the counters wrap.
  std::uint32_t slots = 16;
  std::uint32_t slot_bytes = 256;  // the longest message
  // The counters' first value (tests start near 2^64 to see them wrap).
  std::uint64_t first_ticket = 0;
};

namespace inbox {

// Offsets in the receiver's area. The counters are in cache lines of their
// own: senders hammer SendCNT, read RecvCNT, and the receiver writes it.
inline constexpr std::uint64_t kSendCount = 0;
inline constexpr std::uint64_t kRecvCount = 64;
inline constexpr std::uint64_t kFirstSlot = 128;

// At the start of a slot. The receiver takes a message when `full` is set
// and `ticket` is the one it waits for: the ticket alone tells a new
// message from the slot's previous one (a NIC store that lands twice can
// bring an old `full` back, never a new ticket).
struct SlotHeader {
  std::uint64_t ticket;
  std::uint32_t length;
  std::uint32_t full;
};
static_assert(sizeof(SlotHeader) == 16);
inline constexpr std::uint32_t kFull = 0x1b0c5a11;

inline constexpr std::uint64_t slot_stride(const InboxLayout& l) {
  return (sizeof(SlotHeader) + std::uint64_t{l.slot_bytes} + 63) / 64 * 64;
}
inline constexpr std::uint64_t area_bytes(const InboxLayout& l) {
  return kFirstSlot + slot_stride(l) * l.slots;
}
inline constexpr std::uint64_t header_offset(const InboxLayout& l,
                                             std::uint64_t ticket) {
  return kFirstSlot + slot_stride(l) * (ticket % l.slots);
}
inline constexpr std::uint64_t data_offset(const InboxLayout& l,
                                           std::uint64_t ticket) {
  return header_offset(l, ticket) + sizeof(SlotHeader);
}
// The slot of `ticket` is free once RecvCNT reached ticket - N + 1.
inline constexpr bool may_write(const InboxLayout& l, std::uint64_t ticket,
                                std::uint64_t recv_count) {
  return ticket - recv_count < l.slots;
}
inline bool valid(const InboxLayout& l) {
  return l.slots > 0 && l.slots <= (1u << 20) &&
         (l.slots & (l.slots - 1)) == 0 && l.slot_bytes > 0 &&
         l.slot_bytes <= (1u << 20);
}

// One send, as a state machine over a Transport with these members (each
// posting returns an Op with test(), failed() and value()):
//   Op fetch_add(std::uint64_t offset, std::uint64_t add);
//   Op read_word(std::uint64_t offset);   // value() = the word
//   Op write(std::uint64_t offset, std::span<const std::byte> bytes);
// The bytes given to write() stay valid until that Op completes. step()
// never blocks: it looks at the operation in flight and posts the next.
template <class Transport>
class SendMachine {
 public:
  using Op = typename Transport::Op;
  enum class State { idle, ticket, check, read_count, data, header, done };

  SendMachine(Transport& t, const InboxLayout& l) : t_(t), l_(l) {}

  // `message` (at most slot_bytes) stays valid until done().
  void start(std::span<const std::byte> message) {
    message_ = message;
    op_ = t_.fetch_add(kSendCount, 1);
    state_ = State::ticket;
  }
  // Advances as far as completions allow; false once an operation failed
  // (the Op's error tells why).
  bool step() {
    for (;;) {
      switch (state_) {
        case State::idle:
        case State::done:
          return true;
        case State::ticket:
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          ticket_ = op_.value();
          state_ = State::check;
          break;
        case State::check:
          if (!may_write(l_, ticket_, recv_count_)) {
            ++count_reads_;
            op_ = t_.read_word(kRecvCount);
            state_ = State::read_count;
            return true;
          }
          op_ = t_.write(data_offset(l_, ticket_), message_);
          state_ = State::data;
          break;
        case State::read_count:
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          // RecvCNT only grows: an old answer never moves it back.
          if (op_.value() - recv_count_ < (std::uint64_t{1} << 63))
            recv_count_ = op_.value();
          state_ = State::check;
          if (!may_write(l_, ticket_, recv_count_)) return true;  // later
          break;
        case State::data:
          // The header goes after the bytes have landed, so a full header
          // means the whole message is there.
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          header_ = SlotHeader{
              ticket_, static_cast<std::uint32_t>(message_.size()), kFull};
          op_ = t_.write(header_offset(l_, ticket_),
                         std::as_bytes(std::span(&header_, 1)));
          state_ = State::header;
          break;
        case State::header:
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          state_ = State::done;
          return true;
      }
    }
  }
  bool done() const { return state_ == State::done; }
  State state() const { return state_; }
  const Op& op() const { return op_; }
  std::uint64_t ticket() const { return ticket_; }
  // A sender's cached RecvCNT survives its sends: seeded by the caller.
  std::uint64_t recv_count() const { return recv_count_; }
  void set_recv_count(std::uint64_t c) { recv_count_ = c; }
  std::uint64_t count_reads() const { return count_reads_; }

 private:
  Transport& t_;
  InboxLayout l_;
  State state_ = State::idle;
  Op op_{};
  std::span<const std::byte> message_;
  std::uint64_t ticket_ = 0;
  std::uint64_t recv_count_ = 0;
  std::uint64_t count_reads_ = 0;
  SlotHeader header_{};
};

// The receiver's side over its own memory (the area's bytes).
class Queue {
 public:
  Queue(std::span<std::byte> area, const InboxLayout& l)
      : area_(area), l_(l), next_(l.first_ticket) {}
  // Sets the counters (before any sender runs).
  void init() {
    std::memset(area_.data(), 0, area_.size());
    store(kSendCount, l_.first_ticket);
    store(kRecvCount, l_.first_ticket);
  }
  // The message with the next ticket, if all of it is in.
  bool ready(std::span<const std::byte>* bytes) const {
    // The flag first: the NIC wrote the header after the bytes.
    if (__atomic_load_n(&full_word(), __ATOMIC_ACQUIRE) != kFull) return false;
    const SlotHeader h = header();
    if (h.ticket != next_ || h.length > l_.slot_bytes) return false;
    *bytes = area_.subspan(data_offset(l_, next_), h.length);
    return true;
  }
  // Frees it: the slot is empty before RecvCNT says so.
  void pop() {
    // Not needed for safety (ready() matches the ticket too), but a slot
    // that reads empty is easier to debug.
    __atomic_store_n(&full_word(), 0u, __ATOMIC_RELAXED);
    ++next_;
    std::uint64_t* rc =
        reinterpret_cast<std::uint64_t*>(area_.data() + kRecvCount);
    __atomic_store_n(rc, next_, __ATOMIC_RELEASE);
  }
  std::uint64_t next_ticket() const { return next_; }

 private:
  void store(std::uint64_t off, std::uint64_t v) {
    std::memcpy(area_.data() + off, &v, sizeof(v));
  }
  SlotHeader header() const {
    SlotHeader h;
    std::memcpy(&h, area_.data() + header_offset(l_, next_), sizeof(h));
    return h;
  }
  std::uint32_t& full_word() const {
    return *reinterpret_cast<std::uint32_t*>(
        area_.data() + header_offset(l_, next_) + offsetof(SlotHeader, full));
  }
  std::span<std::byte> area_;
  InboxLayout l_;
  std::uint64_t next_;
};

}  // namespace inbox
}  // namespace rhinet

#endif  // RHINET_INBOX_PROTOCOL_HPP
