#!/bin/sh
# rhinet-diag on dump files: a dump of a fatal NIC decodes by the register
# map's names (text and --json); a malformed, a missing and a foreign file
# each end in status 1 with a message naming the problem.
#   rhinet-diag-dump.sh RHINET_DIAG TESTS_DIR
DIAG=$1
DIR=$2
OUT=$(mktemp)
trap 'rm -f "$OUT" "$OUT.bad"' EXIT
fail() { echo "rhinet_diag_dump: FAIL: $*"; cat "$OUT"; exit 1; }
expect() { grep -qE -- "$1" "$OUT" || fail "no line matching '$1'"; }

"$DIAG" --dump "$DIR/rhinet-diag-sample.json" >"$OUT" 2>&1 || fail "sample: status $?"
expect "^  STATUS +0x00000007  READY LINK_UP FATAL$"
expect "^  CONTROL +0x00000005  ENABLE INTR_ENABLE$"
expect "^  CAPS .* RC UD ENDPOINT .* COLL_SWITCH$"
expect "^  ADMIN_SQ_BASE +0x00000000ffff8000"
expect "STATUS.FATAL: the NIC stopped itself"
expect "^  crc_errors +3  frames dropped for a bad header or payload CRC$"
expect "^  reason +NIC reports a fatal error$"
expect "^  admin queue +sq_tail 41 cq_head 41 interrupts 45$"
expect "^  eq 0 .*consumer 17, 1 recoveries$"
grep -q "rx_drops" "$OUT" && fail "a zero counter printed without --all"
"$DIAG" --dump "$DIR/rhinet-diag-sample.json" --all >"$OUT" 2>&1 || fail "--all"
expect "^  rx_drops +0  "
"$DIAG" --dump "$DIR/rhinet-diag-sample.json" --json >"$OUT" 2>&1 || fail "--json"
expect '"STATUS":\{"value":7,"fields":"READY LINK_UP FATAL"\}'
expect '"counters":\{"tx_packets":12,"rx_packets":10,"crc_errors":3,"completions":9\}'
expect '"driver":\{"stopped":true,"last_failure":"NIC reports a fatal error"'

head -c 200 "$DIR/rhinet-diag-sample.json" >"$OUT.bad"
"$DIAG" --dump "$OUT.bad" >"$OUT" 2>&1 && fail "a cut file decoded"
expect "malformed JSON at byte"
"$DIAG" --dump /nonexistent/dump.json >"$OUT" 2>&1 && fail "a missing file decoded"
expect "/nonexistent/dump.json: No such file or directory"
echo '{"something":"else"}' >"$OUT.bad"
"$DIAG" --dump "$OUT.bad" >"$OUT" 2>&1 && fail "a foreign file decoded"
expect "not a rhinet devlink dump"
"$DIAG" --bogus >"$OUT" 2>&1; [ $? = 2 ] || fail "a bad argument: status not 2"
expect "unknown argument '--bogus'"
echo "rhinet_diag_dump: PASS"
