#!/bin/sh
# Process groups are granted, not claimed (rhinet.ko's grant table,
# rhinet-group, rhinet-run's privileged step). On node 0:
# - an unprivileged process (user nobody, through rhinet-as) naming a
#   fresh group is refused with EPERM, and so is root: nobody creates a
#   group by joining it; nobody cannot grant one either (rhinet-group:
#   EPERM);
# - root grants group G to uid 65534: nobody joins with the token and
#   registers an area in G (the NIC took the membership); a wrong token,
#   another uid, and the right uid in another group ID are refused; a
#   grant to a gid lets a process of that gid in and no other; a second
#   grant of G is refused (EEXIST);
# - revoke: a member holding G keeps it until it closes (list: revoked,
#   1 member), new joins are refused, G cannot be granted again while the
#   member is there (EBUSY), then can; a grant with a lifetime ends by
#   itself;
# - rhinet-run as user nobody, after root granted a group to nobody (what a
#   resource manager does): --group G --token-file F runs hello_push; without
#   a grant, rhinet-run's own privileged step fails with EPERM and says
#   what to do;
# - rhinet-run as root across both nodes: its privileged step grants the
#   group on node 0 and node 1 (over ssh) before the ranks start, and
#   revokes it on both after they end;
# - with grants left, rhinet.ko unloads cleanly.
#   groups.sh NODE NODES   (the applications overlay: run-cluster --apps)
# shellcheck disable=SC2034 # NODES and LIB_NAME are apps.lib.sh's
NODE=$1
NODES=$2
LIB_NAME=groups
# shellcheck source=apps.lib.sh
. /test/apps.lib.sh
apps_setup
[ "$NODE" = 0 ] || apps_wait 600

NOBODY=65534
G=4242
T=5eed0bad1dea0001
checks=0
ok() { checks=$((checks + 1)); echo "groups: ok: $*"; }

# expect_join DESCRIPTION joined|EPERM [rhinet-as UID[:GID]] rhinet-join ARGS
expect_join() {
	desc=$1 want=$2
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	case $want:$rc in
	joined:0 | EPERM:10) ok "$desc: $want" ;;
	*) fail "$desc: expected $want, got status $rc: $out" ;;
	esac
	echo "$out" | sed 's/^/groups:   /'
}

# expect_rc DESCRIPTION STATUS COMMAND...: COMMAND exits with STATUS.
expect_rc() {
	desc=$1 want=$2
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" = "$want" ] || fail "$desc: expected status $want, got $rc: $out"
	ok "$desc (status $rc)"
	echo "$out" | sed 's/^/groups:   /'
}

# --- nobody creates a group by joining it -----------------------------------
expect_join "nobody, fresh group $G" EPERM rhinet-as $NOBODY rhinet-join "$G:$T"
expect_join "root, fresh group 4243 (no implicit creation)" EPERM \
	rhinet-join "4243:$T"
echo "$T" >/tmp/token
chmod 0644 /tmp/token
expect_rc "nobody cannot grant" 1 rhinet-as $NOBODY \
	rhinet-group grant $G --uid $NOBODY --token-file /tmp/token
rhinet-group list | grep -q "^ *$G " && fail "nobody's grant of $G took"

# --- a grant to a uid ---------------------------------------------------------
expect_rc "root grants $G to uid $NOBODY" 0 \
	rhinet-group grant $G --uid $NOBODY --token-file /tmp/token
rhinet-group list | tee /tmp/list | sed 's/^/groups:   /'
grep -Eq "^ *$G +$NOBODY +- +0 +granted" /tmp/list ||
	fail "list does not show $G granted to $NOBODY"
expect_join "nobody, granted $G" joined rhinet-as $NOBODY rhinet-join --area "$G:$T"
expect_join "nobody, wrong token" EPERM rhinet-as $NOBODY \
	rhinet-join "$G:5eed0bad1dea0002"
expect_join "uid 1000, right token" EPERM rhinet-as 1000 rhinet-join "$G:$T"
expect_join "root, right token (not granted to root)" EPERM rhinet-join "$G:$T"
expect_join "nobody, $G and an ungranted 4243" EPERM rhinet-as $NOBODY \
	rhinet-join "$G:$T,4243:$T"
expect_rc "a second grant of $G" 3 \
	rhinet-group grant $G --uid 1000 --token 1234
# --- a grant to a gid --------------------------------------------------------
expect_rc "root grants 4244 to gid 1234" 0 \
	rhinet-group grant 4244 --gid 1234 --token 77
