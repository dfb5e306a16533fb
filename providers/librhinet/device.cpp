// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Registration with libibverbs, device matching, contexts and queries.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "provider.h"

namespace rhinet {

uint32_t log2_ceil(uint32_t v) {
  uint32_t log = 0;
  while ((1ull << log) < v) log++;
  return log;
}

uint8_t* alloc_queue_buffer(size_t len) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  len = (len + page - 1) & ~(page - 1);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  // A child must not get a copy-on-write copy of pinned queue pages.
  madvise(p, len, MADV_DONTFORK);
  return static_cast<uint8_t*>(p);
}

void free_queue_buffer(uint8_t* buf, size_t len) {
  if (!buf) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  munmap(buf, (len + page - 1) & ~(page - 1));
}

namespace {

// ---- queries --------------------------------------------------------------

int query_device_ex(ibv_context* context,
                    const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  ib_uverbs_ex_query_device_resp resp;
  size_t resp_size = sizeof(resp);
  return ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
                                  &resp_size);
}

RHINET_CMD(QueryPortCmd, ib_uverbs_query_port, rhinet_no_data);

int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  QueryPortCmd cmd{};
  return ibv_cmd_query_port(context, port, attr,
                            reinterpret_cast<struct ibv_query_port*>(&cmd),
                            sizeof(cmd));
}

// ---- contexts -------------------------------------------------------------

void free_context(ibv_context* ibctx) {
  Context* ctx = to_ctx(ibctx);
  free_closed_qps(ctx);
  if (ctx->db) munmap(const_cast<uint8_t*>(ctx->db), ctx->db_size);
  verbs_uninit_context(&ctx->vctx);
  ctx->~Context();
  free(ctx);
}

const verbs_context_ops kOps = [] {
  verbs_context_ops ops{};
  // ibv_advise_mr (prefetch of on-demand MRs): the kernel checks the keys,
  // ranges and PD and pins; nothing of the provider's is involved.
  ops.advise_mr = ibv_cmd_advise_mr;
  ops.alloc_pd = alloc_pd;
  // Verbs UD multicast: the kernel tells the NIC, which keeps the attach
  // table and joins the switch group (no provider state).
  ops.attach_mcast = ibv_cmd_attach_mcast;
  ops.detach_mcast = ibv_cmd_detach_mcast;
  ops.create_ah = create_ah;
  ops.create_cq = create_cq;
  ops.create_cq_ex = create_cq_ex;
  ops.create_qp = create_qp;
  ops.create_qp_ex = create_qp_ex;
  ops.create_srq = create_srq;
  ops.create_srq_ex = create_srq_ex;
  // XRC: domains, their SRQs' numbers, target QPs opened by number.
  ops.open_xrcd = open_xrcd;
  ops.close_xrcd = close_xrcd;
  ops.get_srq_num = get_srq_num;
  ops.open_qp = open_qp;
  ops.dealloc_pd = dealloc_pd;
  ops.dereg_mr = dereg_mr;
  ops.destroy_ah = destroy_ah;
  ops.destroy_cq = destroy_cq;
  ops.resize_cq = resize_cq;
  ops.modify_cq = modify_cq;
  ops.alloc_mw = alloc_mw;
  ops.dealloc_mw = dealloc_mw;
  ops.bind_mw = bind_mw;
  ops.alloc_dm = alloc_dm;
  ops.free_dm = free_dm;
  ops.reg_dm_mr = reg_dm_mr;
  ops.destroy_qp = destroy_qp;
  ops.destroy_srq = destroy_srq;
  ops.free_context = free_context;
  ops.modify_qp = modify_qp;
  ops.modify_srq = modify_srq;
  ops.poll_cq = poll_cq;
  ops.post_recv = post_recv;
  ops.post_send = post_send;
  ops.post_srq_recv = post_srq_recv;
  ops.post_srq_ops = post_srq_ops;
  ops.query_device_ex = query_device_ex;
  ops.query_port = query_port;
  ops.query_qp = query_qp;
  ops.query_srq = query_srq;
  ops.reg_dmabuf_mr = reg_dmabuf_mr;
  ops.reg_mr = reg_mr;
  ops.req_notify_cq = req_notify_cq;
  ops.rereg_mr = rereg_mr;
  return ops;
}();

RHINET_CMD(GetContextCmd, ib_uverbs_get_context, rhinet_alloc_ucontext_cmd);

