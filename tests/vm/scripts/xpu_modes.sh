#!/bin/sh
# One API, three modes (run-cluster --xpu bridge --apps): rhinet-xpu-modes-user
# (tests/vm/guest/rhinet_xpu_modes.cc). Node 1's xpu runs the same device
# program through userlib's rhinet::xpu::PutChannel in device, cpu_doorbell,
# proxy and automatic mode, putting into node 0's host memory; node 0 checks
# the bytes each time, node 1 the completions and who rang the doorbells
# (the NIC's counts by requester) and touched host memory (the xpu's
# counters, the library's own). Under Debian's kernel (no P2PDMA) device
# and cpu_doorbell are refused with the reason and automatic takes proxy.
# Also: runs past the program's limits, what a destroyed channel gives
# back, and two processes' channels at once (one killed mid-run).
#   xpu_modes.sh NODE NODES
# shellcheck disable=SC2034 # read by verbs.lib.sh (run_pair)
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=xpu_modes
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
xpu_load

run_pair rhinet-xpu-modes-user /usr/bin/rhinet-xpu-modes-user -d rhinet0 \
	-g "$GID"
[ "$NODE" = 1 ] && grep '^RHINET-BENCH' /tmp/out

verbs_check_dmesg
rmmod xpu || fail "rmmod xpu (a dma-buf left?)"
[ -z "$failed" ] || fail "failed:$failed"
echo "$LIB_NAME: PASS"
