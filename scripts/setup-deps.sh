#!/usr/bin/env bash
# Install what a fresh Debian 12 (bookworm) machine lacks to build and test
# RHiNET-NG. Idempotent: packages already installed are left alone, and the
# package lists are refreshed only when something is actually missing.
# Uses apt only; the archive comes from the machine's own apt configuration.
set -euo pipefail

PACKAGES=(
	build-essential
	cmake
	ninja-build
	pkg-config
	clang
	clang-14
	libclang-rt-14-dev # libFuzzer, ASan and UBSan runtimes for clang-14
	clang-format
	libgtest-dev
	googletest
	linux-libc-dev # <linux/types.h>, <rdma/ib_user_verbs.h>
	# QEMU 7.2 built from Debian's source package with our device
	dpkg-dev # dpkg-source
	patch # qemu_device/patches (build-qemu.sh)
	meson
	python3
	libglib2.0-dev
	libpixman-1-dev
	libfdt-dev
	zlib1g-dev
	seabios
	qemu-system-data
	# Guests of the VM harness: Debian's own kernel and a busybox userland
	linux-image-amd64
	linux-headers-amd64
	busybox-static
	cpio
	xz-utils
	zstd
	kmod
	iproute2 # the rdma tool inside the guests
	# rdma-core: the provider builds against libibverbs-dev; the guests run
	# its unmodified tools (ibverbs-utils, perftest, rdmacm-utils) and
	# Debian's rxe provider (ibverbs-providers) as a soft-RoCE reference
	libibverbs-dev
	librdmacm-dev
	ibverbs-utils
	ibverbs-providers
	perftest
	rdmacm-utils
	# Software users run over the NIC (tests/vm/scripts/ucx_mpi.sh,
	# nvmeof.sh): UCX with its verbs transports, Open MPI over UCX, a small
	# ssh server and client for mpirun's remote ranks, and nvme-cli
	ucx-utils
	libucx0
	openmpi-bin
	libopenmpi-dev
	dropbear-bin
	openssh-client
	nvme-cli
	# libfabric 1.17's fi_pingpong and fi_info (verbs;ofi_rxm over the NIC,
	# tests/vm/scripts/verbs_gaps.sh); its providers are in libfabric1
	libfabric-bin
	# fio's rdma ioengine (tests/vm/scripts/fio_rdma.sh); the kernel NFS
	# server's and client's tools for NFS over RDMA (nfs_rdma.sh:
	# exportfs, rpc.mountd, mount.nfs; nfs-common comes with the server)
	fio
	nfs-kernel-server
	# The test nodes' files as read-only squashfs images on virtio disks
	# (tests/vm/build-initramfs.sh --image)
	squashfs-tools
	# rhinet.ko tooling: scripts/checkpatch.sh (checkpatch.pl from the
	# linux-source package, fetched by the script itself) and the
	# kernel_dkms_build test / scripts/dkms-install.sh
	perl
	dkms
	# The VM tests' debug kernel (tests/vm/debug-kernel.sh): Debian's kernel
	# source, what its build needs, and ccache for rebuilds under a new key
	linux-source-6.1
	bc
	bison
	flex
	libelf-dev
	libssl-dev
	ccache
	# The engine firmware's freestanding cross build for the RISC-V soft
	# core (scripts/firmware-rv32.sh, the firmware_rv32 test): bare-metal
	# gcc and binutils, and picolibc as the small C library
	gcc-riscv64-unknown-elf
	binutils-riscv64-unknown-elf
	picolibc-riscv64-unknown-elf
	# The soft core's link firmware runs in qemu-system-riscv32 beside the
	# QEMU device (tests/softcore_link, Documentation/hardware/soft-core.md)
	qemu-system-misc
	# Elaborates the register map's SystemVerilog package (regmap_sv_lint)
	verilator
	# The driver's self-tests in the guests (ethtool -t, vm_selftest)
	ethtool
)

is_installed() {
	local status
	status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[[ "$status" == "install ok installed" ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
	if ! is_installed "$pkg"; then
		missing+=("$pkg")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "setup-deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi

echo "setup-deps: installing ${missing[*]}"

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "setup-deps: not root and no sudo; install as root: ${missing[*]}" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y "${missing[@]}"

# Confirm: fail loudly rather than leave a half-set-up machine behind.
for pkg in "${missing[@]}"; do
	if ! is_installed "$pkg"; then
		echo "setup-deps: $pkg did not install" >&2
		exit 1
	fi
done
echo "setup-deps: done"