// RHINET_GROUPS="GROUP:TOKEN[,GROUP:TOKEN...]" (rhinet-run sets it): the
// process groups to join; the kernel checks the tokens. False
// with errno EINVAL (and a message) if it is malformed.
bool parse_groups(const char* env, rhinet_alloc_ucontext_cmd* cmd) {
  if (!env || !*env) return true;
  const char* p = env;
  while (*p) {
    if (cmd->num_groups == RHINET_MAX_GROUPS) {
      fprintf(stderr, "librhinet: RHINET_GROUPS names more than %d groups\n",
              RHINET_MAX_GROUPS);
      return errno = EINVAL, false;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long group = strtoul(p, &end, 10);
    if (errno || end == p || *end != ':' || group == 0 || group > 0xffff)
      goto bad;
    p = end + 1;
    {
      const unsigned long long token = strtoull(p, &end, 16);
      if (errno || end == p || (*end && *end != ',')) goto bad;
      rhinet_group_cred& g = cmd->groups[cmd->num_groups++];
      g.group = static_cast<uint16_t>(group);
      g.token = token;
    }
    p = *end ? end + 1 : end;
  }
  cmd->comp_mask |= RHINET_UCONTEXT_CMD_GROUPS;
  return true;
bad:
  fprintf(stderr,
          "librhinet: RHINET_GROUPS=\"%s\" is not GROUP:HEXTOKEN[,...] with "
          "GROUP 1..65535\n",
          env);
  return errno = EINVAL, false;
}
RHINET_RESP(GetContextResp, ib_uverbs_get_context_resp,
            rhinet_alloc_ucontext_resp);

// An older driver or NIC sets neither bit: every post kicks, as before.
// RHINET_RQ_DOORBELL=always keeps every kick (a reference to measure
// against in the same run).
bool rq_kick_on_request_allowed(const rhinet_alloc_ucontext_resp& r) {
  const char* env = getenv("RHINET_RQ_DOORBELL");
  if (env && !strcmp(env, "always")) return false;
  return (r.comp_mask & RHINET_UCONTEXT_RESP_RQ_DOORBELL_ON_REQUEST) &&
         (r.caps & RHN_CAP_RQ_RECORD_READ);
}

// The SQ's the same way, with its own bit and RHINET_SQ_DOORBELL.
bool sq_kick_on_request_allowed(const rhinet_alloc_ucontext_resp& r) {
  const char* env = getenv("RHINET_SQ_DOORBELL");
  if (env && !strcmp(env, "always")) return false;
  return (r.comp_mask & RHINET_UCONTEXT_RESP_SQ_DOORBELL_ON_REQUEST) &&
         (r.caps & RHN_CAP_SQ_DOORBELL_ON_REQUEST);
}

// Whether plain SQs ask for an event index: whenever the driver and the
// NIC offer one. RHINET_SQ_DOORBELL=bit keeps the request bit alone (the
// benchmarks' reference; queues.md, "The SQ event index").
bool sq_event_index_allowed(const rhinet_alloc_ucontext_resp& r) {
  const char* env = getenv("RHINET_SQ_DOORBELL");
  if (env && !strcmp(env, "bit")) return false;
  return sq_kick_on_request_allowed(r) &&
         (r.comp_mask & RHINET_UCONTEXT_RESP_SQ_EVENT_INDEX) &&
         (r.caps & RHN_CAP_SQ_EVENT_INDEX);
}

// Whether CQs ask for runs (one CQE for several completions): whenever
// the driver and the NIC offer them. RHINET_CQE_RUNS=0 keeps every
// completion in its own CQE (the benchmarks' reference; queues.md,
// "Runs").
bool cqe_runs_allowed(const rhinet_alloc_ucontext_resp& r) {
  const char* env = getenv("RHINET_CQE_RUNS");
  if (env && !strcmp(env, "0")) return false;
  return (r.comp_mask & RHINET_UCONTEXT_RESP_CQE_RUNS) &&
         (r.caps & RHN_CAP_CQE_RUNS);
}

verbs_context* alloc_context(ibv_device* ibdev, int cmd_fd, void* /*priv*/) {
  auto* raw = static_cast<Context*>(_verbs_init_and_alloc_context(
      ibdev, cmd_fd, sizeof(Context),
      reinterpret_cast<verbs_context*>(offsetof(Context, vctx)),
      RDMA_DRIVER_UNKNOWN));
  if (!raw) return nullptr;
  // libibverbs zeroed the memory and set up vctx; construct the rest.
  verbs_context saved = raw->vctx;
  Context* ctx = new (raw) Context;
  ctx->vctx = saved;

  GetContextCmd cmd{};
  GetContextResp resp{};
  if (!parse_groups(getenv("RHINET_GROUPS"), &cmd.drv)) goto err;
  if (ibv_cmd_get_context(
          &ctx->vctx, reinterpret_cast<struct ibv_get_context*>(&cmd),
          sizeof(cmd), reinterpret_cast<ib_uverbs_get_context_resp*>(resp.core),
          sizeof(resp)))
    goto err;
  ctx->attr = resp.drv;
  ctx->rq_kick_on_request = rq_kick_on_request_allowed(resp.drv);
  ctx->sq_kick_on_request = sq_kick_on_request_allowed(resp.drv);
  ctx->sq_event_index = sq_event_index_allowed(resp.drv);
  ctx->cqe_runs = cqe_runs_allowed(resp.drv);
  if (cmd.drv.num_groups &&
      !(resp.drv.comp_mask & RHINET_UCONTEXT_RESP_GROUPS)) {
    fprintf(stderr, "librhinet: rhinet.ko does not support process groups\n");
    errno = EOPNOTSUPP;
    goto err;
  }
  if (resp.drv.groups_refused) {
    // The kernel created the context without those groups: closing it
    // here (the err path) is how an open fails cleanly (rhinet-abi.h).
    for (uint32_t i = 0; i < cmd.drv.num_groups; i++)
      if (resp.drv.groups_refused & (1u << i))
        fprintf(stderr,
                "librhinet: RHINET_GROUPS: group %u refused (not granted "
                "on this node to this user or group, or another token; "
                "see rhinet-group(8))\n",
                cmd.drv.groups[i].group);
    errno = EPERM;
    goto err;
  }
  ctx->num_groups = cmd.drv.num_groups;
  for (uint32_t i = 0; i < cmd.drv.num_groups; i++)
    ctx->groups[i] = cmd.drv.groups[i].group;
  ctx->db_size = resp.drv.db_page_size;
  {
    void* db = mmap(nullptr, ctx->db_size, PROT_WRITE, MAP_SHARED, cmd_fd,
                    static_cast<off_t>(resp.drv.db_mmap_offset));
    if (db == MAP_FAILED) {
      fprintf(stderr, "librhinet: cannot map the doorbell page: %s\n",
              strerror(errno));
      goto err;
    }
    ctx->db = static_cast<volatile uint8_t*>(db);
  }
  // The inline window rides with kicks that are left to the NIC's asking,
  // and only when asked for (RHINET_SQ_INLINE=1): its eight 8-byte stores
  // are one burst where the page is write-combined, but eight more VM
  // exits under emulation (verbs_bench measured 9 MMIO writes per message
  // against 1, and lower rates, with it on by default).
  {
    const char* inl = getenv("RHINET_SQ_INLINE");
    ctx->sq_inline_db =
        inl && !strcmp(inl, "1") && ctx->sq_kick_on_request &&
        (ctx->attr.caps & RHN_CAP_INLINE_DB) &&
        ctx->db_size >= RHN_DB_INLINE_WQE + RHN_DB_INLINE_WQE_SIZE;
  }
  verbs_set_ops(&ctx->vctx, &kOps);
  return &ctx->vctx;

err:
  const int err = errno;  // what failed, not what cleaning up did
  verbs_uninit_context(&ctx->vctx);
  ctx->~Context();
  free(ctx);
  errno = err;
  return nullptr;
}

// ---- devices --------------------------------------------------------------

verbs_device* alloc_device(verbs_sysfs_dev*) {
  auto* dev = static_cast<Device*>(calloc(1, sizeof(Device)));
  return dev ? &dev->vdev : nullptr;
}

void uninit_device(verbs_device* vdev) {
  free(container_of_member<Device>(vdev, offsetof(Device, vdev)));
}

const verbs_match_ent kMatchTable[] = {
    {nullptr, {nullptr}, RHN_PCI_VENDOR_ID, RHN_PCI_DEVICE_ID, VERBS_MATCH_PCI},
    {},
};

const verbs_device_ops kDeviceOps = {
    "rhinet",
    RHINET_UVERBS_ABI_VERSION,
    RHINET_UVERBS_ABI_VERSION,
    kMatchTable,
    nullptr,
    nullptr,
    alloc_context,
    nullptr,
    alloc_device,
    uninit_device,
};

// The libibverbs this process loaded must be the one the ABI header
// describes. Its ELF version definitions narrow it down (rdma-core 44
// defines public versions up to IBVERBS_1.14 and the private
// IBVERBS_PRIVATE_34) but not far enough: releases 43 to 55 define the same
// ones, and 46 moved fields of the structures we share (verbs_qp). What
// names the release is the library's file, libibverbs.so.1.14.<release>.0,
// which the SONAME link points to: a library whose file says another
// release, or none, is refused.
struct VersionCheck {
  bool found = false;
  bool private_abi = false;
  char newest_public[32] = "";
  char file[256] = "";  // the library's real file
  int release = -1;     // rdma-core release its file name says, or -1
};

int inspect_libibverbs(dl_phdr_info* info, size_t, void* arg) {
  auto* out = static_cast<VersionCheck*>(arg);
  if (!info->dlpi_name || !strstr(info->dlpi_name, "libibverbs.so")) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr +
                                               info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  const char* strtab = nullptr;
  const ElfW(Verdef)* verdef = nullptr;
  size_t count = 0;
  // Depending on the loader these are addresses or still offsets.
  auto addr = [info](ElfW(Addr) p) {
    return p < info->dlpi_addr ? p + info->dlpi_addr : p;
  };
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_STRTAB)
      strtab = reinterpret_cast<const char*>(addr(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_VERDEF)
      verdef = reinterpret_cast<const ElfW(Verdef)*>(addr(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_VERDEFNUM) count = dyn->d_un.d_val;
  }
  if (!strtab || !verdef) return 0;
  out->found = true;
  char real[PATH_MAX];
  const char* path = realpath(info->dlpi_name, real) ? real : info->dlpi_name;
  const char* base = strrchr(path, '/');
  const char* file = base ? base + 1 : path;
  const size_t n = std::min(strlen(file), sizeof(out->file) - 1);
  memcpy(out->file, file, n);
  out->file[n] = 0;
  unsigned abi_minor, release, patch;
  if (sscanf(out->file, "libibverbs.so.1.%u.%u.%u", &abi_minor, &release,
             &patch) == 3)
    out->release = static_cast<int>(release);
  unsigned best_minor = 0;
  for (size_t i = 0; i < count; i++) {
    const auto* aux = reinterpret_cast<const ElfW(Verdaux)*>(
        reinterpret_cast<const char*>(verdef) + verdef->vd_aux);
    const char* name = strtab + aux->vda_name;
    unsigned minor;
    if (!strcmp(name, RHINET_IBVERBS_PRIVATE)) out->private_abi = true;
    if (sscanf(name, "IBVERBS_1.%u", &minor) == 1 && minor >= best_minor) {
      best_minor = minor;
      snprintf(out->newest_public, sizeof(out->newest_public), "%s", name);
    }
    if (!verdef->vd_next) break;
    verdef = reinterpret_cast<const ElfW(Verdef)*>(
        reinterpret_cast<const char*>(verdef) + verdef->vd_next);
  }
  return 1;
}

bool libibverbs_matches() {
  VersionCheck v;
  dl_iterate_phdr(inspect_libibverbs, &v);
  if (!v.found) return true;  // linked statically: the build checked it
  if (!v.private_abi || strcmp(v.newest_public, RHINET_IBVERBS_PUBLIC)) {
    fprintf(stderr,
            "librhinet: built for rdma-core %s (%s, %s), but the libibverbs "
            "in this process defines %s%s; not registering the rhinet "
            "provider\n",
            RHINET_RDMA_CORE_VERSION, RHINET_IBVERBS_PUBLIC,
            RHINET_IBVERBS_PRIVATE,
            v.newest_public[0] ? v.newest_public : "no public version",
            v.private_abi ? "" : " and another private ABI");
    return false;
  }
  if (v.release == RHINET_RDMA_CORE_MAJOR) return true;
  if (v.release < 0)
    fprintf(stderr,
            "librhinet: built for rdma-core %s, but the libibverbs in this "
            "process is the file %s, whose name tells no release (expected "
            "libibverbs.so.1.14.%d.0); not registering the rhinet provider\n",
            RHINET_RDMA_CORE_VERSION, v.file, RHINET_RDMA_CORE_MAJOR);
  else
    fprintf(stderr,
            "librhinet: built for rdma-core %s, but the libibverbs in this "
            "process is rdma-core %d's (%s), whose provider structures "
            "differ; not registering the rhinet provider\n",
            RHINET_RDMA_CORE_VERSION, v.release, v.file);
  return false;
}

__attribute__((constructor)) void register_provider() {
  if (libibverbs_matches()) verbs_register_driver_34(&kDeviceOps);
}

}  // namespace

// Every device libibverbs lists is a verbs_device; ours carry kDeviceOps.
bool is_rhinet_context(ibv_context* context) {
  if (!context || !context->device) return false;
  return reinterpret_cast<const verbs_device*>(context->device)->ops ==
         &kDeviceOps;
}

}  // namespace rhinet
