#!/usr/bin/env python3
"""The xpu device model alone, driven through QEMU's qtest protocol (no
guest): two xpus on a q35 machine, their BARs placed by hand. A lane program
on the first exercises every command; the bus counters must tell host RAM
from the second xpu's BAR (peer-to-peer) exactly; each fault has its error
code; bus mastering off leaves nothing reachable. Then windows: once
enforcement is on, a lane reaches only the bus ranges its windows give it,
and anything else faults WINDOW without touching the bus. Then ALU,
BRANCH and the indirect operand flags: results, loops, lanes taking
tickets in turn, precise faults, a runaway loop stopped by ABORT. Last, a
lane's memory bound (XPU_LANE_MEM_*): offsets relative to it, and every
kind of access outside it faults LOCAL, touches nothing and is counted.

    xpu_qtest.py ENV_FILE   (QEMU=... in it, as tests/vm/prepare.sh writes)
"""
import re
import struct
import subprocess
import sys

sys.dont_write_bytecode = True

# The contract's numbers (include/hw/xpu/xpu.h), checked against the header
# below so the two cannot drift apart.
HDR = {
    "XPU_ID_VALUE": 0x31555058, "XPU_VERSION_VALUE": 1,
    "XPU_REG_MEM_SIZE": 0x008, "XPU_REG_LANES": 0x010, "XPU_REG_CTRL": 0x014,
    "XPU_REG_CNT_BASE": 0x100, "XPU_REG_LANE_BASE": 0x400,
    "XPU_REG_LANE_STRIDE": 0x20, "XPU_LANE_PC": 0x00, "XPU_LANE_CTRL": 0x08,
    "XPU_LANE_STATUS": 0x0C, "XPU_LANE_ERROR": 0x10,
    "XPU_LANE_EXECUTED": 0x18, "XPU_PCI_DEVICE_ID": 0x5850,
    "XPU_CMD_SIZE": 32, "XPU_CTRL_ENFORCE": 1 << 1, "XPU_REG_STATUS": 0x018,
    "XPU_STATUS_ENFORCING": 1, "XPU_REG_WINDOWS": 0x01C,
    "XPU_WINDOWS_MAX": 16, "XPU_REG_WINDOW_BASE": 0x200,
    "XPU_REG_WINDOW_STRIDE": 0x10, "XPU_WINDOW_ADDR": 0x00,
    "XPU_WINDOW_SIZE": 0x08, "XPU_LANE_WINDOWS": 0x14,
    "XPU_OP_NUM": 10, "XPU_IND_A": 1 << 4, "XPU_IND_B": 1 << 5,
    "XPU_IND_IMM": 1 << 6, "XPU_REG_LANE_MEM_BASE": 0x800,
    "XPU_REG_LANE_MEM_STRIDE": 0x10, "XPU_LANE_MEM_OFFSET": 0x00,
    "XPU_LANE_MEM_SIZE": 0x08,
}
CNT = ["HOST_RD_BYTES", "HOST_RD_COUNT", "HOST_WR_BYTES", "HOST_WR_COUNT",
       "P2P_RD_BYTES", "P2P_RD_COUNT", "P2P_WR_BYTES", "P2P_WR_COUNT",
       "IN_RD_BYTES", "IN_RD_COUNT", "IN_WR_BYTES", "IN_WR_COUNT",
       "CMDS", "FAULTS", "WINDOW_FAULTS", "LOCAL_FAULTS"]
STOP, STORE, COPY, WRITE64, DMA_READ, DMA_WRITE, FADD, POLL, ALU, BRANCH = \
    range(10)
IND_A, IND_B, IND_IMM = 1 << 4, 1 << 5, 1 << 6
ADD, SUB, AND, OR, XOR, SHL, SHR, MUL = range(8)
EQ, NE, LT, GE = range(4)
M64 = (1 << 64) - 1
IDLE, RUNNING, DONE, FAULT = range(4)
E_NONE, E_OPCODE, E_RANGE, E_BUS, E_TIMEOUT, E_WINDOW, E_LOCAL = range(7)

