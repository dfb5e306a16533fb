#!/bin/sh
# Triggered operations for users (Documentation/hardware/triggered.md):
#   rhinet-trigger       (tests/vm/guest/rhinet_trigger.c) on node 0 alone,
#                        two RC QPs connected through the NIC: a WRITE
#                        triggered at threshold 3 goes after the third add
#                        only, with its wr_id; the send queue wraps around
#                        a parked WRITE; a chain of two; a threshold
#                        already reached; a counter destroyed under parked
#                        WRITEs (flushed with their wr_ids); a second
#                        process cannot add to or post on the first's
#                        counter (the NIC drops and counts the add,
#                        refuses the handle in a WQE); counters until
#                        ENOSPC while another user still gets some; a
#                        process exiting with counters and parked WRITEs
#                        gives its share back; remote adds
#                        (rhinetdv_wr_trigger_add) fire a parked WRITE,
#                        release a WRITE through a parked add, are refused
#                        at the post (UC, UD, a 4-byte SGE) and by the
#                        target (wrong key, stale handle: REM_ACCESS_ERR,
#                        trigger_remote_refused +1, nothing fired); a
#                        process exits with adds in flight.
#   rhinet-trigger-user  (tests/vm/guest/rhinet_trigger_user.cc) under
#                        rhinet-run, one rank per node: rhinet::Trigger and
#                        triggered, chained and flushed PUSHes and PULLs;
#                        remote adds and a remote chain across the nodes,
#                        a triggered mcast, LOCK and UNLOCK, triggered,
#                        chained and flushed collectives, refused adds;
#                        then the example rhinet_triggered_push.
# The NIC counts the WRITEs that fired. Then no node's kernel log has a
# warning. Node 0 drives the test; node 1 waits for its result.
#   trigger.sh NODE NODES   (the applications overlay: run-cluster --apps)
NODE=$1
NODES=$2
LIB_NAME=trigger
# shellcheck source=apps.lib.sh
. /test/apps.lib.sh
apps_setup
[ "$NODE" = 0 ] || apps_wait 600

wait_link_local

failed=""
fired=$(counter trigger_fired)
timeout 200 /opt/rhinet/bin/rhinet-trigger -d rhinet0 -g 0 ||
	failed="$failed rhinet-trigger(rc=$?)"
# threshold 3, the wrapped one, a chain of two, the foreign test's, the
# remote add's WRITE and the remote chain's two (the program checks each
# delta exactly).
[ $(($(counter trigger_fired) - fired)) -ge 8 ] ||
	failed="$failed trigger_fired($fired -> $(counter trigger_fired))"

run_ranks rhinet-trigger-user

# userlib's example program.
run_ranks rhinet_triggered_push

for k in 0 1; do
	if ssh "node$k" dmesg | grep -v "module verification failed" |
		grep -E "BUG:|WARNING:|Oops|rhinet.*not destroyed"; then
		failed="$failed kernel-warnings-node$k"
	fi
done

[ -z "$failed" ] || fail "failed:$failed" # (tells node 1 too)
apps_finish 0
echo "$LIB_NAME: PASS"
