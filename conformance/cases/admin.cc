// SPDX-License-Identifier: BSD-2-Clause
// The admin queue (admin.md): the ring protocol, each command's happy path
// and its documented error statuses. Every refused command must also count
// in RHN_CNT_BAD_ADMIN_CMDS.
#include <cstring>
#include <string>

#include "case.h"
#include "lib/nic.h"

namespace rhinet::conform {
namespace {

#define UP(n)                                    \
  do {                                           \
    const std::string e_ = (n).bring_up();       \
    CONFORM_THAT(c, e_.empty(), "bring-up", e_); \
  } while (0)

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

// A user context 1 with a PD.
bool user_ctx(Nic& n, Check& c, uint32_t* pdn) {
  if (!c.that(n.create_context(1), "CREATE_CONTEXT 1", n.error())) return false;
  return c.that(n.create_pd(1, pdn), "CREATE_PD in context 1", n.error());
}

rhn_device_attr query_device(Nic& n) {
  rhn_device_attr a;
  std::memset(&a, 0, sizeof(a));
  const uint64_t out = n.alloc(sizeof(a));
  if (n.run(query_cmd(RHN_ADMIN_QUERY_DEVICE, out, sizeof(a))) == RHN_ADMIN_OK)
    n.target().mem_read(out, &a, sizeof(a));
  return a;
}

}  // namespace

// ---- protocol ----

CONFORM_CASE(cmd_id_echo, "admin.protocol.cmd_id_echo", "admin",
             "the completion carries the command's cmd_id") {
  Nic n(t);
  UP(n);
  auto cpl = n.admin(Nic::cmd(RHN_ADMIN_CREATE_PD));
  CONFORM_THAT(c, cpl.has_value(), "admin CQ", "no completion");
  c.eq("cpl.cmd_id", n.last_cmd_id(), cpl->cmd_id);
}

CONFORM_CASE(in_order, "admin.protocol.in_order_batch", "admin",
             "several commands behind one kick complete in order, one each") {
  Nic n(t);
  UP(n);
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
  UP(n);
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
  UP(n);
  status_is(n, c, Nic::cmd(0x7e), RHN_ADMIN_BAD_OPCODE);
}

// ---- QUERY_DEVICE, QUERY_COUNTERS ----

CONFORM_CASE(query_device_ok, "admin.query_device.ok", "admin",
             "writes rhn_device_attr: node_id as NODE_ID, reserved 0") {
  Nic n(t);
  UP(n);
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
  for (int i = 0; i < 3; i++)
    CONFORM_EQ(c, "reserved[" + std::to_string(i) + "]", 0, a.reserved[i]);
  CONFORM_THAT(c, a.max_qps > 0 && a.max_cqs > 0 && a.max_pds > 0,
               "max_qps/max_cqs/max_pds", "zero");
  c.eq("byte 128 (beyond the result) untouched", pattern_byte(9, 128),
       n.bytes(out + 128, 1)[0]);
}

CONFORM_CASE(query_device_short, "admin.query_device.short_buffer", "admin",
             "out_len below the result: BAD_PARAM, nothing written "
             "(README.md decision 9)") {
  Nic n(t);
  UP(n);
  const uint64_t out = n.alloc(256);
  if (!status_is(n, c, query_cmd(RHN_ADMIN_QUERY_DEVICE, out, 64),
                 RHN_ADMIN_BAD_PARAM))
    return;
  c.eq("first word of the buffer", 0, n.rd64(out));
}

CONFORM_CASE(query_device_dma, "admin.query_device.dma_error", "admin",
             "a result address no memory answers at: DMA_ERROR") {
  Nic n(t);
  UP(n);
  status_is(n, c,
            query_cmd(RHN_ADMIN_QUERY_DEVICE, t.bad_bus_address(),
                      sizeof(rhn_device_attr)),
            RHN_ADMIN_DMA_ERROR);
}

CONFORM_CASE(query_counters, "admin.query_counters.ok", "admin",
             "writes u64[RHN_CNT_COUNT], the values the counter registers "
             "read") {
  Nic n(t);
  UP(n);
  n.run(Nic::cmd(0x7e));  // BAD_ADMIN_CMDS = 1
  const uint32_t len = 8 * RHN_CNT_COUNT;
  const uint64_t out = n.alloc(len);
  CONFORM_EQ(c, "QUERY_COUNTERS status", RHN_ADMIN_OK,
             n.run(query_cmd(RHN_ADMIN_QUERY_COUNTERS, out, len)));
  CONFORM_EQ(c, "counters[RHN_CNT_BAD_ADMIN_CMDS]", 1,
             n.rd64(out + 8 * RHN_CNT_BAD_ADMIN_CMDS));
  for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
    if (i != RHN_CNT_COMPLETIONS && i != RHN_CNT_TLB_HITS)
      CONFORM_EQ(c, "counters[" + std::to_string(i) + "] vs its register",
                 n.counter(i), n.rd64(out + 8 * i));
}

CONFORM_CASE(query_counters_short, "admin.query_counters.short_buffer", "admin",
             "out_len below the result: BAD_PARAM") {
  Nic n(t);
  UP(n);
  const uint64_t out = n.alloc(4096);
  status_is(n, c, query_cmd(RHN_ADMIN_QUERY_COUNTERS, out, 8),
            RHN_ADMIN_BAD_PARAM);
}

// ---- contexts ----

CONFORM_CASE(ctx_ok, "admin.create_context.ok", "admin",
             "a context of account 1 is created") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd cc = Nic::cmd(RHN_ADMIN_CREATE_CONTEXT, 1);
  cc.u.create_context.account = 1;
  status_is(n, c, cc, RHN_ADMIN_OK);
}

