// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/group.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device.hpp"
#include "net.hpp"

namespace rhinet {

namespace {

Error errno_error(int e, std::string what) {
  return Error(e ? e : EIO, std::move(what));
}

std::string hex(std::uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

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
    return errno_error(err, "ibv_open_device " + name);
  }
  return ctx;
}

// The partial mode of `o` into a PUSH's, PULL's or mcast's attributes
// (rhinetdv_xfer_ex and rhinetdv_mcast_attr name these fields alike).
template <typename Attr>
void put_mode(Attr& a, const XferOptions& o, std::uint32_t bitmap_lkey) {
  a.mode = static_cast<std::uint32_t>(o.mode);
  switch (o.mode) {
    case Mode::stride:
      a.block = o.stride.block;
      a.count = o.stride.count;
      a.local_stride = o.stride.local_stride;
      a.remote_stride = o.stride.remote_stride;
      // One block: the strides say nothing, but the NIC wants them >= block.
      if (a.count == 1) {
        if (a.local_stride < a.block) a.local_stride = a.block;
        if (a.remote_stride < a.block) a.remote_stride = a.block;
      }
      break;
    case Mode::bitmap:
      a.block = o.bitmap.granularity;
      a.bitmap = o.bitmap.bits.data();
      a.bitmap_lkey = bitmap_lkey;
      break;
    case Mode::diff:
    case Mode::twin:
      a.twin = o.twin.twin->dm();
      a.twin_offset = o.twin.offset;
      break;
    case Mode::basic:
      break;
  }
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
  dev->ep = rhinetdv_create_endpoint(dev->pd, &ea);
  if (!dev->ep)
    return errno_error(errno, "rhinetdv_create_endpoint on " + name);
  if (auto r = dev->make_pool(max); !r) return std::move(r).error();
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
  rank_ = boot_.rank();
  size_ = boot_.size();
  group_ = boot_.group();
  table_ = boot_.table();
  local_rank_ = 0;
  local_size_ = 0;
  for (std::uint32_t r = 0; r < size_; r++)
    if (table_[r].node_id == table_[rank_].node_id) {
      if (r < rank_) local_rank_++;
      local_size_++;
    }
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

Result<Buffer> make_buffer(detail::Device& dev, std::byte* p, std::size_t len,
                           bool writable) {
  const std::string what =
      std::string(writable ? "buffer" : "read-only buffer") + " (" +
      std::to_string(len) + " bytes at " +
      hex(reinterpret_cast<std::uintptr_t>(p)) + ")";
  if (!len) return Error(EINVAL, what + ": empty");
  if (dev.find_region(p, 1) || dev.find_region(p + len - 1, 1))
    return Error(EEXIST, what + ": overlaps a Buffer or Area of the group");
  ibv_mr* mr =
      ibv_reg_mr(dev.pd, p, len, writable ? IBV_ACCESS_LOCAL_WRITE : 0);
  if (!mr) return errno_error(errno, what + ": ibv_reg_mr");
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

// ---- PUSH and PULL ----------------------------------------------------------

Request Group::push(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::span<const std::byte> src,
                    const XferOptions& options) {
  return post(Op::push, Target::area, rank, area_id, 0, offset,
              {const_cast<std::byte*>(src.data()), src.size()}, options);
}

Request Group::pull(std::uint32_t rank, std::uint32_t area_id,
                    std::uint64_t offset, std::span<std::byte> dst,
                    const XferOptions& options) {
  return post(Op::pull, Target::area, rank, area_id, 0, offset, dst, options);
}

Request Group::push_to(std::uint32_t rank, std::uint64_t remote_addr,
                       std::uint32_t rkey, std::span<const std::byte> src,
                       const XferOptions& options) {
  return post(Op::push, Target::key, rank, remote_addr, rkey, 0,
              {const_cast<std::byte*>(src.data()), src.size()}, options);
}

Request Group::pull_from(std::uint32_t rank, std::uint64_t remote_addr,
                         std::uint32_t rkey, std::span<std::byte> dst,
                         const XferOptions& options) {
  return post(Op::pull, Target::key, rank, remote_addr, rkey, 0, dst, options);
}

Request Group::post(Op op, Target target, std::uint32_t rank,
                    std::uint64_t remote, std::uint32_t rkey,
                    std::uint64_t offset, std::span<std::byte> local,
                    const XferOptions& o) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;  // for messages
  d.op = op;
  d.target = target;
  d.mode = o.mode;
  d.rank = rank;
  d.area_or_rkey =
      target == Target::area ? static_cast<std::uint32_t>(remote) : rkey;
  d.offset_or_addr = target == Target::area ? offset : remote;
  d.length = static_cast<std::uint32_t>(local.size());
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };

  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  if (target == Target::area && remote > 0xffff)
    return fail(EINVAL, "area IDs are 0..65535");
  if (auto r = check_xfer(op, target, o, local.size()); !r)
    return fail(r.error().errno_value(), r.error().message());
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return fail(EINVAL, "the twin belongs to another group");

  // Local memory: a registered region, unless inline (or empty: a push of
  // nothing, e.g. only a signal, goes inline).
  const bool inline_data = op == Op::push && (o.inline_data || local.empty());
  std::uint32_t lkey = 0;
  if (inline_data) {
    if (local.size() > dev.attr.max_inline)
      return fail(EMSGSIZE, "inline data of " + std::to_string(local.size()) +
                                " bytes; the device takes at most " +
                                std::to_string(dev.attr.max_inline));
  } else {
    if (local.empty()) return fail(EINVAL, "empty span");
    const auto* reg = dev.find_region(local.data(), local.size());
    if (!reg)
      return fail(EFAULT,
                  "the local span (" +
                      hex(reinterpret_cast<std::uintptr_t>(local.data())) +
                      ") is not inside one registered Buffer or Area of the "
                      "group (Group::buffer)");
    if (op == Op::pull && !reg->writable)
      return fail(EACCES, "the local span is in a read-only Buffer");
    lkey = reg->lkey;
  }
  std::uint32_t bitmap_lkey = 0;
  if (o.mode == Mode::bitmap) {
    const auto* reg =
        dev.find_region(o.bitmap.bits.data(), o.bitmap.bits.size());
    if (!reg)
      return fail(EFAULT,
                  "the bitmap is not inside one registered Buffer or Area of "
                  "the group (the NIC reads it)");
    bitmap_lkey = reg->lkey;
  }

  rhinetdv_xfer_ex x{};
  x.base.local_addr = local.data();
  x.base.length = static_cast<std::uint32_t>(local.size());
  x.base.lkey = lkey;
  x.base.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  x.base.dest_endpoint = table_[rank].endpoint_id;
  x.base.flags = RHINETDV_XFER_STATUS_WORD;
  if (inline_data) x.base.flags |= RHINETDV_XFER_INLINE;
  if (o.fence) x.base.flags |= RHINETDV_XFER_FENCE;
  if (target == Target::area) {
    x.base.area_id = static_cast<std::uint32_t>(remote);
    x.base.offset = offset;
    x.group_id = group_;
  } else {
    x.base.flags |= RHINETDV_XFER_EX_BY_KEY;
    x.remote_addr = remote;
    x.rkey = rkey;
  }
  if (o.signal) {
    x.base.flags |= RHINETDV_XFER_EX_SIGNAL;
    x.signal = o.signal;
  }
  put_mode(x, o, bitmap_lkey);
  // The endpoint's queue may be full: earlier operations finish first.
  return dev.post_in_slot(
      d, fail, op == Op::push ? "rhinetdv_push_ex" : "rhinetdv_pull_ex",
      [&](std::uint32_t s) {
        dev.use_word(x.base, s);
        return op == Op::push ? rhinetdv_push_ex(dev.ep, &x, sizeof(x))
                              : rhinetdv_pull_ex(dev.ep, &x, sizeof(x));
      });
}

// ---- remote pin-down -------------------------------------------------------

Request Group::pd_req(std::uint32_t rank, std::uint32_t area_id,
                      std::uint64_t offset, std::uint64_t length) {
  return post_pin(Op::pd_req, rank, area_id, offset, length);
}

Request Group::pd_release(std::uint32_t rank, std::uint32_t area_id,
                          std::uint64_t offset, std::uint64_t length) {
  return post_pin(Op::pd_release, rank, area_id, offset, length);
}

Request Group::post_pin(Op op, std::uint32_t rank, std::uint32_t area_id,
                        std::uint64_t offset, std::uint64_t length) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.target = Target::area;
  d.rank = rank;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(length);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!pin_on_demand())
    return fail(EOPNOTSUPP, "the device (or rhinet.ko) does not pin on demand");
  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  if (length == 0 || length > UINT32_MAX)
    return fail(EINVAL, "a range of 1 byte .. 4 GiB - 1");

  rhinetdv_pin_attr a{};
  a.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  a.dest_endpoint = table_[rank].endpoint_id;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  a.length = static_cast<std::uint32_t>(length);
  a.flags = RHINETDV_PIN_STATUS_WORD;
  return dev.post_in_slot(
      d, fail, op == Op::pd_req ? "rhinetdv_pd_req" : "rhinetdv_pd_release",
      [&](std::uint32_t s) {
        dev.use_word(a, s);
        return op == Op::pd_req ? rhinetdv_pd_req(dev.ep, &a, sizeof(a))
                                : rhinetdv_pd_release(dev.ep, &a, sizeof(a));
      });
}

