// SPDX-License-Identifier: BSD-2-Clause
// Group: messages (isend, irecv, iprobe matched by the NIC).
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

// ---- messages ---------------------------------------------------------------

bool Group::tag_matching() const { return dev_->tag_matching; }
std::uint32_t Group::max_eager() const { return dev_->tag_caps.max_eager; }
std::uint32_t Group::max_irecv() const {
  return static_cast<std::uint32_t>(dev_->recvs.size());
}
std::size_t Group::pending_irecvs() const { return dev_->recvs_in_flight(); }

namespace {

Error no_tag_matching(const detail::Device& dev, const std::string& what) {
  return Error(EOPNOTSUPP, what + ": " + dev.no_tag_reason);
}

// What a partial isend or irecv needs beyond check_message and
// plan_message: a library that takes modes for messages, and the group's
// own twin.
std::optional<Error> partial_message_refused(const detail::Device& dev,
                                             const XferOptions& o,
                                             const std::string& what) {
  if (o.mode == Mode::basic) return std::nullopt;
  if (!(dev.attr.caps & RHINETDV_CAP_TAG_XFER))
    return Error(EOPNOTSUPP, what +
                                 ": librhinetdv takes no partial-transfer "
                                 "modes for messages "
                                 "(RHINETDV_CAP_TAG_XFER, rhinetdv 1.4)");
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return Error(EINVAL, what + ": the twin belongs to another group");
  return std::nullopt;
}

// Block size, count and stride of a strided message for the NIC: with
// one block the stride says nothing, but the NIC wants it >= block (as
// Group::post does for PUSH and PULL).
std::uint64_t stride_for_nic(const Stride& s) {
  return s.count == 1 && s.local_stride < s.block ? s.block : s.local_stride;
}

// The largest bitmap isend the endpoint takes (0: the library does not
// say).
std::uint32_t max_bitmap_blocks(const detail::Device& dev) {
  return dev.tag_caps.comp_mask & RHINETDV_TAG_CAPS_MASK_XFER
             ? dev.tag_caps.max_bitmap_blocks
             : 0;
}

}  // namespace

Request Group::isend(std::uint32_t rank, std::uint64_t tag,
                     std::span<const std::byte> src,
                     const XferOptions& options) {
  detail::Device& dev = *dev_;
  if (!dev.tag_matching)
    return detail::Device::failed(no_tag_matching(
        dev, detail::describe_message(Op::isend, rank, {tag}, src.size())));
  auto plan = detail::plan_message(Op::isend, rank, {tag}, src, options,
                                   dev.peers, dev.registry, dev.attr.max_inline,
                                   max_bitmap_blocks(dev));
  if (!plan) return detail::Device::failed(std::move(plan).error());
  if (auto e = partial_message_refused(
          dev, options,
          detail::describe_message(Op::isend, rank, {tag}, src.size(),
                                   options.mode)))
    return detail::Device::failed(std::move(*e));

  detail::Device::Slot d;  // for messages
  d.op = Op::isend;
  d.mode = options.mode;
  d.rank = rank;
  d.tag = tag;
  // The message's length: a strided isend sends its blocks, packed.
  d.length = options.mode == Mode::stride
                 ? options.stride.block * options.stride.count
                 : static_cast<std::uint32_t>(src.size());
  rhinetdv_isend_attr a{};
  a.addr = src.data();
  a.length = static_cast<std::uint32_t>(src.size());
  a.lkey = plan->lkey;
  a.dest_node = static_cast<std::uint16_t>(plan->peer.node_id);
  a.dest_endpoint = plan->peer.endpoint_id;
  a.tag = tag;
  a.flags = RHINETDV_ISEND_STATUS_WORD | dev.signaled(RHINETDV_ISEND_SIGNALED);
  if (plan->inline_data) a.flags |= RHINETDV_ISEND_INLINE;
  // The mode as push() maps it; a basic isend leaves the fields alone, so
  // that it works with a librhinetdv of before rhinetdv 1.4.
  if (options.mode != Mode::basic) {
    a.comp_mask = RHINETDV_ISEND_ATTR_MASK_XFER;
    a.mode = static_cast<std::uint32_t>(options.mode);
    switch (options.mode) {
      case Mode::stride:
        a.block = options.stride.block;
        a.count = options.stride.count;
        a.local_stride = stride_for_nic(options.stride);
        break;
      case Mode::bitmap:
        a.block = options.bitmap.granularity;
        a.bitmap = options.bitmap.bits.data();
        a.bitmap_lkey = plan->bitmap_lkey;
        break;
      case Mode::diff:
        a.twin = options.twin.twin->dm();
        a.twin_offset = options.twin.offset;
        break;
      case Mode::basic:
      case Mode::twin:  // refused by check_message
        break;
    }
  }

  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(errno_error(e, dev.describe(d) + ": " + why));
  };
  return detail::post_triggered(dev, options.trigger, d, fail, "rhinetdv_isend",
                                [&](std::uint32_t s) {
                                  dev.use_word(a, s);
                                  return rhinetdv_isend(dev.ep, &a, sizeof(a));
                                });
}

