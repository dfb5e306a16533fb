#!/usr/bin/env python3
"""Packs a firmware image a host hands a RHiNET-NG card (hw_fw.h).

    mkfw.py --board NAME --version X.Y.Z --name TEXT PAYLOAD OUT
    mkfw.py --show IMAGE

The board name is one of registers.toml's [[board]] entries; the contract
version is the one registers.toml describes. --show prints an image's
header and checks its CRCs, as the card's shell will.
"""
import argparse
import pathlib
import struct
import sys
import tomllib

REPO = pathlib.Path(__file__).resolve().parent.parent
MAP = REPO / "include/hw/rhinet/registers.toml"
MAGIC = 0x57464852
HEADER = struct.Struct("<IHHHHIIIII28s")  # then the header's own CRC


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def version(text):
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise SystemExit(f"mkfw: version '{text}' is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(p) for p in parts)
    if major > 0xFFFF or minor > 0xFF or patch > 0xFF:
        raise SystemExit(f"mkfw: version '{text}' out of range")
    return major << 16 | minor << 8 | patch


def pack(args, regmap):
    boards = {b["name"]: b["id"] for b in regmap["board"]}
    if args.board not in boards:
        raise SystemExit(f"mkfw: no board '{args.board}' (registers.toml has "
                         f"{', '.join(sorted(boards))})")
    payload = pathlib.Path(args.payload).read_bytes()
    name = args.name.encode()
    if len(name) > 28:
        raise SystemExit("mkfw: --name is longer than 28 bytes")
    c = regmap["contract"]
    head = HEADER.pack(MAGIC, 1, 64, c["version_major"], c["version_minor"],
                       boards[args.board], version(args.version),
                       len(payload), crc32c(payload), 0, name)
    image = head + struct.pack("<I", crc32c(head)) + payload
    out = pathlib.Path(args.out)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_bytes(image)
    tmp.replace(out)


def show(path, regmap):
    image = pathlib.Path(path).read_bytes()
    if len(image) < 64:
        raise SystemExit(f"mkfw: {path}: {len(image)} bytes, no header")
    f = HEADER.unpack(image[:60])
    (magic, hv, hs, cmaj, cmin, board, ver, size, icrc, flags, name) = f
    (hcrc,) = struct.unpack("<I", image[60:64])
    boards = {b["id"]: b["name"] for b in regmap["board"]}
    print(f"magic          {magic:#010x} ({'ok' if magic == MAGIC else 'BAD'})")
    print(f"header         version {hv}, {hs} bytes, CRC "
          f"{'ok' if crc32c(image[:60]) == hcrc else 'BAD'}")
    print(f"contract       {cmaj}.{cmin}")
    print(f"board          {board} ({boards.get(board, 'unknown')})")
    print(f"version        {ver >> 16}.{ver >> 8 & 0xFF}.{ver & 0xFF}")
    print(f"name           {name.rstrip(bytes(1)).decode(errors='replace')}")
    good = len(image) == 64 + size and crc32c(image[64:]) == icrc
    print(f"payload        {size} bytes, CRC {'ok' if good else 'BAD'}")
    return 0 if magic == MAGIC and good and flags == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board")
    ap.add_argument("--version")
    ap.add_argument("--name", default="")
    ap.add_argument("--show", metavar="IMAGE")
    ap.add_argument("payload", nargs="?")
    ap.add_argument("out", nargs="?")
    args = ap.parse_args()
    regmap = tomllib.loads(MAP.read_text())
    if args.show:
        return show(args.show, regmap)
    if not (args.board and args.version and args.payload and args.out):
        ap.error("--board, --version, PAYLOAD and OUT are needed")
    pack(args, regmap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
