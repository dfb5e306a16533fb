// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/request.hpp"

#include <cerrno>

#include "device.hpp"
#include "net.hpp"

namespace rhinet {

Request::Request(std::shared_ptr<detail::Device> dev, std::int32_t slot)
    : dev_(std::move(dev)), slot_(slot) {
  dev_->slots[static_cast<std::size_t>(slot_)].owner = this;
}

Request::Request(Request&& o) noexcept
    : dev_(std::move(o.dev_)),
      slot_(std::exchange(o.slot_, -1)),
      bytes_(o.bytes_),
      error_(std::move(o.error_)) {
  if (slot_ >= 0) dev_->slots[static_cast<std::size_t>(slot_)].owner = this;
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    detach();
    dev_ = std::move(o.dev_);
    slot_ = std::exchange(o.slot_, -1);
    bytes_ = o.bytes_;
    error_ = std::move(o.error_);
    if (slot_ >= 0) dev_->slots[static_cast<std::size_t>(slot_)].owner = this;
  }
  return *this;
}

Request::~Request() { detach(); }

void Request::detach() {
  if (slot_ >= 0) {
    // From now on sync() waits for it and reports its failure.
    auto& s = dev_->slots[static_cast<std::size_t>(slot_)];
    s.owner = nullptr;
    dev_->reap(static_cast<std::uint32_t>(slot_));
    slot_ = -1;
  }
}

void Request::complete(std::uint32_t bytes, std::optional<Error> error) {
  slot_ = -1;
  bytes_ = bytes;
  error_ = std::move(error);
}

bool Request::test() {
  if (slot_ < 0) return true;
  return dev_->reap(static_cast<std::uint32_t>(slot_));
}

Result<void> Request::wait(std::chrono::milliseconds timeout) {
  if (!test()) {
    const auto deadline = net::deadline_after(timeout);
    detail::Backoff b;
    while (!test()) {
      if (net::poll_ms(deadline) == 0)
        return Error(
            ETIMEDOUT,
            dev_->describe(dev_->slots[static_cast<std::size_t>(slot_)]) +
                ": not complete within " + net::format_duration(timeout));
      b.pause();
    }
  }
  return result();
}

Result<void> Request::result() const {
  if (slot_ >= 0)
    return Error(EINPROGRESS,
                 dev_->describe(dev_->slots[static_cast<std::size_t>(slot_)]));
  if (error_) return *error_;
  return ok();
}

}  // namespace rhinet
