// SPDX-License-Identifier: BSD-2-Clause
// Group: multicast (sequential and simultaneous) and shared regions.
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

// ---- sequential multicast ---------------------------------------------------

bool Group::multicast() const {
  return dev_->attr.caps & RHINETDV_CAP_MCAST_LIST;
}

Request Group::mcast(std::span<const std::uint32_t> ranks,
                     std::uint32_t area_id, std::uint64_t offset,
                     std::span<const std::byte> src, const XferOptions& o) {
  return post_mcast(Op::mcast, ranks, 0, area_id, offset, src, o);
}

// ---- simultaneous multicast -------------------------------------------------

bool Group::switch_multicast() const {
  return dev_->attr.caps & RHINETDV_CAP_MCAST_SWITCH;
}

Request Group::mcast(SwitchGroup group, std::uint32_t area_id,
                     std::uint64_t offset, std::span<const std::byte> src,
                     const XferOptions& o) {
  return post_mcast(Op::mcast_switch, {}, group.id, area_id, offset, src, o);
}

// Both multicasts: to `ranks` (Op::mcast) or to a switch group; and a
// shared region's update, which the NIC sends along its directory.
Request Group::post_mcast(Op op, std::span<const std::uint32_t> ranks,
                          std::uint16_t switch_group, std::uint32_t area_id,
                          std::uint64_t offset, std::span<const std::byte> src,
                          const XferOptions& o) {
  detail::Device& dev = *dev_;
  const bool list = op == Op::mcast;
  const bool share = op == Op::share_update;
  detail::Device::Slot d;
  d.op = op;
  d.mode = o.mode;
  // Described so: the number of ranks, or the switch group.
  d.rank = list ? static_cast<std::uint32_t>(ranks.size()) : switch_group;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(src.size());
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (list && !multicast())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no sequential multicast "
                "(RHINETDV_CAP_MCAST_LIST)");
  if (op == Op::mcast_switch && !switch_multicast())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no simultaneous multicast "
                "(RHINETDV_CAP_MCAST_SWITCH)");
  if (share && !shared_regions())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no shared regions "
                "(RHINETDV_CAP_SHARE)");
  if (op == Op::mcast_switch && (switch_group < RHINETDV_MCAST_SWITCH_FIRST ||
                                 switch_group > RHINETDV_MCAST_SWITCH_LAST))
    return fail(EINVAL, "switch groups are 0xf000..0xfffe");
  if (list && ranks.empty()) return fail(EINVAL, "no ranks to send to");
  if (ranks.size() > RHINETDV_MCAST_MAX_DESTS)
    return fail(EINVAL, std::to_string(ranks.size()) +
                            " ranks; one mcast takes at most " +
                            std::to_string(RHINETDV_MCAST_MAX_DESTS));
  for (std::uint32_t r : ranks)
    if (r >= size_)
      return fail(EINVAL, "no rank " + std::to_string(r) + " in a group of " +
                              std::to_string(size_));
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  if (auto r = check_xfer(d.op, Target::area, o, src.size()); !r)
    return fail(r.error().errno_value(), r.error().message());
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return fail(EINVAL, "the twin belongs to another group");

  const bool inline_data = o.inline_data || src.empty();
  std::uint32_t lkey = 0;
  if (inline_data) {
    if (src.size() > dev.attr.max_inline)
      return fail(EMSGSIZE, "inline data of " + std::to_string(src.size()) +
                                " bytes; the device takes at most " +
                                std::to_string(dev.attr.max_inline));
  } else {
    const auto* reg = dev.find_region(src.data(), src.size());
    if (!reg)
      return fail(EFAULT,
                  "the local span (" +
                      hex(reinterpret_cast<std::uintptr_t>(src.data())) +
                      ") is not inside one registered Buffer or Area of the "
                      "group (Group::buffer)");
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
  std::shared_ptr<const detail::McastList> dests;
  if (list) {
    auto l = dev.mcast_list(ranks, table_);
    if (!l) return fail(l.error().errno_value(), l.error().message());
    dests = *l;
  }

  rhinetdv_mcast_attr a{};
  a.addr = src.data();
  a.length = static_cast<std::uint32_t>(src.size());
  a.lkey = lkey;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  if (list) {
    a.dests = dests->dests.data();
    a.dests_lkey = dests->mr->lkey;
    a.num_dests = static_cast<std::uint32_t>(ranks.size());
  }
  a.flags = RHINETDV_MCAST_STATUS_WORD | dev.signaled(RHINETDV_MCAST_SIGNALED);
  if (inline_data) a.flags |= RHINETDV_MCAST_INLINE;
  if (o.signal) {
    a.flags |= RHINETDV_MCAST_SIGNAL;
    a.signal = o.signal;
  }
  put_mode(a, o, bitmap_lkey);
  d.keep = dests;  // the NIC reads the list until the status word comes
  const char* call = list    ? "rhinetdv_mcast_list"
                     : share ? "rhinetdv_share_update"
                             : "rhinetdv_mcast_switch";
  const auto post = [&](std::uint32_t slot) {
    dev.use_word(a, slot);
    if (list) return rhinetdv_mcast_list(dev.ep, &a, sizeof(a));
    if (share) {
      rhinetdv_share_update_attr u{};
      u.wr_id = a.wr_id;
      u.addr = a.addr;
      u.length = a.length;
      u.lkey = a.lkey;
      u.group_id = a.group_id;
      u.area_id = a.area_id;
      u.offset = a.offset;
      u.flags = a.flags;
      u.status_lkey = a.status_lkey;
      u.status_word = a.status_word;
      put_mode(u, o, bitmap_lkey);
      return rhinetdv_share_update(dev.ep, &u, sizeof(u));
    }
    rhinetdv_mcast_switch_attr s{};
    s.wr_id = a.wr_id;
    s.addr = a.addr;
    s.length = a.length;
    s.lkey = a.lkey;
    s.group_id = a.group_id;
    s.area_id = a.area_id;
    s.offset = a.offset;
    s.switch_group = switch_group;
    s.flags = a.flags;
    s.status_lkey = a.status_lkey;
    s.signal = a.signal;
    s.status_word = a.status_word;
    s.mode = a.mode;
    s.block = a.block;
    s.count = a.count;
    s.bitmap_lkey = a.bitmap_lkey;
    s.local_stride = a.local_stride;
    s.remote_stride = a.remote_stride;
    s.bitmap = a.bitmap;
    s.twin = a.twin;
    s.twin_offset = a.twin_offset;
    return rhinetdv_mcast_switch(dev.ep, &s, sizeof(s));
  };
  // Only the list multicast takes a trigger (check_xfer).
  return detail::post_triggered(dev, o.trigger, d, fail, call, post);
}

