// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/driver.h"

#include <algorithm>
#include <cstring>

namespace rhinet::sim {

namespace {

constexpr size_t kScratchPages = 2;  // query output area
constexpr size_t kAdminSqPages =
    (RHN_ADMIN_CMD_SIZE << RHN_ADMIN_MAX_LOG_DEPTH) / kPageSize;
constexpr uint8_t kEqLogDepth = 8;

rhn_admin_cmd make_cmd(uint8_t opcode, uint32_t context) {
  rhn_admin_cmd cmd;
  std::memset(&cmd, 0, sizeof cmd);
  cmd.hdr.opcode = opcode;
  cmd.hdr.context = context;
  return cmd;
}

}  // namespace

SimDriver::SimDriver(fw::Engine& engine, SimMemory& mem, Pump pump)
    : engine_(engine), mem_(mem), pump_(std::move(pump)) {}

SimDriver::~SimDriver() {
  const size_t ring_pages = 1;  // bring_up allocates one page per ring
  if (sq_ring_ != 0) mem_.free_contiguous(sq_ring_, kAdminSqPages);
  if (cq_ring_ != 0) mem_.free_contiguous(cq_ring_, ring_pages);
  if (scratch_ != 0) mem_.free_contiguous(scratch_, kScratchPages);
  if (eq_ring_ != 0)
    mem_.free_contiguous(
        eq_ring_, ((RHN_EQE_SIZE << kEqLogDepth) + kPageMask) >> kPageShift);
}

bool SimDriver::bring_up(uint8_t admin_log_depth) {
  log_depth_ = admin_log_depth;
  // 128-byte commands: the deepest ring (2^8) needs 8 pages.
  if (admin_log_depth > RHN_ADMIN_MAX_LOG_DEPTH) return false;
  if (sq_ring_ == 0) sq_ring_ = mem_.alloc_contiguous(kAdminSqPages);
  if (cq_ring_ == 0) cq_ring_ = mem_.alloc_contiguous(1);
  if (scratch_ == 0) scratch_ = mem_.alloc_contiguous(kScratchPages);
  if (sq_ring_ == 0 || cq_ring_ == 0 || scratch_ == 0) return false;
  std::memset(mem_.ptr(sq_ring_, kAdminSqPages * kPageSize), 0,
              kAdminSqPages * kPageSize);
  std::memset(mem_.ptr(cq_ring_, kPageSize), 0, kPageSize);
  sq_tail_ = 0;
  cq_head_ = 0;
  up_ = false;

  write32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  for (int i = 0; i < 1000 && (reg32(RHN_REG_CONTROL) & RHN_CONTROL_RESET); ++i)
    pump_();
  write64(RHN_REG_ADMIN_SQ_BASE, sq_ring_);
  write64(RHN_REG_ADMIN_CQ_BASE, cq_ring_);
  write32(RHN_REG_ADMIN_LOG_DEPTH, admin_log_depth);
  write32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE);
  const uint32_t want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
  for (int i = 0; i < 10'000; ++i) {
    if ((reg32(RHN_REG_STATUS) & want) == want) {
      up_ = true;
      break;
    }
    pump_();
  }
  if (!up_) return false;

  // One kernel EQ that every CQ reports to (vector 1; 0 is admin/async).
  const size_t eq_pages =
      ((RHN_EQE_SIZE << kEqLogDepth) + kPageMask) >> kPageShift;
  if (eq_ring_ == 0) eq_ring_ = mem_.alloc_contiguous(eq_pages);
  const AdminResult eq = create_eq(1, kEqLogDepth, eq_ring_);
  if (!eq.ok()) return false;
  eqn_ = eq.result;
  return true;
}

AdminResult SimDriver::exec(rhn_admin_cmd cmd) {
  AdminResult r;
  const uint32_t depth = 1u << log_depth_;
  const uint16_t id = next_cmd_id_++;
  cmd.hdr.cmd_id = id;
  std::memcpy(
      mem_.ptr(sq_ring_ + uint64_t(sq_tail_ & (depth - 1)) * RHN_ADMIN_CMD_SIZE,
               RHN_ADMIN_CMD_SIZE),
      &cmd, sizeof cmd);
  ++sq_tail_;
  write32(RHN_REG_ADMIN_SQ_TAIL, sq_tail_);

  // Owner bit of lap k is (k & 1) ^ 1: a zeroed ring reads as empty.
  const uint64_t slot =
      cq_ring_ + uint64_t(cq_head_ & (depth - 1)) * RHN_ADMIN_CPL_SIZE;
  const uint8_t want_owner = uint8_t(((cq_head_ / depth) & 1) ^ 1);
  for (uint32_t i = 0; i < pump_budget; ++i) {
    const auto* raw = mem_.ptr(slot, RHN_ADMIN_CPL_SIZE);
    if ((raw[RHN_ADMIN_CPL_SIZE - 1] & 1) == want_owner) {
      rhn_admin_cpl cpl;
      std::memcpy(&cpl, raw, sizeof cpl);
      ++cq_head_;
      r.completed = true;
      r.status = cpl.status;
      r.result = cpl.result;
      r.detail = cpl.detail;
      if (cpl.cmd_id != id) r.status = 0xfe;  // answered out of order
      return r;
    }
    pump_();
  }
  return r;
}