Result<void> Group::sync(std::chrono::milliseconds timeout) {
  detail::Device& dev = *dev_;
  const auto deadline = net::deadline_after(timeout);
  detail::Backoff b;
  for (;;) {
    dev.reap_all();
    if (!dev.in_flight()) break;
    if (net::poll_ms(deadline) == 0)
      return Error(ETIMEDOUT, "sync: " + std::to_string(dev.in_flight()) +
                                  " operations still in flight after " +
                                  net::format_duration(timeout));
    b.pause();
  }
  dev.poll_cq();
  if (dev.detached_error) {
    Error e = std::move(*dev.detached_error);
    dev.detached_error.reset();
    return e;
  }
  return ok();
}

// ---- sequential multicast ---------------------------------------------------

bool Group::multicast() const {
  return dev_->attr.caps & RHINETDV_CAP_MCAST_LIST;
}

Request Group::mcast(std::span<const std::uint32_t> ranks,
                     std::uint32_t area_id, std::uint64_t offset,
                     std::span<const std::byte> src, const XferOptions& o) {
  return post_mcast(Op::mcast, ranks, 0, area_id, offset, src, o);
}

// ---- simultaneous multicast -------------------------------------------------

bool Group::switch_multicast() const {
  return dev_->attr.caps & RHINETDV_CAP_MCAST_SWITCH;
}

