#!/usr/bin/env bash
# Builds what every VM test shares, once per test run, and records the paths
# in BUILD_DIR/vm/env for run-cluster.sh:
#   QEMU       qemu-system-x86_64 with the rhinet device (scripts/build-qemu.sh)
#   VMLINUX    the guest kernel, uncompressed (kernel.sh)
#   INITRAMFS  /init, busybox and what reaches the disks (build-initramfs.sh
#              --image)
#   ROOT_IMAGE the nodes' files, a squashfs image every node attaches as a
#              read-only disk: modules, our guest programs and provider,
#              rdma-core's tools
#   SWITCH     the fabric switch
#   APPS       a second image with the software users run over the NIC
#              (UCX, Open MPI, libfabric, an ssh server, nvme-cli),
#              attached only by the tests that ask for it (run-cluster.sh
#              --apps)
#   FIRMWARE   the engine's firmware image for the soft core
#              (run-cluster.sh --core softcore)
#   prepare.sh BUILD_DIR [--debug-kernel]
# --debug-kernel: the same for the debug kernel (debug-kernel.sh: KASAN,
# lockdep, kmemleak, UBSAN) into BUILD_DIR/vm-debug/env: its bzImage as
# VMLINUX, its modules and a rhinet.ko built against its tree in the
# initramfs, and the kernel log checks of run-cluster.sh turned on.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:?usage: prepare.sh BUILD_DIR [--debug-kernel]}" && pwd)
DEBUG_KERNEL=0
case ${2:-} in
--debug-kernel) DEBUG_KERNEL=1 ;;
"") ;;
*) echo "usage: prepare.sh BUILD_DIR [--debug-kernel]" >&2; exit 2 ;;
esac
VM="$BUILD/vm"
((DEBUG_KERNEL)) && VM="$BUILD/vm-debug"
mkdir -p "$VM"

QEMU=$(bash "$REPO/scripts/build-qemu.sh")
SWITCH="$BUILD/fabric/rhinet-switch"
guest_bins=("$BUILD"/tests/vm/guest/rhinet-*)
[[ -x $SWITCH && -x ${guest_bins[0]} ]] || {
	echo "prepare: build $BUILD first (cmake --build)" >&2
	exit 1
}
bin_args=()
for b in "${guest_bins[@]}"; do
	# in the applications overlay
	[[ $b == */rhinet-mpi || $b == */rhinet-*-user ]] && continue
	bin_args+=(--bin "$b")
done
# Our kernel modules, when the kernel headers let them be built: rhinet.ko
# and xpu.ko (the accelerator stand-in's driver, kernel/xpu).
KOS=()
for m in rhinet xpu; do
	[[ -f $BUILD/kernel/$m/$m.ko ]] && KOS+=("$m")
