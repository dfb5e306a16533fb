#!/usr/bin/env bash
# Builds qemu-system-x86_64 with the RHiNET-NG devices (the NIC, rhinet, and
# the accelerator stand-in, xpu) from Debian's QEMU 7.2 source package and
# prints the path of the binary on stdout.
#
# The QEMU tree lives outside the repository, in
#   $RHINET_CACHE_DIR (default ~/.cache/rhinet)/qemu-<key>/
# where <key> hashes everything that shapes the configured tree: the source
# package version, the configure flags, the device list, the Kconfig entry and
# TREE_RECIPE. A new key
# means a new cold build (about 10 minutes on 2 cores); the same key reuses the
# tree. Our few changes to QEMU itself are patches (qemu_device/patches, see
# the README there), applied to the tree on every run like our sources. Our
# device and engine sources are copied in on every run, only when
# their content changed, so ninja rebuilds just what we touched (seconds).
# The binary printed is a copy under qemu-<key>/bin/, keyed by those
# sources, so checkouts sharing the tree never run each other's build.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RHINET_CACHE_DIR:-$HOME/.cache/rhinet}
QEMU_PKG_VERSION_PREFIX="1:7.2" # the QEMU our device glue is written for
log() { echo "build-qemu: $*" >&2; }

# --- Debian source package -------------------------------------------------

# The machine's apt configuration names the archive; a deb-src twin of the
# main entry is added if no source entry exists yet.
ensure_deb_src() {
	local offered
	offered=$(apt-cache showsrc qemu 2>/dev/null || true)
	if grep -q '^Version:' <<<"$offered"; then
		return
	fi
	local main=/etc/apt/sources.list.d/debian.sources
	local twin=/etc/apt/sources.list.d/rhinet-deb-src.sources
	if [[ -f $main ]]; then
		sed -e 's/^Types:.*/Types: deb-src/' "$main" >"$twin"
	elif [[ -f /etc/apt/sources.list ]]; then
		grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
			>/etc/apt/sources.list.d/rhinet-deb-src.list
	else
		log "no apt sources found to derive a deb-src entry from"
		exit 1
	fi
	log "added deb-src entries; refreshing package lists"
	apt-get update -qq
}

source_version() {
	apt-cache showsrc qemu | awk '/^Version:/ {print $2}' | sort -V | tail -1
}

ensure_deb_src
VERSION=$(source_version)
if [[ $VERSION != "$QEMU_PKG_VERSION_PREFIX"* ]]; then
	log "Debian offers qemu $VERSION; the device is written for ${QEMU_PKG_VERSION_PREFIX}.x"
	exit 1
fi

# How the tree is unpacked, patched and configured. Bump TREE_RECIPE when the
# unpack/patch steps below change; the configure flags are hashed as they are.
TREE_RECIPE=1
CONFIGURE_ARGS=(
	--meson=/usr/bin/meson
	--target-list=x86_64-softmmu
	--without-default-features
	--without-default-devices
	--with-devices-x86_64=rhinet
	--enable-fdt=system
	--disable-docs --disable-tools --disable-guest-agent
	--disable-werror
)
KEY=$( {
	echo "$VERSION $TREE_RECIPE ${CONFIGURE_ARGS[*]}"
	cat "$REPO/qemu_device/rhinet.mak" "$REPO/qemu_device/Kconfig"
} | sha256sum | cut -c1-16)
WORK="$CACHE/qemu-$KEY"
if [[ ${1:-} == --print-dir ]]; then
	echo "$WORK"
	exit 0
fi
SRC="$WORK/src"
BUILD="$SRC/build"
mkdir -p "$WORK"

