#!/bin/sh
# A user's own command on the emulated cluster (scripts/rhinet-cluster):
# every node gets the environment of the applications overlay (rhinet.ko
# loaded, eth0 as 10.77.0.(NODE+1), /etc/hosts naming every node nodeK,
# ssh between the nodes, userlib, rhinet-run, UCX and Open MPI), and the
# user's files in /job. Node 0 runs the command in /job with a shell,
# between two marker lines rhinet-cluster finds in its console log; the
# others serve ssh until it is done.
#   user_job.sh NODE NODES [TIMEOUT]   (the command is /job/.command)
NODE=$1
NODES=$2
TIMEOUT=${3:-3600}
. /test/user_job.lib.sh
user_job_setup
[ "$NODE" = 0 ] || apps_wait $((TIMEOUT + 60))

cd /job || fail "no /job"
echo "RHINET-CLUSTER: begin"
timeout "$TIMEOUT" sh -c "$(cat /job/.command)" </dev/null 2>&1
rc=$?
echo "RHINET-CLUSTER: end rc=$rc"
apps_finish 0
exit 0
