// SPDX-License-Identifier: BSD-2-Clause
// Admin queue: the driver's commands that create and destroy the NIC's
// objects. Every field is checked before anything changes; a refused
// command changes nothing and is counted.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

// A CQ is host memory the NIC writes by index: its producer and the
// consumer index software reports (rhn_cq_record) are 32-bit and
// free-running, so the depth is bounded by what host software can be
// expected to allocate, not by the NIC: 4M CQEs (128 MiB), as mlx5.
constexpr uint32_t kMaxCqLog = 22;
constexpr uint32_t kMaxEqLog = 16;
constexpr uint32_t kKnownAccess =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
    RHN_ACCESS_REMOTE_ATOMIC | RHN_ACCESS_MW_BIND;

template <typename T>
uint32_t find_free(const Table<T>& table, uint32_t first) {
  for (uint32_t i = first; i < table.size(); i++)
    if (!table[i].valid) return i;
  return kNone;
}

// The first free entry at or after cursor, wrapping around to first.
template <typename T>
uint32_t find_free_from(const Table<T>& table, uint32_t first,
                        uint32_t cursor) {
  const uint32_t i = find_free(table, cursor < table.size() ? cursor : first);
  return i != kNone ? i : find_free(table, first);
}

}  // namespace

HostRef to_ref(const rhn_host_ref& r) { return HostRef{r.addr, r.lkey}; }

rhn_admin_status check_queue_memory(Impl& m, uint32_t ctx,
                                    const rhn_host_ref& r, uint64_t len,
                                    bool nic_writes) {
  if (r.addr & 7) return RHN_ADMIN_BAD_PARAM;
  const rhn_syndrome s = m.check_host_ref(to_ref(r), ctx, len, nic_writes);
  if (s == RHN_SYN_NONE) return RHN_ADMIN_OK;
  if (r.lkey == RHN_LKEY_PHYSICAL) return RHN_ADMIN_NOT_PERMITTED;
  return RHN_ADMIN_BAD_PARAM;
}

void hold_host_ref(Impl& m, const HostRef& r, int delta) {
  if (r.lkey != RHN_LKEY_PHYSICAL)
    m.mrs[r.lkey >> RHN_KEY_INDEX_SHIFT].refs += delta;
}

bool cq_of_context(const Impl& m, uint32_t cqn, uint32_t ctx) {
  return cqn < m.cqs.size() && m.cqs[cqn].valid && m.cqs[cqn].context == ctx;
}

namespace {}  // namespace

rhn_admin_status Engine::Impl::write_result(uint64_t addr, const void* p,
                                            size_t len) {
  if (bus.dma_write(addr, p, len)) return RHN_ADMIN_OK;
  counters.add(RHN_CNT_DMA_ERRORS);
  return RHN_ADMIN_DMA_ERROR;
}

void Engine::Impl::admin_process() {
  if (!(status_reg.load() & RHN_STATUS_ADMIN_ON)) return;
  const uint32_t log = admin_log_depth.load();
  const uint32_t depth = 1u << log;
  const uint64_t sq = admin_sq_base.load(), cq = admin_cq_base.load();
  if (admin_tail - admin_consumer > depth) {
    // A tail beyond the ring: the driver is confused; skip to it.
    counters.add(RHN_CNT_BAD_ADMIN_CMDS);
    admin_consumer = admin_tail;
    return;
  }
  bool any = false;
  while (admin_consumer != admin_tail) {
    rhn_admin_cmd cmd;
    rhn_admin_cpl cpl;
    memset(&cpl, 0, sizeof(cpl));
    uint32_t result = 0, detail = 0;
    rhn_admin_status st;
    if (!bus.dma_read(sq + (admin_consumer & (depth - 1)) * sizeof(cmd), &cmd,
                      sizeof(cmd))) {
      counters.add(RHN_CNT_DMA_ERRORS);
      memset(&cmd, 0, sizeof(cmd));
      st = RHN_ADMIN_DMA_ERROR;
    } else {
      if (!++mr_epoch) mr_epoch = 1;  // any object may change
      rxw_flush();                    // and the block's targets with it
      // A command may resize or destroy a CQ, reset or destroy a QP:
      // every run is in its CQ first (queues.md, "Runs").
      if (num_open_runs) cq_runs_close_all();
      st = admin_execute(cmd, result, detail);
    }
    if (st != RHN_ADMIN_OK) counters.add(RHN_CNT_BAD_ADMIN_CMDS);
    cpl.result = result;
    cpl.cmd_id = cmd.hdr.cmd_id;
    cpl.status = static_cast<uint8_t>(st);
    cpl.detail = detail;
    const uint64_t at = cq + (admin_cq_producer & (depth - 1)) * sizeof(cpl);
    const uint8_t owner = ((admin_cq_producer >> log) & 1) ^ 1;
    // Body first, owner byte last: the driver polls the owner byte.
    uint8_t entry[sizeof(cpl)];
    memcpy(entry, &cpl, sizeof(cpl) - 1);
    entry[sizeof(cpl) - 1] = owner;
    if (!bus.dma_write_publish(at, entry, sizeof(entry), sizeof(cpl) - 1))
      counters.add(RHN_CNT_DMA_ERRORS);
    admin_consumer++;
    admin_cq_producer++;
    any = true;
  }
  if (any && (control.load() & RHN_CONTROL_INTR_ENABLE))
    bus.raise_msix(RHN_MSIX_ADMIN);
}

void Engine::Impl::destroy_qp_state(uint32_t qpn) {
  QpObj& qp = qps[qpn];
  unlink_waiter(qpn);
  cancel_responder_work(qpn, false);
  for (uint32_t i = qp.inflight_head; i != qp.inflight_tail; i++) {
    release_read_ctx(entry(qpn, i));
  }
  qp.inflight_head = qp.inflight_tail = 0;
  qp.tx_active = false;
  qp.outstanding_reads = 0;
  qp.has_resend = false;
  qp.has_unanswered = false;
  qp.wake_at = 0;
  qp.prefetched_slot = kNone;
  qp.fanout_next = 0;
  qp.fanout_status = RHN_CQE_SUCCESS;
  qp.fanout_syndrome = RHN_SYN_NONE;
}

// Firmware images belong to the card's shell (firmware-image.md): the
// engine only carries a chunk's bytes from the host to it, through a
// small buffer, and the shell's verdict back. A refusal is BAD_PARAM (or
// BAD_OPCODE for a card that takes no image) with the verdict as detail.
static rhn_admin_status fw_refusal(uint32_t verdict, uint32_t& detail) {
  detail = verdict;
  return verdict == RHN_FW_NO_STAGING ? RHN_ADMIN_BAD_OPCODE
                                      : RHN_ADMIN_BAD_PARAM;
}

