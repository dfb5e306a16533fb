#!/bin/sh
# The same unmodified rdma-core clients over each RDMA device in turn, between
# two nodes, for a side-by-side comparison (tests/bench/verbs_vs_rxe.sh prints
# the table on the host):
#   verbs_bench.sh NODE NODES [quick] DEVICE...
# e.g. `rhinet0 rxe0`: our NIC, then soft-RoCE (rdma_rxe) created on eth0, the
# IP interface rhinet.ko gives the same NIC. Per device: ibv_devinfo,
# ibv_{rc,ud,srq}_pingpong checking the bytes (-c), perftest's latency tests
# (write/read/send 2 B, atomic), bandwidth at 64 KiB (write/read/send) and
# small-message rate (write and send 8 B, atomic). On rhinet* devices, also
# isend/irecv (rhinetdv_tag_bench: ping-pong latency at 8 B, 64 B, 4 KiB,
# 64 KiB; streaming bandwidth at 64 KiB and 1 MiB) beside the verbs it is
# judged against: ib_send_lat at 8 B and ib_write_bw at 1 MiB (and, not
# quick, ib_send_lat at 64 B, 4 KiB and 64 KiB and ib_send_bw at 1 MiB).
# Node 0 (the client) prints one line per figure for the host:
#   RHINET-BENCH DEVICE TEST FIELD... (the perftest result row, or usec/iter;
#     rhinetdv_tag_bench's rows as tag_lat_BYTES / tag_bw_BYTES, laid out
#     as perftest's)
#   RHINET-BENCH DEVICE TEST FAIL
#   RHINET-CNT DEVICE TEST NAME=DELTA... (node 0's rhinet0 transport counters
#     that moved during the test: retransmits, RNR NAKs, drops...; rxe's
#     frames ride on the same NIC through eth0)
# On rhinet* devices both nodes also print the bus transactions of the test
# (MMIO writes, doorbells by kind, WQE and record fetches, DMA, MSI-X), all
# of them, zeros included, with the test's message count (its -n):
#   RHINET-BUS DEVICE TEST node=N msgs=M NAME=DELTA...
# send_rate_kick is send_rate with RHINET_RQ_DOORBELL=always (a kick per
# receive posted, as before the NIC read RQ records on its own).
# write_rate_sqkick and send_rate_sqkick are write_rate and send_rate with
# RHINET_SQ_DOORBELL=always (a plain SQ kick per post, no WQE in the
# doorbell page, as before the NIC asked for kicks in SQ records);
# write_rate_sqbit, send_rate_sqbit and write_lat_sqbit with
# RHINET_SQ_DOORBELL=bit (the
# request bit alone, as before the SQ event index became the default:
# Documentation/provider/README.md).
# write_lat_inline is write_lat with RHINET_SQ_INLINE=1 (each kick carries
# its one-slot WQE in the doorbell page's inline window).
# send_rate_noruns is send_rate with RHINET_CQE_RUNS=0 (every completion in
# a CQE of its own, as before CQs had runs: queues.md, "Runs"): its CQE-wr
# and DMA-wr columns against send_rate's.
# `quick` runs fewer iterations. Any failed client on a rhinet device fails
# the run; a failed client on a reference device (soft-RoCE) is reported as
# FAIL in the table and listed, not counted.
NODE=$1
shift 2
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=verbs_bench
FIGURES_NEEDED=1 # a run without figures fails
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

LAT_N=1000 BW_N=400 RATE_N=20000 PP_N=500 BIG_N=100 CHECKED_N=20 QUICK=0
if [ "${1:-}" = quick ]; then
	LAT_N=200 BW_N=100 RATE_N=2000 PP_N=100 BIG_N=30 CHECKED_N=5 QUICK=1
	shift
