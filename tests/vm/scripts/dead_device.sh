#!/bin/sh
# A NIC that dies under a verbs user, three ways, injected through the
# device's fault capability (QEMU rhinet,fault-injection=on):
#   hang   the engine stops; a new CQ's admin command times out and finds it
#   fatal  STATUS.FATAL while the user is idle; the health check finds it
#   gone   the NIC reads all ones and ignores reset; bus mastering is cut
# Each time the user (rhinet-fatal) hears DEVICE_FATAL, sees the port down,
# is refused new objects at once and destroys all it holds without an
# error; eth0 loses its carrier; rmmod leaves no warning; insmod (after an
# FLR for "gone", which the driver cannot bind before) brings the NIC back,
# and ibv_rc_pingpong to node 1 checks it byte for byte.
#   dead_device.sh NODE NODES
NODE=$1
LIB_NAME=dead_device
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
ROUNDS="hang fatal gone"
verbs_setup
verbs_device rhinet0

if [ "$NODE" = 1 ]; then
	# One pingpong per round, once node 0's NIC is back.
	for r in $ROUNDS; do
		timeout 240 ibv_rc_pingpong -d rhinet0 -g $GID -n 20 -s 4096 -c ||
			fail "pingpong server after '$r'"
	done
	echo "dead_device: PASS: node 1 served $ROUNDS"
	exit 0
fi

# shellcheck source=fault.lib.sh
. /test/fault.lib.sh
fault_find
pci=$PCI

inject() { # none|hang|fatal|gone
	fault_set "$1"
	got=$(cfg_byte $((FAULT_CAP + 4)))
	# A fatal NIC may already have been reset by the driver (its reset
	# clears the fault) before the byte is read back: then it said so.
	[ "$got" = "$v" ] ||
		{ [ "$1" = fatal ] && [ "$got" = 0 ] &&
			dmesg | grep -q "NIC reports a fatal error"; } ||
		fail "fault $1 not taken (reads $got)"
}

kernel_complaints() {
	dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|destroy 0x|rhinet.*not destroyed"
}

round() {
	mode=$1
	dmesg -c >/dev/null
	rm -f /tmp/go /tmp/fatal.log
	poke=""
	[ "$mode" = hang ] && poke=-p
	rhinet-fatal $poke /tmp/go >/tmp/fatal.log 2>&1 &
	pid=$!
	fault_user_ready /tmp/fatal.log "$mode"
	inject "$mode"
	touch /tmp/go
	wait $pid
	rc=$?
	cat /tmp/fatal.log
	[ $rc = 0 ] || fail "$mode: the verbs user failed"
	dmesg | grep -q "NIC stopped, device fatal" || fail "$mode: no fatal line"
	case $mode in
	hang) want="admin command 0x[0-9a-f]* timed out" ;;
	fatal) want="NIC reports a fatal error" ;;
	gone) want="NIC ignores reset: bus mastering turned off" ;;
	esac
	dmesg | grep -q "$want" || fail "$mode: dmesg lacks '$want'"
	[ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" = 0 ] ||
		fail "$mode: eth0 still has its carrier"
	rdma link show rhinet0/1 | grep -q " state DOWN " ||
		fail "$mode: port not DOWN: $(rdma link show rhinet0/1)"

	if [ "$mode" = gone ]; then
		# What the bring-up tool says of a card that does not answer.
		rhinet-diag >/tmp/diag 2>&1 || { cat /tmp/diag; fail "gone: rhinet-diag"; }
		grep -q "STATUS reads all ones: the card does not answer" /tmp/diag ||
			{ cat /tmp/diag; fail "gone: rhinet-diag does not say so"; }
	fi
	t0=$(now)
	rmmod rhinet || fail "$mode: rmmod"
	echo "dead_device: $mode: rmmod took $(elapsed "$t0") s"
	[ -e /sys/class/infiniband/rhinet0 ] && fail "$mode: rhinet0 remains"
	kernel_complaints && fail "$mode: kernel complained"
	if [ "$mode" = gone ]; then
		# Nothing answers: probe must refuse it, saying why.
		insmod "$KO" || fail "gone: insmod"
		[ -e "/sys/bus/pci/drivers/rhinet/${pci##*/}" ] &&
			fail "gone: a vanished NIC was bound"
		[ -e /sys/class/infiniband/rhinet0 ] && fail "gone: rhinet0 exists"
		dmesg | grep -q "hardware interface 65535" ||
			fail "gone: probe did not say why it refused"
		rmmod rhinet || fail "gone: rmmod of the unbound driver"
		echo 1 >"$pci/reset" || fail "gone: FLR"
	fi
	dmesg -c >/dev/null
	insmod "$KO" || fail "$mode: insmod after the failure"
	verbs_net_up "$mode: after recovery"
	verbs_device rhinet0
	j=0
	until ibv_rc_pingpong -d rhinet0 -g $GID -n 20 -s 4096 -c "$SERVER"; do
		j=$((j + 1))
		[ $j -lt $CONNECT_TRIES ] || fail "$mode: pingpong after recovery"
		usleep 500000
	done
	kernel_complaints && fail "$mode: kernel complained after recovery"
	echo "dead_device: $mode: recovered"
}

for r in $ROUNDS; do
	round "$r"
done
echo "dead_device: PASS: $ROUNDS"
