// SPDX-License-Identifier: BSD-2-Clause
// isend / irecv / iprobe without the device: options, ranks, memory,
// completions (message_detail.hpp).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>

#include "message_detail.hpp"
#include "xfer_detail.hpp"

namespace rhinet {

namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<void> check_message(Op op, const XferOptions& o, std::size_t length) {
  const std::string op_s = op_name(op);
  if (op != Op::isend && op != Op::irecv)
    return Error(EINVAL, op_s +
                             " is not an isend or irecv (check_xfer checks "
                             "PUSH and PULL)");
  const auto mode_v = static_cast<std::uint32_t>(o.mode);
  if (mode_v > static_cast<std::uint32_t>(Mode::stride))
    return Error(EINVAL, op_s + ": unknown mode " + std::to_string(mode_v));
  if (!detail::mode_allowed(op, o.mode))
    return Error(EINVAL, op_s + " does not take mode " + mode_name(o.mode) +
                             " (isend takes basic, diff, "
                             "bitmap, stride; irecv takes basic, twin, "
                             "bitmap, stride)");
  if (auto r = detail::check_stray_parameters(op, o, length); !r) return r;
  if (o.signal)
    return Error(EINVAL, op_s +
                             ": a signal goes only with a push by area ID "
                             "(a message's arrival is its own notice)");
  if (o.fence)
    return Error(EINVAL, op_s + ": fence orders PULLs; isend/irecv take none");
  if (op == Op::irecv && (o.trigger.counter || o.trigger.chain))
    return Error(EINVAL, op_s +
                             ": an irecv takes no trigger (it waits for its "
                             "message; trigger the isend)");
  if (o.inline_data && (op != Op::isend || o.mode != Mode::basic))
    return Error(EINVAL, op_s +
                             ": inline data goes only with a basic isend (or "
                             "a basic push)");
  // The span is one SGE (a strided message's blocks lie inside it).
  if (length > std::numeric_limits<std::uint32_t>::max())
    return Error(EMSGSIZE, op_s + ": " + std::to_string(length) +
                               " bytes; one message is less than 4 GiB");
  return detail::check_mode_parameters(op, o, length);
}

namespace detail {

namespace {

std::uint64_t key_of(std::uint32_t node, std::uint32_t endpoint) {
  return std::uint64_t{node} << 32 | endpoint;
}

}  // namespace

PeerIndex::PeerIndex(std::span<const Peer> table)
    : table_(table.begin(), table.end()) {
  by_peer_.reserve(table_.size());
  for (std::uint32_t r = 0; r < table_.size(); r++)
    by_peer_.emplace_back(key_of(table_[r].node_id, table_[r].endpoint_id), r);
  // By key, then rank: the first of equal keys is the lowest rank.
  std::sort(by_peer_.begin(), by_peer_.end());
}

std::uint32_t PeerIndex::rank_of(std::uint32_t node,
                                 std::uint32_t endpoint) const {
  const std::uint64_t k = key_of(node, endpoint);
  auto it =
      std::lower_bound(by_peer_.begin(), by_peer_.end(), k,
                       [](const std::pair<std::uint64_t, std::uint32_t>& e,
                          std::uint64_t key) { return e.first < key; });
  if (it == by_peer_.end() || it->first != k) return unknown_rank;
  return it->second;
}

std::string describe_match(std::uint32_t source, TagMatch match) {
  std::string d = source == any_source ? std::string("any source")
                                       : "rank " + std::to_string(source);
  d += ", tag " + hex(match.tag);
  if (match.mask != ~std::uint64_t{0}) d += " mask " + hex(match.mask);
  return d;
}

std::string describe_message(Op op, std::uint32_t rank, TagMatch match,
                             std::size_t length, Mode mode) {
  const std::string m = mode == Mode::basic
                            ? std::string()
                            : std::string(", mode ") + mode_name(mode);
  if (op == Op::isend)
    return "isend to " + describe_match(rank, {match.tag}) + ", " +
           std::to_string(length) + " bytes" + m;
  return std::string(op_name(op)) + " from " + describe_match(rank, match) +
         ", " + std::to_string(length) + "-byte buffer" + m;
}

Result<void> check_source(std::uint32_t source, std::uint32_t size) {
  if (source == any_source || source < size) return ok();
  return Error(EINVAL, "no rank " + std::to_string(source) + " in a group of " +
                           std::to_string(size) +
                           " (rhinet::any_source takes any)");
}

Result<MessagePlan> plan_message(Op op, std::uint32_t rank, TagMatch match,
                                 std::span<const std::byte> local,
                                 const XferOptions& o, const PeerIndex& peers,
                                 const Registry& registry,
                                 std::uint32_t max_inline,
                                 std::uint32_t max_bitmap_blocks) {
  const auto fail = [&](int e, const std::string& why) {
    return Error(e, describe_message(op, rank, match, local.size(), o.mode) +
                        ": " + why);
  };
  if (op != Op::isend && op != Op::irecv)
    return fail(EINVAL, "not an isend or irecv");
  MessagePlan p;
  if (op == Op::isend && rank == any_source)
    return fail(EINVAL,
                "an isend goes to one rank (any_source is for receives)");
  if (op == Op::isend && rank >= peers.size())
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(peers.size()));
  if (auto r = check_source(rank, peers.size()); !r)
    return fail(EINVAL, r.error().message());
  if (rank == any_source)
    p.any_source = true;
  else
    p.peer = peers.peer(rank);
  if (p.peer.node_id > 0xffff)
    return fail(ERANGE, "the rank's node ID is beyond 16 bits");
  if (auto r = check_message(op, o, local.size()); !r)
    return fail(r.error().errno_value(), r.error().message());
  if (op == Op::isend && o.mode == Mode::bitmap && max_bitmap_blocks) {
    // The sending NIC holds the bitmap while it streams the message.
    const std::uint64_t blocks =
        (local.size() + o.bitmap.granularity - 1) / o.bitmap.granularity;
    if (blocks > max_bitmap_blocks)
      return fail(EINVAL, "a bitmap isend selects from at most " +
                              std::to_string(max_bitmap_blocks) + " blocks; " +
                              std::to_string(local.size()) +
                              " bytes in blocks of " +
                              std::to_string(o.bitmap.granularity) + " are " +
                              std::to_string(blocks) +
                              " (a coarser granularity, or several isends)");
  }

