#!/bin/sh
# fio's rdma ioengine (Debian's fio) between two nodes over rhinet0, and
# the same jobs over soft-RoCE on a stock virtio-net NIC (vrxe0, with
# run-cluster --virtio-link) as the reference, figures for information.
#   fio_rdma.sh NODE NODES
# Node 1 runs fio's server side (rw=read: it listens through rdma_cm and
# offers its buffers), node 0 the client (rw=write), for verb=write and
# verb=read at 4 KiB, 64 KiB and 1 MiB blocks.
#   fio_rdma.sh NODE NODES send
# adds verb=send. Not by default: fio connects with no RNR retries, so a
# SEND that arrives before fio's server has posted the next receive ends
# the job ("RNR retry counter exceeded"); whether it does depends on how
# fast the two guests run, not on the NIC (soft-RoCE, slower, passes).
#
# What is checked, and how. fio's rdma engine cannot verify its memory
# verbs itself: the server's buffers are only a target, nothing completes
# there. So both sides put their I/O buffers in a file on tmpfs
# (mem=mmapshared:FILE, a shared mapping of a file that exists before fio
# starts, which fio then keeps). The client aims each WRITE or READ at a
# server buffer it picks at random, so the server offers exactly one
# (iodepth=1): after verb=write the server's buffer holds what the
# client's last WRITE carried, which is still in the client buffer it
# came from (the client refills a buffer with random data before each
# WRITE, never after the last), so it equals one of the client's buffers;
# after verb=read every client buffer holds the server's (random data
# written before the run; the client's start as zeros). A transfer that
# did nothing fails both. verb=send
# lands in the receives the server posts, and fio checks every one of
# them (verify=pattern on the server's read job, the client writing the
# same pattern). Byte counts: the NIC's counters moved by at least what
# fio reports it moved.
#   fio_rdma.sh NODE NODES corrupt
# changes one byte of the server's file before it is compared, and sends
# a pattern the server does not expect, to see the checks fail.
NODE=$1
NODES=$2
CORRUPT=$3
LIB_NAME=fio_rdma
. /test/apps.lib.sh
apps_setup
apps_unpack /opt/extra/fio.cpio
# The debug kernel has no virtio-net driver: no reference there.
REFERENCE=""
if grep -q "/virtio_net.ko" "/lib/modules/$(uname -r)/modules.dep"; then
	virtio_link_setup
fi
if virtio_netdev >/dev/null; then
	rdma_device vrxe0
	REFERENCE=10.78.0.2
fi
[ "$NODE" = 0 ] || apps_wait 900
[ "$NODES" = 2 ] || fail "fio_rdma runs on 2 nodes"

fio --enghelp 2>/dev/null | grep -qx "[[:space:]]*rdma" ||
	fail "fio --enghelp does not list the rdma engine"

failed=""
note_fail() { failed="$failed $*;"; echo "fio_rdma: FAILED: $*"; }

