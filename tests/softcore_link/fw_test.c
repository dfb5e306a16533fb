// SPDX-License-Identifier: BSD-2-Clause
// The softcore_link test's firmware: every card.h call over the link, run
// in qemu-system-riscv32 against the device library in the test process
// (link_test.c). Each check that fails reports its line (TEST_FAIL); steps
// that need the host ask for it with TEST_STEP and wait for its marker.
// Built with small FIFOs (scripts/firmware-card.sh): 64 doorbells, 4
// inline buffers, 8 frames.
#include <string.h>

#include "link.h"
#include "link_core.h"
#include "link_test.h"
#include "rhinet/fw/card.h"
#include "rhinet/hw_regs.h"

static uint32_t checks, failures;

static void check(bool ok, int line) {
  if (ok) {
    checks++;
  } else {
    failures++;
    rhn_card_reg_set(TEST_FAIL, (uint64_t)line);
  }
}
#define CHECK(cond) check((cond), __LINE__)

static uint8_t buf[HOST_BYTES + 1];
static uint8_t out[80 * 1024];

// Asks the host for a step's actions and waits until it says all were
// sent (its ADMIN_LOG_DEPTH store comes after them in the stream).
static void step(enum test_step s) {
  rhn_card_reg_set(TEST_STEP, s);
  while (rhn_card_reg_get(RHN_REG_ADMIN_LOG_DEPTH) != s)
    rhn_card_wait(rhn_card_now_ns() + 1000000);
}

static bool host_bytes_are(uint64_t addr, const uint8_t *p, uint32_t len) {
  for (uint32_t i = 0; i < len; i++)
    if (p[i] != host_pattern(addr + i)) return false;
  return true;
}

static void test_reads(void) {
  static const uint32_t cases[][2] = {
      {0, 1},         {4095, 2},       {4093, 7},
      {1, 4096},      {4000, 8193},    {123, 65613},
      {70000, 65536}, {0, HOST_BYTES}, {HOST_BYTES - 3, 3},
  };
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint64_t a = HOST_BASE + cases[i][0];
    memset(buf, 0xee, cases[i][1] + 1);
    CHECK(rhn_card_dma_read(a, buf, cases[i][1]) == RHN_CARD_OK);
    CHECK(host_bytes_are(a, buf, cases[i][1]));
    CHECK(buf[cases[i][1]] == 0xee);  // not one byte more
  }
  CHECK(rhn_card_dma_read(0x1000, buf, 16) == RHN_CARD_BUS_ERROR);
  CHECK(rhn_card_dma_read(FAULT_BASE, buf, 64) == RHN_CARD_IOMMU_FAULT);
  // Starts inside host memory, ends past it: the whole read fails.
  CHECK(rhn_card_dma_read(HOST_BASE + HOST_BYTES - 8, buf, 16) ==
        RHN_CARD_BUS_ERROR);
}

static void fill(uint8_t *p, uint32_t seed, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) p[i] = fill_pattern(seed, i);
}

static void test_writes(void) {
  static const uint32_t cases[][2] = {
      {3, 5}, {4093, 10}, {8191, 70000}, {90000, 1}};
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint64_t a = HOST_WRITES + cases[i][0];
    fill(out, i + 1, cases[i][1]);
    CHECK(rhn_card_dma_write(a, out, cases[i][1]) == RHN_CARD_OK);
    // A read is ordered after the writes before it.
    CHECK(rhn_card_dma_read(a, buf, cases[i][1]) == RHN_CARD_OK);
    CHECK(memcmp(buf, out, cases[i][1]) == 0);
  }
  // A refused write is posted (OK); the device reports it afterwards.
  CHECK(rhn_card_dma_write(0x1000, out, 4) == RHN_CARD_OK);
  CHECK(rhn_card_dma_read(HOST_BASE, buf, 4) == RHN_CARD_OK);
  CHECK(rhn_link_write_errors() == 1);

  // Publishes: a 64-byte entry whose aligned owner word goes as a store,
  // an unaligned 4-byte tail as a write, and one longer than a message.
  fill(out, 40, 64);
  memcpy(out + 56, &(uint64_t){0x8000000000000001ull}, 8);
  CHECK(rhn_card_dma_publish(HOST_ENTRIES, out, 64, 56) == RHN_CARD_OK);
  fill(out, 41, 32);
  CHECK(rhn_card_dma_publish(HOST_ENTRIES + 0x101, out, 32, 28) == RHN_CARD_OK);
  fill(out, 42, 70000);
  CHECK(rhn_card_dma_publish(HOST_BASE + 0x1000, out, 70000, 69992) ==
        RHN_CARD_OK);
  CHECK(rhn_card_dma_publish(HOST_ENTRIES, out, 8, 9) == RHN_CARD_MISALIGNED);
  CHECK(rhn_card_dma_store_u64(HOST_ENTRIES + 0x200, 0x1122334455667788ull) ==
        RHN_CARD_OK);
  CHECK(rhn_card_dma_store_u64(HOST_ENTRIES + 0x204, 1) == RHN_CARD_MISALIGNED);
  step(STEP_WRITES_DONE);
}

