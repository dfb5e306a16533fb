// SPDX-License-Identifier: BSD-2-Clause
// What the files of Group (group*.cc, one per operation family) share.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "device.hpp"
#include "rhinet/group.hpp"

namespace rhinet::detail {

inline Error errno_error(int e, std::string what) {
  return Error(e ? e : EIO, std::move(what));
}

// trigger.cc: arms the endpoint for the next operation posted on it as
// `on` says (0 when it names no counter, else rhinetdv_set_trigger's
// errno), or disarms it after a refused post.
int arm_trigger(rhinetdv_endpoint* ep, const TriggerOn& on);
void disarm_trigger(rhinetdv_endpoint* ep);

// Device::post_in_slot of one operation triggered and/or chained as `on`
// says (untriggered when it names no counter). A post refused before the
// NIC saw it leaves the endpoint disarmed for the next one.
template <class Fail, class Post>
Request post_triggered(Device& dev, const TriggerOn& on, const Device::Slot& d,
                       Fail&& fail, const std::string& call, Post&& post) {
  if (const int e = arm_trigger(dev.ep, on))
    return fail(e, "rhinetdv_set_trigger");
  Request r = dev.post_in_slot(d, fail, call, std::forward<Post>(post));
  // Done at once: refused before the NIC saw it (a posted one holds a slot).
  if ((on.counter || on.chain) && r.done()) disarm_trigger(dev.ep);
  return r;
}

inline std::string hex(std::uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The partial mode of `o` into a PUSH's, PULL's or mcast's attributes
// (rhinetdv_xfer_ex and rhinetdv_mcast_attr name these fields alike).
template <typename Attr>
void put_mode(Attr& a, const XferOptions& o, std::uint32_t bitmap_lkey) {
  a.mode = static_cast<std::uint32_t>(o.mode);
  switch (o.mode) {
    case Mode::stride:
      a.block = o.stride.block;
      a.count = o.stride.count;
      a.local_stride = o.stride.local_stride;
      a.remote_stride = o.stride.remote_stride;
      // One block: the strides say nothing, but the NIC wants them >= block.
      if (a.count == 1) {
        if (a.local_stride < a.block) a.local_stride = a.block;
        if (a.remote_stride < a.block) a.remote_stride = a.block;
      }
      break;
    case Mode::bitmap:
      a.block = o.bitmap.granularity;
      a.bitmap = o.bitmap.bits.data();
      a.bitmap_lkey = bitmap_lkey;
      break;
    case Mode::diff:
    case Mode::twin:
      a.twin = o.twin.twin->dm();
      a.twin_offset = o.twin.offset;
      break;
    case Mode::basic:
      break;
  }
}

}  // namespace rhinet::detail
