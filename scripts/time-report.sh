#!/usr/bin/env bash
# Where a `make test` run's time went: each phase's wall time (from
# scripts/phase.sh) and the slowest tests of the last CTest run. Printed
# last, so the tail of a CI log shows it.
#   time-report.sh BUILD_DIR [N]
set -u
build=$1
top=${2:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log=${RHINET_PHASE_LOG:-$root/.phase-times}
echo "== time report"
if [[ -s $log ]]; then
	awk '{ printf "phase %-12s %6d s%s\n", $1, $2, $3 == 0 ? "" : " (exit " $3 ")"; t += $2 }
	     END { printf "phase %-12s %6d s\n", "total", t }' "$log"
fi
last=$build/Testing/Temporary/LastTest.log
if [[ -r $last ]]; then
	# LastTest.log gives each test as "N/M Testing: NAME" ... "Test time = S sec".
	awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 }
	     /^Test time = / && name != "" { print $4, name; name = "" }' "$last" |
		sort -rn | awk -v top="$top" '
		{ all += $1; n++; if ($2 ~ /_debugkernel$/ || $2 == "vm_prepare_debug") dk += $1
		  if (n <= top) printf "test  %-44s %6.0f s\n", $2, $1 }
		END { printf "tests %d, %.0f s in all, %.0f s in the debug-kernel twins and their kernel\n", n, all, dk }'
fi
