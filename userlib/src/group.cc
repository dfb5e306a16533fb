// SPDX-License-Identifier: BSD-2-Clause
// Group: joining, memory, signals; the operation families are in
// group_xfer.cc, group_mcast.cc, group_sync.cc and group_tag.cc.
#include "rhinet/group.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device.hpp"
#include "device_errors.hpp"
#include "group_detail.hpp"
#include "net.hpp"

namespace rhinet {

using detail::context_refusal;
using detail::errno_error;
using detail::hex;
using detail::put_mode;

namespace {

// Opens the device named `want`, or the first rhinet* one.
Result<ibv_context*> open_device(const std::string& want) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list)
    return errno_error(errno, "ibv_get_device_list (is rhinet.ko loaded?)");
  ibv_device* pick = nullptr;
  std::string seen;
  for (int i = 0; i < n; i++) {
    const char* name = ibv_get_device_name(list[i]);
    seen += (seen.empty() ? "" : ", ") + std::string(name);
    const bool match =
        want.empty() ? std::strncmp(name, "rhinet", 6) == 0 : want == name;
    if (match && !pick) pick = list[i];
  }
  if (!pick) {
    ibv_free_device_list(list);
    const std::string which =
        want.empty() ? "no ibverbs device whose name starts with \"rhinet\""
                     : "no ibverbs device named \"" + want + "\"";
    return Error(ENODEV,
                 which + " (devices: " + (seen.empty() ? "none" : seen) + ")");
  }
  const std::string name = ibv_get_device_name(pick);
  ibv_context* ctx = ibv_open_device(pick);
  const int err = errno;
  ibv_free_device_list(list);
  if (!ctx) {
    if (err == EPERM && std::getenv("RHINET_GROUPS"))
      return Error(EPERM, "ibv_open_device " + name +
                              ": a group in RHINET_GROUPS is not granted to "
                              "this user on this node, or its token differs "
                              "(the administrator grants groups with "
                              "rhinet-group; rhinet-run does for its ranks)");
    if (const std::string why = context_refusal(err); !why.empty())
      return Error(err, "ibv_open_device " + name + ": " + why);
    return errno_error(err, "ibv_open_device " + name);
  }
  return ctx;
}

// The endpoint's queues in `q`: its CQ's ring first, its QP's 4 KiB on.
Result<void> place_queues(ibv_context* ctx,
                          const BootstrapOptions::QueueMemory& q,
                          rhinetdv_endpoint_init_attr* ea) {
  std::size_t qp_len = 0, cq_len = 0;
  if (int e = rhinetdv_endpoint_buf_len(ctx, ea, &qp_len, &cq_len))
    return errno_error(e, "rhinetdv_endpoint_buf_len");
  constexpr std::size_t kPage = 4096;
  const std::size_t qp_at = (cq_len + kPage - 1) / kPage * kPage;
  if (q.memory.size() < qp_at + qp_len)
    return Error(EINVAL, "queue_memory: " + std::to_string(q.memory.size()) +
                             " bytes given, the endpoint's queues need " +
                             std::to_string(qp_at + qp_len));
  const auto buf = [&](std::size_t at, std::size_t len) {
    rhinetdv_queue_buf b{};
    b.dmabuf_fd = q.fd;
    b.offset = q.offset + at;
    b.length = len;
    b.addr = q.memory.data() + at;
    return b;
  };
  ea->comp_mask |= RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS;
  ea->cq_buf = buf(0, cq_len);
  ea->qp_buf = buf(qp_at, qp_len);
  return ok();
}

}  // namespace

// ---- joining ----------------------------------------------------------------

Result<std::unique_ptr<Group>> Group::join_from_env() {
  auto o = BootstrapOptions::from_env();
  if (!o) return std::move(o).error();
  return join(*o);
}

