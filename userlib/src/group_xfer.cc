// SPDX-License-Identifier: BSD-2-Clause
// Group: PUSH and PULL, remote pin-down.
#include <cerrno>
#include <climits>
#include <cstring>

#include "device.hpp"
#include "group_detail.hpp"
#include "net.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

using detail::errno_error;
using detail::hex;
using detail::put_mode;

// ---- PUSH and PULL ----------------------------------------------------------

Request Group::push(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::span<const std::byte> src,
                    const XferOptions& options) {
  return post(Op::push, Target::area, rank, area_id, 0, offset,
              {const_cast<std::byte*>(src.data()), src.size()}, options);
}

Request Group::pull(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::span<std::byte> dst,
                    const XferOptions& options) {
  return post(Op::pull, Target::area, rank, area_id, 0, offset, dst, options);
}

Request Group::push_to(std::uint32_t rank, std::uint64_t remote_addr,
                       std::uint32_t rkey, std::span<const std::byte> src,
                       const XferOptions& options) {
  return post(Op::push, Target::key, rank, remote_addr, rkey, 0,
              {const_cast<std::byte*>(src.data()), src.size()}, options);
}

Request Group::pull_from(std::uint32_t rank, std::uint64_t remote_addr,
                         std::uint32_t rkey, std::span<std::byte> dst,
                         const XferOptions& options) {
  return post(Op::pull, Target::key, rank, remote_addr, rkey, 0, dst, options);
}

Request Group::post(Op op, Target target, std::uint32_t rank,
                    std::uint64_t remote, std::uint32_t rkey,
                    std::uint64_t offset, std::span<std::byte> local,
                    const XferOptions& o) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;  // for messages
  d.op = op;
  d.target = target;
  d.mode = o.mode;
  d.rank = rank;
  d.area_or_rkey =
      target == Target::area ? static_cast<std::uint32_t>(remote) : rkey;
  d.offset_or_addr = target == Target::area ? offset : remote;
  d.length = static_cast<std::uint32_t>(local.size());
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };

  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  if (target == Target::area && remote > 0xffff)
    return fail(EINVAL, "area IDs are 0..65535");
  if (auto r = check_xfer(op, target, o, local.size()); !r)
    return fail(r.error().errno_value(), r.error().message());
  // check_xfer refused any span that would overflow.
  if (o.mode == Mode::stride && o.stride.count > 1)
    d.remote_span =
        (o.stride.count - 1) * o.stride.remote_stride + o.stride.block;
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return fail(EINVAL, "the twin belongs to another group");

  // Local memory: a registered region, unless inline (or empty: a push of
  // nothing, e.g. only a signal, goes inline).
  const bool inline_data = op == Op::push && (o.inline_data || local.empty());
  std::uint32_t lkey = 0;
  if (inline_data) {
    if (local.size() > dev.attr.max_inline)
      return fail(EMSGSIZE, "inline data of " + std::to_string(local.size()) +
                                " bytes; the device takes at most " +
                                std::to_string(dev.attr.max_inline));
  } else {
    if (local.empty()) return fail(EINVAL, "empty span");
    const auto* reg = dev.find_region(local.data(), local.size());
    if (!reg)
      return fail(EFAULT,
                  "the local span (" +
                      hex(reinterpret_cast<std::uintptr_t>(local.data())) +
                      ") is not inside one registered Buffer or Area of the "
                      "group (Group::buffer)");
    if (op == Op::pull && !reg->writable)
      return fail(EACCES, "the local span is in a read-only Buffer");
    lkey = reg->lkey;
  }
  std::uint32_t bitmap_lkey = 0;
  if (o.mode == Mode::bitmap) {
    const auto* reg =
        dev.find_region(o.bitmap.bits.data(), o.bitmap.bits.size());
    if (!reg)
      return fail(EFAULT,
                  "the bitmap is not inside one registered Buffer or Area of "
                  "the group (the NIC reads it)");
    bitmap_lkey = reg->lkey;
  }

  rhinetdv_xfer_ex x{};
  x.base.local_addr = local.data();
  x.base.length = static_cast<std::uint32_t>(local.size());
  x.base.lkey = lkey;
  x.base.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  x.base.dest_endpoint = table_[rank].endpoint_id;
  x.base.flags =
      RHINETDV_XFER_STATUS_WORD | dev.signaled(RHINETDV_XFER_SIGNALED);
  if (inline_data) x.base.flags |= RHINETDV_XFER_INLINE;
  if (o.fence) x.base.flags |= RHINETDV_XFER_FENCE;
  if (target == Target::area) {
    x.base.area_id = static_cast<std::uint32_t>(remote);
    x.base.offset = offset;
    x.group_id = group_;
  } else {
    x.base.flags |= RHINETDV_XFER_EX_BY_KEY;
    x.remote_addr = remote;
    x.rkey = rkey;
  }
  if (o.signal) {
    x.base.flags |= RHINETDV_XFER_EX_SIGNAL;
    x.signal = o.signal;
  }
  put_mode(x, o, bitmap_lkey);
  // The endpoint's queue may be full: earlier operations finish first.
  return detail::post_triggered(
      dev, o.trigger, d, fail,
      op == Op::push ? "rhinetdv_push_ex" : "rhinetdv_pull_ex",
      [&](std::uint32_t s) {
        dev.use_word(x.base, s);
        return op == Op::push ? rhinetdv_push_ex(dev.ep, &x, sizeof(x))
                              : rhinetdv_pull_ex(dev.ep, &x, sizeof(x));
      });
}

