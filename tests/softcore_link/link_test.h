/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the softcore_link test and benchmark agree on between the firmware
 * (fw_test.c, fw_bench.c, run in qemu-system-riscv32) and the host side
 * (link_test.c, link_bench.c, the device library with a fake host memory).
 */
#ifndef RHINET_SOFTCORE_LINK_TEST_H
#define RHINET_SOFTCORE_LINK_TEST_H

#include <stdint.h>

/* The fake host memory: above 4 GiB, so bus addresses need 64 bits. */
#define HOST_BASE 0x100000000ull
#define HOST_BYTES (256u * 1024u)
#define HOST_WRITES (HOST_BASE + 128u * 1024u) /* the firmware writes here */
#define HOST_ENTRIES (HOST_BASE + 0x3c000u)    /* publish and store64 */
/* Reads and writes here fail as an IOMMU refusal; elsewhere a bus error. */
#define FAULT_BASE 0x200000000ull
#define FAULT_BYTES 4096u

/*
 * BAR0 offsets in the reserved range that the test uses as a mailbox: the
 * firmware's REG_SET of TEST_STEP asks the host for a step's actions; the
 * host's store to ADMIN_LOG_DEPTH (a REG_WRITE) says they were all sent.
 */
#define TEST_STEP 0x0f00u
#define TEST_FAIL 0x0f04u   /* a failed check: its line */
#define TEST_CHECKS 0x0f08u /* at the end: checks passed */
#define TEST_VALUE 0x0f10u  /* a measured value for the host to judge */
#define TEST_DROPS 0x0f18u  /* drops the core was told of */
/* The firmware's checks, all of which must have run. */
#define TEST_CORE_CHECKS 304u
#define TEST_NODE 7u
#define TEST_DB_PAGES 4u
#define TEST_VECTORS 8u

/* What a byte of host memory holds at the start. */
static inline uint8_t host_pattern(uint64_t addr) {
  return (uint8_t)((addr * 131u) ^ (addr >> 9) ^ 0x5au);
}

/* What the firmware writes, and frames and staged WQEs are filled with. */
static inline uint8_t fill_pattern(uint32_t seed, uint32_t i) {
  return (uint8_t)(seed * 29u + i * 7u + (i >> 8));
}

/* The test's steps (TEST_STEP values). */
enum test_step {
  STEP_WRITES_DONE = 1, /* host: check writes, publishes and stores */
  STEP_DOORBELLS,       /* host: kicks through BAR2 and BAR0 */
  STEP_INLINE_SLOTS,    /* host: more inline kicks than buffers */
  STEP_OVERFLOW,        /* host: more kicks than FIFO entries */
  STEP_FRAMES_IN,       /* host: link up, frames of every size */
  STEP_RX_FLOOD,        /* host: many more frames than the receive FIFO */
  STEP_RX_HOLD_FULL,    /* host: more frames than the device holds back */
  STEP_RX_HOLD_DONE,    /* host: judge the drops (TEST_DROPS: the core's) */
  STEP_FRAMES_OUT_DONE, /* host: check the frames out, link down */
  STEP_IRQ_DONE,        /* host: check interrupts and their order */
  STEP_REGS_DONE,       /* host: check BAR0 reads of the file */
  STEP_DEADLINE_DONE,   /* host: judge the wait (TEST_VALUE: ns waited) */
  STEP_IDLE_START,      /* host: start measuring the emulator's CPU */
  STEP_IDLE_END,        /* host: the CPU used while the core waited */
  STEP_WAKE,            /* host: a kick some ms later */
  STEP_SLEEP_RACE,      /* host: kicks timed around the core's sleep */
};

#define TEST_DB_OVERFLOW_KICKS 100u
#define TEST_INLINE_KICKS 6u
/* Frames sent at once into the 8-frame receive FIFO: the device holds
 * them until the core has room (credits), none is dropped. */
#define TEST_RX_FLOOD 100u
/* Largest frames sent at once, more than the device's buffer holds: the
 * newest are dropped, and the core learns how many. */
#define TEST_RX_HOLD_FRAMES 600u
#define TEST_RX_HOLD_SEED 1000u
/* The device property the core's settings must show. */
#define TEST_RTO_FLOOR_US 4321u
#define TEST_WAIT_NS 30000000ull
#define TEST_IDLE_NS 300000000ull
#define TEST_WAKE_MS 20
/* Round trips of STEP_SLEEP_RACE: the host kicks (value: the round) after
 * a random pause of up to TEST_RACE_PAUSE_US, the core answers each with
 * TEST_RACE_ECHO. A wake-up lost on the way leaves the core asleep with
 * the kick in its ring: the host tells, then kicks again. */
#define TEST_RACE_ROUNDS 4000u
#define TEST_RACE_PAUSE_US 400u
#define TEST_RACE_LEARN 200u
#define TEST_RACE_ECHO 0x0f20u

/* Frames in and out: their sizes; the largest is the link's maximum. */
#define TEST_FRAME_SIZES \
  { 1u, 61u, 1500u, 4096u, 9216u }
#define TEST_FRAME_COUNT 5u

/* The benchmark's phases (TEST_STEP values at the start of each). */
enum bench_phase {
  BENCH_READ_64 = 1,
  BENCH_READ_4K,
  BENCH_READ_64K,
  BENCH_WRITE_64,
  BENCH_WRITE_4K,
  BENCH_WRITE_64K,
  BENCH_FRAME_OUT,
  BENCH_FRAME_IN,
  BENCH_END,
};
#define BENCH_FRAME_BYTES 1500u

/* Operations of a phase, from the byte budget the host sets (KiB in
 * ADMIN_LOG_DEPTH). */
static inline uint32_t bench_count(uint32_t budget_kib, uint32_t bytes) {
  uint64_t n = (uint64_t)budget_kib * 1024u / bytes;
  if (n < 16) n = 16;
  if (n > 100000) n = 100000;
  return (uint32_t)n;
}

#endif /* RHINET_SOFTCORE_LINK_TEST_H */
