// SPDX-License-Identifier: BSD-2-Clause
// Messages matched by the NIC (Documentation/userlib/design.md, "isend and
// irecv in userlib"): the vocabulary of
// Group::isend / irecv / iprobe. A message carries a 64-bit tag; a
// receive names the source rank it takes messages from (or any_source)
// and a tag with a mask: it takes a message when
// (message tag ^ tag) & mask == 0.
#ifndef RHINET_MESSAGE_HPP
#define RHINET_MESSAGE_HPP

#include <cstddef>
#include <cstdint>

#include "rhinet/result.hpp"
#include "rhinet/types.hpp"
#include "rhinet/xfer.hpp"

namespace rhinet {

// irecv / iprobe: take a message from any rank (and any other sender that
// addresses this endpoint).
inline constexpr std::uint32_t any_source = 0xffffffffu;
// Message::source of a sender that is not in the group's table.
inline constexpr std::uint32_t unknown_rank = 0xfffffffeu;

// Which tags a receive takes: those with (tag ^ this->tag) & mask == 0.
// The default mask takes only `tag` itself; any_tag takes every tag.
struct TagMatch {
  std::uint64_t tag = 0;
  std::uint64_t mask = ~std::uint64_t{0};
  friend bool operator==(const TagMatch&, const TagMatch&) = default;
  bool matches(std::uint64_t t) const { return ((t ^ tag) & mask) == 0; }
};
inline constexpr TagMatch any_tag{0, 0};

// A message that arrived (Request::message() of a receive) or waits
// unexpected at this endpoint (Group::iprobe).
struct Message {
  // The sender's rank, or unknown_rank when its (node, endpoint) is not
  // in the group's table.
  std::uint32_t source = unknown_rank;
  Peer peer{};  // the sender's (node, endpoint)
  std::uint64_t tag = 0;
  // The message's length in bytes: for a receive, the message's (which
  // may exceed what the receive takes: it then fails with EMSGSIZE and
  // holds the message's first bytes). A strided isend's message is its
  // blocks; a bitmap or diff isend's has the span's length, selected
  // bytes or not.
  std::size_t length = 0;
  friend bool operator==(const Message&, const Message&) = default;
};

// The checks isend/irecv make on their options before posting (exposed
// for tests and for callers who validate once): the modes a message takes
// (isend: basic, diff, bitmap, stride; irecv: basic, twin, bitmap,
// stride) and the mode's parameters against `length` (the local span's
// bytes) as check_xfer's, a strided message's remote_stride 0 or the
// block (messages travel packed). EINVAL naming the rule for those, for
// parameters of another mode, a signal, a fence, inline data on an irecv
// or with a partial mode, an op other than isend/irecv; EMSGSIZE for 4
// GiB or more. Does not check what needs the device (registration,
// max_inline, the NIC's bitmap limit, the twin's group).
Result<void> check_message(Op op, const XferOptions& options,
                           std::size_t length);

}  // namespace rhinet

#endif  // RHINET_MESSAGE_HPP
