// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The context's doorbell page for a peer device (RHINETDV_1.14): rhinet.ko's
// driver method RHINET_IB_METHOD_EXPORT_DOORBELL returns it as a dma-buf,
// which the device's driver imports (xpu.ko: XPU_IOC_IMPORT_DMABUF).
#include <fcntl.h>

#include <cerrno>

#include "dv.h"
#include "ioctl_method.h"

RHINETDV_EXPORT int rhinetdv_export_doorbell(
    ibv_context* context, const rhinetdv_export_doorbell_attr* attr,
    size_t inlen) {
  // No attributes (NULL, 0): the defaults.
  rhinetdv_export_doorbell_attr a{};
  if (!context ||
      ((attr || inlen) && !rhinet::extend(attr, inlen, &a, sizeof(a))) ||
      a.comp_mask || a.reserved ||
      (a.flags & ~RHINETDV_EXPORT_DOORBELL_CLOEXEC))
    return errno = EINVAL, -1;
  if (!rhinet::is_rhinet_context(context)) return errno = EOPNOTSUPP, -1;
  const uint32_t flags =
      a.flags & RHINETDV_EXPORT_DOORBELL_CLOEXEC ? O_CLOEXEC : 0;
  int32_t fd = -1;
  rhinet::MethodCall<2> call(RHINET_IB_OBJECT_DOORBELL,
                             RHINET_IB_METHOD_EXPORT_DOORBELL);
  call.in(0, RHINET_IB_ATTR_EXPORT_DOORBELL_FLAGS, &flags, sizeof(flags));
  call.out(1, RHINET_IB_ATTR_EXPORT_DOORBELL_FD, &fd, sizeof(fd));
  if (const int err = call.run(context)) return errno = err, -1;
  return fd;
}

// The CPU's doorbell for a QP whose ring another device fills
// (RHINETDV_1.15): only the kick; the record is the device's to write.
RHINETDV_EXPORT int rhinetdv_ring_sq(ibv_qp* qp) {
  if (!qp) return EINVAL;
  if (!rhinet::is_rhinet_context(qp->context)) return EOPNOTSUPP;
  rhinet::to_ctx(qp->context)->kick(RHN_DB_SQ, rhinet::to_qp(qp)->qpn);
  return 0;
}
