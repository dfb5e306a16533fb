# RHiNET-NG top-level entry points. On a fresh Debian 12 machine:
#   make main   set up everything and run the main job
#   make test   set up everything and run every test
# `main` runs the NIC engine benchmark for now; once the QEMU device and the
# driver exist it will boot the emulated cluster instead.

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD_DIR      := build
FUZZ_BUILD_DIR := build-fuzz
BUILD_TYPE     ?= RelWithDebInfo
CTEST_JOBS     ?= 2

# C/C++ sources that clang-format owns (build trees excluded).
FORMAT_DIRS  := firmware tests include
FORMAT_FILES  = $(shell find $(FORMAT_DIRS) \
	\( -name 'build' -o -name 'build-*' -o -name 'corpus' \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' \
	-o -name '*.hh' -o -name '*.hpp' \) -print 2>/dev/null | sort)

.PHONY: all deps build build-main build-fuzz test test-unit bench \
	main format format-check clean help

all: build

help:
	@echo "make main         set up, build, run the main job (engine benchmark today)"
	@echo "make test         set up, build, run all tests (what CI runs)"
	@echo "make test-unit    set up, build, run only tests labelled 'unit'"
	@echo "make bench        set up, build, run the engine benchmark"
	@echo "make deps         install missing Debian packages"
	@echo "make build        configure and build $(BUILD_DIR)/ and $(FUZZ_BUILD_DIR)/"
	@echo "make format       clang-format -i the C/C++ sources"
	@echo "make format-check fail if any source is not formatted"
	@echo "make clean        remove the build trees"

deps:
	@bash scripts/setup-deps.sh

# The fuzz tree is built first: the main tree's tests may run its binaries
# (RHINET_FUZZ_BIN_DIR) to replay the fuzz corpora.
build: deps
	@$(MAKE) --no-print-directory build-fuzz
	@$(MAKE) --no-print-directory build-main

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

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(CTEST_JOBS)

test-unit: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(CTEST_JOBS) -L unit

bench: build
	$(BUILD_DIR)/tests/bench/engine_bench

# The main job. Today: the engine benchmark. Later: boot the emulated
# cluster of VMs and run the system workload on it.
main: bench

format: deps
	clang-format -i $(FORMAT_FILES)

format-check: deps
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_BUILD_DIR)
