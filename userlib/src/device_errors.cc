// SPDX-License-Identifier: BSD-2-Clause
#include "device_errors.hpp"

#include <cerrno>

namespace rhinet::detail {

std::string context_refusal(int err) {
  // Documentation/driver/uapi.md, "alloc ucontext": each device context
  // takes one doorbell page of the NIC and is charged to its user.
  switch (err) {
    case EDQUOT:
      return "this user already holds max_contexts_per_user device "
             "contexts (doorbell pages) on this node (rhinet.ko's module "
             "parameter, 64 by default; every process's join and every "
             "Group::add_endpoint takes one)";
    case EUSERS:
      return "every NIC account on this node is taken by other users "
             "(each user with a device context holds one)";
    case ENOSPC:
      return "every doorbell page of this node's NIC is taken (one per "
             "device context, of every user)";
    default:
      return {};
  }
}

}  // namespace rhinet::detail
