// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Group: a parallel process group (004 2.1) as this process sees
// it: its rank, the group size and ID, the table rank -> (node, endpoint)
// from the bootstrap, the NIC endpoint, and the operations of 004 tables 1
// and 2 that exist so far.
//
// A Group and everything it makes (Area, Buffer, Twin, Request) are used by
// one thread at a time. Those objects keep the device open, so they may
// outlive the Group; operations need the Group.
#ifndef RHINET_GROUP_HPP
#define RHINET_GROUP_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "rhinet/area.hpp"
#include "rhinet/bootstrap.hpp"
#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/types.hpp"
#include "rhinet/xfer.hpp"

struct ibv_context;
struct ibv_pd;
struct rhinetdv_endpoint;

namespace rhinet {

class Group {
 public:
  // ---- joining ------------------------------------------------------------

  // For a rank started by rhinet-run: BootstrapOptions::from_env(), then
  // join(). Errors: those of from_env() and join().
  static Result<std::unique_ptr<Group>> join_from_env();
  // Opens the rhinet device (options.device, else the first ibverbs device
  // whose name starts with "rhinet"), checks it can do what the group needs
  // (endpoint, status words; groups when options.group != 0, and this
  // process's membership, which comes from RHINET_GROUPS at device open:
  // when that variable is unset and options.token is given, join sets it
  // to "group:token" first), creates the endpoint and the status-word
  // pool, and exchanges (node, endpoint) with the other ranks through the
  // rendezvous server. Errors: ENODEV (no such device), EOPNOTSUPP (the
  // device or librhinetdv lacks a feature), EPERM (not a member of the
  // group), ERANGE (a node ID beyond 16 bits), errno of ibverbs and
  // rhinetdv, and those of Bootstrap::exchange.
  static Result<std::unique_ptr<Group>> join(const BootstrapOptions& options);

  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  // Closes the bootstrap socket; the device stays open while an Area,
  // Buffer, Twin or Request of the group lives.
  ~Group();

  std::uint32_t rank() const { return rank_; }
  std::uint32_t size() const { return size_; }
  std::uint32_t group_id() const { return group_; }
  // This rank's index among the ranks on its node (same node ID), and how
  // many ranks share the node.
  std::uint32_t local_rank() const { return local_rank_; }
  std::uint32_t local_size() const { return local_size_; }
  Peer self() const { return table_[rank_]; }
  // rank < size(); aborts otherwise (a programming error).
  Peer peer(std::uint32_t rank) const;
  std::span<const Peer> table() const { return table_; }
  // Largest PUSH with XferOptions::inline_data.
  std::uint32_t max_inline() const;
  // Operations issued and not yet seen complete.
  std::size_t outstanding() const;

  // The ibverbs and rhinetdv objects underneath, for what userlib does
  // not wrap (valid while the Group lives).
  ibv_context* context() const;
  ibv_pd* pd() const;
  rhinetdv_endpoint* endpoint() const;

  // ---- memory -------------------------------------------------------------

  // Registers `memory` as this process's area `area_id` (0..65535) of the
  // group. Every rank registers its own memory under the same ID before
  // peers address it (a barrier_bootstrap() after registering is the
  // simple way). Errors: EINVAL (area_id, empty span), EEXIST (this
  // process has that area already), ENOSPC (the NIC's areas are full),
  // EPERM (not a member of the group), errno of ibv_reg_mr.
  Result<Area> area(std::uint32_t area_id, std::span<std::byte> memory,
                    Access access = Access::remote_read_write);
  // Registers local memory (ibv_reg_mr). Spans inside a Buffer or an Area
  // can be the local side of push/pull. Errors: EINVAL (empty span), EEXIST
  // (overlaps a Buffer or Area already registered), errno of ibv_reg_mr.
  Result<Buffer> buffer(std::span<std::byte> memory);
  // Read-only registration: a PUSH source or a bitmap, not a PULL target.
  Result<Buffer> readonly_buffer(std::span<const std::byte> memory);
  // Allocates `bytes` of twin memory on the NIC (ibv_alloc_dm). Errors:
  // EINVAL (0 bytes), EOPNOTSUPP (no twin memory), ENOMEM (the process's
  // share or the NIC's twin memory is used up).
  Result<Twin> twin(std::size_t bytes);

