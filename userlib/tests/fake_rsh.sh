#!/bin/sh
# A stand-in for ssh in the rhinet-run tests: `fake_rsh.sh HOST WORDS...`
# runs WORDS on this machine through a shell, as sshd would on HOST (the
# words arrive joined by blanks and are parsed again, quotes and all),
# starting in / as a remote shell starts in the user's home, not in the
# launcher's directory.
host=$1
shift
RHINET_FAKE_RSH_HOST=$host
export RHINET_FAKE_RSH_HOST
cd / || exit 1
exec /bin/sh -c "$*"