done
env_extra=""
if ((DEBUG_KERNEL)); then
	DK=$(bash "$HERE/debug-kernel.sh")
	VMLINUX=$DK/bzImage # (a bzImage: KASAN does not boot through PVH)
	bin_args+=(--kernel "$DK/modules:$(cat "$DK/kernelrelease")")
	# The modules again, against the debug tree, from a copy of their
	# sources in the build tree (as kernel/CMakeLists.txt does for
	# Debian's).
	for m in "${KOS[@]}"; do
		kodir="$VM/$m-ko"
		mkdir -p "$kodir"
		# (their times kept: make rebuilds what changed since)
		cp -p "$REPO"/kernel/$m/*.[ch] "$REPO/kernel/$m/Kbuild" "$kodir/"
		make -s -C "$DK/tree" M="$kodir" RHINET_UAPI="$REPO/include/uapi" modules >&2
		bin_args+=(--file "$kodir/$m.ko:/opt/rhinet/modules/$m.ko")
	done
	# Kernel warnings (lockdep's splats among them) on the console too, for
	# run-cluster.sh's checks: quiet alone shows only errors.
	env_extra=$'KERNEL_ARGS=loglevel=5\nCHECK_KERNEL_LOG=1\n'
else
	VMLINUX=$(bash "$HERE/kernel.sh" vmlinux)
	for m in "${KOS[@]}"; do
		bin_args+=(--file "$BUILD/kernel/$m/$m.ko:/opt/rhinet/modules/$m.ko")
	done
fi
# ib_core and ib_uverbs for the RDMA device, rdma_ucm (with rdma_cm and
# ib_cm) for connection management, and iproute2's rdma tool.
bin_args+=(--module ib_uverbs --module rdma_ucm --bin "$(command -v rdma)")
# ethtool for the driver's self-tests (selftest.sh), iproute2's devlink
# for its info and health reporters (devlink.sh).
bin_args+=(--bin "$(command -v ethtool)" --bin "$(command -v devlink)")
# NVMe over Fabrics through the kernel's RDMA consumers (nvmeof.sh): the
# target with a RAM-backed namespace and the host side.
bin_args+=(--module nvmet_rdma --module nvme_rdma --module null_blk)
# Unmodified rdma-core tools (ibverbs-utils, perftest, rdmacm-utils: rping,
# mckey for verbs UD multicast, rdma_xserver/rdma_xclient, ucmatose and
# udaddy, the rsockets tools rstream and riostream) at their own paths. libibverbs dlopens its providers (ldd does not name them), each
# announced by a file in /etc/libibverbs.d.
for t in ibv_devinfo ibv_devices ibv_rc_pingpong ibv_ud_pingpong \
	ibv_srq_pingpong ibv_xsrq_pingpong ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
	ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat rping mckey \
	rdma_xserver rdma_xclient ucmatose udaddy rstream riostream; do
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
# ... also on a stock virtio-net NIC (run-cluster --virtio-link), what a
# user without our NIC runs between two guests: a benchmark on Debian's
# kernel (the debug kernel has no such modules).
((DEBUG_KERNEL)) || bin_args+=(--module virtio_pci --module virtio_net)
# vgem, a DRM driver with no hardware that exports dma-bufs of plain
# memory: the exporter ibv_reg_dmabuf_mr registers from (dmabuf.sh); both
# kernels have it (debug-kernel.config).
bin_args+=(--module vgem)
# The debug kernel's module that leaks on purpose (vm_kmemleak_selftest).
((DEBUG_KERNEL)) && bin_args+=(--module kmemleak-test)
# Our provider, once it is built: librhinetdv.so.1 (direct verbs and
# provider in one object) next to libibverbs, and the provider file
# libibverbs dlopens as a symlink to it, so that a program linked with
# librhinetdv (rhinetdv_pingpong) and libibverbs' loading share one copy.
PROV="$BUILD/providers/librhinet"
if [[ -f $PROV/librhinetdv.so.1 && -f $PROV/rhinet.driver ]]; then
	bin_args+=(--tool "$PROV/librhinetdv.so.1:$VERBS_LIB/librhinetdv.so.1"
		--link "../librhinetdv.so.1:$VERBS_LIB/libibverbs/librhinet-rdmav34.so"
		--file "$PROV/rhinet.driver:/etc/libibverbs.d/rhinet.driver")
	for ex in rhinetdv_pingpong rhinetdv_model rhinetdv_tag rhinetdv_pindown \
		ibv_tm_pingpong rhinetdv_tag_bench; do
		[[ -x $PROV/examples/$ex ]] &&
			bin_args+=(--tool "$PROV/examples/$ex:/usr/bin/$ex")
	done
	# The administrator's tool for process group grants (rhinet-run runs
	# it on every node as its privileged step).
	[[ -x $PROV/rhinet-group ]] &&
		bin_args+=(--tool "$PROV/rhinet-group:/usr/bin/rhinet-group")
	# The bring-up team's decoded dump of a device (devlink.sh).
	[[ -x $PROV/rhinet-diag ]] &&
		bin_args+=(--tool "$PROV/rhinet-diag:/usr/bin/rhinet-diag")
fi
bash "$HERE/build-initramfs.sh" "$VM/initramfs.cpio" --image "$VM/root.sqfs" "${bin_args[@]}"

# The overlay: Debian's UCX and Open MPI with every plugin they dlopen and
# the data files they read, dropbear (sshd and client) for mpirun's remote
# ranks, nvme-cli, and our MPI test program. One ssh key pair made here
# serves the whole test cluster (root logs in with it, no password).
apps="$VM/apps"
rm -rf "$apps" && mkdir -p "$apps"
dropbearkey -t ed25519 -f "$apps/id_dropbear" >/dev/null 2>&1
dropbearkey -y -f "$apps/id_dropbear" | grep '^ssh-' >"$apps/authorized_keys"
dropbearkey -t ed25519 -f "$apps/host_key" >/dev/null 2>&1
# Every node shows the same host key: the clients know it in advance under
# every name and address a node has (apps.lib.sh), so they neither skip
# the check nor ask.
host_pub=$(dropbearkey -y -f "$apps/host_key" | grep '^ssh-' | cut -d' ' -f1-2)
for k in $(seq 0 63); do
	echo "node$k $host_pub"
	echo "10.77.0.$((k + 1)) $host_pub"
done >"$apps/known_hosts"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$apps/passwd"
printf 'root:x:0:\n' >"$apps/group"
printf '/bin/sh\n' >"$apps/shells"
LIB=/usr/lib/x86_64-linux-gnu
app_args=(--overlay
	--file "$apps/passwd:/etc/passwd" --file "$apps/group:/etc/group"
	--file "$apps/shells:/etc/shells"
	--file "$apps/id_dropbear:/root/.ssh/id_dropbear"
	--file "$apps/authorized_keys:/root/.ssh/authorized_keys"
	--file "$apps/known_hosts:/root/.ssh/known_hosts"
	--file "$apps/host_key:/etc/dropbear/dropbear_ed25519_host_key"
	--tool /usr/sbin/dropbear --tool /usr/bin/dbclient --tool /usr/sbin/nvme
	--file "$HERE/guest/ssh.sh:/usr/bin/ssh"
	--tree "$LIB/ucx" --tree "$LIB/openmpi" --tree "$LIB/pmix2/lib/pmix"
	--tree "$LIB/pmix2/share" --tree /usr/share/openmpi --tree /etc/openmpi)
# libfabric 1.17 (its providers, verbs;ofi_rxm among them, are built into
# libfabric.so.1): fi_info and fi_pingpong (verbs_gaps.sh).
for t in ucx_info ucx_perftest orterun orted ompi_info fi_info fi_pingpong; do
	app_args+=(--tool "/usr/bin/$t")
done
app_args+=(--link orterun:/usr/bin/mpirun)
# rsockets under a TCP program (rdma_apps.sh): librdmacm's preload library.
app_args+=(--tool "$LIB/rsocket/librspreload.so")
# Open MPI's OpenSHMEM launcher (oshrun is orterun under another name) and
# our oshmem program, built with oshcc (oshmem.sh).
app_args+=(--link orterun:/usr/bin/oshrun)
osh_bin="$BUILD/tests/vm/guest/rhinet-oshmem"
[[ -x $osh_bin ]] && app_args+=(--bin "$osh_bin")
# userlib, its launcher and its programs (they start ranks over ssh).
UL="$BUILD/userlib"
if [[ -f $UL/librhinet_user.so.0 ]]; then
	app_args+=(--tool "$UL/librhinet_user.so.0:$LIB/librhinet_user.so.0"
		--tool "$UL/rhinet-run:/usr/bin/rhinet-run")
	for ex in transfer_modes twin_diff_dsm hello_push isend_irecv \
		pin_on_demand partial_messages sync_mcast shared_region \
		mcast_switch inbox_incast collectives triggered_push atomics \
		wait_bench add_endpoint; do
		app_args+=(--tool "$UL/rhinet_$ex:/usr/bin/rhinet_$ex")
	done
fi
mpi_bin="$BUILD/tests/vm/guest/rhinet-mpi"
[[ -x $mpi_bin ]] && app_args+=(--bin "$mpi_bin")
# userlib over a vgem dma-buf (dmabuf.sh), userlib's triggered operations
# (trigger.sh), userlib's device-initiated puts (xpu_modes.sh).
for user in dmabuf trigger xpu-modes; do
	prog="$BUILD/tests/vm/guest/rhinet-$user-user"
	if [[ -x $prog ]]; then
		app_args+=(--tool "$prog:/usr/bin/rhinet-$user-user")
	fi
done
bash "$HERE/build-initramfs.sh" "$VM/apps.sqfs" "${app_args[@]}"

# Extra cpios that only their own tests carry (run-cluster --file) and
# unpack in the guest: Debian's fio links Ceph, Gluster, ICU and more
# (about 65 MB), NFS needs its tools and 13 modules; every other guest of
# the overlay would pay that memory. fio with its rdma ioengine
# (fio_rdma.sh). NFS over RDMA (nfs_rdma.sh): the server's export-table
# tools (exportfs, rpc.mountd), the client's mount helper (mount.nfs4),
# libtirpc's netconfig, and the modules of nfsd, nfsv4 and rpcrdma with
# their dependencies in load order (/opt/nfs/modules/order: the shared
# image's modules.dep does not know them). Debian's kernel only: the
# debug kernel is built without NFS, and fio needs no kernel of its own.
if ((!DEBUG_KERNEL)); then
	bash "$HERE/build-initramfs.sh" "$VM/fio.cpio" --overlay --tool /usr/bin/fio
	KVER=$(bash "$HERE/kernel.sh" version)
	nfs_args=(--overlay --tool /usr/sbin/exportfs --tool /usr/sbin/rpc.mountd
		--tool /sbin/mount.nfs --link mount.nfs:/sbin/mount.nfs4
		--file /etc/netconfig:/etc/netconfig)
	: >"$VM/nfs-modules.order"
	for ko in $(modprobe -a -S "$KVER" --show-depends nfsd nfsv4 rpcrdma |
		awk '$1 == "insmod" { print $2 }'); do
		grep -qxF "$(basename "$ko")" "$VM/nfs-modules.order" && continue
		basename "$ko" >>"$VM/nfs-modules.order"
		nfs_args+=(--file "$ko:/opt/nfs/modules/$(basename "$ko")")
	done
	nfs_args+=(--file "$VM/nfs-modules.order:/opt/nfs/modules/order")
	bash "$HERE/build-initramfs.sh" "$VM/nfs.cpio" "${nfs_args[@]}"
fi

cat >"$VM/env.tmp" <<EOT
QEMU=$QEMU
VMLINUX=$VMLINUX
INITRAMFS=$VM/initramfs.cpio
ROOT_IMAGE=$VM/root.sqfs
SWITCH=$SWITCH
APPS=$VM/apps.sqfs
FIRMWARE=$BUILD/firmware-image/rhinet-fw.elf
EOT
printf '%s' "$env_extra" >>"$VM/env.tmp"
mv "$VM/env.tmp" "$VM/env"
echo "prepare: VM artifacts ready ($VM/env)" >&2