# fio_case ADDR LABEL VERB BS: one job; prints "fio LABEL VERB BS MiB/s".
port=7470
fio_case() {
	addr=$1 label=$2 verb=$3 bs=$4
	depth=4
	# About 8 MiB per job, at least 16 blocks.
	count=$((8388608 / bs))
	[ $count -ge 16 ] || count=16
	size=$((count * bs))
	slots=$((depth * bs))
	port=$((port + 1))
	common="--ioengine=rdma --port=$port --bs=$bs --output-format=terse"
	if [ "$verb" = send ]; then
		# The server posts more receives than the client has sends in
		# flight (fio's connection asks for no RNR retries); both run
		# the same size so the server knows when it is done.
		srv="$common --iodepth=$((depth * 4)) --size=$size --verify=pattern --verify_pattern=0x5aa5c33c0ff01ee1 --verify_fatal=1"
		pattern=0x5aa5c33c0ff01ee1
		[ "$CORRUPT" = corrupt ] && pattern=0x5aa5c33c0ff01ee0
		cli="$common --iodepth=$depth --size=$size --verify=pattern --verify_pattern=$pattern --do_verify=0"
	else
		srv="$common --iodepth=1 --size=1g --mem=mmapshared:/tmp/srv.buf"
		cli="$common --iodepth=$depth --size=$size --mem=mmapshared:/tmp/cli.buf --refill_buffers=1 --scramble_buffers=0"
	fi
	# shellcheck disable=SC2029 # expanded here on purpose
	ssh node1 "rm -f /tmp/srv.buf && head -c $bs /dev/urandom >/tmp/srv.buf &&
		timeout -s KILL 60 fio --name=server --rw=read $srv" >/tmp/fio-server.log 2>&1 &
	spid=$!
	head -c $slots /dev/zero >/tmp/cli.buf
	tx0=$(counter tx_bytes) rx0=$(counter rx_bytes)
	failed_before=$failed
	tries=0
	while :; do
		# shellcheck disable=SC2086 # lists of options
		timeout -s KILL 45 fio --name=client --rw=write $cli \
			--hostname="$addr" --verb="$verb" >/tmp/fio-client.log 2>&1
		rc=$?
		# Nobody listening yet: rdma_cm's connection was rejected.
		grep -q "REJECTED\|UNREACHABLE" /tmp/fio-client.log || break
		tries=$((tries + 1))
		[ $tries -lt 20 ] || break
		usleep 250000
	done
	wait $spid
	src=$?
	tx=$(($(counter tx_bytes) - tx0)) rx=$(($(counter rx_bytes) - rx0))
	# terse v3: field 5 the error, 47 KiB written, 48 its KiB/s.
	line=$(grep "^3;" /tmp/fio-client.log | tail -1)
	err=$(echo "$line" | cut -d';' -f5)
	kib=$(echo "$line" | cut -d';' -f47)
	bw=$(echo "$line" | cut -d';' -f48)
	sline=$(grep "^3;" /tmp/fio-server.log | tail -1)
	if [ "$rc" != 0 ] || [ "$src" != 0 ] || [ -z "$line" ] || [ "$err" != 0 ] ||
		[ -z "$sline" ] || [ "$(echo "$sline" | cut -d';' -f5)" != 0 ]; then
		note_fail "$label verb=$verb bs=$bs: client rc $rc error '$err', server rc $src"
		grep -v "^3;" /tmp/fio-client.log | head -8
		grep -v "^3;" /tmp/fio-server.log | head -8
		return
	fi
	[ "$kib" -eq $((size / 1024)) ] ||
		note_fail "$label verb=$verb bs=$bs: fio moved $kib KiB, not $((size / 1024))"
	if [ "$verb" = send ]; then
		# The server's read job counts what it received (and checked).
		skib=$(echo "$sline" | cut -d';' -f6)
		[ "$skib" -eq $((size / 1024)) ] ||
			note_fail "$label verb=send bs=$bs: server received $skib KiB, not $((size / 1024))"
	else
		[ "$CORRUPT" = corrupt ] && ssh node1 \
			"printf x | dd of=/tmp/srv.buf bs=1 seek=$((bs / 2)) conv=notrunc 2>/dev/null"
		theirs=$(ssh node1 "sha256sum </tmp/srv.buf" | cut -d' ' -f1)
		matching=0
		i=0
		while [ $i -lt $depth ]; do
			mine=$(dd if=/tmp/cli.buf bs="$bs" skip=$i count=1 2>/dev/null |
				sha256sum | cut -d' ' -f1)
			[ "$mine" = "$theirs" ] && matching=$((matching + 1))
			i=$((i + 1))
		done
		# write: the server's buffer is one of the client's; read: all
		# of the client's are the server's.
		want=1
		[ "$verb" = read ] && want=$depth
		if [ $matching -lt $want ]; then
			note_fail "$label verb=$verb bs=$bs: $matching of the client's $depth buffers hold the server's ($theirs), $want expected"
		fi
	fi
	# Our NIC carried the data (the reference's is another device).
	if [ "$label" = rhinet0 ]; then
		moved=$tx
		[ "$verb" = read ] && moved=$rx
		[ "$moved" -ge "$size" ] ||
			note_fail "rhinet0 verb=$verb bs=$bs: NIC counted $moved bytes, fio $size"
	fi
	verdict=checked
	[ "$failed" = "$failed_before" ] || verdict="check FAILED"
	echo "fio $label verb=$verb bs=$bs $(echo "$bw" | awk '{ printf "%.1f", $1 / 1024 }') MiB/s ($((size / 1048576)) MiB, $verdict; rhinet0 tx $tx rx $rx bytes)"
}

echo "fio columns: device verb block-size bandwidth (client's figure)"
VERBS="write read" SIZES="4096 65536 1048576"
[ "$CORRUPT" = send ] && VERBS="write read send"
[ "$CORRUPT" = one ] && VERBS=write SIZES=65536
for verb in $VERBS; do
	for bs in $SIZES; do
		fio_case 10.77.0.2 rhinet0 "$verb" "$bs"
		[ -n "$REFERENCE" ] && [ "$bs" = 65536 ] &&
			fio_case "$REFERENCE" vrxe0 "$verb" "$bs"
	done
done
[ -n "$REFERENCE" ] ||
	echo "fio_rdma: no virtio-net link here, no soft-RoCE reference figures"

if [ -n "$failed" ]; then
	echo "fio_rdma: FAIL:$failed"
	apps_finish 1
	exit 1
fi
echo "fio_rdma: PASS"
apps_finish 0
exit 0
