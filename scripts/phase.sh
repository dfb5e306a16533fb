#!/usr/bin/env bash
# Runs a command and appends its wall time to the phase log, so a run of
# `make test` ends with where its time went (scripts/time-report.sh).
#   phase.sh NAME COMMAND [ARG...]
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log=${RHINET_PHASE_LOG:-$root/.phase-times}
name=$1
shift
start=$(date +%s)
"$@"
rc=$?
echo "$name $(($(date +%s) - start)) $rc" >>"$log"
exit $rc
