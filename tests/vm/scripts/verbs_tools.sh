#!/bin/sh
# Unmodified rdma-core tools between two nodes over the RDMA device: node 1
# serves, node 0 connects to 10.77.0.2 (the tools swap QP data over TCP, port
# 18515, through rhinet.ko's eth0).
#   basic     ibv_devinfo (PORT_ACTIVE, link layer Ethernet) and
#             ibv_rc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong checking the
#             received bytes (-c)
#   perftest  ib_{write,read,send}_{bw,lat}, ib_atomic_{bw,lat}; ib_write_bw
#             and ib_send_lat once more with --use_old_post_send (perftest
#             4.5 picks its new post-send flow, ibv_wr_*, only for devices on
#             its own list, so on rhinet0 both runs post with ibv_post_send;
#             the pair keeps both flags working)
#   qpex      rhinet-qpex: RC and UD through ibv_qp_ex (every wr_* opcode,
#             SGE and inline lists, wr_abort, failing batches) and ibv_cq_ex,
#             every byte and completion field checked on both nodes (on
#             rhinet devices only)
#   cm        connections through rdma_cm (ib_cm over the management QP):
#             rping validating every ping, perftest with -R
#   dv        rhinetdv_pingpong: the direct verbs (endpoint, areas, PUSH and
#             PULL by area ID and offset, status words), every byte checked,
#             error cases included; then a process killed while holding an
#             endpoint and an area leaves no area registered, and on a
#             soft-RoCE device the direct verbs say EOPNOTSUPP (rhinet0 only)
#   all       all of them
#   verbs_tools.sh NODE NODES [basic|perftest|qpex|cm|dv|all] [DEVICE]
# DEVICE (default rhinet0) may name a soft-RoCE device instead (rxe*): it is
# created on eth0 with rdma_rxe, to try these runs against a known-good
# provider.
NODE=$1
WHICH=${3:-all}
DEVICE=${4:-rhinet0}
GID=0
SERVER=10.77.0.2
ME=10.77.0.$((NODE + 1))
THEM=10.77.0.$((2 - NODE))
RUN_TIMEOUT=90    # seconds for one run of one tool
CONNECT_TRIES=40  # client connection attempts, 0.5 s apart
SYNC_PORT=18600   # the nodes compare their results here after every run
KO=/opt/rhinet/modules/rhinet.ko
failed=""
fail() { echo "verbs_tools: FAIL: $*"; dmesg | tail -30; exit 1; }
now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { echo "$1 $(now)" | awk '{ printf "%.1f", $2 - $1 }'; }

case $WHICH in basic | perftest | qpex | cm | dv | all) ;; *) fail "unknown set '$WHICH'" ;; esac
want() { [ "$WHICH" = all ] || [ "$WHICH" = "$1" ]; }
[ "$NODE" = 0 ] || [ "$NODE" = 1 ] || fail "runs on two nodes (node $NODE)"

dmesg -c >/dev/null
modprobe ib_uverbs && modprobe rdma_ucm && insmod "$KO" || fail "insmod"
# RoCE GID 0 is eth0's IPv6 link-local address: usable at once without
# duplicate address detection (soft-RoCE resolves it through the IP stack).
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
ip addr add "$ME/24" dev eth0 && ip link set eth0 up || fail "ip setup"
case $DEVICE in
rxe*)
	modprobe rdma_rxe || fail "modprobe rdma_rxe"
	rdma link add "$DEVICE" type rxe netdev eth0 || fail "rdma link add $DEVICE"
	;;
esac
i=0
until rdma link show "$DEVICE/1" 2>/dev/null | grep -q " state ACTIVE "; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "$DEVICE port not ACTIVE after 10 s: $(rdma link show)"
	usleep 100000
done
# Wait until the peer answers (it boots at its own pace).
i=0
until ping -c 1 -W 1 "$THEM" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 30 ] || fail "no answer from $THEM"
done

# Exchanges this node's result of a run for the peer's, in PEER_STATUS:
# node 1 listens, node 0 connects (the peer may still be busy with its run).
sync_status() {
	rm -f /tmp/peer_status
	export MY_STATUS=$1
	if [ "$NODE" = 1 ]; then
		timeout $((RUN_TIMEOUT + 30)) nc -l -p $SYNC_PORT -e sh -c \
			'read -r s; echo "$s" >/tmp/peer_status; echo "$MY_STATUS"'
	else
		i=0
		until nc "$SERVER" $SYNC_PORT -e sh -c \
			'echo "$MY_STATUS"; read -r s; echo "$s" >/tmp/peer_status' 2>/dev/null &&
			[ -s /tmp/peer_status ]; do
			i=$((i + 1))
			[ $i -lt $((2 * (RUN_TIMEOUT + 30))) ] || break
			usleep 500000
		done
	fi
	PEER_STATUS=$(cat /tmp/peer_status 2>/dev/null)
	[ -n "$PEER_STATUS" ] || PEER_STATUS=lost
}

