/*
 * xpu: an accelerator stand-in for the device-initiated communication
 * tests. Described in Documentation/hardware/xpu.md; its contract is
 * include/hw/xpu/xpu.h.
 *
 *   BAR0 (registers)  identity, bus counters, the lanes' registers
 *   BAR2 (memory)     RAM the guest maps, peers reach by DMA and the lanes
 *                     run their programs from and work on
 *
 * The lanes run in the main loop (under the BQL), from a timer that ticks
 * while any lane runs: each round, every running lane executes up to
 * XPU_BURST commands, or stops at a POLL whose value is not there yet.
 * Their bus accesses go through the device's bus-master address space, as
 * a real device's DMA would, and each is classified by what it reached:
 * host RAM, or a PCI device's BAR (peer-to-peer). So a test can prove that
 * a path touched no host RAM: the HOST counters stay 0. Once the driver
 * turns enforcement on, a lane reaches only the bus ranges of the windows
 * its WINDOWS register names (what its owner imported), else it faults
 * WINDOW before the access. Likewise a lane whose memory the driver bounded
 * (XPU_LANE_MEM_*, the part of BAR2 its owner was given) names offsets in
 * that part only; any other faults LOCAL before the access.
 *
 * Peers' DMA into BAR2 does not pass through this code (the memory is a RAM
 * region, which is what lets rhinet's engine thread reach it without the
 * BQL); rhinet reports it through xpu_note_peer_access (xpu_bus.h).
 *
 * Copyright (c) 2026 RHiNET-NG developers
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"

#include "xpu/xpu.h"
#include "xpu_bus.h"

#define TYPE_XPU "xpu"
OBJECT_DECLARE_SIMPLE_TYPE(XpuState, XPU)

#define XPU_TICK_NS (10 * SCALE_US) /* a scheduling round */
#define XPU_BURST 64 /* commands a lane runs per round at most */
#define XPU_MEM_MIN (64 * KiB)
#define XPU_MEM_MAX (4 * GiB)

typedef struct XpuLane {
    uint64_t pc;
    uint64_t executed;
    uint32_t status; /* enum xpu_lane_status */
    uint32_t error; /* enum xpu_lane_error */
    uint32_t poll_rounds; /* rounds the current POLL has waited */
    uint32_t windows; /* the windows it reaches, a bit each */
    uint64_t mem_offset; /* its memory in BAR2 (XPU_LANE_MEM_*) */
    uint64_t mem_size; /* 0: all of BAR2 */
} XpuLane;

typedef struct XpuWindow {
    uint64_t addr;
    uint64_t size; /* 0: closed */
} XpuWindow;

struct XpuState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion mem;
    uint8_t *mem_ptr;
    QEMUTimer *timer;
    XpuLane lanes[XPU_LANES_MAX];
    XpuWindow windows[XPU_WINDOWS_MAX];
    bool enforce; /* XPU_CTRL_ENFORCE was written: until reset */
    /* Updated atomically: rhinet's engine thread adds the IN counters. */
    uint64_t counters[XPU_CNT_NUM];

    /* Properties */
    uint64_t mem_size;
    uint32_t nr_lanes;
};

int xpu_devices;

/* counter is a *_BYTES counter; the *_COUNT one follows it. */
static void xpu_count(XpuState *s, enum xpu_counter bytes, uint64_t len)
{
    qatomic_add(&s->counters[bytes], len);
    qatomic_inc(&s->counters[bytes + 1]);
}

void xpu_note_peer_access(MemoryRegion *mr, uint64_t len, bool is_write)
{
    Object *owner = memory_region_owner(mr);
    XpuState *s = owner ? (XpuState *)object_dynamic_cast(owner, TYPE_XPU)
                        : NULL;

    if (s && mr == &s->mem) {
        xpu_count(s, is_write ? XPU_CNT_IN_WR_BYTES : XPU_CNT_IN_RD_BYTES,
                  len);
    }
}

/* ---- The lanes' bus accesses ------------------------------------------- */

