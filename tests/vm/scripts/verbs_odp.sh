#!/bin/sh
# On-demand paging through plain verbs (rhinet-odp, tests/vm/guest/rhinet_odp.c)
# between two nodes over rhinet0: node 1 registers mmap()ed memory with
# IBV_ACCESS_ON_DEMAND, node 0 WRITEs, READs and adds into it (remote
# pin-down pins on first touch); ibv_advise_mr prefetch, its refusals,
# odp_caps; local first touches (a SEND from an unpinned page into an
# unpinned receive buffer, a READ into an unpinned buffer) pinned by each
# node's host; a SEND from a PROT_NONE page failing LOC_PROT_ERR. Then
# rhinet-odp-bench prints what on-demand memory costs; no page stays
# pinned on either node.
#   verbs_odp.sh NODE NODES [BENCH_ITERS]   (the benchmark's N, default 8)
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=verbs_odp
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
stat() { rdma statistic show link rhinet0/1 | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }

run_pair rhinet-odp /opt/rhinet/bin/rhinet-odp -d rhinet0 -g "$GID"
rdma statistic show link rhinet0/1 | tr ' ' '\n' |
	grep -A1 -x -E "pinned_pages|pin_requests|pin_refusals|pin_events" | paste -sd' '
# What it costs (a benchmark: figures, no timed assertion; the table is
# node 0's). Few iterations keep the test quick; see tests/vm/README.md.
export RHINET_ODP_BENCH_ITERS=${3:-8}
run_pair rhinet-odp-bench /opt/rhinet/bin/rhinet-odp-bench -d rhinet0 -g "$GID"
held=$(stat pinned_pages)
[ "$held" = 0 ] || failed="$failed pinned_pages=$held"
verbs_check_dmesg
rmmod rhinet || failed="$failed rmmod"
[ -z "$failed" ] || fail "failed:$failed"
echo "verbs_odp: PASS on node $NODE"
