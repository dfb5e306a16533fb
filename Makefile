# RHiNET-NG top-level entry points. On a fresh Debian 12 machine:
#   make main   set up everything and run the main job
#   make test   set up everything and run every test
# `main` boots a two-node emulated cluster (QEMU with the rhinet device,
# connected through the fabric switch) and runs a datagram workload between
# the nodes, then the engine benchmark.

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD_DIR      := build
FUZZ_BUILD_DIR := build-fuzz
BUILD_TYPE     ?= RelWithDebInfo
CTEST_JOBS     ?= 2
NODES          ?= 2
ROUNDS         ?= 2000

# C/C++ sources that clang-format owns (build trees excluded).
FORMAT_DIRS  := firmware fabric tests include
FORMAT_FILES  = $(shell find $(FORMAT_DIRS) \
	\( -name 'build' -o -name 'build-*' -o -name 'corpus' \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' \
	-o -name '*.hh' -o -name '*.hpp' \) -print 2>/dev/null | sort)

.PHONY: all deps build build-main build-fuzz vm-prepare test test-unit \
	test-vm bench cluster-workload cluster main format format-check checkpatch \
	clean help

all: build

help:
	@echo "make main         set up, build, boot a 2-node cluster, run a workload, benchmark"
	@echo "make test         set up, build, run all tests (what CI runs)"
	@echo "make test-unit    set up, build, run only tests labelled 'unit'"
	@echo "make test-vm      set up, build, run only tests labelled 'vm'"
	@echo "make cluster      boot NODES (default 2) nodes, shell on node 0"
	@echo "make bench        set up, build, run the engine benchmark"
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
build: deps
	@$(MAKE) --no-print-directory build-fuzz
	@$(MAKE) --no-print-directory build-main
	@$(MAKE) --no-print-directory vm-prepare

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

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(CTEST_JOBS)

test-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(CTEST_JOBS) -L unit

test-vm: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L vm

bench: build
	$(BUILD_DIR)/tests/bench/engine_bench

# Two emulated nodes exchange ROUNDS datagram round trips (up to 3 KiB, every
# byte checked) through the fabric switch.
cluster-workload: build
	bash tests/vm/run-cluster.sh -n 2 --script tests/vm/scripts/smoke.sh \
		--arg $(ROUNDS) --timeout 600 --out $(BUILD_DIR)/vm/main-run
	@grep -h "PASS\|counters" $(BUILD_DIR)/vm/main-run/node*.log

# Interactive: NODES nodes, a shell on node 0's console.
cluster: build
	bash tests/vm/run-cluster.sh -n $(NODES) --shell 0

main: cluster-workload bench

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
