// SPDX-License-Identifier: BSD-2-Clause
// The admin queue (admin.md): the ring protocol, each command's happy path
// and its documented error statuses. Every refused command must also count
// in RHN_CNT_BAD_ADMIN_CMDS.
#include <cstring>
#include <string>

#include "case.h"
#include "lib/fixture.h"
#include "lib/nic.h"

namespace rhinet::conform {
namespace {

// Runs `cmd`, checks its status, and that a refusal was counted.
bool status_is(Nic& n, Check& c, const rhn_admin_cmd& cmd, uint8_t expected,
               uint32_t* result = nullptr) {
  const uint64_t before = n.counter(RHN_CNT_BAD_ADMIN_CMDS);
  const uint8_t got = n.run(cmd, result);
  const std::string op = "admin opcode " + hex(cmd.hdr.opcode);
  if (!c.eq(op + " status", expected, got)) return false;
  return c.eq(op + ": RHN_CNT_BAD_ADMIN_CMDS increase",
              expected == RHN_ADMIN_OK ? 0 : 1,
              n.counter(RHN_CNT_BAD_ADMIN_CMDS) - before);
}

rhn_admin_cmd handle_cmd(uint8_t op, uint32_t handle, uint32_t ctx = 0) {
  rhn_admin_cmd c = Nic::cmd(op, ctx);
  c.u.handle.handle = handle;
  return c;
}

rhn_admin_cmd query_cmd(uint8_t op, uint64_t out, uint32_t len,
                        uint32_t handle = 0) {
  rhn_admin_cmd c = Nic::cmd(op);
  c.u.query.out_addr = out;
  c.u.query.out_len = len;
  c.u.query.handle = handle;
  return c;
}

}  // namespace

// ---- protocol ----

CONFORM_CASE(cmd_id_echo, "admin.protocol.cmd_id_echo", "admin",
             "the completion carries the command's cmd_id") {
  Nic n(t);
  CONFORM_UP(c, n);
  auto cpl = n.admin(Nic::cmd(RHN_ADMIN_CREATE_PD));
  CONFORM_THAT(c, cpl.has_value(), "admin CQ", "no completion");
  c.eq("cpl.cmd_id", n.last_cmd_id(), cpl->cmd_id);
}

CONFORM_CASE(in_order, "admin.protocol.in_order_batch", "admin",
             "several commands behind one kick complete in order, one each") {
  Nic n(t);
  CONFORM_UP(c, n);
  for (int i = 0; i < 3; i++) n.admin_post(Nic::cmd(RHN_ADMIN_CREATE_PD));
  n.admin_post(Nic::cmd(0x7e));  // refused, still answered in its turn
  n.kick_admin();
  const uint16_t first = uint16_t(n.last_cmd_id() - 3);
  for (int i = 0; i < 4; i++) {
    auto cpl = n.admin_reap();
    CONFORM_THAT(c, cpl.has_value(), "admin CQ slot " + std::to_string(i),
                 "no completion");
    CONFORM_EQ(c, "slot " + std::to_string(i) + " cmd_id", uint16_t(first + i),
               cpl->cmd_id);
    CONFORM_EQ(c, "slot " + std::to_string(i) + " status",
               i < 3 ? RHN_ADMIN_OK : RHN_ADMIN_BAD_OPCODE, cpl->status);
  }
}

CONFORM_CASE(owner_wrap, "admin.protocol.owner_wrap", "admin",
             "the completion owner bit flips on every lap of the ring") {
  Nic n(t);
  const std::string e = n.bring_up(2);  // 4 entries
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  for (uint32_t i = 0; i < 11; i++) {
    auto cpl = n.admin(Nic::cmd(RHN_ADMIN_CREATE_PD));
    CONFORM_THAT(
        c, cpl.has_value(), "command " + std::to_string(i),
        "no completion with owner bit " + std::to_string(((i >> 2) & 1) ^ 1));
    CONFORM_EQ(c, "command " + std::to_string(i) + " cmd_id", n.last_cmd_id(),
               cpl->cmd_id);
  }
  // The slot of command 8 (lap 2) holds owner 1 again, lap 1's held 0.
  rhn_admin_cpl cpl;
  t.mem_read(n.admin_cq() + 3 * RHN_ADMIN_CPL_SIZE, &cpl, sizeof(cpl));
  c.eq("owner of slot 3 after lap 1", 0, cpl.owner & 1);
}

CONFORM_CASE(admin_msix, "admin.protocol.msix_vector0", "admin",
             "completions raise MSI-X vector 0 with INTR_ENABLE") {
  Nic n(t);
  CONFORM_UP(c, n);
  const uint64_t before = t.msix_count(RHN_MSIX_ADMIN);
  n.run(Nic::cmd(RHN_ADMIN_CREATE_PD));
  t.settle();
  c.that(t.msix_count(RHN_MSIX_ADMIN) > before, "MSI-X vector 0",
         "no message after an admin completion");
}

CONFORM_CASE(admin_no_msix, "admin.protocol.no_msix_without_intr_enable",
             "admin", "no MSI-X message while CONTROL.INTR_ENABLE is clear") {
  Nic n(t);
  const std::string e = n.bring_up(5, false);
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  n.run(Nic::cmd(RHN_ADMIN_CREATE_PD));
  t.settle();
  c.eq("MSI-X vector 0 messages", 0, t.msix_count(RHN_MSIX_ADMIN));
}

CONFORM_CASE(bad_opcode, "admin.bad_opcode", "admin",
             "an unknown opcode completes BAD_OPCODE and is counted") {
  Nic n(t);
  CONFORM_UP(c, n);
  status_is(n, c, Nic::cmd(0x7e), RHN_ADMIN_BAD_OPCODE);
}

// ---- QUERY_DEVICE, QUERY_COUNTERS ----

CONFORM_CASE(query_device_ok, "admin.query_device.ok", "admin",
             "writes rhn_device_attr: node_id as NODE_ID, moderation limits "
             "both set or both 0") {
  Nic n(t);
  CONFORM_UP(c, n);
  const uint64_t out = n.alloc(256);
  n.fill(out, 256, 9);
  CONFORM_THAT(
      c,
      status_is(n, c,
                query_cmd(RHN_ADMIN_QUERY_DEVICE, out, sizeof(rhn_device_attr)),
                RHN_ADMIN_OK),
      "QUERY_DEVICE", "");
  rhn_device_attr a;
  t.mem_read(out, &a, sizeof(a));
  CONFORM_EQ(c, "node_id", n.r32(RHN_REG_NODE_ID) & 0xffff, a.node_id);
  CONFORM_THAT(c, (a.max_cq_mod_count == 0) == (a.max_cq_mod_period_us == 0),
               "max_cq_mod_count/max_cq_mod_period_us",
               "one is 0 and the other is not");
  CONFORM_THAT(c, a.max_qps > 0 && a.max_cqs > 0 && a.max_pds > 0,
               "max_qps/max_cqs/max_pds", "zero");
  c.eq("byte 128 (beyond the result) untouched", pattern_byte(9, 128),
       n.bytes(out + 128, 1)[0]);
}

CONFORM_CASE(query_device_short, "admin.query_device.short_buffer", "admin",
             "out_len below the result: BAD_PARAM, nothing written "
             "(README.md decision 9)") {
  Nic n(t);
  CONFORM_UP(c, n);
  const uint64_t out = n.alloc(256);
  if (!status_is(n, c, query_cmd(RHN_ADMIN_QUERY_DEVICE, out, 64),
                 RHN_ADMIN_BAD_PARAM))
    return;
  c.eq("first word of the buffer", 0, n.rd64(out));
}

CONFORM_CASE(query_device_dma, "admin.query_device.dma_error", "admin",
             "a result address no memory answers at: DMA_ERROR, or OK where "
             "result writes are posted; RHN_CNT_DMA_ERRORS counts it") {
  Nic n(t);
  CONFORM_UP(c, n);
  const uint64_t errors = n.counter(RHN_CNT_DMA_ERRORS);
  const uint8_t st = n.run(query_cmd(
      RHN_ADMIN_QUERY_DEVICE, t.bad_bus_address(), sizeof(rhn_device_attr)));
  c.that(st == RHN_ADMIN_DMA_ERROR || st == RHN_ADMIN_OK, "QUERY_DEVICE status",
         "DMA_ERROR or OK expected, got " + hex(st));
  t.settle();
  c.eq("RHN_CNT_DMA_ERRORS increase", 1,
       n.counter(RHN_CNT_DMA_ERRORS) - errors);
}

CONFORM_CASE(query_counters, "admin.query_counters.ok", "admin",
             "writes u64[RHN_CNT_COUNT], the values the counter registers "
             "read") {
  Nic n(t);
  CONFORM_UP(c, n);
  n.run(Nic::cmd(0x7e));  // BAD_ADMIN_CMDS = 1
  const uint32_t len = 8 * RHN_CNT_COUNT;
  const uint64_t out = n.alloc(len);
  CONFORM_EQ(c, "QUERY_COUNTERS status", RHN_ADMIN_OK,
             n.run(query_cmd(RHN_ADMIN_QUERY_COUNTERS, out, len)));
  CONFORM_EQ(c, "counters[RHN_CNT_BAD_ADMIN_CMDS]", 1,
             n.rd64(out + 8 * RHN_CNT_BAD_ADMIN_CMDS));
  for (unsigned i = 0; i < RHN_CNT_COUNT; i++) {
    const std::string what =
        "counters[" + std::to_string(i) + "] vs its register";
    if (i == RHN_CNT_DMA_WRITES || i == RHN_CNT_DMA_WRITE_BYTES ||
        i == RHN_CNT_MSIX_INTERRUPTS) {
      // Taken before the NIC writes the snapshot and the completion and
      // raises the admin vector: the register may be ahead, never behind.
      const uint64_t snap = n.rd64(out + 8 * i);
      CONFORM_THAT(c, n.counter(i) >= snap, what,
                   "register " + std::to_string(n.counter(i)) +
                       " below the snapshot's " + std::to_string(snap));
    } else if (i != RHN_CNT_COMPLETIONS && i != RHN_CNT_TLB_HITS) {
      CONFORM_EQ(c, what, n.counter(i), n.rd64(out + 8 * i));
    }
  }
}

CONFORM_CASE(query_counters_short, "admin.query_counters.short_buffer", "admin",
             "out_len below the result: BAD_PARAM") {
  Nic n(t);
  CONFORM_UP(c, n);
  const uint64_t out = n.alloc(4096);
  status_is(n, c, query_cmd(RHN_ADMIN_QUERY_COUNTERS, out, 8),
            RHN_ADMIN_BAD_PARAM);
}

// ---- single commands: the status each must complete with ----

namespace {

rhn_admin_cmd ctx_cmd(uint32_t account, uint32_t reserved = 0) {
  rhn_admin_cmd cc = Nic::cmd(RHN_ADMIN_CREATE_CONTEXT, 1);
  cc.u.create_context.account = account;
  cc.u.create_context.reserved = reserved;
  return cc;
}

rhn_admin_cmd phys_mr(uint32_t ctx, uint32_t pd, uint64_t addr) {
  return Nic::mr_cmd(ctx, pd, addr, 4096, RHN_ACCESS_LOCAL_WRITE);
}

rhn_admin_cmd modify_mr(uint32_t ctx, uint32_t key, uint32_t mask) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_MR, ctx);
  m.u.modify_mr.key = key;
  m.u.modify_mr.mask = mask;
  m.u.modify_mr.access = RHN_ACCESS_LOCAL_WRITE;
  return m;
}

