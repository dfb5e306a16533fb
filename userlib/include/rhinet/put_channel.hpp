// SPDX-License-Identifier: BSD-2-Clause
// rhinet::xpu::PutChannel: one API for puts a device (the xpu) starts, in
// three ways of reaching the NIC (Documentation/userlib/reference.md,
// "Device-initiated puts"):
//   device        the lane writes WQEs, the SQ record and the doorbell
//                 (peer-to-peer) itself and polls CQEs in its own memory
//   cpu_doorbell  the lane writes WQEs and the record; a library thread
//                 rings the doorbell when the lane asks for it
//   proxy         the lane writes request descriptors; a library thread
//                 posts the WRITEs through verbs and writes completions back
//   automatic     the fastest of these that this machine allows
// The device program is written once (Program: put, quiet) and the channel
// emits the lane commands of its mode from it.
#ifndef RHINET_PUT_CHANNEL_HPP
#define RHINET_PUT_CHANNEL_HPP

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rhinet/result.hpp"
#include "rhinet/xpu.hpp"

struct ibv_context;

namespace rhinet::xpu {

enum class PutMode { device, cpu_doorbell, proxy, automatic };
std::string_view to_string(PutMode mode);
// "device", "cpu_doorbell", "proxy", "automatic"; nullopt-like: automatic
// and false for anything else.
bool parse_put_mode(std::string_view text, PutMode* mode);

struct PutChannelConfig {
  ibv_context* context = nullptr;  // the NIC
  const Device* device = nullptr;  // the xpu; outlives the channel
  std::uint32_t lane = 0;          // the lane the programs run on
  // The part of the xpu's memory the channel owns: page aligned, at least
  // PutChannel::region_bytes(data_length). The source data is at its start
  // plus PutChannel::data_offset().
  std::uint64_t region_offset = 0;
  std::uint64_t region_length = 0;
  std::uint64_t data_length = 64 << 10;  // bytes puts may read
  PutMode mode = PutMode::automatic;
  std::uint8_t port = 1;
  int gid_index = 1;
};

// Why a faster mode was not taken.
struct PutRefusal {
  PutMode mode;
  Error why;
};

// What the peer needs to connect to us, and we to it.
struct PutEndpoint {
  std::uint32_t qpn = 0;
  std::array<std::uint8_t, 16> gid{};
};

// Where puts land: the peer's registered memory.
struct PutTarget {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
};

// A device program: the same calls in every mode.
class PutProgram {
 public:
  // len bytes from the source data at src_offset to the target at
  // dst_offset (1 to 1 MiB).
  void put(std::uint64_t src_offset, std::uint64_t dst_offset,
           std::uint32_t len) {
    ops_.push_back({src_offset, dst_offset, len});
  }
  // Waits until every put so far has completed at the NIC.
  void quiet() { ops_.push_back({0, 0, 0}); }
  struct Op {
    std::uint64_t src, dst;
    std::uint32_t len;  // 0: quiet
  };
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
};

// What a run did, counted by the library.
struct PutRunStats {
  std::uint64_t puts = 0;           // completed, successfully
  std::uint64_t lane_commands = 0;  // commands the lane executed
  // Doorbells the library's thread rang for a lane (cpu_doorbell mode).
  // Proxy posts go through ibv_post_send, whose provider skips the kick
  // when the NIC is still reading the queue; the NIC's host_doorbells
  // counter tells how many it rang.
  std::uint64_t cpu_doorbells = 0;
  std::uint64_t cpu_requests = 0;  // requests its thread read from the lane
  std::uint64_t staged_bytes = 0;  // bytes it copied into host memory
};

class PutChannel {
 public:
  // Sets up the mode asked for (automatic: device, else cpu_doorbell, else
  // proxy, each refusal kept). A mode asked for by name that cannot work
  // here is an error saying why, never another mode.
  static Result<PutChannel> open(const PutChannelConfig& config);
  PutChannel(PutChannel&&) noexcept;
  PutChannel& operator=(PutChannel&&) noexcept;
  // Gives back what open took: the lane (claimed from open on, aborted
  // here), the doorbell page's window, the NIC's QP, CQ, MR and dma-bufs.
  ~PutChannel();

  // Bytes of xpu memory a channel with @data_length of source data needs.
  static std::uint64_t region_bytes(std::uint64_t data_length);
  // The source data's offset in the region.
  static std::uint64_t data_offset();

  PutMode mode() const;
  // The faster modes refused on the way to mode(), fastest first.
  const std::vector<PutRefusal>& refusals() const;
  // One line: the mode and why each faster one was refused.
  std::string describe() const;

  // Device mode: the doorbell page's window in the xpu, where the lane
  // rings the NIC; given back when the channel is destroyed.
  std::optional<Import> doorbell_window() const;

  PutEndpoint local() const;
  Result<void> connect(const PutEndpoint& peer, const PutTarget& target);

  // Emits @program for this mode, loads it on the lane, runs it and waits
  // (the lane's timeout: @timeout_ms). An error names the failed put.
  Result<PutRunStats> run(const PutProgram& program,
                          std::uint32_t timeout_ms = 20000);

  struct Impl;

 private:
  explicit PutChannel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rhinet::xpu

#endif  // RHINET_PUT_CHANNEL_HPP
