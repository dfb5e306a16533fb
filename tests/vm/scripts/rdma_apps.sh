#!/bin/sh
# The RDMA software users run beyond MPI, Debian's own packages unmodified,
# between two nodes over rhinet0: node 1 serves, node 0 connects to
# 10.77.0.2 (helpers in verbs.lib.sh). Needs the applications overlay
# (run-cluster.sh --apps) for libfabric and the rsockets preload library.
#   ucmatose   rdma_cm RC connections (4 at once), 100 messages of 4 KiB
#              each way on each; rdmacm-utils checks every completion, not
#              the bytes, so the NIC's byte counters must show them arrive
#   udaddy     rdma_cm UD (SIDR) with 4 QPs, 100 datagrams each way on each
#   mckey      rdma_cm multicast: node 1 joins with two UD QPs that must
#              each receive 20 messages of 1000 bytes; node 0 joins as a
#              send-only full member (-o) and sends until then
#   rstream    rsockets (SOCK_STREAM over RC), every byte verified (-T v):
#              blocking and nonblocking, 64 B .. 1 MiB. Not its
#              poll-driven mode (-T a): its client counts a hang-up that
#              rpoll reports together with the last echo (POLLIN|POLLHUP,
#              the server closing right after its last send) as a failure
#              (exit 16), so its verdict is a race between the server's
#              close and the client's poll, not the NIC's (seen twice in
#              three loaded runs, with every byte on the server verified)
#   riostream  rsockets with riomap/riowrite (RDMA WRITE into the peer's
#              mapped buffer), verified, 64 KiB and 1 MiB
#   rspreload  a plain TCP program (rhinet-tcp-send) under librdmacm's
#              librspreload.so carries 4 MiB from node 0 to node 1: the
#              checksums on both sides match, the NIC received the bytes
#              and eth0's IP statistics did not carry them; the same
#              transfer without the preload library does move eth0's
#              counters (the measure can tell the two apart)
#   fi_msg     libfabric 1.17, provider verbs, MSG endpoints, every size,
#              data checked (-c)
#   fi_dgram   libfabric 1.17, provider verbs, DGRAM endpoints (UD), every
#              size up to the datagram limit, data checked (-c)
#   fi_rxd     libfabric 1.17, RDM over verbs DGRAM through ofi_rxd,
#              data checked (-c)
#   rdma_apps.sh NODE NODES
NODE=$1
# shellcheck disable=SC2034 # read by verbs.lib.sh
LIB_NAME=rdma_apps
# shellcheck source=verbs.lib.sh
. "$(dirname "$0")/verbs.lib.sh" # rides next to this script (run-cluster.sh)

verbs_setup
verbs_device rhinet0
verbs_retry_script
# libfabric's verbs provider looks up this host's own name (nodeN) when it
# is given no address: without it, MSG endpoints are missing
# (rdma_getaddrinfo EAGAIN, fi_getinfo -61).
ip link set lo up
{
	echo "127.0.0.1 localhost"
	echo "10.77.0.1 node0"
	echo "10.77.0.2 node1"
} >/etc/hosts
# A client refused because its server does not listen yet, in the words
# of rdma_cm, rsockets and libfabric's control socket. rstream's blocking
# client reports a refused connect as its rpoll failing while errno still
# says EINPROGRESS (seen on the slower debug kernel).
REFUSED="Connection refused|RDMA_CM_EVENT_(REJECTED|UNREACHABLE)|rpoll: Operation now in progress"

nic() { cat "/sys/class/infiniband/rhinet0/ports/1/hw_counters/$1"; }
eth() { cat "/sys/class/net/eth0/statistics/$1"; }

