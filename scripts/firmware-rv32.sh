#!/usr/bin/env bash
# The freestanding cross build of the engine firmware for the NIC's RISC-V
# soft core (rv32imac, ilp32), as far as the firmware is freestanding
# today: every hardware contract header compiled as C11 and as C++20 (so
# their static asserts hold on a 32-bit target), the firmware sources in
# FW_SOURCES, a small test image linking them, and the instruction-count
# image (scripts/firmware-opcount.sh runs it). Then a symbol check:
# the soft core has no heap, no threads and no C++ runtime, so any
# allocation, thread or __cxa_* symbol fails the build. Prints the image
# size. See Documentation/firmware/soft-core-build.md.
#
# Usage: scripts/firmware-rv32.sh [SOURCE_DIR [OUT_DIR]]
set -euo pipefail

SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd)
OUT=${2:-$SRC/build/firmware-rv32}
PREFIX=riscv64-unknown-elf-

# The engine's sources: every firmware source except the host glue
# (firmware/host/, which allocates), tests, families that exist only in
# test builds (a CMakeLists.txt in their folder) and the image's main.
mapfile -t FW_SOURCES < <(cd "$SRC" && find firmware -name '*.cpp' \
	-not -path '*/tests/*' -not -path 'firmware/host/*' \
	-not -name firmware_main.cpp | sort)
for list in "$SRC"/firmware/ops/*/CMakeLists.txt; do
	[[ -e "$list" ]] || continue
	dir=${list#"$SRC"/}
	dir=${dir%/CMakeLists.txt}
	mapfile -t FW_SOURCES < <(printf '%s\n' "${FW_SOURCES[@]}" | grep -v "^$dir/")
done

fail() {
	echo "firmware-rv32: FAIL: $*" >&2
	exit 1
}

for tool in gcc g++ nm objdump size; do
	command -v "$PREFIX$tool" >/dev/null 2>&1 ||
		fail "$PREFIX$tool not found; install the cross toolchain with" \
			"'bash scripts/setup-deps.sh' (gcc-riscv64-unknown-elf," \
			"binutils-riscv64-unknown-elf, picolibc-riscv64-unknown-elf)"
done
specs=$("${PREFIX}gcc" -print-file-name=picolibc.specs)
[[ -f "$specs" ]] ||
	fail "picolibc.specs not found; install picolibc-riscv64-unknown-elf" \
		"with 'bash scripts/setup-deps.sh'"

# picolibc's release build: its memcpy/memset copy words, not bytes (its
# default build's byte loops were a third of every path's instructions,
# see Documentation/firmware/instruction-counts.md).
ARCH=(-march=rv32imac -mabi=ilp32 --specs=picolibc.specs
	--picolibc-buildtype=release)
WARN=(-Wall -Wextra -Werror -pedantic)
CFLAGS=("${ARCH[@]}" "${WARN[@]}" -std=c11 -ffreestanding -Os)
# No C++ library (the toolchain has none), no exceptions, no RTTI, and no
# guards around local statics (they would call __cxa_guard_*).
# RHN_FW_SOLE_THREAD: the engine is the core's only thread (plain
# accesses for its atomics); RHN_FW_CARD: counters also go to the card's
# counter block.
CXXFLAGS=("${ARCH[@]}" "${WARN[@]}" -std=c++20 -ffreestanding -nostdinc++
	-fno-exceptions -fno-rtti -fno-threadsafe-statics -Os
	-ffunction-sections -fdata-sections -DRHN_FW_SOLE_THREAD -DRHN_FW_CARD
	-I"$SRC/firmware" -I"$SRC/firmware/include" -I"$SRC/include/hw")

rm -rf "$OUT"
mkdir -p "$OUT/contract" "$OUT/obj"

# The contract headers, each on its own: C11 as QEMU and the kernel use
# them, C++20 as the firmware does.
for h in "$SRC"/include/hw/rhinet/*.h; do
	name=$(basename "$h" .h)
	echo "#include \"rhinet/$name.h\"" >"$OUT/contract/$name.c"
	"${PREFIX}gcc" "${CFLAGS[@]}" -I"$SRC/include/hw" \
		-c "$OUT/contract/$name.c" -o "$OUT/contract/$name.c.o" ||
		fail "include/hw/rhinet/$name.h does not compile as C11 for rv32"
	"${PREFIX}g++" "${CXXFLAGS[@]}" -x c++ \
		-c "$OUT/contract/$name.c" -o "$OUT/contract/$name.cpp.o" ||
		fail "include/hw/rhinet/$name.h does not compile as C++20 for rv32"
done

# The per-message path (doorbell, WQE, packet, translation, completion)
# is built for speed: at -Os GCC calls libgcc for every 64-bit shift and
# keeps small copies as calls. The rest (admin, the families) stays small.
HOT='^firmware/(core|engine|requester|responder|transport|translation|completion)/'
objs=()
for s in "${FW_SOURCES[@]}" tests/firmware_rv32/entry.cpp; do
	o="$OUT/obj/$(echo "$s" | tr / _).o"
	opt=()
	[[ "$s" =~ $HOT ]] && opt=(-O2)
	"${PREFIX}g++" "${CXXFLAGS[@]}" "${opt[@]}" -c "$SRC/$s" -o "$o" ||
		fail "$s does not build freestanding for rv32"
	objs+=("$o")
done

# Any symbol, defined or undefined, that needs a heap, threads or the C++
# runtime. Names demangled, so "operator new(unsigned int)" matches.
FORBIDDEN='^(malloc|free|calloc|realloc|aligned_alloc|posix_memalign|operator new.*|operator delete.*|__cxa_.*|pthread_.*)$'
check_symbols() {
	local what=$1
	shift
	local bad
	bad=$("${PREFIX}nm" -C "$@" | sed -nE 's/^[0-9a-f ]* [A-Za-z] //p' |
		grep -E "$FORBIDDEN" | sort -u || true)
	if [[ -n "$bad" ]]; then
		echo "firmware-rv32: forbidden symbols in $what (no heap, threads" \
			"or C++ runtime on the soft core):" >&2
		echo "$bad" | sed 's/^/  /' >&2
		exit 1
	fi
}
check_symbols "the firmware objects" "${objs[@]}"

# No static constructors: the soft core's start-up code runs none, so
# every table is constant or zero-initialized and filled at power-on.
for o in "${objs[@]}"; do
	if "${PREFIX}objdump" -h "$o" | grep -qE '\.(init_array|ctors)'; then
		fail "$(basename "$o") has static constructors (.init_array)"
	fi
done

# The test image, linked by the C driver (g++ would ask for libstdc++,
# which the toolchain lacks): picolibc's minimal start-up code (no
# arguments, no atexit) and its default memory layout.
elf="$OUT/firmware-rv32.elf"
"${PREFIX}gcc" "${ARCH[@]}" --crt0=minimal -Wl,--gc-sections \
	-o "$elf" "${objs[@]}" || fail "the test image does not link"
check_symbols "the test image" "$elf"

# The instruction-count image (tests/firmware_rv32/opcount, run by
# scripts/firmware-opcount.sh): the same firmware objects under a harness
# that drives two engines, with semihosting for its output and exit, placed
# in the RAM of QEMU's virt machine (code at 0x80000000, data after 2 MiB).
opcount_o="$OUT/obj/opcount.o"
"${PREFIX}g++" "${CXXFLAGS[@]}" -c "$SRC/tests/firmware_rv32/opcount/opcount.cpp" \
	-o "$opcount_o" || fail "the instruction-count harness does not build"
engine_objs=()
for o in "${objs[@]}"; do
	[[ "$o" == */tests_firmware_rv32_entry.cpp.o ]] || engine_objs+=("$o")
