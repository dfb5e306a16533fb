#!/bin/sh
# A stand-in for ssh in the rhinet-run tests: `fake_rsh.sh HOST WORDS...`
# runs WORDS on this machine through a shell, as sshd would on HOST (the
# words arrive joined by blanks and are parsed again, quotes and all).
host=$1
shift
RHINET_FAKE_RSH_HOST=$host
export RHINET_FAKE_RSH_HOST
exec /bin/sh -c "$*"
