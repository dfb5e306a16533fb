#!/bin/sh
# Shared by the guest scripts that run software users run over the NIC
# (ucx_mpi.sh, nvmeof.sh): sourced, not run. Needs the applications overlay
# (run-cluster.sh --apps): dropbear, ssh (tests/vm/guest/ssh.sh), UCX, Open
# MPI, nvme-cli.
#
# Every node: rhinet.ko, eth0 as 10.77.0.(NODE+1), /etc/hosts naming every
# node nodeK, an ssh server, and rhinet0 and (APPS_RXE=1) soft-RoCE rxe0
# on eth0 with their ports ACTIVE. Node 0 drives the test over ssh; the
# others wait until it tells them the result (apps_finish).
# shellcheck disable=SC2034 # used by the scripts that source this file
KO=/opt/rhinet/modules/rhinet.ko
LIB_NAME=${LIB_NAME:-apps}
. /test/rdma_device.lib.sh
fail() {
	echo "$LIB_NAME: FAIL: $*"
	dmesg | tail -30
	[ "$NODE" = 0 ] && apps_finish 1
	exit 1
}
now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { echo "$1 $(now)" | awk '{ printf "%.1f", $2 - $1 }'; }

apps_setup() {
	dmesg -c >/dev/null
	modprobe ib_uverbs && modprobe rdma_ucm && insmod "$KO" || fail "insmod"
	echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
	ip addr add "10.77.0.$((NODE + 1))/24" dev eth0 && ip link set eth0 up ||
		fail "ip setup"
	ip link set lo up
	echo "127.0.0.1 localhost" >/etc/hosts
	for k in $(seq 0 $((NODES - 1))); do
		echo "10.77.0.$((k + 1)) node$k" >>/etc/hosts
	done
	chmod 700 /root/.ssh
	dropbear -r /etc/dropbear/dropbear_ed25519_host_key -s -p 22 -E \
		2>/tmp/dropbear.log || fail "dropbear"
	rdma_device rhinet0
	[ "${APPS_RXE:-0}" = 1 ] && rdma_device rxe0
	# Every other node answering ssh (they boot at their own pace).
	if [ "$NODE" = 0 ]; then
		for k in $(seq 1 $((NODES - 1))); do
			i=0
			until ssh "node$k" true 2>/dev/null; do
				i=$((i + 1))
				[ $i -lt 60 ] || fail "node$k does not answer ssh"
				sleep 1
			done
		done
	fi
}


# Node 0: tells every other node the result (they end with it).
apps_finish() {
	for k in $(seq 1 $((NODES - 1))); do
		ssh "node$k" "echo $1 >/tmp/apps-result" 2>/dev/null
	done
}

# Other nodes: wait for node 0's result, up to $1 seconds; apps_wait ends
# with it, apps_await returns (a node that tears down after the run).
apps_await() {
	i=0
	while [ ! -f /tmp/apps-result ]; do
		i=$((i + 1))
		[ $i -lt "$1" ] || { echo "$LIB_NAME: no result from node 0"; exit 1; }
		sleep 1
	done
}
apps_wait() {
	apps_await "$1"
	exit "$(cat /tmp/apps-result)"
}

# The NIC's counter NAME on this node.
counter() { cat "/sys/class/infiniband/rhinet0/ports/1/hw_counters/$1"; }

# RoCE GID 0: eth0's IPv6 link-local address, there once the link is up.
wait_link_local() {
	i=0
	until [ -n "$(ip -6 addr show dev eth0 scope link)" ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "no link-local address on eth0"
		usleep 100000
	done
}

# PROG under rhinet-run, one rank on node0 and one on node1: its output,
# or its failure appended to $failed and the first lines of its output.
run_ranks() {
	if timeout 200 rhinet-run --timeout 180 -n 2 --hosts node0,node1 \
		"$1" >/tmp/run.log 2>&1; then
		cat /tmp/run.log
	else
		failed="$failed $1(rc=$?)"
		head -40 /tmp/run.log
	fi
}

# apps_unpack CPIO: a test's own programs, shipped with run-cluster --file
# as a cpio of their own (prepare.sh), unpacked at / and then removed (the
# guest's files live in its memory).
apps_unpack() {
	[ -f "$1" ] || fail "no $1 (run-cluster --file from prepare.sh's output)"
	(cd / && cpio -id <"$1" 2>/dev/null) || fail "unpacking $1"
	rm -f "$1"
}
