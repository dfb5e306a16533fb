// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Device memory is the NIC's on-board twin memory (004 2.7): ibv_alloc_dm
// and ibv_free_dm go to rhinet.ko through the uverbs DM methods; the
// driver's answer names the NIC's twin handle, which TWIN and DIFF
// transfers carry (rhinetdv_twin_handle).
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdlib>
#include <new>

#include "provider.h"

namespace rhinet {
namespace {

// The driver-data attributes of a uverbs method (the kernel's
// UVERBS_ATTR_UHW_IN/OUT), in the driver namespace.
constexpr uint16_t kAttrUhwOut = (1u << UVERBS_ID_NS_SHIFT) + 1;

// A uverbs ioctl: the header, then its N attributes.
template <size_t N>
struct IoctlCmd {
  alignas(8) uint8_t
      bytes[sizeof(ib_uverbs_ioctl_hdr) + N * sizeof(ib_uverbs_attr)] = {};
  ib_uverbs_ioctl_hdr& hdr = *reinterpret_cast<ib_uverbs_ioctl_hdr*>(bytes);
  ib_uverbs_attr* attrs = hdr.attrs;
  IoctlCmd() {
    hdr.length = sizeof(bytes);
    hdr.num_attrs = N;
  }
};

int memcpy_unsupported(ibv_dm*, uint64_t, const void*, size_t) {
  return EOPNOTSUPP;
}
int memcpy_from_unsupported(void*, ibv_dm*, uint64_t, size_t) {
  return EOPNOTSUPP;
}

}  // namespace

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  if (!attr || attr->comp_mask || attr->length == 0)
    return errno = EINVAL, nullptr;
  const Context* ctx = to_ctx(context);
  if (!(ctx->attr.comp_mask & RHINET_UCONTEXT_RESP_GROUPS))
    return errno = EOPNOTSUPP, nullptr;  // a driver without twin memory
  auto* dm = static_cast<Dm*>(calloc(1, sizeof(Dm)));
  if (!dm) return errno = ENOMEM, nullptr;
  uint64_t length = attr->length;
  uint32_t align = attr->log_align_req;
  rhinet_alloc_dm_resp resp{};
  IoctlCmd<4> cmd;
  cmd.hdr.object_id = UVERBS_OBJECT_DM;
  cmd.hdr.method_id = UVERBS_METHOD_DM_ALLOC;
  cmd.attrs[0] = {
      UVERBS_ATTR_ALLOC_DM_HANDLE, 0, UVERBS_ATTR_F_MANDATORY, {}, {0}};
  cmd.attrs[1] = {UVERBS_ATTR_ALLOC_DM_LENGTH,
                  sizeof(length),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {length}};
  cmd.attrs[2] = {UVERBS_ATTR_ALLOC_DM_ALIGNMENT,
                  sizeof(align),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {align}};
  cmd.attrs[3] = {
      kAttrUhwOut, sizeof(resp), 0, {}, {reinterpret_cast<uintptr_t>(&resp)}};
  if (ioctl(context->cmd_fd, RDMA_VERBS_IOCTL, cmd.bytes)) {
    const int err = errno;
    free(dm);
    return errno = err, nullptr;
  }
  dm->ibdm.context = context;
  dm->ibdm.handle = static_cast<uint32_t>(cmd.attrs[0].data);
  if (!(cmd.attrs[3].flags & UVERBS_ATTR_F_VALID_OUTPUT)) {
    // A driver that did not say which twin memory it handed out: 0 is a
    // valid handle, so nothing may be guessed. Give it back.
    free_dm(&dm->ibdm);
    return errno = EOPNOTSUPP, nullptr;
  }
  dm->ibdm.context = context;
  dm->ibdm.memcpy_to_dm = memcpy_unsupported;
  dm->ibdm.memcpy_from_dm = memcpy_from_unsupported;
  dm->ibdm.handle = static_cast<uint32_t>(cmd.attrs[0].data);
  dm->twin_handle = resp.twin_handle;
  dm->length = attr->length;
  return &dm->ibdm;
}

int free_dm(ibv_dm* ibdm) {
  Dm* dm = to_dm(ibdm);
  IoctlCmd<1> cmd;
  cmd.hdr.object_id = UVERBS_OBJECT_DM;
  cmd.hdr.method_id = UVERBS_METHOD_DM_FREE;
  cmd.attrs[0] = {UVERBS_ATTR_FREE_DM_HANDLE,
                  0,
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {ibdm->handle}};
  if (ioctl(ibdm->context->cmd_fd, RDMA_VERBS_IOCTL, cmd.bytes)) return errno;
  free(dm);
  return 0;
}

}  // namespace rhinet
