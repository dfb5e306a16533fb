// SPDX-License-Identifier: BSD-2-Clause
// The host side of remote pin-down (Documentation/hardware/queues.md,
// "Remote pin-down") for the simulated node: what rhinet.ko does with
// RHN_EQE_PD_REQUEST and RHN_EQE_PD_RELEASE. It reads
// the kernel event queue, "pins" pages of on-demand MRs by entering their
// leaf VP entries, counts holders, answers RHN_ADMIN_PD_MAPPED, and on a
// release clears the entries of pages nobody holds and invalidates the
// NIC's TLB for them.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "rhinet/hw.h"
#include "rhinet/sim/cluster.h"
#include "rhinet/sim/driver.h"

namespace rhinet::sim {

class SimPinHost {
 public:
  // Becomes node's host_work (serves events between engine polls).
  explicit SimPinHost(SimNode& node);
  ~SimPinHost();
  SimPinHost(const SimPinHost&) = delete;
  SimPinHost& operator=(const SimPinHost&) = delete;

  // An on-demand MR the host serves (registered with MrOptions::on_demand).
  void add(const SimMr& mr);
  void remove(const SimMr& mr);  // before the MR is destroyed

  // Handles the new events; true if there were any.
  bool serve();

  // Pages pinned now, in total and of one MR; holders of one page.
  uint64_t pinned() const { return pinned_; }
  uint64_t pinned(const SimMr& mr) const;
  uint32_t holders(const SimMr& mr, uint32_t page) const;
  bool is_pinned(const SimMr& mr, uint32_t page) const;

  // Pins beyond this many pages fail (RHN_SYN_NOT_PINNED).
  uint64_t limit = UINT64_MAX;
  // False: PIN events are collected but not answered (the NIC keeps
  // holding); answer_deferred() answers them later.
  bool answer = true;
  void answer_deferred();

  // Every pin-down event seen, in order.
  std::vector<rhn_eqe> events;
  uint64_t pin_events() const;
  uint64_t pd_mapped_failures = 0;  // PD_MAPPED the NIC refused

 private:
  struct Served {
    SimMr mr;
    std::vector<uint32_t> holders;
    std::vector<bool> pinned;
  };
  Served* find(uint32_t key);
  void handle(const rhn_eqe& e);
  void pin(Served& s, uint32_t first, uint32_t count, bool reply);
  void set_entry(Served& s, uint32_t page, bool valid);

  SimNode& node_;
  uint32_t ci_ = 0;
  bool busy_ = false;
  uint64_t pinned_ = 0;
  std::map<uint32_t, Served> mrs_;  // by key
  std::vector<rhn_eqe> deferred_;
};

}  // namespace rhinet::sim
