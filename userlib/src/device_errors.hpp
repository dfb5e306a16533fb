// SPDX-License-Identifier: BSD-2-Clause
// Why the kernel refused this process a device context (ibv_open_device:
// rhinet.ko's alloc_ucontext), in words that name the limit reached.
// Device-free, so the core library and its unit tests have it.
#ifndef RHINET_USERLIB_DEVICE_ERRORS_HPP
#define RHINET_USERLIB_DEVICE_ERRORS_HPP

#include <string>

namespace rhinet::detail {

// The limit behind errno `err` of ibv_open_device on a rhinet device, or
// "" for an errno the driver does not use for a limit.
std::string context_refusal(int err);

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_DEVICE_ERRORS_HPP