// ---- remote pin-down -------------------------------------------------------

Request Group::pd_req(std::uint32_t rank, std::uint32_t area_id,
                      std::uint64_t offset, std::uint64_t length) {
  return post_pin(Op::pd_req, rank, area_id, offset, length);
}

Request Group::pd_release(std::uint32_t rank, std::uint32_t area_id,
                          std::uint64_t offset, std::uint64_t length) {
  return post_pin(Op::pd_release, rank, area_id, offset, length);
}

Request Group::post_pin(Op op, std::uint32_t rank, std::uint32_t area_id,
                        std::uint64_t offset, std::uint64_t length) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.target = Target::area;
  d.rank = rank;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(length);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!pin_on_demand())
    return fail(EOPNOTSUPP, "the device (or rhinet.ko) does not pin on demand");
  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  if (length == 0 || length > UINT32_MAX)
    return fail(EINVAL, "a range of 1 byte .. 4 GiB - 1");

  rhinetdv_pin_attr a{};
  a.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  a.dest_endpoint = table_[rank].endpoint_id;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  a.length = static_cast<std::uint32_t>(length);
  a.flags = RHINETDV_PIN_STATUS_WORD | dev.signaled(RHINETDV_PIN_SIGNALED);
  return dev.post_in_slot(
      d, fail, op == Op::pd_req ? "rhinetdv_pd_req" : "rhinetdv_pd_release",
      [&](std::uint32_t s) {
        dev.use_word(a, s);
        return op == Op::pd_req ? rhinetdv_pd_req(dev.ep, &a, sizeof(a))
                                : rhinetdv_pd_release(dev.ep, &a, sizeof(a));
      });
}

void Group::set_spin(std::chrono::microseconds spin) { dev_->spin = spin; }

std::chrono::microseconds Group::spin() const { return dev_->spin; }

WaitStats Group::wait_stats() const { return dev_->stats; }

Result<void> Group::sync(std::chrono::milliseconds timeout) {
  detail::Device& dev = *dev_;
  detail::Device::InUse in(dev);
  if (!in.ok()) return detail::Device::busy("sync");
  const char* failed = "";
  const int waited = dev.wait(
      [&] {
        dev.reap_all();
        return !dev.in_flight();
      },
      net::deadline_after(timeout), &failed);
  if (waited == ETIMEDOUT)
    return Error(ETIMEDOUT, "sync: " + std::to_string(dev.in_flight()) +
                                " operations still in flight after " +
                                net::format_duration(timeout));
  if (waited) return Error(waited, std::string("sync: ") + failed + " failed");
  dev.poll_cq();
  if (dev.detached_error) {
    Error e = std::move(*dev.detached_error);
    dev.detached_error.reset();
    return e;
  }
  return ok();
}

}  // namespace rhinet
