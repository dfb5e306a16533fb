#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Which functions the instructions of each measured path go to.

Reads QEMU's log of the opcount image (qemu-system-riscv32 -d
in_asm,exec,nochain: every translated block's instructions, then one line
per block executed) and the image's symbols (riscv64-unknown-elf-nm), and
counts every instruction executed inside a measured window, outside the
stand-in hardware's brackets, against the function it belongs to. The
image marks both with empty functions (trace_* in
tests/firmware_rv32/opcount/opcount.cpp). Prints, per kind of window, the
instructions per operation and the top functions.

Usage: opcount-profile.py ELF LOG [TOP]   (LOG may be a FIFO)
"""
import bisect
import collections
import re
import subprocess
import sys

WINDOWS = {
    "trace_write_post": "1 posted WRITE: doorbell to engine idle",
    "trace_write_inline": "1 WRITE, inline doorbell: to engine idle",
    "trace_write_rx": "2 received WRITE: frame in to engine idle",
    "trace_ack_rx": "3 ACK: frame in to engine idle",
    "trace_read_req_rx": "4 READ request in to engine idle",
    "trace_read_resp_rx": "4 READ response in to engine idle",
    "trace_isend_rx": "5 isend matched: frame in to engine idle",
    "trace_stream_post": "1 stream: 32 WRITEs, one doorbell, to engine idle",
    "trace_stream_rx": "2 stream: 32 WRITEs in, to engine idle",
    "trace_stream_ack_rx": "1 stream: the ACKs of 32 WRITEs in, to idle",
}


# Functions that call nothing: their instructions are shown per caller.
LEAVES = {"memcpy", "memset", "memcmp", "rhinet::fw::crc32c"}


ROUND_MAC = " (MAC fills and checks CRCs)"
ROUND_BLOCKS = " (every block)"
ROUND_RXW = " (every block and the receive placement block)"
ROUND_TXW = " (every block, the receive placement and the transmit block)"

def symbols(elf):
    out = subprocess.run(
        ["riscv64-unknown-elf-nm", "-C", "-n", elf],
        check=True, capture_output=True, text=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            # Shorter names: no parameter lists, no anonymous namespace.
            name = parts[2].replace("(anonymous namespace)::", "")
            names.append(re.sub(r"\(.*", "", name))
    return addrs, names


def main():
    elf, log = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    addrs, names = symbols(elf)
    by_name = {n: a for a, n in zip(addrs, names)}

    def where(pc):
        i = bisect.bisect_right(addrs, pc) - 1
        return names[i] if i >= 0 else "?"

    begin = {by_name[n]: n for n in WINDOWS}
    out_begin = by_name["trace_outside_begin"]
    out_end = by_name["trace_outside_end"]
    win_end = by_name["trace_window_end"]
    # The image's second round has a MAC that fills and checks the CRCs,
    # its third every optional block, its fourth the receive placement
    # block besides: their windows are counted apart.
    round_mac = by_name["trace_round_mac"]
    round_blocks = by_name["trace_round_blocks"]
    round_rxw = by_name["trace_round_rxw"]
    round_txw = by_name["trace_round_txw"]
    suffix = ""
    marks = set(begin) | {out_begin, out_end, win_end, round_mac, round_blocks,
                          round_rxw, round_txw}

    blocks = {}  # block start pc -> [instruction pcs]
    pending = None
    current = None  # the window being counted
    outside = False
    caller = leaf_caller = "?"
    per_fn = collections.defaultdict(collections.Counter)
    windows = collections.Counter()
    insn = re.compile(r"^0x([0-9a-f]+):\s")
    trace = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("Trace"):
                pending = None
                m = trace.match(line)
                if not m:
                    continue
                pc = int(m.group(1), 16)
                if pc in marks:
                    if pc in begin:
                        current = (begin[pc], suffix)
                        windows[current] += 1
                        outside = False
                    elif pc == win_end:
                        current = None
                    elif pc == out_begin:
                        outside = True
                    elif pc == out_end:
                        outside = False
                    elif pc == round_mac:
                        suffix = ROUND_MAC
                    elif pc == round_blocks:
                        suffix = ROUND_BLOCKS
                    elif pc == round_rxw:
                        suffix = ROUND_RXW
                    elif pc == round_txw:
                        suffix = ROUND_TXW
                    continue
                if current is None or outside:
                    continue
                counter = per_fn[current]
                fn = where(pc)
                if fn in LEAVES:
                    # A leaf's instructions go to its caller too: the
                    # block run just before its entry is the caller's.
                    if by_name.get(fn) == pc:
                        leaf_caller = caller
                    fn = f"{fn} <- {leaf_caller}"
                else:
                    caller = fn
                for ipc in blocks.get(pc, ()):
                    counter[fn] += 1
            elif line.startswith("IN:"):
                pending = []
            elif pending is not None:
                m = insn.match(line)
                if m:
                    ipc = int(m.group(1), 16)
                    if not pending:
                        blocks[ipc] = pending
                    pending.append(ipc)
    for suffix in ("", ROUND_MAC, ROUND_BLOCKS, ROUND_RXW, ROUND_TXW):
        for mark, what in WINDOWS.items():
            key = (mark, suffix)
            n = windows[key]
            if not n:
                continue
            counter = per_fn[key]
            total = sum(counter.values())
            print(f"{what}{suffix}: {total / n:.0f} instructions per "
                  f"operation ({n} operations)")
            for name, count in counter.most_common(top):
                print(f"  {count / n:8.0f}  {100 * count / total:5.1f}%  "
                      f"{name}")
            print()


if __name__ == "__main__":
    main()
