// SPDX-License-Identifier: BSD-2-Clause
// BAR0: reset values and access types of every register (reg_table.h,
// generated from registers.toml, and the counter list), the values
// registers.md ties to other state, the 64-bit registers' halves, the
// bring-up order.
#include <string>

#include "case.h"
#include "lib/nic.h"
#include "reg_table.h"

namespace rhinet::conform {
namespace {

uint64_t read_reg(Target& t, const RegSpec& r) {
  return t.reg_read(r.offset, r.width / 8);
}

// Power-on and after CONTROL.RESET: the masked bits read the table's value.
void reset_value(const RegSpec& r, Target& t, Check& c) {
  Nic n(t);
  t.settle();
  if (!c.eq(std::string(r.name) + " at power-on", r.reset_value,
            read_reg(t, r) & r.reset_mask))
    return;
  // Change what the driver can, then reset.
  const std::string e = n.bring_up();
  if (!c.that(e.empty(), "bring-up", e)) return;
  const std::string e2 = n.reset();
  if (!c.that(e2.empty(), "CONTROL.RESET", e2)) return;
  c.eq(std::string(r.name) + " after CONTROL.RESET", r.reset_value,
       read_reg(t, r) & r.reset_mask);
}

// RO: a write of every bit flipped changes nothing.
void read_only(const RegSpec& r, Target& t, Check& c) {
  t.settle();
  const uint64_t before = read_reg(t, r);
  t.reg_write(r.offset, ~before, r.width / 8);
  t.settle();
  c.eq(std::string(r.name) + " after writing " + hex(~before & 0xffffffffu),
       before, read_reg(t, r));
}

// RW: what is written reads back (after the NIC took it). The value is
// the register map's probe for the register.
void read_write(const RegSpec& r, Target& t, Check& c) {
  const uint64_t v = r.probe;
  t.reg_write(r.offset, v, r.width / 8);
  t.wait_until([&] { return read_reg(t, r) == v; }, kWaitNs);
  c.eq(std::string(r.name) + " after writing " + hex(v), v, read_reg(t, r));
}

// ADMIN_SQ_TAIL: writing it is the kick that makes a posted command run.
void tail_kicks(Target& t, Check& c) {
  Nic n(t);
  const std::string e = n.bring_up();
  if (!c.that(e.empty(), "bring-up", e)) return;
  n.admin_post(Nic::cmd(RHN_ADMIN_CREATE_PD));
  t.settle();
  rhn_admin_cpl cpl;
  t.mem_read(n.admin_cq(), &cpl, sizeof(cpl));
  if (!c.eq("admin CQ slot 0 owner before the kick", 0, cpl.owner & 1)) return;
  n.kick_admin();
  auto got = n.admin_reap();
  if (!c.that(got.has_value(), "admin CQ slot 0",
              "no completion after writing ADMIN_SQ_TAIL"))
    return;
  c.eq("completion status", RHN_ADMIN_OK, got->status);
}

// An EQ on vector 1 that has taken its first event (link down).
bool eq_with_event(Target& t, Check& c, Nic& n, Eq& eq) {
  const std::string e = n.bring_up_eq(&eq, 4, 1);
  if (!c.that(e.empty(), "bring-up", e)) return false;
  rhn_eqe ev;
  if (!c.that(n.link_event(eq, false, &ev), "PORT_CHANGE", n.error()))
    return false;
  t.settle();
  return true;
}

// EQ_DOORBELL: a 64-bit write with ARM re-arms the EQ's interrupt.
void eq_doorbell_arms(Target& t, Check& c) {
  Nic n(t);
  Eq eq;
  rhn_eqe ev;
  // A new EQ is armed (README.md, decision 6): the first event interrupts.
  if (!eq_with_event(t, c, n, eq)) return;
  if (!c.eq("MSI-X vector 1 messages after the first event", 1,
            t.msix_count(1)))
    return;
  // Disarmed: the next event raises nothing.
  if (!c.that(n.link_event(eq, true, &ev), "second PORT_CHANGE", n.error()))
    return;
  t.settle();
  if (!c.eq("MSI-X vector 1 messages with the EQ disarmed", 1, t.msix_count(1)))
    return;
  n.eq_doorbell(eq, true);
  t.settle();
  if (!c.that(n.link_event(eq, false, &ev), "third PORT_CHANGE", n.error()))
    return;
  t.settle();
  c.eq("MSI-X vector 1 messages after re-arming", 2, t.msix_count(1));
}

// README.md decision 4: EQ_DOORBELL must be one 64-bit write; 32-bit
// writes are ignored (so they do not arm).
void eq_doorbell_halves_ignored(Target& t, Check& c) {
  Nic n(t);
  Eq eq;
  rhn_eqe ev;
  if (!eq_with_event(t, c, n, eq)) return;
  const uint64_t db =
      uint64_t(eq.ci) | (uint64_t(eq.eqn) << 32) | RHN_EQ_DB_ARM;
  t.reg_write(RHN_REG_EQ_DOORBELL, db & 0xffffffffu, 4);
  t.reg_write(RHN_REG_EQ_DOORBELL + 4, db >> 32, 4);
  t.settle();
  if (!c.that(n.link_event(eq, true, &ev), "second PORT_CHANGE", n.error()))
    return;
  t.settle();
  c.eq("MSI-X vector 1 messages (the 32-bit arm must be ignored)", 1,
       t.msix_count(1));
}

void counter_case(unsigned idx, const char* name, Target& t, Check& c) {
  Nic n(t);
  const std::string e = n.reset();
  if (!c.that(e.empty(), "CONTROL.RESET", e)) return;
  const uint32_t off = RHN_REG_COUNTERS + 8 * idx;
  const std::string what = std::string(name) + " (" + hex(off) + ")";
  if (!c.eq(what + " after reset", 0, t.reg_read(off, 8))) return;
  if (!c.eq(what + " low half", 0, t.reg_read(off, 4))) return;
  if (!c.eq(what + " high half", 0, t.reg_read(off + 4, 4))) return;
  t.reg_write(off, ~0ull, 8);
  t.reg_write(off, 0x5a5a5a5au, 4);
  t.reg_write(off + 4, 0xa5a5a5a5u, 4);
  t.settle();
  const uint64_t after = t.reg_read(off, 8);
  if (idx == RHN_CNT_MMIO_WRITES) {
    // The three writes are themselves MMIO writes: a NIC that counts its
    // bus transactions shows them, the soft core (which leaves the bus
    // counters at 0, registers.md) none; never anything else.
    c.that(after == 0 || after == 3, what + " after writes",
           "counts the 3 writes to it, or none (soft core); reads " +
               std::to_string(after));
    return;
  }
  c.eq(what + " after writes (read-only)", 0, after);
}

// One case per register and access type, from the table.
struct RegCases {
  RegCases() {
    for (const RegSpec& r : kRegs) {
      const std::string n = r.name;
      if (r.reset_mask)
        CaseRegistrar("regs.reset." + n, "regs",
                      std::string("reset value of: ") + r.meaning,
                      [&r](Target& t, Check& c) { reset_value(r, t, c); });
      if (r.access == Access::kRO)
        CaseRegistrar("regs.access." + n, "regs",
                      "read-only: writes are ignored",
                      [&r](Target& t, Check& c) { read_only(r, t, c); });
      if (r.access == Access::kRW)
        CaseRegistrar("regs.access." + n, "regs",
                      "read/write: the value written reads back",
                      [&r](Target& t, Check& c) { read_write(r, t, c); });
    }
    CaseRegistrar("regs.access.RHN_REG_ADMIN_SQ_TAIL", "regs",
                  "write-only: writing the producer index runs the command",
                  tail_kicks);
    CaseRegistrar("regs.access.RHN_REG_EQ_DOORBELL", "regs",
                  "write-only 64: ARM re-arms the EQ's one interrupt",
                  eq_doorbell_arms);
    CaseRegistrar("regs.halves.RHN_REG_EQ_DOORBELL", "regs",
                  "two 32-bit writes are ignored (README.md decision 4)",
                  eq_doorbell_halves_ignored);
#define RHN_CONFORM_COUNTER_(id, name, doc)                              \
  CaseRegistrar("regs.counter.RHN_CNT_" #id, "regs",                     \
                "read-only 64-bit counter, 0 after reset, halves agree", \
                [](Target& t, Check& c) {                                \
                  counter_case(RHN_CNT_##id, "RHN_CNT_" #id, t, c);      \
                });
    RHN_COUNTERS(RHN_CONFORM_COUNTER_)
#undef RHN_CONFORM_COUNTER_
  }
};
const RegCases reg_cases;

// 64-bit ring bases accept two 32-bit halves (README.md decision 4).
void halves(uint32_t off, Target& t, Check& c) {
  t.reg_write(off, 0x89ab'c000u, 4);
  t.reg_write(off + 4, 0x1u, 4);
  t.wait_until([&] { return t.reg_read(off, 8) == 0x1'89ab'c000ull; }, kWaitNs);
  if (!c.eq("64-bit read after two 32-bit writes", 0x1'89ab'c000ull,
            t.reg_read(off, 8)))
    return;
  if (!c.eq("low half read", 0x89ab'c000u, t.reg_read(off, 4))) return;
  c.eq("high half read", 0x1u, t.reg_read(off + 4, 4));
}

}  // namespace

CONFORM_CASE(halves_sq, "regs.halves.RHN_REG_ADMIN_SQ_BASE", "regs",
             "written as two 32-bit halves (README.md decision 4)") {
  halves(RHN_REG_ADMIN_SQ_BASE, t, c);
}

CONFORM_CASE(halves_cq, "regs.halves.RHN_REG_ADMIN_CQ_BASE", "regs",
             "written as two 32-bit halves (README.md decision 4)") {
  halves(RHN_REG_ADMIN_CQ_BASE, t, c);
}

CONFORM_CASE(value_node_id, "regs.value.RHN_REG_NODE_ID", "regs",
             "NODE_ID equals QUERY_DEVICE's node_id") {
  Nic n(t);
  const std::string e = n.bring_up();
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  rhn_device_attr a;
  CONFORM_EQ(c, "QUERY_DEVICE status", RHN_ADMIN_OK, n.query_device(&a));
  c.eq("NODE_ID vs rhn_device_attr.node_id", a.node_id, n.r32(RHN_REG_NODE_ID));
}

CONFORM_CASE(value_mtu, "regs.value.RHN_REG_MTU", "regs",
             "MTU equals QUERY_DEVICE's mtu, nonzero, at most RHN_WIRE_MTU") {
  Nic n(t);
  const std::string e = n.bring_up();
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  rhn_device_attr a;
  CONFORM_EQ(c, "QUERY_DEVICE status", RHN_ADMIN_OK, n.query_device(&a));
  const uint32_t mtu = n.r32(RHN_REG_MTU);
  CONFORM_EQ(c, "MTU vs rhn_device_attr.mtu", a.mtu, mtu);
  c.that(mtu > 0 && mtu <= RHN_WIRE_MTU, "MTU",
         hex(mtu) + " not in 1..RHN_WIRE_MTU");
}

CONFORM_CASE(value_db_pages, "regs.value.RHN_REG_DB_PAGES", "regs",
             "at least the kernel's page 0 and one user page") {
  const uint32_t v = uint32_t(t.reg_read(RHN_REG_DB_PAGES, 4));
  c.that(v >= 2, "DB_PAGES", "reads " + std::to_string(v) + ", expected >= 2");
}

CONFORM_CASE(value_msix, "regs.value.RHN_REG_MSIX_VECTORS", "regs",
             "at least vector 0 (RHN_MSIX_ADMIN) and one EQ vector") {
  const uint32_t v = uint32_t(t.reg_read(RHN_REG_MSIX_VECTORS, 4));
  c.that(v >= 2, "MSIX_VECTORS",
         "reads " + std::to_string(v) + ", expected >= 2");
}

CONFORM_CASE(value_mac, "regs.value.RHN_REG_MAC", "regs",
             "MAC is 02:52:4e:00:<node hi>:<node lo>, byte 0 in MAC_LO "
             "bits 7:0 (README.md decision 5)") {
  const uint32_t node = uint32_t(t.reg_read(RHN_REG_NODE_ID, 4)) & 0xffff;
  CONFORM_EQ(c, "MAC_LO", 0x004e5202u, t.reg_read(RHN_REG_MAC_LO, 4));
  c.eq("MAC_HI", ((node & 0xff) << 8) | (node >> 8),
       t.reg_read(RHN_REG_MAC_HI, 4));
}

CONFORM_CASE(control_reset_clears, "regs.control.reset_self_clears", "regs",
             "CONTROL.RESET clears itself, READY set, admin queue off") {
  Nic n(t);
  std::string e = n.bring_up();
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  e = n.reset();
  CONFORM_THAT(c, e.empty(), "CONTROL.RESET", e);
  CONFORM_EQ(c, "CONTROL after reset", 0, n.r32(RHN_REG_CONTROL));
  c.eq("STATUS.ADMIN_ON after reset", 0,
       n.r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON);
}

CONFORM_CASE(control_enable, "regs.control.enable_admin_on", "regs",
             "ENABLE with valid rings sets STATUS.ADMIN_ON; clearing it "
             "clears ADMIN_ON") {
  Nic n(t);
  const std::string e = n.bring_up();
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  n.w32(RHN_REG_CONTROL, RHN_CONTROL_INTR_ENABLE);
  t.wait_until([&] { return !(n.r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON); },
               kWaitNs);
  c.eq("STATUS.ADMIN_ON after clearing ENABLE", 0,
       n.r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON);
}

CONFORM_CASE(control_enable_unaligned, "regs.control.enable_unaligned_ring",
             "regs",
             "ENABLE with a ring base not 4 KiB aligned is not accepted") {
  Nic n(t);
  const std::string e = n.reset();
  CONFORM_THAT(c, e.empty(), "CONTROL.RESET", e);
  const uint64_t sq = n.alloc(8192), cq = n.alloc(4096);
  n.w64(RHN_REG_ADMIN_SQ_BASE, sq + 0x80);
  n.w64(RHN_REG_ADMIN_CQ_BASE, cq);
  n.w32(RHN_REG_ADMIN_LOG_DEPTH, 2);
  n.w32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
  t.settle();
  t.advance(1'000'000);
  c.eq("STATUS.ADMIN_ON", 0, n.r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON);
}

CONFORM_CASE(control_enable_depth, "regs.control.enable_depth_too_big", "regs",
             "ENABLE with ADMIN_LOG_DEPTH above RHN_ADMIN_MAX_LOG_DEPTH is "
             "not accepted") {
  Nic n(t);
  const std::string e = n.reset();
  CONFORM_THAT(c, e.empty(), "CONTROL.RESET", e);
  n.w64(RHN_REG_ADMIN_SQ_BASE, n.alloc(1u << 16));
  n.w64(RHN_REG_ADMIN_CQ_BASE, n.alloc(1u << 16));
  n.w32(RHN_REG_ADMIN_LOG_DEPTH, RHN_ADMIN_MAX_LOG_DEPTH + 1);
  n.w32(RHN_REG_CONTROL, RHN_CONTROL_ENABLE);
  t.settle();
  t.advance(1'000'000);
  c.eq("STATUS.ADMIN_ON", 0, n.r32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON);
}

// Brings the NIC up, then the link administratively down.
static bool link_down(Target& t, Check& c, Nic& n) {
  const std::string e = n.bring_up();
  if (!c.that(e.empty(), "bring-up", e)) return false;
  rhn_admin_cmd link = Nic::cmd(RHN_ADMIN_SET_LINK);
  link.u.set_link.up = 0;
  if (!c.eq("SET_LINK down status", RHN_ADMIN_OK, n.run(link))) return false;
  t.wait_until([&] { return !(n.r32(RHN_REG_STATUS) & RHN_STATUS_LINK_UP); },
               kWaitNs);
  return c.eq("STATUS.LINK_UP after SET_LINK 0", 0,
              n.r32(RHN_REG_STATUS) & RHN_STATUS_LINK_UP);
}

CONFORM_CASE(status_link, "regs.status.link_follows_set_link", "regs",
             "STATUS.LINK_UP follows SET_LINK") {
  Nic n(t);
  if (!link_down(t, c, n)) return;
  rhn_admin_cmd link = Nic::cmd(RHN_ADMIN_SET_LINK);
  link.u.set_link.up = 1;
  CONFORM_EQ(c, "SET_LINK up status", RHN_ADMIN_OK, n.run(link));
  t.wait_until([&] { return (n.r32(RHN_REG_STATUS) & RHN_STATUS_LINK_UP); },
               kWaitNs);
  c.eq("STATUS.LINK_UP after SET_LINK 1", RHN_STATUS_LINK_UP,
       n.r32(RHN_REG_STATUS) & RHN_STATUS_LINK_UP);
}

CONFORM_CASE(reset_link, "regs.control.reset_undoes_set_link", "regs",
             "CONTROL.RESET drops an administrative SET_LINK 0: the link "
             "is up again (the cable is plugged in)") {
  Nic n(t);
  if (!link_down(t, c, n)) return;
  const std::string r = n.reset();
  CONFORM_THAT(c, r.empty(), "CONTROL.RESET", r);
  c.eq("STATUS.LINK_UP after the reset", RHN_STATUS_LINK_UP,
       n.r32(RHN_REG_STATUS) & RHN_STATUS_LINK_UP);
}

}  // namespace rhinet::conform

namespace rhinet::conform {

CONFORM_CASE(control_reset_visible, "regs.control.reset_visible", "regs",
             "right after CONTROL.RESET is written, CONTROL reads RESET "
             "until the reset is done (bring-up step 2 polls for it)") {
  Nic n(t);
  const std::string e = n.bring_up();
  CONFORM_THAT(c, e.empty(), "bring-up", e);
  n.w32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  const uint32_t control = n.r32(RHN_REG_CONTROL);
  const uint32_t status = n.r32(RHN_REG_STATUS);
  const bool pending = (control & RHN_CONTROL_RESET) != 0;
  const bool done = control == 0 && !(status & RHN_STATUS_ADMIN_ON);
  c.that(pending || done, "CONTROL read right after writing RESET",
         "reads " + hex(control) + " with STATUS " + hex(status) +
             ": neither RESET pending nor the reset done");
}

}  // namespace rhinet::conform
