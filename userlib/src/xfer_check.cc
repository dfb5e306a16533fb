// SPDX-License-Identifier: BSD-2-Clause
// Which transfer modes each operation takes, and the parameters of each
// mode, checked before posting (PUSH and PULL here; isend and irecv in
// message.cc, through xfer_detail.hpp). The modes and the operations'
// names come from the hardware contract's operation table (hw_ops.h),
// whose direct-verbs opcodes are the values of Op.
#include <array>
#include <cerrno>
#include <limits>
#include <string>

#include "rhinet/area.hpp"
#include "rhinet/hw.h"
#include "rhinet/xfer.hpp"
#include "xfer_detail.hpp"

namespace rhinet {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::basic:
      return "basic";
    case Mode::twin:
      return "twin";
    case Mode::diff:
      return "diff";
    case Mode::bitmap:
      return "bitmap";
    case Mode::stride:
      return "stride";
  }
  return "unknown";
}

namespace {

// The operation table's rows by direct-verbs opcode (= Op): name and modes.
struct OpRow {
  const char* name = nullptr;
  std::uint32_t modes = 0;
};

constexpr std::array<OpRow, 32> kOps = [] {
  std::array<OpRow, 32> t{};
#define RHINET_OP_ROW(op, name, wire, cqe, dv, dv_name, flags, modes, ...) \
  if (dv) t[dv] = OpRow{dv_name, modes};
  RHN_OP_TABLE(RHINET_OP_ROW)
#undef RHINET_OP_ROW
  return t;
}();

const OpRow* row_of(Op op) {
  const auto i = static_cast<std::uint32_t>(op);
  return i < kOps.size() && kOps[i].name ? &kOps[i] : nullptr;
}

}  // namespace

const char* op_name(Op op) {
  const OpRow* r = row_of(op);
  return r ? r->name : "unknown";
}

namespace {

Error invalid(std::string what) { return Error(EINVAL, std::move(what)); }

}  // namespace

namespace detail {

bool mode_allowed(Op op, Mode mode) {
  // Operations that move no data take no mode at all.
  const OpRow* r = row_of(op);
  const auto m = static_cast<std::uint32_t>(mode);
  return r && r->modes != RHN_XFER_BASIC_ONLY && m < 8 &&
         (r->modes & RHN_XFER_MODE_BIT(m));
}

Result<void> check_stray_parameters(Op op, const XferOptions& o,
                                    std::size_t length) {
  const std::string op_s = op_name(op);
  const std::string mode_s = mode_name(o.mode);
  const bool message = op == Op::isend || op == Op::irecv;
  if (length == 0 && o.mode != Mode::basic)
    return invalid(op_s + ": empty span in mode " + mode_s);

  // Parameters of another mode are a mistake (the mode was forgotten).
  const bool has_stride = o.stride.block || o.stride.count ||
                          o.stride.local_stride || o.stride.remote_stride;
  const bool has_bitmap = !o.bitmap.bits.empty() || o.bitmap.granularity;
  const bool has_twin = o.twin.twin || o.twin.offset;
  if (has_stride && o.mode != Mode::stride)
    return invalid(op_s + ": stride parameters given in mode " + mode_s +
                   " (set .mode = Mode::stride)");
  if (has_bitmap && o.mode != Mode::bitmap)
    return invalid(op_s + ": a bitmap given in mode " + mode_s +
                   " (set .mode = Mode::bitmap)");
  if (has_twin && o.mode != Mode::twin && o.mode != Mode::diff)
    return invalid(op_s + ": a twin given in mode " + mode_s +
                   " (set .mode = " +
                   (message ? "Mode::twin for irecv, Mode::diff for isend)"
                            : "Mode::twin for pull, Mode::diff for push)"));
  return ok();
}

Result<void> check_mode_parameters(Op op, const XferOptions& o,
                                   std::size_t length) {
  const std::string op_s = op_name(op);
  const std::string mode_s = mode_name(o.mode);
  const bool message = op == Op::isend || op == Op::irecv;
  switch (o.mode) {
    case Mode::basic:
      break;
    case Mode::stride: {
      const Stride& s = o.stride;
      if (!s.block || !s.count)
        return invalid(op_s + " stride: block and count must be nonzero");
      // A message travels packed: the sender's blocks arrive one after
      // the other, and the receiver's strides are its own.
      if (message && s.count > 1 && s.remote_stride &&
          s.remote_stride != s.block)
        return invalid(op_s + " stride: a message travels packed, so " +
                       "remote_stride is 0 or the block (" +
                       std::to_string(s.block) + "), not " +
                       std::to_string(s.remote_stride) +
                       "; where its blocks land is the " +
                       (op == Op::isend ? "irecv's" : "isend's") +
                       " choice (local_stride on that side)");
      if (s.count > 1 &&
          (s.local_stride < s.block || (!message && s.remote_stride < s.block)))
        return invalid(
            op_s + " stride: strides (local " + std::to_string(s.local_stride) +
            (message ? std::string()
                     : ", remote " + std::to_string(s.remote_stride)) +
            ") must be at least the block (" + std::to_string(s.block) +
            "): blocks would overlap");
      const std::uint64_t n = s.count - 1ull;
      constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
      if ((n && s.local_stride > (kMax - s.block) / n) ||
          (n && !message && s.remote_stride > (kMax - s.block) / n))
        return invalid(op_s + " stride: extent overflows");
      const std::uint64_t extent = n * s.local_stride + s.block;
      if (extent > length)
        return invalid(op_s + " stride: " + std::to_string(s.count) +
                       " blocks of " + std::to_string(s.block) + " bytes " +
                       std::to_string(s.local_stride) +
                       " apart need a local span of " + std::to_string(extent) +
                       " bytes; it has " + std::to_string(length));
      break;
    }
    case Mode::bitmap: {
      const Bitmap& b = o.bitmap;
      if (!b.granularity)
        return invalid(op_s + " bitmap: granularity must be nonzero");
      const std::uint64_t blocks = (length + b.granularity - 1) / b.granularity;
      if (b.bits.size() * 8ull < blocks)
        return invalid(op_s + " bitmap: " + std::to_string(length) +
                       " bytes in blocks of " + std::to_string(b.granularity) +
                       " need " + std::to_string(blocks) +
                       " bits; the bitmap has " +
                       std::to_string(b.bits.size() * 8));
      break;
    }
    case Mode::twin:
    case Mode::diff: {
      if (!o.twin.twin)
        return invalid(op_s + " " + mode_s +
                       ": no twin memory given (XferOptions::twin)");
      const std::size_t size = o.twin.twin->size();
      if (o.twin.offset > size || length > size - o.twin.offset)
        return invalid(op_s + " " + mode_s + ": twin bytes [" +
                       std::to_string(o.twin.offset) + ", " +
                       std::to_string(o.twin.offset + length) +
                       ") beyond the twin's " + std::to_string(size));
      break;
    }
  }
  return ok();
}

}  // namespace detail

