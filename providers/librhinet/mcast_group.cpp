// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The administrator's switch groups: rhinet.ko's driver methods
// RHINET_IB_METHOD_SET_MCAST_GROUP / QUERY_MCAST_GROUP (ioctl, driver
// namespace, no object handle), which check CAP_NET_ADMIN themselves.
#include <infiniband/rhinetdv.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "provider.h"

#define RHINETDV_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

static_assert(sizeof(rhinetdv_mcast_member) == sizeof(rhinet_mcast_member));
static_assert(RHINETDV_MCAST_GROUP_FIRST == RHINET_MCAST_GROUP_FIRST &&
              RHINETDV_MCAST_GROUP_LAST == RHINET_MCAST_GROUP_LAST &&
              RHINETDV_MCAST_GROUP_MAX_MEMBERS ==
                  RHINET_MCAST_GROUP_MAX_MEMBERS);

template <size_t N>
struct MethodCall {
  alignas(8) uint8_t
      bytes[sizeof(ib_uverbs_ioctl_hdr) + N * sizeof(ib_uverbs_attr)] = {};
  ib_uverbs_ioctl_hdr& hdr = *reinterpret_cast<ib_uverbs_ioctl_hdr*>(bytes);
  explicit MethodCall(uint16_t method) {
    hdr.length = sizeof(bytes);
    hdr.num_attrs = N;
    hdr.object_id = RHINET_IB_OBJECT_MCAST_SWITCH;
    hdr.method_id = method;
  }
  // Data of up to 8 bytes travels inline in the attribute, longer data by
  // pointer (the kernel's uverbs_attr_ptr_is_inline).
  void in(size_t i, uint16_t id, const void* p, size_t len) {
    ib_uverbs_attr& a = hdr.attrs[i];
    a.attr_id = id;
    a.len = static_cast<uint16_t>(len);
    if (len <= sizeof(a.data)) {
      if (len) std::memcpy(&a.data, p, len);
    } else
      a.data = reinterpret_cast<uintptr_t>(p);
  }
  void out(size_t i, uint16_t id, void* p, size_t len) {
    ib_uverbs_attr& a = hdr.attrs[i];
    a.attr_id = id;
    a.len = static_cast<uint16_t>(len);
    a.data = reinterpret_cast<uintptr_t>(p);
  }
  int run(ibv_context* context) {
    if (ioctl(context->cmd_fd, RDMA_VERBS_IOCTL, bytes) == 0) return 0;
    // A driver without the methods: the object or method is unknown.
    return errno == EPROTONOSUPPORT ? EOPNOTSUPP : errno;
  }
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
