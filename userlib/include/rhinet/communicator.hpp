// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Communicator: collectives executed by the NICs
// (Documentation/firmware/collectives.md):
// allreduce, reduce, broadcast and barrier over ranks of a Group.
//
// The NICs do the work: each reads its ranks' operands from their buffers
// and writes their results into them by DMA, segment by segment, combining
// several ranks of one node in that node's NIC and the nodes along a tree
// (or, for large data, a chain whose root turns with every segment, the
// traffic of a ring). Between posting and completion the host CPU does
// nothing: a nonblocking collective overlaps with any computation.
//
//   auto comm = rhinet::Communicator::create(*group);
//   std::vector<double> x(n), sum(n);           // inside Group::buffer()s
//   comm->allreduce<double>(x, sum, rhinet::Reduce::sum);
//
// Every rank of the communicator calls the same collectives in the same
// order, with the same element type, count, reduce op and root; the NIC
// numbers each rank's calls, so the k-th call of every rank is the same
// collective. Ranks that disagree get EPROTO (Syndrome::coll_mismatch)
// everywhere; a member whose node dies or whose process exits makes the
// collective fail with ECONNRESET (Syndrome::member_lost) at every rank,
// never hang.
//
// Buffers (send, recv, a broadcast's data) of up to max_unregistered bytes
// may be any memory: the library copies them through registered memory of
// its own (one copy each way). Larger ones lie inside one registered
// Buffer or Area of the group each. Either way they stay untouched until
// the Request is done (an unregistered result is copied in when the
// Request completes: test(), wait()).
// A Communicator is used by one thread at a time, like its Group, and must
// not outlive it.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/trigger.hpp"
#include "rhinet/types.hpp"

namespace rhinet {

class Area;
class Group;

namespace detail {
struct McastList;
}

// How the elements of the ranks' operands combine (values of
// RHINETDV_COLL_*). The bitwise ones take integer types only.
enum class Reduce : std::uint32_t {
  sum = 0,
  min = 1,
  max = 2,
  band = 3,
  bor = 4,
  bxor = 5
};

// The element types the NICs combine.
template <typename T>
concept CollectiveElement =
    std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t> ||
    std::same_as<T, float> || std::same_as<T, double>;

struct CommunicatorOptions {
  // Names the communicator within the group (with the group's ID); every
  // rank passes the same. Two communicators of one group need two IDs.
  std::uint16_t id = 1;
  // The tree across nodes: 0, the NIC chooses by size; 1, a chain (the
  // ring's traffic, for bandwidth); k (2..16), a tree of fan-out k.
  std::uint32_t radix = 0;
  // Bytes per segment: 0, the NIC's (4096); else a multiple of the
  // element size up to 4096. Smaller segments pipeline sooner.
  std::uint32_t segment = 0;
  // The fabric switch combines the nodes' partials of allreduces and
  // barriers (each NIC still combines its own ranks first): one hop up and
  // one down, each link carrying the data once each way. Needs radix 0 and
  // a device with in_switch(); reduce and bcast still use the NICs' tree.
  // A switch that does not reduce fails them with EHOSTUNREACH
  // (Syndrome::coll_no_switch). Every rank passes the same.
  bool in_switch = false;
};

class Communicator {
 public:
  // Every rank of `group`, in rank order. Errors: EOPNOTSUPP (the device
  // or librhinetdv has no collectives: collectives()), EINVAL (options out
  // of range, more than 256 ranks), errno of ibv_reg_mr (the member list
  // the NICs read is registered memory the Communicator holds).
  static Result<Communicator> create(Group& group,
                                     const CommunicatorOptions& options = {});
  // The group's ranks in `ranks` (distinct, this rank among them), in that
  // order: rank i of the communicator is group rank ranks[i]. Errors as
  // above, and EINVAL for a rank out of range, twice, or without this one.
  static Result<Communicator> create(Group& group,
                                     std::span<const std::uint32_t> ranks,
                                     const CommunicatorOptions& options = {});
  // Whether the device executes collectives (RHINETDV_CAP_COLLECTIVE).
  static bool collectives(const Group& group);
  // Whether its NIC can have the switch reduce (RHINETDV_CAP_COLL_IN_SWITCH).
  static bool in_switch(const Group& group);

  // Operands and results of at most this many bytes need no registration.
  static constexpr std::size_t max_unregistered = 1024;

  std::uint32_t rank() const { return rank_; }
  std::uint32_t size() const { return size_; }
  // This communicator's rank r is the group's rank group_rank(r).
  std::uint32_t group_rank(std::uint32_t r) const { return ranks_.at(r); }

  // ---- nonblocking: the Request is in flight or already failed ----------
  //
  // Errors before posting: EINVAL (spans of different sizes, more than
  // 4 GiB, a root out of range, a bitwise reduce of a floating type),
  // EFAULT (a span of more than max_unregistered bytes not inside one
  // registered Buffer or Area of the group),
  // EACCES (a result into a read-only Buffer), errno of
  // rhinetdv_collective. At completion: ECONNRESET (a member lost), EPROTO
  // (the ranks disagree), ENOSPC (the NIC holds no more communicators for
  // this process), and the NIC's others.
  //
  // `on` (last, default none) makes the collective triggered and/or
  // chained, as XferOptions::trigger does a PUSH: this rank's part waits
  // in the NIC until on.counter reaches on.threshold (the other ranks wait
  // for it as for a late rank), and with on.chain its successful completion
  // adds 1 to that counter. A counter destroyed first fails it with
  // ECANCELED (Syndrome::trigger_gone); that part never joined, so this
  // rank's next collective is the communicator's next one for it.