Request Group::mcast(SwitchGroup group, std::uint32_t area_id,
                     std::uint64_t offset, std::span<const std::byte> src,
                     const XferOptions& o) {
  return post_mcast(Op::mcast_switch, {}, group.id, area_id, offset, src, o);
}

// Both multicasts: to `ranks` (Op::mcast) or to a switch group; and a
// shared region's update, which the NIC sends along its directory.
Request Group::post_mcast(Op op, std::span<const std::uint32_t> ranks,
                          std::uint16_t switch_group, std::uint32_t area_id,
                          std::uint64_t offset, std::span<const std::byte> src,
                          const XferOptions& o) {
  detail::Device& dev = *dev_;
  const bool list = op == Op::mcast;
  const bool share = op == Op::share_update;
  detail::Device::Slot d;
  d.op = op;
  d.mode = o.mode;
  // Described so: the number of ranks, or the switch group.
  d.rank = list ? static_cast<std::uint32_t>(ranks.size()) : switch_group;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(src.size());
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (list && !multicast())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no sequential multicast "
                "(RHINETDV_CAP_MCAST_LIST)");
  if (op == Op::mcast_switch && !switch_multicast())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no simultaneous multicast "
                "(RHINETDV_CAP_MCAST_SWITCH)");
  if (share && !shared_regions())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no shared regions "
                "(RHINETDV_CAP_SHARE)");
  if (op == Op::mcast_switch && (switch_group < RHINETDV_MCAST_SWITCH_FIRST ||
                                 switch_group > RHINETDV_MCAST_SWITCH_LAST))
    return fail(EINVAL, "switch groups are 0xf000..0xfffe");
  if (list && ranks.empty()) return fail(EINVAL, "no ranks to send to");
  if (ranks.size() > RHINETDV_MCAST_MAX_DESTS)
    return fail(EINVAL, std::to_string(ranks.size()) +
                            " ranks; one mcast takes at most " +
                            std::to_string(RHINETDV_MCAST_MAX_DESTS));
  for (std::uint32_t r : ranks)
    if (r >= size_)
      return fail(EINVAL, "no rank " + std::to_string(r) + " in a group of " +
                              std::to_string(size_));
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  if (auto r = check_xfer(d.op, Target::area, o, src.size()); !r)
    return fail(r.error().errno_value(), r.error().message());
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return fail(EINVAL, "the twin belongs to another group");

  const bool inline_data = o.inline_data || src.empty();
  std::uint32_t lkey = 0;
  if (inline_data) {
    if (src.size() > dev.attr.max_inline)
      return fail(EMSGSIZE, "inline data of " + std::to_string(src.size()) +
                                " bytes; the device takes at most " +
                                std::to_string(dev.attr.max_inline));
  } else {
    const auto* reg = dev.find_region(src.data(), src.size());
    if (!reg)
      return fail(EFAULT,
                  "the local span (" +
                      hex(reinterpret_cast<std::uintptr_t>(src.data())) +
                      ") is not inside one registered Buffer or Area of the "
                      "group (Group::buffer)");
    lkey = reg->lkey;
  }
  std::uint32_t bitmap_lkey = 0;
  if (o.mode == Mode::bitmap) {
    const auto* reg =
        dev.find_region(o.bitmap.bits.data(), o.bitmap.bits.size());
    if (!reg)
      return fail(EFAULT,
                  "the bitmap is not inside one registered Buffer or Area of "
                  "the group (the NIC reads it)");
    bitmap_lkey = reg->lkey;
  }
  std::shared_ptr<const detail::McastList> dests;
  if (list) {
    auto l = dev.mcast_list(ranks, table_);
    if (!l) return fail(l.error().errno_value(), l.error().message());
    dests = *l;
  }

  rhinetdv_mcast_attr a{};
  a.addr = src.data();
  a.length = static_cast<std::uint32_t>(src.size());
  a.lkey = lkey;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  if (list) {
    a.dests = dests->dests.data();
    a.dests_lkey = dests->mr->lkey;
    a.num_dests = static_cast<std::uint32_t>(ranks.size());
  }
  a.flags = RHINETDV_MCAST_STATUS_WORD;
  if (inline_data) a.flags |= RHINETDV_MCAST_INLINE;
  if (o.signal) {
    a.flags |= RHINETDV_MCAST_SIGNAL;
    a.signal = o.signal;
  }
  put_mode(a, o, bitmap_lkey);
  d.keep = dests;  // the NIC reads the list until the status word comes
  const char* call = list    ? "rhinetdv_mcast_list"
                     : share ? "rhinetdv_share_update"
                             : "rhinetdv_mcast_switch";
  return dev.post_in_slot(d, fail, call, [&](std::uint32_t slot) {
    dev.use_word(a, slot);
    if (list) return rhinetdv_mcast_list(dev.ep, &a, sizeof(a));
    if (share) {
      rhinetdv_share_update_attr u{};
      u.wr_id = a.wr_id;
      u.addr = a.addr;
      u.length = a.length;
      u.lkey = a.lkey;
      u.group_id = a.group_id;
      u.area_id = a.area_id;
      u.offset = a.offset;
      u.flags = a.flags;
      u.status_lkey = a.status_lkey;
      u.status_word = a.status_word;
      put_mode(u, o, bitmap_lkey);
      return rhinetdv_share_update(dev.ep, &u, sizeof(u));
    }
    rhinetdv_mcast_switch_attr s{};
    s.wr_id = a.wr_id;
    s.addr = a.addr;
    s.length = a.length;
    s.lkey = a.lkey;
    s.group_id = a.group_id;
    s.area_id = a.area_id;
    s.offset = a.offset;
    s.switch_group = switch_group;
    s.flags = a.flags;
    s.status_lkey = a.status_lkey;
    s.signal = a.signal;
    s.status_word = a.status_word;
    s.mode = a.mode;
    s.block = a.block;
    s.count = a.count;
    s.bitmap_lkey = a.bitmap_lkey;
    s.local_stride = a.local_stride;
    s.remote_stride = a.remote_stride;
    s.bitmap = a.bitmap;
    s.twin = a.twin;
    s.twin_offset = a.twin_offset;
    return rhinetdv_mcast_switch(dev.ep, &s, sizeof(s));
  });
}

