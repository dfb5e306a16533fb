// SPDX-License-Identifier: BSD-2-Clause
// The link benchmark: runs fw_bench.c's image in qemu-system-riscv32
// against the device library and a fake host memory, and prints each
// phase's rate. The shared-memory image and the UART image compare the
// two transports (Documentation/hardware/soft-core.md has the numbers).
//
//   softcore_link_bench FIRMWARE.elf [shm|uart] [BUDGET_KIB] [SPIN_US]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_host.h"
#include "rhinet/hw_regs.h"

struct bench {
  uint64_t t[BENCH_END + 1];
  uint32_t budget;
  uint32_t taken; /* frames the core reported taken */
  bool ended;
};

static struct bench B;

static void on_reg_set(struct fake_host *h, uint32_t offset, uint64_t value) {
  (void)h;
  if (offset == TEST_STEP && value >= 1 && value <= BENCH_END) {
    B.t[value] = fake_host_now();
    if (value == BENCH_END) B.ended = true;
  } else if (offset == TEST_VALUE) {
    B.taken = (uint32_t)value;
  }
}

static uint32_t frames_total, frames_sent, fifo;

// Stops the host loop at the end, or when a frame may be sent.
static bool ended(struct fake_host *h) {
  (void)h;
  return B.ended || (B.t[BENCH_FRAME_IN] && frames_sent < frames_total &&
                     frames_sent - B.taken < fifo);
}

static void row(const char *what, enum bench_phase p, uint32_t bytes) {
  uint32_t n = bench_count(B.budget, bytes);
  double s = (double)(B.t[p + 1] - B.t[p]) / 1e9;
  printf("%-22s %6u B  %7u ops  %9.1f MB/s  %8.2f us/op\n", what, bytes, n,
         (double)n * bytes / s / 1e6, s / n * 1e6);
}

int main(int argc, char **argv) {
  static struct fake_host h;
  char err[256];
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s FIRMWARE.elf [shm|uart] [BUDGET_KIB] [SPIN_US]\n",
            argv[0]);
    return 2;
  }
  bool uart = argc > 2 && strcmp(argv[2], "uart") == 0;
  B.budget = argc > 3 ? (uint32_t)atoi(argv[3]) : (uart ? 256 : 65536);
  fake_host_init(&h);
  h.on_reg_set = on_reg_set;
  RhnSoftCoreConfig cfg = {.firmware = argv[1],
                           .ram_mib = 16,
                           .uart_stream = uart,
                           .db_pages = TEST_DB_PAGES,
                           .spin_us = argc > 4 ? (uint32_t)atoi(argv[4]) : 0};
  RhnSoftCore *sc = rhn_sc_spawn(&cfg, &fake_host_ops, &h, err, sizeof(err));
  if (!sc) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  rhn_sc_set_link(sc, true);
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_LOG_DEPTH, B.budget, 4);
  const uint32_t frames = bench_count(B.budget, BENCH_FRAME_BYTES);
  static uint8_t frame[BENCH_FRAME_BYTES];
  frames_total = frames;
  fifo = rhn_sc_hello(sc)->rx_fifo;
  while (!B.ended) {
    if (ended(&h)) {
      rhn_sc_frame_in(sc, frame, sizeof(frame));
      frames_sent++;
    }
    if (fake_host_run(&h, sc, 100, ended) < 0) break;
  }
  if (!B.ended) {
    fprintf(stderr, "bench: %s\n", rhn_sc_error(sc));
    return 1;
  }
  int status = rhn_sc_stop(sc, 5000);
  printf("transport: %s, budget %u KiB per phase, device spins %u us\n",
         uart ? "UART byte stream" : "shared-memory rings", B.budget,
         cfg.spin_us);
  row("DMA read", BENCH_READ_64, 64);
  row("DMA read", BENCH_READ_4K, 4096);
  row("DMA read", BENCH_READ_64K, 65536);
  row("DMA write", BENCH_WRITE_64, 64);
  row("DMA write", BENCH_WRITE_4K, 4096);
  row("DMA write", BENCH_WRITE_64K, 65536);
  row("frame out", BENCH_FRAME_OUT, BENCH_FRAME_BYTES);
  row("frame in", BENCH_FRAME_IN, BENCH_FRAME_BYTES);
  rhn_sc_free(sc);
  if (status != 0 || h.nframes != frames) {
    fprintf(stderr, "bench: core exit %d, %u of %u frames out\n", status,
            h.nframes, frames);
    return 1;
  }
  return 0;
}
