#!/bin/sh
# The debug kernel's end-of-test leak check still finds a leak: the kernel's
# own kmemleak-test module orphans kmalloc and vmalloc blocks when it loads
# and a list of ten when it is removed. This script succeeds; /init's scans
# after it must then report the leaks and fail the node, and that report is
# what the test passes on (PASS_REGULAR_EXPRESSION in CMakeLists.txt).
#   kmemleak_selftest.sh NODE NODES
fail() { echo "kmemleak_selftest: FAIL: $*"; exit 1; }

[ -e /sys/kernel/debug/kmemleak ] || fail "this kernel has no kmemleak"
modprobe kmemleak-test || fail "modprobe kmemleak-test"
rmmod kmemleak_test || fail "rmmod kmemleak_test"
echo "kmemleak_selftest: leaked on purpose, the check must report it"
