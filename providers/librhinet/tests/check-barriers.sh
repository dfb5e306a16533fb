#!/bin/sh
# The provider's barriers emit, per architecture, the instructions
# rdma-core's providers use: x86 lfence from the device (a compiler barrier
# to it), arm64 dsb st / dsb ld, POWER sync / lwsync. Compiled with clang
# for each target (barriers.h needs no system headers).
#   check-barriers.sh CLANG BARRIERS_H
set -eu
clang=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.cc" <<EOT
#include "$header"
void to(volatile int* p) { p[0] = 1; rhinet::to_device_barrier(); p[1] = 2; }
int from(volatile int* p) { int a = p[0]; rhinet::from_device_barrier(); return a + p[1]; }
EOT
check() { # TARGET FUNCTION INSTRUCTION
	"$clang" --target="$1" -std=c++20 -O2 -S -o "$tmp/$1.s" "$tmp/t.cc"
	# The function's body, up to its end.
	body=$(sed -n "/^_Z[0-9]*$2P/,/\.cfi_endproc\|^\.Lfunc_end/p" "$tmp/$1.s")
	case $body in
	*"$3"*) echo "$1 $2: $3" ;;
	*)
		echo "check-barriers: FAIL: $1 $2 has no $3"
		exit 1
		;;
	esac
}
check x86_64-linux-gnu from lfence
check aarch64-linux-gnu to "dsb	st"
check aarch64-linux-gnu from "dsb	ld"
check powerpc64le-linux-gnu to sync
check powerpc64le-linux-gnu from lwsync
echo "check-barriers: PASS"
