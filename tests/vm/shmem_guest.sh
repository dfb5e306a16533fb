#!/bin/sh
# On node 0 of vm_shmem (tests/vm/shmem.sh), in /job: each OpenSHMEM test
# program with oshrun, four PEs on NODES nodes; then the misuse cases,
# each of which must end with its status and a message naming the routine.
#   shmem_guest.sh NODES
NODES=$1
hosts=node0
i=1
while [ "$i" -lt "$NODES" ]; do
	hosts="$hosts,node$i"
	i=$((i + 1))
done
cd /job/shmem || exit 1
fails=0
run() { # NAME [ARGS]: four PEs, each must print its ok line
	name=$1
	shift
	./oshrun -n 4 --hosts "$hosts" --timeout 300 "./$name" "$@" >"$name.out" 2>&1
	rc=$?
	# Not anchored: another PE's message may share the line.
	oks=$(grep -o "shmem_$name: PE [0-3] of 4: ok" "$name.out" | sort -u | wc -l)
	if [ "$rc" = 0 ] && [ "$oks" = 4 ]; then
		echo "shmem_guest: ok: $name (4 PEs on $NODES nodes)"
	else
		echo "shmem_guest: FAIL: $name: status $rc, $oks of 4 PEs ok"
		sed 's/^/  | /' "$name.out"
		fails=$((fails + 1))
	fi
}
misuse() { # CASE STATUS TEXT: the PE ends with STATUS and TEXT
	./oshrun -n 2 --hosts "$hosts" --timeout 120 ./misuse "$1" >"misuse-$1.out" 2>&1
	rc=$?
	if [ "$rc" = "$2" ] && grep -qF -- "$3" "misuse-$1.out"; then
		echo "shmem_guest: ok: misuse $1: status $rc, '$3'"
	else
		echo "shmem_guest: FAIL: misuse $1: status $rc (want $2), want '$3'"
		sed 's/^/  | /' "misuse-$1.out"
		fails=$((fails + 1))
	fi
}

# The default heap (64 MiB) once; the others with a smaller one.
run hello
export SHMEM_SYMMETRIC_SIZE=16M
for p in put_get nbi_quiet atomics pingpong put_signal collectives barrier \
	collect wait_set locks teams generic contexts ring active_set fence_order \
	wait_sleep; do
	run $p
done
# The waits that slept: how long, how many sleeps and wake-ups.
grep -h "waited" wait_sleep.out | sed 's/^/  /'
# Contexts on endpoints of their own, then all on the default one (the
# pool empty): each prints B's put + quiet time while A streams.
run ctx_endpoints
grep -h "context endpoints," ctx_endpoints.out | sed 's/^/  /'
SHMEM_CONTEXT_ENDPOINTS=0 run ctx_endpoints
grep -h "context endpoints," ctx_endpoints.out | sed 's/^/  /'
# What sleeping costs a ping-pong (shmem_long_p + shmem_long_wait_until):
# two PEs on two nodes and on one, waits sleeping after the default spin
# (SHMEM_WAIT_SPIN_US unset), after none (0) and never sleeping (never).
# The round-trip times are printed, not judged.
rtt() { # WHERE SPIN oshrun-placement...
	where=$1
	spin=$2
	shift 2
	if [ "$spin" = default ]; then
		./oshrun -n 2 "$@" --timeout 300 ./pingpong_rtt 1000 >rtt.out 2>&1
	else
		SHMEM_WAIT_SPIN_US=$spin ./oshrun -n 2 "$@" --timeout 300 \
			./pingpong_rtt 1000 >rtt.out 2>&1
	fi
	rc=$?
	oks=$(grep -o "shmem_pingpong_rtt: PE [01] of 2: ok" rtt.out | sort -u | wc -l)
	if [ "$rc" = 0 ] && [ "$oks" = 2 ]; then
		echo "shmem_guest: ok: pingpong_rtt ($where, spin $spin)"
		grep -h "round trips" rtt.out | sed 's/^/  /'
	else
		echo "shmem_guest: FAIL: pingpong_rtt ($where, spin $spin): status $rc"
		sed 's/^/  | /' rtt.out
		fails=$((fails + 1))
	fi
}
for spin in default 0 never; do
	[ "$NODES" -ge 2 ] && rtt "two nodes" $spin --hosts node0,node1
	rtt "one node" $spin --hosts node0 --per-node 2
done
# Globals and statics; SHMEM_DEBUG's line gives each PE's registered data.
export SHMEM_DEBUG=1
run globals
unset SHMEM_DEBUG
if grep -q "shmem_init: symmetric heap .* program data [1-9][0-9]* bytes" \
	globals.out; then
	echo "shmem_guest: ok: globals: SHMEM_DEBUG names the program data"
	grep -o "symmetric heap .*" globals.out | head -n 1 | sed 's/^/  /'
else
	echo "shmem_guest: FAIL: globals: no SHMEM_DEBUG line of the program data"
	fails=$((fails + 1))
fi
# The benchmark's figures, for the log (its own check: the reduction).
./oshrun -n 4 --hosts "$hosts" --timeout 300 ./rhinet_shmem_bench 100 >bench.out 2>&1
rc=$?
sed 's/^/  /' bench.out
if [ "$rc" = 0 ]; then
	echo "shmem_guest: ok: rhinet_shmem_bench"
else
	echo "shmem_guest: FAIL: rhinet_shmem_bench: status $rc"
	fails=$((fails + 1))
fi

misuse int-amo 1 "shmem_int_atomic_inc: dest"
misuse int-amo 1 "is not 4-byte aligned"
misuse stack 1 "shmem_long_p: dest"
misuse stack 1 "is not symmetric: it is neither inside the symmetric heap"
misuse pe 1 "shmem_long_p: PE 2 is not a PE of this program (0 to 1)"
misuse team 3 "shmem_team_split_strided: start 0, stride 1, size 3 name PEs that are not PEs of the parent team (0 to 1)"
misuse lock 1 "shmem_set_lock: lock"
misuse destroyed 1 "shmem_long_sum_reduce: team"
misuse ctx-destroyed 1 "shmem_ctx_long_p: context"
misuse ctx-destroyed 1 "was destroyed (shmem_ctx_destroy)"
misuse ctx-team-pe 1 "shmem_ctx_long_p: PE 2 is not a PE of the context's team (0 to 1)"
misuse active-pe 1 "shmem_barrier: PE 0 is not in the active set PE_start 1, logPE_stride 0, PE_size 1"
misuse active-stride 1 "shmem_barrier: logPE_stride -1 is not a stride (0 to 30)"
misuse active-size 1 "shmem_barrier: PE_size 0: an active set has 1 PE or more"
misuse heap 4 "shmem_malloc: no room for 1099511627776 bytes in the symmetric heap"
SHMEM_SYMMETRIC_SIZE=lots misuse none 1 "SHMEM_SYMMETRIC_SIZE: 'lots' is not a size"
SHMEM_CONTEXT_ENDPOINTS=lots misuse none 1 "shmem_init: SHMEM_CONTEXT_ENDPOINTS: 'lots' is not a count (0 to 32 endpoints)"
SHMEM_CONTEXT_ENDPOINTS=33 misuse none 1 "SHMEM_CONTEXT_ENDPOINTS: '33' is too many"
SHMEM_WAIT_SPIN_US=5ms misuse none 1 "shmem_init: SHMEM_WAIT_SPIN_US: '5ms' is not a number of microseconds (0 to 1000000 microseconds, or never)"

if [ "$fails" = 0 ]; then
	echo "shmem_guest: PASS"
else
	echo "shmem_guest: FAIL: $fails"
	exit 1
fi
