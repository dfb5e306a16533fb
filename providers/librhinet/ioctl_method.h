// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// One call of a driver method of rhinet.ko's uverbs ioctl interface
// (driver namespace): the administrator's switch groups (mcast_group.cpp)
// and process group grants (group_grant.cpp), without an object handle;
// trigger counters (dv_trigger.cpp), objects of their own.
#ifndef RHINET_IOCTL_METHOD_H
#define RHINET_IOCTL_METHOD_H

#include <infiniband/verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rhinet {

template <size_t N>
struct MethodCall {
  alignas(8) uint8_t
      bytes[sizeof(ib_uverbs_ioctl_hdr) + N * sizeof(ib_uverbs_attr)] = {};
  ib_uverbs_ioctl_hdr& hdr = *reinterpret_cast<ib_uverbs_ioctl_hdr*>(bytes);
  MethodCall(uint16_t object, uint16_t method) {
    hdr.length = sizeof(bytes);
    hdr.num_attrs = N;
    hdr.object_id = object;
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
  // A uverbs object by its ID (length 0; a new object's ID comes back in
  // data: see object_id).
  void obj(size_t i, uint16_t id, uint32_t object) {
    ib_uverbs_attr& a = hdr.attrs[i];
    a.attr_id = id;
    a.len = 0;
    a.data = object;
  }
  uint32_t object_id(size_t i) const {
    return static_cast<uint32_t>(hdr.attrs[i].data);
  }
  // Fewer attributes than N (optional ones left out).
  void trim(size_t n) {
    hdr.num_attrs = static_cast<uint16_t>(n);
    hdr.length = static_cast<uint16_t>(sizeof(ib_uverbs_ioctl_hdr) +
                                       n * sizeof(ib_uverbs_attr));
  }
  int run(ibv_context* context) {
    if (ioctl(context->cmd_fd, RDMA_VERBS_IOCTL, bytes) == 0) return 0;
    // A driver without the methods: the object or method is unknown.
    return errno == EPROTONOSUPPORT ? EOPNOTSUPP : errno;
  }
};

}  // namespace rhinet

#endif  // RHINET_IOCTL_METHOD_H
