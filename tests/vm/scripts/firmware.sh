#!/bin/sh
# Firmware loading by rhinet.ko (rhinet_fw.c) on the engine core, which
# checks and records the images it is handed (firmware-image.md), two
# nodes; node 0 checks, node 1 answers pings and serves the RDMA run.
# /lib/firmware/rhinet/qemu.bin is version 1.1.7, /test/fw/ holds the
# other images (tests/vm/fw-images.py):
#   1. probe loads qemu.bin: dmesg names it, `devlink dev info` shows fw
#      1.1.7 running, HOST_LOADED, board qemu, the serial in hex;
#   2. an image speaking contract 2 is refused by the driver, naming the
#      file and both versions; the driver goes on with 1.1.7;
#   3. an image whose payload CRC is wrong is refused by the card, the
#      verdict (BAD_IMAGE) named; 1.1.7 still runs;
#   4. an unprivileged user cannot flash (devlink wants CAP_NET_ADMIN);
#      `devlink dev flash` stores 1.2.0 (stored 1.2.0, running 1.1.7),
#      reload fw_activate runs it and the next probe leaves it (the
#      flashed image wins over qemu.bin); ibv_rc_pingpong between the
#      nodes over it.
#   firmware.sh NODE NODES
NODE=$1
LIB_NAME=firmware
RUN_TIMEOUT=120
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
verbs_setup

PINGPONG="ibv_rc_pingpong -d rhinet0 -g $GID -n 100 -s 4096 -c"
if [ "$NODE" = 1 ]; then
	sync_status ok
	[ "$PEER_STATUS" = ok ] || fail "node 0: $PEER_STATUS"
	# shellcheck disable=SC2086 # the command's words
	run_pair rc_pingpong $PINGPONG || fail "rc_pingpong"
	echo "firmware: PASS: node 1 answered"
	exit 0
fi
fail_tells_peer
# shellcheck source=firmware.lib.sh
. /test/firmware.lib.sh
fw_dev
info() {
	devlink dev info "$dev" >/tmp/info 2>&1
	cat /tmp/info
}
# reprobe WHAT: rmmod and insmod, eth0 back on the fabric.
reprobe() {
	dmesg -c >/dev/null
	rmmod rhinet || fail "$1: rmmod"
	insmod "$KO" || fail "$1: insmod"
	fw_dev
	verbs_net_up "$1"
	ibv_devinfo -d rhinet0 | grep -q "PORT_ACTIVE" || fail "$1: port not active"
}
# refused WHAT IMAGE PATTERN: IMAGE as qemu.bin, the next probe refuses it
# as PATTERN says, and 1.1.7 still runs.
refused() {
	cp "/test/fw/$2" /lib/firmware/rhinet/qemu.bin
	reprobe "$1"
	fw_log "$1" "$3"
	[ "$(fw running)" = 1.1.7 ] || fail "$1: running $(fw running)"
}

# 1. Loaded at probe.
fw_log probe "rhinet/qemu.bin: firmware 1.1.7 loaded"
dmesg | grep -qE "firmware: board qemu \(1\), running 1.1.7 HOST_LOADED, flash [0-9]+\.[0-9]+\.[0-9]+, serial $(printf 52484e%010x "$NODE")" ||
	fail "probe: no firmware identity line"
info
[ "$(fw running)" = 1.1.7 ] || fail "info: running $(fw running), not 1.1.7"
grep -q "fw.origin HOST_LOADED" /tmp/info || fail "info: not HOST_LOADED"
grep -q "board.id qemu" /tmp/info || fail "info: no board.id qemu"
serial=$(printf '52484e%010x' "$NODE") # the QEMU device's: "RHN", the node
grep -q "serial_number $serial" /tmp/info || fail "info: serial is not $serial"
grep -q "fw.contract 1.0" /tmp/info || fail "info: the contract version went"
ibv_devinfo -d rhinet0 | grep -q "PORT_ACTIVE" || fail "probe: port not active"

# 2. A contract the driver does not speak; 3. a payload the card finds
# corrupt.
refused contract2 qemu-contract2.bin \
	"rhinet/qemu.bin: firmware 1.1.8 speaks contract 2.0, the driver 1.x: refused"
refused badcrc qemu-badcrc.bin \
	"rhinet/qemu.bin: the card refused the firmware commit: .*verdict BAD_IMAGE"

# 4. devlink dev flash, then reload fw_activate.
cp /test/fw/qemu-1.1.7.bin /lib/firmware/rhinet/qemu.bin
cp /test/fw/qemu-1.2.0.bin /lib/firmware/rhinet/
# (iproute2's devlink exits 1 without a word on the EPERM; the kernel
# never asked for the file.)
dmesg -c >/dev/null
rhinet-as 65534 devlink dev flash "$dev" file rhinet/qemu-1.2.0.bin >/tmp/eperm 2>&1
rc=$?
echo "unprivileged devlink dev flash: exit $rc $(cat /tmp/eperm)"
[ $rc != 0 ] || fail "an unprivileged user flashed"
! dmesg | grep -q "qemu-1.2.0.bin" || fail "unprivileged flash: the kernel loaded the file"
[ "$(fw stored)" != 1.2.0 ] || fail "the unprivileged flash stored 1.2.0"
devlink dev flash "$dev" file rhinet/qemu-1.2.0.bin || fail "devlink dev flash"
info
[ "$(fw stored)" = 1.2.0 ] || fail "flash: stored $(fw stored)"
[ "$(fw running)" = 1.1.7 ] || fail "flash: running $(fw running) before the reload"
dmesg -c >/dev/null
devlink dev reload "$dev" action fw_activate || fail "devlink dev reload"
i=0
until dmesg | grep -q "rhinet.*firmware: board" && [ -e /sys/class/net/eth0 ] &&
	devlink dev show | grep -q '^pci/'; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "reload: the driver did not come back"
	usleep 100000
done
fw_dev
verbs_net_up reload
info
[ "$(fw running)" = 1.2.0 ] || fail "reload: running $(fw running), not 1.2.0"
[ "$(fw stored)" = 1.2.0 ] || fail "reload: stored $(fw stored)"
fw_log reload "firmware 1.1.7 not loaded: the card runs the image devlink flashed"
sync_status ok
synced=1
[ "$PEER_STATUS" = ok ] || fail "node 1: $PEER_STATUS"
# shellcheck disable=SC2086 # the command's words
run_pair rc_pingpong $PINGPONG || fail "rc_pingpong over 1.2.0"
echo "firmware: PASS"
