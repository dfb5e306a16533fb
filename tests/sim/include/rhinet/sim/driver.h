// SPDX-License-Identifier: BSD-2-Clause
// The "kernel driver" of one simulated node: brings the engine up through
// BAR0, owns the admin queue, and wraps every admin command. It also builds
// VP translation tables for memory regions (the pin-down side).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "rhinet/sim/host.h"

namespace rhinet::sim {

struct AdminResult {
  bool completed = false;  // false: no completion within the pump budget
  uint8_t status = 0xff;   // enum rhn_admin_status
  uint32_t result = 0;     // created handle or key
  uint32_t detail = 0;
  bool ok() const { return completed && status == RHN_ADMIN_OK; }
};

// A registered memory region as the driver knows it.
struct SimMr {
  AdminResult res;
  uint32_t key = 0;
  uint32_t context = 0;
  uint32_t pdn = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint8_t levels = 0;
  std::vector<uint64_t> table_pages;  // VP table pages, freed on destroy
  // On demand: the pages behind it (leaf tables are table_pages' first).
  std::vector<uint64_t> backing;
  bool on_demand = false;
  bool ok() const { return res.ok(); }
};

struct MrOptions {
  uint8_t levels = 0;       // 0: fewest that fit
  uint8_t key_variant = 0;  // 0: driver picks the next one
  // Remote pin-down: leaf entries start invalid and a SimPinHost enters
  // them when the NIC asks (RHN_CREATE_MR_F_ON_DEMAND).
  bool on_demand = false;
};

class SimDriver {
 public:
  // `pump` lets the engine (and every other engine of the cluster) run while
  // the driver waits for an admin completion.
  using Pump = std::function<void()>;
  SimDriver(fw::Engine& engine, SimMemory& mem, Pump pump);
  ~SimDriver();
  SimDriver(const SimDriver&) = delete;
  SimDriver& operator=(const SimDriver&) = delete;

  // RESET, admin ring bases and depth, ENABLE | INTR_ENABLE, wait for
  // READY | ADMIN_ON, then create the kernel EQ. False if it never came up.
  bool bring_up(uint8_t admin_log_depth = 5);
  bool is_up() const { return up_; }

  uint32_t reg32(uint32_t offset) {
    return uint32_t(engine_.reg_read(offset, 4));
  }
  uint64_t reg64(uint32_t offset) { return engine_.reg_read(offset, 8); }
  void write32(uint32_t offset, uint32_t v) { engine_.reg_write(offset, v, 4); }
  void write64(uint32_t offset, uint64_t v) { engine_.reg_write(offset, v, 8); }
  uint64_t counter(unsigned index) {
    return reg64(RHN_REG_COUNTERS + 8 * index);
  }

  // Places the command in the ring (cmd_id filled in), kicks, and pumps
  // until its completion appears.
  AdminResult exec(rhn_admin_cmd cmd);
  // A command with just a context and a handle (DESTROY_*, etc.).
  AdminResult exec_handle(uint8_t opcode, uint32_t context, uint32_t handle);