expect_join "uid 1000 gid 1234, 4244" joined rhinet-as 1000:1234 \
	rhinet-join --area "4244:77"
expect_join "uid 1000 gid 1000, 4244" EPERM rhinet-as 1000:1000 rhinet-join "4244:77"
expect_rc "revoke 4244" 0 rhinet-group revoke 4244

# --- revoke ---------------------------------------------------------------------
rhinet-as $NOBODY rhinet-join --hold "$G:$T" >/tmp/hold.log 2>&1 &
holder=$!
i=0
until grep -q holding /tmp/hold.log; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the member did not join: $(cat /tmp/hold.log)"
	usleep 100000
done
ok "nobody holds $G: $(head -1 /tmp/hold.log)"
expect_rc "revoke $G with a member" 0 rhinet-group revoke $G
rhinet-group list | tee /tmp/list | sed 's/^/groups:   /'
grep -Eq "^ *$G +$NOBODY +- +1 +revoked" /tmp/list ||
	fail "list does not show $G revoked with 1 member"
expect_join "nobody after the revoke" EPERM rhinet-as $NOBODY rhinet-join "$G:$T"
expect_rc "grant $G while the old member is there" 3 \
	rhinet-group grant $G --uid $NOBODY --token-file /tmp/token
expect_rc "revoke $G again" 1 rhinet-group revoke $G
kill $holder
wait $holder || fail "the member ended with status $?"
rhinet-group list | grep -q "^ *$G " && fail "$G still listed after its member left"
ok "$G gone with its last member"
expect_rc "grant $G again" 0 \
	rhinet-group grant $G --uid $NOBODY --token-file /tmp/token
expect_join "nobody, granted again" joined rhinet-as $NOBODY rhinet-join "$G:$T"
expect_rc "revoke $G" 0 rhinet-group revoke $G
expect_rc "grant 4245 for 2 s" 0 \
	rhinet-group grant 4245 --uid $NOBODY --token 45 --lifetime 2
expect_join "nobody within the lifetime" joined rhinet-as $NOBODY rhinet-join "4245:45"
sleep 3
expect_join "nobody after the lifetime" EPERM rhinet-as $NOBODY rhinet-join "4245:45"
rhinet-group list | grep -Eq "^ *4245 .* expired" || fail "4245 not listed as expired"
expect_rc "revoke the expired 4245" 0 rhinet-group revoke 4245

# --- rhinet-run for a user --------------------------------------------------
# The administrator (or the resource manager) grants, the user runs.
R=4300
echo 00000000c0ffee01 >/tmp/token.user
chmod 0644 /tmp/token.user
rhinet-group grant $R --uid $NOBODY --token-file /tmp/token.user ||
	fail "grant $R"
expect_rc "nobody: rhinet-run --group $R, 2 ranks" 0 rhinet-as $NOBODY \
	rhinet-run --timeout 120 -n 2 --group $R --token-file /tmp/token.user \
	rhinet_hello_push
expect_rc "nobody: rhinet-run with its own grant step" 1 rhinet-as $NOBODY \
	rhinet-run --timeout 120 -n 2 rhinet_hello_push
echo "$out" | grep -q "rhinet-group" || fail "rhinet-run did not say what to do"
rhinet-group revoke $R || fail "revoke $R"

# rhinet-run as root: its privileged step on both nodes.
expect_rc "root: rhinet-run across node0,node1" 0 rhinet-run -v --timeout 200 \
	-n 2 --hosts node0,node1 rhinet_hello_push
echo "$out" | grep -q "granted group" || fail "rhinet-run did not grant"
for k in 0 1; do
	left=$(ssh "node$k" rhinet-group list | grep -Ec '^ *[0-9]+ ')
	[ "$left" = 0 ] || fail "node$k: $left grants left after rhinet-run"
done
ok "no grant left on node0, node1 after rhinet-run"

for k in 0 1; do
	got=$(ssh "node$k" cat /sys/class/infiniband/rhinet0/ports/1/hw_counters/group_violations)
	[ "$got" = 0 ] || fail "node$k: group_violations $got"
done

# --- unload with grants left ------------------------------------------------
rhinet-group grant 4246 --uid $NOBODY --token 46 || fail "grant 4246"
apps_finish 0
rmmod rhinet || { echo "groups: FAIL: rmmod with a grant left"; exit 1; }
if dmesg | grep -E "WARNING:|BUG:|Oops"; then
	echo "groups: FAIL: kernel complained"
	exit 1
fi
ok "rmmod with a grant left"
echo "groups: PASS ($checks checks)"
exit 0
