// SPDX-License-Identifier: BSD-2-Clause
// Protection and address translation: every host access the engine makes
// on behalf of a context goes through a key, is checked here and is then
// translated page by page through the TLB and the VP translation tables.
#include "core/freestanding.h"
#include "engine/engine_impl.h"

namespace rhinet::fw {

rhn_syndrome Engine::Impl::check_key(uint32_t key, uint32_t context,
                                     uint32_t pdn, uint32_t access, uint64_t va,
                                     uint64_t len, uint32_t* mr_index,
                                     uint32_t via_qpn) {
  const uint32_t idx = key >> RHN_KEY_INDEX_SHIFT;
  if (idx == 0 || idx >= mrs.size()) return RHN_SYN_BAD_KEY;
  const MrObj& mr = mrs[idx];
  if (!mr.valid || mr.variant != (key & RHN_KEY_VARIANT_MASK) ||
      (mr.fast_reg && !mr.registered))
    return RHN_SYN_BAD_KEY;
  // A window is an rkey only, of a bound window; a type 2 window answers
  // only the QP it was bound through.
  if (mr.window && (via_qpn == kNone || !mr.bound ||
                    (mr.mw_type == 2 && mr.bound_qpn != via_qpn)))
    return RHN_SYN_BAD_KEY;
  // The kernel's bus-address MR (its local_dma_lkey) serves every kernel
  // PD, as IB's reserved lkey does; no other MR crosses PDs.
  const bool kernel_dma = mr.levels == 0 && mr.context == 0 && !mr.window &&
                          !mr.on_twin && pdn != kNone && pdn < pds.size() &&
                          pds[pdn].valid && pds[pdn].context == 0;
  if (pdn != kNone && mr.pdn != pdn && !kernel_dma) return RHN_SYN_PD_MISMATCH;
  if (context != kNone && mr.context != context) return RHN_SYN_PD_MISMATCH;
  if ((mr.access & access) != access) return RHN_SYN_ACCESS_RIGHTS;
  if (len != 0 && (va < mr.iova || va - mr.iova > mr.length ||
                   len > mr.length || va - mr.iova + len > mr.length))
    return RHN_SYN_BOUNDS;
  // Through a window, the bytes are its region's.
  if (mr_index) *mr_index = mr.window ? mr.bound_mr : idx;
  return RHN_SYN_NONE;
}

rhn_syndrome Engine::Impl::check_key_remember(KeyCache& c, uint32_t key,
                                              uint32_t pdn, uint32_t access,
                                              uint64_t va, uint64_t len,
                                              uint32_t* mr_index,
                                              uint32_t via_qpn) {
  const rhn_syndrome s =
      check_key(key, kNone, pdn, access, va, len, mr_index, via_qpn);
  if (s != RHN_SYN_NONE) return s;
  const MrObj& mr = mrs[key >> RHN_KEY_INDEX_SHIFT];
  if (!mr.window && !mr.fast_reg && !mr.on_twin && !mr.on_demand)
    c = KeyCache{.epoch = mr_epoch,
                 .key = key,
                 .mr_index = *mr_index,
                 .iova = mr.iova,
                 .length = mr.length,
                 .region = mr.levels ? region_of(mr) : DmaRegion{}};
  return s;
}

MrObj* Engine::Impl::window_of_key(uint32_t key, uint32_t context) {
  const uint32_t idx = key >> RHN_KEY_INDEX_SHIFT;
  if (idx == 0 || idx >= mrs.size()) return nullptr;
  MrObj& mw = mrs[idx];
  if (!mw.valid || !mw.window || mw.context != context ||
      mw.variant != (key & RHN_KEY_VARIANT_MASK))
    return nullptr;
  return &mw;
}

MrObj* Engine::Impl::invalidatable(uint32_t key, uint32_t context, uint32_t pdn,
                                   uint32_t via_qpn) {
  const uint32_t idx = key >> RHN_KEY_INDEX_SHIFT;
  if (idx == 0 || idx >= mrs.size()) return nullptr;
  MrObj& o = mrs[idx];
  if (!o.valid || o.context != context || o.pdn != pdn ||
      o.variant != (key & RHN_KEY_VARIANT_MASK))
    return nullptr;
  if (o.window)
    return o.mw_type == 2 && o.bound &&
                   (via_qpn == kNone || o.bound_qpn == via_qpn)
               ? &o
               : nullptr;
  return o.fast_reg && o.registered ? &o : nullptr;
}

void Engine::Impl::invalidate(MrObj& obj) {
  if (obj.window) {
    unbind_window(obj);
    return;
  }
  obj.registered = false;
  tlb.invalidate_region(static_cast<uint32_t>(&obj - mrs.data()));
}

void Engine::Impl::unbind_window(MrObj& mw) {
  if (!mw.bound) return;
  mrs[mw.bound_mr].refs--;
  mw.bound = false;
  mw.access = 0;
  mw.length = 0;
}

Engine::Impl::Fault Engine::Impl::translate(uint32_t mr_index, uint64_t va,
                                            uint64_t& bus_addr) {
  const MrObj& mr = mrs[mr_index];
  if (mr.on_twin) return Fault::kBounds;  // on the NIC: no bus address
  if (mr.levels == 0) {
    bus_addr = va;
    return Fault::kOk;
  }
  const uint64_t page_size = 1ull << mr.page_shift;
  const uint64_t page = (va >> mr.page_shift) - (mr.iova >> mr.page_shift);
  if (page >= mr.num_pages) return Fault::kBounds;
  uint64_t page_bus;
  if (!tlb.lookup(mr_index, page, page_bus)) {
    // Walk the VP table: one DMA read per level, top level first.
    uint64_t table = mr.table;
    for (int level = mr.levels - 1; level >= 0; level--) {
      const uint64_t index = level == mr.levels - 1 && mr.levels == 1
                                 ? page
                                 : (page >> (RHN_VPT_LEVEL_SHIFT * level)) &
                                       (RHN_VPT_ENTRIES_PER_PAGE - 1);
      uint64_t pte;
      if (!bus.dma_read(table + index * sizeof(pte), &pte, sizeof(pte)))
        return Fault::kBusError;
      // Not pinned (yet): the host has not entered this page.
      if (!(pte & RHN_VPTE_VALID)) return Fault::kNotPresent;
      table = pte & RHN_VPTE_ADDR_MASK;
    }
    page_bus = table & ~(page_size - 1);
    tlb.insert(mr_index, page, page_bus);
  }
  bus_addr = page_bus + (va & (page_size - 1));
  return Fault::kOk;
}

uint8_t* Engine::Impl::twin_mr_bytes(const MrObj& mr, uint64_t va,
                                     uint64_t len) {
  // The MR holds a reference on its twin, so the handle stays valid;
  // checked all the same, as every length here.
  const TwinObj* t = twin_of(mr.twin, mr.context);
  if (!t || va < mr.iova) return nullptr;
  const uint64_t size = uint64_t{t->pages} * RHN_TWIN_PAGE;
  const uint64_t off = mr.twin_offset + (va - mr.iova);
  if (off < mr.twin_offset || off > size || len > size - off) return nullptr;
  return twin_bytes(*t) + off;
}

bool dma_region_walk(HostBus& bus, const DmaRegion& r, uint64_t va, void* buf,
                     size_t len, bool write) {
  auto* p = static_cast<uint8_t*>(buf);
  const uint64_t page_size = 1ull << r.page_shift;
  while (len) {
    const uint64_t page = (va >> r.page_shift) - (r.iova >> r.page_shift);
    if (page >= r.num_pages) return false;
    uint64_t table = r.table;
    for (int level = r.levels - 1; level >= 0; level--) {
      const uint64_t index = level == r.levels - 1 && r.levels == 1
                                 ? page
                                 : (page >> (RHN_VPT_LEVEL_SHIFT * level)) &
                                       (RHN_VPT_ENTRIES_PER_PAGE - 1);
      uint64_t pte;
      if (!bus.dma_read(table + index * sizeof(pte), &pte, sizeof(pte)) ||
          !(pte & RHN_VPTE_VALID))
        return false;
      table = pte & RHN_VPTE_ADDR_MASK;
    }
    const uint64_t addr = (table & ~(page_size - 1)) + (va & (page_size - 1));
    const size_t chunk = static_cast<size_t>(
        min<uint64_t>(len, page_size - (va & (page_size - 1))));
    if (!(write ? bus.dma_write(addr, p, chunk) : bus.dma_read(addr, p, chunk)))
      return false;
    p += chunk;
    va += chunk;
    len -= chunk;
  }
  return true;
}

// Every DMA through a key comes here: translate() is inlined into it (a
// call costs as much as the TLB hit it makes).
DmaRegion region_of(const MrObj& mr) {
  DmaRegion r;
  r.table = mr.table;
  r.iova = mr.iova;
  r.num_pages = static_cast<uint32_t>(mr.num_pages);
  r.levels = mr.levels;
  r.page_shift = mr.page_shift;
  return r;
}

[[gnu::flatten]] bool Engine::Impl::mr_dma(uint32_t mr_index, uint64_t va,
                                           void* buf, uint64_t len,
                                           bool write) {
  auto* p = static_cast<uint8_t*>(buf);
  const MrObj& mr = mrs[mr_index];
  if (mr.on_twin) {
    // Device memory: the NIC's own, no DMA.
    uint8_t* at = twin_mr_bytes(mr, va, len);
    if (!at) {
      counters.add(RHN_CNT_DMA_ERRORS);
      return false;
    }
    if (len) memmove(write ? at : p, write ? p : at, len);
    return true;
  }
  if (cfg.dma_region && mr.levels) {
    // The DMA block walks the region's table (RHN_CARD_CAP_DMA_REGION).
    if (bus.dma_region(region_of(mr), va, p, len, write)) return true;
    counters.add(RHN_CNT_DMA_ERRORS);
    return false;
  }
  const uint64_t page_size =
      mr.levels == 0 ? UINT64_MAX : (1ull << mr.page_shift);
  while (len) {
    uint64_t chunk =
        page_size == UINT64_MAX ? len : page_size - (va & (page_size - 1));
    if (chunk > len) chunk = len;
    uint64_t addr;
    if (translate(mr_index, va, addr) != Fault::kOk) {
      counters.add(RHN_CNT_DMA_ERRORS);
      return false;
    }
    const bool ok =
        write ? bus.dma_write(addr, p, chunk) : bus.dma_read(addr, p, chunk);
    if (!ok) {
      counters.add(RHN_CNT_DMA_ERRORS);
      return false;
    }
    p += chunk;
    va += chunk;
    len -= chunk;
  }
  return true;
}

bool Engine::Impl::mr_store_u64(uint32_t mr_index, uint64_t va,
                                uint64_t value) {
  if (mrs[mr_index].on_twin) {
    uint8_t* at = (va & 7) ? nullptr : twin_mr_bytes(mrs[mr_index], va, 8);
    if (!at) {
      counters.add(RHN_CNT_DMA_ERRORS);
      return false;
    }
    memcpy(at, &value, sizeof(value));
    return true;
  }
  uint64_t addr;
  // An aligned word never crosses a page: one translation.
  if ((va & 7) || translate(mr_index, va, addr) != Fault::kOk ||
      !bus.dma_store_u64(addr, value)) {
    counters.add(RHN_CNT_DMA_ERRORS);
    return false;
  }
  return true;
}

bool Engine::Impl::sge_dma(const rhn_sge* sges, uint32_t num_sge,
                           uint64_t offset, uint8_t* buf, uint64_t len,
                           uint32_t pdn, bool to_host) {
  const uint32_t right = to_host ? RHN_ACCESS_LOCAL_WRITE : 0;
  for (uint32_t i = 0; i < num_sge && len; i++) {
    if (offset >= sges[i].length) {
      offset -= sges[i].length;
      continue;
    }
    const uint64_t take = min<uint64_t>(sges[i].length - offset, len);
    uint32_t mr_index;
    if (check_key(sges[i].lkey, kNone, pdn, right, sges[i].addr + offset, take,
                  &mr_index) != RHN_SYN_NONE)
      return false;
    if (!mr_dma(mr_index, sges[i].addr + offset, buf, take, to_host)) {
      // A send's source not pinned yet: its QP may wait for the host
      // (pin_local_fault) instead of failing.
      if (!to_host && mrs[mr_index].on_demand) {
        pins.fault_mr = mr_index;
        pins.fault_va = sges[i].addr + offset;
        pins.fault_len = sges[i].length - offset;
      }
      return false;
    }
    buf += take;
    len -= take;
    offset = 0;
  }
  return len == 0;
}

rhn_syndrome Engine::Impl::check_host_ref(const HostRef& ref, uint32_t context,
                                          uint64_t len, bool nic_writes) {
  if (ref.lkey == RHN_LKEY_PHYSICAL)
    return context == 0 && ref.addr != 0 ? RHN_SYN_NONE : RHN_SYN_BAD_KEY;
  return check_key(ref.lkey, context, kNone,
                   nic_writes ? RHN_ACCESS_LOCAL_WRITE : 0, ref.addr, len,
                   nullptr);
}

bool Engine::Impl::host_dma(const HostRef& ref, uint64_t offset, void* buf,
                            uint64_t len, bool write) {
  if (ref.lkey == RHN_LKEY_PHYSICAL) {
    const bool ok = write ? bus.dma_write(ref.addr + offset, buf, len)
                          : bus.dma_read(ref.addr + offset, buf, len);
    if (!ok) counters.add(RHN_CNT_DMA_ERRORS);
    return ok;
  }
  // The queue holds a reference on its MR, so the key stays valid.
  return mr_dma(ref.lkey >> RHN_KEY_INDEX_SHIFT, ref.addr + offset, buf, len,
                write);
}

bool Engine::Impl::remember_region(KeyCache& c, uint32_t mr_index) {
  const MrObj& mr = mrs[mr_index];
  if (!mr.levels || mr.window || mr.fast_reg || mr.on_twin || mr.on_demand)
    return false;
  c = KeyCache{
      .epoch = mr_epoch, .mr_index = mr_index, .region = region_of(mr)};
  return true;
}

bool Engine::Impl::host_publish(const HostRef& ref, uint64_t offset,
                                const void* buf, uint32_t len,
                                uint32_t publish_at) {
  uint64_t bus_addr = ref.addr + offset;
  if (ref.lkey != RHN_LKEY_PHYSICAL) {
    const uint32_t mr_index = ref.lkey >> RHN_KEY_INDEX_SHIFT;
    const MrObj& mr = mrs[mr_index];
    const uint64_t va = ref.addr + offset;
    if (mr.levels) {
      const uint64_t page_size = 1ull << mr.page_shift;
      if (page_size - (va & (page_size - 1)) < len) {
        // Across a page (never for aligned entries): in two ordered parts.
        auto* p = static_cast<uint8_t*>(const_cast<void*>(buf));
        return mr_dma(mr_index, va, p, publish_at, true) &&
               mr_dma(mr_index, va + publish_at, p + publish_at,
                      len - publish_at, true);
      }
    }
    if (translate(mr_index, va, bus_addr) != Fault::kOk) {
      counters.add(RHN_CNT_DMA_ERRORS);
      return false;
    }
  }
  if (!bus.dma_write_publish(bus_addr, buf, len, publish_at)) {
    counters.add(RHN_CNT_DMA_ERRORS);
    return false;
  }
  return true;
}

uint32_t& Engine::Impl::area_bucket(uint32_t context, uint32_t area_id) {
  const uint64_t h = table_hash(uint64_t{4} << 56 | context, area_id);
  return area_buckets[h & (area_buckets.size() - 1)];
}

AreaObj* Engine::Impl::find_area(uint32_t context, uint32_t area_id) {
  for (uint32_t i = area_bucket(context, area_id); i != kNone;
       i = areas[i].chain) {
    AreaObj& a = areas[i];
    if (a.context == context && a.area_id == area_id) return &a;
  }
  return nullptr;
}

bool Engine::Impl::in_group(uint32_t context, uint16_t group) const {
  if (group == 0) return true;  // the open group
  if (context >= contexts.size()) return false;
  const ContextObj& c = contexts[context];
  for (uint32_t i = 0; i < c.num_groups; i++)
    if (c.groups[i] == group) return true;
  return false;
}

TwinObj* Engine::Impl::twin_of(uint32_t handle, uint32_t context) {
  const uint32_t idx = handle & 0xffffu;
  if (idx >= twins.size()) return nullptr;
  TwinObj& t = twins[idx];
  if (!t.valid || t.gen != (handle >> 16) || t.context != context)
    return nullptr;
  return &t;
}

}  // namespace rhinet::fw