Request Group::irecv(std::uint32_t source, TagMatch match,
                     std::span<std::byte> dst, const XferOptions& options) {
  detail::Device& dev = *dev_;
  const auto failed = [](Error e) {
    return detail::Device::failed(std::move(e), true);
  };
  // What the irecv takes of a message: a strided one its blocks.
  const std::size_t room =
      options.mode == Mode::stride
          ? std::size_t{options.stride.block} * options.stride.count
          : dst.size();
  const auto what = [&] {
    return detail::describe_message(Op::irecv, source, match, room,
                                    options.mode);
  };
  if (!dev.tag_matching) return failed(no_tag_matching(dev, what()));
  auto plan =
      detail::plan_message(Op::irecv, source, match, dst, options, dev.peers,
                           dev.registry, dev.attr.max_inline);
  if (!plan) return failed(std::move(plan).error());
  if (auto e = partial_message_refused(dev, options, what()))
    return failed(std::move(*e));
  detail::Device::InUse in(dev);
  if (!in.ok()) return failed(detail::Device::busy(what()));
  auto r = dev.acquire_recv();
  if (!r)
    return failed(Error(r.error().code(), what() + ": " + r.error().message()));
  detail::Device::RecvSlot& s = dev.recvs[*r];
  s.source = source;
  s.match = match;
  s.length = static_cast<std::uint32_t>(room);
  s.mode = options.mode;

  rhinetdv_irecv_attr a{};
  a.wr_id = detail::recv_wr_id(*r, s.gen);
  // An empty receive writes nothing, but names memory of the PD all the
  // same: the status-word pool.
  a.addr = plan->no_memory ? static_cast<void*>(dev.words) : dst.data();
  a.length = static_cast<std::uint32_t>(dst.size());
  a.lkey = plan->no_memory ? dev.words_mr->lkey : plan->lkey;
  a.tag = match.tag;
  a.tag_mask = match.mask;
  if (plan->any_source) {
    a.flags = RHINETDV_IRECV_ANY_SOURCE;
  } else {
    a.src_node = static_cast<std::uint16_t>(plan->peer.node_id);
    a.src_endpoint = plan->peer.endpoint_id;
  }
  // The mode as pull() maps it (a basic irecv as before rhinetdv 1.4).
  if (options.mode != Mode::basic) {
    a.comp_mask = RHINETDV_IRECV_ATTR_MASK_XFER;
    a.mode = static_cast<std::uint32_t>(options.mode);
    switch (options.mode) {
      case Mode::stride:
        a.block = options.stride.block;
        a.count = options.stride.count;
        a.stride = stride_for_nic(options.stride);
        break;
      case Mode::bitmap:
        a.block = options.bitmap.granularity;
        a.bitmap = options.bitmap.bits.data();
        a.bitmap_lkey = plan->bitmap_lkey;
        break;
      case Mode::twin:
        a.twin = options.twin.twin->dm();
        a.twin_offset = options.twin.offset;
        break;
      case Mode::basic:
      case Mode::diff:  // refused by check_message
        break;
    }
  }
  // ENOMEM with a free slot: the oldest irecv still waits in the
  // endpoint's ring for the NIC; give it a moment.
  std::uint32_t handle = 0;
  const int err = dev.post_retrying_for(std::chrono::seconds(10), [&] {
    return rhinetdv_irecv(dev.ep, &a, sizeof(a), &handle);
  });
  if (err) {
    dev.release_recv(*r);
    return failed(errno_error(
        err, what() + ": rhinetdv_irecv" +
                 (err == ENOMEM ? " (the NIC's irecv queue stays full)" : "")));
  }
  dev.recvs[*r].handle = handle;
  return dev.recv_request(*r);
}

Result<std::optional<Message>> Group::iprobe(std::uint32_t source,
                                             TagMatch match) {
  detail::Device& dev = *dev_;
  const std::string what =
      "iprobe from " + detail::describe_match(source, match);
  if (!dev.tag_matching) return no_tag_matching(dev, what);
  if (auto r = detail::check_source(source, size_); !r)
    return Error(EINVAL, what + ": " + r.error().message());
  rhinetdv_irecv_attr sel{};
  sel.tag = match.tag;
  sel.tag_mask = match.mask;
  if (source == any_source) {
    sel.flags = RHINETDV_IRECV_ANY_SOURCE;
  } else {
    sel.src_node = static_cast<std::uint16_t>(table_[source].node_id);
    sel.src_endpoint = table_[source].endpoint_id;
  }
  rhinetdv_tag_info info{};
  if (int e = dev.post_retrying_for(std::chrono::seconds(10), [&] {
        return rhinetdv_iprobe(dev.ep, &sel, sizeof(sel), &info);
      }))
    return errno_error(e, what + ": rhinetdv_iprobe");
  if (!info.found) return std::optional<Message>{};
  return std::optional<Message>{
      Message{dev.peers.rank_of(info.src_node, info.src_endpoint),
              Peer{info.src_node, info.src_endpoint}, info.tag, info.length}};
}

}  // namespace rhinet
