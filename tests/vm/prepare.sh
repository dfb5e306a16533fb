#!/usr/bin/env bash
# Builds what every VM test shares, once per test run, and records the paths
# in BUILD_DIR/vm/env for run-cluster.sh:
#   QEMU       qemu-system-x86_64 with the rhinet device (scripts/build-qemu.sh)
#   VMLINUX    the guest kernel, uncompressed (kernel.sh)
#   INITRAMFS  busybox, modules, our guest programs and provider, rdma-core's
#              tools (build-initramfs.sh)
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
# ib_core and ib_uverbs for the RDMA device, rdma_ucm (with rdma_cm and
# ib_cm) for connection management, and iproute2's rdma tool.
bin_args+=(--module ib_uverbs --module rdma_ucm --bin "$(command -v rdma)")
# Unmodified rdma-core tools (ibverbs-utils, perftest, rdmacm-utils) at their
# own paths. libibverbs dlopens its providers (ldd does not name them), each
# announced by a file in /etc/libibverbs.d.
for t in ibv_devinfo ibv_devices ibv_rc_pingpong ibv_ud_pingpong \
	ibv_srq_pingpong ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
	ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat rping; do
	bin_args+=(--tool "/usr/bin/$t")
done
VERBS_LIB=/usr/lib/x86_64-linux-gnu
# glibc dlopens libgcc_s when a thread exits (rping's do); ldd cannot see it.
bin_args+=(--tool "$VERBS_LIB/libgcc_s.so.1")
# Soft-RoCE as a reference: Debian's rxe provider and rdma_rxe, with the
# crc32 crypto modules the kernel asks modprobe for when rxe starts (ICRC).
bin_args+=(--tool "$VERBS_LIB/libibverbs/librxe-rdmav34.so"
	--file /etc/libibverbs.d/rxe.driver:/etc/libibverbs.d/rxe.driver
	--module rdma_rxe --module crc32_generic --module crc32_pclmul)
# Our provider, once it is built: librhinetdv.so.1 (direct verbs and
# provider in one object) next to libibverbs, and the provider file
# libibverbs dlopens as a symlink to it, so that a program linked with
# librhinetdv (rhinetdv_pingpong) and libibverbs' loading share one copy.
PROV="$BUILD/providers/librhinet"
if [[ -f $PROV/librhinetdv.so.1 && -f $PROV/rhinet.driver ]]; then
	bin_args+=(--tool "$PROV/librhinetdv.so.1:$VERBS_LIB/librhinetdv.so.1"
		--link "../librhinetdv.so.1:$VERBS_LIB/libibverbs/librhinet-rdmav34.so"
		--file "$PROV/rhinet.driver:/etc/libibverbs.d/rhinet.driver")
	[[ -x $PROV/examples/rhinetdv_pingpong ]] &&
		bin_args+=(--tool "$PROV/examples/rhinetdv_pingpong:/usr/bin/rhinetdv_pingpong")
fi
bash "$HERE/build-initramfs.sh" "$VM/initramfs.cpio" "${bin_args[@]}"

cat >"$VM/env.tmp" <<EOT
QEMU=$QEMU
VMLINUX=$VMLINUX
INITRAMFS=$VM/initramfs.cpio
SWITCH=$SWITCH
EOT
mv "$VM/env.tmp" "$VM/env"
echo "prepare: VM artifacts ready ($VM/env)" >&2
