#!/bin/sh
# `ethtool -t` on rhinet.ko's interface (rhinet_selftest.c), two nodes:
#   1. node 0 runs the online set and the offline one: every test passes,
#      the names are the driver's six, and the kernel log is quiet;
#   2. again while ib_write_bw runs between the nodes: the self-tests
#      share the NIC with a verbs user and both still pass;
#   3. the NIC is made fatal (fault capability): the set fails, each
#      result names an errno, and the log says why.
#   selftest.sh NODE NODES
NODE=$1
LIB_NAME=selftest
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
verbs_setup
verbs_device rhinet0
TESTS="registers|admin round trip|dma patterns|interrupt|loopback|rdma write"

BW="ib_write_bw -d rhinet0 -x $GID -F -s 65536 -D 8"

if [ "$NODE" = 1 ]; then
	# shellcheck disable=SC2086 # BW is the command and its options
	run_pair write_bw $BW || fail "ib_write_bw beside the self-tests"
	echo "selftest: PASS: node 1 served ib_write_bw"
	exit 0
fi

# run_tests MODE WANT: ethtool -t eth0 MODE, its result must be WANT.
run_tests() {
	ethtool -t eth0 "$1" >/tmp/t.log 2>&1
	cat /tmp/t.log
	grep -q "The test result is $2" /tmp/t.log ||
		fail "$1: want $2"
	n=$(grep -cE "^($TESTS) \((online|offline)\)" /tmp/t.log)
	[ "$n" = 6 ] || fail "$1: $n of the 6 tests listed"
}

kernel_complaints() {
	dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|self-test:"
}

for mode in online offline; do
	dmesg -c >/dev/null
	run_tests $mode PASS
	awk -F'\t' '/\(online\)/ { if ($NF + 0 != 0) exit 1 }' /tmp/t.log ||
		fail "$mode: a test reports an error"
	kernel_complaints && fail "$mode: the kernel complained"
done

# Beside a verbs user: ib_write_bw for 8 s, the set run twice meanwhile.
# shellcheck disable=SC2086 # BW is the command and its options
run_pair write_bw $BW >/tmp/pair.log 2>&1 &
bw=$!
sleep 3
run_tests online PASS
run_tests online PASS
wait $bw || { cat /tmp/pair.log; fail "ib_write_bw beside the self-tests"; }

# A dead NIC fails every test and says why.
# shellcheck source=fault.lib.sh
. /test/fault.lib.sh
fault_find
dmesg -c >/dev/null
fault_set fatal
fault_wait_stopped fatal
run_tests online FAIL
awk -F'\t' '/\(online\)/ { if ($NF + 0 == 0) exit 1 }' /tmp/t.log ||
	fail "a test passed on a dead NIC"
dmesg | grep -q "self-test: the NIC is stopped" ||
	fail "the log does not say why the self-tests failed"
echo "selftest: PASS"
