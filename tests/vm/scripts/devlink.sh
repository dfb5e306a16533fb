#!/bin/sh
# devlink on rhinet.ko (rhinet_devlink.c, rhinet_eq.c's watch), two nodes;
# node 0 checks, node 1 answers pings until node 0 is done:
#   1. `devlink dev info`: the driver, the serial (the shell's SERIAL),
#      the contract versions; four health reporters, all healthy;
#   2. irq-loss (the NIC's MSI-X messages lost, fault capability) while
#      node 1 is pinged: the eq reporter finds the stalled queue and
#      recovers it, so the pings are answered; diagnose and the dump show
#      it;
#   3. hang: the next admin command (ethtool -t) times out: the admin
#      reporter's dump names the timeout;
#   4. rmmod and insmod: a new devlink instance, every reporter healthy;
#   5. fatal: the fatal reporter's dump, taken before the driver's reset,
#      shows STATUS.FATAL; rhinet-diag decodes the device (before) and
#      the dump saved as a file (after), and the device without a driver.
#   devlink.sh NODE NODES
NODE=$1
LIB_NAME=devlink
RUN_TIMEOUT=200 # node 1 waits this long for node 0's word
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
# shellcheck source=fault.lib.sh
. /test/fault.lib.sh
verbs_setup

if [ "$NODE" = 1 ]; then
	sync_status ok
	[ "$PEER_STATUS" = ok ] || fail "node 0: $PEER_STATUS"
	echo "devlink: PASS: node 1 answered"
	exit 0
fi
# Until the word is given (step 5 takes node 0's network away).
fail_tells_peer

dev=$(devlink dev show | grep -m1 '^pci/')
[ -n "$dev" ] || fail "no devlink instance: $(devlink dev show 2>&1)"
# reporter NAME: its line of `devlink health show`.
reporter() {
	devlink health show "$dev" reporter "$1" | grep -E "state (healthy|error)"
}
# count NAME error|recover: that count of the reporter.
count() {
	reporter "$1" | sed -n "s/.* $2 \([0-9]*\).*/\1/p"
}
all_healthy() {
	for r in fatal admin eq fw; do
		reporter $r | grep -q "state healthy error 0 recover 0" ||
			fail "$1: reporter $r: $(reporter $r)"
	done
}

# 1. Identity and reporters.
devlink dev info "$dev" >/tmp/info 2>&1
cat /tmp/info
# The card's SERIAL: the QEMU device's default is "RHN" and the node.
serial=$(printf '52484e%010x' "$NODE")
grep -q "driver rhinet" /tmp/info || fail "info: no driver"
grep -q "serial_number $serial" /tmp/info || fail "info: serial is not $serial"
grep -q "fw.contract 1.0" /tmp/info || fail "info: no running fw.contract 1.0"
grep -q "drv.contract 1.x" /tmp/info || fail "info: no drv.contract"
all_healthy "after probe"
# rhinet-diag on the running device: BAR0 decoded, the driver's side.
rhinet-diag >/tmp/diag 2>&1 || { cat /tmp/diag; fail "rhinet-diag on the device"; }
cat /tmp/diag
grep -qE "^  STATUS +0x0000000b  READY LINK_UP ADMIN_ON$" /tmp/diag ||
	fail "rhinet-diag: STATUS not READY LINK_UP ADMIN_ON"
grep -qE "^  stopped +no$" /tmp/diag || fail "rhinet-diag: no driver state"
grep -qE "^  BOARD_ID +0x00000001  qemu$" /tmp/diag ||
	fail "rhinet-diag: BOARD_ID not decoded as qemu"
grep -qE "^  FW_STATE +0x00000002  running, STATE=2$" /tmp/diag ||
	fail "rhinet-diag: FW_STATE not running from flash"

# 2. Lost interrupts, found and recovered by the eq reporter.
fault_find
fault_set irq-loss
ping -c 6 -i 1 -W 6 "$THEM" >/tmp/ping 2>&1
cat /tmp/ping
fault_set none
received=$(sed -n 's/.* \([0-9]*\) packets received.*/\1/p' /tmp/ping)
[ "${received:-0}" -ge 1 ] || fail "irq-loss: no ping answered"
[ "$(count eq error)" -ge 1 ] || fail "irq-loss: eq reported nothing: $(reporter eq)"
[ "$(count eq recover)" -ge 1 ] || fail "irq-loss: eq never recovered: $(reporter eq)"
devlink health diagnose "$dev" reporter eq >/tmp/diag 2>&1
grep -q "recoveries" /tmp/diag || { cat /tmp/diag; fail "eq: diagnose"; }
devlink health dump show "$dev" reporter eq >/tmp/dump 2>&1
grep -q "interrupt was lost" /tmp/dump || { cat /tmp/dump; fail "eq: dump has no reason"; }
grep -q "tx_packets" /tmp/dump || { cat /tmp/dump; fail "eq: dump has no counters"; }
ping -c 2 -W 2 "$THEM" >/dev/null || fail "no ping after irq-loss was cleared"
echo "devlink: irq-loss recovered: $(reporter eq)"

# 3. A hung NIC: the admin reporter.
fault_set hang
ethtool -t eth0 >/tmp/t.log 2>&1
grep -q "The test result is FAIL" /tmp/t.log || { cat /tmp/t.log; fail "hang: self-test passed"; }
[ "$(count admin error)" = 1 ] || fail "hang: admin: $(reporter admin)"
devlink health dump show "$dev" reporter admin >/tmp/dump 2>&1
grep -q "admin command timed out" /tmp/dump || { cat /tmp/dump; fail "admin: dump"; }
echo "devlink: hang reported: $(reporter admin)"

# 4. A new instance after a rebind.
rmmod rhinet || fail "rmmod after the hang"
insmod "$KO" || fail "insmod"
dev=$(devlink dev show | grep -m1 '^pci/')
all_healthy "after insmod"
# The new interface back on the fabric, then node 1 is told: step 5
# stops node 0's NIC for good.
verbs_net_up "after insmod"
sync_status ok
synced=1

# 5. STATUS.FATAL: the fatal reporter, its dump before the reset.
dmesg -c >/dev/null
fault_set fatal
fault_wait_stopped fatal
[ "$(count fatal error)" = 1 ] || fail "fatal: $(reporter fatal)"
devlink health dump show "$dev" reporter fatal >/tmp/dump 2>&1
grep -q "status_fatal: true" /tmp/dump || { cat /tmp/dump; fail "fatal: dump"; }
# The same dump as a file, decoded.
devlink -j health dump show "$dev" reporter fatal >/tmp/fatal.json ||
	fail "fatal: devlink -j dump"
rhinet-diag --dump /tmp/fatal.json >/tmp/diag 2>&1 || { cat /tmp/diag; fail "rhinet-diag --dump"; }
cat /tmp/diag
grep -q "STATUS.FATAL: the NIC stopped itself" /tmp/diag ||
	fail "rhinet-diag: the dump's STATUS is not decoded as FATAL"
grep -qE "^  reason +NIC reports a fatal error$" /tmp/diag ||
	fail "rhinet-diag: the dump's reason"
rmmod rhinet || fail "rmmod after fatal"
rhinet-diag >/tmp/diag 2>&1 || { cat /tmp/diag; fail "rhinet-diag without a driver"; }
grep -q "^driver: no state" /tmp/diag || fail "rhinet-diag: a driver's state without a driver"
echo "devlink: PASS"
