// SPDX-License-Identifier: BSD-2-Clause
// Group: remote atomics, locks and barriers.
#include <cerrno>
#include <climits>
#include <cstring>

#include "device.hpp"
#include "group_detail.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

using detail::errno_error;
using detail::hex;
using detail::put_mode;

// ---- remote atomics ---------------------------------------------------------

Request Group::fetch_add(std::uint32_t rank, std::uint32_t area_id,
                         std::uint64_t offset, std::uint64_t add,
                         const TriggerOn& on) {
  return post_atomic(Op::fetch_add, rank, area_id, offset, add, 0, on);
}

Request Group::compare_swap(std::uint32_t rank, std::uint32_t area_id,
                            std::uint64_t offset, std::uint64_t expected,
                            std::uint64_t desired, const TriggerOn& on) {
  return post_atomic(Op::compare_swap, rank, area_id, offset, expected, desired,
                     on);
}

namespace {

// The names of AtomicOp, for messages.
const char* atomic_name(AtomicOp op, bool fetch) {
  static const char* const kFetching[] = {
      "?",     "fetch_add", "compare_swap", "swap",
      "fetch", "fetch_and", "fetch_or",     "fetch_xor"};
  static const char* const kNot[] = {"?", "add",     "compare_swap", "set",
                                     "?", "bit_and", "bit_or",       "bit_xor"};
  const auto i = static_cast<std::uint32_t>(op);
  return i < 8 ? (fetch ? kFetching[i] : kNot[i]) : "?";
}

// What every atomic checks before it is posted: the device's capability
// `cap` (`what` it gives), the rank among `size`, the area ID, the word's
// alignment. 0, or the errno with *why.
int atomic_refusal(std::uint32_t caps, std::uint32_t cap, const char* what,
                   std::uint32_t size, std::uint32_t rank,
                   std::uint32_t area_id, std::uint64_t offset,
                   std::size_t width, std::string* why) {
  if (!(caps & cap)) {
    *why = std::string("the device (or librhinetdv) has no ") + what;
    return EOPNOTSUPP;
  }
  if (rank >= size)
    *why = "no rank " + std::to_string(rank) + " in a group of " +
           std::to_string(size);
  else if (area_id > 0xffff)
    *why = "area IDs are 0..65535";
  else if (offset & (width - 1))
    *why = "the word must be " + std::to_string(width) + "-byte aligned";
  else
    return 0;
  return EINVAL;
}

// Both atomic calls' target: the word at (area_id, offset) of the rank
// whose table entry is `peer`.
template <typename Attr, typename Peer>
void aim_at_word(Attr& a, const Peer& peer, std::uint32_t group,
                 std::uint32_t area_id, std::uint64_t offset) {
  a.dest_node = static_cast<std::uint16_t>(peer.node_id);
  a.dest_endpoint = peer.endpoint_id;
  a.group_id = group;
  a.area_id = area_id;
  a.offset = offset;
}

}  // namespace

Request Group::post_atomic(Op op, std::uint32_t rank, std::uint32_t area_id,
                           std::uint64_t offset, std::uint64_t compare_add,
                           std::uint64_t swap, const TriggerOn& on) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.rank = rank;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = 8;
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  std::string why;
  if (const int e = atomic_refusal(dev.attr.caps, RHINETDV_CAP_ATOMIC,
                                   "remote atomics (RHINETDV_CAP_ATOMIC)",
                                   size_, rank, area_id, offset, 8, &why))
    return fail(e, why);
  rhinetdv_atomic_attr a{};
  a.op = op == Op::fetch_add ? RHINETDV_ATOMIC_FETCH_ADD
                             : RHINETDV_ATOMIC_CMP_SWAP;
  aim_at_word(a, table_[rank], group_, area_id, offset);
  a.compare_add = compare_add;
  a.swap = swap;
  return detail::post_triggered(dev, on, d, fail, "rhinetdv_atomic",
                                [&](std::uint32_t s) {
                                  a.wr_id = s;
                                  a.result = &dev.results[s];
                                  a.result_lkey = dev.words_mr->lkey;
                                  return rhinetdv_atomic(dev.ep, &a, sizeof(a));
                                });
}

Request Group::atomic(std::uint32_t rank, std::uint32_t area_id,
                      std::uint64_t offset, AtomicOp op, std::size_t width,
                      std::uint64_t operand, std::uint64_t desired, bool fetch,
                      const TriggerOn& on) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = Op::atomic;
  d.rank = rank;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(width);
  const std::string name = atomic_name(op, fetch);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(
        Error(e, name + " (" + std::to_string(width * 8) + "-bit) " +
                     dev.describe(d) + ": " + why));
  };
  const auto code = static_cast<std::uint32_t>(op);
  if (code < 1 || code > 7) return fail(EINVAL, "no such atomic operation");
  if (width != 4 && width != 8)
    return fail(EINVAL, "atomics work on 4- or 8-byte words, not " +
                            std::to_string(width));
  if (op != AtomicOp::compare_swap && desired)
    return fail(EINVAL, "only compare_swap takes a desired value");
  if (op == AtomicOp::fetch && !fetch)
    return fail(EINVAL, "a fetch that does not fetch");
  std::string why;
  if (const int e = atomic_refusal(
          dev.attr.caps, RHINETDV_CAP_ATOMIC_EXT,
          "swap, fetch, and/or/xor, 32-bit or non-fetching atomics "
          "(RHINETDV_CAP_ATOMIC_EXT)",
          size_, rank, area_id, offset, width, &why))
    return fail(e, why);
  rhinetdv_atomic_ext_attr a{};
  a.op = code;
  a.flags = (width == 4 ? RHINETDV_ATOMIC_32 : 0) |
            (fetch ? 0 : RHINETDV_ATOMIC_NO_FETCH);
  aim_at_word(a, table_[rank], group_, area_id, offset);
  a.operand = operand;
  a.swap = desired;
  return detail::post_triggered(
      dev, on, d, fail, "rhinetdv_atomic_ext", [&](std::uint32_t s) {
        // A 4-byte value fills the low half.
        dev.results[s] = 0;
        a.wr_id = s;
        a.result = fetch ? &dev.results[s] : nullptr;
        a.result_lkey = dev.words_mr->lkey;
        return rhinetdv_atomic_ext(dev.ep, &a, sizeof(a));
      });
}

