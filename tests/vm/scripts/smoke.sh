#!/bin/sh
# Guest side of the device smoke test: node 0 and node 1 exchange a datagram
# through the switch (see guest/rhinet_smoke.c).
NODE=$1
PEER=$((1 - NODE))
exec rhinet-smoke "$NODE" "$PEER"
