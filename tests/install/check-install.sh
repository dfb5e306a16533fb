#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The installation as a user meets it (Documentation/userlib/reference.md,
# "Installing"): cmake --install into a private prefix and into a DESTDIR
# staging tree writes nothing outside them; a program built out of tree
# against the installed userlib, with find_package(RhinetUser) and with
# pkg-config, links with no extra flags and finds librhinet_user and
# librhinetdv.so.1 there without LD_LIBRARY_PATH; so do the installed
# programs, also after the prefix has moved.
#
#   check-install.sh BUILD_DIR SOURCE_DIR
#
# As root, the installs run in a private mount namespace where / is
# read-only except the scratch directory and the build tree (which gets
# install_manifest.txt): what a user without root meets. Not run by root,
# the permissions do the same.
set -u
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH DESTDIR LD_RUN_PATH
export LC_ALL=C

T=$(mktemp -d /tmp/rhinet-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# confined CMD...: CMD may write only under $T and $BUILD.
confined() {
	if [[ $(id -u) -ne 0 ]]; then
		"$@"
		return
	fi
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m --propagation private sh -c '
		t=$1 b=$2
		shift 2
		mount --bind "$t" "$t" && mount --bind "$b" "$b" &&
			mount -o remount,bind,ro / || exit 90
		exec "$@"' sh "$T" "$BUILD" "$@"
}

if [[ $(id -u) -eq 0 ]] && ! unshare -m --propagation private true 2>/dev/null; then
	echo "FAIL: root, but no mount namespace (unshare -m) to make / read-only;" \
		"run as a user who cannot write outside the prefix"
	exit 1
fi

# outside_of DIR: manifest entries that are not under DIR.
outside_of() {
	grep -v "^$1/" "$BUILD/install_manifest.txt"
}

# resolves_under BINARY DIR LIB...: the dynamic loader, with no
# environment, takes each LIB from DIR and finds every library.
resolves_under() {
	local bin=$1 dir=$2 lib where out
	shift 2
	out=$(env -i PATH=/usr/bin:/bin ldd "$bin" 2>&1)
	if grep -q 'not found' <<<"$out"; then
		fail "$bin: libraries not found:"
		grep 'not found' <<<"$out"
	fi
	for lib in "$@"; do
		where=$(awk -v l="$lib" '$1 == l && $3 != "not" { print $3 }' <<<"$out")
		[[ -z $where ]] || where=$(realpath -m "$where")
		[[ $where == "$dir"/* ]] ||
			fail "$bin: $lib resolves to '${where:-nothing}', not under $dir"
	done
}

# 1. A private prefix.
P=$T/p
rm -f "$BUILD/install_manifest.txt"
if ! confined cmake --install "$BUILD" --prefix "$P" >"$T/install-p.log" 2>&1; then
	fail "cmake --install --prefix $P failed:"
	tail -5 "$T/install-p.log"
fi
if [[ -f $BUILD/install_manifest.txt ]]; then
	out=$(outside_of "$P")
	[[ -z $out ]] || fail "installed outside $P: $out"
else
	fail "no install_manifest.txt"
fi
[[ -f $P/bin/rhinet-run ]] || fail "no $P/bin/rhinet-run"

USERLIB=$(find "$P" -name librhinet_user.so -print -quit)
LIBDIR=$(dirname "${USERLIB:-$P/lib/none}")
[[ -n $USERLIB ]] || fail "no librhinet_user.so under $P"
[[ -f $LIBDIR/librhinetdv.so.1 ]] || fail "no librhinetdv.so.1 in $LIBDIR"

# The provider as libibverbs loads it: the symbolic link, and the driver
# file naming the installed provider by its path (the prefix is not
# libibverbs' own directory).
link=$LIBDIR/libibverbs/librhinet-rdmav34.so
[[ $(readlink "$link") == ../librhinetdv.so.1 && -f $link ]] ||
	fail "$link is not a link to ../librhinetdv.so.1"
drv=$P/etc/libibverbs.d/rhinet.driver
if [[ -f $drv ]]; then
	want="driver $LIBDIR/libibverbs/librhinet"
	[[ $(cat "$drv") == "$want" ]] || fail "$drv: '$(cat "$drv")', want '$want'"
else
	fail "no $drv"
fi

# RUNPATH: libraries find each other from their own place.
for lib in "$USERLIB" "$LIBDIR/librhinetdv.so.1"; do
	# shellcheck disable=SC2016 # a literal $ORIGIN
	readelf -d "$lib" | grep -q 'RUNPATH.*\[\$ORIGIN\]' ||
		fail "$lib has no RUNPATH \$ORIGIN"
done
# No installed file keeps a path into the build tree or an empty RUNPATH
# entry (the loader would search the current directory).
for f in "$P"/bin/* "$LIBDIR"/*.so*; do
	rp=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
	if [[ $rp == *"$BUILD"* || $rp == :* || $rp == *: || $rp == *::* ]]; then
		fail "$f: RUNPATH '$rp'"
	fi
done
resolves_under "$USERLIB" "$LIBDIR" librhinetdv.so.1
resolves_under "$P/bin/rhinet_hello_push" "$LIBDIR" librhinet_user.so.0 \
	librhinetdv.so.1
resolves_under "$P/bin/rhinet-group" "$LIBDIR" librhinetdv.so.1
resolves_under "$P/bin/rhinetdv_pingpong" "$LIBDIR" librhinetdv.so.1
resolves_under "$P/bin/rhinet-run" "$LIBDIR"
"$P/bin/rhinet-run" --help >"$T/run-help.txt" 2>&1 ||
	fail "installed rhinet-run --help: $(head -3 "$T/run-help.txt")"

# A prefix the user cannot write: cmake --install fails and names it.
if confined cmake --install "$BUILD" --prefix /opt/rhinet-install-test \
	>"$T/install-ro.log" 2>&1; then
	fail "cmake --install into an unwritable prefix succeeded"
elif ! grep -q /opt/rhinet-install-test "$T/install-ro.log"; then
	fail "cmake --install into an unwritable prefix: no message naming it"
fi
[[ ! -e /opt/rhinet-install-test ]] || fail "/opt/rhinet-install-test was written"

# 2. Out-of-tree programs: a copy of an example, built with the CMake
# package and with pkg-config, and no flags beyond the documented ones.
mkdir -p "$T/app"
cp "$SRC/userlib/examples/hello_push.cc" "$T/app/app.cc"
cat >"$T/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(app CXX)
find_package(RhinetUser 0.1 REQUIRED)
add_executable(app app.cc)
target_link_libraries(app PRIVATE Rhinet::user)
EOF
if cmake -S "$T/app" -B "$T/app/build" -DCMAKE_PREFIX_PATH="$P" \
	>"$T/app-cmake.log" 2>&1 &&
	cmake --build "$T/app/build" >>"$T/app-cmake.log" 2>&1; then
	resolves_under "$T/app/build/app" "$LIBDIR" librhinet_user.so.0 \
		librhinetdv.so.1
else
	fail "find_package(RhinetUser) build:"
	tail -15 "$T/app-cmake.log"
fi

export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
# shellcheck disable=SC2046 # the documented command splits pkg-config's words
if g++ -std=c++20 $(pkg-config --cflags rhinet-user) "$T/app/app.cc" \
	-o "$T/app/app-pc" $(pkg-config --libs rhinet-user) \
	>"$T/app-pc.log" 2>&1; then
	resolves_under "$T/app/app-pc" "$LIBDIR" librhinet_user.so.0 \
		librhinetdv.so.1
else
	fail "pkg-config build ($(pkg-config --libs rhinet-user)):"
	grep -m5 -E 'undefined|error' "$T/app-pc.log"
fi
unset PKG_CONFIG_PATH

# A moved prefix: the installed programs still find their libraries.
mv "$P" "$T/moved"
resolves_under "$T/moved/bin/rhinet_hello_push" "$T/moved/${LIBDIR#"$P"/}" \
	librhinet_user.so.0 librhinetdv.so.1

# 3. DESTDIR staging for /usr: everything under it, the driver file where
# libibverbs reads it (/etc/libibverbs.d) once the tree is unpacked.
D=$T/d
rm -f "$BUILD/install_manifest.txt"
if ! DESTDIR=$D confined cmake --install "$BUILD" --prefix /usr \
	>"$T/install-d.log" 2>&1; then
	fail "DESTDIR=$D cmake --install --prefix /usr failed:"
	tail -5 "$T/install-d.log"
fi
# The manifest names the files without DESTDIR: each is under /usr or
# /etc, and there under $D (writing anywhere else failed above).
out=$(grep -v -e '^/usr/' -e '^/etc/' "$BUILD/install_manifest.txt")
[[ -z $out ]] || fail "installed outside /usr and /etc: $out"
while read -r f; do
	[[ -e $D$f || -L $D$f ]] || fail "$f is not under DESTDIR $D"
done <"$BUILD/install_manifest.txt"
[[ -f $D/etc/libibverbs.d/rhinet.driver ]] ||
	fail "no $D/etc/libibverbs.d/rhinet.driver"
dlink=$(find "$D/usr" -path '*/libibverbs/librhinet-rdmav34.so' -print -quit)
[[ -n $dlink && $(readlink "$dlink") == ../librhinetdv.so.1 ]] ||
	fail "no libibverbs/librhinet-rdmav34.so -> ../librhinetdv.so.1 under $D/usr"

# What the install left for the next run must not be mistaken for this one.
rm -f "$BUILD/install_manifest.txt"
if ((failures)); then
	echo "install: $failures failure(s)"
	exit 1
fi
echo "install: ok"
