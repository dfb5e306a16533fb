#!/bin/sh
# rhinet.ko's raw access (raw_access=1, Documentation/driver/raw-access.md):
# no RDMA or Ethernet device, /dev/rhinet_raw0 for root only, every bad
# request refused with its errno, the NIC reset and the buffers freed when
# the device goes away under an open file; then the normal mode again.
#   raw_access.sh NODE NODES
KO=/opt/rhinet/modules/rhinet.ko
fail() { echo "raw_access: FAIL: $*"; dmesg | tail -20; exit 1; }

# The function whose device ID is ours (vendor 0x1234 is QEMU's).
dev=$(grep -l 0x4e47 /sys/bus/pci/devices/*/device | head -n 1)
dev=$(basename "$(dirname "$dev")")
[ -e "/sys/bus/pci/devices/$dev/device" ] || fail "no RHiNET device"

modprobe ib_uverbs && insmod "$KO" raw_access=1 || fail "insmod raw_access=1"
[ "$(cat /sys/module/rhinet/parameters/raw_access)" = Y ] || fail "parameter"
(echo N >/sys/module/rhinet/parameters/raw_access) 2>/dev/null &&
	fail "raw_access is writable"
[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] || fail "an RDMA device"
[ -e "/sys/bus/pci/devices/$dev/net" ] && fail "a netdev"
[ -c /dev/rhinet_raw0 ] || fail "no /dev/rhinet_raw0"
mode=$(stat -c %a /dev/rhinet_raw0)
[ "$mode" = 600 ] || fail "/dev/rhinet_raw0 has mode $mode"
grep -q rhinet_raw0 /proc/interrupts || fail "no counting MSI-X handlers"

rhinet-raw check /dev/rhinet_raw0 || fail "checks"
# Root's file mode aside, the capability is what opens it.
chmod 0666 /dev/rhinet_raw0
got=$(rhinet-as 65534 rhinet-raw open /dev/rhinet_raw0)
[ "$got" = "Operation not permitted" ] || fail "a user's open: $got"
chmod 0600 /dev/rhinet_raw0

rhinet-raw unplug /dev/rhinet_raw0 "$dev" || fail "unplug under an open file"
[ -e /dev/rhinet_raw0 ] && fail "/dev/rhinet_raw0 outlived its device"
rmmod rhinet || fail "rmmod"
echo 1 >/sys/bus/pci/rescan
[ -e "/sys/bus/pci/devices/$dev" ] || fail "the device did not come back"

# The normal mode is untouched: the RDMA device comes up again.
insmod "$KO" || fail "insmod"
[ -n "$(ls /sys/class/infiniband 2>/dev/null)" ] || fail "no RDMA device"
rmmod rhinet || fail "rmmod (normal mode)"
if dmesg | grep -E "BUG:|WARNING:|Oops"; then
	fail "kernel warnings"
fi
echo "raw_access: PASS"
