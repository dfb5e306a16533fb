#!/bin/sh
# What firmware.sh and firmware_softcore.sh share: sourced after
# verbs.lib.sh (run-cluster.sh ships every *.lib.sh into /test/).

# fw_dev: $dev, the device's devlink handle (again after a rebind).
fw_dev() {
	dev=$(devlink dev show | grep -m1 '^pci/')
	[ -n "$dev" ] || fail "no devlink instance"
}

# fw running|stored: that "fw" version of `devlink dev info`.
fw() {
	devlink dev info "$dev" |
		awk -v sec="$1:" '$1 ~ /:$/ { cur = $1 } cur == sec && $1 == "fw" { print $2 }'
}

# fw_log WHAT PATTERN: rhinet.ko's firmware lines of the kernel log, and
# one matching PATTERN (grep -E) among them.
fw_log() {
	dmesg | grep "rhinet" | grep -E "firmware|reporter|reload|\.bin"
	dmesg | grep -qE "$2" || fail "$1: the log does not say '$2'"
}
