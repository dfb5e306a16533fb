#!/bin/sh
# Many producers in device mode (run-cluster --xpu bridge --xpu-lanes 32):
# rhinet-xpu-mprod (tests/vm/guest/rhinet_xpu_mprod.c). Node 1's xpu runs
# 32 looping lane programs that post RDMA WRITEs on one multi-producer RC
# QP whose send ring, record and CQ lie in the xpu's memory: reserve,
# room, build, publish in order, ring per batch or tail; a second phase
# skips a quarter of the rings (the NIC's record scan finds the work).
# Node 0 checks every value landed once at its place, in each lane's
# order. Under the debug kernel (CONFIG_PCI_P2PDMA) all of it; under
# Debian's kernel both exports are refused (EOPNOTSUPP).
#   xpu_mprod.sh NODE NODES [TOTAL]   (TOTAL: messages, default 10^6)
# shellcheck disable=SC2034 # read by verbs.lib.sh (run_pair)
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=xpu_mprod
RUN_TIMEOUT=300
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
xpu_load
[ -n "${3:-}" ] && export XPU_MPROD_TOTAL="$3"

run_pair rhinet-xpu-mprod /opt/rhinet/bin/rhinet-xpu-mprod -d rhinet0 -g "$GID"

verbs_check_dmesg
rmmod xpu || fail "rmmod xpu (a dma-buf left?)"
[ -z "$failed" ] || fail "failed:$failed"
echo "$LIB_NAME: PASS"
