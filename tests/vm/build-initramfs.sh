#!/usr/bin/env bash
# Builds the shared part of every test node's initramfs (an uncompressed
# newc cpio: the kernel unpacks it faster than it decompresses under TCG):
# busybox, /init, the kernel modules asked for with their dependencies, and
# programs with the shared libraries they need.
#   build-initramfs.sh OUT.cpio [--module NAME]... [--bin FILE]...
#                      [--tool FILE[:DEST]]... [--file SRC:DEST]...
#                      [--link TARGET:DEST]... [--tree DIR]...
#                      [--kernel ROOT:KVER] [--overlay]
#   --bin FILE        FILE into /opt/rhinet/bin, with the libraries ldd names
#   --tool FILE       FILE at its own path (DEST if given), with the libraries
#                     ldd names: installed programs such as /usr/bin/ibv_devinfo,
#                     and shared objects that are dlopened (libibverbs providers)
#   --file SRC:DEST   SRC copied to DEST as it is
#   --link TARGET:DEST  DEST a symbolic link to TARGET
#   --tree DIR        directory DIR at its own path, as it is (plugins that
#                     are dlopened, their data files), with the libraries
#                     ldd names for the shared objects in it
#   --kernel ROOT:KVER  take the modules of kernel KVER from
#                     ROOT/lib/modules/KVER (the debug kernel's
#                     modules_install root); default: Debian's installed
#                     kernel, as tests/vm/kernel.sh names it, from /
#   --overlay         no busybox, /init or skeleton: a cpio to append to a
#                     full one (the kernel unpacks both, in order), or with
#                     OUT named *.sqfs an image beside the root's
#   --image ROOT.sqfs the files go into ROOT.sqfs, a squashfs image that the
#                     launcher attaches as a read-only virtio disk; OUT keeps
#                     only /init, busybox and the modules that reach the disk,
#                     and /init links the image's files into its root. The
#                     guest then reads only the files it uses: a debug kernel
#                     under TCG unpacks a cpio at about 9 MB/s.
# A test's own script goes into a second, tiny cpio appended by the launcher.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$1
shift
KVER="" KROOT="" overlay=0 image=""
modules=() bins=() tools=() files=() links=() trees=()
while (($#)); do
	case $1 in
	--module) modules+=("$2"); shift 2 ;;
	--bin) bins+=("$2"); shift 2 ;;
	--tool) tools+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--link) links+=("$2"); shift 2 ;;
	--tree) trees+=("$2"); shift 2 ;;
	--overlay) overlay=1; shift ;;
	--image) image=$2; shift 2 ;;
	--kernel) KROOT=${2%%:*} KVER=${2#*:}; shift 2 ;;
	*) echo "build-initramfs: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $KVER ]] || KVER=$(bash "$HERE/kernel.sh" version)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# The guest's / (a mktemp directory is 0700): other users than root run
# there too.
chmod 0755 "$root"
if ((!overlay)); then
	mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,run,test,opt/rhinet/bin}
	cp /bin/busybox "$root/bin/busybox"
	install -m 0755 "$HERE/guest/init.sh" "$root/init"
fi

# Programs, and the libraries ldd names for them (none for static ones): one
# ldd for all of them (each library once; a header line "FILE:" is no file).
for b in "${bins[@]}"; do
	mkdir -p "$root/opt/rhinet/bin"
	install -m 0755 "$b" "$root/opt/rhinet/bin/"
