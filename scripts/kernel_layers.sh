#!/usr/bin/env bash
# Checks that rhinet.ko's files call each other in one direction only:
#   scripts/kernel_layers.sh [DIR]      (default: kernel/rhinet)
#
# Every source and header of the driver belongs to one layer (the table
# below; Documentation/driver/README.md describes them):
#   1  hardware access: admin queue, event queues, health and reset
#   2  the objects: memory, queues, pin-down, twin memory, groups, ...
#   3  the entry points: the ib_core device, kernel verbs, the netdev,
#      the PCI driver
# A file may include the headers of its own layer and of lower ones, and
# use the functions (and data) defined in them; it fails here if it
# includes a header of, or names a symbol defined in, a higher layer, and
# the sources of one layer must not use each other in a circle either
# (tsort finds it), so every dependency has one direction. Where
# the hardware must reach up (an event, a failure) it calls through the
# ops its consumers register (struct rhinet_consumer_ops in rhinet_hw.h),
# which this check does not see and need not.
#
# A symbol is defined in a file when the file defines a non-static function
# or an initialised non-static object of that name (kernel style: the
# definition starts in column 0); a file names it when the identifier
# appears outside comments and string literals. A file with no layer in the
# table fails too, so a new file has to be placed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$REPO/kernel/rhinet}

declare -A LAYER=(
	[rhinet_hw.h]=1
	[rhinet_admin.c]=1
	[rhinet_eq.c]=1
	[rhinet_health.c]=1
	[rhinet_consumers.c]=1
	[rhinet_devlink.c]=1
	[rhinet_fw.c]=1

	[rhinet_obj.h]=2
	[rhinet_obj.c]=2
	[rhinet_mem.c]=2
	[rhinet_mr.c]=2
	[rhinet_pindown.c]=2
	[rhinet_twin.c]=2
	[rhinet_groups.c]=2
	[rhinet_dbexport.c]=2
	[rhinet_mcast_switch.c]=2
	[rhinet_trigger.c]=2
	[rhinet_queues.c]=2
	[rhinet_kqueues.c]=2
	[rhinet_ucontext.c]=2
	[rhinet_counters.c]=2

	[rhinet_ib.h]=3
	[rhinet_ib.c]=3
	[rhinet_events.c]=3
	[rhinet_kverbs.c]=3
	[rhinet_netdev.c]=3
	[rhinet_main.c]=3
	[rhinet_selftest.c]=3
	[rhinet_raw.c]=3
)

# The file's text without comments and string or character literals.
code_of() {
	awk '
	BEGIN { incomment = 0 }
	{
		line = $0; out = ""
		while (line != "") {
			if (incomment) {
				i = index(line, "*/")
				if (!i) { line = ""; break }
				line = substr(line, i + 2); incomment = 0
				continue
			}
			if (match(line, /\/\*|\/\/|"|\047/) == 0) {
				out = out line; break
			}
			out = out substr(line, 1, RSTART - 1)
			tok = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			if (tok == "/*") { incomment = 1; out = out " " }
			else if (tok == "//") { line = "" }
			else {
				# skip to the closing quote, past escapes
				q = tok
				while (line != "") {
					c = substr(line, 1, 1); line = substr(line, 2)
					if (c == "\\") { line = substr(line, 2); continue }
					if (c == q) break
				}
				out = out " "
			}
		}
		print out
	}' "$1"
}

# Symbols a file defines for others: non-static functions (kernel style: the
# declarator starts in column 0, the body's brace alone in column 0 follows)
# and initialised non-static objects ("... name[] = {" in column 0).
defined_in() {
	code_of "$1" | awk '
	/^[A-Za-z_]/ && !/^(static|extern|typedef|struct [A-Za-z_0-9]+ *\{|enum|union)/ {
		head = $0; collecting = 1
		if (head ~ /=/) {
			sub(/ *(\[[^]]*\])? *=.*/, "", head)
			n = split(head, w, /[^A-Za-z_0-9]+/)
			if (n) print w[n]
			collecting = 0
		}
		next
	}
	collecting && /^\{/ {
		if (head ~ /\(/) {
			sub(/\(.*/, "", head)
			n = split(head, w, /[^A-Za-z_0-9]+/)
			if (n) print w[n]
		}
		collecting = 0; next
	}
	collecting && /^[ \t]/ { head = head " " $0; next }
	{ collecting = 0 }'
}

cd "$DIR"
fail=0
edges=""
declare -A OWNER=()
files=(*.c *.h)
for f in "${files[@]}"; do
	if [[ -z ${LAYER[$f]:-} ]]; then
		echo "$f: no layer declared (scripts/kernel_layers.sh)"
		fail=1
		continue
	fi
	while read -r sym; do
		[[ -n $sym ]] && OWNER[$sym]=$f
	done < <(defined_in "$f")
done

for f in "${files[@]}"; do
	mine=${LAYER[$f]:-}
	[[ -n $mine ]] || continue
	while read -r hdr; do
		theirs=${LAYER[$hdr]:-}
		if [[ -n $theirs ]] && ((theirs > mine)); then
			echo "$f (layer $mine) includes $hdr (layer $theirs)"
			fail=1
		fi
	done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$f")
	while read -r sym; do
		owner=${OWNER[$sym]:-}
		[[ -n $owner && $owner != "$f" ]] || continue
		theirs=${LAYER[$owner]}
		[[ $f == *.c ]] && edges+="$f $owner"$'\n'
		if ((theirs > mine)); then
			echo "$f (layer $mine) uses $sym of $owner (layer $theirs)"
			fail=1
		fi
	done < <(code_of "$f" | grep -o '\b[A-Za-z_][A-Za-z_0-9]*\b' | sort -u)
done

# A circle can only be within a layer once the above holds.
if ! loop=$(printf '%s' "$edges" | sort -u | tsort 2>&1 >/dev/null) || [[ -n $loop ]]; then
	echo "sources use each other in a circle:"
	printf '%s\n' "$loop"
	fail=1
fi

if ((fail)); then
	echo "kernel_layers: the driver's layers are broken (see above)" >&2
	exit 1
fi
echo "kernel_layers: ${#files[@]} files, every call and include goes down, no circle"
