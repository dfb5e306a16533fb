#!/usr/bin/env bash
# Builds what every VM test shares, once per test run, and records the paths
# in BUILD_DIR/vm/env for run-cluster.sh:
#   QEMU       qemu-system-x86_64 with the rhinet device (scripts/build-qemu.sh)
#   VMLINUX    the guest kernel, uncompressed (kernel.sh)
#   INITRAMFS  busybox, modules and our guest programs (build-initramfs.sh)
#   SWITCH     the fabric switch
#   prepare.sh BUILD_DIR
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:?usage: prepare.sh BUILD_DIR}" && pwd)
VM="$BUILD/vm"
mkdir -p "$VM"

QEMU=$(bash "$REPO/scripts/build-qemu.sh")
VMLINUX=$(bash "$HERE/kernel.sh" vmlinux)
SWITCH="$BUILD/fabric/rhinet-switch"
guest_bins=("$BUILD"/tests/vm/guest/rhinet-*)
[[ -x $SWITCH && -x ${guest_bins[0]} ]] || {
	echo "prepare: build $BUILD first (cmake --build)" >&2
	exit 1
}
bin_args=()
for b in "${guest_bins[@]}"; do bin_args+=(--bin "$b"); done
# Our kernel module, when the kernel headers let it be built.
KO="$BUILD/kernel/rhinet/rhinet.ko"
[[ -f $KO ]] && bin_args+=(--file "$KO:/opt/rhinet/modules/rhinet.ko")
# ib_core and ib_uverbs for the RDMA device, and iproute2's rdma tool.
bin_args+=(--module ib_uverbs --bin "$(command -v rdma)")
bash "$HERE/build-initramfs.sh" "$VM/initramfs.cpio" "${bin_args[@]}"

cat >"$VM/env.tmp" <<EOT
QEMU=$QEMU
VMLINUX=$VMLINUX
INITRAMFS=$VM/initramfs.cpio
SWITCH=$SWITCH
EOT
mv "$VM/env.tmp" "$VM/env"
echo "prepare: VM artifacts ready ($VM/env)" >&2
