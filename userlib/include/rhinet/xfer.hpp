// SPDX-License-Identifier: BSD-2-Clause
// Options of PUSH and PULL: the partial-transfer modes (Mode below; the
// model in Documentation/userlib/design.md, "Partial transfers as placed
// packets") with their parameters, put-with-signal and the per-operation
// flags. isend and irecv (message.hpp) take the same options: the same
// modes (an isend as a PUSH, an irecv as a PULL, each for its own memory)
// and, for a basic isend, inline_data.
#ifndef RHINET_XFER_HPP
#define RHINET_XFER_HPP

#include <cstddef>
#include <cstdint>
#include <span>

#include "rhinet/result.hpp"
#include "rhinet/trigger.hpp"

namespace rhinet {

class Twin;

// The operations (values of RHINETDV_OP_*).
enum class Op : std::uint32_t {
  push = 1,
  pull = 2,
  isend = 3,
  irecv = 4,
  pd_req = 5,  // remote pin-down: pin a part of an on-demand area
  pd_release = 6,
  mcast = 7,  // sequential multicast: a PUSH to many ranks, one by one
  lock = 8,   // locks and barriers kept by a manager rank's NIC
  unlock = 9,
  barrier = 10,
  mcast_switch = 11,  // simultaneous multicast: the switch replicates
  subscribe = 12,     // shared regions: join a region at its home
  unsubscribe = 13,
  share_update = 14,  // a PUSH to every other member of the region
  fetch_add = 15,     // remote atomics on an aligned 64-bit word of an area
  compare_swap = 16,
  collective = 17,   // allreduce, reduce, bcast, barrier (rhinet::Communicator)
  trigger_add = 18,  // an add to a peer's trigger counter (Group::trigger_add)
  atomic = 19,       // the whole atomic family, 4 or 8 bytes (Group::atomic)
  watch = 20,        // a watch of one of this process's areas (wait_for_area)
};

// The operations of Group::atomic (values of RHINETDV_ATOMIC_*).
enum class AtomicOp : std::uint32_t {
  fetch_add = 1,     // word += operand
  compare_swap = 2,  // word = desired if word == operand
  swap = 3,          // word = operand (without fetch: a set)
  fetch = 4,         // the word is only read
  fetch_and = 5,     // word &= operand
  fetch_or = 6,      // word |= operand
  fetch_xor = 7,     // word ^= operand
};

// The partial-transfer modes (values of RHINETDV_MODE_*). Each side picks
// one for its own memory: PUSH and isend take basic, diff, bitmap, stride; PULL
// and irecv take basic, twin, bitmap, stride.
enum class Mode : std::uint32_t {
  basic = 0,   // the whole span
  twin = 1,    // PULL, irecv: the NIC also keeps a copy in twin memory
  diff = 2,    // PUSH, isend: only the bytes that differ from the twin copy
  bitmap = 3,  // only the blocks marked in a bitmap
  stride = 4,  // `count` blocks, strided on both sides
};

// "basic", "twin", ...
const char* mode_name(Mode mode);
const char* op_name(Op op);

// Mode::stride: `count` blocks of `block` bytes, `local_stride` bytes apart
// in the local span (which must hold (count-1)*local_stride + block bytes)
// and `remote_stride` apart from the remote offset (or address). A message
// travels packed: for isend and irecv remote_stride is 0 (or the block).
struct Stride {
  std::uint32_t block = 0;
  std::uint32_t count = 0;
  std::uint64_t local_stride = 0;
  std::uint64_t remote_stride = 0;
};

// Mode::bitmap: bit i (LSB first in each byte) selects bytes
// [i*granularity, (i+1)*granularity) of the span. `bits` must lie inside a
// registered Buffer or Area of the group (the NIC reads it) and hold at
// least ceil(span bytes / granularity) bits.
struct Bitmap {
  std::span<const std::byte> bits;
  std::uint32_t granularity = 0;
};

// Mode::twin / Mode::diff: twin memory and where this span's copy starts
// in it (offset + span bytes must fit in the twin).
struct TwinRef {
  const Twin* twin = nullptr;
  std::uint64_t offset = 0;
};

// Everything but the addresses of one PUSH or PULL. Aggregate: use
// designated initializers, e.g.
//   {.mode = Mode::diff, .twin = {&twin, 0}, .signal = 1}
// or the helpers below.
struct XferOptions {
  Mode mode = Mode::basic;
  Stride stride{};  // Mode::stride
  Bitmap bitmap{};  // Mode::bitmap
  TwinRef twin{};   // Mode::twin, Mode::diff
  // PUSH by area only: when nonzero, the target's signal count of the area
  // grows by this value once the data has landed (put-with-signal); the
  // target waits with Group::wait_signal.
  std::uint32_t signal = 0;
  // Start only after this process's earlier PULLs completed.
  bool fence = false;
  // PUSH and isend, Mode::basic only: the bytes are copied into the work
  // request (at most Group::max_inline() bytes), so the span need not be
  // registered and is free again as soon as push() / isend() returns.
  bool inline_data = false;
  // Triggered (waits on a counter) and/or chained (adds to one when done):
  // see trigger.hpp. The Request completes once the operation ran.
  TriggerOn trigger{};

  static XferOptions strided(const Stride& s) {
    return {.mode = Mode::stride, .stride = s};
  }
  static XferOptions with_bitmap(std::span<const std::byte> bits,
                                 std::uint32_t granularity) {
    return {.mode = Mode::bitmap, .bitmap = {bits, granularity}};
  }
  // PULL that also fills `twin` from `offset`.
  static XferOptions twin_copy(const Twin& twin, std::uint64_t offset = 0) {
    return {.mode = Mode::twin, .twin = {&twin, offset}};
  }
  // PUSH of only what differs from `twin` at `offset`.
  static XferOptions diff(const Twin& twin, std::uint64_t offset = 0) {
    return {.mode = Mode::diff, .twin = {&twin, offset}};
  }
  XferOptions& with_signal(std::uint32_t value) {
    signal = value;
    return *this;
  }
};

// How the remote side of an operation is named.
enum class Target : std::uint32_t {
  area = 0,  // (rank, area ID, offset)
  key = 1,   // (rank, remote address, rkey)
};

// The checks push/pull (and mcast and share_update, PUSHes by area to many
// ranks, and subscribe, which takes basic or twin: all with Target::area)
// make before posting (exposed for tests and for callers who want to
// validate once): the modes each operation takes (Mode above), the
// mode's parameters against `length` (the local span's bytes), signal
// only on a PUSH by area, inline only on a basic PUSH. Errors: EINVAL with a
// message naming the rule (also for Op::isend/irecv: see check_message);
// EMSGSIZE for a span of 4 GiB or more. Does not check what needs the device
// (registration, max_inline, the twin's device).
Result<void> check_xfer(Op op, Target target, const XferOptions& options,
                        std::size_t length);

}  // namespace rhinet

#endif  // RHINET_XFER_HPP
