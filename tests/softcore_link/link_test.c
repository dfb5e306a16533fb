// SPDX-License-Identifier: BSD-2-Clause
// The softcore_link test: the device library (qemu_device/softcore/) with a
// fake host memory against the link firmware (fw_test.c) running in
// qemu-system-riscv32, every card.h call; then peers that vanish, and a
// fake core on a socket pair that sends bad input.
//
//   softcore_link_test FIRMWARE.elf
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_host.h"
#include "rhinet/hw.h"
#include "rhinet/hw_regs.h"

static unsigned failed, passed;

static void expect(bool ok, const char *fmt, ...) {
  if (ok) {
    passed++;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failed++;
}

static const char *firmware;

// db_pages 0: the library serves as many pages as the core's HELLO names.
static RhnSoftCore *spawn_pages(struct fake_host *h, uint32_t db_pages) {
  char err[256];
  // RHINET_SOFTCORE_LOG=FILE: the emulator logs the core's traps there.
  // One file per emulator: FILE.1, FILE.2, ...
  static unsigned runs;
  static char path[512];
  const char *log = getenv("RHINET_SOFTCORE_LOG");
  if (log) snprintf(path, sizeof(path), "%s.%u", log, ++runs);
  const char *const log_args[] = {"-d", "guest_errors,int", "-D", path, NULL};
  RhnSoftCoreConfig cfg = {.firmware = firmware,
                           .ram_mib = 16,
                           .db_pages = db_pages,
                           .rto_floor_us = TEST_RTO_FLOOR_US,
                           .extra_args = log ? log_args : NULL};
  RhnSoftCore *sc = rhn_sc_spawn(&cfg, &fake_host_ops, h, err, sizeof(err));
  if (!sc) {
    fprintf(stderr, "FAIL: spawn: %s\n", err);
    exit(1);
  }
  return sc;
}

static RhnSoftCore *spawn(struct fake_host *h) {
  return spawn_pages(h, TEST_DB_PAGES);
}

/* ---- The scripted run ---------------------------------------------- */

struct script {
  RhnSoftCore *sc;
  uint64_t wake_at;     // when to send the kick that ends the last wait
  uint64_t idle_cpu;    // the emulator's CPU ticks at STEP_IDLE_START
  uint64_t idle_start;  // and the clock
  uint32_t core_checks;
  unsigned core_failures;
  uint32_t race_round;    // STEP_SLEEP_RACE: the round the core answers next
  uint64_t race_kick_at;  // when to kick for it (0: not yet due)
  uint64_t race_sent_at;  // when its kick went (0: none out)
  unsigned race_lost;     // kicks the core slept through
  unsigned race_wrong;    // answers out of turn
  uint64_t race_echo_at;  // when the last answer came
  uint64_t race_nap_ns;   // from an answer until the core is seen asleep
};

static struct script S;

static uint64_t cpu_ticks(pid_t pid) {
  char path[64], line[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(line, 1, sizeof(line) - 1, f);
  fclose(f);
  line[n] = 0;
  // Fields after the command's closing parenthesis; utime is the 14th.
  const char *p = strrchr(line, ')');
  unsigned long ut = 0, st = 0;
  if (p)
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
           &st);
  return ut + st;
}

static bool mem_is_fill(struct fake_host *h, uint64_t addr, uint32_t seed,
                        uint32_t len) {
  const uint8_t *m = h->mem + (addr - HOST_BASE);
  for (uint32_t i = 0; i < len; i++)
    if (m[i] != fill_pattern(seed, i)) return false;
  return true;
}

static int log_find(struct fake_host *h, char kind, uint64_t addr,
                    uint32_t len) {
  for (unsigned i = 0; i < h->nlog; i++)
    if (h->log[i].kind == kind && h->log[i].addr == addr &&
        h->log[i].len == len)
      return (int)i;
  return -1;
}

// body write, barrier, owner word (a store or a write), in this order.
static void expect_publish(struct fake_host *h, uint64_t addr, uint32_t body,
                           char tail_kind, uint32_t tail) {
  int b = log_find(h, 'w', addr, body);
  int t = log_find(h, tail_kind, addr + body, tail);
  expect(b >= 0 && t == b + 2 && h->log[b + 1].kind == 'b',
         "publish at %#llx: body %d, owner word %d", (unsigned long long)addr,
         b, t);
}

static void check_writes(struct fake_host *h) {
  static const uint32_t cases[][2] = {
      {3, 5}, {4093, 10}, {8191, 70000}, {90000, 1}};
  for (unsigned i = 0; i < 4; i++)
    expect(mem_is_fill(h, HOST_WRITES + cases[i][0], i + 1, cases[i][1]),
           "DMA write %u landed", i);
  uint64_t owner;
  memcpy(&owner, h->mem + (HOST_ENTRIES - HOST_BASE) + 56, 8);
  expect(mem_is_fill(h, HOST_ENTRIES, 40, 56) && owner == 0x8000000000000001ull,
         "the published entry");
  expect(mem_is_fill(h, HOST_ENTRIES + 0x101, 41, 32), "unaligned publish");
  expect(mem_is_fill(h, HOST_BASE + 0x1000, 42, 70000), "long publish");
  expect_publish(h, HOST_ENTRIES, 56, 's', 8);
  expect_publish(h, HOST_ENTRIES + 0x101, 28, 'w', 4);
  // The long one: its head goes ahead as a plain write.
  expect(log_find(h, 'w', HOST_BASE + 0x1000, 70000 - 65536) >= 0,
         "long publish's head");
  expect_publish(h, HOST_BASE + 0x1000 + 4464, 65528, 's', 8);
  uint64_t v;
  memcpy(&v, h->mem + (HOST_ENTRIES - HOST_BASE) + 0x200, 8);
  expect(v == 0x1122334455667788ull, "store64 value %#llx",
         (unsigned long long)v);
  unsigned stores = 0;
  for (unsigned i = 0; i < h->nlog; i++) stores += h->log[i].kind == 's';
  expect(stores == 3, "3 stores (the misaligned one not sent), got %u", stores);
  const uint8_t *after = h->mem + (HOST_ENTRIES - HOST_BASE) + 0x208;
  expect(after[0] == host_pattern(HOST_ENTRIES + 0x208),
         "nothing past the store");
  expect(rhn_sc_counter(S.sc, RHN_CNT_DMA_ERRORS) == 1,
         "one refused write counted, got %llu",
         (unsigned long long)rhn_sc_counter(S.sc, RHN_CNT_DMA_ERRORS));
}

static void stage(RhnSoftCore *sc, uint32_t page, uint32_t seed) {
  uint8_t w[RHN_DB_INLINE_WQE_SIZE];
  for (uint32_t i = 0; i < sizeof(w); i++) w[i] = fill_pattern(seed, i);
  for (uint32_t i = 0; i < sizeof(w); i += 8) {
    uint64_t v;
    memcpy(&v, w + i, 8);
    rhn_sc_bar2_write(
        sc, ((uint64_t)page << RHN_DB_PAGE_SHIFT) + RHN_DB_INLINE_WQE + i, v,
        8);
  }
}

static uint64_t db(uint32_t page, uint32_t offset) {
  return ((uint64_t)page << RHN_DB_PAGE_SHIFT) + offset;
}

static void send_doorbells(RhnSoftCore *sc) {
  rhn_sc_bar2_write(sc, db(1, RHN_DB_RQ), 5, 4);
  rhn_sc_bar2_write(sc, db(2, RHN_DB_SRQ), 6, 4);
  rhn_sc_bar2_write(sc, db(3, RHN_DB_CQ_ARM), 7 | RHN_DB_CQ_SOLICITED, 4);
  rhn_sc_bar2_write(sc, db(1, RHN_DB_SQ), 9, 4);
  stage(sc, 2, 100);
  rhn_sc_bar2_write(sc, db(2, RHN_DB_SQ), 10 | RHN_DB_SQ_INLINE, 4);
  rhn_sc_bar2_write(sc, db(TEST_DB_PAGES, RHN_DB_RQ), 1, 4);  // no page
  rhn_sc_bar2_write(sc, db(1, 0x28), 1, 4);                   // no kick
  rhn_sc_bar0_write(sc, RHN_REG_VERSION, 0xdead, 4);          // read-only
  rhn_sc_bar0_write(sc, RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4);
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_SQ_TAIL, 3, 4);
  rhn_sc_bar0_write(sc, RHN_REG_EQ_DOORBELL, 1, 4);  // 64-bit only
  rhn_sc_bar0_write(sc, RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | 2, 8);
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_SQ_BASE, 0x56789000, 4);
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_SQ_BASE + 4, 0x1234, 4);
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_CQ_BASE, 0xabcdef001000ull, 8);
  expect(rhn_sc_bar0_read(sc, RHN_REG_ADMIN_SQ_BASE, 8) == 0x123456789000ull,
         "ADMIN_SQ_BASE reads back from the file");
  expect(rhn_sc_bar0_read(sc, RHN_REG_VERSION, 4) == RHN_VERSION,
         "VERSION ignores writes");
}

