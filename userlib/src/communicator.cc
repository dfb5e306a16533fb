// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Communicator on rhinetdv_collective: the member list the NICs
// read (registered memory, shared with mcast's destination lists), the
// checks that need the registry, and the status-word request.
#include "rhinet/communicator.hpp"

#include <infiniband/rhinetdv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "device.hpp"
#include "group_detail.hpp"
#include "rhinet/group.hpp"

namespace rhinet {

static_assert(static_cast<std::uint32_t>(Reduce::sum) == RHINETDV_COLL_SUM &&
                  static_cast<std::uint32_t>(Reduce::bxor) ==
                      RHINETDV_COLL_BXOR,
              "rhinet::Reduce mirrors RHINETDV_COLL_*");
static_assert(static_cast<std::uint32_t>(Op::collective) ==
                  RHINETDV_OP_COLLECTIVE,
              "rhinet::Op mirrors RHINETDV_OP_*");

namespace {

const char* coll_name(std::uint32_t op) {
  switch (op) {
    case RHINETDV_COLL_ALLREDUCE:
      return "allreduce";
    case RHINETDV_COLL_REDUCE:
      return "reduce";
    case RHINETDV_COLL_BCAST:
      return "bcast";
    default:
      return "barrier";
  }
}

}  // namespace

bool Communicator::collectives(const Group& group) {
  return group.dev_->attr.caps & RHINETDV_CAP_COLLECTIVE;
}

bool Communicator::in_switch(const Group& group) {
  return group.dev_->attr.caps & RHINETDV_CAP_COLL_IN_SWITCH;
}

Result<Communicator> Communicator::create(Group& group,
                                          const CommunicatorOptions& options) {
  std::vector<std::uint32_t> all(group.size());
  for (std::uint32_t r = 0; r < all.size(); r++) all[r] = r;
  return create(group, all, options);
}

Result<Communicator> Communicator::create(Group& group,
                                          std::span<const std::uint32_t> ranks,
                                          const CommunicatorOptions& options) {
  if (!collectives(group))
    return Error(EOPNOTSUPP,
                 "Communicator: the device (or librhinetdv) has no "
                 "collectives (RHINETDV_CAP_COLLECTIVE)");
  if (ranks.empty() || ranks.size() > RHINETDV_COLL_MAX_RANKS)
    return Error(EINVAL, "Communicator: " + std::to_string(ranks.size()) +
                             " ranks; the NICs take 1.." +
                             std::to_string(RHINETDV_COLL_MAX_RANKS));
  if (options.in_switch && !in_switch(group))
    return Error(EOPNOTSUPP,
                 "Communicator: the device (or librhinetdv) cannot have the "
                 "switch reduce (RHINETDV_CAP_COLL_IN_SWITCH)");
  if (options.in_switch && options.radix)
    return Error(EINVAL, "Communicator: in_switch takes radix 0, not " +
                             std::to_string(options.radix));
  if (options.radix > RHINETDV_COLL_MAX_RADIX || options.segment > 4096)
    return Error(EINVAL,
                 "Communicator: radix " + std::to_string(options.radix) +
                     " (0..16), segment " + std::to_string(options.segment) +
                     " bytes (0..4096)");
  std::vector<std::uint32_t> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
      sorted.back() >= group.size())
    return Error(EINVAL, "Communicator: a rank out of range or listed twice");
  const auto me = std::find(ranks.begin(), ranks.end(), group.rank());
  if (me == ranks.end())
    return Error(EINVAL, "Communicator: this rank (" +
                             std::to_string(group.rank()) + ") is not listed");
  auto list = group.dev_->mcast_list(ranks, group.table_);
  if (!list) return list.error();
  return Communicator(
      group, std::vector<std::uint32_t>(ranks.begin(), ranks.end()),
      static_cast<std::uint32_t>(me - ranks.begin()), options, *list);
}

