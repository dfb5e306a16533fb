#!/bin/sh
# Unmodified rdma-core tools between two nodes over the RDMA device: node 1
# serves, node 0 connects to 10.77.0.2 (the tools swap QP data over TCP, port
# 18515, through rhinet.ko's eth0; helpers in verbs.lib.sh).
#   basic     ibv_devinfo (PORT_ACTIVE, link layer Ethernet) and
#             ibv_rc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong checking the
#             received bytes (-c)
#   perftest  ib_{write,read,send}_{bw,lat}, ib_atomic_{bw,lat}
#   verbs_tools.sh NODE NODES [basic|perftest|all] [DEVICE]
# DEVICE (default rhinet0) may name a soft-RoCE device instead (rxe*): it is
# created on eth0 with rdma_rxe, to try these runs against a known-good
# provider.
NODE=$1
WHICH=${3:-all}
DEVICE=${4:-rhinet0}
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=verbs_tools
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

case $WHICH in basic | perftest | all) ;; *) fail "unknown set '$WHICH'" ;; esac
verbs_setup
verbs_device "$DEVICE"

if [ "$WHICH" != perftest ]; then
	ibv_devinfo -d "$DEVICE" | tee /tmp/devinfo.txt
	grep -q "state:.*PORT_ACTIVE" /tmp/devinfo.txt &&
		grep -q "link_layer:.*Ethernet" /tmp/devinfo.txt ||
		fail "ibv_devinfo -d $DEVICE: no ACTIVE Ethernet port"
	D="-d $DEVICE -g $GID"
	run_pair ibv_rc_pingpong ibv_rc_pingpong $D -c -n 100 -s 4096
	# A UD message carries at most the path MTU (1024 at the default).
	run_pair ibv_ud_pingpong ibv_ud_pingpong $D -c -n 100 -s 1024
	run_pair ibv_srq_pingpong ibv_srq_pingpong $D -c -n 100 -q 4 -s 4096
fi
if [ "$WHICH" != basic ]; then
	P="-d $DEVICE -x $GID -F --report_gbits"
	run_pair ib_write_bw ib_write_bw $P -n 200 -s 65536
	run_pair ib_write_lat ib_write_lat $P -n 200 -s 8
	run_pair ib_read_bw ib_read_bw $P -n 200 -s 65536
	run_pair ib_read_lat ib_read_lat $P -n 200 -s 8
	run_pair ib_send_bw ib_send_bw $P -n 200 -s 65536
	run_pair ib_send_lat ib_send_lat $P -n 200 -s 8
	run_pair ib_atomic_bw ib_atomic_bw $P -n 200
	run_pair ib_atomic_lat ib_atomic_lat $P -n 200
fi

verbs_check_dmesg
[ -z "$failed" ] || fail "failed:$failed"
echo "verbs_tools: PASS on node $NODE ($WHICH on $DEVICE)"
