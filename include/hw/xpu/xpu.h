/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * xpu, the accelerator stand-in: PCI identity, registers, counters and the
 * lane programs' command format. Shared by the QEMU device
 * (qemu_device/xpu.c), the Linux driver (kernel/xpu) and the tests.
 * Described in Documentation/hardware/xpu.md.
 *
 * All multi-byte values are little-endian.
 */
#ifndef XPU_HW_XPU_H
#define XPU_HW_XPU_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* PCI identity: QEMU's test vendor, as the NIC's (hw_regs.h) */
#define XPU_PCI_VENDOR_ID 0x1234
#define XPU_PCI_DEVICE_ID 0x5850 /* "XP" */
#define XPU_PCI_CLASS 0x1200 /* processing accelerator */
#define XPU_PCI_REVISION 0x01

/* BARs */
#define XPU_BAR_REGS 0 /* registers below, 32-bit MMIO */
#define XPU_BAR_REGS_SIZE 0x1000
#define XPU_BAR_MEM 2 /* the device's memory: 64-bit, prefetchable RAM */

#define XPU_ID_VALUE 0x31555058u /* "XPU1" */
#define XPU_VERSION_VALUE 1u
#define XPU_LANES_MAX 32

/*
 * Registers (BAR0). 64-bit registers are read as one 8-byte access or as
 * two 4-byte halves, low first.
 */
#define XPU_REG_ID 0x000 /* RO XPU_ID_VALUE */
#define XPU_REG_VERSION 0x004 /* RO XPU_VERSION_VALUE */
#define XPU_REG_MEM_SIZE 0x008 /* RO 64: bytes of BAR2 */
#define XPU_REG_LANES 0x010 /* RO lanes this device runs */
#define XPU_REG_CTRL 0x014 /* WO XPU_CTRL_* */
#define XPU_CTRL_CLEAR_COUNTERS (1u << 0)
/* Enforce the windows from now until reset (it cannot be turned off). */
#define XPU_CTRL_ENFORCE (1u << 1)
#define XPU_REG_STATUS 0x018 /* RO XPU_STATUS_* */
#define XPU_STATUS_ENFORCING (1u << 0)
#define XPU_REG_WINDOWS 0x01c /* RO windows of this device */

/*
 * Bus counters (RO, 64-bit each), by who made the access and what it
 * reached. "Out" accesses are the device's own (its lanes): to host RAM, or
 * peer-to-peer to another device's BAR (memory or registers). "In" accesses
 * are a peer device's DMA into this device's memory. The CPU's loads and
 * stores to BAR2 are not bus traffic of a device and are not counted.
 */
#define XPU_REG_CNT_BASE 0x100
enum xpu_counter {
	XPU_CNT_HOST_RD_BYTES,
	XPU_CNT_HOST_RD_COUNT,
	XPU_CNT_HOST_WR_BYTES,
	XPU_CNT_HOST_WR_COUNT,
	XPU_CNT_P2P_RD_BYTES,
	XPU_CNT_P2P_RD_COUNT,
	XPU_CNT_P2P_WR_BYTES,
	XPU_CNT_P2P_WR_COUNT,
	XPU_CNT_IN_RD_BYTES,
	XPU_CNT_IN_RD_COUNT,
	XPU_CNT_IN_WR_BYTES,
	XPU_CNT_IN_WR_COUNT,
	XPU_CNT_CMDS, /* commands the lanes executed */
	XPU_CNT_FAULTS, /* lanes stopped by a fault */
	XPU_CNT_WINDOW_FAULTS, /* of them, bus accesses outside the windows */
	XPU_CNT_LOCAL_FAULTS, /* of them, BAR2 offsets outside the lane's memory */
	XPU_CNT_NUM
};
#define XPU_REG_CNT(i) (XPU_REG_CNT_BASE + 8 * (i))

/*
 * Windows: the bus address ranges the lanes may reach. Window W is
 * [BASE, BASE + SIZE) (SIZE 0: none); a lane reaches the windows whose
 * bits are set in its WINDOWS register. While enforcing
 * (XPU_STATUS_ENFORCING), a lane's WRITE64, DMA_READ or DMA_WRITE whose
 * range is not inside one of its windows faults with XPU_ERR_WINDOW and
 * reaches nothing; without enforcement every address is open. A window's
 * registers may be written at any time: the lanes see the new range from
 * their next command on.
 */