CONFORM_CASE(ctx_exists, "admin.create_context.exists", "admin",
             "creating a context that exists: EXISTS") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  rhn_admin_cmd cc = Nic::cmd(RHN_ADMIN_CREATE_CONTEXT, 1);
  cc.u.create_context.account = 1;
  status_is(n, c, cc, RHN_ADMIN_EXISTS);
}

CONFORM_CASE(ctx_account, "admin.create_context.bad_account", "admin",
             "an account >= RHN_MAX_ACCOUNTS: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd cc = Nic::cmd(RHN_ADMIN_CREATE_CONTEXT, 1);
  cc.u.create_context.account = RHN_MAX_ACCOUNTS;
  status_is(n, c, cc, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(ctx_reserved, "admin.create_context.reserved_set", "admin",
             "reserved not 0: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd cc = Nic::cmd(RHN_ADMIN_CREATE_CONTEXT, 1);
  cc.u.create_context.account = 1;
  cc.u.create_context.reserved = 1;
  status_is(n, c, cc, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(ctx_destroy, "admin.destroy_context.ok", "admin",
             "an empty context is destroyed and can be created again") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  if (!status_is(n, c, Nic::cmd(RHN_ADMIN_DESTROY_CONTEXT, 1), RHN_ADMIN_OK))
    return;
  c.that(n.create_context(1), "CREATE_CONTEXT 1 again", n.error());
}

CONFORM_CASE(ctx_destroy_busy, "admin.destroy_context.busy", "admin",
             "a context that still holds a PD: BUSY (README.md decision 8)") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  if (!user_ctx(n, c, &pd)) return;
  status_is(n, c, Nic::cmd(RHN_ADMIN_DESTROY_CONTEXT, 1), RHN_ADMIN_BUSY);
}

// ---- PDs ----

CONFORM_CASE(pd_ok, "admin.create_pd.ok", "admin",
             "two PDs get different numbers; both destroy") {
  Nic n(t);
  UP(n);
  uint32_t a = 0, b = 0;
  CONFORM_THAT(c, n.create_pd(0, &a) && n.create_pd(0, &b), "CREATE_PD",
               n.error());
  CONFORM_THAT(c, a != b, "pdn", "two PDs share number " + hex(a));
  if (!status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_PD, a), RHN_ADMIN_OK))
    return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_PD, b), RHN_ADMIN_OK);
}

CONFORM_CASE(pd_bad, "admin.destroy_pd.bad_handle", "admin",
             "destroying a PD that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_PD, 0x00abcdef),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(pd_other_ctx, "admin.destroy_pd.other_context", "admin",
             "a PD of another context: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  if (!user_ctx(n, c, &pd)) return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_PD, pd, 0),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(pd_busy, "admin.destroy_pd.busy", "admin",
             "a PD still used by an MR: BUSY") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_PD, pd), RHN_ADMIN_BUSY);
}

// ---- MRs ----

CONFORM_CASE(mr_key, "admin.create_mr.key_format", "admin",
             "the key is mr_index << 8 | key_variant, index not 0") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  CONFORM_EQ(c, "key & RHN_KEY_VARIANT_MASK", 0x5a,
             b.key & RHN_KEY_VARIANT_MASK);
  c.that((b.key >> RHN_KEY_INDEX_SHIFT) != 0, "key index",
         "index 0 was issued (" + hex(b.key) + ")");
}

CONFORM_CASE(mr_user_ok, "admin.create_mr.translated_user", "admin",
             "a user context's one-level translated MR is created") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  if (!user_ctx(n, c, &pd)) return;
  Buf b;
  c.that(n.make_user_buf(1, pd, 8192, 0x7000'0000'1000ull, &b), "CREATE_MR",
         n.error());
}

static rhn_admin_cmd phys_mr(uint32_t ctx, uint32_t pd, uint64_t addr) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MR, ctx);
  m.u.create_mr.pdn = pd;
  m.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE;
  m.u.create_mr.iova = addr;
  m.u.create_mr.length = 4096;
  m.u.create_mr.num_pages = 1;
  m.u.create_mr.page_shift = 12;
  m.u.create_mr.levels = 0;
  return m;
}