static bool inline_is(const struct rhn_card_doorbell *e, uint32_t seed) {
  const uint8_t *w = rhn_card_doorbell_inline(e);
  if (!w) return false;
  for (uint32_t i = 0; i < RHN_DB_INLINE_WQE_SIZE; i++)
    if (w[i] != fill_pattern(seed, i)) return false;
  return true;
}

static bool pop_is(uint32_t page, uint32_t offset, uint64_t value, uint8_t size,
                   uint8_t source, bool with_inline) {
  struct rhn_card_doorbell e;
  if (!rhn_card_doorbell_pop(&e)) return false;
  return e.page == page && e.offset == offset && e.value == value &&
         e.size == size && e.source == source &&
         ((e.flags & RHN_CARD_DB_F_INLINE) != 0) == with_inline;
}

static void test_doorbells(void) {
  struct rhn_card_doorbell e;
  CHECK(!rhn_card_doorbell_pop(&e));
  step(STEP_DOORBELLS);
  // What link_test.c's step sent, in order (see there).
  CHECK(pop_is(1, RHN_DB_RQ, 5, 4, RHN_CARD_DB_PAGE, false));
  CHECK(pop_is(2, RHN_DB_SRQ, 6, 4, RHN_CARD_DB_PAGE, false));
  CHECK(pop_is(3, RHN_DB_CQ_ARM, 7 | RHN_DB_CQ_SOLICITED, 4, RHN_CARD_DB_PAGE,
               false));
  CHECK(pop_is(1, RHN_DB_SQ, 9, 4, RHN_CARD_DB_PAGE, false));
  CHECK(rhn_card_doorbell_pop(&e));
  CHECK(e.page == 2 && e.offset == RHN_DB_SQ &&
        e.value == (10 | RHN_DB_SQ_INLINE) &&
        (e.flags & RHN_CARD_DB_F_INLINE) && inline_is(&e, 100));
  CHECK(pop_is(0, RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4, RHN_CARD_DB_REG,
               false));
  CHECK(pop_is(0, RHN_REG_ADMIN_SQ_TAIL, 3, 4, RHN_CARD_DB_REG, false));
  CHECK(pop_is(0, RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | 2, 8, RHN_CARD_DB_REG,
               false));
  CHECK(!rhn_card_doorbell_pop(&e));  // the 32-bit EQ doorbell was dropped
  CHECK(!rhn_card_doorbell_overflowed());
  CHECK(rhn_card_reg_get(RHN_REG_ADMIN_SQ_BASE) == 0x123456789000ull);
  CHECK(rhn_card_reg_get(RHN_REG_ADMIN_CQ_BASE) == 0xabcdef001000ull);
  CHECK(rhn_card_reg_get(RHN_REG_ADMIN_LOG_DEPTH) == STEP_DOORBELLS);

  // More inline kicks than buffers: the first four carry their WQE, the
  // rest come without (the engine fetches those from the ring).
  step(STEP_INLINE_SLOTS);
  for (uint32_t i = 0; i < TEST_INLINE_KICKS; i++) {
    CHECK(rhn_card_doorbell_pop(&e));
    CHECK(e.value == (i | RHN_DB_SQ_INLINE));
    bool with = i < RHN_LINK_CORE_INLINE_SLOTS;
    CHECK(((e.flags & RHN_CARD_DB_F_INLINE) != 0) == with);
    CHECK(with ? inline_is(&e, 200 + i) : !rhn_card_doorbell_inline(&e));
  }
  CHECK(!rhn_card_doorbell_pop(&e));

  // More kicks than FIFO entries: the first 64 stay, the overflow bit is
  // set once.
  step(STEP_OVERFLOW);
  CHECK(rhn_card_doorbell_overflowed());
  CHECK(!rhn_card_doorbell_overflowed());
  for (uint32_t i = 0; i < RHN_LINK_CORE_DB_FIFO; i++)
    CHECK(pop_is(1, RHN_DB_RQ, i, 4, RHN_CARD_DB_PAGE, false));
  // What found the FIFO full and is not in the queues: the latest CONTROL
  // and EQ doorbell (its arm kept), each page's CQ arm (solicited only if
  // each was), the latest admin tail last.
  CHECK(pop_is(0, RHN_REG_CONTROL, RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE,
               4, RHN_CARD_DB_REG, false));
  CHECK(pop_is(0, RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | (2ull << 32) | 6, 8,
               RHN_CARD_DB_REG, false));
  CHECK(pop_is(3, RHN_DB_CQ_ARM, 7, 4, RHN_CARD_DB_PAGE, false));
  CHECK(pop_is(4, RHN_DB_CQ_ARM, 7 | RHN_DB_CQ_SOLICITED, 4, RHN_CARD_DB_PAGE,
               false));
  CHECK(pop_is(0, RHN_REG_ADMIN_SQ_TAIL, 6, 4, RHN_CARD_DB_REG, false));
  CHECK(!rhn_card_doorbell_pop(&e));
}