AdminResult SimDriver::exec_handle(uint8_t opcode, uint32_t context,
                                   uint32_t handle) {
  rhn_admin_cmd cmd = make_cmd(opcode, context);
  cmd.u.handle.handle = handle;
  return exec(cmd);
}

AdminResult SimDriver::query_device(rhn_device_attr* out) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_QUERY_DEVICE, 0);
  cmd.u.query.out_addr = scratch_;
  cmd.u.query.out_len = sizeof(rhn_device_attr);
  std::memset(mem_.ptr(scratch_, kPageSize), 0, kPageSize);
  AdminResult r = exec(cmd);
  if (r.ok() && out)
    std::memcpy(out, mem_.ptr(scratch_, sizeof *out), sizeof *out);
  return r;
}

AdminResult SimDriver::query_counters(std::vector<uint64_t>* out) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_QUERY_COUNTERS, 0);
  cmd.u.query.out_addr = scratch_;
  cmd.u.query.out_len = 8 * RHN_CNT_COUNT;
  AdminResult r = exec(cmd);
  if (r.ok() && out) {
    out->assign(RHN_CNT_COUNT, 0);
    std::memcpy(out->data(), mem_.ptr(scratch_, 8 * RHN_CNT_COUNT),
                8 * RHN_CNT_COUNT);
  }
  return r;
}

AdminResult SimDriver::query_qp(uint32_t context, uint32_t qpn,
                                rhn_qp_attr* out) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_QUERY_QP, context);
  cmd.u.query.out_addr = scratch_;
  cmd.u.query.out_len = sizeof(rhn_qp_attr);
  cmd.u.query.handle = qpn;
  AdminResult r = exec(cmd);
  if (r.ok() && out)
    std::memcpy(out, mem_.ptr(scratch_, sizeof *out), sizeof *out);
  return r;
}

AdminResult SimDriver::create_trigger(uint32_t context, uint64_t value,
                                      uint32_t key) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_TRIGGER, context);
  cmd.u.create_trigger.value = value;
  cmd.u.create_trigger.key = key;
  return exec(cmd);
}

AdminResult SimDriver::query_trigger(uint32_t context, uint32_t handle,
                                     uint64_t* value) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_QUERY_TRIGGER, context);
  cmd.u.query.out_addr = scratch_;
  cmd.u.query.out_len = sizeof(uint64_t);
  cmd.u.query.handle = handle;
  AdminResult r = exec(cmd);
  if (r.ok() && value)
    std::memcpy(value, mem_.ptr(scratch_, sizeof *value), sizeof *value);
  return r;
}

AdminResult SimDriver::create_context(uint32_t context, uint32_t account) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_CONTEXT, context);
  cmd.u.create_context.account =
      account == kDefaultAccount ? default_account(context) : account;
  return exec(cmd);
}

AdminResult SimDriver::destroy_context(uint32_t context) {
  return exec(make_cmd(RHN_ADMIN_DESTROY_CONTEXT, context));
}

AdminResult SimDriver::create_pd(uint32_t context) {
  return exec(make_cmd(RHN_ADMIN_CREATE_PD, context));
}

AdminResult SimDriver::destroy_pd(uint32_t context, uint32_t pdn) {
  return exec_handle(RHN_ADMIN_DESTROY_PD, context, pdn);
}

bool SimDriver::build_vp_table(std::span<const uint64_t> pages, uint8_t levels,
                               uint64_t* top,
                               std::vector<uint64_t>* table_pages,
                               bool leaves_valid) {
  // Level 1 (leaf) entries point at data pages; each higher level points at
  // the table pages of the level below. The top level must be one page.
  std::vector<uint64_t> entries;
  entries.reserve(pages.size());
  for (uint64_t p : pages)
    entries.push_back(leaves_valid ? (p & RHN_VPTE_ADDR_MASK) | RHN_VPTE_VALID
                                   : 0);
  for (uint8_t level = 1; level <= levels; ++level) {
    std::vector<uint64_t> next;
    for (size_t i = 0; i < entries.size(); i += RHN_VPT_ENTRIES_PER_PAGE) {
      const uint64_t t = mem_.alloc_contiguous(1);
      if (t == 0) return false;
      table_pages->push_back(t);
      const size_t n =
          std::min<size_t>(RHN_VPT_ENTRIES_PER_PAGE, entries.size() - i);
      std::memcpy(mem_.ptr(t, kPageSize), &entries[i], n * sizeof(uint64_t));
      next.push_back(t | RHN_VPTE_VALID);
    }
    entries = std::move(next);
  }
  if (entries.size() != 1) return false;
  *top = entries[0] & RHN_VPTE_ADDR_MASK;
  return true;
}

