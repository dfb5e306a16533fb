#!/bin/sh
# The xpu's memory through standard verbs (run-cluster --xpu apart,bridge:
# node 1's NIC and xpu behind one PCI bridge, node 0's xpu on the root bus
# beside its NIC). xpu.ko loads beside rhinet.ko. Under the debug kernel,
# node 0 first checks that its NIC, which cannot reach its xpu by
# peer-to-peer DMA, is refused the xpu's dma-buf (EREMOTEIO). Then
# rhinet-xpu (tests/vm/guest/rhinet_xpu.c): node 1 exports
# a dma-buf of its xpu's memory and registers it with ibv_reg_dmabuf_mr,
# node 0 RDMA-WRITEs into it and READs from it, node 1 checks the bytes
# through its mapping of the memory and has an xpu lane copy them, node 0
# READs the copy; the xpu's counters show the NIC's peer-to-peer accesses
# and no host RAM touched by the xpu. Node 1 also checks what may move: a
# movable export refused by ibv_reg_dmabuf_mr (EOPNOTSUPP, xpu.ko naming the
# NIC that tried to pin it), a pinned one not moved while an MR holds it
# (EBUSY), and no ib_core warning of a pinned MR moved (verbs_check_dmesg).
# Under the debug kernel
# (CONFIG_PCI_P2PDMA) all of it; under Debian's kernel, which lacks P2PDMA,
# xpu.ko says so once and the export is refused with EOPNOTSUPP.
#   xpu.sh NODE NODES
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=xpu
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
xpu_load
if [ "$XPU_EXPECT" = p2p ]; then
	dmesg | grep -q "xpu0: .*memory published for P2PDMA" ||
		fail "xpu.ko did not publish its memory"
else
	n=$(dmesg | grep -c "kernel without CONFIG_PCI_P2PDMA")
	[ "$n" = 1 ] || fail "xpu.ko said $n times that P2PDMA is missing"
fi

if [ "$NODE" = 0 ] && [ "$XPU_EXPECT" = p2p ]; then
	XPU_EXPECT=unreachable /opt/rhinet/bin/rhinet-xpu -d rhinet0 ||
		failed="$failed unreachable"
	dmesg | grep -q "xpu.*cannot reach this device's memory" ||
		failed="$failed no-refusal-logged"
fi

run_pair rhinet-xpu /opt/rhinet/bin/rhinet-xpu -d rhinet0 -g "$GID"
if [ "$NODE" = 1 ] && [ "$XPU_EXPECT" = p2p ]; then
	dmesg | grep -q "xpu.*cannot pin a movable dma-buf" ||
		failed="$failed no-pin-refusal-logged"
fi

verbs_check_dmesg
rmmod xpu || fail "rmmod xpu (a dma-buf left?)"
[ -z "$failed" ] || fail "failed:$failed"
echo "$LIB_NAME: PASS"
