#!/bin/sh
# Memory of another device through standard verbs, on one node: vgem (a
# DRM driver without hardware) exports a dumb buffer as a dma-buf, and
# rhinet-dmabuf (tests/vm/guest/rhinet_dmabuf.c) registers it with
# ibv_reg_dmabuf_mr and runs RDMA WRITE and READ into and out of it
# between two RC QPs connected through the NIC's loopback, every byte
# checked through the process's mmap of the dma-buf; then the refusals (no
# dma-buf, a closed descriptor, a range past the end), the descriptor,
# GEM handle and mapping closed under a registered MR (it keeps working;
# dereg frees the buffer), and dereg under a queued WRITE. The dma-bufs
# alive and their attachments are counted in debugfs before and after.
# Then the kernel log has no warning.
#   dmabuf.sh NODE NODES
LIB_NAME=dmabuf
KO=/opt/rhinet/modules/rhinet.ko
fail() { echo "$LIB_NAME: FAIL: $*"; dmesg | tail -40; exit 1; }
# shellcheck source=rdma_device.lib.sh
. /test/rdma_device.lib.sh

dmesg -c >/dev/null
modprobe ib_uverbs && modprobe rdma_ucm && insmod "$KO" || fail "insmod"
modprobe vgem || fail "modprobe vgem"
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
ip link set eth0 up || fail "eth0 up"
rdma_device rhinet0
# RoCE GID 0: eth0's IPv6 link-local address, there once the link is up.
i=0
until [ -n "$(ip -6 addr show dev eth0 scope link)" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "no link-local address on eth0"
	usleep 100000
done

timeout 120 /opt/rhinet/bin/rhinet-dmabuf -d rhinet0 -g 0
rc=$?
[ $rc = 0 ] || fail "rhinet-dmabuf exited $rc"
if dmesg | grep -v "module verification failed" |
	grep -E "BUG:|WARNING:|Oops|rhinet.*not destroyed"; then
	fail "kernel warnings"
fi
# vgem goes with every buffer released (it refuses while one is held).
rmmod vgem || fail "vgem still in use"
echo "$LIB_NAME: PASS"
