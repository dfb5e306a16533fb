#!/bin/sh
# Firmware images: what scripts/mkfw.py packs, the card shell's check
# (fw_image_check, firmware/card/fw_image.c) accepts; every kind of bad
# image gets its own verdict; the two CRC32Cs agree with the standard's
# check value.
#   fw_image.sh FW_IMAGE_CHECK REPO
CHECK=$1
REPO=$2
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "fw_image: FAIL: $*"; exit 1; }
MKFW="python3 $REPO/scripts/mkfw.py"
CAP=4194368
# verdict IMAGE BOARD WANT: the check's verdict number must be WANT.
verdict() {
	out=$("$CHECK" "$1" "$2" 1 "${4:-$CAP}")
	got=$?
	[ "$got" = "$3" ] || fail "$1 for board $2: want verdict $3, got '$out'"
}
# poke FILE OFFSET BYTE: one byte changed in place.
poke() {
	printf "\\$(printf %03o "$3")" |
		dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

[ "$("$CHECK" --crc 123456789)" = 0xe3069283 ] || fail "CRC32C check value"
head -c 70000 /dev/urandom >"$DIR/payload"
$MKFW --board qemu-softcore --version 1.2.3 --name "fw test" \
	"$DIR/payload" "$DIR/ok.bin" || fail "mkfw"
[ "$(stat -c %s "$DIR/ok.bin")" = 70064 ] || fail "image size"
out=$("$CHECK" "$DIR/ok.bin" 2 1 $CAP) || fail "a good image refused: $out"
echo "$out" | grep -q "version 0x010203 board 2 70000 bytes" ||
	fail "header read back: $out"
$MKFW --show "$DIR/ok.bin" >"$DIR/show" || fail "--show of a good image"
grep -q "board          2 (qemu-softcore)" "$DIR/show" || fail "--show board"
grep -q "payload        70000 bytes, CRC ok" "$DIR/show" || fail "--show payload"

verdict "$DIR/ok.bin" 1 5 # RHN_FW_WRONG_BOARD
verdict "$DIR/ok.bin" 2 6 70000 # RHN_FW_TOO_LARGE
cp "$DIR/ok.bin" "$DIR/x.bin"; poke "$DIR/x.bin" 0 0x51
verdict "$DIR/x.bin" 2 2 # RHN_FW_BAD_MAGIC
cp "$DIR/ok.bin" "$DIR/x.bin"; poke "$DIR/x.bin" 40 0x21
verdict "$DIR/x.bin" 2 3 # RHN_FW_BAD_HEADER: the name, under the CRC
cp "$DIR/ok.bin" "$DIR/x.bin"; poke "$DIR/x.bin" 5000 0
poke "$DIR/x.bin" 5001 0
verdict "$DIR/x.bin" 2 7 # RHN_FW_BAD_IMAGE
$MKFW --show "$DIR/x.bin" >/dev/null && fail "--show passed a bad payload"
head -c 30000 "$DIR/ok.bin" >"$DIR/x.bin"
verdict "$DIR/x.bin" 2 1 # RHN_FW_SHORT
head -c 40 "$DIR/ok.bin" >"$DIR/x.bin"
verdict "$DIR/x.bin" 2 1 # RHN_FW_SHORT: not even a header
# A contract this card does not speak: the header's major, CRC redone.
python3 - "$DIR/ok.bin" "$DIR/x.bin" "$REPO/scripts" <<'PY' || fail "rewrite"
import struct, sys
sys.dont_write_bytecode = True  # nothing into the source tree
sys.path.insert(0, sys.argv[3])
from mkfw import crc32c
img = bytearray(open(sys.argv[1], "rb").read())
img[8:10] = struct.pack("<H", 2)
img[60:64] = struct.pack("<I", crc32c(bytes(img[:60])))
open(sys.argv[2], "wb").write(img)
PY
verdict "$DIR/x.bin" 2 4 # RHN_FW_WRONG_CONTRACT
$MKFW --board nosuch --version 1.0.0 "$DIR/payload" "$DIR/y.bin" 2>"$DIR/err" &&
	fail "mkfw packed for an unknown board"
grep -q "no board 'nosuch'" "$DIR/err" || fail "mkfw's message for an unknown board"
$MKFW --board qemu --version 1.2 "$DIR/payload" "$DIR/y.bin" 2>"$DIR/err" &&
	fail "mkfw took a bad version"
echo "fw_image: PASS"