# run_pair NAME CMD...: CMD as the server on node 1 and, with the server's
# address appended, as the client on node 0. The client retries while the
# server is not listening yet; both run again (up to 3 times in all) when
# either side's perftest failed its CPU clock calibration, which happens now
# and then under TCG. Both print the output; a failure on either side fails
# the pair on both nodes.
run_pair() {
	name=$1
	shift
	attempt=1
	while :; do
		start=$(now)
		tries=0
		while :; do
			if [ "$NODE" = 1 ]; then
				timeout $RUN_TIMEOUT "$@" >/tmp/out 2>&1
			else
				timeout $RUN_TIMEOUT "$@" "$SERVER" >/tmp/out 2>&1
			fi
			rc=$?
			# perftest over TCP, and rdma_cm when nobody listens yet.
			[ "$NODE" = 0 ] && [ $rc != 0 ] &&
				grep -qE "Couldn't connect to|RDMA_CM_EVENT_(REJECTED|UNREACHABLE)|Unable to perform rdma_client" \
					/tmp/out || break
			tries=$((tries + 1))
			[ $tries -lt $CONNECT_TRIES ] || break
			usleep 500000
		done
		took=$(elapsed "$start")
		if [ $rc = 0 ]; then
			status=ok
		elif grep -qF "Correlation coefficient r^2" /tmp/out; then
			status=calibration
		else
			status="rc=$rc"
		fi
		sync_status "$status"
		role=server
		[ "$NODE" = 0 ] && role="client (after $tries refused connections)"
		echo "== $name attempt $attempt, $role: $status in $took s; peer: $PEER_STATUS"
		echo "== $*"
		cat /tmp/out
		if [ $attempt -lt 3 ] &&
			{ [ "$status" = calibration ] || [ "$PEER_STATUS" = calibration ]; }; then
			attempt=$((attempt + 1))
			echo "== $name: perftest clock calibration failed, again"
			continue
		fi
		break
	done
	if [ "$status" = ok ] && [ "$PEER_STATUS" = ok ]; then
		echo "verbs_tools: $name passed ($took s)"
	else
		echo "verbs_tools: $name FAILED (this node: $status, peer: $PEER_STATUS)"
		failed="$failed $name"
	fi
}

if want basic; then
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
if want perftest; then
	P="-d $DEVICE -x $GID -F --report_gbits"
	run_pair ib_write_bw ib_write_bw $P -n 200 -s 65536
	run_pair ib_write_lat ib_write_lat $P -n 200 -s 8
	run_pair ib_read_bw ib_read_bw $P -n 200 -s 65536
	run_pair ib_read_lat ib_read_lat $P -n 200 -s 8
	run_pair ib_send_bw ib_send_bw $P -n 200 -s 65536
	run_pair ib_send_lat ib_send_lat $P -n 200 -s 8
	run_pair ib_atomic_bw ib_atomic_bw $P -n 200
	run_pair ib_atomic_lat ib_atomic_lat $P -n 200
	run_pair ib_write_bw_old_post_send ib_write_bw $P -n 200 -s 65536 \
		--use_old_post_send
	run_pair ib_send_lat_old_post_send ib_send_lat $P -n 200 -s 8 \
		--use_old_post_send
fi
if want qpex; then
	case $DEVICE in
	rxe*)
		# It checks rhinet's answers to the error cases; soft-RoCE
		# of this kernel also failed its first batch (not looked into).
		echo "verbs_tools: rhinet-qpex skipped on $DEVICE"
		;;
	*) run_pair rhinet-qpex /opt/rhinet/bin/rhinet-qpex -d "$DEVICE" -g $GID ;;
	esac
fi
if want cm; then
	# rping: the server listens on every address, the client names it;
	# -V checks every ping's data on both sides.
	cat >/tmp/rping.sh <<-'EOT'
		#!/bin/sh
		if [ $# = 0 ]; then exec rping -s -a 0.0.0.0 -C 50 -S 1000 -V
		else exec rping -c -a "$1" -C 50 -S 1000 -V; fi
	EOT
	chmod +x /tmp/rping.sh
	run_pair rping /tmp/rping.sh
	R="-R -d $DEVICE -F --report_gbits"
	run_pair ib_write_bw-R ib_write_bw $R -n 200 -s 65536
	run_pair ib_send_lat-R ib_send_lat $R -n 200 -s 8
	run_pair ib_read_lat-R ib_read_lat $R -n 200 -s 8
fi

areas() { rdma statistic show link rhinet0/1 | tr ' ' '\n' | grep -A1 -x areas | tail -n 1; }
if want dv && [ "$DEVICE" = rhinet0 ]; then
	run_pair rhinetdv_pingpong rhinetdv_pingpong -n 100 -s 16384
	# Killed while it holds its endpoint and area (waiting for a peer).
	rhinetdv_pingpong -p 18701 -a 9 >/tmp/dv_kill.txt 2>&1 &
	pid=$!
	i=0
	until grep -q "^endpoint" /tmp/dv_kill.txt; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "rhinetdv_pingpong to kill: $(cat /tmp/dv_kill.txt)"
		usleep 100000
	done
	held=$(areas)
	kill -9 $pid
	wait $pid
	i=0
	until [ "$(areas)" = 0 ]; do
		i=$((i + 1))
		[ $i -le 20 ] || fail "areas $(areas) after the kill, expected 0"
		usleep 100000
	done
	if [ "$held" -ge 1 ]; then
		echo "verbs_tools: killed rhinetdv_pingpong: areas $held -> 0"
	else
		failed="$failed dv_kill(areas=$held)"
	fi
	# On another provider's device (soft-RoCE) the direct verbs refuse.
	if modprobe rdma_rxe && rdma link add rxe_dv type rxe netdev eth0; then
		rhinetdv_pingpong -F -d rxe_dv || failed="$failed dv_foreign"
		rdma link delete rxe_dv
	else
		failed="$failed dv_foreign(no rxe_dv)"
	fi
fi

if dmesg | grep -v "module verification failed" | grep -E "BUG:|WARNING:|Oops"; then
	fail "kernel complained"
fi
[ -z "$failed" ] || fail "failed:$failed"
echo "verbs_tools: PASS on node $NODE ($WHICH on $DEVICE)"
