#!/bin/sh
# The NIC's core as firmware (run-cluster --core softcore: the engine's
# image in a qemu-system-riscv32 beside each node's QEMU, joined to the
# device by the soft-core link) under the unmodified driver, provider and
# clients, between two nodes: the guest first checks that BAR2 is the soft
# core's (its 64 doorbell pages, 256 KiB; the in-process engine's is
# 1 MiB), then ibv_rc_pingpong checking the bytes, perftest's ib_write_bw,
# ib_read_bw, ib_send_bw and ib_atomic_bw, and userlib's hello_push under
# rhinet-run (every rank checks what it was sent and what it pulls back).
# 200 iterations each: the emulated core is slow. Node 0 prints one line per
# figure:
#   RHINET-SOFTCORE NAME VALUE UNIT [VALUE UNIT]
# and the run fails unless every client passed and every figure is above 0.
# With CORE `engine` the same runs expect the in-process engine (BAR2
# 1 MiB), for figures to set beside (run-cluster --arg engine, without
# --core softcore).
#   softcore.sh NODE NODES [CORE]   (the applications overlay: run-cluster --apps)
NODE=$1
NODES=$2
CORE=${3:-softcore}
# shellcheck disable=SC2034 # read by verbs.lib.sh and apps.lib.sh
LIB_NAME=softcore
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # run_pair: node 1 serves, node 0 connects
# shellcheck source=apps.lib.sh
. /test/apps.lib.sh # set-up with ssh for rhinet-run; node 0 tells the result
apps_setup

# BAR2 of our device (vendor 0x1234, device 0x4e47): line 3 of resource.
want=262144
[ "$CORE" = engine ] && want=1048576
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x4e47 ] &&
		bar2=$(sed -n 3p "$d/resource")
done
# shellcheck disable=SC2086 # start, end and flags
set -- $bar2
[ -n "$bar2" ] && [ $(($2 - $1 + 1)) = $want ] ||
	fail "BAR2 is '$bar2', not the $CORE's $((want / 1024)) KiB"
echo "softcore: BAR2 $((want / 1024)) KiB: the $CORE's doorbell pages"

# pair NAME CMD...: run_pair, then node 0 prints the figure (pingpong:
# usec/iter; perftest: the first result row's BW average in MB/s and
# MsgRate in Mpps, the rate judged: an atomic's 8 bytes make little MB/s).
pair() {
	what=$1
	run_pair "$@" || return
	[ "$NODE" = 0 ] || return
	case $2 in
	ibv_rc_pingpong)
		fig=$(sed -n 's/.* iters in .* = \([0-9.]*\) usec\/iter.*/\1 usec\/iter/p' /tmp/out)
		;;
	*)
		fig=$(awk '/^ *#bytes/ { h = 1; next }
			h && NF >= 5 { print $4, "MB/s", $5, "Mpps"; exit }' /tmp/out)
		;;
	esac
	echo "RHINET-SOFTCORE $what ${fig:-none}"
	# shellcheck disable=SC2086 # the figure's fields
	set -- ${fig:-0 x 0}
	v=$1
	[ $# -ge 3 ] && v=$3
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' ||
		{ echo "softcore: $what: no figure above 0"; failed="$failed $what"; }
}

# This node's NIC counters that are not 0 (what a figure owes to
# retransmissions and drops).
counters_moved() {
	c=/sys/class/infiniband/rhinet0/ports/1/hw_counters
	for f in tx_packets rx_packets retransmits timeouts duplicates \
		out_of_order naks_sent rx_drops rnr_naks_sent rnr_retries \
		stale_packets rx_context_busy send_quota_waits kick_overflows; do
		[ -r "$c/$f" ] && [ "$(cat "$c/$f")" != 0 ] &&
			printf ' %s=%s' "$f" "$(cat "$c/$f")"
	done
	echo
}

pair rc_pingpong ibv_rc_pingpong -d rhinet0 -g $GID -c -n 200 -s 4096
P="-d rhinet0 -x $GID -F"
pair write_bw ib_write_bw $P -n 200 -s 65536
pair read_bw ib_read_bw $P -n 200 -s 65536
pair send_bw ib_send_bw $P -n 200 -s 65536
pair atomic_bw ib_atomic_bw $P -n 200

echo "RHINET-SOFTCORE node $NODE counters:$(counters_moved)"
[ "$NODE" = 0 ] || apps_wait 240
t0=$(now)
if timeout 200 rhinet-run --timeout 150 -n 2 --hosts node0,node1 \
	rhinet_hello_push >/tmp/run.log 2>&1 &&
	[ "$(grep -c "hello_push: rank . of 2: ok" /tmp/run.log)" = 2 ]; then
	echo "softcore: hello_push passed in $(elapsed "$t0") s"
	echo "RHINET-SOFTCORE hello_push $(elapsed "$t0") s"
else
	echo "softcore: hello_push FAILED ($(elapsed "$t0") s):"
	failed="$failed hello_push"
fi
head -20 /tmp/run.log
echo "RHINET-SOFTCORE node 0 counters:$(counters_moved)"
# rhinet-run's ssh goes over eth0, IP through this NIC: a frame lost there
# costs TCP a retransmission timeout (1 s, then doubling), which is how
# hello_push once took 5 to 33 s. This node's TCP segments resent:
echo "RHINET-SOFTCORE node 0 tcp_retransmits $(awk '/^Tcp:/ {
	if (!c) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i }
	else print $c }' /proc/net/snmp)"
verbs_check_dmesg
[ -z "$failed" ] || fail "failed:$failed"
apps_finish 0
echo "softcore: PASS"
