# RHiNET-NG top-level entry points. On a fresh Debian 12 machine:
#   make main   set up everything and run the main job
#   make test   set up everything and run every test
# `main` (scripts/main.sh) boots two emulated nodes (QEMU with the rhinet
# device, connected through the fabric switch) and runs unmodified
# rdma-core clients between them over our NIC and over soft-RoCE in the
# same guests, side by side; then UCX and Open MPI on two nodes, the
# userlib programs on four, and the engine alone; then one summary line
# per part. `make test` runs its quick variant (the VM test vm_main).

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD_DIR      := build
FUZZ_BUILD_DIR := build-fuzz
BUILD_TYPE     ?= RelWithDebInfo
CTEST_JOBS     ?= 2
NODES          ?= 2
ROUNDS         ?= 2000

# C/C++ sources that clang-format owns (build trees excluded).
FORMAT_DIRS  := firmware fabric tests include userlib conformance shmem
FORMAT_FILES  = $(shell find $(FORMAT_DIRS) \
	\( -name 'build' -o -name 'build-*' -o -name 'corpus' \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' \
	-o -name '*.hh' -o -name '*.hpp' \) -print 2>/dev/null | sort)

.PHONY: all deps build build-main build-fuzz vm-prepare test test-unit \
	test-vm bench bench-verbs bench-mpi bench-verbs-quick cluster-workload cluster main main-userlib format format-check checkpatch \
	clean help

all: build

help:
	@echo "make main         set up, build, the main job: verbs clients, UCX/MPI, userlib over the NIC vs soft-RoCE, with a summary"
	@echo "make test         set up, build, run all tests (what CI runs)"
	@echo "make test-unit    set up, build, run only tests labelled 'unit'"
	@echo "make test-vm      set up, build, run only tests labelled 'vm'"
	@echo "make cluster      boot NODES (default 2) nodes, shell on node 0"
	@echo "make bench        set up, build, run the engine benchmarks (PUSH, tag matching)"
	@echo "make bench-verbs  set up, build, perftest & co. over rhinet0 vs rxe0 in two guests (bench-verbs-quick: fewer iterations)"
	@echo "make bench-mpi    set up, build, Open MPI ping-pong over rhinet0 vs rxe0 in two guests (PERFTEST=1: ucx_perftest too)"
	@echo "make cluster-workload  datagram round trips between two nodes through raw device access"
	@echo "make deps         install missing Debian packages"
	@echo "make build        build $(BUILD_DIR)/, $(FUZZ_BUILD_DIR)/, QEMU and the VM images"
	@echo "make format       clang-format -i the C/C++ sources"
	@echo "make format-check fail if any source is not formatted"
	@echo "make checkpatch   the kernel's checkpatch.pl --strict over kernel/rhinet/"
	@echo "make clean        remove the build trees"

deps:
	@bash scripts/setup-deps.sh

# The fuzz tree is built first: the main tree's tests may run its binaries
# (RHINET_FUZZ_BIN_DIR) to replay the fuzz corpora.
build:
	@bash scripts/phase.sh deps $(MAKE) --no-print-directory deps
	@bash scripts/phase.sh build-fuzz $(MAKE) --no-print-directory build-fuzz
	@bash scripts/phase.sh build-main $(MAKE) --no-print-directory build-main
	@bash scripts/phase.sh vm-prepare $(MAKE) --no-print-directory vm-prepare

build-main:
	cmake -S . -B $(BUILD_DIR) -G Ninja \
		-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
		-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
		-DRHINET_FUZZ_BIN_DIR=$(CURDIR)/$(FUZZ_BUILD_DIR)/tests/fuzz
	cmake --build $(BUILD_DIR)

build-fuzz:
	cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja \
		-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
		-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
		-DRHINET_FUZZ=ON
	cmake --build $(FUZZ_BUILD_DIR)

# QEMU with the rhinet device (built once into ~/.cache/rhinet, keyed by its
# inputs; our device code is rebuilt incrementally), the guest kernel and the
# shared initramfs.
vm-prepare:
	bash tests/vm/prepare.sh $(BUILD_DIR)

# Ends with where the time went (phases, slowest tests), whatever the result.
test:
	@rm -f .phase-times
	@$(MAKE) --no-print-directory build
	@bash scripts/phase.sh ctest ctest --test-dir $(BUILD_DIR) \
		--output-on-failure -j$(CTEST_JOBS); rc=$$?; \
		bash scripts/time-report.sh $(BUILD_DIR); exit $$rc

test-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(CTEST_JOBS) -L unit

test-vm: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L vm

bench: build
	$(BUILD_DIR)/tests/bench/engine_bench
	$(BUILD_DIR)/tests/bench/tag_bench
	$(BUILD_DIR)/tests/bench/sync_bench
	$(BUILD_DIR)/tests/bench/fabric_floor
	$(BUILD_DIR)/tests/bench/modes_bench

# Two nodes boot once and run the same unmodified clients over rhinet0 and
# then over rxe0 (rdma_rxe on eth0, the IP interface of the same NIC); one
# table, our NIC beside soft-RoCE. Fails when any client fails.
bench-verbs: build
	bash tests/bench/verbs_vs_rxe.sh --out $(BUILD_DIR)/vm/bench-verbs

# Open MPI (and with PERFTEST=1 ucx_perftest) over rhinet0 vs rxe0.
bench-mpi: build
	bash tests/bench/mpi_vs_rxe.sh $(if $(PERFTEST),--perftest) --out $(BUILD_DIR)/vm/bench-mpi

bench-verbs-quick: build
	bash tests/bench/verbs_vs_rxe.sh --quick --out $(BUILD_DIR)/vm/bench-verbs

# Two emulated nodes exchange ROUNDS datagram round trips (up to 3 KiB, every
# byte checked) through the fabric switch, by raw device access (no driver).
cluster-workload: build
	bash tests/vm/run-cluster.sh -n 2 --script tests/vm/scripts/smoke.sh \
		--arg $(ROUNDS) --timeout 600 --out $(BUILD_DIR)/vm/main-run
	@grep -h "PASS\|counters" $(BUILD_DIR)/vm/main-run/node*.log

# A user's job (scripts/rhinet-cluster, Documentation/userlib/running.md):
# NODES nodes with the driver, addresses, ssh and userlib; COPY's files in
# /job; RUN on node 0 (its output and status returned), or without RUN a
# shell on node 0's console in the same environment.
cluster: build
	bash scripts/rhinet-cluster -n $(NODES) $(foreach c,$(COPY),-c $(c)) \
		$(if $(RUN),-- "$(RUN)",--shell)

# The main job (scripts/main.sh, whose quick variant make test runs as
# vm_main): rdma-core clients over rhinet0 beside soft-RoCE, UCX and Open
# MPI, the userlib programs on four nodes, the engine alone; a summary line
# per part at the end.
main: build
	bash scripts/main.sh --build $(BUILD_DIR)

# The RHiNET model through userlib alone: four nodes run the userlib
# programs under rhinet-run (the same run as make main's userlib part).
main-userlib: build
	bash tests/vm/userlib_4nodes.sh --env $(BUILD_DIR)/vm/env \
		--out $(BUILD_DIR)/vm/main-userlib

format: deps
	clang-format -i $(FORMAT_FILES)

format-check: deps
	clang-format --dry-run --Werror $(FORMAT_FILES)

# rhinet.ko's sources are kernel style, not clang-format's: checkpatch.pl
# --strict judges them (also the ctest kernel_checkpatch, label lint).
checkpatch: deps
	bash scripts/checkpatch.sh

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_BUILD_DIR)