CONFORM_CASE(mr_phys_user, "admin.create_mr.physical_from_user", "admin",
             "levels 0 (bus addresses) from a user context: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  if (!user_ctx(n, c, &pd)) return;
  status_is(n, c, phys_mr(1, pd, n.alloc(4096)), RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(mr_levels, "admin.create_mr.bad_levels", "admin",
             "levels above 3: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  rhn_admin_cmd m = phys_mr(0, pd, n.alloc(4096));
  m.u.create_mr.levels = 4;
  m.u.create_mr.table_addr = n.alloc(4096);
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(mr_page_shift, "admin.create_mr.bad_page_shift", "admin",
             "page_shift outside 12..30: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  rhn_admin_cmd m = phys_mr(0, pd, 0x7000'0000'0000ull);
  m.u.create_mr.levels = 1;
  m.u.create_mr.table_addr = n.alloc(4096);
  m.u.create_mr.page_shift = 11;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(mr_bad_pd, "admin.create_mr.bad_pd", "admin",
             "a PD that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, phys_mr(0, 0x00abcdef, n.alloc(4096)), RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(mr_destroy, "admin.destroy_mr.ok", "admin",
             "an MR is destroyed by its key; again: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  if (!status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_MR, b.key), RHN_ADMIN_OK))
    return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_MR, b.key),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(tlb_all, "admin.invalidate_tlb.all", "admin",
             "INVALIDATE_TLB with 0xffffffff (every entry): OK") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_INVALIDATE_TLB, 0xffffffffu),
            RHN_ADMIN_OK);
}

CONFORM_CASE(modify_mr_ok, "admin.modify_mr.access", "admin",
             "MODIFY_MR with RHN_MODIFY_MR_ACCESS: OK, key unchanged") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_MR);
  m.u.modify_mr.key = b.key;
  m.u.modify_mr.mask = RHN_MODIFY_MR_ACCESS;
  m.u.modify_mr.access = RHN_ACCESS_LOCAL_WRITE;
  if (!status_is(n, c, m, RHN_ADMIN_OK)) return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_MR, b.key), RHN_ADMIN_OK);
}

CONFORM_CASE(modify_mr_mask, "admin.modify_mr.no_mask", "admin",
             "MODIFY_MR with no mask bits: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_MR);
  m.u.modify_mr.key = b.key;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(modify_mr_unknown, "admin.modify_mr.unknown_mask", "admin",
             "MODIFY_MR with an unknown mask bit: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_MR);
  m.u.modify_mr.key = b.key;
  m.u.modify_mr.mask = RHN_MODIFY_MR_ACCESS | 0x100;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(modify_mr_other, "admin.modify_mr.other_context", "admin",
             "MODIFY_MR of another context's key: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  if (!user_ctx(n, c, &pd)) return;
  Buf b;
  CONFORM_THAT(c, n.make_user_buf(1, pd, 4096, 0x7000'0000'0000ull, &b),
               "CREATE_MR", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_MR, 0);
  m.u.modify_mr.key = b.key;
  m.u.modify_mr.mask = RHN_MODIFY_MR_ACCESS;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

// ---- windows ----

CONFORM_CASE(mw_ok, "admin.create_mw.ok", "admin",
             "a type 1 window gets a key with its variant; it destroys") {
  Nic n(t);
  UP(n);
  uint32_t pd, key = 0;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MW);
  m.u.create_mw.pdn = pd;
  m.u.create_mw.type = 1;
  m.u.create_mw.key_variant = 0x17;
  if (!status_is(n, c, m, RHN_ADMIN_OK, &key)) return;
  CONFORM_EQ(c, "window key variant", 0x17, key & RHN_KEY_VARIANT_MASK);
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_MW, key), RHN_ADMIN_OK);
}

CONFORM_CASE(mw_type, "admin.create_mw.bad_type", "admin",
             "a window type other than 1 or 2: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_MW);
  m.u.create_mw.pdn = pd;
  m.u.create_mw.type = 3;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

// ---- EQs and CQs ----

CONFORM_CASE(eq_ok, "admin.create_eq.ok", "admin",
             "an EQ is created and destroyed") {
  Nic n(t);
  UP(n);
  Eq eq;
  CONFORM_THAT(c, n.create_eq(4, 1, &eq), "CREATE_EQ", n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_EQ, eq.eqn), RHN_ADMIN_OK);
}

CONFORM_CASE(eq_user, "admin.create_eq.user_context", "admin",
             "only the kernel context creates EQs (bus-address rings)") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_EQ, 1);
  m.u.create_eq.ring_addr = n.alloc(4096);
  m.u.create_eq.vector = 1;
  m.u.create_eq.log_depth = 4;
  const uint8_t st = n.run(m);
  c.that(st != RHN_ADMIN_OK, "CREATE_EQ from context 1",
         "accepted (status OK)");
}

