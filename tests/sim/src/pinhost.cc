// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/pinhost.h"

#include <cstring>

namespace rhinet::sim {

namespace {
constexpr uint32_t kEqDepth = 256;  // the sim driver's kernel EQ
}

SimPinHost::SimPinHost(SimNode& node) : node_(node) {
  node_.host_work = [this] { return serve(); };
}

SimPinHost::~SimPinHost() { node_.host_work = nullptr; }

void SimPinHost::add(const SimMr& mr) {
  Served s;
  s.mr = SimMr{mr.res,    mr.key,    mr.context,     mr.pdn,     mr.iova,
               mr.length, mr.levels, mr.table_pages, mr.backing, mr.on_demand};
  s.holders.assign(mr.backing.size(), 0);
  s.pinned.assign(mr.backing.size(), false);
  mrs_[mr.key] = std::move(s);
}

void SimPinHost::remove(const SimMr& mr) {
  auto it = mrs_.find(mr.key);
  if (it == mrs_.end()) return;
  for (bool p : it->second.pinned) pinned_ -= p ? 1 : 0;
  mrs_.erase(it);
}

uint64_t SimPinHost::pinned(const SimMr& mr) const {
  auto it = mrs_.find(mr.key);
  if (it == mrs_.end()) return 0;
  uint64_t n = 0;
  for (bool p : it->second.pinned) n += p ? 1 : 0;
  return n;
}

uint32_t SimPinHost::holders(const SimMr& mr, uint32_t page) const {
  auto it = mrs_.find(mr.key);
  return it == mrs_.end() || page >= it->second.holders.size()
             ? 0
             : it->second.holders[page];
}

bool SimPinHost::is_pinned(const SimMr& mr, uint32_t page) const {
  auto it = mrs_.find(mr.key);
  return it != mrs_.end() && page < it->second.pinned.size() &&
         it->second.pinned[page];
}

uint64_t SimPinHost::pin_events() const {
  uint64_t n = 0;
  for (const auto& e : events)
    n += e.type == RHN_EQE_PD_REQUEST && (e.flags & RHN_EQE_F_PD_PIN);
  return n;
}

SimPinHost::Served* SimPinHost::find(uint32_t key) {
  auto it = mrs_.find(key);
  return it == mrs_.end() ? nullptr : &it->second;
}

void SimPinHost::set_entry(Served& s, uint32_t page, bool valid) {
  const uint64_t table =
      s.mr.table_pages[page / RHN_VPT_ENTRIES_PER_PAGE];  // leaves first
  const uint64_t entry =
      valid ? (s.mr.backing[page] & RHN_VPTE_ADDR_MASK) | RHN_VPTE_VALID : 0;
  std::memcpy(node_.memory.ptr(
                  table + (page % RHN_VPT_ENTRIES_PER_PAGE) * sizeof(entry),
                  sizeof(entry)),
              &entry, sizeof(entry));
  if (valid != s.pinned[page]) {
    pinned_ += valid ? 1 : uint64_t(-1);
    s.pinned[page] = valid;
  }
}

void SimPinHost::pin(Served& s, uint32_t first, uint32_t count, bool reply) {
  uint8_t status = RHN_SYN_NONE;
  for (uint32_t p = first; p < first + count; p++) {
    if (s.pinned[p]) continue;
    if (pinned_ >= limit) {
      status = RHN_SYN_NOT_PINNED;
      break;
    }
    set_entry(s, p, true);
  }
  if (!reply) return;
  rhn_admin_cmd cmd;
  std::memset(&cmd, 0, sizeof cmd);
  cmd.hdr.opcode = RHN_ADMIN_PD_MAPPED;
  cmd.hdr.context = s.mr.context;
  cmd.u.pd_mapped.key = s.mr.key;
  cmd.u.pd_mapped.first_page = first;
  cmd.u.pd_mapped.num_pages = count;
  cmd.u.pd_mapped.status = status;
  if (!node_.driver->exec(cmd).ok()) pd_mapped_failures++;
}

void SimPinHost::handle(const rhn_eqe& e) {
  Served* s = find(e.object);
  const uint32_t first = RHN_EQE_PD_FIRST(e.data);
  const uint32_t count = RHN_EQE_PD_COUNT(e.data);
  // Never trust the device's numbers further than the MR.
  if (!s || count == 0 || first >= s->holders.size() ||
      count > s->holders.size() - first)
    return;
  if (e.type == RHN_EQE_PD_REQUEST) {
    if (e.flags & RHN_EQE_F_PD_PIN) pin(*s, first, count, true);
    if (e.flags & RHN_EQE_F_PD_HOLD) {
      pin(*s, first, count, false);  // released meanwhile: in again
      for (uint32_t p = first; p < first + count; p++) s->holders[p]++;
    }
    return;
  }
  bool any = false;
  for (uint32_t p = first; p < first + count; p++) {
    if (s->holders[p]) s->holders[p]--;
    if (!s->holders[p] && s->pinned[p]) {
      set_entry(*s, p, false);
      any = true;
    }
  }
  if (any) node_.driver->invalidate_tlb(s->mr.context, s->mr.key);
}

bool SimPinHost::serve() {
  if (busy_) return false;  // an admin command below pumps the cluster
  busy_ = true;
  bool any = false;
  for (;;) {
    rhn_eqe e;
    std::memcpy(&e,
                node_.memory.ptr(node_.driver->eq_ring_bus() +
                                     (ci_ % kEqDepth) * RHN_EQE_SIZE,
                                 sizeof e),
                sizeof e);
    if ((e.owner & 1) != (((ci_ / kEqDepth) & 1) ^ 1)) break;
    ci_++;
    any = true;
    if (e.type != RHN_EQE_PD_REQUEST && e.type != RHN_EQE_PD_RELEASE) continue;
    events.push_back(e);
    if (!answer && e.type == RHN_EQE_PD_REQUEST &&
        (e.flags & RHN_EQE_F_PD_PIN)) {
      deferred_.push_back(e);
      continue;
    }
    handle(e);
  }
  if (any)
    node_.driver->write64(RHN_REG_EQ_DOORBELL,
                          uint64_t(ci_) | (uint64_t(node_.driver->kernel_eqn())
                                           << RHN_EQ_DB_EQN_SHIFT));
  busy_ = false;
  return any;
}

void SimPinHost::answer_deferred() {
  busy_ = true;
  auto pending = std::move(deferred_);
  deferred_.clear();
  for (const auto& e : pending) handle(e);
  busy_ = false;
}

}  // namespace rhinet::sim
