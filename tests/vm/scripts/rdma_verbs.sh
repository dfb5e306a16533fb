#!/bin/sh
# rhinet.ko's RDMA device: the rdma tool sees rhinet0 with an ACTIVE RoCE
# port over eth0 and its counters; rhinet-uverbs checks the uverbs ABI;
# processes killed while creating and destroying objects leave nothing
# behind (resources, pinned pages); the module unloads and loads again.
#   rdma_verbs.sh NODE NODES
NODE=$1
KO=/opt/rhinet/modules/rhinet.ko
fail() { echo "rdma_verbs: FAIL: $*"; dmesg | tail -30; exit 1; }

# The value of a counter of rdma statistic, or of a count of rdma resource.
# (The latter leaves out IB_QPT_DRIVER QPs such as the endpoint: the core
# hides them from rdma tools that do not ask for driver details.)
counter() { rdma statistic show link rhinet0/1 | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }
resources() { rdma resource show rhinet0; }
resource() { resources | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }

no_complaints() {
	if dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|[Rr][Hh][Ii][Nn][Ee][Tt].*[Ee][Rr][Rr][Oo][Rr]"; then
		fail "kernel complained $1"
	fi
}

dmesg -c >/dev/null
modprobe ib_uverbs && insmod "$KO" || fail "insmod"
rdma dev show | tee /tmp/dev.txt
grep -q "rhinet0: node_type ca " /tmp/dev.txt || fail "no rhinet0 of node_type ca"

ip link set eth0 up || fail "ip link set eth0 up"
i=0
until rdma link show rhinet0/1 | grep -q " state ACTIVE "; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "port not ACTIVE after 10 s: $(rdma link show rhinet0/1)"
	usleep 100000
done
link=$(rdma link show rhinet0/1)
echo "$link"
case "$link" in
*" state ACTIVE physical_state LINK_UP netdev eth0"*) ;;
*) fail "rdma link show rhinet0/1: $link" ;;
esac

rdma statistic show link rhinet0/1
for c in tx_packets tlb_hits retransmits bad_doorbells pinned_pages areas; do
	case "$(counter $c)" in
	'' | *[!0-9]*) fail "rdma statistic: no counter $c" ;;
	esac
done

# The kernel's own objects: ib_mad's PD, CQ and management QP (QP1).
for r in pd cq qp mr srq ctx; do
	eval "base_$r=\$(resource $r)"
done
[ "$base_qp" = 1 ] && [ "$base_cq" = 1 ] && [ "$base_pd" = 1 ] ||
	fail "expected ib_mad's PD, CQ and QP1 only: $(resources)"

rhinet-uverbs check "$NODE" || fail "rhinet-uverbs check"

# Killed in the middle of creating and destroying objects, five times.
for delay in 100000 400000 200000 500000 300000; do
	rhinet-uverbs churn "$NODE" >/dev/null &
	pid=$!
	usleep $delay
	kill -9 $pid
	wait $pid
	rc=$?
	[ $rc = 137 ] || fail "churn ended by itself (status $rc) within $delay us"
done
echo "rdma_verbs: 5 churning processes killed"

# Killed while holding one of each object.
: >/tmp/hold.txt
rhinet-uverbs hold "$NODE" >/tmp/hold.txt 2>&1 &
pid=$!
i=0
until grep -q holding /tmp/hold.txt; do
	kill -0 $pid 2>/dev/null || fail "hold: $(cat /tmp/hold.txt)"
	i=$((i + 1))
	[ $i -le 100 ] || fail "hold: no objects after 10 s"
	usleep 100000
done
cat /tmp/hold.txt
held=$(resources)
echo "rdma_verbs: while holding: $held"
# (RC and UD; not the endpoint, see above.)
[ "$(resource pd)" -ge $((base_pd + 2)) ] && [ "$(resource qp)" -ge $((base_qp + 2)) ] ||
	fail "rdma resource does not count what hold created: $held"
# hold registered area 7 (an MR that is also a communication area).
[ "$(counter areas)" -ge 1 ] || fail "areas counter $(counter areas) while holding"
kill -9 $pid
wait $pid

# Everything gone once the killed processes' files are released.
i=0
while :; do
	left=""
	for r in pd cq qp mr srq ctx; do
		eval "base=\$base_$r"
		[ "$(resource $r)" = "$base" ] || left="$left $r"
	done
	[ -z "$left" ] && break
	i=$((i + 1))
	[ $i -le 20 ] || fail "left behind:$left: $(resources)"
	usleep 100000
done
resources
[ "$(counter pinned_pages)" = 0 ] || fail "pinned_pages $(counter pinned_pages), expected 0"
[ "$(counter areas)" = 0 ] || fail "areas $(counter areas) left registered, expected 0"
rdma statistic show link rhinet0/1

rmmod rhinet || fail "rmmod"
no_complaints "in the first load"
modprobe ib_uverbs && insmod "$KO" || fail "second insmod"
rdma dev show | grep -q "rhinet0: node_type ca " || fail "no rhinet0 after the second insmod"
rmmod rhinet || fail "second rmmod"
no_complaints "in the second load"
echo "rdma_verbs: PASS on node $NODE"