  if (op == Op::isend && (o.inline_data || local.empty())) {
    if (local.size() > max_inline)
      return fail(EMSGSIZE, "inline data of " + std::to_string(local.size()) +
                                " bytes; the device takes at most " +
                                std::to_string(max_inline));
    p.inline_data = true;
    return p;
  }
  if (op == Op::irecv && local.empty()) {
    p.no_memory = true;
    return p;
  }
  const auto* reg = registry.find(local.data(), local.size());
  if (!reg)
    return fail(
        EFAULT,
        "the local span (" +
            hex(reinterpret_cast<std::uintptr_t>(local.data())) +
            ") is not inside one registered Buffer or Area of the "
            "group (Group::buffer" +
            (op == Op::isend ? std::string("; or XferOptions::inline_data "
                                           "for at most ") +
                                   std::to_string(max_inline) + " bytes)"
                             : std::string(")")));
  if (op == Op::irecv && !reg->writable)
    return fail(EACCES, "the receive buffer is in a read-only Buffer");
  p.lkey = reg->lkey;
  if (o.mode == Mode::bitmap) {
    const auto* bits =
        registry.find(o.bitmap.bits.data(), o.bitmap.bits.size());
    if (!bits)
      return fail(EFAULT,
                  "the bitmap is not inside one registered Buffer or Area of "
                  "the group (the NIC reads it)");
    p.bitmap_lkey = bits->lkey;
  }
  return p;
}

MessageOutcome message_outcome(Op op, std::uint32_t status,
                               std::uint32_t syndrome, std::string status_name,
                               std::uint32_t length, std::uint32_t buffer,
                               bool cancel_requested, const std::string& what) {
  MessageOutcome out;
  const bool recv = op == Op::irecv;
  const auto error = [&](int e, const std::string& why) {
    return Error::completion(status, std::move(status_name), syndrome,
                             why.empty() ? what : what + ": " + why, e);
  };
  if (status == wc_success) {
    out.matched = recv;
    out.bytes = recv ? std::min(length, buffer) : length;
    return out;
  }
  if (recv && status == wc_loc_len_err) {
    out.matched = true;
    out.bytes = std::min(length, buffer);
    out.error =
        error(EMSGSIZE, "truncated: the message has " + std::to_string(length) +
                            " bytes, the buffer " + std::to_string(buffer));
    return out;
  }
  if (recv && status == wc_wr_flush_err) {
    out.cancelled = cancel_requested;
    out.error =
        error(ECANCELED, cancel_requested ? "cancelled"
                                          : "flushed (the endpoint went to the "
                                            "error state)");
    return out;
  }
  if (status == wc_rem_op_err) {
    // The receive's completion does not carry the message's tag then.
    out.error =
        error(ECONNABORTED, recv ? "the sender gave the message up"
                                 : "the receiver gave the message up (its "
                                   "endpoint went away, or it cancelled the "
                                   "irecv during the transfer)");
    return out;
  }
  out.error = error(syndrome_errno(syndrome), "");
  return out;
}

std::optional<RecvId> decode_recv_wr_id(std::uint64_t wr_id) {
  if (!(wr_id & recv_wr_bit)) return std::nullopt;
  return RecvId{static_cast<std::uint32_t>(wr_id & 0xffffffffu),
                static_cast<std::uint32_t>(wr_id >> 32) & recv_gen_mask};
}

}  // namespace detail

}  // namespace rhinet