Result<std::unique_ptr<Group>> Group::join(const BootstrapOptions& o) {
  if (o.size < 1 || o.size > max_ranks || o.rank >= o.size || o.group > 0xffff)
    return Error(EINVAL, "join: rank " + std::to_string(o.rank) + " of " +
                             std::to_string(o.size) + " in group " +
                             std::to_string(o.group) + " (size 1.." +
                             std::to_string(max_ranks) +
                             ", rank below size, group 0..65535)");
  // Membership is read at device open.
  if (o.group && o.token && !std::getenv("RHINET_GROUPS")) {
    char v[48];
    snprintf(v, sizeof(v), "%u:%016llx", o.group,
             static_cast<unsigned long long>(*o.token));
    setenv("RHINET_GROUPS", v, 0);
  }

  auto dev = std::make_shared<detail::Device>();
  dev->group = o.group;
  auto ctx = open_device(o.device);
  if (!ctx) return std::move(ctx).error();
  dev->ctx = *ctx;
  const std::string name = ibv_get_device_name(dev->ctx->device);

  if (int e = rhinetdv_query_device(dev->ctx, &dev->attr, sizeof(dev->attr))) {
    if (e == EOPNOTSUPP)
      return Error(EOPNOTSUPP, "device " + name +
                                   " is not a rhinet device (rhinetdv refuses "
                                   "it)");
    return errno_error(e, "rhinetdv_query_device " + name);
  }
  const auto need = [&](std::uint32_t cap, const char* what) -> Result<void> {
    if (!(dev->attr.caps & cap))
      return Error(EOPNOTSUPP, "device " + name + " has no " + what);
    return ok();
  };
  if (auto r = need(RHINETDV_CAP_ENDPOINT, "endpoint (rhinetdv caps)"); !r)
    return std::move(r).error();
  if (auto r = need(RHINETDV_CAP_STATUS_WORD, "status words"); !r)
    return std::move(r).error();
  if (auto r = need(RHINETDV_CAP_XFER_EX, "rhinetdv_push_ex/pull_ex"); !r)
    return std::move(r).error();
  if (o.group) {
    if (auto r = need(RHINETDV_CAP_GROUPS, "process groups"); !r)
      return std::move(r).error();
    uint16_t groups[64];
    const int n = rhinetdv_query_groups(dev->ctx, groups, 64);
    if (n < 0) return errno_error(errno, "rhinetdv_query_groups");
    bool member = false;
    for (int i = 0; i < n && i < 64; i++) member |= groups[i] == o.group;
    if (!member)
      return Error(EPERM, "this process is not a member of group " +
                              std::to_string(o.group) + " on " + name +
                              ": RHINET_GROUPS must name it with the group's "
                              "token when the device is opened (rhinet-run "
                              "sets it)");
  }

  dev->pd = ibv_alloc_pd(dev->ctx);
  if (!dev->pd) return errno_error(errno, "ibv_alloc_pd on " + name);
  std::uint32_t max = o.max_outstanding ? o.max_outstanding : 64;
  if (dev->attr.max_outstanding && max > dev->attr.max_outstanding)
    max = dev->attr.max_outstanding;
  rhinetdv_endpoint_init_attr ea{};
  ea.max_outstanding = max;
  // Tag matching: the endpoint gets a receive queue for irecvs.
  const bool tag = dev->attr.caps & RHINETDV_CAP_TAG;
  if (tag) {
    ea.comp_mask |= RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV;
    ea.max_irecv = o.max_irecv ? o.max_irecv : 1024;
  }
  if (o.queue_memory) {
    if (auto r = place_queues(dev->ctx, *o.queue_memory, &ea); !r)
      return std::move(r).error();
  }
  dev->ep = rhinetdv_create_endpoint(dev->pd, &ea);
  if (!dev->ep)
    return errno_error(errno, "rhinetdv_create_endpoint on " + name);
  if (auto r = dev->make_pool(max); !r) return std::move(r).error();
  dev->spin = o.spin;
  if (!tag) {
    dev->no_tag_reason = "the device has no tag matching (RHINETDV_CAP_TAG)";
  } else {
    // Without its caps the endpoint cannot take irecvs; PUSH and PULL
    // still work, so join goes on and isend/irecv say why they cannot.
    const int e =
        rhinetdv_query_tag_caps(dev->ep, &dev->tag_caps, sizeof(dev->tag_caps));
    if (!e && dev->tag_caps.max_irecv) {
      dev->tag_matching = true;
      dev->make_recvs(dev->tag_caps.max_irecv);
    } else {
      dev->tag_caps = {};
      dev->no_tag_reason =
          e ? "rhinetdv_query_tag_caps: " + Error(e, "").code().message()
            : "the endpoint takes no irecvs (max_irecv 0)";
    }
  }

  auto boot =
      Bootstrap::exchange(o, Peer{dev->ep->node_id, dev->ep->endpoint_id});
  if (!boot) return std::move(boot).error();
  for (std::uint32_t r = 0; r < boot->size(); r++)
    if (boot->table()[r].node_id > 0xffff)
      return Error(ERANGE, "rank " + std::to_string(r) + " is on node " +
                               std::to_string(boot->table()[r].node_id) +
                               ", beyond the 16 bits a transfer names");
  dev->peers = detail::PeerIndex(boot->table());
  return std::unique_ptr<Group>(new Group(std::move(dev), std::move(*boot)));
}