// ---- remote atomics ---------------------------------------------------------

Request Group::fetch_add(std::uint32_t rank, std::uint32_t area_id,
                         std::uint64_t offset, std::uint64_t add) {
  return post_atomic(Op::fetch_add, rank, area_id, offset, add, 0);
}

Request Group::compare_swap(std::uint32_t rank, std::uint32_t area_id,
                            std::uint64_t offset, std::uint64_t expected,
                            std::uint64_t desired) {
  return post_atomic(Op::compare_swap, rank, area_id, offset, expected,
                     desired);
}

Request Group::post_atomic(Op op, std::uint32_t rank, std::uint32_t area_id,
                           std::uint64_t offset, std::uint64_t compare_add,
                           std::uint64_t swap) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.rank = rank;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = 8;
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!(dev.attr.caps & RHINETDV_CAP_ATOMIC))
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no remote atomics "
                "(RHINETDV_CAP_ATOMIC)");
  if (rank >= size_)
    return fail(EINVAL, "no rank " + std::to_string(rank) + " in a group of " +
                            std::to_string(size_));
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  if (offset & 7) return fail(EINVAL, "the word must be 8-byte aligned");
  rhinetdv_atomic_attr a{};
  a.op = op == Op::fetch_add ? RHINETDV_ATOMIC_FETCH_ADD
                             : RHINETDV_ATOMIC_CMP_SWAP;
  a.dest_node = static_cast<std::uint16_t>(table_[rank].node_id);
  a.dest_endpoint = table_[rank].endpoint_id;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  a.compare_add = compare_add;
  a.swap = swap;
  return dev.post_in_slot(d, fail, "rhinetdv_atomic", [&](std::uint32_t s) {
    a.wr_id = s;
    a.result = &dev.results[s];
    a.result_lkey = dev.words_mr->lkey;
    return rhinetdv_atomic(dev.ep, &a, sizeof(a));
  });
}

// ---- locks and barriers -----------------------------------------------------

bool Group::locks_and_barriers() const {
  return dev_->attr.caps & RHINETDV_CAP_SYNC;
}

