#!/bin/sh
# On-demand MRs (remote pin-down) follow the process's mappings: an MMU
# notifier drops the pages of a range the process unmaps or maps anew, so
# the next PUSH lands in what it maps then (rhinet-odremap does the work
# and says what each check saw): remap, a stream of PUSHes and one of
# PULLs remapped midway, a tight remap loop beside PUSHes, fork, exit with
# faults pending. One node: the writer is the process's own endpoint
# (loopback through the NIC).
#   pindown_invalidate.sh NODE NODES
NODE=$1
KO=/opt/rhinet/modules/rhinet.ko
ODR=/opt/rhinet/bin/rhinet-odremap
fail() { echo "pindown_invalidate: FAIL: $*"; dmesg | tail -30; exit 1; }

dmesg -c >/dev/null
modprobe ib_uverbs && insmod "$KO" || fail "insmod"
ip link set eth0 up || fail "ip link set eth0 up"
i=0
until rdma link show rhinet0/1 2>/dev/null | grep -q " state ACTIVE "; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "port not ACTIVE after 10 s"
	usleep 100000
done

failed=""
for mode in remap stream pullstream loop fork exit; do
	$ODR $mode || failed="$failed $mode"
done
rdma statistic show link rhinet0/1 | tr ' ' '\n' |
	grep -A1 -x -E "pinned_pages|pin_requests|pin_invalidations" | paste -sd' '
if dmesg | grep -v "module verification failed" |
	grep -E "BUG:|WARNING:|Oops|TLB not invalidated"; then
	failed="$failed dmesg"
fi
rmmod rhinet || failed="$failed rmmod"
[ -z "$failed" ] || fail "failed:$failed"
echo "pindown_invalidate: PASS on node $NODE"
