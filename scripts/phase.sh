#!/usr/bin/env bash
# Runs a command and appends its wall time to the phase log, so a run of
# `make test` ends with where its time went (scripts/time-report.sh).
#   phase.sh NAME COMMAND [ARG...]
set -u
log=${RHINET_PHASE_LOG:-$(dirname "${BASH_SOURCE[0]}")/../.phase-times}
name=$1
shift
start=$(date +%s)
"$@"
rc=$?
echo "$name $(($(date +%s) - start)) $rc" >>"$log"
exit $rc
