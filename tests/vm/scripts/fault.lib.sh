#!/bin/sh
# The RHiNET device's fault capability from inside a guest (QEMU
# rhinet,fault-injection=on): sourced, not run. run-cluster.sh ships every
# *.lib.sh next to the test script into /test/. The sourcing script sets
# LIB_NAME and has fail(); fault_find sets PCI (the device's sysfs
# directory) and FAULT_CAP (the capability's config offset).

# Config byte at offset $1 of $PCI.
cfg_byte() {
	dd if="$PCI/config" bs=1 skip="$1" count=1 2>/dev/null | od -An -tu1 |
		tr -d ' '
}

fault_find() {
	PCI=""
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1234 ] &&
			[ "$(cat "$d/device")" = 0x4e47 ] && PCI=$d
	done
	[ -n "$PCI" ] || fail "no RHiNET device"
	# The vendor capability (ID 9) that carries the fault, found by
	# walking the capability list.
	FAULT_CAP=$(cfg_byte 52)
	while [ -n "$FAULT_CAP" ] && [ "$FAULT_CAP" != 0 ] &&
		[ "$(cfg_byte "$FAULT_CAP")" != 9 ]; do
		FAULT_CAP=$(cfg_byte $((FAULT_CAP + 1)))
	done
	if [ -z "$FAULT_CAP" ] || [ "$FAULT_CAP" = 0 ]; then
		fail "no fault-injection capability"
	fi
}

# fault_set none|hang|fatal|gone|irq-loss|sq-kick-loss: writes the
# fault's number.
fault_set() {
	case $1 in none) v=0 ;; hang) v=1 ;; fatal) v=2 ;; gone) v=3 ;;
	irq-loss) v=4 ;; sq-kick-loss) v=5 ;;
	*) fail "no fault '$1'" ;; esac
	printf "\\$(printf %03o "$v")" |
		dd of="$PCI/config" bs=1 seek=$((FAULT_CAP + 4)) conv=notrunc 2>/dev/null
}

# fault_wait_stopped WHAT: until the driver says it stopped the NIC, 5 s.
fault_wait_stopped() {
	i=0
	until dmesg | grep -q "NIC stopped, device fatal"; do
		i=$((i + 1))
		[ $i -lt 50 ] || fail "$1: the driver did not find the failed NIC"
		usleep 100000
	done
}

# fault_user_ready LOG WHAT: until the verbs user writing LOG (rhinet-fatal)
# holds its objects, 30 s.
fault_user_ready() {
	i=0
	until grep -q ready "$1"; do
		i=$((i + 1))
		[ $i -lt 300 ] || { cat "$1"; fail "$2: user not ready"; }
		usleep 100000
	done
}
