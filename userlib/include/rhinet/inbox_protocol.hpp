// SPDX-License-Identifier: BSD-2-Clause
// The receive-buffer acquisition protocol (remote atomics for
// memory-saving communication; Documentation/userlib/inbox.md), independent of
// how its operations travel: rhinet::Inbox and rhinet::InboxSender run it over
// the NIC, the unit tests over an in-memory transport that completes operations
// in any order.
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
#include <vector>

namespace rhinet {

struct InboxLayout {
  // N: messages that can wait at the receiver; a power of two, so that
  // ticket % N stays the same slot sequence when the counters wrap.
  std::uint32_t slots = 16;
  std::uint32_t slot_bytes = 256;  // the longest message
  // The counters' first value (tests start near 2^64 to see them wrap).
  std::uint64_t first_ticket = 0;
  // K counter groups: the slots are split evenly among
  // them, and each group has its own SendCNT and RecvCNT, which may live at
  // another rank than the receiver, so that the senders' fetch-adds spread
  // over K NICs instead of all reaching the receiver's. A sender always
  // uses one group (its order holds within it). A power of two, <= slots.
  std::uint32_t groups = 1;
};

namespace inbox {

// A group's counter block: SendCNT and RecvCNT in cache lines of their own
// (senders hammer SendCNT, read RecvCNT, and the receiver writes it). The
// blocks of groups 0..K-1 are at g * kCounterBlock in a counter area, and
// the receiver's area starts with them too (used when the counters live at
// the receiver), followed by the slots.
inline constexpr std::uint64_t kSendCount = 0;
inline constexpr std::uint64_t kRecvCount = 64;
inline constexpr std::uint64_t kCounterBlock = 128;

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

inline constexpr std::uint32_t per_group(const InboxLayout& l) {
  return l.slots / l.groups;
}
inline constexpr std::uint64_t counter_offset(std::uint32_t group) {
  return kCounterBlock * group;
}
inline constexpr std::uint64_t counter_bytes(const InboxLayout& l) {
  return kCounterBlock * l.groups;
}
inline constexpr std::uint64_t slot_stride(const InboxLayout& l) {
  return (sizeof(SlotHeader) + std::uint64_t{l.slot_bytes} + 63) / 64 * 64;
}
inline constexpr std::uint64_t area_bytes(const InboxLayout& l) {
  return counter_bytes(l) + slot_stride(l) * l.slots;
}
inline constexpr std::uint64_t header_offset(const InboxLayout& l,
                                             std::uint32_t group,
                                             std::uint64_t ticket) {
  return counter_bytes(l) +
         slot_stride(l) *
             (std::uint64_t{group} * per_group(l) + ticket % per_group(l));
}
inline constexpr std::uint64_t data_offset(const InboxLayout& l,
                                           std::uint32_t group,
                                           std::uint64_t ticket) {
  return header_offset(l, group, ticket) + sizeof(SlotHeader);
}
// The slot of `ticket` is free once its group's RecvCNT reached
// ticket - N/K + 1. Compared as a signed distance modulo 2^64: a ticket
// behind RecvCNT may go too (with credits the receiver takes messages in
// arrival order, so RecvCNT can pass a ticket still waiting for its read).
inline constexpr bool may_write(const InboxLayout& l, std::uint64_t ticket,
                                std::uint64_t recv_count) {
  return static_cast<std::int64_t>(ticket - recv_count) <
         static_cast<std::int64_t>(per_group(l));
}
inline constexpr bool power_of_two(std::uint32_t x) {
  return x && (x & (x - 1)) == 0;
}
inline bool valid(const InboxLayout& l) {
  return power_of_two(l.slots) && l.slots <= (1u << 20) &&
         power_of_two(l.groups) && l.groups <= l.slots && l.slot_bytes > 0 &&
         l.slot_bytes <= (1u << 20);
}
// Sets every group's counters in a counter area (or the receiver's).
inline void init_counters(std::span<std::byte> area, const InboxLayout& l) {
  for (std::uint32_t g = 0; g < l.groups; g++)
    for (std::uint64_t off : {kSendCount, kRecvCount})
      std::memcpy(area.data() + counter_offset(g) + off, &l.first_ticket, 8);
}

// One send, as a state machine over a Transport with these members (each
// posting returns an Op with test(), failed() and value()):
//   Op fetch_add(std::uint64_t offset, std::uint64_t add);  // counters
//   Op read_word(std::uint64_t offset);   // counters; value() = the word
//   Op write(std::uint64_t offset, std::span<const std::byte> bytes);  // slots
//   Op pause(std::uint64_t slots);  // done after about `slots` slot turns
// Counter offsets are in the group's counter area (the receiver's area when
// the counters live there), slot offsets in the receiver's area.
// The bytes given to write() stay valid until that Op completes. step()
// never blocks: it looks at the operation in flight and posts the next.
template <class Transport>
class SendMachine {
 public:
  using Op = typename Transport::Op;
  enum class State {
    idle,
    ticket,
    check,
    read_count,
    pause,
    data,
    header,
    done
  };

