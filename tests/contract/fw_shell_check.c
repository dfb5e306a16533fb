/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card shell's firmware slot (firmware/card/fw_shell.c) alone: what
 * each reset boots and which bytes it boots, including the paths the
 * conformance targets cannot reach (a crashed core falling back on flash,
 * the built-in image when nothing was stored). Exit status 0 when every
 * check holds; each failure is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_image.h"
#include "fw_shell.h"
#include "rhinet/hw_admin.h"
#include "rhinet/hw_regs.h"

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static void put32(uint8_t *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* An image for @board with a payload of @n bytes of @seed, right CRCs. */
static size_t make(uint8_t *b, uint32_t board, uint32_t version, uint32_t n,
                   uint8_t seed) {
  memset(b, 0, RHN_FW_HEADER_SIZE);
  for (uint32_t i = 0; i < n; i++) b[RHN_FW_HEADER_SIZE + i] = seed + i;
  put32(b, RHN_FW_MAGIC);
  put32(b + 4, RHN_FW_HEADER_VERSION | RHN_FW_HEADER_SIZE << 16);
  put32(b + 8, RHN_VERSION_MAJOR | RHN_VERSION_MINOR << 16);
  put32(b + 12, board);
  put32(b + 16, version);
  put32(b + 20, n);
  put32(b + 24, rhn_fw_crc32c(b + RHN_FW_HEADER_SIZE, n));
  put32(b + 60, rhn_fw_crc32c(b, 60));
  return RHN_FW_HEADER_SIZE + n;
}

static uint64_t reg(const struct rhn_fw_shell *sh, uint32_t off) {
  uint64_t v = ~0ull;
  CHECK(rhn_fw_shell_reg_read(sh, off, 4, &v));
  return v;
}

/* Stages and commits an image; the shell's verdict. */
static uint32_t load(struct rhn_fw_shell *sh, uint32_t version, uint8_t seed,
                     uint32_t flags) {
  static uint8_t img[RHN_FW_HEADER_SIZE + 5000];
  size_t len = make(img, 2, version, 5000, seed);
  uint32_t v = rhn_fw_shell_stage(sh, 0, img, len);
  return v != RHN_FW_OK ? v : rhn_fw_shell_commit(sh, (uint32_t)len, flags);
}

/* The payload that boots is the one committed, byte for byte. */
static int payload_is(const struct rhn_fw_shell *sh, uint8_t seed) {
  size_t len = 0;
  const uint8_t *p = rhn_fw_shell_payload(sh, &len);
  if (!p || len != 5000) return 0;
  for (size_t i = 0; i < len; i++)
    if (p[i] != (uint8_t)(seed + i)) return 0;
  return 1;
}

int main(void) {
  struct rhn_fw_shell sh = {0};
  const uint32_t builtin = RHN_FW_VERSION(1, 1, 0);
  uint64_t v;

  /* No buffers: the card takes no image. */
  rhn_fw_shell_init(&sh, 2, 0x1234567890ull, builtin);
  CHECK(rhn_fw_shell_stage(&sh, 0, "x", 1) == RHN_FW_NO_STAGING);
  CHECK(rhn_fw_shell_commit(&sh, 64, RHN_FW_COMMIT_STORE) == RHN_FW_NO_STAGING);

  sh.staging = calloc(1, RHN_FW_SHELL_CAPACITY);
  sh.pending = calloc(1, RHN_FW_SHELL_CAPACITY);
  sh.running = calloc(1, RHN_FW_SHELL_CAPACITY);
  sh.flash = calloc(1, RHN_FW_SHELL_CAPACITY);
  rhn_fw_shell_init(&sh, 2, 0x1234567890ull, builtin);
  rhn_fw_shell_set_state(&sh, RHN_FW_STATE_RUNNING);
  CHECK(reg(&sh, RHN_REG_BOARD_ID) == 2);
  CHECK(reg(&sh, RHN_REG_FW_RUNNING) == builtin);
  CHECK(reg(&sh, RHN_REG_FW_STORED) == builtin);
  CHECK(reg(&sh, RHN_REG_FW_STATE) == RHN_FW_STATE_RUNNING);
  CHECK(reg(&sh, RHN_REG_SERIAL) == 0x34567890u);
  CHECK(reg(&sh, RHN_REG_SERIAL + 4) == 0x12u);
  CHECK(rhn_fw_shell_reg_read(&sh, RHN_REG_SERIAL, 8, &v) &&
        v == 0x1234567890ull);
  CHECK(!rhn_fw_shell_reg_read(&sh, RHN_REG_STATUS, 4, &v));
  CHECK(!rhn_fw_shell_payload(&sh, &(size_t){0})); /* the built-in runs */

  /* Staging stays inside the buffer. */
  CHECK(rhn_fw_shell_stage(&sh, RHN_FW_SHELL_CAPACITY - 1, "ab", 2) ==
        RHN_FW_TOO_LARGE);
  CHECK(rhn_fw_shell_stage(&sh, UINT32_MAX, "a", 1) == RHN_FW_TOO_LARGE);
  CHECK(rhn_fw_shell_stage(&sh, RHN_FW_SHELL_CAPACITY - 1, "a", 1) ==
        RHN_FW_OK);

  /* A reset with nothing pending and nothing crashed: the same. */
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_SAME);
  CHECK(reg(&sh, RHN_REG_FW_STATE) == RHN_FW_STATE_BOOTING);
  rhn_fw_shell_set_state(&sh, RHN_FW_STATE_RUNNING);

  /* STORE: flash only. ACTIVATE: pending until the reset boots it. */
  CHECK(load(&sh, RHN_FW_VERSION(2, 0, 0), 7, RHN_FW_COMMIT_STORE) ==
        RHN_FW_OK);
  CHECK(reg(&sh, RHN_REG_FW_STORED) == RHN_FW_VERSION(2, 0, 0));
  CHECK(load(&sh, RHN_FW_VERSION(3, 0, 0), 9, RHN_FW_COMMIT_ACTIVATE) ==
        RHN_FW_OK);
  CHECK(reg(&sh, RHN_REG_FW_STATE) ==
        (RHN_FW_STATE_RUNNING | RHN_FW_STATE_PENDING));
  CHECK(reg(&sh, RHN_REG_FW_RUNNING) == builtin);
  /* A later download does not touch what is pending. */
  CHECK(load(&sh, RHN_FW_VERSION(9, 0, 0), 1, 0) == RHN_FW_OK);
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_HOST);
  CHECK(payload_is(&sh, 9));
  CHECK(reg(&sh, RHN_REG_FW_RUNNING) == RHN_FW_VERSION(3, 0, 0));
  CHECK(reg(&sh, RHN_REG_FW_STATE) ==
        (RHN_FW_STATE_BOOTING | RHN_FW_STATE_HOST_LOADED));
  rhn_fw_shell_set_state(&sh, RHN_FW_STATE_RUNNING);

  /* Reset again: the host's image runs again, same bytes. */
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_SAME);
  CHECK(payload_is(&sh, 9));

  /* It crashes: the reset falls back on flash (the stored 2.0.0). */
  rhn_fw_shell_set_state(&sh, RHN_FW_STATE_CRASHED);
  CHECK((reg(&sh, RHN_REG_FW_STATE) & RHN_FW_STATE_STATE_MASK) ==
        RHN_FW_STATE_CRASHED);
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_FLASH);
  CHECK(payload_is(&sh, 7));
  CHECK(reg(&sh, RHN_REG_FW_RUNNING) == RHN_FW_VERSION(2, 0, 0));
  CHECK(reg(&sh, RHN_REG_FW_STATE) == RHN_FW_STATE_BOOTING);

  /* A shell whose flash holds the built-in image boots that (NULL). */
  rhn_fw_shell_init(&sh, 2, 1, builtin);
  CHECK(load(&sh, RHN_FW_VERSION(4, 0, 0), 3, RHN_FW_COMMIT_ACTIVATE) ==
        RHN_FW_OK);
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_HOST);
  rhn_fw_shell_set_state(&sh, RHN_FW_STATE_CRASHED);
  CHECK(rhn_fw_shell_reset(&sh) == RHN_FW_BOOT_FLASH);
  CHECK(!rhn_fw_shell_payload(&sh, &(size_t){0}));
  CHECK(reg(&sh, RHN_REG_FW_RUNNING) == builtin);

  /* A refused image changes nothing. */
  CHECK(load(&sh, RHN_FW_VERSION(5, 0, 0), 3, RHN_FW_COMMIT_STORE) ==
        RHN_FW_OK);
  sh.staging[RHN_FW_HEADER_SIZE] ^= 1;
  CHECK(rhn_fw_shell_commit(&sh, RHN_FW_HEADER_SIZE + 5000,
                            RHN_FW_COMMIT_ACTIVATE) == RHN_FW_BAD_IMAGE);
  CHECK(!(reg(&sh, RHN_REG_FW_STATE) & RHN_FW_STATE_PENDING));

  free(sh.staging);
  free(sh.pending);
  free(sh.running);
  free(sh.flash);
  if (failures) return 1;
  printf("fw_shell: all checks hold\n");
  return 0;
}
