// SPDX-License-Identifier: BSD-2-Clause
// rhinet::xpu::Device and LaneProgram: /dev/xpuN's ioctls (include/uapi/xpu/
// xpu-abi.h) and the lane command format (include/hw/xpu/xpu.h).
#include "rhinet/xpu.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "xpu/xpu-abi.h"
#include "xpu/xpu.h"

namespace rhinet::xpu {

static_assert(sizeof(xpu_cmd) == XPU_CMD_SIZE);
static_assert(std::tuple_size_v<Counters> == XPU_COUNTERS_MAX);

Result<Device> Device::open(const std::string& path, std::uint64_t mem_bytes) {
  Device d;
  d.fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (d.fd_ < 0) return Error(errno, "open " + path + " (xpu.ko loaded?)");
  // INFO below gives the file the default memory if it has none yet.
  xpu_mem m{};
  m.size = mem_bytes;
  if (mem_bytes && ioctl(d.fd_, XPU_IOC_MEM, &m))
    return Error(errno,
                 std::to_string(mem_bytes) + " bytes of " + path + "'s memory");
  xpu_info info{};
  if (ioctl(d.fd_, XPU_IOC_INFO, &info))
    return Error(errno, "XPU_IOC_INFO on " + path);
  void* map = mmap(nullptr, info.mem_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   d.fd_, 0);
  if (map == MAP_FAILED) return Error(errno, "mmap of " + path + "'s memory");
  d.mem_ = static_cast<volatile std::uint8_t*>(map);
  d.mem_size_ = info.mem_size;
  d.lanes_ = info.lanes;
  d.p2pdma_ = info.flags & XPU_INFO_P2PDMA;
  return d;
}

Device::Device(Device&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      mem_(std::exchange(o.mem_, nullptr)),
      mem_size_(o.mem_size_),
      lanes_(o.lanes_),
      p2pdma_(o.p2pdma_) {}

Device& Device::operator=(Device&& o) noexcept {
  if (this != &o) {
    close_all();
    fd_ = std::exchange(o.fd_, -1);
    mem_ = std::exchange(o.mem_, nullptr);
    mem_size_ = o.mem_size_;
    lanes_ = o.lanes_;
    p2pdma_ = o.p2pdma_;
  }
  return *this;
}

Device::~Device() { close_all(); }

void Device::close_all() {
  if (mem_) munmap(const_cast<std::uint8_t*>(mem_), mem_size_);
  if (fd_ >= 0) ::close(fd_);
  mem_ = nullptr;
  fd_ = -1;
}

Result<int> Device::export_dmabuf(std::uint64_t offset,
                                  std::uint64_t length) const {
  xpu_export e{};
  e.offset = offset;
  e.length = length;
  e.flags = O_CLOEXEC | O_RDWR;
  if (ioctl(fd_, XPU_IOC_EXPORT_DMABUF, &e))
    return Error(errno, "dma-buf export of the xpu's memory");
  return e.fd;
}

Result<Import> Device::import_dmabuf(int fd, std::uint32_t lane_mask) const {
  xpu_import imp{};
  imp.fd = fd;
  imp.lanes = lane_mask;
  if (ioctl(fd_, XPU_IOC_IMPORT_DMABUF, &imp))
    return Error(errno, "dma-buf import into the xpu");
  return Import{imp.bus_addr, imp.size, imp.window};
}

Result<void> Device::unimport(std::uint32_t window) const {
  xpu_unimport u{};
  u.window = window;
  if (ioctl(fd_, XPU_IOC_UNIMPORT_DMABUF, &u))
    return Error(errno,
                 "giving back the xpu's window " + std::to_string(window));
  return ok();
}

// XPU_IOC_LANE_CLAIM or XPU_IOC_LANE_RELEASE of @lane_mask; @what: which.
static Result<void> lane_ioctl(int fd, unsigned long cmd,
                               std::uint32_t lane_mask, const char* what) {
  xpu_lane_claim c{};
  c.lanes = lane_mask;
  if (ioctl(fd, cmd, &c))
    return Error(errno, std::string(what) + " the xpu's lanes " +
                            std::to_string(lane_mask) + " (mask)");
  return ok();
}

Result<void> Device::claim_lanes(std::uint32_t lane_mask) const {
  return lane_ioctl(fd_, XPU_IOC_LANE_CLAIM, lane_mask, "claiming");
}

Result<void> Device::release_lanes(std::uint32_t lane_mask) const {
  return lane_ioctl(fd_, XPU_IOC_LANE_RELEASE, lane_mask, "giving back");
}

Result<LaneOutcome> Device::run(std::uint32_t lane, std::uint64_t pc,
                                std::uint32_t timeout_ms) const {
  xpu_lane_run r{};
  r.lane = lane;
  r.pc = pc;
  r.flags = XPU_RUN_WAIT;
  r.timeout_ms = timeout_ms;
  if (ioctl(fd_, XPU_IOC_LANE_RUN, &r))
    return Error(errno, "XPU_IOC_LANE_RUN of lane " + std::to_string(lane));
  return LaneOutcome{r.status, r.error, r.executed};
}

Result<Counters> Device::counters() const {
  xpu_counters c{};
  if (ioctl(fd_, XPU_IOC_COUNTERS, &c)) return Error(errno, "XPU_IOC_COUNTERS");
  Counters out{};
  std::memcpy(out.data(), c.count, sizeof(c.count));
  return out;
}

Result<void> Device::clear_counters() const {
  if (ioctl(fd_, XPU_IOC_CLEAR_COUNTERS))
    return Error(errno, "XPU_IOC_CLEAR_COUNTERS");
  return ok();
}

void LaneProgram::add(std::uint8_t op, std::uint8_t flags, std::uint32_t len,
                      std::uint64_t a, std::uint64_t b, std::uint64_t imm) {
  cmds_.push_back(Cmd{op, flags, 0, len, a, b, imm});
}

void LaneProgram::store(std::uint64_t a, std::uint64_t imm) {
  add(XPU_OP_STORE, 0, 0, a, 0, imm);
}

void LaneProgram::copy(std::uint64_t dst, std::uint64_t src,
                       std::uint32_t len) {
  add(XPU_OP_COPY, 0, len, dst, src, 0);
}

void LaneProgram::write64(std::uint64_t bus, std::uint64_t imm) {
  add(XPU_OP_WRITE64, 0, 0, 0, bus, imm);
}

void LaneProgram::poll(std::uint64_t a, std::uint64_t imm, bool at_least,
                       std::uint32_t rounds) {
  add(XPU_OP_POLL, at_least ? XPU_POLL_GE : 0, rounds, a, 0, imm);
}

void LaneProgram::stop() { add(XPU_OP_STOP, 0, 0, 0, 0, 0); }

Result<void> LaneProgram::load(const Device& dev, std::uint64_t offset,
                               std::uint64_t room) const {
  if (bytes() > room || offset % XPU_CMD_SIZE || offset + room > dev.mem_size())
    return Error(ENOSPC, "lane program of " + std::to_string(commands()) +
                             " commands does not fit its area");
  for (std::size_t i = 0; i < cmds_.size(); i++) {
    xpu_cmd c{};
    c.op = cmds_[i].op;
    c.flags = cmds_[i].flags;
    c.len = cmds_[i].len;
    c.a = cmds_[i].a;
    c.b = cmds_[i].b;
    c.imm = cmds_[i].imm;
    std::memcpy(const_cast<std::uint8_t*>(dev.mem()) + offset + i * 32, &c,
                sizeof(c));
  }
  return ok();
}

}  // namespace rhinet::xpu
