#!/bin/sh
# IP over the RHiNET fabric: rhinet.ko's Ethernet interface on two nodes,
# ping both ways, then a 1.3 MB TCP transfer checked end to end.
#   net_ip.sh NODE NODES
NODE=$1
PEER=$((1 - NODE))
ME=10.77.0.$((NODE + 1))
THEM=10.77.0.$((PEER + 1))
stats() {
	for c in rx_packets tx_packets rx_errors tx_errors tx_dropped; do
		printf '%s=%s ' $c "$(cat /sys/class/net/eth0/statistics/$c)"
	done
	echo
}
fail() { echo "net_ip: FAIL: $*"; dmesg | tail -20; stats; exit 1; }

modprobe ib_uverbs && insmod /opt/rhinet/modules/rhinet.ko || fail "insmod"
ip link show eth0 >/dev/null 2>&1 || fail "no eth0"
mac=$(cat /sys/class/net/eth0/address)
[ "$mac" = "$(printf '02:52:4e:00:%02x:%02x' $((NODE >> 8)) $((NODE & 255)))" ] ||
	fail "MAC $mac does not encode node $NODE"
ip addr add "$ME/24" dev eth0 && ip link set eth0 up || fail "ip setup"
seq 1 200000 >/tmp/data

# Wait until the peer answers (it boots at its own pace).
i=0
until ping -c 1 -W 1 "$THEM" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 30 ] || fail "no answer from $THEM"
done
ping -c 5 -i 0.2 "$THEM" | tee /tmp/ping.txt
grep -q " 0% packet loss" /tmp/ping.txt || fail "ping lost packets"

if [ "$NODE" = 1 ]; then
	timeout 60 nc -l -p 5000 >/tmp/recv || fail "nc receive"
	[ "$(md5sum </tmp/recv)" = "$(md5sum </tmp/data)" ] ||
		fail "TCP data differs ($(wc -c </tmp/recv) bytes received)"
	echo "net_ip: received $(wc -c </tmp/recv) bytes intact"
else
	i=0
	start=$(date +%s)
	until nc "$THEM" 5000 </tmp/data; do
		i=$((i + 1))
		[ $i -lt 20 ] || fail "cannot connect to $THEM:5000"
		sleep 0.5
	done
	echo "net_ip: sent $(wc -c </tmp/data) bytes in $(($(date +%s) - start)) s"
	# Stay reachable while the peer finishes the connection.
	sleep 2
fi
echo "net_ip: eth0 $(stats)"
[ "$(cat /sys/class/net/eth0/statistics/rx_errors)" = 0 ] || fail "receive errors"
echo "net_ip: PASS on node $NODE"
