// SPDX-License-Identifier: BSD-2-Clause
// The link benchmark's firmware: DMA reads and writes of 64 B, 4 KiB and
// 64 KiB, frames out and in, each phase framed by a TEST_STEP mark the
// host times (tests/softcore_link/link_bench.c).
#include <string.h>

#include "link_core.h"
#include "link_test.h"
#include "rhinet/fw/card.h"
#include "rhinet/hw_regs.h"

static uint8_t buf[65536];

static void mark(uint32_t phase) { rhn_card_reg_set(TEST_STEP, phase); }

int main(void) {
  const struct rhn_link_core_config cfg = {TEST_NODE, TEST_DB_PAGES,
                                           TEST_VECTORS};
  rhn_link_start(&cfg);
  while (rhn_card_reg_get(RHN_REG_ADMIN_LOG_DEPTH) == 0)
    rhn_card_wait(rhn_card_now_ns() + 1000000);
  uint32_t budget = (uint32_t)rhn_card_reg_get(RHN_REG_ADMIN_LOG_DEPTH);
  static const uint32_t sizes[3] = {64, 4096, 65536};
  int bad = 0;

  for (int i = 0; i < 3; i++) {
    mark(BENCH_READ_64 + i);
    for (uint32_t n = bench_count(budget, sizes[i]); n; n--)
      bad |= rhn_card_dma_read(HOST_BASE, buf, sizes[i]) != RHN_CARD_OK;
  }
  for (int i = 0; i < 3; i++) {
    mark(BENCH_WRITE_64 + i);
    for (uint32_t n = bench_count(budget, sizes[i]); n; n--)
      rhn_card_dma_write(HOST_WRITES, buf, sizes[i]);
    // Until the writes are in host memory: a read is ordered after them.
    bad |= rhn_card_dma_read(HOST_BASE, buf, 8) != RHN_CARD_OK;
  }
  mark(BENCH_FRAME_OUT);
  for (uint32_t n = bench_count(budget, BENCH_FRAME_BYTES); n; n--)
    bad |= !rhn_card_wire_tx(buf, BENCH_FRAME_BYTES);
  bad |= rhn_card_dma_read(HOST_BASE, buf, 8) != RHN_CARD_OK;
  mark(BENCH_FRAME_IN);
  // The host sends while fewer than a FIFO's worth are unanswered; every
  // eighth frame taken is a credit back (TEST_VALUE: frames taken).
  const uint32_t total = bench_count(budget, BENCH_FRAME_BYTES);
  for (uint32_t got = 0; got < total;) {
    const uint8_t *f;
    if (rhn_card_wire_rx_peek(&f)) {
      rhn_card_wire_rx_pop();
      if (++got % 8 == 0 || got == total) rhn_card_reg_set(TEST_VALUE, got);
    } else {
      rhn_card_wait(UINT64_MAX);
    }
  }
  mark(BENCH_END);
  rhn_link_stop(bad);
}
