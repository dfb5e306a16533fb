#!/bin/busybox sh
# /init of a RHiNET-NG test node. Kernel command line:
#   rhinet.node=N rhinet.nodes=M rhinet.mode=batch|shell|idle
# batch: runs /test/run.sh NODE NODES [ARGS from /test/args], prints its status and ends the VM with
#        it (isa-debug-exit); shell: a shell on the console; idle: waits.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin:/opt/rhinet/bin
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# POSIX shared memory (UCX and Open MPI map it between local processes)
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -sf /bin/busybox /sbin/modprobe 2>/dev/null

# The node's files are on read-only squashfs disks (build-initramfs.sh
# --image): the root image, and the applications' for the tests that ask.
# Their files are linked into this root, which stays writable; what the
# initramfs itself carries (the test's own files) wins over them: cp
# cannot link over a file that exists and says so, quietly here. (Not
# cp -n: it would skip a directory that exists, with all it holds.)
if [ -d /stage1 ]; then
	while read -r ko; do
		insmod "/stage1/$ko" || echo "rhinet-init: insmod $ko failed"
	done </stage1/order
	for blk in /sys/block/vd*; do
		[ -r "$blk/serial" ] || continue
		name=$(cat "$blk/serial")
		case $name in rhinet-*) ;; *) continue ;; esac
		mkdir -p "/.images/$name"
		if ! mount -t squashfs -o ro "/dev/${blk##*/}" "/.images/$name"; then
			echo "rhinet-init: cannot mount the $name image"
			continue
		fi
		cp -rs "/.images/$name"/* / 2>/dev/null
	done
	echo "rhinet-init: the images' files linked at $(cut -d' ' -f1 /proc/uptime) s"
fi

arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
NODE=$(arg rhinet.node)
NODES=$(arg rhinet.nodes)
MODE=$(arg rhinet.mode)
export NODE NODES
hostname "node$NODE"
echo "rhinet-init: node $NODE of $NODES, mode $MODE, kernel $(uname -r)"

# A kernel with kmemleak (the VM tests' debug kernel, tests/vm/debug-kernel.sh)
# checks the batch for leaks. What boot left unreferenced is not the
# test's: each reported object gives its age, and one allocated before
# the test began is set aside. (A scan at the start would do the same at
# the price of one more scan: about 9 s under TCG.)
KMEMLEAK=/sys/kernel/debug/kmemleak
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Under that kernel a test may repeat less of what it repeats only for
# volume (its checks flag a bad path the first time it runs; the plain
# twin keeps the full count): RHINET_DEBUG_KERNEL=1.
[ -e $KMEMLEAK ] && export RHINET_DEBUG_KERNEL=1
kmemleak_start() {
	KMEMLEAK_T0=$(cut -d' ' -f1 /proc/uptime)
}
# The report's objects allocated since the test began (age below the
# seconds since then, read just before the report), on stdout; how many
# older ones it set aside, on stderr.
kmemleak_since_start() {
	awk -v since="$(cut -d' ' -f1 /proc/uptime)" -v t0="$KMEMLEAK_T0" '
		function flush() {
			if (block != "") {
				if (age < since - t0) printf "%s", block
				else old++
			}
			block = ""
		}
		/^unreferenced object/ { flush(); age = -1 }
		/\(age [0-9.]+s\)/ {
			match($0, /\(age [0-9.]+s\)/)
			age = substr($0, RSTART + 5, RLENGTH - 7) + 0
		}
		{ block = block $0 "\n" }
		END { flush(); print old + 0 > "/dev/stderr" }' $KMEMLEAK
}
# Fails (status 1) and prints the report when the test leaked.
kmemleak_check() {
	# Objects younger than 1 s (the debug kernel's MSECS_MIN_AGE,
	# debug-kernel.sh) are never reported; a second scan confirms what the
	# first found (as kmemleak's documentation advises). Both are needed:
	# a scan that first sees an object unreferenced with new contents
	# holds it back, and reports it only if the next scan finds it the
	# same (vm_kmemleak_selftest_debugkernel fails with one).
	sleep 2
	start=$(date +%s)
	# (kmemleak turns itself off on an internal error: then it finds nothing)
	if ! { echo scan >$KMEMLEAK && sleep 1 && echo scan >$KMEMLEAK; }; then
		echo "RHINET-KMEMLEAK: end: kmemleak is off, leaks are unknown"
		return 1
	fi
	kmemleak_since_start >/tmp/kmemleak 2>/tmp/kmemleak.old
	echo "rhinet-init: kmemleak scanned twice in $(($(date +%s) - start)) s;" \
		"$(cat /tmp/kmemleak.old) object(s) from before the test set aside"
	[ -s /tmp/kmemleak ] || return 0
	echo "RHINET-KMEMLEAK: begin"
	cat /tmp/kmemleak
	echo "RHINET-KMEMLEAK: end: $(grep -c '^unreferenced object' /tmp/kmemleak) objects leaked during the test"
	return 1
}

# Which functions of our modules (rhinet.ko, xpu.ko) the test reached, with
# rhinet.funcs=1 on the command line (run-cluster.sh --driver-funcs): the
# function tracer, limited to those modules, read as it fills so that no
# event is overwritten; tests/vm/driver-coverage.py compares the tests by it.
TRACING=/sys/kernel/tracing
funcs_start() {
	mount -t tracefs tracefs $TRACING 2>/dev/null
	if [ ! -w $TRACING/set_ftrace_filter ]; then
		echo "RHINET-DRIVER-FUNCS: unavailable (no function tracer)"
		return 1
	fi
	# A module's filter waits for the module to load. Until then one
	# function that never runs keeps the filter from being empty, which
	# would trace every function of the kernel.
	echo __x64_sys_kexec_load >$TRACING/set_ftrace_filter &&
		echo ':mod:rhinet' >>$TRACING/set_ftrace_filter &&
		echo ':mod:xpu' >>$TRACING/set_ftrace_filter &&
		echo 2048 >$TRACING/buffer_size_kb &&
		echo function >$TRACING/current_tracer || {
		echo "RHINET-DRIVER-FUNCS: unavailable (the tracer refused the filter)"
		return 1
	}
	awk '{
		if (match($0, /: [A-Za-z0-9_.]+ <-/)) {
			f = substr($0, RSTART + 2, RLENGTH - 5)
			if (!(f in seen)) { seen[f] = 1; print f; fflush() }
		}
	}' $TRACING/trace_pipe >/tmp/driver-funcs &
	FUNCS_READER=$!
}
# One line on the console: the functions reached, and whether any event was lost.
funcs_report() {
	echo 0 >$TRACING/tracing_on
	sleep 1
	kill $FUNCS_READER 2>/dev/null
	lost=$(cat $TRACING/per_cpu/cpu*/stats | awk '/^overrun:/ { n += $2 } END { print n + 0 }')
	echo "RHINET-DRIVER-FUNCS: lost=$lost $(tr '\n' ' ' </tmp/driver-funcs)"
}

