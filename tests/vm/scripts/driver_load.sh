#!/bin/sh
# rhinet.ko binds the device, brings the NIC up (admin queue, event queue,
# MSI-X, RDMA device) and lets go cleanly, five times in a row.
#   driver_load.sh NODE NODES
NODE=$1
KO=/opt/rhinet/modules/rhinet.ko
fail() { echo "driver_load: FAIL: $*"; dmesg | tail -20; exit 1; }

dev=""
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x4e47 ] &&
		dev=$(basename "$d")
done
[ -n "$dev" ] || fail "no RHiNET device"

for i in 1 2 3 4 5; do
	dmesg -c >/dev/null
	modprobe ib_uverbs && insmod "$KO" || fail "insmod $i"
	[ -e "/sys/bus/pci/drivers/rhinet/$dev" ] || fail "device not bound"
	mac=$(printf '02:52:4e:00:%02x:%02x' $((NODE >> 8)) $((NODE & 255)))
	dmesg | grep -q "rhinet $dev: node $NODE, MAC $mac, interface 1.0, .*link up" ||
		fail "no bring-up line for node $NODE"
	# Named for the device (several NICs in one host).
	grep -q "rhinet-admin@$dev" /proc/interrupts || fail "no admin interrupt"
	# Completion vectors: an event queue and interrupt each.
	[ "$(grep -c "rhinet-eq[0-9]*@$dev" /proc/interrupts)" -ge 2 ] ||
		fail "fewer than 2 event queue interrupts"
	# The event queue's handler runs in a thread, not in hard IRQ.
	# (a thread is named irq/N-NAME, cut to 15 characters)
	ps | grep -q "irq/[0-9]*-rhinet" || fail "no event queue IRQ thread"
	rdma dev show | grep -q "^[0-9]*: rhinet0: node_type ca" ||
		fail "no RDMA device rhinet0"
	[ -c /dev/infiniband/uverbs0 ] || fail "no uverbs0"
	rmmod rhinet || fail "rmmod $i"
	[ -e "/sys/bus/pci/drivers/rhinet" ] && fail "driver still registered"
	grep -q rhinet /proc/interrupts && fail "interrupts not freed"
	[ -e /sys/class/infiniband/rhinet0 ] && fail "RDMA device still there"
	# No firmware file in this guest: the card runs its own.
	dmesg | grep -q "rhinet/qemu.bin: no such file, the card runs its own firmware" ||
		fail "probe did not look for rhinet/qemu.bin"
	# (An unsigned out-of-tree module taints the kernel, and Debian's
	# firmware loader logs every file it did not find, even the ones a
	# driver asked for with request_firmware_direct: both expected.)
	if dmesg | grep -v -e "module verification failed" \
		-e "firmware: failed to load rhinet/qemu.bin (-2)" |
		grep -iE "rhinet.*(error|timed out|fail)|BUG:|WARNING:|Oops"; then
		fail "kernel complained in round $i"
	fi
done
echo "driver_load: PASS: 5 load/unload rounds on node $NODE"
