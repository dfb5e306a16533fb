#!/bin/sh
# Device mode (run-cluster --xpu bridge: each node's NIC and xpu behind one
# PCI bridge): rhinet-xpu-dev (tests/vm/guest/rhinet_xpu_dev.c). Node 1's
# xpu posts RDMA WRITEs to node 0 by itself: the QP's send ring, record and
# CQ in the xpu's memory, the context's doorbell page exported by rhinet.ko
# and imported by xpu.ko, a lane writing WQEs, the record and the doorbell
# and polling the CQEs. Then the refusals: another doorbell page, another
# process, a closed context. Under the debug kernel (CONFIG_PCI_P2PDMA) all
# of it, and last the lanes ring a burst of trigger adds (a WRITE parked at
# their exact sum fires); under Debian's kernel both exports are refused
# (EOPNOTSUPP).
#   xpu_device.sh NODE NODES
# shellcheck disable=SC2034 # read by verbs.lib.sh (run_pair)
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=xpu_device
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
xpu_load

run_pair rhinet-xpu-dev /opt/rhinet/bin/rhinet-xpu-dev -d rhinet0 -g "$GID"

verbs_check_dmesg
rmmod xpu || fail "rmmod xpu (a dma-buf left?)"
[ -z "$failed" ] || fail "failed:$failed"
echo "$LIB_NAME: PASS"