Group::Group(std::shared_ptr<detail::Device> dev, Bootstrap boot)
    : dev_(std::move(dev)), boot_(std::move(boot)) {
  rank_ = boot_->rank();
  size_ = boot_->size();
  group_ = boot_->group();
  table_ = boot_->table();
  local_rank_ = 0;
  local_size_ = 0;
  for (std::uint32_t r = 0; r < size_; r++)
    if (table_[r].node_id == table_[rank_].node_id) {
      if (r < rank_) local_rank_++;
      local_size_++;
    }
}

Group::Group(std::shared_ptr<detail::Device> dev, const Group& parent)
    : dev_(std::move(dev)),
      added_table_(parent.table_.begin(), parent.table_.end()) {
  rank_ = parent.rank_;
  size_ = parent.size_;
  group_ = parent.group_;
  local_rank_ = parent.local_rank_;
  local_size_ = parent.local_size_;
  table_ = added_table_;
}

Result<std::unique_ptr<Group>> Group::add_endpoint(
    std::uint32_t max_outstanding) {
  if (added_endpoint())
    return Error(EOPNOTSUPP,
                 "add_endpoint on an added endpoint: add to the Group of "
                 "join");
  const detail::Device& base = *dev_;
  // The kernel gives a device context one endpoint: the new one comes
  // with a context of its own (its membership from RHINET_GROUPS as at
  // join), so memory of the join's context is not its local side.
  const std::string name = ibv_get_device_name(base.ctx->device);
  auto dev = std::make_shared<detail::Device>();
  dev->group = base.group;
  dev->attr = base.attr;
  dev->spin = base.spin;
  dev->peers = base.peers;
  auto ctx = open_device(name);
  if (!ctx)
    return Error(ctx.error().errno_value(),
                 "add_endpoint: " + ctx.error().message());
  dev->ctx = *ctx;
  dev->pd = ibv_alloc_pd(dev->ctx);
  if (!dev->pd)
    return errno_error(errno, "add_endpoint: ibv_alloc_pd on " + name);
  std::uint32_t max = max_outstanding
                          ? max_outstanding
                          : static_cast<std::uint32_t>(base.slots.size());
  if (base.attr.max_outstanding && max > base.attr.max_outstanding)
    max = base.attr.max_outstanding;
  rhinetdv_endpoint_init_attr ea{};
  ea.max_outstanding = max;
  dev->ep = rhinetdv_create_endpoint(dev->pd, &ea);
  if (!dev->ep)
    return errno_error(errno,
                       "add_endpoint: rhinetdv_create_endpoint on " + name);
  if (auto r = dev->make_pool(max); !r) return std::move(r).error();
  dev->no_tag_reason =
      "an endpoint of Group::add_endpoint takes part in no messages (they "
      "go through the Group of join)";
  return std::unique_ptr<Group>(new Group(std::move(dev), *this));
}

Group::~Group() = default;

Peer Group::peer(std::uint32_t rank) const {
  if (rank >= size_) {
    std::fprintf(stderr, "rhinet: Group::peer(%u) of a group of %u ranks\n",
                 rank, size_);
    std::abort();
  }
  return table_[rank];
}

std::uint32_t Group::rank_of(Peer p) const {
  return dev_->peers.rank_of(p.node_id, p.endpoint_id);
}

std::uint32_t Group::max_inline() const { return dev_->attr.max_inline; }
std::size_t Group::outstanding() const { return dev_->in_flight(); }
ibv_context* Group::context() const { return dev_->ctx; }
ibv_pd* Group::pd() const { return dev_->pd; }
rhinetdv_endpoint* Group::endpoint() const { return dev_->ep; }

