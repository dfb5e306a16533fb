#!/usr/bin/env bash
# Unmodified rdma-core clients over our NIC and over soft-RoCE, in the same
# two guests in one boot, side by side:
#   tests/bench/verbs_vs_rxe.sh [--quick] [--out DIR] [--env FILE] [DEVICE...]
#   tests/bench/verbs_vs_rxe.sh --from DIR [DEVICE...]   table of an earlier run
# Boots two nodes (tests/vm/run-cluster.sh) that run
# tests/vm/scripts/verbs_bench.sh over each DEVICE in turn (default: rhinet0,
# then rxe0 = rdma_rxe on eth0, the IP interface of the same NIC):
# ibv_devinfo, ibv_{rc,ud,srq}_pingpong, perftest latency (2 B; atomic 8 B),
# bandwidth (64 KiB) and small-message rate (8 B). Prints one table: metric,
# figure per device, and how many times better the first device is than the
# second. Exits non-zero when any client failed. Node logs stay in --out
# (default build/vm/bench-verbs).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
out="$REPO/build/vm/bench-verbs" env_file="$REPO/build/vm/env" quick=() devices=()
from=""
while (($#)); do
	case $1 in
	--quick) quick=(--arg quick); shift ;;
	--out) out=$2; shift 2 ;;
	--env) env_file=$2; shift 2 ;;
	--from) from=$2; shift 2 ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	-*) echo "verbs_vs_rxe: unknown option '$1'" >&2; exit 2 ;;
	*) devices+=("$1"); shift ;;
	esac
done
((${#devices[@]})) || devices=(rhinet0 rxe0)
dev_args=()
for d in "${devices[@]}"; do dev_args+=(--arg "$d"); done

if [[ -n $from ]]; then
	out=$from rc=0 took="?" load_before="?" load_after="?"
else
	rm -rf "$out"
	mkdir -p "$out"
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date +%s)
	bash "$REPO/tests/vm/run-cluster.sh" -n 2 --env "$env_file" --out "$out" \
		--script "$REPO/tests/vm/scripts/verbs_bench.sh" "${quick[@]}" \
		"${dev_args[@]}" --timeout 900
	rc=$?
	took=$(($(date +%s) - start))
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
fi

grep -a '^RHINET-BENCH ' "$out/node0.log" | tr -d '\r' >"$out/figures.txt"
echo
echo "ibv_devinfo on node 0 (first device):"
tr -d '\r' <"$out/node0.log" |
	awk '/^hca_id:/ { p = 1 } p && /^[ \t]*$/ { exit } p' | sed 's/^/  /'
echo
# One row per metric: the perftest column it comes from, and whether more is
# better. perftest rows: lat = #bytes #iter t_min t_max t_typical t_avg ...;
# bw = #bytes #iter BW_peak BW_avg MsgRate.
awk -v devs="${devices[*]}" '
BEGIN {
	nd = split(devs, dev, " ")
	n = 0
	row("rc_pingpong", 0, "ibv_rc_pingpong 4 KiB", "us/iter", 0)
	row("ud_pingpong", 0, "ibv_ud_pingpong 1 KiB", "us/iter", 0)
	row("srq_pingpong", 0, "ibv_srq_pingpong 4 KiB", "us/iter", 0)
	row("write_lat", 5, "ib_write_lat 2 B typical", "us", 0)
	row("write_lat", 6, "ib_write_lat 2 B average", "us", 0)
	row("read_lat", 5, "ib_read_lat 2 B typical", "us", 0)
	row("read_lat", 6, "ib_read_lat 2 B average", "us", 0)
	row("send_lat", 5, "ib_send_lat 2 B typical", "us", 0)
	row("send_lat", 6, "ib_send_lat 2 B average", "us", 0)
	row("atomic_lat", 5, "ib_atomic_lat typical", "us", 0)
	row("atomic_lat", 6, "ib_atomic_lat average", "us", 0)
	row("write_bw", 4, "ib_write_bw 64 KiB", "MB/s", 1)
	row("read_bw", 4, "ib_read_bw 64 KiB", "MB/s", 1)
	row("send_bw", 4, "ib_send_bw 64 KiB", "MB/s", 1)
	row("write_rate", 5, "ib_write_bw 8 B rate", "Mpps", 1)
	row("send_rate", 5, "ib_send_bw 8 B rate", "Mpps", 1)
	row("atomic_rate", 5, "ib_atomic_bw rate", "Mops/s", 1)
}
function row(test, col, label, unit, more) {
	n++; t[n] = test; c[n] = col; l[n] = label " [" unit "]"; m[n] = more
	u[n] = unit
	goal[n] = unit == "us" || unit == "Mpps" || unit == "Mops/s"
}
$1 == "RHINET-BENCH" {
	d = $2; test = $3
	line[d, test] = $0
}
function fig(d, i,   f, k) {
	if (!((d, t[i]) in line)) return ""
	split(line[d, t[i]], f, " ")
	if (f[4] == "FAIL") return "FAIL"
	k = c[i] ? f[3 + c[i]] : f[4]
	if (u[i] == "MB/s") k = k * 1000 / 8  # perftest ran with --report_gbits
	return k
}
END {
	printf "%-34s", "metric"
	for (j = 1; j <= nd; j++) printf " %12s", dev[j]
	if (nd >= 2) printf "  %8s", "gain"
	printf "\n"
	for (i = 1; i <= n; i++) {
		printf "%-34s", l[i]
		for (j = 1; j <= nd; j++) {
			v[j] = fig(dev[j], i)
			if (v[j] == "" || v[j] == "FAIL") printf " %12s", (v[j] == "" ? "-" : v[j])
			else if (v[j] + 0 >= 100) printf " %12.0f", v[j]
			else if (v[j] + 0 >= 1) printf " %12.2f", v[j]
			else printf " %12.4f", v[j]
		}
		if (nd >= 2 && v[1] + 0 > 0 && v[2] + 0 > 0) {
			g = m[i] ? v[1] / v[2] : v[2] / v[1]
			printf "  %7.1fx", g
			if (goal[i]) {
				goals++
				if (g >= 20) { met++; printf "  goal 20x met" }
			}
		}
		printf "\n"
	}
	if (nd >= 2) {
		printf "\ngain: how many times better %s is than %s (for latency %s/%s, for\n", dev[1], dev[2], dev[2], dev[1]
		printf "bandwidth and rate %s/%s). Goal: 20x on latency and small-message rate;\n", dev[1], dev[2]
		printf "met on %d of %d such rows.\n", met, goals
	}
}' "$out/figures.txt"
if grep -aq '^RHINET-CNT ' "$out/node0.log"; then
	echo
	echo "rhinet0 transport events on node 0 during each test (rxe's frames ride on the same NIC):"
	grep -a '^RHINET-CNT ' "$out/node0.log" | tr -d '\r' | cut -d' ' -f2- | sed 's/^/  /'
fi
echo
echo "Two TCG guests (1 vCPU each) through rhinet-switch on $(nproc) host cores;" \
	"run took ${took}s; host load average before: $load_before, after: $load_after."
echo "Logs: $out/node0.log (client), $out/node1.log (server)."
((rc == 0)) || echo "verbs_vs_rxe: FAILED (a client failed or a node did not finish; see above)" >&2
exit $rc
