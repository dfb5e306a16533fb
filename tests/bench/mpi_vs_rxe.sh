#!/usr/bin/env bash
# Open MPI over UCX between two guests, over our NIC and over soft-RoCE in
# the same boot, side by side:
#   tests/bench/mpi_vs_rxe.sh [--out DIR] [--env FILE] [--perftest]
#   tests/bench/mpi_vs_rxe.sh --from DIR      table of an earlier run
# Boots two nodes with the applications overlay (tests/vm/run-cluster.sh
# --apps) running tests/vm/scripts/ucx_mpi.sh: rhinet-mpi's checked
# ping-pong (8 B .. 1 MiB) under mpirun, over rhinet0 then rxe0, each with
# UCX's RC configuration (rc_verbs, ud_verbs for wire-up) and with ud_verbs
# alone; --perftest adds ucx_perftest's tests. Prints the round-trip time
# per size and device and the ratio (rxe0 / rhinet0: how many times faster
# we are). Exits non-zero when a run over rhinet0 failed (soft-RoCE's
# failures are listed as the reference's). Logs stay in --out (default
# build/vm/bench-mpi).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
out="$REPO/build/vm/bench-mpi" env_file="$REPO/build/vm/env" from="" parts=(--arg mpi)
while (($#)); do
	case $1 in
	--out) out=$2; shift 2 ;;
	--env) env_file=$2; shift 2 ;;
	--from) from=$2; shift 2 ;;
	--perftest) parts=(--arg perftest --arg mpi); shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "mpi_vs_rxe: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

rc=0
if [[ -n $from ]]; then
	out=$from
else
	rm -rf "$out"
	mkdir -p "$out"
	start=$(date +%s)
	bash "$REPO/tests/vm/run-cluster.sh" -n 2 --env "$env_file" --out "$out" \
		--apps --mem 512M --script "$REPO/tests/vm/scripts/ucx_mpi.sh" \
		"${parts[@]}" --timeout 900
	rc=$?
	echo "mpi_vs_rxe: two guests, $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
fi

log=$(tr -d '\r' <"$out/node0.log")
echo
if grep -q '^ucx ' <<<"$log"; then
	echo "ucx_perftest (latency p50 / average in us, bandwidth MB/s):"
	grep -E '^ucx (rhinet0|rxe0) ' <<<"$log" | sed 's/^ucx /  /'
	echo
fi
echo "MPI ping-pong (Open MPI 4.1, pml ucx), round trip in us; ratio = rxe0 / rhinet0"
grep '^pingpong ' <<<"$log" | awk '
{ split($2, dt, "/"); key = dt[2] " " $3; t[dt[1], key] = $4; bw[dt[1], key] = $5
  if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
END {
	printf "  %-4s %9s %14s %14s %7s %14s\n", "tls", "bytes", "rhinet0 [us]", "rxe0 [us]", "ratio", "rhinet0 [MB/s]"
	for (i = 0; i < n; i++) {
		k = order[i]; split(k, f, " ")
		a = t["rhinet0", k]; b = t["rxe0", k]
		r = (a > 0 && b > 0) ? sprintf("%.1fx", b / a) : "-"
		printf "  %-4s %9s %14s %14s %7s %14s\n", f[1], f[2], a == "" ? "-" : a, b == "" ? "-" : b, r, bw["rhinet0", k]
	}
}'
grep -E '^mpi .*(passed|FAILED|barrier)|retransmit|again' <<<"$log" | sed 's/^/  /'
# soft-RoCE is the reference, not the product: its failures are listed,
# and only ours (or the guest script's own verdict) fail the run.
reference=$(grep -E '^(ucx|mpi) rxe0 .*FAILED' <<<"$log")
ours=$(grep 'FAILED' <<<"$log" | grep -vE '^(ucx|mpi) rxe0 ')
if [[ -n $reference ]]; then
	echo "mpi_vs_rxe: reference failed (soft-RoCE, not counted):"
	sed 's/^/  /' <<<"$reference"
fi
if ((rc)) || [[ -n $ours ]]; then
	echo "mpi_vs_rxe: FAILED (see $out/node0.log)"
	exit 1
fi
exit 0
