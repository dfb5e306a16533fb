// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Group: a parallel process group (the processes of one job that
// reach each other's areas; Documentation/userlib/design.md, "Process
// groups") as this process sees it: its rank, the group size and ID, the
// table rank -> (node, endpoint) from the bootstrap, the NIC endpoint, and
// the model's operations: PUSH and PULL with their modes, signals, sync,
// messages matched by the NIC (isend, irecv, iprobe), multicast (mcast),
// locks and barriers kept by the NIC, and shared regions (subscribe).
//
// A Group and everything it makes (Area, Buffer, Twin, Request) are used by
// one thread at a time: a second thread that enters a post, irecv, a wait
// or sync while another is inside gets EBUSY. Those objects keep the
// device open, so they may outlive the Group; operations need the Group.
#ifndef RHINET_GROUP_HPP
#define RHINET_GROUP_HPP

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "rhinet/area.hpp"
#include "rhinet/bootstrap.hpp"
#include "rhinet/message.hpp"
#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/trigger.hpp"
#include "rhinet/types.hpp"
#include "rhinet/xfer.hpp"

struct ibv_context;
struct ibv_pd;
struct rhinetdv_endpoint;

namespace rhinet {

class LockGuard;
class SharedRegion;

// The barrier ID Group::barrier uses unless told otherwise.
inline constexpr std::uint64_t default_barrier_id = 0xba221e2000000000ull;

// Which NIC barrier Group::barrier / ibarrier joins: a 64-bit ID at the
// endpoint of a manager rank, and how many arrivals complete a round.
struct BarrierOptions {
  std::uint64_t id = default_barrier_id;
  std::uint32_t manager = 0;  // a rank of the group
  // Participants of a round (1..1024); 0: every rank of the group. Every
  // participant of a round must give the same count.
  std::uint32_t count = 0;
};

// How Group::wait_for_area waits: spinning on the condition for `spin`
// (never_sleep: never sleeping, the spin, yield and 50 us naps of
// Backoff), then sleeping on the NIC's watch of the area, until `timeout`.
struct AreaWaitOptions {
  std::chrono::microseconds spin = default_area_spin;
  std::chrono::milliseconds timeout = forever;
};

// The words Group's atomics work on: 4- or 8-byte integers.
template <typename T>
concept AtomicWord = std::integral<T> &&(sizeof(T) == 4 || sizeof(T) == 8);

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