done
"${PREFIX}gcc" "${ARCH[@]}" --crt0=semihost --oslib=semihost \
	-Wl,--gc-sections -Wl,--defsym=__flash=0x80000000 \
	-Wl,--defsym=__flash_size=0x200000 -Wl,--defsym=__ram=0x80200000 \
	-Wl,--defsym=__ram_size=0x3e00000 -o "$OUT/opcount.elf" \
	"${engine_objs[@]}" "$opcount_o" || fail "the opcount image does not link"
check_symbols "the opcount image" "$OUT/opcount.elf"

# The NIC firmware image, rhinet-fw.elf: the engine on the card
# (firmware/card/firmware_main.cpp, card_runner.cpp) over the socket link
# to the QEMU device (card_link.c and the shared-memory transport), with
# the virt machine's start-up code and memory layout. What the QEMU
# device's soft core (core=softcore) runs.
CARD_CFLAGS=("${ARCH[@]}" "${WARN[@]}" -std=c11 -ffreestanding -O2
	-ffunction-sections -fdata-sections -I"$SRC/firmware/card"
	-I"$SRC/firmware/include" -I"$SRC/include/hw")
main_o="$OUT/obj/firmware_main.o"
"${PREFIX}g++" "${CXXFLAGS[@]}" -c "$SRC/firmware/card/firmware_main.cpp" \
	-o "$main_o" || fail "firmware/card/firmware_main.cpp does not build"
card_objs=()
for c in start.S virt.c card_link.c kept_doorbells.c transport_shm.c; do
	o="$OUT/obj/card_$c.o"
	"${PREFIX}gcc" "${CARD_CFLAGS[@]}" -c "$SRC/firmware/card/$c" -o "$o" ||
		fail "firmware/card/$c does not build"
	card_objs+=("$o")
done
fw="$OUT/rhinet-fw.elf"
"${PREFIX}gcc" "${ARCH[@]}" -nostartfiles -T "$SRC/firmware/card/virt.ld" \
	-Wl,--gc-sections -o "$fw" "${engine_objs[@]}" "$main_o" \
	"${card_objs[@]}" || fail "the firmware image does not link"
check_symbols "the firmware image" "$fw"
# The image's code and data (not its .bss tables) must fit the soft
# core's instruction and data memories: 256 KiB.
read -r text data _ < <("${PREFIX}size" "$fw" | awk 'NR == 2 {print $1, $2}')
(( text + data <= 256 * 1024 )) ||
	fail "rhinet-fw.elf is $((text + data)) bytes of text and data, over 256 KiB"
echo "firmware-rv32: rhinet-fw.elf: $text bytes of text, $data of data" \
	"(limit 262144 together)"

echo "firmware-rv32: ${#FW_SOURCES[@]} firmware source(s) and" \
	"$(find "$OUT/contract" -name '*.c' | wc -l) contract headers built for rv32imac"
"${PREFIX}size" "$elf" "${objs[@]}"