static void check_regs(RhnSoftCore *sc) {
  expect(rhn_sc_bar0_read(sc, RHN_REG_VERSION, 4) == RHN_VERSION, "VERSION");
  expect(rhn_sc_bar0_read(sc, RHN_REG_NODE_ID, 4) == TEST_NODE, "NODE_ID");
  expect(rhn_sc_bar0_read(sc, RHN_REG_STATUS, 4) ==
             (RHN_STATUS_READY | RHN_STATUS_ADMIN_ON),
         "STATUS");
  expect(
      rhn_sc_bar0_read(sc, RHN_REG_ADMIN_SQ_BASE, 8) == 0x5555666677778000ull &&
          rhn_sc_bar0_read(sc, RHN_REG_ADMIN_SQ_BASE + 4, 4) == 0x55556666,
      "a 64-bit register set by the core, whole and in halves");
  uint32_t tx = RHN_REG_COUNTERS + 8 * RHN_CNT_TX_PACKETS;
  expect(rhn_sc_bar0_read(sc, tx, 8) == 0x100000005ull &&
             rhn_sc_bar0_read(sc, tx, 4) == 5 &&
             rhn_sc_bar0_read(sc, tx + 4, 4) == 1,
         "TX_PACKETS whole and in halves");
  expect(rhn_sc_counter(sc, RHN_CNT_KICK_OVERFLOWS) == 1, "KICK_OVERFLOWS");
  expect(rhn_sc_counter(sc, RHN_CNT_RX_DROPS) == 0, "RX_DROPS %llu",
         (unsigned long long)rhn_sc_counter(sc, RHN_CNT_RX_DROPS));
  expect(rhn_sc_bar0_read(sc, RHN_REG_ADMIN_SQ_TAIL, 4) == 0 &&
             rhn_sc_bar0_read(sc, 0x800, 4) == 0 &&
             rhn_sc_bar0_read(sc, RHN_REG_VERSION, 2) == 0 &&
             rhn_sc_bar0_read(sc, RHN_REG_COUNTERS + 4, 8) == 0,
         "write-only, reserved, bad size and misaligned reads give 0");
}

static uint32_t hold_refused;  // frames the device dropped (HOLD_FULL)