  // recv[i] = send[i] combined over every rank; recv may be send.
  template <CollectiveElement T>
  Request iallreduce(std::span<const T> send, std::span<T> recv, Reduce op,
                     const TriggerOn& on = {}) {
    return post(kAllreduce, op, type_of<T>(), send.data(), recv.data(),
                send.size_bytes(), recv.size_bytes(), 0, on);
  }
  // As allreduce, the result only at `root` (recv is not touched at the
  // others; they may pass an empty one).
  template <CollectiveElement T>
  Request ireduce(std::span<const T> send, std::span<T> recv, Reduce op,
                  std::uint32_t root, const TriggerOn& on = {}) {
    return post(
        kReduce, op, type_of<T>(), send.data(), recv.data(), send.size_bytes(),
        rank_ == root ? recv.size_bytes() : send.size_bytes(), root, on);
  }
  // root's data into every other rank's data.
  template <CollectiveElement T>
  Request ibcast(std::span<T> data, std::uint32_t root,
                 const TriggerOn& on = {}) {
    return post(kBcast, Reduce::sum, type_of<T>(), data.data(), data.data(),
                data.size_bytes(), data.size_bytes(), root, on);
  }
  // Completes once every rank has entered it.
  Request ibarrier(const TriggerOn& on = {});

  // ---- blocking: the nonblocking call, then Request::wait(timeout) -------
  // ETIMEDOUT leaves the collective in flight (the buffers stay in use).

  template <CollectiveElement T>
  Result<void> allreduce(std::span<const T> send, std::span<T> recv, Reduce op,
                         std::chrono::milliseconds timeout = forever) {
    return iallreduce<T>(send, recv, op).wait(timeout);
  }
  template <CollectiveElement T>
  Result<void> reduce(std::span<const T> send, std::span<T> recv, Reduce op,
                      std::uint32_t root,
                      std::chrono::milliseconds timeout = forever) {
    return ireduce<T>(send, recv, op, root).wait(timeout);
  }
  template <CollectiveElement T>
  Result<void> bcast(std::span<T> data, std::uint32_t root,
                     std::chrono::milliseconds timeout = forever) {
    return ibcast<T>(data, root).wait(timeout);
  }
  Result<void> barrier(std::chrono::milliseconds timeout = forever) {
    return ibarrier().wait(timeout);
  }

  // ---- gathers: PUSHes into the members' areas, then the barrier ---------
  //
  // The NICs' collective engine combines and broadcasts but does not
  // concatenate, so these are built from PUSHes: this rank PUSHes its
  // blocks into the area `recv.id()` of the other members (each registered
  // its own under that ID, with remote write), waits for them (a PUSH
  // completes once its data has landed), copies its own block locally and
  // meets the others in barrier(). On return every member's blocks are in
  // place at every member. A block of up to Group::max_inline() bytes
  // travels inline, from any memory; a larger one lies in a registered
  // Buffer or Area. Blocking only. Errors: EINVAL (this rank's block does
  // not fit in `recv` at `at`; alltoall: `send` is not size() equal
  // blocks), a PUSH's errors (the NIC's ERANGE for a block past a member's
  // area, ...), barrier()'s.
  //
  // This rank's `send` at offset `at` of every member's area, this one's
  // included. Each member passes its own `at`: rank() * send.size() for
  // equal blocks in rank order, the sum of the lower ranks' sizes for
  // blocks that differ in size (allgatherv).
  Result<void> allgather(std::span<const std::byte> send, const Area& recv,
                         std::uint64_t at,
                         std::chrono::milliseconds timeout = forever);
  // `send` holds size() equal blocks; block j lands at offset `at` of
  // member j's area (rank() * block there, for the usual layout).
  Result<void> alltoall(std::span<const std::byte> send, const Area& recv,
                        std::uint64_t at,
                        std::chrono::milliseconds timeout = forever);

 private:
  static constexpr std::uint32_t kAllreduce = 1, kReduce = 2, kBcast = 3,
                                 kBarrier = 4;
  template <typename T>
  static constexpr std::uint32_t type_of() {
    if constexpr (std::same_as<T, std::int32_t>) return 0;
    if constexpr (std::same_as<T, std::uint32_t>) return 1;
    if constexpr (std::same_as<T, std::int64_t>) return 2;
    if constexpr (std::same_as<T, std::uint64_t>) return 3;
    if constexpr (std::same_as<T, float>) return 4;
    return 5;
  }
  Communicator(Group& group, std::vector<std::uint32_t> ranks,
               std::uint32_t rank, const CommunicatorOptions& options,
               std::shared_ptr<const detail::McastList> members);
  Result<void> push_blocks(std::span<const std::byte> send, std::size_t block,
                           bool distinct, const Area& recv, std::uint64_t at,
                           std::chrono::milliseconds timeout);
  Request post(std::uint32_t op, Reduce reduce, std::uint32_t type,
               const void* send, void* recv, std::size_t send_bytes,
               std::size_t recv_bytes, std::uint32_t root, const TriggerOn& on);

  Group* group_;
  std::vector<std::uint32_t> ranks_;
  std::uint32_t rank_ = 0, size_ = 0;
  CommunicatorOptions options_;
  std::shared_ptr<const detail::McastList> members_;
};

}  // namespace rhinet
