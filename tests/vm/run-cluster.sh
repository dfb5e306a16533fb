#!/usr/bin/env bash
# Boots a RHiNET-NG cluster: the fabric switch and N QEMU guests, each with
# one rhinet NIC on its own switch port (node ID = port = index).
#
#   run-cluster.sh [options]
#     -n N             nodes (default 2)
#     --script FILE    batch mode: every node runs FILE NODE NODES; the run
#                      passes when every node exits 0. FILE is /test/run.sh
#                      in the guest; every *.lib.sh next to FILE rides along
#                      in /test/ (helpers FILE may source)
#     --shell K        interactive: a shell on node K's console (others idle,
#                      or running --script); ends when that shell exits
#     --arg X          extra argument for the script (repeatable)
#     --timeout S      batch deadline in seconds (default 120)
#     --switch ARG     pass ARG to rhinet-switch (repeatable), e.g.
#                      --switch --loss --switch 0.1
#     --out DIR        keep logs here (default: a fresh temporary directory)
#     --env FILE       artifact paths (default: build/vm/env, written by
#                      tests/vm/prepare.sh)
#     --apps           attach the applications image (UCX, Open MPI,
#                      dropbear, nvme-cli: APPS in the env file)
#     --mem SIZE       guest memory (default 256M)
#     --restart-switch FRAMES
#                      kill the switch once it has carried FRAMES frames from
#                      node 0 and start a new one on the same sockets (the
#                      NICs must reconnect and recover); the run fails if
#                      the new switch carried no frame
#     --virtio-link    nodes 0 and 1 also get a stock virtio-net NIC, joined
#                      to each other by QEMU's stream netdev (soft-RoCE's
#                      reference without our NIC); two nodes only
#     --wire netdev    reach the switch through a QEMU stream netdev and the
#                      main loop (the NIC's other wire path) instead of
#                      the engine thread's own socket (--wire socket, the
#                      default)
#     --core softcore  the NIC's core is the engine's firmware image
#                      (FIRMWARE in the env file) in a qemu-system-riscv32
#                      per node, instead of the engine in QEMU's process
#                      (--core engine, the default)
#     --xpu PLACE[,PLACE...]
#                      every node also gets an xpu (the accelerator
#                      stand-in, Documentation/hardware/xpu.md), node K
#                      at the Kth PLACE (the last one for the nodes
#                      beyond): "bridge" puts the NIC and the xpu behind
#                      one PCI bridge, so the kernel's P2PDMA lets the NIC
#                      reach the xpu's memory; "apart" puts the xpu on the
#                      root bus beside the NIC, a path P2PDMA judges by
#                      the host bridge (q35's is not one it trusts)
#     --xpu-lanes N    lanes of each xpu (1..32; the device's default, 4,
#                      without it). Each xpu has 64 MiB of memory: xpu.ko
#                      gives each open file 8 MiB of it by default (a
#                      quarter of it at most), room for the processes a
#                      test runs at once
#     --file SRC:DST   host file or directory SRC at DST in every guest
#                      (repeatable), e.g. firmware images at
#                      /lib/firmware/rhinet/
#     --switch-group "GROUP PORT..."
#                      the switch's replication pattern of a simultaneous
#                      multicast group (repeatable; GROUP 61440..63487),
#                      set on the control socket before the guests boot,
#                      as the administrator would; the guests find each
#                      spec as a line of /test/switch_groups (their root
#                      gives the NICs the member lists)
#
# While it runs, `rhinet-switch --ctl SOCKDIR CMD` changes faults; the socket
# directory is printed at start. Each node's serial log is OUT/nodeK.log; the
# switch's counters end in OUT/switch.stats.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

nodes=2 script="" shell_node="" timeout=120 out="" env_file="$REPO/build/vm/env"
apps=0 mem=256M wire=socket core=engine virtio_link=0 restart_switch_frames=0 xpu="" xpu_lanes=""
switch_args=() script_args=() switch_groups=() files=()
while (($#)); do
	case $1 in
	-n) nodes=$2; shift 2 ;;
	--script) script=$2; shift 2 ;;
	--arg) script_args+=("$2"); shift 2 ;;
	--shell) shell_node=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--switch) switch_args+=("$2"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	--env) env_file=$2; shift 2 ;;
	--apps) apps=1; shift ;;
	--mem) mem=$2; shift 2 ;;
	--wire) wire=$2; shift 2 ;;
	--core) core=$2; shift 2 ;;
	--virtio-link) virtio_link=1; shift ;;
	--restart-switch) restart_switch_frames=$2; shift 2 ;;
	--switch-group) switch_groups+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--xpu) xpu=$2; shift 2 ;;
	--xpu-lanes) xpu_lanes=",lanes=$2"; shift 2 ;;
	-h | --help) sed -n '2,63p' "$0"; exit 0 ;;
	*) echo "run-cluster: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
