#!/bin/sh
# NFS v4.1 over RDMA through the kernel's own RDMA consumers on rhinet0:
# node 1 runs Debian's kernel NFS server (nfsd with the RDMA transport,
# rpcrdma's svcrdma, listening on 20049; exportfs and rpc.mountd from
# nfs-kernel-server for the export table), node 0 mounts it
# (mount.nfs4 -o vers=4.1,proto=rdma,port=20049, rpcrdma's xprtrdma).
#   nfs_rdma.sh NODE NODES [corrupt]
# 1. Node 0 writes 8 files of 4 MiB of random data, syncs, unmounts and
#    mounts again (nothing is left in its page cache) and reads them
#    back: the checksums node 0 had, read back, and node 1 computes on
#    its own export all match.
# 2. Node 0 writes 8 more files, one after the other with a sync each,
#    while node 1 stops nfsd (threads to 0: listeners, sessions and open
#    state gone) and starts it again. The client reconnects, reclaims its
#    state in the server's grace period (the server keeps its client
#    records in /var/lib/nfs/v4recovery) and its writes complete; the
#    checksums match as in 1.
# Shows the traffic went over the NIC: /proc/self/mountstats names the
# rdma transport, and rhinet0's byte counters moved by at least the data.
# "corrupt" changes one byte of one file on the server before the last
# comparison, to see the check fail.
NODE=$1
NODES=$2
CORRUPT=$3
LIB_NAME=nfs_rdma
. /test/apps.lib.sh
EXPORT=/srv/nfs
PORT=20049
apps_setup
[ "$NODES" = 2 ] || fail "nfs_rdma runs on 2 nodes"
# The NFS tools and modules ride in their own cpio (prepare.sh); the
# modules load in the order modprobe gave there, those already in skipped.
apps_unpack /opt/extra/nfs.cpio
while read -r ko; do
	name=$(basename "$ko" .ko | tr - _)
	[ -d "/sys/module/$name" ] && continue
	insmod "/opt/nfs/modules/$ko" || fail "insmod $ko"
done </opt/nfs/modules/order

if [ "$NODE" = 1 ]; then
	mkdir -p $EXPORT /var/lib/nfs/v4recovery /run/rpc_pipefs
	# tmpfs can be exported (rootfs' ramfs cannot); fsid=0 makes it
	# the NFSv4 pseudo root.
	mount -t tmpfs -o size=256m nfs $EXPORT || fail "tmpfs"
	mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd"
	echo "$EXPORT *(rw,fsid=0,no_root_squash,no_subtree_check,insecure)" >/etc/exports
	exportfs -ra || fail "exportfs"
	# NFSv4 only: no lockd, no rpcbind registration; rpc.mountd answers
	# the kernel's export-table questions.
	echo "-2 -3 +4 +4.1" >/proc/fs/nfsd/versions || fail "nfsd versions"
	echo 10 >/proc/fs/nfsd/nfsv4leasetime && echo 10 >/proc/fs/nfsd/nfsv4gracetime ||
		fail "nfsd lease time"
	rpc.mountd -N 2 -N 3 -u || fail "rpc.mountd"
	cat >/tmp/nfsd-start <<-EOT
		#!/bin/sh
		echo rdma $PORT >/proc/fs/nfsd/portlist && echo 4 >/proc/fs/nfsd/threads
	EOT
	cat >/tmp/nfsd-stop <<-'EOT'
		#!/bin/sh
		echo 0 >/proc/fs/nfsd/threads
	EOT
	chmod +x /tmp/nfsd-start /tmp/nfsd-stop
	/tmp/nfsd-start || fail "nfsd start: $(dmesg | tail -5)"
	grep -q "rdma $PORT" /proc/fs/nfsd/portlist ||
		fail "nfsd not listening on rdma $PORT: $(cat /proc/fs/nfsd/portlist)"
	echo "nfs_rdma: nfsd listening: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
	touch /tmp/ready
	apps_await 900
	/tmp/nfsd-stop
	if dmesg | grep -E "WARNING|BUG|Oops"; then
		fail "kernel complained"
	fi
	exit "$(cat /tmp/apps-result)"
fi

failed=""
note_fail() { failed="$failed $*;"; echo "nfs_rdma: FAILED: $*"; }
i=0
until ssh node1 test -f /tmp/ready; do
	i=$((i + 1))
	[ $i -lt 120 ] || fail "server not ready"
	sleep 1