# The tree is shared by every checkout (worktrees of one machine), so its
# binary is whatever the last build put there. Each build is therefore
# kept as a snapshot keyed by the sources it was built from; a checkout
# gets the snapshot of its own sources, and another checkout's build
# cannot change the QEMU that this one's VM tests run.
source_key() {
	(cd "$REPO" && find qemu_device firmware include/hw/rhinet include/hw/xpu \
		-type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \
		-o -name meson.build -o -name CMakeLists.txt -o -name '*.patch' \) \
		-print |
		LC_ALL=C sort | xargs sha256sum
	sha256sum <"${BASH_SOURCE[0]}") | sha256sum | cut -c1-16
}
SNAPSHOT="$WORK/bin/$(source_key)/qemu-system-x86_64"
if [[ -x $SNAPSHOT ]]; then
	touch "$SNAPSHOT" # newest use, for the pruning below
	echo "$SNAPSHOT"
	exit 0
fi

# One tree fills or updates the entry at a time (two worktrees running
# `make build` at once share it): the second waits here, then finds the
# tree unpacked and configured, copies its own sources in and lets ninja
# rebuild what differs. Held until the binary is built; the lock file sits
# beside the entry, as the debug kernel's does (tests/vm/debug-kernel.sh).
exec 9>"$WORK.lock"
if ! flock -n 9; then
	log "waiting for another build of $WORK"
	flock 9
	# The other build may have been of these very sources.
	if [[ -x $SNAPSHOT ]]; then
		echo "$SNAPSHOT"
		exit 0
	fi
fi

if [[ ! -f $SRC/.rhinet-unpacked ]]; then
	log "fetching and unpacking qemu $VERSION into $WORK"
	rm -rf "$SRC" "$WORK/dl"
	mkdir -p "$WORK/dl"
	(cd "$WORK/dl" && apt-get source --download-only -qq "qemu=$VERSION" >&2)
	dpkg-source --no-check -x "$WORK"/dl/qemu_*.dsc "$SRC" >&2
	rm -rf "$WORK/dl"
	# Register the device once, before the first configure: adding a Kconfig
	# symbol later regenerates a header nearly every file includes.
	cat "$REPO/qemu_device/Kconfig" >>"$SRC/hw/net/Kconfig"
	echo "subdir('rhinet')" >>"$SRC/hw/net/meson.build"
	cp "$REPO/qemu_device/rhinet.mak" \
		"$SRC/configs/devices/x86_64-softmmu/rhinet.mak"
	touch "$SRC/.rhinet-unpacked"
fi

# --- Our sources: copied only when changed, so timestamps stay stable -------