CONFORM_CASE(eq_bad, "admin.destroy_eq.bad_handle", "admin",
             "destroying an EQ that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_EQ, 0xabcd),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(cq_ok, "admin.create_cq.ok", "admin",
             "a CQ is created and destroyed") {
  Nic n(t);
  UP(n);
  Eq eq;
  Cq cq;
  CONFORM_THAT(c, n.create_eq(4, 1, &eq) && n.create_cq(0, 6, eq.eqn, &cq),
               "setup", n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_CQ, cq.cqn), RHN_ADMIN_OK);
}

CONFORM_CASE(cq_size, "admin.create_cq.bad_size", "admin",
             "log_depth above QUERY_DEVICE's max_cq_log_depth: BAD_PARAM") {
  Nic n(t);
  UP(n);
  Eq eq;
  CONFORM_THAT(c, n.create_eq(4, 1, &eq), "CREATE_EQ", n.error());
  const rhn_device_attr a = query_device(n);
  CONFORM_THAT(c, a.max_cq_log_depth > 0 && a.max_cq_log_depth < 31,
               "max_cq_log_depth", "reads " + hex(a.max_cq_log_depth));
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_CQ);
  m.u.create_cq.ring.addr = n.alloc(4096);
  m.u.create_cq.record.addr = n.alloc(8, 8);
  m.u.create_cq.eqn = eq.eqn;
  m.u.create_cq.log_depth = static_cast<uint8_t>(a.max_cq_log_depth + 1);
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(cq_phys_user, "admin.create_cq.physical_from_user", "admin",
             "a user context's CQ ring by bus address: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  Eq eq;
  CONFORM_THAT(c, n.create_eq(4, 1, &eq), "CREATE_EQ", n.error());
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_CQ, 1);
  m.u.create_cq.ring.addr = n.alloc(4096);
  m.u.create_cq.record.addr = n.alloc(8, 8);
  m.u.create_cq.eqn = eq.eqn;
  m.u.create_cq.log_depth = 4;
  status_is(n, c, m, RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(cq_bad, "admin.destroy_cq.bad_handle", "admin",
             "destroying a CQ that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_CQ, 0xabcd),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(cq_busy, "admin.destroy_cq.busy", "admin",
             "a CQ used by a QP: BUSY") {
  Nic n(t);
  UP(n);
  Eq eq;
  Cq cq;
  Qp qp;
  uint32_t pd;
  CONFORM_THAT(c,
               n.create_eq(4, 1, &eq) && n.create_cq(0, 6, eq.eqn, &cq) &&
                   n.create_pd(0, &pd) && n.create_qp(0, pd, &cq, &cq, {}, &qp),
               "setup", n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_CQ, cq.cqn), RHN_ADMIN_BUSY);
}

// ---- QPs ----

struct QpSetup {
  Eq eq;
  Cq cq;
  uint32_t pd = 0;
  bool make(Nic& n) {
    return n.create_eq(4, 1, &eq) && n.create_cq(0, 6, eq.eqn, &cq) &&
           n.create_pd(0, &pd);
  }
  rhn_admin_cmd qp_cmd(Nic& n, uint8_t type, uint8_t flags = 0) {
    rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_QP);
    auto& q = m.u.create_qp;
    q.pdn = pd;
    q.send_cqn = q.recv_cqn = cq.cqn;
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
};

#define QP_SETUP(n, s) \
  QpSetup s;           \
  CONFORM_THAT(c, s.make(n), "setup", (n).error())

CONFORM_CASE(qp_ok, "admin.create_qp.ok", "admin",
             "an RC QP gets a QPN of at least 2 and starts in RESET") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  uint32_t qpn = 0;
  if (!status_is(n, c, s.qp_cmd(n, RHN_QP_RC), RHN_ADMIN_OK, &qpn)) return;
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

CONFORM_CASE(qp_flags, "admin.create_qp.bad_flags", "admin",
             "unknown create flags: BAD_PARAM") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  status_is(n, c, s.qp_cmd(n, RHN_QP_RC, 0x80), RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(qp_gsi, "admin.create_qp.gsi", "admin",
             "RHN_CREATE_QP_F_GSI on a UD QP gives QPN 1; a second: EXISTS") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  uint32_t qpn = 0;
  if (!status_is(n, c, s.qp_cmd(n, RHN_QP_UD, RHN_CREATE_QP_F_GSI),
                 RHN_ADMIN_OK, &qpn))
    return;
  CONFORM_EQ(c, "GSI qpn", RHN_QPN_GSI, qpn);
  status_is(n, c, s.qp_cmd(n, RHN_QP_UD, RHN_CREATE_QP_F_GSI),
            RHN_ADMIN_EXISTS);
}

CONFORM_CASE(qp_gsi_rc, "admin.create_qp.gsi_not_ud", "admin",
             "RHN_CREATE_QP_F_GSI on an RC QP: BAD_PARAM") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  status_is(n, c, s.qp_cmd(n, RHN_QP_RC, RHN_CREATE_QP_F_GSI),
            RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(qp_bad_type, "admin.create_qp.bad_type", "admin",
             "a QP type the header does not define: refused") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  const uint8_t st = n.run(s.qp_cmd(n, 9));
  c.that(st != RHN_ADMIN_OK, "CREATE_QP type 9", "accepted (status OK)");
}

