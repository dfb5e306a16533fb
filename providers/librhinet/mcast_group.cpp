// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The administrator's switch groups: rhinet.ko's driver methods
// RHINET_IB_METHOD_SET_MCAST_GROUP / QUERY_MCAST_GROUP (ioctl, driver
// namespace, no object handle), which check CAP_NET_ADMIN themselves.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <cstring>

#include "ioctl_method.h"
#include "provider.h"

#define RHINETDV_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

static_assert(sizeof(rhinetdv_mcast_member) == sizeof(rhinet_mcast_member));
static_assert(RHINETDV_MCAST_GROUP_FIRST == RHINET_MCAST_GROUP_FIRST &&
              RHINETDV_MCAST_GROUP_LAST == RHINET_MCAST_GROUP_LAST &&
              RHINETDV_MCAST_GROUP_MAX_MEMBERS ==
                  RHINET_MCAST_GROUP_MAX_MEMBERS);

template <size_t N>
struct MethodCall : rhinet::MethodCall<N> {
  explicit MethodCall(uint16_t method)
      : rhinet::MethodCall<N>(RHINET_IB_OBJECT_MCAST_SWITCH, method) {}
};

}  // namespace

RHINETDV_EXPORT int rhinetdv_set_mcast_group(
    ibv_context* context, uint16_t group, uint16_t endpoint_group,
    const rhinetdv_mcast_member* members, uint32_t count) {
  if (!context || (count && !members)) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  // The kernel judges the count; only what an attribute cannot carry
  // (16-bit lengths) stops here.
  if (count > UINT16_MAX / sizeof(*members)) return E2BIG;
  MethodCall<3> call(RHINET_IB_METHOD_SET_MCAST_GROUP);
  call.in(0, RHINET_IB_ATTR_SET_MCAST_GROUP_ID, &group, sizeof(group));
  call.in(1, RHINET_IB_ATTR_SET_MCAST_GROUP_ENDPOINT_GROUP, &endpoint_group,
          sizeof(endpoint_group));
  // No members (length 0): the group is cleared.
  call.in(2, RHINET_IB_ATTR_SET_MCAST_GROUP_MEMBERS, members,
          count * sizeof(*members));
  return call.run(context);
}

RHINETDV_EXPORT int rhinetdv_query_mcast_group(ibv_context* context,
                                               uint16_t group,
                                               uint16_t* endpoint_group,
                                               rhinetdv_mcast_member* members,
                                               uint32_t* count) {
  if (!context || !endpoint_group || !count || (*count && !members))
    return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  const uint32_t capacity = *count < RHINETDV_MCAST_GROUP_MAX_MEMBERS
                                ? *count
                                : RHINETDV_MCAST_GROUP_MAX_MEMBERS;
  uint32_t have = 0;
  MethodCall<4> call(RHINET_IB_METHOD_QUERY_MCAST_GROUP);
  call.in(0, RHINET_IB_ATTR_QUERY_MCAST_GROUP_ID, &group, sizeof(group));
  call.out(1, RHINET_IB_ATTR_QUERY_MCAST_GROUP_ENDPOINT_GROUP, endpoint_group,
           sizeof(*endpoint_group));
  call.out(2, RHINET_IB_ATTR_QUERY_MCAST_GROUP_COUNT, &have, sizeof(have));
  call.out(3, RHINET_IB_ATTR_QUERY_MCAST_GROUP_MEMBERS, members,
           capacity * sizeof(*members));
  if (int err = call.run(context)) return err;
  *count = have;
  return 0;
}
