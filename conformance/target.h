// SPDX-License-Identifier: BSD-2-Clause
// The conformance suite's view of one NIC: only what a card on a PCIe bus
// offers its host. Every implementation of the hardware contract
// (include/hw/rhinet/) provides a Target: the engine in-process (T1), the
// QEMU device seen from a guest through the driver's raw access (T2), the
// firmware on a soft core joined to QEMU by a socket (T3), a card or an RTL
// simulation later. Cases never see anything else of the implementation,
// so one case runs unchanged on all of them.
//
// A target may run the NIC asynchronously: nothing a case writes is assumed
// to have taken effect until the case has waited for its visible result
// (wait_until) or let the NIC go idle (settle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rhinet::conform {

using Frame = std::vector<uint8_t>;

class Target {
 public:
  virtual ~Target() = default;

  // A short name for reports ("engine").
  virtual std::string name() const = 0;

  // ---- BAR0 (registers.md) ----
  // One access of `size` bytes (4 or 8) at `offset` in BAR0. What a read
  // of a write-only or reserved offset returns is the implementation's.
  virtual uint64_t reg_read(uint32_t offset, unsigned size) = 0;
  virtual void reg_write(uint32_t offset, uint64_t value, unsigned size) = 0;

  // ---- BAR2: doorbell pages ----
  // One store of `size` bytes (4 or 8) at `offset` in doorbell page `page`
  // (page N belongs to context N).
  virtual void doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                              unsigned size) = 0;

  // ---- Host memory the NIC reaches by DMA ----
  // A zeroed, physically contiguous buffer of `len` bytes aligned to
  // `align` (a power of two, at most 4096); returns its bus address, 0 when
  // host memory is exhausted. Buffers live until the target is destroyed.
  virtual uint64_t dma_alloc(size_t len, size_t align = 4096) = 0;
  // The host CPU's accesses to those buffers. A remote target copies;
  // a case never holds a pointer into host memory.
  virtual void mem_write(uint64_t bus, const void* src, size_t len) = 0;
  virtual void mem_read(uint64_t bus, void* dst, size_t len) = 0;
  // A bus address no host memory answers at (a DMA there is a bus error).
  virtual uint64_t bad_bus_address() const = 0;

  // ---- MSI-X ----
  // Messages the NIC sent on `vector` since the target was made.
  virtual uint64_t msix_count(uint16_t vector) = 0;

  // ---- The wire: the NIC's port on the fabric switch ----
  // Hands the NIC a frame as if it came from the switch.
  virtual void inject_frame(const Frame& frame) = 0;
  // Frames the NIC transmitted since the last call, in order.
  virtual std::vector<Frame> take_tx_frames() = 0;
  // With forwarding on (the default) the target's switch delivers what
  // the NIC transmits to the node addressed (itself, or the peer node);
  // off, transmitted frames are only captured, so a case can answer them
  // itself (or not at all).
  virtual void set_forwarding(bool on) = 0;

  // ---- Time ----
  // Lets the NIC (and the peer, and the switch) run until nothing is left
  // to do without time passing. Bounded: returns even if the NIC never
  // goes idle.
  virtual void settle() = 0;
  // Lets the NIC run, and time pass, until `pred` holds or `budget_ns` of
  // the NIC's time has elapsed; returns whether `pred` held. `pred` may
  // read registers and host memory.
  virtual bool wait_until(const std::function<bool()>& pred,
                          uint64_t budget_ns) = 0;
  // Lets `ns` of the NIC's time pass (timers such as retransmission or
  // RNR waits run out); at least settle()'s work is done.
  virtual void advance(uint64_t ns) = 0;

  // ---- A second node ----
  // A second NIC on the same switch, with its own host memory and MSI-X
  // (a different node ID), made on first use; nullptr when the target has
  // only one. Time runs for both together.
  virtual Target* peer() = 0;
};

// Makes a fresh target, NIC just powered on, for one case.
using TargetFactory = std::function<std::unique_ptr<Target>()>;

// The targets the runner knows, by name (targets/*.cc register here).
struct TargetEntry {
  const char* name;
  const char* description;
  TargetFactory make;
};
const std::vector<TargetEntry>& targets();

}  // namespace rhinet::conform