CONFORM_CASE(qp_bad_cq, "admin.create_qp.bad_cq", "admin",
             "a send CQ that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  rhn_admin_cmd m = s.qp_cmd(n, RHN_QP_RC);
  m.u.create_qp.send_cqn = 0xabcd;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(qp_bad_pd, "admin.create_qp.bad_pd", "admin",
             "a PD that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  rhn_admin_cmd m = s.qp_cmd(n, RHN_QP_RC);
  m.u.create_qp.pdn = 0xabcd;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(qp_round_robin, "admin.create_qp.no_quick_reuse", "admin",
             "a destroyed QP's number does not come back at once") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  uint32_t a = 0, b = 0;
  CONFORM_EQ(c, "CREATE_QP", RHN_ADMIN_OK, n.run(s.qp_cmd(n, RHN_QP_RC), &a));
  CONFORM_EQ(c, "DESTROY_QP", RHN_ADMIN_OK,
             n.run(handle_cmd(RHN_ADMIN_DESTROY_QP, a)));
  CONFORM_EQ(c, "CREATE_QP again", RHN_ADMIN_OK,
             n.run(s.qp_cmd(n, RHN_QP_RC), &b));
  c.that(a != b, "qpn", "the destroyed QP's number " + hex(a) + " came back");
}

CONFORM_CASE(qp_illegal, "admin.modify_qp.illegal_transition", "admin",
             "RESET to RTS: BAD_STATE") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, {}, &qp), "CREATE_QP",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_QP);
  m.u.modify_qp.qpn = qp.qpn;
  m.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
  m.u.modify_qp.state = RHN_QPS_RTS;
  status_is(n, c, m, RHN_ADMIN_BAD_STATE);
}

CONFORM_CASE(qp_modify_bad, "admin.modify_qp.bad_handle", "admin",
             "a QP that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_QP);
  m.u.modify_qp.qpn = 0xabcd;
  m.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
  m.u.modify_qp.state = RHN_QPS_INIT;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(qp_rts, "admin.modify_qp.to_rts", "admin",
             "RESET, INIT, RTR, RTS: QUERY_QP shows each state and the "
             "destination") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, {}, &qp), "CREATE_QP",
               n.error());
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

CONFORM_CASE(qp_to_err, "admin.modify_qp.to_err", "admin",
             "any state to ERR is legal") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, {}, &qp), "CREATE_QP",
               n.error());
  CONFORM_THAT(c, n.activate(qp, 7, 0x123), "activate", n.error());
  c.eq("MODIFY_QP to ERR", RHN_ADMIN_OK,
       n.modify_qp(qp, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
}

CONFORM_CASE(query_qp_bad, "admin.query_qp.bad_handle", "admin",
             "QUERY_QP of a QP that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, query_cmd(RHN_ADMIN_QUERY_QP, n.alloc(64), 32, 0xabcd),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(destroy_qp, "admin.destroy_qp.ok", "admin",
             "a destroyed QP is gone: a second DESTROY_QP is BAD_HANDLE") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, {}, &qp), "CREATE_QP",
               n.error());
  if (!status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_QP, qp.qpn), RHN_ADMIN_OK))
    return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_QP, qp.qpn),
            RHN_ADMIN_BAD_HANDLE);
}

// ---- SRQs ----

static rhn_admin_cmd srq_cmd(Nic& n, uint32_t pd) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_CREATE_SRQ);
  m.u.create_srq.ring.addr = n.alloc(4096);
  m.u.create_srq.record.addr = n.alloc(8, 8);
  m.u.create_srq.pdn = pd;
  m.u.create_srq.log_depth = 4;
  return m;
}

CONFORM_CASE(srq_ok, "admin.create_srq.ok", "admin",
             "an SRQ is created, its limit modified, destroyed") {
  Nic n(t);
  UP(n);
  uint32_t pd, srqn = 0;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  if (!status_is(n, c, srq_cmd(n, pd), RHN_ADMIN_OK, &srqn)) return;
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_SRQ);
  m.u.modify_srq.srqn = srqn;
  m.u.modify_srq.limit = 2;
  if (!status_is(n, c, m, RHN_ADMIN_OK)) return;
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_SRQ, srqn), RHN_ADMIN_OK);
}