static void on_step(struct fake_host *h, RhnSoftCore *sc, uint64_t step) {
  static const uint32_t sizes[TEST_FRAME_COUNT] = TEST_FRAME_SIZES;
  static uint8_t frame[RHN_LINK_FRAME_MAX + 1];
  switch (step) {
    case STEP_WRITES_DONE:
      check_writes(h);
      break;
    case STEP_DOORBELLS:
      send_doorbells(sc);
      break;
    case STEP_INLINE_SLOTS:
      for (uint32_t i = 0; i < TEST_INLINE_KICKS; i++) {
        stage(sc, 1, 200 + i);
        rhn_sc_bar2_write(sc, db(1, RHN_DB_SQ), i | RHN_DB_SQ_INLINE, 4);
      }
      break;
    case STEP_OVERFLOW:
      for (uint32_t i = 0; i < TEST_DB_OVERFLOW_KICKS; i++)
        expect(rhn_sc_doorbell(
                   sc,
                   &(struct rhn_card_doorbell){.page = 1,
                                               .offset = RHN_DB_RQ,
                                               .value = i,
                                               .size = 4,
                                               .source = RHN_CARD_DB_PAGE},
                   NULL),
               "kick %u sent", i);
        // Into the full FIFO: kept aside, the latest of each (fw_test.c).
#define KEPT(pg, off, val, sz, src) \
  {.page = (pg), .offset = (off), .value = (val), .size = (sz), .source = (src)}
      {
        const struct rhn_card_doorbell kept[] = {
            KEPT(0, RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4, RHN_CARD_DB_REG),
            KEPT(0, RHN_REG_ADMIN_SQ_TAIL, 5, 4, RHN_CARD_DB_REG),
            KEPT(0, RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | (2ull << 32) | 4, 8,
                 RHN_CARD_DB_REG),
            KEPT(3, RHN_DB_CQ_ARM, 7 | RHN_DB_CQ_SOLICITED, 4,
                 RHN_CARD_DB_PAGE),
            KEPT(4, RHN_DB_CQ_ARM, 7 | RHN_DB_CQ_SOLICITED, 4,
                 RHN_CARD_DB_PAGE),
            KEPT(3, RHN_DB_CQ_ARM, 7, 4, RHN_CARD_DB_PAGE),
            KEPT(0, RHN_REG_CONTROL,
                 RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE, 4,
                 RHN_CARD_DB_REG),
            KEPT(0, RHN_REG_EQ_DOORBELL, (2ull << 32) | 6, 8, RHN_CARD_DB_REG),
            KEPT(0, RHN_REG_ADMIN_SQ_TAIL, 6, 4, RHN_CARD_DB_REG),
        };
        for (uint32_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
          expect(rhn_sc_doorbell(sc, &kept[i], NULL), "kept %u sent", i);
#undef KEPT
      }
      break;
    case STEP_FRAMES_IN:
      expect(!rhn_sc_frame_in(sc, frame, 60), "no frame while link down");
      rhn_sc_set_link(sc, true);
      for (uint32_t i = 0; i < TEST_FRAME_COUNT; i++) {
        for (uint32_t k = 0; k < sizes[i]; k++) frame[k] = fill_pattern(i, k);
        expect(rhn_sc_frame_in(sc, frame, sizes[i]), "frame %u in", i);
      }
      expect(!rhn_sc_frame_in(sc, frame, RHN_LINK_FRAME_MAX + 1) &&
                 !rhn_sc_frame_in(sc, frame, 0),
             "oversized and empty frames refused");
      break;
    case STEP_RX_FLOOD:
      for (uint32_t i = 0; i < TEST_RX_FLOOD; i++) {
        for (uint32_t k = 0; k < 100; k++) frame[k] = fill_pattern(50 + i, k);
        expect(rhn_sc_frame_in(sc, frame, 100), "flood frame %u taken", i);
      }
      break;
    case STEP_RX_HOLD_FULL:
      hold_refused = 0;
      for (uint32_t i = 0; i < TEST_RX_HOLD_FRAMES; i++) {
        for (uint32_t k = 0; k < 64; k++)
          frame[k] = fill_pattern(TEST_RX_HOLD_SEED + i, k);
        hold_refused += !rhn_sc_frame_in(sc, frame, RHN_LINK_FRAME_MAX);
      }
      expect(hold_refused > 0, "a full buffer refused frames");
      break;
    case STEP_RX_HOLD_DONE:
      expect(rhn_sc_bar0_read(sc, TEST_DROPS, 4) == hold_refused,
             "the core was told of %u drops, the device refused %u",
             (unsigned)rhn_sc_bar0_read(sc, TEST_DROPS, 4), hold_refused);
      break;
    case STEP_FRAMES_OUT_DONE:
      expect(h->nframes == TEST_FRAME_COUNT, "%u frames out", h->nframes);
      for (uint32_t i = 0; i < TEST_FRAME_COUNT && i < h->nframes; i++) {
        bool same = h->frame_len[i] == sizes[i];
        for (uint32_t k = 0; same && k < sizes[i]; k++)
          same = h->frames[i][k] == fill_pattern(60 + i, k);
        expect(same, "frame out %u (%u bytes)", i, h->frame_len[i]);
      }
      rhn_sc_set_link(sc, false);
      h->irq_entry = HOST_ENTRIES + 0x400;
      break;
    case STEP_IRQ_DONE:
      expect(h->irqs[2] == 2 && h->irqs[RHN_MSIX_ADMIN] == 1,
             "interrupts: vector 2 %u times, 0 %u times", h->irqs[2],
             h->irqs[0]);
      expect(h->irq_order_bad == 0, "every interrupt after its entry");
      break;
    case STEP_REGS_DONE:
      check_regs(sc);
      break;
    case STEP_IDLE_START:
      S.idle_cpu = cpu_ticks(rhn_sc_pid(sc));
      S.idle_start = fake_host_now();
      return;
    case STEP_IDLE_END: {
      double cpu = (double)(cpu_ticks(rhn_sc_pid(sc)) - S.idle_cpu) /
                   (double)sysconf(_SC_CLK_TCK);
      double wall = (double)(fake_host_now() - S.idle_start) / 1e9;
      printf("idle wait: emulator used %.3f s CPU in %.3f s\n", cpu, wall);
      expect(cpu < 0.3 * wall, "the waiting core does not spin (%.0f%%)",
             100 * cpu / wall);
      break;
    }
    case STEP_WAKE:
      S.wake_at = fake_host_now() + TEST_WAKE_MS * 1000000ull;
      return;
    case STEP_SLEEP_RACE:
      S.race_round = 1;
      S.race_kick_at = fake_host_now();
      return;
    default:
      break;
  }
  // Tells the core all of the step's actions were sent.
  rhn_sc_bar0_write(sc, RHN_REG_ADMIN_LOG_DEPTH, (uint32_t)step, 4);
}

/*
 * The first rounds learn how long the core takes from its answer until
 * its sleep flag shows; the rest kick within a few microseconds of that
 * moment, where a kick and the flag race.
 */
static uint64_t race_pause(void) {
  uint64_t now = fake_host_now();
  S.race_echo_at = now;
  if (S.race_round <= TEST_RACE_LEARN)
    return now + 1000ull * (rand() % TEST_RACE_PAUSE_US);
  uint64_t jitter = (uint64_t)(rand() % 6000);
  return now + (S.race_nap_ns > 4000 ? S.race_nap_ns - 4000 : 0) + jitter;
}

static void on_reg_set(struct fake_host *h, uint32_t offset, uint64_t value) {
  if (offset == TEST_STEP) {
    on_step(h, S.sc, value);
  } else if (offset == TEST_FAIL) {
    fprintf(stderr, "FAIL: fw_test.c:%llu\n", (unsigned long long)value);
    S.core_failures++;
  } else if (offset == TEST_CHECKS) {
    S.core_checks = (uint32_t)value;
  } else if (offset == TEST_RACE_ECHO) {
    S.race_wrong += value != S.race_round;
    S.race_sent_at = 0;
    if (++S.race_round > TEST_RACE_ROUNDS) {
      S.race_round = 0;
    } else {
      S.race_kick_at = race_pause();
    }
  } else if (offset == TEST_VALUE) {
    expect(value >= TEST_WAIT_NS && value < 2000000000ull,
           "the core waited %llu ns for a %llu ns deadline",
           (unsigned long long)value, TEST_WAIT_NS);
  }
}

static bool wake_due(struct fake_host *h) {
  (void)h;
  return (S.wake_at && fake_host_now() >= S.wake_at) || S.race_kick_at;
}

static void race_kick(RhnSoftCore *sc) {
  rhn_sc_doorbell(
      sc,
      &(struct rhn_card_doorbell){.page = 1, .value = S.race_round, .size = 4},
      NULL);
  S.race_sent_at = fake_host_now();
}

// A race round's kick, sent after its pause with the link kept moving (a
// 1 ms poll would round every pause up to the same moment).
static void race_turn(RhnSoftCore *sc) {
  if (S.race_kick_at) {
    bool seen = false;
    while (fake_host_now() < S.race_kick_at && rhn_sc_run(sc, 0) == 0) {
      if (!seen && S.race_round <= TEST_RACE_LEARN && rhn_sc_core_idle(sc)) {
        uint64_t nap = fake_host_now() - S.race_echo_at;
        seen = true;
        if (!S.race_nap_ns || nap < S.race_nap_ns) S.race_nap_ns = nap;
      }
    }
    S.race_kick_at = 0;
    race_kick(sc);
  } else if (S.race_sent_at &&
             fake_host_now() - S.race_sent_at > 1000000000ull) {
    char state[512];
    fprintf(stderr, "round %u: the core slept through its kick for 1 s: %s\n",
            S.race_round, rhn_sc_describe(sc, state, sizeof(state)));
    S.race_lost++;
    race_kick(sc);
  }
}

static void test_script(void) {
  static struct fake_host h;
  fake_host_init(&h);
  h.on_reg_set = on_reg_set;
  S.sc = spawn(&h);
  const struct rhn_link_hello *hello = rhn_sc_hello(S.sc);
  expect(hello && hello->node_id == TEST_NODE &&
             hello->db_pages == TEST_DB_PAGES &&
             hello->msix_vectors == TEST_VECTORS && hello->db_fifo == 64 &&
             hello->rx_fifo == 8 && hello->twin_bytes == 4096,
         "the core's HELLO");
  uint64_t start = fake_host_now();
  // Short turns, so the kick of STEP_WAKE goes on time.
  while (fake_host_run(&h, S.sc, 5, wake_due) == 0) {
    if (fake_host_now() - start > 60000000000ull) break;
    race_turn(S.sc);
    if (S.wake_at && fake_host_now() >= S.wake_at) {
      S.wake_at = 0;
      rhn_sc_doorbell(
          S.sc, &(struct rhn_card_doorbell){.page = 1, .value = 77, .size = 4},
          NULL);
    }
  }
  printf("script: %.2f s, core: %u checks passed, %u failed\n",
         (double)(fake_host_now() - start) / 1e9, S.core_checks,
         S.core_failures);
  printf("sleep race: the core's flag shows %.1f us after its answer\n",
         (double)S.race_nap_ns / 1e3);
  expect(S.race_nap_ns != 0, "the core was seen asleep between rounds");
  expect(S.race_lost == 0 && S.race_wrong == 0,
         "%u round trips with the core asleep between: %u kicks slept "
         "through, %u answers out of turn",
         TEST_RACE_ROUNDS, S.race_lost, S.race_wrong);
  expect(rhn_sc_bye_status(S.sc) == 0, "the core ended with BYE 0 (%d): %s",
         rhn_sc_bye_status(S.sc), rhn_sc_error(S.sc));
  expect(S.core_failures == 0 && S.core_checks == TEST_CORE_CHECKS,
         "core checks: %u passed, %u failed", S.core_checks, S.core_failures);
  expect(rhn_sc_wait_exit(S.sc, 5000) == 0, "the emulator exited with 0");
  expect(!rhn_sc_alive(S.sc) &&
             (rhn_sc_bar0_read(S.sc, RHN_REG_STATUS, 4) & RHN_STATUS_FATAL),
         "a link that ended shows STATUS.FATAL");
  rhn_sc_free(S.sc);
  S.sc = NULL;
}

/* ---- Peers that vanish --------------------------------------------- */

// The emulator killed: the device gets a clear error, and no call crashes.
static void test_core_vanishes(void) {
  static struct fake_host h;
  fake_host_init(&h);
  RhnSoftCore *sc = spawn(&h);
  kill(rhn_sc_pid(sc), SIGKILL);
  int r = fake_host_run(&h, sc, 5000, NULL);
  const char *e = rhn_sc_error(sc);
  printf("core killed: %s\n", e ? e : "(no error)");
  expect(r < 0 && e && strstr(e, "closed the link"),
         "a killed core is seen as gone");
  expect(!rhn_sc_doorbell(sc, &(struct rhn_card_doorbell){.size = 4}, NULL) &&
             !rhn_sc_frame_in(sc, "x", 1),
         "sends to a gone core fail");
  rhn_sc_bar0_write(sc, RHN_REG_CONTROL, 1, 4);
  rhn_sc_bar2_write(sc, db(1, RHN_DB_SQ), 1, 4);
  rhn_sc_tick(sc);
  expect(rhn_sc_process(sc) < 0, "process keeps failing");
  rhn_sc_free(sc);
}

// A device killed before its core's HELLO leaves its RAM file (64 MiB of
// /dev/shm by default) and socket behind: the next spawn in that
// directory removes those of processes that are gone, and nothing else.
static void test_stale_files_swept(void) {
  char dir[] = "/tmp/rhinet-sc-test-XXXXXX";
  if (!mkdtemp(dir)) {
    expect(false, "mkdtemp: %s", strerror(errno));
    return;
  }
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, NULL, 0);
  char stale_ram[96], stale_sock[96], live[96], other[96];
  snprintf(stale_ram, sizeof(stale_ram), "%s/rhinet-sc-%d-3.ram", dir,
           (int)gone);
  snprintf(stale_sock, sizeof(stale_sock), "%s/rhinet-sc-%d-2.sock", dir,
           (int)gone);
  snprintf(live, sizeof(live), "%s/rhinet-sc-%d-0.ram", dir, (int)getppid());
  snprintf(other, sizeof(other), "%s/rhinet-sc-notes.txt", dir);
  const char *files[] = {stale_ram, stale_sock, live, other};
  for (unsigned i = 0; i < 4; i++) {
    FILE *f = fopen(files[i], "w");
    if (f) fclose(f);
  }
  static struct fake_host h;
  fake_host_init(&h);
  char err[256];
  RhnSoftCoreConfig cfg = {.firmware = firmware,
                           .dir = dir,
                           .ram_mib = 16,
                           .db_pages = TEST_DB_PAGES,
                           .rto_floor_us = TEST_RTO_FLOOR_US};
  RhnSoftCore *sc = rhn_sc_spawn(&cfg, &fake_host_ops, &h, err, sizeof(err));
  expect(sc != NULL, "spawn in %s: %s", dir, sc ? "ok" : err);
  struct stat st;
  expect(stat(stale_ram, &st) < 0 && errno == ENOENT,
         "the RAM file of a process that is gone was removed");
  expect(stat(stale_sock, &st) < 0 && errno == ENOENT,
         "the socket of a process that is gone was removed");
  expect(stat(live, &st) == 0, "a live process's file was kept");
  expect(stat(other, &st) == 0, "a file not named as ours was kept");
  if (sc) {
    expect(rhn_sc_stop(sc, 5000) == 0, "the core stops on BYE");
    rhn_sc_free(sc);
  }
  for (unsigned i = 0; i < 4; i++) unlink(files[i]);
  expect(rmdir(dir) == 0, "the spawn left nothing in %s (%s)", dir,
         strerror(errno));
}

