// SPDX-License-Identifier: BSD-2-Clause
// A many-to-one message channel whose receiver memory does not grow with
// the number of senders (receive-buffer acquisition with remote atomics;
// Documentation/userlib/inbox.md). The receiver owns N slots in an area; a
// sender takes a ticket with a remote fetch-add on the receiver's SendCNT and
// writes its slot once the receiver's RecvCNT shows the slot free, reading
// RecvCNT again meanwhile. Nothing is dropped and nobody is refused: under
// incast the senders wait on a counter, the receiver's CPU takes no part in the
// acquisition, and the receiver holds N slots whether 1 or 10^6 ranks
// send. The protocol itself is rhinet/inbox_protocol.hpp.
//
//   // rank 0
//   auto in = rhinet::Inbox::open(group, 7, {.slots = 16});
//   group.barrier_bootstrap();
//   auto msg = in->receive();          // in ticket order
//   // any other rank
//   group.barrier_bootstrap();
//   rhinet::InboxSender out(group, 0, 7, {.slots = 16});
//   out.send(std::as_bytes(std::span("hello")));
#ifndef RHINET_INBOX_HPP
#define RHINET_INBOX_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "rhinet/area.hpp"
#include "rhinet/group.hpp"
#include "rhinet/inbox_protocol.hpp"
#include "rhinet/result.hpp"

namespace rhinet {

// Where each counter group's SendCNT and RecvCNT live (spread over ranks
// so that the senders' fetch-adds do not all reach one NIC):
// group g's at rank ranks[g % ranks.size()], in that rank's counter area
// `area_id` (InboxCounterHost). Empty: at the receiver, in its own area.
struct InboxPlacement {
  std::vector<std::uint32_t> ranks;
  std::uint32_t area_id = 0;
};

// The counters of an Inbox's groups, at a rank other than the receiver:
// then the senders' fetch-adds reach this rank's NIC, not the receiver's.
// The rank's process does nothing else for them.
class InboxCounterHost {
 public:
  InboxCounterHost(InboxCounterHost&&) noexcept = default;
  InboxCounterHost& operator=(InboxCounterHost&&) noexcept = default;
  static Result<InboxCounterHost> open(Group& group, std::uint32_t area_id,
                                       const InboxLayout& layout);
  // A group's counters as they stand (for tests and monitoring).
  std::uint64_t send_count(std::uint32_t g) const;
  std::uint64_t recv_count(std::uint32_t g) const;
  // The receiver's side when it hosts the counters itself: one more taken.
  void add_recv(std::uint32_t g);

 private:
  InboxCounterHost() = default;
  std::vector<std::uint64_t> words_;
  std::optional<Area> area_;
};

class Inbox {
 public:
  // Registers area `area_id` (the counters and the slots, memory the Inbox
  // owns, with remote atomic access) at this rank and sets the counters.
  // Senders must use the same layout. Errors: EINVAL (a layout of 0 slots
  // or slot bytes, or more than 2^20), EOPNOTSUPP (no remote atomics),
  // errors of Group::area.
  static Result<Inbox> open(Group& group, std::uint32_t area_id,
                            InboxLayout layout = {},
                            InboxPlacement placement = {});

  // The next message in ticket order, once all of its bytes are in; no
  // system call. The span is valid until pop().
  std::optional<std::span<const std::byte>> peek() const;
  // Frees the slot peek() showed; its next sender may write it. With the
  // counters elsewhere this posts a fetch-add of 1 to the group's RecvCNT
  // (detached: Group::sync() reports a failure).
  void pop();
  // peek(), copy, pop(), waiting up to `timeout` (ETIMEDOUT). The wait
  // spins for default_area_spin, then sleeps on the NIC's watch of the
  // inbox's area (Group::wait_for_area: every part of a message lands
  // there by a NIC write); without watches it spins, yields and naps.
  // Group::area_wait_stats() counts its sleeps.
  Result<std::vector<std::byte>> receive(
      std::chrono::milliseconds timeout = forever);
  // The same with the spin budget (never_sleep: never sleep) and timeout
  // of `options`. Errors besides ETIMEDOUT: those of wait_for_area; EBUSY
  // never (with another thread in the group it looks at memory instead).
  Result<std::vector<std::byte>> receive(const AreaWaitOptions& options);
  // A sender that dies between taking its ticket and writing its message
  // leaves a hole its group's later messages wait behind. stuck(): whether
  // a group's next message is missing while a later one is in (a hole, or
  // a slow sender). skip_stuck(): gives that message up and moves on, once
  // the application knows the sender is gone for good (its process or node
  // died: a sender that is only slow would write into the slot's next
  // message). Returns whether there was a hole; skipped() counts them.
  bool stuck() const;
  bool skip_stuck();
  std::uint64_t skipped() const;

