#!/usr/bin/env bash
# Boots the guest of the conformance target T2 (targets/guest_target.cc
# runs this and plays the switch): one TCG guest with two rhinet devices,
# node 1 and node 2, whose wires connect to SOCKDIR/port1.sock and
# SOCKDIR/port2.sock, and a virtio-net NIC whose stream netdev connects to
# SOCKDIR/agent.sock (the target listens on all three). The guest loads
# rhinet.ko with raw_access=1 and runs rhinet-conform-agent on the NIC.
#   guest_vm.sh ENV_FILE SOCKDIR
# ENV_FILE is tests/vm/prepare.sh's (QEMU VMLINUX INITRAMFS ROOT_IMAGE); the serial
# console goes to SOCKDIR/guest.log. Execs QEMU: its PID is this one's.
set -euo pipefail
env_file=$1 dir=$2
# shellcheck source=/dev/null
source "$env_file"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/test"
cat >"$stage/test/run.sh" <<'EOT'
#!/bin/sh
# The guest's side of T2: the raw devices (no netdev of ours: eth0 is the
# virtio-net NIC), then the agent until the VM is stopped.
modprobe virtio_pci && modprobe virtio_net || exit 1
modprobe ib_uverbs && insmod /opt/rhinet/modules/rhinet.ko raw_access=1 || exit 1
ip link set eth0 up || exit 1
exec rhinet-conform-agent eth0 /dev/rhinet_raw0 /dev/rhinet_raw1
EOT
chmod 0755 "$stage"
(cd "$stage" && find . | cpio -o -H newc --owner=0:0 --quiet) >"$dir/run.cpio"
cat "$INITRAMFS" "$dir/run.cpio" >"$dir/initrd.cpio"
rm -f "$dir/run.cpio"
rm -rf "$stage"
trap - EXIT
nic=",engine-nice=-10${RHINET_NIC_PROPS:-}"
exec "$QEMU" -M q35 -cpu max -m 256M -smp 1 -nodefaults -no-user-config \
	-display none -no-reboot -L /usr/share/seabios -L /usr/share/qemu \
	-kernel "$VMLINUX" -initrd "$dir/initrd.cpio" \
	-append "console=ttyS0 quiet panic=-1 no_timer_check rhinet.node=1 rhinet.nodes=1 rhinet.mode=batch" \
	-serial "file:$dir/guest.log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-device "rhinet,wire=$dir/port1.sock,node-id=1$nic" \
	-device "rhinet,wire=$dir/port2.sock,node-id=2$nic" \
	-netdev "stream,id=agent,server=off,addr.type=unix,addr.path=$dir/agent.sock" \
	-device virtio-net-pci,netdev=agent,romfile=,mac=52:54:00:52:43:41 \
	-drive "file=$ROOT_IMAGE,if=none,id=root,format=raw,readonly=on" \
	-device virtio-blk-pci,drive=root,serial=rhinet-root,addr=0x18