/* RAM no PCI device owns is the host's; anything else is a device's BAR. */
static bool xpu_is_host_ram(MemoryRegion *mr)
{
    Object *owner = memory_region_owner(mr);

    return memory_region_is_ram(mr) &&
           !(owner && object_dynamic_cast(owner, TYPE_PCI_DEVICE));
}

/* [addr, addr + len) is in one of the lane's windows, or none enforced */
static bool xpu_window_ok(XpuState *s, XpuLane *l, uint64_t addr, uint64_t len)
{
    if (!s->enforce) {
        return true;
    }
    for (int w = 0; w < XPU_WINDOWS_MAX; w++) {
        XpuWindow *win = &s->windows[w];

        if ((l->windows & (1u << w)) && win->size && addr >= win->addr &&
            len <= win->size && addr - win->addr <= win->size - len) {
            return true;
        }
    }
    return false;
}

/*
 * A DMA of the lane, piece by piece as the address space maps it, each
 * piece counted by what it reached; XPU_ERR_NONE, or why it was refused.
 * The device's own memory through the bus is refused (a program copies
 * within it with COPY), as is an address that reaches nothing; bus
 * mastering off leaves nothing reachable. Outside the lane's windows
 * nothing is touched at all.
 */
static uint32_t xpu_bus_rw(XpuState *s, XpuLane *l, uint64_t addr,
                           uint8_t *buf, uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    /* A device's TLPs carry its requester ID: a peer counts by it. */
    MemTxAttrs attrs = { .requester_id = pci_requester_id(PCI_DEVICE(s)) };

    if (addr + len < addr) {
        return XPU_ERR_BUS;
    }
    if (!xpu_window_ok(s, l, addr, len)) {
        qatomic_inc(&s->counters[XPU_CNT_WINDOW_FAULTS]);
        return XPU_ERR_WINDOW;
    }
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr;
        bool host;

        WITH_RCU_READ_LOCK_GUARD() {
            mr = address_space_translate(as, addr, &xlat, &plen, is_write,
                                         attrs);
            host = xpu_is_host_ram(mr);
            if (mr == &s->mem || !plen) {
                return XPU_ERR_BUS;
            }
        }
        if (address_space_rw(as, addr, attrs, buf, plen, is_write) !=
            MEMTX_OK) {
            return XPU_ERR_BUS;
        }
        if (host) {
            xpu_count(s, is_write ? XPU_CNT_HOST_WR_BYTES
                                  : XPU_CNT_HOST_RD_BYTES, plen);
        } else {
            xpu_count(s, is_write ? XPU_CNT_P2P_WR_BYTES
                                  : XPU_CNT_P2P_RD_BYTES, plen);
        }
        addr += plen;
        buf += plen;
        len -= plen;
    }
    return XPU_ERR_NONE;
}

/* ---- The lanes ----------------------------------------------------------- */

/*
 * [off, off + len) of the lane's memory: XPU_ERR_NONE, LOCAL outside a
 * bounded lane's memory, RANGE outside BAR2 (an unbounded lane, or a bound
 * the driver set past BAR2's end).
 */
static uint32_t xpu_local_ok(XpuState *s, XpuLane *l, uint64_t off,
                             uint64_t len)
{
    uint64_t base = l->mem_size ? l->mem_offset : 0, end = off + len;

    if (l->mem_size && (len > l->mem_size || off > l->mem_size - len)) {
        return XPU_ERR_LOCAL;
    }
    if (end < off || base + end < base || base + end > s->mem_size) {
        return XPU_ERR_RANGE;
    }
    return XPU_ERR_NONE;
}

/* Lane-relative offset @off in the device's memory (checked before). */
static uint8_t *xpu_ptr(XpuState *s, XpuLane *l, uint64_t off)
{
    return s->mem_ptr + (l->mem_size ? l->mem_offset : 0) + off;
}

/* An 8-byte word of the lane's memory: XPU_ERR_NONE, RANGE or LOCAL. */
static uint32_t xpu_word_ok(XpuState *s, XpuLane *l, uint64_t off)
{
    return off & 7 ? XPU_ERR_RANGE : xpu_local_ok(s, l, off, 8);
}