done
MNT=/mnt/nfs
mkdir -p $MNT /tmp/src
nfs_mount() {
	t0=$(now)
	mount.nfs4 10.77.0.2:/ $MNT -o vers=4.1,proto=rdma,port=$PORT ||
		fail "mount.nfs4 over rdma: $(dmesg | tail -5)"
	echo "nfs_rdma: mounted in $(elapsed "$t0") s"
}
# compare FILES...: node 0's checksums of its sources, of the files read
# back through the mount, and node 1's of its export, all equal.
compare() {
	(cd /tmp/src && sha256sum "$@") >/tmp/sum.src
	(cd $MNT && sha256sum "$@") >/tmp/sum.nfs 2>/tmp/sum.err
	# shellcheck disable=SC2029 # the names are expanded here on purpose
	# (stderr apart: dbclient's host key notice is no checksum)
	ssh node1 "cd $EXPORT && sha256sum $*" >/tmp/sum.server 2>/tmp/sum.err
	if ! cmp -s /tmp/sum.src /tmp/sum.nfs || ! cmp -s /tmp/sum.src /tmp/sum.server; then
		note_fail "$1: checksums differ"
		diff /tmp/sum.src /tmp/sum.nfs | head -5
		diff /tmp/sum.src /tmp/sum.server | head -5
		return 1
	fi
	echo "nfs_rdma: $# files checked on both sides ($(head -1 /tmp/sum.src | cut -c1-16)...)"
}
for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
	dd if=/dev/urandom of=/tmp/src/f$k bs=1M count=4 2>/dev/null || fail "source data"
done
tx0=$(counter tx_bytes) rx0=$(counter rx_bytes)
nfs_mount
xprt=$(grep -E "^[[:space:]]*xprt:" /proc/self/mountstats)
echo "nfs_rdma: mountstats $xprt"
echo "$xprt" | grep -q "xprt:[[:space:]]*rdma " ||
	note_fail "mountstats names no rdma transport: $xprt"

# 1. Write, sync, remount, read back.
t0=$(now)
for k in 1 2 3 4 5 6 7 8; do
	cp /tmp/src/f$k $MNT/f$k || note_fail "cp f$k"
done
sync
echo "nfs_rdma: 32 MiB written and synced in $(elapsed "$t0") s"
umount $MNT || fail "umount"
nfs_mount
t0=$(now)
compare f1 f2 f3 f4 f5 f6 f7 f8
echo "nfs_rdma: read back and compared in $(elapsed "$t0") s"

# 2. The server restarts while the client writes.
(
	for k in 9 10 11 12 13 14 15 16; do
		cp /tmp/src/f$k $MNT/f$k && sync || { echo "cp f$k failed"; exit 1; }
		touch /tmp/wrote.$k
	done
) >/tmp/writer.log 2>&1 &
writer=$!
i=0
until [ -f /tmp/wrote.10 ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "client writes do not progress"
	usleep 100000
done
t0=$(now)
ssh node1 "/tmp/nfsd-stop && sleep 3 && /tmp/nfsd-start" ||
	note_fail "nfsd restart on node 1"
echo "nfs_rdma: nfsd stopped and started again while node 0 wrote (the client had written at least files 9 and 10)"
wait $writer || note_fail "writes across the server restart: $(cat /tmp/writer.log)"
echo "nfs_rdma: writes completed $(elapsed "$t0") s after the restart began"
[ "$CORRUPT" = corrupt ] &&
	ssh node1 "printf x | dd of=$EXPORT/f12 bs=1 seek=1000 conv=notrunc 2>/dev/null"
umount $MNT || fail "umount after the restart"
nfs_mount
compare f9 f10 f11 f12 f13 f14 f15 f16
grep -E "^[[:space:]]*xprt:" /proc/self/mountstats | sed 's/^/nfs_rdma: mountstats after the restart /'
umount $MNT || note_fail "last umount"

tx=$(($(counter tx_bytes) - tx0)) rx=$(($(counter rx_bytes) - rx0))
echo "nfs_rdma: rhinet0 on node 0 sent $tx bytes, received $rx"
[ "$tx" -ge $((64 * 1048576)) ] || note_fail "rhinet0 sent $tx bytes for 64 MiB written"
[ "$rx" -ge $((64 * 1048576)) ] || note_fail "rhinet0 received $rx bytes for 64 MiB read"
if dmesg | grep -E "WARNING|BUG|Oops"; then
	note_fail "kernel complained"
fi

if [ -n "$failed" ]; then
	echo "nfs_rdma: FAIL:$failed"
	apps_finish 1
	exit 1
fi
echo "nfs_rdma: PASS"
apps_finish 0
exit 0
