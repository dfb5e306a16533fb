#!/usr/bin/env bash
# OpenSHMEM programs on the NIC as a user builds and runs them: this build
# tree installed into a private prefix, the programs of
# shmem/tests/programs/ (standard API only) compiled on the host with that
# prefix's oshcc, then run with `oshrun -n 4` on emulated nodes
# (scripts/rhinet-cluster; the nodes take librhinet_shmem from the prefix
# through the programs' RUNPATH). Each program checks its results and
# exits nonzero on a mismatch; the misuse cases must end with the status
# and message shmem.md promises. The benchmark prints its figures (not
# judged; it checks its reduction's result). The guest half:
# shmem_guest.sh.
#   shmem.sh BUILD_DIR NODES
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:?usage: shmem.sh BUILD_DIR NODES}" && pwd)
NODES=${2:-2}
work=$(mktemp -d /tmp/vm_shmem.XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$BUILD" --prefix "$work/prefix" >"$work/install.log" 2>&1 || {
	cat "$work/install.log"
	echo "vm_shmem: FAIL: cmake --install"
	exit 1
}
mkdir "$work/shmem"
for src in "$REPO"/shmem/tests/programs/*.c; do
	name=$(basename "$src" .c)
	env -i PATH=/usr/bin:/bin "$work/prefix/bin/oshcc" -std=c11 -O1 -Wall \
		-Werror "$src" -o "$work/shmem/$name" || {
		echo "vm_shmem: FAIL: oshcc $name.c"
		exit 1
	}
done
cp "$work/prefix/bin/oshrun" "$work/prefix/bin/rhinet_shmem_bench" \
	"$HERE/shmem_guest.sh" "$work/shmem/"

out=$("$REPO/scripts/rhinet-cluster" -n "$NODES" --timeout 1500 \
	--out "$work/logs" -c "$work/shmem" -- \
	"sh shmem/shmem_guest.sh $NODES" 2>&1)
rc=$?
echo "$out"
if [[ $rc != 0 ]] || ! grep -q '^shmem_guest: PASS' <<<"$out"; then
	echo "vm_shmem: FAIL (status $rc)"
	for f in "$work"/logs/node*.log; do
		[[ -r $f ]] && { echo "== $f"; tail -n 40 "$f"; }
	done
	exit 1
fi
echo "vm_shmem: PASS"
