#!/bin/sh
# check-exports.sh LIB MAP: LIB's dynamic symbols it defines are exactly
# the global names of the version script MAP, each at version RHINETDV_1.0.
set -eu
lib=$1
map=$2
want=$(sed -n 's/^[[:space:]]*\(rhinetdv_[a-z_]*\);.*/\1/p' "$map" | sort)
have=$(nm -D --defined-only "$lib" | awk '$3 != "" { print $3 }' |
	grep -v '^RHINETDV_1\.0$' | sort)
bare=$(echo "$have" | sed 's/@.*//' | sort)
if [ "$bare" != "$want" ]; then
	echo "check-exports: $lib exports:"; echo "$have"
	echo "expected:"; echo "$want"
	exit 1
fi
if echo "$have" | grep -v '@@RHINETDV_1\.0$'; then
	echo "check-exports: symbols above lack version RHINETDV_1.0"
	exit 1
fi
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = librhinetdv.so.1 ] || {
	echo "check-exports: SONAME '$soname'"
	exit 1
}
echo "check-exports: $(echo "$want" | wc -l) symbols at RHINETDV_1.0, SONAME $soname"