  SendMachine(Transport& t, const InboxLayout& l, std::uint32_t group = 0)
      : t_(t), l_(l), group_(group % l.groups) {}

  // `message` (at most slot_bytes) stays valid until done().
  void start(std::span<const std::byte> message) {
    credit_only_ = false;
    message_ = message;
    op_ = t_.fetch_add(counter_offset(group_) + kSendCount, 1);
    state_ = State::ticket;
  }
  // Message-count limiting: a ticket and the wait for room only,
  // done when the caller may send one message by other means.
  void start_credit() {
    credit_only_ = true;
    message_ = {};
    op_ = t_.fetch_add(counter_offset(group_) + kSendCount, 1);
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
            op_ = t_.read_word(counter_offset(group_) + kRecvCount);
            state_ = State::read_count;
            return true;
          }
          if (credit_only_) {
            state_ = State::done;
            return true;
          }
          op_ = t_.write(data_offset(l_, group_, ticket_), message_);
          state_ = State::data;
          break;
        case State::read_count:
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          // RecvCNT only grows: an old answer never moves it back.
          if (op_.value() - recv_count_ < (std::uint64_t{1} << 63))
            recv_count_ = op_.value();
          if (!may_write(l_, ticket_, recv_count_)) {
            // `behind` messages must be taken before this ticket's slot is
            // free: read again after about that many slot turns, not at
            // once (at 256 senders on 16 slots, re-reading at once cost
            // 29 reads per message).
            const std::uint64_t window = l_.slots / l_.groups;
            const std::uint64_t behind = ticket_ - recv_count_ - window + 1;
            op_ = t_.pause(behind < (std::uint64_t{1} << 63) ? behind : 1);
            state_ = State::pause;
            return true;
          }
          state_ = State::check;
          break;
        case State::pause:
          if (!op_.test()) return true;
          state_ = State::check;
          break;
        case State::data:
          // The header goes after the bytes have landed, so a full header
          // means the whole message is there.
          if (!op_.test()) return true;
          if (op_.failed()) return false;
          header_ = SlotHeader{
              ticket_, static_cast<std::uint32_t>(message_.size()), kFull};
          op_ = t_.write(header_offset(l_, group_, ticket_),
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
  std::uint32_t group() const { return group_; }

 private:
  Transport& t_;
  InboxLayout l_;
  std::uint32_t group_;
  bool credit_only_ = false;
  State state_ = State::idle;
  Op op_{};
  std::span<const std::byte> message_;
  std::uint64_t ticket_ = 0;
  std::uint64_t recv_count_ = 0;
  std::uint64_t count_reads_ = 0;
  SlotHeader header_{};
};

// The receiver's side over its own memory (the area's bytes). It takes
// the groups' messages in turn, each group's in ticket order.
class Queue {
 public:
  // local_counters: RecvCNT is in this area (otherwise pop() returns the
  // value for the caller to publish at the group's counter rank).
  Queue(std::span<std::byte> area, const InboxLayout& l,
        bool local_counters = true)
      : area_(area),
        l_(l),
        local_(local_counters),
        next_(l.groups, l.first_ticket) {}
  // Clears the slots and sets the counters (before any sender runs).
  void init() {
    std::memset(area_.data(), 0, area_.size());
    init_counters(area_, l_);
  }
  // The next message of some group, if all of it is in; group() names it.
  bool ready(std::span<const std::byte>* bytes) const {
    for (std::uint32_t k = 0; k < l_.groups; k++) {
      const std::uint32_t g = (cursor_ + k) % l_.groups;
      // The flag first: the NIC wrote the header after the bytes.
      if (__atomic_load_n(&full_word(g), __ATOMIC_ACQUIRE) != kFull) continue;
      SlotHeader h;
      std::memcpy(&h, area_.data() + header_offset(l_, g, next_[g]), sizeof(h));
      if (h.ticket != next_[g] || h.length > l_.slot_bytes) continue;
      *bytes = area_.subspan(data_offset(l_, g, next_[g]), h.length);
      cursor_ = g;
      return true;
    }
    return false;
  }
  std::uint32_t group() const { return cursor_; }
  // Frees the slot ready() showed; returns that group's new RecvCNT. With
  // local counters it is stored here already; otherwise the caller adds 1
  // to the group's RecvCNT at its counter rank with a remote fetch-add
  // (adds that land out of order still sum right; plain writes of the new
  // value could be overtaken by older ones).
  std::uint64_t pop() {
    const std::uint32_t g = cursor_;
    // Not needed for safety (ready() matches the ticket too), but a slot
    // that reads empty is easier to debug.
    __atomic_store_n(&full_word(g), 0u, __ATOMIC_RELAXED);
    const std::uint64_t count = ++next_[g];
    if (local_) {
      auto* rc = reinterpret_cast<std::uint64_t*>(
          area_.data() + counter_offset(g) + kRecvCount);
      __atomic_store_n(rc, count, __ATOMIC_RELEASE);
    }
    cursor_ = (g + 1) % l_.groups;  // the next group gets the next turn
    return count;
  }
  // A group whose next message is missing while a later one of the group
  // is in (its sender took the ticket and has not written: it died, or it
  // is slow); -1 for none. Its messages wait behind that ticket.
  int stuck() const {
    const std::uint64_t window = l_.slots / l_.groups;
    for (std::uint32_t g = 0; g < l_.groups; g++) {
      if (holds(g, next_[g])) continue;
      for (std::uint64_t k = 1; k < window; k++)
        if (holds(g, next_[g] + k)) return static_cast<int>(g);
    }
    return -1;
  }
  // Gives up group g's next message, whose sender is known to be gone (it
  // must never write again: a late write would land in the slot's next
  // message). Returns the group's new RecvCNT, as pop().
  std::uint64_t skip(std::uint32_t g) {
    cursor_ = g;
    skipped_++;
    return pop();
  }
  std::uint64_t skipped() const { return skipped_; }
  // Messages taken (skipped ones not counted), all groups together.
  std::uint64_t taken() const {
    std::uint64_t n = 0;
    for (std::uint64_t t : next_) n += t - l_.first_ticket;
    return n - skipped_;
  }

 private:
  // The slot of `ticket` holds that ticket's whole message.
  bool holds(std::uint32_t g, std::uint64_t ticket) const {
    SlotHeader h;
    const std::uint64_t at = header_offset(l_, g, ticket);
    const auto full =
        __atomic_load_n(reinterpret_cast<const std::uint32_t*>(
                            area_.data() + at + offsetof(SlotHeader, full)),
                        __ATOMIC_ACQUIRE);
    std::memcpy(&h, area_.data() + at, sizeof(h));
    return full == kFull && h.ticket == ticket;
  }
  std::uint32_t& full_word(std::uint32_t g) const {
    return *reinterpret_cast<std::uint32_t*>(area_.data() +
                                             header_offset(l_, g, next_[g]) +
                                             offsetof(SlotHeader, full));
  }
  std::span<std::byte> area_;
  InboxLayout l_;
  bool local_;
  std::vector<std::uint64_t> next_;   // per group: the ticket it waits for
  mutable std::uint32_t cursor_ = 0;  // the group ready() found
  std::uint64_t skipped_ = 0;
};

}  // namespace inbox
}  // namespace rhinet

#endif  // RHINET_INBOX_PROTOCOL_HPP