  // Another NIC endpoint of this process in the group, as a Group of its
  // own: the same rank, size, group ID and table (its operations go to
  // the endpoints the peers joined with) on the same device, opened
  // again (the driver gives a device context one endpoint). It has its
  // own send queue, status words, outstanding() and sync(): what it
  // posts does not queue behind this Group's work in the NIC, which takes
  // turns between endpoints. Not collective, and peers learn nothing: a
  // PUSH, PULL or atomic reaches an area of the target process through
  // the endpoint it names (the NIC finds the area through that
  // endpoint's context), and the answer comes back to the endpoint that
  // asked. Its memory is its own: this Group's Buffers and Areas are not
  // its local side; register that with buffer() on it (the same bytes
  // may be registered on both). It has no areas (area(): EOPNOTSUPP,
  // peers reach this Group's), takes part in no messages (isend, irecv:
  // EOPNOTSUPP) and has no bootstrap connection (barrier_bootstrap:
  // EOPNOTSUPP); collectives, messages and shared regions stay on the
  // Group of join. `max_outstanding`: operations in flight at once, 0 =
  // as many as this Group. Errors: EOPNOTSUPP (called on an added
  // endpoint: add to the Group of join), those of opening the device
  // (join's), errno of ibv_alloc_pd, rhinetdv_create_endpoint and
  // ibv_reg_mr (its status words).
  Result<std::unique_ptr<Group>> add_endpoint(
      std::uint32_t max_outstanding = 0);
  // Made by add_endpoint.
  bool added_endpoint() const { return !boot_.has_value(); }

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
  // Registers bytes [offset, offset + memory.size()) of the dma-buf `fd`
  // (memory another device exports: an accelerator's, vgem's) as local
  // memory, as buffer() registers host memory (ibv_reg_dmabuf_mr, local
  // write). `memory` is where this process mapped those bytes (its mmap of
  // the dma-buf): spans inside it are the local side of push/pull as for
  // buffer(); the NIC reaches the bytes through the exporter, not through
  // the mapping. The kernel holds the dma-buf while the Buffer lives:
  // `fd` may be closed after. Errors: EINVAL (empty span, `fd` is not a
  // dma-buf, the range goes past its end, `offset` and `memory` at
  // different places in a page), EBADF (`fd` is not open), EEXIST
  // (overlap), EOPNOTSUPP (a driver without dma-buf MRs), errno of
  // ibv_reg_dmabuf_mr.
  Result<Buffer> dmabuf_buffer(int fd, std::uint64_t offset,
                               std::span<std::byte> memory);
  // Allocates `bytes` of twin memory on the NIC (ibv_alloc_dm). Errors:
  // EINVAL (0 bytes), EOPNOTSUPP (no twin memory), ENOMEM (the process's
  // share or the NIC's twin memory is used up).
  Result<Twin> twin(std::size_t bytes);
  // A trigger counter of this process with the first value `value`
  // (trigger.hpp); PUSH and PULL take it in XferOptions::trigger. Errors:
  // EOPNOTSUPP (the NIC or driver has no triggered operations), ENOSPC
  // (the NIC's table is full, or this process or its user holds its
  // share of it), errno of rhinetdv_create_trigger.
  Result<Trigger> trigger(std::uint64_t value = 0);
  // Adds `amount` to the counter `counter` of rank `rank` (what that rank's
  // Trigger::remote() gave out): operations parked on it there start when
  // it reaches their threshold. Nonblocking; the Request's value() is the
  // counter's value before the add. With `on` the add itself waits on a
  // counter of this process and/or chains to one: rank A's counter reaching
  // a threshold then releases work at rank B with no CPU on the path.
  // Errors before posting: EOPNOTSUPP (no triggered operations), EINVAL (a
  // rank out of range, `on` naming a moved-from Trigger). At completion:
  // EACCES (Syndrome::bad_remote_trigger: the peer has no live counter with
  // that handle and key; nothing added), ECANCELED (`on`'s counter was
  // destroyed first), EHOSTUNREACH.
  Request trigger_add(std::uint32_t rank, RemoteTrigger counter,
                      std::uint64_t amount = 1, const TriggerOn& on = {});

  // ---- remote pin-down (pd_req, pd_release; reference.md) -----------------
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

  // ---- PUSH and PULL (one-sided, with partial-transfer modes) -------------
  //
  // The local span must lie inside one Buffer or Area of this group
  // (looked up in the group's registry; writable for a PULL), except for an
  // inline PUSH. Every operation completes through a status word; the
  // returned Request is either in flight or already failed (errors found
  // before posting: EINVAL for a rank out of range or a mode the operation
  // does not take (see Mode in xfer.hpp) or bad mode parameters, EFAULT
  // for an unregistered span or bitmap, EACCES for a PULL into a
  // read-only Buffer, EMSGSIZE, EOPNOTSUPP, errno of rhinetdv_push_ex/pull_ex).
  // The NIC's errors come with their syndrome when the request completes.

