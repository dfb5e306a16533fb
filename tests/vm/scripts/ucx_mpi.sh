#!/bin/sh
# UCX and Open MPI over rhinet0, and over soft-RoCE (rxe0 on the same
# guests' eth0) as the reference, as a cluster user runs them.
#   ucx_mpi.sh NODE NODES [perftest] [mpi]
# perftest (2 nodes): ucx_perftest between node 0 and node 1, UCP tests
#   (tag_lat, tag_bw, ucp_put_lat, ucp_put_bw, ucp_get, ucp_am_lat) over
#   the RC transport (rc_verbs with ud_verbs for wire-up, UCX's usual
#   configuration) and over ud_verbs alone, and UCT tests on rc_verbs
#   (am_lat, put_lat, put_bw, get) and ud_verbs (am_lat).
# mpi: Open MPI (pml ucx) started by mpirun over ssh on every node:
#   rhinet-mpi's checked ping-pong between ranks 0 and 1 (8 B .. 1 MiB) and
#   its allreduce/bcast/barrier checks on all ranks, over rc and ud.
# Every figure is printed as one line ("ucx ..." or "pingpong ...") for
# tests/bench/mpi_vs_rxe.sh. Any failure on rhinet0, or any UCX error
# message on rhinet0 (a send completion with an error, for one), fails the
# test; rxe0's failures are reported but are not ours.
NODE=$1
NODES=$2
shift 2
LIB_NAME=ucx_mpi
APPS_RXE=1
. /test/apps.lib.sh
apps_setup
[ "$NODE" = 0 ] || apps_wait 1500

failed=""
note_fail() { failed="$failed $*;"; echo "ucx_mpi: FAILED: $*"; }
# UCX as a user sets it up: the NIC's port, the transports to use. rxe
# does not report the network header type of RoCE v2 receives (wc.sl, as
# mlx5 and we do), without which UCX's ud_verbs drops IPv4 ones: its
# destination check is turned off there.
ucx_env() { # device transport
	tls=rc_verbs,ud_verbs
	[ "$2" = ud ] && tls=ud_verbs
	env="UCX_NET_DEVICES=$1:1 UCX_TLS=$tls UCX_WARN_UNUSED_ENV_VARS=n"
	case $1 in rxe*) env="$env UCX_UD_VERBS_ETH_DGID_CHECK=n" ;; esac
	echo "$env"
}

# perftest DEVICE TRANSPORT TEST [ucx_perftest options]: server on node 1
# started over ssh, client here; prints "ucx DEVICE TRANSPORT TEST p50_us
# avg_us MBps msgs_per_s".
port=13400
perftest() {
	dev=$1 tl=$2 test=$3
	shift 3
	env=$(ucx_env "$dev" "$tl")
	port=$((port + 1))
	t0=$(now)
	# shellcheck disable=SC2029 # expanded here on purpose
	ssh node1 "$env timeout 90 ucx_perftest -p $port" >/tmp/server.log 2>&1 &
	spid=$!
	tries=0
	while :; do
		# shellcheck disable=SC2086 # $env is a list of assignments
		env $env timeout 90 ucx_perftest node1 -p $port -t "$test" -f "$@" \
			>/tmp/client.log 2>&1
		rc=$?
		grep -q "Connection refused" /tmp/client.log || break
		tries=$((tries + 1))
		[ $tries -lt 20 ] || break
		usleep 300000
	done
	wait $spid
	src=$?
	line=$(grep -E '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ *$' /tmp/client.log | tail -1)
	if [ $rc != 0 ] || [ $src != 0 ] || [ -z "$line" ] ||
		grep -qiE "error|fatal" /tmp/client.log /tmp/server.log; then
		echo "ucx $dev $tl $test FAILED (client $rc, server $src, $(elapsed "$t0") s)"
		grep -iE "error|fatal|unreachable" /tmp/client.log /tmp/server.log | head -5
		case $dev in rhinet*) note_fail "ucx_perftest $test over $dev $tl" ;; esac
		return
	fi
	echo "$line" | awk -v d="$dev" -v t="$tl" -v n="$test" \
		'{ printf "ucx %s %s %s %s %s %s %s\n", d, t, n, $2, $3, $6, $8 }'
}