fi
[ $# -ge 1 ] || fail "name at least one device"

verbs_setup
ref_failed=""

# The NIC's counters worth watching in a benchmark, as NAME=VALUE lines.
CNT_DIR=/sys/class/infiniband/rhinet0/ports/1/hw_counters
CNT_NAMES="tx_packets timeouts retransmits duplicates out_of_order naks_sent rnr_naks_sent
rnr_retries rx_drops ud_drops kick_overflows cq_overflows error_cqes"
counters() {
	for c in $CNT_NAMES; do
		[ -r "$CNT_DIR/$c" ] && echo "$c=$(cat "$CNT_DIR/$c")"
	done
}
BUS_NAMES="mmio_writes host_doorbells sq_inline_doorbells rq_doorbells
srq_doorbells cq_arm_doorbells sq_wqe_fetches sq_wqe_fetch_bytes
recv_wqe_fetches queue_record_reads dma_reads dma_read_bytes dma_writes
dma_write_bytes cqe_writes cqes_saved msix_interrupts completions"
# Read from BAR0 through the driver (rhinet-diag: devlink, no MMIO write,
# DMA or interrupt of its own); they are no port statistics (registers.md).
bus_counters() {
	rhinet-diag --all 2>/dev/null | awk -v names="$BUS_NAMES" '
		BEGIN { n = split(names, w); for (i = 1; i <= n; i++) want[w[i]] = 1 }
		/^counters/ { c = 1; next }
		/^[^ ]/ { c = 0 }
		c && ($1 in want) { v[$1] = $2 }
		END { for (i = 1; i <= n; i++) print w[i] "=" (w[i] in v ? v[w[i]] : 0) }'
}
# The test's message count: the value after its -n.
msg_count() {
	n=0
	while [ $# -gt 0 ]; do
		[ "$1" = -n ] && [ $# -ge 2 ] && n=$2
		shift
	done
	echo "$n"
}

# bench DEVICE NAME CMD...: run_pair, then node 0 reports the figures and
# the counters that moved.
bench() {
	dev=$1
	shift
	counters >/tmp/cnt_before
	bus_counters >/tmp/bus_before
	ok=1
	if ! run_pair "$@"; then
		ok=0
		# soft-RoCE is the reference, not the product: its failure is
		# reported (FAIL in the table, listed at the end), not ours.
		case $dev in
		rhinet*) ;;
		*)
			failed=${failed%" $1"}
			ref_failed="$ref_failed $dev:$1"
			;;
		esac
	fi
	if [ "$NODE" = 0 ]; then
		counters | awk -F= -v p="RHINET-CNT $dev $1" '
			NR == FNR { b[$1] = $2; next }
			$2 - b[$1] > 0 { s = s " " $1 "=" $2 - b[$1] }
			END { if (s != "") print p s }' /tmp/cnt_before -
	fi
	case $dev in
	rhinet*)
		bus_counters | awk -F= -v p="RHINET-BUS $dev $1 node=$NODE msgs=$(msg_count "$@")" '
			NR == FNR { b[$1] = $2; next }
			{ s = s " " $1 "=" $2 - b[$1] }
			END { print p s }' /tmp/bus_before -
		;;
	esac
	if [ $ok = 0 ]; then
		[ "$NODE" = 0 ] && echo "RHINET-BENCH $dev $1 FAIL"
		return
	fi
	[ "$NODE" = 0 ] || return
	case $2 in
	ibv_*)
		# "N iters in S seconds = U usec/iter"
		sed -n "s/.* iters in .* = \([0-9.]*\) usec\/iter.*/RHINET-BENCH $dev $1 \1/p" /tmp/out
		;;
	rhinetdv_tag_bench)
		# RHINETDV-TAG-BENCH lat|bw BYTES ITERS FIELD...
		awk -v p="RHINET-BENCH $dev" '$1 == "RHINETDV-TAG-BENCH" {
			printf "%s tag_%s_%s", p, $2, $3
			for (i = 3; i <= NF; i++) printf " %s", $i
			printf "\n" }' /tmp/out
		;;
	*)
		# The first row under perftest's "#bytes ..." header.
		awk -v p="RHINET-BENCH $dev $1" \
			'/^ *#bytes/ { h = 1; next } h && NF >= 4 { print p, $0; exit }' /tmp/out
		;;
	esac
}