CONFORM_CASE(srq_flags, "admin.create_srq.bad_flags", "admin",
             "unknown SRQ flags: BAD_PARAM") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  CONFORM_THAT(c, n.create_pd(0, &pd), "CREATE_PD", n.error());
  rhn_admin_cmd m = srq_cmd(n, pd);
  m.u.create_srq.flags = 0x40;
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(srq_modify_bad, "admin.modify_srq.bad_handle", "admin",
             "MODIFY_SRQ of an SRQ that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_MODIFY_SRQ);
  m.u.modify_srq.srqn = 0xabcd;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(srq_busy, "admin.destroy_srq.busy", "admin",
             "an SRQ a QP uses: BUSY") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  uint32_t srqn = 0;
  CONFORM_EQ(c, "CREATE_SRQ", RHN_ADMIN_OK, n.run(srq_cmd(n, s.pd), &srqn));
  QpSpec spec;
  spec.srqn = srqn;
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, spec, &qp), "CREATE_QP",
               n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_DESTROY_SRQ, srqn), RHN_ADMIN_BUSY);
}

// ---- areas and groups ----

CONFORM_CASE(area_ok, "admin.register_area.ok", "admin",
             "an area in group 0 registers; the same ID again: EXISTS; it "
             "unregisters") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = RHN_AREA_KEY(0, 5);
  m.u.register_area.key = b.key;
  m.u.register_area.iova = b.addr;
  m.u.register_area.length = 4096;
  if (!status_is(n, c, m, RHN_ADMIN_OK)) return;
  if (!status_is(n, c, m, RHN_ADMIN_EXISTS)) return;
  status_is(n, c, handle_cmd(RHN_ADMIN_UNREGISTER_AREA, RHN_AREA_KEY(0, 5)),
            RHN_ADMIN_OK);
}

