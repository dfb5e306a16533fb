#!/bin/sh
# The provider shares structures with libibverbs whose layout changes
# between rdma-core releases, so it registers only with rdma-core 44's
# libibverbs and says why otherwise. Loaded against the system's library it
# stays quiet; against the same library under another release's file name
# (libibverbs.so.1.14.46.0), or a file name that tells no release, it
# refuses with a message naming the problem.
#   check-abi-pin.sh LOADER PROVIDER
set -eu
loader=$1
provider=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
system=$(ldd "$provider" | awk '/libibverbs\.so/ { print $3 }')
real=$(readlink -f "$system")
fail() {
	echo "check-abi-pin: FAIL: $*"
	exit 1
}

out=$("$loader" "$provider" 2>&1) || fail "cannot load $provider: $out"
case $out in *"not registering"*) fail "refused the system's $real: $out" ;; esac
echo "system $real: accepted"

mkdir "$tmp/v46" "$tmp/plain"
cp "$real" "$tmp/v46/libibverbs.so.1.14.46.0"
ln -s libibverbs.so.1.14.46.0 "$tmp/v46/libibverbs.so.1"
out=$(LD_LIBRARY_PATH=$tmp/v46 "$loader" "$provider" 2>&1) || true
case $out in
*"not registering"*"rdma-core 46"* | *"rdma-core 46"*"not registering"*) ;;
*) fail "accepted a libibverbs named for rdma-core 46: $out" ;;
esac
echo "rdma-core 46's name: refused"

cp "$real" "$tmp/plain/libibverbs.so.1"
out=$(LD_LIBRARY_PATH=$tmp/plain "$loader" "$provider" 2>&1) || true
case $out in
*"tells no release"*) ;;
*) fail "accepted a libibverbs whose file names no release: $out" ;;
esac
echo "no release in the name: refused"
echo "check-abi-pin: PASS"
