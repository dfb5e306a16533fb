// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/request.hpp"

#include <cerrno>

#include "device.hpp"
#include "net.hpp"
#include "wait.hpp"

namespace rhinet {

Request::Request(std::shared_ptr<detail::Device> dev, std::int32_t slot)
    : dev_(std::move(dev)), slot_(slot) {
  owner_slot() = this;
}

Request::Request(std::shared_ptr<detail::Device> dev, std::int32_t slot,
                 ReceiveTag)
    : dev_(std::move(dev)), slot_(slot), receive_(true) {
  owner_slot() = this;
}

Request::Request(Request&& o) noexcept
    : dev_(std::move(o.dev_)),
      slot_(std::exchange(o.slot_, -1)),
      receive_(o.receive_),
      cancelled_(o.cancelled_),
      bytes_(o.bytes_),
      value_(o.value_),
      message_(std::move(o.message_)),
      error_(std::move(o.error_)) {
  if (slot_ >= 0) owner_slot() = this;
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    detach();
    dev_ = std::move(o.dev_);
    slot_ = std::exchange(o.slot_, -1);
    receive_ = o.receive_;
    cancelled_ = o.cancelled_;
    bytes_ = o.bytes_;
    value_ = o.value_;
    message_ = std::move(o.message_);
    error_ = std::move(o.error_);
    if (slot_ >= 0) owner_slot() = this;
  }
  return *this;
}

Request::~Request() { detach(); }

Request*& Request::owner_slot() const {
  const auto i = static_cast<std::size_t>(slot_);
  return receive_ ? dev_->recvs[i].owner : dev_->slots[i].owner;
}

std::string Request::describe() const {
  const auto i = static_cast<std::size_t>(slot_);
  return receive_ ? dev_->describe(dev_->recvs[i])
                  : dev_->describe(dev_->slots[i]);
}

void Request::detach() {
  if (slot_ < 0) return;
  owner_slot() = nullptr;
  const auto s = static_cast<std::uint32_t>(slot_);
  slot_ = -1;
  if (receive_) {
    // Nobody will look at it: it must not take a later message. A failure
    // to ask (other than its having completed) is kept for sync().
    if (auto r = dev_->cancel_recv(s); !r && !dev_->detached_error)
      dev_->detached_error = std::move(r).error();
    dev_->poll_cq();
  } else {
    // From now on sync() waits for it and reports its failure.
    dev_->reap(s);
  }
}

void Request::complete(std::uint32_t bytes, std::optional<Error> error) {
  slot_ = -1;
  bytes_ = bytes;
  error_ = std::move(error);
}

void Request::complete_receive(std::uint32_t bytes,
                               std::optional<Message> message,
                               std::optional<Error> error, bool cancelled) {
  slot_ = -1;
  bytes_ = bytes;
  message_ = std::move(message);
  error_ = std::move(error);
  cancelled_ = cancelled;
}

std::uint32_t Request::progress() const {
  if (slot_ < 0) return bytes_;
  if (receive_) return 0;
  const std::uint64_t w = __atomic_load_n(
      &dev_->words[static_cast<std::uint32_t>(slot_)], __ATOMIC_ACQUIRE);
  if (!(w & (RHINETDV_STATUS_WORD_RUNNING | RHINETDV_STATUS_WORD_DONE)))
    return 0;
  return static_cast<std::uint32_t>(w & RHINETDV_STATUS_WORD_LEN_MASK);
}

bool Request::test() {
  if (slot_ < 0) return true;
  if (receive_) {
    dev_->poll_cq();
    return slot_ < 0;
  }
  const auto s = static_cast<std::uint32_t>(slot_);
  if (dev_->reap(s)) return true;
  // Some outcomes come as a CQE only, never as a status word: every
  // atomic's (its operands use the word's place in the WQE) and that of a
  // WQE the NIC finds malformed. Device::complete_from_cqe turns them into
  // the word; reading the CQ makes no system call.
  dev_->poll_cq();
  return dev_->reap(s);
}

namespace {

// The error of a wait that failed in the event source.
Error wait_failed(int e, const std::string& what, const char* failed) {
  return Error(e, what + ": " + failed + " failed while waiting");
}

}  // namespace

Result<void> Request::wait(std::chrono::milliseconds timeout) {
  if (slot_ < 0) return result();
  detail::Device::InUse in(*dev_);
  if (!in.ok()) return detail::Device::busy("wait for " + describe());
  if (!test()) {
    std::optional<Error> stuck_error;
    const char* failed = "";
    const int e = dev_->wait(
        [&] {
          if (test()) return true;
          stuck_error = stuck();
          return stuck_error.has_value();
        },
        net::deadline_after(timeout), &failed);
    if (stuck_error) return *stuck_error;
    if (e == ETIMEDOUT)
      return Error(ETIMEDOUT, describe() + ": not complete within " +
                                  net::format_duration(timeout));
    if (e) return wait_failed(e, describe(), failed);
  }
  return result();
}