// The device's BYE: the core stops by itself, exit status 0. Spawned
// without a page count, as the QEMU device does: the core's HELLO gives it.
static void test_device_closes(void) {
  static struct fake_host h;
  fake_host_init(&h);
  RhnSoftCore *sc = spawn_pages(&h, 0);
  const struct rhn_link_hello *hello = rhn_sc_hello(sc);
  expect(hello && hello->db_pages == TEST_DB_PAGES && rhn_sc_alive(sc),
         "db_pages 0 takes the core's %u pages", TEST_DB_PAGES);
  fake_host_run(&h, sc, 50, NULL);
  int status = rhn_sc_stop(sc, 5000);
  expect(status == 0, "the core stops on the device's BYE (exit %d)", status);
  rhn_sc_free(sc);
}

// The device's process dies without a word: its emulator goes with it.
static void test_device_vanishes(void) {
  int fds[2];
  if (pipe(fds) < 0) return;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t child = fork();
  if (child == 0) {
    static struct fake_host h;
    fake_host_init(&h);
    RhnSoftCore *sc = spawn(&h);
    pid_t core = rhn_sc_pid(sc);
    if (write(fds[1], &core, sizeof(core)) != sizeof(core)) _exit(1);
    _exit(0);  // no rhn_sc_free: gone
  }
  pid_t core = -1;
  bool got = read(fds[0], &core, sizeof(core)) == sizeof(core);
  close(fds[0]);
  close(fds[1]);
  waitpid(child, NULL, 0);
  bool gone = false;
  for (int i = 0; got && i < 500 && !gone; i++) {
    gone = waitpid(core, NULL, WNOHANG) == core;
    if (!gone) usleep(10000);
  }
  expect(got && gone, "the emulator ends with the device's process");
  if (got && !gone) {
    kill(core, SIGKILL);
    waitpid(core, NULL, 0);
  }
}

/* ---- Bad input from a fake core ------------------------------------ */

static void put(int fd, uint16_t type, uint16_t tag, const void *body,
                uint32_t len) {
  struct rhn_link_hdr hd = {4 + len, type, tag};
  if (write(fd, &hd, sizeof(hd)) != sizeof(hd) ||
      (len && write(fd, body, len) != (ssize_t)len))
    perror("put");
}

static const struct rhn_link_hello good_hello = {
    .version = RHN_LINK_VERSION, .node_id = 1, .db_fifo = 64, .rx_fifo = 8};

// A fake core that says HELLO (unless hello is false), then raw bytes.
static RhnSoftCore *fake_core(struct fake_host *h, int *core, bool hello) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  fake_host_init(h);
  RhnSoftCore *sc = rhn_sc_attach(sv[0], TEST_DB_PAGES, &fake_host_ops, h);
  *core = sv[1];
  if (hello) {
    put(sv[1], RHN_LINK_HELLO, 9, &good_hello, sizeof(good_hello));
    rhn_sc_process(sc);
  }
  return sc;
}

