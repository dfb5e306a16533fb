#!/bin/sh
# userlib programs under rhinet-run across the nodes (ranks started over
# ssh, the bootstrap over the NIC's own IP interface, one process group
# with its token): transfer_modes runs every operation in every
# partial-transfer mode it takes, by area and by key, on a ring of ranks
# with every byte checked, put-with-signal and sync; twin_diff_dsm is the
# multiple-writer protocol of software DSMs with the NIC doing the diff;
# hello_push is the README's example;
# isend_irecv is NIC-matched messaging (ping-pong eager and rendezvous,
# an all-to-all with exact and any-source receives, unexpected messages
# and iprobe, cancel, truncation); pin_on_demand is remote pin-down (an
# mmap()ed area pinned by pd_req and first touch, then released: rank 0's
# pinned_pages back where it was); partial_messages is isend/irecv with
# their partial modes in pairs of ranks (stride, bitmap, diff into twin,
# truncation, what userlib and librhinetdv refuse; every byte checked);
# sync_mcast is sequential multicast from rank 0 to the others (basic,
# inline, stride, bitmap; every byte checked after a NIC barrier; a member
# lacking the area), a counter incremented under a NIC lock by every rank
# (LOCK, PULL, PUSH + 1, UNLOCK), barrier rounds where nobody may leave
# early, and the errors of locks and barriers; shared_region is a region
# homed at rank 0 that ranks 1 and 2 subscribe to, a stream of DIFF
# updates, rank 3 joining during it, every copy checked byte for byte
# against the home's and every update applied once by the NICs' counts,
# and the errors of subscribe, unsubscribe and update;
# mcast_switch is simultaneous multicast through the switch group the host set
# (run-cluster.sh --switch-group, /test/switch_groups): root on every node
# gives its NIC the member list through rhinet.ko (and what the driver
# refuses, user nobody included), then rank 0 multicasts in modes basic,
# DIFF, BITMAP and STRIDE with every byte checked, one frame per packet
# at the sender, and an mcast to a group never set (ENOENT).
# inbox_incast is remote atomics (fetch_add counted exactly, compare_swap,
# refusals) and the many-to-one channel (Documentation/userlib/inbox.md):
# every other rank sends 200 messages into rank 0's Inbox of 4 slots at once
# (counters wrapping), every message checked once and in order, no RNR retry
# on any node; run with one and with two ranks per node.
# atomics is the whole atomic family (swap, fetch, set, and/or/xor, 32-bit,
# non-fetching) from every rank at once on rank 0's words, every word
# exact and the refusals checked; with one and with two ranks per node.
# collectives is allreduce, reduce, bcast and barrier executed by the NICs
# (every op and type, 8 B to 1 MiB, a nonblocking one overlapped with
# work, ranks that disagree, a communicator of the even ranks), every
# result checked; with one and with two ranks per node.
# wait_bench is a ping-pong, NIC and communicator barrier loops and one
# 1.1 s wait by two ranks on one node, with waits that sleep (the wait
# must be woken by the NIC) and with RHINET_SPIN_US=never (it must not
# sleep); it prints wall and CPU time per phase.
# add_endpoint adds endpoints to one rank until rhinet.ko refuses
# (max_contexts_per_user set to 4 for it): EDQUOT with a message naming
# the limit, every endpoint made carries a PUSH, and a destroyed one
# makes room for the next. inbox_incast also checks that a receive
# waiting 0.5 s slept on the NIC's watch and was woken by it.
# Then every node holds no twin memory, and no group violation was
# counted; the NICs' shared-region counters are printed.
#   userlib.sh NODE NODES   (the applications overlay: run-cluster --apps)
NODE=$1
NODES=$2
LIB_NAME=userlib
. /test/apps.lib.sh
apps_setup
[ "$NODE" = 0 ] || apps_wait 1500

failed=""
hosts=$(for k in $(seq 0 $((NODES - 1))); do printf 'node%s,' "$k"; done)
hosts=${hosts%,}
run() { # NAME rhinet-run arguments...
	name=$1
	shift
	t0=$(now)
	if timeout 600 rhinet-run --timeout 500 "$@" >/tmp/run.log 2>&1; then
		echo "userlib: $name passed in $(elapsed "$t0") s"
		grep -E "ok|rank|^transfer_modes:|^isend_irecv:|^pin_on_demand:|^partial_messages:|^sync_mcast:|^shared_region:|^mcast_switch:|^inbox_incast:|^collectives:|^atomics:|^wait_bench:|^add_endpoint:" \
			/tmp/run.log | head -40
	else
		echo "userlib: $name FAILED (rc $?, $(elapsed "$t0") s):"
		head -40 /tmp/run.log
		failed="$failed $name"
	fi
}

