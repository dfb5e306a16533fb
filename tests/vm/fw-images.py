#!/usr/bin/env python3
"""The firmware images vm_firmware hands the guests (firmware-image.md).

    fw-images.py OUTDIR [ELF]

Packs with scripts/mkfw.py, then spoils copies the ways the tests need:
  qemu-1.1.7.bin      good, for board qemu (any payload: the engine core
                      checks and records images, it does not run them)
  qemu-1.2.0.bin      good, the one `devlink dev flash` stores
  qemu-contract2.bin  good CRCs, contract major 2: the driver refuses it
  qemu-badcrc.bin     version 1.1.8, header fine, a payload byte flipped:
                      the card refuses it (BAD_IMAGE)
With ELF (the engine's rhinet-fw.elf), for the soft core (vm_firmware_softcore):
  qemu-softcore-1.1.7.bin    the engine's image, version 1.1.7
  qemu-softcore-garbage.bin  version 1.1.9, random bytes with good CRCs:
                             the card takes it, the core cannot run it
"""
import os
import pathlib
import struct
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import mkfw  # noqa: E402


def pack(out, version, payload, board="qemu"):
    src = out / "payload.tmp"
    src.write_bytes(payload)
    img = out / f"{board}-{version}.bin"
    subprocess.run([sys.executable, str(REPO / "scripts/mkfw.py"),
                    "--board", board, "--version", version,
                    "--name", f"vm_firmware {version}", str(src), str(img)],
                   check=True)
    src.unlink()
    return bytearray(img.read_bytes())


def reseal(image):
    """The header's own CRC again, after a field changed."""
    image[60:64] = struct.pack("<I", mkfw.crc32c(bytes(image[:60])))
    return image


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    # Three chunks and a bit: the download's 64 KiB chunking is exercised.
    payload = os.urandom(3 * 65536 + 1000)
    pack(out, "1.1.7", payload)
    pack(out, "1.2.0", payload[::-1])
    image = pack(out, "1.1.8", payload)
    (out / "qemu-1.1.8.bin").unlink()
    bad = bytearray(image)
    bad[64 + 70000] ^= 0xFF
    (out / "qemu-badcrc.bin").write_bytes(bad)
    image[8:10] = struct.pack("<H", 2)  # contract_major
    (out / "qemu-contract2.bin").write_bytes(reseal(image))
    if len(sys.argv) > 2:
        elf = pathlib.Path(sys.argv[2]).read_bytes()
        pack(out, "1.1.7", elf, "qemu-softcore")
        pack(out, "1.1.9", os.urandom(len(elf)), "qemu-softcore")
        (out / "qemu-softcore-1.1.9.bin").rename(
            out / "qemu-softcore-garbage.bin")


if __name__ == "__main__":
    main()