static uint64_t *xpu_word(XpuState *s, XpuLane *l, uint64_t off)
{
    return (uint64_t *)xpu_ptr(s, l, off);
}

/* The device wrote its memory: migration and translated code must know. */
static void xpu_mem_written(XpuState *s, XpuLane *l, uint64_t off,
                            uint64_t len)
{
    memory_region_set_dirty(&s->mem, xpu_ptr(s, l, off) - s->mem_ptr, len);
}

static void xpu_lane_fault(XpuState *s, XpuLane *l, uint32_t error)
{
    l->status = XPU_LANE_FAULT;
    l->error = error;
    qatomic_inc(&s->counters[XPU_CNT_FAULTS]);
    if (error == XPU_ERR_LOCAL) {
        qatomic_inc(&s->counters[XPU_CNT_LOCAL_FAULTS]);
    }
    qemu_log_mask(LOG_GUEST_ERROR,
                  "xpu: lane %td: error %u at pc 0x%" PRIx64 "\n",
                  l - s->lanes, error, l->pc);
}

/*
 * The command's operand fields that are indirect (XPU_IND_*) replaced by
 * the words they name; RANGE or LOCAL if such a word is not the lane's.
 */
static uint32_t xpu_resolve(XpuState *s, XpuLane *l, struct xpu_cmd *c)
{
    uint64_t *fields[] = { &c->a, &c->b, &c->imm };
    static const uint8_t bits[] = { XPU_IND_A, XPU_IND_B, XPU_IND_IMM };

    for (int i = 0; i < ARRAY_SIZE(bits); i++) {
        uint32_t err;

        if (!(c->flags & bits[i])) {
            continue;
        }
        err = xpu_word_ok(s, l, *fields[i]);
        if (err) {
            return err;
        }
        *fields[i] = le64_to_cpu(qatomic_read(xpu_word(s, l, *fields[i])));
    }
    return XPU_ERR_NONE;
}

/* A command's memory operands, checked; XPU_ERR_NONE when they are good. */
static uint32_t xpu_check(XpuState *s, XpuLane *l, struct xpu_cmd *c)
{
    uint32_t flags_ok = c->op == XPU_OP_POLL ? XPU_POLL_GE : 0;
    uint32_t err;

    if (c->op != XPU_OP_STOP) {
        flags_ok |= XPU_IND_ALL;
    }
    if ((c->flags & ~flags_ok) || c->rsvd || c->op >= XPU_OP_NUM) {
        return XPU_ERR_OPCODE;
    }
    /* An ALU op or condition is part of the opcode: unknown is OPCODE. */
    if ((c->op == XPU_OP_ALU && c->len >= XPU_ALU_NUM) ||
        (c->op == XPU_OP_BRANCH && c->len >= XPU_COND_NUM)) {
        return XPU_ERR_OPCODE;
    }
    err = xpu_resolve(s, l, c);
    if (err) {
        return err;
    }
    switch (c->op) {
    case XPU_OP_STOP:
        return XPU_ERR_NONE;
    case XPU_OP_STORE:
    case XPU_OP_POLL:
        return xpu_word_ok(s, l, c->a);
    case XPU_OP_FADD:
    case XPU_OP_ALU:
        err = xpu_word_ok(s, l, c->a);
        return err ? err : xpu_word_ok(s, l, c->b);
    case XPU_OP_BRANCH:
        err = xpu_word_ok(s, l, c->a);
        if (!err && (c->imm & (XPU_CMD_SIZE - 1))) {
            err = XPU_ERR_RANGE;
        }
        return err ? err : xpu_local_ok(s, l, c->imm, XPU_CMD_SIZE);
    case XPU_OP_WRITE64:
        return c->b & 7 ? XPU_ERR_RANGE : XPU_ERR_NONE;
    case XPU_OP_COPY:
        if (c->len > XPU_DMA_MAX) {
            return XPU_ERR_RANGE;
        }
        err = xpu_local_ok(s, l, c->b, c->len);
        if (err) {
            return err;
        }
        /* fall through */
    case XPU_OP_DMA_READ:
    case XPU_OP_DMA_WRITE:
        return c->len <= XPU_DMA_MAX ? xpu_local_ok(s, l, c->a, c->len)
                                     : XPU_ERR_RANGE;
    default:
        return XPU_ERR_OPCODE;
    }
}