die() { echo "run-cluster: $*" >&2; exit 2; }
[[ $nodes =~ ^[0-9]+$ ]] && ((nodes >= 1 && nodes <= 64)) || die "-n must be 1..64"
[[ $wire == socket || $wire == netdev ]] || die "--wire must be socket or netdev"
[[ $core == engine || $core == softcore ]] || die "--core must be engine or softcore"
IFS=, read -r -a xpu_places <<<"$xpu"
for pl in "${xpu_places[@]}"; do
	[[ $pl == bridge || $pl == apart ]] || die "--xpu: a place is bridge or apart, not '$pl'"
done
((!virtio_link || nodes == 2)) || die "--virtio-link joins exactly two nodes"
[[ -z $script && -z $shell_node ]] && die "give --script FILE or --shell K"
[[ -z $script || -r $script ]] || die "cannot read script $script"
[[ -z $shell_node ]] || ((shell_node < nodes)) || die "--shell must name a node below $nodes"
[[ -r $env_file ]] || die "no $env_file: run tests/vm/prepare.sh (or make build) first"
# shellcheck source=/dev/null
source "$env_file" # QEMU VMLINUX INITRAMFS SWITCH APPS FIRMWARE [KERNEL_ARGS CHECK_KERNEL_LOG]
# RHINET_DRIVER_FUNCS=1: each node lists the functions of our modules the
# test reached (guest/init.sh, tests/vm/driver-coverage.py).
[[ ${RHINET_DRIVER_FUNCS:-0} == 1 ]] && KERNEL_ARGS="${KERNEL_ARGS:-} rhinet.funcs=1"
# The nodes' files: read-only images on virtio disks, found by /init by
# their serial numbers (build-initramfs.sh --image). Fixed slots far from
# the NICs', so no device moves.
[[ -n ${ROOT_IMAGE:-} ]] || die "$env_file names no ROOT_IMAGE (re-run tests/vm/prepare.sh)"
images=("$ROOT_IMAGE")
disks=(-drive "file=$ROOT_IMAGE,if=none,id=root,format=raw,readonly=on"
	-device virtio-blk-pci,drive=root,serial=rhinet-root,addr=0x18)
if ((apps)); then
	images+=("${APPS:-}")
	disks+=(-drive "file=${APPS:-},if=none,id=apps,format=raw,readonly=on"
		-device virtio-blk-pci,drive=apps,serial=rhinet-apps,addr=0x19)
fi
core_props=""
[[ $core == softcore ]] && core_props=",core=softcore,firmware=${FIRMWARE:-}"
for f in "$QEMU" "$VMLINUX" "$INITRAMFS" "$SWITCH" "${images[@]}" \
	${core_props:+"${FIRMWARE:-}"}; do
	[[ -e $f ]] || die "missing artifact $f (re-run tests/vm/prepare.sh)"
done

[[ -n $out ]] || out=$(mktemp -d /tmp/rhinet-run.XXXXXX)
mkdir -p "$out"
sockdir=$(mktemp -d /tmp/rhn-fabric.XXXXXX) # short: unix paths are limited
pids=()
restarter=""
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[[ -n $restarter ]] && kill "$restarter" 2>/dev/null
	# The switch's PID is in a file: a restarted one is not our child.
	if [[ -s $sockdir/switch.pid ]]; then
		kill "$(cat "$sockdir/switch.pid")" 2>/dev/null
		wait 2>/dev/null
	fi
	rm -rf "$sockdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The test script rides in a second cpio appended to the shared one.