Request Group::post_sync(Op op, std::uint32_t manager, std::uint64_t id,
                         std::uint32_t count) {
  detail::Device& dev = *dev_;
  detail::Device::Slot d;
  d.op = op;
  d.rank = manager;
  d.offset_or_addr = id;
  d.length = count;
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!locks_and_barriers())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no locks and barriers "
                "(RHINETDV_CAP_SYNC)");
  if (manager >= size_)
    return fail(EINVAL, "no rank " + std::to_string(manager) +
                            " in a group of " + std::to_string(size_) +
                            " to manage it");
  if (op == Op::barrier && (count == 0 || count > RHINETDV_BARRIER_MAX_COUNT))
    return fail(EINVAL, "a barrier of " + std::to_string(count) +
                            " ranks; the NIC counts 1.." +
                            std::to_string(RHINETDV_BARRIER_MAX_COUNT));
  rhinetdv_sync_attr a{};
  a.manager_node = static_cast<std::uint16_t>(table_[manager].node_id);
  a.manager_endpoint = table_[manager].endpoint_id;
  a.id = id;
  a.count = op == Op::barrier ? count : 0;
  a.flags = RHINETDV_SYNC_STATUS_WORD;
  return dev.post_in_slot(d, fail, std::string("rhinetdv_") + op_name(op),
                          [&](std::uint32_t s) {
                            dev.use_word(a, s);
                            switch (op) {
                              case Op::lock:
                                return rhinetdv_lock(dev.ep, &a, sizeof(a));
                              case Op::unlock:
                                return rhinetdv_unlock(dev.ep, &a, sizeof(a));
                              default:
                                return rhinetdv_barrier(dev.ep, &a, sizeof(a));
                            }
                          });
}

Request Group::ilock(std::uint64_t lock_id, std::uint32_t manager) {
  return post_sync(Op::lock, manager, lock_id, 0);
}

Request Group::iunlock(std::uint64_t lock_id, std::uint32_t manager) {
  return post_sync(Op::unlock, manager, lock_id, 0);
}

Result<void> Group::lock(std::uint64_t lock_id, std::uint32_t manager) {
  return ilock(lock_id, manager).wait();
}

Result<void> Group::unlock(std::uint64_t lock_id, std::uint32_t manager) {
  return iunlock(lock_id, manager).wait();
}

Result<LockGuard> Group::scoped_lock(std::uint64_t lock_id,
                                     std::uint32_t manager) {
  if (auto r = lock(lock_id, manager); !r) return r.error();
  return LockGuard(this, lock_id, manager);
}

Request Group::ibarrier(const BarrierOptions& options) {
  return post_sync(Op::barrier, options.manager, options.id,
                   options.count ? options.count : size_);
}

Result<void> Group::barrier(const BarrierOptions& options,
                            std::chrono::milliseconds timeout) {
  return ibarrier(options).wait(timeout);
}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : group_(other.group_), id_(other.id_), manager_(other.manager_) {
  other.group_ = nullptr;
}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
  if (this != &other) {
    if (owns()) (void)unlock();
    group_ = other.group_;
    id_ = other.id_;
    manager_ = other.manager_;
    other.group_ = nullptr;
  }
  return *this;
}

LockGuard::~LockGuard() {
  if (!owns()) return;
  Group* g = group_;
  if (auto r = unlock(); !r && !g->dev_->detached_error)
    g->dev_->detached_error = r.error();
}

Result<void> LockGuard::unlock() {
  if (!owns())
    return Error(EINVAL, "LockGuard::unlock: the guard holds no lock");
  Group* g = group_;
  group_ = nullptr;
  return g->unlock(id_, manager_);
}

// ---- shared regions ---------------------------------------------------------

bool Group::shared_regions() const {
  return dev_->attr.caps & RHINETDV_CAP_SHARE;
}