std::optional<Error> Request::stuck() const {
  // Receives complete through the CQ: if it cannot be read, say so.
  if (slot_ >= 0 && receive_ && dev_->poll_error)
    return Error(dev_->poll_error->code(),
                 describe() + ": " + dev_->poll_error->message());
  return std::nullopt;
}

namespace {

// The device whose events wake a wait for `requests` in flight, and the
// spin budget: one device's waits sleep; requests of several Groups are
// waited for by spinning (one endpoint's interrupt says nothing of the
// other's), and none in flight needs no device at all.
detail::Device* device_of(std::span<Request> requests,
                          std::chrono::microseconds* spin,
                          detail::Device* (*dev)(const Request&)) {
  detail::Device* one = nullptr;
  for (const Request& r : requests) {
    detail::Device* d = dev(r);
    if (!d) continue;
    if (one && d != one) {
      *spin = never_sleep;
      return one;
    }
    one = d;
  }
  if (one) *spin = one->spin;
  return one;
}

// Waits until check() holds on the device of the requests in flight
// (`dev_of` tells a request's), with the spin budget device_of gives, for
// this wait only. 0, ETIMEDOUT or the event source's errno (*failed names
// the call); *busy when another thread waits on that device (nothing was
// waited for).
int wait_for_requests(std::span<Request> requests,
                      detail::Device* (*dev_of)(const Request&),
                      const std::function<bool()>& check,
                      std::chrono::milliseconds timeout, const char** failed,
                      bool* busy) {
  std::chrono::microseconds spin = default_spin;
  detail::Device* dev = device_of(requests, &spin, dev_of);
  detail::Device::InUse in(*dev);
  *busy = !in.ok();
  if (*busy) return 0;
  const auto saved = dev->spin;
  dev->spin = spin;
  const int e = dev->wait(check, net::deadline_after(timeout), failed);
  dev->spin = saved;
  return e;
}

}  // namespace

// Requests done hold no device (their dev_ may be gone).
detail::Device* Request::device_in_flight(const Request& r) {
  return r.slot_ >= 0 ? r.dev_.get() : nullptr;
}

Result<void> wait_all(std::span<Request> requests,
                      std::chrono::milliseconds timeout) {
  std::size_t in_flight = 0;
  std::optional<Error> stuck_error;
  const auto check = [&] {
    in_flight = 0;
    for (Request& r : requests) {
      if (r.test()) continue;
      if (auto e = r.stuck()) {
        stuck_error = std::move(e);
        return true;
      }
      in_flight++;
    }
    return in_flight == 0;
  };
  if (!check()) {
    const char* failed = "";
    bool busy = false;
    const int e = wait_for_requests(requests, &Request::device_in_flight, check,
                                    timeout, &failed, &busy);
    if (busy) return detail::Device::busy("wait_all");
    if (stuck_error) return *stuck_error;
    if (e == ETIMEDOUT)
      return Error(ETIMEDOUT, "wait_all: " + std::to_string(in_flight) +
                                  " of " + std::to_string(requests.size()) +
                                  " requests not complete within " +
                                  net::format_duration(timeout));
    if (e) return wait_failed(e, "wait_all", failed);
  }
  if (stuck_error) return *stuck_error;
  for (const Request& r : requests)
    if (auto outcome = r.result(); !outcome) return outcome;
  return ok();
}

Result<std::size_t> wait_any(std::span<Request> requests,
                             std::chrono::milliseconds timeout) {
  if (requests.empty())
    return Error(EINVAL, "wait_any: no requests to wait for");
  std::optional<std::size_t> got;
  std::optional<Error> stuck_error;
  const auto check = [&] {
    for (std::size_t i = 0; i < requests.size(); i++) {
      if (requests[i].test()) {
        got = i;
        return true;
      }
      if (auto e = requests[i].stuck()) {
        stuck_error = std::move(e);
        return true;
      }
    }
    return false;
  };
  if (!check()) {
    const char* failed = "";
    bool busy = false;
    const int e = wait_for_requests(requests, &Request::device_in_flight, check,
                                    timeout, &failed, &busy);
    if (busy) return detail::Device::busy("wait_any");
    if (!got && !stuck_error) {
      if (e == ETIMEDOUT)
        return Error(ETIMEDOUT, "wait_any: none of " +
                                    std::to_string(requests.size()) +
                                    " requests complete within " +
                                    net::format_duration(timeout));
      return wait_failed(e, "wait_any", failed);
    }
  }
  if (stuck_error) return *stuck_error;
  return *got;
}

Result<void> Request::result() const {
  if (slot_ >= 0) return Error(EINPROGRESS, describe());
  if (error_) return *error_;
  return ok();
}

Result<void> Request::cancel() {
  if (slot_ < 0) return ok();
  if (!receive_)
    return Error(EOPNOTSUPP, describe() + ": only an irecv can be cancelled");
  return dev_->cancel_recv(static_cast<std::uint32_t>(slot_));
}

}  // namespace rhinet
