// SPDX-License-Identifier: BSD-2-Clause
// The logic of isend / irecv / iprobe that needs no device (internal):
// rank <-> (node, endpoint), the checks and choices made before posting,
// the meaning of a completion's status, the wr_id of receives. Group and
// Device use it; the unit tests test it without a NIC.
#ifndef RHINET_USERLIB_MESSAGE_DETAIL_HPP
#define RHINET_USERLIB_MESSAGE_DETAIL_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "registry.hpp"
#include "rhinet/message.hpp"
#include "rhinet/result.hpp"
#include "rhinet/types.hpp"
#include "rhinet/xfer.hpp"

namespace rhinet::detail {

// The ibv_wc_status values a message completion is read by (this file
// does not include <infiniband/verbs.h>; device.cc checks them).
inline constexpr std::uint32_t wc_success = 0;
inline constexpr std::uint32_t wc_loc_len_err = 1;
inline constexpr std::uint32_t wc_wr_flush_err = 5;
inline constexpr std::uint32_t wc_rem_op_err = 11;

// The group's table both ways: rank -> (node, endpoint) by index, and
// (node, endpoint) -> rank by binary search (the bootstrap refuses two
// ranks at one (node, endpoint); were there two, the lower rank wins).
class PeerIndex {
 public:
  PeerIndex() = default;
  explicit PeerIndex(std::span<const Peer> table);
  std::uint32_t size() const {
    return static_cast<std::uint32_t>(table_.size());
  }
  // rank < size().
  Peer peer(std::uint32_t rank) const { return table_[rank]; }
  // The rank at (node, endpoint), or unknown_rank.
  std::uint32_t rank_of(std::uint32_t node, std::uint32_t endpoint) const;

 private:
  std::vector<Peer> table_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_peer_;  // sorted
};

// "rank 3" / "any source", then ", tag 0x7" and " mask 0xff" unless the
// mask is all ones.
std::string describe_match(std::uint32_t source, TagMatch match);
// "isend to rank 3, tag 0x7, 64 bytes";
// "irecv from any source, tag 0x7 mask 0xff, 64-byte buffer"; then
// ", mode stride" unless the mode is basic.
std::string describe_message(Op op, std::uint32_t rank, TagMatch match,
                             std::size_t length, Mode mode = Mode::basic);

// any_source or a rank below `size`: EINVAL otherwise (the message says
// which, without a prefix).
Result<void> check_source(std::uint32_t source, std::uint32_t size);

// What an isend or irecv posts, decided before the device is asked.
struct MessagePlan {
  bool any_source = false;        // irecv from any_source
  Peer peer{};                    // the destination, or the source
  std::uint32_t lkey = 0;         // of the span's Buffer or Area
  std::uint32_t bitmap_lkey = 0;  // Mode::bitmap: of the bitmap's
  bool inline_data = false;       // isend: the bytes go into the work request
  bool no_memory = false;         // irecv of an empty span: nothing is written
};

// The checks isend / irecv make (each Error's message starts with
// describe_message): the rank (EINVAL: out of the group; any_source only
// for an irecv), check_message's (EINVAL, EMSGSIZE), a bitmap isend of
// more than max_bitmap_blocks blocks (EINVAL; 0: no limit known), and the
// local memory: an isend's span inline (XferOptions::inline_data, or
// empty) of at most max_inline bytes (EMSGSIZE) or inside one registered
// region; an irecv's inside one writable region (EFAULT: not registered;
// EACCES: read-only), an empty one needs none; a bitmap inside one
// registered region (EFAULT). Does not check that a twin is the group's.
Result<MessagePlan> plan_message(Op op, std::uint32_t rank, TagMatch match,
                                 std::span<const std::byte> local,
                                 const XferOptions& options,
                                 const PeerIndex& peers,
                                 const Registry& registry,
                                 std::uint32_t max_inline,
                                 std::uint32_t max_bitmap_blocks = 0);

// How an isend or irecv ended, from its completion.
struct MessageOutcome {
  std::optional<Error> error;
  // The irecv was cancelled (its cancel was asked and it was flushed).
  bool cancelled = false;
  // An irecv took a message and its completion says which: source, tag
  // and length (on success and on truncation).
  bool matched = false;
  // Bytes moved (isend) or placed in the buffer (irecv; a truncated
  // message fills the buffer).
  std::uint32_t bytes = 0;
};

// status: ibv_wc_status (status_name its text); length: the completion's
// byte count (an irecv's: the message's length); buffer: the irecv's
// buffer bytes; cancel_requested: Request::cancel() asked the NIC; what:
// describe_message. Success: no error. Errors, for an irecv:
// IBV_WC_LOC_LEN_ERR -> EMSGSIZE (truncated: the message was longer than
// the buffer); IBV_WC_WR_FLUSH_ERR -> ECANCELED ("cancelled" when its
// cancel was asked, else the endpoint was flushed); for both:
// IBV_WC_REM_OP_ERR -> ECONNABORTED (the peer gave the message up);
// anything else as for PUSH/PULL (errno from the syndrome). Every error
// is an Error::completion with the status and syndrome.
MessageOutcome message_outcome(Op op, std::uint32_t status,
                               std::uint32_t syndrome, std::string status_name,
                               std::uint32_t length, std::uint32_t buffer,
                               bool cancel_requested, const std::string& what);

// The wr_id of a receive: bit 63 set (push, pull and isend use their
// status word's index), the receive's index and a generation that
// changes each time the index is reused (a late completion of an earlier
// use does not complete the new receive).
inline constexpr std::uint64_t recv_wr_bit = std::uint64_t{1} << 63;
inline constexpr std::uint32_t recv_gen_mask = 0x7fffffffu;
constexpr std::uint64_t recv_wr_id(std::uint32_t index, std::uint32_t gen) {
  return recv_wr_bit | std::uint64_t{gen & recv_gen_mask} << 32 | index;
}
struct RecvId {
  std::uint32_t index = 0;
  std::uint32_t gen = 0;
};
// nullopt for a wr_id without bit 63.
std::optional<RecvId> decode_recv_wr_id(std::uint64_t wr_id);

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_MESSAGE_DETAIL_HPP
