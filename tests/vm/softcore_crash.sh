#!/usr/bin/env bash
# The soft core dies, and a device reset brings a new one (QEMU alone, no
# guest kernel: the firmware (SeaBIOS) places the BARs, the monitor reads
# BAR0 as the guest's CPU would):
#   1. the device's core is up: STATUS reads READY, not FATAL;
#   2. its qemu-system-riscv32 is killed: STATUS reads FATAL (what the
#      driver's health check looks for), the shell's FW_STATE crashed (3),
#      and QEMU says why;
#   3. system_reset: a new emulator, STATUS READY again without FATAL,
#      FW_STATE running (2) from flash (HOST_LOADED clear);
#   4. that core killed too, and system_reset with an emulator slow to
#      start (a wrapper sleeps 3 s first): the VM does not wait for it
#      (the monitor answers at once: the device spawns off the BQL), and
#      STATUS reads not ready, neither READY nor FATAL, until the new core
#      says HELLO; then READY.
#   softcore_crash.sh ENV_FILE   (tests/vm/prepare.sh's: QEMU, FIRMWARE)
set -uo pipefail
# shellcheck source=/dev/null
source "${1:?usage: softcore_crash.sh ENV_FILE}"
READY=1 FATAL=4 STATUS=0xc # RHN_STATUS_READY, RHN_STATUS_FATAL, RHN_REG_STATUS
FW_STATE=0x2c # RHN_REG_FW_STATE: STATE in bits 3:0, HOST_LOADED bit 4
dir=$(mktemp -d /tmp/rhn-sc-crash.XXXXXX)
qemu_pid=""
cleanup() {
	[[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid"
	rm -rf "$dir"
}
trap cleanup EXIT
# To stderr: a failure inside $(...) is seen, and the caller exits.
fail() {
	{
		echo "softcore_crash: FAIL: $*"
		sed 's/^/  | /' "$dir/out"
	} >&2
	exit 1
}

# The emulator, slow to start while $dir/slow exists.
# shellcheck disable=SC2016 # expanded by the wrapper
printf '#!/bin/sh\n[ -e "${0%%/*}/slow" ] && sleep 3\nexec qemu-system-riscv32 "$@"\n' \
	>"$dir/slow-core"
chmod +x "$dir/slow-core"

mkfifo "$dir/in"
exec 3<>"$dir/in"
"$QEMU" -M q35 -nodefaults -display none -L /usr/share/seabios \
	-L /usr/share/qemu -monitor stdio \
	-device "rhinet,node-id=2,core=softcore,firmware=$FIRMWARE,softcore-qemu=$dir/slow-core" \
	<&3 >"$dir/out" 2>&1 &
qemu_pid=$!

# hmp CMD: the monitor's answer (up to its next prompt).
hmp() {
	local before
	before=$(grep -c "(qemu)" "$dir/out")
	echo "$1" >&3
	for _ in $(seq 100); do
		(($(grep -c "(qemu)" "$dir/out") > before)) && break
		sleep 0.05
	done
	tr -d '\r' <"$dir/out" | awk -v n="$before" '/\(qemu\)/ { k++ } k == n'
}
core_pid() { pgrep -P "$qemu_pid" -f qemu-system-riscv32; }
# STATUS through BAR0, wherever the BIOS put it (empty while it has not:
# after a reset the BIOS sizes the BARs again and places them where it
# did the first time).
bar0() {
	hmp "info pci" | grep -A6 "1234:4e47" |
		sed -n 's/.*BAR0: 32 bit memory at \(0x[0-9a-f]*\).*/\1/p'
}
bar0_first=""
try_reg() { # OFFSET
	local bar0
	bar0=$(bar0)
	[[ -n $bar0 && ${bar0_first:-$bar0} == "$bar0" ]] || return 0
	hmp "xp /1wx $((bar0 + $1))" | awk '/^[0-9a-f]+:/ { print $2 }'
}
try_status() { try_reg $STATUS; }
# fw_state_is WANT: FW_STATE reads WANT (the shell answers it at once).
fw_state_is() {
	local v
	v=$(try_reg $FW_STATE)
	[[ -n $v ]] && (($1 == v)) || fail "FW_STATE reads ${v:-nothing}, not $1"
	echo "FW_STATE $v"
}
# wait_status WANT_SET WANT_CLEAR: until STATUS has those bits, up to 10 s.
wait_status() {
	local s
	for _ in $(seq 100); do
		s=$(try_status)
		[[ -n $s ]] && (((s & $1) == $1 && !(s & $2))) && { echo "$s"; return 0; }
		sleep 0.1
	done
	fail "STATUS is ${s:-unreadable}, not bits $1 set and $2 clear"
}

for _ in $(seq 200); do
	[[ -n $(core_pid) ]] && grep -q "(qemu)" "$dir/out" && break
	kill -0 "$qemu_pid" 2>/dev/null || fail "QEMU ended"
	sleep 0.05
done
first=$(core_pid)
[[ -n $first ]] || fail "no qemu-system-riscv32 under QEMU"
st=$(wait_status $READY $FATAL) || exit 1
echo "softcore_crash: core $first up, STATUS $st"
bar0_first=$(bar0)

kill -9 "$first"
st=$(wait_status $FATAL 0) || exit 1
fw=$(fw_state_is 3) || exit 1
echo "softcore_crash: core killed, STATUS $st, $fw"
grep -q "the soft core is gone" "$dir/out" || fail "QEMU did not say the core is gone"
grep "the soft core is gone" "$dir/out"

hmp system_reset >/dev/null
second=""
for _ in $(seq 200); do
	second=$(core_pid)
	[[ -n $second && $second != "$first" ]] && break
	sleep 0.05
done
[[ -n $second && $second != "$first" ]] || fail "no new core after system_reset"
st=$(wait_status $READY $FATAL) || exit 1
fw=$(fw_state_is 2) || exit 1
echo "softcore_crash: after system_reset core $second, STATUS $st, $fw"

kill -9 "$second"
wait_status $FATAL 0 >/dev/null || exit 1
touch "$dir/slow"
t0=$(date +%s%N)
hmp system_reset >/dev/null
hmp "info version" | grep -q "[0-9]\.[0-9]" || fail "no answer to info version"
ms=$((($(date +%s%N) - t0) / 1000000))
((ms < 1500)) || fail "the monitor waited $ms ms for the reset's new core"
# Once the BIOS has placed BAR0 again: not ready, not fatal, twice.
seen=""
for _ in $(seq 20); do
	s=$(try_status)
	[[ -n $s ]] && seen="$seen $s"
	[[ $seen == *\ *\ * ]] && break
	sleep 0.3
done
for s in $seen; do
	((s & (READY | FATAL))) &&
		fail "STATUS $s while the new core starts, not 0"
done
[[ $seen == *\ *\ * ]] || fail "STATUS unreadable while the new core starts"
echo "softcore_crash: slow core: monitor answered in $ms ms, STATUS$seen while it starts"
rm "$dir/slow"
st=$(wait_status $READY $FATAL) || exit 1
echo "softcore_crash: then STATUS $st"
hmp quit >/dev/null
wait "$qemu_pid"
qemu_pid=""
echo "softcore_crash: PASS"