static uint64_t xpu_alu(uint32_t op, uint64_t x, uint64_t y)
{
    switch (op) {
    case XPU_ALU_ADD:
        return x + y;
    case XPU_ALU_SUB:
        return x - y;
    case XPU_ALU_AND:
        return x & y;
    case XPU_ALU_OR:
        return x | y;
    case XPU_ALU_XOR:
        return x ^ y;
    case XPU_ALU_SHL:
        return x << (y & 63);
    case XPU_ALU_SHR:
        return x >> (y & 63);
    default: /* XPU_ALU_MUL; xpu_check refused the others */
        return x * y;
    }
}

static bool xpu_cond(uint32_t cond, uint64_t x, uint64_t y)
{
    switch (cond) {
    case XPU_COND_EQ:
        return x == y;
    case XPU_COND_NE:
        return x != y;
    case XPU_COND_LT:
        return x < y;
    default: /* XPU_COND_GE */
        return x >= y;
    }
}

/*
 * Runs the command at the lane's PC. Returns false when the lane yields
 * this round: it stopped, faulted, or waits in a POLL.
 */
static bool xpu_step(XpuState *s, XpuLane *l)
{
    struct xpu_cmd c;
    uint64_t *w, old, v, next = l->pc + XPU_CMD_SIZE;
    uint32_t err;
    bool done;

    err = l->pc & (XPU_CMD_SIZE - 1) ? XPU_ERR_RANGE
                                     : xpu_local_ok(s, l, l->pc, XPU_CMD_SIZE);
    if (err) {
        xpu_lane_fault(s, l, err);
        return false;
    }
    memcpy(&c, xpu_ptr(s, l, l->pc), sizeof(c));
    c.rsvd = le16_to_cpu(c.rsvd);
    c.len = le32_to_cpu(c.len);
    c.a = le64_to_cpu(c.a);
    c.b = le64_to_cpu(c.b);
    c.imm = le64_to_cpu(c.imm);
    err = xpu_check(s, l, &c);
    if (err) {
        xpu_lane_fault(s, l, err);
        return false;
    }
    switch (c.op) {
    case XPU_OP_STOP:
        l->status = XPU_LANE_DONE;
        break;
    case XPU_OP_STORE:
        qatomic_set(xpu_word(s, l, c.a), cpu_to_le64(c.imm));
        xpu_mem_written(s, l, c.a, 8);
        break;
    case XPU_OP_COPY:
        memmove(xpu_ptr(s, l, c.a), xpu_ptr(s, l, c.b), c.len);
        xpu_mem_written(s, l, c.a, c.len);
        break;
    case XPU_OP_WRITE64:
        v = cpu_to_le64(c.imm);
        err = xpu_bus_rw(s, l, c.b, (uint8_t *)&v, 8, true);
        if (err) {
            xpu_lane_fault(s, l, err);
            return false;
        }
        break;
    case XPU_OP_DMA_READ:
    case XPU_OP_DMA_WRITE:
        err = xpu_bus_rw(s, l, c.b, xpu_ptr(s, l, c.a), c.len,
                         c.op == XPU_OP_DMA_WRITE);
        if (err) {
            xpu_lane_fault(s, l, err);
            return false;
        }
        if (c.op == XPU_OP_DMA_READ) {
            xpu_mem_written(s, l, c.a, c.len);
        }
        break;
    case XPU_OP_FADD:
        w = xpu_word(s, l, c.a);
        do {
            old = qatomic_read(w);
            v = cpu_to_le64(le64_to_cpu(old) + c.imm);
        } while (qatomic_cmpxchg(w, old, v) != old);
        qatomic_set(xpu_word(s, l, c.b), old);
        xpu_mem_written(s, l, c.a, 8);
        xpu_mem_written(s, l, c.b, 8);
        break;
    case XPU_OP_POLL:
        v = le64_to_cpu(qatomic_read(xpu_word(s, l, c.a)));
        done = c.flags & XPU_POLL_GE ? v >= c.imm : v == c.imm;
        if (!done) {
            if (++l->poll_rounds > (c.len ? c.len : XPU_POLL_ROUNDS_DEFAULT)) {
                xpu_lane_fault(s, l, XPU_ERR_TIMEOUT);
            }
            return false; /* again next round */
        }
        l->poll_rounds = 0;
        break;
    case XPU_OP_ALU:
        v = xpu_alu(c.len, le64_to_cpu(qatomic_read(xpu_word(s, l, c.b))),
                    c.imm);
        qatomic_set(xpu_word(s, l, c.a), cpu_to_le64(v));
        xpu_mem_written(s, l, c.a, 8);
        break;
    case XPU_OP_BRANCH:
        v = le64_to_cpu(qatomic_read(xpu_word(s, l, c.a)));
        if (xpu_cond(c.len, v, c.b)) {
            next = c.imm;
        }
        break;
    }
    l->executed++;
    qatomic_inc(&s->counters[XPU_CNT_CMDS]);
    if (l->status != XPU_LANE_RUNNING) {
        return false;
    }
    l->pc = next;
    return true;
}

