#!/bin/sh
# /usr/bin/ssh of the test guests: dropbear's client with the cluster's key
# (tests/vm/prepare.sh), for mpirun's remote ranks and the test scripts.
# Every node carries the same host key; -y -y accepts it without a prompt.
exec dbclient -y -y -i /root/.ssh/id_dropbear "$@"