Communicator::Communicator(Group& group, std::vector<std::uint32_t> ranks,
                           std::uint32_t rank,
                           const CommunicatorOptions& options,
                           std::shared_ptr<const detail::McastList> members)
    : group_(&group),
      ranks_(std::move(ranks)),
      rank_(rank),
      size_(static_cast<std::uint32_t>(ranks_.size())),
      options_(options),
      members_(std::move(members)) {}

Request Communicator::ibarrier(const TriggerOn& on) {
  return post(kBarrier, Reduce::sum, 0, nullptr, nullptr, 0, 0, 0, on);
}

Result<void> Communicator::allgather(std::span<const std::byte> send,
                                     const Area& recv, std::uint64_t at,
                                     std::chrono::milliseconds timeout) {
  return push_blocks(send, send.size(), false, recv, at, timeout);
}

Result<void> Communicator::alltoall(std::span<const std::byte> send,
                                    const Area& recv, std::uint64_t at,
                                    std::chrono::milliseconds timeout) {
  if (send.size() % size_)
    return Error(EINVAL, "alltoall: " + std::to_string(send.size()) +
                             " bytes are not " + std::to_string(size_) +
                             " equal blocks");
  return push_blocks(send, send.size() / size_, true, recv, at, timeout);
}

// Member j gets block j of `send` (distinct) or all of it (the same block
// for everyone), at `at` of its area recv.id().
Result<void> Communicator::push_blocks(std::span<const std::byte> send,
                                       std::size_t block, bool distinct,
                                       const Area& recv, std::uint64_t at,
                                       std::chrono::milliseconds timeout) {
  const char* what = distinct ? "alltoall" : "allgather";
  const auto local = recv.memory();
  if (at > local.size() || block > local.size() - at)
    return Error(EINVAL, std::string(what) + ": " + std::to_string(block) +
                             " bytes at offset " + std::to_string(at) +
                             " do not fit in area " +
                             std::to_string(recv.id()) + " of " +
                             std::to_string(local.size()) + " bytes");
  const XferOptions opts{.inline_data = block && block <= group_->max_inline()};
  std::vector<Request> pushes;
  pushes.reserve(size_);
  // Starting at the next member spreads the first PUSHes over the targets.
  for (std::uint32_t i = 1; i < size_ && block; i++) {
    const std::uint32_t j = (rank_ + i) % size_;
    pushes.push_back(group_->push(ranks_[j], recv.id(), at,
                                  send.subspan(distinct ? j * block : 0, block),
                                  opts));
  }
  if (block)
    std::memmove(local.data() + at,
                 send.data() + (distinct ? rank_ * block : 0), block);
  std::optional<Error> first;
  for (auto& r : pushes)
    if (auto done = r.wait(timeout); !done && !first) first = done.error();
  if (first) return *first;
  return barrier(timeout);
}