SimMr SimDriver::register_mr(uint32_t context, uint32_t pdn, uint64_t iova,
                             uint64_t length, std::span<const uint64_t> pages,
                             uint32_t access, const MrOptions& opt) {
  SimMr mr;
  mr.context = context;
  mr.pdn = pdn;
  mr.iova = iova;
  mr.length = length;
  uint8_t levels = opt.levels;
  if (levels == 0) {
    const uint64_t n = pages.size();
    levels =
        n <= RHN_VPT_ENTRIES_PER_PAGE ? 1
        : n <= uint64_t(RHN_VPT_ENTRIES_PER_PAGE) * RHN_VPT_ENTRIES_PER_PAGE
            ? 2
            : 3;
  }
  mr.levels = levels;
  uint64_t top = 0;
  if (!build_vp_table(pages, levels, &top, &mr.table_pages, !opt.on_demand)) {
    mem_.free_pages(mr.table_pages);
    mr.table_pages.clear();
    return mr;  // res.completed == false
  }
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_MR, context);
  auto& c = cmd.u.create_mr;
  c.pdn = pdn;
  c.access = access;
  c.iova = iova;
  c.length = length;
  c.table_addr = top;
  c.num_pages = uint32_t(pages.size());
  c.page_shift = kPageShift;
  c.levels = levels;
  c.key_variant = opt.key_variant != 0 ? opt.key_variant : next_variant_++;
  if (opt.on_demand) {
    c.flags = RHN_CREATE_MR_F_ON_DEMAND;
    mr.on_demand = true;
    mr.backing.assign(pages.begin(), pages.end());
  }
  mr.res = exec(cmd);
  if (mr.res.ok()) {
    mr.key = mr.res.result;
  } else {
    mem_.free_pages(mr.table_pages);
    mr.table_pages.clear();
  }
  return mr;
}

AdminResult SimDriver::destroy_mr(SimMr& mr) {
  AdminResult r = exec_handle(RHN_ADMIN_DESTROY_MR, mr.context, mr.key);
  if (r.ok()) {
    mem_.free_pages(mr.table_pages);
    mr.table_pages.clear();
  }
  return r;
}

AdminResult SimDriver::create_mw(uint32_t context, uint32_t pdn, uint8_t type,
                                 uint8_t key_variant) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_MW, context);
  cmd.u.create_mw.pdn = pdn;
  cmd.u.create_mw.type = type;
  cmd.u.create_mw.key_variant = key_variant;
  return exec(cmd);
}

AdminResult SimDriver::modify_mr(uint32_t context, uint32_t key, uint32_t mask,
                                 uint32_t access, uint32_t pdn) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_MODIFY_MR, context);
  cmd.u.modify_mr.key = key;
  cmd.u.modify_mr.mask = mask;
  cmd.u.modify_mr.access = access;
  cmd.u.modify_mr.pdn = pdn;
  return exec(cmd);
}

AdminResult SimDriver::invalidate_tlb(uint32_t context, uint32_t key) {
  return exec_handle(RHN_ADMIN_INVALIDATE_TLB, context, key);
}

AdminResult SimDriver::create_eq(uint16_t vector, uint8_t log_depth,
                                 uint64_t ring_bus) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_EQ, 0);
  cmd.u.create_eq.ring_addr = ring_bus;
  cmd.u.create_eq.vector = vector;
  cmd.u.create_eq.log_depth = log_depth;
  return exec(cmd);
}

AdminResult SimDriver::create_cq(uint32_t context, const rhn_host_ref& ring,
                                 const rhn_host_ref& record, uint32_t eqn,
                                 uint8_t log_depth, uint8_t flags) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_CQ, context);
  cmd.u.create_cq.ring = ring;
  cmd.u.create_cq.record = record;
  cmd.u.create_cq.eqn = eqn;
  cmd.u.create_cq.log_depth = log_depth;
  cmd.u.create_cq.flags = flags;
  return exec(cmd);
}

AdminResult SimDriver::create_srq(uint32_t context,
                                  const rhn_admin_create_srq& c) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_SRQ, context);
  cmd.u.create_srq = c;
  return exec(cmd);
}

