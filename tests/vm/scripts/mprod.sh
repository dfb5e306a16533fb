#!/bin/sh
# Many producers on one send queue (RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER):
# rhinet-mprod (tests/vm/guest/rhinet_mprod.c), node 0 the client, node 1
# the server. Eight threads post on one RC QP without a lock: every WRITE
# lands once and completes in its thread's order, with about one doorbell
# per 32 WQEs; then with doorbells left out, found by the NIC's record
# scan (sq_recovered); then the QP taken to ERR and destroyed under the
# posters. Afterwards the process's QPs, CQs, MRs and PDs are all gone
# (rdma resource) and the kernel has not complained.
#   mprod.sh NODE NODES
# shellcheck disable=SC2034 # read by verbs.lib.sh (run_pair)
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=mprod
RUN_TIMEOUT=700
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0

# Objects of the device (the kernel's own among them) before and after.
resources() { rdma resource show rhinet0 | sed 's/^[0-9]*: rhinet0: //'; }
before=$(resources)

run_pair rhinet-mprod /opt/rhinet/bin/rhinet-mprod -d rhinet0 -g "$GID"

after=$(resources)
[ "$before" = "$after" ] ||
	failed="$failed resources($before -> $after)"
verbs_check_dmesg
if dmesg | grep -E "rhinet.*not destroyed"; then
	failed="$failed not-destroyed"
fi
[ -z "$failed" ] || fail "failed:$failed"
echo "$LIB_NAME: PASS"
