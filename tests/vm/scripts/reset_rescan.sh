#!/bin/sh
# The NIC reset or taken off the bus while it is in use, ten times in a
# row, alternating a function-level reset through sysfs and a remove and
# rescan. Each round a verbs user (rhinet-fatal -r) holds a PD, an MR, CQs,
# QPs and an SRQ, and ib_write_bw runs over the NIC's own loopback; then:
#   - the user hears DEVICE_FATAL and releases everything without error;
#   - ib_write_bw ends (with an error) instead of hanging;
#   - the driver binds again by itself (reset) or on the rescan, rhinet0
#     comes back ACTIVE and carries a checked ibv_rc_pingpong;
#   - the kernel log has no warning (the debug twin: no KASAN, lockdep,
#     kmemleak report either).
#   reset_rescan.sh NODE NODES
LIB_NAME=reset_rescan
ROUNDS=10
# The debug kernel's twin: both kinds twice (its checks need each path
# once; the ten rounds are the plain twin's).
[ -n "${RHINET_DEBUG_KERNEL-}" ] && ROUNDS=4
KO=/opt/rhinet/modules/rhinet.ko
fail() { echo "$LIB_NAME: FAIL: $*"; dmesg | tail -40; exit 1; }
now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { echo "$1 $(now)" | awk '{ printf "%.1f", $2 - $1 }'; }
# shellcheck source=rdma_device.lib.sh
. /test/rdma_device.lib.sh
# shellcheck source=fault.lib.sh
. /test/fault.lib.sh

modprobe ib_uverbs && modprobe rdma_ucm && insmod "$KO" || fail "insmod"
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad
# perftest and pingpong swap their QP data over TCP on 127.0.0.1.
ip link set lo up || fail "lo up"

fault_find

# The interface up and the port ACTIVE, within 30 s of a (re)bind. The
# interface must be the new one: the old one may linger while the driver
# tears it down, and setting it up would leave the new one down.
device_up() {
	i=0
	until [ -e /sys/class/infiniband/rhinet0 ] && [ -e /sys/class/net/eth0 ] &&
		[ "$(cat /sys/class/net/eth0/ifindex 2>/dev/null)" != "${old_ifindex:-}" ]; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail "$1: rhinet0 did not come back"
		usleep 100000
	done
	ip link set eth0 up || fail "$1: eth0 up"
	rdma_device rhinet0
}

# A checked pingpong over the NIC's loopback.
pingpong() {
	timeout 60 ibv_rc_pingpong -d rhinet0 -g 0 -n 20 -s 4096 -c >/tmp/pp.srv 2>&1 &
	srv=$!
	j=0
	until timeout 60 ibv_rc_pingpong -d rhinet0 -g 0 -n 20 -s 4096 -c 127.0.0.1 \
		>/tmp/pp.cli 2>&1; do
		j=$((j + 1))
		[ $j -lt 20 ] || { cat /tmp/pp.cli; fail "$1: pingpong"; }
		usleep 300000
	done
	wait $srv || { cat /tmp/pp.srv; fail "$1: pingpong server"; }
}

kernel_complaints() {
	dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|destroy 0x|rhinet.*not destroyed"
}

device_up "start"
pingpong "start"
r=1
while [ $r -le $ROUNDS ]; do
	mode=reset
	[ $((r % 2)) = 0 ] && mode=rescan
	what="round $r ($mode)"
	dmesg -c >/dev/null
	old_ifindex=$(cat /sys/class/net/eth0/ifindex)
	rm -f /tmp/go
	rhinet-fatal -r /tmp/go >/tmp/fatal.log 2>&1 &
	user=$!
	fault_user_ready /tmp/fatal.log "$what"
	timeout 90 ib_write_bw -d rhinet0 -x 0 -s 65536 -D 8 >/tmp/bw.srv 2>&1 &
	bw_srv=$!
	sleep 1
	timeout 90 ib_write_bw -d rhinet0 -x 0 -s 65536 -D 8 127.0.0.1 >/tmp/bw.cli 2>&1 &
	bw_cli=$!
	sleep 3
	touch /tmp/go
	t0=$(now)
	if [ $mode = reset ]; then
		echo 1 >"$PCI/reset" || fail "$what: reset"
	else
		echo 1 >"$PCI/remove" || fail "$what: remove"
		echo 1 >/sys/bus/pci/rescan || fail "$what: rescan"
	fi
	wait $user || { cat /tmp/fatal.log; fail "$what: the verbs user"; }
	for p in $bw_cli $bw_srv; do
		wait $p
		[ $? = 124 ] && { cat /tmp/bw.cli /tmp/bw.srv; fail "$what: ib_write_bw hung"; }
	done
	device_up "$what"
	echo "$LIB_NAME: $what: back after $(elapsed "$t0") s; $(grep DEVICE_FATAL /tmp/fatal.log)"
	pingpong "$what"
	kernel_complaints && fail "$what: the kernel complained"
	r=$((r + 1))
done
rmmod rhinet || fail "rmmod"
kernel_complaints && fail "rmmod: the kernel complained"
echo "$LIB_NAME: PASS: $ROUNDS rounds"