static void xpu_schedule(XpuState *s)
{
    timer_mod(s->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + XPU_TICK_NS);
}

static void xpu_tick(void *opaque)
{
    XpuState *s = opaque;
    bool busy = false;
    uint32_t i, n;

    for (i = 0; i < s->nr_lanes; i++) {
        XpuLane *l = &s->lanes[i];

        for (n = 0; n < XPU_BURST && l->status == XPU_LANE_RUNNING; n++) {
            if (!xpu_step(s, l)) {
                break;
            }
        }
        busy |= l->status == XPU_LANE_RUNNING;
    }
    if (busy) {
        xpu_schedule(s);
    }
}

static void xpu_lane_ctrl(XpuState *s, XpuLane *l, uint32_t val)
{
    if (val == XPU_LANE_CTRL_START && l->status != XPU_LANE_RUNNING) {
        l->status = XPU_LANE_RUNNING;
        l->error = XPU_ERR_NONE;
        l->executed = 0;
        l->poll_rounds = 0;
        if (!timer_pending(s->timer)) {
            timer_mod(s->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
        }
    } else if (val == XPU_LANE_CTRL_ABORT && l->status == XPU_LANE_RUNNING) {
        l->status = XPU_LANE_IDLE;
    }
}

/* ---- Registers (BAR0) ---------------------------------------------------- */

/* The 8-byte aligned register word at addr. */
static uint64_t xpu_reg_word(XpuState *s, hwaddr addr)
{
    if (addr >= XPU_REG_LANE_MEM_BASE) {
        hwaddr off = addr - XPU_REG_LANE_MEM_BASE;
        uint32_t lane = off / XPU_REG_LANE_MEM_STRIDE;

        if (lane >= s->nr_lanes) {
            return 0;
        }
        return off % XPU_REG_LANE_MEM_STRIDE == XPU_LANE_MEM_OFFSET
                   ? s->lanes[lane].mem_offset
                   : s->lanes[lane].mem_size;
    }
    if (addr >= XPU_REG_LANE_BASE) {
        hwaddr off = addr - XPU_REG_LANE_BASE;
        uint32_t lane = off / XPU_REG_LANE_STRIDE;
        XpuLane *l = &s->lanes[lane];

        if (lane >= s->nr_lanes) {
            return 0;
        }
        switch (off % XPU_REG_LANE_STRIDE) {
        case XPU_LANE_PC:
            return l->pc;
        case XPU_LANE_CTRL: /* CTRL reads 0, STATUS above it */
            return (uint64_t)l->status << 32;
        case XPU_LANE_ERROR: /* WINDOWS above it */
            return l->error | (uint64_t)l->windows << 32;
        case XPU_LANE_EXECUTED:
            return l->executed;
        }
        return 0;
    }
    if (addr >= XPU_REG_WINDOW_BASE) {
        uint32_t w = (addr - XPU_REG_WINDOW_BASE) / XPU_REG_WINDOW_STRIDE;

        if (w >= XPU_WINDOWS_MAX) {
            return 0;
        }
        return addr % XPU_REG_WINDOW_STRIDE == XPU_WINDOW_ADDR
                   ? s->windows[w].addr
                   : s->windows[w].size;
    }
    if (addr >= XPU_REG_CNT_BASE) {
        uint32_t i = (addr - XPU_REG_CNT_BASE) / 8;

        return i < XPU_CNT_NUM ? qatomic_read(&s->counters[i]) : 0;
    }
    switch (addr) {
    case XPU_REG_ID:
        return XPU_ID_VALUE | (uint64_t)XPU_VERSION_VALUE << 32;
    case XPU_REG_MEM_SIZE:
        return s->mem_size;
    case XPU_REG_LANES: /* CTRL above it reads 0 */
        return s->nr_lanes;
    case XPU_REG_STATUS: /* WINDOWS above it */
        return (s->enforce ? XPU_STATUS_ENFORCING : 0) |
               (uint64_t)XPU_WINDOWS_MAX << 32;
    }
    return 0;
}

static uint64_t xpu_reg_read(void *opaque, hwaddr addr, unsigned size)
{
    uint64_t word = xpu_reg_word(opaque, addr & ~7ull);

    if (size == 8) {
        return word;
    }
    return (uint32_t)(addr & 4 ? word >> 32 : word);
}

static void xpu_reg_write32(XpuState *s, hwaddr addr, uint32_t val)
{
    hwaddr off;
    XpuLane *l;

    if (addr == XPU_REG_CTRL) {
        if (val & XPU_CTRL_CLEAR_COUNTERS) {
            for (int i = 0; i < XPU_CNT_NUM; i++) {
                qatomic_set(&s->counters[i], 0);
            }
        }
        if (val & XPU_CTRL_ENFORCE) {
            s->enforce = true;
        }
        return;
    }
    if (addr >= XPU_REG_WINDOW_BASE && addr < XPU_REG_LANE_BASE) {
        uint32_t w = (addr - XPU_REG_WINDOW_BASE) / XPU_REG_WINDOW_STRIDE;
        hwaddr off = addr % XPU_REG_WINDOW_STRIDE;
        uint64_t *reg;

        if (w >= XPU_WINDOWS_MAX) {
            return;
        }
        reg = off < XPU_WINDOW_SIZE ? &s->windows[w].addr
                                    : &s->windows[w].size;
        *reg = deposit64(*reg, off & 4 ? 32 : 0, 32, val);
        return;
    }
    if (addr >= XPU_REG_LANE_MEM_BASE) {
        off = addr - XPU_REG_LANE_MEM_BASE;
        if (off / XPU_REG_LANE_MEM_STRIDE >= s->nr_lanes) {
            return;
        }
        l = &s->lanes[off / XPU_REG_LANE_MEM_STRIDE];
        off %= XPU_REG_LANE_MEM_STRIDE;
        /* A running lane's memory is its own, as its PC is. */
        if (l->status != XPU_LANE_RUNNING) {
            uint64_t *reg = off < XPU_LANE_MEM_SIZE ? &l->mem_offset
                                                    : &l->mem_size;

            *reg = deposit64(*reg, off & 4 ? 32 : 0, 32, val);
        }
        return;
    }
    if (addr < XPU_REG_LANE_BASE) {
        return;
    }
    off = addr - XPU_REG_LANE_BASE;
    if (off / XPU_REG_LANE_STRIDE >= s->nr_lanes) {
        return;
    }
    l = &s->lanes[off / XPU_REG_LANE_STRIDE];
    switch (off % XPU_REG_LANE_STRIDE) {
    case XPU_LANE_PC: /* a running lane's PC is its own */
        if (l->status != XPU_LANE_RUNNING) {
            l->pc = deposit64(l->pc, 0, 32, val);
        }
        break;
    case XPU_LANE_PC + 4:
        if (l->status != XPU_LANE_RUNNING) {
            l->pc = deposit64(l->pc, 32, 32, val);
        }
        break;
    case XPU_LANE_CTRL:
        xpu_lane_ctrl(s, l, val);
        break;
    case XPU_LANE_WINDOWS:
        l->windows = val;
        break;
    }
}

static void xpu_reg_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    xpu_reg_write32(opaque, addr, val);
    if (size == 8) {
        xpu_reg_write32(opaque, addr + 4, val >> 32);
    }
}