static rhn_admin_status fw_download(Engine::Impl& m,
                                    const rhn_admin_fw_download& c,
                                    uint32_t& detail) {
  if (c.length == 0) return fw_refusal(RHN_FW_SHORT, detail);
  if (c.length > RHN_FW_CHUNK_MAX || c.offset > UINT32_MAX - c.length)
    return fw_refusal(RHN_FW_TOO_LARGE, detail);
  uint8_t piece[256];
  for (uint32_t done = 0; done < c.length;) {
    const uint32_t n = min<uint32_t>(sizeof(piece), c.length - done);
    if (!m.bus.dma_read(c.addr + done, piece, n)) {
      m.counters.add(RHN_CNT_DMA_ERRORS);
      return RHN_ADMIN_DMA_ERROR;
    }
    const uint32_t verdict = m.bus.fw_stage(c.offset + done, {piece, n});
    if (verdict != RHN_FW_OK) return fw_refusal(verdict, detail);
    done += n;
  }
  return RHN_ADMIN_OK;
}

static rhn_admin_status fw_commit(Engine::Impl& m, const rhn_admin_fw_commit& c,
                                  uint32_t& detail) {
  constexpr uint32_t kKnown = RHN_FW_COMMIT_STORE | RHN_FW_COMMIT_ACTIVATE;
  if (c.flags == 0 || (c.flags & ~kKnown)) return RHN_ADMIN_BAD_PARAM;
  const uint32_t verdict = m.bus.fw_commit(c.length, c.flags);
  return verdict == RHN_FW_OK ? RHN_ADMIN_OK : fw_refusal(verdict, detail);
}

