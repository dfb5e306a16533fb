// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Group: a parallel process group (004 2.1) as this process sees
// it: its rank, the group size and ID, the table rank -> (node, endpoint)
// from the bootstrap, the NIC endpoint, and the operations of 004 tables 1
// and 2 that exist so far: PUSH and PULL with their modes, signals, sync,
// and messages matched by the NIC (isend, irecv, iprobe).
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
#include <optional>
#include <span>

#include "rhinet/area.hpp"
#include "rhinet/bootstrap.hpp"
#include "rhinet/message.hpp"
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
  // The rank at `peer`'s (node, endpoint), or unknown_rank.
  std::uint32_t rank_of(Peer peer) const;
  std::span<const Peer> table() const { return table_; }
  // Largest PUSH or isend with XferOptions::inline_data.
  std::uint32_t max_inline() const;
  // PUSH, PULL and isend operations issued and not yet seen complete
  // (pending receives: pending_irecvs()).
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

  // ---- remote pin-down (004 2.5; table 2: pd_req, pd_reply, pd_release) --
  //
  // An on-demand area is memory this process has only mapped (mmap, not
  // touched, not registered): nothing is pinned when it is declared. Its
  // host pins pages when peers need them: on their pd_req, or on the first
  // PUSH or PULL that reaches them, which the NIC holds meanwhile (no
  // error, no retry by the caller). Pages pinned this way count against
  // the process's limit (rhinet.ko's max_pin_on_demand_pages); beyond it
  // the peer's operation fails with EDQUOT (Syndrome::not_pinned). As the
  // local side of this process's own operations it serves only over pages
  // that are pinned. Errors as area(), and EOPNOTSUPP when the device or
  // driver cannot pin on demand (pin_on_demand()).
  bool pin_on_demand() const;
  Result<Area> on_demand_area(std::uint32_t area_id,
                              std::span<std::byte> memory,
                              Access access = Access::remote_read_write);
  // Asks `rank`'s host to pin [offset, offset + length) of its area
  // area_id and keep it pinned: completes once it is (pd_reply). Holders
  // are counted per page; pd_release drops one, and a page nobody holds
  // is unpinned (pages pinned by a first touch alone too). On an area
  // that is not on demand both complete at once. Errors before posting:
  // EINVAL (rank, area ID, length 0 or 4 GiB or more), EOPNOTSUPP; at
  // completion the NIC's (ERANGE past the area, ENOENT no such area,
  // EDQUOT the target's limit, ...).
  Request pd_req(std::uint32_t rank, std::uint32_t area_id,
                 std::uint64_t offset, std::uint64_t length);
  Request pd_release(std::uint32_t rank, std::uint32_t area_id,
                     std::uint64_t offset, std::uint64_t length);

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

  // 004 table 2 `sync`: waits until every PUSH, PULL and isend this
  // process issued has completed (not for receives: they complete when a
  // message comes). Returns the first error among detached (or destroyed)
  // requests that failed since the last sync(); the errors of requests
  // still held stay with them. ETIMEDOUT leaves operations in flight.
  Result<void> sync(std::chrono::milliseconds timeout = forever);

  // ---- messages: isend / irecv / iprobe (004 2.6, table 2) ---------------
  //
  // Matched by the receiving NIC: an irecv takes a message when its source
  // is the irecv's rank (or the irecv takes any_source) and its tag
  // matches (TagMatch: (message tag ^ tag) & mask == 0); posted irecvs
  // are tried oldest first, and between one sender and one receiver the
  // messages one irecv could take are taken in send order. A message no
  // irecv takes waits at the receiver (unexpected; iprobe sees it) until
  // one is posted. Messages of up to max_eager() bytes travel with the
  // match; longer ones are sent once the irecv is known, straight into
  // its buffer. A basic isend may be inline_data.
  //
  // Partial-transfer modes (004 table 1), chosen by each side for its own
  // memory, as XferOptions: an isend takes basic, diff, bitmap, stride;
  // an irecv basic, twin, bitmap, stride.
  //   isend stride: the message is the `count` blocks of `block` bytes,
  //     local_stride apart in src, packed (block * count bytes;
  //     remote_stride is 0 or the block: the irecv places them);
  //   isend bitmap / diff: the message has src.size() bytes, of which only
  //     the blocks marked in the bitmap / the bytes that differ from the
  //     twin travel (diff then updates the twin); the receiver's bytes
  //     under the others stay as they were;
  //   irecv stride: message byte o lands at (o / block) * local_stride +
  //     o % block in dst; the irecv takes block * count bytes;
  //   irecv bitmap: message byte o lands at dst[o] only if the bitmap
  //     marks its block; the others are dropped;
  //   irecv twin: the message lands in dst and also in the twin at
  //     offset + o (the copy a later diff isend compares against).
  // A partial isend never travels eagerly.
  //
  // Spans lie inside one Buffer or Area of this group (an irecv's
  // writable), except an inline or empty isend and an empty irecv; so does
  // a bitmap. The returned Request is in flight or already failed (before
  // posting: EOPNOTSUPP without RHINETDV_CAP_TAG, or for a partial mode
  // without RHINETDV_CAP_TAG_XFER; EINVAL for a rank out of range, a mode
  // the operation does not take, bad mode parameters or other bad options,
  // a twin of another group, a bitmap isend of more than the NIC's blocks;
  // EFAULT for an unregistered span or bitmap, EACCES for an irecv into a
  // read-only Buffer, EMSGSIZE, ENOMEM for an irecv beyond max_irecv()
  // pending, errno of rhinetdv_isend/irecv). A descriptor the NIC refuses
  // completes with EINVAL (Syndrome::bad_xfer).

  // The device matches messages (RHINETDV_CAP_TAG); without it isend,
  // irecv and iprobe fail with EOPNOTSUPP.
  bool tag_matching() const;
  // Largest isend sent eagerly (with its match request), irecvs the
  // endpoint keeps pending at once (BootstrapOptions::max_irecv), and how
  // many are pending now. 0 without tag matching.
  std::uint32_t max_eager() const;
  std::uint32_t max_irecv() const;
  std::size_t pending_irecvs() const;

  // src -> rank, tagged `tag`. Completes once the data has arrived at the
  // receiver (for a long message: once an irecv took it). The span must
  // stay untouched until then (unless inline). A completion error:
  // ECONNABORTED when the receiver gave the message up (its endpoint went
  // away, or it cancelled the irecv during the transfer), others with the
  // NIC's syndrome (ECONNREFUSED: no such endpoint, EHOSTUNREACH, ...).
  Request isend(std::uint32_t rank, std::uint64_t tag,
                std::span<const std::byte> src,
                const XferOptions& options = {});
  // The next message from `source` (a rank, or any_source) whose tag
  // matches, into dst. Once done, Request::message() gives its source,
  // tag and length and Request::bytes() the bytes of the message it took
  // (all of them, or as many as it takes). Completion errors: EMSGSIZE
  // when the message was longer than the irecv takes (dst.size(), or
  // block * count with Mode::stride; it holds the message's first bytes;
  // message() has its length), ECANCELED after
  // Request::cancel() (Request::cancelled()), ECONNABORTED when the sender
  // gave it up.
  Request irecv(std::uint32_t source, TagMatch match, std::span<std::byte> dst,
                const XferOptions& options = {});
  // Exactly `tag`.
  Request irecv(std::uint32_t source, std::uint64_t tag,
                std::span<std::byte> dst, const XferOptions& options = {}) {
    return irecv(source, TagMatch{tag}, dst, options);
  }
  // 004 table 2 iprobe: the oldest unexpected message an irecv(source,
  // match) would take, without taking it; nullopt when none waits.
  // Nonblocking (the NIC answers; no system call). Errors: EOPNOTSUPP (no
  // tag matching), EINVAL (no such rank), errno of rhinetdv_iprobe.
  Result<std::optional<Message>> iprobe(std::uint32_t source, TagMatch match);
  Result<std::optional<Message>> iprobe(std::uint32_t source,
                                        std::uint64_t tag) {
    return iprobe(source, TagMatch{tag});
  }

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

  // ---- later (issues 16-17); not implemented --------------------------
  //
  // Each adds members here and, where it is nonblocking, a Request kind
  // (isend / irecv / iprobe of issue 15 are above, with their modes):
  //   Request mcast(ranks_or_pattern, area_id, offset, span,
  //                 XferOptions)                      2.8 mcastA/mcastB
  //   Result<Shared> subscribe(region, home_rank, span)   2.9
  //   Result<void> unsubscribe(Shared&)
  //   Result<void> lock(lock_id), unlock(lock_id)     2.10
  //   Result<void> barrier()                          2.10, the NIC's
  //   Request broadcast/reduce/allreduce/...          collectives

 private:
  friend struct detail::Device;
  Group(std::shared_ptr<detail::Device> dev, Bootstrap boot);
  Request post(Op op, Target target, std::uint32_t rank, std::uint64_t remote,
               std::uint32_t rkey, std::uint64_t offset,
               std::span<std::byte> local, const XferOptions& options);
  Result<Area> register_area(std::uint32_t area_id, std::span<std::byte> memory,
                             Access access, bool on_demand);
  Request post_pin(Op op, std::uint32_t rank, std::uint32_t area_id,
                   std::uint64_t offset, std::uint64_t length);

  std::shared_ptr<detail::Device> dev_;
  Bootstrap boot_;
  std::uint32_t rank_ = 0, size_ = 0, group_ = 0;
  std::uint32_t local_rank_ = 0, local_size_ = 1;
  std::span<const Peer> table_;
};

}  // namespace rhinet

#endif  // RHINET_GROUP_HPP