// ---- memory -----------------------------------------------------------------

Result<Area> Group::area(std::uint32_t area_id, std::span<std::byte> memory,
                         Access access) {
  return register_area(area_id, memory, access, false);
}

bool Group::pin_on_demand() const {
  return dev_->attr.caps & RHINETDV_CAP_PIN_ON_DEMAND;
}

Result<Area> Group::on_demand_area(std::uint32_t area_id,
                                   std::span<std::byte> memory, Access access) {
  return register_area(area_id, memory, access, true);
}

Result<Area> Group::register_area(std::uint32_t area_id,
                                  std::span<std::byte> memory, Access access,
                                  bool on_demand) {
  const std::string what =
      std::string(on_demand ? "on-demand area " : "area ") +
      std::to_string(area_id) + " (" + std::to_string(memory.size()) +
      " bytes at " + hex(reinterpret_cast<std::uintptr_t>(memory.data())) + ")";
  if (area_id > 0xffff) return Error(EINVAL, what + ": area IDs are 0..65535");
  // Peers address the endpoint of join, whose context holds their areas.
  if (added_endpoint())
    return Error(EOPNOTSUPP,
                 what +
                     ": an added endpoint has no areas (peers reach "
                     "those of the Group of join); register its local "
                     "side with buffer()");
  if (memory.empty()) return Error(EINVAL, what + ": empty");
  if (!(dev_->attr.caps & RHINETDV_CAP_AREA))
    return Error(EOPNOTSUPP, what + ": the device (or rhinet.ko) has no areas");
  const auto a = static_cast<std::uint32_t>(access);
  if (!a || (a & ~7u)) return Error(EINVAL, what + ": bad Access value");
  int flags = IBV_ACCESS_LOCAL_WRITE;
  if (a & static_cast<std::uint32_t>(Access::remote_write))
    flags |= IBV_ACCESS_REMOTE_WRITE;
  if (a & static_cast<std::uint32_t>(Access::remote_read))
    flags |= IBV_ACCESS_REMOTE_READ;
  if (a & static_cast<std::uint32_t>(Access::remote_atomic))
    flags |= IBV_ACCESS_REMOTE_ATOMIC;
  if (dev_->find_region(memory.data(), 1) ||
      dev_->find_region(memory.data() + memory.size() - 1, 1))
    return Error(EEXIST, what + ": overlaps a Buffer or Area of the group");
  if (on_demand && !pin_on_demand())
    return Error(EOPNOTSUPP,
                 what + ": the device (or rhinet.ko) does not pin on demand");
  rhinetdv_area_attr attr{};
  attr.group_id = group_;
  attr.area_id = area_id;
  if (on_demand) {
    attr.comp_mask = RHINETDV_AREA_ATTR_MASK_FLAGS;
    attr.flags = RHINETDV_AREA_PIN_ON_DEMAND;
  }
  ibv_mr* mr = rhinetdv_reg_area_ex(dev_->pd, memory.data(), memory.size(),
                                    flags, &attr, sizeof(attr));
  if (!mr) return errno_error(errno, what + ": rhinetdv_reg_area_ex");
  if (auto r = dev_->add_region(memory.data(), memory.size(), mr->lkey, true);
      !r) {
    ibv_dereg_mr(mr);
    return Error(r.error().code(), what + ": " + r.error().message());
  }
  return dev_->make_area(mr, area_id, memory);
}