  // Bytes of registered memory the receiver holds: the same for any number
  // of senders.
  std::size_t memory_bytes() const { return bytes_; }
  std::uint64_t received() const;
  const InboxLayout& layout() const { return layout_; }

 private:
  Inbox() = default;
  static Error timed_out(std::chrono::milliseconds timeout);
  struct Memory {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Memory> mem_;
  std::size_t bytes_ = 0;
  InboxLayout layout_;
  InboxPlacement placement_;
  Group* group_ = nullptr;
  std::optional<Area> area_;
  std::unique_ptr<inbox::Queue> queue_;
};

// A sender to one Inbox. Not thread-safe; one send at a time.
class InboxSender {
 public:
  // Uses counter group rank % layout.groups.
  InboxSender(Group& group, std::uint32_t receiver, std::uint32_t area_id,
              InboxLayout layout = {}, const InboxPlacement& placement = {});
  InboxSender(InboxSender&&) noexcept;
  InboxSender& operator=(InboxSender&&) noexcept;
  ~InboxSender();

  // Takes a ticket, waits for its slot, writes the message. EMSGSIZE: longer
  // than the layout's slot_bytes; ETIMEDOUT: the slot stayed taken (the
  // ticket and the message are kept: the next send() finishes them first);
  // the NIC's errors (a receiver without the area, a dead node): the
  // ticket is then lost and the receiver's queue stops at it, so such an
  // error ends the channel.
  Result<void> send(std::span<const std::byte> message,
                    std::chrono::milliseconds timeout = forever);
  // How many times a send found the queue full and read RecvCNT again.
  std::uint64_t recv_count_reads() const;

 private:
  friend class CreditSender;
  // send() with credit_only: the ticket and the wait, nothing written.
  Result<void> run(std::span<const std::byte> message,
                   std::chrono::milliseconds timeout, bool credit_only);
  struct State;
  std::unique_ptr<State> s_;
};

// Message-count limiting, on top of any messaging (isend/irecv): a
// sender takes a credit before each message to the receiver, the receiver
// gives one back for each message it has taken, and at most `slots`
// messages of all senders together are ever outstanding at the receiver,
// whatever the number of senders. The same counters as an Inbox; no
// slots.
class CreditReceiver {
 public:
  // The counters at this rank (area `area_id`), or at the placement's.
  static Result<CreditReceiver> open(Group& group, std::uint32_t area_id,
                                     InboxLayout layout,
                                     InboxPlacement placement = {});
  // A message from `from` was taken: its credit goes back (with the
  // counters elsewhere, a detached fetch-add).
  void consumed(std::uint32_t from);

 private:
  CreditReceiver() = default;
  Group* group_ = nullptr;
  InboxLayout layout_;
  InboxPlacement placement_;
  std::uint32_t area_id_ = 0;
  std::optional<InboxCounterHost> local_;
};

class CreditSender {
 public:
  CreditSender(Group& group, std::uint32_t receiver, std::uint32_t area_id,
               InboxLayout layout, const InboxPlacement& placement = {});
  CreditSender(CreditSender&&) noexcept;
  CreditSender& operator=(CreditSender&&) noexcept;
  ~CreditSender();
  // Until this sender may send one message (ETIMEDOUT: the credit is
  // still being waited for; the next acquire() goes on with it).
  Result<void> acquire(std::chrono::milliseconds timeout = forever);
  std::uint64_t recv_count_reads() const;

 private:
  InboxSender sender_;  // its machine, run for credits only
};

}  // namespace rhinet

#endif  // RHINET_INBOX_HPP
