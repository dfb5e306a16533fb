#!/bin/sh
# Guest side of the device smoke test: node 0 and node 1 exchange ROUNDS
# datagram round trips through the switch (see guest/rhinet_smoke.c).
#   smoke.sh NODE NODES [ROUNDS]
NODE=$1
PEER=$((1 - NODE))
exec rhinet-smoke "$NODE" "$PEER" "${3:-1}"