rhn_admin_cmd mw_cmd(uint32_t pd, uint8_t type) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MW);
  m.u.create_mw.pdn = pd;
  m.u.create_mw.type = type;
  m.u.create_mw.key_variant = 0x17;
  return m;
}

rhn_admin_cmd cq_cmd(Fx& f, uint32_t ctx, uint8_t log_depth) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_CQ, ctx);
  m.u.create_cq.ring.addr = f.nic().alloc(4096);
  m.u.create_cq.record.addr = f.nic().alloc(8, 8);
  m.u.create_cq.eqn = f.eq().eqn;
  m.u.create_cq.log_depth = log_depth;
  return m;
}

rhn_admin_cmd qp_cmd(Fx& f, uint8_t type, uint8_t flags = 0) {
  Nic& n = f.nic();
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_QP);
  auto& q = m.u.create_qp;
  q.pdn = f.pd();
  q.send_cqn = q.recv_cqn = f.cq().cqn;
  q.srqn = RHN_NO_SRQ;
  q.type = type;
  q.sq_log_depth = q.rq_log_depth = 4;
  q.flags = flags;
  q.sq_ring.addr = n.alloc(4096);
  q.rq_ring.addr = n.alloc(4096);
  q.sq_record.addr = n.alloc(8, 8);
  q.rq_record.addr = n.alloc(8, 8);
  return m;
}