// The oldest received frame has want bytes of seed's pattern.
static bool peek_is(uint32_t want, uint32_t seed) {
  const uint8_t *f = 0;
  if (rhn_card_wire_rx_peek(&f) != want) return false;
  for (uint32_t i = 0; i < want; i++)
    if (f[i] != fill_pattern(seed, i)) return false;
  return true;
}

// Waits up to 1 s for a frame in the receive FIFO.
static bool wait_frame(void) {
  const uint8_t *f;
  uint64_t end = rhn_card_now_ns() + 1000000000ull;
  while (rhn_card_wire_rx_peek(&f) == 0) {
    if (rhn_card_now_ns() >= end) return false;
    rhn_card_wait(rhn_card_now_ns() + 1000000);
  }
  return true;
}

static void test_frames(void) {
  static const uint32_t sizes[TEST_FRAME_COUNT] = TEST_FRAME_SIZES;
  struct rhn_card_doorbell e;
  const uint8_t *f;
  CHECK(!rhn_card_link_up());
  CHECK(!rhn_card_wire_tx(out, 60));  // link down: dropped
  CHECK(rhn_card_wire_rx_peek(&f) == 0);

  step(STEP_FRAMES_IN);
  CHECK(rhn_card_link_up());
  CHECK(pop_is(0, 0, 1, 4, RHN_CARD_DB_LINK, false));
  for (uint32_t i = 0; i < TEST_FRAME_COUNT; i++) {
    CHECK(peek_is(sizes[i], i));
    rhn_card_wire_rx_pop();
  }
  CHECK(rhn_card_wire_rx_peek(&f) == 0);

  // Many more frames than the receive FIFO holds, sent at once: the
  // device holds the rest until the core has room, so every one comes,
  // in order (the host checks that RX_DROPS stayed 0).
  step(STEP_RX_FLOOD);
  for (uint32_t i = 0; i < TEST_RX_FLOOD; i++) {
    CHECK(wait_frame() && peek_is(100, 50 + i));
    rhn_card_wire_rx_pop();
  }
  CHECK(rhn_card_wire_rx_peek(&f) == 0);
  CHECK(rhn_card_wire_rx_dropped() == 0);

  // More than the device can hold back: it drops the newest and says how
  // many (before its step marker); the others come in order.
  step(STEP_RX_HOLD_FULL);
  uint32_t dropped = rhn_card_wire_rx_dropped();
  CHECK(dropped > 0 && dropped < TEST_RX_HOLD_FRAMES);
  bool in_order = true;
  for (uint32_t i = 0; i + dropped < TEST_RX_HOLD_FRAMES; i++) {
    in_order &= wait_frame() &&
                rhn_card_wire_rx_peek(&f) == RHN_LINK_FRAME_MAX &&
                f[0] == fill_pattern(TEST_RX_HOLD_SEED + i, 0) &&
                f[63] == fill_pattern(TEST_RX_HOLD_SEED + i, 63);
    rhn_card_wire_rx_pop();
  }
  CHECK(in_order);
  CHECK(rhn_card_wire_rx_peek(&f) == 0);
  CHECK(rhn_card_wire_rx_dropped() == 0);  // each drop told once
  rhn_card_reg_set(TEST_DROPS, dropped);
  step(STEP_RX_HOLD_DONE);

  for (uint32_t i = 0; i < TEST_FRAME_COUNT; i++) {
    fill(out, 60 + i, sizes[i]);
    CHECK(rhn_card_wire_tx(out, sizes[i]));
  }
  CHECK(!rhn_card_wire_tx(out, RHN_LINK_FRAME_MAX + 1));
  CHECK(!rhn_card_wire_tx(out, 0));
  step(STEP_FRAMES_OUT_DONE);  // the host takes the link down
  CHECK(!rhn_card_link_up());
  CHECK(pop_is(0, 0, 0, 4, RHN_CARD_DB_LINK, false));
  CHECK(!rhn_card_wire_tx(out, 60));
  CHECK(!rhn_card_doorbell_pop(&e));
}