// ---- locks and barriers -----------------------------------------------------

bool Group::locks_and_barriers() const {
  return dev_->attr.caps & RHINETDV_CAP_SYNC;
}

Request Group::post_sync(Op op, std::uint32_t manager, std::uint64_t id,
                         std::uint32_t count, const TriggerOn& on) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.rank = manager;
  d.offset_or_addr = id;
  d.length = count;
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!locks_and_barriers())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no locks and barriers "
                "(RHINETDV_CAP_SYNC)");
  if (manager >= size_)
    return fail(EINVAL, "no rank " + std::to_string(manager) +
                            " in a group of " + std::to_string(size_) +
                            " to manage it");
  if (op == Op::barrier && (count == 0 || count > RHINETDV_BARRIER_MAX_COUNT))
    return fail(EINVAL, "a barrier of " + std::to_string(count) +
                            " ranks; the NIC counts 1.." +
                            std::to_string(RHINETDV_BARRIER_MAX_COUNT));
  rhinetdv_sync_attr a{};
  a.manager_node = static_cast<std::uint16_t>(table_[manager].node_id);
  a.manager_endpoint = table_[manager].endpoint_id;
  a.id = id;
  a.count = op == Op::barrier ? count : 0;
  a.flags = RHINETDV_SYNC_STATUS_WORD | dev.signaled(RHINETDV_SYNC_SIGNALED);
  return detail::post_triggered(
      dev, on, d, fail, std::string("rhinetdv_") + op_name(op),
      [&](std::uint32_t s) {
        dev.use_word(a, s);
        switch (op) {
          case Op::lock:
            return rhinetdv_lock(dev.ep, &a, sizeof(a));
          case Op::unlock:
            return rhinetdv_unlock(dev.ep, &a, sizeof(a));
          default:
            return rhinetdv_barrier(dev.ep, &a, sizeof(a));
        }
      });
}

Request Group::ilock(std::uint64_t lock_id, std::uint32_t manager) {
  return post_sync(Op::lock, manager, lock_id, 0, {});
}

Request Group::iunlock(std::uint64_t lock_id, std::uint32_t manager) {
  return post_sync(Op::unlock, manager, lock_id, 0, {});
}

Request Group::ilock(std::uint64_t lock_id, std::uint32_t manager,
                     const TriggerOn& on) {
  return post_sync(Op::lock, manager, lock_id, 0, on);
}

Request Group::iunlock(std::uint64_t lock_id, std::uint32_t manager,
                       const TriggerOn& on) {
  return post_sync(Op::unlock, manager, lock_id, 0, on);
}

Result<void> Group::lock(std::uint64_t lock_id, std::uint32_t manager) {
  return ilock(lock_id, manager).wait();
}

Result<void> Group::unlock(std::uint64_t lock_id, std::uint32_t manager) {
  return iunlock(lock_id, manager).wait();
}

Result<LockGuard> Group::scoped_lock(std::uint64_t lock_id,
                                     std::uint32_t manager) {
  if (auto r = lock(lock_id, manager); !r) return r.error();
  return LockGuard(this, lock_id, manager);
}

Request Group::ibarrier(const BarrierOptions& options) {
  return post_sync(Op::barrier, options.manager, options.id,
                   options.count ? options.count : size_, {});
}

Result<void> Group::barrier(const BarrierOptions& options,
                            std::chrono::milliseconds timeout) {
  return ibarrier(options).wait(timeout);
}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : group_(other.group_), id_(other.id_), manager_(other.manager_) {
  other.group_ = nullptr;
}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
  if (this != &other) {
    if (owns()) (void)unlock();
    group_ = other.group_;
    id_ = other.id_;
    manager_ = other.manager_;
    other.group_ = nullptr;
  }
  return *this;
}

LockGuard::~LockGuard() {
  if (!owns()) return;
  Group* g = group_;
  if (auto r = unlock(); !r && !g->dev_->detached_error)
    g->dev_->detached_error = r.error();
}

Result<void> LockGuard::unlock() {
  if (!owns())
    return Error(EINVAL, "LockGuard::unlock: the guard holds no lock");
  Group* g = group_;
  group_ = nullptr;
  return g->unlock(id_, manager_);
}

}  // namespace rhinet