  AdminResult query_device(rhn_device_attr* out);
  AdminResult query_counters(std::vector<uint64_t>* out);
  AdminResult query_qp(uint32_t context, uint32_t qpn, rhn_qp_attr* out);
  // `account`: the user it is charged to (RHN_ADMIN_CREATE_CONTEXT);
  // kDefaultAccount: one account per context (1 + (context - 1) % 255).
  static constexpr uint32_t kDefaultAccount = 0xffffffffu;
  static uint32_t default_account(uint32_t context) {
    return context ? 1 + (context - 1) % (RHN_MAX_ACCOUNTS - 1) : 0;
  }
  AdminResult create_context(uint32_t context,
                             uint32_t account = kDefaultAccount);
  AdminResult destroy_context(uint32_t context);
  AdminResult create_pd(uint32_t context);
  AdminResult destroy_pd(uint32_t context, uint32_t pdn);
  // Builds the VP table for `pages` (bus pages covering iova..iova+length)
  // and registers it.
  SimMr register_mr(uint32_t context, uint32_t pdn, uint64_t iova,
                    uint64_t length, std::span<const uint64_t> pages,
                    uint32_t access, const MrOptions& opt = {});
  AdminResult destroy_mr(SimMr& mr);
  // A memory window (type 1 or 2); result = its key.
  AdminResult create_mw(uint32_t context, uint32_t pdn, uint8_t type,
                        uint8_t key_variant);
  AdminResult invalidate_tlb(uint32_t context, uint32_t key);
  // Rights and/or PD of a region, in place (enum rhn_modify_mr_mask).
  AdminResult modify_mr(uint32_t context, uint32_t key, uint32_t mask,
                        uint32_t access, uint32_t pdn = 0);
  AdminResult create_eq(uint16_t vector, uint8_t log_depth, uint64_t ring_bus);
  AdminResult create_cq(uint32_t context, const rhn_host_ref& ring,
                        const rhn_host_ref& record, uint32_t eqn,
                        uint8_t log_depth, uint8_t flags = 0);
  AdminResult create_srq(uint32_t context, const rhn_admin_create_srq& c);
  AdminResult modify_srq(uint32_t context, uint32_t srqn, uint32_t limit);
  AdminResult modify_cq(uint32_t context, uint32_t cqn, uint16_t count,
                        uint16_t period_us);
  AdminResult create_qp(uint32_t context, const rhn_admin_create_qp& c);
  AdminResult modify_qp(uint32_t context, const rhn_admin_modify_qp& m);
  AdminResult destroy(uint8_t opcode, uint32_t context, uint32_t handle) {
    return exec_handle(opcode, context, handle);
  }
  // A trigger counter (RHN_ADMIN_CREATE_TRIGGER; result = its handle), and
  // its value (RHN_ADMIN_QUERY_TRIGGER).
  AdminResult create_trigger(uint32_t context, uint64_t value, uint32_t key);
  AdminResult query_trigger(uint32_t context, uint32_t handle, uint64_t* value);
  AdminResult register_area(uint32_t context, uint32_t area_id, uint32_t key,
                            uint64_t iova, uint64_t length);
  AdminResult unregister_area(uint32_t context, uint32_t area_id);
  AdminResult set_link(bool up);
  // Groups of a context (RHN_ADMIN_SET_GROUPS) and its twin memory.
  AdminResult set_groups(uint32_t context, std::span<const uint16_t> groups);
  // What the kernel gives the NIC for simultaneous multicast: a switch
  // group's members (RHN_ADMIN_SET_MCAST_GROUP; empty removes it).
  AdminResult set_mcast_group(uint16_t group, uint16_t endpoint_group,
                              std::span<const rhn_mcast_dest> members);
  // Verbs UD multicast: QP `qpn` of `context` receives datagrams to
  // `mgid` (RHN_ADMIN_ATTACH_MCAST), or no longer (DETACH_MCAST).
  AdminResult attach_mcast(uint32_t context, uint32_t qpn,
                           const uint8_t (&mgid)[16], bool attach = true);
  AdminResult alloc_twin(uint32_t context, uint64_t length);  // res.result
  AdminResult free_twin(uint32_t context, uint32_t handle);
  AdminResult set_gid(uint32_t index, const uint8_t (&gid)[16],
                      uint8_t type = RHN_GID_ROCE_V1);

  uint32_t kernel_eqn() const { return eqn_; }
  // Completion events for CQ cqn among the first `slots` entries of the
  // kernel EQ that the NIC wrote in its first lap (owner bit 1).
  uint32_t completion_events(uint32_t cqn, uint32_t slots = 16);
  uint64_t eq_ring_bus() const { return eq_ring_; }
  SimMemory& memory() { return mem_; }
  fw::Engine& engine() { return engine_; }
  void pump() { pump_(); }
  // How many pump rounds exec() waits before giving up.
  uint32_t pump_budget = 200'000;

 private:
  bool build_vp_table(std::span<const uint64_t> pages, uint8_t levels,
                      uint64_t* top, std::vector<uint64_t>* table_pages,
                      bool leaves_valid = true);

  fw::Engine& engine_;
  SimMemory& mem_;
  Pump pump_;
  bool up_ = false;
  uint8_t log_depth_ = 0;
  uint64_t sq_ring_ = 0, cq_ring_ = 0, scratch_ = 0, eq_ring_ = 0;
  uint32_t sq_tail_ = 0;
  uint32_t cq_head_ = 0;
  uint16_t next_cmd_id_ = 1;
  uint8_t next_variant_ = 0x11;
  uint32_t eqn_ = 0;
};

}  // namespace rhinet::sim
