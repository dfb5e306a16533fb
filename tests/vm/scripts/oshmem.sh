#!/bin/sh
# OpenSHMEM through Debian's Open MPI (oshmem, spml ucx) over rhinet0 with
# UCX's rc_verbs and ud_verbs, one PE on each of two nodes, started by
# oshrun over ssh: rhinet-oshmem's checked put/get (8 B .. 1 MiB) and a
# long shmem_long_p + shmem_wait_until ping-pong, the loop in which one
# 600 s stall was once seen (issue 40). A stall ends in the program's
# own watchdog ("STALL ... at round R") long before the test's deadline.
#   oshmem.sh NODE NODES [ROUNDS] [corrupt]
# ROUNDS (default 100000) ping-pong rounds over rhinet0; then 2000 over
# rxe0 (soft-RoCE on eth0), the reference. "corrupt" makes the program
# damage one word it received, to see the check fail.
#
# oshmem's shmem_finalize crashes (SIGSEGV in UCX's teardown) over
# soft-RoCE and even on one host's shared memory: oshmem's bug, not the
# NIC's. So the verdict is the lines both PEs print before finalize; what
# finalize then did is reported on its own line, and oshrun's exit status
# counts only when no finalize crash explains it.
NODE=$1
NODES=$2
ROUNDS=${3:-100000}
CORRUPT=$4
LIB_NAME=oshmem
APPS_RXE=1
. /test/apps.lib.sh
apps_setup
[ "$NODE" = 0 ] || apps_wait 1500
[ "$NODES" = 2 ] || fail "oshmem runs on 2 nodes"

failed=""
note_fail() { failed="$failed $*;"; echo "oshmem: FAILED: $*"; }

# osh_run DEVICE ROUNDS: rhinet-oshmem on node0 and node1.
osh_run() {
	dev=$1 rounds=$2
	env="UCX_NET_DEVICES=$dev:1 UCX_TLS=rc_verbs,ud_verbs UCX_WARN_UNUSED_ENV_VARS=n SHMEM_SYMMETRIC_SIZE=64M"
	# (see ucx_mpi.sh: rxe does not report the network header type)
	case $dev in rxe*) env="$env UCX_UD_VERBS_ETH_DGID_CHECK=n" ;; esac
	# Exported here and named with -x: oshrun passed "-x NAME=VALUE" on
	# without setting it (oshmem then took its 256 MiB default heap and
	# a 512M guest's OOM killer ended the PEs).
	xs=""
	for a in $env; do
		export "${a?}"
		xs="$xs -x ${a%%=*}"
	done
	args="--rounds $rounds --stall 60 --label $dev"
	[ "$CORRUPT" = corrupt ] && args="$args --corrupt"
	t0=$(now)
	# shellcheck disable=SC2086 # lists of options
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout 600 oshrun --host node0:1,node1:1 -np 2 \
		--mca spml ucx --mca oob_tcp_if_include eth0 $xs \
		/opt/rhinet/bin/rhinet-oshmem $args >/tmp/osh.log 2>&1
	rc=$?
	grep "^RHINET-OSHMEM: pingpong" /tmp/osh.log | tail -1
	grep -E "^RHINET-OSHMEM: (PASS|FAIL|STALL|putget)" /tmp/osh.log
	passes=$(grep -c "^RHINET-OSHMEM: PASS pe [01] rounds $rounds " /tmp/osh.log)
	finals=$(grep -c "^RHINET-OSHMEM: finalize returned" /tmp/osh.log)
	crash=$(grep -ciE "segmentation fault|signal 11" /tmp/osh.log)
	echo "oshmem $dev: oshrun exit $rc after $(elapsed "$t0") s; finalize returned on $finals PE(s), $crash crash line(s) after the results"
	verdict=ok
	if [ "$passes" != 2 ] || grep -q "^RHINET-OSHMEM: \(FAIL\|STALL\)" /tmp/osh.log ||
		grep -qiE "completion with error|transport retry|remote access|remote invalid" /tmp/osh.log; then
		verdict="results wrong, missing or stalled"
	elif [ "$rc" = 124 ]; then
		verdict="oshrun did not end (timeout 600)"
	elif [ "$rc" != 0 ] && [ "$crash" = 0 ]; then
		verdict="oshrun exit $rc without the known finalize crash"
	fi
	if [ "$verdict" != ok ]; then
		echo "oshmem $dev FAILED: $verdict:"
		grep -v "^RHINET-OSHMEM: pingpong" /tmp/osh.log | head -30
		case $dev in rhinet*) note_fail "oshmem over $dev: $verdict" ;; esac
	fi
}

tx0=$(counter tx_packets)
osh_run rhinet0 "$ROUNDS"
sent=$(($(counter tx_packets) - tx0))
# Each round is at least one packet each way (the put) on the NIC.
[ "$sent" -ge "$ROUNDS" ] ||
	note_fail "rhinet0 sent $sent packets for $ROUNDS rounds: not our NIC's traffic"
echo "oshmem rhinet0: node 0 sent $sent packets"
osh_run rxe0 2000

if [ -n "$failed" ]; then
	echo "oshmem: FAIL:$failed"
	apps_finish 1
	exit 1
fi
echo "oshmem: PASS"
apps_finish 0
exit 0