rhn_admin_cmd state_cmd(uint32_t qpn, uint8_t state) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_QP);
  m.u.modify_qp.qpn = qpn;
  m.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
  m.u.modify_qp.state = state;
  return m;
}

rhn_admin_cmd srq_cmd(Fx& f, uint8_t flags = 0) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_SRQ);
  m.u.create_srq.ring.addr = f.nic().alloc(4096);
  m.u.create_srq.record.addr = f.nic().alloc(8, 8);
  m.u.create_srq.pdn = f.pd();
  m.u.create_srq.log_depth = 4;
  m.u.create_srq.flags = flags;
  return m;
}

rhn_admin_cmd srq_limit(uint32_t srqn) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_SRQ);
  m.u.modify_srq.srqn = srqn;
  m.u.modify_srq.limit = 2;
  return m;
}

rhn_admin_cmd area_cmd(Fx& f, uint32_t area_key) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = area_key;
  m.u.register_area.key = f.buf().key;
  m.u.register_area.iova = f.buf().addr;
  m.u.register_area.length = 4096;
  return m;
}

rhn_admin_cmd groups_cmd(uint32_t count, uint16_t first, uint16_t second) {
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GROUPS);
  g.u.set_groups.count = count;
  for (int i = 0; i < 8; i++) g.u.set_groups.group[i] = uint16_t(10 + i);
  g.u.set_groups.group[0] = first;
  g.u.set_groups.group[1] = second;
  return g;
}

uint32_t twin(Fx& f) {
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 4096;
  return f.must(a, "ALLOC_TWIN");
}

rhn_admin_cmd twin_copy(uint8_t op, uint32_t h, uint32_t len, uint64_t off,
                        uint64_t addr) {
  rhn_admin_cmd w = Nic::cmd(op);
  w.u.twin_copy.handle = h;
  w.u.twin_copy.length = len;
  w.u.twin_copy.offset = off;
  w.u.twin_copy.addr = addr;
  return w;
}

rhn_admin_cmd gid_cmd(uint32_t ctx, uint32_t index, uint8_t type) {
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GID, ctx);
  g.u.set_gid.index = index;
  g.u.set_gid.type = type;
  g.u.set_gid.gid[0] = 0xfe;
  g.u.set_gid.gid[1] = 0x80;
  g.u.set_gid.gid[15] = 1;
  return g;
}

rhn_admin_cmd mcast_group(uint32_t ctx, uint16_t group, uint16_t count,
                          uint64_t list) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_SET_MCAST_GROUP, ctx);
  m.u.mcast_group.group = group;
  m.u.mcast_group.count = count;
  m.u.mcast_group.list_addr = list;
  return m;
}

rhn_admin_cmd attach_cmd(uint8_t op, uint32_t qpn, bool mcast) {
  rhn_admin_cmd m = Nic::cmd(op);
  m.u.mcast_attach.qpn = qpn;
  m.u.mcast_attach.mgid[0] = mcast ? 0xff : 0xfe;
  m.u.mcast_attach.mgid[1] = 0x0e;
  m.u.mcast_attach.mgid[15] = 0x42;
  return m;
}

constexpr uint32_t kNoSuch = 0x00abcdef;

struct Single {
  const char* name;
  const char* description;
  // Makes what the command needs (through Fx) and returns the command.
  std::function<rhn_admin_cmd(Fx&)> cmd;
  uint8_t status;
};