// ---- shared regions ---------------------------------------------------------

bool Group::shared_regions() const {
  return dev_->attr.caps & RHINETDV_CAP_SHARE;
}

// SUBSCRIBE (`area` given) and UNSUBSCRIBE, both to the home rank.
Request Group::post_share(Op op, std::uint32_t home, std::uint32_t area_id,
                          const Area* area, std::uint64_t offset,
                          std::uint64_t length, const XferOptions& o) {
  detail::Device& dev = *dev_;
  const bool subscribe = op == Op::subscribe;
  detail::Device::Slot d;
  d.op = op;
  d.mode = o.mode;
  d.rank = home;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(length);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!shared_regions())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no shared regions "
                "(RHINETDV_CAP_SHARE)");
  if (home >= size_)
    return fail(EINVAL, "no rank " + std::to_string(home) + " in a group of " +
                            std::to_string(size_) + " to be the home");
  if (home == rank_)
    return fail(EINVAL,
                "this rank is the home: its area is the master copy, it does "
                "not subscribe (it updates once a member has joined)");
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  rhinetdv_subscribe_attr a{};
  if (subscribe) {
    if (area->group() != group_)
      return fail(EINVAL, "the area belongs to group " +
                              std::to_string(area->group()) + ", not " +
                              std::to_string(group_));
    const std::size_t size = area->memory().size();
    if (length == 0 || offset > size || length > size - offset)
      return fail(EINVAL, "bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset + length) +
                              ") are not inside the area's " +
                              std::to_string(size));
    if (length > RHINETDV_SHARE_MAX_BYTES)
      return fail(EMSGSIZE, "a region holds at most " +
                                std::to_string(RHINETDV_SHARE_MAX_BYTES) +
                                " bytes");
    if (auto r = check_xfer(op, Target::area, o, length); !r)
      return fail(r.error().errno_value(), r.error().message());
    if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
      return fail(EINVAL, "the twin belongs to another group");
    a.addr = area->memory().data() + offset;
    a.length = static_cast<std::uint32_t>(length);
    a.lkey = area->lkey();
    a.mode = static_cast<std::uint32_t>(o.mode);
    if (o.mode == Mode::twin) {
      a.twin = o.twin.twin->dm();
      a.twin_offset = o.twin.offset;
    }
  }
  a.home_node = static_cast<std::uint16_t>(table_[home].node_id);
  a.home_endpoint = table_[home].endpoint_id;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  a.flags = RHINETDV_SHARE_STATUS_WORD | dev.signaled(RHINETDV_SHARE_SIGNALED);
  const char* call = subscribe ? "rhinetdv_subscribe" : "rhinetdv_unsubscribe";
  return dev.post_in_slot(d, fail, call, [&](std::uint32_t slot) {
    dev.use_word(a, slot);
    if (subscribe) return rhinetdv_subscribe(dev.ep, &a, sizeof(a));
    rhinetdv_unsubscribe_attr u{};
    u.wr_id = a.wr_id;
    u.home_node = a.home_node;
    u.home_endpoint = a.home_endpoint;
    u.group_id = a.group_id;
    u.area_id = a.area_id;
    u.offset = a.offset;
    u.flags = a.flags;
    u.status_lkey = a.status_lkey;
    u.status_word = a.status_word;
    return rhinetdv_unsubscribe(dev.ep, &u, sizeof(u));
  });
}

