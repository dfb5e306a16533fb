#!/bin/sh
# Sourced by verbs.lib.sh and apps.lib.sh (run-cluster.sh ships every
# *.lib.sh into /test/). Calls the sourcing script's fail.
#
# rdma_device DEVICE: a soft-RoCE device (rxe*) is created on eth0 (which
# rhinet.ko provides) unless it exists; then waits until DEVICE's port is
# ACTIVE.
rdma_device() {
	case $1 in
	rxe*)
		if ! rdma link show "$1/1" >/dev/null 2>&1; then
			modprobe rdma_rxe || fail "modprobe rdma_rxe"
			rdma link add "$1" type rxe netdev eth0 || fail "rdma link add $1"
		fi
		;;
	esac
	i=0
	until rdma link show "$1/1" 2>/dev/null | grep -q " state ACTIVE "; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "$1 port not ACTIVE after 10 s: $(rdma link show)"
		usleep 100000
	done
}
