#!/usr/bin/env bash
# Elaborates the generated SystemVerilog register package with Verilator
# (--lint-only -Wall), together with tests/contract/regs_pkg_check.sv,
# which checks the layout rules at elaboration. Unused parameters are the
# point of a package, so that warning alone is off.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v verilator >/dev/null || {
	echo "regmap-sv-lint: verilator is missing (Debian package verilator; make deps)" >&2
	exit 1
}
exec verilator --lint-only -Wall -Wno-UNUSEDPARAM --top-module regs_pkg_check \
	"$REPO/include/hw/rhinet/rhinet_regs_pkg.sv" \
	"$REPO/tests/contract/regs_pkg_check.sv"
