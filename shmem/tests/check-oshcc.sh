#!/bin/bash
# The OpenSHMEM wrappers as a user meets them, with no NIC: install this
# build tree into a private prefix; every test program compiles unchanged
# with that prefix's oshcc (C) and oshc++ (as C++), with no environment,
# and takes librhinet_shmem from the prefix by RUNPATH; the prefix still
# works after it is moved. A PE started without oshrun, or with a bad
# SHMEM_SYMMETRIC_SIZE or SHMEM_WAIT_SPIN_US, ends with status 1 and a message naming the
# routine and the problem; oshrun passes SHMEM_* on to rhinet-run.
#
#   check-oshcc.sh BUILD_DIR PROGRAMS_DIR
set -u
BUILD=$(cd "$1" && pwd)
PROGS=$(cd "$2" && pwd)
unset LD_LIBRARY_PATH CPATH LIBRARY_PATH C_INCLUDE_PATH
export LC_ALL=C
T=$(mktemp -d /tmp/rhinet-oshcc.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

if ! cmake --install "$BUILD" --prefix "$T/p" >"$T/install.log" 2>&1; then
	cat "$T/install.log"
	echo "FAIL: cmake --install failed"
	exit 1
fi
for f in bin/oshcc bin/oshc++ bin/oshcxx bin/oshrun include/shmem.h \
	include/shmemx.h lib/librhinet_shmem.so; do
	[[ -e $T/p/$f ]] || fail "not installed: $f"
done

# compile_all PREFIX: every program with oshcc, and as C++ with oshc++.
compile_all() {
	local p=$1 src name
	for src in "$PROGS"/*.c; do
		name=$(basename "$src" .c)
		if ! "$p/bin/oshcc" -std=c11 -Wall -Wextra -Werror -O1 "$src" \
			-o "$T/$name" 2>"$T/$name.err"; then
			fail "oshcc $name.c:"
			cat "$T/$name.err"
		fi
	done
	if ! "$p/bin/oshc++" -std=c++20 -Wall -Wextra -Werror "$T/cxx.cc" \
		-o "$T/cxx" 2>"$T/cxx.err"; then
		fail "oshc++ cxx.cc:"
		cat "$T/cxx.err"
	fi
}
cat >"$T/cxx.cc" <<'CXX'
#include <shmem.h>
#include <shmemx.h>
int main() {
  shmem_init();
  auto* x = static_cast<long*>(shmem_malloc(sizeof(long)));
  shmem_long_p(x, 1, shmem_my_pe());
  shmem_quiet();
  shmem_free(x);
  const int rc = shmemx_heap_in_use() == 0 ? 0 : 1;
  shmem_finalize();
  return rc;
}
CXX
compile_all "$T/p"
n=$(find "$PROGS" -name "*.c" | wc -l)
ok "$n programs compiled with oshcc"

# Compile only (-c) adds no link flags; --showme prints the command.
"$T/p/bin/oshcc" -c "$PROGS/hello.c" -o "$T/hello.o" || fail "oshcc -c"
show=$("$T/p/bin/oshcc" --showme x.c)
[[ $show == "cc -I$T/p/include x.c -L$T/p/lib -Wl,-rpath,$T/p/lib "* &&
	$show == *-lrhinet_shmem ]] || fail "oshcc --showme: $show"
[[ $("$T/p/bin/oshcc" --showme -c x.c) == "cc -I$T/p/include -c x.c" ]] ||
	fail "oshcc --showme -c: $("$T/p/bin/oshcc" --showme -c x.c)"
[[ $(OSHCC_CC=gcc "$T/p/bin/oshcc" --showme -c x.c) == gcc* ]] ||
	fail "OSHCC_CC does not choose the compiler"

# The loader takes the library from the prefix, with no environment.
where=$(env -i ldd "$T/hello" | awk '$1 == "librhinet_shmem.so.0" { print $3 }')
[[ $where == "$T/p/lib/librhinet_shmem.so.0" ]] ||
	fail "librhinet_shmem.so.0 resolves to '$where', not the prefix's"
env -i ldd "$T/hello" | grep -q 'not found' &&
	fail "hello has unresolved libraries: $(env -i ldd "$T/hello")"
readelf -d "$T/hello" | grep -q "RUNPATH.*$T/p/lib" ||
	fail "hello has no RUNPATH to the prefix"
ok "hello links librhinet_shmem from the prefix by RUNPATH"

# Without a launcher: status 1, the routine and the missing variable named.
out=$(env -i "$T/hello" 2>&1)
rc=$?
[[ $rc == 1 && $out == "shmem: shmem_init_thread: cannot join the job (is it started by oshrun?): RHINET_"*" is not set"* ]] ||
	fail "started without oshrun: status $rc: $out"
ok "without oshrun: $out"
out=$(env -i SHMEM_SYMMETRIC_SIZE=12Q "$T/put_get" 2>&1)
rc=$?
[[ $rc == 1 && $out == *"shmem_init: SHMEM_SYMMETRIC_SIZE: '12Q' is not a size"* ]] ||
	fail "a bad SHMEM_SYMMETRIC_SIZE: status $rc: $out"
ok "bad size: $out"
out=$(env -i SHMEM_WAIT_SPIN_US=5ms "$T/put_get" 2>&1)
rc=$?
[[ $rc == 1 && $out == *"shmem_init: SHMEM_WAIT_SPIN_US: '5ms' is not a number of microseconds (0 to 1000000 microseconds, or never)"* ]] ||
	fail "a bad SHMEM_WAIT_SPIN_US: status $rc: $out"
ok "bad wait spin: $out"

# oshrun: rhinet-run beside it, its options kept; a PE that fails makes
# oshrun fail with its status.
out=$(SHMEM_SYMMETRIC_SIZE=1M "$T/p/bin/oshrun" -v --grant-cmd true -n 1 \
	--timeout 60 "$T/hello" 2>&1)
rc=$?
[[ $rc == 1 && $out == *"shmem_init_thread: cannot join the job"* ]] ||
	fail "oshrun -n 1 without a NIC: status $rc: $out"
ok "oshrun ran the PE, which found no NIC (status $rc)"

# Moved, the prefix still compiles and links against itself.
mv "$T/p" "$T/moved"
"$T/moved/bin/oshcc" "$PROGS/hello.c" -o "$T/hello_moved" ||
	fail "oshcc from the moved prefix"
where=$(env -i ldd "$T/hello_moved" | awk '$1 == "librhinet_shmem.so.0" { print $3 }')
[[ $where == "$T/moved/lib/librhinet_shmem.so.0" ]] ||
	fail "after the move: librhinet_shmem.so.0 from '$where'"

if ((failures)); then
	echo "check-oshcc: $failures failures"
	exit 1
fi
echo "check-oshcc: PASS"