  // ---- PUSH and PULL (004 2.4, 2.7; table 1) ------------------------------
  //
  // The local span must lie inside one Buffer or Area of this group
  // (looked up in the group's registry; writable for a PULL), except for an
  // inline PUSH. Every operation completes through a status word; the
  // returned Request is either in flight or already failed (errors found
  // before posting: EINVAL for a rank out of range or a mode the operation
  // does not take (table 1) or bad mode parameters, EFAULT for an
  // unregistered span or bitmap, EACCES for a PULL into a read-only
  // Buffer, EMSGSIZE, EOPNOTSUPP, errno of rhinetdv_push_ex/pull_ex).
  // The NIC's errors come with their syndrome when the request completes.

  // src -> (rank, area_id, offset). Modes: basic, diff, bitmap, stride.
  Request push(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
               std::span<const std::byte> src, const XferOptions& options = {});
  // (rank, area_id, offset) -> dst. Modes: basic, twin, bitmap, stride.
  Request pull(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
               std::span<std::byte> dst, const XferOptions& options = {});
  // By virtual address and rkey in `rank`'s memory (004 2.4's other way to
  // name the target; the key is the protection, the group is not checked).
  // No signal.
  Request push_to(std::uint32_t rank, std::uint64_t remote_addr,
                  std::uint32_t rkey, std::span<const std::byte> src,
                  const XferOptions& options = {});
  Request pull_from(std::uint32_t rank, std::uint64_t remote_addr,
                    std::uint32_t rkey, std::span<std::byte> dst,
                    const XferOptions& options = {});

  // 004 table 2 `sync`: waits until every operation this process issued
  // has completed. Returns the first error among detached (or destroyed)
  // requests that failed since the last sync(); the errors of requests
  // still held stay with them. ETIMEDOUT leaves operations in flight.
  Result<void> sync(std::chrono::milliseconds timeout = forever);

  // ---- signals (004 2.11) ------------------------------------------------

  // The sum of the signal values PUSHed to this process's area `area_id`
  // since the group was joined (nonblocking).
  Result<std::uint64_t> signal_count(std::uint32_t area_id);
  // Sleeps (the NIC interrupts; no busy polling) until signal_count
  // reaches `count`. ETIMEDOUT, or errno of rhinetdv_wait_signal.
  Result<void> wait_signal(std::uint32_t area_id, std::uint64_t count,
                           std::chrono::milliseconds timeout = forever);

  // ---- bootstrap ----------------------------------------------------------

  // A barrier over the bootstrap's TCP connection through the rendezvous
  // server (slow; for setup and tests). Not the NIC barrier of 004 2.10.
  Result<void> barrier_bootstrap(std::chrono::milliseconds timeout = forever);

  // ---- later (issues 15-17); not implemented --------------------------
  //
  // Each adds members here and, where it is nonblocking, a Request kind:
  //   Request isend(rank, tag, span, XferOptions)     2.6, table 1
  //   Request irecv(rank_or_any, tag, span, XferOptions)
  //   Result<std::optional<Message>> iprobe(rank_or_any, tag)   table 2
  //   Request mcast(ranks_or_pattern, area_id, offset, span,
  //                 XferOptions)                      2.8 mcastA/mcastB
  //   Result<Shared> subscribe(region, home_rank, span)   2.9
  //   Result<void> unsubscribe(Shared&)
  //   Result<void> lock(lock_id), unlock(lock_id)     2.10
  //   Result<void> barrier()                          2.10, the NIC's
  //   Request broadcast/reduce/allreduce/...          collectives
  //   pd_req / pd_reply / pd_release                  2.5, pin-down

 private:
  friend struct detail::Device;
  Group(std::shared_ptr<detail::Device> dev, Bootstrap boot);
  Request post(Op op, Target target, std::uint32_t rank, std::uint64_t remote,
               std::uint32_t rkey, std::uint64_t offset,
               std::span<std::byte> local, const XferOptions& options);

  std::shared_ptr<detail::Device> dev_;
  Bootstrap boot_;
  std::uint32_t rank_ = 0, size_ = 0, group_ = 0;
  std::uint32_t local_rank_ = 0, local_size_ = 1;
  std::span<const Peer> table_;
};

}  // namespace rhinet

#endif  // RHINET_GROUP_HPP
