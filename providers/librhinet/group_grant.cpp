// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The administrator's process group grants: rhinet.ko's driver methods
// RHINET_IB_METHOD_GRANT_GROUP / REVOKE_GROUP / QUERY_GROUPS (ioctl, driver
// namespace, no object handle), which check CAP_NET_ADMIN themselves.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <cstring>

#include "ioctl_method.h"
#include "provider.h"

#define RHINETDV_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

static_assert(sizeof(rhinetdv_group_grant) == sizeof(rhinet_group_grant));
static_assert(offsetof(rhinetdv_group_grant, expires_in) ==
              offsetof(rhinet_group_grant, expires_in));
static_assert(RHINETDV_MAX_GROUP_GRANTS == RHINET_MAX_GROUP_GRANTS);
constexpr int flag(int f) { return f; }
static_assert(flag(RHINETDV_GROUP_GRANT_UID) == RHINET_GROUP_GRANT_UID &&
              flag(RHINETDV_GROUP_GRANT_GID) == RHINET_GROUP_GRANT_GID &&
              flag(RHINETDV_GROUP_GRANT_LIFETIME) ==
                  RHINET_GROUP_GRANT_LIFETIME &&
              flag(RHINETDV_GROUP_GRANT_REVOKED) ==
                  RHINET_GROUP_GRANT_REVOKED &&
              flag(RHINETDV_GROUP_GRANT_EXPIRED) == RHINET_GROUP_GRANT_EXPIRED);

template <size_t N>
struct MethodCall : rhinet::MethodCall<N> {
  explicit MethodCall(uint16_t method)
      : rhinet::MethodCall<N>(RHINET_IB_OBJECT_GROUP, method) {}
};

constexpr uint32_t kGrantMask = RHINETDV_GROUP_GRANT_UID |
                                RHINETDV_GROUP_GRANT_GID |
                                RHINETDV_GROUP_GRANT_LIFETIME;

}  // namespace

RHINETDV_EXPORT int rhinetdv_grant_group(
    ibv_context* context, const rhinetdv_group_grant_attr* attr) {
  if (!context || !attr || (attr->comp_mask & ~kGrantMask) || attr->reserved ||
      attr->reserved1)
    return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  MethodCall<5> call(RHINET_IB_METHOD_GRANT_GROUP);
  size_t n = 0;
  call.in(n++, RHINET_IB_ATTR_GRANT_GROUP_ID, &attr->group,
          sizeof(attr->group));
  call.in(n++, RHINET_IB_ATTR_GRANT_GROUP_TOKEN, &attr->token,
          sizeof(attr->token));
  if (attr->comp_mask & RHINETDV_GROUP_GRANT_UID)
    call.in(n++, RHINET_IB_ATTR_GRANT_GROUP_UID, &attr->uid, sizeof(attr->uid));
  if (attr->comp_mask & RHINETDV_GROUP_GRANT_GID)
    call.in(n++, RHINET_IB_ATTR_GRANT_GROUP_GID, &attr->gid, sizeof(attr->gid));
  if (attr->comp_mask & RHINETDV_GROUP_GRANT_LIFETIME)
    call.in(n++, RHINET_IB_ATTR_GRANT_GROUP_LIFETIME, &attr->lifetime,
            sizeof(attr->lifetime));
  call.trim(n);
  return call.run(context);
}

RHINETDV_EXPORT int rhinetdv_revoke_group(ibv_context* context, uint16_t group,
                                          uint32_t* members) {
  if (!context) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  uint32_t m = 0;
  MethodCall<2> call(RHINET_IB_METHOD_REVOKE_GROUP);
  call.in(0, RHINET_IB_ATTR_REVOKE_GROUP_ID, &group, sizeof(group));
  call.out(1, RHINET_IB_ATTR_REVOKE_GROUP_MEMBERS, &m, sizeof(m));
  if (int err = call.run(context)) return err;
  if (members) *members = m;
  return 0;
}

RHINETDV_EXPORT int rhinetdv_query_group_grants(ibv_context* context,
                                                rhinetdv_group_grant* grants,
                                                uint32_t* count) {
  if (!context || !count || (*count && !grants)) return EINVAL;
  if (!rhinet::is_rhinet_context(context)) return EOPNOTSUPP;
  // An attribute's length is 16 bits: the node's whole table fits.
  const uint32_t capacity =
      *count < RHINETDV_MAX_GROUP_GRANTS ? *count : RHINETDV_MAX_GROUP_GRANTS;
  uint32_t have = 0;
  MethodCall<2> call(RHINET_IB_METHOD_QUERY_GROUPS);
  call.out(0, RHINET_IB_ATTR_QUERY_GROUPS_COUNT, &have, sizeof(have));
  call.out(1, RHINET_IB_ATTR_QUERY_GROUPS_ENTRIES, grants,
           capacity * sizeof(*grants));
  if (int err = call.run(context)) return err;
  *count = have;
  return 0;
}