const Single kSingles[] = {
    // contexts
    {"admin.create_context.ok", "a context of account 1 is created",
     [](Fx&) { return ctx_cmd(1); }, RHN_ADMIN_OK},
    {"admin.create_context.exists", "creating a context that exists: EXISTS",
     [](Fx& f) {
       f.must(ctx_cmd(1), "CREATE_CONTEXT 1");
       return ctx_cmd(1);
     },
     RHN_ADMIN_EXISTS},
    {"admin.create_context.bad_account",
     "an account >= RHN_MAX_ACCOUNTS: BAD_PARAM",
     [](Fx&) { return ctx_cmd(RHN_MAX_ACCOUNTS); }, RHN_ADMIN_BAD_PARAM},
    {"admin.create_context.reserved_set", "reserved not 0: BAD_PARAM",
     [](Fx&) { return ctx_cmd(1, 1); }, RHN_ADMIN_BAD_PARAM},
    {"admin.destroy_context.ok", "an empty context is destroyed",
     [](Fx& f) {
       f.must(ctx_cmd(1), "CREATE_CONTEXT 1");
       return Nic::cmd(RHN_ADMIN_DESTROY_CONTEXT, 1);
     },
     RHN_ADMIN_OK},
    {"admin.destroy_context.busy",
     "a context that still holds a PD: BUSY (README.md decision 8)",
     [](Fx& f) {
       f.user_pd();
       return Nic::cmd(RHN_ADMIN_DESTROY_CONTEXT, 1);
     },
     RHN_ADMIN_BUSY},
    // PDs
    {"admin.destroy_pd.bad_handle",
     "destroying a PD that does not exist: BAD_HANDLE",
     [](Fx&) { return handle_cmd(RHN_ADMIN_DESTROY_PD, kNoSuch); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.destroy_pd.other_context", "a PD of another context: BAD_HANDLE",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_DESTROY_PD, f.user_pd()); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.destroy_pd.busy", "a PD still used by an MR: BUSY",
     [](Fx& f) {
       f.buf();
       return handle_cmd(RHN_ADMIN_DESTROY_PD, f.pd());
     },
     RHN_ADMIN_BUSY},
    // MRs
    {"admin.create_mr.physical_from_user",
     "levels 0 (bus addresses) from a user context: NOT_PERMITTED",
     [](Fx& f) { return phys_mr(1, f.user_pd(), f.nic().alloc(4096)); },
     RHN_ADMIN_NOT_PERMITTED},
    {"admin.create_mr.bad_levels", "levels above 3: BAD_PARAM",
     [](Fx& f) {
       rhn_admin_cmd m = phys_mr(0, f.pd(), f.nic().alloc(4096));
       m.u.create_mr.levels = 4;
       m.u.create_mr.table_addr = f.nic().alloc(4096);
       return m;
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.create_mr.bad_page_shift", "page_shift outside 12..30: BAD_PARAM",
     [](Fx& f) {
       rhn_admin_cmd m = phys_mr(0, f.pd(), 0x7000'0000'0000ull);
       m.u.create_mr.levels = 1;
       m.u.create_mr.table_addr = f.nic().alloc(4096);
       m.u.create_mr.page_shift = 11;
       return m;
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.create_mr.bad_pd", "a PD that does not exist: BAD_HANDLE",
     [](Fx& f) { return phys_mr(0, kNoSuch, f.nic().alloc(4096)); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.destroy_mr.ok", "an MR is destroyed by its key",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_DESTROY_MR, f.buf().key); },
     RHN_ADMIN_OK},
    {"admin.destroy_mr.bad_handle", "an MR destroyed twice: BAD_HANDLE",
     [](Fx& f) {
       f.must(handle_cmd(RHN_ADMIN_DESTROY_MR, f.buf().key), "DESTROY_MR");
       return handle_cmd(RHN_ADMIN_DESTROY_MR, f.buf().key);
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.invalidate_tlb.all",
     "INVALIDATE_TLB with 0xffffffff (every entry): OK",
     [](Fx&) { return handle_cmd(RHN_ADMIN_INVALIDATE_TLB, 0xffffffffu); },
     RHN_ADMIN_OK},
    {"admin.invalidate_tlb.one", "INVALIDATE_TLB of one region's key: OK",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_INVALIDATE_TLB, f.buf().key); },
     RHN_ADMIN_OK},
    {"admin.modify_mr.access", "MODIFY_MR with RHN_MODIFY_MR_ACCESS: OK",
     [](Fx& f) { return modify_mr(0, f.buf().key, RHN_MODIFY_MR_ACCESS); },
     RHN_ADMIN_OK},
    {"admin.modify_mr.no_mask", "MODIFY_MR with no mask bits: BAD_PARAM",
     [](Fx& f) { return modify_mr(0, f.buf().key, 0); }, RHN_ADMIN_BAD_PARAM},
    {"admin.modify_mr.unknown_mask",
     "MODIFY_MR with an unknown mask bit: BAD_PARAM",
     [](Fx& f) {
       return modify_mr(0, f.buf().key, RHN_MODIFY_MR_ACCESS | 0x100);
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.modify_mr.other_context",
     "MODIFY_MR of another context's key: BAD_HANDLE",
     [](Fx& f) { return modify_mr(0, f.user_buf().key, RHN_MODIFY_MR_ACCESS); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.modify_mr.pd_of_other_context",
     "MODIFY_MR to a PD of another context: BAD_HANDLE",
     [](Fx& f) {
       rhn_admin_cmd m = modify_mr(0, f.buf().key, RHN_MODIFY_MR_PD);
       m.u.modify_mr.pdn = f.user_pd();
       return m;
     },
     RHN_ADMIN_BAD_HANDLE},
    // windows
    {"admin.create_mw.type1", "a type 1 window is created",
     [](Fx& f) { return mw_cmd(f.pd(), 1); }, RHN_ADMIN_OK},
    {"admin.create_mw.type2", "a type 2 window is created",
     [](Fx& f) { return mw_cmd(f.pd(), 2); }, RHN_ADMIN_OK},
    {"admin.create_mw.bad_type", "a window type other than 1 or 2: BAD_PARAM",
     [](Fx& f) { return mw_cmd(f.pd(), 3); }, RHN_ADMIN_BAD_PARAM},
    // EQs and CQs
    {"admin.destroy_eq.ok", "an EQ is destroyed",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_DESTROY_EQ, f.eq().eqn); },
     RHN_ADMIN_OK},
    {"admin.destroy_eq.bad_handle",
     "destroying an EQ that does not exist: BAD_HANDLE",
     [](Fx&) { return handle_cmd(RHN_ADMIN_DESTROY_EQ, 0xabcd); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.create_cq.ok", "a CQ of 2^6 entries is created",
     [](Fx& f) { return cq_cmd(f, 0, 6); }, RHN_ADMIN_OK},
    {"admin.create_cq.physical_from_user",
     "a user context's CQ ring by bus address: NOT_PERMITTED",
     [](Fx& f) {
       f.user_pd();
       return cq_cmd(f, 1, 4);
     },
     RHN_ADMIN_NOT_PERMITTED},
    {"admin.destroy_cq.ok", "a CQ is destroyed",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_DESTROY_CQ, f.cq().cqn); },
     RHN_ADMIN_OK},
    {"admin.destroy_cq.bad_handle",
     "destroying a CQ that does not exist: BAD_HANDLE",
     [](Fx&) { return handle_cmd(RHN_ADMIN_DESTROY_CQ, 0xabcd); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.destroy_cq.busy", "a CQ used by a QP: BUSY",
     [](Fx& f) {
       f.qp();
       return handle_cmd(RHN_ADMIN_DESTROY_CQ, f.cq().cqn);
     },
     RHN_ADMIN_BUSY},
    // QPs
    {"admin.create_qp.ud", "a UD QP is created",
     [](Fx& f) { return qp_cmd(f, RHN_QP_UD); }, RHN_ADMIN_OK},
    {"admin.create_qp.uc", "a UC QP is created",
     [](Fx& f) { return qp_cmd(f, RHN_QP_UC); }, RHN_ADMIN_OK},
    {"admin.create_qp.endpoint", "an endpoint QP is created",
     [](Fx& f) { return qp_cmd(f, RHN_QP_ENDPOINT); }, RHN_ADMIN_OK},
    {"admin.create_qp.bad_flags", "unknown create flags: BAD_PARAM",
     [](Fx& f) { return qp_cmd(f, RHN_QP_RC, 0x80); }, RHN_ADMIN_BAD_PARAM},
    {"admin.create_qp.gsi_exists",
     "a second RHN_CREATE_QP_F_GSI QP: EXISTS (QPN 1 is taken)",
     [](Fx& f) {
       f.must(qp_cmd(f, RHN_QP_UD, RHN_CREATE_QP_F_GSI), "the first GSI QP");
       return qp_cmd(f, RHN_QP_UD, RHN_CREATE_QP_F_GSI);
     },
     RHN_ADMIN_EXISTS},
    {"admin.create_qp.gsi_not_ud", "RHN_CREATE_QP_F_GSI on an RC QP: BAD_PARAM",
     [](Fx& f) { return qp_cmd(f, RHN_QP_RC, RHN_CREATE_QP_F_GSI); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.create_qp.bad_cq", "a send CQ that does not exist: BAD_HANDLE",
     [](Fx& f) {
       rhn_admin_cmd m = qp_cmd(f, RHN_QP_RC);
       m.u.create_qp.send_cqn = 0xabcd;
       return m;
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.create_qp.bad_pd", "a PD that does not exist: BAD_HANDLE",
     [](Fx& f) {
       rhn_admin_cmd m = qp_cmd(f, RHN_QP_RC);
       m.u.create_qp.pdn = kNoSuch;
       return m;
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.create_qp.bad_srq", "an SRQ that does not exist: BAD_HANDLE",
     [](Fx& f) {
       rhn_admin_cmd m = qp_cmd(f, RHN_QP_RC);
       m.u.create_qp.srqn = 0xabcd;
       return m;
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.modify_qp.illegal_transition", "RESET to RTS: BAD_STATE",
     [](Fx& f) { return state_cmd(f.qp().qpn, RHN_QPS_RTS); },
     RHN_ADMIN_BAD_STATE},
    {"admin.modify_qp.reset_to_rtr", "RESET to RTR: BAD_STATE",
     [](Fx& f) { return state_cmd(f.qp().qpn, RHN_QPS_RTR); },
     RHN_ADMIN_BAD_STATE},
    {"admin.modify_qp.reset_to_err", "RESET to ERR is legal",
     [](Fx& f) { return state_cmd(f.qp().qpn, RHN_QPS_ERR); }, RHN_ADMIN_OK},
    {"admin.modify_qp.bad_handle", "a QP that does not exist: BAD_HANDLE",
     [](Fx&) { return state_cmd(0xabcd, RHN_QPS_INIT); }, RHN_ADMIN_BAD_HANDLE},
    {"admin.query_qp.bad_handle",
     "QUERY_QP of a QP that does not exist: BAD_HANDLE",
     [](Fx& f) {
       return query_cmd(RHN_ADMIN_QUERY_QP, f.nic().alloc(64), 32, 0xabcd);
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.query_qp.short_buffer",
     "QUERY_QP with out_len below 32: BAD_PARAM (README.md decision 9)",
     [](Fx& f) {
       return query_cmd(RHN_ADMIN_QUERY_QP, f.nic().alloc(64), 16, f.qp().qpn);
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.destroy_qp.ok", "a QP is destroyed",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_DESTROY_QP, f.qp().qpn); },
     RHN_ADMIN_OK},
    {"admin.destroy_qp.twice", "a QP destroyed twice: BAD_HANDLE",
     [](Fx& f) {
       const uint32_t qpn = f.qp().qpn;
       f.must(handle_cmd(RHN_ADMIN_DESTROY_QP, qpn), "DESTROY_QP");
       return handle_cmd(RHN_ADMIN_DESTROY_QP, qpn);
     },
     RHN_ADMIN_BAD_HANDLE},
    // SRQs
    {"admin.create_srq.ok", "an SRQ is created",
     [](Fx& f) { return srq_cmd(f); }, RHN_ADMIN_OK},
    {"admin.create_srq.bad_flags", "unknown SRQ flags: BAD_PARAM",
     [](Fx& f) { return srq_cmd(f, 0x40); }, RHN_ADMIN_BAD_PARAM},
    {"admin.modify_srq.ok", "MODIFY_SRQ re-arms the limit: OK",
     [](Fx& f) { return srq_limit(f.must(srq_cmd(f), "CREATE_SRQ")); },
     RHN_ADMIN_OK},
    {"admin.modify_srq.bad_handle",
     "MODIFY_SRQ of an SRQ that does not exist: BAD_HANDLE",
     [](Fx&) { return srq_limit(0xabcd); }, RHN_ADMIN_BAD_HANDLE},
    {"admin.destroy_srq.ok", "an SRQ is destroyed",
     [](Fx& f) {
       return handle_cmd(RHN_ADMIN_DESTROY_SRQ, f.must(srq_cmd(f), "SRQ"));
     },
     RHN_ADMIN_OK},
    {"admin.destroy_srq.busy", "an SRQ a QP uses: BUSY",
     [](Fx& f) {
       const uint32_t srqn = f.must(srq_cmd(f), "CREATE_SRQ");
       f.qp(RHN_QP_RC, srqn);
       return handle_cmd(RHN_ADMIN_DESTROY_SRQ, srqn);
     },
     RHN_ADMIN_BUSY},
    // areas and groups
    {"admin.register_area.ok", "an area in group 0 registers",
     [](Fx& f) { return area_cmd(f, RHN_AREA_KEY(0, 5)); }, RHN_ADMIN_OK},
    {"admin.register_area.exists", "the same area ID again: EXISTS",
     [](Fx& f) {
       f.must(area_cmd(f, RHN_AREA_KEY(0, 5)), "REGISTER_AREA");
       return area_cmd(f, RHN_AREA_KEY(0, 5));
     },
     RHN_ADMIN_EXISTS},
    {"admin.register_area.foreign_group",
     "an area in a group the context is not in: NOT_PERMITTED",
     [](Fx& f) { return area_cmd(f, RHN_AREA_KEY(5, 1)); },
     RHN_ADMIN_NOT_PERMITTED},
    {"admin.register_area.after_set_groups",
     "after SET_GROUPS the context registers areas in that group",
     [](Fx& f) {
       f.must(groups_cmd(1, 5, 0), "SET_GROUPS");
       return area_cmd(f, RHN_AREA_KEY(5, 1));
     },
     RHN_ADMIN_OK},
    {"admin.unregister_area.ok", "a registered area unregisters",
     [](Fx& f) {
       f.must(area_cmd(f, RHN_AREA_KEY(0, 5)), "REGISTER_AREA");
       return handle_cmd(RHN_ADMIN_UNREGISTER_AREA, RHN_AREA_KEY(0, 5));
     },
     RHN_ADMIN_OK},
    {"admin.unregister_area.bad_handle",
     "unregistering an area that does not exist: BAD_HANDLE",
     [](Fx&) {
       return handle_cmd(RHN_ADMIN_UNREGISTER_AREA, RHN_AREA_KEY(0, 77));
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.set_groups.ok", "SET_GROUPS with two distinct groups: OK",
     [](Fx&) { return groups_cmd(2, 3, 4); }, RHN_ADMIN_OK},
    {"admin.set_groups.bad_count",
     "more than RHN_MAX_GROUPS_PER_CONTEXT groups: BAD_PARAM",
     [](Fx&) { return groups_cmd(RHN_MAX_GROUPS_PER_CONTEXT + 1, 1, 2); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.set_groups.duplicate",
     "a group listed twice (not distinct): BAD_PARAM",
     [](Fx&) { return groups_cmd(2, 4, 4); }, RHN_ADMIN_BAD_PARAM},
    {"admin.set_groups.zero_group",
     "group 0 in the list (must be nonzero): BAD_PARAM",
     [](Fx&) { return groups_cmd(1, 0, 0); }, RHN_ADMIN_BAD_PARAM},
    {"admin.set_groups.drops_used_group",
     "a list that drops a group the context has an area in: BUSY",
     [](Fx& f) {
       f.must(groups_cmd(1, 5, 0), "SET_GROUPS");
       f.must(area_cmd(f, RHN_AREA_KEY(5, 1)), "REGISTER_AREA");
       return groups_cmd(1, 6, 0);
     },
     RHN_ADMIN_BUSY},
    // twin memory
    {"admin.alloc_twin.ok", "ALLOC_TWIN of 8 KiB: OK",
     [](Fx&) {
       rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
       a.u.alloc_twin.length = 8192;
       return a;
     },
     RHN_ADMIN_OK},
    {"admin.alloc_twin.zero_length", "ALLOC_TWIN of 0 bytes: BAD_PARAM",
     [](Fx&) { return Nic::cmd(RHN_ADMIN_ALLOC_TWIN); }, RHN_ADMIN_BAD_PARAM},
    {"admin.free_twin.ok", "FREE_TWIN of a twin of the context: OK",
     [](Fx& f) { return handle_cmd(RHN_ADMIN_FREE_TWIN, twin(f)); },
     RHN_ADMIN_OK},
    {"admin.free_twin.bad_handle",
     "FREE_TWIN of a handle that is not the context's: BAD_HANDLE",
     [](Fx&) { return handle_cmd(RHN_ADMIN_FREE_TWIN, 0x00050003); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.twin_copy.zero_length", "TWIN_WRITE of 0 bytes: BAD_PARAM",
     [](Fx& f) {
       return twin_copy(RHN_ADMIN_TWIN_WRITE, twin(f), 0, 0,
                        f.nic().alloc(4096));
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.twin_copy.out_of_range", "TWIN_READ past the twin's end: BAD_PARAM",
     [](Fx& f) {
       return twin_copy(RHN_ADMIN_TWIN_READ, twin(f), 200, 4000,
                        f.nic().alloc(4096));
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.twin_copy.too_long",
     "TWIN_WRITE beyond RHN_TWIN_COPY_MAX: BAD_PARAM",
     [](Fx& f) {
       return twin_copy(RHN_ADMIN_TWIN_WRITE, twin(f), RHN_TWIN_COPY_MAX + 1, 0,
                        f.nic().alloc(4096));
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.twin_copy.bad_handle",
     "TWIN_READ of a handle that is no twin of the context: BAD_HANDLE",
     [](Fx& f) {
       return twin_copy(RHN_ADMIN_TWIN_READ, 0x00050003, 64, 0,
                        f.nic().alloc(4096));
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.twin_copy.dma_error",
     "TWIN_WRITE from an address no memory answers at: DMA_ERROR",
     [](Fx& f) {
       return twin_copy(RHN_ADMIN_TWIN_WRITE, twin(f), 64, 0,
                        f.nic().target().bad_bus_address());
     },
     RHN_ADMIN_DMA_ERROR},
    // GIDs, links, probes
    {"admin.set_gid.ok", "SET_GID entry 0: OK",
     [](Fx&) { return gid_cmd(0, 0, RHN_GID_ROCE_V2); }, RHN_ADMIN_OK},
    {"admin.set_gid.bad_index", "an index >= RHN_GID_TABLE_LEN: BAD_PARAM",
     [](Fx&) { return gid_cmd(0, RHN_GID_TABLE_LEN, RHN_GID_ROCE_V1); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.set_gid.bad_type", "an unknown GID type: BAD_PARAM",
     [](Fx&) { return gid_cmd(0, 1, 7); }, RHN_ADMIN_BAD_PARAM},
    {"admin.set_gid.reserved_set", "reserved bytes not 0: BAD_PARAM",
     [](Fx&) {
       rhn_admin_cmd g = gid_cmd(0, 1, RHN_GID_ROCE_V1);
       g.u.set_gid.reserved[1] = 1;
       return g;
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.set_gid.user_context", "SET_GID from a user context: NOT_PERMITTED",
     [](Fx& f) {
       f.user_pd();
       return gid_cmd(1, 0, RHN_GID_ROCE_V1);
     },
     RHN_ADMIN_NOT_PERMITTED},
    {"admin.set_link.ok", "SET_LINK up: OK",
     [](Fx&) {
       rhn_admin_cmd l = Nic::cmd(RHN_ADMIN_SET_LINK);
       l.u.set_link.up = 1;
       return l;
     },
     RHN_ADMIN_OK},
    {"admin.probe_node.bad_node",
     "PROBE_NODE of a node beyond the fabric: BAD_PARAM",
     [](Fx&) { return handle_cmd(RHN_ADMIN_PROBE_NODE, RHN_MAX_NODES + 5); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.probe_node.user_context",
     "PROBE_NODE from a user context: NOT_PERMITTED",
     [](Fx& f) {
       f.user_pd();
       return handle_cmd(RHN_ADMIN_PROBE_NODE, 1, 1);
     },
     RHN_ADMIN_NOT_PERMITTED},
    // multicast
    {"admin.set_mcast_group.user_context",
     "SET_MCAST_GROUP from a user context: NOT_PERMITTED",
     [](Fx& f) {
       f.user_pd();
       return mcast_group(1, RHN_NODE_MCAST_FIRST, 0, 0);
     },
     RHN_ADMIN_NOT_PERMITTED},
    {"admin.set_mcast_group.bad_group",
     "a group ID outside 0xf000..0xf7ff: BAD_PARAM",
     [](Fx& f) { return mcast_group(0, 0x1234, 1, f.nic().alloc(64)); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.set_mcast_group.bad_count",
     "a count above RHN_MCAST_SWITCH_MAX_MEMBERS: BAD_PARAM",
     [](Fx& f) {
       return mcast_group(0, RHN_NODE_MCAST_FIRST,
                          RHN_MCAST_SWITCH_MAX_MEMBERS + 1,
                          f.nic().alloc(4096));
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.set_mcast_group.remove_unknown",
     "removing (count 0) a group the NIC does not have: BAD_HANDLE",
     [](Fx&) { return mcast_group(0, RHN_NODE_MCAST_FIRST + 3, 0, 0); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.set_mcast_group.dma_error",
     "a member list no memory answers at: DMA_ERROR",
     [](Fx& f) {
       return mcast_group(0, RHN_NODE_MCAST_FIRST, 2,
                          f.nic().target().bad_bus_address());
     },
     RHN_ADMIN_DMA_ERROR},
    {"admin.attach_mcast.bad_qp",
     "ATTACH_MCAST of a QP that does not exist: BAD_HANDLE",
     [](Fx&) { return attach_cmd(RHN_ADMIN_ATTACH_MCAST, 0xabcd, true); },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.attach_mcast.not_ud", "ATTACH_MCAST of an RC QP: BAD_PARAM",
     [](Fx& f) { return attach_cmd(RHN_ADMIN_ATTACH_MCAST, f.qp().qpn, true); },
     RHN_ADMIN_BAD_PARAM},
    {"admin.attach_mcast.not_mcast_gid",
     "ATTACH_MCAST with a unicast GID: BAD_PARAM",
     [](Fx& f) {
       return attach_cmd(RHN_ADMIN_ATTACH_MCAST, f.qp(RHN_QP_UD).qpn, false);
     },
     RHN_ADMIN_BAD_PARAM},
    {"admin.detach_mcast.not_attached",
     "DETACH_MCAST of a QP not attached to the MGID: BAD_HANDLE",
     [](Fx& f) {
       return attach_cmd(RHN_ADMIN_DETACH_MCAST, f.qp(RHN_QP_UD).qpn, true);
     },
     RHN_ADMIN_BAD_HANDLE},
    {"admin.pd_mapped.bad_handle",
     "PD_MAPPED for a key that is no on-demand MR: BAD_HANDLE",
     [](Fx&) {
       rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_PD_MAPPED);
       m.u.pd_mapped.key = 0x1234;
       m.u.pd_mapped.num_pages = 1;
       return m;
     },
     RHN_ADMIN_BAD_HANDLE},
};

void run_single(const Single& s, Target& t, Check& c) {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const rhn_admin_cmd cmd = s.cmd(f);
  if (!c.ok()) return;
  status_is(n, c, cmd, s.status);
}
const bool single_cases = register_rows(kSingles, "admin", "", run_single);

}  // namespace

// ---- commands whose results are checked ----

CONFORM_CASE(pd_ok, "admin.create_pd.distinct", "admin",
             "two PDs get different numbers") {
  Nic n(t);
  CONFORM_UP(c, n);
  uint32_t a = 0, b = 0;
  CONFORM_THAT(c, n.create_pd(0, &a) && n.create_pd(0, &b), "CREATE_PD",
               n.error());
  c.that(a != b, "pdn", "two PDs share number " + hex(a));
}

CONFORM_CASE(mr_key, "admin.create_mr.key_format", "admin",
             "the key is mr_index << 8 | key_variant, index not 0") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const Buf& b = f.buf();
  if (!c.ok()) return;
  CONFORM_EQ(c, "key & RHN_KEY_VARIANT_MASK", 0x5a,
             b.key & RHN_KEY_VARIANT_MASK);
  c.that((b.key >> RHN_KEY_INDEX_SHIFT) != 0, "key index",
         "index 0 was issued (" + hex(b.key) + ")");
}

CONFORM_CASE(mr_user_ok, "admin.create_mr.translated_user", "admin",
             "a user context's one-level translated MR is created") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  f.user_buf();
}

CONFORM_CASE(mw_key, "admin.create_mw.key_variant", "admin",
             "a window's key carries the variant asked for; it destroys") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t key = f.must(mw_cmd(f.pd(), 1), "CREATE_MW");
  if (!c.ok()) return;
  CONFORM_EQ(c, "window key variant", 0x17, key & RHN_KEY_VARIANT_MASK);
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_MW, key), RHN_ADMIN_OK);
}

CONFORM_CASE(eq_user, "admin.create_eq.user_context", "admin",
             "only the kernel context creates EQs (bus-address rings)") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  f.user_pd();
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_EQ, 1);
  m.u.create_eq.ring_addr = n.alloc(4096);
  m.u.create_eq.vector = 1;
  m.u.create_eq.log_depth = 4;
  if (!c.ok()) return;
  c.that(n.run(m) != RHN_ADMIN_OK, "CREATE_EQ from context 1",
         "accepted (status OK)");
}

CONFORM_CASE(cq_size, "admin.create_cq.bad_size", "admin",
             "log_depth above QUERY_DEVICE's max_cq_log_depth: BAD_PARAM") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  rhn_device_attr a;
  CONFORM_EQ(c, "QUERY_DEVICE", RHN_ADMIN_OK, n.query_device(&a));
  CONFORM_THAT(c, a.max_cq_log_depth > 0 && a.max_cq_log_depth < 31,
               "max_cq_log_depth", "reads " + hex(a.max_cq_log_depth));
  const rhn_admin_cmd m =
      cq_cmd(f, 0, static_cast<uint8_t>(a.max_cq_log_depth + 1));
  if (!c.ok()) return;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(qp_ok, "admin.create_qp.rc", "admin",
             "an RC QP gets a QPN of at least 2 and starts in RESET") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t qpn = f.must(qp_cmd(f, RHN_QP_RC), "CREATE_QP");
  if (!c.ok()) return;
  CONFORM_THAT(c, qpn >= 2, "qpn", hex(qpn) + " below 2");
  const uint64_t out = n.alloc(64);
  CONFORM_EQ(c, "QUERY_QP status", RHN_ADMIN_OK,
             n.run(query_cmd(RHN_ADMIN_QUERY_QP, out, 32, qpn)));
  rhn_qp_attr a;
  t.mem_read(out, &a, sizeof(a));
  CONFORM_EQ(c, "rhn_qp_attr.qpn", qpn, a.qpn);
  CONFORM_EQ(c, "rhn_qp_attr.state", RHN_QPS_RESET, a.state);
  c.eq("rhn_qp_attr.type", RHN_QP_RC, a.type);
}

CONFORM_CASE(qp_gsi, "admin.create_qp.gsi", "admin",
             "RHN_CREATE_QP_F_GSI on a UD QP of the kernel gives QPN 1") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t qpn =
      f.must(qp_cmd(f, RHN_QP_UD, RHN_CREATE_QP_F_GSI), "CREATE_QP GSI");
  if (!c.ok()) return;
  c.eq("GSI qpn", RHN_QPN_GSI, qpn);
}

CONFORM_CASE(qp_bad_type, "admin.create_qp.bad_type", "admin",
             "a QP type the header does not define: refused") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const rhn_admin_cmd m = qp_cmd(f, 9);
  if (!c.ok()) return;
  c.that(n.run(m) != RHN_ADMIN_OK, "CREATE_QP type 9", "accepted (status OK)");
}

CONFORM_CASE(qp_round_robin, "admin.create_qp.no_quick_reuse", "admin",
             "a destroyed QP's number does not come back at once") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t a = f.qp().qpn;
  f.must(handle_cmd(RHN_ADMIN_DESTROY_QP, a), "DESTROY_QP");
  const uint32_t b = f.qp().qpn;
  if (!c.ok()) return;
  c.that(a != b, "qpn", "the destroyed QP's number " + hex(a) + " came back");
}

CONFORM_CASE(qp_rts, "admin.modify_qp.to_rts", "admin",
             "RESET, INIT, RTR, RTS: QUERY_QP shows RTS and the destination") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const Qp qp = f.qp();
  if (!c.ok()) return;
  CONFORM_THAT(c, n.activate(qp, 7, 0x123), "RESET->INIT->RTR->RTS", n.error());
  const uint64_t out = n.alloc(64);
  CONFORM_EQ(c, "QUERY_QP status", RHN_ADMIN_OK,
             n.run(query_cmd(RHN_ADMIN_QUERY_QP, out, 32, qp.qpn)));
  rhn_qp_attr a;
  t.mem_read(out, &a, sizeof(a));
  CONFORM_EQ(c, "state", RHN_QPS_RTS, a.state);
  CONFORM_EQ(c, "dest_node", 7, a.dest_node);
  CONFORM_EQ(c, "dest_qpn", 0x123, a.dest_qpn);
  c.eq("reserved[0]", 0, a.reserved[0]);
}

CONFORM_CASE(qp_to_err, "admin.modify_qp.rts_to_err", "admin",
             "RTS to ERR is legal") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const Qp qp = f.qp();
  if (!c.ok()) return;
  CONFORM_THAT(c, n.activate(qp, 7, 0x123), "activate", n.error());
  c.eq("MODIFY_QP to ERR", RHN_ADMIN_OK,
       n.modify_qp(qp, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
}

CONFORM_CASE(twin_roundtrip, "admin.twin.write_read", "admin",
             "TWIN_WRITE then TWIN_READ bring the bytes back") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t h = twin(f);
  const uint64_t src = n.alloc(4096), dst = n.alloc(4096);
  n.fill(src, 4096, 3);
  if (!c.ok()) return;
  if (!status_is(n, c, twin_copy(RHN_ADMIN_TWIN_WRITE, h, 1000, 3000, src),
                 RHN_ADMIN_OK))
    return;
  if (!status_is(n, c, twin_copy(RHN_ADMIN_TWIN_READ, h, 1000, 3000, dst),
                 RHN_ADMIN_OK))
    return;
  const auto got = n.bytes(dst, 1000);
  for (size_t i = 0; i < got.size(); i++)
    CONFORM_EQ(c, "byte " + std::to_string(i) + " read back",
               pattern_byte(3, i), got[i]);
}

CONFORM_CASE(probe_self, "admin.probe_node.self", "admin",
             "PROBE_NODE of the own node: OK, then PROBE_DONE with "
             "RHN_SYN_NONE on the first EQ") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  Eq& eq = f.eq();
  if (!c.ok()) return;
  const uint32_t node = n.r32(RHN_REG_NODE_ID) & 0xffff;
  if (!status_is(n, c, handle_cmd(RHN_ADMIN_PROBE_NODE, node), RHN_ADMIN_OK))
    return;
  rhn_eqe ev;
  do {
    CONFORM_THAT(c, n.wait_eqe(eq, &ev), "EQ", "no RHN_EQE_PROBE_DONE");
  } while (ev.type != RHN_EQE_PROBE_DONE);
  CONFORM_EQ(c, "PROBE_DONE object", node, ev.object);
  c.eq("PROBE_DONE data", RHN_SYN_NONE, ev.data);
}

CONFORM_CASE(attach_ok, "admin.attach_mcast.ok_twice", "admin",
             "attaching a UD QP twice to one MGID is OK, one entry "
             "(RHN_CNT_MCAST_ATTACHES counts once); it detaches") {
  Nic n(t);
  CONFORM_UP(c, n);
  Fx f(n, c);
  const uint32_t qpn = f.qp(RHN_QP_UD).qpn;
  if (!c.ok()) return;
  for (int i = 0; i < 2; i++)
    if (!status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, qpn, true),
                   RHN_ADMIN_OK))
      return;
  CONFORM_EQ(c, "RHN_CNT_MCAST_ATTACHES", 1, n.counter(RHN_CNT_MCAST_ATTACHES));
  status_is(n, c, attach_cmd(RHN_ADMIN_DETACH_MCAST, qpn, true), RHN_ADMIN_OK);
}

}  // namespace rhinet::conform
