#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The userlib documentation against the library:
#  - every ```cpp block of Documentation/userlib/*.md that is a whole
#    program (defines main) compiles against the headers, warnings as
#    errors;
#  - reference.md's contents line links every section;
#  - reference.md's install table names every example program built, and
#    its "Building against userlib" section every public header.
#
#   check-docs.sh SOURCE_DIR GENERATED_INCLUDE_DIR CXX
set -u
SRC=$1
GEN_INCLUDE=$2
CXX=$3
DOCS=$SRC/Documentation/userlib
REF=$DOCS/reference.md

T=$(mktemp -d /tmp/rhinet-docs.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# Each fenced cpp block into its own file, named after its first line.
for doc in "$DOCS"/*.md; do
	awk -v out="$T/$(basename "$doc" .md)" '
		/^[ \t]*```cpp[ \t]*$/ { name = out "-" NR ".cc"; next }
		/^[ \t]*```/ { name = ""; next }
		name != "" { print > name }' "$doc"
done
programs=0
for block in "$T"/*.cc; do
	[[ -e $block ]] || continue
	grep -q '^int main(' "$block" || continue
	programs=$((programs + 1))
	if ! "$CXX" -std=c++20 -fsyntax-only -Wall -Wextra -Werror \
		-I"$SRC/userlib/include" -I"$GEN_INCLUDE" -x c++ "$block" \
		>"$block.log" 2>&1; then
		where=$(basename "$block" .cc)
		fail "the program at ${where%-*}.md line ${where##*-} does not compile:"
		grep -m5 'error' "$block.log"
	fi
done
# design.md's sketch and reference.md's worked example at least.
((programs >= 2)) || fail "only $programs whole programs found in $DOCS"

# GitHub's anchors: lower case, punctuation dropped, spaces to dashes.
contents=$(awk '/^Contents:/ { on = 1 } on && /^$/ { exit } on' "$REF")
while read -r heading; do
	anchor=$(sed -e 's/^## //' -e 's/[A-Z]/\L&/g' -e 's/[^a-z0-9 _-]//g' \
		-e 's/ /-/g' <<<"$heading")
	grep -qF "(#$anchor)" <<<"$contents" ||
		fail "reference.md: the contents line has no link to '$heading' (#$anchor)"
done < <(grep '^## ' "$REF")

install_table=$(awk '/^\| file \| where \|/ { on = 1 } on && /^$/ { exit } on' "$REF")
[[ -n $install_table ]] || fail "reference.md: no install table (| file | where |)"
for ex in "$SRC"/userlib/examples/*.cc; do
	name=rhinet_$(basename "$ex" .cc)
	grep -q "\`$name\`" <<<"$install_table" ||
		fail "reference.md: the install table does not name $name"
done
building=$(awk '/^## Building against userlib/ { on = 1; next } on && /^## / { exit } on' "$REF")
for header in "$SRC"/userlib/include/rhinet/*.hpp; do
	name=$(basename "$header")
	grep -q "$name" <<<"$building" ||
		fail "reference.md: 'Building against userlib' does not name $name"
done

if ((failures)); then
	echo "userlib docs: $failures failure(s)"
	exit 1
fi
echo "userlib docs: $programs programs compile, contents and install table complete"
