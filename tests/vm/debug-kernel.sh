#!/usr/bin/env bash
# Builds the debug kernel of the VM tests from Debian's linux-source-6.1 (the
# series of the guests' own kernel) and prints its cache directory:
#   DIR/bzImage        the kernel QEMU boots (a KASAN kernel triple-faults on
#                      the PVH entry of the uncompressed vmlinux)
#   DIR/kernelrelease  its `uname -r`
#   DIR/modules/       modules_install's root: DIR/modules/lib/modules/REL/
#   DIR/tree/          the configured source tree with Module.symvers, the
#                      KDIR for out-of-tree modules (rhinet.ko)
# Configuration: allnoconfig plus tests/vm/debug-kernel.config (guest
# basics, the RDMA modules, KASAN, lockdep, kmemleak, UBSAN); the build fails
# when `make olddefconfig` drops or changes a line of that fragment.
#
# DIR is ${RHINET_CACHE_DIR:-~/.cache/rhinet}/debug-kernel-<key>, <key> a hash
# of the inputs: the source package's version and tarball, the fragment,
# this script, the compiler and linker. The tree is built under DIR.tmp and
# renamed when complete, so an interrupted build leaves no half cache; a
# lock keeps two builders of one key apart. Cold: about 10 minutes on 2
# cores; ccache (in the cache directory too) makes a new key's build take
# about 3.5. The cache holds about 1.7 GB per key (mostly the source tree).
#   debug-kernel.sh [dir]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RHINET_CACHE_DIR:-$HOME/.cache/rhinet}
PKG=linux-source-6.1
TARBALL=/usr/src/$PKG.tar.xz
FRAGMENT=$HERE/debug-kernel.config
log() { echo "debug-kernel: $*" >&2; }

[[ ${1:-dir} == dir ]] || { echo "usage: debug-kernel.sh [dir]" >&2; exit 2; }
[[ -r $TARBALL ]] || { log "no $TARBALL: install $PKG (make deps)"; exit 1; }

key=$({
	dpkg-query -W -f='${Version}\n' "$PKG"
	sha256sum <"$TARBALL"
	cat "$FRAGMENT" "${BASH_SOURCE[0]}"
	gcc --version | head -1
	ld --version | head -1
} | sha256sum | cut -c1-16)
out="$CACHE/debug-kernel-$key"

# Every line of the fragment as olddefconfig must have left it.
check_config() {
	local config=$1 line name lost=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) ;;
		"# CONFIG_"*" is not set") ;;
		*) continue ;;
		esac
		grep -qxF "$line" "$config" && continue
		name=${line#\# }
		name=${name%%[= ]*}
		# "is not set" also holds for a symbol olddefconfig left out.
		[[ $line == "# "* ]] && ! grep -q "^$name=" "$config" && continue
		log "fragment line '$line' did not survive: $(grep -E "^$name=|^# $name is not set" "$config" || echo absent)"
		lost=1
	done <"$FRAGMENT"
	((lost == 0)) || { log "fix $FRAGMENT (a dependency is missing)"; exit 1; }
}

build() {
	local tmp=$out.tmp tree=$out.tmp/tree start=$SECONDS
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building $out (about 10 minutes cold, 3.5 with ccache warm)"
	tar -xJf "$TARBALL" -C "$tmp"
	mv "$tmp/$PKG" "$tree"
	# kmemleak reports no object younger than MSECS_MIN_AGE, so each test
	# waited that long after its last process before the final scan: 5 s
	# of every debug-kernel test. When a test's processes have exited its
	# objects are linked or leaked within a second.
	sed -i 's/^#define MSECS_MIN_AGE\t\t5000\t/#define MSECS_MIN_AGE\t\t1000\t/' \
		"$tree/mm/kmemleak.c"
	grep -q '^#define MSECS_MIN_AGE.*1000' "$tree/mm/kmemleak.c" ||
		{ log "mm/kmemleak.c: MSECS_MIN_AGE not found to patch"; exit 1; }
	# Fixed build stamps: identical inputs compile to identical objects,
	# which ccache can then reuse under another key.
	local mk=(make -C "$tree" -s -j"$(nproc)" KBUILD_BUILD_TIMESTAMP="2000-01-01 00:00 UTC"
		KBUILD_BUILD_USER=rhinet KBUILD_BUILD_HOST=rhinet)
	if command -v ccache >/dev/null; then
		export CCACHE_DIR="$CACHE/ccache-debug-kernel"
		export CCACHE_MAXSIZE=1G
		mk+=(CC="ccache gcc")
	fi
	"${mk[@]}" KCONFIG_ALLCONFIG="$FRAGMENT" allnoconfig
	"${mk[@]}" olddefconfig
	check_config "$tree/.config"
	"${mk[@]}" bzImage modules
	"${mk[@]}" INSTALL_MOD_PATH="$tmp/modules" modules_install
	"${mk[@]}" kernelrelease >"$tmp/kernelrelease"
	# Links to the tree's path of the moment (the caller passes the tree).
	rm -f "$tmp"/modules/lib/modules/*/{build,source}
	cp "$tree/arch/x86/boot/bzImage" "$tmp/bzImage"
	# Out-of-tree modules need the configured tree, its host programs
	# (scripts/, tools/objtool) and Module.symvers, not the kernel's objects:
	# dropping them keeps the cache near 1.4 GB instead of 2.
	find "$tree" -path "$tree/scripts" -prune -o -path "$tree/tools" -prune -o \
		\( -name '*.o' -o -name '*.ko' -o -name vmlinux -o -name '*.a' \) \
		-type f -print0 | xargs -0 rm -f
	mv "$tmp" "$out"
	log "built $(cat "$out/kernelrelease") in $((SECONDS - start)) s"
}

if [[ ! -s $out/bzImage ]]; then
	mkdir -p "$CACHE"
	exec 9>"$out.lock"
	flock 9
	[[ -s $out/bzImage ]] || build
	exec 9>&-
fi
echo "$out"