// Reads one message the device sent to the fake core.
static bool take(int fd, struct rhn_link_hdr *hd, void *body, uint32_t max) {
  if (read(fd, hd, sizeof(*hd)) != sizeof(*hd) || hd->len < 4 ||
      hd->len - 4 > max)
    return false;
  uint32_t n = hd->len - 4, got = 0;
  while (got < n) {
    ssize_t r = read(fd, (uint8_t *)body + got, n - got);
    if (r <= 0) return false;
    got += (uint32_t)r;
  }
  return true;
}

// The next message that is not TIME (which may come before any reply).
static bool take_reply(int fd, struct rhn_link_hdr *hd, void *body,
                       uint32_t max) {
  while (take(fd, hd, body, max))
    if (hd->type != RHN_LINK_TIME) return true;
  return false;
}

static void expect_broken(RhnSoftCore *sc, const char *what,
                          const char *needle) {
  int r = rhn_sc_process(sc);
  const char *e = rhn_sc_error(sc);
  expect(r < 0 && e && strstr(e, needle), "%s: error \"%s\"", what,
         e ? e : "(none)");
}

// A fresh fake core (after HELLO if hello) sends one message of type with
// body (type 0: body is raw bytes), which must break the link with an
// error containing needle.
static void expect_bad(bool hello, uint16_t type, const void *body,
                       uint32_t len, const char *what, const char *needle) {
  static struct fake_host h;
  int core;
  RhnSoftCore *sc = fake_core(&h, &core, hello);
  if (type)
    put(core, type, 0, body, len);
  else if (write(core, body, len) != (ssize_t)len)
    perror("write");
  expect_broken(sc, what, needle);
  rhn_sc_free(sc);
  close(core);
}

static void test_bad_input(void) {
  static struct fake_host h;
  static uint8_t body[RHN_LINK_MAX_BODY];
  struct rhn_link_hdr hd;
  int core;

  // A good exchange first: HELLO answered, then TIME, then the link that
  // came up before the core; a DMA read served.
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  fake_host_init(&h);
  RhnSoftCore *sc = rhn_sc_attach(sv[0], TEST_DB_PAGES, &fake_host_ops, &h);
  core = sv[1];
  rhn_sc_set_link(sc, true);
  expect(!rhn_sc_frame_in(sc, "x", 1) &&
             !rhn_sc_doorbell(sc, &(struct rhn_card_doorbell){.size = 4}, NULL),
         "nothing goes to the core before its HELLO");
  put(core, RHN_LINK_HELLO, 9, &good_hello, sizeof(good_hello));
  rhn_sc_process(sc);
  expect(take(core, &hd, body, sizeof(body)) && hd.type == RHN_LINK_HELLO &&
             hd.tag == 9 &&
             ((struct rhn_link_hello *)body)->version == RHN_LINK_VERSION,
         "HELLO answered");
  expect(take(core, &hd, body, sizeof(body)) && hd.type == RHN_LINK_TIME,
         "TIME after HELLO");
  expect(take_reply(core, &hd, body, sizeof(body)) &&
             hd.type == RHN_LINK_DOORBELL &&
             ((struct rhn_card_doorbell *)body)->source == RHN_CARD_DB_LINK &&
             ((struct rhn_card_doorbell *)body)->value == 1,
         "then the link's state");
  struct rhn_link_dma_read rq = {HOST_BASE + 4095, 3, 0};
  put(core, RHN_LINK_DMA_READ, 33, &rq, sizeof(rq));
  rhn_sc_process(sc);
  expect(take_reply(core, &hd, body, sizeof(body)) &&
             hd.type == RHN_LINK_DMA_READ_DATA && hd.tag == 33 &&
             hd.len == 4 + 8 + 3 && body[8] == host_pattern(HOST_BASE + 4095),
         "DMA_READ answered over a plain stream socket");
  rq.bus_addr = 0x10;
  put(core, RHN_LINK_DMA_READ, 34, &rq, sizeof(rq));
  rhn_sc_process(sc);
  expect(take_reply(core, &hd, body, sizeof(body)) && hd.tag == 34 &&
             hd.len == 4 + 8 &&
             ((struct rhn_link_status *)body)->status == RHN_CARD_BUS_ERROR,
         "a failed read answers its status and no data");
  // Half a message stays pending until the rest comes.
  struct rhn_link_hdr half = {4 + sizeof(struct rhn_link_irq), RHN_LINK_IRQ, 0};
  expect(write(core, &half, sizeof(half)) == sizeof(half), "write");
  expect(rhn_sc_process(sc) == 0 && h.irqs[3] == 0, "half a message waits");
  struct rhn_link_irq irq = {3, 0, 0};
  expect(write(core, &irq, sizeof(irq)) == sizeof(irq), "write");
  expect(rhn_sc_process(sc) == 0 && h.irqs[3] == 1, "then it is applied");
  // A truncated message, then the core goes.
  expect(write(core, &half, 6) == 6, "write");
  close(core);
  expect_broken(sc, "truncated, then gone", "closed the link");
  rhn_sc_free(sc);

  static const struct {
    const char *what, *needle;
    bool hello;
    uint16_t type;
    uint32_t len;
  } bad[] = {
      {"before HELLO", "before HELLO", false, RHN_LINK_IRQ, 8},
      {"unknown type", "is not one the core sends", true, 99, 0},
      {"a device-only type", "is not one the core sends", true,
       RHN_LINK_DOORBELL, 24},
      {"a second HELLO", "unexpected HELLO", true, RHN_LINK_HELLO, 32},
      {"short DMA_READ", "DMA_READ of 4 bytes", true, RHN_LINK_DMA_READ, 4},
      {"short IRQ", "IRQ of 2 bytes", true, RHN_LINK_IRQ, 2},
      {"empty FRAME_OUT", "FRAME_OUT of 0 bytes", true, RHN_LINK_FRAME_OUT, 0},
      {"short STORE64", "DMA_STORE64", true, RHN_LINK_DMA_STORE64, 8},
      {"short RX_CREDIT", "RX_CREDIT of 4 bytes", true, RHN_LINK_RX_CREDIT, 4},
  };
  for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    memset(body, 0, bad[i].len);
    expect_bad(bad[i].hello, bad[i].type, body, bad[i].len, bad[i].what,
               bad[i].needle);
  }

  // Bodies that lie about what follows.
  struct rhn_link_hdr huge = {0x7fffffffu, RHN_LINK_FRAME_OUT, 0};
  expect_bad(true, 0, &huge, sizeof(huge), "oversized length", "out of range");
  rq = (struct rhn_link_dma_read){HOST_BASE, RHN_LINK_DMA_CHUNK + 1, 0};
  expect_bad(true, RHN_LINK_DMA_READ, &rq, sizeof(rq), "oversized DMA read",
             "exceeds");
  struct rhn_link_dma w = {HOST_BASE, 9, 0};  // and no bytes
  expect_bad(true, RHN_LINK_DMA_PUBLISH, &w, sizeof(w), "publish past its end",
             "DMA_PUBLISH at 9");
  struct rhn_link_reg r = {RHN_CNT_COUNT, 8, 1};
  expect_bad(true, RHN_LINK_COUNTER_ADD, &r, sizeof(r), "unknown counter",
             "COUNTER_ADD to counter");
  r = (struct rhn_link_reg){RHN_REG_COUNTERS, 8, 1};
  expect_bad(true, RHN_LINK_REG_SET, &r, sizeof(r), "REG_SET outside the file",
             "REG_SET at BAR0 offset");
  r = (struct rhn_link_reg){RHN_LINK_MAX_CQS, 4, 1};
  expect_bad(true, RHN_LINK_CQ_PRODUCED, &r, sizeof(r), "CQ_PRODUCED of no CQ",
             "CQ_PRODUCED for CQ");
  struct rhn_link_hello old = good_hello;
  old.version = RHN_LINK_VERSION + 1;
  expect_bad(false, RHN_LINK_HELLO, &old, sizeof(old),
             "another protocol version", "protocol version");
  struct rhn_link_hello no_rx = good_hello;
  no_rx.rx_fifo = 0;
  expect_bad(false, RHN_LINK_HELLO, &no_rx, sizeof(no_rx),
             "a core without a receive FIFO", "no receive FIFO");
  // Room for a frame the device never sent.
  struct rhn_link_u64 credit = {1};
  expect_bad(true, RHN_LINK_RX_CREDIT, &credit, sizeof(credit),
             "more credit than frames on the way", "RX_CREDIT of 1 frames");
}

