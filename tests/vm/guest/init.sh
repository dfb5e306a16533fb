#!/bin/busybox sh
# /init of a RHiNET-NG test node. Kernel command line:
#   rhinet.node=N rhinet.nodes=M rhinet.mode=batch|shell|idle
# batch: runs /test/run.sh NODE NODES [ARGS from /test/args], prints its status and ends the VM with
#        it (isa-debug-exit); shell: a shell on the console; idle: waits.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin:/opt/rhinet/bin
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
ln -sf /bin/busybox /sbin/modprobe 2>/dev/null

arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
NODE=$(arg rhinet.node)
NODES=$(arg rhinet.nodes)
MODE=$(arg rhinet.mode)
export NODE NODES
hostname "node$NODE"
echo "rhinet-init: node $NODE of $NODES, mode $MODE, kernel $(uname -r)"

case "$MODE" in
batch)
	# shellcheck disable=SC2046 # one argument per line of /test/args
	sh /test/run.sh "$NODE" "$NODES" $(cat /test/args 2>/dev/null)
	rc=$?
	echo "RHINET-RESULT node=$NODE rc=$rc"
	rhinet-vm-exit "$rc"
	;;
shell)
	echo "rhinet-init: shell on node $NODE; 'rhinet-vm-exit 0' powers off"
	setsid cttyhack sh -l
	rhinet-vm-exit 0
	;;
esac
while :; do sleep 3600; done
