#!/bin/sh
# Firmware loading onto the soft core (run-cluster --core softcore: the
# device boots the images it is handed in a qemu-system-riscv32), two
# nodes; node 0 checks, node 1 serves the RDMA runs:
#   1. probe loads rhinet/qemu-softcore.bin, the engine's own image packed
#      as 1.1.7: the core is replaced by one running it, fw 1.1.7
#      HOST_LOADED, and ibv_rc_pingpong runs over it;
#   2. an image whose payload is garbage (good CRCs: the card takes it)
#      crashes the core at the reset: probe says so, the card boots its
#      flash, the fw reporter tells it (error 1, recovered, the reason in
#      its dump), and ibv_rc_pingpong runs again.
#   firmware_softcore.sh NODE NODES
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=firmware
# shellcheck disable=SC2034 # read by verbs.lib.sh
RUN_TIMEOUT=200
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
verbs_setup

PINGPONG="ibv_rc_pingpong -d rhinet0 -g $GID -n 50 -s 1024 -c"
if [ "$NODE" = 1 ]; then
	# shellcheck disable=SC2086 # the command's words
	run_pair rc_pingpong $PINGPONG || fail "rc_pingpong"
	sync_status ok
	[ "$PEER_STATUS" = ok ] || fail "node 0: $PEER_STATUS"
	# shellcheck disable=SC2086 # the command's words
	run_pair rc_pingpong_flash $PINGPONG || fail "rc_pingpong over flash"
	echo "firmware: PASS: node 1 answered"
	exit 0
fi
fail_tells_peer
# shellcheck source=firmware.lib.sh
. /test/firmware.lib.sh
fw_dev

# 1. The engine's image, loaded at probe.
fw_log probe "rhinet/qemu-softcore.bin: firmware 1.1.7 loaded"
devlink dev info "$dev"
[ "$(fw running)" = 1.1.7 ] || fail "info: running $(fw running), not 1.1.7"
devlink dev info "$dev" | grep -q "fw.origin HOST_LOADED" || fail "info: not HOST_LOADED"
# shellcheck disable=SC2086 # the command's words
run_pair rc_pingpong $PINGPONG || fail "rc_pingpong over 1.1.7"

# 2. Garbage with good CRCs: the core crashes, the card boots flash.
# (Node 0's NIC goes and comes back here; node 1 waits for the word.)
stored=$(fw stored)
cp /test/fw/qemu-softcore-garbage.bin /lib/firmware/rhinet/qemu-softcore.bin
dmesg -c >/dev/null
rmmod rhinet || fail "rmmod"
insmod "$KO" || fail "insmod after the garbage"
fw_log garbage "rhinet/qemu-softcore.bin: firmware 1.1.9 did not start; booting the card's flash"
fw_dev
devlink dev info "$dev"
[ "$(fw running)" = "$stored" ] || fail "garbage: running $(fw running), not the flash's $stored"
devlink dev info "$dev" | grep -q "fw.origin flash" || fail "garbage: not running flash"
devlink health show "$dev" reporter fw
devlink health show "$dev" reporter fw | grep -q "error 1 recover 1" ||
	fail "garbage: the fw reporter did not tell it"
devlink health dump show "$dev" reporter fw >/tmp/dump 2>&1
grep -q "did not start; the card booted its flash" /tmp/dump || { cat /tmp/dump; fail "fw: dump has no reason"; }
grep -q "state: running" /tmp/dump || { cat /tmp/dump; fail "fw: dump does not show the core running"; }
cat /tmp/dump
! dmesg | grep -q "firmware 1.1.9 loaded" || fail "garbage: probe says 1.1.9 loaded"
verbs_net_up "after the garbage"
sync_status ok
synced=1
[ "$PEER_STATUS" = ok ] || fail "node 1: $PEER_STATUS"
# shellcheck disable=SC2086 # the command's words
run_pair rc_pingpong_flash $PINGPONG || fail "rc_pingpong over flash"
echo "firmware: PASS"