AdminResult SimDriver::modify_srq(uint32_t context, uint32_t srqn,
                                  uint32_t limit) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_MODIFY_SRQ, context);
  cmd.u.modify_srq.srqn = srqn;
  cmd.u.modify_srq.limit = limit;
  return exec(cmd);
}

uint32_t SimDriver::completion_events(uint32_t cqn, uint32_t slots) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < slots; i++) {
    rhn_eqe e;
    std::memcpy(&e, mem_.ptr(eq_ring_ + i * RHN_EQE_SIZE, sizeof e), sizeof e);
    if ((e.owner & 1) && e.type == RHN_EQE_COMPLETION && e.object == cqn) n++;
  }
  return n;
}

AdminResult SimDriver::modify_cq(uint32_t context, uint32_t cqn, uint16_t count,
                                 uint16_t period_us) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_MODIFY_CQ, context);
  cmd.u.modify_cq.cqn = cqn;
  cmd.u.modify_cq.count = count;
  cmd.u.modify_cq.period_us = period_us;
  return exec(cmd);
}

AdminResult SimDriver::create_qp(uint32_t context,
                                 const rhn_admin_create_qp& c) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_CREATE_QP, context);
  cmd.u.create_qp = c;
  return exec(cmd);
}

AdminResult SimDriver::modify_qp(uint32_t context,
                                 const rhn_admin_modify_qp& m) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_MODIFY_QP, context);
  cmd.u.modify_qp = m;
  return exec(cmd);
}

AdminResult SimDriver::register_area(uint32_t context, uint32_t area_id,
                                     uint32_t key, uint64_t iova,
                                     uint64_t length) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_REGISTER_AREA, context);
  cmd.u.register_area.area_id = area_id;
  cmd.u.register_area.key = key;
  cmd.u.register_area.iova = iova;
  cmd.u.register_area.length = length;
  return exec(cmd);
}

AdminResult SimDriver::unregister_area(uint32_t context, uint32_t area_id) {
  return exec_handle(RHN_ADMIN_UNREGISTER_AREA, context, area_id);
}

AdminResult SimDriver::set_groups(uint32_t context,
                                  std::span<const uint16_t> groups) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_SET_GROUPS, context);
  cmd.u.set_groups.count = static_cast<uint32_t>(groups.size());
  for (size_t i = 0; i < groups.size() && i < 8; i++)
    cmd.u.set_groups.group[i] = groups[i];
  return exec(cmd);
}

AdminResult SimDriver::set_mcast_group(
    uint16_t group, uint16_t endpoint_group,
    std::span<const rhn_mcast_dest> members) {
  // The list goes through the scratch pages (8 KiB, 64 entries need 512 B).
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_SET_MCAST_GROUP, 0);
  cmd.u.mcast_group.group = group;
  cmd.u.mcast_group.endpoint_group = endpoint_group;
  cmd.u.mcast_group.count = static_cast<uint16_t>(members.size());
  cmd.u.mcast_group.list_addr = scratch_;
  const size_t bytes =
      std::min(members.size_bytes(), kScratchPages * kPageSize);
  std::memcpy(mem_.ptr(scratch_, bytes), members.data(), bytes);
  return exec(cmd);
}

AdminResult SimDriver::attach_mcast(uint32_t context, uint32_t qpn,
                                    const uint8_t (&mgid)[16], bool attach) {
  rhn_admin_cmd cmd = make_cmd(
      attach ? RHN_ADMIN_ATTACH_MCAST : RHN_ADMIN_DETACH_MCAST, context);
  cmd.u.mcast_attach.qpn = qpn;
  std::memcpy(cmd.u.mcast_attach.mgid, mgid, sizeof mgid);
  return exec(cmd);
}

AdminResult SimDriver::alloc_twin(uint32_t context, uint64_t length) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_ALLOC_TWIN, context);
  cmd.u.alloc_twin.length = length;
  return exec(cmd);
}

AdminResult SimDriver::free_twin(uint32_t context, uint32_t handle) {
  return exec_handle(RHN_ADMIN_FREE_TWIN, context, handle);
}

AdminResult SimDriver::set_gid(uint32_t index, const uint8_t (&gid)[16],
                               uint8_t type) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_SET_GID, 0);
  cmd.u.set_gid.index = index;
  cmd.u.set_gid.type = type;
  std::memcpy(cmd.u.set_gid.gid, gid, sizeof gid);
  return exec(cmd);
}

AdminResult SimDriver::set_link(bool up) {
  rhn_admin_cmd cmd = make_cmd(RHN_ADMIN_SET_LINK, 0);
  cmd.u.set_link.up = up ? 1 : 0;
  return exec(cmd);
}

}  // namespace rhinet::sim
