#!/usr/bin/env bash
# The main job (`make main`), and its quick variant that `make test` runs as
# the VM test vm_main, so the two cannot drift apart:
#   scripts/main.sh [--quick] [--build DIR] [--out DIR] [--env FILE]
# Parts, each a run defined once in the script it calls:
#   verbs    two nodes, unmodified rdma-core clients over rhinet0, over
#            soft-RoCE on our NIC's IP interface and over soft-RoCE on a
#            stock virtio-net NIC (tests/bench/verbs_vs_rxe.sh)
#   mpi      two nodes, ucx_perftest and Open MPI's checked ping-pong over
#            rhinet0 beside rxe0 (tests/bench/mpi_vs_rxe.sh --perftest)
#   userlib  four nodes, the userlib programs under rhinet-run
#            (tests/vm/userlib_4nodes.sh)
#   partial  what the NIC's partial transfers save on the wire, and the
#            engine alone (partial_bench, engine_bench --quick)
# --quick: the verbs part with fewer iterations, the engine benchmarks in
# their short form (every part still runs). Ends with one line per part:
# passed or FAILED, and its headline figure. Exits non-zero when a part
# failed. Logs stay under --out (default BUILD/vm/main).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
build="$REPO/build" out="" env_file="" quick=()
while (($#)); do
	case $1 in
	--quick) quick=(--quick); shift ;;
	--build) build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--env) env_file=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "main: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[[ -n $out ]] || out="$build/vm/main"
[[ -n $env_file ]] || env_file="$build/vm/env"
[[ -r $env_file ]] || { echo "main: no $env_file: run make build first" >&2; exit 2; }
mkdir -p "$out"

summary=() failed=0
# part NAME HEADLINE-COMMAND -- COMMAND...: runs COMMAND with its output on
# the terminal and in OUT/NAME.txt, then records NAME's line of the summary.
part() {
	local name=$1 headline=$2 rc
	shift 3
	echo
	echo "=== $name: $*"
	"$@" 2>&1 | tee "$out/$name.txt"
	rc=${PIPESTATUS[0]}
	local figure=""
	figure=$("$headline" "$out/$name.txt" 2>/dev/null)
	if ((rc == 0)); then
		summary+=("$(printf '%-8s passed  %s' "$name" "$figure")")
	else
		failed=1
		# The first failure the part reported says more than any figure.
		figure=$(grep -a -m1 -E 'FAIL' "$out/$name.txt" | sed 's/^[ |]*//' | cut -c1-100)
		summary+=("$(printf '%-8s FAILED  %s (rc %s, log %s)' "$name" "$figure" "$rc" "$out/$name.txt")")
	fi
}

# Headlines: one figure per part, read from what the part printed.
verbs_headline() {
	awk '/^ib_write_lat 2 B typical/ { lat = sprintf("ib_write_lat %s us (%s vs rxe0)", $6, $9) }
	     /^ib_write_bw 64 KiB/ { bw = sprintf("ib_write_bw 64 KiB %s MB/s (%s vs rxe0)", $5, $8) }
	     /^verbs_bench: reference failed/ { sub(/^verbs_bench: reference failed \(not counted\): */, ""); ref = $0 }
	     END {
		if (lat != "" || bw != "") printf "rhinet0: %s; %s", lat, bw
		if (ref != "") printf " (reference failed: %s)", ref
		print ""
	     }' "$1"
}
mpi_headline() {
	awk '$1 == "rc" && $2 == 1048576 { printf "Open MPI 1 MiB round trip %s us on rhinet0 (%s vs rxe0)\n", $3, $5 }' "$1"
}
userlib_headline() {
	local passed failed_n
	passed=$(grep -c '^userlib: .* passed in' "$1")
	failed_n=$(grep -c '^userlib: .* FAILED' "$1")
	echo "$passed userlib programs passed, $failed_n failed, on 4 nodes"
}
partial_headline() {
	awk '/^0\.1 %|^1\.0 %/ && !seen { seen = 1; printf "DIFF PUSH of 1 MiB with %s %s changed: %s of the basic PUSH'"'"'s wire bytes\n", $1, $2, $5 }' "$1"
}
engine_benches() {
	"$build/tests/bench/partial_bench" "${quick[@]}" &&
		"$build/tests/bench/engine_bench" --quick
}

part verbs verbs_headline -- bash "$REPO/tests/bench/verbs_vs_rxe.sh" "${quick[@]}" \
	--env "$env_file" --out "$out/verbs"
part mpi mpi_headline -- bash "$REPO/tests/bench/mpi_vs_rxe.sh" --perftest \
	--env "$env_file" --out "$out/mpi"
part userlib userlib_headline -- bash "$REPO/tests/vm/userlib_4nodes.sh" \
	--env "$env_file" --out "$out/userlib"
part partial partial_headline -- engine_benches

echo
echo "=== summary (logs in $out)"
printf '%s\n' "${summary[@]}"
exit "$failed"