done
for t in "${tools[@]}"; do
	mkdir -p "$root$(dirname "${t#*:}")"
	cp -L "${t%%:*}" "$root${t#*:}"
done
linked=("${bins[@]}")
for t in "${tools[@]}"; do linked+=("${t%%:*}"); done
for d in "${trees[@]}"; do
	mkdir -p "$root$(dirname "$d")"
	cp -a "$d" "$root$d"
	while IFS= read -r -d '' so; do linked+=("$so"); done \
		< <(find "$d" -type f -name '*.so*' -print0)
done
if ((${#linked[@]})); then
	{ ldd "${linked[@]}" 2>/dev/null | grep -o '/[^ ]*' || true; } | sort -u |
		while read -r lib; do
			[[ -f $lib ]] || continue
			# The file under its own name, the name ldd gave as a link
			# to it: librhinet tells libibverbs' release by its file.
			real=$(readlink -f "$lib")
			mkdir -p "$root$(dirname "$lib")" "$root$(dirname "$real")"
			cp "$real" "$root$real"
			[[ $real == "$lib" ]] || ln -sfn "$real" "$root$lib"
		done
fi

for f in "${files[@]}"; do
	mkdir -p "$root$(dirname "${f#*:}")"
	cp "${f%%:*}" "$root${f#*:}"
done

for l in "${links[@]}"; do
	mkdir -p "$root$(dirname "${l#*:}")"
	ln -sfn "${l%%:*}" "$root${l#*:}"
done

# Kernel modules with their dependencies, from the installed kernel (or the
# one --kernel names).
if ((${#modules[@]})); then
	moddir=/lib/modules/$KVER
	declare -A seen=()
	mi=(modinfo -k "$KVER")
	[[ -n $KROOT ]] && mi+=(-b "$KROOT")
	add_module() {
		local path dep
		path=$("${mi[@]}" -n "$1") || exit 1
		path=${path#"$KROOT"} # its path in the guest
		[[ -n ${seen[$path]:-} ]] && return
		seen[$path]=1
		for dep in $("${mi[@]}" -F depends "$1" | tr ',' ' '); do
			add_module "$dep"
		done
		mkdir -p "$root$(dirname "$path")"
		cp "$KROOT$path" "$root$path"
	}
	for m in "${modules[@]}"; do add_module "$m"; done
	cp "$KROOT$moddir"/modules.{order,builtin,builtin.modinfo} "$root$moddir/" 2>/dev/null || true
	depmod -b "$root" "$KVER"
fi

# A squashfs image of the whole tree, uncompressed: the guest's reads are
# then plain copies, cheaper under TCG than inflating.
make_image() { # DIR IMAGE
	mksquashfs "$1" "$2.tmp" -noappend -all-root -no-xattrs \
		-noI -noId -noD -noF -noX -quiet >/dev/null
	mv "$2.tmp" "$2"
	echo "build-initramfs: $2 ($(du -h "$2" | cut -f1))" >&2
}
if [[ $OUT == *.sqfs ]]; then
	((overlay)) || { echo "build-initramfs: an image alone is an --overlay" >&2; exit 2; }
	make_image "$root" "$OUT"
	exit 0
fi
if [[ -n $image ]]; then
	make_image "$root" "$image"
	# What /init needs before the image is mounted: itself, busybox, and
	# for a kernel that has them as modules, virtio's PCI transport, its
	# block driver and squashfs, in load order (/stage1/order).
	stage=$(mktemp -d)
	chmod 0755 "$stage"
	mkdir -p "$stage"/{bin,sbin,proc,sys,dev,tmp,run,test,stage1}
	cp "$root/bin/busybox" "$stage/bin/busybox"
	cp "$root/init" "$stage/init"
	dirarg=()
	[[ -n $KROOT ]] && dirarg=(-d "$KROOT")
	: >"$stage/stage1/order"
	for ko in $(modprobe -S "$KVER" "${dirarg[@]}" --show-depends -a \
		virtio_pci virtio_blk squashfs | awk '$1 == "insmod" { print $2 }'); do
		name=$(basename "$ko")
		grep -qxF "$name" "$stage/stage1/order" && continue
		cp "$ko" "$stage/stage1/$name"
		echo "$name" >>"$stage/stage1/order"
	done
	rm -rf "$root"
	root=$stage
fi
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "build-initramfs: $OUT ($(du -h "$OUT" | cut -f1))" >&2
