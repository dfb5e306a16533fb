// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Request: one nonblocking PUSH or PULL. It completes through a
// status word the NIC writes into the library's registered pool, so test()
// is a memory read (no system call).
#ifndef RHINET_REQUEST_HPP
#define RHINET_REQUEST_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

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
  // Until done (spinning, then yielding). ETIMEDOUT (the request stays in
  // flight), or the operation's error: for a failed completion the Error
  // carries the status and the NIC syndrome (Error::syndrome()); errors
  // found before posting come here too.
  Result<void> wait(std::chrono::milliseconds timeout = forever);
  // The outcome once done; EINPROGRESS while in flight.
  Result<void> result() const;
  // Bytes the NIC reports moved (from the status word; 0 before done or
  // after an error).
  std::uint32_t bytes() const { return bytes_; }
  // Lets go of the operation: it completes on its own, Group::sync() waits
  // for it and returns its error if it fails.
  void detach();

 private:
  friend struct detail::Device;
  Request(std::shared_ptr<detail::Device> dev, std::int32_t slot);
  explicit Request(Error e) : error_(std::move(e)) {}
  void complete(std::uint32_t bytes, std::optional<Error> error);

  std::shared_ptr<detail::Device> dev_;
  std::int32_t slot_ = -1;  // status word in flight; -1: done
  std::uint32_t bytes_ = 0;
  std::optional<Error> error_;
};

}  // namespace rhinet

#endif  // RHINET_REQUEST_HPP