namespace {

// Host memory at `p`, or with `dmabuf_fd` >= 0 bytes from `dmabuf_offset`
// on of that dma-buf, mapped by the process at `p` (the MR's iova).
Result<Buffer> make_buffer(detail::Device& dev, std::byte* p, std::size_t len,
                           bool writable, int dmabuf_fd = -1,
                           std::uint64_t dmabuf_offset = 0) {
  const bool dmabuf = dmabuf_fd >= 0;
  const std::string what =
      std::string(writable ? "buffer" : "read-only buffer") + " (" +
      std::to_string(len) + " bytes at " +
      hex(reinterpret_cast<std::uintptr_t>(p)) +
      (dmabuf ? ", dma-buf fd " + std::to_string(dmabuf_fd) + " from byte " +
                    std::to_string(dmabuf_offset)
              : std::string()) +
      ")";
  if (!len) return Error(EINVAL, what + ": empty");
  if (dev.find_region(p, 1) || dev.find_region(p + len - 1, 1))
    return Error(EEXIST, what + ": overlaps a Buffer or Area of the group");
  const int access = writable ? IBV_ACCESS_LOCAL_WRITE : 0;
  ibv_mr* mr = dmabuf ? ibv_reg_dmabuf_mr(dev.pd, dmabuf_offset, len,
                                          reinterpret_cast<std::uintptr_t>(p),
                                          dmabuf_fd, access)
                      : ibv_reg_mr(dev.pd, p, len, access);
  if (!mr)
    return errno_error(
        errno, what + (dmabuf ? ": ibv_reg_dmabuf_mr" : ": ibv_reg_mr"));
  if (auto r = dev.add_region(p, len, mr->lkey, writable); !r) {
    ibv_dereg_mr(mr);
    return Error(r.error().code(), what + ": " + r.error().message());
  }
  return dev.make_buffer(mr, std::span<std::byte>(p, len), writable);
}

}  // namespace

Result<Buffer> Group::buffer(std::span<std::byte> memory) {
  return make_buffer(*dev_, memory.data(), memory.size(), true);
}

Result<Buffer> Group::readonly_buffer(std::span<const std::byte> memory) {
  return make_buffer(*dev_, const_cast<std::byte*>(memory.data()),
                     memory.size(), false);
}

Result<Buffer> Group::dmabuf_buffer(int fd, std::uint64_t offset,
                                    std::span<std::byte> memory) {
  if (fd < 0) return Error(EBADF, "dma-buf buffer: fd " + std::to_string(fd));
  return make_buffer(*dev_, memory.data(), memory.size(), true, fd, offset);
}

Result<Twin> Group::twin(std::size_t bytes) {
  const std::string what = "twin memory of " + std::to_string(bytes) + " bytes";
  if (!bytes) return Error(EINVAL, what + ": empty");
  if (!(dev_->attr.caps & RHINETDV_CAP_TWIN))
    return Error(EOPNOTSUPP, what + ": the device has no twin memory");
  ibv_alloc_dm_attr attr{};
  attr.length = bytes;
  ibv_dm* dm = ibv_alloc_dm(dev_->ctx, &attr);
  if (!dm) return errno_error(errno, what + ": ibv_alloc_dm");
  errno = 0;
  const std::uint32_t handle = rhinetdv_twin_handle(dm);
  if (!handle && errno) {
    const int e = errno;
    ibv_free_dm(dm);
    return errno_error(e, what + ": rhinetdv_twin_handle");
  }
  return dev_->make_twin(dm, bytes, handle);
}

// ---- signals ----------------------------------------------------------------

Result<std::uint64_t> Group::signal_count(std::uint32_t area_id) {
  std::uint64_t count = 0;
  if (int e = rhinetdv_signal_count(dev_->ep, group_, area_id, &count))
    return errno_error(e, "signal_count of area " + std::to_string(area_id));
  return count;
}

Result<void> Group::wait_signal(std::uint32_t area_id, std::uint64_t count,
                                std::chrono::milliseconds timeout) {
  const std::string what = "wait_signal: area " + std::to_string(area_id) +
                           " count " + std::to_string(count);
  int ms = -1;
  if (timeout != forever)
    ms = timeout.count() < 0         ? 0
         : timeout.count() > INT_MAX ? INT_MAX
                                     : static_cast<int>(timeout.count());
  const int e = rhinetdv_wait_signal(dev_->ep, group_, area_id, count, ms);
  if (e == ETIMEDOUT)
    return Error(ETIMEDOUT, what + ": not reached within " +
                                net::format_duration(timeout));
  if (e) return errno_error(e, what);
  return ok();
}

// ---- bootstrap --------------------------------------------------------------

Result<void> Group::barrier_bootstrap(std::chrono::milliseconds timeout) {
  if (!boot_)
    return Error(EOPNOTSUPP,
                 "barrier_bootstrap: an added endpoint has no bootstrap "
                 "connection (use the Group of join)");
  return boot_->barrier(timeout);
}

}  // namespace rhinet