rhn_admin_status Engine::Impl::admin_execute(const rhn_admin_cmd& cmd,
                                             uint32_t& result,
                                             uint32_t& detail) {
  const uint32_t ctx = cmd.hdr.context;
  const auto& u = cmd.u;
  if (ctx >= contexts.size()) return RHN_ADMIN_BAD_HANDLE;
  if (cmd.hdr.opcode != RHN_ADMIN_CREATE_CONTEXT && !contexts[ctx].valid)
    return RHN_ADMIN_BAD_HANDLE;

  auto pd_ok = [&](uint32_t pdn) {
    return pdn < pds.size() && pds[pdn].valid && pds[pdn].context == ctx;
  };
  auto cq_ok = [&](uint32_t cqn) { return cq_of_context(*this, cqn, ctx); };
  auto mr_of_key = [&](uint32_t key) -> MrObj* {
    const uint32_t idx = key >> RHN_KEY_INDEX_SHIFT;
    if (idx == 0 || idx >= mrs.size()) return nullptr;
    MrObj& mr = mrs[idx];
    // A fast-registration MR by its index: each REG_MR gives it a new
    // variant, which the driver need not have seen.
    if (!mr.valid || mr.window || mr.context != ctx ||
        (!mr.fast_reg && mr.variant != (key & RHN_KEY_VARIANT_MASK)))
      return nullptr;
    return &mr;
  };
  // Host references of a new queue: checked, then pinned by a reference.
  auto ref_check = [&](const rhn_host_ref& r, uint64_t len, bool nic_writes,
                       uint32_t which) -> rhn_admin_status {
    detail = which;
    return check_queue_memory(*this, ctx, r, len, nic_writes);
  };
  // A CQ's ring of 2^log_depth CQEs (the NIC writes it) and its record.
  auto cq_memory_check = [&](const rhn_host_ref& ring,
                             const rhn_host_ref& record, uint8_t log_depth) {
    if (log_depth < 1 || log_depth > kMaxCqLog)
      return detail = 2, RHN_ADMIN_BAD_PARAM;
    const rhn_admin_status st =
        ref_check(ring, uint64_t{RHN_CQE_SIZE} << log_depth, true, 3);
    return st == RHN_ADMIN_OK
               ? ref_check(record, sizeof(rhn_cq_record), false, 4)
               : st;
  };
  auto ref_get = [&](const HostRef& r, int delta) {
    hold_host_ref(*this, r, delta);
  };

  switch (cmd.hdr.opcode) {
    case RHN_ADMIN_QUERY_DEVICE: {
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      if (u.query.out_len < sizeof(rhn_device_attr)) return RHN_ADMIN_BAD_PARAM;
      rhn_device_attr a;
      memset(&a, 0, sizeof(a));
      a.max_contexts = cfg.db_pages;
      a.max_pds = cfg.max_pds;
      a.max_mrs = cfg.max_mrs - 1;
      a.max_cqs = cfg.max_cqs;
      a.max_qps = cfg.max_qps - 1 - RHN_QPN_GSI;  // QPN 0 and 1 are special
      a.max_srqs = cfg.max_srqs;
      a.max_eqs = cfg.max_eqs;
      a.max_areas = cfg.max_areas;
      a.max_cq_log_depth = kMaxCqLog;
      a.max_cq_mod_count = kMaxCqModCount;
      a.max_cq_mod_period_us = kMaxCqModPeriodUs;
      a.max_wq_log_depth = kMaxWqLog;
      a.max_send_sges = RHN_WQE_MAX_SGES;
      a.max_recv_sges = RHN_RQ_MAX_SGES;
      a.max_inline = RHN_WQE_MAX_INLINE;
      a.max_rd_atomic = cfg.max_rd_atomic;
      a.max_msg_size = 1u << 31;
      a.mtu = RHN_WIRE_MTU;
      a.tlb_entries = cfg.tlb_entries;
      a.page_size_cap = 0x7ffff000u;  // 4 KiB .. 1 GiB
      a.max_mr_size = 1ull << 39;
      a.max_peers = cfg.max_nodes;
      a.node_id = cfg.node_id;
      a.twin_bytes = uint64_t{twin_pages} * RHN_TWIN_PAGE;
      a.max_twins = static_cast<uint32_t>(twins.size());
      modules_query_device(*this, a);  // the families' limits
      return write_result(u.query.out_addr, &a, sizeof(a));
    }
    case RHN_ADMIN_PROBE_NODE: {
      // A firmware PING to the node's NIC; RHN_EQE_PROBE_DONE tells.
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      const uint32_t node = u.handle.handle;
      if (node >= cfg.max_nodes) return RHN_ADMIN_BAD_PARAM;
      if (fw_post(static_cast<uint16_t>(node), RHN_FW_PING, {}, FwOwner::kProbe,
                  node, 0) == kNone)
        return RHN_ADMIN_NO_RESOURCES;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_QUERY_COUNTERS: {
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      uint64_t v[RHN_CNT_COUNT];
      if (u.query.out_len < sizeof(v)) return RHN_ADMIN_BAD_PARAM;
      for (unsigned i = 0; i < RHN_CNT_COUNT; i++) v[i] = counters.get(i);
      return write_result(u.query.out_addr, v, sizeof(v));
    }
    case RHN_ADMIN_CREATE_CONTEXT:
      if (ctx == 0) return RHN_ADMIN_BAD_PARAM;
      if (contexts[ctx].valid) return RHN_ADMIN_EXISTS;
      // The account its user's tables are charged to (engine/shares.h).
      if (u.create_context.account >= RHN_MAX_ACCOUNTS ||
          u.create_context.reserved)
        return RHN_ADMIN_BAD_PARAM;
      contexts[ctx] = ContextObj{};
      contexts[ctx].valid = true;
      contexts[ctx].account = static_cast<uint16_t>(u.create_context.account);
      shares.bind(ctx, u.create_context.account);
      result = ctx;
      return RHN_ADMIN_OK;
    case RHN_ADMIN_DESTROY_CONTEXT:
      if (ctx == 0) return RHN_ADMIN_BAD_PARAM;
      if (contexts[ctx].refs) return RHN_ADMIN_BUSY;
      contexts[ctx].valid = false;
      modules_context_gone(*this, ctx);  // what it held of the families'
      return RHN_ADMIN_OK;
    case RHN_ADMIN_CREATE_PD: {
      const uint32_t pdn = find_free(pds, 0);
      if (pdn == kNone) return RHN_ADMIN_NO_RESOURCES;
      pds[pdn] = PdObj{true, ctx, 0};
      contexts[ctx].refs++;
      result = pdn;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_PD: {
      const uint32_t pdn = u.handle.handle;
      if (!pd_ok(pdn)) return RHN_ADMIN_BAD_HANDLE;
      if (pds[pdn].refs) return RHN_ADMIN_BUSY;
      pds[pdn].valid = false;
      contexts[ctx].refs--;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_CREATE_MR: {
      const auto& c = u.create_mr;
      if (!pd_ok(c.pdn)) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (c.flags & ~(RHN_CREATE_MR_F_FAST_REG | RHN_CREATE_MR_F_ON_DEMAND |
                      RHN_CREATE_MR_F_TWIN) ||
          __builtin_popcount(c.flags) > 1)
        return detail = 8, RHN_ADMIN_BAD_PARAM;
      const bool on_twin = c.flags & RHN_CREATE_MR_F_TWIN;
      const bool fast_reg = c.flags & RHN_CREATE_MR_F_FAST_REG;
      TwinObj* t = nullptr;
      if (on_twin) {
        // Device memory: a range of one of the context's twins.
        t = twin_of(c.twin, ctx);
        if (!t) return detail = 9, RHN_ADMIN_BAD_HANDLE;
        if (c.access & ~kKnownAccess) return detail = 2, RHN_ADMIN_BAD_PARAM;
        const uint64_t size = uint64_t{t->pages} * RHN_TWIN_PAGE;
        if (c.length == 0 || c.iova + c.length < c.iova ||
            c.twin_offset > size || c.length > size - c.twin_offset)
          return detail = 3, RHN_ADMIN_BAD_PARAM;
        if (c.levels != 0 || c.page_shift != 0)
          return detail = 4, RHN_ADMIN_BAD_PARAM;
      } else if (fast_reg) {
        // The page list holds bus addresses: the kernel's to write.
        if (ctx != 0) return detail = 8, RHN_ADMIN_NOT_PERMITTED;
        if (c.levels != 1 || c.num_pages == 0 ||
            c.num_pages > RHN_VPT_ENTRIES_PER_PAGE)
          return detail = 6, RHN_ADMIN_BAD_PARAM;
        if (c.table_addr == 0 || (c.table_addr & 7))
          return detail = 7, RHN_ADMIN_BAD_PARAM;
      } else {
        // Pinned on demand: a user's memory, in 4 KiB pages (the unit the
        // host pins and PD_REQUEST events count).
        if ((c.flags & RHN_CREATE_MR_F_ON_DEMAND) &&
            (ctx == 0 || c.levels == 0 || c.page_shift != 12))
          return detail = 8, RHN_ADMIN_BAD_PARAM;
        if (c.access & ~kKnownAccess) return detail = 2, RHN_ADMIN_BAD_PARAM;
        if (c.length == 0 || c.iova + c.length < c.iova)
          return detail = 3, RHN_ADMIN_BAD_PARAM;
        if (c.length > (1ull << 39)) return detail = 3, RHN_ADMIN_BAD_PARAM;
        if (c.levels > 3) return detail = 4, RHN_ADMIN_BAD_PARAM;
        if (c.levels == 0) {
          if (ctx != 0) return detail = 4, RHN_ADMIN_NOT_PERMITTED;
        } else {
          if (c.page_shift < 12 || c.page_shift > 30)
            return detail = 5, RHN_ADMIN_BAD_PARAM;
          const uint64_t first = c.iova >> c.page_shift;
          const uint64_t last = (c.iova + c.length - 1) >> c.page_shift;
          const uint64_t pages = last - first + 1;
          const uint64_t cap = 1ull << (RHN_VPT_LEVEL_SHIFT * c.levels);
          if (pages != c.num_pages || pages > cap)
            return detail = 6, RHN_ADMIN_BAD_PARAM;
          if (c.table_addr == 0 || (c.table_addr & 7))
            return detail = 7, RHN_ADMIN_BAD_PARAM;
        }
      }
      const uint32_t idx = find_free(mrs, 1);  // index 0: RHN_LKEY_PHYSICAL
      if (idx == kNone) return RHN_ADMIN_NO_RESOURCES;
      MrObj& mr = mrs[idx];
      mr = MrObj{};
      mr.valid = true;
      mr.variant = c.key_variant;
      mr.context = ctx;
      mr.pdn = c.pdn;
      if (on_twin) {
        mr.access = c.access;
        mr.iova = c.iova;
        mr.length = c.length;
        mr.on_twin = true;
        mr.twin = c.twin;
        mr.twin_offset = c.twin_offset;
        t->refs++;
      } else if (fast_reg) {
        mr.fast_reg = true;
        mr.levels = 1;
        mr.table = c.table_addr;
        mr.max_pages = c.num_pages;
      } else {
        mr.page_shift = c.levels ? c.page_shift : 12;
        mr.levels = c.levels;
        mr.access = c.access;
        mr.iova = c.iova;
        mr.length = c.length;
        mr.table = c.table_addr;
        mr.num_pages = c.num_pages;
        mr.on_demand = c.flags & RHN_CREATE_MR_F_ON_DEMAND;
      }
      pds[c.pdn].refs++;
      tlb.invalidate_region(idx);  // nothing stale may survive reuse
      result = (idx << RHN_KEY_INDEX_SHIFT) | c.key_variant;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_MR: {
      MrObj* mr = mr_of_key(u.handle.handle);
      if (!mr) return RHN_ADMIN_BAD_HANDLE;
      if (mr->refs) return RHN_ADMIN_BUSY;
      modules_mr_gone(*this, u.handle.handle >> RHN_KEY_INDEX_SHIFT);
      if (mr->on_twin) {
        TwinObj* t = twin_of(mr->twin, ctx);
        if (t) t->refs--;
      }
      mr->valid = false;
      pds[mr->pdn].refs--;
      tlb.invalidate_region(u.handle.handle >> RHN_KEY_INDEX_SHIFT);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_CREATE_MW: {
      const auto& c = u.create_mw;
      if (!pd_ok(c.pdn)) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if ((c.type != 1 && c.type != 2) || c.reserved[0] || c.reserved[1])
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      const uint32_t idx = find_free(mrs, 1);
      if (idx == kNone) return RHN_ADMIN_NO_RESOURCES;
      MrObj& mw = mrs[idx];
      mw = MrObj{};
      mw.valid = true;
      mw.window = true;
      mw.mw_type = c.type;
      mw.variant = c.key_variant;
      mw.context = ctx;
      mw.pdn = c.pdn;
      pds[c.pdn].refs++;
      result = (idx << RHN_KEY_INDEX_SHIFT) | c.key_variant;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_MW: {
      // By index: binds may have changed the key's variant since.
      const uint32_t idx = u.handle.handle >> RHN_KEY_INDEX_SHIFT;
      MrObj* mw = idx && idx < mrs.size() ? &mrs[idx] : nullptr;
      if (!mw || !mw->valid || !mw->window || mw->context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      unbind_window(*mw);
      mw->valid = false;
      pds[mw->pdn].refs--;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_MODIFY_MR: {
      // Rights and PD change in place, keys stay (ibv_rereg_mr without a
      // new translation). Work in flight sees the change at its next check
      // (READ streams check every chunk).
      const auto& c = u.modify_mr;
      MrObj* mr = mr_of_key(c.key);
      if (!mr) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (!c.mask || (c.mask & ~(RHN_MODIFY_MR_ACCESS | RHN_MODIFY_MR_PD)))
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      if ((c.mask & RHN_MODIFY_MR_ACCESS) && (c.access & ~kKnownAccess))
        return detail = 3, RHN_ADMIN_BAD_PARAM;
      if ((c.mask & RHN_MODIFY_MR_PD) && !pd_ok(c.pdn))
        return detail = 4, RHN_ADMIN_BAD_HANDLE;
      if (c.mask & RHN_MODIFY_MR_ACCESS) mr->access = c.access;
      if (c.mask & RHN_MODIFY_MR_PD) {
        pds[mr->pdn].refs--;
        pds[c.pdn].refs++;
        mr->pdn = c.pdn;
      }
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_INVALIDATE_TLB:
      if (u.handle.handle == kNone) {
        if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
        tlb.invalidate_all();
        return RHN_ADMIN_OK;
      }
      if (!mr_of_key(u.handle.handle)) return RHN_ADMIN_BAD_HANDLE;
      tlb.invalidate_region(u.handle.handle >> RHN_KEY_INDEX_SHIFT);
      return RHN_ADMIN_OK;
    case RHN_ADMIN_CREATE_EQ: {
      const auto& c = u.create_eq;
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      if (c.ring_addr == 0 || (c.ring_addr & 0xf) || c.log_depth < 1 ||
          c.log_depth > kMaxEqLog || c.vector >= cfg.msix_vectors)
        return RHN_ADMIN_BAD_PARAM;
      const uint32_t eqn = find_free(eqs, 0);
      if (eqn == kNone) return RHN_ADMIN_NO_RESOURCES;
      eqs[eqn] = EqObj{};
      eq_db_lost[eqn].store(0);  // a gone EQ's doorbell is not this one's
      eqs[eqn].valid = true;
      eqs[eqn].armed = true;
      eqs[eqn].vector = c.vector;
      eqs[eqn].log_depth = c.log_depth;
      eqs[eqn].ring = c.ring_addr;
      result = eqn;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_EQ: {
      const uint32_t eqn = u.handle.handle;
      if (ctx != 0 || eqn >= eqs.size() || !eqs[eqn].valid)
        return RHN_ADMIN_BAD_HANDLE;
      if (eqs[eqn].refs) return RHN_ADMIN_BUSY;
      eqs[eqn].valid = false;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_CREATE_CQ: {
      const auto& c = u.create_cq;
      if (c.eqn >= eqs.size() || !eqs[c.eqn].valid)
        return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (c.flags & ~RHN_CREATE_CQ_F_RUNS)
        return detail = 5, RHN_ADMIN_BAD_PARAM;
      rhn_admin_status st = cq_memory_check(c.ring, c.record, c.log_depth);
      if (st != RHN_ADMIN_OK) return st;
      const uint32_t cqn = find_free(cqs, 0);
      if (cqn == kNone) return RHN_ADMIN_NO_RESOURCES;
      CqObj& cq = cqs[cqn];
      cq = CqObj{};
      publish_cq_producer(cqn, 0);
      cq_arm_lost[cqn].store(0);
      cq_owner[cqn].store(ctx + 1);
      cq.valid = true;
      cq.context = ctx;
      cq.log_depth = c.log_depth;
      cq.ring = to_ref(c.ring);
      cq.record = to_ref(c.record);
      cq.eqn = c.eqn;
      if (c.flags & RHN_CREATE_CQ_F_RUNS) cq.run_flags = kCqRuns;
      cq_set_slow(cq);
      ref_get(cq.ring, 1);
      ref_get(cq.record, 1);
      eqs[c.eqn].refs++;
      contexts[ctx].refs++;
      result = cqn;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_RESIZE_CQ: {
      const auto& c = u.resize_cq;
      if (!cq_ok(c.cqn)) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      rhn_admin_status st = cq_memory_check(c.ring, c.record, c.log_depth);
      if (st != RHN_ADMIN_OK) return st;
      const HostRef old_ring = cqs[c.cqn].ring, old_record = cqs[c.cqn].record;
      st = resize_cq(c.cqn, c.log_depth, to_ref(c.ring), to_ref(c.record),
                     detail);
      if (st != RHN_ADMIN_OK) return st;
      ref_get(old_ring, -1);
      ref_get(old_record, -1);
      ref_get(cqs[c.cqn].ring, 1);
      ref_get(cqs[c.cqn].record, 1);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_MODIFY_CQ: {
      const auto& c = u.modify_cq;
      if (!cq_ok(c.cqn)) return detail = 3, RHN_ADMIN_BAD_HANDLE;
      modify_cq(c.cqn, c.count, c.period_us);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_CQ: {
      const uint32_t cqn = u.handle.handle;
      if (!cq_ok(cqn)) return RHN_ADMIN_BAD_HANDLE;
      CqObj& cq = cqs[cqn];
      if (cq.refs) return RHN_ADMIN_BUSY;
      ref_get(cq.ring, -1);
      ref_get(cq.record, -1);
      eqs[cq.eqn].refs--;
      if (cq.event_deferred) {  // an owed event for a CQ that is gone
        cq.event_deferred = false;
        eqs[cq.eqn].deferred--;
      }
      contexts[ctx].refs--;
      cq.valid = false;
      cq_set_slow(cq);
      cq_owner[cqn].store(0);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_CREATE_SRQ: {
      const auto& c = u.create_srq;
      if (!pd_ok(c.pdn)) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (c.log_depth < 1 || c.log_depth > kMaxWqLog)
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      rhn_admin_status st =
          ref_check(c.ring, uint64_t{RHN_RQ_WQE_SIZE} << c.log_depth, false, 3);
      if (st == RHN_ADMIN_OK)
        st = ref_check(c.record, sizeof(rhn_queue_record), false, 4);
      if (st != RHN_ADMIN_OK) return st;
      // An XRC SRQ: the driver names its domain (shared by processes, so
      // not one context's) and the CQ of its receives.
      const bool xrc = c.flags & RHN_CREATE_SRQ_F_XRC;
      if (xrc && (c.flags != RHN_CREATE_SRQ_F_XRC || c.xrcd == 0))
        return detail = 5, RHN_ADMIN_BAD_PARAM;
      if (xrc && !cq_ok(c.cqn)) return detail = 6, RHN_ADMIN_BAD_HANDLE;
      // An SRQ some family runs (a flag of its own): the family checks
      // and keeps the rest of the command.
      const FamilyModule* owner = xrc ? nullptr : srq_owner(c.flags);
      if (c.flags && !xrc && !owner) return detail = 5, RHN_ADMIN_BAD_PARAM;
      if (owner) {
        st = owner->srq_check(*this, ctx, c, detail);
        if (st != RHN_ADMIN_OK) return st;
      }
      const uint32_t srqn = find_free(srqs, 0);
      if (srqn == kNone || (xrc && srqn > RHN_XRC_SRQN_INDEX_MASK))
        return RHN_ADMIN_NO_RESOURCES;
      if (owner) owner->srq_attach(*this, srqn, c);
      SrqObj& s = srqs[srqn];
      const auto incarnation = static_cast<uint8_t>(s.incarnation + 1);
      s = SrqObj{};
      s.incarnation = incarnation;
      s.valid = true;
      s.context = ctx;
      s.pdn = c.pdn;
      s.log_depth = c.log_depth;
      s.ring = to_ref(c.ring);
      s.record = to_ref(c.record);
      s.limit = c.limit;
      s.family = owner ? static_cast<uint32_t>(owner->id) : kNone;
      ref_get(s.ring, 1);
      ref_get(s.record, 1);
      pds[c.pdn].refs++;
      result = srqn;
      if (xrc) {
        s.xrcd = c.xrcd;
        s.cqn = c.cqn;
        cqs[c.cqn].refs++;
        result = xrc_srq_number(srqn, s);
      }
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_MODIFY_SRQ: {
      const uint32_t srqn = u.modify_srq.srqn;
      if (srqn >= srqs.size() || !srqs[srqn].valid || srqs[srqn].context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      if (u.modify_srq.limit >= (1u << srqs[srqn].log_depth))
        return RHN_ADMIN_BAD_PARAM;
      srqs[srqn].limit = u.modify_srq.limit;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_SRQ: {
      const uint32_t srqn = u.handle.handle;
      if (srqn >= srqs.size() || !srqs[srqn].valid || srqs[srqn].context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      SrqObj& s = srqs[srqn];
      if (s.refs) return RHN_ADMIN_BUSY;
      ref_get(s.ring, -1);
      ref_get(s.record, -1);
      pds[s.pdn].refs--;
      if (s.xrcd) cqs[s.cqn].refs--;
      modules_srq_gone(*this, srqn);
      s.valid = false;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_CREATE_QP: {
      const auto& c = u.create_qp;
      if (!pd_ok(c.pdn)) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (c.type != RHN_QP_RC && c.type != RHN_QP_UD &&
          c.type != RHN_QP_ENDPOINT && c.type != RHN_QP_RAW_ETH &&
          c.type != RHN_QP_UC && c.type != RHN_QP_XRC_SEND &&
          c.type != RHN_QP_XRC_RECV)
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      // XRC QPs have no receive queue: the target's SENDs land in the XRC
      // SRQ each names, of the domain only an XRC_RECV QP has.
      const bool xrc = c.type == RHN_QP_XRC_SEND || c.type == RHN_QP_XRC_RECV;
      if (xrc && (c.srqn != RHN_NO_SRQ || c.rq_log_depth))
        return detail = 4, RHN_ADMIN_BAD_PARAM;
      if ((c.type == RHN_QP_XRC_RECV) != (c.xrcd != 0))
        return detail = 12, RHN_ADMIN_BAD_PARAM;
      // The raw-frame QP carries the net_device: the kernel's, and one.
      if (c.type == RHN_QP_RAW_ETH && ctx != 0)
        return detail = 2, RHN_ADMIN_NOT_PERMITTED;
      if (c.type == RHN_QP_RAW_ETH && raw_qpn != kNone)
        return detail = 2, RHN_ADMIN_EXISTS;
      // The management QP: the kernel's, UD, and always QPN 1.
      const bool gsi = c.flags & RHN_CREATE_QP_F_GSI;
      const bool mp = c.flags & RHN_CREATE_QP_F_MULTI_PRODUCER;
      const bool event_index = c.flags & RHN_CREATE_QP_F_SQ_EVENT_INDEX;
      if (c.flags & ~(RHN_CREATE_QP_F_GSI | RHN_CREATE_QP_F_MULTI_PRODUCER |
                      RHN_CREATE_QP_F_SQ_EVENT_INDEX))
        return detail = 11, RHN_ADMIN_BAD_PARAM;
      // A multi-producer record's word is a count of slots done.
      if (mp && event_index) return detail = 11, RHN_ADMIN_BAD_PARAM;
      if (gsi && ctx != 0) return detail = 11, RHN_ADMIN_NOT_PERMITTED;
      if (gsi && c.type != RHN_QP_UD) return detail = 11, RHN_ADMIN_BAD_PARAM;
      if (gsi && qps[RHN_QPN_GSI].valid) return detail = 11, RHN_ADMIN_EXISTS;
      if (!cq_ok(c.send_cqn) || !cq_ok(c.recv_cqn))
        return detail = 3, RHN_ADMIN_BAD_HANDLE;
      const bool has_srq = c.srqn != RHN_NO_SRQ;
      if (has_srq && (c.srqn >= srqs.size() || !srqs[c.srqn].valid ||
                      srqs[c.srqn].context != ctx))
        return detail = 4, RHN_ADMIN_BAD_HANDLE;
      // A family's SRQ takes the QP types the family allows.
      if (has_srq && srqs[c.srqn].family != kNone &&
          !(family_module(static_cast<FwOwner>(srqs[c.srqn].family))
                .srq_qp_types &
            (1u << c.type)))
        return detail = 4, RHN_ADMIN_BAD_PARAM;
      if (c.sq_log_depth < 1 || c.sq_log_depth > kMaxWqLog)
        return detail = 5, RHN_ADMIN_BAD_PARAM;
      const bool own_rq = !has_srq && !xrc;
      if (own_rq && (c.rq_log_depth < 1 || c.rq_log_depth > kMaxWqLog))
        return detail = 6, RHN_ADMIN_BAD_PARAM;
      rhn_admin_status st = ref_check(
          c.sq_ring, uint64_t{RHN_SQ_SLOT_SIZE} << c.sq_log_depth, false, 7);
      if (st == RHN_ADMIN_OK)
        st = mp ? ref_check(c.sq_record, sizeof(rhn_mp_queue_record), true, 8)
                : ref_check(c.sq_record, sizeof(rhn_queue_record), false, 8);
      if (st == RHN_ADMIN_OK && own_rq)
        st = ref_check(c.rq_ring, uint64_t{RHN_RQ_WQE_SIZE} << c.rq_log_depth,
                       false, 9);
      if (st == RHN_ADMIN_OK && own_rq)
        st = ref_check(c.rq_record, sizeof(rhn_queue_record), false, 10);
      if (st != RHN_ADMIN_OK) return st;
      // QPN 0 is never valid, QPN 1 only for the management QP.
      const uint32_t qpn =
          gsi ? RHN_QPN_GSI : find_free_from(qps, RHN_QPN_GSI + 1, next_qpn);
      if (qpn == kNone) return RHN_ADMIN_NO_RESOURCES;
      if (!gsi) next_qpn = qpn + 1;
      QpObj& qp = qps[qpn];
      const uint32_t gen = ++qp_gen_counter;
      const uint8_t incarnation = static_cast<uint8_t>(qp.incarnation + 1);
      qp = QpObj{};
      qp.valid = true;
      qp.gen = gen;
      qp.incarnation = incarnation;
      qp.type = c.type;
      qp.context = ctx;
      qp.pdn = c.pdn;
      qp.send_cqn = c.send_cqn;
      qp.recv_cqn = c.recv_cqn;
      qp.srqn = has_srq ? c.srqn : kNone;
      qp.sq_log = c.sq_log_depth;
      qp.rq_log = own_rq ? c.rq_log_depth : 0;
      qp.xrcd = c.xrcd;
      qp.sq_event = event_index ? SqEvent::kUnset : SqEvent::kOff;
      qp.sq_ring = to_ref(c.sq_ring);
      qp.sq_record = to_ref(c.sq_record);
      ref_get(qp.sq_ring, 1);
      ref_get(qp.sq_record, 1);
      if (own_rq) {
        qp.rq_ring = to_ref(c.rq_ring);
        qp.rq_record = to_ref(c.rq_record);
        ref_get(qp.rq_ring, 1);
        ref_get(qp.rq_record, 1);
      } else if (has_srq) {
        srqs[c.srqn].refs++;
      }
      cqs[c.send_cqn].refs++;
      cqs[c.recv_cqn].refs++;
      pds[c.pdn].refs++;
      if (c.type == RHN_QP_RAW_ETH) raw_qpn = qpn;
      qp.mp = mp;
      if (mp || event_index) scan_link(qpn);
      result = qpn;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_MODIFY_QP: {
      const auto& c = u.modify_qp;
      const uint32_t qpn = c.qpn;
      if (qpn == 0 || qpn >= qps.size() || !qps[qpn].valid ||
          qps[qpn].context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      QpObj& qp = qps[qpn];
      const uint32_t mask = c.attr_mask;
      if (mask & ~0x7fu) return detail = 1, RHN_ADMIN_BAD_PARAM;
      uint8_t next = qp.state;
      if (mask & RHN_QP_ATTR_STATE) {
        next = c.state;
        const uint8_t cur = qp.state;
        bool legal = next == RHN_QPS_RESET || next == RHN_QPS_ERR ||
                     (cur == RHN_QPS_RESET && next == RHN_QPS_INIT) ||
                     (cur == RHN_QPS_INIT &&
                      (next == RHN_QPS_INIT || next == RHN_QPS_RTR)) ||
                     (cur == RHN_QPS_RTR && next == RHN_QPS_RTS) ||
                     (cur == RHN_QPS_RTS &&
                      (next == RHN_QPS_RTS || next == RHN_QPS_SQD)) ||
                     (cur == RHN_QPS_SQD &&
                      (next == RHN_QPS_RTS || next == RHN_QPS_SQD));
        if (next > RHN_QPS_ERR || next == RHN_QPS_SQE) legal = false;
        if (!legal) return RHN_ADMIN_BAD_STATE;
        if (connected_qp(qp.type) && next == RHN_QPS_RTR &&
            cur == RHN_QPS_INIT && !(mask & RHN_QP_ATTR_DEST))
          return detail = 2, RHN_ADMIN_BAD_PARAM;
      }
      if (mask & RHN_QP_ATTR_ACCESS) {
        if (c.access & ~kKnownAccess) return detail = 3, RHN_ADMIN_BAD_PARAM;
      }
      if (mask & RHN_QP_ATTR_DEST) {
        if (!connected_qp(qp.type) || c.dest_node >= RHN_MAX_NODES ||
            c.dest_qpn == 0 || c.dest_qpn > RHN_DB_QN_MASK)
          return detail = 4, RHN_ADMIN_BAD_PARAM;
      }
      if ((mask & RHN_QP_ATTR_RETRY) && c.rnr_retry > 7)
        return detail = 5, RHN_ADMIN_BAD_PARAM;
      if ((mask & RHN_QP_ATTR_MAX_RD_ATOMIC) &&
          (c.max_rd_atomic == 0 || c.max_rd_atomic > cfg.max_rd_atomic))
        return detail = 6, RHN_ADMIN_BAD_PARAM;
      if ((mask & RHN_QP_ATTR_TIMEOUT) && (c.timeout > 31 || c.retry_cnt > 7))
        return detail = 7, RHN_ADMIN_BAD_PARAM;
      // All checked: apply.
      if (mask & RHN_QP_ATTR_ACCESS) qp.access = c.access;
      if (mask & RHN_QP_ATTR_DEST) {
        qp.dest_node = c.dest_node;
        qp.dest_qpn = c.dest_qpn;
      }
      if (mask & RHN_QP_ATTR_QKEY) qp.qkey = c.qkey;
      if (mask & RHN_QP_ATTR_RETRY) {
        qp.rnr_retry = c.rnr_retry;
        qp.min_rnr_timer = c.min_rnr_timer;
      }
      if (mask & RHN_QP_ATTR_MAX_RD_ATOMIC) qp.max_rd_atomic = c.max_rd_atomic;
      if (mask & RHN_QP_ATTR_TIMEOUT) {
        qp.timeout = c.timeout;
        qp.retry_cnt = c.retry_cnt;
      }
      if (mask & RHN_QP_ATTR_STATE) {
        if (next == RHN_QPS_RESET) {
          destroy_qp_state(qpn);
          // A new incarnation: nothing of the previous life (late ACKs,
          // READ responses, NAKs) can complete the new one's messages.
          qp.gen = ++qp_gen_counter;
          qp.incarnation++;
          qp.sq_producer = qp.sq_fetch = qp.sq_complete = 0;
          qp.mp_consumed = 0;
          qp.scan_suspect = false;
          qp.msn_next = 0;
          qp.rq_consumer = qp.rq_producer = qp.rq_scan = 0;
          rq_ask_for_kicks(qp, false);
          sq_ask_for_kicks(qp, false);
          if (qp.sq_event != SqEvent::kOff) qp.sq_event = SqEvent::kUnset;
          qp.rnr_blocked = false;
          qp.rnr_count = 0;
          qp.flushing = false;
          qp.state = RHN_QPS_RESET;
        } else if (next == RHN_QPS_ERR) {
          qp_to_error(qpn);
        } else {
          qp.state = next;
          if (next == RHN_QPS_RTS) schedule(qpn);
        }
      }
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_QUERY_QP: {
      const uint32_t qpn = u.query.handle;
      if (qpn == 0 || qpn >= qps.size() || !qps[qpn].valid ||
          qps[qpn].context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      if (u.query.out_len < sizeof(rhn_qp_attr)) return RHN_ADMIN_BAD_PARAM;
      const QpObj& qp = qps[qpn];
      rhn_qp_attr a;
      memset(&a, 0, sizeof(a));
      a.qpn = qpn;
      a.state = qp.state;
      a.type = qp.type;
      a.dest_node = qp.dest_node;
      a.dest_qpn = qp.dest_qpn;
      a.sq_consumer = qp.sq_complete;
      a.rq_consumer = qp.rq_consumer;
      if (!bus.dma_write(u.query.out_addr, &a, sizeof(a)))
        return RHN_ADMIN_DMA_ERROR;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_DESTROY_QP: {
      const uint32_t qpn = u.handle.handle;
      if (qpn == 0 || qpn >= qps.size() || !qps[qpn].valid ||
          qps[qpn].context != ctx)
        return RHN_ADMIN_BAD_HANDLE;
      destroy_qp_state(qpn);
      modules_qp_gone(*this, qpn, QpGone::kDestroyed);
      QpObj& qp = qps[qpn];
      if (qp.scan_listed) scan_unlink(qpn);
      ref_get(qp.sq_ring, -1);
      ref_get(qp.sq_record, -1);
      if (has_own_rq(qp)) {
        ref_get(qp.rq_ring, -1);
        ref_get(qp.rq_record, -1);
      } else if (qp.srqn != kNone) {
        srqs[qp.srqn].refs--;
      }
      cqs[qp.send_cqn].refs--;
      cqs[qp.recv_cqn].refs--;
      pds[qp.pdn].refs--;
      if (raw_qpn == qpn) raw_qpn = kNone;
      qp.valid = false;
      qp.in_ready = false;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_REGISTER_AREA: {
      const auto& c = u.register_area;
      MrObj* mr = mr_of_key(c.key);
      if (!mr) return detail = 1, RHN_ADMIN_BAD_HANDLE;
      if (c.length == 0 || c.iova < mr->iova || c.iova + c.length < c.iova ||
          c.iova + c.length > mr->iova + mr->length)
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      // An area lives in a group its process is a member of.
      if (!in_group(ctx, RHN_AREA_KEY_GROUP(c.area_id)))
        return detail = 3, RHN_ADMIN_NOT_PERMITTED;
      if (find_area(ctx, c.area_id)) return RHN_ADMIN_EXISTS;
      if (free_areas.empty() || !shares.take(ctx, Res::kAreas))
        return RHN_ADMIN_NO_RESOURCES;
      const uint32_t i = free_areas.front();
      free_areas.pop();
      AreaObj& a = areas[i];
      uint32_t& head = area_bucket(ctx, c.area_id);
      a = AreaObj{};
      a.chain = head;
      head = i;
      a.valid = true;
      a.context = ctx;
      a.area_id = c.area_id;
      a.mr_index = c.key >> RHN_KEY_INDEX_SHIFT;
      a.iova = c.iova;
      a.length = c.length;
      mr->refs++;
      contexts[ctx].refs++;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_UNREGISTER_AREA: {
      AreaObj* a = find_area(ctx, u.handle.handle);
      if (!a) return RHN_ADMIN_BAD_HANDLE;
      const auto i = static_cast<uint32_t>(a - areas.data());
      unchain(areas, area_bucket(ctx, a->area_id), i);
      mrs[a->mr_index].refs--;
      contexts[ctx].refs--;
      shares.give(ctx, Res::kAreas);
      *a = AreaObj{};
      free_areas.push(i);
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_SET_GROUPS: {
      // Membership is the kernel's to grant (it checks the process's right
      // to each group); the NIC enforces it on every area access.
      const auto& g = u.set_groups;
      if (g.count > RHN_MAX_GROUPS_PER_CONTEXT || g.reserved)
        return detail = 1, RHN_ADMIN_BAD_PARAM;
      for (uint32_t i = 0; i < g.count; i++) {
        if (g.group[i] == 0) return detail = 2, RHN_ADMIN_BAD_PARAM;
        for (uint32_t j = 0; j < i; j++)
          if (g.group[j] == g.group[i]) return detail = 2, RHN_ADMIN_BAD_PARAM;
      }
      // Areas already registered stay only in groups the context keeps.
      for (const AreaObj& a : areas) {
        if (!a.valid || a.context != ctx) continue;
        const uint16_t ag = RHN_AREA_KEY_GROUP(a.area_id);
        bool kept = ag == 0;
        for (uint32_t i = 0; i < g.count && !kept; i++) kept = g.group[i] == ag;
        if (!kept) return detail = 3, RHN_ADMIN_BUSY;
      }
      ContextObj& c = contexts[ctx];
      c.num_groups = static_cast<uint8_t>(g.count);
      for (uint32_t i = 0; i < RHN_MAX_GROUPS_PER_CONTEXT; i++)
        c.groups[i] = i < g.count ? g.group[i] : 0;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_ALLOC_TWIN: {
      const uint64_t len = u.alloc_twin.length;
      if (len == 0 || len > uint64_t{twin_pages} * RHN_TWIN_PAGE)
        return detail = 1, RHN_ADMIN_BAD_PARAM;
      const auto pages =
          static_cast<uint32_t>((len + RHN_TWIN_PAGE - 1) / RHN_TWIN_PAGE);
      // First fit: the lowest gap between live allocations that holds it.
      uint32_t free_idx = kNone, at = 0;
      for (;;) {
        uint32_t clash = kNone;
        for (uint32_t i = 0; i < twins.size(); i++) {
          const TwinObj& t = twins[i];
          if (!t.valid) {
            if (free_idx == kNone) free_idx = i;
            continue;
          }
          if (t.first_page < at + pages && at < t.first_page + t.pages &&
              (clash == kNone ||
               t.first_page + t.pages >
                   twins[clash].first_page + twins[clash].pages))
            clash = i;
        }
        if (clash == kNone) break;
        at = twins[clash].first_page + twins[clash].pages;
      }
      if (free_idx == kNone || uint64_t{at} + pages > twin_pages)
        return RHN_ADMIN_NO_RESOURCES;
      TwinObj& t = twins[free_idx];
      t.valid = true;
      t.context = ctx;
      t.first_page = at;
      t.pages = pages;
      t.refs = 0;
      // Another process's bytes never show through a new allocation.
      memset(twin_bytes(t), 0, uint64_t{pages} * RHN_TWIN_PAGE);
      contexts[ctx].refs++;
      result = free_idx | uint32_t{t.gen} << 16;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_TWIN_WRITE:
    case RHN_ADMIN_TWIN_READ: {
      // The host's way into its twin memory: the NIC copies by DMA.
      const auto& c = u.twin_copy;
      TwinObj* t = twin_of(c.handle, ctx);
      if (!t) return RHN_ADMIN_BAD_HANDLE;
      const uint64_t size = uint64_t{t->pages} * RHN_TWIN_PAGE;
      if (c.length == 0 || c.length > RHN_TWIN_COPY_MAX || c.reserved ||
          c.offset > size || c.length > size - c.offset)
        return detail = 1, RHN_ADMIN_BAD_PARAM;
      uint8_t* at = twin_bytes(*t) + c.offset;
      const bool ok = cmd.hdr.opcode == RHN_ADMIN_TWIN_WRITE
                          ? bus.dma_read(c.addr, at, c.length)
                          : bus.dma_write(c.addr, at, c.length);
      if (!ok) {
        counters.add(RHN_CNT_DMA_ERRORS);
        return RHN_ADMIN_DMA_ERROR;
      }
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_FREE_TWIN: {
      TwinObj* t = twin_of(u.handle.handle, ctx);
      if (!t) return RHN_ADMIN_BAD_HANDLE;
      if (t->refs) return RHN_ADMIN_BUSY;  // MRs over it
      // Work still naming the old handle finds it gone (twin_of).
      t->valid = false;
      t->gen++;
      contexts[ctx].refs--;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_SET_GID: {
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      const auto& g = u.set_gid;
      if (g.index >= gid_table.size() || g.reserved[0] || g.reserved[1] ||
          g.reserved[2])
        return detail = 1, RHN_ADMIN_BAD_PARAM;
      if (g.type != RHN_GID_ROCE_V1 && g.type != RHN_GID_ROCE_V2)
        return detail = 2, RHN_ADMIN_BAD_PARAM;
      memcpy(gid_table[g.index].data(), g.gid, 16);
      gid_types[g.index] = g.type;
      return RHN_ADMIN_OK;
    }
    case RHN_ADMIN_FW_DOWNLOAD:
    case RHN_ADMIN_FW_COMMIT:
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      return cmd.hdr.opcode == RHN_ADMIN_FW_DOWNLOAD
                 ? fw_download(*this, u.fw_download, detail)
                 : fw_commit(*this, u.fw_commit, detail);
    case RHN_ADMIN_SET_LINK:
      if (ctx != 0) return RHN_ADMIN_NOT_PERMITTED;
      link_up.store(u.set_link.up != 0);
      report_link();
      return RHN_ADMIN_OK;
    default: {
      // The families' own commands.
      const FamilyModule* family = admin_owner(cmd.hdr.opcode);
      if (!family) return RHN_ADMIN_BAD_OPCODE;
      return family->on_admin(*this, ctx, cmd, result, detail);
    }
  }
}

}  // namespace rhinet::fw
