#!/bin/sh
# Sourced by verbs.lib.sh and apps.lib.sh (run-cluster.sh ships every
# *.lib.sh into /test/). Calls the sourcing script's fail.
#
# rdma_device DEVICE: a soft-RoCE device is created unless it exists:
# rxe* on eth0 (which rhinet.ko provides), vrxe* on the stock virtio-net
# NIC (run-cluster --virtio-link; virtio_link_setup addressed it). Then
# waits until DEVICE's port is ACTIVE.
rdma_device() {
	case $1 in
	rxe* | vrxe*)
		if ! rdma link show "$1/1" >/dev/null 2>&1; then
			netdev=eth0
			case $1 in vrxe*) netdev=$(virtio_netdev) ||
				fail "$1: no virtio-net interface (run-cluster --virtio-link)" ;;
			esac
			modprobe rdma_rxe || fail "modprobe rdma_rxe"
			rdma link add "$1" type rxe netdev "$netdev" || fail "rdma link add $1"
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

# The interface of a virtio-net NIC, if the node has one.
virtio_netdev() {
	for d in /sys/class/net/*; do
		case $(readlink "$d/device/driver") in
		*/virtio_net) basename "$d"; return 0 ;;
		esac
	done
	return 1
}

# A virtio-net NIC (vendor 0x1af4, class network; run-cluster
# --virtio-link) gets its driver and 10.78.0.(NODE+1); nothing happens
# without one. (The nodes' file images are virtio disks, class storage.)
virtio_link_setup() {
	found=""
	for dev in /sys/bus/pci/devices/*; do
		[ "$(cat "$dev/vendor")" = 0x1af4 ] || continue
		case $(cat "$dev/class") in 0x0200*) found=$dev ;; esac
	done
	[ -n "$found" ] || return 0
	modprobe virtio_pci && modprobe virtio_net || fail "modprobe virtio_net"
	i=0
	until vif=$(virtio_netdev); do
		i=$((i + 1))
		[ $i -le 50 ] || fail "virtio-net NIC without an interface"
		usleep 100000
	done
	echo 0 >"/proc/sys/net/ipv6/conf/$vif/accept_dad"
	ip addr add "10.78.0.$((NODE + 1))/24" dev "$vif" && ip link set "$vif" up ||
		fail "ip setup of $vif"
}
