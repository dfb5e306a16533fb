#!/usr/bin/env bash
# Runs the kernel's scripts/checkpatch.pl over rhinet.ko's and xpu.ko's
# sources:
#   scripts/checkpatch.sh [FILES...]   (default: kernel/rhinet/*.c *.h,
#                                       kernel/xpu/*.c)
#
# checkpatch.pl is not in Debian's linux-headers packages, so it is taken
# from Debian's linux-source-<major.minor> package of the same version as the
# headers we build against (linux-headers-<kver>, kver as tests/vm/kernel.sh
# names it; if the archive no longer has that exact version, its current
# linux-source-<major.minor> is used and the script says so). Only
# scripts/checkpatch.pl and the two data files it reads (spelling.txt,
# const_structs.checkpatch) are streamed out of the source tarball inside
# the .deb; the .deb is deleted right after. The result is cached in
# ${RHINET_CACHE_DIR:-~/.cache/rhinet}/checkpatch-<headers' Debian version>/,
# so only the first run downloads (about 140 MB, ~10 s to stream through xz).
#
# Mode: checkpatch.pl --no-tree --strict --terse -f, as the kernel's RDMA
# maintainers run it (--strict adds the CHECK class to ERROR and WARNING).
#
# Exit status: non-zero on any ERROR or WARNING, and by default on any CHECK
# as well. CHECKs are the --strict-only style class (BIT() over 1u << n,
# blank line after a declaration, line ending in '(' ...): alone they would
# be printed but tolerated, but rhinet.ko is meant for upstream review under
# --strict, the driver had only a handful of them (all mechanical to fix),
# and a tolerated class only grows. So they fail too. To look past them
# (printed, counted, tolerated) set CHECKPATCH_ALLOW_CHECKS=1. A CHECK or
# WARNING type that is wrong for this driver for good goes, with its reason,
# into IGNORE_TYPES below (passed as --ignore), not into an environment
# variable.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RHINET_CACHE_DIR:-$HOME/.cache/rhinet}
# checkpatch message types not enforced here, each with its reason.
IGNORE_TYPES=()

FILES=()
for f in "$@"; do
	[[ -f $f ]] || { echo "checkpatch.sh: no file $f" >&2; exit 2; }
	f=$(realpath "$f")
	FILES+=("${f#"$REPO"/}") # repo-relative when inside it: shorter output
done
cd "$REPO"
if ((${#FILES[@]} == 0)); then
	FILES=(kernel/rhinet/*.c kernel/rhinet/*.h kernel/xpu/*.c)
fi

command -v perl >/dev/null || { echo "checkpatch.sh: perl is missing (make deps)" >&2; exit 1; }

kver=$(bash "$REPO/tests/vm/kernel.sh" version)
# Debian version of the headers package, e.g. 6.1.192-2; its upstream part
# (6.1.192) is what the matching linux-source-6.1 carries.
hdr_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null) || {
	echo "checkpatch.sh: linux-headers-$kver is not installed (make deps)" >&2
	exit 1
}
series=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$kver") # 6.1
src_pkg=linux-source-$series
dir=$CACHE/checkpatch-$hdr_ver

fetch() {
	local tmp deb ver apt_opts=()
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.checkpatch-fetch.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	# apt's download sandbox user (_apt) cannot write into root's home.
	if [[ $(id -u) -eq 0 ]]; then
		apt_opts=(-o APT::Sandbox::User=root)
	fi
	ver=$hdr_ver
	echo "checkpatch.sh: fetching $src_pkg=$ver for checkpatch.pl (once)" >&2
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" -q download "$src_pkg=$ver" >&2); then
		# Package lists may be stale or missing, or the archive has moved
		# on to a newer version: refresh (root only), then take the
		# exact version if it is there, else the candidate.
		if [[ $(id -u) -eq 0 ]]; then
			apt-get -q update >&2 || true
		fi
		if ! (cd "$tmp" && apt-get "${apt_opts[@]}" -q download "$src_pkg=$ver" >&2); then
			echo "checkpatch.sh: $src_pkg=$ver is not in the archive; using its current $src_pkg" >&2
			(cd "$tmp" && apt-get "${apt_opts[@]}" -q download "$src_pkg" >&2)
		fi
	fi
	deb=$(find "$tmp" -maxdepth 1 -name "${src_pkg}_*.deb" | head -1)
	[[ -n $deb ]] || { echo "checkpatch.sh: download of $src_pkg failed" >&2; exit 1; }
	ver=$(dpkg-deb -f "$deb" Version)
	mkdir -p "$tmp/out"
	# .deb -> its data tar -> the source .tar.xz -> three files; nothing
	# but the .deb itself touches the disk.
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO "./usr/src/$src_pkg.tar.xz" |
		tar -xJ -C "$tmp/out" --strip-components=2 \
			"$src_pkg/scripts/checkpatch.pl" \
			"$src_pkg/scripts/spelling.txt" \
			"$src_pkg/scripts/const_structs.checkpatch"
	rm -f "$deb"
	for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
		[[ -s $tmp/out/$f ]] || { echo "checkpatch.sh: $f not found in $src_pkg $ver" >&2; exit 1; }
	done
	chmod +x "$tmp/out/checkpatch.pl"
	echo "$src_pkg $ver" >"$tmp/out/SOURCE"
	# Atomic publish; a concurrent run that won the race is just as good.
	mv -T "$tmp/out" "$dir" 2>/dev/null || [[ -s $dir/checkpatch.pl ]]
	rm -rf "$tmp"
	trap - EXIT
}

if [[ ! -s $dir/checkpatch.pl || ! -s $dir/SOURCE ]]; then
	rm -rf "$dir"
	fetch
fi
echo "checkpatch.sh: $(cat "$dir/SOURCE")'s checkpatch.pl, ${#FILES[@]} files" >&2

# checkpatch exits 1 on any ERROR or WARNING, and also on CHECKs under
# --strict, so the verdict is taken from its output instead.
out=$(perl "$dir/checkpatch.pl" --no-tree --strict --terse \
	--show-types --no-summary ${IGNORE_TYPES[@]:+--ignore "$(IFS=,; echo "${IGNORE_TYPES[*]}")"} \
	-f "${FILES[@]}" 2>&1) || true
[[ -n $out ]] && printf '%s\n' "$out"
errors=$(grep -c ': ERROR:' <<<"$out" || true)
warnings=$(grep -c ': WARNING:' <<<"$out" || true)
checks=$(grep -c ': CHECK:' <<<"$out" || true)
if [[ -n ${CHECKPATCH_ALLOW_CHECKS:-} ]]; then
	policy="checks tolerated: CHECKPATCH_ALLOW_CHECKS is set"
else
	policy="checks fail; CHECKPATCH_ALLOW_CHECKS=1 tolerates them"
fi
echo "checkpatch: $errors errors, $warnings warnings, $checks checks ($policy)"
if ((errors + warnings > 0)); then
	exit 1
fi
if [[ -z ${CHECKPATCH_ALLOW_CHECKS:-} ]] && ((checks > 0)); then
	exit 1
fi
# Anything else checkpatch printed (a perl error, say) is a failure too.
if grep -v -E ': (ERROR|WARNING|CHECK):' <<<"$out" | grep -q .; then
	echo "checkpatch.sh: unexpected output from checkpatch.pl" >&2
	exit 1
fi