stage=$(mktemp -d)
mkdir -p "$stage/test"
if [[ -n $script ]]; then
	cp "$script" "$stage/test/run.sh"
	for lib in "$(dirname "$script")"/*.lib.sh; do
		[[ -f $lib ]] && cp "$lib" "$stage/test/"
	done
	printf '%s\n' "${script_args[@]}" >"$stage/test/args"
fi
for spec in "${switch_groups[@]}"; do echo "$spec"; done >"$stage/test/switch_groups"
for spec in "${files[@]}"; do
	[[ -e ${spec%%:*} ]] || die "--file: no ${spec%%:*}"
	mkdir -p "$stage$(dirname "${spec#*:}")"
	cp -r "${spec%%:*}" "$stage${spec#*:}"
done
# Its "." would set the guest's / to mktemp's 0700: keep / open to all.
chmod 0755 "$stage"
(cd "$stage" && find . | cpio -o -H newc --owner=0:0 --quiet) >"$out/run.cpio"
rm -rf "$stage"
cat "$INITRAMFS" "$out/run.cpio" >"$out/initrd.cpio"

start_switch() {
	local pid
	rm -f "$sockdir/control.sock"
	"$SWITCH" --dir "$sockdir" --ports "$nodes" --stats "$out/switch.stats" \
		"${switch_args[@]}" >>"$out/switch.log" 2>&1 &
	pid=$!
	echo "$pid" >"$sockdir/switch.pid"
	for _ in $(seq 100); do
		[[ -S $sockdir/control.sock ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -S $sockdir/control.sock ]] || { cat "$out/switch.log" >&2; die "switch did not start"; }
	for spec in "${switch_groups[@]}"; do
		# shellcheck disable=SC2086 # GROUP and PORTs, one word each
		answer=$("$SWITCH" --ctl "$sockdir" group $spec 2>&1)
		[[ $? == 0 && $answer != error* ]] || die "switch group '$spec': $answer"
	done
}
: >"$out/switch.log"
start_switch
echo "run-cluster: $nodes nodes, fabric control: $SWITCH --ctl $sockdir CMD, logs in $out" >&2

# Replaces the calling (sub)shell, so a background job's PID is QEMU's own.
run_qemu() { # node mode serial
	# The engine thread ahead of the spinning vCPUs when a frame or a
	# doorbell wakes it (as root; ignored without CAP_SYS_NICE), and a
	# retransmission timeout above the stalls a TCG host gives its threads
	# (Documentation/qemu/device-path.md). RHINET_NIC_PROPS adds to them.
	local tuned=",engine-nice=-10,rto-floor-us=10000$core_props${RHINET_NIC_PROPS:-}"
	local pre=() at="" place=""
	((${#xpu_places[@]})) && place=${xpu_places[$1]:-${xpu_places[-1]}}
	case $place in
	bridge)
		pre=(-device pci-bridge,id=p2p,chassis_nr=1,shpc=off,addr=0x10
			-device "xpu,mem-size=64M,bus=p2p,addr=2$xpu_lanes")
		at=",bus=p2p,addr=1" ;;
	apart) pre=(-device "xpu,mem-size=64M$xpu_lanes") ;;
	esac
	local nic=("${pre[@]}" -device "rhinet$at,wire=$sockdir/port$1.sock,node-id=$1,fault-injection=on$tuned")
	[[ $wire == netdev ]] && nic=("${pre[@]}"
		-netdev "stream,id=fabric,server=off,addr.type=unix,addr.path=$sockdir/port$1.sock"
		-device "rhinet$at,netdev=fabric,node-id=$1,fault-injection=on$tuned")
	if ((virtio_link)); then
		local server=off
		(($1 == 0)) && server=on
		nic+=(-netdev "stream,id=vlink,server=$server,addr.type=unix,addr.path=$sockdir/vlink.sock"
			-device "virtio-net-pci,netdev=vlink,romfile=,mac=52:54:00:78:00:0$(($1 + 1))")
	fi
	# no_timer_check: under TCG on a loaded host the kernel's check that the
	# IO-APIC timer ticks can miss its window and panic the boot ("IO-APIC
	# + timer doesn't work"; seen with four guests booting at once).
	exec "$QEMU" -M q35 -cpu max -m "$mem" -smp 1 -nodefaults -no-user-config \
		-display none -no-reboot -L /usr/share/seabios -L /usr/share/qemu \
		-kernel "$VMLINUX" -initrd "$out/initrd.cpio" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check rhinet.node=$1 rhinet.nodes=$nodes rhinet.mode=$2 ${KERNEL_ARGS:-}" \
		-serial "$3" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		"${nic[@]}" "${disks[@]}"
}

start_ms=$(($(date +%s%N) / 1000000))
for ((i = 0; i < nodes; i++)); do
	[[ $i == "$shell_node" ]] && { pids+=(""); continue; }
	mode=batch
	[[ -z $script ]] && mode=idle
	run_qemu "$i" "$mode" "file:$out/node$i.log" &
	pids+=($!)
	if ((virtio_link && i == 0)); then
		# Node 1's end connects: node 0's must listen first.
		for _ in $(seq 100); do
			[[ -S $sockdir/vlink.sock ]] && break
			sleep 0.05
		done
	fi
done

if [[ -n $shell_node ]]; then
	(run_qemu "$shell_node" shell mon:stdio)
	exit 0
fi

if ((restart_switch_frames)); then
	# A switch that dies under traffic and comes back: its counters so far
	# go to OUT/switch.stats.before.
	(
		until "$SWITCH" --ctl "$sockdir" stats 2>/dev/null |
			awk -v n="$restart_switch_frames" '$1 == "port" && $2 == 0 {
				for (i = 3; i <= NF; i++) if ($i ~ /^rx_frames=/) {
					split($i, kv, "="); exit kv[2] < n } }'; do
			sleep 0.02
		done
		"$SWITCH" --ctl "$sockdir" stats >"$out/switch.stats.before" 2>&1
		kill "$(cat "$sockdir/switch.pid")"
		while [[ -S $sockdir/control.sock ]] && kill -0 "$(cat "$sockdir/switch.pid")" 2>/dev/null; do
			sleep 0.01
		done
		echo "run-cluster: switch restarted" >&2
		start_switch
		wait
	) &
	restarter=$!
fi

# Batch: wait for every node, up to the deadline. Only builtins in this
# loop: a date and a sleep forked ten times a second took a tenth of the
# host's two cores from the guests being measured.
declare -A status=()
deadline=$((EPOCHSECONDS + timeout))
exec {nap_fd}<> <(:) # never readable: `read -t` on it is a sleep
while ((${#status[@]} < nodes)); do
	for ((i = 0; i < nodes; i++)); do
		[[ -n ${status[$i]:-} ]] && continue
		if ! kill -0 "${pids[$i]}" 2>/dev/null; then
			wait "${pids[$i]}"
			status[$i]=$?
		fi
	done
	if ((EPOCHSECONDS >= deadline)); then
		for ((i = 0; i < nodes; i++)); do
			[[ -n ${status[$i]:-} ]] && continue
			kill "${pids[$i]}" 2>/dev/null
			wait "${pids[$i]}" 2>/dev/null
			status[$i]=timeout
		done
	fi
	read -r -t 0.1 -u "$nap_fd" _
done
exec {nap_fd}<&-
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
"$SWITCH" --ctl "$sockdir" stats >"$out/switch.stats.live" 2>&1

# The debug kernel's checkers (CHECK_KERNEL_LOG=1 in the env file): a report
# on a node's console fails the node whatever its script said: KASAN, UBSAN,
# lockdep and other WARNINGs and BUGs, oopses, panics, and the leaks the
# guest's /init found with kmemleak.
REPORTS='BUG:|WARNING:|Oops|UBSAN:|Kernel panic|kernel BUG at|general protection fault|DEBUG_LOCKS_WARN_ON|possible circular locking|inconsistent lock state|RHINET-KMEMLEAK: end|RHINET-LOCKDEP: off'
kernel_reports() { # node
	[[ ${CHECK_KERNEL_LOG:-0} == 1 ]] && grep -qE "$REPORTS" "$out/node$1.log"
}
show_kernel_reports() { # node: each report's first lines
	echo "node $1: kernel reports in $out/node$1.log:" >&2
	grep -n -E -A 30 "$REPORTS|RHINET-KMEMLEAK: begin" "$out/node$1.log" |
		head -n 150 | sed 's/^/  | /' >&2
}

failed=0
for ((i = 0; i < nodes; i++)); do
	st=${status[$i]}
	kernel_reports "$i" && show_kernel_reports "$i"
	if [[ $st == timeout ]]; then
		verdict="TIMEOUT after ${timeout}s"
	elif ((st % 2 == 1)); then
		rc=$(((st - 1) / 2))
		verdict="rc=$rc"
		if ((rc == 0)) && ! grep -aq "RHINET-RESULT node=$i rc=0" "$out/node$i.log"; then
			# QEMU's own failure exit (1) reads as the guest's rc 0: only
			# the guest's line says it ran.
			verdict="QEMU exited with $st and the guest reported no result"
		elif ((rc == 0)) && kernel_reports "$i"; then
			verdict="rc=0, but the kernel reported a bug"
		elif ((rc == 0)); then
			echo "node $i: PASS" >&2
			continue
		fi
	else
		verdict="QEMU exited with $st (no result from the guest)"
	fi
	failed=1
	# A program's failed checks are often far above the log's end (later
	# programs kept running): name them first, so a CI excerpt shows them.
	fails=$(grep -a 'FAIL' "$out/node$i.log" | head -n 30)
	if [[ -n $fails ]]; then
		echo "node $i: FAIL ($verdict); its failed checks (the first 30):" >&2
		sed 's/^/  | /' <<<"$fails" >&2
		echo "node $i: the last lines of $out/node$i.log:" >&2
	else
		echo "node $i: FAIL ($verdict); last lines of $out/node$i.log:" >&2
	fi
	tail -n 40 "$out/node$i.log" | sed 's/^/  | /' >&2
done
echo "run-cluster: done in $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))s; switch counters:" >&2
sed 's/^/  /' "$out/switch.stats.live" >&2
if ((restart_switch_frames)); then
	if [[ ! -s $out/switch.stats.before ]]; then
		echo "run-cluster: FAIL: the switch was never restarted" >&2
		failed=1
	elif ! grep -qE '^port 0 .* rx_frames=[1-9]' "$out/switch.stats.live"; then
		echo "run-cluster: FAIL: the restarted switch carried no frame from node 0" >&2
		failed=1
	else
		echo "run-cluster: the first switch's counters, before it was killed:" >&2
		sed 's/^/  /' "$out/switch.stats.before" >&2
	fi
fi
exit $failed
