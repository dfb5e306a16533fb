// SPDX-License-Identifier: BSD-2-Clause
// detail::Device (internal): what a Group and everything it made share:
// the ibverbs context, PD and rhinetdv endpoint, the pool of status words,
// and the registry of local memory. Held by shared_ptr, so an Area, Buffer,
// Twin or Request may outlive its Group.
#ifndef RHINET_USERLIB_DEVICE_HPP
#define RHINET_USERLIB_DEVICE_HPP

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rhinet/area.hpp"
#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/xfer.hpp"

namespace rhinet::detail {

// Spins a little, then yields, then naps: status words are host memory the
// NIC writes, so waiting is reading memory.
class Backoff {
 public:
  void pause();

 private:
  unsigned n_ = 0;
};

struct Device : std::enable_shared_from_this<Device> {
  // What one status word is waiting for (for messages).
  struct Slot {
    Request* owner = nullptr;  // null: detached
    bool busy = false;
    Op op = Op::push;
    Target target = Target::area;
    Mode mode = Mode::basic;
    std::uint32_t rank = 0;
    std::uint32_t area_or_rkey = 0;
    std::uint64_t offset_or_addr = 0;
    std::uint32_t length = 0;
  };
  // Registered local memory [start, end).
  struct Region {
    std::uintptr_t end = 0;
    std::uint32_t lkey = 0;
    bool writable = false;
  };

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  rhinetdv_endpoint* ep = nullptr;
  rhinetdv_device_attr attr{};
  std::uint32_t group = 0;

  std::uint64_t* words = nullptr;  // the status-word pool
  ibv_mr* words_mr = nullptr;
  std::vector<Slot> slots;
  std::vector<std::uint32_t> free_slots;
  std::map<std::uintptr_t, Region> regions;
  // First failure of a detached request since the last sync().
  std::optional<Error> detached_error;

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  // Status words.
  Result<void> make_pool(std::uint32_t n);
  std::size_t in_flight() const { return slots.size() - free_slots.size(); }
  // A free slot, completing (reaping) others while none is.
  Result<std::uint32_t> acquire(std::chrono::milliseconds timeout);
  void release(std::uint32_t slot);
  // Reads the slot's status word; when written, hands the outcome to the
  // owner (or keeps a detached failure), frees the slot, returns true.
  bool reap(std::uint32_t slot);
  void reap_all();
  // Takes error completions off the endpoint's CQ (the status words
  // carry the same outcome; this keeps the CQ from filling).
  void drain_cq();
  std::string describe(const Slot& s) const;
  Request request(std::uint32_t slot) {
    return Request(shared_from_this(), static_cast<std::int32_t>(slot));
  }
  static Request failed(Error e) { return Request(std::move(e)); }

  // Registry.
  Result<void> add_region(const void* p, std::size_t len, std::uint32_t lkey,
                          bool writable);
  void remove_region(const void* p);
  const Region* find_region(const void* p, std::size_t len) const;

  // Makers of the RAII objects (their constructors are private).
  Area make_area(ibv_mr* mr, std::uint32_t id, std::span<std::byte> mem);
  Buffer make_buffer(ibv_mr* mr, std::span<std::byte> mem, bool writable);
  Twin make_twin(ibv_dm* dm, std::size_t size, std::uint32_t handle);
  static const Device* owner_of(const Twin& t) { return t.dev_.get(); }
};

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_DEVICE_HPP
