#!/usr/bin/env bash
# scripts/rhinet-cluster as a user runs it: a program of theirs (a copy of
# userlib's hello_push under another name, beside a data file) copied in
# and started on two nodes with rhinet-run, its output and exit status
# returned; a command of several arguments quoted as given and its exit
# status (3) returned from one node; bad options refused before any boot.
#   user_job.sh BUILD_DIR
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${1:?usage: user_job.sh BUILD_DIR}
CLUSTER=$REPO/scripts/rhinet-cluster
fails=0
check() { # OK WHAT
	if [[ $1 == 0 ]]; then
		echo "user_job: ok: $2"
	else
		echo "user_job: FAIL: $2"
		fails=$((fails + 1))
	fi
}
work=$(mktemp -d /tmp/user_job.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Refused before anything boots: status 125 and a message naming it.
out=$("$CLUSTER" -n 0 -- true 2>&1)
rc=$?
[[ $rc == 125 && $out == *"nodes must be 1 to 16"* ]]
check $? "-n 0 refused (status $rc: $out)"
out=$("$CLUSTER" -c "$work/none" -- true 2>&1)
rc=$?
[[ $rc == 125 && $out == *"no such file or directory: $work/none"* ]]
check $? "a missing --copy refused (status $rc: $out)"
out=$("$CLUSTER" -n 2 2>&1)
rc=$?
[[ $rc == 125 && $out == *"no command"* ]]
check $? "no command refused (status $rc: $out)"

# A user's program and data, on two nodes through rhinet-run.
cp "$BUILD/userlib/rhinet_hello_push" "$work/my_hello" || exit 1
echo "input line $$" >"$work/input.txt"
out=$("$CLUSTER" -n 2 --timeout 300 -c "$work/my_hello" -c "$work/input.txt" \
	--out "$work/logs2" -- \
	'cat input.txt && rhinet-run -n 2 --hosts node0,node1 --timeout 200 ./my_hello' 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
[[ $rc == 0 ]]
check $? "the job's exit status is 0 (got $rc)"
grep -qx "input line $$" <<<"$out"
check $? "the copied file was read in /job"
grep -q "hello_push: rank 0 of 2: ok" <<<"$out" &&
	grep -q "hello_push: rank 1 of 2: ok" <<<"$out"
check $? "both ranks of the copied program ran, on node0 and node1"

# Several arguments, quoted as given; the exit status comes back.
out=$("$CLUSTER" -n 1 --timeout 120 --out "$work/logs1" -- \
	sh -c "echo \"it's \$(hostname)\"; exit 3" 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
[[ $rc == 3 ]]
check $? "the command's exit status, 3, comes back (got $rc)"
grep -qx "it's node0" <<<"$out"
check $? "an argument with a quote and a \$ passed as given"

if ((fails)); then
	echo "user_job: FAIL: $fails checks"
	for f in "$work"/logs*/node0.log; do
		[[ -r $f ]] && { echo "== $f"; tail -n 30 "$f"; }
	done
	exit 1
fi
echo "user_job: PASS"
