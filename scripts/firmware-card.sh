#!/usr/bin/env bash
# The soft core's link firmware images for qemu-system-riscv32 (virt
# machine): firmware/card/ (card.h over the link to the QEMU device, the
# start-up code) with the test and benchmark programs of
# tests/softcore_link/. Same toolchain and rules as scripts/firmware-rv32.sh:
# rv32imac, freestanding, picolibc, and no heap, thread or C++ runtime
# symbol in an image. See Documentation/hardware/soft-core.md.
#
#   link-test.elf        the softcore_link test's firmware (small FIFOs)
#   link-bench-shm.elf   the benchmark over the shared-memory rings
#   link-bench-uart.elf  the benchmark with every byte through the UART
#
# Usage: scripts/firmware-card.sh [SOURCE_DIR [OUT_DIR]]
set -euo pipefail

SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd)
OUT=${2:-$SRC/build/firmware-card}
PREFIX=riscv64-unknown-elf-

fail() {
	echo "firmware-card: FAIL: $*" >&2
	exit 1
}

command -v "${PREFIX}gcc" >/dev/null 2>&1 ||
	fail "${PREFIX}gcc not found; run 'bash scripts/setup-deps.sh'"

CFLAGS=(-march=rv32imac -mabi=ilp32 --specs=picolibc.specs
	-std=c11 -ffreestanding -O2 -Wall -Wextra -Werror -pedantic
	-ffunction-sections -fdata-sections
	-I"$SRC/firmware/card" -I"$SRC/tests/softcore_link" -I"$SRC/firmware/include" -I"$SRC/include/hw")
LDFLAGS=(-nostartfiles -T "$SRC/firmware/card/virt.ld" -Wl,--gc-sections)
CARD=(firmware/card/start.S firmware/card/virt.c firmware/card/card_link.c
	firmware/card/kept_doorbells.c)

FORBIDDEN='^(malloc|free|calloc|realloc|aligned_alloc|posix_memalign|operator new.*|operator delete.*|__cxa_.*|pthread_.*)$'

# image NAME TRANSPORT MAIN [DEFINES...]
image() {
	local name=$1 transport=$2 main=$3
	shift 3
	local elf="$OUT/$name.elf" bad
	"${PREFIX}gcc" "${CFLAGS[@]}" "$@" "${LDFLAGS[@]}" -o "$elf" \
		"${CARD[@]/#/$SRC/}" "$SRC/firmware/card/transport_$transport.c" \
		"$SRC/$main" || fail "$name does not build"
	bad=$("${PREFIX}nm" -C "$elf" | sed -nE 's/^[0-9a-f ]* [A-Za-z] //p' |
		grep -E "$FORBIDDEN" | sort -u || true)
	[[ -z "$bad" ]] || fail "forbidden symbols in $name: $bad"
}

mkdir -p "$OUT"
image link-test shm tests/softcore_link/fw_test.c \
	-DRHN_LINK_CORE_DB_FIFO=64 -DRHN_LINK_CORE_INLINE_SLOTS=4 \
	-DRHN_LINK_CORE_RX_FRAMES=8 -DRHN_LINK_CORE_TWIN_BYTES=4096
image link-bench-shm shm tests/softcore_link/fw_bench.c
image link-bench-uart uart tests/softcore_link/fw_bench.c
"${PREFIX}size" "$OUT"/link-*.elf