/* ---- The blocks the device plays (softcore_blocks.h) --------------- */

// The next message of type (TIME and DOORBELL, which come at any time,
// skipped).
static bool take_type(int fd, uint16_t type, struct rhn_link_hdr *hd,
                      void *body, uint32_t max) {
  while (take(fd, hd, body, max))
    if (hd->type != RHN_LINK_TIME && hd->type != RHN_LINK_DOORBELL &&
        hd->type != RHN_LINK_FRAME_IN)
      return hd->type == type;
  return false;
}

#define TXW_IOVA 0x40000000ull
#define TXW_TABLE (HOST_BASE + 0x10000u)
#define TXW_PAGES (HOST_BASE + 0x20000u) /* four pages behind the table */
#define TXW_LKEY 0x1234u

// A region of four pages at TXW_IOVA: the SQ ring in the first, the SQ
// record in the second, payloads in the third and fourth.
static struct rhn_card_region txw_region(struct fake_host *h) {
  for (uint64_t i = 0; i < 4; i++) {
    uint64_t pte = (TXW_PAGES + i * 4096) | RHN_VPTE_VALID;
    memcpy(h->mem + (TXW_TABLE - HOST_BASE) + i * 8, &pte, 8);
  }
  struct rhn_card_region r = {TXW_TABLE, TXW_IOVA, 4, 1, 12, 0};
  return r;
}

// One signalled WRITE of len bytes from the third page, posted in slot 0.
static void txw_post(struct fake_host *h, uint32_t len) {
  struct rhn_send_wqe w;
  memset(&w, 0, sizeof(w));
  w.opcode = RHN_OP_WRITE;
  w.flags = RHN_WQE_F_SIGNALED;
  w.num_sge = 1;
  w.remote_key = 0x77;
  w.remote_addr = 0xabc000;
  w.d.sge.addr = TXW_IOVA + 0x2010;
  w.d.sge.length = len;
  w.d.sge.lkey = TXW_LKEY;
  memcpy(h->mem + (TXW_PAGES - HOST_BASE), &w, sizeof(w));
  struct rhn_queue_record rec = {1, 0};
  memcpy(h->mem + (TXW_PAGES - HOST_BASE) + 4096, &rec, sizeof(rec));
}

static struct rhn_link_txw_qp txw_qp(const struct rhn_card_region *r) {
  struct rhn_link_txw_qp m;
  memset(&m, 0, sizeof(m));
  m.qpn = 1;
  m.armed = 1;
  m.q.sq_ring = m.q.sq_record = m.q.key_region = *r;
  m.q.sq_ring_va = TXW_IOVA;
  m.q.sq_record_va = TXW_IOVA + 4096;
  m.q.key_iova = TXW_IOVA;
  m.q.key_length = 4 * 4096;
  m.q.lkey = TXW_LKEY;
  m.q.sq_room = 16;
  m.q.sq_log = 4;
  m.q.inflight_credit = 4;
  m.q.slot_credit = 4;
  m.q.peer_node = 2;
  m.q.hdr[0] = RHN_WIRE_MAGIC | RHN_WIRE_VERSION << 16 | RHN_PKT_DATA << 24;
  return m;
}