// SUBSCRIBE (`area` given) and UNSUBSCRIBE, both to the home rank.
Request Group::post_share(Op op, std::uint32_t home, std::uint32_t area_id,
                          const Area* area, std::uint64_t offset,
                          std::uint64_t length, const XferOptions& o) {
  detail::Device& dev = *dev_;
  const bool subscribe = op == Op::subscribe;
  detail::Device::Slot d;
  d.op = op;
  d.mode = o.mode;
  d.rank = home;
  d.area_or_rkey = area_id;
  d.offset_or_addr = offset;
  d.length = static_cast<std::uint32_t>(length);
  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(Error(e, dev.describe(d) + ": " + why));
  };
  if (!shared_regions())
    return fail(EOPNOTSUPP,
                "the device (or librhinetdv) has no shared regions "
                "(RHINETDV_CAP_SHARE)");
  if (home >= size_)
    return fail(EINVAL, "no rank " + std::to_string(home) + " in a group of " +
                            std::to_string(size_) + " to be the home");
  if (home == rank_)
    return fail(EINVAL,
                "this rank is the home: its area is the master copy, it does "
                "not subscribe (it updates once a member has joined)");
  if (area_id > 0xffff) return fail(EINVAL, "area IDs are 0..65535");
  rhinetdv_subscribe_attr a{};
  if (subscribe) {
    if (area->group() != group_)
      return fail(EINVAL, "the area belongs to group " +
                              std::to_string(area->group()) + ", not " +
                              std::to_string(group_));
    const std::size_t size = area->memory().size();
    if (length == 0 || offset > size || length > size - offset)
      return fail(EINVAL, "bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset + length) +
                              ") are not inside the area's " +
                              std::to_string(size));
    if (length > RHINETDV_SHARE_MAX_BYTES)
      return fail(EMSGSIZE, "a region holds at most " +
                                std::to_string(RHINETDV_SHARE_MAX_BYTES) +
                                " bytes");
    if (auto r = check_xfer(op, Target::area, o, length); !r)
      return fail(r.error().errno_value(), r.error().message());
    if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
      return fail(EINVAL, "the twin belongs to another group");
    a.addr = area->memory().data() + offset;
    a.length = static_cast<std::uint32_t>(length);
    a.lkey = area->lkey();
    a.mode = static_cast<std::uint32_t>(o.mode);
    if (o.mode == Mode::twin) {
      a.twin = o.twin.twin->dm();
      a.twin_offset = o.twin.offset;
    }
  }
  a.home_node = static_cast<std::uint16_t>(table_[home].node_id);
  a.home_endpoint = table_[home].endpoint_id;
  a.group_id = group_;
  a.area_id = area_id;
  a.offset = offset;
  a.flags = RHINETDV_SHARE_STATUS_WORD;
  const char* call = subscribe ? "rhinetdv_subscribe" : "rhinetdv_unsubscribe";
  return dev.post_in_slot(d, fail, call, [&](std::uint32_t slot) {
    dev.use_word(a, slot);
    if (subscribe) return rhinetdv_subscribe(dev.ep, &a, sizeof(a));
    rhinetdv_unsubscribe_attr u{};
    u.wr_id = a.wr_id;
    u.home_node = a.home_node;
    u.home_endpoint = a.home_endpoint;
    u.group_id = a.group_id;
    u.area_id = a.area_id;
    u.offset = a.offset;
    u.flags = a.flags;
    u.status_lkey = a.status_lkey;
    u.status_word = a.status_word;
    return rhinetdv_unsubscribe(dev.ep, &u, sizeof(u));
  });
}

Request Group::isubscribe(std::uint32_t home, const Area& area,
                          std::uint64_t offset, std::uint64_t length,
                          const XferOptions& o) {
  return post_share(Op::subscribe, home, area.id(), &area, offset, length, o);
}

Result<SharedRegion> Group::subscribe(std::uint32_t home, const Area& area,
                                      std::uint64_t offset,
                                      std::uint64_t length,
                                      const XferOptions& o) {
  if (auto r = isubscribe(home, area, offset, length, o).wait(); !r)
    return r.error();
  return SharedRegion(this, home, area.id(), offset,
                      area.memory().subspan(offset, length));
}

Request Group::iunsubscribe(std::uint32_t home, std::uint32_t area_id) {
  return post_share(Op::unsubscribe, home, area_id, nullptr, 0, 0, {});
}

Result<void> Group::unsubscribe(std::uint32_t home, std::uint32_t area_id) {
  return iunsubscribe(home, area_id).wait();
}

Request Group::update(std::uint32_t area_id, std::uint64_t offset,
                      std::span<const std::byte> src, const XferOptions& o) {
  return post_mcast(Op::share_update, {}, 0, area_id, offset, src, o);
}

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : group_(other.group_),
      home_(other.home_),
      area_id_(other.area_id_),
      offset_(other.offset_),
      bytes_(other.bytes_) {
  other.group_ = nullptr;
}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    if (subscribed()) (void)unsubscribe();
    group_ = other.group_;
    home_ = other.home_;
    area_id_ = other.area_id_;
    offset_ = other.offset_;
    bytes_ = other.bytes_;
    other.group_ = nullptr;
  }
  return *this;
}

SharedRegion::~SharedRegion() {
  if (!subscribed()) return;
  Group* g = group_;
  if (auto r = unsubscribe(); !r && !g->dev_->detached_error)
    g->dev_->detached_error = r.error();
}

Request SharedRegion::update(std::span<const std::byte> part,
                             const XferOptions& o) {
  const auto* begin = bytes_.data();
  if (!subscribed() || part.data() < begin ||
      part.data() + part.size() > begin + bytes_.size())
    return detail::Device::failed(Error(
        EINVAL,
        "SharedRegion::update: " +
            std::string(subscribed() ? "the span is not inside the region's "
                                       "bytes()"
                                     : "not subscribed")));
  return group_->update(area_id_, offset_ + (part.data() - begin), part, o);
}

Result<void> SharedRegion::unsubscribe() {
  if (!subscribed())
    return Error(EINVAL, "SharedRegion::unsubscribe: not subscribed");
  Group* g = group_;
  group_ = nullptr;
  return g->unsubscribe(home_, area_id_);
}

// ---- messages ---------------------------------------------------------------