static void test_irq_regs(void) {
  // An event entry, then its interrupt: the host checks the entry is
  // there when the interrupt comes.
  fill(out, 70, 56);
  memcpy(out + 56, &(uint64_t){0x8000000000000001ull}, 8);
  CHECK(rhn_card_dma_publish(HOST_ENTRIES + 0x400, out, 64, 56) == RHN_CARD_OK);
  rhn_card_irq(2);
  rhn_card_irq(RHN_MSIX_ADMIN);
  rhn_card_irq(2);
  step(STEP_IRQ_DONE);

  rhn_card_reg_set(RHN_REG_VERSION, RHN_VERSION);
  rhn_card_reg_set(RHN_REG_NODE_ID, TEST_NODE);
  rhn_card_reg_set(RHN_REG_STATUS, RHN_STATUS_READY | RHN_STATUS_ADMIN_ON);
  rhn_card_reg_set(RHN_REG_ADMIN_SQ_BASE, 0x5555666677778000ull);
  rhn_card_counter_add(RHN_CNT_TX_PACKETS, 5);
  rhn_card_counter_add(RHN_CNT_TX_PACKETS, 0x100000000ull);
  rhn_card_counter_add(RHN_CNT_KICK_OVERFLOWS, 1);
  CHECK(rhn_card_reg_get(RHN_REG_ADMIN_SQ_BASE) == 0x5555666677778000ull);
  CHECK(rhn_card_reg_get(RHN_REG_NODE_ID) == TEST_NODE);
  step(STEP_REGS_DONE);
}

static void test_time(void) {
  struct rhn_card_doorbell e;
  uint64_t t0 = rhn_card_now_ns();
  CHECK(t0 > 0);
  rhn_card_wait(t0 + TEST_WAIT_NS);
  uint64_t t1 = rhn_card_now_ns();
  CHECK(t1 >= t0 + TEST_WAIT_NS);
  rhn_card_reg_set(TEST_VALUE, t1 - t0);
  step(STEP_DEADLINE_DONE);

  // An idle wait must not keep the emulator busy (the host measures).
  rhn_card_reg_set(TEST_STEP, STEP_IDLE_START);
  t0 = rhn_card_now_ns();
  rhn_card_wait(t0 + TEST_IDLE_NS);
  CHECK(rhn_card_now_ns() >= t0 + TEST_IDLE_NS);
  step(STEP_IDLE_END);

  // No deadline: a kick from the host ends the wait.
  rhn_card_reg_set(TEST_STEP, STEP_WAKE);
  t0 = rhn_card_now_ns();
  rhn_card_wait(UINT64_MAX);
  CHECK(rhn_card_doorbell_pop(&e) && e.value == 77);
  CHECK(rhn_card_now_ns() - t0 >= TEST_WAKE_MS * 1000000ull);
}

// Round trips where the core sleeps between kicks and the host's kick
// lands at varying moments around the core's decision to sleep: a store
// of the sleep flag that the emulator let pass the core's look at the
// ring would leave the core asleep with the kick unread.
static void test_sleep_race(void) {
  rhn_card_reg_set(TEST_STEP, STEP_SLEEP_RACE);
  uint32_t in_order = 0;
  for (uint32_t round = 1; round <= TEST_RACE_ROUNDS; round++) {
    struct rhn_card_doorbell e;
    while (!rhn_card_doorbell_pop(&e)) rhn_card_wait(UINT64_MAX);
    uint32_t last = e.value;
    // The host's second kick of a round it thought lost.
    while (rhn_card_doorbell_pop(&e)) last = e.value;
    in_order += last == round;
    rhn_card_reg_set(TEST_RACE_ECHO, last);
  }
  CHECK(in_order == TEST_RACE_ROUNDS);
}

int main(void) {
  const struct rhn_link_core_config cfg = {TEST_NODE, TEST_DB_PAGES,
                                           TEST_VECTORS};
  rhn_link_start(&cfg);
  // The device's properties beyond the identity (its rto-floor-us).
  struct rhn_card_settings settings = {0, 1};
  rhn_card_get_settings(&settings);
  CHECK(settings.rto_floor_us == TEST_RTO_FLOOR_US && settings.reserved == 0);
  CHECK(rhn_card_twin_bytes() == RHN_LINK_CORE_TWIN_BYTES);
  uint8_t *twin = rhn_card_twin_base();
  // Twin memory as the card side of a DMA read.
  CHECK(rhn_card_dma_read(HOST_BASE + 17, twin, 4096) == RHN_CARD_OK);
  CHECK(host_bytes_are(HOST_BASE + 17, twin, 4096));
  test_reads();
  test_writes();
  test_doorbells();
  test_frames();
  test_irq_regs();
  test_time();
  test_sleep_race();
  rhn_card_reg_set(TEST_CHECKS, checks);
  rhn_link_stop(failures ? 1 : 0);
}
