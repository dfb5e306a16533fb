// SPDX-License-Identifier: BSD-2-Clause
// RAII owners of registered memory: Area (a group-wide communication area:
// the same ID names it at every rank), Buffer (local memory for the local
// side of operations) and Twin (twin memory on the NIC, the reference copy
// a DIFF PUSH compares against; Documentation/userlib/design.md). Each is made
// by a Group, keeps the group's device alive, and undoes its registration when
// destroyed. Do not destroy one while an operation that uses it is in flight
// (wait for the Request or Group::sync() first).
#ifndef RHINET_AREA_HPP
#define RHINET_AREA_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "rhinet/result.hpp"

struct ibv_mr;
struct ibv_dm;

namespace rhinet {

namespace detail {
struct Device;
}

// What peers may do to an Area.
enum class Access : std::uint32_t {
  remote_write = 1,       // PUSH target
  remote_read = 2,        // PULL source
  remote_read_write = 3,  // both
  remote_atomic = 4,      // fetch_add and compare_swap target
  all = 7,                // every remote access
};

// A communication area: this process's memory registered under a group-wide
// area ID. Peers of the group address it as (this rank, area ID, offset);
// other ranks register their own memory under the same ID. The area is
// also registered local memory: spans inside it can be the local side of
// operations.
class Area {
 public:
  Area(Area&&) noexcept;
  Area& operator=(Area&&) noexcept;
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;
  ~Area();

  std::uint32_t id() const { return id_; }
  std::uint32_t group() const { return group_; }
  std::span<std::byte> memory() const { return memory_; }
  // For peers who address it by key (Group::push_to/pull_from) instead.
  std::uint32_t rkey() const;
  std::uint32_t lkey() const;
  ibv_mr* mr() const { return mr_; }

 private:
  friend struct detail::Device;
  Area(std::shared_ptr<detail::Device> dev, ibv_mr* mr, std::uint32_t id,
       std::uint32_t group, std::span<std::byte> memory);
  void reset();
  std::shared_ptr<detail::Device> dev_;
  ibv_mr* mr_ = nullptr;
  std::uint32_t id_ = 0, group_ = 0;
  std::span<std::byte> memory_;
};

// Local memory registered for the local side of PUSH/PULL (ibv_reg_mr).
// A read-only Buffer (Group::readonly_buffer) can be a PUSH source and a
// bitmap, not a PULL destination.
class Buffer {
 public:
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::span<std::byte> memory() const { return memory_; }
  bool writable() const { return writable_; }
  std::uint32_t lkey() const;
  std::uint32_t rkey() const;
  ibv_mr* mr() const { return mr_; }

 private:
  friend struct detail::Device;
  Buffer(std::shared_ptr<detail::Device> dev, ibv_mr* mr,
         std::span<std::byte> memory, bool writable);
  void reset();
  std::shared_ptr<detail::Device> dev_;
  ibv_mr* mr_ = nullptr;
  std::span<std::byte> memory_;
  bool writable_ = false;
};

// Twin memory on the NIC (ibverbs device memory, ibv_alloc_dm): the copy a
// Mode::twin PULL leaves and a Mode::diff PUSH compares against (and then
// updates). Transfers read and write it on the NIC; the process reads and
// writes it with read() and write(); a new one reads as zeros.
class Twin {
 public:
  Twin(Twin&&) noexcept;
  Twin& operator=(Twin&&) noexcept;
  Twin(const Twin&) = delete;
  Twin& operator=(const Twin&) = delete;
  ~Twin();

  std::size_t size() const { return size_; }
  // Copies `src` into the twin from byte `offset` on (ibv_memcpy_to_dm:
  // the NIC copies it, one system call; not for the data path). Do not
  // call it while a transfer using the twin is in flight. Errors: ERANGE
  // (offset + src.size() beyond size()), EINVAL (a moved-from Twin), the
  // driver's errno otherwise (EOPNOTSUPP: a driver that cannot copy,
  // EFAULT, EIO). An empty src does nothing.
  Result<void> write(std::size_t offset, std::span<const std::byte> src);
  // Copies the twin's bytes from `offset` on into `dst`
  // (ibv_memcpy_from_dm); the same errors.
  Result<void> read(std::size_t offset, std::span<std::byte> dst) const;
  // The NIC's handle for it (rhinetdv_twin_handle).
  std::uint32_t handle() const { return handle_; }
  ibv_dm* dm() const { return dm_; }

 private:
  friend struct detail::Device;
  Twin(std::shared_ptr<detail::Device> dev, ibv_dm* dm, std::size_t size,
       std::uint32_t handle);
  void reset();
  std::shared_ptr<detail::Device> dev_;
  ibv_dm* dm_ = nullptr;
  std::size_t size_ = 0;
  std::uint32_t handle_ = 0;
};

}  // namespace rhinet

#endif  // RHINET_AREA_HPP
