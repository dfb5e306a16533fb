// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Areas (RHINETDV_1.0; groups, twins 1.1; on-demand 1.3): MRs that are
// also areas of the process, addressed by key (group << 16 | area ID).
#include <cerrno>

#include "dv.h"

namespace rhinet {
namespace {

// An MR that is also the area `key` (group << 16 | area ID) of the
// process, registered as ibv_reg_mr() would: kept out of fork() children,
// ibv_dereg_mr() undoes both. With @on_demand the kernel pins nothing;
// nothing here touches the pages either (MADV_DONTFORK faults none in).
ibv_mr* reg_area_key(ibv_pd* pd, void* addr, size_t length, int access,
                     uint32_t key, bool on_demand = false) {
  const Context* ctx = to_ctx(pd->context);
  if (!(ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS))
    return errno = EOPNOTSUPP, nullptr;  // rhinet.ko without areas
  if (on_demand && !pins_on_demand(ctx)) return errno = EOPNOTSUPP, nullptr;
  int err = ibv_dontfork_range(addr, length);
  if (err) return errno = err, nullptr;
  ibv_mr* mr = reg_mr_area(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                           access, &key, on_demand);
  if (!mr) {
    err = errno;
    ibv_dofork_range(addr, length);
    errno = err;
    return nullptr;
  }
  // What ibv_reg_mr() fills in after the provider.
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  return mr;
}

}  // namespace

// Whether this process may declare on-demand areas and post pd_req and
// pd_release: the NIC pins on demand and so does rhinet.ko.
bool pins_on_demand(const Context* ctx) {
  return (ctx->attr.caps & RHN_CAP_PIN_ON_DEMAND) &&
         (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_AREAS) &&
         (ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_PIN_ON_DEMAND);
}

bool in_groups(const Context* ctx, uint32_t group) {
  if (group == 0) return true;
  for (uint32_t i = 0; i < ctx->num_groups; i++)
    if (ctx->groups[i] == group) return true;
  return false;
}

}  // namespace rhinet

using rhinet::Context;
using rhinet::is_rhinet_context;
using rhinet::to_ctx;

RHINETDV_EXPORT ibv_mr* rhinetdv_reg_area(ibv_pd* pd, void* addr, size_t length,
                                          int access, uint32_t area_id) {
  if (!pd || area_id > 0xffff) return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  return rhinet::reg_area_key(pd, addr, length, access, area_id);
}

RHINETDV_EXPORT ibv_mr* rhinetdv_reg_area_ex(ibv_pd* pd, void* addr,
                                             size_t length, int access,
                                             const rhinetdv_area_attr* attr,
                                             size_t inlen) {
  rhinetdv_area_attr a;
  if (!pd || !rhinet::extend(attr, inlen, &a, sizeof(a)) ||
      (a.comp_mask & ~uint64_t{RHINETDV_AREA_ATTR_MASK_FLAGS}) ||
      a.area_id > 0xffff || a.group_id > 0xffff)
    return errno = EINVAL, nullptr;
  if ((a.flags & ~uint32_t{RHINETDV_AREA_PIN_ON_DEMAND}) || a.reserved ||
      (a.flags && !(a.comp_mask & RHINETDV_AREA_ATTR_MASK_FLAGS)))
    return errno = EINVAL, nullptr;
  if (!is_rhinet_context(pd->context)) return errno = EOPNOTSUPP, nullptr;
  if (!rhinet::in_groups(to_ctx(pd->context), a.group_id))
    return errno = EPERM, nullptr;
  return rhinet::reg_area_key(pd, addr, length, access,
                              RHN_AREA_KEY(a.group_id, a.area_id),
                              a.flags & RHINETDV_AREA_PIN_ON_DEMAND);
}

RHINETDV_EXPORT int rhinetdv_query_groups(ibv_context* context,
                                          uint16_t* groups, int n) {
  if (n < 0 || (n && !groups)) return errno = EINVAL, -1;
  if (!is_rhinet_context(context)) return errno = EOPNOTSUPP, -1;
  const Context* ctx = to_ctx(context);
  const int have = static_cast<int>(ctx->num_groups);
  for (int i = 0; i < have && i < n; i++) groups[i] = ctx->groups[i];
  return have < n ? have : n;
}

RHINETDV_EXPORT uint32_t rhinetdv_twin_handle(ibv_dm* dm) {
  if (!dm || !is_rhinet_context(dm->context)) return errno = EINVAL, 0;
  return rhinet::to_dm(dm)->twin_handle;
}