Request Group::isubscribe(std::uint32_t home, const Area& area,
                          std::uint64_t offset, std::uint64_t length,
                          const XferOptions& o) {
  return post_share(Op::subscribe, home, area.id(), &area, offset, length, o);
}

Result<SharedRegion> Group::subscribe(std::uint32_t home, const Area& area,
                                      std::uint64_t offset,
                                      std::uint64_t length,
                                      const XferOptions& o) {
  if (auto r = isubscribe(home, area, offset, length, o).wait(); !r)
    return r.error();
  return SharedRegion(this, home, area.id(), offset,
                      area.memory().subspan(offset, length));
}

Request Group::iunsubscribe(std::uint32_t home, std::uint32_t area_id) {
  return post_share(Op::unsubscribe, home, area_id, nullptr, 0, 0, {});
}

Result<void> Group::unsubscribe(std::uint32_t home, std::uint32_t area_id) {
  return iunsubscribe(home, area_id).wait();
}

Request Group::update(std::uint32_t area_id, std::uint64_t offset,
                      std::span<const std::byte> src, const XferOptions& o) {
  return post_mcast(Op::share_update, {}, 0, area_id, offset, src, o);
}

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : group_(other.group_),
      home_(other.home_),
      area_id_(other.area_id_),
      offset_(other.offset_),
      bytes_(other.bytes_) {
  other.group_ = nullptr;
}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    if (subscribed()) (void)unsubscribe();
    group_ = other.group_;
    home_ = other.home_;
    area_id_ = other.area_id_;
    offset_ = other.offset_;
    bytes_ = other.bytes_;
    other.group_ = nullptr;
  }
  return *this;
}

SharedRegion::~SharedRegion() {
  if (!subscribed()) return;
  Group* g = group_;
  if (auto r = unsubscribe(); !r && !g->dev_->detached_error)
    g->dev_->detached_error = r.error();
}

Request SharedRegion::update(std::span<const std::byte> part,
                             const XferOptions& o) {
  const auto* begin = bytes_.data();
  if (!subscribed() || part.data() < begin ||
      part.data() + part.size() > begin + bytes_.size())
    return detail::Device::failed(Error(
        EINVAL,
        "SharedRegion::update: " +
            std::string(subscribed() ? "the span is not inside the region's "
                                       "bytes()"
                                     : "not subscribed")));
  return group_->update(area_id_, offset_ + (part.data() - begin), part, o);
}

Result<void> SharedRegion::unsubscribe() {
  if (!subscribed())
    return Error(EINVAL, "SharedRegion::unsubscribe: not subscribed");
  Group* g = group_;
  group_ = nullptr;
  return g->unsubscribe(home_, area_id_);
}

}  // namespace rhinet