  // src -> (rank, area_id, offset). Modes: basic, diff, bitmap, stride.
  Request push(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
               std::span<const std::byte> src, const XferOptions& options = {});
  // (rank, area_id, offset) -> dst. Modes: basic, twin, bitmap, stride.
  Request pull(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
               std::span<std::byte> dst, const XferOptions& options = {});
  // Remote atomics on the aligned 64-bit word at (rank, area_id, offset),
  // in an area registered with Access::remote_atomic; Request::value() is
  // the word before the operation. Atomic among the NICs' atomics on that
  // word, not against the target's CPU (as in ibverbs). EINVAL: offset not
  // 8-byte aligned; EOPNOTSUPP: no RHINETDV_CAP_ATOMIC; the target NIC's
  // refusals (Syndrome::alignment, bounds, bad_area, access_rights) come
  // with the completion. With `on` naming a counter the atomic waits in
  // this rank's NIC until the counter reaches on.threshold; with on.chain
  // its completion adds 1 to that counter (trigger.hpp).
  Request fetch_add(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::uint64_t add,
                    const TriggerOn& on = {});
  // Stores `desired` if the word equals `expected`; value() == expected
  // tells that it did.
  Request compare_swap(std::uint32_t rank, std::uint32_t area_id,
                       std::uint64_t offset, std::uint64_t expected,
                       std::uint64_t desired, const TriggerOn& on = {});
  // 32-bit forms: fetch_add<std::uint32_t>(...), compare_swap<std::int32_t>
  // (...) on a 4-byte aligned word (the type names the width; it is never
  // deduced, so an untyped fetch_add stays the 64-bit one).
  template <AtomicWord T>
  Request fetch_add(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::type_identity_t<T> add) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_add, sizeof(T),
                  bits(add));
  }
  template <AtomicWord T>
  Request compare_swap(std::uint32_t rank, std::uint32_t area_id,
                       std::uint64_t offset, std::type_identity_t<T> expected,
                       std::type_identity_t<T> desired) {
    return atomic(rank, area_id, offset, AtomicOp::compare_swap, sizeof(T),
                  bits(expected), bits(desired));
  }
  // The whole atomic family on the aligned word of `width` bytes (4 or 8)
  // at (rank, area_id, offset): `operand` is the addend, the new value
  // (swap), the mask (fetch_and/or/xor) or the value compared
  // (compare_swap, which stores `desired`); a 4-byte operation uses their
  // low 32 bits. With fetch (the default) Request::value() is the word
  // before the operation, zero-extended; without, nothing comes back (the
  // answer is cheaper) and value() is 0. Atomics on one word from any
  // ranks are serialized by its NIC and each runs once; they are not
  // atomic against the target's CPU, and a push to the word is not an
  // atomic (Documentation/hardware/queues.md, "Atomics"). EINVAL: width
  // not 4 or 8, offset not aligned to it, `desired` for another operation
  // than compare_swap, fetch without fetching; EOPNOTSUPP: no
  // RHINETDV_CAP_ATOMIC_EXT; the target NIC's refusals as for fetch_add.
  Request atomic(std::uint32_t rank, std::uint32_t area_id,
                 std::uint64_t offset, AtomicOp op, std::size_t width,
                 std::uint64_t operand, std::uint64_t desired = 0,
                 bool fetch = true, const TriggerOn& on = {});
  // Named forms; T (default std::uint64_t) is the word's type and width:
  // g.swap(r, a, o, v) on 8 bytes, g.swap<std::uint32_t>(r, a, o, v) on 4.
  // swap, fetch, fetch_and/or/xor: value() is the old word. set, add,
  // bit_and/or/xor: no value comes back (non-fetching).
  template <AtomicWord T = std::uint64_t>
  Request swap(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
               std::type_identity_t<T> value) {
    return atomic(rank, area_id, offset, AtomicOp::swap, sizeof(T),
                  bits(value));
  }
  template <AtomicWord T = std::uint64_t>
  Request fetch(std::uint32_t rank, std::uint32_t area_id,
                std::uint64_t offset) {
    return atomic(rank, area_id, offset, AtomicOp::fetch, sizeof(T), 0);
  }
  template <AtomicWord T = std::uint64_t>
  Request set(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
              std::type_identity_t<T> value) {
    return atomic(rank, area_id, offset, AtomicOp::swap, sizeof(T), bits(value),
                  0, false);
  }
  template <AtomicWord T = std::uint64_t>
  Request add(std::uint32_t rank, std::uint32_t area_id, std::uint64_t offset,
              std::type_identity_t<T> value) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_add, sizeof(T),
                  bits(value), 0, false);
  }
  template <AtomicWord T = std::uint64_t>
  Request fetch_and(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_and, sizeof(T),
                  bits(mask));
  }
  template <AtomicWord T = std::uint64_t>
  Request fetch_or(std::uint32_t rank, std::uint32_t area_id,
                   std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_or, sizeof(T),
                  bits(mask));
  }
  template <AtomicWord T = std::uint64_t>
  Request fetch_xor(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_xor, sizeof(T),
                  bits(mask));
  }
  template <AtomicWord T = std::uint64_t>
  Request bit_and(std::uint32_t rank, std::uint32_t area_id,
                  std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_and, sizeof(T),
                  bits(mask), 0, false);
  }
  template <AtomicWord T = std::uint64_t>
  Request bit_or(std::uint32_t rank, std::uint32_t area_id,
                 std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_or, sizeof(T),
                  bits(mask), 0, false);
  }
  template <AtomicWord T = std::uint64_t>
  Request bit_xor(std::uint32_t rank, std::uint32_t area_id,
                  std::uint64_t offset, std::type_identity_t<T> mask) {
    return atomic(rank, area_id, offset, AtomicOp::fetch_xor, sizeof(T),
                  bits(mask), 0, false);
  }
  // By virtual address and rkey in `rank`'s memory (the other way to name
  // the target; the key is the protection, the group is not checked).
  // No signal.
  Request push_to(std::uint32_t rank, std::uint64_t remote_addr,
                  std::uint32_t rkey, std::span<const std::byte> src,
                  const XferOptions& options = {});
  Request pull_from(std::uint32_t rank, std::uint64_t remote_addr,
                    std::uint32_t rkey, std::span<std::byte> dst,
                    const XferOptions& options = {});

  // How its waits (Request::wait, wait_all, wait_any, sync, the
  // collectives, a full pool of status words) wait: they spin on memory
  // for `spin`, then sleep until the NIC interrupts (each operation then
  // asks the NIC for a completion as well as its status word). never_sleep
  // (negative) spins, yields and naps 50 us instead, asking for no
  // completions. From BootstrapOptions::spin (RHINET_SPIN_US); takes
  // effect for operations posted after the call.
  void set_spin(std::chrono::microseconds spin);
  std::chrono::microseconds spin() const;
  // What its waits did so far (sleeps, wake-ups by the NIC, ...).
  WaitStats wait_stats() const;

  // Waits until every PUSH, PULL and isend this process issued has
  // completed (not for receives: they complete when a message comes). Returns
  // the first error among detached (or destroyed) requests that failed since
  // the last sync(); the errors of requests still held stay with them.
  // ETIMEDOUT leaves operations in flight.
  Result<void> sync(std::chrono::milliseconds timeout = forever);

  // ---- messages: isend / irecv / iprobe (matched by the NIC) --------------
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
  // Partial-transfer modes (Mode in xfer.hpp), chosen by each side for its
  // own memory, as XferOptions: an isend takes basic, diff, bitmap, stride;
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
  // iprobe: the oldest unexpected message an irecv(source, match) would
  // take, without taking it; nullopt when none waits.
  // Nonblocking (the NIC answers; no system call). Errors: EOPNOTSUPP (no
  // tag matching), EINVAL (no such rank), errno of rhinetdv_iprobe.
  Result<std::optional<Message>> iprobe(std::uint32_t source, TagMatch match);
  Result<std::optional<Message>> iprobe(std::uint32_t source,
                                        std::uint64_t tag) {
    return iprobe(source, TagMatch{tag});
  }

  // ---- signals (counts PUSHed to an area; design.md, "Signals") -----------

  // The sum of the signal values PUSHed to this process's area `area_id`
  // since the group was joined (nonblocking).
  Result<std::uint64_t> signal_count(std::uint32_t area_id);
  // Sleeps (the NIC interrupts; no busy polling) until signal_count
  // reaches `count`. ETIMEDOUT, or errno of rhinetdv_wait_signal.
  Result<void> wait_signal(std::uint32_t area_id, std::uint64_t count,
                           std::chrono::milliseconds timeout = forever);

  // ---- waiting on memory (the NIC's watch of an area) ---------------------
  //
  // Waits until done() returns true, where done() looks at this process's
  // area `area_id` (registered by this Group) and peers make it true by
  // writing there (push, mcast, atomics by area). Spins on done() for
  // options.spin; then arms the NIC's one-shot watch of the area, waits
  // until it is armed, calls done() once more (a write that landed before
  // the arming fired nothing) and sleeps until the NIC's interrupt says a
  // write landed in the area; then looks, arms again, sleeps again. Every
  // sleep lasts at most 200 ms, so stores that do not come through the
  // NIC (this process's own) are seen too, late. On a device without
  // watches (area_watches() false), or with spin never_sleep, it spins,
  // yields and naps 50 us instead. One watch per area for the process: two
  // threads (or Groups) waiting on one area at once wake each other
  // less reliably. Errors: ETIMEDOUT (options.timeout passed), EBUSY
  // (another thread is using the Group), ENOENT (no area `area_id` of this
  // process: Syndrome::no_watch_area), errno of rhinetdv_watch_area and of
  // the completion events.
  Result<void> wait_for_area(std::uint32_t area_id,
                             const std::function<bool()>& done,
                             const AreaWaitOptions& options = {});
  // The device arms watches (RHINETDV_CAP_WATCH).
  bool area_watches() const;
  // What wait_for_area did so far (sleeps, wake-ups by the NIC, ...).
  AreaWaitStats area_wait_stats() const;

  // ---- bootstrap ----------------------------------------------------------

  // A barrier over the bootstrap's TCP connection through the rendezvous
  // server (slow; for setup and tests). Not the NIC barrier (below).
  Result<void> barrier_bootstrap(std::chrono::milliseconds timeout = forever);

  // ---- sequential multicast (the sender's NIC sends to each in turn) ------
  //
  // src -> the same (area_id, offset) at every rank of `ranks`, as one
  // operation: this process's NIC sends the data to each member in turn
  // (list order), each over that node's reliable channel, and the Request
  // completes once, when every member has acknowledged. What a member sees
  // is an ordinary PUSH by area (its area and group checks; a signal with
  // XferOptions::signal). Modes as push(): basic, diff (compared for every
  // member; the twin takes the bytes with the last), bitmap, stride
  // (remote_stride applies at every member); inline_data for a basic one.
  // `ranks` may hold this rank; a rank listed twice gets the data twice.
  // The destination list the NIC reads ((node, endpoint) per rank) is
  // registered memory the group keeps, one per distinct rank list (the
  // last 8 used), so repeated mcasts to the same ranks register nothing.
  // Errors before posting: EOPNOTSUPP (no multicast()), EINVAL (no ranks,
  // more than 4096, a rank out of range, and as push()), EFAULT,
  // EMSGSIZE, errno of ibv_reg_mr and rhinetdv_mcast_list. At completion
  // the first failing member's error, as for push() (EHOSTUNREACH for a
  // member that cannot be reached; the others got the data).
  bool multicast() const;  // RHINETDV_CAP_MCAST_LIST
  Request mcast(std::span<const std::uint32_t> ranks, std::uint32_t area_id,
                std::uint64_t offset, std::span<const std::byte> src,
                const XferOptions& options = {});

  // ---- simultaneous multicast (the switch replicates each packet) ---------
  //
  // src -> the same (area_id, offset) at every member of a switch group:
  // this process's NIC sends each packet once, to the group, and the fabric
  // switch copies it. The cluster administrator defines the groups (the
  // switch's pattern, each member node's list: one endpoint per node); the
  // program names one by its ID (0xf000..0xfffe), typically the job's
  // broadcast group. Every member acknowledges, losses are repaired, and
  // each member gets this rank's mcasts to the group once, in posting
  // order. Modes and options as the other mcast. Errors before posting:
  // EOPNOTSUPP (no switch_multicast()), EINVAL (an ID that is no switch
  // group, and as push()), EFAULT, EMSGSIZE. At completion: the first
  // failure, as for push(); ECONNRESET (Syndrome::member_lost) when a
  // member stopped answering (and for every later mcast to the group until
  // the administrator sets it again), ENOENT when the NIC knows no such
  // group; the other members got the data.
  // Named explicitly (Group::SwitchGroup{0xf001}), so that mcast({}, ...)
  // still means an empty rank list.
  struct SwitchGroup {
    explicit SwitchGroup(std::uint16_t group_id) : id(group_id) {}
    std::uint16_t id;
  };
  bool switch_multicast() const;  // RHINETDV_CAP_MCAST_SWITCH
  Request mcast(SwitchGroup group, std::uint32_t area_id, std::uint64_t offset,
                std::span<const std::byte> src,
                const XferOptions& options = {});

  // ---- locks and barriers (kept by a manager rank's NIC) ------------------
  //
  // Kept by the NIC of a manager rank's endpoint (any rank; its process
  // does nothing): a lock is a 64-bit ID there, granted in the order the
  // LOCKs reached the manager and handed from holder to next holder NIC to
  // NIC. IDs are a name space per manager; locks and barriers of the same
  // ID are unrelated. Nothing waits forever: when a member's node (or the
  // manager's) dies, waits end with ECONNRESET (Syndrome::member_lost).
  // Errors before posting: EOPNOTSUPP (no locks_and_barriers()), EINVAL (a
  // manager rank out of range, a barrier count out of 1..1024).
  bool locks_and_barriers() const;  // RHINETDV_CAP_SYNC

  // Nonblocking LOCK / UNLOCK: the Request completes when this rank holds
  // the lock / when the lock is passed on or free. Completion errors:
  // EDEADLK (ilock of a lock this rank holds or waits for), EPERM
  // (iunlock of a lock it does not hold, Syndrome::not_held),
  // ECONNRESET (the lock broke: a member or the manager was lost; at an
  // unlock it means someone else may have been granted the lock while this
  // rank still held it), EAGAIN (this node's lock records for the process
  // are full), ECONNREFUSED (no manager endpoint).
  // Completions come in posting order: a push posted after a waiting
  // ilock completes after it, but is not held back by it; post the
  // critical section's work once the lock is held, and the unlock once
  // that work has completed.
  // With `on` naming a counter the LOCK / UNLOCK waits in this rank's NIC
  // until the counter reaches on.threshold (trigger.hpp); with on.chain its
  // completion adds 1 to that counter: a LOCK chained to the counter an
  // UNLOCK waits on releases the lock with no CPU between them.
  Request ilock(std::uint64_t lock_id, std::uint32_t manager = 0);
  Request iunlock(std::uint64_t lock_id, std::uint32_t manager = 0);
  Request ilock(std::uint64_t lock_id, std::uint32_t manager,
                const TriggerOn& on);
  Request iunlock(std::uint64_t lock_id, std::uint32_t manager,
                  const TriggerOn& on);
  // Blocking: ilock(...).wait() / iunlock(...).wait(). No timeout: a lock
  // given up while queued would be granted later to nobody.
  Result<void> lock(std::uint64_t lock_id, std::uint32_t manager = 0);
  Result<void> unlock(std::uint64_t lock_id, std::uint32_t manager = 0);
  // lock(), returning a guard that unlocks when destroyed (or by
  // LockGuard::unlock, which reports the error). Destroy it before the
  // Group.
  Result<LockGuard> scoped_lock(std::uint64_t lock_id,
                                std::uint32_t manager = 0);

  // The NIC's counting barrier: completes when options.count (default:
  // size()) ranks have entered round of options.id at the manager rank;
  // the ID then starts its next round, so the same options serve every
  // round. Completion errors: EINVAL (a count that differs from the
  // round's, Syndrome::not_held: the round goes on without this rank),
  // ECONNRESET (a participant's node or the manager's died).
  Request ibarrier(const BarrierOptions& options = {});
  // ibarrier(options).wait(timeout). ETIMEDOUT leaves the arrival counted
  // (the round completes without waiting for this rank again).
  Result<void> barrier(const BarrierOptions& options = {},
                       std::chrono::milliseconds timeout = forever);

  // ---- shared regions (copies kept alike along a directory) ---------------
  //
  // A region is [offset, offset + length) of an area: every member keeps
  // its copy at that offset of its own Area of that ID, so an update means
  // the same place everywhere. It is named by its home rank (whose memory
  // is the master copy; nothing to set up there, its NIC creates the
  // region at the first subscribe) and the area ID; a rank is in at most
  // one region per area ID. Each member's NIC keeps the region's directory
  // and multicasts the member's updates along it; the NICs run the join,
  // so an update that crosses a newcomer's join is applied there exactly
  // once. One member's updates are applied everywhere in posting order;
  // updates of the same bytes by different members have no order unless
  // the program gives them one (a lock, or waiting for the first's
  // completion, which comes when every member has it). At most 16 members
  // (home included), regions of 1 byte to 1 GiB.
  //
  // Errors before posting: EOPNOTSUPP (no shared_regions()), EINVAL (a rank
  // out of range, this rank as home, an area of another group, a range
  // outside the area, a mode the operation does not take (subscribe: basic,
  // twin; update: as push()) or bad parameters, a signal), EMSGSIZE,
  // EFAULT (an update's span not registered). At completion: ENOENT (the
  // home has no such area, Syndrome::bad_area), ERANGE (the home's region
  // of the area has another range), EISCONN (subscribe: in it already),
  // ENOTCONN (unsubscribe or update of a region this rank is not in, or
  // still joining: Syndrome::not_subscribed), EAGAIN (a region table is
  // full, or the region has 16 members), ECONNRESET (the home went away or
  // the join timed out), EHOSTUNREACH (a member's node stopped answering).
  bool shared_regions() const;  // RHINETDV_CAP_SHARE

  // Joins the region (home, area.id()) of area bytes [offset, offset +
  // length): completes when the home's bytes are in `area` (with
  // Mode::twin, XferOptions::twin_copy, also in the twin: later diff
  // updates compare with it). The Area must stay registered while
  // subscribed.
  Request isubscribe(std::uint32_t home, const Area& area, std::uint64_t offset,
                     std::uint64_t length, const XferOptions& options = {});
  // isubscribe(...).wait(), then a handle that unsubscribes when
  // destroyed.
  Result<SharedRegion> subscribe(std::uint32_t home, const Area& area,
                                 std::uint64_t offset, std::uint64_t length,
                                 const XferOptions& options = {});
  // Leaves the region (home, area_id): out at once (later updates are
  // dropped); completes when the home has taken it.
  Request iunsubscribe(std::uint32_t home, std::uint32_t area_id);
  Result<void> unsubscribe(std::uint32_t home, std::uint32_t area_id);
  // src -> (area_id, offset) at every other member of the region this rank
  // is in (as subscriber or home), as one operation that completes when
  // every member has it. Usually src is the changed part of this rank's own
  // copy (SharedRegion::update). Modes and options as push() by area, no
  // signal; a diff compares with the twin for every member (with several
  // writers, each diffs only the bytes it writes).
  Request update(std::uint32_t area_id, std::uint64_t offset,
                 std::span<const std::byte> src,
                 const XferOptions& options = {});

  // Collectives (allreduce, reduce, bcast, barrier executed by the NICs):
  // rhinet::Communicator (rhinet/communicator.hpp).

 private:
  friend struct detail::Device;
  friend class Communicator;
  friend class LockGuard;
  friend class SharedRegion;
  // Multicasts: Op::mcast to `ranks`, Op::mcast_switch to `switch_group`,
  // Op::share_update along the region's directory.
  Request post_mcast(Op op, std::span<const std::uint32_t> ranks,
                     std::uint16_t switch_group, std::uint32_t area_id,
                     std::uint64_t offset, std::span<const std::byte> src,
                     const XferOptions& options);
  // A word's bits as the NIC takes them (a signed value not sign-extended
  // past its width).
  template <AtomicWord T>
  static std::uint64_t bits(T v) {
    return static_cast<std::make_unsigned_t<T>>(v);
  }
  Request post_atomic(Op op, std::uint32_t rank, std::uint32_t area_id,
                      std::uint64_t offset, std::uint64_t compare_add,
                      std::uint64_t swap, const TriggerOn& on);
  Request post_sync(Op op, std::uint32_t manager, std::uint64_t id,
                    std::uint32_t count, const TriggerOn& on);
  Request post_share(Op op, std::uint32_t home, std::uint32_t area_id,
                     const Area* area, std::uint64_t offset,
                     std::uint64_t length, const XferOptions& options);
  Group(std::shared_ptr<detail::Device> dev, Bootstrap boot);
  // add_endpoint's: `parent`'s rank, size and table on `dev`.
  Group(std::shared_ptr<detail::Device> dev, const Group& parent);
  Request post(Op op, Target target, std::uint32_t rank, std::uint64_t remote,
               std::uint32_t rkey, std::uint64_t offset,
               std::span<std::byte> local, const XferOptions& options);
  Result<Area> register_area(std::uint32_t area_id, std::span<std::byte> memory,
                             Access access, bool on_demand);
  Request post_pin(Op op, std::uint32_t rank, std::uint32_t area_id,
                   std::uint64_t offset, std::uint64_t length);

  std::shared_ptr<detail::Device> dev_;
  std::optional<Bootstrap> boot_;  // none for an added endpoint
  std::vector<Peer> added_table_;  // an added endpoint's copy of the table
  std::uint32_t rank_ = 0, size_ = 0, group_ = 0;
  std::uint32_t local_rank_ = 0, local_size_ = 1;
  std::span<const Peer> table_;
};

