#!/usr/bin/env bash
# The userlib programs under rhinet-run on four nodes (the one definition of
# this run: make main's userlib part and the VM test vm_main both come here):
#   tests/vm/userlib_4nodes.sh [--env FILE] [--out DIR] [run-cluster options]
# Boots four nodes with the applications overlay and the switch's
# simultaneous-multicast group 61441 (0xf001) replicating to every port,
# as the administrator sets it (mcast_switch needs it), and runs
# tests/vm/scripts/userlib.sh (what it checks is listed there). Prints
# node 0's verdict per program; exits non-zero when any program failed.
# Further options go to run-cluster.sh (a later --timeout wins).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
out="$REPO/build/vm/userlib" env_file="$REPO/build/vm/env" more=()
while (($#)); do
	case $1 in
	--out) out=$2; shift 2 ;;
	--env) env_file=$2; shift 2 ;;
	-h | --help) sed -n '2,10p' "$0"; exit 0 ;;
	*) more+=("$1"); shift ;;
	esac
done
rm -rf "$out"
mkdir -p "$out"
bash "$HERE/run-cluster.sh" -n 4 --apps --mem 512M --timeout 900 \
	--switch-group "61441 0 1 2 3" --env "$env_file" --out "$out" \
	--script "$HERE/scripts/userlib.sh" "${more[@]}"
rc=$?
tr -d '\r' <"$out/node0.log" |
	grep -a "^userlib:\|^transfer_modes:\|^twin_diff_dsm:\|^isend_irecv:\|^wait_bench:"
exit "$rc"