// A fake core drives the device's blocks: the capabilities in its HELLO,
// a region read, a WRITE the transmit block takes (its record, its frame
// sent with both CRCs, the entry as the kick left it), a frame in whose
// CRC is wrong, and the protocol breaches the device refuses.
static void test_blocks(void) {
  static struct fake_host h;
  static uint8_t body[RHN_LINK_MAX_BODY];
  struct rhn_link_hdr hd;
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  fake_host_init(&h);
  RhnSoftCore *sc = rhn_sc_attach(sv[0], TEST_DB_PAGES, &fake_host_ops, &h);
  int core = sv[1];
  put(core, RHN_LINK_HELLO, 9, &good_hello, sizeof(good_hello));
  rhn_sc_process(sc);
  expect(take_type(core, RHN_LINK_HELLO, &hd, body, sizeof(body)) &&
             ((struct rhn_link_hello *)body)->caps == RHN_LINK_DEVICE_CAPS,
         "the device's HELLO names the blocks it plays");
  rhn_sc_set_link(sc, true);

  const struct rhn_card_region r = txw_region(&h);
  struct rhn_link_region_dma rd = {r, TXW_IOVA + 4096 * 2 + 5, 300, 0};
  put(core, RHN_LINK_DMA_REGION, 40, &rd, sizeof(rd));
  rhn_sc_process(sc);
  bool same =
      take_type(core, RHN_LINK_DMA_READ_DATA, &hd, body, sizeof(body)) &&
      hd.tag == 40 && hd.len == 4 + 8 + 300;
  for (uint32_t i = 0; same && i < 300; i++)
    same = body[8 + i] == host_pattern(TXW_PAGES + 2 * 4096 + 5 + i);
  expect(same, "a region read walks the table (across no page)");
  rd.va = TXW_IOVA + 4 * 4096;  // past the region's pages
  put(core, RHN_LINK_DMA_REGION, 41, &rd, sizeof(rd));
  rhn_sc_process(sc);
  expect(take_type(core, RHN_LINK_DMA_READ_DATA, &hd, body, sizeof(body)) &&
             hd.tag == 41 && hd.len == 4 + 8 &&
             ((struct rhn_link_status *)body)->status != RHN_CARD_OK,
         "a region read past the region fails, no bytes");

  txw_post(&h, 64);
  struct rhn_link_txw_channel ch;
  memset(&ch, 0, sizeof(ch));
  ch.node = 2;
  ch.armed = 1;
  ch.c.tx_next = 100;
  ch.c.window = 16;
  ch.c.session = 5;
  put(core, RHN_LINK_TXW_SET_CHANNEL, 0, &ch, sizeof(ch));
  struct rhn_link_u64 slot = {3};
  put(core, RHN_LINK_TXW_SLOT_PUSH, 0, &slot, sizeof(slot));
  struct rhn_link_txw_qp q = txw_qp(&r);
  put(core, RHN_LINK_TXW_SET_QP, 0, &q, sizeof(q));
  struct rhn_link_u64 kick = {1};
  put(core, RHN_LINK_TXW_KICK, 77, &kick, sizeof(kick));
  uint32_t frames_before = h.nframes;
  rhn_sc_process(sc);
  struct rhn_card_txw_record rec;
  bool got = take_type(core, RHN_LINK_TXW_RECORD, &hd, body, sizeof(body)) &&
             hd.len == 4 + sizeof(rec) + RHN_DATA_HDR_LEN + 64;
  memcpy(&rec, body, sizeof(rec));
  expect(got && rec.qpn == 1 && rec.wqe_slot == 0 && rec.serial == 100 &&
             rec.send_slot == 3 && rec.length == 64 && !rec.failed,
         "the block's record of the WRITE it took");
  const uint8_t *f = body + sizeof(rec);
  same = got && h.nframes == frames_before + 1 &&
         h.frame_len[frames_before] == RHN_DATA_HDR_LEN + 64 &&
         memcmp(h.frames[frames_before], f, RHN_DATA_HDR_LEN + 64) == 0;
  for (uint32_t i = 0; same && i < 64; i++)
    same = f[RHN_DATA_HDR_LEN + i] ==
           host_pattern(TXW_PAGES + 2 * 4096 + 0x10 + i);
  expect(same, "its frame went out as the core got it, the payload gathered");
  uint32_t crc;
  memcpy(&crc, f + RHN_OFFSETOF(struct rhn_pkt_hdr, hdr_crc), 4);
  expect(crc != 0 && rhn_sc_counter(sc, RHN_CNT_CRC_ERRORS) == 0,
         "its CRCs filled by the MAC");
  // The same frame back from the wire passes the MAC; one bit off does not.
  expect(rhn_sc_frame_in(sc, f, RHN_DATA_HDR_LEN + 64),
         "a frame with good CRCs goes to the core");
  memcpy(body + sizeof(rec) + 3000, f, RHN_DATA_HDR_LEN + 64);
  body[sizeof(rec) + 3000 + RHN_DATA_HDR_LEN + 1] ^= 1;
  expect(
      !rhn_sc_frame_in(sc, body + sizeof(rec) + 3000, RHN_DATA_HDR_LEN + 64) &&
          rhn_sc_counter(sc, RHN_CNT_CRC_ERRORS) == 1,
      "a frame with a bad CRC is dropped and counted");
  struct rhn_link_txw_kicked k;
  got =
      take_type(core, RHN_LINK_TXW_KICKED, &hd, &k, sizeof(k)) && hd.tag == 77;
  expect(got && k.took_all && k.armed && k.left.sq_fetch == 1 &&
             k.left.msn_next == 1 && k.left.inflight_credit == 3 &&
             k.left.slot_credit == 3 && k.left.sq_producer == 1,
         "TXW_KICKED after the records, with the entry as moved");
  expect(rhn_sc_txw_frames(sc) == 1, "the device counted the block's frame");
  // A WQE the block does not take (a READ): handed over, the QP disarmed.
  h.mem[TXW_PAGES - HOST_BASE + 64] = RHN_OP_READ;
  struct rhn_queue_record two = {2, 0};
  memcpy(h.mem + (TXW_PAGES - HOST_BASE) + 4096, &two, sizeof(two));
  put(core, RHN_LINK_TXW_KICK, 78, &kick, sizeof(kick));
  rhn_sc_process(sc);
  got =
      take_type(core, RHN_LINK_TXW_KICKED, &hd, &k, sizeof(k)) && hd.tag == 78;
  expect(got && !k.took_all && !k.armed && k.left.sq_fetch == 1,
         "a WQE it does not take is the core's, the QP disarmed");
  rhn_sc_free(sc);
  close(core);

  expect_bad(true, RHN_LINK_DMA_REGION, body, 4, "short DMA_REGION",
             "DMA_REGION of 4 bytes");
  struct rhn_link_assemble as = {r, TXW_IOVA, 10, 0x80};
  expect_bad(true, RHN_LINK_TX_ASSEMBLE, &as, sizeof(as),
             "TX_ASSEMBLE with an unknown flag", "TX_ASSEMBLE of 0 + 10");
  slot.value = 100000;
  expect_bad(true, RHN_LINK_TXW_SLOT_PUSH, &slot, sizeof(slot),
             "a slot beyond the card's", "TXW_SLOT_PUSH of slot 100000");
  expect_bad(true, RHN_LINK_TXW_SLOT_BACK, NULL, 0, "a take-back of nothing",
             "TXW_SLOT_BACK with no slot");
  expect_bad(true, RHN_LINK_TXW_SET_QP, &q, 8, "short TXW_SET_QP",
             "TXW_SET_QP of 8 bytes");
}

// Random messages from a fake core: mostly well framed with random
// contents, some corrupt. Each either is applied or breaks the link with
// an error; the device never crashes (the test runs under AddressSanitizer
// and UBSan).
static uint32_t rnd(void) {
  static uint32_t x = 12345;
  x = x * 1103515245u + 12345u;
  return x >> 8;
}

// A message of a type the core sends, with a body of the right size.
static void random_message(int core, uint8_t *body, uint32_t max) {
  static const uint16_t types[] = {RHN_LINK_DMA_READ,    RHN_LINK_DMA_WRITE,
                                   RHN_LINK_DMA_PUBLISH, RHN_LINK_DMA_STORE64,
                                   RHN_LINK_REG_SET,     RHN_LINK_COUNTER_ADD,
                                   RHN_LINK_FRAME_OUT,   RHN_LINK_IRQ,
                                   RHN_LINK_DEADLINE,    RHN_LINK_CQ_PRODUCED};
  uint16_t type = types[rnd() % (sizeof(types) / sizeof(types[0]))];
  uint32_t len = 16;
  uint64_t addr =
      rnd() % 2 ? HOST_BASE + rnd() % HOST_BYTES : (uint64_t)rnd() << 20;
  memcpy(body, &addr, 8);
  if (type == RHN_LINK_DMA_READ) {
    uint32_t n = rnd() % 9000;
    memcpy(body + 8, &n, 4);
  } else if (type == RHN_LINK_DMA_WRITE || type == RHN_LINK_DMA_PUBLISH) {
    len += rnd() % (max - 16);
    uint32_t at = rnd() % (len - 8);
    memcpy(body + 8, &at, 4);
  } else if (type == RHN_LINK_REG_SET || type == RHN_LINK_COUNTER_ADD ||
             type == RHN_LINK_CQ_PRODUCED) {
    uint32_t off = type == RHN_LINK_REG_SET ? (rnd() % 1024) * 4
                   : type == RHN_LINK_COUNTER_ADD
                       ? rnd() % (RHN_CNT_COUNT + 1)
                       : rnd() % (RHN_LINK_MAX_CQS + 64);
    memcpy(body, &off, 4);
  } else if (type == RHN_LINK_FRAME_OUT) {
    len = 1 + rnd() % (max - 1);
  } else if (type == RHN_LINK_IRQ || type == RHN_LINK_DEADLINE) {
    len = 8;
  }
  put(core, type, (uint16_t)rnd(), body, len);
}

