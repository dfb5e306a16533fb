#!/usr/bin/env bash
# Retired instructions per operation on the engine's paths, on the soft
# core's instruction set: builds the firmware for rv32imac with its
# instruction-count image (scripts/firmware-rv32.sh), runs the image under
# qemu-system-riscv32 -icount (every retired instruction counted exactly),
# prints the counts beside the per-operation budget, and compares each
# average with the committed baseline. See
# Documentation/firmware/instruction-counts.md.
#
# Fails when a count grew by more than TOLERANCE_PCT over the baseline;
# says to update the baseline when one shrank by more than that.
#
# Usage: scripts/firmware-opcount.sh [SOURCE_DIR [OUT_DIR]] [--profile]
#                                    [--update-baseline]
#   --profile          also trace the run and print the top functions of
#                      each path (scripts/opcount-profile.py; ~1 minute)
#   --update-baseline  write the counts measured into the baseline file
set -euo pipefail

TOLERANCE_PCT=5
profile=0
update=0
args=()
for a in "$@"; do
	case "$a" in
	--profile) profile=1 ;;
	--update-baseline) update=1 ;;
	*) args+=("$a") ;;
	esac
done
SRC=$(cd "${args[0]:-$(dirname "$0")/..}" && pwd)
OUT=${args[1]:-$SRC/build/firmware-opcount}
BASELINE=$SRC/tests/firmware_rv32/opcount/baseline.txt

fail() {
	echo "firmware-opcount: FAIL: $*" >&2
	exit 1
}

command -v qemu-system-riscv32 >/dev/null 2>&1 ||
	fail "qemu-system-riscv32 not found; install Debian's qemu-system-misc" \
		"('bash scripts/setup-deps.sh' does)"

mkdir -p "$(dirname "$OUT")"
bash "$SRC/scripts/firmware-rv32.sh" "$SRC" "$OUT" >"$OUT.build.log" 2>&1 ||
	{
		cat "$OUT.build.log" >&2
		fail "the rv32 build failed"
	}
elf=$OUT/opcount.elf

# -icount shift=0: one instruction per virtual nanosecond, and minstret
# reads the exact count of instructions retired. Output and exit go
# through semihosting; no serial port, no firmware (-bios none).
qemu=(qemu-system-riscv32 -machine virt -bios none -m 128M -display none
	-serial none -monitor none -icount shift=0 -chardev "stdio,id=out"
	-semihosting-config "enable=on,target=native,chardev=out" -kernel "$elf")
out=$OUT/opcount.txt
status=0
timeout 120 "${qemu[@]}" >"$out" || status=$?
cat "$out"
[[ $status -eq 0 ]] || fail "the image failed (exit status $status)"

# Lines "opcount: NAME avg N min N max N ...".
measured=$(awk '$1 == "opcount:" && $3 == "avg" { print $2, $4 }' "$out")
[[ -n "$measured" ]] || fail "no counts in the image's output"

if [[ $update -eq 1 ]]; then
	{
		echo "# Average retired instructions per operation, per path, of"
		echo "# tests/firmware_rv32/opcount (scripts/firmware-opcount.sh"
		echo "# --update-baseline writes it). Exact for one toolchain,"
		echo "# picolibc and QEMU; a path may grow by ${TOLERANCE_PCT} % before the"
		echo "# test fails."
		echo "$measured"
	} >"$BASELINE"
	echo "firmware-opcount: baseline written to $BASELINE"
fi

[[ -f "$BASELINE" ]] || fail "no baseline $BASELINE (--update-baseline)"
verdict=0
while read -r name count; do
	base=$(awk -v n="$name" '$1 == n { print $2 }' "$BASELINE")
	if [[ -z "$base" ]]; then
		echo "firmware-opcount: $name: not in the baseline" \
			"(run with --update-baseline)" >&2
		verdict=1
		continue
	fi
	if ((count * 100 > base * (100 + TOLERANCE_PCT))); then
		echo "firmware-opcount: $name: $count instructions, more than" \
			"${TOLERANCE_PCT} % over the baseline's $base" >&2
		verdict=1
	elif ((count * 100 < base * (100 - TOLERANCE_PCT))); then
		echo "firmware-opcount: $name: $count instructions, down from" \
			"$base: update the baseline (--update-baseline)"
	fi
done <<<"$measured"
while read -r name _; do
	[[ -z "$name" || "$name" == \#* ]] && continue
	grep -q "^$name " <<<"$measured" ||
		{
			echo "firmware-opcount: $name: in the baseline, not measured" >&2
			verdict=1
		}
done <"$BASELINE"
[[ $verdict -eq 0 ]] || fail "counts differ from $BASELINE"
echo "firmware-opcount: every path within ${TOLERANCE_PCT} % of the baseline"

if [[ $profile -eq 1 ]]; then
	# The trace goes through a FIFO: it runs to gigabytes.
	fifo=$OUT/trace.fifo
	rm -f "$fifo"
	mkfifo "$fifo"
	python3 "$SRC/scripts/opcount-profile.py" "$elf" "$fifo" 12 &
	reader=$!
	timeout 600 "${qemu[@]}" -d in_asm,exec,nochain -D "$fifo" >/dev/null
	wait "$reader"
	rm -f "$fifo"
fi