# Where the test puts things: two xpus in slots 4 and 5.
REGS = {4: 0xFE000000, 5: 0xFE001000}
MEM = {4: 0xC0000000, 5: 0xC1000000}
HOST = 0x100000  # a page of guest RAM
UNMAPPED = 0xD0000000  # in the PCI hole, no BAR there

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def check_header(repo):
    text = open(f"{repo}/include/hw/xpu/xpu.h").read()
    for name, value in HDR.items():
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "#define" and parts[1] == name:
                # a number, or (1u << n)
                shift = re.match(r"\((\d+)u? << (\d+)\)", " ".join(parts[2:5]))
                got = (int(shift[1]) << int(shift[2]) if shift else
                       int(parts[2].rstrip("u"), 0))
                check(got == value, f"header {name} = {value:#x} (got {got:#x})")
                break
        else:
            check(False, f"header defines {name}")
    enum = text[text.index("enum xpu_counter {"):]
    names = [w.strip(",") for w in enum[:enum.index("}")].split()
             if w.startswith("XPU_CNT_") and w != "XPU_CNT_NUM"]
    check(names == ["XPU_CNT_" + n for n in CNT], "header counter order")


class Qtest:
    def __init__(self, qemu):
        self.p = subprocess.Popen(
            [qemu, "-M", "q35", "-accel", "qtest", "-qtest", "stdio",
             "-qtest-log", "/dev/null",
             "-display", "none", "-nodefaults", "-m", "128M",
             "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
             "-device", "xpu,addr=4,lanes=4",
             "-device", "xpu,addr=5,lanes=2,mem-size=64K"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        while True:
            out = self.p.stdout.readline()
            if not out:
                raise RuntimeError(f"qemu gone after {line!r}")
            if not out.startswith("IRQ"):
                break
        if not out.startswith("OK"):
            raise RuntimeError(f"{line!r}: {out.strip()}")
        return out.split()[1] if len(out.split()) > 1 else None

    def cfg_addr(self, slot, reg):
        self.cmd(f"outl 0xcf8 {0x80000000 | slot << 11 | reg:#x}")

    def cfg_read(self, slot, reg):
        self.cfg_addr(slot, reg)
        return int(self.cmd("inl 0xcfc"), 16)

    def cfg_write(self, slot, reg, val):
        self.cfg_addr(slot, reg)
        self.cmd(f"outl 0xcfc {val:#x}")

    def readl(self, addr):
        return int(self.cmd(f"readl {addr:#x}"), 16)

    def readq(self, addr):
        return int(self.cmd(f"readq {addr:#x}"), 16)

    def writel(self, addr, val):
        self.cmd(f"writel {addr:#x} {val:#x}")

    def writeq(self, addr, val):
        self.cmd(f"writeq {addr:#x} {val:#x}")

    def write(self, addr, data):
        self.cmd(f"write {addr:#x} {len(data)} 0x{data.hex()}")

    def read(self, addr, n):
        return bytes.fromhex(self.cmd(f"read {addr:#x} {n}")[2:])

    def step(self, ns):
        self.cmd(f"clock_step {ns}")

    def close(self):
        # (QEMU does not end with the qtest connection)
        self.p.stdin.close()
        self.p.terminate()
        self.p.wait(timeout=10)


def cmd(op, a=0, b=0, imm=0, length=0, flags=0):
    return struct.pack("<BBHIQQQ", op, flags, 0, length, a, b, imm)


def lane_reg(slot, lane, off):
    return REGS[slot] + HDR["XPU_REG_LANE_BASE"] + \
        HDR["XPU_REG_LANE_STRIDE"] * lane + off


def counters(q, slot):
    return {n: q.readq(REGS[slot] + HDR["XPU_REG_CNT_BASE"] + 8 * i)
            for i, n in enumerate(CNT)}


def run(q, lane, pc, program, rounds=50, base=0):
    """Loads program at pc of xpu 4 (past base, a bounded lane's memory
    start), starts lane, lets it run."""
    if program:
        q.write(MEM[4] + base + pc, b"".join(program))
    q.writeq(lane_reg(4, lane, HDR["XPU_LANE_PC"]), pc)
    q.writel(lane_reg(4, lane, HDR["XPU_LANE_CTRL"]), 1)
    for _ in range(rounds):
        q.step(10000)
        if q.readl(lane_reg(4, lane, HDR["XPU_LANE_STATUS"])) != RUNNING:
            break
    return (q.readl(lane_reg(4, lane, HDR["XPU_LANE_STATUS"])),
            q.readl(lane_reg(4, lane, HDR["XPU_LANE_ERROR"])))


def window_reg(w, off):
    return REGS[4] + HDR["XPU_REG_WINDOW_BASE"] + \
        HDR["XPU_REG_WINDOW_STRIDE"] * w + off


def windows(q):
    """Enforcement on xpu 4: window 0 over 256 bytes of the peer's BAR,
    given to lane 0 only."""
    r4 = REGS[4]
    peer = MEM[5] + 0x2000
    check(q.readl(r4 + HDR["XPU_REG_STATUS"]) == 0 and
          q.readl(r4 + HDR["XPU_REG_WINDOWS"]) == HDR["XPU_WINDOWS_MAX"],
          "not enforcing before CTRL ENFORCE; WINDOWS")
    status, _ = run(q, 1, 0x4000, [cmd(WRITE64, b=peer, imm=1), cmd(STOP)])
    check(status == DONE, "without enforcement a lane reaches any address")
    q.writel(r4 + HDR["XPU_REG_CTRL"], HDR["XPU_CTRL_ENFORCE"])
    q.writel(r4 + HDR["XPU_REG_CTRL"], 0)
    check(q.readl(r4 + HDR["XPU_REG_STATUS"]) ==
          HDR["XPU_STATUS_ENFORCING"], "ENFORCE sticks: writing 0 keeps it")
    q.writeq(window_reg(0, HDR["XPU_WINDOW_ADDR"]), peer)
    q.writeq(window_reg(0, HDR["XPU_WINDOW_SIZE"]), 0x100)
    q.writel(lane_reg(4, 0, HDR["XPU_LANE_WINDOWS"]), 1)
    check(q.readq(window_reg(0, 0)) == peer and
          q.readq(window_reg(0, 8)) == 0x100 and
          q.readl(lane_reg(4, 0, HDR["XPU_LANE_WINDOWS"])) == 1,
          "window 0 and lane 0's WINDOWS read back")
    q.write(peer, bytes(0x110))
    q.write(HOST, bytes(8))
    status, _ = run(q, 0, 0x4100, [cmd(WRITE64, b=peer + 0xF8, imm=0x77),
                                   cmd(STORE, a=0x100, imm=3),
                                   cmd(STOP)])
    check(status == DONE and
          q.read(peer + 0xF8, 8) == struct.pack("<Q", 0x77),
          "lane 0 writes inside its window, and its own memory")
    cases = [
        ("a DMA across the window's end", 0,
         [cmd(DMA_WRITE, a=0x300, b=peer + 0xF8, length=16)], peer + 0x100),
        ("host RAM outside every window", 0, [cmd(WRITE64, b=HOST, imm=5)],
         HOST),
        ("the window from a lane not given it", 1,
         [cmd(WRITE64, b=peer, imm=5)], peer),
    ]
    pc = 0x4200
    for what, lane, prog, untouched in cases:
        status, err = run(q, lane, pc, prog)
        check(status == FAULT and err == E_WINDOW and
              q.read(untouched, 8) == bytes(8),
              f"{what}: WINDOW fault, nothing written ({status}, {err})")
        pc += 0x100
    q.writeq(window_reg(0, HDR["XPU_WINDOW_SIZE"]), 0)
    status, err = run(q, 0, pc, [cmd(DMA_READ, a=0x700, b=peer, length=8)])
    check(status == FAULT and err == E_WINDOW, "a closed window: WINDOW")
    c = counters(q, 4)
    check(c["WINDOW_FAULTS"] == len(cases) + 1 and
          c["FAULTS"] == len(cases) + 1 and c["P2P_WR_COUNT"] == 2 and
          c["HOST_WR_COUNT"] == 0 and c["P2P_RD_COUNT"] == 0,
          f"WINDOW faults counted, no bus access made by them: {c}")


def word(q, off):
    return struct.unpack("<Q", q.read(MEM[4] + off, 8))[0]


def put_words(q, off, *vals):
    q.write(MEM[4] + off, struct.pack(f"<{len(vals)}Q", *vals))


def isa(q):
    """ALU, indirect operands and BRANCH on xpu 4 (enforcement is on: lane
    1 has no window, so its programs stay in their own memory)."""
    x, y = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    ops = [(ADD, x, y, (x + y) & M64), (SUB, x, y, (x - y) & M64),
           (AND, x, y, x & y), (OR, x, y, x | y), (XOR, x, y, x ^ y),
           (SHL, x, 68, (x << 4) & M64), (SHR, y, 4, y >> 4),
           (MUL, x, y, (x * y) & M64)]
    put_words(q, 0x8000, x, y)
    prog = [cmd(ALU, a=0x8100 + 8 * i, b=0x8000 + 8 * (v == y), imm=w,
                length=op) for i, (op, v, w, _) in enumerate(ops)]
    status, _ = run(q, 1, 0x9000, prog + [cmd(STOP)])
    check(status == DONE and
          [word(q, 0x8100 + 8 * i) for i in range(len(ops))] ==
          [r for *_, r in ops],
          "ALU: add sub and or xor shl (imm & 63) shr mul, 64-bit wrapping")

    # Indirect operands: where and what computed by the lane itself.
    put_words(q, 0x8200, 0x8300, 0x8308, 77, 0, 0)
    status, _ = run(q, 1, 0x9400, [
        cmd(STORE, a=0x8200, imm=0x8210, flags=IND_A | IND_IMM),
        cmd(COPY, a=0x8208, b=0x8300, length=8, flags=IND_A),
        cmd(ALU, a=0x8200, b=0x8200, imm=0x8210, length=ADD,
            flags=IND_A | IND_IMM),
        cmd(POLL, a=0x8300, imm=0x8210, flags=IND_IMM | 1, length=3),
        cmd(STOP)])
    check(status == DONE and word(q, 0x8300) == 77 + 0x8300 and
          word(q, 0x8308) == 77,
          "IND_A/IND_IMM: STORE, COPY, ALU, POLL through words "
          f"({status}, {word(q, 0x8300)}, {word(q, 0x8308)})")

    # A loop: sum 0..99 in 100 rounds of 4 commands, BRANCH LT back.
    put_words(q, 0x8400, 0, 0)
    loop = [cmd(ALU, a=0x8408, b=0x8408, imm=0x8400, length=ADD,
                flags=IND_IMM),
            cmd(ALU, a=0x8400, b=0x8400, imm=1, length=ADD),
            cmd(BRANCH, a=0x8400, b=100, imm=0x9800, length=LT),
            cmd(STOP)]
    status, _ = run(q, 1, 0x9800, loop)
    check(status == DONE and word(q, 0x8408) == 4950 and
          q.readq(lane_reg(4, 1, HDR["XPU_LANE_EXECUTED"])) == 3 * 100 + 1,
          "BRANCH LT loops: sum of 0..99, 301 commands executed")
    conds = [(EQ, 5, 5, 1), (EQ, 5, 6, 0), (NE, 5, 6, 1), (NE, 5, 5, 0),
             (LT, 5, 6, 1), (LT, 6, 5, 0), (LT, 1 << 63, 1, 0),
             (GE, 6, 6, 1), (GE, 5, 6, 0), (GE, M64, 0, 1)]
    results = []
    for cond, v, w, _ in conds:
        put_words(q, 0x8500, v, w, 0)
        status, _ = run(q, 1, 0x9A00, [
            cmd(BRANCH, a=0x8500, b=0x8508, imm=0x9A60, length=cond,
                flags=IND_B),
            cmd(STORE, a=0x8510, imm=0),
            cmd(STOP),
            cmd(STORE, a=0x8510, imm=1),
            cmd(STOP)])
        results.append(word(q, 0x8510) if status == DONE else -1)
    check(results == [r for *_, r in conds],
          f"BRANCH conditions (unsigned) with IND_B: {results}")

    # Four lanes take tickets (FADD), wait for their turn (the published
    # count equals their ticket), put a mark, lane << 32 | their count, in
    # the ticket's slot of a ring (address = ring + (ticket & 127) * 8)
    # and publish (count = ticket + 1): 25 times each, a loop each.
    ring, n, lanes = 0xD000, 25, 4
    put_words(q, 0x8600, 0, 0)  # reserve, published
    q.write(MEM[4] + ring, bytes(8 * 128))
    for lane in range(lanes):
        s = 0x8800 + 0x40 * lane  # ticket, slot address, count, mark
        put_words(q, s, 0, 0, 0, lane << 32)
        pc = 0xA000 + 0x400 * lane
        q.write(MEM[4] + pc, b"".join([
            cmd(FADD, a=0x8600, b=s, imm=1),
            cmd(POLL, a=0x8608, imm=s, flags=IND_IMM, length=1000),
            cmd(ALU, a=s + 8, b=s, imm=127, length=AND),
            cmd(ALU, a=s + 8, b=s + 8, imm=3, length=SHL),
            cmd(ALU, a=s + 8, b=s + 8, imm=ring, length=ADD),
            cmd(ALU, a=s + 24, b=s + 24, imm=1, length=ADD),
            cmd(STORE, a=s + 8, imm=s + 24, flags=IND_A | IND_IMM),
            cmd(ALU, a=0x8608, b=s, imm=1, length=ADD),
            cmd(ALU, a=s + 16, b=s + 16, imm=1, length=ADD),
            cmd(BRANCH, a=s + 16, b=n, imm=pc, length=LT),
            cmd(STOP)]))
        q.writeq(lane_reg(4, lane, HDR["XPU_LANE_PC"]), pc)
    for lane in range(lanes):
        q.writel(lane_reg(4, lane, HDR["XPU_LANE_CTRL"]), 1)
    for _ in range(500):
        q.step(10000)
        if all(q.readl(lane_reg(4, ln, HDR["XPU_LANE_STATUS"])) != RUNNING
               for ln in range(lanes)):
            break
    st = [q.readl(lane_reg(4, ln, HDR["XPU_LANE_STATUS"]))
          for ln in range(lanes)]
    marks = struct.unpack("<100Q", q.read(MEM[4] + ring, 800))
    seqs = {ln: [m & 0xFFFFFFFF for m in marks if m >> 32 == ln]
            for ln in range(lanes)}
    check(st == [DONE] * lanes and word(q, 0x8600) == n * lanes and
          word(q, 0x8608) == n * lanes and
          all(seqs[ln] == list(range(1, n + 1)) for ln in range(lanes)),
          f"four looping lanes: 100 tickets, each slot marked once, each "
          f"lane's marks in its order ({st})")

    # Faults stay precise: PC at the command, nothing done.
    put_words(q, 0x8A00, 0x101, 1 << 40, 0)
    cases = [
        ("an ALU op past MUL", [cmd(ALU, a=0x8A10, b=0x8A10, length=8)],
         E_OPCODE),
        ("a condition past GE", [cmd(BRANCH, a=0x8A10, imm=0, length=4)],
         E_OPCODE),
        ("an indirect flag on STOP", [cmd(STOP, flags=IND_A)], E_OPCODE),
        ("a BRANCH target not aligned",
         [cmd(BRANCH, a=0x8A10, b=1, imm=0x10, length=EQ)], E_RANGE),
        ("a BRANCH target past the end",
         [cmd(BRANCH, a=0x8A10, b=1, imm=16 << 20, length=EQ)], E_RANGE),
        ("an indirect word unaligned",
         [cmd(STORE, a=0x8A04, imm=1, flags=IND_A)], E_RANGE),
        ("an indirect word past the end",
         [cmd(STORE, a=16 << 20, imm=1, flags=IND_A)], E_RANGE),
        ("an indirect address unaligned",
         [cmd(STORE, a=0x8A00, imm=1, flags=IND_A)], E_RANGE),
        ("an indirect address past the end",
         [cmd(COPY, a=0x8A08, b=0, length=8, flags=IND_A)], E_RANGE),
        ("POLL on a computed value still times out",
         [cmd(POLL, a=0x8A10, imm=0x8A08, flags=IND_IMM, length=3)],
         E_TIMEOUT),
    ]
    pc = 0xB000
    for what, prog, code in cases:
        put_words(q, 0x8A10, 0)
        status, err = run(q, 1, pc, prog)
        check(status == FAULT and err == code and
              q.readq(lane_reg(4, 1, 0)) == pc and word(q, 0x8A10) == 0,
              f"{what}: FAULT {code}, PC at it (got {status}, {err})")
        pc += 0x100

    # A runaway loop runs until ABORT, other lanes go on beside it.
    status, _ = run(q, 2, 0xC000, [cmd(BRANCH, a=0x8A10, b=0, imm=0xC000,
                                       length=EQ)], rounds=3)
    ran = q.readq(lane_reg(4, 2, HDR["XPU_LANE_EXECUTED"]))
    other, _ = run(q, 1, 0xC100, [cmd(STORE, a=0x8A18, imm=9), cmd(STOP)])
    q.writel(lane_reg(4, 2, HDR["XPU_LANE_CTRL"]), 2)
    check(status == RUNNING and ran > 0 and other == DONE and
          q.readl(lane_reg(4, 2, HDR["XPU_LANE_STATUS"])) == IDLE,
          f"a lane looping forever ({ran} commands) is stopped by ABORT")


def mem_reg(lane, off):
    return REGS[4] + HDR["XPU_REG_LANE_MEM_BASE"] + \
        HDR["XPU_REG_LANE_MEM_STRIDE"] * lane + off


def lane_memory(q):
    """Lane 2 of xpu 4 bounded to [1 MiB, 1 MiB + 64 KiB) of its memory:
    its offsets are relative to that part; outside it, LOCAL."""
    base, size, lane = 1 << 20, 64 << 10, 2
    marks = {0x20: 0x1111, base - 8: 0x2222, base + size: 0x3333}
    for off, v in marks.items():
        put_words(q, off, v)
    q.writeq(mem_reg(lane, HDR["XPU_LANE_MEM_OFFSET"]), base)
    q.writeq(mem_reg(lane, HDR["XPU_LANE_MEM_SIZE"]), size)
    check(q.readq(mem_reg(lane, 0)) == base and
          q.readq(mem_reg(lane, 8)) == size and
          q.readq(mem_reg(1, 8)) == 0, "lane 2's MEM registers read back")

    def bounded(pc, program, rounds=50):
        return run(q, lane, pc, program, rounds, base)

    c0 = counters(q, 4)
    status, err = bounded(0x1000, [cmd(STORE, a=0x20, imm=0x55),
                                   cmd(COPY, a=0x40, b=0x20, length=8),
                                   cmd(FADD, a=0x40, b=0x48, imm=1),
                                   cmd(STOP)])
    check(status == DONE and word(q, base + 0x20) == 0x55 and
          word(q, base + 0x40) == 0x56 and word(q, base + 0x48) == 0x55 and
          word(q, 0x20) == 0x1111,
          f"offsets are relative to MEM_OFFSET ({status}, {err})")
    below = (0x20 - base) & M64  # names BAR2's 0x20, wrapping
    cases = [
        ("STORE just past the end", [cmd(STORE, a=size, imm=9)], E_LOCAL),
        ("STORE wrapping below the start", [cmd(STORE, a=below, imm=9)],
         E_LOCAL),
        ("COPY from across the end",
         [cmd(COPY, a=0x100, b=size - 8, length=16)], E_LOCAL),
        ("COPY into across the end",
         [cmd(COPY, a=size - 8, b=0x100, length=16)], E_LOCAL),
        ("POLL outside", [cmd(POLL, a=size, imm=0)], E_LOCAL),
        ("ALU reading outside",
         [cmd(ALU, a=0x100, b=size + 8, imm=1, length=ADD)], E_LOCAL),
        ("FADD fetching outside", [cmd(FADD, a=0x100, b=size, imm=1)],
         E_LOCAL),
        ("BRANCH to outside",
         [cmd(BRANCH, a=0x20, b=0x55, imm=size, length=EQ)], E_LOCAL),
        ("an indirect operand word outside",
         [cmd(STORE, a=size + 0x100, imm=9, flags=IND_A)], E_LOCAL),
        ("DMA_WRITE of memory across the end",
         [cmd(DMA_WRITE, a=size - 8, b=HOST, length=16)], E_LOCAL),
        ("STORE unaligned inside", [cmd(STORE, a=0x21, imm=9)], E_RANGE),
    ]
    pc = 0x2000
    for what, prog, code in cases:
        status, err = bounded(pc, prog)
        check(status == FAULT and err == code and
              q.readq(lane_reg(4, lane, 0)) == pc,
              f"bounded {what}: FAULT {code}, PC at it ({status}, {err})")
        pc += 0x100
    status, err = bounded(size, [])
    check(status == FAULT and err == E_LOCAL, "a PC outside: LOCAL")
    check(all(word(q, off) == v for off, v in marks.items()),
          "nothing outside the lane's memory was touched")
    c = counters(q, 4)
    local = sum(code == E_LOCAL for *_, code in cases) + 1
    check(c["LOCAL_FAULTS"] - c0["LOCAL_FAULTS"] == local and
          c["FAULTS"] - c0["FAULTS"] == len(cases) + 1 and
          c["HOST_RD_COUNT"] == c0["HOST_RD_COUNT"],
          f"LOCAL faults counted ({local}), no bus access made: {c}")

    # A running lane's bound is its own; 0 opens all of BAR2 again.
    status, _ = bounded(0x3000, [cmd(POLL, a=0x200, imm=1), cmd(STOP)],
                        rounds=2)
    q.writeq(mem_reg(lane, HDR["XPU_LANE_MEM_SIZE"]), 0)
    check(status == RUNNING and q.readq(mem_reg(lane, 8)) == size,
          "MEM_SIZE is not written while the lane runs")
    q.writel(lane_reg(4, lane, HDR["XPU_LANE_CTRL"]), 2)
    q.writeq(mem_reg(lane, HDR["XPU_LANE_MEM_SIZE"]), 0)
    status, _ = run(q, lane, 0xE000, [cmd(STORE, a=0x20, imm=0x77),
                                      cmd(STOP)])
    check(status == DONE and word(q, 0x20) == 0x77,
          "MEM_SIZE 0: the lane names all of BAR2 again")


def main():
    env = dict(line.split("=", 1) for line in
               open(sys.argv[1]).read().splitlines() if "=" in line)
    repo = __file__.rsplit("/tests/vm/", 1)[0]
    check_header(repo)
    q = Qtest(env["QEMU"])
    for slot in (4, 5):
        check(q.cfg_read(slot, 0) == HDR["XPU_PCI_DEVICE_ID"] << 16 | 0x1234,
              f"slot {slot}: the xpu's vendor and device IDs")
        q.cfg_write(slot, 0x10, REGS[slot])
        q.cfg_write(slot, 0x18, MEM[slot])
        q.cfg_write(slot, 0x1C, 0)
        q.cfg_write(slot, 0x04, 0x6)  # memory space, bus master
    r4 = REGS[4]
    check(q.readl(r4) == HDR["XPU_ID_VALUE"] and
          q.readl(r4 + 4) == HDR["XPU_VERSION_VALUE"], "ID and VERSION")
    check(q.readq(r4 + HDR["XPU_REG_MEM_SIZE"]) == 16 << 20, "MEM_SIZE 16M")
    check(q.readq(REGS[5] + HDR["XPU_REG_MEM_SIZE"]) == 64 << 10,
          "MEM_SIZE of mem-size=64K")
    check(q.readl(r4 + HDR["XPU_REG_LANES"]) == 4 and
          q.readl(REGS[5] + HDR["XPU_REG_LANES"]) == 2, "LANES")
    check(all(v == 0 for v in counters(q, 4).values()), "counters start at 0")

    # Every command once. Data at 0x300 (64 bytes), written as the CPU
    # would (not counted).
    data = bytes(range(64))
    q.write(MEM[4] + 0x300, data)
    q.write(MEM[4] + 0x600, struct.pack("<Q", 0))
    peer = MEM[5]
    prog = [
        cmd(STORE, a=0x100, imm=40),
        cmd(FADD, a=0x100, b=0x108, imm=2),
        cmd(COPY, a=0x400, b=0x300, length=64),
        cmd(DMA_WRITE, a=0x400, b=HOST, length=64),
        cmd(DMA_READ, a=0x500, b=HOST, length=64),
        cmd(WRITE64, b=peer + 0x800, imm=0xABCDEF0123456789),
        cmd(DMA_WRITE, a=0x300, b=peer + 0x900, length=64),
        cmd(DMA_READ, a=0x700, b=peer + 0x800, length=8),
        cmd(POLL, a=0x600, imm=7, flags=1),
        cmd(STOP),
    ]
    status, _ = run(q, 0, 0x1000, prog, rounds=5)
    check(status == RUNNING, "lane 0 waits in POLL while mem[0x600] < 7")
    q.write(MEM[4] + 0x600, struct.pack("<Q", 9))
    for _ in range(5):
        q.step(10000)
    status = q.readl(lane_reg(4, 0, HDR["XPU_LANE_STATUS"]))
    check(status == DONE, "POLL GE ends at 9 >= 7, the lane reaches STOP")
    check(q.readq(lane_reg(4, 0, HDR["XPU_LANE_EXECUTED"])) == len(prog),
          "EXECUTED counts every command")
    check(struct.unpack("<QQ", q.read(MEM[4] + 0x100, 16)) == (42, 40),
          "STORE then FADD: 42 in place, the old 40 fetched")
    check(q.read(MEM[4] + 0x400, 64) == data, "COPY")
    check(q.read(HOST, 64) == data, "DMA_WRITE into host RAM")
    check(q.read(MEM[4] + 0x500, 64) == data, "DMA_READ from host RAM")
    check(q.read(peer + 0x800, 8) == struct.pack("<Q", 0xABCDEF0123456789),
          "WRITE64 into the peer's BAR")
    check(q.read(peer + 0x900, 64) == data, "DMA_WRITE into the peer's BAR")
    check(q.read(MEM[4] + 0x700, 8) == q.read(peer + 0x800, 8),
          "DMA_READ from the peer's BAR")
    c = counters(q, 4)
    want = {"HOST_RD_BYTES": 64, "HOST_RD_COUNT": 1, "HOST_WR_BYTES": 64,
            "HOST_WR_COUNT": 1, "P2P_RD_BYTES": 8, "P2P_RD_COUNT": 1,
            "P2P_WR_BYTES": 72, "P2P_WR_COUNT": 2, "IN_RD_BYTES": 0,
            "IN_WR_BYTES": 0, "CMDS": len(prog), "FAULTS": 0}
    check(all(c[k] == v for k, v in want.items()),
          f"counters classify host RAM and peer BARs: {c}")
    check(all(v == 0 for v in counters(q, 5).values()),
          "the peer's own counters: its memory was reached, it did nothing")

    # A program on the peer, with no access outside its memory.
    q.write(MEM[5] + 0x1000, cmd(STORE, a=0x10, imm=5) + cmd(STOP))
    q.writeq(lane_reg(5, 1, 0), 0x1000)
    q.writel(lane_reg(5, 1, HDR["XPU_LANE_CTRL"]), 1)
    q.step(20000)
    check(q.readl(lane_reg(5, 1, HDR["XPU_LANE_STATUS"])) == DONE and
          q.read(MEM[5] + 0x10, 8) == struct.pack("<Q", 5),
          "the peer's lane 1 runs from its own memory")
    check(q.readl(lane_reg(5, 2, HDR["XPU_LANE_STATUS"])) == 0 and
          q.readq(lane_reg(5, 2, 0)) == 0, "a lane past LANES reads 0")

    # Faults, each with its code; the PC stays at the faulting command.
    cases = [
        ("unknown opcode", [cmd(10)], E_OPCODE),
        ("flags on a STORE", [cmd(STORE, a=0x100, flags=1)], E_OPCODE),
        ("STORE unaligned", [cmd(STORE, a=0x101)], E_RANGE),
        ("COPY past the end", [cmd(COPY, a=16 << 20, b=0, length=8)],
         E_RANGE),
        ("DMA longer than XPU_DMA_MAX",
         [cmd(DMA_READ, a=0, b=HOST, length=(1 << 20) + 8)], E_RANGE),
        ("DMA to nothing", [cmd(DMA_WRITE, a=0, b=UNMAPPED, length=8)],
         E_BUS),
        ("WRITE64 into its own BAR", [cmd(WRITE64, b=MEM[4] + 0x100)],
         E_BUS),
        ("POLL out of rounds", [cmd(POLL, a=0x600, imm=1000, length=3)],
         E_TIMEOUT),
    ]
    pc = 0x2000
    for what, prog, code in cases:
        status, err = run(q, 1, pc, prog)
        check(status == FAULT and err == code,
              f"{what}: FAULT, error {code} (got {status}, {err})")
        check(q.readq(lane_reg(4, 1, 0)) == pc, f"{what}: PC at the command")
        pc += 0x100
    check(counters(q, 4)["FAULTS"] == len(cases), "FAULTS counted")
    check(counters(q, 4)["HOST_WR_COUNT"] == 1,
          "a refused access is not counted as bus traffic")

    # Bus mastering off: nothing reachable, not even host RAM.
    q.cfg_write(4, 0x04, 0x2)
    status, err = run(q, 2, 0x3000, [cmd(DMA_READ, a=0, b=HOST, length=8)])
    check(status == FAULT and err == E_BUS, "bus master off: BUS fault")
    q.cfg_write(4, 0x04, 0x6)
    # ABORT stops a lane; START runs it again from PC.
    status, _ = run(q, 3, 0x3100, [cmd(POLL, a=0x600, imm=1000), cmd(STOP)],
                    rounds=2)
    q.writel(lane_reg(4, 3, HDR["XPU_LANE_CTRL"]), 2)
    check(status == RUNNING and
          q.readl(lane_reg(4, 3, HDR["XPU_LANE_STATUS"])) == IDLE,
          "ABORT stops a waiting lane")
    q.writel(r4 + HDR["XPU_REG_CTRL"], 1)
    check(all(v == 0 for v in counters(q, 4).values()), "CTRL clears counters")
    windows(q)
    isa(q)
    lane_memory(q)
    q.close()
    if failures:
        print(f"xpu_qtest: {len(failures)} FAILED")
        return 1
    print("xpu_qtest: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