static void test_random_input(void) {
  static struct fake_host h;
  static uint8_t body[4096];
  unsigned broken = 0, survived = 0;
  for (unsigned trial = 0; trial < 300; trial++) {
    int core;
    RhnSoftCore *sc = fake_core(&h, &core, trial % 20 != 0);
    for (unsigned m = 0; m < 20 && rhn_sc_alive(sc); m++) {
      for (unsigned i = 16; i < sizeof(body); i++) body[i] = (uint8_t)rnd();
      uint32_t r = rnd() % 64;
      if (r == 0) {
        // A header that promises more than will come, or too much.
        struct rhn_link_hdr hd = {rnd() % 2 ? rnd() : 4 + 200,
                                  (uint16_t)(rnd() % 24), 0};
        if (write(core, &hd, sizeof(hd)) != sizeof(hd)) break;
      } else if (r == 1) {
        put(core, (uint16_t)(rnd() % 24), 0, body, rnd() % 64);
      } else {
        random_message(core, body, sizeof(body));
      }
      rhn_sc_process(sc);
    }
    if (rhn_sc_alive(sc))
      survived++;
    else
      broken++;
    close(core);
    rhn_sc_process(sc);
    expect(!rhn_sc_alive(sc) && rhn_sc_error(sc) && rhn_sc_error(sc)[0],
           "random trial %u ends with an error", trial);
    expect(!rhn_sc_doorbell(sc, &(struct rhn_card_doorbell){.size = 4}, NULL),
           "a broken link takes no doorbell");
    rhn_sc_free(sc);
  }
  printf("random input: %u links broken by it, %u survived to the end\n",
         broken, survived);
  expect(broken > 30 && survived > 30, "random input both breaks and passes");
}

// A core that does not read: the output queue fills, doorbells are
// dropped, and the core is told (DB_OVERFLOW) once there is room.
static void test_device_overflow(void) {
  static struct fake_host h;
  static uint8_t body[RHN_LINK_MAX_BODY];
  struct rhn_link_hdr hd;
  int core;
  RhnSoftCore *sc = fake_core(&h, &core, true);
  struct rhn_card_doorbell e = {.page = 1, .size = 4};
  unsigned sent = 0, dropped = 0;
  for (unsigned i = 0; i < 300000; i++) {
    e.value = i;
    if (rhn_sc_doorbell(sc, &e, NULL))
      sent++;
    else
      dropped++;
  }
  expect(sent > 1000 && dropped > 0, "a full queue drops (%u sent, %u lost)",
         sent, dropped);
  unsigned doorbells = 0, overflows = 0;
  bool in_order = true;
  for (;;) {
    rhn_sc_process(sc);
    struct pollfd p = {.fd = core, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) break;
    if (!take(core, &hd, body, sizeof(body))) break;
    if (hd.type == RHN_LINK_DOORBELL) {
      in_order &= ((struct rhn_card_doorbell *)body)->value == doorbells;
      doorbells++;
    }
    overflows += hd.type == RHN_LINK_DB_OVERFLOW;
  }
  expect(doorbells == sent && in_order, "%u of %u doorbells came, in order",
         doorbells, sent);
  expect(overflows == 1, "one DB_OVERFLOW (%u)", overflows);
  rhn_sc_free(sc);
  close(core);
}

// The device's queue towards the core full: writes that carry a value of
// their own (CONTROL, ADMIN_SQ_TAIL, an EQ doorbell, a CQ arm) are kept
// aside, the latest of each, and reach the core once there is room, after
// the doorbells queued before them; queue doorbells are dropped (told by
// one DB_OVERFLOW: the core's rescan finds them in host memory).
static void test_device_overflow_keeps(void) {
  static struct fake_host h;
  static uint8_t body[RHN_LINK_MAX_BODY];
  struct rhn_link_hdr hd;
  int core;
  RhnSoftCore *sc = fake_core(&h, &core, true);
  struct rhn_card_doorbell e = {
      .page = 1, .offset = RHN_DB_SQ, .size = 4, .source = RHN_CARD_DB_PAGE};
  unsigned sent = 0;
  for (; sent < 1000000; sent++) {
    e.value = sent;
    if (!rhn_sc_doorbell(sc, &e, NULL)) break;
  }
  expect(sent > 1000 && sent < 1000000, "the queue is full after %u", sent);
#define REG(off, val, sz) \
  { .offset = (off), .value = (val), .size = (sz), .source = RHN_CARD_DB_REG }
#define ARM(pg, val)                                                  \
  {                                                                   \
    .page = (pg), .offset = RHN_DB_CQ_ARM, .value = (val), .size = 4, \
    .source = RHN_CARD_DB_PAGE                                        \
  }
  const struct rhn_card_doorbell writes[] = {
      REG(RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4),
      REG(RHN_REG_ADMIN_SQ_TAIL, 5, 4),
      REG(RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | (2ull << 32) | 4, 8),
      ARM(3, 7 | RHN_DB_CQ_SOLICITED),
      ARM(4, 7 | RHN_DB_CQ_SOLICITED),
      ARM(3, 7),
      REG(RHN_REG_CONTROL, RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE, 4),
      REG(RHN_REG_EQ_DOORBELL, (2ull << 32) | 6, 8),
      REG(RHN_REG_ADMIN_SQ_TAIL, 6, 4),
  };
  // What reaches the core: the latest CONTROL, the EQ (latest index, the
  // arm kept), page 3's arm (no longer solicited only), page 4's, the
  // latest admin tail.
  const struct rhn_card_doorbell want[] = {
      REG(RHN_REG_CONTROL, RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE, 4),
      REG(RHN_REG_EQ_DOORBELL, RHN_EQ_DB_ARM | (2ull << 32) | 6, 8),
      ARM(3, 7),
      ARM(4, 7 | RHN_DB_CQ_SOLICITED),
      REG(RHN_REG_ADMIN_SQ_TAIL, 6, 4),
  };
#undef REG
#undef ARM
  const unsigned nwrites = sizeof(writes) / sizeof(writes[0]);
  const unsigned nwant = sizeof(want) / sizeof(want[0]);
  for (unsigned i = 0; i < nwrites; i++)
    expect(rhn_sc_doorbell(sc, &writes[i], NULL), "write %u kept", i);
  e.value = sent;
  expect(!rhn_sc_doorbell(sc, &e, NULL), "an SQ doorbell is still dropped");
  unsigned doorbells = 0, overflows = 0, kept = 0;
  bool in_order = true, kept_right = true, kept_last = true;
  for (;;) {
    rhn_sc_process(sc);
    struct pollfd p = {.fd = core, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) break;
    if (!take(core, &hd, body, sizeof(body))) break;
    overflows += hd.type == RHN_LINK_DB_OVERFLOW;
    if (hd.type != RHN_LINK_DOORBELL) continue;
    const struct rhn_card_doorbell *d = (const void *)body;
    if (d->offset == RHN_DB_SQ && d->source == RHN_CARD_DB_PAGE) {
      in_order &= d->value == doorbells;
      kept_last &= kept == 0;
      doorbells++;
      continue;
    }
    if (kept < nwant)
      kept_right &=
          d->page == want[kept].page && d->offset == want[kept].offset &&
          d->value == want[kept].value && d->size == want[kept].size &&
          d->source == want[kept].source;
    kept++;
  }
  expect(doorbells == sent && in_order, "%u of %u SQ doorbells came, in order",
         doorbells, sent);
  expect(kept == nwant && kept_right && kept_last,
         "%u kept writes came (%u expected), as the latest of each, after "
         "the doorbells queued before them",
         kept, nwant);
  expect(overflows == 1, "one DB_OVERFLOW (%u)", overflows);
  rhn_sc_free(sc);
  close(core);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FIRMWARE.elf\n", argv[0]);
    return 2;
  }
  firmware = argv[1];
  signal(SIGPIPE, SIG_IGN);
  test_bad_input();
  test_blocks();
  test_random_input();
  test_device_overflow();
  test_device_overflow_keeps();
  test_script();
  test_core_vanishes();
  test_device_closes();
  test_device_vanishes();
  test_stale_files_swept();
  printf("softcore_link: %u checks passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