run "transfer_modes, $NODES ranks" -n "$NODES" --hosts "$hosts" rhinet_transfer_modes
run "transfer_modes, 2 ranks per node" -n $((2 * NODES)) --per-node 2 \
	--hosts "$hosts" rhinet_transfer_modes
run "twin_diff_dsm, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_twin_diff_dsm
run "hello_push" -n 2 --hosts node0,node1 rhinet_hello_push
# K = 8 messages per ordered pair in the all-to-all.
run "isend_irecv, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_isend_irecv 8
run "pin_on_demand, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_pin_on_demand
run "partial_messages, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_partial_messages
# K = 200 locked increments per rank (the counter ends exact).
run "sync_mcast, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_sync_mcast 200
run "inbox_incast, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_inbox_incast 200 4
run "inbox_incast, 2 ranks per node" -n $((2 * NODES)) --per-node 2 \
	--hosts "$hosts" rhinet_inbox_incast 100 4
run "atomics, $NODES ranks" -n "$NODES" --hosts "$hosts" rhinet_atomics 100
run "atomics, 2 ranks per node" -n $((2 * NODES)) --per-node 2 \
	--hosts "$hosts" rhinet_atomics 50
run "collectives, $NODES ranks" -n "$NODES" --hosts "$hosts" \
	rhinet_collectives
run "collectives, 2 ranks per node" -n $((2 * NODES)) --per-node 2 \
	--hosts "$hosts" rhinet_collectives
# Two ranks sharing node 0: waits that sleep after 50 us and the busy
# wait (the default, named here as RHINET_SPIN_US=never), 300 rounds each.
run "wait_bench, 2 ranks on node0, sleeping after 50 us" -n 2 --per-node 2 \
	--hosts node0 -x RHINET_SPIN_US=50 rhinet_wait_bench 300
run "wait_bench, 2 ranks on node0, never sleeping" -n 2 --per-node 2 \
	--hosts node0 -x RHINET_SPIN_US=never rhinet_wait_bench 300
# add_endpoint until the driver refuses: one rank on node0 with rhinet.ko's
# max_contexts_per_user at 4 for the run (EDQUOT naming the limit, every
# endpoint made works, a destroyed one makes room again).
param=/sys/module/rhinet/parameters/max_contexts_per_user
old_limit=$(cat "$param")
echo 4 >"$param"
run "add_endpoint refused at max_contexts_per_user=4" -n 1 --hosts node0 \
	rhinet_add_endpoint 4
echo "$old_limit" >"$param"
# Needs exactly 4 ranks (home, two subscribers, a newcomer).
if [ "$NODES" = 4 ]; then
	run "shared_region, 4 ranks" -n 4 --hosts "$hosts" rhinet_shared_region
fi

# The first switch group the host set, if it copies to every node.
sgroup=$(awk -v n="$NODES" 'NF == n + 1 { print $1; exit }' \
	/test/switch_groups 2>/dev/null)
if [ -n "$sgroup" ]; then
	run "mcast_switch, $NODES ranks, group $sgroup" -n "$NODES" \
		--hosts "$hosts" rhinet_mcast_switch "$sgroup"
else
	echo "userlib: mcast_switch FAILED: no switch group of $NODES ports" \
		"in /test/switch_groups (run-cluster.sh --switch-group)"
	failed="$failed mcast_switch"
fi

for k in $(seq 0 $((NODES - 1))); do
	c=/sys/class/infiniband/rhinet0/ports/1/hw_counters
	got=$(ssh "node$k" "cat $c/twin_bytes $c/group_violations $c/signals" |
		tr '\n' ' ')
	echo "userlib: node$k twin_bytes, group_violations, signals: $got"
	share=$(ssh "node$k" "cd $c && for f in share_*; do echo \$f=\$(cat \$f); done" |
		tr '\n' ' ')
	echo "userlib: node$k $share"
	set -- $got
	[ "$1" = 0 ] || failed="$failed node$k-twin_bytes=$1"
	[ "$2" = 0 ] || failed="$failed node$k-group_violations=$2"
	[ "${3:-0}" -ge 10 ] || failed="$failed node$k-signals=$3"
done

if [ -n "$failed" ]; then
	echo "userlib: FAIL:$failed"
	apps_finish 1
	exit 1
fi
echo "userlib: PASS"
apps_finish 0
exit 0