for DEV in "$@"; do
	verbs_device "$DEV"
	echo "verbs_bench: ===== $DEV ====="
	ibv_devinfo -d "$DEV" | tee /tmp/devinfo.txt
	grep -q "state:.*PORT_ACTIVE" /tmp/devinfo.txt ||
		fail "ibv_devinfo -d $DEV: port not ACTIVE"
	D="-d $DEV -g $GID -c -n $PP_N"
	bench "$DEV" rc_pingpong ibv_rc_pingpong $D -s 4096
	# A UD message carries at most the path MTU (1024 at the default).
	bench "$DEV" ud_pingpong ibv_ud_pingpong $D -s 1024
	bench "$DEV" srq_pingpong ibv_srq_pingpong $D -q 4 -s 4096
	P="-d $DEV -x $GID -F --report_gbits"
	bench "$DEV" write_lat ib_write_lat $P -n $LAT_N -s 2
	bench "$DEV" read_lat ib_read_lat $P -n $LAT_N -s 2
	bench "$DEV" send_lat ib_send_lat $P -n $LAT_N -s 2
	bench "$DEV" atomic_lat ib_atomic_lat $P -n $LAT_N
	bench "$DEV" write_bw ib_write_bw $P -n $BW_N -s 65536
	bench "$DEV" read_bw ib_read_bw $P -n $BW_N -s 65536
	bench "$DEV" send_bw ib_send_bw $P -n $BW_N -s 65536
	bench "$DEV" write_rate ib_write_bw $P -n $RATE_N -s 8
	bench "$DEV" send_rate ib_send_bw $P -n $RATE_N -s 8
	bench "$DEV" atomic_rate ib_atomic_bw $P -n $RATE_N
	case $DEV in
	rhinet*)
		# isend/irecv in the same boot as the verbs it is held to:
		# latency beside ib_send_lat, 1 MiB bandwidth beside
		# ib_write_bw (every byte of a checked pass checked).
		bench "$DEV" send_lat_8 ib_send_lat $P -n $LAT_N -s 8
		bench "$DEV" tag rhinetdv_tag_bench -n $LAT_N -b $BW_N -B $BIG_N \
			-c $CHECKED_N
		bench "$DEV" write_bw_1m ib_write_bw $P -n $BIG_N -s 1048576
		# The 8-byte SENDs again with a kick per post_recv, the
		# reference for receives posted without doorbells (queues.md):
		# its RQ-db column against send_rate's.
		export RHINET_RQ_DOORBELL=always
		bench "$DEV" send_rate_kick ib_send_bw $P -n $RATE_N -s 8
		unset RHINET_RQ_DOORBELL
		# The 8-byte rates again with an SQ kick per post, the
		# reference for sends posted without doorbells (queues.md):
		# their SQ-db and SQ-WQE-rd columns against the rates'.
		export RHINET_SQ_DOORBELL=always
		bench "$DEV" write_rate_sqkick ib_write_bw $P -n $RATE_N -s 8
		bench "$DEV" send_rate_sqkick ib_send_bw $P -n $RATE_N -s 8
		unset RHINET_SQ_DOORBELL
		# And with the request bit alone (queues.md), against the SQ
		# event index of the rates above: a kick that wakes the NIC
		# leaves the bit stored, an event index names one slot.
		export RHINET_SQ_DOORBELL=bit
		bench "$DEV" write_rate_sqbit ib_write_bw $P -n $RATE_N -s 8
		bench "$DEV" send_rate_sqbit ib_send_bw $P -n $RATE_N -s 8
		# A latency test goes idle after every message: the index costs
		# the NIC a record read there that the bit does not (rec-rd).
		bench "$DEV" write_lat_sqbit ib_write_lat $P -n $LAT_N -s 2
		unset RHINET_SQ_DOORBELL
		# A latency test with the WQE written into the doorbell page
		# (RHINET_SQ_INLINE=1): SQ-WQE-rd and MMIO against write_lat's.
		export RHINET_SQ_INLINE=1
		bench "$DEV" write_lat_inline ib_write_lat $P -n $LAT_N -s 2
		unset RHINET_SQ_INLINE
		# The 8-byte SENDs with every completion in its own CQE, the
		# reference for runs (queues.md): CQE-wr and DMA-wr against
		# send_rate's.
		export RHINET_CQE_RUNS=0
		bench "$DEV" send_rate_noruns ib_send_bw $P -n $RATE_N -s 8
		unset RHINET_CQE_RUNS
		if [ $QUICK = 0 ]; then
			bench "$DEV" send_bw_1m ib_send_bw $P -n $BIG_N -s 1048576
			for size in 64 4096 65536; do
				bench "$DEV" send_lat_$size ib_send_lat $P -n $LAT_N -s $size
			done
		fi
		;;
	esac
done

# The kernel must not have complained, but for soft-RoCE's own warnings
# (rdma_rxe's sources named in the WARNING line: e.g. its pool's cleanup
# timing out after a hung reference client was killed), which are the
# reference's and reported as such.
dmesg | grep -v "module verification failed" | grep -E "BUG:|WARNING:|Oops" >/tmp/complaints
if grep -q "drivers/infiniband/sw/rxe/" /tmp/complaints; then
	echo "verbs_bench: reference (rdma_rxe) complained:"
	grep "drivers/infiniband/sw/rxe/" /tmp/complaints
fi
if grep -v "drivers/infiniband/sw/rxe/" /tmp/complaints; then
	fail "kernel complained"
fi
[ -z "$ref_failed" ] ||
	echo "verbs_bench: reference failed (not counted):$ref_failed"
[ -z "$failed" ] || fail "failed:$failed"
echo "verbs_bench: PASS on node $NODE ($*)"