#define XPU_WINDOWS_MAX 16
#define XPU_REG_WINDOW_BASE 0x200
#define XPU_REG_WINDOW_STRIDE 0x10
#define XPU_REG_WINDOW(w) (XPU_REG_WINDOW_BASE + XPU_REG_WINDOW_STRIDE * (w))
#define XPU_WINDOW_ADDR 0x00 /* RW 64: the first bus address */
#define XPU_WINDOW_SIZE 0x08 /* RW 64: bytes; 0 closes the window */

/*
 * Lanes: lane L's registers at XPU_REG_LANE(L). Writing XPU_LANE_CTRL_START
 * to CTRL runs the program at PC (an offset in BAR2) until a STOP, a fault
 * or an ABORT; a lane that is running ignores START.
 */
#define XPU_REG_LANE_BASE 0x400
#define XPU_REG_LANE_STRIDE 0x20
#define XPU_REG_LANE(l) (XPU_REG_LANE_BASE + XPU_REG_LANE_STRIDE * (l))
#define XPU_LANE_PC 0x00 /* RW 64: next command's offset */
#define XPU_LANE_CTRL 0x08 /* WO XPU_LANE_CTRL_* */
#define XPU_LANE_STATUS 0x0c /* RO enum xpu_lane_status */
#define XPU_LANE_ERROR 0x10 /* RO enum xpu_lane_error of the last fault */
#define XPU_LANE_WINDOWS 0x14 /* RW bit W: the lane reaches window W */
#define XPU_LANE_EXECUTED 0x18 /* RO 64: commands run since START */
#define XPU_LANE_CTRL_START 1u
#define XPU_LANE_CTRL_ABORT 2u

/*
 * A lane's memory: the part of BAR2 its programs work in, [MEM_BASE,
 * MEM_BASE + MEM_SIZE). With MEM_SIZE 0 (after reset) it is all of BAR2 and
 * the offsets are BAR2's. Otherwise every offset the lane uses (its PC,
 * the a and b fields, branch targets, indirect operand words) is relative
 * to MEM_BASE, and one whose range is not inside [0, MEM_SIZE) faults
 * XPU_ERR_LOCAL and reaches nothing: the driver gives each open file such
 * a part, so one file's lanes cannot touch another's memory, while the
 * programs stay the same wherever their memory lies. Both registers are
 * written while the lane is not running (ignored while it runs).
 */
#define XPU_REG_LANE_MEM_BASE 0x800
#define XPU_REG_LANE_MEM_STRIDE 0x10
#define XPU_REG_LANE_MEM(l) \
	(XPU_REG_LANE_MEM_BASE + XPU_REG_LANE_MEM_STRIDE * (l))
#define XPU_LANE_MEM_OFFSET 0x00 /* RW 64: where the lane's memory starts */
#define XPU_LANE_MEM_SIZE 0x08 /* RW 64: its bytes; 0: all of BAR2 */

enum xpu_lane_status {
	XPU_LANE_IDLE = 0, /* never started, or aborted */
	XPU_LANE_RUNNING = 1,
	XPU_LANE_DONE = 2, /* reached STOP */
	XPU_LANE_FAULT = 3, /* XPU_LANE_ERROR says why; PC at the command */
};

enum xpu_lane_error {
	XPU_ERR_NONE = 0,
	XPU_ERR_OPCODE = 1, /* unknown opcode or flags */
	XPU_ERR_RANGE = 2, /* an offset or length outside BAR2, or unaligned */
	XPU_ERR_BUS = 3, /* a bus address reached nothing, or was refused */
	XPU_ERR_TIMEOUT = 4, /* a POLL ran out of rounds */
	XPU_ERR_WINDOW = 5, /* a bus address outside the lane's windows */
	XPU_ERR_LOCAL = 6, /* an offset outside the lane's memory (MEM_SIZE) */
};

/*
 * A lane program: 32-byte commands at 32-byte aligned offsets of BAR2,
 * executed in order. "mem[x]" is BAR2 at offset x; "bus[x]" is bus
 * address x as the device's DMA reaches it (host RAM, or a peer's BAR).
 * 8-byte operands must be 8-byte aligned.
 */