// A held lock (Group::scoped_lock) that unlocks when destroyed: the
// destructor waits for the unlock, and its error (if any) goes where a
// detached request's goes (Group::sync()). Movable, not copyable; must not
// outlive its Group.
class [[nodiscard]] LockGuard {
 public:
  LockGuard(LockGuard&& other) noexcept;
  LockGuard& operator=(LockGuard&& other) noexcept;
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;
  ~LockGuard();

  std::uint64_t id() const { return id_; }
  std::uint32_t manager() const { return manager_; }
  // Still held (not unlocked, not moved from).
  bool owns() const { return group_ != nullptr; }
  // Unlocks now and says how it went (Group::unlock's errors); the guard
  // no longer owns the lock, whatever the result. EINVAL if it does not.
  Result<void> unlock();

 private:
  friend class Group;
  LockGuard(Group* group, std::uint64_t id, std::uint32_t manager)
      : group_(group), id_(id), manager_(manager) {}
  Group* group_ = nullptr;
  std::uint64_t id_ = 0;
  std::uint32_t manager_ = 0;
};

// This rank's membership of a shared region (Group::subscribe): its copy
// (bytes(), inside the Area) and updates of parts of it; unsubscribes when
// destroyed (waiting for it; an error goes where a detached request's goes,
// Group::sync()). Movable, not copyable; must not outlive its Group or
// its Area.
class [[nodiscard]] SharedRegion {
 public:
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  std::uint32_t home() const { return home_; }
  std::uint32_t area_id() const { return area_id_; }
  std::uint64_t offset() const { return offset_; }
  // This rank's copy: where the members' updates land.
  std::span<std::byte> bytes() const { return bytes_; }
  // Still in the region (not unsubscribed, not moved from).
  bool subscribed() const { return group_ != nullptr; }
  // Sends `part`, a span inside bytes() that this rank changed, to the
  // same place at every other member (Group::update). EINVAL when not
  // subscribed or `part` is not inside bytes().
  Request update(std::span<const std::byte> part,
                 const XferOptions& options = {});
  // Leaves now and says how it went (Group::unsubscribe's errors); the
  // handle is no longer subscribed, whatever the result.
  Result<void> unsubscribe();

 private:
  friend class Group;
  SharedRegion(Group* group, std::uint32_t home, std::uint32_t area_id,
               std::uint64_t offset, std::span<std::byte> bytes)
      : group_(group),
        home_(home),
        area_id_(area_id),
        offset_(offset),
        bytes_(bytes) {}
  Group* group_ = nullptr;
  std::uint32_t home_ = 0, area_id_ = 0;
  std::uint64_t offset_ = 0;
  std::span<std::byte> bytes_;
};

}  // namespace rhinet

#endif  // RHINET_GROUP_HPP