# The NIC's transport counters of node 0 and node 1, as one line.
COUNTERS="tx_packets retransmits timeouts naks_received rx_drops out_of_order duplicates"
counters_now() {
	for c in $COUNTERS; do printf '%s ' "$(counter $c)"; done
	# shellcheck disable=SC2016 # expanded on node 1
	ssh node1 'for c in '"$COUNTERS"'; do printf "%s " $(cat /sys/class/infiniband/rhinet0/ports/1/hw_counters/$c); done'
}
# transport_report LABEL [BASELINE]: what node 0 sent again and why, and
# what node 1 received out of order or twice, since BASELINE.
transport_report() {
	echo "$(counters_now) $2" | awk -v label="$1" '{
		n = split($0, v, " "); half = 7
		for (i = 1; i <= 14; i++) d[i] = v[i] - (n >= 28 ? v[i + 14] : 0)
		printf "%s: node 0 sent %d packets, %d again (%d timeouts, %d NAKs); node 1 dropped %d (receive FIFO full), saw %d out of order, %d twice\n",
			label, d[1], d[2], d[3], d[4], d[12], d[13], d[14]
	}'
}

if echo " $* " | grep -q " perftest "; then
	[ "$NODES" = 2 ] || fail "perftest runs on 2 nodes"
	ucx_info -d >/tmp/ucx_info.txt 2>&1
	for tl in rc_verbs ud_verbs; do
		grep -B2 -A0 "Device: rhinet0:1" /tmp/ucx_info.txt | grep -q "Transport: $tl" ||
			note_fail "ucx_info -d does not list $tl on rhinet0:1"
	done
	snap0=$(counters_now)
	echo "ucx columns: device transport test latency_p50_us latency_avg_us MB/s msg/s"
	for dev in rhinet0 rxe0; do
		for tl in rc ud; do
			perftest $dev $tl tag_lat -n 1000 -w 100
			perftest $dev $tl tag_bw -s 65536 -n 200 -w 20
			perftest $dev $tl ucp_put_lat -n 1000 -w 100
			perftest $dev $tl ucp_put_bw -s 65536 -n 200 -w 20
			perftest $dev $tl ucp_get -s 4096 -n 300 -w 30
			perftest $dev $tl ucp_am_lat -n 1000 -w 100
		done
		# UCT: one transport at a time, named on the command line.
		perftest $dev rc_verbs am_lat -d "$dev:1" -x rc_verbs -n 1000 -w 100
		perftest $dev rc_verbs put_lat -d "$dev:1" -x rc_verbs -n 1000 -w 100
		perftest $dev rc_verbs put_bw -d "$dev:1" -x rc_verbs -D zcopy -s 65536 -n 200 -w 20
		perftest $dev rc_verbs get -d "$dev:1" -x rc_verbs -D zcopy -s 4096 -n 300 -w 30
		perftest $dev ud_verbs am_lat -d "$dev:1" -x ud_verbs -n 1000 -w 100
		[ $dev = rhinet0 ] && transport_report "ucx rhinet0" "$snap0"
	done
fi

# mpi_run DEVICE TRANSPORT MAX: rhinet-mpi on every node.
mpi_run() {
	dev=$1 tl=$2 max=$3
	env=$(ucx_env "$dev" "$tl")
	hosts=""
	for k in $(seq 0 $((NODES - 1))); do hosts="$hosts${hosts:+,}node$k:1"; done
	xs=""
	for a in $env; do xs="$xs -x $a"; done
	t0=$(now)
	# shellcheck disable=SC2086 # lists of options
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout 300 mpirun --host "$hosts" -np "$NODES" \
		--mca pml ucx --mca btl self --mca osc ^ucx \
		--mca oob_tcp_if_include eth0 $xs \
		/opt/rhinet/bin/rhinet-mpi --max "$max" --label "$dev/$tl" \
		>/tmp/mpi.log 2>&1
	rc=$?
	grep -E "^pingpong|^barrier" /tmp/mpi.log | sed "s/^barrier/mpi $dev\/$tl barrier/"
	if [ $rc != 0 ] || ! grep -q "RHINET-MPI: PASS $NODES ranks" /tmp/mpi.log ||
		grep -qiE "completion with error|remote invalid|remote access|fatal|error" /tmp/mpi.log; then
		echo "mpi $dev $tl FAILED (mpirun $rc, $(elapsed "$t0") s):"
		grep -viE "^pingpong" /tmp/mpi.log | head -20
		case $dev in rhinet*) note_fail "MPI over $dev $tl" ;; esac
		return
	fi
	echo "mpi $dev $tl: $NODES ranks passed in $(elapsed "$t0") s"
}

if echo " $* " | grep -q " mpi "; then
	max=1048576
	for dev in rhinet0 rxe0; do
		mpi_run $dev rc $max
		mpi_run $dev ud $max
	done
	transport_report "mpi rhinet0 (since boot)" ""
fi

if [ -n "$failed" ]; then
	echo "ucx_mpi: FAIL:$failed"
	apps_finish 1
	exit 1
fi
echo "ucx_mpi: PASS"
apps_finish 0
exit 0
