#!/bin/sh
# On-demand MRs (remote pin-down) cannot cost the host more than their
# limits, and no pin-down event is lost (rhinet-odlimits does the work and
# says what each check saw). Node 0:
#   reg       declaring 8 GiB areas on demand one after another is refused
#             (ENOMEM) before the kernel's tables take 1/8 of the memory;
#             with max_on_demand_reg_pages = 16384, a user's fifth area of
#             4096 pages is refused, in another process of its too
#   memlock   user nobody whose RLIMIT_MEMLOCK is what it pinned plus
#             256 KiB: a pd_req of 128 KiB of its own area succeeds, one of
#             1 MiB and a PUSH of 1 MiB into it fail (NOT_PINNED), VmPin
#             stays within the limit
#   user      max_pin_on_demand_pages = 96: a second process of user nobody
#             cannot pin another 64 pages (the limit is the user's)
#   flood     client: holds node 1's 16 MiB 6001 times (paced), then
#             releases it 6001 times as fast as the NIC takes it
# Node 1 is the flood's target: its pinned_pages must come back to where
# it was, its pin_overflows must have grown, and its kernel must not have
# logged a lost event.
#   pindown_limits.sh NODE NODES
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=pindown_limits
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

P=/sys/module/rhinet/parameters
verbs_setup
verbs_device rhinet0
ODL=/opt/rhinet/bin/rhinet-odlimits

# param NAME VALUE: sets rhinet.ko's parameter, or says it has none.
param() {
	if [ -w "$P/$1" ]; then
		echo "$2" >"$P/$1"
	else
		echo "pindown_limits: FAIL: rhinet.ko has no parameter $1"
		failed="$failed param_$1"
	fi
}

if [ "$NODE" = 0 ]; then
	$ODL reg-default || failed="$failed reg_default"
	param max_on_demand_reg_pages 16384
	$ODL reg-limit 16384 || failed="$failed reg_limit"
	param max_on_demand_reg_pages 0
	$ODL memlock || failed="$failed memlock"
	old=$(cat $P/max_pin_on_demand_pages)
	echo 96 >$P/max_pin_on_demand_pages
	$ODL user-limit 96 || failed="$failed user_limit"
	echo "$old" >$P/max_pin_on_demand_pages
	$ODL flood-client "$SERVER" || failed="$failed flood_client"
else
	$ODL flood-server || failed="$failed flood_server"
fi
if dmesg | grep -E "pin-down event .* lost|BUG:|WARNING:|Oops"; then
	failed="$failed dmesg"
fi
sync_status "${failed:-ok}"
echo "pindown_limits: node $NODE: ${failed:-ok}; peer: $PEER_STATUS"
[ -z "$failed" ] || fail "failed:$failed"
[ "$PEER_STATUS" = ok ] || fail "peer: $PEER_STATUS"
echo "pindown_limits: PASS on node $NODE"