Result<void> check_xfer(Op op, Target target, const XferOptions& o,
                        std::size_t length) {
  const std::string op_s = op_name(op);
  const bool multicast =
      op == Op::mcast || op == Op::mcast_switch || op == Op::share_update;
  const bool subscribe = op == Op::subscribe;
  if (op != Op::push && op != Op::pull && !multicast && !subscribe)
    return invalid(op_s +
                   " is not a PUSH, PULL, mcast, subscribe or share_update "
                   "(check_message checks isend and irecv)");
  if ((multicast || subscribe) && target != Target::area)
    return invalid(op_s +
                   ": the target is an area ID and offset, the same at "
                   "every member (not an address and key)");
  const bool pushes = op == Op::push || multicast;
  const auto mode_v = static_cast<std::uint32_t>(o.mode);
  if (mode_v > static_cast<std::uint32_t>(Mode::stride))
    return invalid(op_s + ": unknown mode " + std::to_string(mode_v));
  const std::string mode_s = mode_name(o.mode);
  if (!detail::mode_allowed(op, o.mode))
    return invalid(op_s + " does not take mode " + mode_s +
                   " (push, mcast and share_update take basic, "
                   "diff, bitmap, stride; pull takes basic, twin, bitmap, "
                   "stride; subscribe basic, twin)");
  if (length > std::numeric_limits<std::uint32_t>::max())
    return Error(EMSGSIZE, op_s + ": " + std::to_string(length) +
                               " bytes; one operation moves less than 4 GiB");
  if (auto r = detail::check_stray_parameters(op, o, length); !r) return r;
  if (o.signal && (!pushes || target != Target::area))
    return invalid(op_s + ": a signal goes only with a push by area ID");
  // The NIC numbers a region's updates itself and signals nothing.
  if (o.signal && op == Op::share_update)
    return invalid(op_s + ": a shared region's update takes no signal");
  if (o.inline_data && (!pushes || o.mode != Mode::basic))
    return invalid(op_s + ": inline data goes only with a basic push");
  if (o.fence && (multicast || subscribe))
    return invalid(op_s +
                   ": fence is not taken (a multicast reads nothing "
                   "back; a subscribe waits for nothing of this process)");
  // Group::push, pull and the list mcast arm the endpoint for a triggered
  // operation (isend too, check_message; atomics, locks and trigger_add
  // take a TriggerOn of their own).
  if ((o.trigger.counter || o.trigger.chain) && op != Op::push &&
      op != Op::pull && op != Op::mcast)
    return invalid(op_s +
                   ": takes no trigger (push, pull, isend, the list mcast, "
                   "atomics, locks and collectives do)");
  return detail::check_mode_parameters(op, o, length);
}

}  // namespace rhinet
