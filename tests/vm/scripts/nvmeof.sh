#!/bin/sh
# NVMe over Fabrics through the kernel's own RDMA consumers on rhinet0:
# node 1 is the target (nvmet with the rdma transport, a RAM-backed
# null_blk namespace), node 0 the host (nvme-rdma, `nvme connect -t rdma`).
#   nvmeof.sh NODE NODES [MIB]
# Node 0 writes MIB MiB (default 256) of random data in 32 MiB pieces,
# checks every piece read back, disconnects and connects again and checks
# them once more (the data is the target's, not a cache), then disconnects.
# Prints write and read throughput, and how many bytes rhinet0 carried.
NODE=$1
NODES=$2
MIB=${3:-256}
# The debug kernel's twin: two pieces (its checks need each path once; the
# volume is the plain twin's).
[ -n "${RHINET_DEBUG_KERNEL-}" ] && [ -z "${3-}" ] && MIB=64
LIB_NAME=nvmeof
. /test/apps.lib.sh
NQN=nqn.2026-11.org.rhinet:test
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:52686e74-0000-4000-8000-00000000000$NODE
apps_setup

if [ "$NODE" = 1 ]; then
	modprobe null_blk nr_devices=1 memory_backed=1 gb=1 bs=4096 ||
		fail "modprobe null_blk"
	modprobe nvmet_rdma || fail "modprobe nvmet_rdma"
	mount -t configfs none /sys/kernel/config 2>/dev/null
	T=/sys/kernel/config/nvmet
	mkdir $T/subsystems/$NQN && echo 1 >$T/subsystems/$NQN/attr_allow_any_host &&
		mkdir $T/subsystems/$NQN/namespaces/1 &&
		echo -n /dev/nullb0 >$T/subsystems/$NQN/namespaces/1/device_path &&
		echo 1 >$T/subsystems/$NQN/namespaces/1/enable ||
		fail "nvmet subsystem"
	mkdir $T/ports/1 && echo rdma >$T/ports/1/addr_trtype &&
		echo ipv4 >$T/ports/1/addr_adrfam &&
		echo 10.77.0.2 >$T/ports/1/addr_traddr &&
		echo 4420 >$T/ports/1/addr_trsvcid &&
		ln -s $T/subsystems/$NQN $T/ports/1/subsystems/$NQN ||
		fail "nvmet port"
	echo "nvmeof: target listening on 10.77.0.2:4420 (rdma)"
	touch /tmp/ready
	# Node 0 ends the run; then the port and subsystem go, cleanly.
	apps_await 1200
	rm $T/ports/1/subsystems/$NQN && rmdir $T/ports/1 &&
		echo 0 >$T/subsystems/$NQN/namespaces/1/enable &&
		rmdir $T/subsystems/$NQN/namespaces/1 && rmdir $T/subsystems/$NQN ||
		fail "nvmet teardown"
	# The controllers' queues are freed in the background after the
	# host leaves; the module goes once they are.
	i=0
	until rmmod nvmet_rdma 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 40 ] || fail "rmmod nvmet_rdma: $(grep nvmet /proc/modules)"
		usleep 250000
	done
	if dmesg | grep -E "WARNING|BUG|nvmet.*error|rdma.*error"; then
		fail "kernel complained"
	fi
	exit "$(cat /tmp/apps-result)"
fi

modprobe nvme_rdma || fail "modprobe nvme_rdma"
i=0
until ssh node1 test -f /tmp/ready; do
	i=$((i + 1))
	[ $i -lt 120 ] || fail "target not ready"
	sleep 1
done
bytes0=$(counter tx_bytes)
rx0=$(counter rx_bytes)
connect() {
	nvme connect -t rdma -a 10.77.0.2 -s 4420 -n $NQN -q "$HOSTNQN" ||
		fail "nvme connect"
	i=0
	until [ -b /dev/nvme0n1 ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "no /dev/nvme0n1 after connect"
		usleep 100000
	done
}
connect
nvme list 2>/dev/null | sed 's/^/  /'
grep -H . /sys/class/nvme/nvme0/transport /sys/class/nvme/nvme0/address 2>/dev/null

# 32 MiB of random data, written at MIB/32 places with a twist per piece
# (its index in the first bytes), so a piece landing in the wrong place
# is caught.
dd if=/dev/urandom of=/tmp/piece bs=1M count=32 2>/dev/null
pieces=$((MIB / 32))
sum() { md5sum | cut -d' ' -f1; }
for k in $(seq 0 $((pieces - 1))); do
	printf 'piece %08d' "$k" | dd of=/tmp/piece bs=1 conv=notrunc 2>/dev/null
	sum </tmp/piece >/tmp/sum.$k
done
t0=$(now)
for k in $(seq 0 $((pieces - 1))); do
	printf 'piece %08d' "$k" | dd of=/tmp/piece bs=1 conv=notrunc 2>/dev/null
	dd if=/tmp/piece of=/dev/nvme0n1 bs=1M seek=$((k * 32)) oflag=direct \
		2>/dev/null || fail "write of piece $k"
done
sync
tw=$(elapsed "$t0")
check_all() { # label
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	for k in $(seq 0 $((pieces - 1))); do
		got=$(dd if=/dev/nvme0n1 bs=1M skip=$((k * 32)) count=32 iflag=direct 2>/dev/null | sum)
		[ "$got" = "$(cat /tmp/sum.$k)" ] || fail "$1: piece $k reads back wrong"
	done
	tr=$(elapsed "$t0")
}
check_all "first read"
echo "nvmeof: wrote $MIB MiB in $tw s ($(echo "$MIB $tw" | awk '{ printf "%.1f", $1 * 1.048576 / $2 }') MB/s), read it back in $tr s ($(echo "$MIB $tr" | awk '{ printf "%.1f", $1 * 1.048576 / $2 }') MB/s), every piece checked"
nvme disconnect -n $NQN || fail "nvme disconnect"
[ -b /dev/nvme0n1 ] && fail "nvme0n1 still there after disconnect"
connect
check_all "after reconnecting"
echo "nvmeof: after reconnecting, all $pieces pieces read back intact ($tr s)"
nvme disconnect -n $NQN || fail "nvme disconnect"
tx=$(($(counter tx_bytes) - bytes0))
rx=$(($(counter rx_bytes) - rx0))
echo "nvmeof: rhinet0 carried $tx bytes out and $rx bytes in on node 0"
[ "$tx" -gt $((MIB * 1048576)) ] || fail "the writes did not go over rhinet0"
if dmesg | grep -E "WARNING|BUG|nvme.*error|rdma.*error"; then
	fail "kernel complained"
fi
echo "nvmeof: PASS"
apps_finish 0
exit 0