static const MemoryRegionOps xpu_reg_ops = {
    .read = xpu_reg_read,
    .write = xpu_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ---- Device -------------------------------------------------------------- */

static void xpu_realize(PCIDevice *pdev, Error **errp)
{
    XpuState *s = XPU(pdev);
    Error *err = NULL;

    if (!s->nr_lanes || s->nr_lanes > XPU_LANES_MAX) {
        error_setg(errp, "xpu: lanes must be 1..%d", XPU_LANES_MAX);
        return;
    }
    if (s->mem_size < XPU_MEM_MIN || s->mem_size > XPU_MEM_MAX ||
        !is_power_of_2(s->mem_size)) {
        error_setg(errp, "xpu: mem-size must be a power of 2, 64K..4G");
        return;
    }
    memory_region_init_ram(&s->mem, OBJECT(s), "xpu.mem", s->mem_size, &err);
    if (err) {
        error_propagate(errp, err);
        return;
    }
    s->mem_ptr = memory_region_get_ram_ptr(&s->mem);
    memory_region_init_io(&s->regs, OBJECT(s), &xpu_reg_ops, s, "xpu.regs",
                          XPU_BAR_REGS_SIZE);
    pci_register_bar(pdev, XPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    pci_register_bar(pdev, XPU_BAR_MEM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->mem);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, xpu_tick, s);
    qatomic_inc(&xpu_devices);
}

static void xpu_exit(PCIDevice *pdev)
{
    XpuState *s = XPU(pdev);

    timer_free(s->timer);
    qatomic_dec(&xpu_devices);
}

/* Lanes stop and counters clear; the memory keeps its contents. */
static void xpu_reset(DeviceState *dev)
{
    XpuState *s = XPU(dev);

    timer_del(s->timer);
    memset(s->lanes, 0, sizeof(s->lanes));
    memset(s->windows, 0, sizeof(s->windows));
    s->enforce = false;
    for (int i = 0; i < XPU_CNT_NUM; i++) {
        qatomic_set(&s->counters[i], 0);
    }
}

static Property xpu_properties[] = {
    DEFINE_PROP_SIZE("mem-size", XpuState, mem_size, 16 * MiB),
    DEFINE_PROP_UINT32("lanes", XpuState, nr_lanes, 4),
    DEFINE_PROP_END_OF_LIST(),
};

/* Lanes mid-program and the peers' counts are not worth carrying over. */
static const VMStateDescription vmstate_xpu = {
    .name = "xpu",
    .unmigratable = 1,
};

static void xpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = xpu_realize;
    k->exit = xpu_exit;
    k->vendor_id = XPU_PCI_VENDOR_ID;
    k->device_id = XPU_PCI_DEVICE_ID;
    k->revision = XPU_PCI_REVISION;
    k->class_id = XPU_PCI_CLASS;
    dc->desc = "RHiNET-NG accelerator stand-in (xpu)";
    dc->reset = xpu_reset;
    dc->vmsd = &vmstate_xpu;
    device_class_set_props(dc, xpu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo xpu_info = {
    .name = TYPE_XPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(XpuState),
    .class_init = xpu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void xpu_register_types(void)
{
    type_register_static(&xpu_info);
}

type_init(xpu_register_types)
