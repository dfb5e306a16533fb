#!/bin/sh
# Shared by the guest scripts that run rdma-core's tools between two nodes
# (verbs_tools.sh, verbs_bench.sh): sourced, not run. run-cluster.sh ships
# every *.lib.sh next to the test script into /test/ of the guests.
#
# Node 1 serves, node 0 connects to 10.77.0.2: the tools swap QP data over
# TCP (port 18515) through rhinet.ko's eth0. The sourcing script sets NODE
# and calls verbs_setup first.
# shellcheck disable=SC2034 # used by the scripts that source this file
GID=0
SERVER=10.77.0.2
ME=10.77.0.$((NODE + 1))
THEM=10.77.0.$((2 - NODE))
RUN_TIMEOUT=${RUN_TIMEOUT:-90} # seconds for one run of one tool
CONNECT_TRIES=40               # client connection attempts, 0.5 s apart
SYNC_PORT=18600                # the nodes compare their results here after every run
KO=/opt/rhinet/modules/rhinet.ko
LIB_NAME=${LIB_NAME:-verbs}    # prefix of this script's messages
# 1 where the figures are the point (verbs_bench): a run whose clock
# calibration failed in all its attempts fails. 0 (the function tests):
# such a run passes when perftest completed every iteration and exited 0,
# since only the conversion of cycles to microseconds is spoiled.
FIGURES_NEEDED=${FIGURES_NEEDED:-0}
failed=""
fail() { echo "$LIB_NAME: FAIL: $*"; dmesg | tail -30; exit 1; }
now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { echo "$1 $(now)" | awk '{ printf "%.1f", $2 - $1 }'; }

# rhinet.ko up, eth0 addressed, the peer answering ping.
verbs_setup() {
	[ "$NODE" = 0 ] || [ "$NODE" = 1 ] || fail "runs on two nodes (node $NODE)"
	dmesg -c >/dev/null
	modprobe ib_uverbs && modprobe rdma_ucm && insmod "$KO" || fail "insmod"
	# RoCE GID 0 is eth0's IPv6 link-local address: usable at once without
	# duplicate address detection (soft-RoCE resolves it through the IP stack).
	verbs_net_up "setup" virtio_link_setup
}

# verbs_net_up WHAT [HOOK]: eth0 (rhinet.ko's, perhaps just bound again)
# addressed and up, HOOK run, then the peer answering ping (it boots, or
# recovers, at its own pace).
verbs_net_up() {
	echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
	ip addr add "$ME/24" dev eth0 && ip link set eth0 up || fail "$1: ip setup"
	${2:-}
	i=0
	until ping -c 1 -W 1 "$THEM" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 30 ] || fail "$1: no answer from $THEM"
	done
}

# verbs_device DEVICE: a soft-RoCE device (rxe*) on eth0 when asked for,
# the port ACTIVE (rdma_device.lib.sh).
. /test/rdma_device.lib.sh
verbs_device() { rdma_device "$1"; }

# fail_tells_peer: from here on node 0's failures reach node 1, waiting in
# sync_status for node 0's word, too; until the script sets synced=1 (the
# word was given).
fail_tells_peer() {
	synced=0
	# shellcheck disable=SC2317 # called later, as every script's fail
	fail() {
		echo "$LIB_NAME: FAIL: $*"
		dmesg | tail -30
		[ "$synced" = 1 ] || sync_status "fail: $*" >/dev/null 2>&1
		exit 1
	}
}

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
# either side's perftest failed its CPU clock calibration (even if it went
# on and exited 0), which happens now and then under TCG and often on a
# loaded machine, or when both hung after the client was refused. A
# calibration that fails three times fails the pair only with
# FIGURES_NEEDED=1. Both print the output (left in /tmp/out);
# a failure on
# either side fails the pair on both nodes (added to $failed, and the
# function returns 1).
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
		# A failed calibration spoils the figures even when perftest
		# goes on and exits 0 (-F): it then prints rates of 0.
		# (calibration: exited 0 all the same; calibration-rc=N: not)
		if grep -qF "Correlation coefficient r^2" /tmp/out; then
			status=calibration
			[ $rc = 0 ] || status="calibration-rc=$rc"
		elif [ $rc = 0 ]; then
			status=ok
		elif [ "$NODE" = 0 ] && [ $tries -gt 0 ] &&
			{ [ $rc = 124 ] || [ $rc = 143 ]; }; then
			# A client refused while the server was not listening
			# yet, then both hung: perftest's rdma_cm client has
			# crashed in librdmacm after a REJECTED (seen once in
			# 2026-11, a GPF in dmesg) with the server left waiting.
			status=stuck
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
			case "$status $PEER_STATUS" in *calibration*) true ;; *) false ;; esac; then
			attempt=$((attempt + 1))
			echo "== $name: perftest clock calibration failed, again"
			continue
		fi
		if [ $attempt -lt 3 ] &&
			{ [ "$status" = stuck ] || [ "$PEER_STATUS" = stuck ]; }; then
			attempt=$((attempt + 1))
			echo "== $name: stuck after refused connections, again"
			continue
		fi
		break
	done
	if [ "$status" = ok ] && [ "$PEER_STATUS" = ok ]; then
		echo "$LIB_NAME: $name passed ($took s)"
		return 0
	fi
	if [ "$FIGURES_NEEDED" = 0 ] &&
		case "$status" in ok | calibration) true ;; *) false ;; esac &&
		case "$PEER_STATUS" in ok | calibration) true ;; *) false ;; esac; then
		echo "$LIB_NAME: $name passed ($took s; figures spoiled by perftest's clock calibration)"
		return 0
	fi
	echo "$LIB_NAME: $name FAILED (this node: $status, peer: $PEER_STATUS)"
	failed="$failed $name"
	return 1
}

# /tmp/retry.sh OUT PATTERN COMMAND...: runs COMMAND (output to OUT) until
# it succeeds, again every 0.5 s while OUT says PATTERN (an extended
# regular expression: the server is not there yet), 40 times at most; then
# prints OUT, exiting as COMMAND did. For clients whose refusal run_pair
# does not know.
verbs_retry_script() {
	cat >/tmp/retry.sh <<'EOT'
#!/bin/sh
out=$1 pattern=$2
shift 2
i=0
while :; do
	"$@" >"$out" 2>&1 && break
	rc=$?
	i=$((i + 1))
	if [ $i -ge 40 ] || ! grep -qE "$pattern" "$out"; then
		cat "$out"
		exit $rc
	fi
	usleep 500000
done
cat "$out"
EOT
	chmod +x /tmp/retry.sh
}

# The xpu (the accelerator stand-in): xpu.ko loaded, /dev/xpu0 there, and
# XPU_EXPECT exported as what the kernel must do with its dma-bufs: p2p
# under the debug kernel (CONFIG_PCI_P2PDMA), none under Debian's.
xpu_load() {
	insmod /opt/rhinet/modules/xpu.ko || fail "insmod xpu.ko"
	[ -c /dev/xpu0 ] || fail "no /dev/xpu0"
	case $(uname -r) in
	*-rhinet-debug) XPU_EXPECT=p2p ;;
	*) XPU_EXPECT=none ;;
	esac
	export XPU_EXPECT
}

# The kernel must not have complained during the run. ib_core's warning
# for a pinned dma-buf MR whose exporter moved it anyway is a complaint too.
verbs_check_dmesg() {
	if dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|Invalidate callback should not be called"; then
		fail "kernel complained"
	fi
}