bool Group::tag_matching() const { return dev_->tag_matching; }
std::uint32_t Group::max_eager() const { return dev_->tag_caps.max_eager; }
std::uint32_t Group::max_irecv() const {
  return static_cast<std::uint32_t>(dev_->recvs.size());
}
std::size_t Group::pending_irecvs() const { return dev_->recvs_in_flight(); }

namespace {

Error no_tag_matching(const detail::Device& dev, const std::string& what) {
  return Error(EOPNOTSUPP, what + ": " + dev.no_tag_reason);
}

// What a partial isend or irecv needs beyond check_message and
// plan_message: a library that takes modes for messages, and the group's
// own twin.
std::optional<Error> partial_message_refused(const detail::Device& dev,
                                             const XferOptions& o,
                                             const std::string& what) {
  if (o.mode == Mode::basic) return std::nullopt;
  if (!(dev.attr.caps & RHINETDV_CAP_TAG_XFER))
    return Error(EOPNOTSUPP, what +
                                 ": librhinetdv takes no partial-transfer "
                                 "modes for messages "
                                 "(RHINETDV_CAP_TAG_XFER, rhinetdv 1.4)");
  if (o.twin.twin && detail::Device::owner_of(*o.twin.twin) != &dev)
    return Error(EINVAL, what + ": the twin belongs to another group");
  return std::nullopt;
}

// Block size, count and stride of a strided message for the NIC: with
// one block the stride says nothing, but the NIC wants it >= block (as
// Group::post does for PUSH and PULL).
std::uint64_t stride_for_nic(const Stride& s) {
  return s.count == 1 && s.local_stride < s.block ? s.block : s.local_stride;
}

// The largest bitmap isend the endpoint takes (0: the library does not
// say).
std::uint32_t max_bitmap_blocks(const detail::Device& dev) {
  return dev.tag_caps.comp_mask & RHINETDV_TAG_CAPS_MASK_XFER
             ? dev.tag_caps.max_bitmap_blocks
             : 0;
}

}  // namespace

Request Group::isend(std::uint32_t rank, std::uint64_t tag,
                     std::span<const std::byte> src,
                     const XferOptions& options) {
  detail::Device& dev = *dev_;
  if (!dev.tag_matching)
    return detail::Device::failed(no_tag_matching(
        dev, detail::describe_message(Op::isend, rank, {tag}, src.size())));
  auto plan = detail::plan_message(Op::isend, rank, {tag}, src, options,
                                   dev.peers, dev.registry, dev.attr.max_inline,
                                   max_bitmap_blocks(dev));
  if (!plan) return detail::Device::failed(std::move(plan).error());
  if (auto e = partial_message_refused(
          dev, options,
          detail::describe_message(Op::isend, rank, {tag}, src.size(),
                                   options.mode)))
    return detail::Device::failed(std::move(*e));

  detail::Device::Slot d;  // for messages
  d.op = Op::isend;
  d.mode = options.mode;
  d.rank = rank;
  d.tag = tag;
  // The message's length: a strided isend sends its blocks, packed.
  d.length = options.mode == Mode::stride
                 ? options.stride.block * options.stride.count
                 : static_cast<std::uint32_t>(src.size());
  rhinetdv_isend_attr a{};
  a.addr = src.data();
  a.length = static_cast<std::uint32_t>(src.size());
  a.lkey = plan->lkey;
  a.dest_node = static_cast<std::uint16_t>(plan->peer.node_id);
  a.dest_endpoint = plan->peer.endpoint_id;
  a.tag = tag;
  a.flags = RHINETDV_ISEND_STATUS_WORD;
  if (plan->inline_data) a.flags |= RHINETDV_ISEND_INLINE;
  // The mode as push() maps it; a basic isend leaves the fields alone, so
  // that it works with a librhinetdv of before rhinetdv 1.4.
  if (options.mode != Mode::basic) {
    a.comp_mask = RHINETDV_ISEND_ATTR_MASK_XFER;
    a.mode = static_cast<std::uint32_t>(options.mode);
    switch (options.mode) {
      case Mode::stride:
        a.block = options.stride.block;
        a.count = options.stride.count;
        a.local_stride = stride_for_nic(options.stride);
        break;
      case Mode::bitmap:
        a.block = options.bitmap.granularity;
        a.bitmap = options.bitmap.bits.data();
        a.bitmap_lkey = plan->bitmap_lkey;
        break;
      case Mode::diff:
        a.twin = options.twin.twin->dm();
        a.twin_offset = options.twin.offset;
        break;
      case Mode::basic:
      case Mode::twin:  // refused by check_message
        break;
    }
  }

  const auto fail = [&](int e, const std::string& why) {
    return detail::Device::failed(errno_error(e, dev.describe(d) + ": " + why));
  };
  return dev.post_in_slot(d, fail, "rhinetdv_isend", [&](std::uint32_t s) {
    dev.use_word(a, s);
    return rhinetdv_isend(dev.ep, &a, sizeof(a));
  });
}

