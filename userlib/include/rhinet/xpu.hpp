// SPDX-License-Identifier: BSD-2-Clause
// rhinet::xpu: the accelerator stand-in's /dev/xpuN (Documentation/driver/
// xpu.md) and its lane programs (Documentation/hardware/xpu.md) for C++
// callers: the device-initiated put channel (put_channel.hpp) and tests.
#ifndef RHINET_XPU_HPP
#define RHINET_XPU_HPP

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "rhinet/result.hpp"

namespace rhinet::xpu {

// The bus counters, indexed as enum xpu_counter (include/hw/xpu/xpu.h).
using Counters = std::array<std::uint64_t, 16>;

struct LaneOutcome {
  std::uint32_t status = 0;  // enum xpu_lane_status (2 DONE, 3 FAULT)
  std::uint32_t error = 0;   // enum xpu_lane_error of a fault
  std::uint64_t executed = 0;
  bool done() const { return status == 2; }
};

// Another device's dma-buf as the lanes reach it.
struct Import {
  std::uint64_t bus_addr = 0;
  std::uint64_t size = 0;
  std::uint32_t window = 0;
};

// An open /dev/xpuN with its memory mapped; closed (lanes aborted, windows
// freed by the driver) when destroyed. The memory is this Device's own
// part of the xpu's (xpu.ko gives each open file one; another process
// cannot reach it): @mem_bytes of it, or the driver's default with 0.
// EDQUOT beyond the share one file may hold, ENOSPC when the xpu is full.
class Device {
 public:
  static Result<Device> open(const std::string& path = "/dev/xpu0",
                             std::uint64_t mem_bytes = 0);
  Device(Device&& o) noexcept;
  Device& operator=(Device&& o) noexcept;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  int fd() const { return fd_; }
  // The CPU's mapping of this Device's memory; offsets everywhere below
  // (exports, lane programs, PCs) are in it.
  volatile std::uint8_t* mem() const { return mem_; }
  std::uint64_t mem_size() const { return mem_size_; }
  std::uint32_t lanes() const { return lanes_; }
  // The kernel published the memory for peer-to-peer (dma-bufs exportable).
  bool p2pdma() const { return p2pdma_; }

  // A dma-buf over [offset, offset + length) of the memory: its fd (the
  // caller's to close). EOPNOTSUPP without CONFIG_PCI_P2PDMA.
  Result<int> export_dmabuf(std::uint64_t offset, std::uint64_t length) const;
  // Dma-buf @fd of another device for the lanes in @lane_mask.
  Result<Import> import_dmabuf(int fd, std::uint32_t lane_mask) const;
  // Gives back window @window of this file's (XPU_IOC_UNIMPORT_DMABUF):
  // its lanes reach it no more. ENOENT: no file holds it; EBUSY: another's.
  Result<void> unimport(std::uint32_t window) const;
  // Claims the lanes in @lane_mask for this file (EBUSY: one is another's),
  // or gives them back (aborted, reaching no window; ENOENT for a free one).
  Result<void> claim_lanes(std::uint32_t lane_mask) const;
  Result<void> release_lanes(std::uint32_t lane_mask) const;
  // Runs @lane from @pc and waits for it to stop (at most @timeout_ms).
  Result<LaneOutcome> run(std::uint32_t lane, std::uint64_t pc,
                          std::uint32_t timeout_ms) const;
  Result<Counters> counters() const;
  Result<void> clear_counters() const;

 private:
  Device() = default;
  void close_all();
  int fd_ = -1;
  volatile std::uint8_t* mem_ = nullptr;
  std::uint64_t mem_size_ = 0;
  std::uint32_t lanes_ = 0;
  bool p2pdma_ = false;
};

// A lane program assembled on the CPU, then loaded into the device's
// memory: 32-byte commands as xpu.md lists them.
class LaneProgram {
 public:
  void store(std::uint64_t a, std::uint64_t imm);
  void copy(std::uint64_t dst, std::uint64_t src, std::uint32_t len);
  void write64(std::uint64_t bus, std::uint64_t imm);
  // Waits until mem[a] == imm (or >= with @at_least), for @rounds rounds.
  void poll(std::uint64_t a, std::uint64_t imm, bool at_least,
            std::uint32_t rounds);
  void stop();
  std::size_t bytes() const { return cmds_.size() * 32; }
  std::size_t commands() const { return cmds_.size(); }
  // Copies the commands to @offset of the memory, if they fit in @room.
  Result<void> load(const Device& dev, std::uint64_t offset,
                    std::uint64_t room) const;

 private:
  struct Cmd {
    std::uint8_t op, flags;
    std::uint16_t rsvd;
    std::uint32_t len;
    std::uint64_t a, b, imm;
  };
  void add(std::uint8_t op, std::uint8_t flags, std::uint32_t len,
           std::uint64_t a, std::uint64_t b, std::uint64_t imm);
  std::vector<Cmd> cmds_;
};

}  // namespace rhinet::xpu

#endif  // RHINET_XPU_HPP
