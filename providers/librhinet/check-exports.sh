#!/bin/sh
# check-exports.sh LIB MAP: LIB's dynamic symbols it defines are exactly
# the global names of the version script MAP, each at the version of the
# block that names it (RHINETDV_1.0, RHINETDV_1.1, ...).
set -eu
lib=$1
map=$2
want=$(awk '/^RHINETDV_[0-9.]+ *\{/ { v = $1 }
	/^[[:space:]]*rhinetdv_[a-z_]*;/ { sub(/;.*/, "", $1); print $1 "@@" v }' \
	"$map" | sort)
have=$(nm -D --defined-only "$lib" | awk '$3 != "" { print $3 }' |
	grep -v '^RHINETDV_[0-9.]*$' | sort)
if [ "$have" != "$want" ]; then
	echo "check-exports: $lib exports:"; echo "$have"
	echo "expected:"; echo "$want"
	exit 1
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = librhinetdv.so.1 ] || {
	echo "check-exports: SONAME '$soname'"
	exit 1
}
echo "check-exports: $(echo "$want" | wc -l) versioned symbols, SONAME $soname"
