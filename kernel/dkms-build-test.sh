#!/usr/bin/env bash
# CTest kernel_dkms_build: proves kernel/rhinet/dkms.conf builds rhinet.ko,
# without touching the system's DKMS state:
#   dkms-build-test.sh KVER KERNEL_SOURCE_DIR WORKDIR
# The DKMS source tree is staged by scripts/dkms-install.sh --stage (exactly
# what it puts in /usr/src), and dkms add + build run with --sourcetree,
# --dkmstree and --installtree all under WORKDIR (in the build tree); the
# signing key dkms would create in /var/lib/dkms is pointed there too, and so
# is TMPDIR. `dkms install` is not run: it calls depmod on the system's
# /lib/modules/KVER whatever --installtree says. Asserts: the built
# rhinet.ko exists and modinfo gives it KVER's vermagic; and /var/lib/dkms,
# /usr/src and /lib/modules/KVER look the same after as before.
set -euo pipefail

(($# == 3)) || { echo "usage: dkms-build-test.sh KVER KERNEL_SOURCE_DIR WORKDIR" >&2; exit 2; }
kver=$1 ksrc=$2 work=$3
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PATH=$PATH:/usr/sbin:/sbin
command -v dkms >/dev/null || { echo "dkms-build-test: no dkms (make deps)" >&2; exit 1; }

version=$(bash "$REPO/scripts/dkms-install.sh" --version)

# What must not change: names, sizes and mtimes under the system's trees.
snapshot() {
	find /var/lib/dkms /usr/src -maxdepth 3 -printf '%p %s %T@\n' 2>/dev/null | sort
	find "/lib/modules/$kver" -printf '%p %s %T@\n' 2>/dev/null | sort
}
before=$(snapshot)

rm -rf "$work"
mkdir -p "$work/source" "$work/dkms" "$work/install" "$work/tmp"
work=$(cd "$work" && pwd)
bash "$REPO/scripts/dkms-install.sh" --stage "$work/source" >/dev/null

trees=(--sourcetree "$work/source" --dkmstree "$work/dkms"
	--installtree "$work/install" --kernelsourcedir "$ksrc")
# dkms reads these from the environment unless /etc/dkms/framework.conf
# sets them; its default is to create the key pair in /var/lib/dkms.
export mok_signing_key=$work/mok.key mok_certificate=$work/mok.pub
export TMPDIR=$work/tmp

start=$SECONDS
dkms add -m rhinet -v "$version" "${trees[@]}"
if ! dkms build -m rhinet -v "$version" -k "$kver" "${trees[@]}"; then
	cat "$work/dkms/rhinet/$version/build/make.log" 2>/dev/null || true
	echo "dkms-build-test: dkms build failed" >&2
	exit 1
fi
echo "dkms-build-test: dkms add + build took $((SECONDS - start)) s"
dkms status -m rhinet -v "$version" "${trees[@]}"

ko=$(find "$work/dkms/rhinet/$version/$kver" -path '*/module/rhinet.ko*' | head -1)
[[ -n $ko && -s $ko ]] || { echo "dkms-build-test: no rhinet.ko under $work/dkms/rhinet/$version/$kver" >&2; exit 1; }
vermagic=$(modinfo -F vermagic "$ko")
echo "dkms-build-test: $ko: vermagic $vermagic"
[[ ${vermagic%% *} == "$kver" ]] || {
	echo "dkms-build-test: vermagic '$vermagic' is not for $kver" >&2
	exit 1
}

after=$(snapshot)
if [[ $before != "$after" ]]; then
	echo "dkms-build-test: the system's DKMS or module trees changed:" >&2
	diff <(echo "$before") <(echo "$after") >&2 || true
	exit 1
fi
echo "dkms-build-test: PASS (/var/lib/dkms, /usr/src, /lib/modules/$kver untouched)"