sync_file() { # src dst
	if ! cmp -s "$1" "$2"; then
		mkdir -p "$(dirname "$2")"
		cp "$1" "$2"
	fi
}
sync_tree() { # src_dir dst_dir; also removes files gone from src
	local src=$1 dst=$2 f
	(cd "$src" && find . -type f \( -name '*.c' -o -name '*.h' \
		-o -name '*.cpp' \) -print) |
		while read -r f; do sync_file "$src/$f" "$dst/$f"; done
	if [[ -d $dst ]]; then
		(cd "$dst" && find . -type f ! -name meson.build -print) |
			while read -r f; do
				[[ -f "$src/$f" ]] || rm -f "$dst/$f"
		done
	fi
}
# --- Our changes to QEMU itself (qemu_device/patches/*.patch) ---------------
# Every file a patch names is made again from its pristine copy (kept under
# .rhinet-pristine the first time a patch names it) with all the patches
# applied in name order, and copied over only when that changes it: ninja
# then recompiles just those files. A file no patch names any more gets its
# pristine copy back.
PRISTINE="$SRC/.rhinet-pristine"
apply_patches() {
	local tmp p f
	tmp=$(mktemp -d)
	for p in "$REPO"/qemu_device/patches/*.patch; do
		[[ -e $p ]] || continue
		for f in $(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$p"); do
			if [[ ! -f $PRISTINE/$f ]]; then
				mkdir -p "$(dirname "$PRISTINE/$f")"
				cp "$SRC/$f" "$PRISTINE/$f"
			fi
			if [[ ! -f $tmp/$f ]]; then
				mkdir -p "$(dirname "$tmp/$f")"
				cp "$PRISTINE/$f" "$tmp/$f"
			fi
		done
		if ! patch -s -p1 -d "$tmp" <"$p" >&2; then
			log "$(basename "$p") does not apply to qemu $VERSION"
			exit 1
		fi
	done
	if [[ -d $PRISTINE ]]; then
		(cd "$PRISTINE" && find . -type f -print) | while read -r f; do
			if [[ -f $tmp/$f ]]; then
				sync_file "$tmp/$f" "$SRC/$f"
			else
				sync_file "$PRISTINE/$f" "$SRC/$f"
			fi
		done
	fi
	rm -rf "$tmp"
}
apply_patches

DEV="$SRC/hw/net/rhinet"
mkdir -p "$DEV"
sync_file "$REPO/qemu_device/rhinet.c" "$DEV/rhinet.c"
# The xpu (qemu_device/xpu.c), built with the NIC under its Kconfig symbol.
sync_file "$REPO/qemu_device/xpu.c" "$DEV/xpu.c"
sync_file "$REPO/qemu_device/xpu_bus.h" "$DEV/xpu_bus.h"
sync_file "$REPO/qemu_device/meson.build" "$DEV/meson.build"
sync_tree "$REPO/qemu_device/softcore" "$DEV/softcore"
sync_tree "$REPO/firmware" "$DEV/firmware"
sync_tree "$REPO/include/hw/rhinet" "$DEV/contract/rhinet"
sync_tree "$REPO/include/hw/xpu" "$DEV/contract/xpu"
# The engine's source list, for qemu_device/meson.build. Rewritten only when
# the list changes (a change makes ninja re-run meson). A family for test
# builds only (a folder under ops/ with a CMakeLists.txt, as in
# firmware/CMakeLists.txt) is not part of the NIC.
in_test_family() { # path below firmware/
	local dir
	[[ $1 == ops/*/* ]] || return 1
	dir=${1#ops/}
	[[ -f "$REPO/firmware/ops/${dir%%/*}/CMakeLists.txt" ]]
}
fw_list=$(cd "$DEV/firmware" && find . -name '*.cpp' | sed 's|^\./||' | sort |
	while read -r f; do in_test_family "$f" || echo "$f"; done |
	sed "s|.*|  '&',|")
printf "rhinet_fw_sources = files(\n%s\n)\n" "$fw_list" >"$WORK/fw-meson.build"
sync_file "$WORK/fw-meson.build" "$DEV/firmware/meson.build"

# --- Configure once, then build only the system emulator -------------------

if [[ ! -f $BUILD/build.ninja ]]; then
	log "configuring (minimal x86_64 system emulator)"
	mkdir -p "$BUILD"
	(cd "$BUILD" && PATH=/usr/bin:$PATH ../configure "${CONFIGURE_ARGS[@]}" >&2)
fi

JOBS=${RHINET_QEMU_JOBS:-$(nproc)}
start=$(date +%s)
log "ninja qemu-system-x86_64 (-j$JOBS)"
ninja -C "$BUILD" -j"$JOBS" qemu-system-x86_64 >&2
log "built in $(($(date +%s) - start)) s"
snap_dir=$(dirname "$SNAPSHOT")
rm -rf "$snap_dir.tmp"
mkdir -p "$snap_dir.tmp"
cp "$BUILD/qemu-system-x86_64" "$snap_dir.tmp/"
rm -rf "$snap_dir"
mv "$snap_dir.tmp" "$snap_dir"
# Keep the eight snapshots used last; a running QEMU keeps its own copy
# open, so pruning never pulls a binary from under a test.
ls -1dt "$WORK"/bin/*/ 2>/dev/null | tail -n +9 | xargs -r rm -rf
echo "$SNAPSHOT"