case "$MODE" in
batch)
	[ -e $KMEMLEAK ] && kmemleak_start
	funcs=
	[ "$(arg rhinet.funcs)" = 1 ] && funcs_start && funcs=1
	# shellcheck disable=SC2046 # one argument per line of /test/args
	sh /test/run.sh "$NODE" "$NODES" $(cat /test/args 2>/dev/null)
	rc=$?
	[ -n "$funcs" ] && funcs_report
	if [ -e $KMEMLEAK ] && ! kmemleak_check && [ $rc = 0 ]; then
		rc=1
	fi
	# Lockdep stops after its first report, and when it runs out of room
	# (both print BUG: or WARNING:); turned off any other way, it would
	# have checked nothing.
	if [ -r /proc/lockdep_stats ] &&
		! grep -q 'debug_locks: *1' /proc/lockdep_stats; then
		echo "RHINET-LOCKDEP: off: $(grep debug_locks /proc/lockdep_stats)"
		[ $rc = 0 ] && rc=1
	fi
	echo "RHINET-RESULT node=$NODE rc=$rc"
	rhinet-vm-exit "$rc"
	;;
shell)
	echo "rhinet-init: shell on node $NODE; 'rhinet-vm-exit 0' powers off"
	# A user's job (scripts/rhinet-cluster --shell) sets the node up first.
	[ -r /job/.profile ] && . /job/.profile
	setsid cttyhack sh -l
	rhinet-vm-exit 0
	;;
esac
while :; do sleep 3600; done