# pair NAME SERVER_CMD CLIENT_CMD: SERVER_CMD on node 1, CLIENT_CMD with the
# server's address appended on node 0, retried while refused (run_pair).
pair() {
	cat >"/tmp/$1.sh" <<-EOT
		#!/bin/sh
		[ \$# = 0 ] && exec $2
		exec /tmp/retry.sh /tmp/$1.out "$REFUSED" $3 "\$1"
	EOT
	chmod +x "/tmp/$1.sh"
	run_pair "$1" "/tmp/$1.sh"
}

# pair_counted NAME BYTES SERVER_CMD CLIENT_CMD: pair, and this node's NIC
# must have received at least BYTES meanwhile.
pair_counted() {
	name=$1 bytes=$2
	shift 2
	before=$(nic rx_bytes)
	pair "$name" "$@" || return
	got=$(($(nic rx_bytes) - before))
	echo "rdma_apps: $name: node $NODE's NIC received $got bytes (at least $bytes expected)"
	[ "$got" -ge "$bytes" ] || failed="$failed ${name}_rx_bytes($got<$bytes)"
}

# rdma_cm's examples: 4 connections, 100 messages of 4 KiB each way.
pair_counted ucmatose $((4 * 100 * 4096)) \
	"ucmatose -c 4 -C 100 -S 4096" "ucmatose -c 4 -C 100 -S 4096 -s"
pair_counted udaddy $((4 * 100 * 512)) \
	"udaddy -c 4 -C 100 -S 512" "udaddy -c 4 -C 100 -S 512 -s"

# Multicast: the route lets rdma_cm resolve the group on eth0; a round
# sent before node 1 joined is lost (UD), so node 0 sends up to 8 rounds.
ip route replace 224.0.0.0/4 dev eth0 || failed="$failed mcast_route"
cat >/tmp/mckey.sh <<EOT
#!/bin/sh
[ \$# = 0 ] && exec mckey -m 239.1.2.4 -b $ME -c 2 -C 20 -S 1000
for i in 1 2 3 4 5 6 7 8; do
	mckey -m 239.1.2.4 -b $ME -o -s -C 20 -S 1000 || exit 1
	sleep 1
done
EOT
chmod +x /tmp/mckey.sh
delivered=$(nic ud_mcast_delivered)
run_pair mckey /tmp/mckey.sh
if [ "$NODE" = 1 ]; then
	delivered=$(($(nic ud_mcast_delivered) - delivered))
	echo "rdma_apps: mckey: $delivered datagrams delivered to attached QPs"
	[ "$delivered" -ge 40 ] || failed="$failed mckey_delivered($delivered)"
fi

# rsockets' own tools, every byte verified (-T v).
pair rstream_blocking "rstream -T v -S 64 -C 1000" "rstream -T v -S 64 -C 1000 -s"
pair rstream_nonblocking "rstream -T v -T n -S 65536 -C 100" \
	"rstream -T v -T n -S 65536 -C 100 -s"
pair rstream_1m "rstream -T v -T n -S 1048576 -C 10" \
	"rstream -T v -T n -S 1048576 -C 10 -s"
pair riostream_64k "riostream -T v -S 65536 -C 100" \
	"riostream -T v -S 65536 -C 100 -s"
pair riostream_1m "riostream -T v -T n -S 1048576 -C 10" \
	"riostream -T v -T n -S 1048576 -C 10 -s"

# tcp_transfer NAME PRELOAD: node 0 sends a 4 MiB file to node 1 over
# TCP with rhinet-tcp-send (guest/rhinet_tcp_send.c, plain blocking
# sockets; -l on node 1), both with LD_PRELOAD=PRELOAD (none if empty);
# node 1 compares the checksum with node 0's. (Debian's programs did not
# pass under the preload: OpenBSD's netcat asks for SOCK_STREAM |
# SOCK_NONBLOCK, which rsockets refuses, and listens with accept4, which
# the preload does not intercept; socat's client crashed and socat's
# server never saw the bytes arrive.) Leaves node 1's NIC and eth0 receive
# byte counts of the transfer in NIC_RX and ETH_RX.
PAYLOAD=$((4 * 1024 * 1024))
tcp_transfer() {
	name=$1 preload=$2
	if [ "$NODE" = 0 ]; then
		dd if=/dev/urandom of=/tmp/payload bs=65536 count=64 2>/dev/null
		sent=$(sha256sum </tmp/payload | cut -d' ' -f1)
		sync_status "$sent"
		LD_PRELOAD=$preload timeout "$RUN_TIMEOUT" /tmp/retry.sh \
			/tmp/tcp.out "$REFUSED" /opt/rhinet/bin/rhinet-tcp-send \
			"$SERVER" 7000 </tmp/payload && status=ok || status="client rc=$?"
	else
		rm -f /tmp/received
		sync_status ready
		sent=$PEER_STATUS
		nic0=$(nic rx_bytes) eth0=$(eth rx_bytes)
		LD_PRELOAD=$preload timeout "$RUN_TIMEOUT" \
			/opt/rhinet/bin/rhinet-tcp-send -l 7000 >/tmp/received \
			2>/tmp/tcp.out &&
			status=ok || status="server rc=$?"
		NIC_RX=$(($(nic rx_bytes) - nic0)) ETH_RX=$(($(eth rx_bytes) - eth0))
		got=$(sha256sum </tmp/received | cut -d' ' -f1)
		cat /tmp/tcp.out
		echo "rdma_apps: $name: $(wc -c </tmp/received) bytes, sha256 $got (node 0 sent $sent); NIC received $NIC_RX bytes, eth0 $ETH_RX"
		[ "$status" = ok ] && [ "$got" != "$sent" ] && status="checksum $got"
	fi
	sync_status "$status"
	echo "== $name: node $NODE: $status; peer: $PEER_STATUS"
	[ "$status" = ok ] && [ "$PEER_STATUS" = ok ] && return 0
	failed="$failed $name"
	return 1
}

RSPRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
if tcp_transfer rspreload $RSPRELOAD && [ "$NODE" = 1 ]; then
	# rsockets falls back to TCP silently when rdma_cm fails: the payload
	# must have come through the NIC's RDMA side, not eth0.
	[ "$NIC_RX" -ge $PAYLOAD ] || failed="$failed rspreload_nic($NIC_RX)"
	[ "$ETH_RX" -lt $((PAYLOAD / 16)) ] || failed="$failed rspreload_eth0($ETH_RX)"
fi
if tcp_transfer tcp "" && [ "$NODE" = 1 ]; then
	[ "$ETH_RX" -ge $PAYLOAD ] || failed="$failed tcp_eth0($ETH_RX)"
fi

# libfabric 1.17 with its defaults (no FI_* variable set): what its verbs
# provider offers on rhinet0, then MSG and DGRAM endpoints and RDM over
# DGRAM through ofi_rxd, every size, data checked.
if [ "$NODE" = 0 ]; then
	for t in FI_EP_MSG FI_EP_DGRAM; do
		fi_info -p verbs -t $t 2>&1 | grep -E "provider|domain|type|max_msg"
	done
	fi_info -p "verbs;ofi_rxd" 2>&1 | grep -E "provider|domain|type|max_msg"
fi
pair fi_msg "fi_pingpong -p verbs -e msg -d rhinet0 -c" \
	"fi_pingpong -p verbs -e msg -d rhinet0 -c"
# DGRAM (UD, max_msg_size 1024, the active MTU): 64 B, 256 B and 1 KiB.
pair fi_dgram "fi_pingpong -p verbs -e dgram -d rhinet0-dgram -c" \
	"fi_pingpong -p verbs -e dgram -d rhinet0-dgram -c"
pair fi_rxd "fi_pingpong -p 'verbs;ofi_rxd' -e rdm -d rhinet0-dgram -c" \
	"fi_pingpong -p 'verbs;ofi_rxd' -e rdm -d rhinet0-dgram -c"

verbs_check_dmesg
[ -z "$failed" ] || fail "failed:$failed"
echo "rdma_apps: PASS on node $NODE"