enum xpu_opcode {
	XPU_OP_STOP = 0, /* the lane is DONE */
	XPU_OP_STORE = 1, /* mem[a] = imm (8 bytes) */
	XPU_OP_COPY = 2, /* mem[a, a+len) = mem[b, b+len) (memmove) */
	XPU_OP_WRITE64 = 3, /* bus[b] = imm, one 8-byte write */
	XPU_OP_DMA_READ = 4, /* mem[a, a+len) = bus[b, b+len) */
	XPU_OP_DMA_WRITE = 5, /* bus[b, b+len) = mem[a, a+len) */
	XPU_OP_FADD = 6, /* atomically: mem[b] = mem[a]; mem[a] += imm */
	XPU_OP_POLL = 7, /* wait until mem[a] == imm (or >= with flags GE) */
	XPU_OP_ALU = 8, /* mem[a] = mem[b] <len: enum xpu_alu> imm */
	XPU_OP_BRANCH = 9, /* if mem[a] <len: enum xpu_cond> b: PC = imm */
};
#define XPU_OP_NUM 10
#define XPU_POLL_GE 1u /* flags of POLL: unsigned mem[a] >= imm ends it */

/*
 * Operand flags, valid on every command but STOP: the operand field is
 * not the value itself but the offset of an 8-byte word of BAR2 that holds
 * it, read when the command runs. With ALU and indirect addresses a lane
 * computes where to go (a ring slot from a ticket), with IND_IMM and
 * IND_B it stores, writes, waits for or compares a value it computed.
 * The operand word itself must be aligned and inside BAR2 (else RANGE);
 * what it holds is then checked as the field would be.
 */
#define XPU_IND_A (1u << 4) /* a is mem[a] */
#define XPU_IND_B (1u << 5) /* b is mem[b] */
#define XPU_IND_IMM (1u << 6) /* imm is mem[imm] */
#define XPU_IND_ALL (XPU_IND_A | XPU_IND_B | XPU_IND_IMM)

/* ALU: mem[a] = mem[b] op imm, 64-bit, wrapping; shifts take imm & 63. */
enum xpu_alu {
	XPU_ALU_ADD = 0,
	XPU_ALU_SUB = 1,
	XPU_ALU_AND = 2,
	XPU_ALU_OR = 3,
	XPU_ALU_XOR = 4,
	XPU_ALU_SHL = 5,
	XPU_ALU_SHR = 6, /* logical */
	XPU_ALU_MUL = 7, /* low 64 bits */
	XPU_ALU_NUM
};

/*
 * BRANCH: compares mem[a] with b (unsigned 64-bit; with XPU_IND_B with
 * mem[b]); if the condition holds the next command is at imm (32-byte
 * aligned, inside BAR2, else RANGE whether taken or not), otherwise the
 * one after. A loop is not special: the device runs a bounded number of
 * commands of each lane per scheduling round, so other lanes and the
 * registers are served, and ABORT stops it.
 */
enum xpu_cond {
	XPU_COND_EQ = 0,
	XPU_COND_NE = 1,
	XPU_COND_LT = 2,
	XPU_COND_GE = 3,
	XPU_COND_NUM
};
/*
 * POLL checks once per scheduling round of the device (about 10 us of the
 * guest's clock), for at most len rounds (0: XPU_POLL_ROUNDS_DEFAULT),
 * then faults with XPU_ERR_TIMEOUT.
 */
#define XPU_POLL_ROUNDS_DEFAULT 100000u
#define XPU_DMA_MAX (1u << 20) /* len of one DMA_READ, DMA_WRITE, COPY */

struct xpu_cmd {
	uint8_t op; /* enum xpu_opcode */
	uint8_t flags;
	uint16_t rsvd; /* 0 */
	uint32_t len;
	uint64_t a; /* an offset in BAR2 */
	uint64_t b; /* an offset in BAR2, or a bus address */
	uint64_t imm;
};
#define XPU_CMD_SIZE 32
#ifndef __cplusplus
_Static_assert(sizeof(struct xpu_cmd) == XPU_CMD_SIZE, "xpu_cmd is 32 bytes");
_Static_assert(XPU_REG_LANE(XPU_LANES_MAX) <= XPU_REG_LANE_MEM_BASE &&
		       XPU_REG_LANE_MEM(XPU_LANES_MAX) <= XPU_BAR_REGS_SIZE,
	       "the lanes' memory registers follow their others, inside BAR0");
_Static_assert(XPU_REG_WINDOW(XPU_WINDOWS_MAX) <= XPU_REG_LANE_BASE,
	       "the windows end before the lanes");
_Static_assert(XPU_OP_NUM <= 256, "an opcode is one byte");
_Static_assert((XPU_IND_ALL & XPU_POLL_GE) == 0 && XPU_IND_ALL <= 0xff,
	       "operand flags fit the flags byte beside POLL's GE");
_Static_assert(XPU_ALU_NUM <= 8 && XPU_COND_NUM <= 4,
	       "ALU ops and conditions are small numbers in len");
#endif

#endif /* XPU_HW_XPU_H */