CONFORM_CASE(area_group, "admin.register_area.foreign_group", "admin",
             "an area in a group the context is not in: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = RHN_AREA_KEY(5, 1);
  m.u.register_area.key = b.key;
  m.u.register_area.iova = b.addr;
  m.u.register_area.length = 4096;
  status_is(n, c, m, RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(area_unreg_bad, "admin.unregister_area.bad_handle", "admin",
             "unregistering an area that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_UNREGISTER_AREA, RHN_AREA_KEY(0, 77)),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(groups_ok, "admin.set_groups.ok_then_area", "admin",
             "after SET_GROUPS the context registers areas in that group") {
  Nic n(t);
  UP(n);
  uint32_t pd;
  Buf b;
  CONFORM_THAT(c, n.create_pd(0, &pd) && n.make_buf(pd, 4096, &b), "setup",
               n.error());
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GROUPS);
  g.u.set_groups.count = 1;
  g.u.set_groups.group[0] = 5;
  if (!status_is(n, c, g, RHN_ADMIN_OK)) return;
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = RHN_AREA_KEY(5, 1);
  m.u.register_area.key = b.key;
  m.u.register_area.iova = b.addr;
  m.u.register_area.length = 4096;
  status_is(n, c, m, RHN_ADMIN_OK);
}

CONFORM_CASE(groups_count, "admin.set_groups.bad_count", "admin",
             "more than RHN_MAX_GROUPS_PER_CONTEXT groups: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GROUPS);
  g.u.set_groups.count = RHN_MAX_GROUPS_PER_CONTEXT + 1;
  for (int i = 0; i < 8; i++) g.u.set_groups.group[i] = uint16_t(i + 1);
  status_is(n, c, g, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(groups_dup, "admin.set_groups.duplicate", "admin",
             "a group listed twice (not distinct): BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GROUPS);
  g.u.set_groups.count = 2;
  g.u.set_groups.group[0] = 4;
  g.u.set_groups.group[1] = 4;
  status_is(n, c, g, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(groups_zero, "admin.set_groups.zero_group", "admin",
             "group 0 in the list (must be nonzero): BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GROUPS);
  g.u.set_groups.count = 1;
  g.u.set_groups.group[0] = 0;
  status_is(n, c, g, RHN_ADMIN_BAD_PARAM);
}

// ---- twin memory ----

CONFORM_CASE(twin_roundtrip, "admin.twin.write_read", "admin",
             "ALLOC_TWIN, TWIN_WRITE, TWIN_READ bring the bytes back") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 8192;
  uint32_t h = 0;
  if (!status_is(n, c, a, RHN_ADMIN_OK, &h)) return;
  const uint64_t src = n.alloc(4096), dst = n.alloc(4096);
  n.fill(src, 4096, 3);
  rhn_admin_cmd w = Nic::cmd(RHN_ADMIN_TWIN_WRITE);
  w.u.twin_copy.handle = h;
  w.u.twin_copy.length = 1000;
  w.u.twin_copy.offset = 4000;
  w.u.twin_copy.addr = src;
  if (!status_is(n, c, w, RHN_ADMIN_OK)) return;
  rhn_admin_cmd r = w;
  r.hdr.opcode = RHN_ADMIN_TWIN_READ;
  r.u.twin_copy.addr = dst;
  if (!status_is(n, c, r, RHN_ADMIN_OK)) return;
  const auto got = n.bytes(dst, 1000);
  for (size_t i = 0; i < got.size(); i++)
    CONFORM_EQ(c, "byte " + std::to_string(i) + " read back",
               pattern_byte(3, i), got[i]);
  status_is(n, c, handle_cmd(RHN_ADMIN_FREE_TWIN, h), RHN_ADMIN_OK);
}

CONFORM_CASE(twin_zero, "admin.alloc_twin.zero_length", "admin",
             "ALLOC_TWIN of 0 bytes: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  status_is(n, c, a, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(twin_free_bad, "admin.free_twin.bad_handle", "admin",
             "FREE_TWIN of a handle that is not the context's: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_FREE_TWIN, 0x00050003),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(twin_copy_len, "admin.twin_copy.zero_length", "admin",
             "TWIN_WRITE of 0 bytes: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 4096;
  uint32_t h = 0;
  CONFORM_EQ(c, "ALLOC_TWIN", RHN_ADMIN_OK, n.run(a, &h));
  rhn_admin_cmd w = Nic::cmd(RHN_ADMIN_TWIN_WRITE);
  w.u.twin_copy.handle = h;
  w.u.twin_copy.addr = n.alloc(4096);
  status_is(n, c, w, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(twin_copy_range, "admin.twin_copy.out_of_range", "admin",
             "TWIN_READ past the twin's end: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 4096;
  uint32_t h = 0;
  CONFORM_EQ(c, "ALLOC_TWIN", RHN_ADMIN_OK, n.run(a, &h));
  rhn_admin_cmd r = Nic::cmd(RHN_ADMIN_TWIN_READ);
  r.u.twin_copy.handle = h;
  r.u.twin_copy.length = 200;
  r.u.twin_copy.offset = 4000;
  r.u.twin_copy.addr = n.alloc(4096);
  status_is(n, c, r, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(twin_copy_dma, "admin.twin_copy.dma_error", "admin",
             "TWIN_WRITE from an address no memory answers at: DMA_ERROR") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 4096;
  uint32_t h = 0;
  CONFORM_EQ(c, "ALLOC_TWIN", RHN_ADMIN_OK, n.run(a, &h));
  rhn_admin_cmd w = Nic::cmd(RHN_ADMIN_TWIN_WRITE);
  w.u.twin_copy.handle = h;
  w.u.twin_copy.length = 64;
  w.u.twin_copy.addr = t.bad_bus_address();
  status_is(n, c, w, RHN_ADMIN_DMA_ERROR);
}

// ---- GIDs, probes, multicast groups ----

static rhn_admin_cmd gid_cmd(uint32_t ctx, uint32_t index, uint8_t type) {
  rhn_admin_cmd g = Nic::cmd(RHN_ADMIN_SET_GID, ctx);
  g.u.set_gid.index = index;
  g.u.set_gid.type = type;
  g.u.set_gid.gid[0] = 0xfe;
  g.u.set_gid.gid[1] = 0x80;
  g.u.set_gid.gid[15] = 1;
  return g;
}

CONFORM_CASE(gid_ok, "admin.set_gid.ok", "admin", "SET_GID entry 0: OK") {
  Nic n(t);
  UP(n);
  status_is(n, c, gid_cmd(0, 0, RHN_GID_ROCE_V2), RHN_ADMIN_OK);
}

CONFORM_CASE(gid_index, "admin.set_gid.bad_index", "admin",
             "an index >= RHN_GID_TABLE_LEN: BAD_PARAM") {
  Nic n(t);
  UP(n);
  status_is(n, c, gid_cmd(0, RHN_GID_TABLE_LEN, RHN_GID_ROCE_V1),
            RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(gid_type, "admin.set_gid.bad_type", "admin",
             "an unknown GID type: BAD_PARAM") {
  Nic n(t);
  UP(n);
  status_is(n, c, gid_cmd(0, 1, 7), RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(gid_user, "admin.set_gid.user_context", "admin",
             "SET_GID from a user context: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  status_is(n, c, gid_cmd(1, 0, RHN_GID_ROCE_V1), RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(probe_self, "admin.probe_node.self", "admin",
             "PROBE_NODE of the own node: OK, then PROBE_DONE with "
             "RHN_SYN_NONE on the first EQ") {
  Nic n(t);
  UP(n);
  Eq eq;
  CONFORM_THAT(c, n.create_eq(4, 1, &eq), "CREATE_EQ", n.error());
  const uint32_t node = n.r32(RHN_REG_NODE_ID) & 0xffff;
  if (!status_is(n, c, handle_cmd(RHN_ADMIN_PROBE_NODE, node), RHN_ADMIN_OK))
    return;
  rhn_eqe ev;
  for (;;) {
    CONFORM_THAT(c, n.wait_eqe(eq, &ev), "EQ", "no RHN_EQE_PROBE_DONE");
    if (ev.type == RHN_EQE_PROBE_DONE) break;
  }
  CONFORM_EQ(c, "PROBE_DONE object", node, ev.object);
  c.eq("PROBE_DONE data", RHN_SYN_NONE, ev.data);
}

CONFORM_CASE(probe_bad, "admin.probe_node.bad_node", "admin",
             "PROBE_NODE of a node beyond the fabric: BAD_PARAM") {
  Nic n(t);
  UP(n);
  status_is(n, c, handle_cmd(RHN_ADMIN_PROBE_NODE, RHN_MAX_NODES + 5),
            RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(probe_user, "admin.probe_node.user_context", "admin",
             "PROBE_NODE from a user context: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  status_is(n, c, handle_cmd(RHN_ADMIN_PROBE_NODE, 1, 1),
            RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(mcast_user, "admin.set_mcast_group.user_context", "admin",
             "SET_MCAST_GROUP from a user context: NOT_PERMITTED") {
  Nic n(t);
  UP(n);
  CONFORM_THAT(c, n.create_context(1), "CREATE_CONTEXT 1", n.error());
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_SET_MCAST_GROUP, 1);
  m.u.mcast_group.group = RHN_NODE_MCAST_FIRST;
  status_is(n, c, m, RHN_ADMIN_NOT_PERMITTED);
}

CONFORM_CASE(mcast_bad_id, "admin.set_mcast_group.bad_group", "admin",
             "a group ID outside 0xf000..0xf7ff: BAD_PARAM") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_SET_MCAST_GROUP);
  m.u.mcast_group.group = 0x1234;
  m.u.mcast_group.count = 1;
  m.u.mcast_group.list_addr = n.alloc(64);
  status_is(n, c, m, RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(mcast_remove_bad, "admin.set_mcast_group.remove_unknown", "admin",
             "removing (count 0) a group the NIC does not have: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_SET_MCAST_GROUP);
  m.u.mcast_group.group = RHN_NODE_MCAST_FIRST + 3;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

static rhn_admin_cmd attach_cmd(uint8_t op, uint32_t qpn, bool mcast) {
  rhn_admin_cmd m = Nic::cmd(op);
  m.u.mcast_attach.qpn = qpn;
  m.u.mcast_attach.mgid[0] = mcast ? 0xff : 0xfe;
  m.u.mcast_attach.mgid[1] = 0x0e;
  m.u.mcast_attach.mgid[15] = 0x42;
  return m;
}

CONFORM_CASE(attach_bad_qp, "admin.attach_mcast.bad_qp", "admin",
             "ATTACH_MCAST of a QP that does not exist: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, 0xabcd, true),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(attach_not_ud, "admin.attach_mcast.not_ud", "admin",
             "ATTACH_MCAST of an RC QP: BAD_PARAM") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, {}, &qp), "CREATE_QP",
               n.error());
  status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, qp.qpn, true),
            RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(attach_not_mcast, "admin.attach_mcast.not_mcast_gid", "admin",
             "ATTACH_MCAST with a unicast GID: BAD_PARAM") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  QpSpec spec;
  spec.type = RHN_QP_UD;
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, spec, &qp), "CREATE_QP",
               n.error());
  status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, qp.qpn, false),
            RHN_ADMIN_BAD_PARAM);
}

CONFORM_CASE(detach_not, "admin.detach_mcast.not_attached", "admin",
             "DETACH_MCAST of a QP not attached to the MGID: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  QpSpec spec;
  spec.type = RHN_QP_UD;
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, spec, &qp), "CREATE_QP",
               n.error());
  status_is(n, c, attach_cmd(RHN_ADMIN_DETACH_MCAST, qp.qpn, true),
            RHN_ADMIN_BAD_HANDLE);
}

CONFORM_CASE(attach_ok, "admin.attach_mcast.ok_twice", "admin",
             "attaching a UD QP twice to one MGID is OK, one entry "
             "(RHN_CNT_MCAST_ATTACHES counts once)") {
  Nic n(t);
  UP(n);
  QP_SETUP(n, s);
  QpSpec spec;
  spec.type = RHN_QP_UD;
  Qp qp;
  CONFORM_THAT(c, n.create_qp(0, s.pd, &s.cq, &s.cq, spec, &qp), "CREATE_QP",
               n.error());
  if (!status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, qp.qpn, true),
                 RHN_ADMIN_OK))
    return;
  if (!status_is(n, c, attach_cmd(RHN_ADMIN_ATTACH_MCAST, qp.qpn, true),
                 RHN_ADMIN_OK))
    return;
  CONFORM_EQ(c, "RHN_CNT_MCAST_ATTACHES", 1, n.counter(RHN_CNT_MCAST_ATTACHES));
  status_is(n, c, attach_cmd(RHN_ADMIN_DETACH_MCAST, qp.qpn, true),
            RHN_ADMIN_OK);
}

CONFORM_CASE(pd_mapped_bad, "admin.pd_mapped.bad_handle", "admin",
             "PD_MAPPED for a key that is no on-demand MR: BAD_HANDLE") {
  Nic n(t);
  UP(n);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_PD_MAPPED);
  m.u.pd_mapped.key = 0x1234;
  m.u.pd_mapped.num_pages = 1;
  status_is(n, c, m, RHN_ADMIN_BAD_HANDLE);
}

}  // namespace rhinet::conform