Request Communicator::post(std::uint32_t op, Reduce reduce, std::uint32_t type,
                           const void* send, void* recv, std::size_t send_bytes,
                           std::size_t recv_bytes, std::uint32_t root,
                           const TriggerOn& on) {
  detail::Device& dev = *group_->dev_;
  detail::Device::Slot d;
  d.op = Op::collective;
  d.rank = root;
  d.area_or_rkey = options_.id;
  d.length = static_cast<std::uint32_t>(send_bytes);
  d.tag = op;
  const std::string what =
      std::string(coll_name(op)) + " of " + std::to_string(send_bytes) +
      " bytes on communicator " + std::to_string(options_.id);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, what + ": " + why));
  };
  const bool fl = type == RHINETDV_COLL_FLOAT || type == RHINETDV_COLL_DOUBLE;
  if (send_bytes != recv_bytes)
    return fail(EINVAL, "the result takes " + std::to_string(recv_bytes) +
                            " bytes, the operand " +
                            std::to_string(send_bytes));
  if (send_bytes > UINT32_MAX) return fail(EINVAL, "more than 4 GiB");
  if ((op == kReduce || op == kBcast) && root >= size_)
    return fail(EINVAL, "no rank " + std::to_string(root) +
                            " in a communicator of " + std::to_string(size_));
  if (fl && static_cast<std::uint32_t>(reduce) > RHINETDV_COLL_MAX)
    return fail(EINVAL, "a bitwise reduce of floating-point elements");
  // What the NIC reads here and what it writes here.
  const bool reads =
      op == kAllreduce || op == kReduce || (op == kBcast && rank_ == root);
  const bool writes = op == kAllreduce || (op == kReduce && rank_ == root) ||
                      (op == kBcast && rank_ != root);
  // Operands outside registered memory go through the slot's bounce
  // memory when small enough.
  std::uint32_t send_lkey = 0, recv_lkey = 0;
  bool bounce_send = false, bounce_recv = false;
  const std::string limit =
      " and more than " + std::to_string(max_unregistered) +
      " bytes (Communicator::max_unregistered): register it (Group::buffer)";
  if (send_bytes && reads) {
    if (const auto* reg = dev.find_region(send, send_bytes))
      send_lkey = reg->lkey;
    else if (send_bytes <= max_unregistered)
      bounce_send = true;
    else
      return fail(EFAULT,
                  "the operand is not inside one registered Buffer or Area "
                  "of the group" +
                      limit);
  }
  if (send_bytes && writes) {
    if (const auto* reg = dev.find_region(recv, recv_bytes)) {
      if (!reg->writable)
        return fail(EACCES, "the result is in a read-only Buffer");
      recv_lkey = reg->lkey;
    } else if (recv_bytes <= max_unregistered) {
      bounce_recv = true;
    } else {
      return fail(EFAULT,
                  "the result is not inside one registered Buffer or Area "
                  "of the group" +
                      limit);
    }
  }
  static_assert(max_unregistered <= detail::Device::kBounce,
                "a slot's bounce memory holds an unregistered operand");
  if (bounce_send || bounce_recv) {
    if (auto r = dev.make_bounce(); !r)
      return fail(r.error().errno_value(), r.error().message());
  }
  rhinetdv_coll_attr a{};
  a.op = op;
  a.reduce = static_cast<std::uint32_t>(reduce);
  a.type = type;
  a.group_id = group_->group_;
  a.comm_id = options_.id;
  a.rank = rank_;
  a.nranks = size_;
  a.root = root;
  a.radix = options_.radix;
  a.seg_size = options_.segment;
  a.length = send_bytes;
  a.send = send;
  a.recv = recv;
  a.send_lkey = send_lkey;
  a.recv_lkey = recv_lkey;
  a.members = members_->dests.data();
  a.members_lkey = members_->mr->lkey;
  a.flags = RHINETDV_COLL_STATUS_WORD | dev.signaled(RHINETDV_COLL_SIGNALED);
  if (options_.in_switch && (op == kAllreduce || op == kBarrier))
    a.flags |= RHINETDV_COLL_IN_SWITCH;
  d.keep = members_;  // the NIC may read the list until the word comes
  return detail::post_triggered(
      dev, on, d, fail, "rhinetdv_collective", [&](std::uint32_t s) {
        dev.use_word(a, s);
        if (bounce_send) {
          std::memcpy(dev.bounce_for(s, false), send, send_bytes);
          a.send = dev.bounce_for(s, false);
          a.send_lkey = dev.bounce_mr->lkey;
        }
        if (bounce_recv) {
          a.recv = dev.bounce_for(s, true);
          a.recv_lkey = dev.bounce_mr->lkey;
          dev.slots[s].copy_out = recv;
          dev.slots[s].copy_len = static_cast<std::uint32_t>(recv_bytes);
        }
        return rhinetdv_collective(dev.ep, &a, sizeof(a));
      });
}

}  // namespace rhinet
