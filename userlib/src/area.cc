// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/area.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <string>

#include "device.hpp"

namespace rhinet {

// ---- Area -------------------------------------------------------------------

Area::Area(std::shared_ptr<detail::Device> dev, ibv_mr* mr, std::uint32_t id,
           std::uint32_t group, std::span<std::byte> memory)
    : dev_(std::move(dev)), mr_(mr), id_(id), group_(group), memory_(memory) {}

Area::Area(Area&& o) noexcept
    : dev_(std::move(o.dev_)),
      mr_(std::exchange(o.mr_, nullptr)),
      id_(o.id_),
      group_(o.group_),
      memory_(o.memory_) {}

Area& Area::operator=(Area&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::move(o.dev_);
    mr_ = std::exchange(o.mr_, nullptr);
    id_ = o.id_;
    group_ = o.group_;
    memory_ = o.memory_;
  }
  return *this;
}

Area::~Area() { reset(); }

void Area::reset() {
  if (mr_) {
    dev_->remove_region(memory_.data());
    ibv_dereg_mr(mr_);
    mr_ = nullptr;
  }
  dev_.reset();
}

std::uint32_t Area::rkey() const { return mr_ ? mr_->rkey : 0; }
std::uint32_t Area::lkey() const { return mr_ ? mr_->lkey : 0; }

// ---- Buffer -----------------------------------------------------------------

Buffer::Buffer(std::shared_ptr<detail::Device> dev, ibv_mr* mr,
               std::span<std::byte> memory, bool writable)
    : dev_(std::move(dev)), mr_(mr), memory_(memory), writable_(writable) {}

Buffer::Buffer(Buffer&& o) noexcept
    : dev_(std::move(o.dev_)),
      mr_(std::exchange(o.mr_, nullptr)),
      memory_(o.memory_),
      writable_(o.writable_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::move(o.dev_);
    mr_ = std::exchange(o.mr_, nullptr);
    memory_ = o.memory_;
    writable_ = o.writable_;
  }
  return *this;
}

Buffer::~Buffer() { reset(); }

void Buffer::reset() {
  if (mr_) {
    dev_->remove_region(memory_.data());
    ibv_dereg_mr(mr_);
    mr_ = nullptr;
  }
  dev_.reset();
}

std::uint32_t Buffer::lkey() const { return mr_ ? mr_->lkey : 0; }
std::uint32_t Buffer::rkey() const { return mr_ ? mr_->rkey : 0; }

// ---- Twin -------------------------------------------------------------------

Twin::Twin(std::shared_ptr<detail::Device> dev, ibv_dm* dm, std::size_t size,
           std::uint32_t handle)
    : dev_(std::move(dev)), dm_(dm), size_(size), handle_(handle) {}

Twin::Twin(Twin&& o) noexcept
    : dev_(std::move(o.dev_)),
      dm_(std::exchange(o.dm_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      handle_(o.handle_) {}

Twin& Twin::operator=(Twin&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::move(o.dev_);
    dm_ = std::exchange(o.dm_, nullptr);
    size_ = std::exchange(o.size_, 0);
    handle_ = o.handle_;
  }
  return *this;
}

Twin::~Twin() { reset(); }

void Twin::reset() {
  if (dm_) {
    ibv_free_dm(dm_);
    dm_ = nullptr;
  }
  size_ = 0;
  dev_.reset();
}

namespace {

// Whether [offset, offset + len) lies in a twin of `size` bytes, or why not.
Result<void> twin_range(const char* what, ibv_dm* dm, std::size_t size,
                        std::size_t offset, std::size_t len) {
  if (!dm)
    return Error(EINVAL, std::string("twin ") + what +
                             ": no twin memory (a moved-from Twin)");
  if (offset > size || len > size - offset)
    return Error(ERANGE, std::string("twin ") + what + " of " +
                             std::to_string(len) + " bytes at offset " +
                             std::to_string(offset) + ": beyond its " +
                             std::to_string(size) + " bytes");
  return ok();
}

}  // namespace

Result<void> Twin::write(std::size_t offset, std::span<const std::byte> src) {
  if (auto r = twin_range("write", dm_, size_, offset, src.size()); !r)
    return r;
  if (src.empty()) return ok();
  if (const int e = ibv_memcpy_to_dm(dm_, offset, src.data(), src.size()))
    return Error(e, "twin write of " + std::to_string(src.size()) +
                        " bytes at offset " + std::to_string(offset) +
                        ": ibv_memcpy_to_dm");
  return ok();
}

Result<void> Twin::read(std::size_t offset, std::span<std::byte> dst) const {
  if (auto r = twin_range("read", dm_, size_, offset, dst.size()); !r) return r;
  if (dst.empty()) return ok();
  if (const int e = ibv_memcpy_from_dm(dst.data(), dm_, offset, dst.size()))
    return Error(e, "twin read of " + std::to_string(dst.size()) +
                        " bytes at offset " + std::to_string(offset) +
                        ": ibv_memcpy_from_dm");
  return ok();
}

}  // namespace rhinet
