// SPDX-License-Identifier: BSD-2-Clause
// The transfer-mode checks that PUSH/PULL (check_xfer) and isend/irecv
// (check_message) share (internal).
#ifndef RHINET_USERLIB_XFER_DETAIL_HPP
#define RHINET_USERLIB_XFER_DETAIL_HPP

#include <cstddef>

#include "rhinet/result.hpp"
#include "rhinet/xfer.hpp"

namespace rhinet::detail {

// Whether @op takes @mode, as the operation table says: push and isend
// take basic, diff, bitmap, stride; pull and irecv basic, twin, bitmap,
// stride; multicasts and updates as push; subscribe basic and twin.
// False for operations that move no data.
bool mode_allowed(Op op, Mode mode);

// EINVAL for a partial mode over an empty span, and for parameters of
// another mode than options.mode (the mode was forgotten).
Result<void> check_stray_parameters(Op op, const XferOptions& options,
                                    std::size_t length);

// The parameters of options.mode over a local span of `length` bytes:
// stride (nonzero block and count, strides not overlapping, the blocks
// inside the span; for a message, which travels packed, remote_stride 0
// or the block), bitmap (nonzero granularity, enough bits), twin (given,
// the span's copy inside it). EINVAL with a message naming the rule.
Result<void> check_mode_parameters(Op op, const XferOptions& options,
                                   std::size_t length);

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_XFER_DETAIL_HPP
