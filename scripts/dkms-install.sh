#!/usr/bin/env bash
# Installs rhinet.ko through DKMS, so it is rebuilt for every new kernel
# (AUTOINSTALL):
#   dkms-install.sh [-k KVER]   stage /usr/src/rhinet-<ver>/, then dkms add,
#                               build and install (for KVER; default: what
#                               dkms defaults to, the running kernel)
#   dkms-install.sh --stage DIR only write the DKMS source tree DIR/rhinet-<ver>/
#                               (what goes to /usr/src; used by the
#                               kernel_dkms_build test) and print its path
#   dkms-install.sh --remove    undo: dkms remove --all, rm /usr/src/rhinet-<ver>
#   dkms-install.sh --version   print <ver>
# <ver> is PACKAGE_VERSION in kernel/rhinet/dkms.conf, its one place.
# Idempotent: an earlier registration of the same version (and its
# /usr/src/rhinet-<ver>/) is removed first, so a re-run installs the
# current sources. Needs root (or sudo) for the system install, and dkms
# (make deps).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$REPO/kernel/rhinet
NAME=rhinet
VERSION=$(sed -n -E 's/^PACKAGE_VERSION="?([^"]*)"?[[:space:]]*$/\1/p' "$SRC/dkms.conf")
[[ -n $VERSION ]] || { echo "dkms-install.sh: no PACKAGE_VERSION in $SRC/dkms.conf" >&2; exit 1; }

# stage DIR: DIR/rhinet-<ver>/ = dkms.conf, Kbuild, *.c, *.h, include/uapi/,
# include/hw/.
stage() {
	local dest=$1/$NAME-$VERSION
	rm -rf "$dest"
	mkdir -p "$dest/include"
	cp "$SRC/dkms.conf" "$SRC/Kbuild" "$SRC"/*.c "$SRC"/*.h "$dest/"
	cp -r "$REPO/include/uapi" "$dest/include/uapi"
	cp -r "$REPO/include/hw" "$dest/include/hw"
	echo "$dest"
}

case ${1:-} in
--version)
	echo "$VERSION"
	exit 0
	;;
--stage)
	[[ -n ${2:-} ]] || { echo "usage: dkms-install.sh --stage DIR" >&2; exit 2; }
	mkdir -p "$2"
	stage "$(cd "$2" && pwd)"
	exit 0
	;;
esac

remove=
kopts=()
while (($#)); do
	case $1 in
	-k)
		[[ -n ${2:-} ]] || { echo "dkms-install.sh: -k needs a kernel version" >&2; exit 2; }
		kopts=(-k "$2")
		shift 2
		;;
	--remove)
		remove=1
		shift
		;;
	*)
		echo "usage: dkms-install.sh [-k KVER] | --remove | --stage DIR | --version" >&2
		exit 2
		;;
	esac
done

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "dkms-install.sh: needs root or sudo" >&2; exit 1; }
	SUDO=(sudo)
fi
command -v dkms >/dev/null || PATH=$PATH:/usr/sbin:/sbin
command -v dkms >/dev/null || { echo "dkms-install.sh: dkms is not installed (make deps)" >&2; exit 1; }

# An earlier registration of this version: remove it from every kernel and
# from the DKMS tree, so add/build/install start from the current sources.
if [[ -n $("${SUDO[@]}" dkms status -m "$NAME" -v "$VERSION" 2>/dev/null) ]]; then
	echo "dkms-install.sh: removing the earlier $NAME/$VERSION registration"
	"${SUDO[@]}" dkms remove -m "$NAME" -v "$VERSION" --all
fi
if [[ -n $remove ]]; then
	"${SUDO[@]}" rm -rf "/usr/src/$NAME-$VERSION"
	echo "dkms-install.sh: $NAME/$VERSION removed"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
staged=$(stage "$tmp")
"${SUDO[@]}" rm -rf "/usr/src/$NAME-$VERSION"
"${SUDO[@]}" cp -r "$staged" "/usr/src/$NAME-$VERSION"

"${SUDO[@]}" dkms add -m "$NAME" -v "$VERSION"
"${SUDO[@]}" dkms build -m "$NAME" -v "$VERSION" "${kopts[@]}"
"${SUDO[@]}" dkms install -m "$NAME" -v "$VERSION" "${kopts[@]}"
"${SUDO[@]}" dkms status -m "$NAME" -v "$VERSION"
