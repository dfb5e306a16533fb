#!/bin/sh
# /usr/bin/ssh of the test guests: dropbear's client with the cluster's key
# (tests/vm/prepare.sh), for mpirun's remote ranks and the test scripts.
# Every node carries the same host key, listed in /root/.ssh/known_hosts
# under each node's name and address (prepare.sh); -y accepts a name not
# listed there (localhost, say) instead of asking.
exec dbclient -y -i /root/.ssh/id_dropbear "$@"
