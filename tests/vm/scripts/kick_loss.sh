#!/bin/sh
# SQ kicks lost on purpose under verbs users (queues.md, "The SQ event
# index"): node 0's device drops every SQ kick of a process's doorbell
# page (the fault capability's sq-kick-loss). With the SQ event index, the
# provider's default, a post after a lost kick rings nothing, so only the
# NIC's record scan can find it: ib_write_bw and ib_send_bw of 8 bytes
# still complete with every data checked by perftest's own run, and the
# scan's finds are counted (sq_recovered) while no user kick arrived.
# Then the fault is cleared and the same run kicks again.
#   kick_loss.sh NODE NODES
NODE=$1
LIB_NAME=kick_loss
# shellcheck source=verbs.lib.sh
. /test/verbs.lib.sh
verbs_setup
verbs_device rhinet0

CNT=/sys/class/infiniband/rhinet0/ports/1/hw_counters
WRITE="ib_write_bw -d rhinet0 -x $GID -F -s 8 -n 5000"
SEND="ib_send_bw -d rhinet0 -x $GID -F -s 8 -n 5000"

if [ "$NODE" = 1 ]; then
	for t in write send write_again; do
		case $t in
		write*) cmd=$WRITE ;;
		send) cmd=$SEND ;;
		esac
		# shellcheck disable=SC2086 # the command and its options
		run_pair "$t" $cmd || fail "$t: the server side failed"
	done
	echo "kick_loss: PASS: node 1 served"
	exit 0
fi

# shellcheck source=fault.lib.sh
. /test/fault.lib.sh
fault_find

# lost NAME CMD...: CMD run as the client with every user SQ kick
# dropped; the record scan must have found its posts.
lost() {
	name=$1
	shift
	rec0=$(cat $CNT/sq_recovered)
	fault_set sq-kick-loss
	run_pair "$name" "$@" || fail "$name: did not complete with its kicks lost"
	fault_set none
	rec=$(($(cat $CNT/sq_recovered) - rec0))
	echo "kick_loss: $name: every user SQ kick dropped; the record scan took $rec slots"
	[ "$rec" -gt 0 ] || fail "$name: completed, yet the scan found nothing"
}

# shellcheck disable=SC2086 # the commands and their options
lost write $WRITE
# shellcheck disable=SC2086
lost send $SEND

# The fault gone, kicks reach the NIC again and the scan takes nothing.
db0=$(cat $CNT/host_doorbells)
rec0=$(cat $CNT/sq_recovered)
# shellcheck disable=SC2086
run_pair write_again $WRITE || fail "write_again: failed with kicks back"
db=$(($(cat $CNT/host_doorbells) - db0))
rec=$(($(cat $CNT/sq_recovered) - rec0))
echo "kick_loss: write_again: $db SQ kicks, the scan took $rec slots"
[ "$db" -gt 0 ] || fail "write_again: no SQ kick reached the NIC"
dmesg | grep -v "module verification failed" | grep -E "BUG:|WARNING:|Oops" &&
	fail "the kernel complained"
echo "kick_loss: PASS"
