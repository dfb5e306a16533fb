#!/bin/bash
# check-exports.sh CC LIB INCLUDE_DIR: the functions shmem.h and shmemx.h
# declare (as the C compiler sees them, every type-list macro expanded)
# are exactly the functions librhinet_shmem.so exports: a declared
# routine the library lacks would fail only when a program links, an
# exported one no header declares is a name nobody can call.
set -u
cc=$1
lib=$2
inc=$3
declared=$(printf '#include <shmem.h>\n#include <shmemx.h>\n' |
	"$cc" -std=c11 -E -P -I"$inc" -x c - |
	grep -oE '\bshmemx?_[A-Za-z0-9_]+ *\(' | sed 's/ *($//' | sort -u)
[[ -n $declared ]] || {
	echo "check-exports: no declarations found in $inc"
	exit 1
}
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' |
	sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
rc=0
if [[ -n $missing ]]; then
	echo "check-exports: declared but not exported ($(echo "$missing" | wc -l)):"
	echo "$missing" | sed 's/^/  /'
	rc=1
fi
if [[ -n $extra ]]; then
	echo "check-exports: exported but not declared ($(echo "$extra" | wc -l)):"
	echo "$extra" | sed 's/^/  /'
	rc=1
fi
((rc)) && exit 1
echo "check-exports: $(echo "$declared" | wc -l) routines declared and exported"
