// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Request: one nonblocking PUSH, PULL, isend or irecv. A PUSH,
// PULL or isend completes through a status word the NIC writes into the
// library's registered pool, so test() is a memory read; an irecv through
// the endpoint's completion queue, which test() polls (no system call
// either way).
#ifndef RHINET_REQUEST_HPP
#define RHINET_REQUEST_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "rhinet/message.hpp"
#include "rhinet/result.hpp"
#include "rhinet/types.hpp"

namespace rhinet {

namespace detail {
struct Device;
}

class [[nodiscard]] Request {
 public:
  // A request that was never posted: done, without error.
  Request() = default;
  Request(Request&& other) noexcept;
  // A request still in flight in *this is detached first.
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  // Detaches a request still in flight (see detach()).
  ~Request();

  // True once the operation completed (successfully or not). Reads the
  // status word; no system call.
  bool test();
  // As test(), without looking at the status word again.
  bool done() const { return slot_ < 0; }
  // Until done: spins for the Group's spin budget (Group::set_spin), then
  // sleeps until the NIC interrupts. ETIMEDOUT (the request stays in
  // flight), or the operation's error: for a failed completion the Error
  // carries the status and the NIC syndrome (Error::syndrome()); errors
  // found before posting come here too. A receive: EMSGSIZE (truncated:
  // the message was longer than the buffer; message() has its length),
  // ECANCELED (cancelled, see cancelled()), ECONNABORTED (the sender gave
  // the message up).
  Result<void> wait(std::chrono::milliseconds timeout = forever);
  // The outcome once done; EINPROGRESS while in flight.
  Result<void> result() const;
  // Bytes the NIC reports moved (from the status word; 0 before done or
  // after an error). A receive: the message bytes it took (all of them,
  // or when truncated as many as it takes: the buffer's size, block *
  // count for Mode::stride); with Mode::bitmap, or from a bitmap or diff
  // isend, not all of those were written.
  std::uint32_t bytes() const { return bytes_; }
  // A collective (Communicator) while it runs: the bytes of it finished at
  // this rank's NIC so far, as the NIC last wrote them into the status
  // word (its execution state; a memory read). bytes() once done; 0
  // before anything is finished, and for other operations in flight.
  std::uint32_t progress() const;
  // Group::fetch_add and compare_swap, once done without error: the
  // word's value before the operation (compare_swap swapped when it equals
  // the expected value). 0 otherwise.
  std::uint64_t value() const { return value_; }
  // A receive that took a message (once done, successfully or truncated):
  // the message's source, tag and whole length. Empty before, after any
  // other failure (cancelled, the sender gave up, ...), and for other
  // operations.
  const std::optional<Message>& message() const { return message_; }
  // True for a request made by Group::irecv (pending or done).
  bool is_receive() const { return receive_; }
  // Asks the NIC to take a pending irecv back. Then wait(): ECANCELED and
  // cancelled(), or, when a message matched first, the message as usual.
  // A request already done: nothing to do. Errors: EOPNOTSUPP for a
  // PUSH, PULL or isend (only receives can be cancelled), errno of
  // rhinetdv_irecv_cancel.
  Result<void> cancel();
  // Done because cancel() took it back (wait() returns ECANCELED).
  bool cancelled() const { return cancelled_; }
  // Lets go of the operation: it completes on its own, Group::sync() waits
  // for it and returns its error if it fails. A pending receive is
  // cancelled (it takes no later message; Group::sync() does not wait for
  // receives), and its other errors go to sync().
  void detach();

 private:
  friend struct detail::Device;
  friend Result<void> wait_all(std::span<Request>, std::chrono::milliseconds);
  friend Result<std::size_t> wait_any(std::span<Request>,
                                      std::chrono::milliseconds);
  struct ReceiveTag {};
  Request(std::shared_ptr<detail::Device> dev, std::int32_t slot);
  Request(std::shared_ptr<detail::Device> dev, std::int32_t slot, ReceiveTag);
  explicit Request(Error e, bool receive = false)
      : receive_(receive), error_(std::move(e)) {}
  void complete(std::uint32_t bytes, std::optional<Error> error);
  void complete_receive(std::uint32_t bytes, std::optional<Message> message,
                        std::optional<Error> error, bool cancelled);
  // The owner pointer of the slot this request is in flight in.
  Request*& owner_slot() const;
  // A receive in flight whose completion queue cannot be read: that error
  // (it would never complete). Empty otherwise.
  std::optional<Error> stuck() const;
  std::string describe() const;
  // The device of a request in flight; null once done.
  static detail::Device* device_in_flight(const Request& r);

  std::shared_ptr<detail::Device> dev_;
  // In flight: its status word, or (receive_) its receive slot; -1: done.
  std::int32_t slot_ = -1;
  bool receive_ = false;
  bool cancelled_ = false;
  std::uint32_t bytes_ = 0;
  std::uint64_t value_ = 0;
  std::optional<Message> message_;
  std::optional<Error> error_;
};

// Several requests at once, waiting as Request::wait does (requests of
// several Groups: spinning, yielding and napping, never sleeping). Each
// request keeps its own outcome (result(), message(), value()).
//
// wait_all: until every request is done. ETIMEDOUT when some are still in
// flight at the deadline (they stay in flight; the message says how many);
// otherwise the error of the first failed request, by position, or ok.
Result<void> wait_all(std::span<Request> requests,
                      std::chrono::milliseconds timeout = forever);
// wait_any: until one request is done: the position of the first done one.
// A request done before the call counts too, so a loop takes the one it
// got out of the set before it waits again. EINVAL for an empty set,
// ETIMEDOUT when none is done at the deadline.
Result<std::size_t> wait_any(std::span<Request> requests,
                             std::chrono::milliseconds timeout = forever);

}  // namespace rhinet

#endif  // RHINET_REQUEST_HPP
