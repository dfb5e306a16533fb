// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Device memory is the NIC's on-board twin memory: ibv_alloc_dm
// and ibv_free_dm go to rhinet.ko through the uverbs DM methods; the
// driver's answer names the NIC's twin handle, which TWIN and DIFF
// transfers carry (rhinetdv_twin_handle).
//
// No BAR maps twin memory, so ibv_memcpy_to_dm / ibv_memcpy_from_dm are a
// system call each (rhinet.ko's DM_COPY method: the NIC copies by DMA
// through a kernel bounce buffer), not a data-path operation. For the
// data path, ibv_reg_dm_mr (zero-based) makes a key over the DM that
// SGEs, RDMA and atomics use as they use host memory.
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

// One DM_COPY: @length bytes between @host and the DM from @offset on.
int dm_copy(ibv_dm* ibdm, uint64_t offset, const void* host, size_t length,
            rhinet_dm_copy_direction direction) {
  const Dm* dm = to_dm(ibdm);
  if (offset > dm->length || length > dm->length - offset) return EINVAL;
  if (!length) return 0;
  IoctlCmd<5> cmd;
  cmd.hdr.object_id = UVERBS_OBJECT_DM;
  cmd.hdr.method_id = RHINET_IB_METHOD_DM_COPY;
  cmd.attrs[0] = {RHINET_IB_ATTR_DM_COPY_HANDLE,
                  0,
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {ibdm->handle}};
  cmd.attrs[1] = {RHINET_IB_ATTR_DM_COPY_OFFSET,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {offset}};
  cmd.attrs[2] = {RHINET_IB_ATTR_DM_COPY_ADDR,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {reinterpret_cast<uintptr_t>(host)}};
  cmd.attrs[3] = {RHINET_IB_ATTR_DM_COPY_LENGTH,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {length}};
  cmd.attrs[4] = {RHINET_IB_ATTR_DM_COPY_DIRECTION,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {direction}};
  if (ioctl(ibdm->context->cmd_fd, RDMA_VERBS_IOCTL, cmd.bytes)) return errno;
  return 0;
}

int memcpy_to_dm(ibv_dm* dm, uint64_t dm_offset, const void* host_addr,
                 size_t length) {
  return dm_copy(dm, dm_offset, host_addr, length, RHINET_DM_COPY_TO_DM);
}
int memcpy_from_dm(void* host_addr, ibv_dm* dm, uint64_t dm_offset,
                   size_t length) {
  return dm_copy(dm, dm_offset, host_addr, length, RHINET_DM_COPY_FROM_DM);
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
  // A driver that cannot copy (older than the DM_COPY method) keeps the
  // DM usable for TWIN and DIFF transfers only.
  const bool copies = resp.comp_mask & RHINET_ALLOC_DM_RESP_COPY;
  dm->ibdm.memcpy_to_dm = copies ? memcpy_to_dm : memcpy_unsupported;
  dm->ibdm.memcpy_from_dm = copies ? memcpy_from_dm : memcpy_from_unsupported;
  dm->ibdm.handle = static_cast<uint32_t>(cmd.attrs[0].data);
  dm->copies = copies;
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

// ibv_reg_dm_mr: an MR over [dm_offset, dm_offset + length) of the DM,
// zero-based (IBV_ACCESS_ZERO_BASED is required, as libibverbs' own
// command helper does: the DM has no address in the process). Its lkey and
// rkey reach the twin's bytes wherever a key is used; ibv_dereg_mr as
// for any MR. The kernel refuses a DM with MRs over it (EBUSY).
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* ibdm, uint64_t dm_offset, size_t length,
                  unsigned int access) {
  const Dm* dm = to_dm(ibdm);
  if (!(access & IBV_ACCESS_ZERO_BASED) || !length || dm_offset > dm->length ||
      length > dm->length - dm_offset)
    return errno = EINVAL, nullptr;
  if (!dm->copies) return errno = EOPNOTSUPP, nullptr;  // an older driver
  // As resources.cpp makes every MR: dereg_mr frees it the same way.
  void* mem = calloc(1, sizeof(Mr));
  if (!mem) return errno = ENOMEM, nullptr;
  Mr* mr = new (mem) Mr;
  uint32_t lkey = 0, rkey = 0;
  const uint32_t flags = access;
  IoctlCmd<8> cmd;
  cmd.hdr.object_id = UVERBS_OBJECT_MR;
  cmd.hdr.method_id = UVERBS_METHOD_DM_MR_REG;
  cmd.attrs[0] = {
      UVERBS_ATTR_REG_DM_MR_HANDLE, 0, UVERBS_ATTR_F_MANDATORY, {}, {0}};
  cmd.attrs[1] = {UVERBS_ATTR_REG_DM_MR_OFFSET,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {dm_offset}};
  cmd.attrs[2] = {UVERBS_ATTR_REG_DM_MR_LENGTH,
                  sizeof(uint64_t),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {length}};
  cmd.attrs[3] = {UVERBS_ATTR_REG_DM_MR_PD_HANDLE,
                  0,
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {pd->handle}};
  cmd.attrs[4] = {UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS,
                  sizeof(flags),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {flags}};
  cmd.attrs[5] = {UVERBS_ATTR_REG_DM_MR_DM_HANDLE,
                  0,
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {ibdm->handle}};
  cmd.attrs[6] = {UVERBS_ATTR_REG_DM_MR_RESP_LKEY,
                  sizeof(lkey),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {reinterpret_cast<uintptr_t>(&lkey)}};
  cmd.attrs[7] = {UVERBS_ATTR_REG_DM_MR_RESP_RKEY,
                  sizeof(rkey),
                  UVERBS_ATTR_F_MANDATORY,
                  {},
                  {reinterpret_cast<uintptr_t>(&rkey)}};
  if (ioctl(pd->context->cmd_fd, RDMA_VERBS_IOCTL, cmd.bytes)) {
    const int err = errno;
    mr->~Mr();
    free(mr);
    return errno = err, nullptr;
  }
  ibv_mr& m = mr->vmr.ibv_mr;
  m.context = pd->context;
  m.pd = pd;
  m.addr = nullptr;  // zero-based: addresses in it are offsets
  m.length = length;
  m.handle = static_cast<uint32_t>(cmd.attrs[0].data);
  m.lkey = lkey;
  m.rkey = rkey;
  mr->vmr.mr_type = IBV_MR_TYPE_MR;
  mr->vmr.access = static_cast<int>(access);
  return &m;
}

}  // namespace rhinet
