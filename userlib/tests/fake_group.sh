#!/bin/sh
# A stand-in for rhinet-group in the rhinet-run tests (its privileged
# step): appends "HOST WORDS... [token=TOKEN]" to $RHINET_FAKE_GROUP_LOG,
# HOST being fake_rsh.sh's host or "here", TOKEN the first line of
# standard input when a grant reads it there (--token-file -).
# RHINET_FAKE_GROUP_FAIL=N: a grant exits N. RHINET_FAKE_GROUP_TAKEN=F:
# the first grant (while F does not exist) exits 3, "the ID is taken".
# RHINET_FAKE_GROUP_ONLY=HOST: those two apply on HOST only.
host=${RHINET_FAKE_RSH_HOST:-here}
line="$host $*"
case " $* " in
*" grant "*)
	case " $* " in
	*" --token-file - "*)
		read -r token
		line="$line token=$token"
		;;
	esac
	;;
esac
[ -n "$RHINET_FAKE_GROUP_LOG" ] && echo "$line" >>"$RHINET_FAKE_GROUP_LOG"
[ -n "$RHINET_FAKE_GROUP_ONLY" ] && [ "$RHINET_FAKE_GROUP_ONLY" != "$host" ] &&
	exit 0
case " $* " in
*" grant "*)
	[ -n "$RHINET_FAKE_GROUP_FAIL" ] && exit "$RHINET_FAKE_GROUP_FAIL"
	if [ -n "$RHINET_FAKE_GROUP_TAKEN" ] && [ ! -e "$RHINET_FAKE_GROUP_TAKEN" ]; then
		: >"$RHINET_FAKE_GROUP_TAKEN"
		exit 3
	fi
	;;
esac
exit 0