Request Group::irecv(std::uint32_t source, TagMatch match,
                     std::span<std::byte> dst, const XferOptions& options) {
  detail::Device& dev = *dev_;
  const auto failed = [](Error e) {
    return detail::Device::failed(std::move(e), true);
  };
  // What the irecv takes of a message: a strided one its blocks.
  const std::size_t room =
      options.mode == Mode::stride
          ? std::size_t{options.stride.block} * options.stride.count
          : dst.size();
  const auto what = [&] {
    return detail::describe_message(Op::irecv, source, match, room,
                                    options.mode);
  };
  if (!dev.tag_matching) return failed(no_tag_matching(dev, what()));
  auto plan =
      detail::plan_message(Op::irecv, source, match, dst, options, dev.peers,
                           dev.registry, dev.attr.max_inline);
  if (!plan) return failed(std::move(plan).error());
  if (auto e = partial_message_refused(dev, options, what()))
    return failed(std::move(*e));
  auto r = dev.acquire_recv();
  if (!r)
    return failed(Error(r.error().code(), what() + ": " + r.error().message()));
  detail::Device::RecvSlot& s = dev.recvs[*r];
  s.source = source;
  s.match = match;
  s.length = static_cast<std::uint32_t>(room);
  s.mode = options.mode;

  rhinetdv_irecv_attr a{};
  a.wr_id = detail::recv_wr_id(*r, s.gen);
  // An empty receive writes nothing, but names memory of the PD all the
  // same: the status-word pool.
  a.addr = plan->no_memory ? static_cast<void*>(dev.words) : dst.data();
  a.length = static_cast<std::uint32_t>(dst.size());
  a.lkey = plan->no_memory ? dev.words_mr->lkey : plan->lkey;
  a.tag = match.tag;
  a.tag_mask = match.mask;
  if (plan->any_source) {
    a.flags = RHINETDV_IRECV_ANY_SOURCE;
  } else {
    a.src_node = static_cast<std::uint16_t>(plan->peer.node_id);
    a.src_endpoint = plan->peer.endpoint_id;
  }
  // The mode as pull() maps it (a basic irecv as before rhinetdv 1.4).
  if (options.mode != Mode::basic) {
    a.comp_mask = RHINETDV_IRECV_ATTR_MASK_XFER;
    a.mode = static_cast<std::uint32_t>(options.mode);
    switch (options.mode) {
      case Mode::stride:
        a.block = options.stride.block;
        a.count = options.stride.count;
        a.stride = stride_for_nic(options.stride);
        break;
      case Mode::bitmap:
        a.block = options.bitmap.granularity;
        a.bitmap = options.bitmap.bits.data();
        a.bitmap_lkey = plan->bitmap_lkey;
        break;
      case Mode::twin:
        a.twin = options.twin.twin->dm();
        a.twin_offset = options.twin.offset;
        break;
      case Mode::basic:
      case Mode::diff:  // refused by check_message
        break;
    }
  }
  // ENOMEM with a free slot: the oldest irecv still waits in the
  // endpoint's ring for the NIC; give it a moment.
  std::uint32_t handle = 0;
  const int err = dev.post_retrying_for(std::chrono::seconds(10), [&] {
    return rhinetdv_irecv(dev.ep, &a, sizeof(a), &handle);
  });
  if (err) {
    dev.release_recv(*r);
    return failed(errno_error(
        err, what() + ": rhinetdv_irecv" +
                 (err == ENOMEM ? " (the NIC's irecv queue stays full)" : "")));
  }
  dev.recvs[*r].handle = handle;
  return dev.recv_request(*r);
}

Result<std::optional<Message>> Group::iprobe(std::uint32_t source,
                                             TagMatch match) {
  detail::Device& dev = *dev_;
  const std::string what =
      "iprobe from " + detail::describe_match(source, match);
  if (!dev.tag_matching) return no_tag_matching(dev, what);
  if (auto r = detail::check_source(source, size_); !r)
    return Error(EINVAL, what + ": " + r.error().message());
  rhinetdv_irecv_attr sel{};
  sel.tag = match.tag;
  sel.tag_mask = match.mask;
  if (source == any_source) {
    sel.flags = RHINETDV_IRECV_ANY_SOURCE;
  } else {
    sel.src_node = static_cast<std::uint16_t>(table_[source].node_id);
    sel.src_endpoint = table_[source].endpoint_id;
  }
  rhinetdv_tag_info info{};
  if (int e = dev.post_retrying_for(std::chrono::seconds(10), [&] {
        return rhinetdv_iprobe(dev.ep, &sel, sizeof(sel), &info);
      }))
    return errno_error(e, what + ": rhinetdv_iprobe");
  if (!info.found) return std::optional<Message>{};
  return std::optional<Message>{
      Message{dev.peers.rank_of(info.src_node, info.src_endpoint),
              Peer{info.src_node, info.src_endpoint}, info.tag, info.length}};
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
  return boot_.barrier(timeout);
}

}  // namespace rhinet
